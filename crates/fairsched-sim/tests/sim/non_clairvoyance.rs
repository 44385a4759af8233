//! Probes for runtime leaks: a blind policy must not learn a true runtime
//! before the task completes, through any channel.
//!
//! - A task that stops early (killed, cancelled, failed, its slot left,
//!   requeued) still has a completion pending at the end of the run it will
//!   never finish. Nothing may happen at that instant: no step, no policy
//!   call, no Control reaction or timer armed from it, no sample, not the
//!   end of the run.
//! - The parts of a split parallel job share one runtime: policies must see
//!   nothing that groups them apart from independent jobs.

use crate::common::{Lists, Recorder, arrive, s, task};
use crate::common::{build_allocate, build_control};
use fairsched_core::{
    Action, Control, ControlOut, ControlPolicy, Event, MachineId, Notice, Observer, Order, OrderPolicy, Pick,
    Platform, Scheduler, SimRng, SlotId, TaskId, Time, View,
};
use fairsched_sim::workload::arrivals;
use fairsched_sim::{Arrival, Simulation};
use fairsched_trace::{Job, JobIteratorExt};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<(Time, String)>>>;

/// Every call a Control gets, with the instant; optionally wraps a real
/// Control (whose timers and priorities then go through).
#[derive(Clone)]
struct ControlProbe {
    log: Log,
    inner: Option<Box<dyn Control>>,
}

impl Control for ControlProbe {
    fn notify(&mut self, view: &View, n: &Notice) {
        self.log
            .lock()
            .unwrap()
            .push((view.now(), format!("notify {n:?}")));
        if let Some(c) = &mut self.inner {
            c.notify(view, n);
        }
    }
    fn react(&mut self, view: &View, notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        let what = format!("react {notices:?} timers {timers:?}");
        self.log.lock().unwrap().push((view.now(), what));
        if let Some(c) = &mut self.inner {
            c.react(view, notices, timers, out);
        }
    }
}

/// Records every instant the run shows to anyone: steps, samples, actions
/// (with a timer's due time), progress.
#[derive(Default)]
struct Instants(Vec<(Time, String)>, Recorder);

impl Observer for Instants {
    fn on_step(&mut self, now: Time, actions: &[Action], _view: &View) {
        self.0.push((now, "step".into()));
        for a in actions {
            self.0.push((now, format!("{a:?}")));
            if let Action::Timer { at, .. } = a {
                self.0.push((*at, format!("timer due, set at {now:?}")));
            }
        }
    }
    fn on_task(&mut self, rec: &fairsched_core::EndRecord, meta: &fairsched_core::TaskMeta) {
        self.1.on_task(rec, meta);
    }
    fn on_sample(&mut self, smp: &fairsched_core::Sample) {
        self.0.push((smp.time, "sample".into()));
    }
    fn on_progress(&mut self, now: Time, _submitted: u64) {
        self.0.push((now, "progress".into()));
    }
}

/// Runs `sim` over `arrivals` with a probed Control; returns everything
/// that happened at `hidden`, and the run's end.
fn probe(
    platform: &Platform,
    order: OrderPolicy,
    control: Option<&str>,
    arrivals: Vec<Arrival>,
    outside: Vec<(i64, Event)>,
    hidden: Time,
) -> (Vec<(Time, String)>, Time, Recorder) {
    let log: Log = Arc::default();
    let inner = control.map(|c| build_control(&c.parse().unwrap()).unwrap().into_inner());
    let core = Scheduler::new(
        platform,
        1,
        build_allocate(&"single-pool".parse().unwrap()).unwrap(),
        order,
        Some(ControlPolicy::Blind(Box::new(ControlProbe {
            log: log.clone(),
            inner,
        }))),
    );
    let mut sim = Simulation::new(core);
    for (at, ev) in outside {
        sim.schedule(s(at), ev);
    }
    let mut seen = Instants::default();
    let stats = sim.run(arrivals.into_iter().map(Ok), &mut seen).unwrap();
    let mut at_hidden: Vec<(Time, String)> = log
        .lock()
        .unwrap()
        .iter()
        .chain(&seen.0)
        .filter(|(t, _)| *t == hidden)
        .cloned()
        .collect();
    if stats.end == hidden {
        at_hidden.push((stats.end, "the run ends".into()));
    }
    (at_hidden, stats.end, seen.1)
}

