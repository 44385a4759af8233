//! Running one assignment: its directory, its three scripts, its reports.
//!
//! [`run_assignment`] knows nothing of HTTP: it pushes [`Report`]s into a
//! [`ReportSink`] (a channel in tests, the agent's outbox in `run`) and
//! stops when its [`KillHandle`] is fired. It runs on the caller's thread
//! and returns when the run has ended and, if it was killed, when its
//! process group has died.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::cgroup::{self, Cgroups, RunCgroup};
use crate::guard::{self, Spec};
use crate::wire::{Assignment, LimitKind, OUTPUT_TAIL, OutputRequest, Phase, Report, RunKey};
use crate::zygote::GuardedRun;
pub use crate::zygote::Guards;

/// The exit code reported when the worker itself could not carry out a
/// phase (create the directory, open the output files, start `sh`). The
/// reason is logged and, when the directory exists, appended to `stderr`.
pub const WORKER_ERROR_EXIT: i32 = 125;

pub use fairsched_proto::wire::{MEMORY_LIMIT_EXIT, TIME_LIMIT_EXIT};

/// The variables of the worker's environment a task's scripts get, when
/// the worker has them (and every `LC_*`): nothing else of it, so no token
/// (`FAIRSCHED_TOKEN`) and no other `FAIRSCHED_*` reaches a task. The
/// executor adds `FAIRSCHED_TASK` and `FAIRSCHED_ATTEMPT`, `TMPDIR` (the
/// run's own, [`RUN_TMP`]), and `PATH` ([`DEFAULT_PATH`]) when the worker
/// has none. `SLURM_JOB_ID` (a pilot's job, an id and no credential) lets a
/// task name its scratch space.
pub const TASK_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "SLURM_JOB_ID",
];

/// The run's private temporary directory, in its directory (mode 0700,
/// the task's): its `TMPDIR`, and its `/tmp` where the worker can give it
/// a mount namespace of its own ([`ExecConfig::private_tmp`]).
pub const RUN_TMP: &str = "tmp";

/// The file mode creation mask of every task's shell: what a task writes
/// is its own (0600, 0700), in a shared `/tmp` too.
pub const TASK_UMASK: u32 = 0o077;

/// A task's `PATH` when the worker has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The environment of a run's scripts: [`TASK_ENV`] and `LC_*` from the
/// worker's own, then `FAIRSCHED_TASK` and `FAIRSCHED_ATTEMPT`.
pub fn task_env(key: RunKey) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| TASK_ENV.contains(&k) || k.starts_with("LC_"))
        })
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    env.push(("FAIRSCHED_TASK".into(), key.task.to_string().into()));
    env.push(("FAIRSCHED_ATTEMPT".into(), key.attempt.to_string().into()));
    env
}

/// How assignments are carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExecutorKind {
    /// Run the scripts with `sh` in the task's directory.
    #[default]
    Process,
    /// Report every phase and `exit_code` 0 at once, start nothing and
    /// create no directory (for throughput benchmarks of the broker).
    Noop,
}

/// What [`run_assignment`] needs besides the assignment.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    pub executor: ExecutorKind,
    /// Run each task as the local account its assignment names
    /// (`--run-as-user`; the worker is root), refusing one that names none.
    pub run_as_user: bool,
    /// Runs get `WORKDIR/task-ID-ATTEMPT/`.
    pub workdir: PathBuf,
    /// Time between SIGTERM and SIGKILL when a run is killed.
    pub grace: Duration,
    /// Start each script under a task guard ([`Guards`]), so that it
    /// dies with the worker; `None`: `sh FILE` directly, which
    /// outlives a SIGKILLed worker. [`run`](crate::run) sets it.
    pub guard: Option<Guards>,
    /// The worker's lease file, which each guard reads to kill its run
    /// when the worker's lease lapses (the worker stopped, say); `None`:
    /// guards do not watch the lease. [`run`](crate::run) sets it.
    pub lease_file: Option<PathBuf>,
    /// Each run in a cgroup of its own ([`Cgroups::setup`]): its memory
    /// limit for all its processes together, its processes found and
    /// killed there; `None`: each process's `RLIMIT_AS`, and the processes
    /// found through the guard's subtree (or the process group).
    pub cgroups: Option<Cgroups>,
    /// Every task runs as this local account (never root): a root worker
    /// without `--run-as-user` and `--allow-root-tasks` (`--task-user`,
    /// `nobody` by default). Ignored with `run_as_user`.
    pub task_user: Option<String>,
    /// The operator's limits of every run ([`RunLimits`]).
    pub limits: RunLimits,
    /// Give each run a mount namespace of its own with its [`RUN_TMP`] on
    /// `/tmp` (the worker is root and can, [`private_tmp_works`]); else
    /// only its `TMPDIR` is private.
    pub private_tmp: bool,
}

/// The operator's limits of each run (`fairsched worker --max-…`); `None`:
/// no limit. A run that reaches one is killed and fails alone, the limit
/// named in its `stderr` and its failure reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunLimits {
    /// Processes (and threads) of the run at once: its cgroup's `pids.max`
    /// where the worker has a cgroup v2 with the `pids` controller, else
    /// each process's `RLIMIT_NPROC` (which counts every process of the
    /// task's uid, across runs: see docs/security.md); the worker kills
    /// the run once it counts that many.
    pub processes: Option<u64>,
    /// Open files of each of its processes (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Bytes in the run's directory (its files' blocks), measured by the
    /// worker about every [`MEASURE_EVERY`]; also the size of each file a
    /// process of it writes (`RLIMIT_FSIZE`: a writer past it gets
    /// SIGXFSZ), so that one file cannot outgrow it between two looks.
    pub disk_bytes: Option<u64>,
    /// Bytes of its `stdout` and `stderr` together, measured likewise.
    pub output_bytes: Option<u64>,
}

