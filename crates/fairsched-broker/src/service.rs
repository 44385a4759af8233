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

use crate::api::*;
use crate::dashboard::{Recent, What};
use crate::identity::{IdentityError, Principal, hash};
use crate::live::{Live, LiveError};
use crate::store::unix_ms;
use fairsched_core::registry::Picks;
use fairsched_core::{
    Action, EndRecord, Event, Kind, MachineId, OrgId, Outcome, Phase, Registry, SlotId, TaskId, TaskSpec,
    Time, WorkflowId, WorkflowRef,
};
use fairsched_proto::wire::{
    Assignment, Phase as WirePhase, PollReply, RegisterReply, ReportEvent, ReportReply, ReportRequest, RunKey,
};
use rusqlite::{OptionalExtension, params};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

mod admin;

/// Tables added since schema 2 was first written (idempotent).
macro_rules! added_tables {
    () => {
        "
    CREATE TABLE IF NOT EXISTS workflows (
        id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, org INTEGER NOT NULL,
        name TEXT NOT NULL, activities TEXT NOT NULL, submit_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS task_parents (
        child INTEGER NOT NULL, parent INTEGER NOT NULL,
        PRIMARY KEY (child, parent)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS shares (
        user_id INTEGER PRIMARY KEY, allocated_ms INTEGER NOT NULL,
        deserved REAL NOT NULL, base REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS submit_keys (
        user_id INTEGER NOT NULL, key TEXT NOT NULL, digest BLOB NOT NULL,
        ids TEXT NOT NULL, workflow INTEGER, at_ms INTEGER NOT NULL,
        PRIMARY KEY (user_id, key)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS quotas (
        kind TEXT NOT NULL, id INTEGER NOT NULL, max_queued INTEGER NOT NULL,
        PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS removed (
        kind TEXT NOT NULL, id INTEGER NOT NULL, at_ms INTEGER NOT NULL,
        PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS worker_sessions (
        worker INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS share_clock (
        id INTEGER PRIMARY KEY CHECK (id = 0), g REAL NOT NULL, at_ms INTEGER NOT NULL);
"
    };
}

/// The service's own tables, created with the log. Columns and tables
/// added since schema 2 was first written are added to an older database
/// when it is opened ([`ADDED_COLUMNS`], [`ADDED_TABLES`]).
pub const SCHEMA: &str = concat!(
    "
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, org INTEGER NOT NULL,
        name TEXT NOT NULL, command TEXT NOT NULL, stage_in TEXT, stage_out TEXT,
        priority INTEGER NOT NULL,
        state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        exit_code INTEGER, signal INTEGER,
        submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER,
        optional INTEGER NOT NULL DEFAULT 0, core_id INTEGER,
        workflow INTEGER, activity INTEGER, reason TEXT);
    CREATE INDEX tasks_user ON tasks (user_id, id);
    CREATE TABLE workers (
        id INTEGER PRIMARY KEY, org INTEGER NOT NULL, host TEXT NOT NULL,
        first_slot INTEGER NOT NULL, slots INTEGER NOT NULL,
        state TEXT NOT NULL, joined_ms INTEGER NOT NULL, left_ms INTEGER,
        lease_ms INTEGER NOT NULL);
",
    added_tables!()
);

/// `added_tables!`, for [`Broker::open`].
pub const ADDED_TABLES: &str = added_tables!();

/// Columns of `tasks` added since schema 2 was first written.
pub const ADDED_COLUMNS: [(&str, &str); 7] = [
    ("optional", "INTEGER NOT NULL DEFAULT 0"),
    ("core_id", "INTEGER"),
    ("workflow", "INTEGER"),
    ("activity", "INTEGER"),
    ("reason", "TEXT"),
    ("time_limit_ms", "INTEGER"),
    ("memory_bytes", "INTEGER"),
];

/// Brings a database created by an older fairsched up to [`SCHEMA`]
/// (additive only: nothing is dropped or rewritten).
fn upgrade(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let mut have = HashSet::new();
    {
        let mut q = conn.prepare("PRAGMA table_info(tasks)")?;
        for name in q.query_map([], |r| r.get::<_, String>(1))? {
            have.insert(name?);
        }
    }
    for (col, ty) in ADDED_COLUMNS {
        if !have.contains(col) {
            conn.execute_batch(&format!("ALTER TABLE tasks ADD COLUMN {col} {ty}"))?;
        }
    }
    conn.execute_batch(ADDED_TABLES)
}

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
    /// The wall clock (Unix milliseconds), read once, when the broker
    /// opens: from then on its clock is that reading plus the monotonic
    /// time since, which a step of the wall clock does not move.
    pub wall_clock: fn() -> i64,
}

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
            wall_clock: unix_ms,
        }
    }
}

/// An error for the client: the HTTP status and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }
    fn bad(m: impl Into<String>) -> ApiError {
        ApiError::new(400, m)
    }
    fn forbidden(m: impl Into<String>) -> ApiError {
        ApiError::new(403, m)
    }
    fn not_found(m: impl Into<String>) -> ApiError {
        ApiError::new(404, m)
    }
    fn internal(m: impl std::fmt::Display) -> ApiError {
        ApiError::new(503, m.to_string())
    }
}

impl From<IdentityError> for ApiError {
    fn from(e: IdentityError) -> ApiError {
        match e {
            IdentityError::Invalid(m) => ApiError::bad(m),
            IdentityError::Exists(m) => ApiError::new(409, format!("{m} already exists")),
            IdentityError::Unknown(m) => ApiError::not_found(format!("no {m}")),
            IdentityError::Store(s) => ApiError::internal(s),
        }
    }
}

type Reply<T> = Result<T, ApiError>;

/// A write: it becomes one step of the core.
pub enum Write {
    Submit {
        user: i64,
        org: u32,
        tasks: Vec<NewTask>,
        workflow: Option<WorkflowSpec>,
        /// The request's `Idempotency-Key`, if it had one.
        key: Option<SubmitKey>,
    },
    Cancel {
        who: Principal,
        task: u64,
    },
    Register {
        org: u32,
        slots: u32,
        host: String,
    },
    Report {
        worker: u64,
        org: u32,
        body: ReportRequest,
    },
    Leave {
        worker: u64,
        org: u32,
    },
    /// The worker takes no new task: its free slots leave now, the others
    /// as their runs end (a pilot job near the end of its wall time).
    Drain {
        worker: u64,
        org: u32,
    },
}

/// A submission's `Idempotency-Key` and the SHA-256 of its body: the
/// same key again from the same user, within [`KEYS_KEPT`], gets the
/// first reply and submits nothing; with another body, a 409.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitKey {
    pub key: String,
    pub digest: [u8; 32],
}

/// How long a submission's idempotency key is remembered.
pub const KEYS_KEPT: Duration = Duration::from_secs(24 * 3600);

/// A remembered submission: its body's digest and its reply.
#[derive(Clone, Debug)]
struct Keyed {
    digest: [u8; 32],
    ids: Vec<u64>,
    workflow: Option<u32>,
}

/// What a write answers.
#[derive(Debug)]
pub enum Written {
    Submitted {
        ids: Vec<u64>,
        workflow: Option<u32>,
    },
    Cancelled(TaskOut),
    Registered(RegisterReply),
    Reported(ReportReply),
    Left,
    /// The worker drains: the slots it still has.
    Draining {
        slots: u32,
    },
    /// Held tasks released or cancelled (internal: no client waits).
    Settled,
}

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
    workflow: WorkflowRef,
    /// Public ids, ascending, without repeats.
    parents: Vec<u64>,
    /// Parents not completed yet.
    pending: u32,
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
    /// Takes no new task ([`Write::Drain`]).
    draining: bool,
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

/// Per-user satisfaction (spec/diet-ethic.md, "Metrics", adapted to a
/// live pool): `s_u = allocated_u / deserved_u`, where `allocated_u` is the
/// slot-time of u's runs, whatever their outcome (killed and requeued runs
/// included, and runs in progress up to now), and `deserved_u` is the
/// integral, over the time u has live work (tasks waiting or running in the
/// core; held workflow tasks do not count), of `slots / |U|`, `U` being the
/// users with live work then.
///
/// Kept in O(1) per change: `G(t) = ∫ slots/|U| dt` is one global integral
/// (advanced lazily: `slots` and `|U|` only change at events); a user's
/// deserved share is the sum of `G` differences over its presence intervals
/// (`deserved` for the closed ones, `G(now) − base` for the current one);
/// its allocated time is `allocated` for closed runs plus
/// `running · now − start_sum` for the runs in progress. Times are the
/// core's milliseconds, slot-time is slot-milliseconds.
///
/// `g`, `at`, and each user's `allocated`, `deserved` and `base` are in the
/// tables (`share_clock`, `shares`), written in the same transaction as the
/// steps that change them; the rest (live and running tasks, slots) is
/// recounted from the core on open.
#[derive(Clone, Debug, Default, PartialEq)]
struct Satisfaction {
    g: f64,
    at: i64,
    slots: i64,
    /// |U|: users with `live > 0`.
    present: u64,
    users: HashMap<i64, Share>,
}

/// One user's part of [`Satisfaction`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Share {
    live: u64,
    running: u64,
    start_sum: i64,
    allocated: i64,
    deserved: f64,
    base: f64,
}

/// What a batch of steps changes for [`Satisfaction`] (all at one instant).
#[derive(Clone, Debug, Default, PartialEq)]
struct ShareDelta {
    slots: i64,
    /// Slots may have left inside the steps (a draining worker's): `G`
    /// is brought to now before the count changes.
    slots_moved: bool,
    users: BTreeMap<i64, UserDelta>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct UserDelta {
    live: i64,
    running: i64,
    start_sum: i64,
    allocated: i64,
}

impl ShareDelta {
    fn is_empty(&self) -> bool {
        self.slots == 0 && !self.slots_moved && self.users.is_empty()
    }
    fn user(&mut self, u: i64) -> &mut UserDelta {
        self.users.entry(u).or_default()
    }
    fn start(&mut self, u: i64, now: i64) {
        let d = self.user(u);
        d.running += 1;
        d.start_sum += now;
    }
    fn stop(&mut self, u: i64, start: i64, now: i64) {
        let d = self.user(u);
        d.running -= 1;
        d.start_sum -= start;
        d.allocated += (now - start).max(0);
    }
}

/// [`Satisfaction`] after a batch, before it is committed.
#[derive(Clone, Debug, PartialEq)]
struct Staged {
    g: f64,
    at: i64,
    slots: i64,
    present: u64,
    users: Vec<(i64, Share)>,
}

impl Satisfaction {
    /// `G(now)`.
    fn g_at(&self, now: i64) -> f64 {
        if now > self.at && self.present > 0 {
            self.g + self.slots.max(0) as f64 * (now - self.at) as f64 / self.present as f64
        } else {
            self.g
        }
    }

    /// The state after `d` at `now` (the users it touches only).
    fn preview(&self, now: i64, d: &ShareDelta) -> Staged {
        let g = self.g_at(now);
        let mut present = self.present;
        let users = d
            .users
            .iter()
            .map(|(&u, ud)| {
                let mut s = self.users.get(&u).copied().unwrap_or_default();
                let was = s.live > 0;
                s.live = (s.live as i64 + ud.live).max(0) as u64;
                s.running = (s.running as i64 + ud.running).max(0) as u64;
                s.start_sum += ud.start_sum;
                s.allocated += ud.allocated;
                match (was, s.live > 0) {
                    (false, true) => {
                        s.base = g;
                        present += 1;
                    }
                    (true, false) => {
                        s.deserved += g - s.base;
                        s.base = 0.0;
                        present -= 1;
                    }
                    _ => {}
                }
                (u, s)
            })
            .collect();
        Staged {
            g,
            at: now.max(self.at),
            slots: self.slots + d.slots,
            present,
            users,
        }
    }

    fn install(&mut self, st: Staged) {
        self.g = st.g;
        self.at = st.at;
        self.slots = st.slots;
        self.present = st.present;
        for (u, s) in st.users {
            self.users.insert(u, s);
        }
    }

    /// Applies `d` at `now` at once (tests; the broker stages and commits).
    #[cfg(test)]
    fn apply(&mut self, now: i64, d: &ShareDelta) {
        let st = self.preview(now, d);
        self.install(st);
    }

    /// `(allocated, deserved)` of `user` at `now`, slot-milliseconds.
    fn parts(&self, user: i64, now: i64) -> Option<(f64, f64)> {
        let s = self.users.get(&user)?;
        let allocated = s.allocated + s.running as i64 * now - s.start_sum;
        let current = if s.live > 0 { self.g_at(now) - s.base } else { 0.0 };
        Some((allocated as f64, s.deserved + current))
    }