fn fifo() -> OrderPolicy {
    crate::common::build_order(&"fifo".parse().unwrap()).unwrap()
}

#[test]
fn a_killed_task_shows_nothing_at_its_true_end() {
    // Task 1 (runtime 100) is stopped at 5 in each way a running task can
    // stop early; task 2 (runtime 200) then starts at 5, so the Control has
    // a start pending when the stale completion of task 1 comes due at 100.
    let stops: Vec<(&str, Vec<(i64, Event)>)> = vec![
        ("kill", vec![(5, Event::Kill { task: TaskId(1) })]),
        ("cancel", vec![(5, Event::Cancel { task: TaskId(1) })]),
        ("fail", vec![(5, Event::Fail { task: TaskId(1) })]),
        (
            "slot leaves",
            vec![
                (
                    4,
                    Event::SlotJoin {
                        machine: MachineId(0),
                        owner: fairsched_core::OrgId(0),
                    },
                ),
                (5, Event::SlotLeave { slot: SlotId(0) }),
            ],
        ),
    ];
    for (how, outside) in stops {
        for control in [None, Some("age-boost[after=7]")] {
            let arrivals = vec![arrive(task(1), 0, 100), arrive(task(2), 1, 200)];
            let (at100, end, rec) = probe(
                &Platform::pool(1),
                fifo(),
                control,
                arrivals,
                outside.clone(),
                s(100),
            );
            assert!(
                at100.is_empty(),
                "{how}, {control:?}: activity at the hidden end 100: {at100:?}"
            );
            assert_eq!(rec.end(1).end, s(5), "{how}");
            assert_eq!(
                end,
                rec.end(2).end,
                "{how}: the run ends with the last real event"
            );
        }
    }
}

/// Mandatory tasks first; an optional running task is requeued (work
/// lost) when a mandatory one waits and nothing is free.
#[derive(Clone, Default)]
struct MandatoryFirst {
    lists: Lists,
}

