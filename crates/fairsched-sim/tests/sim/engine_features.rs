//! One test per engine feature: machines and their queues, allocation,
//! slots joining and leaving, phases, outside priority changes, kills and
//! cancellations, timers, requeues and clairvoyant policies.

use crate::common::{Lists, Recorder, arrive, run, s, scheduler, scheduler_with, task};
use crate::common::{build_allocate, build_order};
use fairsched_core::{
    AllocatePolicy, AttemptEnd, ClairvoyantOrder, Control, ControlOut, ControlPolicy, CoreError, Event,
    MachineId, Notice, Order, OrderPolicy, OrgId, Outcome, Phase, Pick, Platform, RuntimeOracle, Scheduler,
    SimRng, SlotId, TaskId, TaskSpec, Time, View,
};
use fairsched_sim::{Arrival, Simulation};
use std::sync::{Arc, Mutex};

type Shared<T> = Arc<Mutex<Vec<T>>>;

fn shared<T>() -> Shared<T> {
    Arc::new(Mutex::new(Vec::new()))
}

#[test]
fn several_machines_have_their_own_queues() {
    // Machine 0 has slot 0; machine 1 has slots 1 and 2. least-loaded, all
    // sequential tasks arriving at t=0 (load = (busy + waiting + 1) / size,
    // and nothing is busy before the instant's dispatch):
    //   task 1: m0 1/1, m1 1/2 → m1;   task 2: m0 1/1, m1 2/2 → tie → m0;
    //   task 3: m0 2/1, m1 3/2 → m1;   task 4: m0 2/1, m1 3/2 → m1;
    //   task 5: m0 2/1, m1 4/2 → tie → m0.
    // Task 5 waits on machine 0 behind task 2 (20 s) although machine 1 is
    // idle from t=10: queues are per machine. Task 6 at t=12: m0 (1+1+1)/1
    // = 3, m1 (0+0+1)/2 → m1, where it starts at once.
    let core = scheduler(&Platform::machines(&[1, 2]), "least-loaded", "fifo", None);
    let arrivals = vec![
        arrive(task(1), 0, 5),
        arrive(task(2), 0, 20),
        arrive(task(3), 0, 5),
        arrive(task(4), 0, 5),
        arrive(task(5), 0, 10),
        arrive(task(6), 12, 1),
    ];
    let (stats, rec) = run(Simulation::new(core), arrivals);
    assert_eq!(stats.submitted, 6);
    let expect = [
        // (task, machine, slot, start, end); free slots are a stack: at t=5
        // task 1 then task 3 release slots 1 and 2, and slot 2 is reused.
        (1, 1, 1, 0, 5),
        (2, 0, 0, 0, 20),
        (3, 1, 2, 0, 5),
        (4, 1, 2, 5, 10),
        (5, 0, 0, 20, 30),
        (6, 1, 2, 12, 13),
    ];
    for (id, m, slot, start, end) in expect {
        let r = rec.end(id);
        assert_eq!(r.machine, Some(MachineId(m)), "task {id} machine");
        assert_eq!(r.slot(), Some(SlotId(slot)), "task {id} slot");
        assert_eq!(r.start(), Some(s(start)), "task {id} start");
        assert_eq!(r.end, s(end), "task {id} end");
        assert_eq!(r.outcome, Outcome::Completed);
    }
    // While task 5 waited (13 ≤ t < 20), machine 1's two slots were free.
    let during = rec.samples.iter().rev().find(|x| x.time <= s(15)).unwrap();
    assert_eq!(
        (during.busy_slots, during.waiting_tasks, during.total_slots),
        (1, 1, 3)
    );
}

