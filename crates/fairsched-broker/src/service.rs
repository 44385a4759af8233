//! The broker's state machine, without HTTP: requests in, replies out.
//! One thread owns it ([`crate::serve`]); a batch of requests becomes one
//! group commit — each write request is one step of the core, logged with
//! what the service derived from it (task descriptions, worker slots,
//! outcomes) in the same transaction, and only then answered.
//!
//! What the core decides is rebuilt from the log on open; what the service
//! keeps beside it is either in its own tables (written with the steps) or
//! derived from the core's state (which worker runs what), so a restart at
//! any moment recovers both.

use crate::api::*;
use crate::identity::{IdentityError, Principal};
use crate::live::{Live, LiveError};
use crate::store::unix_ms;
use fairsched_core::{Action, EndRecord, Event, MachineId, OrgId, Phase, SlotId, TaskId, TaskSpec, Time};
use fairsched_worker::wire::{
    Assignment, Phase as WirePhase, RegisterReply, ReportEvent, ReportReply, ReportRequest, RunKey,
};
use rusqlite::{OptionalExtension, params};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// The service's own tables, created with the log.
pub const SCHEMA: &str = "
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, org INTEGER NOT NULL,
        name TEXT NOT NULL, command TEXT NOT NULL, stage_in TEXT, stage_out TEXT,
        priority INTEGER NOT NULL,
        state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        exit_code INTEGER, signal INTEGER,
        submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER);
    CREATE INDEX tasks_user ON tasks (user_id, id);
    CREATE TABLE workers (
        id INTEGER PRIMARY KEY, org INTEGER NOT NULL, host TEXT NOT NULL,
        first_slot INTEGER NOT NULL, slots INTEGER NOT NULL,
        state TEXT NOT NULL, joined_ms INTEGER NOT NULL, left_ms INTEGER,
        lease_ms INTEGER NOT NULL);
";

/// Settings of a running broker that are not part of the log (changing
/// them between restarts does not change past decisions).
#[derive(Clone, Debug)]
pub struct Settings {
    /// A worker silent this long loses its slots and its tasks.
    pub lease: Duration,
    /// A task whose worker was lost this many times fails instead of
    /// going back to the queue.
    pub max_attempts: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            lease: Duration::from_secs(30),
            max_attempts: 5,
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
}

/// What a write answers.
#[derive(Debug)]
pub enum Written {
    Submitted(Vec<u64>),
    Cancelled(TaskOut),
    Registered(RegisterReply),
    Reported(ReportReply),
    Left,
}

/// One live task's description (the core knows the rest).
#[derive(Clone, Debug)]
struct Live_ {
    user: i64,
    name: String,
    command: String,
    stage_in: Option<String>,
    stage_out: Option<String>,
    submit_ms: i64,
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

/// The broker's state: the core with its log, and the service's
/// bookkeeping around it.
pub struct Broker {
    live: Live,
    settings: Settings,
    tasks: HashMap<TaskId, Live_>,
    workers: HashMap<u64, Worker>,
    slot_worker: HashMap<SlotId, u64>,
    /// Running tasks by worker, and the worker of each running task.
    running: HashMap<u64, BTreeSet<TaskId>>,
    runs_on: HashMap<TaskId, u64>,
    /// (task, attempt) already handed to their worker since this process
    /// started (after a restart everything running is handed again; the
    /// worker ignores what it already runs).
    delivered: HashSet<(TaskId, u32)>,
    next_slot: u32,
    next_worker: u64,
    timers: Vec<(Time, u64)>,
    pub counters: Counters,
    /// Bumped whenever tasks start (long polls wait on it).
    pub generation: u64,
}

/// What was refused when opening.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("{0}")]
    Store(String),
}