impl RunLimits {
    /// These limits, each lowered to the task's own where it gives a lower
    /// one (a task never raises its worker's).
    pub fn lowered_by(&self, caps: &fairsched_proto::api::RunCaps) -> RunLimits {
        let low = |mine: Option<u64>, theirs: Option<u64>| match (mine, theirs) {
            (Some(m), Some(t)) => Some(m.min(t)),
            (m, t) => m.or(t),
        };
        RunLimits {
            processes: low(self.processes, caps.processes),
            open_files: low(self.open_files, caps.open_files),
            disk_bytes: low(self.disk_bytes, caps.disk_bytes),
            output_bytes: low(self.output_bytes, caps.output_bytes),
        }
    }
}

/// How often the worker measures a run's disk and output.
pub const MEASURE_EVERY: Duration = Duration::from_millis(200);

/// Which of [`RunLimits`] ended a run: the line of its `stderr` and the
/// log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Processes(u64),
    Disk(u64),
    Output(u64),
    /// Not killed: it failed saying "Too many open files".
    OpenFiles(u64),
}

impl LimitHit {
    /// Which limit, as the report names it.
    pub fn kind(self) -> LimitKind {
        match self {
            LimitHit::Processes(_) => LimitKind::Processes,
            LimitHit::Disk(_) => LimitKind::Disk,
            LimitHit::Output(_) => LimitKind::Output,
            LimitHit::OpenFiles(_) => LimitKind::OpenFiles,
        }
    }
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Processes(n) => write!(f, "process limit of {n} reached (--max-processes)"),
            LimitHit::Disk(b) => write!(f, "disk limit of {b} bytes in its directory reached (--max-disk)"),
            LimitHit::Output(b) => write!(
                f,
                "output limit of {b} bytes of stdout and stderr reached (--max-output)"
            ),
            LimitHit::OpenFiles(n) => {
                write!(f, "open-file limit of {n} per process reached (--max-open-files)")
            }
        }
    }
}

/// The exit code reported for a run killed at one of the worker's limits
/// ([`RunLimits`]): 128 + SIGKILL, as [`MEMORY_LIMIT_EXIT`].
pub const RESOURCE_LIMIT_EXIT: i32 = 137;

impl ExecConfig {
    /// The directory of one run.
    pub fn run_dir(&self, key: RunKey) -> PathBuf {
        self.workdir.join(format!("task-{}-{}", key.task, key.attempt))
    }
}

/// Where a run's reports go.
pub trait ReportSink {
    fn report(&self, report: Report);
}

/// Tests collect reports with a channel; a closed channel drops them.
impl ReportSink for mpsc::Sender<Report> {
    fn report(&self, report: Report) {
        let _ = self.send(report);
    }
}

/// Stops one run: cheap to clone, fired at most once, from any thread.
///
/// The run's own thread does the signalling (SIGTERM to the process group,
/// SIGKILL after the grace period), so it never signals a process it has
/// already reaped. The run's thread sleeps on it between looks at its
/// script, and the guards' zygote wakes it up when the script's guard
/// ends ([`KillHandle::wake`]).
#[derive(Debug, Clone, Default)]
pub struct KillHandle {
    inner: Arc<(Mutex<KillState>, Condvar)>,
}

#[derive(Debug, Default)]
struct KillState {
    killed: bool,
    /// Woken since the last [`KillHandle::wait`].
    woken: bool,
}

