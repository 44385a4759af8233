//! `fairsched slurm history` and `fairsched slurm replay`: a Slurm site's
//! accounting as a workload log and a platform file
//! (`fairsched_slurm::history`), and a window of a workload log submitted
//! to Slurm again, time-compressed (`fairsched_slurm::replay`).
//!
//! - `slurm history --since DATE [--until DATE] --swf FILE [--platform
//!   FILE]` runs `sacct` and writes the jobs that ended as an SWF log
//!   (field 1 Slurm's job id, field 12 users 1, 2, …, field 13 accounts),
//!   and the accounts as organizations of a platform file for `fairsched
//!   simulate --platform`.
//! - `slurm replay LOG --window START,LEN --speedup K [--platform FILE
//!   --users ORG=USER,…]` submits the log's jobs of the window as `sleep`
//!   jobs at their (compressed) times, and records the SWF job number
//!   beside the Slurm job id in `--out DIR/submitted.csv`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use fairsched_slurm::SlurmError;
use fairsched_slurm::history::{self, History};
use fairsched_slurm::replay::{self, Account, REPLAY_NAME};
use fairsched_trace::SwfWriter;

use crate::term::{note, sayln, usage};

/// A library's error: the command line's (exit 2) when it says so.
fn lib(e: SlurmError) -> anyhow::Error {
    if e.is_usage() { usage(e) } else { e.into() }
}

#[derive(clap::Args)]
pub struct HistoryArgs {
    /// The first day (or time) of the history, as sacct's -S reads it: 2026-11-01,
    /// 2026-11-01T08:00, now-7days… Jobs pending, running or ended in the period are
    /// listed by sacct; those that ended are written.
    #[arg(long, value_name = "DATE")]
    since: String,
    /// Its end, as sacct's -E reads it [default: now].
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// The SWF log to write (gzip if it ends in .gz; `-`: standard output): field 1 is
    /// Slurm's job id, 12 the user (1, 2, … in order of first job), 13 the account, 15
    /// the QOS, 16 the partition; jobs cancelled before they started are kept with status 5
    /// and run time -1; jobs still pending or running are left out.
    #[arg(long, value_name = "OUT")]
    swf: PathBuf,
    /// Also write the accounts as a platform file for `fairsched simulate --platform` (and
    /// `fairsched slurm replay --platform`): one organization per account, named after it,
    /// its users the SWF ids of the users whose first job ran under it (a user of several
    /// accounts is listed under the first, with a warning).
    #[arg(long, value_name = "TOML")]
    platform: Option<PathBuf>,
    /// The processors of an account in the platform file (repeatable). The accounts not
    /// given share what is left of the cluster's CPUs (`sinfo -h -o %C`, its total)
    /// evenly; an account given but absent from the history is an organization without
    /// users.
    #[arg(long = "procs", value_name = "ACCOUNT=N", value_parser = history::parse_procs)]
    procs: Vec<(String, u32)>,
    /// Leave the user names out of the platform file (by default each organization's
    /// `users` line names them in a comment; the SWF log never holds them).
    #[arg(long)]
    no_user_names: bool,
}

/// "1 job", "2 jobs".
fn n(count: u64, what: &str) -> String {
    format!("{count} {what}{}", if count == 1 { "" } else { "s" })
}

