//! The agent: one poller thread, the reporter loop (on the caller's thread),
//! one thread per run, one thread waiting for SIGTERM/SIGINT.
//!
//! They share a single [`State`] behind a mutex, with one condition
//! variable that is notified on every change. The reporter owns the
//! session: it registers, re-registers after a lost lease, and is the only
//! one to leave.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use fairsched_client::worker::{CallError, WorkerClient as Client};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::Opts;
use crate::executor::{
    ExecConfig, ExecutorKind, KillHandle, Outcome, ReportSink, WORKER_ERROR_EXIT, run_assignment,
};
use crate::wire::{
    Assignment, OutputRequest, OutputsRequest, RegisterRequest, Report, ReportEvent, ReportRequest, RunKey,
    WorkerId,
};

/// Longest long poll, whatever the lease.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// At most this many reports per request, to stay far below the broker's
/// 4 MiB body limit (a report is under 80 bytes).
const MAX_BATCH: usize = 20_000;
/// Retry delays after a failed call: 100 ms, doubling, at most 2 s.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long the end of a run killed by a signal (or exiting 128 + a
/// signal's number) waits before it is sent. Slurm's scancel and time
/// limit signal every process of the job at once, the worker's runs with
/// the worker: a run's end that the worker's own stop follows within this
/// delay is not sent, so its task is requeued by the leave, not failed.
const SIGNALLED_END_HOLD: Duration = Duration::from_millis(500);

/// A registration that the broker has not yet declared lost.
#[derive(Debug, Clone)]
struct Session {
    worker: WorkerId,
    /// The session credential the registration returned: the worker's
    /// calls carry it (the organization's token only registers).
    credential: Arc<str>,
    /// `State::generation` when it was made: replies for an older session are ignored.
    generation: u64,
    heartbeat: Duration,
    poll_wait: Duration,
    /// The broker's lease: it drops a worker silent this long.
    lease: Duration,
    /// The lease is taken as lapsed this long before it ends:
    /// max(heartbeat, 10% of the lease).
    margin: Duration,
}

impl Session {
    /// How long after the last call the broker acknowledged (counted from
    /// when it was sent) the worker takes its lease as lapsed.
    fn budget(&self) -> Duration {
        self.lease.saturating_sub(self.margin)
    }
}

#[derive(Debug)]
enum Stop {
    Signal(i32),
    /// Drained: every run ended after the broker took the drain.
    Drained,
    Fatal(String),
}

/// Where a drain (`--drain-before`) is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Drain {
    #[default]
    No,
    /// Its time has come: to be sent.
    Due,
    /// The broker took it: no new task comes.
    Sent,
}

#[derive(Default)]
struct State {
    /// Bumped each time a session ends; runs and reports belong to one generation.
    generation: u64,
    session: Option<Session>,
    /// Runs accepted and not ended, started or waiting for a slot: the
    /// `running` list of the next report. Removing a run silences it.
    runs: BTreeMap<RunKey, KillHandle>,
    /// Accepted runs waiting for a slot (never more than `slots` run at once).
    pending: VecDeque<Assignment>,
    /// Run threads alive, killed ones included until their processes are gone.
    active: usize,
    /// Every run ever accepted by this process: each runs at most once.
    seen: HashSet<RunKey>,
    /// Reports not yet acknowledged by the broker, oldest first.
    outbox: Vec<Report>,
    /// Ends of signalled runs, sendable from their instant
    /// ([`SIGNALLED_END_HOLD`]), oldest first.
    held: VecDeque<(Instant, Report)>,
    drain: Drain,
    stop: Option<Stop>,
    /// The `seq` of the last poll reply of this session applied: sent
    /// with each report ([`ReportRequest::polled`]).
    polled: Option<u64>,
    /// When the last call the broker answered (2xx) was sent, this session.
    contact: Option<Instant>,
    /// Outputs of ended runs, sent once their ends are acknowledged.
    uploads: VecDeque<OutputRequest>,
    /// Runs given a slot, for the runner threads.
    ready: VecDeque<Job>,
    /// Runner threads waiting for a run.
    idle_runners: usize,
    /// The free space of the work directory's filesystem (bytes) when it
    /// was last found below `--min-free-disk`: no run starts until the
    /// cleaner finds enough again.
    disk_low: Option<u64>,
}

impl State {
    /// Moves the held reports whose time has come to the outbox; when the
    /// next one is due.
    fn release_held(&mut self, now: Instant) -> Option<Instant> {
        while let Some(&(due, _)) = self.held.front() {
            if due > now {
                return Some(due);
            }
            if let Some((_, r)) = self.held.pop_front() {
                self.outbox.push(r);
            }
        }
        None
    }

    /// Drained: the broker took the drain and nothing is left to run or send.
    fn drained(&self) -> bool {
        self.drain == Drain::Sent && self.runs.is_empty() && self.outbox.is_empty() && self.held.is_empty()
    }

    /// When the lease is taken as lapsed: the last contact plus the
    /// session's budget (`None` without a session).
    fn lapse_at(&self) -> Option<Instant> {
        Some(self.contact? + self.session.as_ref()?.budget())
    }
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Notified only at a stop and at a session's start (its first
    /// answered call) or end, besides `changed`: the threads that wait for
    /// those alone (the lease watchdog, the cleaner, the drain timer) are
    /// not woken by each of the five reports of every run.
    rare: Condvar,
    /// Notified when a run is ready for a runner thread.
    work: Condvar,
    exec: ExecConfig,
    slots: usize,
    /// Where this worker tells its task guards when its lease lapses.
    lease_file: Option<LeaseFile>,
    /// `--min-free-disk`: below it in the work directory, no run starts.
    min_free: Option<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sleeps `delay` unless the agent is stopping.
    fn pause(&self, delay: Duration) {
        let st = self.lock();
        let _ = self.changed.wait_timeout_while(st, delay, |st| st.stop.is_none());
    }

