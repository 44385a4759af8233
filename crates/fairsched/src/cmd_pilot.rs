//! `fairsched pilot`: fairsched workers submitted as batch jobs to a
//! cluster's resource manager (Slurm), like DIRAC's pilots
//! (`fairsched_slurm::pilot`).
//!
//! - `pilot slurm` submits N jobs with `sbatch`, each running `fairsched
//!   worker --slots K --drain-before S` (it stops taking new tasks S
//!   seconds before its wall time ends, finishes its runs and leaves), and
//!   records their job ids in a state file.
//! - `pilot status` shows what Slurm says of them; `pilot cancel` cancels
//!   them with `scancel`. A pilot Slurm kills (scancel, time limit,
//!   preemption, a node lost) is a worker that leaves or whose lease runs
//!   out: the broker requeues its runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use fairsched_slurm::pilot::{self, Job, Pilots, directive};

use crate::term::{sayln, usage};

#[derive(clap::Subcommand)]
pub enum PilotCommand {
    /// Submit N pilots (fairsched workers) as Slurm batch jobs.
    ///
    /// Each pilot is one job of K CPUs running `fairsched worker --slots K
    /// --drain-before S`: S seconds before its wall time ends it takes no new
    /// task, finishes its runs, leaves the broker and exits. The worker token
    /// goes to the jobs through the environment (never into a file or onto a
    /// command line). The job ids are added to the state file.
    ///
    /// Examples:
    ///   fairsched pilot slurm --count 4 --slots 8 --time 01:00:00
    ///   fairsched pilot slurm --count 2 --slots 16 --partition short --time 30:00 --drain-before 120
    #[command(verbatim_doc_comment)]
    Slurm(SlurmArgs),
    /// What Slurm says of the recorded pilots: state, time used and left, node or reason.
    Status(StatusArgs),
    /// Cancel pilots with scancel (all recorded ones, or the given job ids): their running
    /// tasks go back to the broker's queue. Pilots that have already left Slurm's queue
    /// (finished, cancelled, timed out) are named and skipped; exit 0 either way.
    Cancel(CancelArgs),
}

#[derive(clap::Args)]
pub struct SlurmArgs {
    /// The broker's URL, as the cluster's nodes reach it [default: the `broker` line of
    /// ./fairsched.tokens]
    #[arg(long, env = "FAIRSCHED_BROKER", hide_env_values = true, value_name = "URL")]
    broker: Option<String>,
    /// A worker token (from `fairsched admin worker-token`) [default: the `worker` line of
    /// ./fairsched.tokens]
    #[arg(long, env = "FAIRSCHED_TOKEN", hide_env_values = true, value_name = "T")]
    token: Option<String>,
    /// How many pilot jobs to submit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    count: u32,
    /// Tasks each pilot runs at once; each job asks Slurm for this many CPUs.
    #[arg(long, value_name = "K",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(fairsched_worker::MAX_SLOTS)))]
    slots: u32,
    /// The Slurm partition (sbatch --partition) [default: the cluster's default].
    #[arg(long, value_name = "P")]
    partition: Option<String>,
    /// Each pilot's wall time (sbatch --time): MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS
    /// [default: the partition's].
    #[arg(long, value_name = "HH:MM:SS", value_parser = parse_time)]
    time: Option<String>,
    /// The account charged (sbatch --account).
    #[arg(long, value_name = "A")]
    account: Option<String>,
    /// Seconds before the wall time ends when a pilot stops taking new tasks (or a duration:
    /// 90s, 2m).
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = fairsched_worker::parse_seconds)]
    drain_before: Duration,
    /// Where the scripts, the jobs' output and the runs' directories go (on a file system the
    /// nodes share).
    #[arg(long, value_name = "DIR", default_value = "fairsched-pilots")]
    dir: PathBuf,
    /// The fairsched executable the pilots run (a path the nodes can run) [default: this one].
    #[arg(long, value_name = "PATH")]
    fairsched: Option<PathBuf>,
    /// Another sbatch option for every pilot, e.g. --sbatch-arg=--mem=4G (repeatable).
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    #[command(flatten)]
    state: StateArg,
}

#[derive(clap::Args)]
pub struct StateArg {
    /// The file where pilots' job ids are recorded.
    #[arg(long = "state", value_name = "FILE", default_value = "fairsched-pilots.json")]
    file: PathBuf,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    state: StateArg,
    /// Print the table as JSON lines instead.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct CancelArgs {
    #[command(flatten)]
    state: StateArg,
    /// Only these job ids (recorded ones) [default: every recorded pilot].
    #[arg(value_name = "JOBID")]
    jobs: Vec<u64>,
}

fn parse_time(s: &str) -> Result<String, String> {
    fairsched_worker::parse_slurm_time(s.trim()).map(|_| s.trim().to_owned())
}

/// "1 pilot", "2 pilots".
fn pilots_n(n: usize) -> String {
    format!("{n} pilot{}", if n == 1 { "" } else { "s" })
}

pub fn run(cmd: PilotCommand) -> anyhow::Result<()> {
    match cmd {
        PilotCommand::Slurm(a) => submit(a),
        PilotCommand::Status(a) => status(a),
        PilotCommand::Cancel(a) => cancel(a),
    }
}

