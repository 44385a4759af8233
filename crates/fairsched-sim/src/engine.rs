//! The discrete-event engine: a virtual clock over a heap keyed on
//! `(time, class, sequence)`, streamed arrivals, and the true runtimes
//! that it hides from the core.

use crate::errors::SimError;
use fairsched_core::{
    Action, Event, Observer, Phase, RuntimeOracle, Sample, Scheduler, TaskId, TaskSpec, Time,
};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A task arriving at `submit`, with what only the simulator knows: its
/// true runtime and, optionally, the durations of its four phases (which
/// then sum to the runtime).
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    pub spec: TaskSpec,
    pub submit: Time,
    pub runtime: Time,
    pub phases: Option<[Time; 4]>,
}

impl Arrival {
    pub fn new(spec: TaskSpec, submit: Time, runtime: Time) -> Arrival {
        Arrival {
            spec,
            submit,
            runtime,
            phases: None,
        }
    }
    /// A workflow-style task whose runtime is the sum of its phases.
    pub fn with_phases(spec: TaskSpec, submit: Time, phases: [Time; 4]) -> Arrival {
        let runtime = phases.iter().fold(Time::ZERO, |a, &p| a + p);
        Arrival {
            spec,
            submit,
            runtime,
            phases: Some(phases),
        }
    }
}

/// Same-instant ordering: completions and phase changes first (slots are
/// freed before anything else happens), then arrivals in stream order,
/// then scheduled outside events and timers in the order they were set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Running = 0,
    Outside = 2,
}

#[derive(Debug)]
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
    Outside(Event),
}

#[derive(Debug)]
struct Entry {
    time: Time,
    class: Class,
    seq: u64,
    payload: Payload,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.time, self.class, self.seq).cmp(&(o.time, o.class, o.seq))
    }
}

struct Live {
    runtime: Time,
    phases: Option<[Time; 4]>,
    /// Bumped at every start and stop: pending completions of an earlier
    /// attempt are stale.
    attempt: u32,
}

struct Oracle<'a>(&'a FxHashMap<TaskId, Live>);

impl RuntimeOracle for Oracle<'_> {
    fn runtime(&self, task: TaskId) -> Option<Time> {
        self.0.get(&task).map(|l| l.runtime)
    }
}

fn is_timer(p: &Payload) -> bool {
    matches!(p, Payload::Outside(Event::Timer { .. }))
}

/// What a run did, beyond the per-task records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Virtual time of the last step.
    pub end: Time,
    /// Instants at which the core was stepped.
    pub steps: u64,
    pub submitted: u64,
    /// Tasks that could never start (still waiting when nothing else could
    /// happen); they end as cancelled.
    pub stranded: u64,
    pub core: fairsched_core::CoreStats,
}

/// How often (in steps) observers get `on_progress`.
const PROGRESS_EVERY: u64 = 1 << 12;

/// A simulation: the core, the event heap, and the hidden runtimes.
pub struct Simulation {
    core: Scheduler,
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    live: FxHashMap<TaskId, Live>,
    now: Time,
    stats: RunStats,
    last_sample: Option<Sample>,
    actions: Vec<Action>,
    batch: Vec<Event>,
    /// Heap entries other than timers: when none is left, no task runs and
    /// no arrival remains, timers alone cannot make anything start.
    non_timers: usize,
}

impl Simulation {
    pub fn new(core: Scheduler) -> Simulation {
        Simulation {
            core,
            heap: BinaryHeap::new(),
            seq: 0,
            live: FxHashMap::default(),
            now: Time::ZERO,
            stats: RunStats::default(),
            last_sample: None,
            actions: Vec::new(),
            batch: Vec::new(),
            non_timers: 0,
        }
    }

    pub fn core(&self) -> &Scheduler {
        &self.core
    }

    /// Schedules an outside event (a cancel, a slot joining, a priority
    /// change, a failure…) at `at`.
    pub fn schedule(&mut self, at: Time, ev: Event) {
        self.push(at, Class::Outside, Payload::Outside(ev));
    }

    fn push(&mut self, time: Time, class: Class, payload: Payload) {
        self.seq += 1;
        self.non_timers += usize::from(!is_timer(&payload));
        self.heap.push(Reverse(Entry {
            time,
            class,
            seq: self.seq,
            payload,
        }));
    }