impl KillHandle {
    pub fn new() -> KillHandle {
        KillHandle::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KillState> {
        self.inner.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the run to stop. A killed run sends no further reports.
    pub fn kill(&self) {
        self.lock().killed = true;
        self.inner.1.notify_all();
    }

    pub fn is_killed(&self) -> bool {
        self.lock().killed
    }

    /// Ends the run's thread's current [`wait`](Self::wait) early: there
    /// is news of its script.
    pub(crate) fn wake(&self) {
        self.lock().woken = true;
        self.inner.1.notify_all();
    }

    /// Waits up to `timeout` for a kill (or a [`wake`](Self::wake)); true
    /// if the run is killed.
    fn wait(&self, timeout: Duration) -> bool {
        let state = self.lock();
        let (mut state, _) = self
            .inner
            .1
            .wait_timeout_while(state, timeout, |s| !s.killed && !s.woken)
            .unwrap_or_else(PoisonError::into_inner);
        state.woken = false;
        state.killed
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Reported as `"exit_code": N` (0 when every phase succeeded).
    Exited(i32),
    /// Reported as `"exit_code": null, "signal": N`.
    Signaled(i32),
    /// Killed through its [`KillHandle`]: no final report was sent.
    Killed,
}

/// Runs one assignment to its end, sending its phase reports and its final
/// report (unless killed) to `sink`.
///
/// Phases, in order: `setup` (create the directory, mode 0700), `input`
/// (`stage_in`, skipped when `None` but reported), `exec` (`command`),
/// `output` (`stage_out`, likewise). Each script is written to a file of
/// the directory (mode 0600) and run as `sh FILE`, in the environment of
/// [`task_env`]. The first non-zero exit or death by a signal ends the
/// run; so does the assignment's time limit ([`TIME_LIMIT_EXIT`]). Its
/// memory limit is its cgroup's, with [`ExecConfig::cgroups`]
/// ([`MEMORY_LIMIT_EXIT`]), else each shell's `RLIMIT_AS`.
pub fn run_assignment(
    cfg: &ExecConfig,
    assignment: &Assignment,
    sink: &dyn ReportSink,
    kill: &KillHandle,
) -> Outcome {
    let key = assignment.key();
    // Once killed, a run says nothing more: the broker has already ended it.
    let emit = |report: Report| {
        if !kill.is_killed() {
            sink.report(report);
        }
    };
    let outcome = match cfg.executor {
        ExecutorKind::Noop => {
            for phase in Phase::ALL {
                emit(Report::phase(key, phase));
            }
            (Outcome::Exited(0), None)
        }
        ExecutorKind::Process => run_process(cfg, assignment, &emit, kill),
    };
    let (outcome, hit) = outcome;
    if kill.is_killed() {
        return Outcome::Killed;
    }
    match outcome {
        Outcome::Exited(code) => emit(Report::exit(key, code).with_limit(hit.map(LimitHit::kind))),
        Outcome::Signaled(sig) => emit(Report::signal(key, sig)),
        Outcome::Killed => {}
    }
    outcome
}

/// Runs the process executor's phases: how the run ended, and the limit
/// of the worker's it was killed at, if it was.
fn run_process(
    cfg: &ExecConfig,
    a: &Assignment,
    emit: &dyn Fn(Report),
    kill: &KillHandle,
) -> (Outcome, Option<LimitHit>) {
    let hit = std::cell::Cell::new(None);
    let outcome = run_phases(cfg, a, emit, kill, &hit);
    (outcome, hit.get())
}

fn run_phases(
    cfg: &ExecConfig,
    a: &Assignment,
    emit: &dyn Fn(Report),
    kill: &KillHandle,
    hit: &std::cell::Cell<Option<LimitHit>>,
) -> Outcome {
    let key = a.key();
    let dir = cfg.run_dir(key);
    let account = if cfg.run_as_user || cfg.task_user.is_some() {
        let name = if cfg.run_as_user {
            a.run_as.as_deref()
        } else {
            cfg.task_user.as_deref()
        };
        match Account::of(name) {
            Ok(acc) => Some(acc),
            Err(why) => {
                // Fail closed: never as the worker's own user.
                tracing::error!(task = key.task, attempt = key.attempt, "{why}");
                emit(Report::phase(key, Phase::Setup));
                return Outcome::Exited(WORKER_ERROR_EXIT);
            }
        }
    } else {
        None
    };
    let account = account.as_ref();
    // The time limit counts from the start of the run, every phase included.
    let deadline = a
        .time_limit_ms
        .map(|ms| (ms, Instant::now() + Duration::from_millis(ms)));
    emit(Report::phase(key, Phase::Setup));
    let made = make_run_dir(&dir, account.is_some())
        .and_then(|()| own(&dir, account))
        .and_then(|()| make_run_tmp(&dir, account));
    if let Err(e) = made {
        tracing::error!(
            task = key.task,
            attempt = key.attempt,
            "cannot create {}: {e}",
            dir.display()
        );
        return Outcome::Exited(WORKER_ERROR_EXIT);
    }
    // The worker's limits, each lowered by the task's own.
    let run_limits = cfg.limits.lowered_by(&a.caps);
    // Made before the first script and removed (dropped) when the run ends.
    let cgroup = match &cfg.cgroups {
        None => None,
        Some(cgroups) => match cgroups.make_run(key, a.memory_bytes, run_limits.processes) {
            Ok(run) => Some(run),
            Err(e) if cgroups.required() => {
                tracing::error!(task = key.task, attempt = key.attempt, "--cgroups required: {e}");
                note_in_stderr(
                    &dir,
                    &format!("fairsched-worker: cannot make the run's cgroup: {e}"),
                );
                return Outcome::Exited(WORKER_ERROR_EXIT);
            }
            Err(e) => {
                tracing::warn!(
                    task = key.task,
                    attempt = key.attempt,
                    "{e}: this run's memory limit is RLIMIT_AS, its processes found in /proc"
                );
                None
            }
        },
    };
    let limits = Limits {
        deadline,
        rlimit_bytes: a
            .memory_bytes
            .filter(|_| cgroup.as_ref().is_none_or(|c| c.memory_limit().is_none())),
        nproc: run_limits
            .processes
            .filter(|_| cgroup.as_ref().is_none_or(|c| !c.limits_pids())),
        run: run_limits,
        private_tmp: cfg.private_tmp.then(|| dir.join(RUN_TMP)),
        hit: std::cell::Cell::new(None),
        cgroup,
    };
    let scripts = [
        (Phase::Input, a.stage_in.as_deref()),
        (Phase::Exec, Some(&*a.command)),
        (Phase::Output, a.stage_out.as_deref()),
    ];
    for (phase, script) in scripts {
        if kill.is_killed() {
            return Outcome::Killed;
        }
        emit(Report::phase(key, phase));
        let Some(script) = script else { continue };
        // The report may have ended the run (the worker found its lease lost).
        if kill.is_killed() {
            return Outcome::Killed;
        }
        let ran = run_script(cfg, &dir, key, phase, script, &limits, account, kill);
        hit.set(limits.hit.get());
        match ran {
            Ok(Outcome::Exited(0)) => {}
            Ok(end) => return end,
            Err(e) => {
                tracing::error!(task = key.task, attempt = key.attempt, ?phase, "{e:#}");
                note_in_stderr(&dir, &format!("fairsched-worker: {phase:?} phase: {e}"));
                return Outcome::Exited(WORKER_ERROR_EXIT);
            }
        }
    }
    Outcome::Exited(0)
}

/// An assignment's limits, as the executor applies them.
struct Limits {
    /// The time limit (ms) and when it runs out.
    deadline: Option<(u64, Instant)>,
    /// The memory limit, when each shell's `RLIMIT_AS` enforces it.
    rlimit_bytes: Option<u64>,
    /// The run's cgroup, if it has one.
    cgroup: Option<RunCgroup>,
    /// The process limit, when each shell's `RLIMIT_NPROC` holds it (no
    /// `pids.max`).
    nproc: Option<u64>,
    /// The operator's limits, which the worker watches.
    run: RunLimits,
    /// The run's `tmp`, mounted on `/tmp` in a namespace of its own.
    private_tmp: Option<PathBuf>,
    /// The limit the worker killed the run at, if it did.
    hit: std::cell::Cell<Option<LimitHit>>,
}

/// The local account a task runs as (`--run-as-user`).
#[derive(Debug, Clone)]
pub(crate) struct Account {
    name: String,
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
    home: PathBuf,
}

impl Account {
    /// The account `name` the broker mapped the task's user to; never root.
    fn of(name: Option<&str>) -> Result<Account, String> {
        let name = name.ok_or_else(|| {
            "this worker runs each task as its user's local account (--run-as-user), and the broker maps this task's user to none (`fairsched admin user run-as`): not run".to_string()
        })?;
        let user = nix::unistd::User::from_name(name)
            .map_err(|e| format!("local account `{name}`: {e}"))?
            .ok_or_else(|| format!("no local account `{name}` on this worker: not run"))?;
        if user.uid.is_root() || user.gid.as_raw() == 0 {
            return Err(format!(
                "local account `{name}` is root or in group root: no task runs so"
            ));
        }
        Ok(Account {
            name: user.name,
            uid: user.uid,
            gid: user.gid,
            home: user.dir,
        })
    }
}

/// Gives `path` to the task's account, if it runs as one.
fn own(path: &Path, account: Option<&Account>) -> io::Result<()> {
    match account {
        Some(a) => std::os::unix::fs::chown(path, Some(a.uid.as_raw()), Some(a.gid.as_raw())).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot give {} to {}: {e}", path.display(), a.name),
            )
        }),
        None => Ok(()),
    }
}