#[test]
fn least_loaded_spreads_over_machines() {
    // Machines of 2, 4 and 8 slots; 28 equal tasks at t=0. Each goes to
    // argmin (waiting + 1) / size, ties to the lowest index. By hand, the
    // first 14 go to machines 2,1,2,2,0,1,2,2,1,2,2,0,1,2 — that is 2, 4 and
    // 8 tasks, every machine then exactly full (waiting/size = 1 each), so
    // the next 14 repeat the pattern: 4, 8 and 16 in total.
    let core = scheduler(&Platform::machines(&[2, 4, 8]), "least-loaded", "fifo", None);
    let arrivals: Vec<Arrival> = (1..=28).map(|i| arrive(task(i), 0, 10)).collect();
    let (_, rec) = run(Simulation::new(core), arrivals);
    let first14: Vec<u32> = (1..=14).map(|i| rec.end(i).machine.unwrap().0).collect();
    assert_eq!(first14, vec![2, 1, 2, 2, 0, 1, 2, 2, 1, 2, 2, 0, 1, 2]);
    let mut per_machine = [0u32; 3];
    for (r, _) in &rec.ends {
        per_machine[r.machine.unwrap().index()] += 1;
    }
    assert_eq!(per_machine, [4, 8, 16]);
    // Two full waves on every machine: all start at 0 or 10, end by 20.
    for (r, _) in &rec.ends {
        assert!(r.start() == Some(s(0)) || r.start() == Some(s(10)), "{r:?}");
    }
    assert_eq!(rec.metrics.makespan(), s(20));
    assert!((rec.metrics.utilization() - 1.0).abs() < 1e-12);

    // Wide jobs: a 5-slot job fits only machine 2 (8 slots), even when
    // machine 2 is loaded and the small machines are idle; a 9-slot job
    // fits nowhere and is rejected at once.
    let core = scheduler(&Platform::machines(&[2, 4, 8]), "least-loaded", "fifo", None);
    let mut arrivals = vec![arrive(task(1).slots(8), 0, 100)];
    arrivals.extend((2..=4).map(|i| arrive(task(i).slots(5), i as i64, 10)));
    arrivals.push(arrive(task(5).slots(9), 5, 10));
    arrivals.push(arrive(task(6).slots(4), 6, 10));
    let (stats, rec) = run(Simulation::new(core), arrivals);
    for id in 2..=4 {
        let r = rec.end(id);
        assert_eq!(r.machine, Some(MachineId(2)), "5-slot job {id}");
        assert_eq!(r.outcome, Outcome::Completed);
    }
    // They wait for the 8-slot job and then run one at a time.
    assert_eq!(rec.end(2).start(), Some(s(100)));
    assert_eq!(rec.end(3).start(), Some(s(110)));
    assert_eq!(rec.end(4).start(), Some(s(120)));
    let r = rec.end(5);
    assert_eq!(r.outcome, Outcome::Rejected);
    assert_eq!((r.machine, r.start(), r.end, r.starts()), (None, None, s(5), 0));
    assert_eq!(stats.core.rejected, 1);
    // A 4-slot job fits machine 1 (load 4/4 = 1 < (8+15+4)/8).
    assert_eq!(rec.end(6).machine, Some(MachineId(1)));
    assert_eq!(rec.end(6).start(), Some(s(6)));
}

