//! The broker's state machine, without HTTP: requests in, replies out.
//! One thread owns it ([`crate::http::serve`]); a batch of requests becomes one
//! group commit — each write request is one step of the core, logged with
//! what the service derived from it (task descriptions, worker slots,
//! outcomes) in the same transaction, and only then answered.
//!
//! What the core decides is rebuilt from the log on open; what the service
//! keeps beside it is either in its own tables (written with the steps) or
//! derived from the core's state (which worker runs what), so a restart at
//! any moment recovers both.
//!
//! # Workflows: held tasks and two kinds of ids
//!
//! A submission may be one workflow whose tasks depend on each other
//! (`after`). A task with parents is *held*: it has a row in `tasks` (state
//! `held`, its parents in `task_parents`) but the core does not know it.
//! When its last parent completes, it is *released*: submitted to the core
//! in a step of its own, committed right after the one that completed the
//! parent. If a parent ends otherwise, its held descendants end `cancelled`
//! (with a `reason`), in the tables only. A SIGKILL between the two commits
//! loses nothing: on open, held tasks are checked against their parents'
//! rows and released or cancelled then ([`Broker::settle`]).
//!
//! The log layer refuses a `Submit` whose id is not above every id it has
//! seen ([`Live`] keeps ids from being reused), yet a held task needs its id
//! at submission (the user gets it back) and enters the core later, after
//! tasks submitted since. So a task has a *public* id — the one users,
//! workers, `tasks.id` and the API see, handed out at submission — and a
//! *core* id, taken when it enters the core. They are equal except for
//! released tasks, whose core id is taken at release (`tasks.core_id`;
//! [`Broker::core_id`] and [`Broker::public_id`] translate, the maps holding
//! only live released tasks). Both come from one increasing sequence
//! (`Broker::take_id`), so a number is never the public id of one task and
//! the core id of another. Relaxing the log layer's check instead would let a
//! buggy caller slip an id in below others; this way the core and the log
//! stay as strict as before and the translation is the service's alone.

use crate::dashboard::Recent;
use crate::live::Live;
use crate::store::unix_ms;
use fairsched_core::{Outcome, Registry, SlotId, TaskId, Time, WorkflowRef};
use fairsched_proto::wire::RunKey;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

// In the order a request meets them: the tables and how a broker opens,
// the write path, then what it reads and explains.
mod admin;
mod commands;
mod error;
mod explain;
mod history;
mod hold;
mod leases;
mod output;
mod queries;
mod recovery;
mod satisfaction;
mod schema;
mod submit;
mod workflows;

pub use commands::{Gone, Write, Written};
use commands::{Plan, PlanKind};
pub use error::ServiceError;
pub use history::{History, HistoryTask, history};
use hold::{HoldBy, Room};
pub use leases::{MAX_ASSIGN_PER_POLL, MAX_POLL_SCRIPT_BYTES, MISSED_REPORTS};
use queries::allowed;
pub use recovery::OpenError;
use satisfaction::Satisfaction;
pub(crate) use schema::upgrade;
pub use schema::{ADDED_COLUMNS, ADDED_ELSEWHERE, ADDED_TABLES, SCHEMA};
use submit::Keyed;
pub use submit::{KEYS_KEPT, SUBMIT_STEP, SubmitKey};

/// Settings of a running broker that are not part of the log (changing
/// them between restarts does not change past decisions).
#[derive(Clone, Debug)]
pub struct Settings {
    /// A worker silent this long loses its slots and its tasks.
    pub lease: Duration,
    /// A task whose worker was lost this many times fails instead of
    /// going back to the queue.
    pub max_attempts: u32,
    /// Steps between two snapshots of the core (0: none; a restart then
    /// replays the whole log).
    pub snapshot_every: u64,
    /// Where the database's policies are looked up: fairsched's own, or a
    /// program's with its own added (the same at every restart, or the log
    /// does not replay).
    pub registry: Registry,
    /// The highest priority a user may give a task (the default, 1:
    /// users may only lower theirs, as in Slurm).
    pub max_user_priority: i64,
    /// The longest time limit a task may ask for, and the limit of a task
    /// that gives none (`None`: no limit).
    pub max_time_limit: Option<Duration>,
    /// Likewise for memory (bytes).
    pub max_memory: Option<u64>,
    /// The most tasks a user may have queued (waiting or held) when the
    /// admin set no quota of the user's (`admin quota`): one tenant's
    /// backlog does not grow without bound (`None`: no limit).
    pub default_max_queued: Option<u64>,
    /// Runs' output is kept this long after its task ended (`None`: for
    /// ever) ...
    pub output_keep_for: Option<Duration>,
    /// ... and, oldest first, until all outputs take at most this many
    /// bytes (`None`: no bound).
    pub output_keep_bytes: Option<u64>,
    /// The wall clock (Unix milliseconds), read once, when the broker
    /// opens: from then on its clock is that reading plus the monotonic
    /// time since, which a step of the wall clock does not move.
    pub wall_clock: fn() -> i64,
}

