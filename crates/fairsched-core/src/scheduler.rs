//! The deterministic core: events in, actions out.

use crate::event::{Action, Attempt, AttemptEnd, EndRecord, Event, Notice, SlotList};
use crate::ids::{MachineId, OrgId, SlotId, TaskId};
use crate::model::{Outcome, TaskSpec};
use crate::point::{Allocate, ClairvoyantAllocate, ClairvoyantOrder, Control, ControlOut, Order};
use crate::point::{Pick, RuntimeOracle, SimRng};
use crate::prelude::*;
use crate::registry::Reads;
use crate::snapshot::{self, SnapshotError};
use crate::state::{Platform, Run, State, Status, TaskState, View, push_free};
use crate::time::Time;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// An `Allocate` policy with what it may read ([`Reads`]): its views
/// show the users' estimates unless it is blind, and only a clairvoyant
/// one is handed the oracle.
#[derive(Clone)]
pub enum AllocatePolicy {
    Blind(Box<dyn Allocate>),
    WithEstimates(Box<dyn Allocate>),
    Clairvoyant(Box<dyn ClairvoyantAllocate>),
}

/// An `Order` policy with what it may read (see [`AllocatePolicy`]).
#[derive(Clone)]
pub enum OrderPolicy {
    Blind(Box<dyn Order>),
    WithEstimates(Box<dyn Order>),
    Clairvoyant(Box<dyn ClairvoyantOrder>),
}

/// A `Control` policy with what it may read (see [`AllocatePolicy`]).
#[derive(Clone)]
pub enum ControlPolicy {
    Blind(Box<dyn Control>),
    WithEstimates(Box<dyn Control>),
}

impl AllocatePolicy {
    fn notify(&mut self, state: &State, n: &Notice) {
        let view = state.policy_view(self.reads() != Reads::Blind);
        match self {
            AllocatePolicy::Blind(p) | AllocatePolicy::WithEstimates(p) => p.notify(&view, n),
            AllocatePolicy::Clairvoyant(p) => p.notify(&view, n),
        }
    }
    /// The policy's name (see [`Allocate::policy_name`]).
    pub fn policy_name(&self) -> &'static str {
        match self {
            AllocatePolicy::Blind(p) | AllocatePolicy::WithEstimates(p) => p.policy_name(),
            AllocatePolicy::Clairvoyant(p) => p.policy_name(),
        }
    }
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        match self {
            AllocatePolicy::Blind(p) | AllocatePolicy::WithEstimates(p) => p.save(),
            AllocatePolicy::Clairvoyant(p) => p.save(),
        }
    }
    fn load(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        match self {
            AllocatePolicy::Blind(p) | AllocatePolicy::WithEstimates(p) => p.load(bytes),
            AllocatePolicy::Clairvoyant(p) => p.load(bytes),
        }
    }
    /// What it reads.
    pub fn reads(&self) -> Reads {
        match self {
            AllocatePolicy::Blind(_) => Reads::Blind,
            AllocatePolicy::WithEstimates(_) => Reads::Estimates,
            AllocatePolicy::Clairvoyant(_) => Reads::Oracle,
        }
    }
    pub fn is_clairvoyant(&self) -> bool {
        matches!(self, AllocatePolicy::Clairvoyant(_))
    }
}

impl OrderPolicy {
    fn notify(&mut self, state: &State, n: &Notice) {
        let view = state.policy_view(self.reads() != Reads::Blind);
        match self {
            OrderPolicy::Blind(p) | OrderPolicy::WithEstimates(p) => p.notify(&view, n),
            OrderPolicy::Clairvoyant(p) => p.notify(&view, n),
        }
    }
    /// The policy's name (see [`Order::policy_name`]).
    pub fn policy_name(&self) -> &'static str {
        match self {
            OrderPolicy::Blind(p) | OrderPolicy::WithEstimates(p) => p.policy_name(),
            OrderPolicy::Clairvoyant(p) => p.policy_name(),
        }
    }
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        match self {
            OrderPolicy::Blind(p) | OrderPolicy::WithEstimates(p) => p.save(),
            OrderPolicy::Clairvoyant(p) => p.save(),
        }
    }
    fn load(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        match self {
            OrderPolicy::Blind(p) | OrderPolicy::WithEstimates(p) => p.load(bytes),
            OrderPolicy::Clairvoyant(p) => p.load(bytes),
        }
    }
    /// What it reads.
    pub fn reads(&self) -> Reads {
        match self {
            OrderPolicy::Blind(_) => Reads::Blind,
            OrderPolicy::WithEstimates(_) => Reads::Estimates,
            OrderPolicy::Clairvoyant(_) => Reads::Oracle,
        }
    }
    pub fn is_clairvoyant(&self) -> bool {
        matches!(self, OrderPolicy::Clairvoyant(_))
    }
    fn preempts(&self) -> bool {
        match self {
            OrderPolicy::Blind(p) | OrderPolicy::WithEstimates(p) => p.preempts(),
            OrderPolicy::Clairvoyant(p) => p.preempts(),
        }
    }
}

impl ControlPolicy {
    fn get(&self) -> &dyn Control {
        match self {
            ControlPolicy::Blind(c) | ControlPolicy::WithEstimates(c) => c.as_ref(),
        }
    }
    fn get_mut(&mut self) -> &mut dyn Control {
        match self {
            ControlPolicy::Blind(c) | ControlPolicy::WithEstimates(c) => c.as_mut(),
        }
    }
    /// What it reads.
    pub fn reads(&self) -> Reads {
        match self {
            ControlPolicy::Blind(_) => Reads::Blind,
            ControlPolicy::WithEstimates(_) => Reads::Estimates,
        }
    }
    fn view<'s>(&self, state: &'s State) -> View<'s> {
        state.policy_view(self.reads() != Reads::Blind)
    }
    /// The policy's name (see [`Control::policy_name`]).
    pub fn policy_name(&self) -> &'static str {
        self.get().policy_name()
    }
    /// The policy itself (a driver that wraps it in a policy of its own,
    /// a test probe).
    pub fn into_inner(self) -> Box<dyn Control> {
        match self {
            ControlPolicy::Blind(c) | ControlPolicy::WithEstimates(c) => c,
        }
    }
}

/// Errors are policy bugs or a missing oracle, never bad driver input
/// (inapplicable events are ignored and counted).
///
/// A step that fails is never half-visible: the actions it had produced are
/// taken back out of `out`. [`Scheduler::step`] then refuses every later
/// step ([`CoreError::Poisoned`]); [`Scheduler::step_atomic`] instead puts
/// the scheduler back exactly as it was before the step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    #[error("policy {0} is clairvoyant and needs a runtime oracle, which this driver does not have")]
    NeedsOracle(&'static str),
    #[error("invalid pick on machine {machine}: {reason}")]
    BadPick { machine: MachineId, reason: String },
    #[error("order policy keeps picking on machine {0} without making progress")]
    NoProgress(MachineId),
    #[error("an earlier step failed and was not undone; rebuild the scheduler (or use step_atomic)")]
    Poisoned,
}

/// Counters about what the core did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreStats {
    pub events: u64,
    /// Events that did not apply (unknown task, duplicate, wrong state).
    pub ignored_events: u64,
    pub starts: u64,
    pub requeues: u64,
    pub priority_changes: u64,
    pub rejected: u64,
}

/// The scheduling core. Owns the platform state, the three policies and
/// the seeded RNG; no clock, no I/O, no threads. `Clone` copies all of it,
/// policies included: two clones given the same steps decide the same.
#[derive(Clone)]
pub struct Scheduler {
    state: State,
    allocate: AllocatePolicy,
    order: OrderPolicy,
    control: Option<ControlPolicy>,
    rng: SimRng,
    dirty: Vec<bool>,
    dirty_list: Vec<MachineId>,
    control_notices: Vec<Notice>,
    fired: Vec<u64>,
    stats: CoreStats,
    poisoned: bool,
    /// Set by [`Scheduler::steered`]: another resource manager starts
    /// the tasks ([`Event::Start`]); the core only ranks them.
    steered: bool,
}