    /// `s_u` at `now`; `None` while nothing is deserved yet.
    fn value(&self, user: i64, now: i64) -> Option<f64> {
        let (a, d) = self.parts(user, now)?;
        (d > 0.0).then(|| a / d)
    }
}

/// The broker's state: the core with its log, and the service's
/// bookkeeping around it.
/// A run handed to a worker and left out of the `running` list of this
/// many of its reports in a row, each written after the worker applied
/// the poll reply that handed the run ([`ReportRequest::polled`]), is
/// lost: its assignment never reached the worker (a reply lost to a
/// dropped connection, a timeout, a size limit), and it goes back to the
/// queue as when its worker is lost.
pub const MISSED_REPORTS: u32 = 2;
/// A poll reply holds at most this many assignments…
pub const MAX_ASSIGN_PER_POLL: usize = 1024;
/// …and at most this many bytes of scripts (one assignment at least,
/// whatever its size); the rest go with the next polls. A worker reads
/// replies of up to 64 MiB.
pub const MAX_POLL_SCRIPT_BYTES: usize = 8 << 20;

pub struct Broker {
    live: Live,
    /// The clock's origin: the monotonic instant the broker opened, and
    /// its clock (ms) then.
    opened: (Instant, i64),
    settings: Settings,
    /// Live tasks (in the core), by core id.
    tasks: HashMap<TaskId, Live_>,
    /// Held workflow tasks, by public id.
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
    /// Submissions by (user, idempotency key), of the last [`KEYS_KEPT`].
    submit_keys: HashMap<(i64, String), Keyed>,
    /// Quotas on queued tasks.
    quotas: HashMap<admin::QuotaOf, u64>,
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

/// What was refused when opening.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("{0}")]
    Store(String),
}

/// Why a held task is cancelled when its parent `parent` ended so.
fn parent_reason(parent: u64, state: &str) -> String {
    match state {
        "failed" => format!("parent task {parent} failed"),
        s => format!("parent task {parent} was {s}"),
    }
}

impl Broker {
    /// Opens the database (created by `fairsched admin init`) and rebuilds
    /// the state from its log; held tasks whose parents ended while the
    /// broker was down (or before their release was committed) are
    /// released or cancelled now.
    pub fn open(path: &Path, settings: Settings) -> Result<Broker, OpenError> {
        let mut live = Live::open(path, &settings.registry)?;
        live.set_snapshot_every(settings.snapshot_every);
        if let Some(seq) = live.restored_from() {
            tracing::info!(
                "{}: restored from the snapshot after step {seq}, then {} steps of the log",
                path.display(),
                live.steps() as i64 - seq
            );
        }
        let store_err = |e: rusqlite::Error| OpenError::Store(format!("{}: {e}", path.display()));
        upgrade(live.store().conn()).map_err(store_err)?;
        // Never behind the log: a wall clock set back while the broker
        // was down resumes from the last step.
        let opened = (
            Instant::now(),
            ((settings.wall_clock)() - live.store().epoch_ms()).max(live.now().millis()),
        );
        let mut b = Broker {
            opened,
            timers: live.pending_timers().to_vec(),
            live,
            settings,
            tasks: HashMap::new(),
            held: HashMap::new(),
            children: HashMap::new(),
            ready: BTreeSet::new(),
            doomed: Vec::new(),
            core_of: HashMap::new(),
            public_of: HashMap::new(),
            next_id: 1,
            next_workflow: 1,
            workers: HashMap::new(),
            slot_worker: HashMap::new(),
            running: HashMap::new(),
            runs_on: HashMap::new(),
            run_start: HashMap::new(),
            delivered: HashSet::new(),
            handed: HashMap::new(),
            kills: HashMap::new(),
            next_slot: 0,
            next_worker: 1,
            sessions: HashMap::new(),
            submit_keys: HashMap::new(),
            quotas: HashMap::new(),
            batch_queued: HashMap::new(),
            misses: HashMap::new(),
            polls: {
                let mut b = [0u8; 4];
                getrandom::fill(&mut b).expect("the operating system's random source");
                u64::from(u32::from_le_bytes(b)) << 32
            },
            handed_in: HashMap::new(),
            counts: Counts::default(),
            sat: Satisfaction::default(),
            counters: Counters {
                dispatch: vec![0; LATENCY_BUCKETS_MS.len()],
                ..Counters::default()
            },
            generation: 0,
            recent: Recent::default(),
        };
        b.load().map_err(store_err)?;
        b.settle();
        Ok(b)
    }
}

impl Broker {
    /// Rebuilds the service's state from its tables and the core.
    fn load(&mut self) -> rusqlite::Result<()> {
        let conn = self.live.store().conn();
        {
            let mut q =
                conn.prepare("SELECT id, org, first_slot, slots, state, lease_ms FROM workers ORDER BY id")?;
            let rows = q.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?;
            let now = Instant::now();
            for row in rows {
                let (id, org, first, n, state, lease_ms) = row?;
                let slots: Vec<SlotId> = (first..first + n).map(|s| SlotId(s as u32)).collect();
                self.next_slot = self.next_slot.max((first + n) as u32);
                self.next_worker = self.next_worker.max(id as u64 + 1);
                let lost = !matches!(state.as_str(), "active" | "draining");
                let draining = state == "draining";
                if !lost {
                    for &s in &slots {
                        self.slot_worker.insert(s, id as u64);
                    }
                }
                // A worker that was active gets a fresh lease from now.
                self.workers.insert(
                    id as u64,
                    Worker {
                        org: org as u32,
                        lease: Duration::from_millis(lease_ms.max(0) as u64),
                        slots,
                        last_seen: now,
                        lost,
                        draining,
                    },
                );
            }
        }
        {
            // `at_ms` is the broker's clock, as every `_ms` of the tables.
            let since = self.clock().millis() - KEYS_KEPT.as_millis() as i64;
            conn.execute("DELETE FROM submit_keys WHERE at_ms < ?1", [since])?;
            let mut q = conn.prepare("SELECT user_id, key, digest, ids, workflow FROM submit_keys")?;
            let rows = q.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<u32>>(4)?,
                ))
            })?;
            for row in rows {
                let (user, key, digest, ids, workflow) = row?;
                if let (Ok(digest), Ok(ids)) = (
                    <[u8; 32]>::try_from(digest.as_slice()),
                    serde_json::from_str(&ids),
                ) {
                    self.submit_keys.insert(
                        (user, key),
                        Keyed {
                            digest,
                            ids,
                            workflow,
                        },
                    );
                }
            }
        }
        self.quotas = admin::load_quotas(conn)?;
        {
            let mut q = conn.prepare("SELECT worker, hash FROM worker_sessions")?;
            let rows = q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
            for row in rows {
                let (worker, h) = row?;
                if let Ok(h) = <[u8; 32]>::try_from(h.as_slice()) {
                    self.sessions.insert(h, worker as u64);
                }
            }
        }
        {
            let mut q = conn.prepare(
                "SELECT id, user_id, org, name, command, stage_in, stage_out, submit_ms, core_id, state,
                        priority, optional, workflow, activity, time_limit_ms, memory_bytes
                 FROM tasks WHERE state IN ('live', 'held')",
            )?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next()? {
                let id = r.get::<_, i64>(0)? as u64;
                let limits = Limits {
                    time_limit_ms: r.get::<_, Option<i64>>(14)?.map(|v| v.max(0) as u64),
                    memory_bytes: r.get::<_, Option<i64>>(15)?.map(|v| v.max(0) as u64),
                };
                let user: i64 = r.get(1)?;
                let (name, command): (String, String) = (r.get(3)?, r.get(4)?);
                let (stage_in, stage_out): (Option<String>, Option<String>) = (r.get(5)?, r.get(6)?);
                let submit_ms: i64 = r.get(7)?;
                let state: String = r.get(9)?;
                if state == "live" {
                    let core = TaskId(r.get::<_, Option<i64>>(8)?.map_or(id, |c| c as u64));
                    if core.0 != id {
                        self.core_of.insert(id, core);
                        self.public_of.insert(core, id);
                    }
                    self.tasks.insert(
                        core,
                        Live_ {
                            public: id,
                            user,
                            name,
                            command,
                            stage_in,
                            stage_out,
                            submit_ms,
                            limits,
                        },
                    );
                } else {
                    self.held.insert(
                        id,
                        Held {
                            user,
                            org: r.get::<_, i64>(2)? as u32,
                            name,
                            command,
                            stage_in,
                            stage_out,
                            priority: r.get(10)?,
                            optional: r.get::<_, i64>(11)? != 0,
                            submit_ms,
                            limits,
                            workflow: WorkflowRef {
                                workflow: WorkflowId(r.get::<_, Option<i64>>(12)?.unwrap_or(0) as u32),
                                activity: r.get::<_, Option<i64>>(13)?.unwrap_or(0) as u32,
                            },
                            parents: Vec::new(),
                            pending: 0,
                        },
                    );
                }
            }
        }
        self.next_id = conn.query_row("SELECT coalesce(max(id), 0) FROM tasks", [], |r| {
            r.get::<_, i64>(0)
        })? as u64
            + 1;
        self.next_workflow = conn.query_row("SELECT coalesce(max(id), 0) FROM workflows", [], |r| {
            r.get::<_, i64>(0)
        })? as u32
            + 1;
        // Held tasks against their parents' rows: what was not settled
        // before a crash is settled now.
        {
            let mut q = conn.prepare_cached(
                "SELECT p.parent, t.state FROM task_parents p LEFT JOIN tasks t ON t.id = p.parent
                 WHERE p.child = ?1 ORDER BY p.parent",
            )?;
            let mut ids: Vec<u64> = self.held.keys().copied().collect();
            ids.sort_unstable();
            for child in ids {
                let mut parents = Vec::new();
                let mut pending = 0;
                let mut rows = q.query([child as i64])?;
                while let Some(r) = rows.next()? {
                    let parent = r.get::<_, i64>(0)? as u64;
                    let state: Option<String> = r.get(1)?;
                    parents.push(parent);
                    match state.as_deref() {
                        Some("completed") => {}
                        Some("held" | "live") => {
                            pending += 1;
                            self.children.entry(parent).or_default().push(child);
                        }
                        Some(s) => self.doomed.push((child, parent_reason(parent, s))),
                        None => self
                            .doomed
                            .push((child, format!("parent task {parent} is unknown"))),
                    }
                }
                let h = self.held.get_mut(&child).expect("loaded above");
                h.parents = parents;
                h.pending = pending;
                if pending == 0 {
                    self.ready.insert(child);
                }
            }
        }
        // Counts of ended and held tasks; live ones come from the core.
        {
            let mut q = conn.prepare("SELECT user_id, state, count(*) FROM tasks GROUP BY user_id, state")?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next()? {
                let state: String = r.get(1)?;
                if let Some(st) = St::of_row(&state) {
                    self.counts.add(r.get(0)?, st, r.get::<_, i64>(2)? as u64);
                }
            }
        }
        // Satisfaction: its integrals from the tables, the rest from the core.
        let clock: Option<(f64, i64)> = conn
            .query_row("SELECT g, at_ms FROM share_clock WHERE id = 0", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let (g, at) = clock.unwrap_or((0.0, self.live.now().millis()));
        self.sat = Satisfaction {
            g,
            at,
            ..Satisfaction::default()
        };
        {
            let mut q = conn.prepare("SELECT user_id, allocated_ms, deserved, base FROM shares")?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next()? {
                self.sat.users.insert(
                    r.get(0)?,
                    Share {
                        allocated: r.get(1)?,
                        deserved: r.get(2)?,
                        base: r.get(3)?,
                        ..Share::default()
                    },
                );
            }
        }
        // Which worker runs what, and since when: from the core's state.
        let view = self.live.core().view();
        self.sat.slots = view.total_slots() as i64;
        for id in self.live.core().live_task_ids() {
            let Some(t) = view.task(id) else { continue };
            let user = t.spec().user().0;
            let share = self.sat.users.entry(user).or_insert_with(|| Share {
                base: g,
                ..Share::default()
            });
            share.live += 1;
            match t.start() {
                Some(start) => {
                    share.running += 1;
                    share.start_sum += start.millis();
                    self.run_start.insert(id, (user, start.millis()));
                    self.counts.add(user, St::Running, 1);
                }
                None => self.counts.add(user, St::Waiting, 1),
            }
            if let Some(&s) = t.held_slots().first()
                && let Some(&w) = self.slot_worker.get(&s)
            {
                self.running.entry(w).or_default().insert(id);
                self.runs_on.insert(id, w);
                // Handed before the restart, most likely: a stop kills it.
                self.handed.insert(id, (w, t.attempts()));
            }
        }
        self.sat.present = self.sat.users.values().filter(|s| s.live > 0).count() as u64;
        Ok(())
    }

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

    /// Who holds `token`: a token of the store, or a worker's session.
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>, ApiError> {
        if let Some(p) = self
            .live
            .store()
            .authenticate(token)
            .map_err(ApiError::internal)?
        {
            return Ok(Some(p));
        }
        let h = hash(token.trim());
        Ok(self.sessions.get(&h).and_then(|&worker| {
            let w = self.workers.get(&worker)?;
            Some(Principal::Session { org: w.org, worker })
        }))
    }

    pub fn add_org(&self, name: &str) -> Reply<OrgReply> {
        let id = self.live.store().add_org(name)?;
        Ok(OrgReply {
            id,
            name: name.to_string(),
        })
    }

    pub fn add_user(&self, name: &str, org: &str) -> Reply<UserReply> {
        self.not_removed_org(org)?;
        let token = self.live.store().add_user(name, org)?;
        let id = self
            .live
            .store()
            .conn()
            .query_row("SELECT id FROM users WHERE name = ?1", [name], |r| r.get(0))
            .map_err(ApiError::internal)?;
        Ok(UserReply {
            id,
            name: name.into(),
            org: org.into(),
            token,
        })
    }

    pub fn worker_token(&self, org: &str) -> Reply<TokenReply> {
        self.not_removed_org(org)?;
        let token = self.live.store().worker_token(org)?;
        Ok(TokenReply {
            org: org.into(),
            token,
        })
    }

    /// Each task's limits: the operator's maximum when it gives none,
    /// refused over it.
    fn apply_limits(&self, tasks: &mut [NewTask]) -> Reply<()> {
        let max_time = self
            .settings
            .max_time_limit
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        for (i, t) in tasks.iter_mut().enumerate() {
            if t.time_limit_ms == Some(0) || t.memory_bytes == Some(0) {
                return Err(ApiError::bad(format!(
                    "request body: tasks[{i}]: a limit of 0 runs nothing; leave it out for the default"
                )));
            }
            if let (Some(asked), Some(max)) = (t.time_limit_ms, max_time)
                && asked > max
            {
                return Err(ApiError::bad(format!(
                    "request body: tasks[{i}].time_limit_ms: {asked}, at most {max} (serve --max-time-limit)"
                )));
            }
            if let (Some(asked), Some(max)) = (t.memory_bytes, self.settings.max_memory)
                && asked > max
            {
                return Err(ApiError::bad(format!(
                    "request body: tasks[{i}].memory_bytes: {asked}, at most {max} (serve --max-memory)"
                )));
            }
            t.time_limit_ms = t.time_limit_ms.or(max_time);
            t.memory_bytes = t.memory_bytes.or(self.settings.max_memory);
        }
        Ok(())
    }

    /// Refuses an organization the operator removed.
    fn not_removed_org(&self, org: &str) -> Reply<()> {
        if let Some(id) = self.live.store().org_id(org).map_err(ApiError::internal)?
            && self.removed("org", i64::from(id))?
        {
            return Err(ApiError::new(409, format!("organization `{org}` was removed")));
        }
        Ok(())
    }

    /// Organization names by id (for `/metrics`).
    pub fn org_names(&self) -> HashMap<u32, String> {
        self.names("SELECT id, name FROM orgs")
            .into_iter()
            .map(|(id, n)| (id as u32, n))
            .collect()
    }

    /// User names by id (for `/metrics`).
    pub fn user_names(&self) -> HashMap<i64, String> {
        self.names("SELECT id, name FROM users").into_iter().collect()
    }

    fn names(&self, sql: &str) -> Vec<(i64, String)> {
        let conn = self.live.store().conn();
        let Ok(mut q) = conn.prepare_cached(sql) else {
            return Vec::new();
        };
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map(|rows| rows.filter_map(Result::ok).collect())
            .unwrap_or_default()
    }

    /// Whether the worker is known, alive and of `org` (a poll renews its
    /// lease).
    fn check_worker(&mut self, worker: u64, org: u32) -> Reply<()> {
        match self.workers.get_mut(&worker) {
            None => Err(ApiError::not_found(format!("no worker {worker}"))),
            Some(w) if w.org != org => Err(ApiError::forbidden(format!(
                "worker {worker} belongs to another organization"
            ))),
            Some(w) if w.lost => Err(ApiError::new(
                410,
                format!("worker {worker} lost its lease: kill its tasks and register again"),
            )),
            Some(w) => {
                w.last_seen = Instant::now();
                Ok(())
            }
        }
    }

    /// Renews the lease of `worker` (of `org`, alive), as its report
    /// about to be applied will.
    pub fn touch(&mut self, worker: u64, org: u32) {
        if let Some(w) = self.workers.get_mut(&worker)
            && w.org == org
            && !w.lost
        {
            w.last_seen = Instant::now();
        }
    }

    /// Assignments not yet handed to `worker`, and its handed runs
    /// stopped since its last poll (renews its lease). A worker never gets
    /// more runs than its slots: a full one gets kills only.
    pub fn poll(&mut self, worker: u64, org: u32) -> Reply<PollReply> {
        self.check_worker(worker, org)?;
        let view = self.live.core().view();
        self.polls += 1;
        let seq = self.polls;
        let mut out = Vec::new();
        let mut bytes = 0;
        if let Some(set) = self.running.get(&worker) {
            for &id in set {
                let Some(t) = view.task(id) else { continue };
                let attempt = t.attempts();
                if self.delivered.contains(&(id, attempt)) {
                    continue;
                }
                let Some(d) = self.tasks.get(&id) else { continue };
                let size = d.command.len()
                    + d.stage_in.as_ref().map_or(0, String::len)
                    + d.stage_out.as_ref().map_or(0, String::len)
                    + d.name.len();
                if !out.is_empty()
                    && (out.len() >= MAX_ASSIGN_PER_POLL || bytes + size > MAX_POLL_SCRIPT_BYTES)
                {
                    break; // the next poll takes the rest
                }
                bytes += size;
                self.delivered.insert((id, attempt));
                self.handed_in.insert(id, seq);
                self.handed.insert(id, (worker, attempt));
                out.push(Assignment {
                    task: d.public,
                    attempt,
                    name: d.name.clone(),
                    command: d.command.clone(),
                    stage_in: d.stage_in.clone(),
                    stage_out: d.stage_out.clone(),
                    time_limit_ms: d.limits.time_limit_ms,
                    memory_bytes: d.limits.memory_bytes,
                });
            }
        }
        Ok(PollReply {
            assign: out,
            kill: self.kills.remove(&worker).unwrap_or_default(),
            seq,
        })
    }

    /// The task as its owner sees it.
    fn task_out(&self, id: u64) -> Reply<TaskOut> {
        if let Some(h) = self.held.get(&id) {
            return Ok(TaskOut {
                id,
                name: h.name.clone(),
                user: h.user,
                org: h.org,
                state: "held".into(),
                attempts: 0,
                exit_code: None,
                signal: None,
                submit_ms: h.submit_ms,
                start_ms: None,
                end_ms: None,
                command: h.command.clone(),
                workflow: Some(h.workflow.workflow.0),
                reason: None,
            });
        }
        if let Some((core, d)) = self.live_task(id) {
            let view = self.live.core().view();
            let t = view.task(core);
            let spec = t.map(|t| t.spec());
            return Ok(TaskOut {
                id,
                name: d.name.clone(),
                user: d.user,
                org: spec.as_ref().map(|s| s.org().0).unwrap_or(0),
                state: if t.is_some_and(|t| t.is_running()) {
                    "running".into()
                } else {
                    "waiting".into()
                },
                attempts: t.map(|t| t.attempts()).unwrap_or(0),
                exit_code: None,
                signal: None,
                submit_ms: d.submit_ms,
                start_ms: t.and_then(|t| t.last_start()).map(|s| s.millis()),
                end_ms: None,
                command: d.command.clone(),
                workflow: spec.and_then(|s| s.workflow()).map(|w| w.workflow.0),
                reason: None,
            });
        }
        self.live
            .store()
            .conn()
            .query_row(&format!("{TASK_COLUMNS} WHERE id = ?1"), [id as i64], row_task)
            .optional()
            .map_err(ApiError::internal)?
            .ok_or_else(|| ApiError::not_found(format!("no task {id}")))
    }

    /// Task `id`, if `who` may see it.
    pub fn task(&self, who: &Principal, id: u64) -> Reply<TaskOut> {
        let t = self.task_out(id)?;
        allowed(who, t.user, id)?;
        Ok(t)
    }

    /// Every task of `who` (all of them for the admin), in one list.
    pub fn tasks(&self, who: &Principal) -> Reply<Vec<TaskOut>> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = self.tasks_page(who, after, MAX_TASKS_PAGE)?;
            out.extend(page);
            match next {
                Some(n) => after = Some(n),
                None => return Ok(out),
            }
        }
    }

    /// The tasks of `who` (all of them for the admin) with ids over `after`,
    /// by id, at most `limit` of them; and the id to pass as `after` for the
    /// next page (`None`: this page is the last).
    pub fn tasks_page(
        &self,
        who: &Principal,
        after: Option<u64>,
        limit: u32,
    ) -> Reply<(Vec<TaskOut>, Option<u64>)> {
        let user = match who {
            Principal::Admin => None,
            Principal::User { id, .. } => Some(*id),
            Principal::Worker { .. } | Principal::Session { .. } => {
                return Err(ApiError::forbidden("workers have no tasks"));
            }
        };
        // One row more than the page: whether another page follows.
        let (after, take) = (
            after.map_or(-1, |a| a.min(i64::MAX as u64) as i64),
            i64::from(limit) + 1,
        );
        let conn = self.live.store().conn();
        // Two statements, not `?1 IS NULL OR user_id = ?1`: each walks its
        // own index (the rowid; `tasks_user`) from `after` on.
        let mut q = match user {
            None => conn.prepare_cached(&format!("{TASK_COLUMNS} WHERE id > ?1 ORDER BY id LIMIT ?2")),
            Some(_) => conn.prepare_cached(&format!(
                "{TASK_COLUMNS} WHERE user_id = ?3 AND id > ?1 ORDER BY id LIMIT ?2"
            )),
        }
        .map_err(ApiError::internal)?;
        let rows = match user {
            None => q.query_map(rusqlite::params![after, take], row_task),
            Some(u) => q.query_map(rusqlite::params![after, take, u], row_task),
        }
        .map_err(ApiError::internal)?;
        let mut out = Vec::new();
        for r in rows {
            let t = r.map_err(ApiError::internal)?;
            if t.state == "live" || t.state == "held" {
                out.push(self.task_out(t.id)?);
            } else {
                out.push(t);
            }
        }
        let next = if out.len() > limit as usize {
            out.truncate(limit as usize);
            out.last().map(|t| t.id)
        } else {
            None
        };
        Ok((out, next))
    }

    /// `GET /v1/tasks?after=ID&limit=N`: [`Broker::tasks_page`], with the
    /// users' names for the admin.
    pub fn task_list(&self, who: &Principal, after: Option<u64>, limit: u32) -> Reply<TasksReply> {
        let (tasks, next) = self.tasks_page(who, after, limit)?;
        let mut users = BTreeMap::new();
        if matches!(who, Principal::Admin) {
            let names = self.user_names();
            for t in &tasks {
                if let Some(n) = names.get(&t.user) {
                    users.entry(t.user).or_insert_with(|| n.clone());
                }
            }
        }
        Ok(TasksReply { tasks, users, next })
    }

    /// Counts by state for `who`: kept as tasks change state, so O(1)
    /// (plus the workers).
    pub fn status(&self, who: &Principal) -> Reply<StatusReply> {
        let c = match who {
            Principal::Admin => self.counts.all,
            Principal::User { id, .. } => self.counts.users.get(id).copied().unwrap_or_default(),
            Principal::Worker { .. } | Principal::Session { .. } => {
                return Err(ApiError::forbidden("workers have no tasks"));
            }
        };
        let view = self.live.core().view();
        Ok(StatusReply {
            held: c.get(St::Held),
            waiting: c.get(St::Waiting),
            running: c.get(St::Running),
            completed: c.get(St::Completed),
            failed: c.get(St::Failed),
            cancelled: c.get(St::Cancelled),
            killed: c.get(St::Killed),
            rejected: c.get(St::Rejected),
            workers: self.worker_count() as u64,
            slots: view.total_slots() as u64,
            busy_slots: view.busy_slots(),
        })
    }

    /// The state of task `id` in a word (`held`, `waiting`, `running`, or
    /// how it ended).
    fn state_of(&self, id: u64) -> String {
        if self.held.contains_key(&id) {
            return "held".into();
        }
        if let Some((core, _)) = self.live_task(id) {
            let running = self.live.core().view().task(core).is_some_and(|t| t.is_running());
            return if running { "running" } else { "waiting" }.into();
        }
        self.live
            .store()
            .conn()
            .query_row("SELECT state FROM tasks WHERE id = ?1", [id as i64], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .ok()
            .flatten()
            .unwrap_or_else(|| "unknown".into())
    }

    /// `user`'s satisfaction now (see `Satisfaction`); `None` while
    /// nothing is deserved yet.
    pub fn satisfaction(&self, user: i64) -> Option<f64> {
        self.sat.value(user, self.clock().millis())
    }

    /// Every user's satisfaction now, by user id (users to whom nothing is
    /// deserved yet are left out).
    pub fn satisfactions(&self) -> Vec<(i64, f64)> {
        let now = self.clock().millis();
        let mut v: Vec<(i64, f64)> = self
            .sat
            .users
            .keys()
            .filter_map(|&u| self.sat.value(u, now).map(|s| (u, s)))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// Every user's satisfaction terms now: (user id, allocated, deserved),
    /// slot-milliseconds, by user id (to sum them by organization).
    pub fn satisfaction_parts(&self) -> Vec<(i64, f64, f64)> {
        let now = self.clock().millis();
        let mut v: Vec<(i64, f64, f64)> = self
            .sat
            .users
            .keys()
            .filter_map(|&u| self.sat.parts(u, now).map(|(a, d)| (u, a, d)))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// Why task `id` is not running (or where it runs), with its user's
    /// satisfaction and, while it has not ended, the policies' fairness
    /// state that concerns it.
    pub fn explain(&self, who: &Principal, id: u64) -> Reply<serde_json::Value> {
        let t = self.task(who, id)?;
        let mut v = self.explain_state(&t, id)?;
        v["user_satisfaction"] = serde_json::json!(self.satisfaction(t.user));
        if let Some(w) = t.workflow {
            v["workflow"] = serde_json::json!(w);
        }
        let orgs = self.org_names();
        v["org"] = serde_json::json!(t.org);
        if let Some(name) = orgs.get(&t.org) {
            v["org_name"] = serde_json::json!(name);
        }
        if matches!(t.state.as_str(), "held" | "waiting" | "running") {
            v["fairness"] = serde_json::Value::Object(self.fairness(t.org, &orgs));
        }
        Ok(v)
    }

    /// The policies' gauges (what `/metrics` shows as `fairsched_policy_*`)
    /// that concern organization `org`: those about no one in particular
    /// under their name, those about `org` as `its_NAME`, and every
    /// organization's as `NAME_by_org` (by organization name), to compare.
    /// An organization a policy has recorded nothing for yet (none of its
    /// tasks has started) counts 0, as the policies count it (fair-share's
    /// usage, DIRECTCONTR's φ and ψ).
    fn fairness(&self, org: u32, names: &HashMap<u32, String>) -> serde_json::Map<String, serde_json::Value> {
        let name_of = |o: u32| names.get(&o).cloned().unwrap_or_else(|| o.to_string());
        let mut out = serde_json::Map::new();
        let mut by_org: BTreeMap<&'static str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
        for g in self.live.core().gauges() {
            match g.key {
                None => {
                    out.insert(g.name.to_string(), serde_json::json!(g.value));
                }
                Some(("org", o)) => {
                    by_org
                        .entry(g.name)
                        .or_default()
                        .insert(name_of(o as u32), serde_json::json!(g.value));
                    if o == org as i64 {
                        out.insert(format!("its_{}", g.name), serde_json::json!(g.value));
                    }
                }
                Some(_) => {}
            }
        }
        for (name, mut all) in by_org {
            out.entry(format!("its_{name}")).or_insert(serde_json::json!(0.0));
            for &o in names.keys() {
                all.entry(name_of(o)).or_insert(serde_json::json!(0.0));
            }
            out.insert(format!("{name}_by_org"), serde_json::Value::Object(all));
        }
        out
    }

    /// How the order policy `spec` picks, from its registry entry (a
    /// policy the registry does not know: by priority, as the queue count
    /// assumes).
    fn picks(&self, spec: &str) -> Picks {
        let name = spec.split('[').next().unwrap_or(spec).trim();
        self.settings
            .registry
            .entry(Kind::Order, name)
            .map_or(Picks::Priority, |e| e.picks)
    }

    fn explain_state(&self, t: &TaskOut, id: u64) -> Reply<serde_json::Value> {
        let cfg = self.live.store().config();
        let policy = serde_json::json!({
            "order": cfg.order, "allocate": cfg.allocate, "control": cfg.control,
        });
        if let Some(h) = self.held.get(&id) {
            let parents: Vec<(u64, String)> = h.parents.iter().map(|&p| (p, self.state_of(p))).collect();
            let waiting: Vec<&(u64, String)> = parents.iter().filter(|(_, s)| s != "completed").collect();
            let list: Vec<String> = waiting.iter().map(|(p, s)| format!("task {p} ({s})")).collect();
            return Ok(serde_json::json!({
                "task": id, "state": "held", "policy": policy,
                "parents": parents.iter().map(|(p, s)| serde_json::json!({"task": p, "state": s})).collect::<Vec<_>>(),
                "waiting_for": waiting.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
                "why": format!(
                    "it is held until its parents complete: it waits for {}",
                    list.join(", ")
                ),
            }));
        }
        let view = self.live.core().view();
        let tv = self.live_task(id).and_then(|(core, _)| view.task(core));
        let Some(tv) = tv else {
            let why = match &t.reason {
                Some(r) => format!("it has ended ({}: {r})", t.state),
                None => format!("it has ended ({})", t.state),
            };
            return Ok(serde_json::json!({
                "task": id, "state": t.state, "policy": policy, "reason": t.reason,
                "why": why,
            }));
        };
        if tv.is_running() {
            let w = tv
                .held_slots()
                .first()
                .and_then(|s| self.slot_worker.get(s))
                .copied();
            return Ok(serde_json::json!({
                "task": id, "state": "running", "policy": policy, "worker": w,
                "attempts": tv.attempts(),
                "why": "it is running",
            }));
        }
        // Ahead of it under priority, then submission order; and in
        // submission order alone.
        let (prio, seq) = (tv.priority(), tv.seq());
        let mut ahead = 0u64;
        let mut earlier = 0u64;
        let mut ahead_same_user = 0u64;
        let mut user_running = 0u64;
        let mut org_running = 0u64;
        for other in self.live.core().live_task_ids() {
            let Some(o) = view.task(other) else { continue };
            if o.is_running() {
                if o.spec().user() == tv.spec().user() {
                    user_running += 1;
                }
                if o.org() == tv.org() {
                    org_running += 1;
                }
                continue;
            }
            if o.seq() < seq {
                earlier += 1;
            }
            if o.priority() > prio || (o.priority() == prio && o.seq() < seq) {
                ahead += 1;
                if o.spec().user() == tv.spec().user() {
                    ahead_same_user += 1;
                }
            }
        }
        let free = view.total_slots() as u64 - view.busy_slots();
        let order = &cfg.order;
        let why = if view.total_slots() == 0 {
            "no worker has joined: there are no slots".to_string()
        } else if free == 0 {
            let slots = view.total_slots();
            match self.picks(order) {
                Picks::Submission => format!(
                    "all {slots} slots are busy; {earlier} waiting task(s) were submitted before it, and the `{order}` policy starts them first"
                ),
                Picks::Priority => format!(
                    "all {slots} slots are busy; {ahead} waiting task(s) are ahead of it by priority then submission order, and the `{order}` policy starts them first"
                ),
                Picks::Weighs(what) => format!(
                    "all {slots} slots are busy; {ahead} waiting task(s) are ahead of it by priority then submission order, but the `{order}` policy may pick differently: {what} (see `fairness`)"
                ),
            }
        } else {
            match self.picks(order) {
                Picks::Weighs(_) => format!(
                    "{free} slot(s) are free but the `{order}` policy keeps it waiting (its user or organization is ahead of its fair share)"
                ),
                _ => format!(
                    "{free} slot(s) are free: the `{order}` policy starts it at the broker's next decision"
                ),
            }
        };
        Ok(serde_json::json!({
            "task": id, "state": "waiting", "policy": policy,
            "priority": prio,
            "ahead_by_priority_then_fifo": ahead,
            "ahead_in_submission_order": earlier,
            "ahead_of_same_user": ahead_same_user,
            "user_running": user_running,
            "org": tv.org().0,
            "org_running": org_running,
            "org_slots": view.org_slots(tv.org()),
            "slots": view.total_slots(),
            "free_slots": free,
            "waiting_since_ms": tv.submit().millis(),
            "why": why,
        }))
    }

    /// Workers whose lease ran out, timers that are due: the internal
    /// steps to take now.
    pub fn due(&mut self) -> Vec<Write> {
        let now = Instant::now();
        let mut out: Vec<Write> = self
            .workers
            .iter()
            .filter(|(_, w)| !w.lost && now.duration_since(w.last_seen) > w.lease)
            .map(|(&id, w)| Write::Leave {
                worker: id,
                org: w.org,
            })
            .collect();
        out.sort_by_key(|w| match w {
            Write::Leave { worker, .. } => *worker,
            _ => 0,
        });
        out
    }

    /// When the next timer is due (core time).
    pub fn next_timer(&self) -> Option<Time> {
        self.timers.iter().map(|t| t.0).min()
    }

    /// Held tasks are waiting to be released or cancelled (a commit that
    /// failed is tried again at the next batch).
    pub fn unsettled(&self) -> bool {
        !self.ready.is_empty() || !self.doomed.is_empty()
    }

    /// Prepares, commits and applies a batch of writes: one step each, all
    /// in one transaction. Due timers ride along as their own steps. Then
    /// held tasks whose parents ended in it are released or cancelled
    /// ([`Broker::settle`]).
    pub fn write(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
        let replies = self.write_unsettled(writes);
        self.settle();
        replies
    }

    /// [`Broker::write`] without the settling.
    fn write_unsettled(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
        let now = self.clock();
        self.batch_queued.clear();
        let plans: Vec<Reply<Plan>> = writes.into_iter().map(|w| self.plan(w)).collect();
        self.batch_queued.clear();
        self.commit(plans, now, true)
    }

    /// Releases held tasks whose parents have all completed (a step
    /// submitting them to the core) and cancels those with a parent that
    /// ended otherwise, with their held descendants (in the tables only),
    /// until nothing is left to do; one commit per round. A failed commit
    /// leaves them for the next batch.
    pub fn settle(&mut self) {
        while self.unsettled() {
            let now = self.clock();
            let plans = self.plan_settle();
            if plans.is_empty() {
                continue;
            }
            let replies = self.commit(plans.into_iter().map(Ok).collect(), now, false);
            if let Some(Err(e)) = replies.iter().find(|r| r.is_err()) {
                tracing::warn!(
                    "releasing or cancelling held workflow tasks: {}; tried again at the next batch",
                    e.message
                );
                return;
            }
        }
    }

    /// Held tasks to cancel from `stack` (task, why), with their held
    /// descendants.
    fn doom(&self, stack: &mut Vec<(u64, Option<String>)>, out: &mut Vec<(u64, Option<String>)>) {
        let mut seen = HashSet::new();
        while let Some((id, why)) = stack.pop() {
            if !self.held.contains_key(&id) || !seen.insert(id) {
                continue;
            }
            for &k in self.children.get(&id).into_iter().flatten() {
                stack.push((k, Some(parent_reason(id, "cancelled"))));
            }
            out.push((id, why));
        }
    }

    /// The plans of one round of [`Broker::settle`] (none when what was
    /// pending no longer applies: its tasks ended meanwhile).
    fn plan_settle(&mut self) -> Vec<Plan> {
        let mut cancel = Vec::new();
        let mut stack: Vec<(u64, Option<String>)> = self
            .doomed
            .iter()
            .rev()
            .map(|(id, why)| (*id, Some(why.clone())))
            .collect();
        self.doom(&mut stack, &mut cancel);
        let cancelled: HashSet<u64> = cancel.iter().map(|c| c.0).collect();
        let ready: Vec<u64> = self
            .ready
            .iter()
            .copied()
            .filter(|id| self.held.contains_key(id) && !cancelled.contains(id))
            .collect();
        // What no longer applies goes.
        let held = &self.held;
        self.ready
            .retain(|id| held.contains_key(id) && !cancelled.contains(id));
        if cancel.is_empty() {
            self.doomed.clear();
        }
        let mut events = Vec::with_capacity(ready.len());
        let mut release = Vec::with_capacity(ready.len());
        for id in ready {
            let core = TaskId(self.take_id());
            let h = &self.held[&id];
            let mut spec = TaskSpec::new(core.0, h.user, h.org);
            spec.priority = h.priority;
            spec.optional = h.optional;
            spec.workflow = Some(h.workflow);
            release.push((id, core, h.user));
            events.push(Event::Submit(spec));
            // Known before the commit: an end in the same step (a
            // rejection) is written under the public id.
            self.public_of.insert(core, id);
        }
        let mut plans = Vec::new();
        if !release.is_empty() {
            plans.push(Plan {
                events,
                kind: PlanKind::Release(release),
            });
        }
        if !cancel.is_empty() {
            plans.push(Plan {
                events: Vec::new(),
                kind: PlanKind::Withdraw { cancel, asked: None },
            });
        }
        plans
    }

    /// Commits `plans` (and, with `timers`, the timers due) in one
    /// transaction and applies what was committed. A plan about held tasks
    /// only ([`Plan::tables_only`]) writes the service's tables alone.
    fn commit(&mut self, plans: Vec<Reply<Plan>>, now: Time, timers: bool) -> Vec<Reply<Written>> {
        let mut steps: Vec<(Time, Vec<Event>)> = Vec::new();
        for p in plans.iter().flatten() {
            if !p.tables_only() && !p.noop() {
                steps.push((now, p.events.clone()));
            }
        }
        let due: Vec<(Time, u64)> = if timers {
            let (due, rest) = self.timers.iter().partition(|t| t.0 <= now);
            self.timers = rest;
            due
        } else {
            Vec::new()
        };
        for (_, token) in &due {
            steps.push((now, vec![Event::Timer { token: *token }]));
        }
        let stepped: Vec<&Plan> = plans
            .iter()
            .flatten()
            .filter(|p| !p.tables_only() && !p.noop())
            .collect();
        let tables_only: Vec<&Plan> = plans.iter().flatten().filter(|p| p.tables_only()).collect();
        let now_ms = now.millis();
        let mut staged: Option<Staged> = None;
        let mut ran = false;
        let known = Known {
            tasks: &self.tasks,
            run_start: &self.run_start,
            workers: &self.workers,
            public_of: &self.public_of,
        };
        let sat = &self.sat;
        // While a worker drains, any step may end a run on one of its
        // slots, and the slot leaves with it.
        let draining = self.workers.values().any(|w| w.draining && !w.lost);
        let results = if steps.is_empty() {
            Vec::new()
        } else {
            self.live.commit_with(steps, |tx, outcomes| {
                ran = true;
                let mut delta = ShareDelta::default();
                let mut batch = Batch::default();
                if draining {
                    delta.slots_moved = true;
                }
                for (plan, actions) in stepped.iter().zip(outcomes) {
                    if let Some(actions) = actions {
                        persist(tx, plan, now_ms)?;
                        persist_actions(tx, actions, known.public_of)?;
                        known.plan_delta(plan, &mut delta, &mut batch);
                        known.actions_delta(actions, now_ms, &mut delta, &mut batch);
                    }
                }
                for actions in outcomes.iter().skip(stepped.len()).flatten() {
                    persist_actions(tx, actions, known.public_of)?;
                    known.actions_delta(actions, now_ms, &mut delta, &mut batch);
                }
                for plan in &tables_only {
                    persist(tx, plan, now_ms)?;
                }
                if !delta.is_empty() {
                    let st = sat.preview(now_ms, &delta);
                    persist_shares(tx, &st)?;
                    staged = Some(st);
                }
                Ok(())
            })
        };
        let logged = results.iter().any(|r| r.is_ok());
        if logged && let Some(st) = staged {
            self.sat.install(st);
            self.sat.slots = self.live.core().view().total_slots() as i64;
        }
        // Plans without events: written with the steps, or on their own.
        let tables: Reply<()> = if tables_only.is_empty() {
            Ok(())
        } else if ran {
            match results.iter().find_map(|r| r.as_ref().err()) {
                Some(e) if !logged => Err(ApiError::internal(e.to_string())),
                _ => Ok(()),
            }
        } else {
            let conn = self.live.store().conn();
            conn.unchecked_transaction()
                .and_then(|tx| {
                    for plan in &tables_only {
                        persist(&tx, plan, now_ms)?;
                    }
                    tx.commit()
                })
                .map_err(|e| ApiError::internal(format!("{}: {e}", self.live.store().path().display())))
        };
        if ran || !tables_only.is_empty() {
            self.counters.commits += 1;
        }
        let mut results = results.into_iter();
        let mut replies = Vec::with_capacity(plans.len());
        for p in plans {
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    replies.push(Err(e));
                    continue;
                }
            };
            if p.noop() {
                replies.push(Ok(self.apply(p, &[], now)));
                continue;
            }
            if p.tables_only() {
                replies.push(match &tables {
                    Ok(()) => Ok(self.apply(p, &[], now)),
                    Err(e) => Err(e.clone()),
                });
                continue;
            }
            let result = results.next().expect("a result per step");
            if result.is_err()
                && let PlanKind::Submit {
                    user, key: Some(k), ..
                } = &p.kind
            {
                // Not submitted: a retry with this key submits.
                self.submit_keys.remove(&(*user, k.key.clone()));
            }
            match result {
                Ok(actions) => {
                    self.counters.steps += 1;
                    let reply = self.apply(p, &actions, now);
                    replies.push(Ok(reply));
                }
                Err(LiveError::Refused(m)) if m.starts_with("not logged") => {
                    replies.push(Err(ApiError::internal(m)))
                }
                Err(e) => replies.push(Err(ApiError::bad(e.to_string()))),
            }
        }
        for ((at, token), r) in due.into_iter().zip(results) {
            match r {
                Ok(actions) => self.after(&actions, now),
                // Not logged: try again at the next batch.
                Err(_) => self.timers.push((at, token)),
            }
        }
        replies
    }

    /// The events of a write, checked against the state.
    fn plan(&mut self, w: Write) -> Reply<Plan> {
        match w {
            Write::Submit {
                user,
                org,
                tasks,
                workflow,
                key,
            } => {
                if let Some(k) = &key
                    && let Some(done) = self.submit_keys.get(&(user, k.key.clone()))
                {
                    if done.digest != k.digest {
                        return Err(ApiError::new(
                            409,
                            format!(
                                "Idempotency-Key `{}` was used for another request: a retry sends the same body, a new request a new key",
                                k.key
                            ),
                        ));
                    }
                    return Ok(Plan {
                        events: Vec::new(),
                        kind: PlanKind::Replayed {
                            ids: done.ids.clone(),
                            workflow: done.workflow,
                        },
                    });
                }
                check_tasks(&tasks, workflow.as_ref())
                    .map_err(|m| ApiError::bad(format!("request body: {m}")))?;
                let max = self.settings.max_user_priority;
                if let Some((i, p)) = tasks
                    .iter()
                    .enumerate()
                    .find_map(|(i, t)| t.priority.filter(|&p| p > max).map(|p| (i, p)))
                {
                    return Err(ApiError::forbidden(format!(
                        "tasks[{i}].priority: {p}; users may give at most {max} (serve --max-user-priority): lower your own tasks, not raise them over others'"
                    )));
                }
                let mut tasks = tasks;
                self.apply_limits(&mut tasks)?;
                let n = tasks.len() as u64;
                self.check_quota(user, org, n, &self.batch_queued)?;
                *self.batch_queued.entry(user).or_default() += n;
                let workflow = workflow.map(|w| {
                    let id = self.next_workflow;
                    self.next_workflow += 1;
                    (id, w)
                });
                let mut events = Vec::with_capacity(tasks.len());
                let mut ids: Vec<u64> = Vec::with_capacity(tasks.len());
                let mut parents: Vec<Vec<u64>> = Vec::with_capacity(tasks.len());
                for t in &tasks {
                    let id = self.take_id();
                    let mut ps: Vec<u64> = t.after.iter().map(|&i| ids[i as usize]).collect();
                    ps.sort_unstable();
                    ps.dedup();
                    ids.push(id);
                    if ps.is_empty() {
                        let mut spec = TaskSpec::new(id, user, org);
                        spec.priority = t.priority.unwrap_or(1);
                        spec.optional = t.optional;
                        spec.workflow = workflow.as_ref().map(|(w, _)| WorkflowRef {
                            workflow: WorkflowId(*w),
                            activity: t.activity.unwrap_or(0),
                        });
                        events.push(Event::Submit(spec));
                    }
                    parents.push(ps);
                }
                if let Some(k) = &key {
                    // Now, not when committed: a retry in the same batch
                    // is a replay too. Forgotten again if the commit fails.
                    self.submit_keys.insert(
                        (user, k.key.clone()),
                        Keyed {
                            digest: k.digest,
                            ids: ids.clone(),
                            workflow: workflow.as_ref().map(|(w, _)| *w),
                        },
                    );
                }
                Ok(Plan {
                    events,
                    kind: PlanKind::Submit {
                        user,
                        org,
                        tasks,
                        ids,
                        parents,
                        workflow,
                        key,
                    },
                })
            }
            Write::Cancel { who, task } => {
                if let Some(h) = self.held.get(&task) {
                    allowed(&who, h.user, task)?;
                    let mut cancel = Vec::new();
                    self.doom(&mut vec![(task, None)], &mut cancel);
                    return Ok(Plan {
                        events: Vec::new(),
                        kind: PlanKind::Withdraw {
                            cancel,
                            asked: Some(task),
                        },
                    });
                }
                let t = self.task_out(task)?;
                allowed(&who, t.user, task)?;
                let Some((core, _)) = self.live_task(task) else {
                    return Err(ApiError::new(
                        409,
                        format!("task {task} has already ended ({})", t.state),
                    ));
                };
                Ok(Plan {
                    events: vec![Event::Cancel { task: core }],
                    kind: PlanKind::Cancel(task),
                })
            }
            Write::Register { org, slots, host } => {
                if slots == 0 || slots > 4096 {
                    return Err(ApiError::bad("`slots`: expected 1 to 4096"));
                }
                let id = self.next_worker;
                self.next_worker += 1;
                let first = self.next_slot;
                self.next_slot += slots;
                Ok(Plan {
                    events: (0..slots)
                        .map(|_| Event::SlotJoin {
                            machine: MachineId(0),
                            owner: OrgId(org),
                        })
                        .collect(),
                    kind: PlanKind::Register {
                        id,
                        org,
                        host,
                        first,
                        slots,
                        lease_ms: self.settings.lease.as_millis() as u64,
                        session: crate::identity::new_token(),
                    },
                })
            }
            Write::Report { worker, org, body } => {
                self.check_worker(worker, org)?;
                let view = self.live.core().view();
                let mine = self.running.get(&worker);
                // The core id of a run this worker is running now.
                let current = |task: u64, attempt: u32| -> Option<TaskId> {
                    let (id, _) = self.live_task(task)?;
                    (mine.is_some_and(|m| m.contains(&id))
                        && view
                            .task(id)
                            .is_some_and(|t| t.is_running() && t.attempts() == attempt))
                    .then_some(id)
                };
                let mut events = Vec::new();
                let mut exits = Vec::new();
                let mut ended: HashSet<u64> = HashSet::new();
                // The phase each run is in: reported in this body, or before.
                let mut phases: HashMap<u64, Phase> = HashMap::new();
                for r in &body.reports {
                    if ended.contains(&r.task) {
                        continue; // duplicate: ignored
                    }
                    let Some(task) = current(r.task, r.attempt) else {
                        continue; // late or lost: ignored
                    };
                    let in_phase = |phases: &HashMap<u64, Phase>| {
                        phases
                            .get(&r.task)
                            .copied()
                            .or_else(|| view.task(task).and_then(|t| t.phase()).map(|(p, _)| p))
                    };
                    match r.event {
                        ReportEvent::Phase(p) => {
                            phases.insert(r.task, phase(p));
                            events.push(Event::Phase {
                                task,
                                phase: phase(p),
                            })
                        }
                        ReportEvent::Exit(code) => {
                            ended.insert(r.task);
                            let why = (code != 0)
                                .then(|| failure_reason(in_phase(&phases), &format!("exit {code}")));
                            events.push(if code == 0 {
                                Event::Complete { task }
                            } else {
                                Event::Fail { task }
                            });
                            exits.push((r.task, Some(code), None, why));
                        }
                        ReportEvent::Signal(sig) => {
                            ended.insert(r.task);
                            events.push(Event::Fail { task });
                            let why = failure_reason(in_phase(&phases), &format!("signal {sig}"));
                            exits.push((r.task, None, Some(sig), Some(why)));
                        }
                    }
                }
                // What it runs that it should not (cancelled, or not its).
                let kill: Vec<RunKey> = body
                    .running
                    .iter()
                    .filter(|r| current(r.task, r.attempt).is_none())
                    .copied()
                    .collect();
                // Runs handed to it that it does not list (nor end here).
                let listed: HashSet<RunKey> = body.running.iter().copied().collect();
                let mut missed = Vec::new();
                for &id in mine.into_iter().flatten() {
                    let Some(&(w, attempt)) = self.handed.get(&id) else {
                        continue; // not handed yet
                    };
                    let public = self.public_id(id);
                    let key = RunKey {
                        task: public,
                        attempt,
                    };
                    if w != worker || ended.contains(&public) || listed.contains(&key) {
                        continue;
                    }
                    // Written after the worker applied the reply that
                    // handed it (by this process: the high bits)?
                    let after = body.polled.is_some_and(|p| {
                        p >> 32 == self.polls >> 32 && self.handed_in.get(&id).is_some_and(|&h| p >= h)
                    });
                    if !after {
                        continue;
                    }
                    let n = self.misses.get(&id).filter(|m| m.0 == attempt).map_or(0, |m| m.1) + 1;
                    missed.push((id, attempt, n));
                    if n < MISSED_REPORTS {
                        continue;
                    }
                    let attempts = view.task(id).map_or(attempt, |t| t.attempts());
                    if attempts >= self.settings.max_attempts {
                        events.push(Event::Fail { task: id });
                        exits.push((
                            public,
                            None,
                            None,
                            Some(lost_reason(attempts, self.settings.max_attempts)),
                        ));
                    } else {
                        events.push(Event::Requeue { task: id });
                    }
                    tracing::warn!(
                        worker,
                        task = public,
                        attempt,
                        "the worker's last {MISSED_REPORTS} reports did not list this run: its assignment was lost; the run goes back to the queue"
                    );
                }
                let listed: Vec<TaskId> = listed.iter().filter_map(|r| current(r.task, r.attempt)).collect();
                Ok(Plan {
                    events,
                    kind: PlanKind::Report {
                        exits,
                        kill,
                        missed,
                        listed,
                    },
                })
            }
            Write::Leave { worker, org } => {
                match self.workers.get(&worker) {
                    Some(w) if w.org == org && !w.lost => {}
                    Some(w) if w.org != org => {
                        return Err(ApiError::forbidden(format!(
                            "worker {worker} belongs to another organization"
                        )));
                    }
                    Some(_) => return Err(ApiError::new(410, format!("worker {worker} already left"))),
                    None => return Err(ApiError::not_found(format!("no worker {worker}"))),
                }
                let view = self.live.core().view();
                let mut events = Vec::new();
                let mut failed = Vec::new();
                for &id in self.running.get(&worker).into_iter().flatten() {
                    let Some(t) = view.task(id) else { continue };
                    if t.attempts() >= self.settings.max_attempts {
                        events.push(Event::Fail { task: id });
                        failed.push((
                            self.public_id(id),
                            lost_reason(t.attempts(), self.settings.max_attempts),
                        ));
                    } else {
                        events.push(Event::Requeue { task: id });
                    }
                }
                for &slot in &self.workers[&worker].slots {
                    events.push(Event::SlotLeave { slot });
                }
                Ok(Plan {
                    events,
                    kind: PlanKind::Leave { worker, failed },
                })
            }
            Write::Drain { worker, org } => {
                self.check_worker(worker, org)?;
                let view = self.live.core().view();
                let events = self.workers[&worker]
                    .slots
                    .iter()
                    .filter(|&&s| view.slot_present(s))
                    .map(|&slot| Event::SlotDrain { slot })
                    .collect();
                Ok(Plan {
                    events,
                    kind: PlanKind::Drain { worker },
                })
            }
        }
    }

    /// Applies a committed write to the service's bookkeeping; its reply.
    fn apply(&mut self, p: Plan, actions: &[Action], now: Time) -> Written {
        let reply = match p.kind {
            PlanKind::Replayed { ids, workflow } => Written::Submitted { ids, workflow },
            PlanKind::Submit {
                user,
                org,
                tasks,
                ids,
                parents,
                workflow,
                ..
            } => {
                let held_before = self.held.len() as u64;
                for ((t, &id), ps) in tasks.into_iter().zip(&ids).zip(parents) {
                    if ps.is_empty() {
                        self.tasks.insert(
                            TaskId(id),
                            Live_ {
                                public: id,
                                user,
                                name: t.name.unwrap_or_default(),
                                command: t.command,
                                stage_in: t.stage_in,
                                stage_out: t.stage_out,
                                submit_ms: now.millis(),
                                limits: Limits {
                                    time_limit_ms: t.time_limit_ms,
                                    memory_bytes: t.memory_bytes,
                                },
                            },
                        );
                        self.counts.add(user, St::Waiting, 1);
                        continue;
                    }
                    for &parent in &ps {
                        self.children.entry(parent).or_default().push(id);
                    }
                    self.held.insert(
                        id,
                        Held {
                            user,
                            org,
                            name: t.name.unwrap_or_default(),
                            command: t.command,
                            stage_in: t.stage_in,
                            stage_out: t.stage_out,
                            priority: t.priority.unwrap_or(1),
                            optional: t.optional,
                            submit_ms: now.millis(),
                            limits: Limits {
                                time_limit_ms: t.time_limit_ms,
                                memory_bytes: t.memory_bytes,
                            },
                            workflow: WorkflowRef {
                                workflow: WorkflowId(workflow.as_ref().map_or(0, |w| w.0)),
                                activity: t.activity.unwrap_or(0),
                            },
                            pending: ps.len() as u32,
                            parents: ps,
                        },
                    );
                    self.counts.add(user, St::Held, 1);
                }
                if let Some(&first) = ids.first() {
                    let held = self.held.len() as u64 - held_before;
                    self.recent.note(
                        now.millis(),
                        What::Submitted {
                            user,
                            org,
                            first,
                            count: ids.len() as u64,
                            held,
                        },
                    );
                }
                Written::Submitted {
                    ids,
                    workflow: workflow.map(|w| w.0),
                }
            }
            PlanKind::Release(list) => {
                for (public, core, _) in list {
                    let Some(h) = self.held.remove(&public) else {
                        continue;
                    };
                    self.ready.remove(&public);
                    self.core_of.insert(public, core);
                    self.public_of.insert(core, public);
                    self.counts.shift(h.user, St::Held, St::Waiting);
                    self.recent.note(
                        now.millis(),
                        What::Released {
                            task: public,
                            user: h.user,
                        },
                    );
                    self.tasks.insert(
                        core,
                        Live_ {
                            public,
                            user: h.user,
                            name: h.name,
                            command: h.command,
                            stage_in: h.stage_in,
                            stage_out: h.stage_out,
                            submit_ms: h.submit_ms,
                            limits: h.limits,
                        },
                    );
                }
                Written::Settled
            }
            PlanKind::Withdraw { cancel, asked } => {
                for (id, _) in &cancel {
                    if let Some(h) = self.held.remove(id) {
                        self.recent.note(
                            now.millis(),
                            What::Ended {
                                task: *id,
                                user: h.user,
                                outcome: "cancelled",
                            },
                        );
                        self.counts.shift(h.user, St::Held, St::Cancelled);
                        *self.counters.ended.entry("cancelled").or_default() += 1;
                    }
                    self.children.remove(id);
                    self.ready.remove(id);
                }
                let held = &self.held;
                self.doomed.retain(|(id, _)| held.contains_key(id));
                match asked {
                    Some(task) => Written::Cancelled(self.task_out(task).unwrap_or_else(|e| TaskOut {
                        id: task,
                        state: format!("unknown: {}", e.message),
                        ..TaskOut::default()
                    })),
                    None => Written::Settled,
                }
            }
            PlanKind::Cancel(task) => {
                self.after(actions, now);
                return Written::Cancelled(self.task_out(task).unwrap_or_else(|e| TaskOut {
                    id: task,
                    state: format!("unknown: {}", e.message),
                    ..TaskOut::default()
                }));
            }
            PlanKind::Register {
                id,
                org,
                first,
                slots,
                session,
                ..
            } => {
                self.sessions.insert(hash(&session), id);
                self.recent.note(
                    now.millis(),
                    What::WorkerJoined {
                        worker: id,
                        org,
                        slots,
                    },
                );
                let slots: Vec<SlotId> = (first..first + slots).map(SlotId).collect();
                for &s in &slots {
                    self.slot_worker.insert(s, id);
                }
                self.workers.insert(
                    id,
                    Worker {
                        org,
                        lease: self.settings.lease,
                        slots,
                        last_seen: Instant::now(),
                        lost: false,
                        draining: false,
                    },
                );
                Written::Registered(RegisterReply {
                    worker: id,
                    session,
                    lease_ms: self.settings.lease.as_millis() as u64,
                    heartbeat_ms: (self.settings.lease.as_millis() as u64 / 3).max(1),
                })
            }
            PlanKind::Report {
                kill, missed, listed, ..
            } => {
                for id in listed {
                    self.misses.remove(&id);
                }
                for (id, attempt, n) in missed {
                    if n < MISSED_REPORTS {
                        self.misses.insert(id, (attempt, n));
                    } else {
                        self.misses.remove(&id);
                    }
                }
                Written::Reported(ReportReply { kill })
            }
            PlanKind::Leave { worker, .. } => {
                if let Some(w) = self.workers.get_mut(&worker) {
                    self.recent
                        .note(now.millis(), What::WorkerLeft { worker, org: w.org });
                    w.lost = true;
                    for s in &w.slots {
                        self.slot_worker.remove(s);
                    }
                }
                self.counters.requeued_lost += actions
                    .iter()
                    .filter(|a| matches!(a, Action::Stop { requeued: true, .. }))
                    .count() as u64;
                if let Some(set) = self.running.remove(&worker) {
                    for t in set {
                        self.runs_on.remove(&t);
                        self.handed.remove(&t);
                    }
                }
                // It kills everything on its 410.
                self.kills.remove(&worker);
                Written::Left
            }
            PlanKind::Drain { worker } => {
                let view = self.live.core().view();
                let w = self.workers.get_mut(&worker);
                let slots = w.map_or(0, |w| {
                    w.draining = true;
                    w.slots.iter().filter(|&&s| view.slot_present(s)).count() as u32
                });
                Written::Draining { slots }
            }
        };
        self.after(actions, now);
        reply
    }

    /// Bookkeeping from the core's actions: who runs what, timers,
    /// counters, held children of ended tasks.
    fn after(&mut self, actions: &[Action], now: Time) {
        for a in actions {
            match a {
                Action::Start { task, slots, .. } => {
                    if let Some(&w) = slots.first().and_then(|s| self.slot_worker.get(s)) {
                        self.running.entry(w).or_default().insert(*task);
                        self.runs_on.insert(*task, w);
                    }
                    self.generation += 1;
                    if let Some(d) = self.tasks.get(task) {
                        self.recent.note(
                            now.millis(),
                            What::Started {
                                task: d.public,
                                user: d.user,
                                worker: self.runs_on.get(task).copied(),
                            },
                        );
                        if self.run_start.insert(*task, (d.user, now.millis())).is_none() {
                            self.counts.shift(d.user, St::Waiting, St::Running);
                        }
                        // From the moment it was queued (a released
                        // workflow task: from its release).
                        let queued = self
                            .live
                            .core()
                            .view()
                            .task(*task)
                            .map_or(d.submit_ms, |t| t.submit().millis());
                        let ms = now.millis() - queued;
                        let b = LATENCY_BUCKETS_MS.iter().position(|&x| ms <= x);
                        if let Some(b) = b {
                            self.counters.dispatch[b] += 1;
                        }
                        self.counters.dispatch_sum_ms += ms;
                        self.counters.dispatch_count += 1;
                    }
                }
                Action::Stop { task, requeued, .. } => {
                    self.stop_handed(*task);
                    self.unrun(*task);
                    if let Some((user, _)) = self.run_start.remove(task) {
                        self.counts.shift(user, St::Running, St::Waiting);
                        if *requeued {
                            let task = self.public_id(*task);
                            self.recent.note(now.millis(), What::Requeued { task, user });
                        }
                    }
                }
                Action::Ended(r) => {
                    self.recent.note(
                        now.millis(),
                        What::Ended {
                            task: self.public_id(r.spec.id),
                            user: r.spec.user.0,
                            outcome: r.outcome.name(),
                        },
                    );
                    self.ended(r)
                }
                Action::Timer { at, token } => self.timers.push((*at, *token)),
                Action::Priority { .. } => {}
            }
        }
    }

    fn ended(&mut self, r: &EndRecord) {
        let core = r.spec.id;
        self.handed.remove(&core);
        self.misses.remove(&core);
        self.handed_in.remove(&core);
        self.unrun(core);
        let was_running = self.run_start.remove(&core).is_some();
        let public = self.public_id(core);
        self.tasks.remove(&core);
        self.core_of.remove(&public);
        self.public_of.remove(&core);
        let user = r.spec.user.0;
        let from = if was_running { St::Running } else { St::Waiting };
        self.counts.shift(user, from, St::of_outcome(r.outcome));
        *self.counters.ended.entry(r.outcome.name()).or_default() += 1;
        // Its held children: one parent fewer to wait for, or cancelled.
        let Some(kids) = self.children.remove(&public) else {
            return;
        };
        for k in kids {
            let Some(h) = self.held.get_mut(&k) else { continue };
            if r.outcome == Outcome::Completed {
                h.pending = h.pending.saturating_sub(1);
                if h.pending == 0 {
                    self.ready.insert(k);
                }
            } else {
                self.doomed.push((k, parent_reason(public, r.outcome.name())));
            }
        }
    }

    /// A running task stopped by the broker: if its run was handed to a
    /// worker still alive, that worker's next poll (woken now) kills it.
    /// (Runs a worker ends itself end without a stop.)
    fn stop_handed(&mut self, task: TaskId) {
        self.misses.remove(&task);
        self.handed_in.remove(&task);
        let Some((worker, attempt)) = self.handed.remove(&task) else {
            return;
        };
        if self.workers.get(&worker).is_none_or(|w| w.lost) {
            return;
        }
        let public = self.public_id(task);
        self.kills.entry(worker).or_default().push(RunKey {
            task: public,
            attempt,
        });
        self.generation += 1;
    }

    fn unrun(&mut self, task: TaskId) {
        if let Some(w) = self.runs_on.remove(&task)
            && let Some(set) = self.running.get_mut(&w)
        {
            set.remove(&task);
        }
    }

    /// Workers alive, for `/metrics`.
    pub fn worker_count(&self) -> usize {
        self.workers.values().filter(|w| !w.lost).count()
    }

    /// Live tasks by state: (waiting, running).
    pub fn live_counts(&self) -> (u64, u64) {
        let view = self.live.core().view();
        let running = view.busy_slots();
        (view.waiting_tasks(), running)
    }

    /// Held workflow tasks (all users).
    pub fn held_count(&self) -> u64 {
        self.counts.all.get(St::Held)
    }
}

