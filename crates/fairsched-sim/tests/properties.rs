//! Properties over random workloads, platforms and policies:
//!
//! - every submitted task ends exactly once, and nothing is stranded;
//! - no slot ever runs two tasks, and the samples agree with the records;
//! - greedy orders never leave a slot idle while a task that fits waits
//!   (for `fcfs` and `easy`: the head never fits in the free slots);
//! - runs are deterministic: same seed, same `tasks.csv`, whatever the
//!   thread pool, and the simulator agrees with a hand-driven core.

mod common;

use common::ok;
use fairsched_core::registry::{Entry, build_allocate, build_control, build_order};
use fairsched_core::{
    Action, EndRecord, Event, Kind, MachineId, Observer, OrgId, Outcome, Platform, REGISTRY, RuntimeOracle,
    Sample, Scheduler, SlotId, TaskId, TaskSpec, Time, UserId,
};
use fairsched_report::TasksCsv;
use fairsched_sim::{Arrival, RunStats, Simulation};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

// ---------------------------------------------------------------------------
// Random cases

/// One random run: platform, workload, policies, outside events.
#[derive(Clone, Debug)]
struct Case {
    /// Per machine, the owner of each slot.
    machines: Vec<Vec<OrgId>>,
    orgs: u32,
    /// In submit order, ids 1..=n.
    arrivals: Vec<Arrival>,
    order: &'static str,
    control: bool,
    /// Cancels, kills and priority changes scheduled from outside.
    outside: Vec<(Time, Event)>,
    seed: u64,
}

impl Case {
    fn platform(&self) -> Platform {
        Platform {
            machines: self.machines.clone(),
            orgs: self.orgs,
        }
    }
    fn allocate(&self) -> &'static str {
        if self.machines.len() == 1 {
            "single-pool"
        } else {
            "least-loaded"
        }
    }
    fn scheduler(&self) -> Scheduler {
        let control = self
            .control
            .then(|| build_control(&"age-boost[after=7]".parse().unwrap()).unwrap());
        Scheduler::new(
            &self.platform(),
            self.seed,
            build_allocate(&self.allocate().parse().unwrap()).unwrap(),
            build_order(&self.order.parse().unwrap()).unwrap(),
            control,
        )
    }
    fn simulation(&self) -> Simulation {
        let mut sim = Simulation::new(self.scheduler());
        for (at, ev) in &self.outside {
            sim.schedule(*at, ev.clone());
        }
        sim
    }
    fn total_slots(&self) -> u32 {
        self.machines.iter().map(|m| m.len() as u32).sum()
    }
    fn largest_machine(&self) -> u32 {
        self.machines.iter().map(|m| m.len() as u32).max().unwrap_or(0)
    }
    fn sequential(&self) -> bool {
        self.arrivals.iter().all(|a| a.spec.slots == 1)
    }
    /// Tasks some outside event may end early.
    fn targeted(&self) -> BTreeSet<TaskId> {
        self.outside
            .iter()
            .filter_map(|(_, ev)| match *ev {
                Event::Cancel { task } | Event::Kill { task } => Some(task),
                _ => None,
            })
            .collect()
    }
}

fn order_entries() -> Vec<&'static Entry> {
    REGISTRY.iter().filter(|e| e.kind == Kind::Order).collect()
}

fn order_names() -> Vec<&'static str> {
    order_entries().iter().map(|e| e.name).collect()
}