#[test]
fn slots_join_and_leave() {
    // Start with no slot at all: the task waits until a slot joins.
    let core = scheduler(&Platform::pool(0), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.schedule(
        s(3),
        Event::SlotJoin {
            machine: MachineId(0),
            owner: OrgId(0),
        },
    );
    let (_, rec) = run(sim, vec![arrive(task(1), 0, 4)]);
    let r = rec.end(1);
    assert_eq!((r.start(), r.end, r.slot()), (Some(s(3)), s(7), Some(SlotId(0))));
    assert_eq!(rec.samples[0].total_slots, 0);
    assert_eq!(rec.total_slots_at(s(3)), Some(1));

    // One slot; tasks 1 (100 s), 2 and 3 (10 s) at t=0. A slot joins at 5:
    // task 2 starts on it at 5. Slot 0 (running task 1) leaves at 8: task 1
    // is killed at 8 and the platform is back to one slot, so task 3 waits
    // for task 2 to finish at 15. A second leave of slot 0 is ignored.
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.schedule(
        s(5),
        Event::SlotJoin {
            machine: MachineId(0),
            owner: OrgId(0),
        },
    );
    sim.schedule(s(8), Event::SlotLeave { slot: SlotId(0) });
    sim.schedule(s(9), Event::SlotLeave { slot: SlotId(0) });
    sim.schedule(
        s(9),
        Event::SlotJoin {
            machine: MachineId(7),
            owner: OrgId(0),
        },
    );
    let (stats, rec) = run(
        sim,
        vec![
            arrive(task(1), 0, 100),
            arrive(task(2), 0, 10),
            arrive(task(3), 0, 10),
        ],
    );
    let r1 = rec.end(1);
    assert_eq!(
        (r1.outcome, r1.start(), r1.end),
        (Outcome::Killed, Some(s(0)), s(8))
    );
    let r2 = rec.end(2);
    assert_eq!(
        (r2.outcome, r2.start(), r2.end, r2.slot()),
        (Outcome::Completed, Some(s(5)), s(15), Some(SlotId(1)))
    );
    let r3 = rec.end(3);
    assert_eq!(
        (r3.outcome, r3.start(), r3.end, r3.slot()),
        (Outcome::Completed, Some(s(15)), s(25), Some(SlotId(1)))
    );
    // Leaving twice, and joining a machine that does not exist, are ignored.
    assert_eq!(stats.core.ignored_events, 2);
    // Capacity over time, from the samples: 1, then 2 from 5, 1 from 8.
    assert_eq!(rec.total_slots_at(s(0)), Some(1));
    assert_eq!(rec.total_slots_at(s(5)), Some(2));
    assert_eq!(rec.total_slots_at(s(7)), Some(2));
    assert_eq!(rec.total_slots_at(s(8)), Some(1));
    assert_eq!(rec.total_slots_at(s(25)), Some(1));
    let at8 = rec.samples.iter().rev().find(|x| x.time == s(8)).unwrap();
    assert_eq!((at8.busy_slots, at8.running_tasks, at8.waiting_tasks), (1, 1, 1));
    // Available slot-time 1×5 + 2×3 + 1×17 = 28 = busy 8 + 10 + 10.
    assert!(
        (rec.metrics.utilization() - 1.0).abs() < 1e-12,
        "{}",
        rec.metrics.utilization()
    );
}

/// A control policy that only records when phases start.
#[derive(Clone)]
struct PhaseWatcher(Shared<(Time, TaskId, Phase)>);

impl Control for PhaseWatcher {
    fn react(&mut self, view: &View, notices: &[Notice], _timers: &[u64], _out: &mut ControlOut) {
        for n in notices {
            if let Notice::PhaseStarted { task, phase } = *n {
                self.0.lock().unwrap().push((view.now(), task, phase));
            }
        }
    }
}

#[test]
fn phases_are_reported_as_events() {
    let log = shared();
    let core = Scheduler::new(
        &Platform::pool(1),
        1,
        build_allocate(&"single-pool".parse().unwrap()).unwrap(),
        build_order(&"fifo".parse().unwrap()).unwrap(),
        Some(ControlPolicy::Blind(Box::new(PhaseWatcher(log.clone())))),
    );
    let mut sim = Simulation::new(core);
    // Task 3 is killed during its input phase.
    sim.schedule(s(26), Event::Kill { task: TaskId(3) });
    let arrivals = vec![
        Arrival::with_phases(task(1), s(1), [s(2), s(3), s(4), s(5)]),
        Arrival::with_phases(task(2), s(2), [s(0), s(2), s(0), s(3)]),
        Arrival::with_phases(task(3), s(3), [s(4), s(4), s(4), s(4)]),
    ];
    let (_, rec) = run(sim, arrivals);
    let r1 = rec.end(1);
    assert_eq!(
        (r1.start(), r1.end, r1.outcome),
        (Some(s(1)), s(15), Outcome::Completed)
    );
    assert_eq!(r1.phases, [Some(s(2)), Some(s(3)), Some(s(4)), Some(s(5))]);
    let r2 = rec.end(2);
    assert_eq!((r2.start(), r2.end), (Some(s(15)), s(20)));
    assert_eq!(r2.phases, [Some(s(0)), Some(s(2)), Some(s(0)), Some(s(3))]);
    let r3 = rec.end(3);
    assert_eq!(
        (r3.start(), r3.end, r3.outcome),
        (Some(s(20)), s(26), Outcome::Killed)
    );
    // The phase running when it was killed is closed at the kill.
    assert_eq!(r3.phases, [Some(s(4)), Some(s(2)), None, None]);

    let (t1, t2, t3) = (TaskId(1), TaskId(2), TaskId(3));
    let expect = vec![
        (s(1), t1, Phase::Setup),
        (s(3), t1, Phase::Input),
        (s(6), t1, Phase::Exec),
        (s(10), t1, Phase::Output),
        (s(15), t2, Phase::Setup),
        (s(15), t2, Phase::Input),
        (s(17), t2, Phase::Exec),
        (s(17), t2, Phase::Output),
        (s(20), t3, Phase::Setup),
        (s(24), t3, Phase::Input),
    ];
    assert_eq!(*log.lock().unwrap(), expect);
}

#[test]
fn priorities_change_from_outside() {
    // One slot, all priority 1. Task 3 is raised to 5 and task 2 lowered to
    // 0 while they wait; the running task 1 is raised too (no effect on the
    // queue); an unknown task's change is ignored.
    let core = scheduler(&Platform::pool(1), "single-pool", "priority", None);
    let mut sim = Simulation::new(core);
    sim.schedule(
        s(5),
        Event::SetPriority {
            task: TaskId(3),
            priority: 5,
        },
    );
    sim.schedule(
        s(6),
        Event::SetPriority {
            task: TaskId(2),
            priority: 0,
        },
    );
    sim.schedule(
        s(7),
        Event::SetPriority {
            task: TaskId(1),
            priority: 9,
        },
    );
    sim.schedule(
        s(7),
        Event::SetPriority {
            task: TaskId(99),
            priority: 9,
        },
    );
    let arrivals = vec![
        arrive(task(1), 0, 10),
        arrive(task(2), 1, 5),
        arrive(task(3), 2, 5),
        arrive(task(4), 3, 5),
    ];
    let (stats, rec) = run(sim, arrivals);
    assert_eq!(rec.start_order(), vec![1, 3, 4, 2]);
    assert_eq!(rec.end(3).start(), Some(s(10)));
    assert_eq!(rec.end(4).start(), Some(s(15)));
    assert_eq!(rec.end(2).start(), Some(s(20)));
    assert_eq!(rec.end(1).spec.priority, 9);
    assert_eq!(rec.end(2).spec.priority, 0);
    assert_eq!(rec.end(3).spec.priority, 5);
    assert_eq!(stats.core.priority_changes, 3);
    assert_eq!(stats.core.ignored_events, 1);

    // Without the changes, plain FIFO.
    let core = scheduler(&Platform::pool(1), "single-pool", "priority", None);
    let arrivals = vec![
        arrive(task(1), 0, 10),
        arrive(task(2), 1, 5),
        arrive(task(3), 2, 5),
        arrive(task(4), 3, 5),
    ];
    let (_, rec) = run(Simulation::new(core), arrivals);
    assert_eq!(rec.start_order(), vec![1, 2, 3, 4]);
}

#[test]
fn kills_and_cancellations_end_tasks_once() {
    // Two slots, fifo. Tasks 1, 2 (100 s) start at 0 on slots 0 and 1;
    // 3, 4, 5 (10 s) wait.
    let core = scheduler(&Platform::pool(2), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.schedule(s(5), Event::Kill { task: TaskId(1) }); // running → killed; 3 takes slot 0
    sim.schedule(s(6), Event::Cancel { task: TaskId(4) }); // waiting → cancelled, never started
    sim.schedule(s(6), Event::Kill { task: TaskId(5) }); // waiting: a kill does not apply (ignored)
    sim.schedule(s(7), Event::Cancel { task: TaskId(2) }); // running → cancelled; 5 takes slot 1
    sim.schedule(s(8), Event::Cancel { task: TaskId(1) }); // already ended: ignored
    sim.schedule(s(9), Event::Kill { task: TaskId(4) }); // already ended: ignored
    sim.schedule(s(15), Event::Cancel { task: TaskId(3) }); // 3 completes at 15 first: ignored
    let arrivals = (1..=5)
        .map(|i| arrive(task(i), 0, if i <= 2 { 100 } else { 10 }))
        .collect();
    let (stats, rec) = run(sim, arrivals);

    assert!(rec.counts().values().all(|&n| n == 1));
    assert_eq!(rec.ends.len(), 5);
    assert_eq!(stats.submitted, 5);

    let r = rec.end(1);
    assert_eq!(
        (r.outcome, r.start(), r.end, r.slot()),
        (Outcome::Killed, Some(s(0)), s(5), Some(SlotId(0)))
    );
    let r = rec.end(3);
    assert_eq!(
        (r.outcome, r.start(), r.end, r.slot()),
        (Outcome::Completed, Some(s(5)), s(15), Some(SlotId(0)))
    );
    let r = rec.end(4);
    assert_eq!(
        (r.outcome, r.start(), r.end, r.slot(), r.starts()),
        (Outcome::Cancelled, None, s(6), None, 0)
    );
    assert_eq!(r.machine, Some(MachineId(0)));
    let r = rec.end(2);
    assert_eq!(
        (r.outcome, r.start(), r.end, r.slot()),
        (Outcome::Cancelled, Some(s(0)), s(7), Some(SlotId(1)))
    );
    let r = rec.end(5);
    assert_eq!(
        (r.outcome, r.start(), r.end, r.slot()),
        (Outcome::Completed, Some(s(7)), s(17), Some(SlotId(1)))
    );

    assert_eq!(stats.core.ignored_events, 4);
    assert_eq!(stats.core.starts, 4);
    assert_eq!(stats.stranded, 0);
    assert_eq!(rec.metrics.outcomes.get("killed"), Some(&1));
    assert_eq!(rec.metrics.outcomes.get("cancelled"), Some(&2));
    assert_eq!(rec.metrics.outcomes.get("completed"), Some(&2));
}

/// A control policy that sets timers on its first reaction and records
/// when they fire.
#[derive(Clone)]
struct TimerWatcher {
    armed: bool,
    log: Shared<(Time, u64)>,
}

impl Control for TimerWatcher {
    fn react(&mut self, view: &View, _notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        let now = view.now();
        if !self.armed {
            self.armed = true;
            out.timers.push((now + s(7), 2));
            out.timers.push((now + s(5), 1));
            // A timer in the past fires at once (at the same instant).
            out.timers.push((now - s(1), 3));
        }
        for &token in timers {
            self.log.lock().unwrap().push((now, token));
        }
    }
}

#[test]
fn timers_fire_at_their_time() {
    let log = shared();
    let control = TimerWatcher {
        armed: false,
        log: log.clone(),
    };
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", Some(Box::new(control)));
    // The first reaction is at t=3, when task 1 arrives.
    let (stats, rec) = run(Simulation::new(core), vec![arrive(task(1), 3, 1)]);
    assert_eq!(*log.lock().unwrap(), vec![(s(3), 3), (s(8), 1), (s(10), 2)]);
    // The run goes on until the last timer, after the last task ended.
    assert_eq!(rec.end(1).end, s(4));
    assert_eq!(stats.end, s(10));
}

/// FIFO with mandatory tasks first; once, when a mandatory task waits and
/// does not fit while an optional one runs, the optional one is requeued.
#[derive(Clone, Default)]
struct RequeueOnce {
    lists: Lists,
    requeued: bool,
}

impl Order for RequeueOnce {
    fn notify(&mut self, _view: &View, n: &Notice) {
        self.lists.notify(n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        let mut cands: Vec<_> = self.lists.waiting.iter().filter_map(|&t| view.task(t)).collect();
        cands.sort_by_key(|t| (t.spec().optional(), t.seq()));
        if let Some(t) = cands.iter().find(|t| t.slots() <= free) {
            return Some(Pick::Start(t.id()));
        }
        let mandatory_waits = cands.iter().any(|t| !t.spec().optional());
        let victim = self
            .lists
            .running
            .iter()
            .copied()
            .find(|&r| view.task(r).is_some_and(|t| t.spec().optional()));
        match victim {
            Some(v) if mandatory_waits && !self.requeued => {
                self.requeued = true;
                Some(Pick::Requeue(v))
            }
            _ => None,
        }
    }
}

fn optional(spec: TaskSpec) -> TaskSpec {
    TaskSpec {
        optional: true,
        ..spec
    }
}

fn requeue_core() -> Scheduler {
    Scheduler::new(
        &Platform::pool(2),
        1,
        build_allocate(&"single-pool".parse().unwrap()).unwrap(),
        OrderPolicy::Blind(Box::<RequeueOnce>::default()),
        None,
    )
}

#[test]
fn requeue_loses_work_and_restarts() {
    // Two slots. Optional task 1 (20 s) starts at 0. Mandatory task 2 needs
    // both slots and arrives at 5: task 1 is stopped and requeued (its 5 s
    // of work are lost), task 2 runs 5..15, then task 1 starts over and
    // needs its full 20 s: 15..35. Its first completion (due at 20) is
    // stale and must not end it.
    let arrivals = vec![arrive(optional(task(1)), 0, 20), arrive(task(2).slots(2), 5, 10)];
    let (stats, rec) = run(Simulation::new(requeue_core()), arrivals);
    let r1 = rec.end(1);
    assert_eq!(r1.outcome, Outcome::Completed);
    assert_eq!(r1.starts(), 2);
    assert_eq!((r1.start(), r1.end), (Some(s(15)), s(35)));
    let r2 = rec.end(2);
    assert_eq!((r2.start(), r2.end, r2.starts()), (Some(s(5)), s(15), 1));
    // Both runs of task 1 are in its record: the lost one too.
    let runs: Vec<_> = r1
        .runs()
        .map(|a| (a.machine, a.slots, a.start, a.stop, a.end))
        .collect();
    let m0 = MachineId(0);
    assert_eq!(
        runs,
        vec![
            (m0, 1, s(0), s(5), AttemptEnd::Requeued),
            (m0, 1, s(15), s(35), AttemptEnd::Completed)
        ]
    );
    assert_eq!(r1.busy(), s(25));
    assert_eq!(stats.core.requeues, 1);
    assert_eq!(stats.core.starts, 3);
    assert_eq!(rec.ends.len(), 2);
}

#[test]

fn requeued_then_cancelled_task_is_not_counted_as_running() {
    // As above, but task 1 (100 s) is cancelled at 50 while it waits after
    // its requeue at 5. It ran 0..5 only; task 2 runs 5..55 on both slots.
    // Busy slot-time is at most 5 + 100 = 105 of 2 × 55 = 110 available.
    let mut sim = Simulation::new(requeue_core());
    sim.schedule(s(50), Event::Cancel { task: TaskId(1) });
    let arrivals = vec![arrive(optional(task(1)), 0, 100), arrive(task(2).slots(2), 5, 50)];
    let (_, rec) = run(sim, arrivals);
    let r1 = rec.end(1);
    assert_eq!((r1.outcome, r1.starts(), r1.end), (Outcome::Cancelled, 1, s(50)));
    let m = fairsched_core::metrics::TaskMetrics::of(r1);
    assert!(
        m.run.is_none_or(|run| run <= s(5)),
        "task 1 ran 0..5 only, metrics say {:?}",
        m.run
    );
    let u = rec.metrics.utilization();
    assert!(u <= 1.0, "utilization {u} > 1");
}

/// Shortest true runtime first (a clairvoyant baseline); records what the
/// oracle told it.
#[derive(Clone)]
struct ShortestTrueFirst {
    waiting: Vec<TaskId>,
    seen: Shared<(TaskId, Time)>,
}

impl ClairvoyantOrder for ShortestTrueFirst {
    fn notify(&mut self, _view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, .. } | Notice::Requeued { task, .. } => self.waiting.push(task),
            Notice::Started { task, .. } | Notice::Left { task, .. } => self.waiting.retain(|&t| t != task),
            _ => {}
        }
    }
    fn pick(
        &mut self,
        view: &View,
        machine: MachineId,
        oracle: &dyn RuntimeOracle,
        _rng: &mut SimRng,
    ) -> Option<Pick> {
        let free = view.machine(machine).free();
        let mut best: Option<(Time, u64, TaskId)> = None;
        for &t in &self.waiting {
            let v = view.task(t)?;
            if v.machine() != machine || v.slots() > free {
                continue;
            }
            let rt = oracle.runtime(t).expect("the oracle knows every live task");
            self.seen.lock().unwrap().push((t, rt));
            if best.is_none_or(|(brt, bseq, _)| (rt, v.seq()) < (brt, bseq)) {
                best = Some((rt, v.seq(), t));
            }
        }
        best.map(|(_, _, t)| Pick::Start(t))
    }
}

#[test]
fn clairvoyant_policy_needs_an_oracle() {
    let seen = shared();
    let order = ShortestTrueFirst {
        waiting: Vec::new(),
        seen: seen.clone(),
    };
    let core = Scheduler::new(
        &Platform::pool(1),
        1,
        build_allocate(&"single-pool".parse().unwrap()).unwrap(),
        OrderPolicy::Clairvoyant(Box::new(order)),
        None,
    );
    let runtimes = [(1, 0, 50), (2, 1, 30), (3, 1, 10), (4, 2, 20)];
    let arrivals = runtimes
        .iter()
        .map(|&(id, sub, rt)| arrive(task(id), sub, rt))
        .collect();
    let (_, rec) = run(Simulation::new(core), arrivals);
    // At t=50 the shortest true runtime goes first: 3 (10), 4 (20), 2 (30).
    assert_eq!(rec.start_order(), vec![1, 3, 4, 2]);
    assert_eq!(rec.end(3).start(), Some(s(50)));
    assert_eq!(rec.end(2).start(), Some(s(80)));
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for &(t, rt) in seen.iter() {
        let truth = runtimes.iter().find(|r| r.0 == t.0).unwrap().2;
        assert_eq!(rt, s(truth), "oracle runtime of {t}");
    }
    // Observers also get the true runtime.
    assert!(
        rec.ends
            .iter()
            .all(|(r, rt)| *rt == Some(r.end - r.start().unwrap()))
    );

    // Driven directly without an oracle, the core refuses.
    let order = ShortestTrueFirst {
        waiting: Vec::new(),
        seen: shared(),
    };
    let mut core = Scheduler::new(
        &Platform::pool(1),
        1,
        AllocatePolicy::Blind(Box::new(fairsched_core::policy::single_pool::SinglePool)),
        OrderPolicy::Clairvoyant(Box::new(order)),
        None,
    );
    let mut out = Vec::new();
    let err = core
        .step(Time::ZERO, [Event::Submit(task(1))], None, &mut out)
        .unwrap_err();
    assert!(matches!(err, CoreError::NeedsOracle(_)), "{err}");
    assert!(
        out.iter()
            .all(|a| !matches!(a, fairsched_core::Action::Start { .. }))
    );
}

#[test]

fn a_task_wider_than_the_single_pool_is_rejected() {
    // Two slots. Task 1 needs 3 slots: no machine can ever hold it, so by
    // the Allocate contract it is rejected at once. Task 2 then runs.
    let core = scheduler(&Platform::pool(2), "single-pool", "fcfs", None);
    let (stats, rec) = run(
        Simulation::new(core),
        vec![arrive(task(1).slots(3), 0, 10), arrive(task(2), 1, 10)],
    );
    let r2 = rec.end(2);
    assert_eq!(
        (r2.outcome, r2.start()),
        (Outcome::Completed, Some(s(1))),
        "stranded: {}",
        stats.stranded
    );
    let r1 = rec.end(1);
    assert_eq!((r1.outcome, r1.end), (Outcome::Rejected, s(0)));
}

#[test]

fn easy_does_not_backfill_past_an_unknown_shadow_time() {
    // Four slots. Job 1 (2 slots, no estimate, really 50 s) runs; job 2
    // needs all 4 slots (the head). Job 1 has no estimate, so easy.rs
    // assumes it never ends: the head gets no reservation (shadow time
    // Time::MAX, 0 extra slots), which its comment reads as "no backfill
    // may delay it". Yet job 3 (1 slot, estimate and runtime 1000 s) is
    // backfilled at t=2, because `now + 1000 <= Time::MAX`, and the head
    // waits until t=1002 instead of starting when job 1 ends at 50.
    let core = scheduler(&Platform::pool(4), "single-pool", "easy", None);
    let arrivals = vec![
        arrive(task(1).slots(2), 0, 50),
        arrive(task(2).slots(4).estimate(s(10)), 1, 10),
        arrive(task(3).estimate(s(1000)), 2, 1000),
    ];
    let (_, rec) = run(Simulation::new(core), arrivals);
    assert_eq!(
        rec.end(2).start(),
        Some(s(50)),
        "head delayed; job 3 started at {:?}",
        rec.end(3).start()
    );
    assert_eq!(rec.end(3).start(), Some(s(60)));
}

#[test]
fn easy_backfills_only_what_ends_before_the_shadow_time() {
    // Same as above, but job 1 says it needs 50 s: the head's shadow time
    // is 50, job 3 (estimate 1000) would delay it and waits; job 4
    // (estimate 40) ends by 50 and is backfilled at once.
    let core = scheduler(&Platform::pool(4), "single-pool", "easy", None);
    let arrivals = vec![
        arrive(task(1).slots(2).estimate(s(50)), 0, 50),
        arrive(task(2).slots(4).estimate(s(10)), 1, 10),
        arrive(task(3).estimate(s(1000)), 2, 1000),
        arrive(task(4).estimate(s(40)), 3, 40),
    ];
    let (_, rec) = run(Simulation::new(core), arrivals);
    assert_eq!(rec.end(4).start(), Some(s(3)));
    assert_eq!(rec.end(2).start(), Some(s(50)));
    assert_eq!(rec.end(3).start(), Some(s(60)));
}

/// Runs `f` on its own thread; `None` if it has not returned after `secs`
/// (the thread is left running: the test process ends it).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
}

