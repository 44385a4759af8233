//! Helpers shared by the integration tests of `fairsched-sim`.
#![allow(dead_code)]

use fairsched_core::metrics::Metrics;
use fairsched_core::{AllocatePolicy, Control, ControlPolicy, OrderPolicy, PolicySpec, Registry, SpecError};
use fairsched_core::{
    EndRecord, Notice, Observer, Platform, Sample, Scheduler, TaskId, TaskMeta, TaskSpec, Time,
};
use fairsched_sim::{Arrival, RunStats, SimError, Simulation};
use std::collections::BTreeMap;

/// Seconds as a [`Time`].
pub fn s(secs: i64) -> Time {
    Time::from_secs(secs)
}

/// A built-in allocate policy.
pub fn build_allocate(spec: &PolicySpec) -> Result<AllocatePolicy, SpecError> {
    Registry::builtin().build_allocate(spec)
}

/// A built-in order policy.
pub fn build_order(spec: &PolicySpec) -> Result<OrderPolicy, SpecError> {
    Registry::builtin().build_order(spec)
}

/// A built-in control policy.
pub fn build_control(spec: &PolicySpec) -> Result<ControlPolicy, SpecError> {
    Registry::builtin().build_control(spec)
}

/// A scheduler built from registry names, with an optional custom
/// (blind) control.
pub fn scheduler(
    platform: &Platform,
    allocate: &str,
    order: &str,
    control: Option<Box<dyn Control>>,
) -> Scheduler {
    scheduler_of(platform, allocate, order, control.map(ControlPolicy::Blind))
}

fn scheduler_of(
    platform: &Platform,
    allocate: &str,
    order: &str,
    control: Option<ControlPolicy>,
) -> Scheduler {
    Scheduler::new(
        platform,
        7,
        build_allocate(&allocate.parse().unwrap()).unwrap(),
        build_order(&order.parse().unwrap()).unwrap(),
        control,
    )
}

/// Same, with a control policy from the registry.
pub fn scheduler_with(platform: &Platform, allocate: &str, order: &str, control: Option<&str>) -> Scheduler {
    let control = control.map(|c| build_control(&c.parse().unwrap()).unwrap());
    scheduler_of(platform, allocate, order, control)
}

/// A sequential task of organization 0.
pub fn task(id: u64) -> TaskSpec {
    TaskSpec::new(id, 0, 0)
}

/// An arrival at `submit` seconds running `runtime` seconds.
pub fn arrive(spec: TaskSpec, submit: i64, runtime: i64) -> Arrival {
    Arrival::new(spec, s(submit), s(runtime))
}

/// Wraps arrivals for [`Simulation::run`].
pub fn ok(arrivals: Vec<Arrival>) -> impl Iterator<Item = Result<Arrival, SimError>> {
    arrivals.into_iter().map(Ok)
}

/// Keeps everything a run reports: end records (with the true runtime the
/// simulator passes along), samples, and run metrics.
#[derive(Default)]
pub struct Recorder {
    /// End records with the true runtime the simulator passes along.
    pub ends: Vec<(EndRecord, Option<Time>)>,
    /// The job each task came from, by task.
    pub jobs: BTreeMap<TaskId, u64>,
    pub samples: Vec<Sample>,
    pub metrics: Metrics,
}

impl Observer for Recorder {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        self.metrics.record(rec);
        self.ends.push((rec.clone(), meta.runtime));
        self.jobs.insert(rec.spec.id, meta.job);
    }
    fn on_sample(&mut self, s: &Sample) {
        self.metrics.capacity(s.time, s.total_slots);
        self.samples.push(*s);
    }
}

impl Recorder {
    /// The only end record of `id` (panics if there is none or several).
    pub fn end(&self, id: u64) -> &EndRecord {
        let mut it = self.ends.iter().filter(|(r, _)| r.spec.id == TaskId(id));
        let first = it.next().unwrap_or_else(|| panic!("task {id} never ended"));
        assert!(it.next().is_none(), "task {id} ended more than once");
        &first.0
    }
    /// Number of end records per task id.
    pub fn counts(&self) -> BTreeMap<TaskId, usize> {
        let mut m = BTreeMap::new();
        for (r, _) in &self.ends {
            *m.entry(r.spec.id).or_insert(0) += 1;
        }
        m
    }
    /// Task ids in start order (ties by id), over tasks that started.
    pub fn start_order(&self) -> Vec<u64> {
        let mut v: Vec<_> = self
            .ends
            .iter()
            .filter_map(|(r, _)| r.start().map(|st| (st, r.spec.id.0)))
            .collect();
        v.sort();
        v.into_iter().map(|(_, id)| id).collect()
    }
    /// Job numbers of the tasks, in task order.
    pub fn job_numbers(&self) -> Vec<u64> {
        self.jobs.values().copied().collect()
    }
    /// The platform's size as last sampled at or before `t`.
    pub fn total_slots_at(&self, t: Time) -> Option<u64> {
        self.samples
            .iter()
            .rev()
            .find(|s| s.time <= t)
            .map(|s| s.total_slots)
    }
}

/// Runs `arrivals` through `sim` into a fresh [`Recorder`].
pub fn run(mut sim: Simulation, arrivals: Vec<Arrival>) -> (RunStats, Recorder) {
    let mut rec = Recorder::default();
    let stats = sim.run(ok(arrivals), &mut rec).unwrap();
    (stats, rec)
}

/// The waiting and running tasks of a fixture Order, kept from notices.
#[derive(Clone, Debug, Default)]
pub struct Lists {
    pub waiting: Vec<TaskId>,
    pub running: Vec<TaskId>,
}

impl Lists {
    pub fn notify(&mut self, n: &Notice) {
        match *n {
            Notice::Queued { task, .. } | Notice::Requeued { task, .. } => {
                self.running.retain(|&t| t != task);
                self.waiting.push(task);
            }
            Notice::Started { task, .. } => {
                self.waiting.retain(|&t| t != task);
                self.running.push(task);
            }
            Notice::Left { task, .. } => {
                self.waiting.retain(|&t| t != task);
                self.running.retain(|&t| t != task);
            }
            _ => {}
        }
    }
}
