//! The deterministic core: events in, actions out.

use crate::event::{Action, EndRecord, Event, Notice};
use crate::ids::{MachineId, SlotId, TaskId};
use crate::model::{Outcome, TaskSpec};
use crate::point::{Allocate, ClairvoyantAllocate, ClairvoyantOrder, Control, ControlOut, Order};
use crate::point::{Pick, RuntimeOracle, SimRng};
use crate::state::{PhaseLog, Platform, State, Status, TaskState, View};
use crate::time::Time;
use rand::SeedableRng;
use serde::Serialize;

/// An `Allocate` policy, blind or clairvoyant.
pub enum AllocatePolicy {
    Blind(Box<dyn Allocate>),
    Clairvoyant(Box<dyn ClairvoyantAllocate>),
}

/// An `Order` policy, blind or clairvoyant.
pub enum OrderPolicy {
    Blind(Box<dyn Order>),
    Clairvoyant(Box<dyn ClairvoyantOrder>),
}

impl AllocatePolicy {
    fn notify(&mut self, view: &View, n: &Notice) {
        match self {
            AllocatePolicy::Blind(p) => p.notify(view, n),
            AllocatePolicy::Clairvoyant(p) => p.notify(view, n),
        }
    }
    pub fn is_clairvoyant(&self) -> bool {
        matches!(self, AllocatePolicy::Clairvoyant(_))
    }
}

impl OrderPolicy {
    fn notify(&mut self, view: &View, n: &Notice) {
        match self {
            OrderPolicy::Blind(p) => p.notify(view, n),
            OrderPolicy::Clairvoyant(p) => p.notify(view, n),
        }
    }
    pub fn is_clairvoyant(&self) -> bool {
        matches!(self, OrderPolicy::Clairvoyant(_))
    }
    fn preempts(&self) -> bool {
        match self {
            OrderPolicy::Blind(p) => p.preempts(),
            OrderPolicy::Clairvoyant(p) => p.preempts(),
        }
    }
}

/// Errors are policy bugs or a missing oracle, never bad driver input
/// (inapplicable events are ignored and counted).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    #[error("policy {0} is clairvoyant and needs a runtime oracle, which this driver does not have")]
    NeedsOracle(&'static str),
    #[error("invalid pick on machine {machine}: {reason}")]
    BadPick { machine: MachineId, reason: String },
    #[error("order policy keeps picking on machine {0} without making progress")]
    NoProgress(MachineId),
}

/// Counters about what the core did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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
/// the seeded RNG; no clock, no I/O, no threads.
pub struct Scheduler {
    state: State,
    allocate: AllocatePolicy,
    order: OrderPolicy,
    control: Option<Box<dyn Control>>,
    rng: SimRng,
    dirty: Vec<bool>,
    dirty_list: Vec<MachineId>,
    control_notices: Vec<Notice>,
    fired: Vec<u64>,
    stats: CoreStats,
}

/// Delivers a notice to every policy that wants it.
struct Policies<'a> {
    allocate: &'a mut AllocatePolicy,
    order: &'a mut OrderPolicy,
    control: Option<(&'a mut Box<dyn Control>, &'a mut Vec<Notice>)>,
}

impl Policies<'_> {
    fn tell(&mut self, state: &State, n: Notice) {
        let view = state.view();
        self.allocate.notify(&view, &n);
        self.order.notify(&view, &n);
        if let Some((c, buffer)) = self.control.as_mut() {
            c.notify(&view, &n);
            buffer.push(n);
        }
    }
}