/// What a commit's closure may read of the service while the core is
/// being stepped: enough to tell how a batch changes [`Satisfaction`] and
/// to write ended tasks under their public ids.
struct Known<'a> {
    tasks: &'a HashMap<TaskId, Live_>,
    run_start: &'a HashMap<TaskId, (i64, i64)>,
    workers: &'a HashMap<u64, Worker>,
    public_of: &'a HashMap<TaskId, u64>,
}

/// Runs started or stopped earlier in the batch, and the users of tasks
/// submitted in it.
#[derive(Default)]
struct Batch {
    runs: HashMap<TaskId, Option<(i64, i64)>>,
    users: HashMap<TaskId, i64>,
}

impl Known<'_> {
    fn plan_delta(&self, plan: &Plan, d: &mut ShareDelta, batch: &mut Batch) {
        match &plan.kind {
            PlanKind::Submit {
                user, ids, parents, ..
            } => {
                for (&id, ps) in ids.iter().zip(parents) {
                    if ps.is_empty() {
                        d.user(*user).live += 1;
                        batch.users.insert(TaskId(id), *user);
                    }
                }
            }
            PlanKind::Release(list) => {
                for &(_, core, user) in list {
                    d.user(user).live += 1;
                    batch.users.insert(core, user);
                }
            }
            PlanKind::Register { slots, .. } => d.slots += *slots as i64,
            PlanKind::Leave { worker: w, .. } => match self.workers.get(w) {
                Some(w) if w.draining => d.slots_moved = true,
                Some(w) => d.slots -= w.slots.len() as i64,
                None => {}
            },
            // Slots leave inside the core's steps while a worker drains:
            // the shares' clock is brought to now, and the slot count read
            // back from the core after the commit.
            PlanKind::Drain { .. } => d.slots_moved = true,
            PlanKind::Cancel(_)
            | PlanKind::Withdraw { .. }
            | PlanKind::Report { .. }
            | PlanKind::Replayed { .. } => {}
        }
    }

    /// The run of `task` in progress, if any: (user, start).
    fn run(&self, batch: &Batch, task: TaskId) -> Option<(i64, i64)> {
        match batch.runs.get(&task) {
            Some(r) => *r,
            None => self.run_start.get(&task).copied(),
        }
    }

    fn actions_delta(&self, actions: &[Action], now: i64, d: &mut ShareDelta, batch: &mut Batch) {
        for a in actions {
            match a {
                Action::Start { task, .. } => {
                    let user = self
                        .tasks
                        .get(task)
                        .map(|t| t.user)
                        .or_else(|| batch.users.get(task).copied());
                    if let Some(u) = user
                        && self.run(batch, *task).is_none()
                    {
                        batch.runs.insert(*task, Some((u, now)));
                        d.start(u, now);
                    }
                }
                Action::Stop { task, .. } => {
                    if let Some((u, start)) = self.run(batch, *task) {
                        batch.runs.insert(*task, None);
                        d.stop(u, start, now);
                    }
                }
                Action::Ended(r) => {
                    if let Some((u, start)) = self.run(batch, r.spec.id) {
                        batch.runs.insert(r.spec.id, None);
                        d.stop(u, start, now);
                    }
                    d.user(r.spec.user.0).live -= 1;
                }
                Action::Timer { .. } | Action::Priority { .. } => {}
            }
        }
    }
}

