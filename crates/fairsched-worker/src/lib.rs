//! The fairsched worker agent: it lends `slots` processors to a live
//! broker (`fairsched serve`) and runs the tasks the broker hands it.
//!
//! The wire protocol is `docs/protocol.md`, section "Worker protocol"; its
//! JSON bodies are the types of [`wire`], shared with the broker.
//!
//! # How it works
//!
//! [`run`] registers (`POST /v1/workers`), then runs until SIGTERM or SIGINT:
//!
//! - a **poller** thread long-polls `/poll` (10 s, at most half the lease)
//!   all the time, full or not: it kills the runs the reply names, then
//!   starts each new (task, attempt) once, never more than `slots` at a
//!   time (extra assignments wait for a slot, and a killed run holds its
//!   slot until its processes are gone);
//! - the **reporter** sends `/report` as soon as reports are queued, with
//!   everything queued, and at least every `heartbeat_ms`; it kills the runs
//!   the reply names;
//! - each **run** goes to a runner thread (one per busy slot, kept
//!   while runs keep coming), which calls [`run_assignment`]; each
//!   script runs under a task guard ([`Guards`]: forked by one small
//!   process of the worker's, see [`guard_hook`]) that kills it if the
//!   worker dies, SIGKILL included;
//!   with `--cgroups` (`auto` by default, where the machine allows) each
//!   run is in a cgroup of its own ([`Cgroups`]), which holds its memory
//!   limit and through which every process it started is found and killed.
//!
//! With `--drain-before S` a **drain** thread wakes S before the worker's
//! end (`--ends-in`, or its Slurm job's time left): the reporter sends
//! `/drain`, no new task comes, and once every run has ended the worker
//! leaves and [`run`] returns `Ok` (a pilot job that ends cleanly).
//!
//! When the broker cannot be reached, calls are retried forever (100 ms
//! doubling to 2 s) and unsent reports are kept. A 410 means the lease is
//! lost: every run is killed and the worker registers again. So does a
//! lease taken as lapsed: no call answered for the lease less
//! max(heartbeat, 10% of the lease), checked by a **lease** thread and
//! before anything reaches the broker (after a SIGSTOP, before any report
//! of a run). The task guards read the same deadline from a file the
//! worker rewrites (`WORKDIR/.fairsched-lease-PID`), and kill their runs
//! themselves while the worker is stopped.
//!
//! A task gets an allowlist of the worker's environment ([`TASK_ENV`]; no
//! token) and a directory of its own (mode 0700); the scripts are passed
//! in files, never on a command line. Tasks run under the worker's user,
//! and can read its process: [`run`] warns of it — unless it runs as root
//! with `--run-as-user`, each task as its user's local account. On SIGTERM or
//! SIGINT the worker kills its runs, sends its last reports, leaves
//! (`/leave`) and [`run`] returns `Ok`.
//!
//! A worker started as root runs no task as root unless told
//! (`--allow-root-tasks`): without `--run-as-user`, every task runs as
//! `--task-user` (`nobody` by default). Each run has the operator's limits
//! ([`RunLimits`]: processes, open files, disk, output), umask 077 and a
//! `TMPDIR` of its own (its `/tmp` too, in a mount namespace, where the
//! worker is root and can). Below `--min-free-disk` in the work
//! directory, the worker starts no new run and removes ended runs'
//! directories, oldest first.
//!
//! # Running one assignment without a broker
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use fairsched_worker::wire::{Assignment, Phase, Report, RunKey};
//! use fairsched_worker::{ExecConfig, ExecutorKind, KillHandle, Outcome, run_assignment};
//!
//! let dir = std::env::temp_dir().join(format!("fairsched-doc-{}", std::process::id()));
//! let cfg = ExecConfig {
//!     executor: ExecutorKind::Process, workdir: dir.clone(), grace: Duration::from_secs(1),
//!     guard: None, lease_file: None, run_as_user: false, cgroups: None,
//!     task_user: None, limits: Default::default(), private_tmp: false,
//! };
//! let a = Assignment {
//!     task: 7, attempt: 1, name: "hello".into(), command: "echo hi".into(),
//!     stage_in: None, stage_out: None, time_limit_ms: None, memory_bytes: None, run_as: None,
//!     caps: Default::default(),
//! };
//! let (tx, rx) = mpsc::channel();
//! assert_eq!(run_assignment(&cfg, &a, &tx, &KillHandle::new()), Outcome::Exited(0));
//! drop(tx);
//! let reports: Vec<Report> = rx.iter().collect();
//! let key = RunKey { task: 7, attempt: 1 };
//! assert_eq!(reports.first(), Some(&Report::phase(key, Phase::Setup)));
//! assert_eq!(reports.last(), Some(&Report::exit(key, 0)));
//! assert_eq!(std::fs::read_to_string(dir.join("task-7-1/stdout")).unwrap(), "hi\n");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::path::PathBuf;
use std::time::Duration;