/// Random cases using one of `orders`; `force_sequential` makes every task
/// need one slot; `multi` allows platforms of up to three machines
/// (allocated with `least-loaded`); `churn` adds random slot joins and
/// leaves, and then turns the control off: the hand-driven event loops in
/// this file have no wind-down, and a task stranded by a leave would keep
/// an age-boost run ticking (the Simulation itself stops it:
/// engine_features.rs, `a_stranded_task_does_not_keep_a_timer_driven_run_alive`).
fn cases(
    orders: Vec<&'static str>,
    force_sequential: bool,
    multi: bool,
    churn: bool,
) -> impl Strategy<Value = Case> {
    (1u32..=3, 1usize..=8)
        .prop_flat_map(move |(orgs, total)| {
            let task = (
                0i64..200,
                1i64..=100,
                1..=total as u32,
                0..orgs,
                0i64..=3,
                0u8..3,
                1i64..100,
            );
            let outside = (0i64..260, 0u8..3, any::<Index>(), 0i64..=4);
            let slot_event = (0i64..260, any::<bool>(), 0..total as u32 + 2, 0..3u32, 0..orgs);
            let churn = if churn {
                prop_oneof![Just(Vec::new()), vec(slot_event, 1..5)].boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            (
                Just(orgs),
                vec(0..orgs, total),
                vec(prop::bool::weighted(0.2), total - 1),
                vec(task, 1..=60),
                any::<bool>(),
                prop::sample::select(orders.clone()),
                any::<bool>(),
                prop_oneof![2 => Just(Vec::new()), 3 => vec(outside, 1..6)],
                (any::<u64>(), churn),
            )
        })
        .prop_map(
            move |(orgs, owners, cuts, mut tasks, rigid, order, control, outside, (seed, churn))| {
                // Slots split among organizations (Platform::owned_pool), then
                // optionally cut into at most three machines.
                let mut per_org = vec![0u32; orgs as usize];
                for o in owners {
                    per_org[o as usize] += 1;
                }
                let pool = Platform::owned_pool(&per_org);
                let slots = pool.machines[0].clone();
                let mut machines = vec![Vec::new()];
                for (i, owner) in slots.into_iter().enumerate() {
                    if multi && i > 0 && cuts[i - 1] && machines.len() < 3 {
                        machines.push(Vec::new());
                    }
                    machines.last_mut().unwrap().push(owner);
                }
                let parallel_ok = REGISTRY
                    .iter()
                    .any(|e| e.kind == Kind::Order && e.name == order && e.parallel);
                let rigid = rigid && parallel_ok && !force_sequential;
                tasks.sort_by_key(|t| t.0);
                let arrivals: Vec<Arrival> = tasks
                    .iter()
                    .enumerate()
                    .map(|(i, &(submit, runtime, width, org, prio, est, pct))| {
                        let id = i as u64 + 1;
                        let rt = Time::from_secs(runtime);
                        let estimate = match est {
                            0 => None,
                            1 => Some(Time(rt.millis() * pct / 100)),
                            _ => Some(Time(rt.millis() * (100 + pct) / 100)),
                        };
                        let spec = TaskSpec {
                            id: TaskId(id),
                            job: id,
                            user: UserId(org as i64 * 10 + (id % 3) as i64),
                            org: OrgId(org),
                            slots: if rigid { width } else { 1 },
                            priority: prio,
                            estimate,
                            workflow: None,
                            optional: false,
                        };
                        Arrival::new(spec, Time::from_secs(submit), rt)
                    })
                    .collect();
                let n = arrivals.len();
                let mut outside: Vec<(Time, Event)> = outside
                    .into_iter()
                    .map(|(at, kind, which, prio)| {
                        let task = TaskId(which.index(n) as u64 + 1);
                        let ev = match kind {
                            0 => Event::Cancel { task },
                            1 => Event::Kill { task },
                            _ => Event::SetPriority { task, priority: prio },
                        };
                        (Time::from_secs(at), ev)
                    })
                    .collect();
                let machine_count = machines.len() as u32;
                let control = control && churn.is_empty();
                for (at, join, slot, machine, owner) in churn {
                    let ev = if join {
                        Event::SlotJoin {
                            machine: MachineId(machine % machine_count),
                            owner: OrgId(owner),
                        }
                    } else {
                        Event::SlotLeave { slot: SlotId(slot) }
                    };
                    outside.push((Time::from_secs(at), ev));
                }
                Case {
                    machines,
                    orgs: per_org.len() as u32,
                    arrivals,
                    order,
                    control,
                    outside,
                    seed,
                }
            },
        )
}

// ---------------------------------------------------------------------------
// Through the simulator, checked by an observer

/// Checks every sample and record as it comes, and keeps them for the
/// checks that need the whole run.
struct Checker<'a> {
    case: &'a Case,
    arrivals: HashMap<TaskId, &'a Arrival>,
    ends: BTreeMap<TaskId, EndRecord>,
    samples: Vec<Sample>,
}

impl<'a> Checker<'a> {
    fn new(case: &'a Case) -> Self {
        let arrivals = case.arrivals.iter().map(|a| (a.spec.id, a)).collect();
        Checker {
            case,
            arrivals,
            ends: BTreeMap::new(),
            samples: Vec::new(),
        }
    }
}

