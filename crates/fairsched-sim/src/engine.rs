//! The discrete-event engine: a virtual clock over a heap keyed on
//! `(time, class, sequence)`, client agents that submit work as the run
//! unfolds, and the true runtimes that it hides from the core.
//!
//! Same-instant order: completions and phase changes first (slots are freed
//! before anything else happens), then what agents do (arrivals from a
//! trace, releases of workflow tasks, cancellations), then outside events
//! and the Control's timers, each class in the order it was set.
//!
//! The core is stepped only at instants where something it may observe
//! happened. When a task stops early (killed, cancelled, failed, requeued),
//! the heap still holds its completion at the end of the run it will never
//! finish; that entry is dropped without a step when its time comes, and no
//! longer counts as pending work, so neither a policy, nor a Control timer,
//! nor the end of the run can fall on a time that only the hidden runtime
//! explains.

use crate::agent::{Agent, AgentCtx, Trace};
use crate::errors::SimError;
use fairsched_core::{
    Action, Event, Observer, Phase, RuntimeOracle, Sample, Scheduler, SlotId, TaskId, TaskMeta, TaskSpec,
    Time,
};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::collections::hash_map::Entry as MapEntry;

/// A task arriving at `submit`, with what only the driver knows: the job it
/// came from, its true runtime and, optionally, the durations of its four
/// phases (which then sum to the runtime).
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    pub spec: TaskSpec,
    /// The job it came from (the parts of a split job share it); kept from
    /// the core, shown in outputs.
    pub job: u64,
    pub submit: Time,
    pub runtime: Time,
    pub phases: Option<[Time; 4]>,
    /// Its job's status in the workload log (SWF field 11), when it came
    /// from one; kept from the core, counted in outputs.
    pub log_status: Option<i8>,
}

impl Arrival {
    /// A task that is its own job.
    pub fn new(spec: TaskSpec, submit: Time, runtime: Time) -> Arrival {
        Arrival {
            job: spec.id.0,
            spec,
            submit,
            runtime,
            phases: None,
            log_status: None,
        }
    }
    /// A workflow-style task whose runtime is the sum of its phases.
    pub fn with_phases(spec: TaskSpec, submit: Time, phases: [Time; 4]) -> Arrival {
        let runtime = phases.iter().fold(Time::ZERO, |a, &p| a + p);
        Arrival {
            phases: Some(phases),
            ..Arrival::new(spec, submit, runtime)
        }
    }
    /// Says which job the task came from.
    pub fn job(mut self, job: u64) -> Arrival {
        self.job = job;
        self
    }
    /// Says what the workload log says became of its job (SWF field 11).
    pub fn log_status(mut self, status: i8) -> Arrival {
        self.log_status = Some(status);
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    Running = 0,
    Agent = 1,
    Outside = 2,
}

/// What a heap entry stands for. Small (events wait in a slab), so the
/// heap moves little memory.
#[derive(Clone, Copy, Debug)]
enum Payload {
    Complete {
        task: TaskId,
        attempt: u32,
    },
    Phase {
        task: TaskId,
        attempt: u32,
        phase: Phase,
    },
    Wake {
        agent: u32,
        token: u64,
    },
    /// An outside event, or what an agent did in reaction to an action
    /// (delivered at the same instant in a step of its own): index in the
    /// event slab.
    Event(u32),
    /// A Control timer: not pending work (see the wind-down in
    /// [`Simulation::run_agents`]).
    Timer(u64),
}

/// A heap entry. `order` packs the class (top two bits) above the
/// sequence number, so the heap compares two integers: `(time, class, seq)`.
#[derive(Debug)]
struct Entry {
    time: Time,
    order: u64,
    payload: Payload,
}

impl Entry {
    fn class(&self) -> u64 {
        self.order >> 62
    }
}

impl PartialEq for Entry {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.order) == (o.time, o.order)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        match self.time.cmp(&o.time) {
            Ordering::Equal => self.order.cmp(&o.order),
            other => other,
        }
    }
}