pub fn history(a: HistoryArgs) -> anyhow::Result<()> {
    if a.since.trim().is_empty() {
        return Err(usage("--since: a date sacct reads, e.g. 2026-11-01 or now-7days"));
    }
    let text = history::sacct(&a.since, a.until.as_deref()).map_err(lib)?;
    let jobs = history::parse_sacct(&text).context("reading sacct's answer")?;
    let source = format!(
        "sacct -S {}{}",
        a.since,
        a.until.as_ref().map(|u| format!(" -E {u}")).unwrap_or_default()
    );
    let mut h = History::from_jobs(&jobs, &source);
    let c = h.counts.clone();
    if c.written == 0 {
        bail!(
            "sacct lists no job that ended in that period ({} listed, {} still pending or running)",
            c.rows,
            c.not_ended
        );
    }
    // The cluster's CPUs: needed to share them among the accounts not
    // given --procs; otherwise only for the header's MaxProcs.
    let needed = a.platform.is_some()
        && h.accounts
            .iter()
            .any(|acc| !a.procs.iter().any(|(p, _)| p == acc));
    let cpus = match history::cluster_cpus() {
        Ok(c) => Some(c),
        Err(e) if needed => {
            return Err(anyhow::Error::new(e).context(
                "the cluster's CPUs, shared among the accounts (or give --procs ACCOUNT=N for each)",
            ));
        }
        Err(e) => {
            note(format_args!("note: MaxProcs left out of the header: {e}"));
            None
        }
    };
    h.header.max_procs = cpus;
    let given: u64 = a.procs.iter().map(|(_, p)| u64::from(*p)).sum();
    if let Some(t) = cpus
        && given > u64::from(t)
    {
        note(format_args!(
            "warning: --procs gives the accounts {given} processors; the cluster has {t} (sinfo): the others get none, and `simulate` of the platform file runs {given}"
        ));
    }
    // The platform file first: a mistake there stops before any file is written.
    let platform = match &a.platform {
        Some(_) => {
            let orgs = h.org_procs(&a.procs, cpus).map_err(lib)?;
            let how = match (a.procs.is_empty(), cpus) {
                (true, Some(t)) => {
                    format!("the cluster's {t} CPUs (sinfo), shared evenly among the accounts")
                }
                (false, Some(t)) => format!(
                    "given by --procs; the other accounts share what is left of the cluster's {t} CPUs evenly"
                ),
                (_, None) => "given by --procs".to_owned(),
            };
            Some(h.platform_toml(&orgs, !a.no_user_names, &how).map_err(lib)?)
        }
        None => None,
    };
    let to_stdout = a.swf == std::path::Path::new("-");
    let written = if to_stdout {
        let out = std::io::BufWriter::new(std::io::stdout().lock());
        h.write_swf(SwfWriter::plain("standard output", out)).map(drop)
    } else {
        SwfWriter::create(&a.swf).and_then(|w| h.write_swf(w)).map(drop)
    };
    match written {
        Err(fairsched_trace::TraceError::Io { source, .. })
            if to_stdout && source.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r?,
    }
    if let (Some(path), Some(text)) = (&a.platform, &platform) {
        fairsched_report::write_atomic(path, text.as_bytes())?;
    }
    let mut left_out = vec![format!("{} still pending or running", c.not_ended)];
    for (state, k) in &c.other_states {
        left_out.push(format!("{k} {state}"));
    }
    let summary = format!(
        "{}: {} of {} listed by sacct ({} never started, kept with status 5; left out: {}); {}, {}{}",
        if to_stdout {
            "standard output".to_owned()
        } else {
            a.swf.display().to_string()
        },
        n(c.written, "job"),
        c.rows,
        c.never_started,
        left_out.join(", "),
        n(h.users.len() as u64, "user"),
        n(h.accounts.len() as u64, "account"),
        a.platform
            .as_ref()
            .map(|p| format!("; organizations in {}", p.display()))
            .unwrap_or_default()
    );
    if to_stdout {
        // Standard output is the log.
        note(format_args!("{summary}"));
    } else {
        sayln!("{summary}");
    }
    if !h.multi_account_users.is_empty() {
        let who: Vec<String> = h
            .multi_account_users
            .iter()
            .map(|m| format!("{} ({})", m.name, m.accounts.join(", ")))
            .collect();
        note(format_args!(
            "warning: {} ran jobs under several accounts: {}; the platform file lists each under \
             the first, and {} ran under another (SWF field 13 keeps each job's own account)",
            n(who.len() as u64, "user"),
            who.join("; "),
            n(c.jobs_under_other_accounts, "job"),
        ));
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The SWF log (plain or .gz).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// The jobs submitted in [START, START+LEN) seconds of the log (SWF field 2).
    #[arg(long, value_name = "START,LEN", value_parser = crate::cmd_simulate::parse_window)]
    window: (i64, i64),
    /// K: the log's times divided by K. A job submitted S seconds into the window is
    /// submitted S/K seconds after the replay begins, sleeps its run time / K, and asks for
    /// its requested time / K (in minutes, rounded up, at least 1).
    #[arg(long, value_name = "K", value_parser = parse_speedup)]
    speedup: f64,
    /// A platform file: its organizations are Slurm accounts (`-A NAME`), and each job goes
    /// to the organization of its SWF user (field 12) as the file says [default: every job
    /// is yours, under your default account].
    #[arg(long, value_name = "TOML")]
    platform: Option<PathBuf>,
    /// The Unix users an organization's SWF users are submitted as (`sbatch --uid`: root
    /// only), round-robin in the order they first appear in the window (repeatable, one per
    /// organization). An organization given none submits as you, under its account.
    #[arg(long = "users", value_name = "ORG=USER,USER", value_parser = replay::parse_users, requires = "platform")]
    users: Vec<(String, Vec<String>)>,
    /// The seed of the platform file's `unlisted = "random"` mapping.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Processors a job may ask at most: larger ones are capped (and counted) [default:
    /// the cluster's CPUs, from `sinfo -h -o %C`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_procs: Option<u32>,
    /// Another sbatch option for every job, e.g. --sbatch-arg=--partition=debug (repeatable).
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// The folder of the record, DIR/submitted.csv: SWF job number, Slurm job id, times,
    /// user, account, processors, limit and sleep of each job submitted (refused if it
    /// exists).
    #[arg(long, value_name = "DIR", default_value = "fairsched-replay")]
    out: PathBuf,
    /// Print the sbatch command of each job (with its time) and submit nothing.
    #[arg(long)]
    dry_run: bool,
}

fn parse_speedup(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(k) if k.is_finite() && k > 0.0 => Ok(k),
        _ => Err(format!("{s:?}: a factor > 0, e.g. 100")),
    }
}