    /// Replays `arrivals` (in non-decreasing submit order) to the end,
    /// pushing every result into `obs`.
    pub fn run<I, O>(&mut self, arrivals: I, obs: &mut O) -> Result<RunStats, SimError>
    where
        I: IntoIterator<Item = Result<Arrival, SimError>>,
        O: Observer + ?Sized,
    {
        let mut arrivals = arrivals.into_iter().peekable();
        loop {
            // Only timers left, tasks waiting but none running, nothing to
            // arrive: those tasks can never start, and a timer-driven
            // Control (aging) would tick over them forever. (Timers with no
            // task live still fire: a Control may use them for itself.)
            let v = self.core.view();
            let stuck = v.busy_slots() == 0 && v.waiting_tasks() > 0;
            if stuck && self.non_timers == 0 && arrivals.peek().is_none() {
                break;
            }
            let next_arrival = match arrivals.peek() {
                Some(Ok(a)) => Some(a.submit),
                Some(Err(_)) => return Err(arrivals.next().and_then(Result::err).expect("peeked an error")),
                None => None,
            };
            let next_entry = self.heap.peek().map(|e| e.0.time);
            let t = match (next_arrival, next_entry) {
                (Some(a), Some(e)) => a.min(e),
                (Some(a), None) => a,
                (None, Some(e)) => e,
                (None, None) => break,
            };
            if t < self.now {
                let task = match arrivals.peek() {
                    Some(Ok(a)) => a.spec.id,
                    _ => TaskId(0),
                };
                return Err(SimError::Unsorted {
                    task,
                    submit: t,
                    now: self.now,
                });
            }
            self.now = t;
            // Completions and phase changes at t.
            while self
                .heap
                .peek()
                .is_some_and(|e| e.0.time == t && e.0.class == Class::Running)
            {
                let e = self.pop();
                self.take_running(e.payload);
            }
            // Arrivals at t.
            while let Some(Ok(a)) = arrivals.peek() {
                if a.submit != t {
                    break;
                }
                let Some(Ok(a)) = arrivals.next() else {
                    unreachable!()
                };
                self.stats.submitted += 1;
                self.live.insert(
                    a.spec.id,
                    Live {
                        runtime: a.runtime,
                        phases: a.phases,
                        attempt: 0,
                    },
                );
                self.batch.push(Event::Submit(a.spec));
            }
            // Outside events and timers at t.
            while self.heap.peek().is_some_and(|e| e.0.time == t) {
                let e = self.pop();
                match e.payload {
                    Payload::Outside(ev) => self.batch.push(ev),
                    other => self.take_running(other),
                }
            }
            self.step(obs)?;
        }
        // Nothing can happen any more: what still waits never starts.
        if self.core.live_tasks() > 0 {
            let ids = self.core.live_task_ids();
            self.stats.stranded = ids.len() as u64;
            self.batch
                .extend(ids.into_iter().map(|task| Event::Cancel { task }));
            self.step(obs)?;
        }
        obs.on_progress(self.now, self.stats.submitted);
        self.stats.end = self.now;
        self.stats.core = self.core.stats().clone();
        Ok(self.stats.clone())
    }

    fn pop(&mut self) -> Entry {
        let Reverse(e) = self.heap.pop().expect("peeked");
        self.non_timers -= usize::from(!is_timer(&e.payload));
        e
    }

    /// Turns a due completion or phase change into a core event, unless it
    /// belongs to an attempt that was stopped.
    fn take_running(&mut self, p: Payload) {
        let current = |live: &FxHashMap<TaskId, Live>, task: &TaskId, attempt: u32| {
            live.get(task).is_some_and(|l| l.attempt == attempt)
        };
        match p {
            Payload::Complete { task, attempt } if current(&self.live, &task, attempt) => {
                self.batch.push(Event::Complete { task })
            }
            Payload::Phase { task, attempt, phase } if current(&self.live, &task, attempt) => {
                self.batch.push(Event::Phase { task, phase })
            }
            Payload::Outside(ev) => self.batch.push(ev),
            _ => {}
        }
    }

    fn step<O: Observer + ?Sized>(&mut self, obs: &mut O) -> Result<(), SimError> {
        let now = self.now;
        self.stats.steps += 1;
        self.core.step(
            now,
            self.batch.drain(..),
            Some(&Oracle(&self.live)),
            &mut self.actions,
        )?;
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                Action::Start { task, .. } => {
                    let Some(l) = self.live.get_mut(&task) else {
                        continue;
                    };
                    l.attempt += 1;
                    let (attempt, runtime, phases) = (l.attempt, l.runtime, l.phases);
                    if let Some(ph) = phases {
                        let mut at = now;
                        for (i, d) in ph.iter().enumerate() {
                            self.push(
                                at,
                                Class::Running,
                                Payload::Phase {
                                    task,
                                    attempt,
                                    phase: Phase::ALL[i],
                                },
                            );
                            at += *d;
                        }
                    }
                    self.push(now + runtime, Class::Running, Payload::Complete { task, attempt });
                }
                Action::Stop { task, .. } => {
                    if let Some(l) = self.live.get_mut(&task) {
                        l.attempt += 1;
                    }
                }
                Action::Ended(rec) => {
                    let runtime = self.live.remove(&rec.spec.id).map(|l| l.runtime);
                    obs.on_task(&rec, runtime);
                }
                Action::Timer { at, token } => self.push(
                    at.max(now),
                    Class::Outside,
                    Payload::Outside(Event::Timer { token }),
                ),
                Action::Priority { .. } => {}
            }
        }
        self.actions = actions;
        let v = self.core.view();
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
            obs.on_progress(now, self.stats.submitted);
        }
        Ok(())
    }
}