fn submit(a: SlurmArgs) -> anyhow::Result<()> {
    let broker = a
        .broker
        .clone()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| fairsched_client::quickstart("broker"))
        .ok_or_else(|| {
            usage("no broker: give --broker URL (as the cluster's nodes reach it) or set FAIRSCHED_BROKER")
        })?;
    let token = a
        .token
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| fairsched_client::quickstart("worker"))
        .ok_or_else(|| {
            usage("no token: give --token T (from `fairsched admin worker-token`) or set FAIRSCHED_TOKEN")
        })?;
    let broker = fairsched_client::base_url(&broker)?;
    if let Some(t) = &a.time {
        let wall = fairsched_worker::parse_slurm_time(t).map_err(usage)?;
        if a.drain_before.as_secs() >= wall {
            return Err(usage(format!(
                "--drain-before {}s leaves no time in a wall time of {t}: a pilot would drain at once",
                a.drain_before.as_secs()
            )));
        }
    }
    let exe = match &a.fairsched {
        Some(p) => p.clone(),
        None => {
            std::env::current_exe().context("cannot tell where this fairsched is (give --fairsched PATH)")?
        }
    };
    directive("--dir", &a.dir.to_string_lossy()).map_err(usage)?;
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let dir = a
        .dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", a.dir.display()))?;
    let exe = exe
        .canonicalize()
        .with_context(|| format!("{}: no such program", exe.display()))?;
    let job = Job {
        slots: a.slots,
        time: a.time.clone(),
        partition: a.partition.clone(),
        account: a.account.clone(),
        drain_before_s: a.drain_before.as_secs(),
    };
    let text = pilot::script(&job, &exe, &dir).map_err(|e| if e.is_usage() { usage(e) } else { e.into() })?;
    let mut options = vec!["--export=ALL".to_owned()];
    options.extend(a.sbatch_args.iter().cloned());
    let (ids, path) = pilot::submit(
        a.count,
        a.slots,
        &text,
        &dir,
        &options,
        &broker,
        &token,
        &a.state.file,
    )?;
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    sayln!(
        "submitted {} of {} slots: Slurm jobs {}",
        pilots_n(ids.len()),
        a.slots,
        list.join(" ")
    );
    sayln!(
        "recorded in {}; script {}; output {}/pilot-JOBID.out",
        a.state.file.display(),
        path.display(),
        dir.display()
    );
    sayln!("see them with `fairsched pilot status`, cancel them with `fairsched pilot cancel`");
    Ok(())
}

fn status(a: StatusArgs) -> anyhow::Result<()> {
    let pilots = Pilots::load(&a.state.file)?;
    if pilots.pilots.is_empty() {
        bail!(
            "no pilots recorded in {} (submit some with `fairsched pilot slurm`)",
            a.state.file.display()
        );
    }
    let rows = pilot::status(&pilots)?;
    if a.json {
        for r in &rows {
            sayln!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    sayln!(
        "{:>10} {:>5} {:<11} {:>11} {:>11}  NODE OR REASON",
        "JOBID",
        "SLOTS",
        "STATE",
        "ELAPSED",
        "LEFT"
    );
    for r in &rows {
        sayln!(
            "{:>10} {:>5} {:<11} {:>11} {:>11}  {}",
            r.job,
            r.slots,
            r.state,
            r.elapsed,
            r.left,
            r.r#where
        );
    }
    let running: Vec<_> = rows.iter().filter(|r| r.state == "RUNNING").collect();
    let slots: u32 = running.iter().map(|r| r.slots).sum();
    sayln!(
        "{}, {} running ({slots} slots)",
        pilots_n(rows.len()),
        running.len()
    );
    Ok(())
}

fn cancel(a: CancelArgs) -> anyhow::Result<()> {
    let pilots = Pilots::load(&a.state.file)?;
    let recorded: Vec<u64> = pilots.pilots.iter().map(|p| p.job).collect();
    if let Some(j) = a.jobs.iter().find(|j| !recorded.contains(j)) {
        return Err(usage(format!(
            "job {j} is not a pilot recorded in {}",
            a.state.file.display()
        )));
    }
    let jobs = if a.jobs.is_empty() {
        recorded
    } else {
        a.jobs.clone()
    };
    if jobs.is_empty() {
        bail!("no pilots recorded in {}", a.state.file.display());
    }
    let done = pilot::cancel(&jobs)?;
    let ids = |j: &[u64]| j.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    if done.cancelled.is_empty() {
        sayln!(
            "nothing to cancel: {} in Slurm's queue ({})",
            if done.gone.len() == 1 {
                "the pilot is no longer".to_owned()
            } else {
                format!("none of the {} is still", pilots_n(done.gone.len()))
            },
            ids(&done.gone)
        );
        return Ok(());
    }
    sayln!(
        "asked Slurm to cancel {}: {} (their running tasks go back to the queue){}",
        pilots_n(done.cancelled.len()),
        ids(&done.cancelled),
        if done.gone.is_empty() {
            String::new()
        } else {
            format!(
                "; {} had already left Slurm's queue: {}",
                pilots_n(done.gone.len()),
                ids(&done.gone)
            )
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(subcommand)]
        c: PilotCommand,
    }

    #[test]
    fn bad_times_and_counts_are_refused() {
        assert!(T::try_parse_from(["t", "slurm", "--count", "1", "--slots", "1", "--time", "1h"]).is_err());
        assert!(T::try_parse_from(["t", "slurm", "--count", "0", "--slots", "1"]).is_err());
        assert!(
            T::try_parse_from(["t", "slurm", "--count", "1", "--slots", "1", "--time", "01:00:00"]).is_ok()
        );
    }
}