impl Broker {
    /// Opens the database (created by `fairsched admin init`) and rebuilds
    /// the state from its log.
    pub fn open(path: &Path, settings: Settings) -> Result<Broker, OpenError> {
        let live = Live::open(path)?;
        let store_err = |e: rusqlite::Error| OpenError::Store(format!("{}: {e}", path.display()));
        let mut b = Broker {
            timers: live.pending_timers().to_vec(),
            live,
            settings,
            tasks: HashMap::new(),
            workers: HashMap::new(),
            slot_worker: HashMap::new(),
            running: HashMap::new(),
            runs_on: HashMap::new(),
            delivered: HashSet::new(),
            next_slot: 0,
            next_worker: 1,
            counters: Counters {
                dispatch: vec![0; LATENCY_BUCKETS_MS.len()],
                ..Counters::default()
            },
            generation: 0,
        };
        let conn = b.live.store().conn();
        {
            let mut q = conn
                .prepare("SELECT id, org, first_slot, slots, state, lease_ms FROM workers ORDER BY id")
                .map_err(store_err)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                })
                .map_err(store_err)?;
            let now = Instant::now();
            for row in rows {
                let (id, org, first, n, state, lease_ms) = row.map_err(store_err)?;
                let slots: Vec<SlotId> = (first..first + n).map(|s| SlotId(s as u32)).collect();
                b.next_slot = b.next_slot.max((first + n) as u32);
                b.next_worker = b.next_worker.max(id as u64 + 1);
                let lost = state != "active";
                if !lost {
                    for &s in &slots {
                        b.slot_worker.insert(s, id as u64);
                    }
                }
                // A worker that was active gets a fresh lease from now.
                b.workers.insert(
                    id as u64,
                    Worker {
                        org: org as u32,
                        lease: Duration::from_millis(lease_ms.max(0) as u64),
                        slots,
                        last_seen: now,
                        lost,
                    },
                );
            }
        }
        {
            let mut q = conn
                .prepare(
                    "SELECT id, user_id, name, command, stage_in, stage_out, submit_ms FROM tasks WHERE state = 'live'",
                )
                .map_err(store_err)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        Live_ {
                            user: r.get(1)?,
                            name: r.get(2)?,
                            command: r.get(3)?,
                            stage_in: r.get(4)?,
                            stage_out: r.get(5)?,
                            submit_ms: r.get(6)?,
                        },
                    ))
                })
                .map_err(store_err)?;
            for row in rows {
                let (id, t) = row.map_err(store_err)?;
                b.tasks.insert(TaskId(id as u64), t);
            }
        }
        // Which worker runs what: from the core's state.
        let view = b.live.core().view();
        for id in b.live.core().live_task_ids() {
            let Some(t) = view.task(id) else { continue };
            if let Some(&s) = t.held_slots().first()
                && let Some(&w) = b.slot_worker.get(&s)
            {
                b.running.entry(w).or_default().insert(id);
                b.runs_on.insert(id, w);
            }
        }
        Ok(b)
    }

    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The core's clock now: milliseconds since the database was created.
    pub fn clock(&self) -> Time {
        Time::from_millis(unix_ms() - self.live.store().epoch_ms()).max(self.live.now())
    }

    /// Who holds `token`.
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>, ApiError> {
        self.live.store().authenticate(token).map_err(ApiError::internal)
    }

    pub fn add_org(&self, name: &str) -> Reply<OrgReply> {
        let id = self.live.store().add_org(name)?;
        Ok(OrgReply {
            id,
            name: name.to_string(),
        })
    }

    pub fn add_user(&self, name: &str, org: &str) -> Reply<UserReply> {
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
        let token = self.live.store().worker_token(org)?;
        Ok(TokenReply {
            org: org.into(),
            token,
        })
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

    /// Assignments not yet handed to `worker` (renews its lease).
    pub fn poll(&mut self, worker: u64, org: u32) -> Reply<Vec<Assignment>> {
        self.check_worker(worker, org)?;
        let view = self.live.core().view();
        let mut out = Vec::new();
        if let Some(set) = self.running.get(&worker) {
            for &id in set {
                let Some(t) = view.task(id) else { continue };
                let attempt = t.attempts();
                if !self.delivered.insert((id, attempt)) {
                    continue;
                }
                let Some(d) = self.tasks.get(&id) else { continue };
                out.push(Assignment {
                    task: id.0,
                    attempt,
                    name: d.name.clone(),
                    command: d.command.clone(),
                    stage_in: d.stage_in.clone(),
                    stage_out: d.stage_out.clone(),
                });
            }
        }
        Ok(out)
    }

    /// The task as its owner sees it.
    fn task_out(&self, id: u64) -> Reply<TaskOut> {
        let tid = TaskId(id);
        if let Some(d) = self.tasks.get(&tid) {
            let view = self.live.core().view();
            let t = view.task(tid);
            let spec = t.map(|t| t.spec().clone());
            return Ok(TaskOut {
                id,
                name: d.name.clone(),
                user: d.user,
                org: spec.as_ref().map(|s| s.org.0).unwrap_or(0),
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

    /// Every task of `who` (all of them for the admin).
    pub fn tasks(&self, who: &Principal) -> Reply<Vec<TaskOut>> {
        let user = match who {
            Principal::Admin => None,
            Principal::User { id, .. } => Some(*id),
            Principal::Worker { .. } => return Err(ApiError::forbidden("workers have no tasks")),
        };
        let conn = self.live.store().conn();
        let mut q = conn
            .prepare_cached(&format!(
                "{TASK_COLUMNS} WHERE (?1 IS NULL OR user_id = ?1) ORDER BY id"
            ))
            .map_err(ApiError::internal)?;
        let rows = q.query_map([user], row_task).map_err(ApiError::internal)?;
        let mut out = Vec::new();
        for r in rows {
            let t = r.map_err(ApiError::internal)?;
            if t.state == "live" {
                out.push(self.task_out(t.id)?);
            } else {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Counts by state for `who`.
    pub fn status(&self, who: &Principal) -> Reply<StatusReply> {
        let user = match who {
            Principal::Admin => None,
            Principal::User { id, .. } => Some(*id),
            Principal::Worker { .. } => return Err(ApiError::forbidden("workers have no tasks")),
        };
        let mut st = StatusReply::default();
        let conn = self.live.store().conn();
        let mut q = conn
            .prepare_cached(
                "SELECT state, count(*) FROM tasks WHERE state != 'live' AND (?1 IS NULL OR user_id = ?1) GROUP BY state",
            )
            .map_err(ApiError::internal)?;
        let rows = q
            .query_map([user], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(ApiError::internal)?;
        for r in rows {
            let (state, n) = r.map_err(ApiError::internal)?;
            let n = n as u64;
            match state.as_str() {
                "completed" => st.completed = n,
                "failed" => st.failed = n,
                "cancelled" => st.cancelled = n,
                "killed" => st.killed = n,
                _ => st.rejected += n,
            }
        }
        let view = self.live.core().view();
        for (id, d) in &self.tasks {
            if user.is_some_and(|u| u != d.user) {
                continue;
            }
            match view.task(*id) {
                Some(t) if t.is_running() => st.running += 1,
                Some(_) => st.waiting += 1,
                None => {}
            }
        }
        st.workers = self.workers.values().filter(|w| !w.lost).count() as u64;
        st.slots = view.total_slots() as u64;
        st.busy_slots = view.busy_slots();
        Ok(st)
    }

    /// Why task `id` is not running (or where it runs).
    pub fn explain(&self, who: &Principal, id: u64) -> Reply<serde_json::Value> {
        let t = self.task(who, id)?;
        let cfg = self.live.store().config();
        let policy = serde_json::json!({
            "order": cfg.order, "allocate": cfg.allocate, "control": cfg.control,
        });
        let view = self.live.core().view();
        let Some(tv) = view.task(TaskId(id)) else {
            return Ok(serde_json::json!({
                "task": id, "state": t.state, "policy": policy,
                "why": format!("it has ended ({})", t.state),
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
        // Ahead of it under priority, then submission order.
        let (prio, seq) = (tv.priority(), tv.seq());
        let mut ahead = 0u64;
        let mut ahead_same_user = 0u64;
        let mut user_running = 0u64;
        let mut org_running = 0u64;
        for other in self.live.core().live_task_ids() {
            let Some(o) = view.task(other) else { continue };
            if o.is_running() {
                if o.spec().user == tv.spec().user {
                    user_running += 1;
                }
                if o.org() == tv.org() {
                    org_running += 1;
                }
                continue;
            }
            if o.priority() > prio || (o.priority() == prio && o.seq() < seq) {
                ahead += 1;
                if o.spec().user == tv.spec().user {
                    ahead_same_user += 1;
                }
            }
        }
        let free = view.total_slots() as u64 - view.busy_slots();
        let why = if view.total_slots() == 0 {
            "no worker has joined: there are no slots".to_string()
        } else if free == 0 {
            format!(
                "all {} slots are busy; {} waiting task(s) are ahead of it by priority then submission order (the `{}` policy may pick differently: it weighs users and organizations)",
                view.total_slots(),
                ahead,
                cfg.order
            )
        } else {
            format!(
                "{free} slot(s) are free but the `{}` policy keeps it waiting (its user or organization is ahead of its fair share)",
                cfg.order
            )
        };
        // The policies' fairness state that concerns this task.
        let mut fairness = serde_json::Map::new();
        for g in self.live.core().gauges() {
            match g.key {
                None => {
                    fairness.insert(g.name.to_string(), serde_json::json!(g.value));
                }
                Some(("org", o)) if o == tv.org().0 as i64 => {
                    fairness.insert(format!("its_{}", g.name), serde_json::json!(g.value));
                }
                Some(_) => {}
            }
        }
        Ok(serde_json::json!({
            "task": id, "state": "waiting", "policy": policy,
            "fairness": fairness,
            "priority": prio,
            "ahead_by_priority_then_fifo": ahead,
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

    /// Prepares, commits and applies a batch of writes: one step each, all
    /// in one transaction. Due timers ride along as their own steps.
    pub fn write(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
        let now = self.clock();
        let mut steps: Vec<(Time, Vec<Event>)> = Vec::new();
        let mut plans: Vec<Reply<Plan>> = Vec::with_capacity(writes.len());
        for w in writes {
            let p = self.plan(w);
            if let Ok(p) = &p {
                steps.push((now, p.events.clone()));
            }
            plans.push(p);
        }
        let (due, rest): (Vec<_>, Vec<_>) = self.timers.iter().partition(|t| t.0 <= now);
        self.timers = rest;
        for (_, token) in &due {
            steps.push((now, vec![Event::Timer { token: *token }]));
        }
        let accepted_plans: Vec<&Plan> = plans.iter().filter_map(|p| p.as_ref().ok()).collect();
        let now_ms = now.millis();
        let results = self.live.commit_with(steps, |tx, outcomes| {
            for (plan, actions) in accepted_plans.iter().zip(outcomes) {
                if let Some(actions) = actions {
                    persist(tx, plan, now_ms)?;
                    persist_actions(tx, actions)?;
                }
            }
            for actions in outcomes.iter().skip(accepted_plans.len()).flatten() {
                persist_actions(tx, actions)?;
            }
            Ok(())
        });
        self.counters.commits += 1;
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
            match results.next().expect("a result per step") {
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
            Write::Submit { user, org, tasks } => {
                let mut events = Vec::with_capacity(tasks.len());
                let mut ids = Vec::with_capacity(tasks.len());
                for t in &tasks {
                    let id = self.live.fresh_id();
                    ids.push(id.0);
                    let mut spec = TaskSpec::new(id.0, user, org);
                    spec.priority = t.priority.unwrap_or(1);
                    spec.optional = t.optional;
                    events.push(Event::Submit(spec));
                }
                Ok(Plan {
                    events,
                    kind: PlanKind::Submit {
                        user,
                        org,
                        tasks,
                        ids,
                    },
                })
            }
            Write::Cancel { who, task } => {
                let t = self.task_out(task)?;
                allowed(&who, t.user, task)?;
                if !self.tasks.contains_key(&TaskId(task)) {
                    return Err(ApiError::new(
                        409,
                        format!("task {task} has already ended ({})", t.state),
                    ));
                }
                Ok(Plan {
                    events: vec![Event::Cancel { task: TaskId(task) }],
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
                    },
                })
            }
            Write::Report { worker, org, body } => {
                self.check_worker(worker, org)?;
                let view = self.live.core().view();
                let mine = self.running.get(&worker);
                let current = |task: u64, attempt: u32| {
                    let id = TaskId(task);
                    mine.is_some_and(|m| m.contains(&id))
                        && view
                            .task(id)
                            .is_some_and(|t| t.is_running() && t.attempts() == attempt)
                };
                let mut events = Vec::new();
                let mut exits = Vec::new();
                let mut ended: HashSet<u64> = HashSet::new();
                for r in &body.reports {
                    if !current(r.task, r.attempt) || ended.contains(&r.task) {
                        continue; // late, lost or duplicate: ignored
                    }
                    let task = TaskId(r.task);
                    match r.event {
                        ReportEvent::Phase(p) => events.push(Event::Phase {
                            task,
                            phase: phase(p),
                        }),
                        ReportEvent::Exit(code) => {
                            ended.insert(r.task);
                            events.push(if code == 0 {
                                Event::Complete { task }
                            } else {
                                Event::Fail { task }
                            });
                            exits.push((r.task, Some(code), None));
                        }
                        ReportEvent::Signal(sig) => {
                            ended.insert(r.task);
                            events.push(Event::Fail { task });
                            exits.push((r.task, None, Some(sig)));
                        }
                    }
                }
                // What it runs that it should not (cancelled, or not its).
                let kill: Vec<RunKey> = body
                    .running
                    .iter()
                    .filter(|r| !current(r.task, r.attempt))
                    .copied()
                    .collect();
                Ok(Plan {
                    events,
                    kind: PlanKind::Report { exits, kill },
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
                for &id in self.running.get(&worker).into_iter().flatten() {
                    let Some(t) = view.task(id) else { continue };
                    if t.attempts() >= self.settings.max_attempts {
                        events.push(Event::Fail { task: id });
                    } else {
                        events.push(Event::Requeue { task: id });
                    }
                }
                for &slot in &self.workers[&worker].slots {
                    events.push(Event::SlotLeave { slot });
                }
                Ok(Plan {
                    events,
                    kind: PlanKind::Leave(worker),
                })
            }
        }
    }

    /// Applies a committed write to the service's bookkeeping; its reply.
    fn apply(&mut self, p: Plan, actions: &[Action], now: Time) -> Written {
        let reply = match p.kind {
            PlanKind::Submit { user, tasks, ids, .. } => {
                for (t, &id) in tasks.into_iter().zip(&ids) {
                    self.tasks.insert(
                        TaskId(id),
                        Live_ {
                            user,
                            name: t.name.unwrap_or_default(),
                            command: t.command,
                            stage_in: t.stage_in,
                            stage_out: t.stage_out,
                            submit_ms: now.millis(),
                        },
                    );
                }
                Written::Submitted(ids)
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
                ..
            } => {
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
                    },
                );
                Written::Registered(RegisterReply {
                    worker: id,
                    lease_ms: self.settings.lease.as_millis() as u64,
                    heartbeat_ms: (self.settings.lease.as_millis() as u64 / 3).max(1),
                })
            }
            PlanKind::Report { kill, .. } => Written::Reported(ReportReply { kill }),
            PlanKind::Leave(worker) => {
                if let Some(w) = self.workers.get_mut(&worker) {
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
                    }
                }
                Written::Left
            }
        };
        self.after(actions, now);
        reply
    }

    /// Bookkeeping from the core's actions: who runs what, timers,
    /// counters.
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
                        let ms = now.millis() - d.submit_ms;
                        let b = LATENCY_BUCKETS_MS.iter().position(|&x| ms <= x);
                        if let Some(b) = b {
                            self.counters.dispatch[b] += 1;
                        }
                        self.counters.dispatch_sum_ms += ms;
                        self.counters.dispatch_count += 1;
                    }
                }
                Action::Stop { task, .. } => self.unrun(*task),
                Action::Ended(r) => {
                    self.unrun(r.spec.id);
                    self.tasks.remove(&r.spec.id);
                    *self.counters.ended.entry(r.outcome.name()).or_default() += 1;
                }
                Action::Timer { at, token } => self.timers.push((*at, *token)),
                Action::Priority { .. } => {}
            }
        }
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
}

fn allowed(who: &Principal, owner: i64, id: u64) -> Reply<()> {
    match who {
        Principal::Admin => Ok(()),
        Principal::User { id: me, .. } if *me == owner => Ok(()),
        Principal::User { .. } => Err(ApiError::forbidden(format!("task {id} belongs to another user"))),
        Principal::Worker { .. } => Err(ApiError::forbidden("workers have no tasks")),
    }
}

/// The columns [`row_task`] reads, in its order.
const TASK_COLUMNS: &str = "SELECT id, name, user_id, org, state, attempts, exit_code, signal, submit_ms, start_ms, end_ms, command FROM tasks";

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
    })
}

struct Plan {
    events: Vec<Event>,
    kind: PlanKind,
}

enum PlanKind {
    Submit {
        user: i64,
        org: u32,
        tasks: Vec<NewTask>,
        ids: Vec<u64>,
    },
    Cancel(u64),
    Register {
        id: u64,
        org: u32,
        host: String,
        first: u32,
        slots: u32,
        lease_ms: u64,
    },
    Report {
        exits: Vec<(u64, Option<i32>, Option<i32>)>,
        kill: Vec<RunKey>,
    },
    Leave(u64),
}

/// The service's rows for an accepted write.
fn persist(tx: &rusqlite::Transaction, plan: &Plan, now_ms: i64) -> rusqlite::Result<()> {
    match &plan.kind {
        PlanKind::Submit {
            user,
            org,
            tasks,
            ids,
        } => {
            let mut ins = tx.prepare_cached(
                "INSERT INTO tasks (id, user_id, org, name, command, stage_in, stage_out, priority, state, submit_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'live', ?9)",
            )?;
            for (t, id) in tasks.iter().zip(ids) {
                ins.execute(params![
                    *id as i64,
                    user,
                    org,
                    t.name.as_deref().unwrap_or(""),
                    t.command,
                    t.stage_in,
                    t.stage_out,
                    t.priority.unwrap_or(1),
                    now_ms
                ])?;
            }
        }
        PlanKind::Register {
            id,
            org,
            host,
            first,
            slots,
            lease_ms,
        } => {
            tx.execute(
                "INSERT INTO workers (id, org, host, first_slot, slots, state, joined_ms, lease_ms) VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, ?7)",
                params![*id as i64, org, host, first, slots, now_ms, *lease_ms as i64],
            )?;
        }
        PlanKind::Report { exits, .. } => {
            let mut up = tx.prepare_cached("UPDATE tasks SET exit_code = ?2, signal = ?3 WHERE id = ?1")?;
            for (task, code, signal) in exits {
                up.execute(params![*task as i64, code, signal])?;
            }
        }
        PlanKind::Leave(worker) => {
            tx.execute(
                "UPDATE workers SET state = 'gone', left_ms = ?2 WHERE id = ?1",
                params![*worker as i64, now_ms],
            )?;
        }
        PlanKind::Cancel(_) => {}
    }
    Ok(())
}

/// Ended tasks get their final state.
fn persist_actions(tx: &rusqlite::Transaction, actions: &[Action]) -> rusqlite::Result<()> {
    for a in actions {
        if let Action::Ended(r) = a {
            end_row(tx, r)?;
        }
    }
    Ok(())
}

fn end_row(tx: &rusqlite::Transaction, r: &EndRecord) -> rusqlite::Result<()> {
    let mut up = tx.prepare_cached(
        "UPDATE tasks SET state = ?2, attempts = ?3, start_ms = ?4, end_ms = ?5 WHERE id = ?1",
    )?;
    let attempts = r.runs().count() as i64;
    let start = r.runs().last().map(|a| a.start.millis());
    up.execute(params![
        r.spec.id.0 as i64,
        r.outcome.name(),
        attempts,
        start,
        r.end.millis()
    ])?;
    Ok(())
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
            "SELECT id, user_id, org, state, submit_ms, start_ms, end_ms FROM tasks WHERE state != 'live' ORDER BY id",
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
