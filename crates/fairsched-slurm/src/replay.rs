//! A window of a real workload log submitted to a Slurm cluster,
//! time-compressed (`fairsched slurm replay`): each job of the window
//! becomes a `sleep` job of its log's size, submitted as its log's user's
//! Unix user under its organization's account, so that Slurm (and a
//! steering controller, and the site's fair share) sees the log's queue.
//!
//! - **Which jobs**: those of the SWF log (read and cleaned by
//!   `fairsched-trace`: jobs of unknown run time or size are dropped) whose
//!   submit time is in `[START, START+LEN)`.
//! - **When**: job `j` is submitted `(submit_j − START) / K` seconds after
//!   the replay begins, by this process, in real time, from a loop that
//!   sleeps until each job's time. Not with `sbatch --begin`: a job
//!   submitted early with a begin time sits in the queue from the start
//!   (squeue shows it, a controller reads it, Slurm's accounting records
//!   the replay's start as its submit time), whereas a job submitted at its
//!   time arrives as the log's did, and `sacct`'s `Submit` is its arrival
//!   (what `fairsched slurm history` reads back). A submission that falls
//!   behind (sbatch is slow) is made at once; the lag is recorded.
//! - **What**: `sbatch --uid=USER -A ACCOUNT -n PROCS -t LIMIT
//!   --job-name=fairsched-replay --output=/dev/null --wrap "sleep
//!   RUNTIME/K"`: `PROCS` the log's processors, capped at the cluster's
//!   (counted, [`Plan::capped`]); `LIMIT` the log's requested time / K in
//!   whole minutes, rounded up (Slurm counts limits in minutes, so at least
//!   1), none when the log has none; the sleep in milliseconds (at least
//!   1 ms; GNU or BusyBox `sleep` reads fractions). A log's failed or
//!   cancelled job is replayed as a job that runs its logged run time.
//! - **Who**: the organizations of a platform file are Slurm accounts (an
//!   organization's name is the account), and a job's SWF user belongs to
//!   one of them as the platform file says (`unlisted` included). Each
//!   organization may be given Unix users (`--users physics=alice,bob`):
//!   its SWF users, in the order they first appear in the window, take them
//!   round-robin (`--uid`, which only root may give). An organization
//!   given none submits as the caller, under its account. Without a
//!   platform file every job is the caller's, under their default account.
//! - **The record**: `submitted.csv` in the output folder, one row per job
//!   submitted, written as each is (an interrupted replay keeps what it
//!   submitted): the SWF job number beside the Slurm job id, so that
//!   `fairsched slurm history` (whose field 1 is Slurm's job id) joins
//!   with it. [`parse_submitted`] reads it back.
//!
//! The replay ends once the last job is submitted; Slurm runs them.
//! `scancel --name=fairsched-replay` cancels what is left of every replay.

use crate::{SlurmError, tools};
use fairsched_trace::{Job, JobIteratorExt, JobStream, StreamOptions};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The job name of every replayed job.
pub const REPLAY_NAME: &str = "fairsched-replay";

/// The record's file name in the output folder.
pub const SUBMITTED_CSV: &str = "submitted.csv";

/// The record's columns.
pub const COLUMNS: [&str; 12] = [
    "swf_job",
    "slurm_job",
    "log_offset",
    "planned_s",
    "submitted_s",
    "swf_user",
    "unix_user",
    "account",
    "log_procs",
    "procs",
    "limit_min",
    "sleep_s",
];

fn usage(m: String) -> SlurmError {
    SlurmError::Usage(m)
}

/// The jobs of the log at `path` submitted in `[start, start+len)`, their
/// submit times counted from `start`.
pub fn read_window(path: &Path, start: i64, len: i64) -> Result<Vec<Job>, SlurmError> {
    let fail = |e: fairsched_trace::TraceError| SlurmError::Failed(e.to_string());
    JobStream::open(path, StreamOptions::default())
        .map_err(fail)?
        .window(start, len)
        .collect::<Result<Vec<Job>, _>>()
        .map_err(fail)
}