impl Observer for Checker<'_> {
    fn on_sample(&mut self, s: &Sample) {
        assert_eq!(s.total_slots, self.case.total_slots() as u64, "{s:?}");
        assert!(s.busy_slots <= s.total_slots, "{s:?}");
        assert!(s.running_tasks <= s.busy_slots, "{s:?}");
        if let Some(last) = self.samples.last() {
            assert!(
                last.time <= s.time,
                "samples go back in time: {last:?} then {s:?}"
            );
        }
        self.samples.push(*s);
    }

    fn on_task(&mut self, r: &EndRecord, runtime: Option<Time>) {
        let id = r.spec.id;
        let a = self
            .arrivals
            .get(&id)
            .unwrap_or_else(|| panic!("unknown task {id}"));
        assert!(self.ends.insert(id, r.clone()).is_none(), "task {id} ended twice");
        assert_eq!(
            runtime,
            Some(a.runtime),
            "task {id}: the observer gets the true runtime"
        );
        assert_eq!(r.submit, a.submit);
        assert!(r.end >= r.submit);
        if let Some(start) = r.start {
            assert!(r.submit <= start && start <= r.end, "{r:?}");
            assert!(r.attempts >= 1);
        } else {
            assert_eq!(r.attempts, 0);
            assert_eq!(r.slot, None);
        }
        match r.outcome {
            Outcome::Rejected => {
                assert!(r.spec.slots > self.case.largest_machine(), "{r:?} fits a machine");
                assert_eq!((r.machine, r.start, r.end), (None, None, r.submit));
            }
            Outcome::Completed => assert_eq!(r.start.map(|s| r.end - s), Some(a.runtime), "{r:?}"),
            Outcome::Killed => assert!(r.start.is_some(), "killed without running: {r:?}"),
            Outcome::Cancelled | Outcome::Failed => {}
        }
        if let Some(m) = r.machine {
            let size = self.case.machines[m.index()].len() as u32;
            assert!(r.spec.slots <= size, "{r:?} on a machine of {size}");
            if let Some(slot) = r.slot {
                let first: usize = self.case.machines[..m.index()].iter().map(Vec::len).sum();
                assert!(
                    (first..first + size as usize).contains(&slot.index()),
                    "{r:?}: slot not on its machine"
                );
            }
        }
    }
}

/// Occupancy at `t` (on `[t, next change)`) rebuilt from the records:
/// (busy slots, running tasks, waiting tasks).
fn occupancy(ends: &BTreeMap<TaskId, EndRecord>, t: Time) -> (u64, u64, u64) {
    let (mut busy, mut running, mut waiting) = (0, 0, 0);
    for r in ends.values() {
        if r.outcome == Outcome::Rejected || !(r.submit <= t && t < r.end) {
            continue;
        }
        match r.start {
            Some(s) if s <= t => {
                busy += r.spec.slots as u64;
                running += 1;
            }
            _ => waiting += 1,
        }
    }
    (busy, running, waiting)
}

fn check_run(case: &Case, stats: &RunStats, c: &Checker) {
    let n = case.arrivals.len();
    // Every task ended exactly once (on_task checked "at most once").
    assert_eq!(stats.submitted, n as u64);
    assert_eq!(c.ends.len(), n);
    assert_eq!(stats.stranded, 0, "tasks were left waiting forever");
    let targeted = case.targeted();
    for (id, r) in &c.ends {
        if r.spec.slots <= case.largest_machine() && !targeted.contains(id) {
            assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        }
    }
    let attempts: u64 = c.ends.values().map(|r| r.attempts as u64).sum();
    assert_eq!(attempts, stats.core.starts);

    // No machine ever runs more slots than it has: sweep the runs, ends
    // before starts at the same instant (runs are [start, end)).
    for (m, owners) in case.machines.iter().enumerate() {
        let mut deltas: Vec<(Time, i64)> = Vec::new();
        for r in c.ends.values().filter(|r| r.machine == Some(MachineId(m as u32))) {
            if let Some(s) = r.start {
                deltas.push((s, r.spec.slots as i64));
                deltas.push((r.end, -(r.spec.slots as i64)));
            }
        }
        deltas.sort();
        let mut used = 0;
        for (t, d) in deltas {
            used += d;
            assert!(
                used <= owners.len() as i64,
                "machine {m} runs {used} slots at {t:?}"
            );
        }
        assert_eq!(used, 0);
    }

    // The samples tell the same story as the records: at every instant
    // where something happened, the latest sample matches the rebuilt
    // occupancy.
    let mut times: BTreeSet<Time> = c.samples.iter().map(|s| s.time).collect();
    for r in c.ends.values() {
        times.insert(r.submit);
        times.insert(r.end);
        times.extend(r.start);
    }
    for t in times {
        let Some(s) = c.samples.iter().rev().find(|s| s.time <= t) else {
            continue;
        };
        let expect = occupancy(&c.ends, t);
        assert_eq!(
            (s.busy_slots, s.running_tasks, s.waiting_tasks),
            expect,
            "at {t:?}: sample {s:?}"
        );
    }
    let last = c.samples.last().expect("at least one sample");
    assert_eq!(
        (last.busy_slots, last.running_tasks, last.waiting_tasks),
        (0, 0, 0)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_task_ends_once_and_slots_are_never_overcommitted(case in cases(order_names(), false, true, false)) {
        let mut checker = Checker::new(&case);
        let stats = case.simulation().run(ok(case.arrivals.clone()), &mut checker).unwrap();
        check_run(&case, &stats, &checker);
    }
}

// ---------------------------------------------------------------------------
// Driving the core by hand, to see every action

struct Oracle<'a>(&'a HashMap<TaskId, Time>);