impl Order for MandatoryFirst {
    fn notify(&mut self, _view: &View, n: &Notice) {
        self.lists.notify(n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let key = |t: &TaskId| view.task(*t).map(|v| (v.spec().optional(), v.seq()));
        let head = self.lists.waiting.iter().copied().min_by_key(key)?;
        let optional = view.task(head)?.spec().optional();
        if view.machine(machine).free() > 0 {
            return Some(Pick::Start(head));
        }
        let victim = self
            .lists
            .running
            .iter()
            .copied()
            .find(|&r| view.task(r).is_some_and(|t| t.spec().optional()));
        (!optional).then_some(victim).flatten().map(Pick::Requeue)
    }
    fn preempts(&self) -> bool {
        true
    }
}

#[test]
fn a_requeued_run_shows_nothing_at_its_true_end() {
    // One slot. Optional task 1 (runtime 20) starts at 0; mandatory task 2
    // (runtime 100) arrives at 5 and takes the slot: task 1 is requeued, its
    // completion due at 20 is stale. With age-boost, the Requeued notice
    // reaches react at the next step: at 105 (task 2's end), never at 20.
    for control in [None, Some("age-boost[after=7]")] {
        let arrivals = vec![arrive(task(1).optional(), 0, 20), arrive(task(2), 5, 100)];
        let order = OrderPolicy::Blind(Box::<MandatoryFirst>::default());
        let (at20, _, rec) = probe(&Platform::pool(1), order, control, arrivals, vec![], s(20));
        assert!(
            at20.is_empty(),
            "{control:?}: activity at the hidden end 20: {at20:?}"
        );
        let r1 = rec.end(1);
        assert_eq!(r1.starts(), 2);
        assert_eq!((r1.start(), r1.end), (Some(s(105)), s(125)));
    }
}

#[test]
fn stranded_tasks_are_cancelled_at_the_last_real_event() {
    // Two slots. Task 1 (1 slot, runtime 100) runs; task 2 needs both and
    // waits; slot 1 leaves at 2 (task 2 can never start), task 1 is killed
    // at 3. Nothing can happen after 3: the run ends there and task 2 is
    // cancelled at 3, even with age-boost ticking, not at 100 (the killed
    // run's hidden end) nor after timers ticked until then.
    for control in [None, Some("age-boost[after=7]")] {
        let arrivals = vec![arrive(task(1), 0, 100), arrive(task(2).slots(2), 1, 10)];
        let outside = vec![
            (2, Event::SlotLeave { slot: SlotId(1) }),
            (3, Event::Kill { task: TaskId(1) }),
        ];
        let (at100, end, rec) = probe(&Platform::pool(2), fifo(), control, arrivals, outside, s(100));
        assert!(at100.is_empty(), "{control:?}: {at100:?}");
        assert_eq!(end, s(3), "{control:?}");
        assert_eq!(rec.end(2).end, s(3), "{control:?}");
    }
}

/// Records, for every notice and pick, everything a policy can read about
/// the tasks involved (ids aside: they are opaque handles).
#[derive(Clone, Default)]
struct Witness {
    log: Log,
    waiting: Vec<TaskId>,
}

fn observable(view: &View, t: TaskId) -> String {
    let Some(v) = view.task(t) else {
        return "gone".into();
    };
    let t = v.spec();
    let spec = format!(
        "user {:?} org {:?} slots {} priority {} estimate {:?} workflow {:?} optional {} target {:?}",
        t.user(),
        t.org(),
        t.slots(),
        t.priority(),
        t.estimate(),
        t.workflow(),
        t.optional(),
        t.target()
    );
    format!(
        "{spec} submit {:?} start {:?} elapsed {:?} attempts {} machine {}",
        v.submit(),
        v.start(),
        v.elapsed(),
        v.attempts(),
        v.machine()
    )
}

impl Order for Witness {
    fn notify(&mut self, view: &View, n: &Notice) {
        let what = match *n {
            Notice::Queued { task, .. } => {
                self.waiting.push(task);
                format!("queued {}", observable(view, task))
            }
            Notice::Started { task, .. } => {
                self.waiting.retain(|&t| t != task);
                format!("started {}", observable(view, task))
            }
            Notice::Left { task, outcome, .. } => format!("left {outcome} {}", observable(view, task)),
            _ => format!("{n:?}"),
        };
        self.log.lock().unwrap().push((view.now(), what));
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let m = view.machine(machine);
        let what = format!("pick free {} waiting {}", m.free(), m.waiting());
        self.log.lock().unwrap().push((view.now(), what));
        (m.free() > 0).then(|| self.waiting.first().map(|&t| Pick::Start(t)))?
    }
}

fn job(id: u64, procs: u32, runtime: i64) -> Job {
    Job {
        id,
        submit: 10,
        runtime,
        procs,
        requested_time: Some(3600),
        user: 7,
        group: -1,
        status: 1,
        org: 0,
        part: 0,
    }
}

/// What the Order saw before the first task ended, for jobs split into
/// sequential tasks on `slots` slots; and the job numbers outputs got.
fn witness(jobs: Vec<Job>, slots: u32) -> (Vec<(Time, String)>, Vec<u64>) {
    let w = Witness::default();
    let core = Scheduler::new(
        &Platform::pool(slots),
        1,
        build_allocate(&"single-pool".parse().unwrap()).unwrap(),
        OrderPolicy::Blind(Box::new(w.clone())),
        None,
    );
    let tasks = arrivals(jobs.into_iter().map(Ok).split_parallel());
    let mut rec = Recorder::default();
    Simulation::new(core).run(tasks, &mut rec).unwrap();
    let first_end = rec.ends.iter().map(|(r, _)| r.end).min().unwrap();
    let log = w.log.lock().unwrap();
    let seen = log.iter().filter(|(t, _)| *t < first_end).cloned().collect();
    (seen, rec.job_numbers())
}

#[test]
fn split_siblings_look_like_independent_jobs() {
    // One 3-processor job split into 3 tasks, against three 1-processor
    // jobs from the same user at the same instant with the same estimate
    // and different runtimes. Until the first task ends, the policy must
    // see exactly the same thing in both cases.
    let (split, split_jobs) = witness(vec![job(40, 3, 100)], 3);
    let (independent, independent_jobs) = witness(vec![job(40, 1, 50), job(41, 1, 100), job(42, 1, 200)], 3);
    assert!(!split.is_empty());
    assert_eq!(split, independent);
    // Outputs still say which job each task came from.
    assert_eq!(split_jobs, vec![40, 40, 40]);
    assert_eq!(independent_jobs, vec![40, 41, 42]);
}