/// Two slots; task 1 (1 slot, 100 s) runs; task 2 needs both slots and
/// arrives at 1; slot 1 leaves at 2, so task 2 can never start.
fn stranded_run(control: Option<&'static str>) -> (u64, Outcome, Time) {
    let core = scheduler_with(&Platform::pool(2), "single-pool", "fifo", control);
    let mut sim = Simulation::new(core);
    sim.schedule(s(2), Event::SlotLeave { slot: SlotId(1) });
    let (stats, rec) = run(
        sim,
        vec![arrive(task(1), 0, 100), arrive(task(2).slots(2), 1, 10)],
    );
    let r = rec.end(2);
    (stats.stranded, r.outcome, r.end)
}

#[test]
fn a_task_that_can_never_start_is_stranded_and_cancelled() {
    // Nothing else can happen after task 1 ends: task 2 is cancelled then.
    assert_eq!(stranded_run(None), (1, Outcome::Cancelled, s(100)));
}

#[test]

fn a_stranded_task_does_not_keep_a_timer_driven_run_alive() {
    // age-boost re-arms a timer for task 2 every 7 s while it waits, so the
    // event heap never empties and Simulation::run never reaches its
    // "nothing can happen any more" wind-down.
    let got = within(10, || stranded_run(Some("age-boost[after=7]")));
    let (stranded, outcome, _) = got.expect("the run did not end within 10 s of wall time");
    assert_eq!((stranded, outcome), (1, Outcome::Cancelled));
}

