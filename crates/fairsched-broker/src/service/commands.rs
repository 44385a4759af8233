//! The write path: a batch of [`Write`]s is planned (checked against the
//! state, turned into the core's events), committed in one transaction
//! with the service's rows, then applied to the service's bookkeeping.

use super::hold::{HoldBy, Room};
use super::satisfaction::{ShareDelta, Staged};
use super::submit::{Submission, SubmitKey};
use super::workflows::parent_reason;
use super::{Broker, LATENCY_BUCKETS_MS, Live_, MISSED_REPORTS, Reply, ServiceError, St, Worker, allowed};
use crate::api::{NewTask, TaskOut, WorkflowSpec};
use crate::dashboard::What;
use crate::identity::{Principal, hash};
use crate::live::LiveError;
use fairsched_core::{Action, EndRecord, Event, Outcome, SlotId, TaskId, Time};
use fairsched_proto::wire::{RegisterReply, ReportReply, ReportRequest, RunKey};
use rusqlite::params;
use std::collections::HashMap;
use std::time::Instant;

/// Why a worker is gone, as its next call is told (410).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// It left (`/leave`, or its own stop).
    Left,
    /// No call of its for longer than its lease.
    Lapsed,
    /// The admin evicted it (`admin worker evict`, or its organization removed).
    Evicted,
    /// Gone before the broker last started (why is not kept).
    BeforeRestart,
}

impl Gone {
    /// What the worker is told.
    pub fn says(self) -> &'static str {
        match self {
            Gone::Left => "left",
            Gone::Lapsed => "lost its lease (no call answered for longer than it)",
            Gone::Evicted => "was evicted by the admin",
            Gone::BeforeRestart => "was gone before the broker restarted",
        }
    }
}

/// A write: it becomes one step of the core.
pub enum Write {
    Submit {
        user: i64,
        org: u32,
        tasks: Vec<NewTask>,
        workflow: Option<WorkflowSpec>,
        /// The request's `Idempotency-Key`, if it had one.
        key: Option<SubmitKey>,
        /// A step of a request written in steps (`SUBMIT_STEP`): the
        /// reservation ([`Broker::reserve`]) its tasks come out of, checked
        /// against the queued quota for the whole request; `None`: these
        /// tasks are checked now.
        reservation: Option<u64>,
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
    /// released (see the `hold` module).
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
        why: Gone,
    },
    /// The worker takes no new task: its free slots leave now, the others
    /// as their runs end (a pilot job near the end of its wall time).
    Drain {
        worker: u64,
        org: u32,
    },
    /// The admin holds a worker: as a drain, but it stays, and gets its
    /// slots back when released.
    HoldWorker {
        worker: u64,
    },
    /// The admin releases a held worker.
    ReleaseWorker {
        worker: u64,
    },
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
    /// A worker held (`held`) or released: its slots in the platform now
    /// (a held worker's still running a task; a released one gets the
    /// rest back as those runs end).
    WorkerHeld {
        held: bool,
        slots: u32,
    },
    /// Held tasks released or cancelled (internal: no client waits).
    Settled,
}

/// What a commit's closure may read of the service while the core is
/// being stepped: enough to tell how a batch changes [`Satisfaction`](super::satisfaction::Satisfaction) and
/// to write ended tasks under their public ids.
pub(super) struct Known<'a> {
    pub(super) tasks: &'a HashMap<TaskId, Live_>,
    pub(super) run_start: &'a HashMap<TaskId, (i64, i64)>,
    pub(super) workers: &'a HashMap<u64, Worker>,
    pub(super) public_of: &'a HashMap<TaskId, u64>,
}

/// Runs started or stopped earlier in the batch, and the users of tasks
/// submitted in it.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) runs: HashMap<TaskId, Option<(i64, i64)>>,
    pub(super) users: HashMap<TaskId, i64>,
}