fn allowed(who: &Principal, owner: i64, id: u64) -> Reply<()> {
    match who {
        Principal::Admin => Ok(()),
        Principal::User { id: me, .. } if *me == owner => Ok(()),
        Principal::User { .. } => Err(ApiError::forbidden(format!("task {id} belongs to another user"))),
        Principal::Worker { .. } | Principal::Session { .. } => {
            Err(ApiError::forbidden("workers have no tasks"))
        }
    }
}

/// The columns [`row_task`] reads, in its order.
const TASK_COLUMNS: &str = "SELECT id, name, user_id, org, state, attempts, exit_code, signal, submit_ms, start_ms, end_ms, command, workflow, reason FROM tasks";

fn row_task(r: &rusqlite::Row) -> rusqlite::Result<TaskOut> {
    Ok(TaskOut {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        user: r.get(2)?,
        org: r.get::<_, i64>(3)? as u32,
        state: r.get(4)?,
        attempts: r.get::<_, i64>(5)? as u32,
        exit_code: r.get(6)?,
        signal: r.get(7)?,
        submit_ms: r.get(8)?,
        start_ms: r.get(9)?,
        end_ms: r.get(10)?,
        command: r.get(11)?,
        workflow: r.get::<_, Option<i64>>(12)?.map(|w| w as u32),
        reason: r.get(13)?,
    })
}