mod agent;
mod cgroup;
mod duration;
pub mod errors;
mod executor;
mod guard;
mod slurm;
mod zygote;
/// The worker protocol's bodies (they live in `fairsched-proto`).
pub use fairsched_proto::wire;

pub use cgroup::{CgroupMode, Cgroups, cgroups_of};
pub use duration::parse_duration;
pub use errors::{CgroupError, ParseDurationError, WireError};
pub use executor::{
    DEFAULT_PATH, ExecConfig, ExecutorKind, Guards, KillHandle, LimitHit, MEASURE_EVERY, MEMORY_LIMIT_EXIT,
    Outcome, RESOURCE_LIMIT_EXIT, RUN_TMP, ReportSink, RunLimits, TASK_ENV, TASK_UMASK, TIME_LIMIT_EXIT,
    WORKER_ERROR_EXIT, run_assignment, task_env,
};
pub use guard::{guard_hook, private_tmp_works};
pub use slurm::{job_time_left, parse_slurm_time};

/// Lend this machine's processors to a fairsched broker and run the tasks it hands out.
///
/// The worker's command-line options (`fairsched worker …`).
#[derive(Debug, Clone, clap::Args)]
pub struct Opts {
    /// The broker's base URL, e.g. https://broker:8443 [default: from ./fairsched.tokens, written by
    /// `fairsched serve --quickstart`]
    #[arg(
        long,
        env = "FAIRSCHED_BROKER",
        value_name = "URL",
        hide_env_values = true,
        default_value = "",
        hide_default_value = true
    )]
    pub broker: String,

    /// A worker token of the organization that owns this worker's slots [default: the `worker`
    /// line of ./fairsched.tokens]
    #[arg(
        long,
        env = "FAIRSCHED_TOKEN",
        value_name = "T",
        hide_env_values = true,
        default_value = "",
        hide_default_value = true
    )]
    pub token: String,

    /// Read the worker token from this file (its first line, trimmed) instead of --token or
    /// FAIRSCHED_TOKEN, which other users may see (a command line, an environment); the file
    /// wins over both
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// An https:// broker's certificate is trusted if this CA signed it (a PEM file: a private
    /// CA's certificate, or the broker's own self-signed one) [default: the usual public CAs]
    #[arg(long, env = "FAIRSCHED_CA_CERT", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,

    /// Tasks run at once, 1 to 4096 [default: the number of CPUs, at most 4096]
    #[arg(long, value_name = "N", default_value_t = default_slots(), hide_default_value = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SLOTS)))]
    pub slots: u32,

    /// Where each run gets its directory, task-ID-ATTEMPT
    #[arg(long, value_name = "DIR", default_value = "./fairsched-work")]
    pub workdir: PathBuf,

    /// How tasks are run
    #[arg(long, value_enum, default_value_t = ExecutorKind::Process)]
    pub executor: ExecutorKind,

    /// Run each task as the local account the broker maps its user to (`fairsched admin user
    /// run-as`), refusing a task whose user has none; the worker must run as root. Without it,
    /// every task runs as this worker's user and can read the others' files and this process
    #[arg(long)]
    pub run_as_user: bool,

    /// A worker started as root without --run-as-user runs every task as this local account
    /// (never root) [default: nobody]
    #[arg(long, value_name = "ACCOUNT", conflicts_with_all = ["run_as_user", "allow_root_tasks"])]
    pub task_user: Option<String>,

    /// A worker started as root without --run-as-user runs its tasks as root, which can then
    /// read its token, the other tasks' files and anything of the machine's. Only for a machine
    /// given to one trusted user. Also FAIRSCHED_ALLOW_ROOT_TASKS=true in the worker's
    /// environment (a pilot's, through sbatch)
    #[arg(long, conflicts_with = "run_as_user", env = "FAIRSCHED_ALLOW_ROOT_TASKS")]
    pub allow_root_tasks: bool,

    /// The processes (and threads) a run may have at once: its cgroup's pids.max, else each
    /// process's RLIMIT_NPROC (which counts all processes of the task's account, across runs);
    /// the run is killed once it has them. `none`: no limit
    #[arg(long, value_name = "N", default_value = "1024", value_parser = parse_count)]
    pub max_processes: Limit,

    /// Open files of each process of a run (RLIMIT_NOFILE). `none`: the worker's own limit
    #[arg(long, value_name = "N", default_value = "4096", value_parser = parse_count)]
    pub max_open_files: Limit,

    /// Bytes a run may keep in its directory (measured about every 200 ms); the run is killed
    /// past it. Bytes or K, M, G, T (powers of 1024); `none`: no limit
    #[arg(long, value_name = "SIZE", default_value = "10G", value_parser = parse_size)]
    pub max_disk: Limit,

    /// Bytes of a run's stdout and stderr together; the run is killed past it. `none`: no limit
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub max_output: Limit,

    /// Below this much free space in the work directory's filesystem the worker starts no new
    /// run (they wait) and removes the directories of ended runs, oldest first, before
    /// --keep-runs. `none`: no floor
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
    pub min_free_disk: Limit,

    /// Run directories (task-ID-ATTEMPT, with their output) are removed this long after their
    /// last change (e.g. 7d, 12h); the broker keeps the end of each run's output
    /// (`fairsched output`)
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub keep_runs: Duration,

    /// Put each run in a cgroup of its own: its memory limit for all its processes together
    /// (memory.max, or v1 memory.limit_in_bytes), every process it starts found and killed
    /// there (cgroup.kill). `auto` uses them where this worker can (root, or a systemd unit
    /// with Delegate=yes), else RLIMIT_AS per process and /proc; `required` refuses to start
    /// without them
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = CgroupMode::Auto)]
    pub cgroups: CgroupMode,

    /// Time a killed task gets between SIGTERM and SIGKILL (e.g. 500ms, 10s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,

    /// Stop taking new tasks this long before the worker is stopped (a pilot's wall time, see
    /// --ends-in), finish the running ones, leave, exit 0. Seconds, or a duration (90s, 2m)
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub drain_before: Option<Duration>,

    /// When this worker will be stopped, from now (e.g. 1h, 3600) [default: inside a Slurm job,
    /// its time left (`squeue -o %L` for $SLURM_JOB_ID)]; used with --drain-before
    #[arg(long, value_name = "DURATION", value_parser = parse_seconds, requires = "drain_before")]
    pub ends_in: Option<Duration>,

    /// The name this worker registers under [default: $HOSTNAME, the system's host name, or localhost]
    #[arg(long, value_name = "NAME", default_value_t = default_host(), hide_default_value = true)]
    pub host: String,
}

