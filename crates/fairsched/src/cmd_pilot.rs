//! `fairsched pilot`: fairsched workers submitted as batch jobs to a
//! cluster's resource manager (Slurm), like DIRAC's pilots. The cluster's
//! scheduler decides when and where a pilot runs; fairsched's core decides
//! which task runs on the slots of the pilots that are running.
//!
//! - `pilot slurm` submits N jobs with `sbatch`, each running `fairsched
//!   worker --slots K --drain-before S` (it stops taking new tasks S
//!   seconds before its wall time ends, finishes its runs and leaves), and
//!   records their job ids in a state file.
//! - `pilot status` shows what Slurm says of them; `pilot cancel` cancels
//!   them with `scancel`. A pilot Slurm kills (scancel, time limit,
//!   preemption, a node lost) is a worker that leaves or whose lease runs
//!   out: the broker requeues its runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::term::{sayln, usage};
use fairsched_sim::slurm;

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
    /// tasks go back to the broker's queue.
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

/// The job name of every pilot (`pilot status` and `pilot cancel` touch
/// no other job, whatever ids the state file holds).
const PILOT_NAME: &str = "fairsched-pilot";

/// "1 pilot", "2 pilots".
fn pilots_n(n: usize) -> String {
    format!("{n} pilot{}", if n == 1 { "" } else { "s" })
}

/// The state file: every pilot submitted from here.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pilots {
    pilots: Vec<Pilot>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pilot {
    job: u64,
    broker: String,
    slots: u32,
    /// The batch script (in the pilots' directory).
    script: PathBuf,
}

