//! A Slurm site's accounting as a workload log (`fairsched slurm
//! history`): the jobs `sacct` knows of, as an SWF log, and its accounts
//! as the organizations of a platform file, so that last month can be
//! replayed in the simulator under another policy (or submitted again,
//! time-compressed, with [`crate::replay`]).
//!
//! Three stages, the middle one pure:
//!
//! 1. [`sacct`] runs `sacct -P -n -X -a --noconvert -S SINCE [-E UNTIL] -o`
//!    [`FIELDS`] with `SLURM_TIME_FORMAT=%s`, so that every time stamp is
//!    Unix seconds (no time zone to guess), and returns its text;
//! 2. [`parse_sacct`] reads that text into [`SacctJob`]s (a bad line is a
//!    [`SacctError`] naming the line and the field, never a panic), and
//!    [`History::from_jobs`] turns them into SWF records;
//! 3. [`History::write_swf`] writes the log with `fairsched-trace`'s
//!    writer, and [`History::platform_toml`] the platform file.
//!
//! # What each SWF field holds
//!
//! | field | from sacct |
//! |---|---|
//! | 1 job number | `JobIDRaw`, Slurm's own job id (an array task's unique id): `fairsched slurm replay`'s `submitted.csv` joins on it; gaps are jobs left out or outside the window |
//! | 2 submit | `Submit` − the earliest `Submit` of the jobs written (the header's `UnixStartTime`) |
//! | 3 wait | `Start` − `Submit`; -1 if the job never started |
//! | 4 run time | `ElapsedRaw`, at least 1 (sacct counts whole seconds: a job that started ran, and a run time of 0 is one a simulator drops); -1 if it never started |
//! | 5 allocated processors | `AllocCPUS`; -1 if it never started |
//! | 8 requested processors | `ReqCPUS` |
//! | 9 requested time | `TimelimitRaw` (minutes) × 60; -1 when `UNLIMITED` or the partition's (`Partition_Limit`) |
//! | 11 status | 1 `COMPLETED`; 5 `CANCELLED`; 0 `FAILED`, `TIMEOUT`, `NODE_FAIL`, `BOOT_FAIL`, `OUT_OF_MEMORY`, `DEADLINE`, `PREEMPTED` |
//! | 12 user | 1, 2, … in first-seen order (jobs in submit order); [`History::users`] has the names |
//! | 13 group | the Slurm account, 1, 2, … in first-seen order ([`History::accounts`]) |
//! | 15 queue | the QOS, 1, 2, … (the header's notes name them) |
//! | 16 partition | the partition, 1, 2, … (likewise) |
//!
//! The other fields are -1. Jobs are written in submit order (ties by job
//! id).
//!
//! # Which jobs
//!
//! - A job still pending, running, suspended or requeued when sacct ran is
//!   left out (its times are not known yet) and counted
//!   ([`Counts::not_ended`]).
//! - A job that ended without ever starting (cancelled while pending:
//!   sacct's `NodeList` is `None assigned`) is kept, as SWF 2.1's status 5
//!   exists for it, with wait, run time and allocated processors -1: a
//!   simulator drops it as a job of unknown run time (fairsched's
//!   `runtime_unknown` count), a study of cancellations sees it. Counted in
//!   [`Counts::never_started`].
//! - A state this code does not know (a newer Slurm's) or `REVOKED` (a
//!   federated sibling that ran on another cluster) is left out and counted
//!   by name ([`Counts::other_states`]).
//!
//! # Processors of the platform file
//!
//! sacct does not say who owns the cluster: an account's processors are
//! given (`--procs ACCOUNT=N`), and the accounts not given share what is
//! left of the cluster's CPUs (the total of `sinfo -h -o %C`) evenly
//! ([`History::org_procs`]). The file's first comment says which.
//!
//! # User names
//!
//! The SWF log holds ids only. The platform file names each organization's
//! users in a comment by default: on the cluster they are no secret, and
//! they are what joins the log to the people; `names = false` leaves them
//! out of a file meant for elsewhere (accounts stay named: they are the
//! organizations, and `fairsched slurm replay` submits under them).
//!
//! # Users of several accounts
//!
//! SWF field 13 keeps each job's own account, but a platform file lists a
//! user in one organization only: [`History::platform_toml`] lists each
//! user under the account of their first job, and
//! [`History::multi_account_users`] says who ran jobs under others (the
//! command prints a warning with their count).

use crate::{SlurmError, tools};
use fairsched_trace::{MAX_JOB_PROCS, MAX_SECONDS, SwfHeader, SwfJob, SwfWriter};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// The fields asked of `sacct -o`, in the order [`parse_sacct`] reads them.
pub const FIELDS: [&str; 15] = [
    "JobIDRaw",
    "Cluster",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "AllocCPUS",
    "ReqCPUS",
    "TimelimitRaw",
    "State",
    "NodeList",
];

/// What sacct's `NodeList` says of a job that never had nodes.
const NO_NODES: &str = "None assigned";