impl RuntimeOracle for Oracle<'_> {
    fn runtime(&self, task: TaskId) -> Option<Time> {
        self.0.get(&task).copied()
    }
}

enum Payload {
    Complete { task: TaskId, attempt: u32 },
    Event(Event),
}

/// Entries keyed on (time, class, sequence), like the simulator's heap.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(Time, u8, u64)>>,
    store: Vec<Option<Payload>>,
}

impl Queue {
    fn push(&mut self, at: Time, class: u8, p: Payload) {
        self.heap.push(Reverse((at, class, self.store.len() as u64)));
        self.store.push(Some(p));
    }
    fn next_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.0.0)
    }
    fn pop_at(&mut self, t: Time) -> Option<Payload> {
        let &Reverse((at, _, seq)) = self.heap.peek()?;
        if at != t {
            return None;
        }
        self.heap.pop();
        self.store[seq as usize].take()
    }
}

/// What the greedy check expects of the order policy after each step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Greedy {
    /// No machine has free slots and a waiting task that fits in them.
    NoFittingTaskWaits,
    /// On no machine does the oldest waiting task fit in the free slots.
    HeadNeverFits,
    Nothing,
}

fn greedy_rule(case: &Case) -> Greedy {
    match case.order {
        "fifo" | "priority" => Greedy::NoFittingTaskWaits,
        "round-robin" | "fair-share" if case.sequential() => Greedy::NoFittingTaskWaits,
        "fcfs" | "easy" => Greedy::HeadNeverFits,
        _ => Greedy::Nothing,
    }
}

/// A small event loop of its own, mirroring the simulator's same-instant
/// order (completions, then arrivals, then outside events and timers) and
/// its wind-down (what still waits when nothing can happen is cancelled),
/// checking after every step that no slot holds two tasks, that the view
/// agrees with the actions, and the greedy rule.
struct Driver<'a> {
    case: &'a Case,
    rule: Greedy,
    core: Scheduler,
    q: Queue,
    runtimes: HashMap<TaskId, Time>,
    attempt: HashMap<TaskId, u32>,
    slot_task: HashMap<SlotId, TaskId>,
    task_slots: HashMap<TaskId, Vec<SlotId>>,
    waiting: BTreeSet<TaskId>,
    ends: Vec<EndRecord>,
    steps: u32,
}

fn drive(case: &Case, rule: Greedy) -> Vec<EndRecord> {
    let mut d = Driver {
        case,
        rule,
        core: case.scheduler(),
        q: Queue::default(),
        runtimes: case.arrivals.iter().map(|a| (a.spec.id, a.runtime)).collect(),
        attempt: HashMap::new(),
        slot_task: HashMap::new(),
        task_slots: HashMap::new(),
        waiting: BTreeSet::new(),
        ends: Vec::new(),
        steps: 0,
    };
    for a in &case.arrivals {
        d.q.push(a.submit, 1, Payload::Event(Event::Submit(a.spec.clone())));
    }
    for (at, ev) in &case.outside {
        d.q.push(*at, 2, Payload::Event(ev.clone()));
    }
    let mut last = Time::ZERO;
    while let Some(t) = d.q.next_time() {
        let mut events = Vec::new();
        while let Some(p) = d.q.pop_at(t) {
            match p {
                Payload::Complete { task, attempt } => {
                    if d.attempt.get(&task) == Some(&attempt) && d.task_slots.contains_key(&task) {
                        events.push(Event::Complete { task });
                    }
                }
                Payload::Event(ev) => {
                    if let Event::Submit(spec) = &ev {
                        d.attempt.insert(spec.id, 0);
                        d.waiting.insert(spec.id);
                    }
                    events.push(ev);
                }
            }
        }
        d.step(t, events);
        last = t;
    }
    // Nothing can happen any more: what still waits never starts.
    if d.core.live_tasks() > 0 {
        assert!(d.task_slots.is_empty(), "tasks still run with no completion due");
        let cancels = d
            .core
            .live_task_ids()
            .into_iter()
            .map(|task| Event::Cancel { task })
            .collect();
        d.step(last, cancels);
    }
    assert!(
        d.slot_task.is_empty() && d.waiting.is_empty(),
        "left over: {:?}",
        d.waiting
    );
    assert_eq!(d.core.live_tasks(), 0);
    d.ends
}