/// Creates the run's directory, readable by the worker's user only (0700).
/// Under `--run-as-user` a directory (or link) already there is removed
/// first (never followed): it may be another account's, from an earlier
/// database.
fn make_run_dir(dir: &Path, fresh: bool) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent)?;
    }
    if fresh {
        match fs::symlink_metadata(dir) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(dir)?,
            Ok(_) => fs::remove_file(dir)?,
            Err(_) => {}
        }
        return fs::DirBuilder::new().mode(0o700).create(dir);
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(e) => return Err(e),
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// Creates the run's private temporary directory ([`RUN_TMP`], 0700, the
/// task's).
fn make_run_tmp(dir: &Path, account: Option<&Account>) -> io::Result<()> {
    let tmp = dir.join(RUN_TMP);
    match fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            fs::remove_file(&tmp)?;
            fs::DirBuilder::new().mode(0o700).create(&tmp)?;
        }
        Err(_) => fs::DirBuilder::new().mode(0o700).create(&tmp)?,
    }
    own(&tmp, account)
}

/// The file a phase's script is written to, in the run's directory: the
/// script never appears in a command line (`ps` shows every user's).
fn script_file(phase: Phase) -> &'static str {
    match phase {
        Phase::Input => "./.fairsched-input.sh",
        Phase::Output => "./.fairsched-output.sh",
        Phase::Setup | Phase::Exec => "./.fairsched-exec.sh",
    }
}

/// Writes `text` to `path`, readable by the worker's user (or the task's
/// account) only (0600). Whatever the task left at `path` (a link to a file
/// of someone else's) is removed first, never written through.
fn write_private(path: &Path, text: &str, account: Option<&Account>) -> io::Result<()> {
    let fail = |e: io::Error| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()));
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(fail(e)),
        _ => {}
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(fail)?;
    give(&f, account).map_err(fail)?;
    f.write_all(text.as_bytes()).map_err(fail)
}