impl Pilots {
    fn load(path: &Path) -> anyhow::Result<Pilots> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                serde_json::from_str(&text).with_context(|| format!("{}: not a pilots file", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Pilots::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    fn save(&self, path: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        fairsched_report::write_atomic(path, text.as_bytes())?;
        Ok(())
    }
}

pub fn run(cmd: PilotCommand) -> anyhow::Result<()> {
    match cmd {
        PilotCommand::Slurm(a) => submit(a),
        PilotCommand::Status(a) => status(a),
        PilotCommand::Cancel(a) => cancel(a),
    }
}

/// A value for an `#SBATCH` line, which sbatch reads without a shell:
/// refused if it holds blanks, quotes or backslashes.
fn directive(what: &str, v: &str) -> anyhow::Result<String> {
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || "'\"\\".contains(c)) {
        return Err(usage(format!(
            "{what} {v:?}: an #SBATCH value cannot hold blanks, quotes or backslashes"
        )));
    }
    Ok(v.to_owned())
}

/// The batch script of one pilot. The broker and token come from the
/// environment sbatch exports (`--export=ALL`).
fn script(a: &SlurmArgs, exe: &Path, dir: &Path) -> anyhow::Result<String> {
    let q = |s: &str| slurm::shell_quote(s);
    let dir_s = dir.to_str().context("the pilots' directory is not valid UTF-8")?;
    let exe_s = exe.to_str().context("the fairsched path is not valid UTF-8")?;
    let mut s = String::from("#!/bin/sh\n# A fairsched pilot: written by `fairsched pilot slurm`.\n");
    s += &format!("#SBATCH --job-name={PILOT_NAME}\n#SBATCH --ntasks=1\n");
    s += &format!("#SBATCH --cpus-per-task={}\n", a.slots);
    s += &format!(
        "#SBATCH --output={}\n",
        directive("--dir", &format!("{dir_s}/pilot-%j.out"))?
    );
    if let Some(t) = &a.time {
        s += &format!("#SBATCH --time={t}\n");
    }
    if let Some(p) = &a.partition {
        s += &format!("#SBATCH --partition={}\n", directive("--partition", p)?);
    }
    if let Some(acc) = &a.account {
        s += &format!("#SBATCH --account={}\n", directive("--account", acc)?);
    }
    s += &format!(
        "exec {} worker --slots {} --drain-before {} --workdir {}/work-\"$SLURM_JOB_ID\" --host \"pilot-$SLURM_JOB_ID\"\n",
        q(exe_s)?,
        a.slots,
        a.drain_before.as_secs().max(1),
        q(dir_s)?,
    );
    Ok(s)
}

fn submit(a: SlurmArgs) -> anyhow::Result<()> {
    let broker = a
        .broker
        .clone()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| crate::cmd_live::quickstart("broker"))
        .ok_or_else(|| {
            usage("no broker: give --broker URL (as the cluster's nodes reach it) or set FAIRSCHED_BROKER")
        })?;
    let token = a
        .token
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| crate::cmd_live::quickstart("worker"))
        .ok_or_else(|| {
            usage("no token: give --token T (from `fairsched admin worker-token`) or set FAIRSCHED_TOKEN")
        })?;
    if !(broker.starts_with("http://") || broker.starts_with("https://")) {
        return Err(usage(format!(
            "--broker {broker:?} must be an http:// or https:// URL"
        )));
    }
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
    directive("--dir", &a.dir.to_string_lossy())?;
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let dir = a
        .dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", a.dir.display()))?;
    let exe = exe
        .canonicalize()
        .with_context(|| format!("{}: no such program", exe.display()))?;
    let text = script(&a, &exe, &dir)?;
    // Named after the first job once it is known: one script per submission.
    slurm::write_script(&dir, ".pilot-submitting.sbatch", &text)?;
    let mut pilots = Pilots::load(&a.state.file)?;
    let mut options = vec!["--export=ALL".to_owned()];
    options.extend(a.sbatch_args.iter().cloned());
    let env = [
        ("FAIRSCHED_BROKER", broker.as_str()),
        ("FAIRSCHED_TOKEN", token.as_str()),
    ];
    let mut ids = Vec::new();
    for i in 0..a.count {
        let job = match slurm::sbatch_env(&options, &text, &env) {
            Ok(job) => job,
            Err(e) if ids.is_empty() => return Err(e.into()),
            Err(e) => {
                let _ = std::fs::rename(
                    dir.join(".pilot-submitting.sbatch"),
                    dir.join(format!("pilot-{}.sbatch", ids[0])),
                );
                pilots.save(&a.state.file)?;
                return Err(e).context(format!(
                    "pilot {} of {} not submitted; the {} before it are recorded in {}",
                    i + 1,
                    a.count,
                    ids.len(),
                    a.state.file.display()
                ));
            }
        };
        ids.push(job);
        pilots.pilots.push(Pilot {
            job,
            broker: broker.clone(),
            slots: a.slots,
            script: dir.join(format!("pilot-{}.sbatch", ids[0])),
        });
    }
    let path = dir.join(format!("pilot-{}.sbatch", ids[0]));
    std::fs::rename(dir.join(".pilot-submitting.sbatch"), &path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    pilots.save(&a.state.file)?;
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

/// One row of `pilot status`.
#[derive(Debug, Serialize)]
struct Row {
    job: u64,
    slots: u32,
    state: String,
    elapsed: String,
    left: String,
    /// The node it runs on, or why it waits.
    r#where: String,
}

/// What `squeue -t all` says of these jobs, by id (finished jobs drop out
/// of it after Slurm's MinJobAge).
fn squeue(jobs: &[u64]) -> anyhow::Result<std::collections::HashMap<u64, [String; 4]>> {
    let mut found = std::collections::HashMap::new();
    if jobs.is_empty() {
        return Ok(found);
    }
    let list: Vec<String> = jobs.iter().map(u64::to_string).collect();
    let args = |ids: &str| -> Vec<String> {
        ["-h", "-t", "all", "-o", "%i|%j|%T|%M|%L|%R", "-j", ids]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    // One call for all; if Slurm refuses the list (a job it has
    // forgotten), one call per job. Any other failure (Slurm down, no
    // squeue) is an error: not knowing is not "ended".
    let outs = match slurm::run("squeue", &args(&list.join(",")), None) {
        Ok(out) => vec![out],
        Err(_) => {
            let mut outs = Vec::new();
            for id in &list {
                match slurm::run("squeue", &args(id), None) {
                    Ok(out) => outs.push(out),
                    Err(e) if e.to_string().contains("Invalid job id") => {}
                    Err(e) => return Err(e.into()),
                }
            }
            outs
        }
    };
    for out in outs {
        for line in out.lines() {
            let f: Vec<&str> = line.split('|').collect();
            // A job id Slurm gave again to a job that is not a pilot (its
            // ids restart after its state is wiped) is not ours.
            if let [id, name, state, elapsed, left, reason] = f[..]
                && let Ok(id) = id.trim().parse::<u64>()
                && name.trim() == PILOT_NAME
            {
                let ended = !matches!(
                    state.trim(),
                    "PENDING"
                        | "RUNNING"
                        | "CONFIGURING"
                        | "COMPLETING"
                        | "SUSPENDED"
                        | "REQUEUED"
                        | "RESIZING"
                );
                let left = if ended { "-" } else { left };
                found.insert(id, [state, elapsed, left, reason].map(|s| s.trim().to_owned()));
            }
        }
    }
    Ok(found)
}

fn status(a: StatusArgs) -> anyhow::Result<()> {
    let pilots = Pilots::load(&a.state.file)?;
    if pilots.pilots.is_empty() {
        bail!(
            "no pilots recorded in {} (submit some with `fairsched pilot slurm`)",
            a.state.file.display()
        );
    }
    let jobs: Vec<u64> = pilots.pilots.iter().map(|p| p.job).collect();
    let known = squeue(&jobs)?;
    let rows: Vec<Row> = pilots
        .pilots
        .iter()
        .map(|p| match known.get(&p.job) {
            Some([state, elapsed, left, reason]) => Row {
                job: p.job,
                slots: p.slots,
                state: state.clone(),
                elapsed: elapsed.clone(),
                left: left.clone(),
                r#where: reason.clone(),
            },
            None => Row {
                job: p.job,
                slots: p.slots,
                state: "ENDED".into(),
                elapsed: "-".into(),
                left: "-".into(),
                r#where: "(no longer in squeue)".into(),
            },
        })
        .collect();
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
    let running = rows.iter().filter(|r| r.state == "RUNNING").count();
    let slots: u32 = rows
        .iter()
        .filter(|r| r.state == "RUNNING")
        .map(|r| r.slots)
        .sum();
    sayln!("{}, {running} running ({slots} slots)", pilots_n(rows.len()));
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
    let args: Vec<String> = jobs.iter().map(u64::to_string).collect();
    // Only jobs named as pilots: an id Slurm gave again to another job
    // (after its state was wiped) is left alone.
    let mut scancel = vec![format!("--name={PILOT_NAME}")];
    scancel.extend(args.iter().cloned());
    slurm::run("scancel", &scancel, None)?;
    sayln!(
        "asked Slurm to cancel {}: {} (their running tasks go back to the queue)",
        pilots_n(jobs.len()),
        args.join(" ")
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

    fn args(line: &str) -> SlurmArgs {
        let mut argv = vec!["t", "slurm"];
        argv.extend(line.split_whitespace());
        match T::try_parse_from(argv).unwrap().c {
            PilotCommand::Slurm(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_script_asks_for_the_slots_and_runs_a_draining_worker() {
        let a = args("--count 2 --slots 8 --time 01:00:00 --partition short --account p42 --drain-before 2m");
        let s = script(&a, Path::new("/opt/fs/fairsched"), Path::new("/home/u/pilots")).unwrap();
        assert!(s.starts_with("#!/bin/sh\n"));
        for line in [
            "#SBATCH --cpus-per-task=8",
            "#SBATCH --time=01:00:00",
            "#SBATCH --partition=short",
            "#SBATCH --account=p42",
            "#SBATCH --output=/home/u/pilots/pilot-%j.out",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing from\n{s}");
        }
        let exec = s.lines().last().unwrap();
        assert!(
            exec.starts_with("exec /opt/fs/fairsched worker --slots 8 --drain-before 120 "),
            "{exec}"
        );
        assert!(!s.contains("TOKEN"), "the token never goes into the script");
    }

    #[test]
    fn odd_paths_are_quoted_and_bad_times_refused() {
        let a = args("--count 1 --slots 1");
        let s = script(&a, Path::new("/opt/my fs/fairsched"), Path::new("/tmp/pilots")).unwrap();
        assert!(s.contains("exec '/opt/my fs/fairsched' worker"), "{s}");
        assert!(!s.contains("--time"));
        // sbatch reads #SBATCH lines without a shell: no quoting there.
        let e = script(&a, Path::new("/bin/fairsched"), Path::new("/tmp/it's")).unwrap_err();
        assert!(e.to_string().contains("--dir"), "{e}");
        assert!(T::try_parse_from(["t", "slurm", "--count", "1", "--slots", "1", "--time", "1h"]).is_err());
        assert!(T::try_parse_from(["t", "slurm", "--count", "0", "--slots", "1"]).is_err());
    }
}