impl Driver<'_> {
    fn step(&mut self, t: Time, events: Vec<Event>) {
        let mut out = Vec::new();
        self.core
            .step(t, events, Some(&Oracle(&self.runtimes)), &mut out)
            .unwrap();
        self.steps += 1;
        assert!(self.steps < 100_000, "runaway loop");
        for a in out {
            self.apply(t, a);
        }
        self.check(t);
    }

    fn apply(&mut self, t: Time, a: Action) {
        let view = self.core.view();
        match a {
            Action::Start { task, machine, slots } => {
                assert!(self.waiting.remove(&task), "task {task} started without waiting");
                let width = view.task(task).map(|v| v.slots());
                assert_eq!(width, Some(slots.len() as u32), "task {task} got {slots:?}");
                for &s in &slots {
                    assert_eq!(
                        view.slot_machine(s),
                        Some(machine),
                        "slot {s} is not on machine {machine}"
                    );
                    if let Some(other) = self.slot_task.insert(s, task) {
                        panic!("at {t:?} slot {s} runs task {task} while task {other} still runs on it");
                    }
                }
                self.task_slots.insert(task, slots);
                let n = self.attempt.get_mut(&task).expect("submitted");
                *n += 1;
                let p = Payload::Complete { task, attempt: *n };
                self.q.push(t + self.runtimes[&task], 0, p);
            }
            Action::Stop { task, requeued } => {
                let slots = self
                    .task_slots
                    .remove(&task)
                    .unwrap_or_else(|| panic!("stopped {task} is not running"));
                for s in slots {
                    assert_eq!(self.slot_task.remove(&s), Some(task));
                }
                *self.attempt.get_mut(&task).expect("submitted") += 1;
                if requeued {
                    self.waiting.insert(task);
                }
            }
            Action::Ended(r) => {
                let task = r.spec.id;
                if let Some(slots) = self.task_slots.remove(&task) {
                    assert!(
                        matches!(r.outcome, Outcome::Completed | Outcome::Failed),
                        "{r:?} without a Stop"
                    );
                    for s in slots {
                        assert_eq!(self.slot_task.remove(&s), Some(task));
                    }
                }
                self.waiting.remove(&task);
                self.attempt.remove(&task);
                self.ends.push(r);
            }
            Action::Timer { at, token } => self.q.push(at.max(t), 2, Payload::Event(Event::Timer { token })),
            Action::Priority { .. } => {}
        }
    }

    fn check(&self, t: Time) {
        let view = self.core.view();
        // The view agrees with what the actions said.
        assert_eq!(view.busy_slots(), self.slot_task.len() as u64);
        assert_eq!(view.waiting_tasks(), self.waiting.len() as u64);
        let mut busy: BTreeMap<MachineId, u32> = BTreeMap::new();
        for (&s, &task) in &self.slot_task {
            assert_eq!(view.slot_task(s), Some(task));
            *busy.entry(view.slot_machine(s).expect("known slot")).or_default() += 1;
        }
        // Waiting tasks per machine: (seq, width, id).
        let mut queues: BTreeMap<MachineId, Vec<(u64, u32, TaskId)>> = BTreeMap::new();
        for &id in &self.waiting {
            let v = view
                .task(id)
                .unwrap_or_else(|| panic!("waiting task {id} unknown to the view"));
            assert!(!v.is_running());
            queues
                .entry(v.machine())
                .or_default()
                .push((v.seq(), v.slots(), id));
        }
        let order = self.case.order;
        for m in view.machines() {
            let q = queues.get(&m.id()).map_or(&[][..], |v| v.as_slice());
            assert_eq!(m.waiting() as usize, q.len());
            let free = m.free();
            let used = busy.get(&m.id()).copied().unwrap_or(0);
            assert_eq!(
                free + used,
                m.capacity(),
                "machine {}: free + busy != capacity",
                m.id()
            );
            assert_eq!(m.busy(), used);
            match self.rule {
                Greedy::NoFittingTaskWaits => {
                    if let Some(&(_, w, id)) = q.iter().find(|&&(_, w, _)| w <= free) {
                        panic!(
                            "at {t:?} {order}: machine {} has {free} free slots while task {id} ({w} slots) waits",
                            m.id()
                        );
                    }
                }
                Greedy::HeadNeverFits => {
                    if let Some(&(_, w, id)) = q.iter().min() {
                        assert!(
                            w > free,
                            "at {t:?} {order}: head {id} ({w} slots) fits in {free} free slots"
                        );
                    }
                }
                Greedy::Nothing => {}
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_slot_ever_runs_two_tasks(case in cases(order_names(), false, true, true)) {
        let ends = drive(&case, Greedy::Nothing);
        let ids: BTreeSet<TaskId> = ends.iter().map(|r| r.spec.id).collect();
        prop_assert_eq!(ids.len(), ends.len(), "a task ended twice");
        prop_assert_eq!(ends.len(), case.arrivals.len());
    }

    #[test]
    fn greedy_orders_never_idle_a_slot_a_waiting_task_fits(
        case in cases(vec!["fifo", "priority", "fcfs", "easy"], false, true, true)
    ) {
        drive(&case, greedy_rule(&case));
    }

    #[test]
    fn organization_orders_never_idle_a_slot_with_sequential_tasks(
        case in cases(vec!["round-robin", "fair-share"], true, true, true)
    ) {
        prop_assert_eq!(greedy_rule(&case), Greedy::NoFittingTaskWaits);
        drive(&case, Greedy::NoFittingTaskWaits);
    }

    #[test]
    fn the_simulator_agrees_with_a_hand_driven_core(case in cases(order_names(), false, true, true)) {
        let by_hand = drive(&case, Greedy::Nothing);
        let mut sim = Vec::new();
        struct Collect<'a>(&'a mut Vec<EndRecord>);
        impl Observer for Collect<'_> {
            fn on_task(&mut self, r: &EndRecord, _: Option<Time>) {
                self.0.push(r.clone());
            }
        }
        case.simulation().run(ok(case.arrivals.clone()), &mut Collect(&mut sim)).unwrap();
        prop_assert_eq!(by_hand, sim);
    }
}