    fn stop(&self, why: Stop) {
        let mut st = self.lock();
        if st.stop.is_none() {
            st.stop = Some(why);
        }
        self.changed.notify_all();
        self.rare.notify_all();
    }
}

/// Kills every run and forgets the session (its reports with it): the
/// broker has requeued its runs.
fn end_session(shared: &Shared, st: &mut State) {
    st.generation += 1;
    st.session = None;
    st.polled = None;
    st.contact = None;
    st.uploads.clear();
    for kill in st.runs.values() {
        kill.kill();
    }
    st.runs.clear();
    st.pending.clear();
    st.outbox.clear();
    st.held.clear();
    shared.changed.notify_all();
    shared.rare.notify_all();
}

/// Records a call of session `generation` sent at `sent` and answered by
/// the broker (which renewed the lease then), and tells the task guards.
fn note_contact(shared: &Shared, st: &mut State, generation: u64, sent: Instant) {
    if st.generation != generation || st.session.is_none() || st.contact.is_some_and(|c| c >= sent) {
        return;
    }
    if st.contact.replace(sent).is_none() {
        // The lease now lapses at a time the watchdog must know.
        shared.rare.notify_all();
    }
    if let (Some(file), Some(session)) = (&shared.lease_file, st.session.as_ref()) {
        // The guards SIGTERM at the lapse, and SIGKILL before the lease
        // ends: at most the grace period later, at most margin/2 later.
        let since = sent.elapsed();
        let term = session.budget().saturating_sub(since);
        let kill = (session.budget() + shared.exec.grace.min(session.margin / 2)).saturating_sub(since);
        file.publish(term, kill);
    }
}

/// Ends the session if the lease lapsed: no call answered for its budget
/// (the broker may have given the runs to another worker). Checked before
/// anything a run does reaches the broker, and by the watchdog; after a
/// SIGSTOP, whichever thread runs first finds it. True if it ended.
fn lapsed(shared: &Shared, st: &mut State) -> bool {
    let Some(at) = st.lapse_at() else { return false };
    if Instant::now() < at {
        return false;
    }
    if let (Some(session), Some(contact)) = (st.session.as_ref(), st.contact) {
        tracing::warn!(
            worker = session.worker,
            "no call answered for {:?} (lease {:?}): killing every run, registering again",
            contact.elapsed(),
            session.lease
        );
    }
    end_session(shared, st);
    true
}

/// A call the broker refused for load but took as a sign of life
/// ([`CallError::Busy`]: it renewed the lease): counted as an answered
/// call, so a worker the broker sheds keeps its runs until its lease lapses
/// as the broker counts it.
fn heard_though_refused(shared: &Shared, e: &CallError, generation: u64, sent: Instant) {
    if matches!(e, CallError::Busy(_)) {
        let mut st = shared.lock();
        if !lapsed(shared, &mut st) {
            note_contact(shared, &mut st, generation, sent);
        }
    }
}

/// Takes an assignment from a poll reply of the current session.
fn accept(shared: &Arc<Shared>, st: &mut State, a: Assignment) {
    let key = a.key();
    if !st.seen.insert(key) {
        tracing::debug!(
            task = key.task,
            attempt = key.attempt,
            "assignment already received: ignored"
        );
        return;
    }
    st.runs.insert(key, KillHandle::new());
    st.pending.push_back(a);
    start_pending(shared, st);
}

/// Starts waiting runs while slots are free: each goes to a runner
/// thread, an idle one or a new one (at most one per slot).
fn start_pending(shared: &Arc<Shared>, st: &mut State) {
    while st.active < shared.slots {
        if st.pending.is_empty() {
            return;
        }
        // A run would find no room to write its files: it waits until the
        // cleaner made some (or the space came back).
        if st.disk_low.is_some() {
            return;
        }
        if let Some(floor) = shared.min_free
            && let Some(free) = free_bytes(&shared.exec.workdir)
            && free < floor
        {
            tracing::warn!(
                "{free} bytes free in {}, below --min-free-disk {floor}: starting no run until there is more",
                shared.exec.workdir.display()
            );
            st.disk_low = Some(free);
            shared.rare.notify_all();
            shared.changed.notify_all();
            return;
        }
        let Some(a) = st.pending.pop_front() else { return };
        let key = a.key();
        let Some(kill) = st.runs.get(&key).cloned() else {
            continue;
        };
        st.active += 1;
        st.ready.push_back(Job {
            a,
            kill,
            generation: st.generation,
        });
        // Every run waiting needs a runner of its own: an idle one woken
        // (it counts as idle until it has taken the lock again), else a
        // new one.
        if st.ready.len() <= st.idle_runners {
            shared.work.notify_one();
            continue;
        }
        let sh = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("runner".into())
            .spawn(move || runner(&sh));
        if let Err(e) = spawned {
            tracing::error!(
                task = key.task,
                attempt = key.attempt,
                "cannot start a thread: {e}"
            );
            st.ready.pop_back();
            st.active -= 1;
            st.runs.remove(&key);
            st.outbox.push(Report::exit(key, WORKER_ERROR_EXIT));
            shared.changed.notify_all();
        }
    }
}

