//! The simulated world of a workflow-fairness run, as one client agent:
//! the workflow engine (submits workflows, releases each task when its
//! parents completed, resubmits failed and killed tasks up to the grid's
//! limit), the pilots (slots joining and leaving), run failures, and other
//! users' background tasks.
//!
//! Grid conditions are a function of the seed and of time only: pilot
//! arrivals, lifetimes and speeds, background arrivals and durations come
//! from their own random streams in time order, and whether a run fails
//! (and when) is a hash of (seed, workflow, task, attempt). Two runs with
//! the same seed — Fairness and No-Fairness — therefore see the same grid,
//! however differently they schedule.
//!
//! The paper ran Fairness and No-Fairness side by side and, "for each task
//! priority increase in the Fairness workflow set", prioritized a task of
//! the No-Fairness set too, so that both raced equally against other
//! users. We run them one after the other on identical grids and do the
//! same: the No-Fairness run replays the instants of the Fairness run's
//! priority changes as raises of its own oldest waiting workflow tasks
//! ([`World::mirror`]).
//!
//! Two features of the paper's middleware are optional ([`Grid`]'s
//! `[engine]`): MOTEUR's task replication (a task running much longer
//! than its activity's median gets a copy; the first copy to complete
//! wins, the others are cancelled) and DIRAC's lift by cancel and
//! resubmission (a lifted task leaves the queue and comes back later,
//! behind the tasks already there at its new priority). Both act on what
//! the engine observes — starts, ends, the medians of completed runs —
//! never on a run's hidden duration.

use super::grid::Grid;
use crate::agent::{Agent, AgentCtx};
use crate::engine::Arrival;
use crate::errors::SimError;
use fairsched_core::{
    Action, Event, OrgId, Outcome, SlotId, TaskId, TaskSpec, Time, WorkflowId, WorkflowRef, derive_seed,
};
use fairsched_trace::workflow::Workflow;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The user id of background tasks (workflow k is user k).
pub const BACKGROUND_USER: i64 = 1_000_000;

/// How often the engine looks for tasks to replicate, s.
pub const REPLICATION_PERIOD_S: i64 = 60;

const SPEED: u64 = 0x5EED_0001;
const PILOTS: u64 = 0x5EED_0002;
const BACKGROUND: u64 = 0x5EED_0003;
const FAILURE: u64 = 0x5EED_0004;

// Wake-up tokens: kind in the top byte.
const SUBMIT: u64 = 1 << 56;
const JOIN: u64 = 2 << 56;
const LEAVE: u64 = 3 << 56;
const ARRIVE: u64 = 4 << 56;
const FAIL: u64 = 5 << 56;
const RAISE: u64 = 6 << 56;
const CHECK: u64 = 7 << 56;
const RESUBMIT: u64 = 8 << 56;
const KIND: u64 = 0xFF << 56;

/// The speed of `slot` on the grid of `seed`: one draw per slot, the same
/// in every run with this seed.
pub fn slot_speed(grid: &Grid, seed: u64, slot: SlotId) -> f64 {
    let mut rng = Pcg64Mcg::seed_from_u64(derive_seed(derive_seed(seed, SPEED), slot.0 as u64));
    grid.speed.sample(&mut rng)
}

fn secs(s: f64) -> Time {
    Time::from_millis((s * 1000.0).round().min(9.0e15) as i64)
}

/// A uniform draw in [0, 1) from a hash of `keys` (SplitMix chains).
fn hash_unit(seed: u64, keys: &[u64]) -> f64 {
    let h = keys
        .iter()
        .fold(derive_seed(seed, FAILURE), |h, &k| derive_seed(h, k));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// What happened to one workflow.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct WorkflowOutcome {
    pub name: String,
    pub submit_s: f64,
    /// Last task end − submission.
    pub makespan_s: f64,
    /// Critical path of the measured durations (the completed run of each
    /// task, as long as it took on its slot).
    pub m_own_s: f64,
    /// makespan / M_own.
    pub slowdown: f64,
    /// Mean over tasks of (start − submission) of the completed run.
    pub mean_wait_s: f64,
    pub tasks: usize,
    /// Runs that failed or were killed and were resubmitted.
    pub resubmissions: u32,
    /// A task failed more than the grid's retry limit: the workflow
    /// stopped there (its figures cover what completed).
    pub failed: bool,
}