/// What the engine knows of a live task and the core does not.
struct Live {
    /// The job it came from (outputs only).
    job: u64,
    runtime: Time,
    /// Bumped at every start and stop: heap entries of an earlier run are
    /// stale.
    attempt: u32,
    /// Heap entries of the current run still to come (counted as pending):
    /// at most 5. A `u16` so that `log_status` fits in the padding.
    outstanding: u16,
    /// Its job's status in the log (outputs only).
    log_status: Option<i8>,
}

struct Oracle<'a>(&'a FxHashMap<TaskId, Live>);

impl RuntimeOracle for Oracle<'_> {
    fn runtime(&self, task: TaskId) -> Option<Time> {
        self.0.get(&task).map(|l| l.runtime)
    }
}

/// Task ids of a run. Ids the engine hands out ([`AgentCtx::submit_new`])
/// come from `[base, next)`, in increasing order, skipping every explicit id
/// seen so far; an explicit id ([`AgentCtx::submit`]) in that range would
/// be a second task with an id already used, and is refused. O(1) memory.
#[derive(Clone, Copy, Debug)]
struct Ids {
    base: u64,
    next: u64,
    max_explicit: u64,
}

impl Ids {
    fn new(base: u64) -> Ids {
        Ids {
            base,
            next: base,
            max_explicit: 0,
        }
    }
    fn fresh(&mut self) -> TaskId {
        let id = self.next.max(self.max_explicit.saturating_add(1));
        self.next = id + 1;
        TaskId(id)
    }
    /// Whether an explicit id may be used: not one the engine handed out
    /// (nor an explicit one it skipped, already used).
    fn explicit(&mut self, id: TaskId) -> bool {
        if (self.base..self.next).contains(&id.0) {
            return false;
        }
        self.max_explicit = self.max_explicit.max(id.0);
        true
    }
}

/// When what an agent asks for reaches the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deliver {
    /// In the batch being built (a wake-up takes its place in the
    /// instant's order).
    Now,
    /// In a step of its own at the same instant (a reaction to an action,
    /// or the agent's start).
    Later,
}

/// Everything an agent's requests touch: the heap, the batch being built,
/// the hidden truth of live tasks, task ids. Agents write into it directly
/// through their [`AgentCtx`].
pub(crate) struct World {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// Events waiting in the heap (`Payload::Event`), and free places.
    events: Vec<Option<Event>>,
    free_events: Vec<u32>,
    live: FxHashMap<TaskId, Live>,
    /// The phases of live tasks that have them (a trace replay's have
    /// none: kept apart, a live task takes 24 bytes, not 64; ~190,000
    /// are live at once on RICC).
    phases: FxHashMap<TaskId, [Time; 4]>,
    ids: Ids,
    batch: Vec<Event>,
    /// The instant being processed.
    pub(crate) clock: Time,
    /// Machines of the platform (fixed for a run).
    pub(crate) machines: usize,
    submitted: u64,
    /// Heap entries that can still make something happen: current runs'
    /// completions and phases, agents' wake-ups and events, outside events
    /// (not Control timers, not stale entries).
    pending: usize,
}

impl World {
    fn push(&mut self, time: Time, class: Class, payload: Payload) {
        self.seq += 1;
        debug_assert!(self.seq < 1 << 62);
        self.pending += usize::from(!matches!(payload, Payload::Timer(_)));
        self.heap.push(Reverse(Entry {
            time,
            order: (class as u64) << 62 | self.seq,
            payload,
        }));
    }

    fn push_event(&mut self, time: Time, class: Class, ev: Event) {
        let i = match self.free_events.pop() {
            Some(i) => {
                self.events[i as usize] = Some(ev);
                i
            }
            None => {
                self.events.push(Some(ev));
                (self.events.len() - 1) as u32
            }
        };
        self.push(time, class, Payload::Event(i));
    }

    fn take_event(&mut self, i: u32) -> Event {
        self.free_events.push(i);
        self.events[i as usize].take().expect("a waiting event")
    }