/// A run handed to a runner thread.
struct Job {
    a: Assignment,
    kill: KillHandle,
    /// The session it came with.
    generation: u64,
}

/// How long a runner thread waits for a run before it ends.
const RUNNER_IDLE: Duration = Duration::from_secs(10);

/// A runner thread: runs the jobs of `State::ready` one after the other
/// (a thread started for each run cost more than a short run), and ends
/// once idle for [`RUNNER_IDLE`].
fn runner(shared: &Arc<Shared>) {
    loop {
        let job = {
            let mut st = shared.lock();
            loop {
                if let Some(job) = st.ready.pop_front() {
                    break job;
                }
                st.idle_runners += 1;
                let (next, timeout) = shared
                    .work
                    .wait_timeout(st, RUNNER_IDLE)
                    .unwrap_or_else(PoisonError::into_inner);
                st = next;
                st.idle_runners -= 1;
                if timeout.timed_out() && st.ready.is_empty() {
                    return;
                }
            }
        };
        run_job(shared, job);
    }
}

/// Runs one job to its end, then sends its output's end (with the
/// process executor) and frees its slot.
fn run_job(shared: &Arc<Shared>, job: Job) {
    let Job { a, kill, generation } = job;
    let key = a.key();
    let _slot = SlotGuard(Arc::clone(shared));
    let sink = RunSink {
        shared: Arc::clone(shared),
        generation,
        key,
    };
    let outcome = run_assignment(&shared.exec, &a, &sink, &kill);
    if matches!(outcome, Outcome::Exited(_) | Outcome::Signaled(_))
        && shared.exec.executor == ExecutorKind::Process
    {
        let out = crate::executor::output_of(&shared.exec, key);
        let mut st = shared.lock();
        if st.generation == generation {
            st.uploads.push_back(out);
            shared.changed.notify_all();
        }
    }
}

/// Frees the run's slot when its thread ends, however it ends.
struct SlotGuard(Arc<Shared>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.active -= 1;
        start_pending(&self.0, &mut st);
        self.0.changed.notify_all();
    }
}

/// A run's reports go to the outbox while the run is still the agent's.
struct RunSink {
    shared: Arc<Shared>,
    generation: u64,
    key: RunKey,
}

impl ReportSink for RunSink {
    fn report(&self, report: Report) {
        let mut st = self.shared.lock();
        lapsed(&self.shared, &mut st);
        if st.generation != self.generation || !st.runs.contains_key(&self.key) {
            return; // killed, or its session is gone
        }
        if report.is_end() {
            // Removed under the same lock that queues the report, so no
            // `running` list can contradict the reports it is sent with.
            st.runs.remove(&self.key);
        }
        let signalled = match report.event {
            ReportEvent::Signal(_) => true,
            ReportEvent::Exit(code) => code > 128 && code < 128 + 65,
            ReportEvent::Phase(_) => false,
        };
        if signalled {
            st.held.push_back((Instant::now() + SIGNALLED_END_HOLD, report));
        } else {
            st.outbox.push(report);
        }
        self.shared.changed.notify_all();
    }
}

struct Backoff(Duration);

impl Backoff {
    fn new() -> Backoff {
        Backoff(BACKOFF_FIRST)
    }

    fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (d * 2).min(BACKOFF_MAX);
        d
    }

    fn reset(&mut self) {
        self.0 = BACKOFF_FIRST;
    }
}