/// A limit of the worker's flags: `None` for `none` (no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(pub Option<u64>);

/// A count (`--max-processes`, `--max-open-files`), or `none`.
pub fn parse_count(s: &str) -> Result<Limit, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(Limit(None));
    }
    match t.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Limit(Some(n))),
        _ => Err(format!("`{s}`: expected a number above 0, or `none`")),
    }
}

/// Bytes, with K, M, G or T (powers of 1024), or `none`: `--max-disk`,
/// `--max-output`, `--min-free-disk`.
pub fn parse_size(s: &str) -> Result<Limit, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(Limit(None));
    }
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}`: expected bytes, a number with K, M, G or T (e.g. 512M), or `none`"))?;
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (K, M, G or T)")),
    };
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .map(|b| Limit(Some(b)))
        .ok_or_else(|| format!("`{s}`: expected more than 0 and less than 16 EiB, or `none`"))
}

impl Opts {
    /// The per-run limits these flags set.
    pub fn run_limits(&self) -> RunLimits {
        RunLimits {
            processes: self.max_processes.0,
            open_files: self.max_open_files.0,
            disk_bytes: self.max_disk.0,
            output_bytes: self.max_output.0,
        }
    }
}

/// Seconds (a whole number) or a duration with its unit (`90s`, `2m`):
/// `--drain-before` and `--ends-in`, and `fairsched pilot slurm
/// --drain-before`.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| format!("{s:?}: too many seconds"));
    }
    parse_duration(t).map_err(|e| e.to_string())
}

/// The most slots a worker may have (the broker refuses more).
pub const MAX_SLOTS: u32 = 4096;

/// The number of CPUs this process may use, from 1 to [`MAX_SLOTS`].
pub fn default_slots() -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .min(MAX_SLOTS)
}

/// `$HOSTNAME` (shells often do not export it), else the system's host name, else `localhost`.
pub fn default_host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()))
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Registers with the broker and serves it until SIGTERM or SIGINT (then
/// returns `Ok` after leaving), or until the broker refuses this worker's
/// token or registration (an error). Broker outages are waited out.
pub fn run(mut opts: Opts) -> anyhow::Result<()> {
    if opts.broker.trim().is_empty() {
        anyhow::bail!("no broker: give --broker URL or set FAIRSCHED_BROKER");
    }
    if let Some(path) = &opts.token_file {
        opts.token = read_token_file(path)?;
    }
    if opts.token.trim().is_empty() {
        anyhow::bail!(
            "no token: give --token-file PATH, --token T (from `fairsched admin worker-token`) or set FAIRSCHED_TOKEN"
        );
    }
    agent::run(opts)
}

/// The token in `path`: its first line, trimmed.
pub fn read_token_file(path: &std::path::Path) -> anyhow::Result<String> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--token-file {}: cannot read it", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        anyhow::bail!("--token-file {}: the file holds no token", path.display());
    }
    Ok(token.to_owned())
}