    /// An event from an agent, now or in a step of its own.
    pub(crate) fn deliver(&mut self, ev: Event, when: Deliver) {
        match when {
            Deliver::Now => self.batch.push(ev),
            Deliver::Later => self.push_event(self.clock, Class::Agent, ev),
        }
    }

    pub(crate) fn wake(&mut self, agent: usize, at: Time, token: u64) {
        let at = at.max(self.clock);
        self.push(
            at,
            Class::Agent,
            Payload::Wake {
                agent: agent as u32,
                token,
            },
        );
    }

    pub(crate) fn fresh_id(&mut self) -> TaskId {
        self.ids.fresh()
    }

    /// Registers a submission's hidden truth and delivers it.
    pub(crate) fn submit(&mut self, a: Arrival, fresh: bool, when: Deliver) -> Result<(), SimError> {
        let (task, now) = (a.spec.id, self.clock);
        if a.submit != now {
            return Err(SimError::Agent(format!(
                "task {task} is dated {}s but was submitted at {now}s",
                a.submit
            )));
        }
        if !fresh && !self.ids.explicit(task) {
            return Err(SimError::DuplicateTask { task, at: now });
        }
        match self.live.entry(task) {
            MapEntry::Occupied(_) => return Err(SimError::DuplicateTask { task, at: now }),
            MapEntry::Vacant(v) => {
                v.insert(Live {
                    job: a.job,
                    runtime: a.runtime,
                    attempt: 0,
                    outstanding: 0,
                    log_status: a.log_status,
                });
                if let Some(p) = a.phases {
                    self.phases.insert(task, p);
                }
            }
        }
        self.submitted += 1;
        self.deliver(Event::Submit(a.spec), when);
        Ok(())
    }

    /// Whether a completion or phase entry belongs to the task's current
    /// run; if so it is no longer outstanding.
    fn current(&mut self, task: TaskId, attempt: u32) -> bool {
        match self.live.get_mut(&task) {
            Some(l) if l.attempt == attempt => {
                l.outstanding -= 1;
                self.pending -= 1;
                true
            }
            _ => false,
        }
    }
}

/// What a run did, beyond the per-task records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Virtual time of the last step.
    pub end: Time,
    /// Steps of the core (instants, and agents' reactions within one).
    pub steps: u64,
    pub submitted: u64,
    /// Tasks that could never start (still waiting when nothing else could
    /// happen); they end as cancelled.
    pub stranded: u64,
    pub core: fairsched_core::CoreStats,
}

/// How often (in steps) observers get `on_progress`.
const PROGRESS_EVERY: u64 = 1 << 12;

/// A simulation: the core, the event heap, the agents and the hidden
/// runtimes.
pub struct Simulation<'a> {
    core: Scheduler,
    agents: Vec<Box<dyn Agent + 'a>>,
    /// The agents that watch actions, in order.
    watchers: Vec<usize>,
    /// Streaming agents and the instant each next acts at, in agent order.
    polled: Vec<(usize, Time)>,
    w: World,
    stats: RunStats,
    last_sample: Option<Sample>,
    actions: Vec<Action>,
    /// What the driver kept of the tasks that ended in the current step.
    ended: Vec<TaskMeta>,
    /// Streaming agents due at the current instant (a reused buffer).
    due: Vec<usize>,
    /// Whether the observer wants `on_step` (asked once per run).
    steps_wanted: bool,
    /// Whether the observer wants `on_events` (asked once per run).
    events_wanted: bool,
    /// Speed of each slot (1 = nominal): a run on a slot of speed s takes
    /// its phases' durations divided by s.
    speed: Option<Box<dyn Fn(SlotId) -> f64 + 'a>>,
}

