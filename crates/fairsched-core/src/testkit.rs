//! A side-effect-free harness for policy tests: runs a [`Scheduler`] over a
//! handful of tasks with known runtimes and records what it did. Fluent
//! fixtures: `Harness::pool(4, "fifo").job(id, submit, runtime, slots)`.
//! Times are whole seconds.

use crate::event::{Action, EndRecord, Event};
use crate::ids::TaskId;
use crate::model::TaskSpec;
use crate::point::RuntimeOracle;
use crate::registry::{PolicySpec, build_allocate, build_control, build_order};
use crate::scheduler::Scheduler;
use crate::state::Platform;
use crate::time::Time;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone)]
pub struct Harness {
    platform: Platform,
    allocate: String,
    order: String,
    control: Option<String>,
    events: Vec<(Time, Event)>,
    runtimes: FxHashMap<TaskId, Time>,
}

pub struct Run {
    pub started: Vec<(u64, i64)>,
    pub ended: Vec<EndRecord>,
    pub priority_actions: usize,
}

impl Run {
    /// (task, start second) in start order.
    pub fn starts(&self) -> Vec<(u64, i64)> {
        self.started.clone()
    }
    /// Task ids in start order.
    pub fn order(&self) -> Vec<u64> {
        self.started.iter().map(|&(t, _)| t).collect()
    }
}

struct Oracle<'a>(&'a FxHashMap<TaskId, Time>);
impl RuntimeOracle for Oracle<'_> {
    fn runtime(&self, task: TaskId) -> Option<Time> {
        self.0.get(&task).copied()
    }
}

impl Harness {
    pub fn new(platform: Platform, allocate: &str, order: &str) -> Harness {
        Harness {
            platform,
            allocate: allocate.into(),
            order: order.into(),
            control: None,
            events: Vec::new(),
            runtimes: FxHashMap::default(),
        }
    }
    pub fn pool(n: u32, order: &str) -> Harness {
        Harness::new(Platform::pool(n), "single-pool", order)
    }
    pub fn owned(per_org: &[u32], order: &str) -> Harness {
        Harness::new(Platform::owned_pool(per_org), "single-pool", order)
    }
    pub fn control(mut self, spec: &str) -> Harness {
        self.control = Some(spec.into());
        self
    }
    pub fn spec(mut self, submit: i64, runtime: i64, spec: TaskSpec) -> Harness {
        self.runtimes.insert(spec.id, Time::from_secs(runtime));
        self.events.push((Time::from_secs(submit), Event::Submit(spec)));
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
        self.spec(
            submit,
            runtime,
            TaskSpec::new(id, 0, 0)
                .slots(slots)
                .estimate(Time::from_secs(est)),
        )
    }
    pub fn org_task(self, id: u64, submit: i64, runtime: i64, org: u32) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, org as i64, org))
    }
    pub fn org_job(self, id: u64, submit: i64, runtime: i64, slots: u32, org: u32) -> Harness {
        self.spec(submit, runtime, TaskSpec::new(id, org as i64, org).slots(slots))
    }
    pub fn set_priority(mut self, at: i64, task: u64, priority: i64) -> Harness {
        self.events.push((
            Time::from_secs(at),
            Event::SetPriority {
                task: TaskId(task),
                priority,
            },
        ));
        self
    }
    #[allow(dead_code)]
    pub fn at(mut self, at: i64, ev: Event) -> Harness {
        self.events.push((Time::from_secs(at), ev));
        self
    }

    /// Runs to quiescence. Completions at an instant are applied before the
    /// other events of that instant.
    pub fn run(self) -> Run {
        let alloc = build_allocate(&self.allocate.parse::<PolicySpec>().unwrap()).unwrap();
        let order = build_order(&self.order.parse::<PolicySpec>().unwrap()).unwrap();
        let control = self
            .control
            .as_ref()
            .map(|c| build_control(&c.parse().unwrap()).unwrap());
        let mut core = Scheduler::new(&self.platform, 7, alloc, order, control);
        let mut heap: BinaryHeap<Reverse<(Time, u8, usize)>> = BinaryHeap::new();
        let mut store: Vec<Option<Event>> = Vec::new();
        type Heap = BinaryHeap<Reverse<(Time, u8, usize)>>;
        fn push(heap: &mut Heap, store: &mut Vec<Option<Event>>, t: Time, class: u8, ev: Event) {
            heap.push(Reverse((t, class, store.len())));
            store.push(Some(ev));
        }
        for (t, ev) in self.events.iter().cloned() {
            push(&mut heap, &mut store, t, 1, ev);
        }
        let mut epoch: FxHashMap<TaskId, usize> = FxHashMap::default();
        let mut pending_complete: FxHashMap<usize, TaskId> = FxHashMap::default();
        let mut run = Run {
            started: vec![],
            ended: vec![],
            priority_actions: 0,
        };
        let mut out = Vec::new();
        while let Some(&Reverse((now, _, _))) = heap.peek() {
            let mut batch = Vec::new();
            while let Some(&Reverse((t, _, i))) = heap.peek() {
                if t != now {
                    break;
                }
                heap.pop();
                if let Some(task) = pending_complete.remove(&i)
                    && epoch.get(&task) != Some(&i)
                {
                    continue; // stale completion of a stopped task
                }
                batch.push(store[i].take().unwrap());
            }
            core.step(now, batch, Some(&Oracle(&self.runtimes)), &mut out)
                .unwrap();
            for a in out.drain(..) {
                match a {
                    Action::Start { task, .. } => {
                        run.started.push((task.0, now.whole_secs()));
                        let i = store.len();
                        epoch.insert(task, i);
                        pending_complete.insert(i, task);
                        push(
                            &mut heap,
                            &mut store,
                            now + self.runtimes[&task],
                            0,
                            Event::Complete { task },
                        );
                    }
                    Action::Stop { task, .. } => {
                        epoch.remove(&task);
                    }
                    Action::Timer { at, token } => push(&mut heap, &mut store, at, 1, Event::Timer { token }),
                    Action::Priority { .. } => run.priority_actions += 1,
                    Action::Ended(r) => run.ended.push(r),
                }
            }
        }
        run
    }
}