/// [`Settings::default_max_queued`]'s default.
pub const DEFAULT_MAX_QUEUED: u64 = 100_000;
/// [`Settings::output_keep_for`]'s default: 7 days, as the worker's `--keep-runs`.
pub const OUTPUT_KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);
/// [`Settings::output_keep_bytes`]'s default: 1 GiB.
pub const OUTPUT_KEEP_BYTES: u64 = 1 << 30;

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            lease: Duration::from_secs(30),
            max_attempts: 5,
            snapshot_every: crate::live::DEFAULT_SNAPSHOT_EVERY,
            registry: Registry::builtin(),
            max_user_priority: 1,
            max_time_limit: None,
            max_memory: None,
            default_max_queued: Some(DEFAULT_MAX_QUEUED),
            output_keep_for: Some(OUTPUT_KEEP_FOR),
            output_keep_bytes: Some(OUTPUT_KEEP_BYTES),
            wall_clock: unix_ms,
        }
    }
}

type Reply<T> = Result<T, ServiceError>;

/// One live task's description (the core knows the rest).
#[derive(Clone, Debug)]
struct Live_ {
    /// Its public id (the key is its core id).
    public: u64,
    user: i64,
    name: String,
    command: String,
    stage_in: Option<String>,
    stage_out: Option<String>,
    submit_ms: i64,
    limits: Limits,
}

/// A task's limits, which its worker enforces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Limits {
    time_limit_ms: Option<u64>,
    memory_bytes: Option<u64>,
    /// Its own per-run limits (below its worker's).
    caps: fairsched_proto::api::RunCaps,
}

/// A workflow task waiting for its parents: not in the core yet.
#[derive(Clone, Debug)]
struct Held {
    user: i64,
    org: u32,
    name: String,
    command: String,
    stage_in: Option<String>,
    stage_out: Option<String>,
    priority: i64,
    optional: bool,
    submit_ms: i64,
    limits: Limits,
    workflow: Option<WorkflowRef>,
    /// Public ids, ascending, without repeats.
    parents: Vec<u64>,
    /// Parents not completed yet.
    pending: u32,
    /// Who put it on hold, if anyone did.
    hold: Option<HoldBy>,
}

#[derive(Clone, Debug)]
struct Worker {
    org: u32,
    /// The lease it was granted at registration (it heartbeats for that
    /// one, whatever `--lease` a restarted broker got).
    lease: Duration,
    slots: Vec<SlotId>,
    last_seen: Instant,
    lost: bool,
    /// Why it is gone, once `lost`.
    gone: Gone,
    /// Takes no new task ([`Write::Drain`]).
    draining: bool,
    /// Held by the admin ([`Write::HoldWorker`]): takes no new task, and
    /// gets slots again when released.
    held: bool,
    /// The slots it registered with: what a released worker gets back.
    capacity: u32,
    /// The bytes free in its work directory, below its floor, as its last
    /// report said: it starts no run until there is more.
    short_of_disk: Option<u64>,
}

/// Counters and histograms for `/metrics`, since this process started.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub ended: HashMap<&'static str, u64>,
    /// Dispatch latency (submission to start), milliseconds: counts per
    /// bucket of [`LATENCY_BUCKETS_MS`], then the sum.
    pub dispatch: Vec<u64>,
    pub dispatch_sum_ms: i64,
    pub dispatch_count: u64,
    pub steps: u64,
    pub commits: u64,
    pub requeued_lost: u64,
}

pub const LATENCY_BUCKETS_MS: [i64; 10] = [1, 5, 10, 50, 100, 500, 1000, 5000, 30000, 300000];

/// A task's state, for the counts of `GET /v1/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Held,
    Waiting,
    Running,
    Completed,
    Failed,
    Cancelled,
    Killed,
    Rejected,
}