/// A snapshot's body as written ([`crate::snapshot`]); [`BodyIn`] reads
/// the same fields in the same order.
#[derive(Serialize)]
struct BodyOut<'a> {
    allocate: &'a str,
    order: &'a str,
    control: Option<&'a str>,
    state: &'a State,
    rng: u128,
    dirty: &'a [MachineId],
    control_notices: &'a [Notice],
    fired: &'a [u64],
    stats: &'a CoreStats,
    poisoned: bool,
    #[serde(serialize_with = "snapshot::as_bytes")]
    allocate_state: &'a [u8],
    #[serde(serialize_with = "snapshot::as_bytes")]
    order_state: &'a [u8],
    /// Empty without a Control.
    #[serde(serialize_with = "snapshot::as_bytes")]
    control_state: &'a [u8],
}

/// A snapshot's body as read (see [`BodyOut`]).
#[derive(Deserialize)]
struct BodyIn<'a> {
    allocate: &'a str,
    order: &'a str,
    #[serde(borrow)]
    control: Option<&'a str>,
    state: State,
    rng: u128,
    dirty: Vec<MachineId>,
    control_notices: Vec<Notice>,
    fired: Vec<u64>,
    stats: CoreStats,
    poisoned: bool,
    allocate_state: &'a [u8],
    order_state: &'a [u8],
    control_state: &'a [u8],
}

/// Delivers a notice to every policy that wants it.
struct Policies<'a> {
    allocate: &'a mut AllocatePolicy,
    order: &'a mut OrderPolicy,
    control: Option<(&'a mut ControlPolicy, &'a mut Vec<Notice>)>,
}

impl Policies<'_> {
    fn tell(&mut self, state: &State, n: Notice) {
        self.allocate.notify(state, &n);
        self.order.notify(state, &n);
        if let Some((c, buffer)) = self.control.as_mut() {
            let view = c.view(state);
            c.get_mut().notify(&view, &n);
            buffer.push(n);
        }
    }
    /// A change the Control made itself: it is not told.
    fn tell_all_but_control(&mut self, state: &State, n: Notice) {
        self.allocate.notify(state, &n);
        self.order.notify(state, &n);
    }
}

impl Scheduler {
    pub fn new(
        platform: &Platform,
        seed: u64,
        allocate: AllocatePolicy,
        order: OrderPolicy,
        control: Option<ControlPolicy>,
    ) -> Scheduler {
        let n = platform.machines.len();
        Scheduler {
            state: State::new(platform),
            allocate,
            order,
            control,
            rng: SimRng::seed_from_u64(seed),
            dirty: vec![false; n],
            dirty_list: Vec::new(),
            control_notices: Vec::new(),
            fired: Vec::new(),
            stats: CoreStats::default(),
            poisoned: false,
            steered: false,
        }
    }

    /// The core as a steering controller drives it: another resource
    /// manager (Slurm) decides when tasks start and reports each start
    /// with [`Event::Start`]; the core never dispatches by itself, and its
    /// `Order` policy's decisions are read with [`Scheduler::rank`] and
    /// turned into that manager's priorities. Policies see the same
    /// notices as under dispatch, so their fairness state follows what
    /// really ran. Not part of a snapshot: build the core the same way
    /// before [`Scheduler::restore`].
    pub fn steered(mut self) -> Scheduler {
        self.steered = true;
        self
    }
    /// Whether the `Order` policy may stop running tasks ([`Order::preempts`]).
    pub fn preempts(&self) -> bool {
        self.order.preempts()
    }
    /// Whether it was built with [`Scheduler::steered`].
    pub fn is_steered(&self) -> bool {
        self.steered
    }

    /// The order in which the `Order` policy would start `machine`'s
    /// waiting tasks if its slots freed up now: the picks it makes, one
    /// after the other, on a copy of the core given enough extra slots for
    /// every waiting task (owned as the machine's slots are, in turn, so
    /// organizations' shares of the machine stay as they are), each pick
    /// applied before the next is asked, as dispatch does. Tasks the policy
    /// leaves waiting follow in id order (submission order for drivers
    /// that number tasks as they arrive). Reads nothing a pick could not;
    /// changes nothing. O(state) for the copy plus one pick per waiting
    /// task. A preempting policy's stops, and clairvoyant policies, are
    /// errors (no oracle here).
    ///
    /// The picks are made at `now` (or the core's time, if later): a
    /// steering controller ranks at each of its cycles, whose instants
    /// are its own period's, not times that a run's end could explain.
    pub fn rank(&self, machine: MachineId, now: Time) -> Result<Vec<TaskId>, CoreError> {
        let Some(ms) = self.state.machines.get(machine.index()) else {
            return Ok(Vec::new());
        };
        if ms.waiting == 0 {
            return Ok(Vec::new());
        }
        let need = ms.waiting_slots;
        let mut sim = self.clone();
        sim.steered = false;
        sim.poisoned = false;
        sim.state.now = sim.state.now.max(now);
        let owners: Vec<OrgId> = sim
            .state
            .slots
            .iter()
            .filter(|s| s.machine == machine && s.present)
            .map(|s| s.owner)
            .collect();
        for k in 0..need {
            let owner = owners
                .get(k as usize % owners.len().max(1))
                .copied()
                .unwrap_or(OrgId(0));
            let slot = sim.state.add_slot(machine, owner);
            let (state, mut p) = sim.policies();
            p.tell_all_but_control(state, Notice::SlotJoined { slot, machine });
        }
        let mut out = Vec::new();
        sim.fill(machine, None, &mut out)?;
        let mut ranked = Vec::with_capacity(ms.waiting as usize);
        for a in &out {
            match a {
                Action::Start { task, .. } => ranked.push(*task),
                Action::Stop { task, .. } => {
                    return Err(CoreError::BadPick {
                        machine,
                        reason: format!(
                            "the policy stops running task {task} to rank waiting ones: a steering controller never stops a job"
                        ),
                    });
                }
                _ => {}
            }
        }
        if ranked.len() < ms.waiting as usize {
            let picked: alloc::collections::BTreeSet<TaskId> = ranked.iter().copied().collect();
            let mut rest: Vec<TaskId> = self
                .state
                .tasks
                .iter()
                .filter(|(id, t)| {
                    t.machine == machine && matches!(t.status, Status::Waiting) && !picked.contains(id)
                })
                .map(|(id, _)| *id)
                .collect();
            rest.sort_unstable();
            ranked.extend(rest);
        }
        Ok(ranked)
    }

    /// Whether a policy reads true runtimes (and so needs an oracle at
    /// every step). A live driver refuses such a configuration up front.
    pub fn needs_oracle(&self) -> bool {
        self.allocate.is_clairvoyant() || self.order.is_clairvoyant()
    }

