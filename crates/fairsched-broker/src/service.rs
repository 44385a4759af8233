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
mod history;
mod hold;
mod output;
mod satisfaction;
mod schema;

pub use history::{History, HistoryTask, history};
use hold::{HoldBy, Room};
use satisfaction::{Satisfaction, Share, ShareDelta, Staged};
use schema::upgrade;
pub use schema::{ADDED_COLUMNS, ADDED_TABLES, SCHEMA};

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
    /// The admin stops a running task's run and puts it back in the queue
    /// (its work is lost; it runs again, a new attempt).
    Requeue {
        task: u64,
    },
    /// A waiting (or held) task is put on hold: it does not run until
    /// released ([`hold`]).
    Hold {
        who: Principal,
        task: u64,
    },
    /// A task on hold is released.
    Unhold {
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
    /// When it was submitted (the broker's clock, ms).
    at_ms: i64,
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
    /// Quotas on queued and running tasks.
    quotas: HashMap<admin::QuotaOf, admin::Limit>,
    /// Held tasks that wait for nothing but a running quota, by user
    /// (with its organization), public ids ascending.
    throttled: BTreeMap<i64, (u32, BTreeSet<u64>)>,
    /// Users and organizations whose throttled tasks may fit now: looked
    /// at in the next round of [`Broker::settle`].
    recheck_users: BTreeSet<i64>,
    recheck_orgs: BTreeSet<u32>,
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
            ended_on: HashMap::new(),
            ended_order: std::collections::VecDeque::new(),
            quotas: HashMap::new(),
            throttled: BTreeMap::new(),
            recheck_users: BTreeSet::new(),
            recheck_orgs: BTreeSet::new(),
            withdrawing: HashMap::new(),
            batch_room: Room::default(),
            run_as: HashMap::new(),
            removed_users: HashSet::new(),
            removed_orgs: HashSet::new(),
            batch_keys: HashSet::new(),
            keys_pruned: None,
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
            let mut q = conn.prepare("SELECT user_id, key, digest, ids, workflow, at_ms FROM submit_keys")?;
            let rows = q.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<u32>>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?;
            for row in rows {
                let (user, key, digest, ids, workflow, at_ms) = row?;
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
                            at_ms,
                        },
                    );
                }
            }
        }
        self.quotas = admin::load_quotas(conn)?;
        {
            let mut q = conn.prepare("SELECT kind, id FROM removed")?;
            for row in q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
                match row? {
                    (k, id) if k == "user" => self.removed_users.insert(id),
                    (_, id) => self.removed_orgs.insert(id as u32),
                };
            }
        }
        {
            let mut q = conn.prepare("SELECT id, run_as FROM users WHERE run_as IS NOT NULL")?;
            for row in q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
                let (user, account) = row?;
                self.run_as.insert(user, account);
            }
        }
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
                        priority, optional, workflow, activity, time_limit_ms, memory_bytes, hold
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
                            workflow: r.get::<_, Option<i64>>(12)?.map(|w| WorkflowRef {
                                workflow: WorkflowId(w as u32),
                                activity: r.get::<_, Option<i64>>(13).ok().flatten().unwrap_or(0) as u32,
                            }),
                            parents: Vec::new(),
                            pending: 0,
                            hold: r.get::<_, Option<String>>(16)?.as_deref().and_then(HoldBy::of),
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
                if pending == 0 && h.hold.is_none() {
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
                    run_as: self.run_as.get(&d.user).cloned(),
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
                workflow: h.workflow.map(|w| w.workflow.0),
                reason: self.held_reason(id),
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

    /// A write's reply: task `task` as it is now.
    fn task_written(&self, task: u64) -> Written {
        Written::Cancelled(self.task_out(task).unwrap_or_else(|e| TaskOut {
            id: task,
            state: format!("unknown: {}", e.message),
            ..TaskOut::default()
        }))
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
        if let Some(why) = self.held_reason(id) {
            return Ok(serde_json::json!({
                "task": id, "state": "held", "policy": policy, "reason": why,
                "why": format!("it is {why}"),
            }));
        }
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
        // Idempotency keys past KEYS_KEPT go, once a minute (the table's
        // rows at the next open).
        if self
            .keys_pruned
            .is_none_or(|t| now.duration_since(t) > Duration::from_secs(60))
        {
            self.keys_pruned = Some(now);
            let since = self.clock().millis() - KEYS_KEPT.as_millis() as i64;
            self.submit_keys.retain(|_, k| k.at_ms >= since);
        }
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
        !self.ready.is_empty()
            || !self.doomed.is_empty()
            || !self.recheck_users.is_empty()
            || !self.recheck_orgs.is_empty()
    }

    /// Prepares, commits and applies a batch of writes: one step each, all
    /// in one transaction. Due timers ride along as their own steps. Then
    /// held tasks whose parents ended in it are released or cancelled
    /// ([`Broker::settle`]).
    pub fn write(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
        let mut replies = self.write_unsettled(writes);
        if self.unsettled() {
            self.settle();
            // A task released from hold entered the queue meanwhile.
            for r in replies.iter_mut() {
                if let Ok(Written::Cancelled(t)) = r
                    && t.state == "held"
                {
                    *r = Ok(self.task_written(t.id));
                }
            }
        }
        replies
    }

    /// [`Broker::write`] without the settling.
    fn write_unsettled(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
        let now = self.clock();
        self.batch_queued.clear();
        self.batch_keys.clear();
        self.batch_room = Room::default();
        let plans: Vec<Reply<Plan>> = writes.into_iter().map(|w| self.plan(w)).collect();
        self.batch_queued.clear();
        self.batch_keys.clear();
        self.batch_room = Room::default();
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
        self.promote_throttled();
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
        let mut room = Room::default();
        for id in ready {
            let (user, org) = (self.held[&id].user, self.held[&id].org);
            if !self.take_room(&mut room, user, org) {
                self.throttle(id, user, org);
                continue;
            }
            let core = TaskId(self.take_id());
            let h = &self.held[&id];
            let mut spec = TaskSpec::new(core.0, h.user, h.org);
            spec.priority = h.priority;
            spec.optional = h.optional;
            spec.workflow = h.workflow;
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
                        persist_actions(tx, actions, known.public_of, plan.withdrawn())?;
                        known.plan_delta(plan, &mut delta, &mut batch);
                        known.actions_delta(actions, now_ms, &mut delta, &mut batch);
                    }
                }
                for actions in outcomes.iter().skip(stepped.len()).flatten() {
                    persist_actions(tx, actions, known.public_of, None)?;
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
                if self.removed_users.contains(&user) || self.removed_orgs.contains(&org) {
                    return Err(ApiError::forbidden("this user (or its organization) was removed"));
                }
                if let Some(k) = &key
                    && !self.batch_keys.insert((user, k.key.clone()))
                {
                    // Its twin in this batch is not committed yet: what it
                    // gets is not known. The client's retry gets it.
                    return Err(ApiError::new(
                        409,
                        format!(
                            "Idempotency-Key `{}`: the same request is being applied; retry",
                            k.key
                        ),
                    ));
                }
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
                let mut to_core: Vec<bool> = Vec::with_capacity(tasks.len());
                let mut room = std::mem::take(&mut self.batch_room);
                for t in &tasks {
                    let id = self.take_id();
                    let mut ps: Vec<u64> = t.after.iter().map(|&i| ids[i as usize]).collect();
                    ps.sort_unstable();
                    ps.dedup();
                    ids.push(id);
                    let now = ps.is_empty() && self.enters_now(&mut room, user, org);
                    to_core.push(now);
                    if now {
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
                self.batch_room = room;
                if let Some(k) = &key {
                    // Now, not when committed: a retry in the same batch
                    // is a replay too. Forgotten again if the commit fails.
                    let at_ms = self.clock().millis();
                    self.submit_keys.insert(
                        (user, k.key.clone()),
                        Keyed {
                            digest: k.digest,
                            ids: ids.clone(),
                            workflow: workflow.as_ref().map(|(w, _)| *w),
                            at_ms,
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
                        to_core,
                        workflow,
                        key,
                    },
                })
            }
            Write::Hold { who, task } => self.plan_hold(&who, task),
            Write::Unhold { who, task } => self.plan_unhold(&who, task),
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
            Write::Requeue { task } => {
                let running = self.live_task(task).is_some_and(|(core, _)| {
                    self.live.core().view().task(core).is_some_and(|t| t.is_running())
                });
                let Some((core, _)) = self.live_task(task).filter(|_| running) else {
                    let t = self.task_out(task)?;
                    return Err(ApiError::new(
                        409,
                        format!("task {task} is not running ({}): nothing to requeue", t.state),
                    ));
                };
                Ok(Plan {
                    events: vec![Event::Requeue { task: core }],
                    kind: PlanKind::Requeue(task),
                })
            }
            Write::Register { org, slots, host } => {
                if self.removed_orgs.contains(&org) {
                    return Err(ApiError::forbidden("this organization was removed"));
                }
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
                let mut ended_runs = Vec::new();
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
                            ended_runs.push(r.key());
                        }
                        ReportEvent::Signal(sig) => {
                            ended.insert(r.task);
                            events.push(Event::Fail { task });
                            let why = failure_reason(in_phase(&phases), &format!("signal {sig}"));
                            exits.push((r.task, None, Some(sig), Some(why)));
                            ended_runs.push(r.key());
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
                        worker,
                        exits,
                        kill,
                        missed,
                        listed,
                        ended_runs,
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
                to_core,
                workflow,
                ..
            } => {
                let held_before = self.held.len() as u64;
                for (((t, &id), ps), now_in) in tasks.into_iter().zip(&ids).zip(parents).zip(to_core) {
                    if now_in {
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
                            workflow: workflow.as_ref().map(|w| WorkflowRef {
                                workflow: WorkflowId(w.0),
                                activity: t.activity.unwrap_or(0),
                            }),
                            pending: ps.len() as u32,
                            hold: None,
                            parents: ps,
                        },
                    );
                    self.counts.add(user, St::Held, 1);
                    if self.held[&id].pending == 0 {
                        // Past the running quota.
                        self.throttle(id, user, org);
                    }
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
                    self.unthrottle(public, h.user);
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
                        self.unthrottle(*id, h.user);
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
                    Some(task) => self.task_written(task),
                    None => Written::Settled,
                }
            }
            PlanKind::Hold { task, by, core } => {
                self.apply_hold(task, by, core);
                self.after(actions, now);
                return self.task_written(task);
            }
            PlanKind::Unhold(task) => {
                self.apply_unhold(task);
                return self.task_written(task);
            }
            PlanKind::Cancel(task) | PlanKind::Requeue(task) => {
                self.after(actions, now);
                return self.task_written(task);
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
                worker,
                kill,
                missed,
                listed,
                ended_runs,
                ..
            } => {
                for key in ended_runs {
                    self.ended_here(key, worker);
                }
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
                // Its long poll returns now (410): the worker kills its runs
                // at once, not at its next heartbeat.
                self.generation += 1;
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
                Action::Ended(r) if self.withdrawing.contains_key(&r.spec.id) => {
                    let by = self.withdrawing.remove(&r.spec.id).expect("checked");
                    self.withdrawn(r, by);
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
        self.freed(user, r.spec.org.0);
        *self.counters.ended.entry(r.outcome.name()).or_default() += 1;
        // Its held children: one parent fewer to wait for, or cancelled.
        let Some(kids) = self.children.remove(&public) else {
            return;
        };
        for k in kids {
            let Some(h) = self.held.get_mut(&k) else { continue };
            if r.outcome == Outcome::Completed {
                h.pending = h.pending.saturating_sub(1);
                if h.pending == 0 && h.hold.is_none() {
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
                user, ids, to_core, ..
            } => {
                for (&id, &now) in ids.iter().zip(to_core) {
                    if now {
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
            | PlanKind::Requeue(_)
            | PlanKind::Hold { .. }
            | PlanKind::Unhold(_)
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
        matches!(
            self.kind,
            PlanKind::Withdraw { .. } | PlanKind::Hold { core: None, .. } | PlanKind::Unhold(_)
        )
    }

    /// The core id of the live task it puts on hold: the core's end of it
    /// is not the task's end.
    fn withdrawn(&self) -> Option<TaskId> {
        match self.kind {
            PlanKind::Hold { core, .. } => core,
            _ => None,
        }
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
        /// Each task's parents (public ids).
        parents: Vec<Vec<u64>>,
        /// Whether each task goes to the core now (no parents, room under
        /// the running quotas); if not, it is held.
        to_core: Vec<bool>,
        workflow: Option<(u32, WorkflowSpec)>,
        key: Option<SubmitKey>,
    },
    /// A submission retried with its idempotency key: its first reply.
    Replayed {
        ids: Vec<u64>,
        workflow: Option<u32>,
    },
    Cancel(u64),
    /// A running task the admin put back in the queue.
    Requeue(u64),
    /// A task put on hold; `core`: its core id if it was live (the step
    /// cancels it in the core), none if it was held already.
    Hold {
        task: u64,
        by: HoldBy,
        core: Option<TaskId>,
    },
    /// A task on hold released.
    Unhold(u64),
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
        worker: u64,
        /// Runs the report ended (their output may follow).
        ended_runs: Vec<RunKey>,
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
            to_core,
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
            for (((t, id), ps), &live) in tasks.iter().zip(ids).zip(parents).zip(to_core) {
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
        PlanKind::Hold { task, by, .. } => {
            tx.execute(
                "UPDATE tasks SET state = 'held', hold = ?2, core_id = NULL WHERE id = ?1",
                params![*task as i64, by.name()],
            )?;
        }
        PlanKind::Unhold(task) => {
            tx.execute(
                "UPDATE tasks SET hold = NULL WHERE id = ?1",
                params![*task as i64],
            )?;
        }
        PlanKind::Cancel(_) | PlanKind::Requeue(_) => {}
    }
    Ok(())
}

/// Ended tasks get their final state (under their public ids).
fn persist_actions(
    tx: &rusqlite::Transaction,
    actions: &[Action],
    public_of: &HashMap<TaskId, u64>,
    withdrawn: Option<TaskId>,
) -> rusqlite::Result<()> {
    for a in actions {
        if let Action::Ended(r) = a
            && Some(r.spec.id) != withdrawn
        {
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

#[cfg(test)]
mod tests;