pub(crate) fn run(opts: Opts) -> anyhow::Result<()> {
    let slots = opts.slots;
    if !(1..=crate::MAX_SLOTS).contains(&slots) {
        bail!("--slots must be 1 to {}", crate::MAX_SLOTS);
    }
    let client = Arc::new(Client::new(&fairsched_client::Conn {
        broker: Some(opts.broker.clone()),
        token: Some(opts.token.clone()),
        ca_cert: opts.ca_cert.clone(),
    })?);
    let root = nix::unistd::geteuid().is_root();
    if opts.run_as_user && !root {
        bail!("--run-as-user: only root can run tasks as other users");
    }
    let task_user = task_user(&opts, root)?;
    let workdir = prepare_workdir(&opts.workdir)?;
    if opts.run_as_user || task_user.is_some() {
        root_only(&workdir)?;
        // Each task's account reaches its own directory (0700, its own),
        // lists nothing here.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&workdir, std::fs::Permissions::from_mode(0o711))
            .with_context(|| format!("cannot set the mode of {}", workdir.display()))?;
    }
    let guard = crate::guard::program().map(crate::Guards::new);
    if guard.is_none() && opts.executor == ExecutorKind::Process {
        tracing::warn!(
            "this program did not call fairsched_worker::guard_hook: tasks will outlive this worker if it is SIGKILLed"
        );
    }
    if let Some(name) = &task_user {
        tracing::warn!(
            "this worker runs as root: every task runs as `{name}` (--task-user; --run-as-user runs each as its user's account)"
        );
    } else if root && !opts.run_as_user {
        tracing::warn!(
            "--allow-root-tasks: tasks run as root, and can read and change anything of this machine's"
        );
    }
    if opts.executor == ExecutorKind::Process && !opts.run_as_user && task_user.is_none() {
        tracing::warn!(
            uid = nix::unistd::getuid().as_raw(),
            "tasks run under this worker's user: they can read this process (/proc/{}/environ, its memory), \
             and so its token, and each other's files; run the worker under an account of its own, \
             or as root with --run-as-user",
            std::process::id()
        );
    }
    let cgroups = match opts.executor {
        ExecutorKind::Process => crate::Cgroups::setup(opts.cgroups)?,
        ExecutorKind::Noop => None,
    };
    let lease_file = match (&guard, opts.executor) {
        (Some(_), ExecutorKind::Process) => Some(LeaseFile::create(&workdir)?),
        _ => None,
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        rare: Condvar::new(),
        work: Condvar::new(),
        exec: ExecConfig {
            executor: opts.executor,
            grace: opts.grace,
            guard,
            lease_file: lease_file.as_ref().map(|f| f.path.clone()),
            run_as_user: opts.run_as_user,
            // Not for tasks that run as root (--allow-root-tasks): they
            // could leave the namespace, and may want the machine's /tmp.
            private_tmp: opts.executor == ExecutorKind::Process
                && root
                && (opts.run_as_user || task_user.is_some())
                && crate::guard::private_tmp_works(&workdir),
            workdir,
            cgroups,
            task_user,
            limits: opts.run_limits(),
        },
        slots: usize::try_from(slots).context("--slots")?,
        lease_file,
        min_free: opts
            .min_free_disk
            .0
            .filter(|_| opts.executor == ExecutorKind::Process),
    });
    if shared.exec.private_tmp {
        tracing::info!("each run has a /tmp of its own (its directory's tmp, in a mount namespace)");
    }
    let drain_at = drain_deadline(&opts)?;

    let mut signals =
        Signals::new([SIGTERM, SIGINT]).context("cannot install the SIGTERM/SIGINT handlers")?;
    let signal_handle = signals.handle();
    {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    shared.stop(Stop::Signal(sig));
                }
            })
            .context("cannot start the signal thread")?;
    }
    {
        let (shared, client) = (Arc::clone(&shared), Arc::clone(&client));
        // Not joined: it may sit in a long poll when the agent stops, and
        // it ends by itself once it sees the stop.
        std::thread::Builder::new()
            .name("poller".into())
            .spawn(move || poller(&shared, &client))
            .context("cannot start the poller thread")?;
    }

    {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("lease".into())
            .spawn(move || watchdog(&shared))
            .context("cannot start the lease thread")?;
    }

    if let Some(at) = drain_at {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("drain".into())
            .spawn(move || {
                let st = shared.lock();
                let (mut st, _) = shared
                    .rare
                    .wait_timeout_while(st, at.saturating_duration_since(Instant::now()), |st| {
                        st.stop.is_none() && Instant::now() < at
                    })
                    .unwrap_or_else(PoisonError::into_inner);
                if st.stop.is_none() {
                    tracing::info!("drain time: taking no new task, leaving once the runs end");
                    st.drain = Drain::Due;
                    shared.changed.notify_all();
                }
            })
            .context("cannot start the drain thread")?;
    }

    {
        // Run directories older than --keep-runs go (their output's end
        // is at the broker).
        let (shared, keep) = (Arc::clone(&shared), opts.keep_runs);
        std::thread::Builder::new()
            .name("cleaner".into())
            .spawn(move || {
                let every = (keep / 10).clamp(Duration::from_millis(200), Duration::from_secs(3600));
                loop {
                    let running: HashSet<std::ffi::OsString> = shared
                        .lock()
                        .runs
                        .keys()
                        .filter_map(|&k| shared.exec.run_dir(k).file_name().map(ToOwned::to_owned))
                        .collect();
                    let removed = crate::executor::remove_old_runs(&shared.exec.workdir, keep, &running);
                    if removed > 0 {
                        tracing::info!("removed {removed} run directories older than {keep:?}");
                    }
                    let low = make_room(&shared, &running);
                    let st = shared.lock();
                    // Short of space, looked at again soon.
                    let wait = if low { every.min(LOW_DISK_LOOK) } else { every };
                    let (st, _) = shared
                        .rare
                        .wait_timeout_while(st, wait, |st| {
                            st.stop.is_none() && (low || st.disk_low.is_none())
                        })
                        .unwrap_or_else(PoisonError::into_inner);
                    if st.stop.is_some() {
                        return;
                    }
                }
            })
            .context("cannot start the cleaner thread")?;
    }

    let register = RegisterRequest {
        slots,
        host: opts.host.clone(),
    };
    let ended = reporter(&shared, &client, &register);
    let result = shut_down(&shared, &client, ended);
    signal_handle.close();
    if let Some(cg) = &shared.exec.cgroups {
        cg.remove();
    }
    result
}

/// How often the cleaner looks at the work directory's free space while
/// it is below `--min-free-disk`.
const LOW_DISK_LOOK: Duration = Duration::from_millis(500);

/// The bytes an unprivileged user may still write on `dir`'s filesystem.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let s = nix::sys::statvfs::statvfs(dir).ok()?;
    Some((s.blocks_available() as u64).saturating_mul(s.fragment_size() as u64))
}

/// Below `--min-free-disk`: removes the directories of ended runs (not
/// those of `running`), oldest first, until there is enough; lets runs
/// start again once there is. Whether space is still short.
fn make_room(shared: &Arc<Shared>, running: &HashSet<std::ffi::OsString>) -> bool {
    let Some(floor) = shared.min_free else {
        return false;
    };
    let workdir = &shared.exec.workdir;
    let mut free = free_bytes(workdir).unwrap_or(u64::MAX);
    if free < floor {
        let mut removed = 0;
        for dir in crate::executor::ended_runs_oldest_first(workdir, running) {
            if free >= floor {
                break;
            }
            if std::fs::remove_dir_all(&dir).is_ok() {
                removed += 1;
            }
            free = free_bytes(workdir).unwrap_or(u64::MAX);
        }
        if removed > 0 {
            tracing::warn!(
                "{} short of space (below --min-free-disk {floor}): removed {removed} directories of ended runs before --keep-runs",
                workdir.display()
            );
        }
    }
    let mut st = shared.lock();
    if free >= floor {
        if st.disk_low.take().is_some() {
            tracing::info!("{free} bytes free in {}: starting runs again", workdir.display());
            start_pending(shared, &mut st);
            shared.changed.notify_all();
        }
        false
    } else {
        if st.disk_low.is_none() {
            tracing::warn!(
                "{free} bytes free in {}, below --min-free-disk {floor}: starting no run until there is more",
                workdir.display()
            );
            // The reporter tells the broker.
            shared.changed.notify_all();
        }
        st.disk_low = Some(free);
        true
    }
}