    /// The whole platform state, estimates included: for the driver (the
    /// policies get views that show what they declared they read).
    pub fn view(&self) -> View<'_> {
        self.state.view()
    }
    /// What each policy reads: `(allocate, order, control)`.
    pub fn reads(&self) -> (Reads, Reads, Option<Reads>) {
        (
            self.allocate.reads(),
            self.order.reads(),
            self.control.as_ref().map(ControlPolicy::reads),
        )
    }
    /// [`Scheduler::gauges`] as they read at `now` (never before the
    /// core's clock): what a driver that steps only when something changed
    /// (the steering controller) reports between two steps. Decides
    /// nothing; the core is left as it was.
    pub fn gauges_at(&self, now: Time) -> Vec<crate::point::Gauge> {
        if now <= self.state.now {
            return self.gauges();
        }
        let mut at = self.clone();
        at.state.now = now;
        at.gauges()
    }

    /// The policies' fairness state now (see [`crate::Order::gauges`]).
    pub fn gauges(&self) -> Vec<crate::point::Gauge> {
        let mut out = Vec::new();
        match &self.order {
            OrderPolicy::Blind(o) | OrderPolicy::WithEstimates(o) => o.gauges(
                &self.state.policy_view(self.order.reads() != Reads::Blind),
                &mut out,
            ),
            OrderPolicy::Clairvoyant(_) => {}
        }
        if let Some(c) = &self.control {
            c.get().gauges(&c.view(&self.state), &mut out);
        }
        out
    }
    pub fn stats(&self) -> &CoreStats {
        &self.stats
    }
    pub fn now(&self) -> Time {
        self.state.now
    }
    /// Tasks currently waiting or running.
    pub fn live_tasks(&self) -> usize {
        self.state.tasks.len()
    }
    /// Ids of live tasks, sorted (for drivers that wind a run down).
    pub fn live_task_ids(&self) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self.state.tasks.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Every piece of state the core holds — platform state (tasks,
    /// queues' counters, slots, organizations, clock), the policies' state,
    /// the RNG, the stats, the Control's pending notices and fired timers,
    /// the poisoned flag — as bytes (format: [`crate::snapshot`]). The same
    /// logical state gives the same bytes, however it was reached. O(state);
    /// nothing is added to [`Scheduler::step`].
    ///
    /// [`SnapshotError::Unsupported`] names a policy that cannot be
    /// snapshotted (the clairvoyant baselines; policies written outside
    /// the registry that do not implement `save`).
    pub fn snapshot(&self) -> Result<Vec<u8>, SnapshotError> {
        let allocate_state = self.allocate.save()?;
        let order_state = self.order.save()?;
        let control_state = match &self.control {
            Some(c) => c.get().save()?,
            None => Vec::new(),
        };
        snapshot::write_sealed(&BodyOut {
            allocate: self.allocate.policy_name(),
            order: self.order.policy_name(),
            control: self.control.as_ref().map(|c| c.policy_name()),
            state: &self.state,
            rng: self.rng.state(),
            dirty: &self.dirty_list,
            control_notices: &self.control_notices,
            fired: &self.fired,
            stats: &self.stats,
            poisoned: self.poisoned,
            allocate_state: &allocate_state,
            order_state: &order_state,
            control_state: &control_state,
        })
    }

    /// Replaces the whole state of `self` with a snapshot's. `self` must be
    /// built from the configuration the snapshot's scheduler was built from
    /// (same platform, same policy specs; the seed does not matter, the
    /// RNG's state is in the snapshot), and not stepped yet. Afterwards it
    /// decides exactly as the snapshotted scheduler would have.
    ///
    /// Errors, with `self` unchanged: [`SnapshotError::Corrupt`] (not a
    /// snapshot, truncated, altered, inconsistent), [`SnapshotError::Mismatch`]
    /// (another format version, other policies or parameters — both are
    /// named —, another platform), [`SnapshotError::Unsupported`] (a policy
    /// of `self` cannot be restored). Never panics, whatever the bytes.
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        let body: BodyIn = snapshot::decode("the snapshot", snapshot::open(bytes)?)?;
        let mismatch = |point: &str, snap: Option<&str>, here: Option<&str>| {
            let show = |n: Option<&str>| n.map_or("none".to_string(), |n| format!("`{n}`"));
            SnapshotError::Mismatch(format!(
                "the snapshot was taken with {point} policy {}, this scheduler has {}; \
                 build it with the snapshot's policies",
                show(snap),
                show(here)
            ))
        };
        let here = (
            self.allocate.policy_name(),
            self.order.policy_name(),
            self.control.as_ref().map(|c| c.policy_name()),
        );
        if body.allocate != here.0 {
            return Err(mismatch("allocate", Some(body.allocate), Some(here.0)));
        }
        if body.order != here.1 {
            return Err(mismatch("order", Some(body.order), Some(here.1)));
        }
        if body.control != here.2 {
            return Err(mismatch("control", body.control, here.2));
        }
        body.state.check_restored(&self.state)?;
        let corrupt = |why: &str| SnapshotError::Corrupt(why.to_string());
        // The generator's state is odd (`Pcg64Mcg::new` would force it).
        if body.rng & 1 == 0 {
            return Err(corrupt("the random generator's state is invalid"));
        }
        let n = self.dirty.len();
        let mut dirty = vec![false; n];
        for &m in &body.dirty {
            if m.index() >= n || core::mem::replace(&mut dirty[m.index()], true) {
                return Err(corrupt(
                    "a machine marked for dispatch does not exist or is marked twice",
                ));
            }
        }
        if self.control.is_none() && !(body.control_notices.is_empty() && body.fired.is_empty()) {
            return Err(corrupt(
                "notices or timers pending for a Control that does not exist",
            ));
        }
        // Policies are loaded into copies: on error, `self` is unchanged.
        let mut allocate = self.allocate.clone();
        allocate.load(body.allocate_state)?;
        let mut order = self.order.clone();
        order.load(body.order_state)?;
        let mut control = self.control.clone();
        if let Some(c) = control.as_mut() {
            c.get_mut().load(body.control_state)?;
        }
        *self = Scheduler {
            state: body.state,
            allocate,
            order,
            control,
            rng: SimRng::new(body.rng),
            dirty,
            dirty_list: body.dirty,
            control_notices: body.control_notices,
            fired: body.fired,
            stats: body.stats,
            poisoned: body.poisoned,
            steered: self.steered,
        };
        Ok(())
    }

    /// Apply the events that happened at `now`, in order, then let the
    /// control policy react, then fill free slots. Actions are appended to
    /// `out`. `oracle` is required when a policy is clairvoyant.
    ///
    /// A step with no event, or whose events all did not apply (each is
    /// counted in [`CoreStats::ignored_events`]), does nothing at all: no
    /// clock advance, no Control reaction, no dispatch. Decisions happen
    /// only at instants where the driver reported something that changed
    /// the platform, so no policy ever runs at a time that only a hidden
    /// runtime could explain (a driver's late failure report of a run
    /// that was killed meanwhile, say).
    ///
    /// Returns whether it stepped (false: nothing applied, nothing ran).
    /// On error, the actions of this step are removed from `out` and the
    /// scheduler refuses further steps ([`CoreError::Poisoned`]): use
    /// [`Scheduler::step_atomic`] to be able to go on.
    pub fn step(
        &mut self,
        now: Time,
        events: impl IntoIterator<Item = Event>,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<bool, CoreError> {
        if self.poisoned {
            return Err(CoreError::Poisoned);
        }
        let mark = out.len();
        let (before, ignored) = (self.state.now, self.stats.ignored_events);
        let mut n = 0u64;
        for ev in events {
            if n == 0 {
                // The first event: checks that need nothing to have changed.
                if oracle.is_none() && self.needs_oracle() {
                    return Err(self.missing_oracle());
                }
                if now > self.state.now {
                    self.state.now = now;
                }
            }
            n += 1;
            self.stats.events += 1;
            if let Err(e) = self.apply(ev, oracle, out) {
                return Err(self.fail(e, out, mark));
            }
        }
        if self.stats.ignored_events - ignored == n {
            // Nothing applied (no event, or only events that did not
            // apply: a stale report of a task that ended, a duplicate): no
            // policy ran and none runs now, and the clock stays where it
            // was, so no decision is ever taken at an instant that only a
            // driver's stale event explains.
            self.state.now = before;
            return Ok(false);
        }
        self.run_control(out);
        match self.dispatch(oracle, out) {
            Ok(()) => Ok(true),
            Err(e) => Err(self.fail(e, out, mark)),
        }
    }

    #[cold]
    fn missing_oracle(&self) -> CoreError {
        CoreError::NeedsOracle(if self.allocate.is_clairvoyant() {
            "allocate"
        } else {
            "order"
        })
    }

    /// A step failed: its actions are taken back and the scheduler poisoned.
    #[cold]
    fn fail(&mut self, e: CoreError, out: &mut Vec<Action>, mark: usize) -> CoreError {
        out.truncate(mark);
        self.poisoned = true;
        e
    }

    /// [`Scheduler::step`], all or nothing: on error the scheduler is put
    /// back exactly as it was before the step (state, policies and RNG), so
    /// the driver can refuse the events and go on. Costs a copy of the
    /// scheduler per step: for live drivers, not for simulations (where a
    /// policy error ends the run anyway).
    pub fn step_atomic(
        &mut self,
        now: Time,
        events: impl IntoIterator<Item = Event>,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<bool, CoreError> {
        let before = self.clone();
        let result = self.step(now, events, oracle, out);
        if result.is_err() {
            *self = before;
        }
        result
    }

    fn policies(&mut self) -> (&mut State, Policies<'_>) {
        let control = self.control.as_mut().map(|c| (c, &mut self.control_notices));
        (
            &mut self.state,
            Policies {
                allocate: &mut self.allocate,
                order: &mut self.order,
                control,
            },
        )
    }

    fn mark(&mut self, m: MachineId) {
        if !self.dirty[m.index()] {
            self.dirty[m.index()] = true;
            self.dirty_list.push(m);
        }
    }

    fn apply(
        &mut self,
        ev: Event,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        let now = self.state.now;
        match ev {
            Event::Submit(spec) => self.submit(spec, oracle, out)?,
            Event::Complete { task } => self.finish_running(task, Outcome::Completed, out),
            Event::Fail { task } => self.finish_running(task, Outcome::Failed, out),
            Event::Kill { task } => self.finish_running(task, Outcome::Killed, out),
            Event::Requeue { task } => match self.state.tasks.get(&task) {
                Some(t) if matches!(t.status, Status::Running { .. }) => {
                    let m = t.machine;
                    self.requeue(m, task, out)?;
                    self.mark(m);
                }
                _ => self.stats.ignored_events += 1,
            },
            Event::Cancel { task } => match self.state.tasks.get(&task) {
                Some(_) => self.end(task, Outcome::Cancelled, out),
                None => self.stats.ignored_events += 1,
            },
            Event::Phase { task, phase } => match self.state.tasks.get_mut(&task) {
                Some(t) if matches!(t.status, Status::Running { .. }) => {
                    let log = t.extra.phases_mut();
                    if let Some((cur, since)) = log.current {
                        log.done[cur as usize] = Some(now - since);
                    }
                    log.current = Some((phase, now));
                    let (state, mut p) = self.policies();
                    p.tell(state, Notice::PhaseStarted { task, phase });
                }
                _ => self.stats.ignored_events += 1,
            },
            Event::SetPriority { task, priority } => {
                if !self.set_priority(task, priority, false) {
                    self.stats.ignored_events += 1;
                }
            }
            Event::SlotJoin { machine, owner } => {
                if machine.index() >= self.state.machines.len() {
                    self.stats.ignored_events += 1;
                } else {
                    let slot = self.state.add_slot(machine, owner);
                    self.mark(machine);
                    let (state, mut p) = self.policies();
                    p.tell(state, Notice::SlotJoined { slot, machine });
                }
            }
            Event::SlotLeave { slot } => self.slot_leave(slot, out),
            Event::SlotDrain { slot } => match self.state.slots.get_mut(slot.index()) {
                Some(s) if s.present && !s.draining => {
                    if s.task.is_some() {
                        s.draining = true;
                    } else {
                        self.slot_leave(slot, out);
                    }
                }
                _ => self.stats.ignored_events += 1,
            },
            Event::Start { task } => match self.state.tasks.get(&task) {
                Some(t)
                    if matches!(t.status, Status::Waiting)
                        && t.spec.slots as usize <= self.state.machines[t.machine.index()].free.len() =>
                {
                    let m = t.machine;
                    self.start(m, task, None, out)?;
                    self.mark(m);
                }
                _ => self.stats.ignored_events += 1,
            },
            Event::Timer { token } => {
                // Timers are requested by the Control; without one, a
                // stray timer has no reader.
                if self.control.is_some() {
                    self.fired.push(token);
                } else {
                    self.stats.ignored_events += 1;
                }
            }
        }
        Ok(())
    }

    fn submit(
        &mut self,
        spec: TaskSpec,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        if self.state.tasks.contains_key(&spec.id) {
            self.stats.ignored_events += 1;
            return Ok(());
        }
        let now = self.state.now;
        self.state.know_org(spec.org);
        let machines = self.state.machines.len();
        let machine = if spec.slots == 0 {
            None
        } else if let Some(m) = spec.target {
            // The submitter chose: no policy is asked. A machine that does
            // not exist, or can never hold the task, rejects it.
            let fits = |m: MachineId| {
                let cap = self.state.machines[m.index()].capacity;
                cap == 0 || spec.slots <= cap
            };
            (m.index() < machines && fits(m)).then_some(m)
        } else {
            let view = self.state.policy_view(self.allocate.reads() != Reads::Blind);
            let task = view.spec(&spec);
            let m = match &mut self.allocate {
                AllocatePolicy::Blind(a) | AllocatePolicy::WithEstimates(a) => {
                    a.allocate(&view, task, &mut self.rng)
                }
                AllocatePolicy::Clairvoyant(a) => {
                    let oracle = oracle.ok_or(CoreError::NeedsOracle("allocate"))?;
                    a.allocate(&view, task, oracle, &mut self.rng)
                }
            };
            if let Some(m) = m
                && m.index() >= machines
            {
                return Err(CoreError::BadPick {
                    machine: m,
                    reason: format!(
                        "the allocate policy placed task {} on machine {m}, which does not exist ({machines} machines)",
                        spec.id
                    ),
                });
            }
            m
        };
        let Some(machine) = machine else {
            self.stats.rejected += 1;
            out.push(Action::Ended(EndRecord {
                spec,
                submit: now,
                end: now,
                outcome: Outcome::Rejected,
                machine: None,
                requeued: Vec::new(),
                last: None,
                phases: [None; 4],
            }));
            return Ok(());
        };
        let id = spec.id;
        let q = spec.slots as u64;
        let seq = self.state.next_seq;
        self.state.next_seq += 1;
        self.state.tasks.insert(
            id,
            TaskState {
                spec,
                seq,
                submit: now,
                machine,
                status: Status::Waiting,
                starts: 0,
                extra: Default::default(),
            },
        );
        let m = &mut self.state.machines[machine.index()];
        m.waiting += 1;
        m.waiting_slots += q;
        self.state.waiting += 1;
        self.mark(machine);
        let (state, mut p) = self.policies();
        p.tell(state, Notice::Queued { task: id, machine });
        Ok(())
    }

    fn finish_running(&mut self, task: TaskId, outcome: Outcome, out: &mut Vec<Action>) {
        match self.state.tasks.get(&task) {
            Some(t) if matches!(t.status, Status::Running { .. }) => {
                if outcome == Outcome::Killed {
                    out.push(Action::Stop {
                        task,
                        machine: t.machine,
                        requeued: false,
                    });
                }
                self.end(task, outcome, out)
            }
            _ => self.stats.ignored_events += 1,
        }
    }

    /// Releases the slots of a running task; returns the run.
    fn release(&mut self, task: TaskId, how: AttemptEnd) -> Option<Attempt> {
        let State {
            now,
            tasks,
            machines,
            slots: slot_state,
            busy_slots,
            ..
        } = &mut self.state;
        let t = tasks.get_mut(&task)?;
        let Status::Running(run) = core::mem::replace(&mut t.status, Status::Waiting) else {
            return None;
        };
        let Run { start, slots } = *run;
        let machine = t.machine;
        let mut drained = false;
        for &s in slots.iter().rev() {
            let st = &mut slot_state[s.index()];
            st.task = None;
            if st.draining {
                drained = true;
            } else if st.present {
                push_free(slot_state, machines, s);
            }
        }
        machines[machine.index()].running -= 1;
        *busy_slots -= slots.len() as u64;
        let run = Attempt {
            machine,
            slot: slots[0],
            slots: slots.len() as u32,
            start,
            stop: *now,
            end: how,
        };
        if drained {
            for &s in slots.iter() {
                if self.state.slots[s.index()].draining {
                    self.drop_slot(s);
                }
            }
        }
        self.mark(machine);
        Some(run)
    }

    /// The task leaves the platform with `outcome`.
    fn end(&mut self, task: TaskId, outcome: Outcome, out: &mut Vec<Action>) {
        let Some(t) = self.state.tasks.get(&task) else {
            return;
        };
        let was_running = matches!(t.status, Status::Running { .. });
        let machine = t.machine;
        if was_running && outcome == Outcome::Cancelled {
            out.push(Action::Stop {
                task,
                machine,
                requeued: false,
            });
        }
        {
            let (state, mut p) = self.policies();
            p.tell(
                state,
                Notice::Left {
                    task,
                    machine: Some(machine),
                    outcome,
                    was_running,
                },
            );
        }
        let now = self.state.now;
        let last = if was_running {
            let how = match outcome {
                Outcome::Completed => AttemptEnd::Completed,
                Outcome::Killed => AttemptEnd::Killed,
                Outcome::Failed => AttemptEnd::Failed,
                Outcome::Cancelled | Outcome::Rejected => AttemptEnd::Cancelled,
            };
            self.release(task, how)
        } else {
            let m = &mut self.state.machines[machine.index()];
            m.waiting -= 1;
            m.waiting_slots -= self.state.tasks[&task].spec.slots as u64;
            self.state.waiting -= 1;
            self.mark(machine);
            None
        };
        let t = self.state.tasks.remove(&task).expect("task exists");

        let (requeued, phases) = t.extra.into_parts();
        let phases = phases.map_or([None; 4], |mut log| {
            if let Some((cur, since)) = log.current.take() {
                log.done[cur as usize] = Some(now - since);
            }
            log.done
        });
        out.push(Action::Ended(EndRecord {
            spec: t.spec,
            submit: t.submit,
            end: now,
            outcome,
            machine: Some(machine),
            requeued,
            last,
            phases,
        }));
    }

    /// Changes a live task's priority; `by_control` when the Control asked
    /// (it is then not told). False if the task is not live.
    fn set_priority(&mut self, task: TaskId, priority: i64, by_control: bool) -> bool {
        let Some(t) = self.state.tasks.get_mut(&task) else {
            return false;
        };
        let old = t.spec.priority;
        if old == priority {
            return true;
        }
        t.spec.priority = priority;
        let machine = t.machine;
        let waiting = matches!(t.status, Status::Waiting);
        self.stats.priority_changes += 1;
        if waiting {
            self.mark(machine);
        }
        let n = Notice::PriorityChanged {
            task,
            old,
            new: priority,
        };
        let (state, mut p) = self.policies();
        if by_control {
            p.tell_all_but_control(state, n);
        } else {
            p.tell(state, n);
        }
        true
    }

    fn slot_leave(&mut self, slot: SlotId, out: &mut Vec<Action>) {
        let Some(s) = self.state.slots.get(slot.index()) else {
            self.stats.ignored_events += 1;
            return;
        };
        if !s.present {
            self.stats.ignored_events += 1;
            return;
        }
        let machine = s.machine;
        if let Some(task) = s.task {
            out.push(Action::Stop {
                task,
                machine,
                requeued: false,
            });
            self.end(task, Outcome::Killed, out);
        }
        // A draining slot has left with its task.
        if self.state.slots[slot.index()].present {
            self.drop_slot(slot);
        }
    }

    /// A present slot that holds no task leaves the platform.
    fn drop_slot(&mut self, slot: SlotId) {
        self.state.take_free(slot);
        let s = &mut self.state.slots[slot.index()];
        let (machine, owner) = (s.machine, s.owner);
        s.present = false;
        s.draining = false;
        self.state.machines[machine.index()].capacity -= 1;
        self.state.org_slots[owner.index()] -= 1;
        let (state, mut p) = self.policies();
        p.tell(state, Notice::SlotLeft { slot, machine });
    }

    fn run_control(&mut self, out: &mut Vec<Action>) {
        let Some(control) = self.control.as_mut() else {
            return;
        };
        if self.control_notices.is_empty() && self.fired.is_empty() {
            return;
        }
        let mut co = ControlOut::default();
        let view = control.view(&self.state);
        control
            .get_mut()
            .react(&view, &self.control_notices, &self.fired, &mut co);
        self.control_notices.clear();
        self.fired.clear();
        for (task, priority) in co.priorities {
            if self
                .state
                .tasks
                .get(&task)
                .is_some_and(|t| t.spec.priority != priority)
            {
                self.set_priority(task, priority, true);
                out.push(Action::Priority { task, priority });
            }
        }
        for (at, token) in co.timers {
            out.push(Action::Timer { at, token });
        }
    }

    fn dispatch(
        &mut self,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        if self.dirty_list.is_empty() {
            return Ok(());
        }
        if self.steered {
            // Another resource manager starts the tasks.
            for &m in &self.dirty_list {
                self.dirty[m.index()] = false;
            }
            self.dirty_list.clear();
            return Ok(());
        }
        let mut list = core::mem::take(&mut self.dirty_list);
        list.sort_unstable();
        let mut result = Ok(());
        for &m in &list {
            self.dirty[m.index()] = false;
            if result.is_ok() {
                result = self.fill(m, oracle, out);
            }
        }
        // Marks made while filling (a start elsewhere cannot happen, but a
        // requeue marks its own machine) are already handled by the loop.
        for &m in &self.dirty_list {
            self.dirty[m.index()] = false;
        }
        self.dirty_list.clear();
        list.clear();
        self.dirty_list = list;
        result
    }

    fn fill(
        &mut self,
        m: MachineId,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        let cap = self.state.machines[m.index()].capacity as u64;
        let mut budget = 3 * cap + 8;
        let preempts = self.order.preempts();
        loop {
            let ms = &self.state.machines[m.index()];
            if ms.waiting == 0 || (ms.free.is_empty() && !(preempts && ms.running > 0)) {
                return Ok(());
            }
            let view = self.state.policy_view(self.order.reads() != Reads::Blind);
            let pick = match &mut self.order {
                OrderPolicy::Blind(o) | OrderPolicy::WithEstimates(o) => o.pick(&view, m, &mut self.rng),
                OrderPolicy::Clairvoyant(o) => {
                    let oracle = oracle.ok_or(CoreError::NeedsOracle("order"))?;
                    o.pick(&view, m, oracle, &mut self.rng)
                }
            };
            match pick {
                None => return Ok(()),
                Some(Pick::Start(t)) => self.start(m, t, None, out)?,
                Some(Pick::StartOn(t, slots)) => self.start(m, t, Some(slots), out)?,
                Some(Pick::Requeue(t)) => self.requeue(m, t, out)?,
            }
            budget = budget.checked_sub(1).ok_or(CoreError::NoProgress(m))?;
        }
    }

    fn start(
        &mut self,
        m: MachineId,
        task: TaskId,
        chosen: Option<Vec<SlotId>>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        let bad = |reason: String| CoreError::BadPick { machine: m, reason };
        let t = self
            .state
            .tasks
            .get(&task)
            .ok_or_else(|| bad(format!("task {task} is not live")))?;
        if t.machine != m || !matches!(t.status, Status::Waiting) {
            return Err(bad(format!("task {task} is not waiting on this machine")));
        }
        let q = t.spec.slots;
        let free = self.state.machines[m.index()].free.len() as u32;
        if q > free {
            return Err(bad(format!("task {task} needs {q} slots, {free} free")));
        }
        let slots = match chosen {
            // Counted above: the machine has `q` free slots.
            None => self.state.pop_free_n(m, q as usize),
            Some(slots) => {
                if slots.len() != q as usize {
                    return Err(bad(format!("task {task} needs {q} slots, {} given", slots.len())));
                }
                for (i, &s) in slots.iter().enumerate() {
                    let ok = self.state.slots.get(s.index()).is_some_and(|st| st.machine == m);
                    if !ok || !self.state.take_free(s) {
                        for &back in slots[..i].iter().rev() {
                            self.state.push_free(back);
                        }
                        return Err(bad(format!("slot {s} is not a free slot of this machine")));
                    }
                }
                SlotList::from_vec(slots)
            }
        };
        let now = self.state.now;
        for &s in &slots {
            self.state.slots[s.index()].task = Some(task);
        }
        let t = self.state.tasks.get_mut(&task).expect("checked");
        t.status = Status::Running(Box::new(Run {
            start: now,
            slots: slots.clone(),
        }));
        t.starts += 1;
        t.extra.clear_phases();
        let ms = &mut self.state.machines[m.index()];
        ms.waiting -= 1;
        ms.waiting_slots -= q as u64;
        ms.running += 1;
        self.state.waiting -= 1;
        self.state.busy_slots += q as u64;
        self.stats.starts += 1;
        out.push(Action::Start {
            task,
            machine: m,
            slots,
        });
        let (state, mut p) = self.policies();
        p.tell(state, Notice::Started { task, machine: m });
        Ok(())
    }

    fn requeue(&mut self, m: MachineId, task: TaskId, out: &mut Vec<Action>) -> Result<(), CoreError> {
        let running_here = self
            .state
            .tasks
            .get(&task)
            .is_some_and(|t| t.machine == m && matches!(t.status, Status::Running { .. }));
        if !running_here {
            return Err(CoreError::BadPick {
                machine: m,
                reason: format!("task {task} is not running here"),
            });
        }
        let run = self.release(task, AttemptEnd::Requeued).expect("running");
        let t = self.state.tasks.get_mut(&task).expect("checked");
        t.extra.push_requeued(run);
        t.extra.clear_phases();
        let q = t.spec.slots as u64;
        let ms = &mut self.state.machines[m.index()];
        ms.waiting += 1;
        ms.waiting_slots += q;
        self.state.waiting += 1;
        self.stats.requeues += 1;
        out.push(Action::Stop {
            task,
            machine: m,
            requeued: true,
        });
        let (state, mut p) = self.policies();
        p.tell(state, Notice::Requeued { task, machine: m });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrgId;
    use crate::model::Phase;
    use crate::registry::Registry;
    use std::sync::{Arc, Mutex};

    fn build_allocate(spec: &crate::PolicySpec) -> Result<AllocatePolicy, crate::SpecError> {
        Registry::builtin().build_allocate(spec)
    }
    fn build_order(spec: &crate::PolicySpec) -> Result<OrderPolicy, crate::SpecError> {
        Registry::builtin().build_order(spec)
    }

    /// A scheduler from registry specs, with an optional (blind) Control.
    fn scheduler(
        platform: Platform,
        allocate: &str,
        order: &str,
        control: Option<Box<dyn Control>>,
    ) -> Scheduler {
        Scheduler::new(
            &platform,
            1,
            build_allocate(&allocate.parse().unwrap()).unwrap(),
            build_order(&order.parse().unwrap()).unwrap(),
            control.map(ControlPolicy::Blind),
        )
    }

    fn fifo_core(slots: u32) -> Scheduler {
        scheduler(Platform::pool(slots), "single-pool", "fifo", None)
    }

    fn task(id: u64) -> TaskSpec {
        TaskSpec::new(id, 0, 0)
    }

    /// Records every call it gets, with the instant.
    #[derive(Clone, Default)]
    struct Probe(Arc<Mutex<Vec<(Time, String)>>>);

    impl Control for Probe {
        fn notify(&mut self, view: &View, n: &Notice) {
            self.0.lock().unwrap().push((view.now(), format!("notify {n:?}")));
        }
        fn react(&mut self, view: &View, notices: &[Notice], _timers: &[u64], out: &mut ControlOut) {
            self.0
                .lock()
                .unwrap()
                .push((view.now(), format!("react {}", notices.len())));
            // Raises every newly queued task to priority 5.
            for n in notices {
                if let Notice::Queued { task, .. } = *n {
                    out.priorities.push((task, 5));
                }
            }
        }
    }

    #[test]
    fn a_step_without_events_does_nothing() {
        // A start is pending for the Control (notices of the last dispatch
        // reach `react` at the next step); an empty step must not run it:
        // a driver that steps at a time only a hidden runtime explains
        // would otherwise show that time to the Control.
        let probe = Probe::default();
        let mut core = scheduler(
            Platform::pool(1),
            "single-pool",
            "fifo",
            Some(Box::new(probe.clone())),
        );
        let mut out = Vec::new();
        core.step(Time::ZERO, [Event::Submit(task(1))], None, &mut out)
            .unwrap();
        let calls = probe.0.lock().unwrap().len();
        let (stats, actions) = (core.stats().clone(), out.len());
        core.step(Time::from_secs(100), [], None, &mut out).unwrap();
        assert_eq!(
            probe.0.lock().unwrap().len(),
            calls,
            "the Control ran on an empty step"
        );
        assert_eq!(core.now(), Time::ZERO, "an empty step moved the clock");
        assert_eq!(core.stats(), &stats);
        assert_eq!(out.len(), actions, "{out:?}");
    }

    /// Starts a waiting task only from `at` on (a policy that acts on
    /// the clock, as backfilling does).
    #[derive(Clone, Default)]
    struct NotBefore {
        at: Time,
        waiting: Vec<TaskId>,
    }

    impl Order for NotBefore {
        fn notify(&mut self, _view: &View, n: &Notice) {
            match *n {
                Notice::Queued { task, .. } => self.waiting.push(task),
                Notice::Started { task, .. } | Notice::Left { task, .. } => {
                    self.waiting.retain(|&t| t != task)
                }
                _ => {}
            }
        }
        fn pick(&mut self, view: &View, _m: MachineId, _rng: &mut SimRng) -> Option<Pick> {
            (view.now() >= self.at).then(|| self.waiting.first().map(|&t| Pick::Start(t)))?
        }
    }

    /// A step whose every event was ignored (a late report of a run that
    /// ended meanwhile: what a driver's stale failure wake-up sends) is no
    /// step: the clock does not move, the Control does not react, nothing
    /// is dispatched, though a policy would start a task at that instant.
    #[test]
    fn a_step_of_ignored_events_does_nothing() {
        let probe = Probe::default();
        let mut probe_only = Scheduler::new(
            &Platform::pool(1),
            1,
            build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            OrderPolicy::Blind(Box::new(NotBefore {
                at: Time::from_secs(60),
                waiting: Vec::new(),
            })),
            Some(ControlPolicy::Blind(Box::new(probe.clone()))),
        );
        // Task 3 waits: the policy starts nothing before 60.
        let mut out2 = Vec::new();
        probe_only
            .step(Time::ZERO, [Event::Submit(task(3))], None, &mut out2)
            .unwrap();
        let calls = probe.0.lock().unwrap().len();
        let (stats, actions) = (probe_only.stats().clone(), out2.len());
        // At 70, only events that do not apply: a task that never existed,
        // a duplicate cancel, a slot that does not exist.
        probe_only
            .step(
                Time::from_secs(70),
                [
                    Event::Fail { task: TaskId(1) },
                    Event::Cancel { task: TaskId(9) },
                    Event::SlotLeave { slot: SlotId(7) },
                ],
                None,
                &mut out2,
            )
            .unwrap();
        assert_eq!(probe.0.lock().unwrap().len(), calls, "the Control ran");
        assert_eq!(probe_only.now(), Time::ZERO, "the clock moved");
        assert_eq!(out2.len(), actions, "something was dispatched: {out2:?}");
        assert_eq!(probe_only.stats().ignored_events, stats.ignored_events + 3);
        // One event that applies among them makes it a step like any other.
        probe_only
            .step(
                Time::from_secs(71),
                [
                    Event::Fail { task: TaskId(1) },
                    Event::SlotJoin {
                        machine: MachineId(0),
                        owner: OrgId(0),
                    },
                ],
                None,
                &mut out2,
            )
            .unwrap();
        assert_eq!(probe_only.now(), Time::from_secs(71));
        assert!(
            out2.iter()
                .any(|a| matches!(a, Action::Start { task: TaskId(3), .. })),
            "{out2:?}"
        );
    }

    #[test]
    fn a_control_is_not_told_of_its_own_priority_changes() {
        let probe = Probe::default();
        let mut core = scheduler(
            Platform::pool(1),
            "single-pool",
            "priority",
            Some(Box::new(probe.clone())),
        );
        let mut out = Vec::new();
        core.step(
            Time::ZERO,
            [Event::Submit(task(1)), Event::Submit(task(2))],
            None,
            &mut out,
        )
        .unwrap();
        let prio = |out: &[Action]| {
            out.iter()
                .filter(|a| matches!(a, Action::Priority { priority: 5, .. }))
                .count()
        };
        assert_eq!(prio(&out), 2, "{out:?}");
        // An outside change is told; the Control's own are not (notify or react).
        core.step(
            Time::from_secs(1),
            [Event::SetPriority {
                task: TaskId(2),
                priority: 9,
            }],
            None,
            &mut out,
        )
        .unwrap();
        let log = probe.0.lock().unwrap();
        let told: Vec<&String> = log
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.contains("Priority"))
            .collect();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("old: 5, new: 9"), "{told:?}");
    }

    #[derive(Clone, Default)]
    struct BadSecondPick {
        waiting: Vec<TaskId>,
        picks: u32,
    }

    impl Order for BadSecondPick {
        fn notify(&mut self, _view: &View, n: &Notice) {
            match *n {
                Notice::Queued { task, .. } => self.waiting.push(task),
                Notice::Started { task, .. } | Notice::Left { task, .. } => {
                    self.waiting.retain(|&t| t != task)
                }
                _ => {}
            }
        }
        fn pick(&mut self, _view: &View, _m: MachineId, _rng: &mut SimRng) -> Option<Pick> {
            self.picks += 1;
            if self.picks == 2 {
                return Some(Pick::Start(TaskId(99)));
            }
            self.waiting.first().map(|&t| Pick::Start(t))
        }
    }

    fn bad_core() -> Scheduler {
        Scheduler::new(
            &Platform::pool(2),
            1,
            build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            OrderPolicy::Blind(Box::<BadSecondPick>::default()),
            None,
        )
    }

    #[test]
    fn a_failed_step_is_taken_back_and_poisons_the_scheduler() {
        let mut core = bad_core();
        let mut out = vec![Action::Timer {
            at: Time::ZERO,
            token: 0,
        }];
        let events = [Event::Submit(task(1)), Event::Submit(task(2))];
        let err = core.step(Time::ZERO, events, None, &mut out).unwrap_err();
        assert!(matches!(err, CoreError::BadPick { .. }), "{err}");
        // The first start of the step was made, then taken back out.
        assert_eq!(out.len(), 1, "{out:?}");
        let again = core.step(Time::from_secs(1), [Event::Submit(task(3))], None, &mut out);
        assert_eq!(again.unwrap_err(), CoreError::Poisoned);
    }

    #[test]
    fn an_atomic_step_that_fails_leaves_the_scheduler_as_it_was() {
        // Twin schedulers: one gets a failing step (undone), the other
        // never sees it; both then get the same steps and must decide the
        // same, RNG and policy state included.
        let mut a = fifo_core(2);
        let mut b = fifo_core(2);
        let mut out_a = Vec::new();
        let mut out_b = Vec::new();
        let first = [Event::Submit(task(1))];
        a.step_atomic(Time::ZERO, first.clone(), None, &mut out_a)
            .unwrap();
        b.step_atomic(Time::ZERO, first, None, &mut out_b).unwrap();
        // A bad step: an order that fails on its second pick, swapped in.
        let mut bad = bad_core();
        let mut out = Vec::new();
        let events = [Event::Submit(task(1)), Event::Submit(task(2))];
        assert!(bad.step_atomic(Time::ZERO, events, None, &mut out).is_err());
        assert!(out.is_empty());
        assert_eq!(bad.view().busy_slots(), 0, "the failed step left a task running");
        assert_eq!(bad.view().waiting_tasks(), 0, "the failed step left tasks queued");
        assert_eq!(bad.live_tasks(), 0);
        // Undone and still usable (not poisoned): a single task starts.
        bad.step_atomic(Time::from_secs(1), [Event::Submit(task(7))], None, &mut out)
            .unwrap();
        assert!(matches!(out[0], Action::Start { task: TaskId(7), .. }), "{out:?}");

        for (t, evs) in [
            (2, vec![Event::Submit(task(2)), Event::Submit(task(3))]),
            (5, vec![Event::Complete { task: TaskId(1) }]),
        ] {
            a.step_atomic(Time::from_secs(t), evs.clone(), None, &mut out_a)
                .unwrap();
            b.step_atomic(Time::from_secs(t), evs, None, &mut out_b).unwrap();
        }
        assert_eq!(out_a, out_b);
    }

    #[derive(Clone)]
    struct Nowhere;
    impl Allocate for Nowhere {
        fn allocate(&mut self, _: &View, _: crate::SpecView, _: &mut SimRng) -> Option<MachineId> {
            Some(MachineId(7))
        }
    }

    #[test]
    fn an_allocate_placing_a_task_on_a_missing_machine_is_an_error() {
        let mut core = Scheduler::new(
            &Platform::pool(1),
            1,
            AllocatePolicy::Blind(Box::new(Nowhere)),
            build_order(&"fifo".parse().unwrap()).unwrap(),
            None,
        );
        let mut out = Vec::new();
        let err = core
            .step(Time::ZERO, [Event::Submit(task(1))], None, &mut out)
            .unwrap_err();
        assert!(
            matches!(&err, CoreError::BadPick { machine: MachineId(7), reason } if reason.contains("does not exist")),
            "{err}"
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_task_sent_to_a_chosen_machine_goes_there() {
        // Three single-slot machines; least-loaded would pick machine 0 for
        // an idle platform. Targets are honoured; a missing or too small
        // machine rejects the task.
        let mut core = scheduler(Platform::machines(&[1, 1, 1]), "least-loaded", "fifo", None);
        let mut out = Vec::new();
        let events = [
            Event::Submit(task(1).on(MachineId(2))),
            Event::Submit(task(2).on(MachineId(2))),
            Event::Submit(task(3).on(MachineId(9))),
            Event::Submit(task(4).slots(2).on(MachineId(1))),
            Event::Submit(task(5)),
        ];
        core.step(Time::ZERO, events, None, &mut out).unwrap();
        let started: Vec<(u64, u32)> = out
            .iter()
            .filter_map(|a| match a {
                Action::Start { task, machine, .. } => Some((task.0, machine.0)),
                _ => None,
            })
            .collect();
        assert_eq!(started, vec![(5, 0), (1, 2)]);
        let rejected: Vec<u64> = out
            .iter()
            .filter_map(|a| match a {
                Action::Ended(r) if r.outcome == Outcome::Rejected => Some(r.spec.id.0),
                _ => None,
            })
            .collect();
        assert_eq!(rejected, vec![3, 4]);
        assert_eq!(core.view().task(TaskId(2)).unwrap().machine(), MachineId(2));
    }

    #[test]
    fn submitting_organizations_are_counted() {
        let mut core = fifo_core(1);
        assert_eq!(core.view().org_count(), 1);
        let mut out = Vec::new();
        core.step(
            Time::ZERO,
            [Event::Submit(TaskSpec::new(1, 4, 4))],
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(core.view().org_count(), 5);
        assert_eq!(core.view().org_slots(crate::ids::OrgId(4)), 0);
    }

    #[test]
    fn a_requeued_run_goes_back_to_the_queue_and_starts_again() {
        // One slot, tasks 1 and 2 (FIFO): 1 runs. The driver loses 1's run
        // at 3 s: 1 goes back to the queue ahead of 2 (older) and starts
        // again on the same slot, its first run recorded as requeued. A
        // requeue of a waiting task is ignored.
        let mut core = fifo_core(1);
        let mut out = Vec::new();
        let subs = [Event::Submit(task(1)), Event::Submit(task(2))];
        core.step(Time::ZERO, subs, None, &mut out).unwrap();
        out.clear();
        let at = Time::from_secs;
        core.step(at(3), [Event::Requeue { task: TaskId(1) }], None, &mut out)
            .unwrap();
        assert!(out.contains(&Action::Stop {
            task: TaskId(1),
            machine: MachineId(0),
            requeued: true
        }));
        let restarted = out
            .iter()
            .any(|a| matches!(a, Action::Start { task, .. } if *task == TaskId(1)));
        assert!(restarted, "{out:?}");
        assert_eq!(core.view().task(TaskId(1)).unwrap().attempts(), 2);
        let ignored = core.stats().ignored_events;
        core.step(at(4), [Event::Requeue { task: TaskId(2) }], None, &mut out)
            .unwrap();
        assert_eq!(core.stats().ignored_events, ignored + 1);
        out.clear();
        core.step(at(9), [Event::Complete { task: TaskId(1) }], None, &mut out)
            .unwrap();
        let end = out
            .iter()
            .find_map(|a| match a {
                Action::Ended(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        let runs: Vec<_> = end
            .runs()
            .map(|a| (a.start.whole_secs(), a.stop.whole_secs(), a.end))
            .collect();
        assert_eq!(
            runs,
            [(0, 3, AttemptEnd::Requeued), (3, 9, AttemptEnd::Completed)]
        );
    }

    /// The slot `task` runs on.
    fn slot_of(core: &Scheduler, task: u64) -> SlotId {
        let view = core.view();
        (0..view.total_slots() + 8)
            .map(SlotId)
            .find(|&s| view.slot_task(s) == Some(TaskId(task)))
            .expect("a running task")
    }

    /// A snapshot restores only a consistent state: checks the slot books.
    fn assert_consistent(core: &Scheduler) {
        let mut copy = fifo_core(0);
        copy.restore(&core.snapshot().unwrap()).unwrap();
    }

    #[test]
    fn a_draining_slot_takes_no_new_task_and_leaves_with_its_run() {
        // Two slots, three tasks: 1 and 2 run, 3 waits. Task 1's slot
        // drains at 1: task 1 goes on undisturbed; when it completes at 2
        // the slot leaves instead of taking task 3, which starts only when
        // task 2's slot frees at 3.
        let mut core = fifo_core(2);
        let mut out = Vec::new();
        let at = Time::from_secs;
        core.step(at(0), (1..=3).map(|i| Event::Submit(task(i))), None, &mut out)
            .unwrap();
        let s1 = slot_of(&core, 1);
        out.clear();
        core.step(at(1), [Event::SlotDrain { slot: s1 }], None, &mut out)
            .unwrap();
        assert!(out.is_empty(), "draining disturbs nothing: {out:?}");
        assert_eq!(
            core.view().total_slots(),
            2,
            "a busy slot stays until its run ends"
        );
        assert_consistent(&core);
        core.step(at(2), [Event::Complete { task: TaskId(1) }], None, &mut out)
            .unwrap();
        assert!(!out.iter().any(|a| matches!(a, Action::Start { .. })), "{out:?}");
        assert_eq!(core.view().total_slots(), 1);
        assert_eq!(core.view().org_slots(OrgId(0)), 1);
        assert!(!core.view().slot_present(s1));
        assert_consistent(&core);
        out.clear();
        core.step(at(3), [Event::Complete { task: TaskId(2) }], None, &mut out)
            .unwrap();
        let started: Vec<_> = out
            .iter()
            .filter_map(|a| match a {
                Action::Start { task, slots, .. } => Some((*task, slots[0])),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].0, TaskId(3));
        assert_ne!(started[0].1, s1, "a drained slot is never used again");
        // Draining the last slot, then a slot that has left: ignored twice.
        let s3 = slot_of(&core, 3);
        let ignored = core.stats().ignored_events;
        core.step(at(4), [Event::SlotDrain { slot: s3 }], None, &mut out)
            .unwrap();
        core.step(
            at(4),
            [Event::SlotDrain { slot: s3 }, Event::SlotDrain { slot: s1 }],
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(core.stats().ignored_events, ignored + 2);
        // Requeued (its worker lost), the task goes back to wait: the slot
        // leaves with the run, and nothing is left to run it.
        out.clear();
        core.step(at(5), [Event::Requeue { task: TaskId(3) }], None, &mut out)
            .unwrap();
        assert_eq!(core.view().total_slots(), 0);
        assert_eq!(core.view().waiting_tasks(), 1);
        assert!(!out.iter().any(|a| matches!(a, Action::Ended(_))), "{out:?}");
        assert_consistent(&core);
    }

    #[test]
    fn a_free_slot_drains_at_once_and_a_drained_busy_one_can_still_be_made_to_leave() {
        let mut core = fifo_core(3);
        let mut out = Vec::new();
        core.step(Time::ZERO, [Event::Submit(task(1))], None, &mut out)
            .unwrap();
        let busy = slot_of(&core, 1);
        let free: Vec<SlotId> = (0..3).map(SlotId).filter(|&s| s != busy).collect();
        core.step(
            Time::from_secs(1),
            free.iter().map(|&slot| Event::SlotDrain { slot }),
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(core.view().total_slots(), 1);
        assert_consistent(&core);
        core.step(
            Time::from_secs(2),
            [Event::SlotDrain { slot: busy }],
            None,
            &mut out,
        )
        .unwrap();
        // Killed with its slot: the slot leaves once, not twice.
        out.clear();
        core.step(
            Time::from_secs(3),
            [Event::SlotLeave { slot: busy }],
            None,
            &mut out,
        )
        .unwrap();
        assert!(
            out.iter()
                .any(|a| matches!(a, Action::Ended(r) if r.outcome == Outcome::Killed))
        );
        assert_eq!(core.view().total_slots(), 0);
        assert_eq!(core.view().org_slots(OrgId(0)), 0);
        assert_consistent(&core);
    }

    #[test]
    fn every_run_is_recorded_with_its_end() {
        // Three tasks start at 0: task 1's slot leaves at 2 (killed), task 2
        // completes at 4, task 3 is cancelled while running at 5. Each end
        // record lists its run and how it ended. (Requeued runs are in
        // fairsched-sim's engine tests.)
        let mut core = scheduler(Platform::pool(3), "single-pool", "fifo", None);
        let mut out = Vec::new();
        let subs = (1..=3).map(|i| Event::Submit(task(i)));
        core.step(Time::ZERO, subs, None, &mut out).unwrap();
        let at = Time::from_secs;
        core.step(
            at(2),
            [
                Event::Phase {
                    task: TaskId(2),
                    phase: Phase::Exec,
                },
                Event::SlotLeave {
                    slot: crate::ids::SlotId(0),
                },
            ],
            None,
            &mut out,
        )
        .unwrap();
        core.step(at(4), [Event::Complete { task: TaskId(2) }], None, &mut out)
            .unwrap();
        core.step(at(5), [Event::Cancel { task: TaskId(3) }], None, &mut out)
            .unwrap();
        let ends: Vec<&EndRecord> = out
            .iter()
            .filter_map(|a| match a {
                Action::Ended(r) => Some(r),
                _ => None,
            })
            .collect();
        type Runs = Vec<(i64, i64, AttemptEnd)>;
        let runs: Vec<(u64, Runs)> = ends
            .iter()
            .map(|r| {
                let v = r
                    .runs()
                    .map(|a| (a.start.whole_secs(), a.stop.whole_secs(), a.end))
                    .collect();
                (r.spec.id.0, v)
            })
            .collect();
        assert_eq!(
            runs,
            vec![
                (1, vec![(0, 2, AttemptEnd::Killed)]),
                (2, vec![(0, 4, AttemptEnd::Completed)]),
                (3, vec![(0, 5, AttemptEnd::Cancelled)]),
            ]
        );
        let stops: Vec<(u64, u32)> = out
            .iter()
            .filter_map(|a| match a {
                Action::Stop { task, machine, .. } => Some((task.0, machine.0)),
                _ => None,
            })
            .collect();
        assert_eq!(stops, vec![(1, 0), (3, 0)]);
        assert_eq!(ends[1].phases[Phase::Exec as usize], Some(at(2)));
    }
}