/// `sh FILE` (the script written to FILE) in `dir`, as its own process
/// group (under a guard leading the group, with `cfg.guard`), output
/// appended to `dir/stdout` and `dir/stderr`, in the task's environment
/// ([`task_env`]).
#[allow(clippy::too_many_arguments)]
fn run_script(
    cfg: &ExecConfig,
    dir: &Path,
    key: RunKey,
    phase: Phase,
    script: &str,
    limits: &Limits,
    account: Option<&Account>,
    kill: &KillHandle,
) -> io::Result<Outcome> {
    let stdout = append(&dir.join("stdout"), account)?;
    let stderr = append(&dir.join("stderr"), account)?;
    let file = script_file(phase);
    write_private(&dir.join(file), script, account)?;
    let outcome = run_script_file(cfg, dir, key, file, limits, account, kill, stdout, stderr);
    // The script is the task's command: not left beside its output (the
    // shell read it, and the broker has it).
    let _ = fs::remove_file(dir.join(file));
    let outcome = outcome?;
    if let Some(hit) = limits.hit.get() {
        tracing::info!(task = key.task, attempt = key.attempt, "{hit}: killed");
        return Ok(Outcome::Exited(RESOURCE_LIMIT_EXIT));
    }
    // A process of the run wrote a file up to the disk limit and was
    // stopped there (SIGXFSZ): the run's disk limit, said so.
    let xfsz = Signal::SIGXFSZ as i32;
    if let (Some(max), Outcome::Exited(c) | Outcome::Signaled(c)) = (limits.run.disk_bytes, outcome)
        && (c == xfsz || c == 128 + xfsz)
    {
        let hit = LimitHit::Disk(max);
        tracing::info!(task = key.task, attempt = key.attempt, "{hit}: a file of it");
        note_in_stderr(
            dir,
            &format!("fairsched-worker: {hit}: a file of it stopped there"),
        );
        limits.hit.set(Some(hit));
        return Ok(Outcome::Exited(RESOURCE_LIMIT_EXIT));
    }
    // A process of the run failed at its open-file limit, and the script
    // with it: said so (the failure is the task's own, its cause the
    // operator's limit).
    if let (Some(n), Outcome::Exited(1..) | Outcome::Signaled(_)) = (limits.run.open_files, outcome)
        && stderr_tail(dir).contains("Too many open files")
    {
        note_in_stderr(
            dir,
            &format!("fairsched-worker: each process of this run may open {n} files (--max-open-files)"),
        );
        limits.hit.set(Some(LimitHit::OpenFiles(n)));
    }
    if outcome == Outcome::Exited(TIME_LIMIT_EXIT)
        && let Some((ms, _)) = limits.deadline
    {
        tracing::info!(
            task = key.task,
            attempt = key.attempt,
            "time limit of {ms} ms reached: killed"
        );
        return Ok(outcome);
    }
    // Whatever the script made of it (a shell whose command was killed
    // may go on), the run went beyond its memory limit.
    if outcome != Outcome::Killed
        && let Some(cg) = &limits.cgroup
        && let Some(bytes) = cg.memory_limit()
        && cg.oom_killed()
    {
        tracing::info!(
            task = key.task,
            attempt = key.attempt,
            "memory limit of {bytes} bytes reached: the run's cgroup killed it"
        );
        note_in_stderr(
            dir,
            &format!("fairsched-worker: memory limit of {bytes} bytes reached: out of memory, killed"),
        );
        return Ok(Outcome::Exited(MEMORY_LIMIT_EXIT));
    }
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)]
fn run_script_file(
    cfg: &ExecConfig,
    dir: &Path,
    key: RunKey,
    file: &str,
    limits: &Limits,
    account: Option<&Account>,
    kill: &KillHandle,
    stdout: File,
    stderr: File,
) -> io::Result<Outcome> {
    let grace = cfg.grace;
    let cgroup = limits.cgroup.as_ref();
    let mut running = match &cfg.guard {
        Some(guards) => {
            let spec = Spec {
                grace,
                lease_file: cfg.lease_file.clone(),
                memory_bytes: limits.rlimit_bytes,
                run_as: account.map(|a| (a.uid.as_raw(), a.gid.as_raw())),
                cgroup: cgroup.map(|c| c.place.clone()),
                file: file.into(),
                dir: dir.to_path_buf(),
                env: run_env(key, account, dir, limits),
                open_files: limits.run.open_files,
                processes: limits.nproc,
                file_bytes: limits.run.disk_bytes,
                private_tmp: limits.private_tmp.clone(),
            };
            let run = guards
                .start(
                    &spec,
                    &[&stdout, &stderr],
                    cgroup.map_or(&[][..], |c| &c.enter),
                    kill,
                )
                .map_err(|e| io::Error::new(e.kind(), format!("cannot start the task guard: {e}")))?;
            // The guard has its own copies now.
            drop((stdout, stderr));
            Running::Guarded(run)
        }
        None => Running::Sh(spawn_sh(dir, key, file, limits, account, stdout, stderr)?),
    };
    let pgid = running.pgid()?;
    // A guard kills every process of the run, also those that left its
    // group, and SIGKILLs them at the end of the grace period: give it a
    // moment more before SIGKILLing it (it would leave them to init).
    let grace = match cfg.guard {
        Some(_) => grace + GUARD_SLACK,
        None => grace,
    };
    // No portable way to wait for "child exited or kill fired" at once: look
    // at the run, sleeping on the kill handle between looks, 1 ms at first
    // (short scripts end fast) and up to 50 ms (a guard's end wakes it).
    let mut pause = Duration::from_millis(1);
    let mut watch = Watch::new(limits, cgroup);
    loop {
        let ended = running.try_wait().inspect_err(|_| {
            // The guard's end is unknown (its zygote is gone): whatever it
            // still starts must not land in a cgroup another run gets.
            if let Some(cg) = cgroup {
                cg.not_reused();
                cg.stop(Duration::ZERO);
            }
        })?;
        if let Some(outcome) = ended {
            // Without a guard, what the script left goes with it (a guard
            // does this itself, for every process it left): all that is in
            // its cgroup, else what is in its group. With a guard, the
            // cgroup also holds what a task that killed its guard left.
            match cgroup {
                Some(cg) => {
                    cg.stop(grace);
                }
                None if group_alive(pgid) => terminate(None, pgid, grace),
                None => {}
            }
            return Ok(outcome);
        }
        let wait = match limits.deadline {
            Some((ms, at)) => {
                let now = Instant::now();
                if now >= at {
                    note_in_stderr(
                        dir,
                        &format!("fairsched-worker: time limit of {ms} ms reached: killed"),
                    );
                    stop_run(&mut running, pgid, grace, cgroup);
                    return Ok(Outcome::Exited(TIME_LIMIT_EXIT));
                }
                pause.min(at - now)
            }
            None => pause,
        };
        if kill.wait(wait) {
            stop_run(&mut running, pgid, grace, cgroup);
            return Ok(Outcome::Killed);
        }
        if let Some(hit) = watch.look(dir, &running, pgid) {
            note_in_stderr(dir, &format!("fairsched-worker: {hit}: killed"));
            stop_run(&mut running, pgid, grace, cgroup);
            limits.hit.set(Some(hit));
            return Ok(Outcome::Exited(RESOURCE_LIMIT_EXIT));
        }
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// What the worker watches of a running script against [`RunLimits`].
struct Watch<'a> {
    limits: &'a Limits,
    cgroup: Option<&'a RunCgroup>,
    /// When the disk and output were last measured.
    measured: Instant,
}

impl<'a> Watch<'a> {
    fn new(limits: &'a Limits, cgroup: Option<&'a RunCgroup>) -> Watch<'a> {
        Watch {
            limits,
            cgroup,
            measured: Instant::now(),
        }
    }

    /// The limit the run has reached, if any: its processes at each look
    /// (a cgroup's are cheap to count), its disk and output (and, without
    /// a cgroup, its processes) every [`MEASURE_EVERY`].
    fn look(&mut self, dir: &Path, running: &Running, pgid: Pid) -> Option<LimitHit> {
        let run = self.limits.run;
        if let (Some(n), Some(cg)) = (run.processes, self.cgroup)
            && (cg.pids_max_reached() || self.over_processes(n, cg.place.members().map(|m| m.len())))
        {
            return Some(LimitHit::Processes(n));
        }
        if self.measured.elapsed() < MEASURE_EVERY {
            return None;
        }
        self.measured = Instant::now();
        if let (Some(n), None) = (run.processes, self.cgroup) {
            let count = match running {
                Running::Guarded(g) => guard::descendants(g.pid).len(),
                Running::Sh(_) => group_members(pgid),
            };
            if self.over_processes(n, Some(count)) {
                return Some(LimitHit::Processes(n));
            }
        }
        // Under RLIMIT_NPROC a fork bomb may die out between two counts
        // (each failed fork ends a shell): its shells' complaint says it
        // reached the limit.
        if let Some(n) = self.limits.nproc
            && fork_refused(&stderr_tail(dir))
        {
            return Some(LimitHit::Processes(n));
        }
        if let Some(max) = run.output_bytes {
            let len = |f: &str| fs::symlink_metadata(dir.join(f)).map_or(0, |m| m.len());
            if len("stdout").saturating_add(len("stderr")) > max {
                return Some(LimitHit::Output(max));
            }
        }
        // At the limit is over it: a file stopped there by RLIMIT_FSIZE.
        if let Some(max) = run.disk_bytes
            && disk_usage(dir, max) >= max
        {
            return Some(LimitHit::Disk(max));
        }
        None
    }

    /// Whether `count` processes reach the limit `n`: all of it under
    /// `pids.max` (never more), else 7/8 of it (`RLIMIT_NPROC` counts the
    /// uid's other processes too, so the run alone may never reach `n`).
    fn over_processes(&self, n: u64, count: Option<usize>) -> bool {
        let Some(count) = count else { return false };
        let count = count as u64;
        match self.limits.nproc {
            Some(_) => count >= n - n / 8,
            None => count >= n,
        }
    }
}