struct Wf {
    submit: Time,
    wf: Workflow,
    children: Vec<Vec<u32>>,
    /// Parents not yet completed, per task.
    missing: Vec<u32>,
    attempts: Vec<u32>,
    measured: Vec<Time>,
    waits: Time,
    completed: usize,
    last_end: Time,
    resubmissions: u32,
    done: bool,
    failed: bool,
    /// Per task: completed (by one of its copies).
    task_done: Vec<bool>,
    /// Per task: copies made so far (the first is copy 0).
    copies_made: Vec<u32>,
    /// Per activity: the measured durations of its completed tasks.
    durations: Vec<Vec<Time>>,
}

/// A lifted task between its cancellation and its new submission.
struct Pending {
    wf: usize,
    task: u32,
    priority: i64,
    copy: u32,
    submitted: Time,
}

/// Where a live task of the world comes from.
#[derive(Clone, Copy)]
enum Owner {
    Workflow { wf: usize, task: u32 },
    Background,
}

/// The world agent (see the module documentation).
pub struct World {
    grid: Grid,
    seed: u64,
    wfs: Vec<Wf>,
    live: FxHashMap<TaskId, Owner>,
    /// Waiting workflow tasks by release order (for mirrored raises).
    waiting: BTreeMap<u64, TaskId>,
    order_of: FxHashMap<TaskId, u64>,
    released: u64,
    top_priority: i64,
    pilots: Pcg64Mcg,
    background: Pcg64Mcg,
    present: usize,
    next_slot: u32,
    unfinished: usize,
    /// Instants at which the core lifted a task's priority for the first
    /// time (the Control's raises).
    pub raises: Vec<Time>,
    lifted: rustc_hash::FxHashSet<TaskId>,
    mirror: Vec<Time>,
    /// Runs drawn to fail, and when: the failure of the run that started
    /// then. A run stopped before (killed with its pilot, requeued) takes
    /// its failure with it; the wake-up then finds nothing and sends
    /// nothing, so the core never steps at an instant only the hidden
    /// runtime of a run that no longer exists explains.
    failing: FxHashMap<TaskId, Time>,
    /// Background tasks waiting now, and when each was submitted (until
    /// its first start).
    bg_queue: usize,
    bg_submit: FxHashMap<TaskId, Time>,
    bg_waits: (f64, u64),
    bg_queued_at_first: Option<usize>,
    /// Both sets on one grid ([`World::concurrent`]): workflows from this
    /// index on are the No-Fairness set, and whether the Fairness set's
    /// lifts are mirrored on it as they happen.
    shadow_from: Option<usize>,
    mirror_live: bool,
    /// The No-Fairness set's workflow references, kept from the core and
    /// handed to its η_u observer ([`World::shadow_tags`]).
    shadow_tags: super::observe::Tags,
    /// The live copies of each workflow task, and each copy's number.
    copies: FxHashMap<(usize, u32), Vec<TaskId>>,
    copy_of: FxHashMap<TaskId, u32>,
    /// Workflow copies running now, and since when (in id order, so that
    /// replication looks at them in the same order in every run).
    running: BTreeMap<TaskId, Time>,
    /// When each live workflow copy was submitted; a task submitted again
    /// after a lift keeps its first submission (its wait counts from it).
    submitted_at: FxHashMap<TaskId, Time>,
    pending: Vec<Pending>,
    /// Copies made by replication, in all.
    pub replicas: u64,
    /// Lifts done by cancel and resubmission, in all.
    pub resubmitted_lifts: u64,
}

/// What the other users' tasks went through in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct BackgroundStats {
    /// Mean wait (first start − submission) of the background tasks that
    /// started, s.
    pub mean_wait_s: f64,
    /// Background tasks that started.
    pub started: u64,
    /// Background tasks waiting when the first workflow was submitted.
    pub queued_at_first_workflow: u64,
}