impl<'a> Simulation<'a> {
    pub fn new(core: Scheduler) -> Simulation<'a> {
        let machines = core.view().machine_count();
        Simulation {
            core,
            agents: Vec::new(),
            watchers: Vec::new(),
            polled: Vec::new(),
            w: World {
                heap: BinaryHeap::new(),
                seq: 0,
                events: Vec::new(),
                free_events: Vec::new(),
                live: FxHashMap::default(),
                phases: FxHashMap::default(),
                ids: Ids::new(1),
                batch: Vec::new(),
                clock: Time::ZERO,
                machines,
                submitted: 0,
                pending: 0,
            },
            stats: RunStats::default(),
            last_sample: None,
            actions: Vec::new(),
            ended: Vec::new(),
            due: Vec::new(),
            steps_wanted: true,
            events_wanted: false,
            speed: None,
        }
    }

    pub fn core(&self) -> &Scheduler {
        &self.core
    }

    /// Heterogeneous slots: a task started on slot `s` (its first slot)
    /// runs `1 / speed(s)` times as long as its arrival says, every phase
    /// alike (rounded to the millisecond, at least 1 ms for a non-zero
    /// duration). `speed` must be finite and positive; other values count
    /// as 1. The core never sees speeds: only the times they produce.
    pub fn slot_speed(&mut self, speed: impl Fn(SlotId) -> f64 + 'a) -> &mut Self {
        self.speed = Some(Box::new(speed));
        self
    }

    /// Schedules an outside event (a cancel, a slot joining, a priority
    /// change, a failure…) at `at`.
    pub fn schedule(&mut self, at: Time, ev: Event) {
        self.w.push_event(at, Class::Outside, ev);
    }

    /// Ids handed out by [`AgentCtx::submit_new`] start at `base` (default
    /// 1): set it above the explicit ids of a replay that agents join.
    pub fn fresh_ids_from(&mut self, base: u64) -> &mut Self {
        self.w.ids = Ids::new(base.max(1));
        self
    }

    /// Adds a client agent (see [`Agent`]); agents act in the order added.
    pub fn add_agent(&mut self, agent: impl Agent + 'a) -> &mut Self {
        if agent.watches_actions() {
            self.watchers.push(self.agents.len());
        }
        self.agents.push(Box::new(agent));
        self
    }

    /// Replays `arrivals` (in non-decreasing submit order, as one
    /// [`Trace`] agent next to the agents already added, under their own
    /// ids) to the end, pushing every result into `obs`.
    pub fn run<I, O>(&mut self, arrivals: I, obs: &mut O) -> Result<RunStats, SimError>
    where
        I: IntoIterator<Item = Result<Arrival, SimError>>,
        I::IntoIter: 'a,
        O: Observer + ?Sized,
    {
        self.add_agent(Trace::new(arrivals));
        self.run_agents(obs)
    }

    /// Runs the agents (and scheduled events) to the end, pushing every
    /// result into `obs`. The run ends when nothing is left to happen, or
    /// when tasks wait that can never start (none runs, and only Control
    /// timers are left): those are cancelled (`RunStats::stranded`).
    pub fn run_agents<O>(&mut self, obs: &mut O) -> Result<RunStats, SimError>
    where
        O: Observer + ?Sized,
    {
        self.steps_wanted = obs.wants_steps();
        self.events_wanted = obs.wants_events();
        for i in 0..self.agents.len() {
            self.call_agent(i, Deliver::Later, |a, ctx| a.start(ctx))?;
        }
        loop {
            let v = self.core.view();
            let stuck = v.busy_slots() == 0 && v.waiting_tasks() > 0;
            if stuck && self.w.pending == 0 && self.polled.is_empty() {
                break;
            }
            let heap = self.w.heap.peek().map(|e| e.0.time);
            let poll = self.polled.iter().map(|&(_, t)| t).min();
            let t = match (heap, poll) {
                (Some(h), Some(p)) => h.min(p),
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => break,
            };
            self.w.clock = t;
            // Completions first, then streaming agents, then the rest.
            while self
                .w
                .heap
                .peek()
                .is_some_and(|e| e.0.time == t && e.0.class() == Class::Running as u64)
            {
                let Reverse(e) = self.w.heap.pop().expect("peeked");
                self.take(e.payload)?;
            }
            if poll == Some(t) {
                let mut due = std::mem::take(&mut self.due);
                due.extend(self.polled.iter().filter(|p| p.1 == t).map(|p| p.0));
                for &i in &due {
                    self.call_agent(i, Deliver::Now, |a, ctx| a.on_poll(ctx))?;
                }
                due.clear();
                self.due = due;
            }
            while self.w.heap.peek().is_some_and(|e| e.0.time == t) {
                let Reverse(e) = self.w.heap.pop().expect("peeked");
                self.take(e.payload)?;
            }
            if !self.w.batch.is_empty() {
                self.step(obs)?;
            }
        }
        // Nothing can happen any more: what still waits never starts.
        if self.core.live_tasks() > 0 {
            let ids = self.core.live_task_ids();
            self.stats.stranded = ids.len() as u64;
            self.w.clock = self.stats.end;
            self.w
                .batch
                .extend(ids.into_iter().map(|task| Event::Cancel { task }));
            self.step(obs)?;
        }
        self.stats.submitted = self.w.submitted;
        obs.on_progress(self.stats.end, self.stats.submitted);
        self.stats.core = self.core.stats().clone();
        Ok(self.stats.clone())
    }

    /// Turns a due heap entry into core events, unless it belongs to a run
    /// that was stopped (then it is dropped: no step for it).
    fn take(&mut self, p: Payload) -> Result<(), SimError> {
        let w = &mut self.w;
        match p {
            Payload::Complete { task, attempt } => {
                if w.current(task, attempt) {
                    w.batch.push(Event::Complete { task });
                }
            }
            Payload::Phase { task, attempt, phase } => {
                if w.current(task, attempt) {
                    w.batch.push(Event::Phase { task, phase });
                }
            }
            Payload::Wake { agent, token } => {
                w.pending -= 1;
                self.call_agent(agent as usize, Deliver::Now, |a, ctx| a.on_wake(token, ctx))?;
            }
            Payload::Event(i) => {
                w.pending -= 1;
                let ev = w.take_event(i);
                w.batch.push(ev);
            }
            Payload::Timer(token) => w.batch.push(Event::Timer { token }),
        }
        Ok(())
    }

    /// Calls agent `i`; what it asks for reaches the world at once (`Now`:
    /// in the batch being built) or in a step of its own at this instant.
    fn call_agent(
        &mut self,
        i: usize,
        deliver: Deliver,
        f: impl FnOnce(&mut dyn Agent, &mut AgentCtx) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        let mut ctx = AgentCtx::new(&mut self.w, i, deliver);
        f(self.agents[i].as_mut(), &mut ctx)?;
        ctx.finish()?;
        self.repoll(i)
    }

    /// Asks agent `i` when it next wants to be polled.
    fn repoll(&mut self, i: usize) -> Result<(), SimError> {
        let next = self.agents[i].next_poll()?;
        let at = self.polled.iter().position(|p| p.0 == i);
        match (next, at) {
            (None, None) => {}
            (None, Some(k)) => {
                self.polled.remove(k);
            }
            (Some(t), Some(k)) => {
                if t <= self.polled[k].1 && t <= self.w.clock {
                    return Err(SimError::Agent(format!(
                        "agent {i} asks to be polled at {t}s, not after {}s",
                        self.w.clock
                    )));
                }
                self.polled[k].1 = t;
            }
            (Some(t), None) => {
                if t < self.w.clock {
                    return Err(SimError::Agent(format!(
                        "agent {i} asks to be polled at {t}s, before the clock ({}s)",
                        self.w.clock
                    )));
                }
                let k = self.polled.partition_point(|p| p.0 < i);
                self.polled.insert(k, (i, t));
            }
        }
        Ok(())
    }

    fn step<O: Observer + ?Sized>(&mut self, obs: &mut O) -> Result<(), SimError> {
        let now = self.w.clock;
        if self.events_wanted {
            obs.on_events(now, &self.w.batch);
        }
        let stepped = self.core.step(
            now,
            self.w.batch.drain(..),
            Some(&Oracle(&self.w.live)),
            &mut self.actions,
        )?;
        if !stepped {
            // Only events that did not apply (a late report of a run that
            // ended meanwhile): the core took no step, nor does the run.
            return Ok(());
        }
        self.stats.steps += 1;
        self.stats.end = now;
        let mut actions = std::mem::take(&mut self.actions);
        self.ended.clear();
        for a in &actions {
            self.apply(now, a);
        }
        let v = self.core.view();
        if self.steps_wanted {
            obs.on_step(now, &actions, &v);
        }
        let ended = actions.iter().filter_map(|a| match a {
            Action::Ended(rec) => Some(rec),
            _ => None,
        });
        for (rec, meta) in ended.zip(&self.ended) {
            obs.on_task(rec, meta);
        }
        let sample = Sample {
            time: now,
            total_slots: v.total_slots() as u64,
            busy_slots: v.busy_slots(),
            waiting_tasks: v.waiting_tasks(),
            running_tasks: (self.core.live_tasks() as u64).saturating_sub(v.waiting_tasks()),
        };
        let changed = self
            .last_sample
            .is_none_or(|l| Sample { time: now, ..l } != sample);
        if changed {
            obs.on_sample(&sample);
            self.last_sample = Some(sample);
        }
        if self.stats.steps.is_multiple_of(PROGRESS_EVERY) {
            obs.on_progress(now, self.w.submitted);
        }
        if !self.watchers.is_empty() {
            for a in &actions {
                for w in 0..self.watchers.len() {
                    let i = self.watchers[w];
                    self.call_agent(i, Deliver::Later, |ag, ctx| ag.on_action(a, ctx))?;
                }
            }
        }
        actions.clear();
        self.actions = actions;
        Ok(())
    }

    /// What an action means for the hidden truth.
    fn apply(&mut self, now: Time, a: &Action) {
        let w = &mut self.w;
        match a {
            Action::Start { task, slots, .. } => {
                let task = *task;
                let Some(l) = w.live.get_mut(&task) else {
                    return;
                };
                l.attempt += 1;
                let (attempt, mut runtime, mut phases) = (l.attempt, l.runtime, w.phases.get(&task).copied());
                let factor = match (&self.speed, slots.first()) {
                    (Some(f), Some(&slot)) => f(slot),
                    _ => 1.0,
                };
                if factor.is_finite() && factor > 0.0 && factor != 1.0 {
                    let scale = |d: Time| {
                        if d <= Time::ZERO {
                            d
                        } else {
                            Time::from_millis(((d.millis() as f64 / factor).round() as i64).max(1))
                        }
                    };
                    match &mut phases {
                        Some(ph) => {
                            for d in ph.iter_mut() {
                                *d = scale(*d);
                            }
                            runtime = ph.iter().fold(Time::ZERO, |a, &p| a + p);
                        }
                        None => runtime = scale(runtime),
                    }
                }
                l.outstanding = 1 + if phases.is_some() { 4 } else { 0 };
                if let Some(ph) = phases {
                    let mut at = now;
                    for (i, d) in ph.iter().enumerate() {
                        let phase = Phase::ALL[i];
                        w.push(at, Class::Running, Payload::Phase { task, attempt, phase });
                        at += *d;
                    }
                }
                w.push(now + runtime, Class::Running, Payload::Complete { task, attempt });
            }
            &Action::Stop { task, .. } => {
                if let Some(l) = w.live.get_mut(&task) {
                    l.attempt += 1;
                    w.pending -= l.outstanding as usize;
                    l.outstanding = 0;
                }
            }
            Action::Ended(rec) => {
                if !w.phases.is_empty() {
                    w.phases.remove(&rec.spec.id);
                }
                let meta = match w.live.remove(&rec.spec.id) {
                    Some(l) => {
                        w.pending -= l.outstanding as usize;
                        TaskMeta {
                            job: l.job,
                            runtime: Some(l.runtime),
                            log_status: l.log_status,
                        }
                    }
                    None => TaskMeta {
                        job: rec.spec.id.0,
                        runtime: None,
                        log_status: None,
                    },
                };
                self.ended.push(meta);
            }
            &Action::Timer { at, token } => w.push(at.max(now), Class::Outside, Payload::Timer(token)),
            Action::Priority { .. } => {}
        }
    }
}