impl Scheduler {
    pub fn new(
        platform: &Platform,
        seed: u64,
        allocate: AllocatePolicy,
        order: OrderPolicy,
        control: Option<Box<dyn Control>>,
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
        }
    }

    pub fn view(&self) -> View<'_> {
        self.state.view()
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

    /// Apply the events that happened at `now`, in order, then let the
    /// control policy react, then fill free slots. Actions are appended to
    /// `out`. `oracle` is required only by clairvoyant policies.
    pub fn step(
        &mut self,
        now: Time,
        events: impl IntoIterator<Item = Event>,
        oracle: Option<&dyn RuntimeOracle>,
        out: &mut Vec<Action>,
    ) -> Result<(), CoreError> {
        if now > self.state.now {
            self.state.now = now;
        }
        for ev in events {
            self.stats.events += 1;
            self.apply(ev, oracle, out)?;
        }
        self.run_control(out);
        self.dispatch(oracle, out)
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
            Event::Cancel { task } => match self.state.tasks.get(&task) {
                Some(_) => self.end(task, Outcome::Cancelled, out),
                None => self.stats.ignored_events += 1,
            },
            Event::Phase { task, phase } => match self.state.tasks.get_mut(&task) {
                Some(t) if matches!(t.status, Status::Running { .. }) => {
                    if let Some((cur, since)) = t.phases.current {
                        t.phases.done[cur as usize] = Some(now - since);
                    }
                    t.phases.current = Some((phase, now));
                    let (state, mut p) = self.policies();
                    p.tell(state, Notice::PhaseStarted { task, phase });
                }
                _ => self.stats.ignored_events += 1,
            },
            Event::SetPriority { task, priority } => {
                if !self.set_priority(task, priority) {
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
        let view = self.state.view();
        let machine = if spec.slots == 0 {
            None
        } else {
            match &mut self.allocate {
                AllocatePolicy::Blind(a) => a.allocate(&view, &spec, &mut self.rng),
                AllocatePolicy::Clairvoyant(a) => {
                    let oracle = oracle.ok_or(CoreError::NeedsOracle("allocate"))?;
                    a.allocate(&view, &spec, oracle, &mut self.rng)
                }
            }
        }
        .filter(|m| m.index() < self.state.machines.len());
        let Some(machine) = machine else {
            self.stats.rejected += 1;
            out.push(Action::Ended(EndRecord {
                spec,
                submit: now,
                start: None,
                end: now,
                machine: None,
                slot: None,
                outcome: Outcome::Rejected,
                attempts: 0,
                busy: Time::ZERO,
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
                attempts: 0,
                busy: Time::ZERO,
                last_start: None,
                phases: PhaseLog::default(),
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
                        requeued: false,
                    });
                }
                self.end(task, outcome, out)
            }
            _ => self.stats.ignored_events += 1,
        }
    }

    /// Releases the slots of a running task; returns (machine, start, first slot).
    fn release(&mut self, task: TaskId) -> Option<(Time, Option<SlotId>)> {
        let t = self.state.tasks.get_mut(&task)?;
        let Status::Running { start, slots } = std::mem::replace(&mut t.status, Status::Waiting) else {
            return None;
        };
        let machine = t.machine;
        let first = slots.first().copied();
        let q = slots.len() as u64;
        t.busy += self.state.now - start;
        for &s in slots.iter().rev() {
            self.state.slots[s.index()].task = None;
            if self.state.slots[s.index()].present {
                self.state.push_free(s);
            }
        }
        self.state.machines[machine.index()].running -= 1;
        self.state.busy_slots -= q;
        self.mark(machine);
        Some((start, first))
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
        let (start, slot) = if was_running {
            let (s, f) = self.release(task).expect("running task has slots");
            (Some(s), f)
        } else {
            let m = &mut self.state.machines[machine.index()];
            m.waiting -= 1;
            m.waiting_slots -= self.state.tasks[&task].spec.slots as u64;
            self.state.waiting -= 1;
            self.mark(machine);
            (None, None)
        };
        let mut t = self.state.tasks.remove(&task).expect("task exists");
        if let Some((cur, since)) = t.phases.current.take() {
            t.phases.done[cur as usize] = Some(now - since);
        }
        out.push(Action::Ended(EndRecord {
            spec: t.spec,
            submit: t.submit,
            // Only a running task has a start: one that was requeued and
            // left while waiting shows its earlier runs in `attempts` and
            // `busy`, not as a start (its wait did not end in a run).
            start,
            end: now,
            machine: Some(machine),
            slot,
            outcome,
            attempts: t.attempts,
            busy: t.busy,
            phases: t.phases.done,
        }));
    }

    fn set_priority(&mut self, task: TaskId, priority: i64) -> bool {
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
        let (state, mut p) = self.policies();
        p.tell(
            state,
            Notice::PriorityChanged {
                task,
                old,
                new: priority,
            },
        );
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
        let owner = s.owner;
        if let Some(task) = s.task {
            out.push(Action::Stop {
                task,
                requeued: false,
            });
            self.end(task, Outcome::Killed, out);
        }
        self.state.take_free(slot);
        let s = &mut self.state.slots[slot.index()];
        s.present = false;
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
        control.react(&self.state.view(), &self.control_notices, &self.fired, &mut co);
        self.control_notices.clear();
        self.fired.clear();
        for (task, priority) in co.priorities {
            if self
                .state
                .tasks
                .get(&task)
                .is_some_and(|t| t.spec.priority != priority)
            {
                self.set_priority(task, priority);
                out.push(Action::Priority { task, priority });
            }
        }
        // The control's own changes are not fed back to it.
        self.control_notices.clear();
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
        let mut list = std::mem::take(&mut self.dirty_list);
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
            let view = self.state.view();
            let pick = match &mut self.order {
                OrderPolicy::Blind(o) => o.pick(&view, m, &mut self.rng),
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
            None => (0..q)
                .map(|_| self.state.pop_free(m).expect("counted free slots"))
                .collect(),
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
                slots
            }
        };
        let now = self.state.now;
        for &s in &slots {
            self.state.slots[s.index()].task = Some(task);
        }
        let t = self.state.tasks.get_mut(&task).expect("checked");
        t.status = Status::Running {
            start: now,
            slots: slots.clone(),
        };
        t.attempts += 1;
        t.last_start = Some(now);
        t.phases = PhaseLog::default();
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
        self.release(task);
        let t = self.state.tasks.get_mut(&task).expect("checked");
        t.phases = PhaseLog::default();
        let q = t.spec.slots as u64;
        let ms = &mut self.state.machines[m.index()];
        ms.waiting += 1;
        ms.waiting_slots += q;
        self.state.waiting += 1;
        self.stats.requeues += 1;
        out.push(Action::Stop { task, requeued: true });
        let (state, mut p) = self.policies();
        p.tell(state, Notice::Requeued { task, machine: m });
        Ok(())
    }
}