/// An organization of the platform file: a Slurm account, and the Unix
/// users its SWF users are mapped onto (none: the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub unix_users: Vec<String>,
}

/// A name going on sbatch's command line and into the record: refused if
/// empty or holding blanks, commas, quotes, `=` or backslashes.
pub fn check_name(what: &str, name: &str) -> Result<(), SlurmError> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || ",\"'=\\".contains(c))
    {
        return Err(usage(format!(
            "{what} {name:?}: a name cannot be empty or hold blanks, commas, quotes, = or backslashes"
        )));
    }
    Ok(())
}

/// `ORG=USER,USER…` (`--users`).
pub fn parse_users(s: &str) -> Result<(String, Vec<String>), String> {
    let (org, users) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected ORG=USER[,USER…]"))?;
    let org = org.trim();
    let users: Vec<String> = users.split(',').map(|u| u.trim().to_owned()).collect();
    check_name("organization", org).map_err(|e| e.to_string())?;
    for u in &users {
        check_name("user", u).map_err(|e| e.to_string())?;
    }
    Ok((org.to_owned(), users))
}

/// One job to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// SWF job number (field 1).
    pub swf_job: u64,
    /// Its submit time in the log, seconds after the window's start.
    pub log_offset: i64,
    /// When it is submitted, seconds after the replay begins (`log_offset / K`, to the millisecond).
    pub at_s: f64,
    /// SWF user (field 12).
    pub swf_user: i64,
    /// `--uid`; `None`: the caller.
    pub unix_user: Option<String>,
    /// `-A`; `None`: the user's default account.
    pub account: Option<String>,
    /// Processors in the log.
    pub log_procs: u32,
    /// Processors asked (`-n`): the log's, capped.
    pub procs: u32,
    /// `-t`, minutes; `None`: no limit asked (the partition's).
    pub limit_min: Option<u64>,
    /// What the job sleeps: its log's run time / K, to the millisecond (at least 1 ms).
    pub sleep_s: f64,
}

/// What [`plan`] made of a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub jobs: Vec<Planned>,
    /// Jobs whose processors were capped.
    pub capped: usize,
    /// The processor cap.
    pub max_procs: u32,
    pub speedup: f64,
    /// Each SWF user of the window, the Unix user and the account it got, in first-seen order.
    pub users: Vec<(i64, Option<String>, Option<String>)>,
}

/// The submissions of `jobs` (from [`read_window`]) at speed-up `speedup`,
/// processors capped at `max_procs`. With `orgs` (the platform file's
/// organizations, in index order), `org_of` gives an SWF user's
/// organization (an index into `orgs`; an error names why there is none);
/// without, every job is the caller's.
pub fn plan(
    jobs: &[Job],
    speedup: f64,
    max_procs: u32,
    orgs: &[Account],
    mut org_of: impl FnMut(i64) -> Result<usize, String>,
) -> Result<Plan, SlurmError> {
    if !speedup.is_finite() || speedup <= 0.0 {
        return Err(usage(format!("--speedup {speedup}: a factor > 0")));
    }
    if max_procs == 0 {
        return Err(usage("the processor cap must be at least 1".into()));
    }
    for o in orgs {
        check_name("account", &o.name)?;
        for u in &o.unix_users {
            check_name("user", u)?;
        }
    }
    // Each organization's SWF users in first-seen order: the i-th takes
    // the organization's Unix user i mod n.
    let mut seen: Vec<usize> = vec![0; orgs.len()];
    let mut who: HashMap<i64, (Option<String>, Option<String>)> = HashMap::new();
    let mut users = Vec::new();
    let mut out = Vec::with_capacity(jobs.len());
    let mut capped = 0;
    for j in jobs {
        let (unix_user, account) = match who.get(&j.user) {
            Some(w) => w.clone(),
            None => {
                let w = if orgs.is_empty() {
                    (None, None)
                } else {
                    let o =
                        org_of(j.user).map_err(|e| SlurmError::Failed(format!("SWF job {}: {e}", j.id)))?;
                    let org = orgs.get(o).ok_or_else(|| {
                        SlurmError::Failed(format!("SWF job {}: organization {o} does not exist", j.id))
                    })?;
                    let unix = (!org.unix_users.is_empty())
                        .then(|| org.unix_users[seen[o] % org.unix_users.len()].clone());
                    seen[o] += 1;
                    (unix, Some(org.name.clone()))
                };
                who.insert(j.user, w.clone());
                users.push((j.user, w.0.clone(), w.1.clone()));
                w
            }
        };
        let procs = j.procs.min(max_procs);
        if procs < j.procs {
            capped += 1;
        }
        let limit_min = j
            .requested_time
            .map(|t| ((t as f64 / speedup / 60.0).ceil() as u64).max(1));
        out.push(Planned {
            swf_job: j.id,
            log_offset: j.submit,
            at_s: ms(j.submit as f64 / speedup),
            swf_user: j.user,
            unix_user,
            account,
            log_procs: j.procs,
            procs,
            limit_min,
            sleep_s: ms(j.runtime as f64 / speedup).max(0.001),
        });
    }
    Ok(Plan {
        jobs: out,
        capped,
        max_procs,
        speedup,
        users,
    })
}