impl St {
    fn of_row(state: &str) -> Option<St> {
        Some(match state {
            "held" => St::Held,
            "completed" => St::Completed,
            "failed" => St::Failed,
            "cancelled" => St::Cancelled,
            "killed" => St::Killed,
            "live" => return None,
            _ => St::Rejected,
        })
    }
    fn of_outcome(o: Outcome) -> St {
        match o {
            Outcome::Completed => St::Completed,
            Outcome::Failed => St::Failed,
            Outcome::Cancelled => St::Cancelled,
            Outcome::Killed => St::Killed,
            Outcome::Rejected => St::Rejected,
        }
    }
}

/// Tasks by state, of one user or of all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StateCounts([u64; 8]);

impl StateCounts {
    fn add(&mut self, s: St, n: u64) {
        self.0[s as usize] += n;
    }
    fn sub(&mut self, s: St) {
        let c = &mut self.0[s as usize];
        *c = c.saturating_sub(1);
    }
    fn get(&self, s: St) -> u64 {
        self.0[s as usize]
    }
}

/// The counts behind `GET /v1/status`, kept as tasks change state (O(1)
/// per change) and recounted from the tables and the core on open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    all: StateCounts,
    users: HashMap<i64, StateCounts>,
}

impl Counts {
    fn add(&mut self, user: i64, s: St, n: u64) {
        self.all.add(s, n);
        self.users.entry(user).or_default().add(s, n);
    }
    fn shift(&mut self, user: i64, from: St, to: St) {
        self.all.sub(from);
        self.all.add(to, 1);
        let u = self.users.entry(user).or_default();
        u.sub(from);
        u.add(to, 1);
    }
}

/// The broker's state: the core with its log, and the service's
/// bookkeeping around it.
pub struct Broker {
    live: Live,
    /// The clock's origin: the monotonic instant the broker opened, and
    /// its clock (ms) then.
    opened: (Instant, i64),
    settings: Settings,
    /// Live tasks (in the core), by core id.
    tasks: HashMap<TaskId, Live_>,
    /// Held tasks (workflow tasks waiting for parents, tasks on hold,
    /// tasks past a running quota: [`hold`]), by public id.
    held: HashMap<u64, Held>,
    /// The held children of a task not ended yet (public ids; a child
    /// cancelled meanwhile may linger until the parent ends).
    children: HashMap<u64, Vec<u64>>,
    /// Held tasks whose parents have all completed: released at the next
    /// [`Broker::settle`].
    ready: BTreeSet<u64>,
    /// Held tasks to cancel at the next [`Broker::settle`], and why.
    doomed: Vec<(u64, String)>,
    /// Public id ↔ core id, for live tasks whose ids differ (released ones).
    core_of: HashMap<u64, TaskId>,
    public_of: HashMap<TaskId, u64>,
    /// The next id [`Broker::take_id`] may hand out.
    next_id: u64,
    next_workflow: u32,
    workers: HashMap<u64, Worker>,
    /// Each worker's session credential (its SHA-256) → the worker.
    sessions: HashMap<[u8; 32], u64>,
    /// Runs lately ended by each worker, whose output it may send; oldest
    /// first in `ended_order` (at most [`output::ENDED_KEPT`]).
    ended_on: HashMap<RunKey, u64>,
    ended_order: std::collections::VecDeque<RunKey>,
    /// Submissions by (user, idempotency key), of the last [`KEYS_KEPT`].
    submit_keys: HashMap<(i64, String), Keyed>,
    /// The outputs' retention ([`Broker::prune_outputs`]).
    outputs_kept: output::Kept,
    /// Room under the queued quotas reserved for requests being written in
    /// steps ([`Broker::reserve`]): id → (user, tasks not submitted yet).
    reservations: HashMap<u64, (i64, u64)>,
    next_reservation: u64,
    /// Quotas on queued and running tasks.
    quotas: HashMap<admin::QuotaOf, admin::Limit>,
    /// Held tasks that wait for nothing but a running quota, by user
    /// (with its organization), public ids ascending.
    throttled: BTreeMap<i64, (u32, BTreeSet<u64>)>,
    /// Users and organizations whose throttled tasks may fit now: looked
    /// at in the next round of [`Broker::settle`].
    recheck_users: BTreeSet<i64>,
    recheck_orgs: BTreeSet<u32>,
    /// Released workers that may have fewer slots than they registered
    /// with, while some of theirs still drain ([`Write::ReleaseWorker`]);
    /// with `rejoin_check`, looked at in the next round of
    /// [`Broker::settle`].
    rejoin: BTreeSet<u64>,
    rejoin_check: bool,
    /// Live tasks being put on hold in the step being applied (their end
    /// in the core is not their end), and by whom.
    withdrawing: HashMap<TaskId, HoldBy>,
    /// Tasks planned into the core in the batch being planned, for the
    /// running quotas.
    batch_room: Room,
    /// The local account each user's tasks run as, where the admin set one.
    run_as: HashMap<i64, String>,
    /// Users and organizations the operator removed: a request they made
    /// before (authenticated then) is refused when it is applied.
    removed_users: HashSet<i64>,
    removed_orgs: HashSet<u32>,
    /// Idempotency keys of submissions planned in the batch being planned.
    batch_keys: HashSet<(i64, String)>,
    /// When `submit_keys` was last pruned.
    keys_pruned: Option<Instant>,
    /// Tasks each user submitted in the batch being planned (not counted
    /// yet), for the quotas.
    batch_queued: HashMap<i64, u64>,
    slot_worker: HashMap<SlotId, u64>,
    /// Running tasks by worker, and the worker of each running task.
    running: HashMap<u64, BTreeSet<TaskId>>,
    runs_on: HashMap<TaskId, u64>,
    /// Each running task's user and the start of its run (ms).
    run_start: HashMap<TaskId, (i64, i64)>,
    /// (task, attempt) already handed to their worker since this process
    /// started (after a restart everything running is handed again; the
    /// worker ignores what it already runs).
    delivered: HashSet<(TaskId, u32)>,
    /// The worker and attempt of each run handed to a worker (by a poll)
    /// and not yet ended or stopped.
    handed: HashMap<TaskId, (u64, u32)>,
    /// Handed runs the broker stopped (cancelled, preempted, killed), by
    /// worker, for its next poll reply.
    kills: HashMap<u64, Vec<RunKey>>,
    /// The number of the last poll reply: this process's random high 32
    /// bits (a worker's `polled` from before a restart is not this
    /// process's), and a count.
    polls: u64,
    /// The poll reply (its count) that handed each handed run.
    handed_in: HashMap<TaskId, u64>,
    /// Handed runs their worker's last reports did not list, and in how
    /// many reports in a row (with the attempt): at [`MISSED_REPORTS`]
    /// the run is lost (its assignment never reached the worker).
    misses: HashMap<TaskId, (u32, u32)>,
    next_slot: u32,
    next_worker: u64,
    timers: Vec<(Time, u64)>,
    counts: Counts,
    sat: Satisfaction,
    pub counters: Counters,
    /// Bumped whenever tasks start or handed runs are stopped (long polls
    /// wait on it).
    pub generation: u64,
    /// What happened lately, for the dashboard.
    pub recent: Recent,
}