impl World {
    /// `workflows`: (submission time, instance), in submission order;
    /// workflow k gets `WorkflowId(k)` and user k.
    pub fn new(grid: Grid, seed: u64, workflows: Vec<(Time, Workflow)>) -> World {
        let unfinished = workflows.len();
        let warmup = secs(grid.warmup_s);
        let wfs = workflows
            .into_iter()
            .map(|(submit, wf)| {
                let submit = submit + warmup;
                let n = wf.tasks.len();
                Wf {
                    submit,
                    children: wf.children(),
                    missing: wf.tasks.iter().map(|t| t.parents.len() as u32).collect(),
                    attempts: vec![0; n],
                    measured: vec![Time::ZERO; n],
                    waits: Time::ZERO,
                    completed: 0,
                    last_end: submit,
                    resubmissions: 0,
                    done: n == 0,
                    failed: false,
                    task_done: vec![false; n],
                    copies_made: vec![0; n],
                    durations: vec![Vec::new(); wf.activities.len().max(1)],
                    wf,
                }
            })
            .collect();
        World {
            next_slot: grid.initial_slots,
            present: grid.initial_slots as usize,
            pilots: Pcg64Mcg::seed_from_u64(derive_seed(seed, PILOTS)),
            background: Pcg64Mcg::seed_from_u64(derive_seed(seed, BACKGROUND)),
            grid,
            seed,
            wfs,
            live: FxHashMap::default(),
            waiting: BTreeMap::new(),
            order_of: FxHashMap::default(),
            released: 0,
            top_priority: 1,
            unfinished,
            raises: Vec::new(),
            lifted: Default::default(),
            mirror: Vec::new(),
            failing: FxHashMap::default(),
            bg_queue: 0,
            bg_submit: FxHashMap::default(),
            bg_waits: (0.0, 0),
            bg_queued_at_first: None,
            shadow_from: None,
            mirror_live: false,
            shadow_tags: Default::default(),
            copies: FxHashMap::default(),
            copy_of: FxHashMap::default(),
            running: BTreeMap::new(),
            submitted_at: FxHashMap::default(),
            pending: Vec::new(),
            replicas: 0,
            resubmitted_lifts: 0,
        }
    }

    /// Fairness and No-Fairness at the same time on this one grid, as the
    /// paper ran them: the workflows from index `n` on (a copy of the
    /// first `n`, submitted at the same instants) are the No-Fairness set.
    /// Their tasks carry no workflow reference, so the controller sees
    /// them as other users' tasks and never lifts them; with `mirror`,
    /// each first lift of a Fairness task lifts the oldest waiting
    /// No-Fairness task to the same priority at that instant. A run's
    /// failures are drawn per (workflow of its set, task, attempt), so
    /// both sets meet the same failures.
    pub fn concurrent(mut self, n: usize, mirror: bool) -> World {
        self.shadow_from = Some(n);
        self.mirror_live = mirror;
        self
    }

    /// The No-Fairness set's tasks and their workflow references (the
    /// core sees none), filled as they are submitted: for
    /// [`super::observe::EtaSeries::of_tagged`].
    pub fn shadow_tags(&self) -> super::observe::Tags {
        self.shadow_tags.clone()
    }

    fn shadow(&self, k: usize) -> bool {
        self.shadow_from.is_some_and(|n| k >= n)
    }

    /// The background tasks' waits, and the queue the first workflow met.
    pub fn background(&self) -> BackgroundStats {
        let (sum, n) = self.bg_waits;
        BackgroundStats {
            mean_wait_s: if n > 0 { sum / n as f64 } else { 0.0 },
            started: n,
            queued_at_first_workflow: self.bg_queued_at_first.unwrap_or(0) as u64,
        }
    }

    /// Replays these instants as raises of the oldest waiting workflow
    /// task (one per instant listed; an instant may repeat).
    pub fn mirror(mut self, raises: Vec<Time>) -> World {
        self.mirror = raises;
        self
    }