#[test]
fn recorder_sees_every_sample_change() {
    // Samples are deduplicated: one per instant at which occupancy changed.
    let core = scheduler(&Platform::pool(2), "single-pool", "fifo", None);
    let (_, rec): (_, Recorder) = run(
        Simulation::new(core),
        vec![arrive(task(1), 0, 10), arrive(task(2), 10, 10)],
    );
    let times: Vec<Time> = rec.samples.iter().map(|x| x.time).collect();
    // t=0: one running; t=10: task 1 done and task 2 started (same
    // occupancy, no new sample); t=20: idle.
    assert_eq!(times, vec![s(0), s(20)]);
}

#[test]
fn slot_speed_scales_every_phase_of_the_run() {
    // Two slots: slot 0 at speed 2, slot 1 at speed 0.5. Task 1 starts on
    // one of them, task 2 on the other; each phase is divided by the speed.
    let core = scheduler(&Platform::pool(2), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.slot_speed(|slot: SlotId| if slot.0 == 0 { 2.0 } else { 0.5 });
    let arrivals = vec![
        Arrival::with_phases(task(1), s(0), [s(2), s(4), s(6), s(8)]),
        Arrival::with_phases(task(2), s(0), [s(2), s(4), s(6), s(8)]),
    ];
    let (_, rec) = run(sim, arrivals);
    for id in [1, 2] {
        let r = rec.end(id);
        let speed = if r.slot() == Some(SlotId(0)) { 2.0 } else { 0.5 };
        let want: Vec<Option<Time>> = [2.0, 4.0, 6.0, 8.0]
            .iter()
            .map(|d| Some(Time::from_millis((d * 1000.0 / speed) as i64)))
            .collect();
        assert_eq!(r.phases.to_vec(), want, "task {id}");
        assert_eq!(r.end, Time::from_millis((20_000.0 / speed) as i64), "task {id}");
    }
}

/// Records what the driver hands the core.
#[derive(Default)]
struct EventLog(Vec<(Time, String)>);

impl fairsched_core::Observer for EventLog {
    fn on_events(&mut self, now: Time, events: &[Event]) {
        for e in events {
            let name = format!("{e:?}");
            self.0
                .push((now, name.split([' ', '{', '(']).next().unwrap().to_string()));
        }
    }
    fn wants_events(&self) -> bool {
        true
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

#[test]
fn observers_can_follow_the_events_the_core_receives() {
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    let mut log = EventLog::default();
    let arrivals = vec![Arrival::with_phases(task(1), s(0), [s(1), s(0), s(2), s(0)])];
    sim.run(crate::common::ok(arrivals), &mut log).unwrap();
    let got: Vec<(i64, &str)> = log
        .0
        .iter()
        .map(|(t, n)| (t.millis() / 1000, n.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, "Submit"),
            (0, "Phase"),
            (1, "Phase"),
            (1, "Phase"),
            (3, "Phase"),
            (3, "Complete"),
        ]
    );
}