/// The arguments of the `sacct` call (see the [module docs](self)).
/// `since` and `until` are passed as sacct reads them (`2026-11-01`,
/// `2026-11-01T08:00`, `now-7days`, …): sacct itself refuses a bad one.
pub fn sacct_args(since: &str, until: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = ["-P", "-n", "-X", "-a", "--noconvert", "-S", since]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    if let Some(u) = until {
        args.extend(["-E".to_owned(), u.to_owned()]);
    }
    args.extend(["-o".to_owned(), FIELDS.join(",")]);
    args
}

/// Runs `sacct` for the jobs of [`since`, `until`) (until now without
/// `until`) and returns what it printed (times in Unix seconds).
pub fn sacct(since: &str, until: Option<&str>) -> Result<String, SlurmError> {
    if since.trim().is_empty() {
        return Err(SlurmError::Usage(
            "--since: a date sacct reads, e.g. 2026-11-01".into(),
        ));
    }
    tools::run_env(
        "sacct",
        &sacct_args(since, until),
        None,
        &[("SLURM_TIME_FORMAT", "%s")],
    )
}

/// The cluster's CPUs, `T` of `sinfo -h -o %C` (`A/I/O/T`: allocated,
/// idle, other, total), summed over the lines it prints (one per
/// partition, which may share nodes: the largest is taken, not the sum).
pub fn cluster_cpus() -> Result<u32, SlurmError> {
    let out = tools::run(
        "sinfo",
        &["-h".to_owned(), "-o".to_owned(), "%C".to_owned()],
        None,
    )?;
    parse_cpus(&out)
}

/// Reads `sinfo -h -o %C`'s answer (see [`cluster_cpus`]).
pub fn parse_cpus(out: &str) -> Result<u32, SlurmError> {
    let mut best: Option<u32> = None;
    for line in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let total = line
            .rsplit('/')
            .next()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|_| line.split('/').count() == 4)
            .ok_or_else(|| SlurmError::Failed(format!("`sinfo -h -o %C` printed {line:?}, not A/I/O/T")))?;
        best = Some(best.map_or(total, |b| b.max(total)));
    }
    best.ok_or_else(|| SlurmError::Failed("`sinfo -h -o %C` printed nothing: no partition?".into()))
}

/// A line of sacct's output that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SacctError {
    /// Not as many `|`-separated fields as [`FIELDS`].
    #[error("sacct output line {line}: expected {} fields ({}), found {found}", FIELDS.len(), FIELDS.join("|"))]
    FieldCount { line: usize, found: usize },
    /// One field's value.
    #[error("sacct output line {line}: field {index} ({field}): {value:?} {reason}")]
    Field {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        index: usize,
        /// The field's sacct name (from [`FIELDS`]).
        field: &'static str,
        /// The text found (at most 80 characters).
        value: String,
        reason: &'static str,
    },
}

impl From<SacctError> for SlurmError {
    fn from(e: SacctError) -> Self {
        SlurmError::Failed(e.to_string())
    }
}

/// How a job ended, as SWF sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SWF status 1.
    Completed,
    /// SWF status 0 (failed, timed out, killed by a node failure, out of memory, preempted…).
    Failed,
    /// SWF status 5.
    Cancelled,
    /// Still pending, running, suspended or requeued: no times yet.
    NotEnded,
    /// A state not written (`REVOKED`, or one this code does not know).
    Other,
}

impl Outcome {
    /// sacct's `State` (`CANCELLED by 1000` is `CANCELLED`).
    pub fn of_state(state: &str) -> Outcome {
        let word = state.split_whitespace().next().unwrap_or("");
        match word.trim_end_matches('+') {
            "COMPLETED" => Outcome::Completed,
            "CANCELLED" => Outcome::Cancelled,
            "FAILED" | "TIMEOUT" | "NODE_FAIL" | "BOOT_FAIL" | "OUT_OF_MEMORY" | "DEADLINE" | "PREEMPTED" => {
                Outcome::Failed
            }
            "PENDING" | "RUNNING" | "SUSPENDED" | "REQUEUED" | "REQUEUE_FED" | "REQUEUE_HOLD"
            | "RESIZING" | "CONFIGURING" | "COMPLETING" | "SIGNALING" | "STAGE_OUT" | "STOPPED"
            | "SPECIAL_EXIT" | "RESV_DEL_HOLD" | "REQUESTED" => Outcome::NotEnded,
            _ => Outcome::Other,
        }
    }

    /// SWF field 11, for the states written.
    pub fn swf_status(self) -> Option<i64> {
        match self {
            Outcome::Completed => Some(1),
            Outcome::Failed => Some(0),
            Outcome::Cancelled => Some(5),
            Outcome::NotEnded | Outcome::Other => None,
        }
    }
}