    /// Each workflow's outcome.
    pub fn outcomes(&self) -> Vec<WorkflowOutcome> {
        self.wfs
            .iter()
            .map(|w| {
                let mut longest = vec![Time::ZERO; w.wf.tasks.len()];
                for (i, t) in w.wf.tasks.iter().enumerate() {
                    let before = t
                        .parents
                        .iter()
                        .map(|&p| longest[p as usize])
                        .max()
                        .unwrap_or(Time::ZERO);
                    longest[i] = before + w.measured[i];
                }
                let m_own = longest.iter().copied().max().unwrap_or(Time::ZERO).as_secs_f64();
                let makespan = (w.last_end - w.submit).as_secs_f64();
                WorkflowOutcome {
                    name: w.wf.name.clone(),
                    submit_s: w.submit.as_secs_f64(),
                    makespan_s: makespan,
                    m_own_s: m_own,
                    slowdown: if m_own > 0.0 { makespan / m_own } else { f64::NAN },
                    mean_wait_s: if w.completed > 0 {
                        w.waits.as_secs_f64() / w.completed as f64
                    } else {
                        0.0
                    },
                    tasks: w.wf.tasks.len(),
                    resubmissions: w.resubmissions,
                    failed: w.failed,
                }
            })
            .collect()
    }

    /// When the last workflow ended (completed or given up).
    pub fn end(&self) -> Time {
        self.wfs.iter().map(|w| w.last_end).max().unwrap_or(Time::ZERO)
    }

    fn release(&mut self, k: usize, i: u32, ctx: &mut AgentCtx) {
        self.submit_copy(k, i, 1, 0, true, ctx);
    }

    /// Submits copy `copy` of task `i` of workflow `k` at `priority`;
    /// `mirrorable`: a mirrored lift may pick it.
    fn submit_copy(
        &mut self,
        k: usize,
        i: u32,
        priority: i64,
        copy: u32,
        mirrorable: bool,
        ctx: &mut AgentCtx,
    ) -> TaskId {
        let shadow = self.shadow(k);
        let concurrent = self.shadow_from.is_some();
        let w = &mut self.wfs[k];
        let t = &w.wf.tasks[i as usize];
        let spec = TaskSpec::new(0, k as i64, 0).priority(priority);
        let spec = TaskSpec {
            workflow: (!shadow).then_some(WorkflowRef {
                workflow: WorkflowId(k as u32),
                activity: t.activity,
            }),
            ..spec
        };
        let activity = t.activity;
        let id = ctx.submit_new(Arrival::with_phases(spec, ctx.now(), t.phases));
        if shadow && let Ok(mut tags) = self.shadow_tags.lock() {
            tags.insert(
                id,
                WorkflowRef {
                    workflow: WorkflowId(k as u32),
                    activity,
                },
            );
        }
        self.live.insert(id, Owner::Workflow { wf: k, task: i });
        self.copies.entry((k, i)).or_default().push(id);
        self.submitted_at.insert(id, ctx.now());
        if copy > 0 {
            self.copy_of.insert(id, copy);
        }
        // Mirrored lifts go to the oldest waiting task of the set that
        // has no controller: the whole run's (one after the other), the
        // No-Fairness set's (concurrent).
        if mirrorable && (shadow || !concurrent) {
            self.released += 1;
            self.waiting.insert(self.released, id);
            self.order_of.insert(id, self.released);
        }
        id
    }

    /// A mirrored lift of `id` to `priority`: in place, or by cancel and
    /// resubmission.
    fn lift(&mut self, id: TaskId, priority: i64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        if self.grid.resubmit_lifted_s.is_some() {
            self.resubmit(id, priority, ctx)
        } else {
            ctx.send(Event::SetPriority { task: id, priority })
        }
    }

    /// DIRAC's lift: cancels waiting workflow task `id` and submits it
    /// again at `priority` after the grid's delay (behind the tasks
    /// already waiting at that priority). Out of the queue meanwhile: the
    /// controller and η_u do not count it.
    fn resubmit(&mut self, id: TaskId, priority: i64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let Some(delay) = self.grid.resubmit_lifted_s else {
            return Ok(());
        };
        if self.running.contains_key(&id) || !matches!(self.live.get(&id), Some(Owner::Workflow { .. })) {
            return Ok(());
        }
        let now = ctx.now();
        let copy = self.copy_of.get(&id).copied().unwrap_or(0);
        let submitted = self.submitted_at.get(&id).copied().unwrap_or(now);
        if let Some((wf, task)) = self.forget(id) {
            ctx.send(Event::Cancel { task: id })?;
            self.pending.push(Pending {
                wf,
                task,
                priority,
                copy,
                submitted,
            });
            self.resubmitted_lifts += 1;
            ctx.wake_at(now + secs(delay), RESUBMIT | (self.pending.len() - 1) as u64);
        }
        Ok(())
    }