struct Plan {
    events: Vec<Event>,
    kind: PlanKind,
}

impl Plan {
    /// It writes the service's tables only: no step of the core (held
    /// tasks cancelled — the core never knew them). Every other plan is a
    /// step, even without events (a heartbeat), as it always was.
    fn tables_only(&self) -> bool {
        matches!(self.kind, PlanKind::Withdraw { .. })
    }

    /// Nothing to log: a report with nothing to say (a heartbeat) renews
    /// the lease in memory only, so an idle worker does not grow the log.
    fn noop(&self) -> bool {
        match &self.kind {
            PlanKind::Replayed { .. } => true,
            PlanKind::Report { exits, .. } => exits.is_empty() && self.events.is_empty(),
            _ => false,
        }
    }
}

/// A run a report ended: (public id, exit code, signal, why it failed).
type Exit = (u64, Option<i32>, Option<i32>, Option<String>);

enum PlanKind {
    Submit {
        user: i64,
        org: u32,
        tasks: Vec<NewTask>,
        ids: Vec<u64>,
        /// Each task's parents (public ids); none: it goes to the core now.
        parents: Vec<Vec<u64>>,
        workflow: Option<(u32, WorkflowSpec)>,
        key: Option<SubmitKey>,
    },
    /// A submission retried with its idempotency key: its first reply.
    Replayed {
        ids: Vec<u64>,
        workflow: Option<u32>,
    },
    Cancel(u64),
    /// Held tasks entering the core: (public id, core id, user).
    Release(Vec<(u64, TaskId, i64)>),
    /// Held tasks cancelled (no event: the core never knew them), each
    /// with why when the broker decided it; `asked`: the one a user
    /// cancelled.
    Withdraw {
        cancel: Vec<(u64, Option<String>)>,
        asked: Option<u64>,
    },
    Register {
        id: u64,
        org: u32,
        host: String,
        first: u32,
        slots: u32,
        lease_ms: u64,
        /// The worker's session credential: shown once, in the reply;
        /// stored as its hash.
        session: String,
    },
    Report {
        exits: Vec<Exit>,
        kill: Vec<RunKey>,
        /// Handed runs the report did not list: (task, attempt, reports
        /// in a row).
        missed: Vec<(TaskId, u32, u32)>,
        /// Runs the report listed.
        listed: Vec<TaskId>,
    },
    /// A worker that left or lost its lease, and the tasks this fails
    /// (public id, why): those that lost it on their last allowed run.
    Leave {
        worker: u64,
        failed: Vec<(u64, String)>,
    },
    /// A worker that drains.
    Drain {
        worker: u64,
    },
}