/// One line of sacct's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctJob {
    /// 1-based line in sacct's output.
    pub line: usize,
    pub id: u64,
    pub cluster: String,
    pub user: String,
    pub account: String,
    pub partition: String,
    pub qos: String,
    /// Unix seconds.
    pub submit: i64,
    /// Unix seconds; `None` if it never started (also when sacct gives a
    /// start time but no node, as it does for a job cancelled while pending).
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub elapsed: i64,
    pub alloc_cpus: u32,
    pub req_cpus: u32,
    /// Minutes; `None` when unlimited or the partition's.
    pub limit_min: Option<i64>,
    /// As sacct wrote it (`CANCELLED by 0`).
    pub state: String,
}

impl SacctJob {
    pub fn outcome(&self) -> Outcome {
        Outcome::of_state(&self.state)
    }
}

/// Reads sacct's parseable output (`-P -n`, the [`FIELDS`] in order,
/// times as Unix seconds). Blank lines are skipped.
pub fn parse_sacct(text: &str) -> Result<Vec<SacctJob>, SacctError> {
    let mut jobs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = raw.split('|').collect();
        if f.len() != FIELDS.len() {
            return Err(SacctError::FieldCount { line, found: f.len() });
        }
        let bad = |index: usize, reason: &'static str| SacctError::Field {
            line,
            index: index + 1,
            field: FIELDS[index],
            value: f[index].chars().take(80).collect(),
            reason,
        };
        // Unix seconds, as SLURM_TIME_FORMAT=%s prints them; `Unknown` or
        // `None` when there is none.
        let time = |index: usize| -> Result<Option<i64>, SacctError> {
            match f[index].trim() {
                "Unknown" | "None" | "" => Ok(None),
                t => match t.parse::<i64>() {
                    Ok(v) if (0..=MAX_SECONDS).contains(&v) => Ok(Some(v)),
                    Ok(_) => Err(bad(index, "is out of range")),
                    Err(_) => Err(bad(
                        index,
                        "is not a time in Unix seconds (sacct must run with SLURM_TIME_FORMAT=%s)",
                    )),
                },
            }
        };
        let count = |index: usize| -> Result<u32, SacctError> {
            match f[index].trim().parse::<i64>() {
                Ok(v) if (0..=MAX_JOB_PROCS).contains(&v) => Ok(v as u32),
                Ok(_) => Err(bad(index, "is out of range")),
                Err(_) => Err(bad(index, "is not a CPU count")),
            }
        };
        let text = |index: usize| f[index].trim().to_owned();
        let id = f[0]
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&v| v >= 1 && v <= i64::MAX as u64)
            .ok_or_else(|| bad(0, "is not a job id"))?;
        let submit = time(6)?.ok_or_else(|| bad(6, "is not a time: every job has a submit time"))?;
        let start = time(7)?;
        let end = time(8)?;
        let elapsed = match f[9].trim().parse::<i64>() {
            Ok(v) if (0..=MAX_SECONDS).contains(&v) => v,
            Ok(_) => return Err(bad(9, "is out of range")),
            Err(_) => return Err(bad(9, "is not a number of seconds")),
        };
        let alloc_cpus = count(10)?;
        let req_cpus = count(11)?;
        let limit_min = match f[12].trim() {
            "UNLIMITED" | "Partition_Limit" | "" => None,
            t => match t.parse::<i64>() {
                Ok(v) if (0..=MAX_SECONDS / 60).contains(&v) => Some(v),
                Ok(_) => return Err(bad(12, "is out of range")),
                Err(_) => {
                    return Err(bad(
                        12,
                        "is not a number of minutes, UNLIMITED or Partition_Limit",
                    ));
                }
            },
        };
        let state = text(13);
        if state.is_empty() {
            return Err(bad(13, "is not a job state"));
        }
        // A job cancelled while pending has no node; sacct may still give
        // it a start time (its end) once the record is complete.
        let nodes = f[14].trim();
        let start = if nodes == NO_NODES || nodes.is_empty() {
            None
        } else {
            start
        };
        jobs.push(SacctJob {
            line,
            id,
            cluster: text(1),
            user: text(2),
            account: text(3),
            partition: text(4),
            qos: text(5),
            submit,
            start,
            end,
            elapsed,
            alloc_cpus,
            req_cpus,
            limit_min,
            state,
        });
    }
    Ok(jobs)
}

/// What [`History::from_jobs`] kept and left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines sacct printed.
    pub rows: u64,
    /// Jobs written.
    pub written: u64,
    /// Of those, jobs that ended without starting (status 5, run time -1).
    pub never_started: u64,
    /// Left out: pending, running, suspended or requeued when sacct ran.
    pub not_ended: u64,
    /// Left out: other states, by name (`REVOKED`, or unknown ones).
    pub other_states: BTreeMap<String, u64>,
    /// Jobs of a user run under an account other than their first (the
    /// platform file lists the user under the first).
    pub jobs_under_other_accounts: u64,
}

/// A user who ran jobs under several accounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiAccount {
    /// SWF user id.
    pub user: i64,
    pub name: String,
    /// Account names, the first (the one the platform file lists the user under) first.
    pub accounts: Vec<String>,
}