/// Whether a run's `stderr` says a fork failed for lack of processes
/// (dash, bash, busybox and most programs say so in one of these ways).
fn fork_refused(stderr: &str) -> bool {
    stderr.contains("Cannot fork")
        || stderr.contains("fork: Resource temporarily unavailable")
        || stderr.contains("fork: retry")
        || stderr.contains("can't fork")
}

/// The processes of group `pgid` (zombies left out).
fn group_members(pgid: Pid) -> usize {
    let Ok(procs) = fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|e| {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                return false;
            };
            guard::proc_stat(pid).is_some_and(|stat| {
                let mut f = stat.split_whitespace();
                let state = f.next();
                f.nth(1).and_then(|g| g.parse::<i32>().ok()) == Some(pgid.as_raw()) && state != Some("Z")
            })
        })
        .count()
}

/// The bytes the files under `dir` take on disk (their blocks; a sparse
/// file counts what it holds), not following links nor leaving its
/// filesystem; the walk stops once at `stop`, or after [`MAX_WALK`]
/// entries.
pub(crate) fn disk_usage(dir: &Path, stop: u64) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(top) = fs::symlink_metadata(dir) else {
        return 0;
    };
    let dev = top.dev();
    let mut total = top.blocks().saturating_mul(512);
    let mut todo = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK || total >= stop {
                return total;
            }
            let Ok(m) = e.metadata() else { continue };
            total = total.saturating_add(m.blocks().saturating_mul(512));
            if m.is_dir() && m.dev() == dev {
                todo.push(e.path());
            }
        }
    }
    total
}

/// The most entries [`disk_usage`] looks at in one walk.
const MAX_WALK: usize = 200_000;

/// The environment of a run's shell: [`task_env`], with `HOME`, `USER` and
/// `LOGNAME` of the task's account when it runs as one, and `TMPDIR` the
/// run's own ([`RUN_TMP`]: `/tmp` when it is mounted there).
fn run_env(key: RunKey, account: Option<&Account>, dir: &Path, limits: &Limits) -> Vec<(OsString, OsString)> {
    let mut env = task_env(key);
    let tmp = match limits.private_tmp {
        Some(_) => PathBuf::from("/tmp"),
        None => dir.join(RUN_TMP),
    };
    env.push(("TMPDIR".into(), tmp.into_os_string()));
    if let Some(acc) = account {
        env.retain(|(k, _)| !matches!(k.to_str(), Some("HOME" | "USER" | "LOGNAME")));
        env.push(("HOME".into(), acc.home.clone().into_os_string()));
        env.push(("USER".into(), acc.name.clone().into()));
        env.push(("LOGNAME".into(), acc.name.clone().into()));
    }
    env
}