/// The account every task runs as: none for a worker that is not root,
/// or runs each task as its user's (`--run-as-user`), or was told to run
/// them as root (`--allow-root-tasks`); else `--task-user`, or `nobody`,
/// which must exist and not be root.
fn task_user(opts: &Opts, root: bool) -> anyhow::Result<Option<String>> {
    if !root {
        if opts.task_user.is_some() {
            bail!("--task-user: only a worker started as root can run tasks as another account");
        }
        return Ok(None);
    }
    if opts.run_as_user || opts.allow_root_tasks || opts.executor == ExecutorKind::Noop {
        return Ok(None);
    }
    let name = opts.task_user.clone().unwrap_or_else(|| "nobody".into());
    let ways_out = "give --task-user ACCOUNT (an unprivileged local account), --run-as-user (each task as its user's account, `fairsched admin user run-as`), --allow-root-tasks (tasks as root: a machine of one trusted user only), or start the worker as an unprivileged user";
    match nix::unistd::User::from_name(&name) {
        Ok(Some(u)) if !u.uid.is_root() && u.gid.as_raw() != 0 => Ok(Some(name)),
        Ok(Some(_)) => bail!(
            "this worker runs as root, and runs no task as root unless told: the account `{name}` is root or in group root; {ways_out}"
        ),
        Ok(None) | Err(_) => bail!(
            "this worker runs as root, and runs no task as root unless told: it would run them as `{name}`, and there is no such account here; {ways_out}"
        ),
    }
}