impl Known<'_> {
    fn plan_delta(&self, plan: &Plan, d: &mut ShareDelta, batch: &mut Batch) {
        match &plan.kind {
            PlanKind::Submit(s) => {
                for (&id, &now) in s.ids.iter().zip(&s.to_core) {
                    if now {
                        d.user(s.user).live += 1;
                        batch.users.insert(TaskId(id), s.user);
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
            PlanKind::Drain { .. } | PlanKind::HoldWorker(_) => d.slots_moved = true,
            PlanKind::Rejoin { n, .. } => d.slots += *n as i64,
            PlanKind::ReleaseWorker(_) => {}
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

pub(super) struct Plan {
    pub(super) events: Vec<Event>,
    pub(super) kind: PlanKind,
}

impl Plan {
    /// It writes the service's tables only: no step of the core (held
    /// tasks cancelled — the core never knew them). Every other plan is a
    /// step, even without events (a heartbeat), as it always was.
    fn tables_only(&self) -> bool {
        matches!(
            self.kind,
            PlanKind::Withdraw { .. }
                | PlanKind::Hold { core: None, .. }
                | PlanKind::Unhold(_)
                | PlanKind::ReleaseWorker(_)
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
pub(super) type Exit = (u64, Option<i32>, Option<i32>, Option<String>);

pub(super) enum PlanKind {
    Submit(Submission),
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
        why: Gone,
    },
    /// A worker that drains.
    Drain {
        worker: u64,
    },
    /// A worker the admin holds (its slots drain).
    HoldWorker(u64),
    /// A held worker released (its slots rejoin at the next
    /// [`Broker::settle`]).
    ReleaseWorker(u64),
    /// Slots joining for a released worker: `n` from slot `first`.
    Rejoin {
        worker: u64,
        first: u32,
        n: u32,
    },
}

/// The service's rows for an accepted write.
pub(super) fn persist(tx: &rusqlite::Transaction, plan: &Plan, now_ms: i64) -> rusqlite::Result<()> {
    match &plan.kind {
        PlanKind::Submit(s) => s.persist(tx, now_ms)?,
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
        PlanKind::Leave { worker, failed, .. } => {
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
        PlanKind::HoldWorker(worker) => {
            tx.execute(
                "UPDATE workers SET state = 'held' WHERE id = ?1 AND state = 'active'",
                params![*worker as i64],
            )?;
        }
        PlanKind::ReleaseWorker(worker) => {
            tx.execute(
                "UPDATE workers SET state = 'active' WHERE id = ?1 AND state = 'held'",
                params![*worker as i64],
            )?;
        }
        PlanKind::Rejoin { worker, first, n } => {
            tx.execute(
                "INSERT INTO worker_slots (worker, first_slot, slots) VALUES (?1, ?2, ?3)",
                params![*worker as i64, first, n],
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
pub(super) fn persist_actions(
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

pub(super) fn end_row(tx: &rusqlite::Transaction, public: u64, r: &EndRecord) -> rusqlite::Result<()> {
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

/// The satisfaction integrals after a batch (see [`Satisfaction`](super::satisfaction::Satisfaction)).
pub(super) fn persist_shares(tx: &rusqlite::Transaction, st: &Staged) -> rusqlite::Result<()> {
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

impl Broker {
    /// A write's reply: task `task` as it is now.
    pub(super) fn task_written(&self, task: u64) -> Written {
        Written::Cancelled(self.task_out(task).unwrap_or_else(|e| TaskOut {
            id: task,
            state: format!("unknown: {}", e.message()),
            ..TaskOut::default()
        }))
    }

    /// When the next timer is due (core time).
    pub fn next_timer(&self) -> Option<Time> {
        self.timers.iter().map(|t| t.0).min()
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
    pub(super) fn write_unsettled(&mut self, writes: Vec<Write>) -> Vec<Reply<Written>> {
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

    /// Commits `plans` (and, with `timers`, the timers due) in one
    /// transaction and applies what was committed. A plan about held tasks
    /// only ([`Plan::tables_only`]) writes the service's tables alone.
    pub(super) fn commit(&mut self, plans: Vec<Reply<Plan>>, now: Time, timers: bool) -> Vec<Reply<Written>> {
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
        let draining =
            !self.rejoin.is_empty() || self.workers.values().any(|w| (w.draining || w.held) && !w.lost);
        let results = if steps.is_empty() {
            Vec::new()
        } else {
            self.live.commit_with(steps, |tx, outcomes, _| {
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
                Some(e) if !logged => Err(ServiceError::unavailable(e.to_string())),
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
                .map_err(|e| {
                    ServiceError::unavailable(format!("{}: {e}", self.live.store().path().display()))
                })
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
                && let PlanKind::Submit(s) = &p.kind
                && let Some(k) = &s.key
            {
                // Not submitted: a retry with this key submits.
                self.submit_keys.remove(&(s.user, k.key.clone()));
            }
            match result {
                Ok(actions) => {
                    self.counters.steps += 1;
                    let reply = self.apply(p, &actions, now);
                    replies.push(Ok(reply));
                }
                Err(LiveError::Refused(m)) if m.starts_with("not logged") => {
                    replies.push(Err(ServiceError::unavailable(m)))
                }
                Err(e) => replies.push(Err(ServiceError::Invalid(e.to_string()))),
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
    pub(super) fn plan(&mut self, w: Write) -> Reply<Plan> {
        match w {
            Write::Submit {
                user,
                org,
                tasks,
                workflow,
                key,
                reservation,
            } => self.plan_submit(user, org, tasks, workflow, key, reservation),
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
                    return Err(ServiceError::Conflict(format!(
                        "task {task} has already ended ({})",
                        t.state
                    )));
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
                    return Err(ServiceError::Conflict(format!(
                        "task {task} is not running ({}): nothing to requeue",
                        t.state
                    )));
                };
                Ok(Plan {
                    events: vec![Event::Requeue { task: core }],
                    kind: PlanKind::Requeue(task),
                })
            }
            Write::Register { org, slots, host } => self.plan_register(org, slots, host),
            Write::Report { worker, org, body } => self.plan_report(worker, org, body),
            Write::Leave { worker, org, why } => self.plan_leave(worker, org, why),
            Write::Drain { worker, org } => self.plan_drain(worker, org),
            Write::HoldWorker { worker } => self.plan_hold_worker(worker),
            Write::ReleaseWorker { worker } => self.plan_release_worker(worker),
        }
    }

    /// Applies a committed write to the service's bookkeeping; its reply.
    pub(super) fn apply(&mut self, p: Plan, actions: &[Action], now: Time) -> Written {
        let reply = match p.kind {
            PlanKind::Replayed { ids, workflow } => Written::Submitted { ids, workflow },
            PlanKind::Submit(s) => self.apply_submission(s, now),
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
                let capacity = slots;
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
                        gone: Gone::Left,
                        draining: false,
                        held: false,
                        capacity,
                        short_of_disk: None,
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
            PlanKind::Leave { worker, why, .. } => {
                // Its long poll returns now (it is gone): the worker kills its runs
                // at once, not at its next heartbeat.
                self.generation += 1;
                if let Some(w) = self.workers.get_mut(&worker) {
                    self.recent
                        .note(now.millis(), What::WorkerLeft { worker, org: w.org });
                    w.lost = true;
                    w.gone = why;
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
                // It kills everything when told it is gone.
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
                // Its waiting poll answers now, telling it to drain.
                self.generation += 1;
                Written::Draining { slots }
            }
            PlanKind::HoldWorker(worker) => {
                if let Some(w) = self.workers.get_mut(&worker) {
                    w.held = true;
                }
                self.rejoin.remove(&worker);
                self.after(actions, now);
                return Written::WorkerHeld {
                    held: true,
                    slots: self.present_slots(worker),
                };
            }
            PlanKind::ReleaseWorker(worker) => {
                if let Some(w) = self.workers.get_mut(&worker) {
                    w.held = false;
                }
                self.rejoin.insert(worker);
                self.rejoin_check = true;
                Written::WorkerHeld {
                    held: false,
                    slots: self.present_slots(worker),
                }
            }
            PlanKind::Rejoin { worker, first, n } => {
                let slots: Vec<SlotId> = (first..first + n).map(SlotId).collect();
                for &s in &slots {
                    self.slot_worker.insert(s, worker);
                }
                if let Some(w) = self.workers.get_mut(&worker) {
                    w.slots.extend(slots);
                }
                Written::Settled
            }
        };
        self.after(actions, now);
        reply
    }

    /// Bookkeeping from the core's actions: who runs what, timers,
    /// counters, held children of ended tasks.
    pub(super) fn after(&mut self, actions: &[Action], now: Time) {
        // A released worker's slot that drained leaves with its run: one
        // joins for it at the next round of [`Broker::settle`].
        if !self.rejoin.is_empty()
            && actions
                .iter()
                .any(|a| matches!(a, Action::Ended(_) | Action::Stop { .. }))
        {
            self.rejoin_check = true;
        }
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

    pub(super) fn ended(&mut self, r: &EndRecord) {
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
}