/// The ids and the clock every part of the service uses.
impl Broker {
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// Writes a snapshot of the core now (a clean shutdown does, so the
    /// next start replays nothing), unless snapshots are off or nothing
    /// was logged since the last one.
    pub fn snapshot_now(&mut self) {
        if self.settings.snapshot_every == 0 || self.live.since_snapshot() == 0 {
            return;
        }
        if let Err(e) = self.live.write_snapshot() {
            tracing::warn!("{}: {e}", self.live.store().path().display());
        }
    }

    /// The core's clock now: milliseconds since the database was created.
    /// The broker's clock: ms since the database was made, by the wall
    /// clock when the broker opened and the monotonic clock since (a
    /// wall clock set back froze timers, deadlines and satisfaction until
    /// it caught up).
    pub fn clock(&self) -> Time {
        let (at, ms) = self.opened;
        let since = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
        Time::from_millis(ms.saturating_add(since)).max(self.live.now())
    }

    /// A task id used by no task yet, public or core (see the module docs).
    fn take_id(&mut self) -> u64 {
        let id = self.live.fresh_id().0.max(self.next_id);
        self.next_id = id + 1;
        id
    }

    /// The core id of the task with public id `public` (the same number
    /// unless it is a released workflow task).
    pub fn core_id(&self, public: u64) -> TaskId {
        self.core_of.get(&public).copied().unwrap_or(TaskId(public))
    }

    /// The public id of the task with core id `core`.
    pub fn public_id(&self, core: TaskId) -> u64 {
        self.public_of.get(&core).copied().unwrap_or(core.0)
    }

    /// The live task whose public id is `public`: its core id and description.
    fn live_task(&self, public: u64) -> Option<(TaskId, &Live_)> {
        let core = self.core_id(public);
        self.tasks
            .get(&core)
            .filter(|d| d.public == public)
            .map(|d| (core, d))
    }
}

#[cfg(test)]
mod tests;