/// Seconds rounded to the millisecond: what the record holds (and reads back).
fn ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

/// The sleep's duration as the job's command gives it (milliseconds).
fn sleep_arg(s: f64) -> String {
    format!("{:.3}", s.max(0.001))
}

/// sbatch's arguments for `job` (without `--parsable`), `extra` options
/// before `--wrap`.
pub fn sbatch_args(job: &Planned, extra: &[String]) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(u) = &job.unix_user {
        a.push(format!("--uid={u}"));
    }
    if let Some(acc) = &job.account {
        a.extend(["-A".to_owned(), acc.clone()]);
    }
    a.extend(["-n".to_owned(), job.procs.to_string()]);
    if let Some(t) = job.limit_min {
        a.extend(["-t".to_owned(), t.to_string()]);
    }
    a.push(format!("--job-name={REPLAY_NAME}"));
    a.push("--output=/dev/null".to_owned());
    a.extend(extra.iter().cloned());
    a.extend(["--wrap".to_owned(), format!("sleep {}", sleep_arg(job.sleep_s))]);
    a
}

/// The `sbatch` command of `job` as a shell line, with its time and SWF
/// job number in a comment (`--dry-run`).
pub fn command_line(job: &Planned, extra: &[String]) -> Result<String, SlurmError> {
    let mut s = String::from("sbatch");
    for a in sbatch_args(job, extra) {
        s.push(' ');
        // Plain words as they are (`--uid=alice`), others quoted.
        if !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c))
        {
            s.push_str(&a);
        } else {
            s.push_str(&tools::shell_quote(&a)?);
        }
    }
    s.push_str(&format!("  # +{:.3}s SWF job {}", job.at_s, job.swf_job));
    Ok(s)
}

/// One job submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub job: Planned,
    pub slurm_job: u64,
    /// When it was submitted, seconds after the replay began (to the millisecond).
    pub submitted_s: f64,
}

impl Submitted {
    fn csv_row(&self) -> String {
        let j = &self.job;
        let opt = |o: &Option<String>| o.clone().unwrap_or_default();
        format!(
            "{},{},{},{:.3},{:.3},{},{},{},{},{},{},{}\n",
            j.swf_job,
            self.slurm_job,
            j.log_offset,
            j.at_s,
            self.submitted_s,
            j.swf_user,
            opt(&j.unix_user),
            opt(&j.account),
            j.log_procs,
            j.procs,
            j.limit_min.map(|m| m.to_string()).unwrap_or_default(),
            sleep_arg(j.sleep_s),
        )
    }
}