    /// Forgets copy `id` of a workflow task (it ended, or is cancelled).
    fn forget(&mut self, id: TaskId) -> Option<(usize, u32)> {
        self.failing.remove(&id);
        self.running.remove(&id);
        self.copy_of.remove(&id);
        self.submitted_at.remove(&id);
        if let Some(o) = self.order_of.remove(&id) {
            self.waiting.remove(&o);
        }
        let Some(Owner::Workflow { wf, task }) = self.live.remove(&id) else {
            return None;
        };
        if let Some(v) = self.copies.get_mut(&(wf, task)) {
            v.retain(|&c| c != id);
            if v.is_empty() {
                self.copies.remove(&(wf, task));
            }
        }
        Some((wf, task))
    }

    /// Replication (MOTEUR's): each task whose copies all run and one of
    /// them has run `replicate_after` × its activity's median (upper
    /// median of ≥ 2 completed tasks) gets one more copy, up to
    /// `max_copies` alive.
    fn replicate(&mut self, ctx: &mut AgentCtx) {
        let now = ctx.now();
        let factor = self.grid.replicate_after;
        let mut due: Vec<(usize, u32)> = Vec::new();
        for (id, &since) in &self.running {
            let Some(&Owner::Workflow { wf, task }) = self.live.get(id) else {
                continue;
            };
            let w = &self.wfs[wf];
            let mut d = w.durations[w.wf.tasks[task as usize].activity as usize].clone();
            if d.len() < 2 {
                continue;
            }
            d.sort_unstable();
            let median = d[d.len() / 2];
            let copies = self.copies.get(&(wf, task)).map_or(&[][..], |v| &v[..]);
            if (now - since).as_secs_f64() > factor * median.as_secs_f64()
                && copies.len() < self.grid.max_copies as usize
                && copies.iter().all(|c| self.running.contains_key(c))
                && !due.contains(&(wf, task))
            {
                due.push((wf, task));
            }
        }
        for (k, i) in due {
            self.wfs[k].copies_made[i as usize] += 1;
            let copy = self.wfs[k].copies_made[i as usize];
            self.replicas += 1;
            self.submit_copy(k, i, 1, copy, true, ctx);
        }
    }

    fn leave_later(&mut self, slot: u32, now: Time, ctx: &mut AgentCtx) {
        let life = self.grid.lifetime.sample(&mut self.pilots);
        if life.is_finite() {
            ctx.wake_at(now + secs(life), LEAVE | slot as u64);
        }
    }

    fn next_join(&mut self, now: Time, ctx: &mut AgentCtx) {
        if self.grid.join_per_hour > 0.0 && self.unfinished > 0 {
            let gap = -libm::log(1.0 - self.pilots.random::<f64>()) * 3600.0 / self.grid.join_per_hour;
            ctx.wake_at(now + secs(gap), JOIN);
        }
    }

    fn next_background(&mut self, now: Time, ctx: &mut AgentCtx) {
        if self.grid.background_per_hour > 0.0 && self.unfinished > 0 {
            let gap =
                -libm::log(1.0 - self.background.random::<f64>()) * 3600.0 / self.grid.background_per_hour;
            ctx.wake_at(now + secs(gap), ARRIVE);
        }
    }

    fn finish(&mut self, k: usize, failed: bool) {
        let w = &mut self.wfs[k];
        if !w.done {
            w.done = true;
            w.failed = failed;
            self.unfinished -= 1;
        }
    }
}