/// Ends the session once the lease lapses without a call answered.
fn watchdog(shared: &Shared) {
    let mut st = shared.lock();
    loop {
        if st.stop.is_some() {
            return;
        }
        // The lapse only moves later meanwhile: woken at the one known,
        // the watchdog looks again.
        st = match st.lapse_at() {
            Some(at) if !lapsed(shared, &mut st) => {
                let timeout = at.saturating_duration_since(Instant::now());
                shared
                    .rare
                    .wait_timeout(st, timeout)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            Some(_) => st,
            None => shared.rare.wait(st).unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// When this worker's lease lapses, for its task guards (which go on while
/// the worker is stopped, SIGSTOP, and kill their runs then). One line,
/// `TERM_NS KILL_NS`: CLOCK_MONOTONIC times at which a guard SIGTERMs,
/// then SIGKILLs, every process of its run; rewritten in place at each
/// answered call. It is `WORKDIR/.fairsched-lease-PID`, mode 0644 (a guard
/// runs as the task's account under --run-as-user), removed when the worker
/// stops (a SIGKILLed worker leaves it: the next one of the same pid
/// rewrites it).
struct LeaseFile {
    path: PathBuf,
    file: std::fs::File,
}

impl Drop for LeaseFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl LeaseFile {
    fn create(workdir: &std::path::Path) -> anyhow::Result<LeaseFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = workdir.join(format!(".fairsched-lease-{}", std::process::id()));
        // A new file, never one (or a link) left there.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", path.display()));
            }
            _ => {}
        }
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        // Readable by all (lease times are no secret): a guard running as a
        // task's account (--run-as-user) opens it.
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .with_context(|| format!("cannot set the mode of {}", path.display()))?;
        let f = LeaseFile { path, file };
        f.write(0, 0);
        Ok(f)
    }

    /// The lease lapses in `term`; everything must be dead in `kill`.
    fn publish(&self, term: Duration, kill: Duration) {
        let now = crate::guard::monotonic_ns();
        let ns = |d: Duration| now.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        self.write(ns(term), ns(kill));
    }

    fn write(&self, term_ns: u64, kill_ns: u64) {
        use std::os::unix::fs::FileExt;
        // Fixed width, one write: a guard never reads half of it.
        let line = format!("{term_ns:020} {kill_ns:020}\n");
        if let Err(e) = self.file.write_all_at(line.as_bytes(), 0) {
            tracing::warn!("cannot write {}: {e}", self.path.display());
        }
    }
}

/// When to drain (`--drain-before`): the worker's end (`--ends-in`, or
/// its Slurm job's time left) less the margin.
fn drain_deadline(opts: &Opts) -> anyhow::Result<Option<Instant>> {
    let Some(before) = opts.drain_before else {
        return Ok(None);
    };
    let left = match opts.ends_in {
        Some(d) => d,
        None => match crate::slurm::job_time_left()? {
            Some(d) => d,
            None if std::env::var_os("SLURM_JOB_ID").is_some() => {
                tracing::warn!("--drain-before: this Slurm job has no time limit; the worker will not drain");
                return Ok(None);
            }
            None => bail!(
                "--drain-before needs to know when this worker stops: give --ends-in, or run it inside a Slurm job"
            ),
        },
    };
    if left <= before {
        tracing::warn!("--drain-before {before:?} is more than the {left:?} left: draining at once");
    } else {
        tracing::info!("draining in {:?} ({before:?} before the end)", left - before);
    }
    Ok(Some(Instant::now() + left.saturating_sub(before)))
}

/// Under `--run-as-user` the worker is root and creates, opens and gives
/// away files in the work directory: it and every folder above it must be
/// root's, and writable by nobody else (unless sticky, as /tmp), or a task
/// account could have put links there for root to follow.
fn root_only(workdir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    for dir in workdir.ancestors() {
        let m = std::fs::symlink_metadata(dir).with_context(|| format!("{}", dir.display()))?;
        let shared = m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0;
        if m.uid() != 0 || shared || (dir == workdir && m.mode() & 0o022 != 0) {
            bail!(
                "--run-as-user: {} must be root's and writable by root only (it is uid {}, mode {:o}): a task account could have left links there",
                dir.display(),
                m.uid(),
                m.mode() & 0o7777
            );
        }
    }
    Ok(())
}

fn prepare_workdir(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the work directory {}", dir.display()))?;
    dir.canonicalize()
        .with_context(|| format!("cannot resolve the work directory {}", dir.display()))
}

/// Long-polls for assignments and kills while there is a session, whether
/// slots are free or not: a full worker gets no assignment beyond its
/// slots, but it must hear of kills at once.
fn poller(shared: &Arc<Shared>, client: &Client) {
    let mut backoff = Backoff::new();
    loop {
        let session = {
            let st = shared.lock();
            let st = shared
                .changed
                .wait_while(st, |st| st.stop.is_none() && st.session.is_none())
                .unwrap_or_else(PoisonError::into_inner);
            match (&st.stop, st.session.clone()) {
                (None, Some(session)) => session,
                _ => return,
            }
        };
        let wait_ms = u64::try_from(session.poll_wait.as_millis()).unwrap_or(u64::MAX);
        let draining = shared.lock().drain == Drain::Sent;
        let sent = Instant::now();
        match client.poll(session.worker, &session.credential, wait_ms, draining) {
            Ok(reply) => {
                backoff.reset();
                let mut st = shared.lock();
                // A reply read long after it was sent (the worker was
                // stopped) may come after the lease lapsed.
                lapsed(shared, &mut st);
                note_contact(shared, &mut st, session.generation, sent);
                if st.generation != session.generation || st.stop.is_some() {
                    continue; // the session ended while we waited: these runs are not ours
                }
                // Kills first: an assignment of the same reply may be for
                // the slot a killed run leaves (it starts once that run's
                // processes are gone).
                for key in reply.kill {
                    kill_run(&mut st, key);
                }
                for a in reply.assign {
                    accept(shared, &mut st, a);
                }
                if reply.seq != 0 {
                    st.polled = Some(reply.seq);
                }
                if reply.drain && st.drain != Drain::Sent {
                    // The admin drained it: as after its own drain.
                    tracing::info!(
                        "the broker drains this worker: taking no new task, leaving once the runs end"
                    );
                    st.drain = Drain::Sent;
                }
                shared.changed.notify_all();
            }
            Err(CallError::Gone(why)) => {
                let mut st = shared.lock();
                // Stopping, this worker left itself: nothing to say.
                if st.generation == session.generation && st.stop.is_none() {
                    tracing::warn!(
                        worker = session.worker,
                        "gone ({why}): killing every run, registering again"
                    );
                    end_session(shared, &mut st);
                }
            }
            Err(CallError::Refused(why)) => shared.stop(Stop::Fatal(why)),
            Err(e) => {
                heard_though_refused(shared, &e, session.generation, sent);
                let delay = backoff.next();
                tracing::warn!("poll failed (retrying in {delay:?}): {e}");
                shared.pause(delay);
            }
        }
    }
}

/// Registers, then sends reports as soon as there are some and at least
/// every heartbeat; returns when the agent must stop.
fn reporter(shared: &Arc<Shared>, client: &Client, register: &RegisterRequest) -> Result<(), String> {
    let mut backoff = Backoff::new();
    let mut last_sent = Instant::now();
    // Whether the last report said the work disk was short of space.
    let mut told_disk = false;
    loop {
        let (session, drain) = {
            let mut st = shared.lock();
            match &st.stop {
                Some(Stop::Fatal(why)) => return Err(why.clone()),
                Some(Stop::Signal(sig)) => {
                    tracing::info!("signal {sig}: stopping");
                    return Ok(());
                }
                Some(Stop::Drained) => {
                    tracing::info!("drained: every run has ended");
                    return Ok(());
                }
                None => {}
            }
            if st.drained() || (st.drain != Drain::No && st.session.is_none()) {
                // Drained, or the lease was lost while draining: nothing
                // runs here any more, and no new registration is wanted.
                st.stop = Some(Stop::Drained);
                shared.changed.notify_all();
                shared.rare.notify_all();
                continue;
            }
            (st.session.clone(), st.drain)
        };
        if let (Some(session), Drain::Due) = (session.clone(), drain) {
            let sent = Instant::now();
            match client.drain(session.worker, &session.credential) {
                Ok(reply) => {
                    backoff.reset();
                    {
                        let mut st = shared.lock();
                        lapsed(shared, &mut st);
                        note_contact(shared, &mut st, session.generation, sent);
                    }
                    tracing::info!(
                        worker = session.worker,
                        busy_slots = reply.slots,
                        "draining: no new task will come"
                    );
                    let mut st = shared.lock();
                    if st.generation == session.generation {
                        st.drain = Drain::Sent;
                    }
                }
                Err(CallError::Gone(why)) => {
                    let mut st = shared.lock();
                    if st.generation == session.generation {
                        tracing::warn!(worker = session.worker, "gone ({why}): registering again");
                        end_session(shared, &mut st);
                    }
                }
                Err(CallError::Refused(why)) => return Err(why),
                Err(e) => {
                    heard_though_refused(shared, &e, session.generation, sent);
                    let delay = backoff.next();
                    tracing::warn!("drain failed (retrying in {delay:?}): {e}");
                    shared.pause(delay);
                }
            }
            continue;
        }
        let Some(session) = session else {
            let sent = Instant::now();
            match client.register(register) {
                Ok(reply) => {
                    backoff.reset();
                    let lease = Duration::from_millis(reply.lease_ms);
                    let heartbeat = Duration::from_millis(reply.heartbeat_ms).min(lease / 2);
                    let mut st = shared.lock();
                    st.session = Some(Session {
                        worker: reply.worker,
                        credential: reply.session.into(),
                        generation: st.generation,
                        heartbeat: heartbeat.max(Duration::from_millis(10)),
                        poll_wait: MAX_WAIT.min(lease / 2),
                        lease,
                        margin: heartbeat.max(lease / 10),
                    });
                    let generation = st.generation;
                    note_contact(shared, &mut st, generation, sent);
                    tracing::info!(
                        worker = reply.worker,
                        lease_ms = reply.lease_ms,
                        heartbeat_ms = reply.heartbeat_ms,
                        "registered"
                    );
                    shared.changed.notify_all();
                    last_sent = Instant::now();
                }
                Err(CallError::Refused(why) | CallError::Rejected(why)) => {
                    return Err(format!("the broker refused the registration: {why}"));
                }
                Err(e) => {
                    let delay = backoff.next();
                    tracing::warn!("cannot register (retrying in {delay:?}): {e}");
                    shared.pause(delay);
                }
            }
            continue;
        };

        // Wait for reports, the heartbeat, a stop, or the session's end.
        let (request, sent_reports) = {
            let mut st = shared.lock();
            let heartbeat_at = last_sent + session.heartbeat;
            let wake = match st.release_held(Instant::now()) {
                Some(due) => due.min(heartbeat_at),
                None => heartbeat_at,
            };
            let timeout = wake.saturating_duration_since(Instant::now());
            let drain = st.drain;
            // A report held meanwhile may be due before `wake`: woken by
            // it, the loop waits again until the earlier of the two.
            let held = st.held.len();
            let uploads = st.uploads.len();
            let (mut st, _) = shared
                .changed
                .wait_timeout_while(st, timeout, |st| {
                    st.stop.is_none()
                        && st.outbox.is_empty()
                        && st.held.len() == held
                        && st.uploads.len() == uploads
                        && st.generation == session.generation
                        && st.drain == drain
                        && !st.drained()
                        && st.disk_low.is_some() == told_disk
                        && Instant::now() < wake
                })
                .unwrap_or_else(PoisonError::into_inner);
            if st.stop.is_some() || st.generation != session.generation || st.drain != drain || st.drained() {
                continue;
            }
            if lapsed(shared, &mut st) {
                continue;
            }
            st.release_held(Instant::now());
            if st.outbox.is_empty() && Instant::now() < heartbeat_at && st.disk_low.is_some() == told_disk {
                // Woken for held reports not due yet, or for the output of
                // a run whose end the broker has already: sent now, not at
                // the next report.
                let ready = ready_outputs(&mut st);
                drop(st);
                send_outputs(client, &session, ready);
                continue;
            }
            let n = st.outbox.len().min(MAX_BATCH);
            let reports: Vec<Report> = st.outbox.drain(..n).collect();
            // Every run it holds: those running or waiting for a slot,
            // and those whose end is not sent yet (held, or beyond this
            // batch). A handed run left out is taken for lost.
            let mut running: BTreeSet<RunKey> = st.runs.keys().copied().collect();
            running.extend(st.outbox.iter().filter(|r| r.is_end()).map(Report::key));
            running.extend(st.held.iter().map(|(_, r)| r.key()));
            let request = ReportRequest {
                running: running.into_iter().collect(),
                reports,
                polled: st.polled,
                short_of_disk: st.disk_low,
            };
            // Short of disk, or no longer: the broker is told at once.
            told_disk = st.disk_low.is_some();
            (request, n)
        };
        let sent = Instant::now();
        match client.report(session.worker, &session.credential, &request) {
            Ok(reply) => {
                backoff.reset();
                last_sent = Instant::now();
                let mut st = shared.lock();
                lapsed(shared, &mut st);
                note_contact(shared, &mut st, session.generation, sent);
                if st.generation != session.generation {
                    continue;
                }
                for key in reply.kill {
                    kill_run(&mut st, key);
                }
                shared.changed.notify_all();
                // Outputs of runs whose end the broker now has.
                let ready = ready_outputs(&mut st);
                drop(st);
                send_outputs(client, &session, ready);
            }
            Err(CallError::Gone(why)) => {
                let mut st = shared.lock();
                // Stopping, this worker left itself: nothing to say.
                if st.generation == session.generation && st.stop.is_none() {
                    tracing::warn!(
                        worker = session.worker,
                        "gone ({why}): killing every run, registering again"
                    );
                    end_session(shared, &mut st);
                }
            }
            Err(CallError::Refused(why)) => return Err(why),
            Err(CallError::Rejected(why)) => {
                // Resending the same batch would be refused forever and hold
                // back every later report.
                tracing::error!("the broker refused {sent_reports} reports, dropped: {why}");
            }
            Err(e) => {
                heard_though_refused(shared, &e, session.generation, sent);
                let delay = backoff.next();
                tracing::warn!("report failed (retrying in {delay:?}): {e}");
                let mut st = shared.lock();
                if st.generation == session.generation {
                    st.outbox.splice(0..0, request.reports);
                }
                drop(st);
                shared.pause(delay);
            }
        }
    }
}

/// Takes the outputs of the runs whose end the broker has: those whose
/// end report is neither queued nor held (the reporter, which calls this,
/// sends no report meanwhile).
fn ready_outputs(st: &mut State) -> Vec<OutputRequest> {
    if st.uploads.is_empty() {
        return Vec::new();
    }
    let pending: HashSet<RunKey> = st
        .outbox
        .iter()
        .map(Report::key)
        .chain(st.held.iter().map(|(_, r)| r.key()))
        .collect();
    let (ready, wait): (Vec<OutputRequest>, Vec<OutputRequest>) =
        st.uploads.drain(..).partition(|o| !pending.contains(&o.key()));
    st.uploads.extend(wait);
    ready
}

/// Sends `outputs`, in batches; best effort (the runs' files stay on this
/// worker).
fn send_outputs(client: &Client, session: &Session, outputs: Vec<OutputRequest>) {
    for batch in output_batches(outputs) {
        let n = batch.outputs.len();
        match client.outputs(session.worker, &session.credential, &batch) {
            Ok(reply) => {
                for r in reply.refused {
                    tracing::warn!(task = r.task, attempt = r.attempt, "output refused: {}", r.why);
                }
            }
            Err(e) => tracing::warn!("{n} outputs not sent: {e}"),
        }
    }
}

/// The most bytes of JSON one `outputs` request carries (the broker takes
/// bodies of up to 4 MiB).
const OUTPUTS_BATCH_BYTES: usize = 3 << 20;

/// `outputs` in requests of at most [`OUTPUTS_BATCH_BYTES`] of JSON each
/// (one output alone may be more: the broker then refuses that request).
fn output_batches(outputs: Vec<OutputRequest>) -> Vec<OutputsRequest> {
    let mut batches: Vec<OutputsRequest> = Vec::new();
    let mut bytes: usize = 0;
    for out in outputs {
        // Escapes can make the JSON up to six times the text.
        let size = serde_json::to_vec(&out).map_or(usize::MAX, |v| v.len());
        match batches.last_mut() {
            Some(b) if bytes.saturating_add(size) <= OUTPUTS_BATCH_BYTES => {
                bytes += size;
                b.outputs.push(out);
            }
            _ => {
                bytes = size;
                batches.push(OutputsRequest { outputs: vec![out] });
            }
        }
    }
    batches
}

fn kill_run(st: &mut State, key: RunKey) {
    match st.runs.remove(&key) {
        Some(kill) => {
            tracing::info!(
                task = key.task,
                attempt = key.attempt,
                "killing at the broker's request"
            );
            kill.kill();
            st.pending.retain(|a| a.key() != key);
        }
        None => tracing::debug!(
            task = key.task,
            attempt = key.attempt,
            "kill for a run not running here"
        ),
    }
}

/// Kills every run, waits for their processes to die, sends what is left
/// to report and leaves (on a signal), or returns the fatal error.
fn shut_down(shared: &Arc<Shared>, client: &Client, ended: Result<(), String>) -> anyhow::Result<()> {
    let (session, final_reports) = {
        let mut st = shared.lock();
        if st.stop.is_none() {
            st.stop = Some(Stop::Fatal("stopped".into()));
            shared.rare.notify_all();
        }
        for kill in st.runs.values() {
            kill.kill();
        }
        st.runs.clear();
        st.pending.clear();
        shared.changed.notify_all();
        // Killed runs end within the grace period (then SIGKILL); allow a bit more.
        let limit = shared.exec.grace + Duration::from_secs(5);
        let (mut st, timeout) = shared
            .changed
            .wait_timeout_while(st, limit, |st| st.active > 0)
            .unwrap_or_else(PoisonError::into_inner);
        if timeout.timed_out() {
            tracing::warn!("{} runs still ending after {limit:?}; leaving anyway", st.active);
        }
        (st.session.clone(), std::mem::take(&mut st.outbox))
    };
    if let Err(why) = ended {
        return Err(anyhow!(why)).context("the worker stopped");
    }
    let Some(session) = session else { return Ok(()) };
    // Runs that ended before the signal: report them so they are not run again.
    for chunk in final_reports.chunks(MAX_BATCH) {
        let request = ReportRequest {
            running: Vec::new(),
            reports: chunk.to_vec(),
            polled: None,
            short_of_disk: None,
        };
        if let Err(e) = client.report(session.worker, &session.credential, &request) {
            tracing::warn!("could not send the last {} reports: {e}", chunk.len());
            break;
        }
    }
    let mut backoff = Backoff::new();
    for attempt in 1..=3 {
        match client.leave(session.worker, &session.credential) {
            Ok(()) => {
                tracing::info!(worker = session.worker, "left the broker");
                return Ok(());
            }
            Err(CallError::Transient(e) | CallError::Busy(e)) if attempt < 3 => {
                tracing::warn!("cannot leave yet: {e}");
                std::thread::sleep(backoff.next());
            }
            Err(e) => {
                tracing::warn!("could not leave (the broker will drop this worker when its lease ends): {e}");
                return Ok(());
            }
        }
    }
    Ok(())
}