/// What [`submit`] did.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub submitted: Vec<Submitted>,
    /// When the replay began (Unix seconds, fractional).
    pub began_unix: f64,
    /// The largest delay of a submission past its time, seconds.
    pub max_lag_s: f64,
    /// The record.
    pub csv: PathBuf,
}

/// Submits `plan`'s jobs at their times, each with `extra` sbatch options
/// too, recording each in `dir/submitted.csv` (refused if it exists: a
/// previous replay's record) as it goes; `each` is called after each
/// submission. A failure stops the replay: the jobs submitted before it
/// are recorded, and the error says so.
pub fn submit(
    plan: &Plan,
    dir: &Path,
    extra: &[String],
    mut each: impl FnMut(&Submitted),
) -> Result<Replayed, SlurmError> {
    let io = |what: String| move |source| SlurmError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let csv = dir.join(SUBMITTED_CSV);
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&csv)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(usage(format!(
                "{} exists (an earlier replay's record): give another --out, or remove it",
                csv.display()
            )));
        }
        Err(e) => return Err(io(format!("cannot create {}", csv.display()))(e)),
    };
    let write = |f: &mut std::fs::File, text: &str| {
        f.write_all(text.as_bytes())
            .and_then(|()| f.flush())
            .map_err(io(format!("cannot write {}", csv.display())))
    };
    write(&mut file, &format!("{}\n", COLUMNS.join(",")))?;
    let began = Instant::now();
    let began_unix = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut done: Vec<Submitted> = Vec::with_capacity(plan.jobs.len());
    let mut max_lag_s: f64 = 0.0;
    for (i, job) in plan.jobs.iter().enumerate() {
        let due = began + Duration::from_secs_f64(job.at_s);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let submitted_s = ms(began.elapsed().as_secs_f64());
        let mut args = vec!["--parsable".to_owned()];
        args.extend(sbatch_args(job, extra));
        let id = match tools::run("sbatch", &args, None).and_then(|out| tools::parse_job_id(&out)) {
            Ok(id) => id,
            Err(e) => {
                return Err(SlurmError::Failed(format!(
                    "SWF job {} ({} of {}) not submitted{}: {e}",
                    job.swf_job,
                    i + 1,
                    plan.jobs.len(),
                    if done.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; the {} before it are recorded in {} (`scancel --name={REPLAY_NAME}` cancels them)",
                            done.len(),
                            csv.display()
                        )
                    }
                )));
            }
        };
        max_lag_s = max_lag_s.max(submitted_s - job.at_s);
        let s = Submitted {
            job: job.clone(),
            slurm_job: id,
            submitted_s,
        };
        write(&mut file, &s.csv_row())?;
        each(&s);
        done.push(s);
    }
    Ok(Replayed {
        submitted: done,
        began_unix,
        max_lag_s,
        csv,
    })
}