impl Agent for World {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        for s in 0..self.grid.initial_slots {
            self.leave_later(s, Time::ZERO, ctx);
        }
        for (k, w) in self.wfs.iter().enumerate() {
            ctx.wake_at(w.submit, SUBMIT | k as u64);
        }
        for (i, &t) in self.mirror.iter().enumerate() {
            ctx.wake_at(t, RAISE | i as u64);
        }
        if self.grid.replicate_after > 0.0
            && let Some(first) = self.wfs.iter().map(|w| w.submit).min()
        {
            ctx.wake_at(first, CHECK);
        }
        self.next_join(Time::ZERO, ctx);
        self.next_background(Time::ZERO, ctx);
        Ok(())
    }

    fn on_wake(&mut self, token: u64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let now = ctx.now();
        let arg = token & !KIND;
        match token & KIND {
            SUBMIT => {
                let k = arg as usize;
                if k == 0 {
                    self.bg_queued_at_first = Some(self.bg_queue);
                }
                let roots: Vec<u32> = (0..self.wfs[k].wf.tasks.len() as u32)
                    .filter(|&i| self.wfs[k].missing[i as usize] == 0)
                    .collect();
                for i in roots {
                    self.release(k, i, ctx);
                }
            }
            JOIN => {
                if self.present < self.grid.max_slots as usize {
                    ctx.send(Event::SlotJoin {
                        machine: fairsched_core::MachineId(0),
                        owner: OrgId(0),
                    })?;
                    let slot = self.next_slot;
                    self.next_slot += 1;
                    self.present += 1;
                    self.leave_later(slot, now, ctx);
                }
                self.next_join(now, ctx);
            }
            LEAVE => {
                self.present -= 1;
                ctx.send(Event::SlotLeave {
                    slot: SlotId(arg as u32),
                })?;
            }
            ARRIVE => {
                let d = self.grid.background_duration.sample(&mut self.background);
                let spec = TaskSpec::new(0, BACKGROUND_USER, 0).priority(1);
                let id = ctx.submit_new(Arrival::new(spec, now, secs(d).max(Time::from_millis(1))));
                self.live.insert(id, Owner::Background);
                self.bg_queue += 1;
                self.bg_submit.insert(id, now);
                self.next_background(now, ctx);
            }
            FAIL => {
                let task = TaskId(arg);
                if self.failing.get(&task) == Some(&now) {
                    self.failing.remove(&task);
                    ctx.send(Event::Fail { task })?;
                }
            }
            CHECK => {
                self.replicate(ctx);
                if self.unfinished > 0 {
                    ctx.wake_at(now + Time::from_secs(REPLICATION_PERIOD_S), CHECK);
                }
            }
            RESUBMIT => {
                let p = &self.pending[arg as usize];
                let (k, i, priority, copy, submitted) = (p.wf, p.task, p.priority, p.copy, p.submitted);
                if !self.wfs[k].done && !self.wfs[k].task_done[i as usize] {
                    let id = self.submit_copy(k, i, priority, copy, false, ctx);
                    self.lifted.insert(id);
                    self.submitted_at.insert(id, submitted);
                }
            }
            RAISE => {
                if let Some((_, id)) = self.waiting.pop_first() {
                    self.top_priority += 1;
                    self.lift(id, self.top_priority, ctx)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn on_action(&mut self, action: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let now = ctx.now();
        match action {
            Action::Start { task, slots, .. } => {
                if let Some(o) = self.order_of.get(task) {
                    self.waiting.remove(o);
                }
                let Some(&Owner::Workflow { wf, task: i }) = self.live.get(task) else {
                    if matches!(self.live.get(task), Some(Owner::Background)) {
                        self.bg_queue = self.bg_queue.saturating_sub(1);
                        if let Some(at) = self.bg_submit.remove(task) {
                            self.bg_waits.0 += (now - at).as_secs_f64();
                            self.bg_waits.1 += 1;
                        }
                    }
                    return Ok(());
                };
                self.running.insert(*task, now);
                if self.grid.failure > 0.0 {
                    let attempt = self.wfs[wf].attempts[i as usize] as u64;
                    let set_wf = self.shadow_from.map_or(wf, |n| wf % n.max(1));
                    // Copy 0 keeps the keys it had before replication
                    // existed; a copy adds its number.
                    let mut keys = vec![set_wf as u64, i as u64, attempt];
                    if let Some(&c) = self.copy_of.get(task) {
                        keys.push(1000 + c as u64);
                    }
                    if hash_unit(self.seed, &keys) < self.grid.failure {
                        let speed = slots
                            .first()
                            .map_or(1.0, |&s| slot_speed(&self.grid, self.seed, s));
                        let nominal = self.wfs[wf].wf.tasks[i as usize].duration().as_secs_f64();
                        let run = if speed.is_finite() && speed > 0.0 {
                            nominal / speed
                        } else {
                            nominal
                        };
                        keys.push(1);
                        let at = now + secs(hash_unit(self.seed, &keys) * run);
                        self.failing.insert(*task, at);
                        ctx.wake_at(at, FAIL | task.0);
                    }
                }
            }
            Action::Stop { task, requeued, .. } => {
                // The run is over: its failure will not come.
                self.failing.remove(task);
                self.running.remove(task);
                if *requeued && let Some(&o) = self.order_of.get(task) {
                    self.waiting.insert(o, *task);
                }
                if *requeued && matches!(self.live.get(task), Some(Owner::Background)) {
                    self.bg_queue += 1;
                }
            }
            Action::Priority { task, priority } => {
                // A task lifted for the first time: the No-Fairness run
                // lifts one task of its own per such instant (raising the
                // same task again changes nothing the other users see).
                if self.lifted.insert(*task) {
                    self.raises.push(now);
                    let lifted_fairness_task = match self.live.get(task) {
                        Some(&Owner::Workflow { wf, .. }) => self.shadow_from.is_some_and(|n| wf < n),
                        _ => false,
                    };
                    if self.mirror_live
                        && lifted_fairness_task
                        && let Some((_, id)) = self.waiting.pop_first()
                    {
                        self.lifted.insert(id);
                        self.lift(id, *priority, ctx)?;
                    }
                }
                // The core lifted it in place; DIRAC's way resubmits it.
                if self.grid.resubmit_lifted_s.is_some() {
                    self.resubmit(*task, *priority, ctx)?;
                }
            }
            Action::Ended(rec) => {
                let id = rec.spec.id;
                let submitted = self.submitted_at.get(&id).copied().unwrap_or(rec.submit);
                let Some((k, i)) = self.forget(id) else {
                    return Ok(());
                };
                if self.wfs[k].done || self.wfs[k].task_done[i as usize] {
                    return Ok(());
                }
                match rec.outcome {
                    Outcome::Completed => {
                        // The first copy to complete wins; the others are
                        // cancelled.
                        for other in self.copies.get(&(k, i)).cloned().unwrap_or_default() {
                            self.forget(other);
                            ctx.send(Event::Cancel { task: other })?;
                        }
                        let w = &mut self.wfs[k];
                        w.task_done[i as usize] = true;
                        if let Some(run) = &rec.last {
                            w.measured[i as usize] = run.stop - run.start;
                            w.waits += run.start - submitted;
                            let a = w.wf.tasks[i as usize].activity as usize;
                            w.durations[a].push(run.stop - run.start);
                        }
                        w.completed += 1;
                        w.last_end = w.last_end.max(rec.end);
                        let ready: Vec<u32> = w.children[i as usize]
                            .iter()
                            .copied()
                            .filter(|&c| {
                                w.missing[c as usize] -= 1;
                                w.missing[c as usize] == 0
                            })
                            .collect();
                        if w.completed == w.wf.tasks.len() {
                            self.finish(k, false);
                        }
                        for c in ready {
                            self.release(k, c, ctx);
                        }
                    }
                    // Cancelled: only the engine's end-of-run clean-up.
                    Outcome::Cancelled | Outcome::Rejected => {
                        self.wfs[k].last_end = self.wfs[k].last_end.max(rec.end);
                        self.finish(k, true);
                    }
                    // Another copy still runs or waits: it carries on.
                    Outcome::Failed | Outcome::Killed if self.copies.contains_key(&(k, i)) => {
                        self.wfs[k].last_end = self.wfs[k].last_end.max(rec.end);
                    }
                    Outcome::Failed | Outcome::Killed => {
                        let w = &mut self.wfs[k];
                        w.attempts[i as usize] += 1;
                        w.last_end = w.last_end.max(rec.end);
                        if w.attempts[i as usize] > self.grid.retries {
                            self.finish(k, true);
                        } else {
                            w.resubmissions += 1;
                            self.release(k, i, ctx);
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Simulation;
    use fairsched_core::{Observer, Platform, Registry, Scheduler, View};
    use fairsched_trace::workflow::{Dist, WfTask};

    /// The instants at which the core took a step.
    #[derive(Default)]
    struct Steps(Vec<Time>);
    impl Observer for Steps {
        fn on_step(&mut self, now: Time, _: &[Action], _: &View) {
            self.0.push(now);
        }
    }

    /// One slot whose pilot leaves after 10 s, every run drawn to fail at
    /// a uniform point of its 10⁷ s: the pilot's departure kills the run
    /// first (its failure, hidden, would come much later), and with no
    /// slot left nothing else happens. No step may come after the kill:
    /// before the fix, the failure's wake-up stepped the core at the
    /// instant the killed run's hidden runtime gave.
    #[test]
    fn the_failure_of_a_killed_run_never_steps_the_core() {
        let grid = Grid {
            initial_slots: 1,
            max_slots: 1,
            join_per_hour: 0.0,
            lifetime: Dist::Constant { value: 10.0 },
            failure: 1.0,
            retries: 3,
            ..Grid::constant(1)
        };
        let wf = Workflow {
            name: "one".into(),
            activities: vec!["a".into()],
            tasks: vec![WfTask {
                name: "t".into(),
                activity: 0,
                parents: Vec::new(),
                phases: [Time::ZERO, Time::ZERO, Time::from_secs(10_000_000), Time::ZERO],
            }],
        };
        for seed in 0..20 {
            let r = Registry::builtin();
            let core = Scheduler::new(
                &Platform::pool(1),
                1,
                r.build_allocate(&"single-pool".parse().unwrap()).unwrap(),
                r.build_order(&"priority".parse().unwrap()).unwrap(),
                None,
            );
            let mut world = World::new(grid.clone(), seed, vec![(Time::ZERO, wf.clone())]);
            let mut steps = Steps::default();
            let stats = {
                let mut sim = Simulation::new(core);
                sim.add_agent(&mut world);
                sim.run_agents(&mut steps).unwrap()
            };
            assert_eq!(
                steps.0.last(),
                Some(&Time::from_secs(10)),
                "seed {seed}: {:?}",
                steps.0
            );
            assert_eq!(stats.end, Time::from_secs(10), "seed {seed}");
            assert_eq!(
                world.wfs[0].resubmissions, 1,
                "seed {seed}: the killed run was resubmitted"
            );
        }
    }

    /// Two 10 s tasks complete, a third runs 1000 s: past 2× the
    /// activity's median the engine copies it (it looks every 60 s); the
    /// original completes first, the copy is cancelled, and the
    /// measured duration is the original's.
    #[test]
    fn a_slow_task_gets_a_copy_and_the_first_to_complete_wins() {
        let grid = Grid {
            replicate_after: 2.0,
            ..Grid::constant(3)
        };
        let task = |s: i64| WfTask {
            name: format!("t{s}"),
            activity: 0,
            parents: Vec::new(),
            phases: [Time::ZERO, Time::ZERO, Time::from_secs(s), Time::ZERO],
        };
        let wf = Workflow {
            name: "w".into(),
            activities: vec!["a".into()],
            tasks: vec![task(10), task(10), task(1000)],
        };
        let r = Registry::builtin();
        let core = Scheduler::new(
            &Platform::pool(3),
            1,
            r.build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            r.build_order(&"priority".parse().unwrap()).unwrap(),
            None,
        );
        let mut world = World::new(grid, 0, vec![(Time::ZERO, wf)]);
        let stats = {
            let mut sim = Simulation::new(core);
            sim.add_agent(&mut world);
            sim.run_agents(&mut Steps::default()).unwrap()
        };
        // Copies at 60, 120 and 180 s (each time every copy runs and the
        // original is past 20 s); the third waits for a slot of the 3, so
        // no more are made.
        assert_eq!(world.replicas, 3);
        let o = &world.outcomes()[0];
        assert_eq!(o.makespan_s, 1000.0);
        assert_eq!(world.wfs[0].measured[2], Time::from_secs(1000));
        assert!(!o.failed);
        assert_eq!(stats.submitted, 3 + world.replicas);
        assert!(world.live.is_empty(), "a copy outlived its task");
    }
}