// ---------------------------------------------------------------------------
// Determinism

fn tasks_csv(case: &Case) -> Vec<u8> {
    let mut csv = TasksCsv::new(Vec::new());
    case.simulation()
        .run(ok(case.arrivals.clone()), &mut csv)
        .unwrap();
    csv.finish().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn same_seed_same_tasks_csv(case in cases(order_names(), false, true, true)) {
        let a = tasks_csv(&case);
        let b = tasks_csv(&case);
        prop_assert_eq!(a.iter().filter(|&&c| c == b'\n').count(), case.arrivals.len() + 1);
        prop_assert!(a == b, "two runs of the same case differ");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn same_tasks_csv_in_any_thread_pool(cases in vec(cases(order_names(), false, true, true), 1..=4)) {
        // Every case three times, so the pools run identical cases at once.
        let jobs: Vec<&Case> = cases.iter().flat_map(|c| [c, c, c]).collect();
        let sequential: Vec<Vec<u8>> = jobs.iter().map(|c| tasks_csv(c)).collect();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let parallel: Vec<Vec<u8>> = pool.install(|| jobs.par_iter().map(|c| tasks_csv(c)).collect());
            prop_assert!(parallel == sequential, "{} threads: outputs differ", threads);
        }
    }
}

#[test]
fn every_registered_order_is_exercised() {
    // The properties draw policies from the registry; make sure the ones
    // with a greedy rule are all still there.
    let names = order_names();
    for n in ["fifo", "priority", "round-robin", "fair-share", "fcfs", "easy"] {
        assert!(names.contains(&n), "{n} is no longer an order policy");
    }
    assert!(
        order_entries()
            .iter()
            .all(|e| !e.clairvoyant || e.kind == Kind::Order)
    );
}
