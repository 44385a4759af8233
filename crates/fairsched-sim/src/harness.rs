//! A side-effect-free harness for policy tests, on the real engine (the
//! same event loop as every simulation): runs a handful of tasks with known
//! runtimes and records what the core did. Fluent fixtures:
//! `Harness::pool(4, "fifo").job(id, submit, runtime, slots).run()`. Times
//! are whole seconds; arrivals must be given in submit order.
//!
//! ```
//! use fairsched_sim::harness::Harness;
//! let r = Harness::pool(1, "fifo").task(1, 0, 10).task(2, 1, 5).run();
//! assert_eq!(r.starts(), vec![(1, 0), (2, 10)]);
//! ```

use crate::engine::{Arrival, Simulation};
use fairsched_core::{
    Action, EndRecord, Event, Observer, Platform, Registry, Scheduler, TaskId, TaskMeta, TaskSpec, Time, View,
};

#[derive(Clone)]
pub struct Harness {
    platform: Platform,
    allocate: String,
    order: String,
    control: Option<String>,
    seed: u64,
    arrivals: Vec<Arrival>,
    events: Vec<(Time, Event)>,
    registry: Registry,
}

/// What a harness run did.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Every action with its instant, in order.
    pub actions: Vec<(Time, Action)>,
    /// End records in the order tasks ended.
    pub ended: Vec<EndRecord>,
}

impl Run {
    /// (task, start second) in start order.
    pub fn starts(&self) -> Vec<(u64, i64)> {
        self.actions
            .iter()
            .filter_map(|(t, a)| match a {
                Action::Start { task, .. } => Some((task.0, t.whole_secs())),
                _ => None,
            })
            .collect()
    }
    /// Task ids in start order.
    pub fn order(&self) -> Vec<u64> {
        self.starts().into_iter().map(|(t, _)| t).collect()
    }
    /// Priority changes made by the Control.
    pub fn priority_actions(&self) -> usize {
        self.actions
            .iter()
            .filter(|(_, a)| matches!(a, Action::Priority { .. }))
            .count()
    }
    /// The instants (whole seconds) of the timers the Control asked for,
    /// in the order asked.
    pub fn timers(&self) -> Vec<i64> {
        self.actions
            .iter()
            .filter_map(|(_, a)| match a {
                Action::Timer { at, .. } => Some(at.whole_secs()),
                _ => None,
            })
            .collect()
    }
    /// The end record of `id`.
    pub fn end(&self, id: u64) -> &EndRecord {
        self.ended
            .iter()
            .find(|r| r.spec.id == TaskId(id))
            .unwrap_or_else(|| panic!("task {id} never ended"))
    }
}

impl Observer for Run {
    fn on_step(&mut self, now: Time, actions: &[Action], _view: &View) {
        self.actions.extend(actions.iter().map(|a| (now, a.clone())));
    }
    fn on_task(&mut self, rec: &EndRecord, _meta: &TaskMeta) {
        self.ended.push(rec.clone());
    }
}

impl Harness {
    pub fn new(platform: Platform, allocate: &str, order: &str) -> Harness {
        Harness {
            platform,
            allocate: allocate.into(),
            order: order.into(),
            control: None,
            seed: 7,
            arrivals: Vec::new(),
            events: Vec::new(),
            registry: Registry::builtin(),
        }
    }
    /// Looks the policies up in `registry` (default: the built-in one).
    pub fn registry(mut self, registry: &Registry) -> Harness {
        self.registry = registry.clone();
        self
    }
    pub fn pool(n: u32, order: &str) -> Harness {
        Harness::new(Platform::pool(n), "single-pool", order)
    }
    /// Machines of the given sizes (each with its own queue), tasks sent by
    /// `allocate`.
    pub fn machines(sizes: &[u32], allocate: &str, order: &str) -> Harness {
        Harness::new(Platform::machines(sizes), allocate, order)
    }
    pub fn owned(per_org: &[u32], order: &str) -> Harness {
        Harness::new(Platform::owned_pool(per_org), "single-pool", order)
    }
    pub fn control(mut self, spec: &str) -> Harness {
        self.control = Some(spec.into());
        self
    }
    pub fn seed(mut self, seed: u64) -> Harness {
        self.seed = seed;
        self
    }
    pub fn spec(mut self, submit: i64, runtime: i64, spec: TaskSpec) -> Harness {
        let a = Arrival::new(spec, Time::from_secs(submit), Time::from_secs(runtime));
        self.arrivals.push(a);
        self
    }
    pub fn task(self, id: u64, submit: i64, runtime: i64) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, 0, 0))
    }
    pub fn task_prio(self, id: u64, submit: i64, runtime: i64, prio: i64) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, 0, 0).priority(prio))
    }
    pub fn job(self, id: u64, submit: i64, runtime: i64, slots: u32) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, 0, 0).slots(slots))
    }
    pub fn job_est(self, id: u64, submit: i64, runtime: i64, slots: u32, est: i64) -> Harness {
        let spec = TaskSpec::new(id, 0, 0)
            .slots(slots)
            .estimate(Time::from_secs(est));
        self.spec(submit, runtime, spec)
    }
    pub fn org_task(self, id: u64, submit: i64, runtime: i64, org: u32) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, org as i64, org))
    }
    pub fn org_job(self, id: u64, submit: i64, runtime: i64, slots: u32, org: u32) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, org as i64, org).slots(slots))
    }
    pub fn set_priority(self, at: i64, task: u64, priority: i64) -> Harness {
        let ev = Event::SetPriority {
            task: TaskId(task),
            priority,
        };
        self.at(at, ev)
    }
    /// An outside event at `at` seconds.
    pub fn at(mut self, at: i64, ev: Event) -> Harness {
        self.events.push((Time::from_secs(at), ev));
        self
    }

    /// The scheduler this harness runs (seeded, policies from the registry).
    pub fn scheduler(&self) -> Scheduler {
        let parse = |s: &str| s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        let r = &self.registry;
        Scheduler::new(
            &self.platform,
            self.seed,
            r.build_allocate(&parse(&self.allocate))
                .unwrap_or_else(|e| panic!("{e}")),
            r.build_order(&parse(&self.order))
                .unwrap_or_else(|e| panic!("{e}")),
            self.control
                .as_deref()
                .map(|c| r.build_control(&parse(c)).unwrap_or_else(|e| panic!("{e}"))),
        )
    }

    /// Runs to the end on the simulator and returns what happened.
    pub fn run(self) -> Run {
        let mut sim = Simulation::new(self.scheduler());
        for (at, ev) in &self.events {
            sim.schedule(*at, ev.clone());
        }
        let mut run = Run::default();
        sim.run(self.arrivals.into_iter().map(Ok), &mut run)
            .unwrap_or_else(|e| panic!("harness run failed: {e}"));
        run
    }
}