/// The service's rows for an accepted write.
fn persist(tx: &rusqlite::Transaction, plan: &Plan, now_ms: i64) -> rusqlite::Result<()> {
    match &plan.kind {
        PlanKind::Submit {
            user,
            org,
            tasks,
            ids,
            parents,
            workflow,
            key,
        } => {
            if let Some(k) = key {
                tx.execute(
                    "INSERT OR REPLACE INTO submit_keys (user_id, key, digest, ids, workflow, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        user,
                        k.key,
                        k.digest.to_vec(),
                        serde_json::to_string(ids).expect("ids serialize"),
                        workflow.as_ref().map(|(w, _)| *w),
                        now_ms
                    ],
                )?;
            }
            if let Some((id, w)) = workflow {
                tx.execute(
                    "INSERT INTO workflows (id, user_id, org, name, activities, submit_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        id,
                        user,
                        org,
                        w.name,
                        serde_json::to_string(&w.activities).expect("strings serialize"),
                        now_ms
                    ],
                )?;
            }
            let mut ins = tx.prepare_cached(
                "INSERT INTO tasks (id, user_id, org, name, command, stage_in, stage_out, priority, state, submit_ms, optional, core_id, workflow, activity, time_limit_ms, memory_bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?;
            let mut edge =
                tx.prepare_cached("INSERT OR IGNORE INTO task_parents (child, parent) VALUES (?1, ?2)")?;
            for ((t, id), ps) in tasks.iter().zip(ids).zip(parents) {
                let live = ps.is_empty();
                ins.execute(params![
                    *id as i64,
                    user,
                    org,
                    t.name.as_deref().unwrap_or(""),
                    t.command,
                    t.stage_in,
                    t.stage_out,
                    t.priority.unwrap_or(1),
                    if live { "live" } else { "held" },
                    now_ms,
                    t.optional,
                    live.then_some(*id as i64),
                    workflow.as_ref().map(|w| w.0),
                    workflow.as_ref().map(|_| t.activity.unwrap_or(0)),
                    t.time_limit_ms.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                    t.memory_bytes.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                ])?;
                for &p in ps {
                    edge.execute(params![*id as i64, p as i64])?;
                }
            }
        }
        PlanKind::Replayed { .. } => {}
        PlanKind::Release(list) => {
            let mut up = tx.prepare_cached("UPDATE tasks SET state = 'live', core_id = ?2 WHERE id = ?1")?;
            for (public, core, _) in list {
                up.execute(params![*public as i64, core.0 as i64])?;
            }
        }
        PlanKind::Withdraw { cancel, .. } => {
            let mut up = tx.prepare_cached(
                "UPDATE tasks SET state = 'cancelled', end_ms = ?2, reason = ?3 WHERE id = ?1 AND state = 'held'",
            )?;
            for (id, why) in cancel {
                up.execute(params![*id as i64, now_ms, why])?;
            }
        }
        PlanKind::Register {
            id,
            org,
            host,
            first,
            slots,
            lease_ms,
            session,
        } => {
            tx.execute(
                "INSERT INTO workers (id, org, host, first_slot, slots, state, joined_ms, lease_ms) VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, ?7)",
                params![*id as i64, org, host, first, slots, now_ms, *lease_ms as i64],
            )?;
            tx.execute(
                "INSERT INTO worker_sessions (worker, hash) VALUES (?1, ?2)",
                params![*id as i64, hash(session).to_vec()],
            )?;
        }
        PlanKind::Report { exits, .. } => {
            let mut up =
                tx.prepare_cached("UPDATE tasks SET exit_code = ?2, signal = ?3, reason = ?4 WHERE id = ?1")?;
            for (task, code, signal, why) in exits {
                up.execute(params![*task as i64, code, signal, why])?;
            }
        }
        PlanKind::Leave { worker, failed } => {
            tx.execute(
                "UPDATE workers SET state = 'gone', left_ms = ?2 WHERE id = ?1",
                params![*worker as i64, now_ms],
            )?;
            let mut up = tx.prepare_cached("UPDATE tasks SET reason = ?2 WHERE id = ?1")?;
            for (task, why) in failed {
                up.execute(params![*task as i64, why])?;
            }
        }
        PlanKind::Drain { worker } => {
            tx.execute(
                "UPDATE workers SET state = 'draining' WHERE id = ?1 AND state = 'active'",
                params![*worker as i64],
            )?;
        }
        PlanKind::Cancel(_) => {}
    }
    Ok(())
}

/// Ended tasks get their final state (under their public ids).
fn persist_actions(
    tx: &rusqlite::Transaction,
    actions: &[Action],
    public_of: &HashMap<TaskId, u64>,
) -> rusqlite::Result<()> {
    for a in actions {
        if let Action::Ended(r) = a {
            let public = public_of.get(&r.spec.id).copied().unwrap_or(r.spec.id.0);
            end_row(tx, public, r)?;
        }
    }
    Ok(())
}

fn end_row(tx: &rusqlite::Transaction, public: u64, r: &EndRecord) -> rusqlite::Result<()> {
    let mut up = tx.prepare_cached(
        "UPDATE tasks SET state = ?2, attempts = ?3, start_ms = ?4, end_ms = ?5 WHERE id = ?1",
    )?;
    let attempts = r.runs().count() as i64;
    let start = r.runs().last().map(|a| a.start.millis());
    up.execute(params![
        public as i64,
        r.outcome.name(),
        attempts,
        start,
        r.end.millis()
    ])?;
    Ok(())
}

/// The satisfaction integrals after a batch (see [`Satisfaction`]).
fn persist_shares(tx: &rusqlite::Transaction, st: &Staged) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO share_clock (id, g, at_ms) VALUES (0, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET g = excluded.g, at_ms = excluded.at_ms",
    )?
    .execute(params![st.g, st.at])?;
    let mut up = tx.prepare_cached(
        "INSERT INTO shares (user_id, allocated_ms, deserved, base) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (user_id) DO UPDATE SET allocated_ms = excluded.allocated_ms,
             deserved = excluded.deserved, base = excluded.base",
    )?;
    for (u, s) in &st.users {
        up.execute(params![u, s.allocated, s.deserved, s.base])?;
    }
    Ok(())
}

/// Why a run failed: how it ended, and in which phase when its worker
/// reported the phases (`the exec phase failed (exit 3)`).
fn failure_reason(p: Option<Phase>, how: &str) -> String {
    match p {
        Some(p) => format!("the {} phase failed ({how})", p.name()),
        None => format!("its run failed ({how})"),
    }
}

/// Why a task failed with its worker: it was lost during the task's run
/// number `attempt`, when `--max-attempts` allows no more.
fn lost_reason(attempt: u32, max: u32) -> String {
    format!(
        "its worker was lost during its run {attempt}, and serve --max-attempts {max} allows no more runs"
    )
}

fn phase(p: WirePhase) -> Phase {
    match p {
        WirePhase::Setup => Phase::Setup,
        WirePhase::Input => Phase::Input,
        WirePhase::Exec => Phase::Exec,
        WirePhase::Output => Phase::Output,
    }
}

/// One ended task of a broker's history, as `fairsched export` writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryTask {
    pub id: u64,
    pub user: i64,
    pub org: u32,
    pub state: String,
    pub submit_ms: i64,
    pub start_ms: Option<i64>,
    pub end_ms: i64,
}

/// What `fairsched export` needs: every ended task (in id order), the
/// organizations (id, name, the most slots its workers held at once) and
/// which users belong to which organization.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub epoch_ms: i64,
    pub tasks: Vec<HistoryTask>,
    pub orgs: Vec<(u32, String, u32)>,
    pub users: Vec<(i64, String, u32)>,
}