/// Jobs of sacct as SWF records, with the names behind the ids.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// `UnixStartTime` (the earliest submit), `MaxRecords`, notes.
    pub header: SwfHeader,
    /// In submit order.
    pub jobs: Vec<SwfJob>,
    /// User names: SWF user id `i` is `users[i - 1]`.
    pub users: Vec<String>,
    /// Account names: SWF group `g` is `accounts[g - 1]`.
    pub accounts: Vec<String>,
    /// The account each user is listed under (first job's), by SWF user id - 1.
    pub user_account: Vec<usize>,
    pub multi_account_users: Vec<MultiAccount>,
    pub counts: Counts,
}

/// Ids 1, 2, … for names, in first-seen order.
#[derive(Default)]
struct Ids {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Ids {
    fn id(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), self.names.len());
        self.names.len()
    }
}

/// A name for SWF comments and TOML: never empty.
fn shown(name: &str) -> &str {
    if name.is_empty() { "(none)" } else { name }
}

impl History {
    /// The SWF records of these jobs (see the [module docs](self) for
    /// each field and for which jobs are kept). `source` goes into the
    /// header (`Installation`), e.g. the sacct command.
    pub fn from_jobs(jobs: &[SacctJob], source: &str) -> History {
        let mut counts = Counts {
            rows: jobs.len() as u64,
            ..Counts::default()
        };
        let mut kept: Vec<&SacctJob> = Vec::new();
        for j in jobs {
            match j.outcome() {
                Outcome::NotEnded => counts.not_ended += 1,
                Outcome::Other => {
                    let state = j.state.split_whitespace().next().unwrap_or("").to_owned();
                    *counts.other_states.entry(state).or_default() += 1;
                }
                _ => kept.push(j),
            }
        }
        kept.sort_by_key(|j| (j.submit, j.id));
        let t0 = kept.first().map_or(0, |j| j.submit);
        let (mut users, mut accounts, mut qos, mut parts) =
            (Ids::default(), Ids::default(), Ids::default(), Ids::default());
        let mut user_account: Vec<usize> = Vec::new();
        let mut seen: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut records = Vec::with_capacity(kept.len());
        let mut cluster = None;
        for j in kept {
            let user = users.id(&j.user);
            let account = accounts.id(&j.account);
            if user > user_account.len() {
                user_account.push(account);
            }
            let of_user = seen.entry(user).or_default();
            if !of_user.contains(&account) {
                of_user.push(account);
            }
            if user_account[user - 1] != account {
                counts.jobs_under_other_accounts += 1;
            }
            cluster.get_or_insert(j.cluster.as_str());
            let started = j.start.filter(|_| j.outcome().swf_status().is_some());
            if started.is_none() {
                counts.never_started += 1;
            }
            let status = j.outcome().swf_status().unwrap_or(-1);
            let positive = |v: u32| if v == 0 { -1 } else { i64::from(v) };
            records.push(SwfJob {
                job_number: j.id as i64,
                submit_time: j.submit - t0,
                wait_time: started.map_or(-1, |s| (s - j.submit).max(0)),
                run_time: started.map_or(-1, |_| j.elapsed.max(1)),
                allocated_procs: started.map_or(-1, |_| positive(j.alloc_cpus)),
                requested_procs: positive(j.req_cpus),
                requested_time: j.limit_min.map_or(-1, |m| m * 60),
                status,
                user_id: user as i64,
                group_id: account as i64,
                queue: qos.id(&j.qos) as i64,
                partition: parts.id(&j.partition) as i64,
                ..SwfJob::UNKNOWN
            });
        }
        counts.written = records.len() as u64;
        let multi_account_users = seen
            .into_iter()
            .filter(|(_, a)| a.len() > 1)
            .map(|(u, a)| MultiAccount {
                user: u as i64,
                name: users.names[u - 1].clone(),
                accounts: a.iter().map(|&i| accounts.names[i - 1].clone()).collect(),
            })
            .collect();
        let mut header = SwfHeader::default();
        header.set("Version", "2.2");
        header.set(
            "Computer",
            &format!("Slurm cluster {}", shown(cluster.unwrap_or(""))),
        );
        header.set("Installation", &format!("Slurm accounting: {source}"));
        if !records.is_empty() {
            header.set("UnixStartTime", &t0.to_string());
        }
        header.set("MaxJobs", &counts.rows.to_string());
        header.set("MaxRecords", &records.len().to_string());
        header.set(
            "Note",
            "field 1 is Slurm's job id; field 12 a user, field 13 the Slurm account (group), \
             field 15 the QOS (queue), field 16 the partition, each numbered 1, 2, ... in first-seen order",
        );
        header.set(
            "Note",
            "jobs cancelled before they started: status 5, wait, run time and processors -1; \
             a run under 1 s is written as 1 s; jobs still pending or running when sacct ran are left out",
        );
        let list = |ids: &Ids| {
            ids.names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{} {}", i + 1, shown(n)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !accounts.names.is_empty() {
            header.set("Note", &format!("accounts (field 13): {}", list(&accounts)));
            header.set("Note", &format!("QOS (field 15): {}", list(&qos)));
            header.set("Note", &format!("partitions (field 16): {}", list(&parts)));
        }
        History {
            header,
            jobs: records,
            users: users.names,
            accounts: accounts.names,
            user_account,
            multi_account_users,
            counts,
        }
    }