/// `sh FILE` started by the worker itself (no guard), leading a process
/// group of its own: in the run's cgroup, with its memory limit, as the
/// task's account.
fn spawn_sh(
    dir: &Path,
    key: RunKey,
    file: &str,
    limits: &Limits,
    account: Option<&Account>,
    stdout: File,
    stderr: File,
) -> io::Result<Child> {
    let mut c = Command::new("sh");
    c.arg(file)
        .current_dir(dir)
        .env_clear()
        .envs(run_env(key, account, dir, limits));
    // The shell enters the run's cgroup before anything else.
    if let Some(cg) = &limits.cgroup {
        let fds = cg
            .enter
            .iter()
            .map(OwnedFd::try_clone)
            .collect::<io::Result<Vec<_>>>()?;
        // SAFETY: write is async-signal-safe, and the files are open already.
        unsafe {
            c.pre_exec(move || cgroup::enter(&fds));
        }
    }
    if let Some(bytes) = limits.rlimit_bytes {
        // SAFETY: setrlimit is async-signal-safe.
        unsafe {
            c.pre_exec(move || limit_memory(bytes));
        }
    }
    let (open_files, processes, file_bytes) = (limits.run.open_files, limits.nproc, limits.run.disk_bytes);
    // SAFETY: umask and setrlimit are async-signal-safe.
    unsafe {
        c.pre_exec(move || guard::task_limits(open_files, processes, file_bytes));
    }
    if let Some(tmp) = &limits.private_tmp {
        use std::os::unix::ffi::OsStrExt;
        let tmp = std::ffi::CString::new(tmp.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: unshare and mount are async-signal-safe; the path is
        // made before the fork.
        unsafe {
            c.pre_exec(move || guard::private_tmp(&tmp));
        }
    }
    if let Some(acc) = account {
        let (uid, gid) = (acc.uid.as_raw(), acc.gid.as_raw());
        // SAFETY: setgroups, setgid and setuid are async-signal-safe.
        unsafe {
            c.pre_exec(move || guard::drop_to(uid, gid));
        }
    }
    c.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start sh: {e}")))
}

/// A script running: its shell, or the guard that runs it.
enum Running {
    Sh(Child),
    Guarded(GuardedRun),
}

impl Running {
    /// The run's process group: its leader's PID.
    fn pgid(&self) -> io::Result<Pid> {
        match self {
            Running::Sh(c) => Ok(Pid::from_raw(i32::try_from(c.id()).map_err(io::Error::other)?)),
            Running::Guarded(g) => Ok(g.pid),
        }
    }

    fn try_wait(&mut self) -> io::Result<Option<Outcome>> {
        match self {
            Running::Sh(c) => Ok(c.try_wait()?.map(outcome_of)),
            Running::Guarded(g) => g.try_end(),
        }
    }

    fn wait_end(&mut self) {
        match self {
            Running::Sh(c) => {
                let _ = c.wait();
            }
            Running::Guarded(g) => {
                let _ = g.wait(None);
            }
        }
    }

    fn signal(&self, pgid: Pid, sig: Signal) {
        match self {
            Running::Sh(_) => {
                let _ = killpg(pgid, sig);
            }
            Running::Guarded(g) => g.signal(sig),
        }
    }
}

/// Stops a running script and all it started, and waits for its leader
/// (its guard, or its shell). A guard stops every process of the run
/// itself (SIGTERM to its group, [`terminate`]); what is left in the
/// cgroup then (a task killed its guard) gets SIGKILL. Without a guard,
/// the cgroup's processes get SIGTERM and SIGKILL after `grace` (those
/// that left the group too), else the group's.
fn stop_run(running: &mut Running, pgid: Pid, grace: Duration, cgroup: Option<&RunCgroup>) {
    match cgroup {
        Some(cg) if matches!(running, Running::Sh(_)) => {
            cg.stop(grace);
            // Nothing left in the group but (at most) a shell that moved
            // itself out of the cgroup.
            terminate(Some(running), pgid, Duration::ZERO);
        }
        _ => {
            terminate(Some(running), pgid, grace);
            if let Some(cg) = cgroup {
                cg.stop(Duration::ZERO);
            }
        }
    }
}

/// The address-space limit of a script's shell (and what it starts).
pub(crate) fn limit_memory(bytes: u64) -> io::Result<()> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(Resource::RLIMIT_AS, bytes, bytes).map_err(io::Error::from)
}

/// What the worker adds to the grace period before it SIGKILLs a guard.
const GUARD_SLACK: Duration = Duration::from_secs(1);

/// SIGTERM to the group; SIGKILL once `grace` has passed with any member
/// left (the leader or processes it started). Waits for the leader, if given.
fn terminate(mut leader: Option<&mut Running>, pgid: Pid, grace: Duration) {
    let deadline = Instant::now() + grace;
    let signal = |leader: &Option<&mut Running>, sig| match leader {
        Some(l) => l.signal(pgid, sig),
        None => {
            let _ = killpg(pgid, sig);
        }
    };
    signal(&leader, Signal::SIGTERM);
    let mut ended = leader.is_none();
    loop {
        if !ended && let Some(l) = leader.as_deref_mut() {
            ended = matches!(l.try_wait(), Ok(Some(_)) | Err(_));
        }
        if ended && !group_alive(pgid) {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
    signal(&leader, Signal::SIGKILL);
    if !ended && let Some(l) = leader {
        l.wait_end();
    }
}

/// Whether any process of the group still runs. The leader's number stays
/// reserved while its group has members, so probing by it is safe. Zombies
/// do not count: orphans of the group are reaped by PID 1, late or (in some
/// containers) never, and a zombie runs nothing.
fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None) != Err(Errno::ESRCH) && group_has_members(pgid, None)
}