/// Reads a `submitted.csv` back (`name` for messages).
pub fn parse_submitted(name: &str, text: &str) -> Result<Vec<Submitted>, SlurmError> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim_end_matches('\r')).unwrap_or("");
    if header != COLUMNS.join(",") {
        return Err(SlurmError::Failed(format!(
            "{name}:1: not a replay record (expected the header {})",
            COLUMNS.join(",")
        )));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = |col: usize| {
            SlurmError::Failed(format!(
                "{name}:{}: column {} ({}): {:?} is not valid",
                i + 1,
                col + 1,
                COLUMNS[col],
                f.get(col).copied().unwrap_or("")
            ))
        };
        if f.len() != COLUMNS.len() {
            return Err(SlurmError::Failed(format!(
                "{name}:{}: expected {} columns, found {}",
                i + 1,
                COLUMNS.len(),
                f.len()
            )));
        }
        fn num<T: std::str::FromStr>(f: &[&str], col: usize) -> Option<T> {
            f[col].parse().ok()
        }
        let opt = |col: usize| (!f[col].is_empty()).then(|| f[col].to_owned());
        let float = |col: usize| {
            num::<f64>(&f, col)
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(col))
        };
        out.push(Submitted {
            job: Planned {
                swf_job: num(&f, 0).ok_or_else(|| bad(0))?,
                log_offset: num(&f, 2).ok_or_else(|| bad(2))?,
                at_s: float(3)?,
                swf_user: num(&f, 5).ok_or_else(|| bad(5))?,
                unix_user: opt(6),
                account: opt(7),
                log_procs: num(&f, 8).ok_or_else(|| bad(8))?,
                procs: num(&f, 9).ok_or_else(|| bad(9))?,
                limit_min: match f[10] {
                    "" => None,
                    v => Some(v.parse().map_err(|_| bad(10))?),
                },
                sleep_s: float(11)?,
            },
            slurm_job: num(&f, 1).ok_or_else(|| bad(1))?,
            submitted_s: float(4)?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, submit: i64, runtime: i64, procs: u32, req: Option<i64>, user: i64) -> Job {
        Job {
            id,
            submit,
            runtime,
            procs,
            requested_time: req,
            user,
            group: user,
            status: 1,
            org: 0,
            part: 0,
        }
    }

    fn orgs() -> Vec<Account> {
        vec![
            Account {
                name: "physics".into(),
                unix_users: vec!["alice".into(), "bob".into()],
            },
            Account {
                name: "chemistry".into(),
                unix_users: vec![],
            },
        ]
    }

    /// Users 1, 3, 5 in physics, 2 in chemistry; 9 in none.
    fn org_of(u: i64) -> Result<usize, String> {
        match u {
            1 | 3 | 5 => Ok(0),
            2 => Ok(1),
            _ => Err(format!("user {u} is in no organization")),
        }
    }

    #[test]
    fn times_sizes_limits_and_users() {
        let jobs = [
            job(15, 0, 3477, 4, Some(53940), 1),
            job(16, 100, 46, 25, Some(240), 2),
            job(17, 250, 1, 16, None, 3),
            job(18, 300, 10, 1, Some(60), 5),
            job(19, 400, 5, 1, Some(60), 1),
        ];
        let p = plan(&jobs, 100.0, 16, &orgs(), org_of).unwrap();
        assert_eq!(p.capped, 1);
        let at: Vec<f64> = p.jobs.iter().map(|j| j.at_s).collect();
        assert_eq!(at, [0.0, 1.0, 2.5, 3.0, 4.0]);
        let j = &p.jobs[0];
        assert_eq!((j.procs, j.limit_min, j.sleep_s), (4, Some(9), 34.77));
        assert_eq!(
            (p.jobs[1].log_procs, p.jobs[1].procs, p.jobs[1].limit_min),
            (25, 16, Some(1))
        );
        assert_eq!(p.jobs[2].limit_min, None);
        // Round robin in first-seen order: 1 → alice, 3 → bob, 5 → alice;
        // chemistry has no Unix user: the caller.
        let who: Vec<(i64, Option<&str>, Option<&str>)> = p
            .users
            .iter()
            .map(|(u, x, a)| (*u, x.as_deref(), a.as_deref()))
            .collect();
        assert_eq!(
            who,
            [
                (1, Some("alice"), Some("physics")),
                (2, None, Some("chemistry")),
                (3, Some("bob"), Some("physics")),
                (5, Some("alice"), Some("physics")),
            ]
        );
        assert_eq!(p.jobs[4].unix_user.as_deref(), Some("alice"));
        assert_eq!(
            sbatch_args(&p.jobs[0], &["--partition=debug".to_owned()]),
            [
                "--uid=alice",
                "-A",
                "physics",
                "-n",
                "4",
                "-t",
                "9",
                "--job-name=fairsched-replay",
                "--output=/dev/null",
                "--partition=debug",
                "--wrap",
                "sleep 34.770"
            ]
        );
        assert_eq!(
            command_line(&p.jobs[1], &[]).unwrap(),
            "sbatch -A chemistry -n 16 -t 1 --job-name=fairsched-replay --output=/dev/null --wrap 'sleep 0.460'  \
             # +1.000s SWF job 16"
        );
    }

    #[test]
    fn without_a_platform_every_job_is_the_callers() {
        let jobs = [job(1, 0, 1, 1, None, 7)];
        let p = plan(&jobs, 1.0, 4, &[], |_| unreachable!()).unwrap();
        assert_eq!(
            (p.jobs[0].unix_user.clone(), p.jobs[0].account.clone()),
            (None, None)
        );
        assert_eq!(
            sbatch_args(&p.jobs[0], &[])[..2],
            ["-n".to_owned(), "1".to_owned()]
        );
    }

    #[test]
    fn mistakes() {
        let jobs = [job(1, 0, 1, 1, None, 9)];
        let e = plan(&jobs, 2.0, 4, &orgs(), org_of).unwrap_err().to_string();
        assert_eq!(e, "SWF job 1: user 9 is in no organization");
        for k in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(plan(&jobs, k, 4, &orgs(), org_of).unwrap_err().is_usage());
        }
        assert!(plan(&jobs, 1.0, 0, &orgs(), org_of).is_err());
        let bad = [Account {
            name: "a b".into(),
            unix_users: vec![],
        }];
        assert!(plan(&jobs, 1.0, 1, &bad, |_| Ok(0)).unwrap_err().is_usage());
        assert_eq!(
            parse_users("physics=alice, bob"),
            Ok(("physics".into(), vec!["alice".into(), "bob".into()]))
        );
        assert!(parse_users("physics").is_err());
        assert!(parse_users("physics=").is_err());
        assert!(parse_users("physics=alice,,bob").is_err());
        assert!(parse_users("=alice").is_err());
    }

    #[test]
    fn the_record_reads_back() {
        let jobs = [job(15, 0, 3477, 40, Some(53940), 1), job(16, 100, 46, 2, None, 2)];
        let p = plan(&jobs, 100.0, 16, &orgs(), org_of).unwrap();
        let rows: Vec<Submitted> = p
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| Submitted {
                job: j.clone(),
                slurm_job: 500 + i as u64,
                submitted_s: j.at_s + 0.012,
            })
            .collect();
        let mut text = format!("{}\n", COLUMNS.join(","));
        for r in &rows {
            text.push_str(&r.csv_row());
        }
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "15,500,0,0.000,0.012,1,alice,physics,40,16,9,34.770"
        );
        assert_eq!(
            text.lines().nth(2).unwrap(),
            "16,501,100,1.000,1.012,2,,chemistry,2,2,,0.460"
        );
        assert_eq!(parse_submitted("s.csv", &text).unwrap(), rows);
        let e = parse_submitted("s.csv", "x\n").unwrap_err().to_string();
        assert!(e.starts_with("s.csv:1: not a replay record"), "{e}");
        let e = parse_submitted("s.csv", &text.replace("500", "x"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "s.csv:2: column 2 (slurm_job): \"x\" is not valid");
        let e = parse_submitted("s.csv", &format!("{}1,2\n", COLUMNS.join(",") + "\n"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "s.csv:2: expected 12 columns, found 2");
    }

    #[test]
    fn an_existing_record_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SUBMITTED_CSV), "old").unwrap();
        let p = plan(&[], 1.0, 1, &[], |_| Ok(0)).unwrap();
        let e = submit(&p, dir.path(), &[], |_| {}).unwrap_err();
        assert!(e.is_usage(), "{e}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(SUBMITTED_CSV)).unwrap(),
            "old"
        );
    }

    #[test]
    fn the_bundled_log_window() {
        let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/KTH-SP2-1996-2.1-cln.swf.gz");
        let jobs = read_window(&log, 11_756_741, 736).unwrap();
        assert_eq!(jobs.len(), 20);
        assert_eq!((jobs[0].id, jobs[0].submit), (10_359, 0));
        assert_eq!(jobs[19].submit, 735);
    }
}