    /// Writes the log (header then jobs) with `w` and finishes it.
    pub fn write_swf<W: std::io::Write>(
        &self,
        mut w: SwfWriter<W>,
    ) -> Result<W, fairsched_trace::TraceError> {
        w.write_header(&self.header)?;
        for j in &self.jobs {
            w.write_job(j)?;
        }
        w.finish()
    }

    /// Each account's processors: those `given` by name (`--procs
    /// ACCOUNT=N`), the others an even share of what is left of `total`
    /// (the cluster's CPUs), the first accounts (in SWF group order) taking
    /// one more each while a remainder lasts. An account `given` but not in
    /// the history comes after the others, with no user. `total` may be
    /// `None` when every account is given.
    pub fn org_procs(&self, given: &[(String, u32)], total: Option<u32>) -> Result<Vec<Org>, SlurmError> {
        let mut orgs: Vec<Org> = self
            .accounts
            .iter()
            .enumerate()
            .map(|(i, name)| Org {
                name: name.clone(),
                procs: None,
                users: (0..self.users.len())
                    .filter(|&u| self.user_account[u] == i + 1)
                    .map(|u| u as i64 + 1)
                    .collect(),
            })
            .collect();
        for (name, n) in given {
            match orgs.iter_mut().find(|o| &o.name == name) {
                Some(o) if o.procs.is_some() => {
                    return Err(SlurmError::Usage(format!("--procs {name}=… given twice")));
                }
                Some(o) => o.procs = Some(*n),
                None => orgs.push(Org {
                    name: name.clone(),
                    procs: Some(*n),
                    users: Vec::new(),
                }),
            }
        }
        let rest: Vec<usize> = (0..orgs.len()).filter(|&i| orgs[i].procs.is_none()).collect();
        if !rest.is_empty() {
            let total = total.ok_or_else(|| {
                SlurmError::Usage("the cluster's CPUs are needed to share them among the accounts".into())
            })?;
            let fixed: u64 = orgs.iter().filter_map(|o| o.procs).map(u64::from).sum();
            let left = u64::from(total).saturating_sub(fixed);
            let n = rest.len() as u64;
            for (k, &i) in rest.iter().enumerate() {
                let share = left / n + u64::from((k as u64) < left % n);
                orgs[i].procs = Some(share as u32);
            }
        }
        let sum: u64 = orgs.iter().filter_map(|o| o.procs).map(u64::from).sum();
        if sum == 0 {
            return Err(SlurmError::Usage(
                "the organizations would own 0 processors in all: give --procs ACCOUNT=N".into(),
            ));
        }
        if sum > u64::from(u32::MAX) {
            return Err(SlurmError::Usage(format!(
                "--procs adds up to {sum}: too many processors"
            )));
        }
        Ok(orgs)
    }

    /// The platform file (`fairsched simulate --platform`) of these
    /// organizations (from [`History::org_procs`]): one `[[org]]` per
    /// account, named after it, its users the SWF ids of the users listed
    /// under it. With `names`, each `users` line has a comment naming them
    /// (`# alice, bob`): user names are no secret on the cluster, but the
    /// SWF log is anonymous without them, so they can be left out of a file
    /// meant for elsewhere. `procs_note` says where the processors came from.
    pub fn platform_toml(&self, orgs: &[Org], names: bool, procs_note: &str) -> Result<String, SlurmError> {
        let mut s = String::from(
            "# Organizations of a Slurm cluster (`fairsched slurm history`): its accounts, and the\n\
             # users (SWF field 12) of each; a user who ran jobs under several accounts is listed\n\
             # under the account of their first job.\n",
        );
        let _ = writeln!(s, "# procs: {}", procs_note.replace('\n', " "));
        s.push_str("unlisted = \"error\"\n");
        for o in orgs {
            if o.name.is_empty() || ["error", "random"].contains(&o.name.as_str()) {
                return Err(SlurmError::Failed(format!(
                    "account {:?} cannot name an organization of a platform file (empty, or a reserved word)",
                    o.name
                )));
            }
            let ids: Vec<String> = o.users.iter().map(i64::to_string).collect();
            let _ = write!(
                s,
                "\n[[org]]\nname = {}\nprocs = {}\nusers = [{}]",
                toml_string(&o.name),
                o.procs.unwrap_or(0),
                ids.join(", ")
            );
            if names && !o.users.is_empty() {
                let who: Vec<&str> = o
                    .users
                    .iter()
                    .map(|&u| self.users.get(u as usize - 1).map_or("?", |n| shown(n)))
                    .collect();
                let _ = write!(s, "  # {}", who.join(", ").replace('\n', " "));
            }
            s.push('\n');
        }
        Ok(s)
    }
}