/// Whether a process of group `pgid` other than `except` runs (zombies do
/// not count). True when `/proc` cannot be read.
fn group_has_members(pgid: Pid, except: Option<Pid>) -> bool {
    let Ok(procs) = fs::read_dir("/proc") else {
        return true;
    };
    let (pgid, except) = (pgid.as_raw(), except.map(Pid::as_raw));
    procs.flatten().any(|entry| {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            return false;
        };
        if Some(pid) == except {
            return false;
        }
        let Some(stat) = guard::proc_stat(pid) else {
            return false;
        };
        let mut fields = stat.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(pgid) && state != Some("Z")
    })
}

fn outcome_of(status: ExitStatus) -> Outcome {
    match (status.code(), status.signal()) {
        (Some(code), _) => Outcome::Exited(code),
        (None, Some(sig)) => Outcome::Signaled(sig),
        (None, None) => Outcome::Exited(WORKER_ERROR_EXIT),
    }
}

/// `path`, a file of a run's directory, opened for appending (created
/// 0600 if missing) and given to the task's account. The task may have put
/// something there in the worker's way (the worker may be root): never
/// through a symbolic link, only a plain file with one link.
fn append(path: &Path, account: Option<&Account>) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true).mode(0o600);
    let f = open_in_run(path, &mut opts)?;
    give(&f, account).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(f)
}

/// Opens a file of a run's directory with `opts`: not through a symbolic
/// link (`O_NOFOLLOW`), and only a regular file with one link (a hard link
/// to another's file is refused).
pub(crate) fn open_in_run(path: &Path, opts: &mut OpenOptions) -> io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    let fail = |e: io::Error| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()));
    // O_NONBLOCK: a FIFO the task put there must not hang the worker in
    // open (it is refused below; on a regular file it changes nothing).
    let f = opts
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(fail)?;
    let m = f.metadata().map_err(fail)?;
    if !m.file_type().is_file() || m.nlink() != 1 {
        return Err(fail(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a plain file of this run (a link?): refused",
        )));
    }
    Ok(f)
}

/// Gives an open file to the task's account, if it runs as one.
fn give(f: &File, account: Option<&Account>) -> io::Result<()> {
    match account {
        Some(a) => std::os::unix::fs::fchown(f, Some(a.uid.as_raw()), Some(a.gid.as_raw())),
        None => Ok(()),
    }
}

/// The last few KiB of a run's `stderr` (not through a link).
fn stderr_tail(dir: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = open_in_run(&dir.join("stderr"), OpenOptions::new().read(true)) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(4096))).is_ok() {
        let _ = f.take(4096).read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Best effort: tell the task's owner why the worker gave up on it.
fn note_in_stderr(dir: &Path, line: &str) {
    if let Ok(mut f) = append(&dir.join("stderr"), None) {
        let _ = writeln!(f, "{line}");
    }
}

/// The end of a run's `stdout` and `stderr` (at most [`OUTPUT_TAIL`]
/// bytes of each), for the broker.
pub(crate) fn output_of(cfg: &ExecConfig, key: RunKey) -> OutputRequest {
    let dir = cfg.run_dir(key);
    let tail = |name: &str| -> (String, u64) {
        use std::io::{Read, Seek, SeekFrom};
        // Not through a link the task put there: only its own output.
        let Ok(mut f) = open_in_run(&dir.join(name), OpenOptions::new().read(true)) else {
            return (String::new(), 0);
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let from = len.saturating_sub(OUTPUT_TAIL as u64);
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_ok() {
            let _ = f.take(OUTPUT_TAIL as u64).read_to_end(&mut buf);
        }
        (String::from_utf8_lossy(&buf).into_owned(), len)
    };
    let (stdout, stdout_bytes) = tail("stdout");
    let (stderr, stderr_bytes) = tail("stderr");
    OutputRequest {
        task: key.task,
        attempt: key.attempt,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
    }
}

/// Removes the run directories (`task-ID-ATTEMPT`) of `workdir` unchanged
/// for longer than `keep`, except those named in `running`; how many.
pub(crate) fn remove_old_runs(
    workdir: &Path,
    keep: Duration,
    running: &std::collections::HashSet<std::ffi::OsString>,
) -> usize {
    let Ok(entries) = fs::read_dir(workdir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("task-") || running.contains(&name) {
            continue;
        }
        // The newest change of the directory or of a file in it.
        let newest = fs::read_dir(e.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|f| f.metadata().ok()?.modified().ok())
            .chain(e.metadata().ok().and_then(|m| m.modified().ok()))
            .max();
        let old = newest.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age > keep));
        if old && fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The run directories (`task-ID-ATTEMPT`) of `workdir` not named in
/// `running` and unchanged for a second at least (an ended run's output is
/// read once it ended), the least recently changed first.
pub(crate) fn ended_runs_oldest_first(
    workdir: &Path,
    running: &std::collections::HashSet<std::ffi::OsString>,
) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(workdir) else {
        return Vec::new();
    };
    let now = std::time::SystemTime::now();
    let mut runs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("task-") && !running.contains(&e.file_name()))
        .filter_map(|e| {
            let newest = fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|f| f.metadata().ok()?.modified().ok())
                .chain(e.metadata().ok().and_then(|m| m.modified().ok()))
                .max()?;
            let settled = now
                .duration_since(newest)
                .is_ok_and(|age| age >= Duration::from_secs(1));
            settled.then(|| (newest, e.path()))
        })
        .collect();
    runs.sort();
    runs.into_iter().map(|(_, p)| p).collect()
}