pub fn replay(a: ReplayArgs) -> anyhow::Result<()> {
    let (start, len) = a.window;
    // The organizations and their Unix users.
    let platform = match &a.platform {
        Some(p) => Some(fairsched_sim::PlatformFile::load(p)?),
        None => None,
    };
    let mut orgs: Vec<Account> = platform
        .iter()
        .flat_map(|p| &p.orgs)
        .map(|o| Account {
            name: o.name.clone(),
            unix_users: Vec::new(),
        })
        .collect();
    for (org, users) in &a.users {
        let Some(o) = orgs.iter_mut().find(|o| &o.name == org) else {
            let names: Vec<&str> = orgs.iter().map(|o| o.name.as_str()).collect();
            return Err(usage(format!(
                "--users {org}=…: no organization {org:?} in the platform file (it has {})",
                names.join(", ")
            )));
        };
        if !o.unix_users.is_empty() {
            return Err(usage(format!("--users {org}=… given twice")));
        }
        // sbatch --uid takes a user this machine knows.
        for u in users {
            let known = std::process::Command::new("id")
                .args(["-u", u])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !known {
                return Err(usage(format!(
                    "--users {org}=…: {u:?} is no user of this machine (`id -u {u}` fails; sbatch --uid needs one)"
                )));
            }
        }
        o.unix_users = users.clone();
    }
    let jobs = replay::read_window(&a.log, start, len).map_err(lib)?;
    if jobs.is_empty() {
        bail!(
            "{}: no job submitted in [{start}, {}) s",
            a.log.display(),
            start.saturating_add(len)
        );
    }
    let max_procs = match a.max_procs {
        Some(m) => m,
        None => fairsched_slurm::history::cluster_cpus()
            .context("the cluster's CPUs, the largest job's cap (or give --max-procs N)")?,
    };
    let mapper = platform.as_ref().map(|p| p.mapper(a.seed));
    let plan = replay::plan(&jobs, a.speedup, max_procs, &orgs, |u| {
        mapper.as_ref().map_or(Ok(0), |m| m.org_of(u).map(|o| o as usize))
    })
    .map_err(lib)?;
    let last = plan.jobs.last().map_or(0.0, |j| j.at_s);
    // The first users only: a long window has hundreds.
    const SHOWN: usize = 20;
    let mut users: Vec<String> = plan
        .users
        .iter()
        .take(SHOWN)
        .map(|(u, unix, acc)| {
            format!(
                "{u}→{}{}",
                unix.as_deref().unwrap_or("you"),
                acc.as_ref().map(|a| format!("@{a}")).unwrap_or_default()
            )
        })
        .collect();
    if plan.users.len() > SHOWN {
        users.push(format!("and {} more", plan.users.len() - SHOWN));
    }
    let capped = if plan.capped == 0 {
        String::new()
    } else {
        format!(
            "; {} capped at {max_procs} processors",
            n(plan.capped as u64, "job")
        )
    };
    if a.dry_run {
        for j in &plan.jobs {
            sayln!("{}", replay::command_line(j, &a.sbatch_args).map_err(lib)?);
        }
        sayln!(
            "# dry run: {} over {last:.3} s{capped}; users (SWF→Unix@account): {}; nothing submitted",
            n(plan.jobs.len() as u64, "job"),
            users.join(" ")
        );
        return Ok(());
    }
    // Checked again when it is created; said here before anything is printed.
    let csv = a.out.join(replay::SUBMITTED_CSV);
    if csv.exists() {
        return Err(usage(format!(
            "{} exists (an earlier replay's record): give another --out, or remove it",
            csv.display()
        )));
    }
    sayln!(
        "replaying {} of {} (window {start}+{len} s, {}× faster) over {last:.3} s{capped}; users (SWF→Unix@account): {}",
        n(plan.jobs.len() as u64, "job"),
        a.log.display(),
        a.speedup,
        users.join(" ")
    );
    let mut printed = Ok(());
    let done = replay::submit(&plan, &a.out, &a.sbatch_args, |s| {
        let j = &s.job;
        if printed.is_ok() {
            printed = crate::term::out(format_args!(
                "+{:.3}s SWF job {} → Slurm job {} ({}, sleep {:.3} s)\n",
                s.submitted_s,
                j.swf_job,
                s.slurm_job,
                n(u64::from(j.procs), "CPU"),
                j.sleep_s
            ));
        }
    })
    .map_err(lib)?;
    printed?;
    sayln!(
        "submitted {} (largest delay {:.3} s); recorded in {}; `scancel --name={REPLAY_NAME}` cancels what is left",
        n(done.submitted.len() as u64, "job"),
        done.max_lag_s,
        done.csv.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    enum T {
        History(HistoryArgs),
        Replay(ReplayArgs),
    }

    #[test]
    fn options() {
        let ok = |args: &[&str]| T::try_parse_from(args).map(|_| ()).map_err(|e| e.to_string());
        assert!(ok(&["t", "history", "--since", "2026-11-01", "--swf", "h.swf"]).is_ok());
        assert!(
            ok(&["t", "history", "--swf", "h.swf"]).is_err(),
            "--since is required"
        );
        assert!(
            ok(&[
                "t",
                "history",
                "--since",
                "x",
                "--swf",
                "-",
                "--procs",
                "physics=8"
            ])
            .is_ok()
        );
        assert!(ok(&["t", "history", "--since", "x", "--swf", "-", "--procs", "physics"]).is_err());
        let replay = |extra: &[&str]| {
            let mut v = vec!["t", "replay", "log.swf", "--window", "0,100", "--speedup", "10"];
            v.extend(extra);
            ok(&v)
        };
        assert!(replay(&[]).is_ok());
        assert!(replay(&["--speedup", "0"]).is_err());
        assert!(replay(&["--speedup", "-2"]).is_err());
        assert!(replay(&["--platform", "p.toml", "--users", "physics=alice,bob"]).is_ok());
        let e = replay(&["--users", "physics=alice"]).unwrap_err();
        assert!(e.contains("--platform"), "--users needs --platform: {e}");
        assert!(replay(&["--platform", "p.toml", "--users", "physics"]).is_err());
        assert!(replay(&["--max-procs", "0"]).is_err());
        assert!(ok(&["t", "replay", "log.swf", "--window", "0", "--speedup", "10"]).is_err());
    }

    /// What `slurm history` writes, read by the simulator's own parser.
    #[test]
    fn the_platform_file_is_one_the_simulator_reads() {
        let text = "16|ci|alice|physics|debug|normal|1796234063|1796234064|1796234066|2|2|2|5|COMPLETED|localhost\n\
                    17|ci|bob|physics|debug|normal|1796234063|1796234064|1796234065|1|1|1|2|FAILED|localhost\n\
                    19|ci|dave|chemistry|debug|normal|1796234063|1796234064|1796234068|4|3|3|10|CANCELLED by 0|localhost\n\
                    22|ci|alice|acct_alice|debug|normal|1796234063|1796234064|1796234065|1|1|1|3|COMPLETED|localhost\n";
        let h = History::from_jobs(&history::parse_sacct(text).unwrap(), "test");
        let orgs = h.org_procs(&[("chemistry".into(), 10)], Some(16)).unwrap();
        let toml = h.platform_toml(&orgs, true, "test \"quoted\"").unwrap();
        let p = fairsched_sim::PlatformFile::parse(std::path::Path::new("p.toml"), &toml)
            .unwrap_or_else(|e| panic!("{e}\n{toml}"));
        let names: Vec<&str> = p.orgs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["physics", "chemistry", "acct_alice"]);
        assert_eq!(p.procs(), [3, 10, 3]);
        // alice (1) and bob (2) in physics, dave (3) in chemistry.
        assert_eq!(
            (p.org_of(1), p.org_of(2), p.org_of(3)),
            (Some(0), Some(0), Some(1))
        );
        assert_eq!(p.unlisted, fairsched_sim::platform_file::Unlisted::Error);
    }
}