/// One organization of the platform file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Org {
    /// The Slurm account.
    pub name: String,
    /// Processors it owns (always set by [`History::org_procs`]).
    pub procs: Option<u32>,
    /// SWF user ids.
    pub users: Vec<i64>,
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `ACCOUNT=N` (`--procs`).
pub fn parse_procs(s: &str) -> Result<(String, u32), String> {
    let (name, n) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected ACCOUNT=N"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{s:?}: no account before ="));
    }
    let n = n
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("{s:?}: {n:?} is not a processor count"))?;
    Ok((name.to_owned(), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded on this project's CI Slurm 22.05.8 (one node, 16 CPUs):
    /// `SLURM_TIME_FORMAT=%s sacct -P -n -X -a --noconvert -S … -o FIELDS`
    /// after jobs that completed (16: 2 CPUs, 5 min), failed (17: exit 3),
    /// were cancelled while running (19), timed out (20: `-t 1`, sleep
    /// 200), an array of two (21, 23 = 21_1), alice under her other
    /// account (22), a 16-CPU job (25), jobs cancelled while pending (26,
    /// 29, 31 with a start time equal to their end, 33 with `None`), a job
    /// without `-t` (27: UNLIMITED once started, Partition_Limit before).
    const ENDED: &str = include_str!("../tests/data/sacct-ended.txt");
    /// The same cluster while job 32 ran and 33 waited.
    const DURING: &str = include_str!("../tests/data/sacct-during.txt");

    #[test]
    fn the_recorded_lines_parse() {
        let jobs = parse_sacct(ENDED).unwrap();
        assert_eq!(jobs.len(), 16);
        let j = &jobs[0];
        assert_eq!(
            (
                j.id,
                j.user.as_str(),
                j.account.as_str(),
                j.submit,
                j.start,
                j.end
            ),
            (
                16,
                "alice",
                "physics",
                1796234063,
                Some(1796234064),
                Some(1796234066)
            )
        );
        assert_eq!(
            (j.elapsed, j.alloc_cpus, j.req_cpus, j.limit_min),
            (2, 2, 2, Some(5))
        );
        assert_eq!(j.outcome(), Outcome::Completed);
        let by_id = |id| jobs.iter().find(|j| j.id == id).unwrap();
        assert_eq!(by_id(17).outcome(), Outcome::Failed);
        assert_eq!(by_id(19).outcome(), Outcome::Cancelled);
        assert_eq!(by_id(19).state, "CANCELLED by 0");
        assert_eq!(by_id(20).outcome(), Outcome::Failed, "TIMEOUT");
        assert_eq!(by_id(27).limit_min, None, "UNLIMITED");
        assert_eq!(by_id(29).limit_min, None, "Partition_Limit");
        // Cancelled while pending: no node, whatever the start says.
        for id in [26, 29, 31, 33] {
            assert_eq!(by_id(id).start, None, "job {id}");
            assert_eq!(by_id(id).outcome(), Outcome::Cancelled);
        }
        let during = parse_sacct(DURING).unwrap();
        assert_eq!(during.len(), 2);
        assert_eq!((during[0].outcome(), during[0].end), (Outcome::NotEnded, None));
        assert_eq!((during[1].outcome(), during[1].start), (Outcome::NotEnded, None));
    }

    #[test]
    fn the_records_as_swf() {
        let h = History::from_jobs(&parse_sacct(ENDED).unwrap(), "sacct -S x");
        assert_eq!(h.counts.rows, 16);
        assert_eq!(h.counts.written, 16);
        assert_eq!(h.counts.never_started, 4);
        assert_eq!(h.counts.not_ended, 0);
        assert_eq!(h.header.unix_start_time, Some(1796234063));
        assert_eq!(h.header.max_records, Some(16));
        assert_eq!(h.header.computer.as_deref(), Some("Slurm cluster ci"));
        // Submit order, ties by job id: 16, 17, 19, 20, 21, 22, 23, 25…
        let order: Vec<i64> = h.jobs.iter().map(|j| j.job_number).collect();
        assert_eq!(
            order,
            [16, 17, 19, 20, 21, 22, 23, 25, 26, 27, 28, 29, 30, 31, 32, 33]
        );
        assert_eq!(h.users, ["alice", "bob", "dave", "carol"]);
        assert_eq!(h.accounts, ["physics", "chemistry", "acct_alice"]);
        let job = |n| *h.jobs.iter().find(|j| j.job_number == n).unwrap();
        let j16 = job(16);
        assert_eq!(
            (j16.submit_time, j16.wait_time, j16.run_time, j16.allocated_procs),
            (0, 1, 2, 2)
        );
        assert_eq!((j16.requested_procs, j16.requested_time, j16.status), (2, 300, 1));
        assert_eq!(
            (j16.user_id, j16.group_id, j16.queue, j16.partition),
            (1, 1, 1, 1)
        );
        assert_eq!((job(17).status, job(19).status, job(20).status), (0, 5, 0));
        assert_eq!((job(20).run_time, job(20).requested_time), (69, 60));
        assert_eq!((job(27).requested_time, job(27).wait_time), (-1, 72));
        let j25 = job(25);
        assert_eq!(
            (j25.submit_time, j25.wait_time, j25.allocated_procs),
            (22, 48, 16)
        );
        assert_eq!((j25.user_id, j25.group_id), (3, 2));
        // Never started: kept, status 5, times and processors unknown.
        let j26 = job(26);
        assert_eq!(
            (
                j26.status,
                j26.wait_time,
                j26.run_time,
                j26.allocated_procs,
                j26.requested_procs
            ),
            (5, -1, -1, -1, 8)
        );
        // alice's job 22 is under acct_alice: group 3; she stays listed under physics.
        assert_eq!((job(22).user_id, job(22).group_id), (1, 3));
        assert_eq!(h.user_account, [1, 1, 2, 2]);
        assert_eq!(
            h.multi_account_users,
            [MultiAccount {
                user: 1,
                name: "alice".into(),
                accounts: vec!["physics".into(), "acct_alice".into()]
            }]
        );
        assert_eq!(h.counts.jobs_under_other_accounts, 1);
    }

    #[test]
    fn a_run_under_a_second_is_one_second() {
        let text =
            "71|ci|alice|physics|debug|normal|1796234763|1796234763|1796234763|0|2|2|1|COMPLETED|localhost\n";
        let h = History::from_jobs(&parse_sacct(text).unwrap(), "x");
        assert_eq!((h.jobs[0].wait_time, h.jobs[0].run_time), (0, 1));
    }

    #[test]
    fn jobs_not_ended_are_left_out_and_counted() {
        let mut text = String::from(DURING);
        text.push_str(
            "40|ci|bob|physics|debug|normal|1796234300|None|1796234301|0|0|1|5|REVOKED|None assigned\n",
        );
        text.push_str(
            "41|ci|bob|physics|debug|normal|1796234300|None|1796234301|0|0|1|5|NEW_STATE|None assigned\n",
        );
        let h = History::from_jobs(&parse_sacct(&text).unwrap(), "x");
        assert_eq!(h.counts.rows, 4);
        assert_eq!((h.counts.written, h.counts.not_ended), (0, 2));
        assert_eq!(
            h.counts
                .other_states
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect::<Vec<_>>(),
            [("NEW_STATE", 1), ("REVOKED", 1)]
        );
        assert!(h.jobs.is_empty() && h.users.is_empty());
        assert_eq!(h.header.unix_start_time, None);
    }

    #[test]
    fn bad_lines_name_the_line_and_the_field() {
        let good = ENDED.lines().next().unwrap();
        let err = |text: &str| parse_sacct(text).unwrap_err().to_string();
        assert_eq!(
            err(&format!("{good}\n16|ci|alice")),
            "sacct output line 2: expected 15 fields (JobIDRaw|Cluster|User|Account|Partition|QOS|Submit|\
             Start|End|ElapsedRaw|AllocCPUS|ReqCPUS|TimelimitRaw|State|NodeList), found 3"
        );
        let with = |index: usize, value: &str| {
            let mut f: Vec<&str> = good.split('|').collect();
            f[index] = value;
            format!("\n{}\n", f.join("|"))
        };
        assert_eq!(
            err(&with(6, "2026-12-02T17:54:23")),
            "sacct output line 2: field 7 (Submit): \"2026-12-02T17:54:23\" is not a time in Unix seconds \
             (sacct must run with SLURM_TIME_FORMAT=%s)"
        );
        assert!(
            err(&with(0, "16_1"))
                .starts_with("sacct output line 2: field 1 (JobIDRaw): \"16_1\" is not a job id")
        );
        assert!(err(&with(0, "0")).contains("is not a job id"));
        assert!(err(&with(6, "Unknown")).contains("field 7 (Submit)"));
        assert!(err(&with(8, "-5")).contains("field 9 (End): \"-5\" is out of range"));
        assert!(err(&with(9, "1e3")).contains("field 10 (ElapsedRaw)"));
        assert!(err(&with(10, "-1")).contains("field 11 (AllocCPUS): \"-1\" is out of range"));
        assert!(err(&with(11, "99999999999")).contains("field 12 (ReqCPUS)"));
        assert!(err(&with(12, "1:00:00")).contains("field 13 (TimelimitRaw)"));
        assert!(err(&with(12, "99999999999999999")).contains("is out of range"));
        assert!(err(&with(13, " ")).contains("field 14 (State)"));
        // Never a panic, whatever the bytes.
        for junk in [
            "|",
            "||||||||||||||",
            "|||||||||||||||||||",
            "\u{0}",
            "1|2|3|4|5|6|7|8|9|10|11|12|13|14|15",
        ] {
            let _ = parse_sacct(junk);
        }
        assert!(parse_sacct("\n\n").unwrap().is_empty());
    }

    #[test]
    fn states_as_swf_statuses() {
        for (state, status) in [
            ("COMPLETED", Some(1)),
            ("CANCELLED by 1000", Some(5)),
            ("CANCELLED+", Some(5)),
            ("FAILED", Some(0)),
            ("TIMEOUT", Some(0)),
            ("NODE_FAIL", Some(0)),
            ("OUT_OF_MEMORY", Some(0)),
            ("PREEMPTED", Some(0)),
            ("BOOT_FAIL", Some(0)),
            ("DEADLINE", Some(0)),
            ("RUNNING", None),
            ("PENDING", None),
            ("REQUEUED", None),
            ("REVOKED", None),
        ] {
            assert_eq!(Outcome::of_state(state).swf_status(), status, "{state}");
        }
    }

    #[test]
    fn the_log_reads_back() {
        let h = History::from_jobs(&parse_sacct(ENDED).unwrap(), "sacct -S x");
        let text = h.write_swf(SwfWriter::plain("h.swf", Vec::new())).unwrap();
        let mut r = fairsched_trace::SwfReader::from_reader("h.swf", &text[..]);
        let back: Vec<SwfJob> = r.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, h.jobs);
        assert_eq!(r.header().unix_start_time, Some(1796234063));
        assert!(r.header_warnings().is_empty());
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("; Note: accounts (field 13): 1 physics, 2 chemistry, 3 acct_alice\n"),
            "{text}"
        );
    }

    #[test]
    fn processors_shared_and_given() {
        let h = History::from_jobs(&parse_sacct(ENDED).unwrap(), "x");
        let procs = |given: &[(&str, u32)], total| {
            let given: Vec<(String, u32)> = given.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect();
            h.org_procs(&given, total).map(|o| {
                o.iter()
                    .map(|o| (o.name.clone(), o.procs.unwrap()))
                    .collect::<Vec<_>>()
            })
        };
        let named = |v: &[(&str, u32)]| v.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect::<Vec<_>>();
        assert_eq!(
            procs(&[], Some(16)).unwrap(),
            named(&[("physics", 6), ("chemistry", 5), ("acct_alice", 5)])
        );
        assert_eq!(
            procs(&[("chemistry", 10), ("bio", 2)], Some(16)).unwrap(),
            named(&[("physics", 2), ("chemistry", 10), ("acct_alice", 2), ("bio", 2)])
        );
        assert_eq!(
            procs(&[("physics", 1), ("chemistry", 1), ("acct_alice", 1)], None).unwrap(),
            named(&[("physics", 1), ("chemistry", 1), ("acct_alice", 1)])
        );
        assert!(procs(&[("physics", 1)], None).is_err());
        assert!(procs(&[("physics", 1), ("physics", 2)], Some(4)).is_err());
        assert!(procs(&[], Some(0)).is_err());
        // More given than the cluster has: the others get nothing.
        assert_eq!(procs(&[("physics", 20)], Some(16)).unwrap()[1].1, 0);
    }

    #[test]
    fn the_platform_file() {
        let h = History::from_jobs(&parse_sacct(ENDED).unwrap(), "x");
        let orgs = h.org_procs(&[], Some(16)).unwrap();
        let t = h
            .platform_toml(&orgs, true, "the cluster's 16 CPUs, shared evenly")
            .unwrap();
        assert!(t.contains("unlisted = \"error\"\n"), "{t}");
        assert!(
            t.contains("[[org]]\nname = \"physics\"\nprocs = 6\nusers = [1, 2]  # alice, bob\n"),
            "{t}"
        );
        assert!(
            t.contains("name = \"chemistry\"\nprocs = 5\nusers = [3, 4]  # dave, carol\n"),
            "{t}"
        );
        assert!(
            t.contains("name = \"acct_alice\"\nprocs = 5\nusers = []\n"),
            "{t}"
        );
        let anonymous = h.platform_toml(&orgs, false, "x").unwrap();
        assert!(
            !anonymous.contains("alice,") && !anonymous.contains("# dave"),
            "{anonymous}"
        );
        let reserved = [Org {
            name: "random".into(),
            procs: Some(1),
            users: vec![],
        }];
        assert!(h.platform_toml(&reserved, true, "x").is_err());
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    }

    #[test]
    fn sacct_is_asked_for_the_fields_in_order() {
        let a = sacct_args("2026-11-01", Some("now"));
        assert_eq!(
            a[..9],
            [
                "-P",
                "-n",
                "-X",
                "-a",
                "--noconvert",
                "-S",
                "2026-11-01",
                "-E",
                "now"
            ]
        );
        assert_eq!(a[10], FIELDS.join(","));
        assert_eq!(sacct_args("x", None).len(), 9);
    }

    #[test]
    fn sinfo_cpus() {
        assert_eq!(parse_cpus("0/16/0/16\n").unwrap(), 16);
        assert_eq!(parse_cpus("4/12/0/16\n2/30/0/32\n").unwrap(), 32);
        assert!(parse_cpus("").is_err());
        assert!(parse_cpus("16\n").is_err());
        assert!(parse_cpus("a/b/c/d\n").is_err());
    }

    #[test]
    fn procs_options() {
        assert_eq!(parse_procs("physics=8"), Ok(("physics".into(), 8)));
        assert!(parse_procs("physics").is_err());
        assert!(parse_procs("=8").is_err());
        assert!(parse_procs("physics=-1").is_err());
    }
}