/// Reads the history of the database at `path` (read-only: a running
/// broker may keep writing).
pub fn history(path: &Path) -> Result<History, String> {
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    if !path.exists() {
        return Err(format!("{}: no such database", path.display()));
    }
    if path.is_dir() {
        return Err(format!(
            "{}: a directory, not a broker database (give the file made by `fairsched admin init`)",
            path.display()
        ));
    }
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(err)?;
    let epoch_ms: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'epoch_ms'", [], |r| {
            r.get::<_, String>(0)
        })
        .map_err(|e| format!("{}: not a fairsched database ({e})", path.display()))?
        .parse()
        .map_err(|_| format!("{}: meta.epoch_ms is not a number", path.display()))?;
    let mut h = History {
        epoch_ms,
        ..History::default()
    };
    let mut q = conn
        .prepare(
            "SELECT id, user_id, org, state, submit_ms, start_ms, end_ms FROM tasks WHERE state NOT IN ('live', 'held') ORDER BY id",
        )
        .map_err(err)?;
    for row in q
        .query_map([], |r| {
            Ok(HistoryTask {
                id: r.get::<_, i64>(0)? as u64,
                user: r.get(1)?,
                org: r.get::<_, i64>(2)? as u32,
                state: r.get(3)?,
                submit_ms: r.get(4)?,
                start_ms: r.get(5)?,
                end_ms: r.get(6)?,
            })
        })
        .map_err(err)?
    {
        h.tasks.push(row.map_err(err)?);
    }
    // Slots per organization: the most its workers held at once.
    let mut spans: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
    let mut q = conn
        .prepare("SELECT org, slots, joined_ms, left_ms FROM workers")
        .map_err(err)?;
    for row in q
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)? as u32,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(err)?
    {
        let (org, slots, joined, left) = row.map_err(err)?;
        let e = spans.entry(org).or_default();
        e.push((joined, slots));
        e.push((left.unwrap_or(i64::MAX), -slots));
    }
    let mut q = conn
        .prepare("SELECT id, name FROM orgs ORDER BY id")
        .map_err(err)?;
    for row in q
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u32, r.get::<_, String>(1)?)))
        .map_err(err)?
    {
        let (id, name) = row.map_err(err)?;
        let mut ev = spans.remove(&id).unwrap_or_default();
        // Leaves before joins at the same instant.
        ev.sort_by_key(|&(t, d)| (t, d));
        let (mut cur, mut most) = (0i64, 0i64);
        for (_, d) in ev {
            cur += d;
            most = most.max(cur);
        }
        h.orgs.push((id, name, most as u32));
    }
    let mut q = conn
        .prepare("SELECT id, name, org FROM users ORDER BY id")
        .map_err(err)?;
    for row in q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32)))
        .map_err(err)?
    {
        h.users.push(row.map_err(err)?);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;
    use fairsched_proto::wire::Report;

    fn at(u: i64, live: i64) -> (i64, i64) {
        (u, live)
    }

    /// Two slots; alice's task runs over [0, 20), bob's over [10, 30)
    /// with a first run over [10, 12) lost (requeued). By hand:
    /// deserved(alice) = 2·10/1 + 2·10/2 = 30, deserved(bob) = 2·10/2 +
    /// 2·10/1 = 30; allocated(alice) = 20, allocated(bob) = 2 + 18 = 20.
    #[test]
    fn satisfaction_by_hand() {
        let (alice, bob) = (1, 2);
        let mut s = Satisfaction::default();
        let mut d = ShareDelta {
            slots: 2,
            ..ShareDelta::default()
        };
        let (u, n) = at(alice, 1);
        d.user(u).live += n;
        d.start(alice, 0);
        s.apply(0, &d);
        assert_eq!(s.value(alice, 0), None, "nothing deserved yet");
        assert_eq!(s.value(alice, 10), Some(10.0 / 20.0));
        let mut d = ShareDelta::default();
        d.user(bob).live += 1;
        d.start(bob, 10);
        s.apply(10, &d);
        let mut d = ShareDelta::default();
        d.stop(bob, 10, 12); // lost: requeued, then started again
        d.start(bob, 12);
        s.apply(12, &d);
        // Mid-way: alice 15 / (20 + 5), bob 3 + 0 run... 2 + 3 = 5 / 5.
        assert_eq!(s.value(alice, 15), Some(15.0 / 25.0));
        assert_eq!(s.value(bob, 15), Some(5.0 / 5.0));
        let mut d = ShareDelta::default();
        d.stop(alice, 0, 20);
        d.user(alice).live -= 1;
        s.apply(20, &d);
        assert_eq!(s.present, 1);
        let mut d = ShareDelta::default();
        d.stop(bob, 12, 30);
        d.user(bob).live -= 1;
        s.apply(30, &d);
        assert_eq!(s.present, 0);
        assert_eq!(s.parts(alice, 30), Some((20.0, 30.0)));
        assert_eq!(s.parts(bob, 30), Some((20.0, 30.0)));
        // Nobody is present: nothing more is deserved, however long.
        assert_eq!(s.value(alice, 1000), Some(20.0 / 30.0));
        assert_eq!(s.value(bob, 1000), Some(20.0 / 30.0));
        // Alone again later: everything is hers.
        let mut d = ShareDelta::default();
        d.user(bob).live += 1;
        s.apply(1000, &d);
        assert_eq!(s.parts(bob, 1010), Some((20.0, 50.0)));
    }

    /// A batch's net change counts: a user in and out at one instant is
    /// never present.
    #[test]
    fn satisfaction_of_an_instant_presence_is_nothing() {
        let mut s = Satisfaction {
            slots: 4,
            ..Satisfaction::default()
        };
        let mut d = ShareDelta::default();
        d.user(1).live += 1;
        d.user(1).live -= 1;
        s.apply(5, &d);
        assert_eq!(s.present, 0);
        assert_eq!(s.value(1, 100), None);
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        user: i64,
        org: u32,
    }

    fn fixture(order: &str, control: Option<&str>) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker.db");
        let live = Live::create(
            &path,
            &Config {
                order: order.into(),
                control: control.map(Into::into),
                ..Config::default()
            },
            &Registry::builtin(),
        )
        .unwrap();
        let org = live.store().add_org("physics").unwrap();
        live.store().add_user("alice", "physics").unwrap();
        let user = live
            .store()
            .conn()
            .query_row("SELECT id FROM users WHERE name = 'alice'", [], |r| r.get(0))
            .unwrap();
        Fixture {
            _dir: dir,
            path,
            user,
            org,
        }
    }

    fn open(f: &Fixture) -> Broker {
        Broker::open(&f.path, Settings::default()).unwrap()
    }

    fn one(b: &mut Broker, w: Write) -> Written {
        b.write(vec![w]).pop().unwrap().unwrap()
    }

    fn new_task(name: &str, after: &[u32]) -> NewTask {
        NewTask {
            command: format!("echo {name}"),
            name: Some(name.into()),
            activity: Some(0),
            after: after.to_vec(),
            ..NewTask::default()
        }
    }

    /// a → b, c → d.
    fn diamond(b: &mut Broker, f: &Fixture) -> [u64; 4] {
        let tasks = vec![
            new_task("a", &[]),
            new_task("b", &[0]),
            new_task("c", &[0]),
            new_task("d", &[1, 2, 1]),
        ];
        let w = one(
            b,
            Write::Submit {
                user: f.user,
                org: f.org,
                tasks,
                workflow: Some(WorkflowSpec {
                    name: "diamond".into(),
                    activities: vec!["work".into()],
                }),
                key: None,
            },
        );
        let Written::Submitted { ids, workflow } = w else {
            panic!("{w:?}")
        };
        assert!(workflow.is_some());
        ids.try_into().unwrap()
    }

    fn register(b: &mut Broker, f: &Fixture, slots: u32) -> u64 {
        match one(
            b,
            Write::Register {
                org: f.org,
                slots,
                host: "h".into(),
            },
        ) {
            Written::Registered(r) => r.worker,
            w => panic!("{w:?}"),
        }
    }

    fn polled(b: &mut Broker, f: &Fixture, worker: u64) -> BTreeMap<u64, u32> {
        b.poll(worker, f.org)
            .unwrap()
            .assign
            .into_iter()
            .map(|a| (a.task, a.attempt))
            .collect()
    }

    fn exit(task: u64, code: i32) -> Write {
        Write::Report {
            worker: 0,
            org: 0,
            body: ReportRequest {
                running: Vec::new(),
                reports: vec![Report::exit(RunKey { task, attempt: 1 }, code)],
                polled: None,
            },
        }
    }

    fn report(b: &mut Broker, f: &Fixture, worker: u64, w: Write) {
        let Write::Report { body, .. } = w else {
            unreachable!()
        };
        one(
            b,
            Write::Report {
                worker,
                org: f.org,
                body,
            },
        );
    }

    fn state(b: &Broker, id: u64) -> TaskOut {
        b.task(&Principal::Admin, id).unwrap()
    }

    /// The counts `status` keeps, recounted the slow way: every row, and
    /// the core for live tasks.
    fn recount(b: &Broker) -> StatusReply {
        let mut st = StatusReply::default();
        for t in b.tasks(&Principal::Admin).unwrap() {
            *match t.state.as_str() {
                "held" => &mut st.held,
                "waiting" => &mut st.waiting,
                "running" => &mut st.running,
                "completed" => &mut st.completed,
                "failed" => &mut st.failed,
                "cancelled" => &mut st.cancelled,
                "killed" => &mut st.killed,
                _ => &mut st.rejected,
            } += 1;
        }
        let s = b.status(&Principal::Admin).unwrap();
        st.workers = s.workers;
        st.slots = s.slots;
        st.busy_slots = s.busy_slots;
        st
    }

    fn check_counts(b: &Broker) -> StatusReply {
        let s = b.status(&Principal::Admin).unwrap();
        assert_eq!(s, recount(b));
        s
    }

    /// A cancelled run reaches its worker in its next poll, which the
    /// cancel wakes (the generation), with the assignment of the slot it
    /// freed; runs the worker ended itself are not sent back.
    #[test]
    fn a_stopped_run_is_killed_by_the_next_poll() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let worker = register(&mut b, &f, 1);
        let tasks = (0..3)
            .map(|i| NewTask {
                command: format!("sleep {i}"),
                ..NewTask::default()
            })
            .collect();
        let Written::Submitted { ids, .. } = one(
            &mut b,
            Write::Submit {
                user: f.user,
                org: f.org,
                tasks,
                workflow: None,
                key: None,
            },
        ) else {
            panic!()
        };
        let first = b.poll(worker, f.org).unwrap();
        assert_eq!(first.assign.len(), 1);
        assert_eq!(first.assign[0].task, ids[0]);
        assert!(first.kill.is_empty());
        // Full: nothing more, whatever the queue.
        let r = b.poll(worker, f.org).unwrap();
        assert!(r.assign.is_empty() && r.kill.is_empty(), "{r:?}");

        let generation = b.generation;
        let Written::Cancelled(t) = one(
            &mut b,
            Write::Cancel {
                who: Principal::Admin,
                task: ids[0],
            },
        ) else {
            panic!()
        };
        assert_eq!(t.state, "cancelled");
        assert!(b.generation > generation, "the cancel wakes the long polls");
        let reply = b.poll(worker, f.org).unwrap();
        assert_eq!(
            reply.kill,
            vec![RunKey {
                task: ids[0],
                attempt: 1
            }]
        );
        assert_eq!(
            reply.assign.iter().map(|a| a.task).collect::<Vec<_>>(),
            vec![ids[1]]
        );
        let r = b.poll(worker, f.org).unwrap();
        assert!(r.assign.is_empty() && r.kill.is_empty(), "{r:?}");

        // Completed by the worker: no kill for it.
        report(&mut b, &f, worker, exit(ids[1], 0));
        assert_eq!(state(&b, ids[1]).state, "completed");
        let reply = b.poll(worker, f.org).unwrap();
        assert!(reply.kill.is_empty(), "{reply:?}");
        assert_eq!(
            reply.assign.iter().map(|a| a.task).collect::<Vec<_>>(),
            vec![ids[2]]
        );
        check_counts(&b);
    }

    #[test]
    fn a_diamond_runs_in_order_and_a_failed_parent_cancels_what_follows() {
        let f = fixture("priority", Some("workflow-fairness"));
        let mut b = open(&f);
        let worker = register(&mut b, &f, 4);
        let [a, tb, tc, d] = diamond(&mut b, &f);
        let s = check_counts(&b);
        assert_eq!((s.held, s.running, s.waiting), (3, 1, 0));
        assert_eq!(state(&b, d).state, "held");
        assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(a, 1)]));
        std::thread::sleep(Duration::from_millis(20));
        let e = b.explain(&Principal::Admin, d).unwrap();
        assert_eq!(e["state"], "held");
        assert_eq!(e["waiting_for"], serde_json::json!([tb, tc]));
        assert!(
            e["why"].as_str().unwrap().contains(&format!("task {tb} (held)")),
            "{e}"
        );
        // a completes: b and c enter the core (under core ids of their
        // own), and run under their public ids.
        report(&mut b, &f, worker, exit(a, 0));
        assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(tb, 1), (tc, 1)]));
        assert!(
            b.core_id(tb) != TaskId(tb) && b.core_id(tb).0 > d,
            "core ids are taken at release"
        );
        assert_eq!(b.public_id(b.core_id(tb)), tb);
        let s = check_counts(&b);
        assert_eq!((s.held, s.running, s.completed), (1, 2, 1));
        let t = state(&b, tb);
        assert_eq!((t.state.as_str(), t.workflow), ("running", state(&b, a).workflow));
        let e = b.explain(&Principal::Admin, d).unwrap();
        assert_eq!(e["waiting_for"], serde_json::json!([tb, tc]));
        // b completes, c fails: d is cancelled, saying why.
        report(&mut b, &f, worker, exit(tb, 0));
        assert_eq!(state(&b, d).state, "held");
        report(&mut b, &f, worker, exit(tc, 3));
        let t = state(&b, d);
        assert_eq!(t.state, "cancelled");
        assert_eq!(
            t.reason.as_deref(),
            Some(format!("parent task {tc} failed").as_str())
        );
        assert!(t.end_ms.is_some());
        let e = b.explain(&Principal::Admin, d).unwrap();
        assert!(e["why"].as_str().unwrap().contains("failed"), "{e}");
        let s = check_counts(&b);
        assert_eq!(
            (s.held, s.waiting, s.running, s.completed, s.failed, s.cancelled),
            (0, 0, 0, 2, 1, 1)
        );
        assert_eq!(state(&b, tc).exit_code, Some(3));
        // The same after a restart.
        let sat = b.sat.clone();
        // One user, 4 slots, at most 2 busy: under 1/2.
        let s_u = b.satisfaction(f.user).unwrap();
        assert!(s_u > 0.0 && s_u <= 0.5, "{s_u}");
        let e = b.explain(&Principal::Admin, a).unwrap();
        assert!(e["user_satisfaction"].as_f64().unwrap() > 0.0, "{e}");
        drop(b);
        let b = open(&f);
        assert_eq!(check_counts(&b), s);
        assert_eq!(b.sat, sat, "satisfaction survives a restart");
        assert_eq!(
            state(&b, d).reason.as_deref(),
            Some(format!("parent task {tc} failed").as_str())
        );
    }

    #[test]
    fn a_release_lost_to_a_crash_is_done_on_open() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let worker = register(&mut b, &f, 2);
        let [a, tb, tc, d] = diamond(&mut b, &f);
        assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(a, 1)]));
        // a's completion is committed, the release is not: the broker
        // dies in between.
        let r = b.write_unsettled(vec![Write::Report {
            worker,
            org: f.org,
            body: ReportRequest {
                running: Vec::new(),
                reports: vec![Report::exit(RunKey { task: a, attempt: 1 }, 0)],
                polled: None,
            },
        }]);
        assert!(r[0].is_ok());
        assert!(b.unsettled());
        drop(b);
        let mut b = open(&f);
        assert!(!b.unsettled());
        for t in [tb, tc] {
            assert_eq!(state(&b, t).state, "running", "released on open");
        }
        assert_eq!(state(&b, d).state, "held");
        assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(tb, 1), (tc, 1)]));
        check_counts(&b);
        // A failure whose cancellations are lost the same way.
        report(&mut b, &f, worker, exit(tb, 0));
        let r = b.write_unsettled(vec![Write::Report {
            worker,
            org: f.org,
            body: ReportRequest {
                running: Vec::new(),
                reports: vec![Report::exit(RunKey { task: tc, attempt: 1 }, 1)],
                polled: None,
            },
        }]);
        assert!(r[0].is_ok());
        drop(b);
        let b = open(&f);
        assert_eq!(state(&b, d).state, "cancelled");
        let s = check_counts(&b);
        assert_eq!((s.completed, s.failed, s.cancelled, s.held), (2, 1, 1, 0));
    }

    #[test]
    fn cancelling_a_held_task_cancels_its_descendants_only() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let [a, tb, tc, d] = diamond(&mut b, &f);
        let w = one(
            &mut b,
            Write::Cancel {
                who: Principal::Admin,
                task: tb,
            },
        );
        let Written::Cancelled(t) = w else { panic!("{w:?}") };
        assert_eq!((t.id, t.state.as_str(), t.reason), (tb, "cancelled", None));
        assert_eq!(state(&b, d).state, "cancelled");
        assert_eq!(
            state(&b, d).reason.as_deref(),
            Some(format!("parent task {tb} was cancelled").as_str())
        );
        assert_eq!(state(&b, tc).state, "held");
        assert_eq!(state(&b, a).state, "waiting");
        let s = check_counts(&b);
        assert_eq!((s.held, s.waiting, s.cancelled), (1, 1, 2));
        // Cancelling it again: it has ended.
        let e = b
            .write(vec![Write::Cancel {
                who: Principal::Admin,
                task: tb,
            }])
            .pop()
            .unwrap()
            .unwrap_err();
        assert_eq!(e.status, 409);
        // The waiting root cancelled: c goes too.
        one(
            &mut b,
            Write::Cancel {
                who: Principal::Admin,
                task: a,
            },
        );
        assert_eq!(state(&b, tc).state, "cancelled");
        let s = check_counts(&b);
        assert_eq!((s.held, s.waiting, s.cancelled), (0, 0, 4));
        drop(b);
        assert_eq!(check_counts(&open(&f)), s);
    }

    #[test]
    fn workflow_requests_are_checked() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let wf = || {
            Some(WorkflowSpec {
                name: "w".into(),
                activities: vec!["x".into()],
            })
        };
        let cases: Vec<(Vec<NewTask>, Option<WorkflowSpec>, &str)> = vec![
            (vec![new_task("a", &[0])], wf(), "tasks[0].after: 0"),
            (
                vec![new_task("a", &[]), new_task("b", &[2])],
                wf(),
                "tasks[1].after: 2",
            ),
            (
                vec![NewTask {
                    activity: Some(1),
                    ..new_task("a", &[])
                }],
                wf(),
                "tasks[0].activity: 1",
            ),
            (vec![new_task("a", &[])], None, "tasks[0].activity: only"),
            (
                vec![
                    NewTask {
                        activity: None,
                        ..new_task("a", &[])
                    },
                    NewTask {
                        activity: None,
                        ..new_task("b", &[0])
                    },
                ],
                None,
                "tasks[1].after: only",
            ),
        ];
        for (tasks, workflow, why) in cases {
            let e = b
                .write(vec![Write::Submit {
                    user: f.user,
                    org: f.org,
                    tasks,
                    workflow,
                    key: None,
                }])
                .pop()
                .unwrap()
                .unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains(why), "{e:?} should say {why}");
        }
        // Workflow ids are never reused, across restarts too.
        let Written::Submitted { workflow: w1, .. } = one(
            &mut b,
            Write::Submit {
                user: f.user,
                org: f.org,
                tasks: vec![new_task("a", &[])],
                workflow: wf(),
                key: None,
            },
        ) else {
            panic!()
        };
        drop(b);
        let mut b = open(&f);
        let Written::Submitted { workflow: w2, .. } = one(
            &mut b,
            Write::Submit {
                user: f.user,
                org: f.org,
                tasks: vec![new_task("a", &[])],
                workflow: wf(),
                key: None,
            },
        ) else {
            panic!()
        };
        assert!(w2 > w1, "{w1:?} then {w2:?}");
    }

    /// Submits `n` tasks of `user` in `org`; their ids.
    fn submit_n(b: &mut Broker, user: i64, org: u32, n: usize, command: &str) -> Vec<u64> {
        let tasks = (0..n)
            .map(|_| NewTask {
                command: command.into(),
                ..NewTask::default()
            })
            .collect();
        match one(
            b,
            Write::Submit {
                user,
                org,
                tasks,
                workflow: None,
                key: None,
            },
        ) {
            Written::Submitted { ids, .. } => ids,
            w => panic!("{w:?}"),
        }
    }

    fn heartbeat(worker: u64, org: u32, running: Vec<RunKey>, polled: Option<u64>) -> Write {
        Write::Report {
            worker,
            org,
            body: ReportRequest {
                running,
                reports: Vec::new(),
                polled,
            },
        }
    }

    /// A run whose assignment never reached its worker (the poll reply
    /// was lost) goes back to the queue once [`MISSED_REPORTS`] reports in
    /// a row, each written after a later poll reply was applied, leave it
    /// out; it is handed again as a new attempt. A report written before
    /// the reply that handed it was applied, or that lists the run, keeps
    /// it (issue 27, finding 2: it stayed `running` forever).
    #[test]
    fn a_run_its_worker_never_lists_goes_back_to_the_queue() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let w = register(&mut b, &f, 1);
        let ids = submit_n(&mut b, f.user, f.org, 1, "true");
        let f_org = f.org;
        let beat = |b: &mut Broker, running: Vec<RunKey>, polled: Option<u64>| {
            one(b, heartbeat(w, f_org, running, polled));
        };
        // Handed by this reply, which never arrives.
        let lost = b.poll(w, f.org).unwrap();
        assert_eq!(lost.assign.len(), 1);
        // Reports written before that reply could be applied (or by a
        // worker that does not say) prove nothing.
        for _ in 0..3 * MISSED_REPORTS {
            beat(&mut b, Vec::new(), None);
            beat(&mut b, Vec::new(), Some(lost.seq - 1));
        }
        assert_eq!(state(&b, ids[0]).attempts, 1);
        // A later reply was applied, and the run is still not listed.
        let next = b.poll(w, f.org).unwrap().seq;
        for _ in 1..MISSED_REPORTS {
            beat(&mut b, Vec::new(), Some(next));
            assert_eq!(state(&b, ids[0]).attempts, 1);
        }
        beat(&mut b, Vec::new(), Some(next));
        let again = b.poll(w, f.org).unwrap();
        let handed: Vec<(u64, u32)> = again.assign.iter().map(|a| (a.task, a.attempt)).collect();
        assert_eq!(handed, vec![(ids[0], 2)], "handed again");
        let listed = vec![RunKey {
            task: ids[0],
            attempt: 2,
        }];
        for _ in 0..3 * MISSED_REPORTS {
            beat(&mut b, listed.clone(), Some(again.seq));
        }
        let t = state(&b, ids[0]);
        assert_eq!((t.state.as_str(), t.attempts), ("running", 2));
        // Misses must be in a row: a listed report starts the count again.
        beat(&mut b, Vec::new(), Some(again.seq));
        beat(&mut b, listed.clone(), Some(again.seq));
        beat(&mut b, Vec::new(), Some(again.seq));
        assert_eq!(state(&b, ids[0]).attempts, 2);
        // A `polled` of another broker process (before a restart) is not
        // this one's.
        beat(&mut b, Vec::new(), Some(again.seq ^ (1 << 40)));
        assert_eq!(state(&b, ids[0]).attempts, 2);
        check_counts(&b);
    }

    /// A poll reply holds at most [`MAX_POLL_SCRIPT_BYTES`] of scripts and
    /// [`MAX_ASSIGN_PER_POLL`] assignments; the next polls take the rest,
    /// each run once (issue 27, finding 2: 17 tasks of 3.9 MB made a reply
    /// over the worker's 64 MiB limit, which a restart sent again).
    #[test]
    fn poll_replies_are_bounded_and_the_rest_follow() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let w = register(&mut b, &f, 1500);
        let big = format!("# {}", "x".repeat(fairsched_proto::api::MAX_SCRIPT_LEN - 2));
        let mut ids = submit_n(&mut b, f.user, f.org, 100, &big);
        ids.extend(submit_n(&mut b, f.user, f.org, 1400, "true"));
        let mut seen = BTreeMap::new();
        let mut polls = 0;
        loop {
            let r = b.poll(w, f.org).unwrap();
            if r.assign.is_empty() {
                break;
            }
            polls += 1;
            let bytes: usize = r.assign.iter().map(|a| a.command.len()).sum();
            assert!(bytes <= MAX_POLL_SCRIPT_BYTES, "{bytes}");
            assert!(r.assign.len() <= MAX_ASSIGN_PER_POLL);
            for a in r.assign {
                assert_eq!(seen.insert(a.task, a.attempt), None, "task {} twice", a.task);
            }
        }
        assert_eq!(seen.keys().copied().collect::<Vec<_>>(), ids);
        assert!(polls >= 3, "{polls} polls");
    }

    /// A submission retried with its idempotency key (its 201 was lost)
    /// gets the first reply and submits nothing, in the same batch, later,
    /// and after a restart; the same key with another body is a 409; the
    /// key is the user's own (issue 27: a lost 201 could not be retried
    /// without duplicates).
    #[test]
    fn a_retried_submission_is_submitted_once() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let submit = |command: &str, key: &str, user: i64| Write::Submit {
            user,
            org: f.org,
            tasks: vec![NewTask {
                command: command.into(),
                ..NewTask::default()
            }],
            workflow: None,
            key: Some(SubmitKey {
                key: key.into(),
                digest: hash(command),
            }),
        };
        let ids = |r: Reply<Written>| match r {
            Ok(Written::Submitted { ids, .. }) => ids,
            other => panic!("{other:?}"),
        };
        // Twice in one batch, then again.
        let mut replies = b.write(vec![submit("true", "k1", f.user), submit("true", "k1", f.user)]);
        let second = ids(replies.pop().unwrap());
        let first = ids(replies.pop().unwrap());
        assert_eq!(first, second);
        assert_eq!(
            ids(b.write(vec![submit("true", "k1", f.user)]).pop().unwrap()),
            first
        );
        let other = b.write(vec![submit("false", "k1", f.user)]).pop().unwrap();
        assert_eq!(other.unwrap_err().status, 409);
        let k2 = ids(b.write(vec![submit("true", "k2", f.user)]).pop().unwrap());
        assert_ne!(k2, first);
        // Another user's key is another key.
        let bob = {
            b.live().store().add_user("bob", "physics").unwrap();
            b.live()
                .store()
                .conn()
                .query_row("SELECT id FROM users WHERE name = 'bob'", [], |r| r.get(0))
                .unwrap()
        };
        let theirs = ids(b.write(vec![submit("true", "k1", bob)]).pop().unwrap());
        assert_ne!(theirs, first);
        assert_eq!(b.tasks(&Principal::Admin).unwrap().len(), 3);
        drop(b);
        let mut b = open(&f);
        assert_eq!(
            ids(b.write(vec![submit("true", "k1", f.user)]).pop().unwrap()),
            first
        );
        assert_eq!(b.tasks(&Principal::Admin).unwrap().len(), 3);
        check_counts(&b);
    }

    /// The wall clock set back an hour while the broker runs does not
    /// stop its clock (issue 27, finding 11: timers, deadlines and
    /// satisfaction froze until the wall clock caught up).
    #[test]
    fn a_wall_clock_set_back_does_not_stop_the_brokers() {
        use std::sync::atomic::{AtomicI64, Ordering};
        static SHIFT: AtomicI64 = AtomicI64::new(0);
        fn wall() -> i64 {
            unix_ms() + SHIFT.load(Ordering::Relaxed)
        }
        let f = fixture("fifo", None);
        let mut b = Broker::open(
            &f.path,
            Settings {
                wall_clock: wall,
                ..Settings::default()
            },
        )
        .unwrap();
        submit_n(&mut b, f.user, f.org, 1, "true");
        let before = b.clock();
        SHIFT.store(-3_600_000, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(10);
        while b.clock() <= before {
            assert!(Instant::now() < deadline, "the clock stood still");
            std::thread::sleep(Duration::from_millis(5));
        }
        // And a broker opened meanwhile starts from its log, not an hour back.
        submit_n(&mut b, f.user, f.org, 1, "true");
        let logged = b.live().now();
        drop(b);
        let b = Broker::open(
            &f.path,
            Settings {
                wall_clock: wall,
                ..Settings::default()
            },
        )
        .unwrap();
        assert!(b.clock() >= logged);
    }

    /// A report with nothing to say (a heartbeat) is not a step of the
    /// log; a report that ends a run is (issue 27, finding 8: 8,640
    /// fsynced steps a day per idle worker).
    #[test]
    fn heartbeats_do_not_grow_the_log() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let w = register(&mut b, &f, 1);
        let ids = submit_n(&mut b, f.user, f.org, 1, "true");
        polled(&mut b, &f, w);
        let steps = |b: &Broker| -> i64 {
            b.live()
                .store()
                .conn()
                .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
                .unwrap()
        };
        let before = steps(&b);
        let running = vec![RunKey {
            task: ids[0],
            attempt: 1,
        }];
        for _ in 0..50 {
            one(&mut b, heartbeat(w, f.org, running.clone(), None));
        }
        assert_eq!(steps(&b), before);
        report(&mut b, &f, w, exit(ids[0], 0));
        assert_eq!(steps(&b), before + 1);
        assert_eq!(state(&b, ids[0]).state, "completed");
    }

    /// A failed run says how, and in which phase when the worker reported
    /// phases (in the same report or an earlier one); a task whose worker
    /// is lost on its last allowed run says so; one lost earlier goes back
    /// to the queue with no reason.
    #[test]
    fn a_failed_task_says_why() {
        let f = fixture("fifo", None);
        let mut b = Broker::open(
            &f.path,
            Settings {
                max_attempts: 2,
                ..Settings::default()
            },
        )
        .unwrap();
        let worker = register(&mut b, &f, 3);
        let ids = submit_n(&mut b, f.user, f.org, 3, "false");
        assert_eq!(polled(&mut b, &f, worker).len(), 3);
        let key = |task| RunKey { task, attempt: 1 };
        // Phases in an earlier report, then the exit.
        report(
            &mut b,
            &f,
            worker,
            Write::Report {
                worker,
                org: f.org,
                body: ReportRequest {
                    running: vec![key(ids[0]), key(ids[1]), key(ids[2])],
                    reports: vec![
                        Report::phase(key(ids[0]), WirePhase::Setup),
                        Report::phase(key(ids[0]), WirePhase::Input),
                    ],
                    polled: None,
                },
            },
        );
        let body = ReportRequest {
            running: vec![key(ids[2])],
            reports: vec![
                Report::exit(key(ids[0]), 3),
                // Phases and a signal in one report.
                Report::phase(key(ids[1]), WirePhase::Setup),
                Report::phase(key(ids[1]), WirePhase::Input),
                Report::phase(key(ids[1]), WirePhase::Exec),
                Report::phase(key(ids[1]), WirePhase::Output),
                Report::signal(key(ids[1]), 9),
            ],
            polled: None,
        };
        report(
            &mut b,
            &f,
            worker,
            Write::Report {
                worker,
                org: f.org,
                body,
            },
        );
        assert_eq!(state(&b, ids[0]).state, "failed");
        assert_eq!(
            state(&b, ids[0]).reason.as_deref(),
            Some("the input phase failed (exit 3)")
        );
        assert_eq!(
            state(&b, ids[1]).reason.as_deref(),
            Some("the output phase failed (signal 9)")
        );
        // The third one loses its worker: back to the queue (run 1 of 2).
        one(&mut b, Write::Leave { worker, org: f.org });
        let t = state(&b, ids[2]);
        assert_eq!((t.state.as_str(), t.reason.as_deref()), ("waiting", None));
        // Run 2 of 2 loses its worker too: failed, saying why.
        let w2 = register(&mut b, &f, 1);
        assert_eq!(polled(&mut b, &f, w2).get(&ids[2]), Some(&2));
        one(
            &mut b,
            Write::Leave {
                worker: w2,
                org: f.org,
            },
        );
        let t = state(&b, ids[2]);
        assert_eq!(t.state, "failed");
        assert_eq!(
            t.reason.as_deref(),
            Some("its worker was lost during its run 2, and serve --max-attempts 2 allows no more runs")
        );
        // A run without phase reports: no phase named.
        let w3 = register(&mut b, &f, 1);
        let more = submit_n(&mut b, f.user, f.org, 1, "false");
        assert_eq!(polled(&mut b, &f, w3).len(), 1);
        report(&mut b, &f, w3, exit(more[0], 1));
        assert_eq!(
            state(&b, more[0]).reason.as_deref(),
            Some("its run failed (exit 1)")
        );
        // Completed: no reason. The reasons survive a restart (they are rows).
        check_counts(&b);
        drop(b);
        let b = open(&f);
        assert_eq!(
            state(&b, ids[1]).reason.as_deref(),
            Some("the output phase failed (signal 9)")
        );
        assert!(
            b.explain(&Principal::Admin, ids[2]).unwrap()["why"]
                .as_str()
                .unwrap()
                .contains("its worker was lost")
        );
    }

    /// Explain under fair-share shows the policy's usage for the task's
    /// organization (0 before any of its tasks started) and every
    /// organization's, and says the policy weighs organizations; under
    /// fifo it counts the tasks submitted before it and has no such
    /// caveat.
    #[test]
    fn explain_shows_the_organizations_fairness_state_and_the_policys_caveat() {
        for order in ["fair-share", "fifo", "priority"] {
            let f = fixture(order, None);
            let mut b = open(&f);
            let chem = b.add_org("chem").unwrap().id;
            let carol = b.add_user("carol", "chem").unwrap().id;
            let worker = register(&mut b, &f, 1);
            let mine = submit_n(&mut b, f.user, f.org, 2, "sleep 9");
            assert_eq!(polled(&mut b, &f, worker).len(), 1);
            let theirs = submit_n(&mut b, carol, chem, 1, "sleep 9");
            let e = b.explain(&Principal::Admin, theirs[0]).unwrap();
            assert_eq!(e["state"], "waiting", "{e}");
            assert_eq!(e["org_name"], "chem", "{e}");
            assert_eq!(e["ahead_in_submission_order"], 1, "{e}");
            let why = e["why"].as_str().unwrap();
            let fairness = e["fairness"].as_object().unwrap();
            if order == "fair-share" {
                assert!(why.contains("may pick differently"), "{why}");
                assert_eq!(fairness["its_org_usage_slot_seconds"], 0.0, "{e}");
                let all = fairness["org_usage_slot_seconds_by_org"].as_object().unwrap();
                assert_eq!(all.len(), 2, "{e}");
                assert_eq!(all["chem"], 0.0, "{e}");
                assert!(all["physics"].as_f64().unwrap() >= 0.0, "{e}");
                // The running task's organization: its own usage.
                let r = b.explain(&Principal::Admin, mine[0]).unwrap();
                assert_eq!(r["state"], "running", "{r}");
                assert!(r["fairness"]["its_org_usage_slot_seconds"].is_number(), "{r}");
            } else {
                assert!(!why.contains("may pick differently"), "{order}: {why}");
                assert!(!why.contains("weighs"), "{order}: {why}");
                assert!(fairness.is_empty(), "{order}: {e}");
            }
            if order == "fifo" {
                assert!(
                    why.contains("1 waiting task(s) were submitted before it"),
                    "{why}"
                );
            }
            if order == "priority" {
                assert!(
                    why.contains("ahead of it by priority then submission order"),
                    "{why}"
                );
            }
            // Ended: no fairness.
            one(
                &mut b,
                Write::Cancel {
                    who: Principal::Admin,
                    task: mine[1],
                },
            );
            let c = b.explain(&Principal::Admin, mine[1]).unwrap();
            assert!(c.get("fairness").is_none(), "{c}");
        }
    }

    /// `explain`'s words come from each order policy's registry entry:
    /// by name, former names and parameters included.
    #[test]
    fn explain_knows_how_each_order_policy_picks_from_its_entry() {
        let f = fixture("fifo", None);
        let b = open(&f);
        assert_eq!(b.picks("fifo"), Picks::Submission);
        assert_eq!(b.picks("fcfs"), Picks::Submission);
        assert_eq!(b.picks("priority"), Picks::Priority);
        assert!(matches!(b.picks("fair-share"), Picks::Weighs(_)));
        assert!(matches!(b.picks("diet-ethic[seed=3]"), Picks::Weighs(_)));
        assert_eq!(b.picks("no-such-policy"), Picks::Priority);
    }

    /// Ids stay unique when held tasks reserve public ids above every core
    /// id and a restart comes before their release.
    #[test]
    fn ids_are_never_given_twice_across_restarts() {
        let f = fixture("fifo", None);
        let mut b = open(&f);
        let [_, tb, tc, d] = diamond(&mut b, &f);
        drop(b);
        let mut b = open(&f);
        let Written::Submitted { ids, .. } = one(
            &mut b,
            Write::Submit {
                user: f.user,
                org: f.org,
                tasks: vec![NewTask {
                    command: "true".into(),
                    ..NewTask::default()
                }],
                workflow: None,
                key: None,
            },
        ) else {
            panic!()
        };
        assert!(ids[0] > d, "{ids:?} after {tb}, {tc}, {d}");
    }
}
