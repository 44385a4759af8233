//! `workflow-fairness` (Control) and `workflow-fcfs` (Order) end to end on
//! the simulator. An integration test rather than unit tests in
//! `src/policy/workflow_fairness/`: the harness links its own build of the
//! core, whose `TaskSpec`/`WorkflowRef` a unit test cannot name, and these
//! runs need workflow tasks with phases (`Arrival::with_phases`).

use fairsched_core::{Action, Event, TaskId, TaskSpec, Time, WorkflowId, WorkflowRef};
use fairsched_sim::harness::{Harness, Run};
use fairsched_sim::{Arrival, Simulation};

fn wf_task(id: u64, wf: u32, activity: u32) -> TaskSpec {
    let mut s = TaskSpec::new(id, i64::from(wf), 0);
    s.workflow = Some(WorkflowRef {
        workflow: WorkflowId(wf),
        activity,
    });
    s
}

/// Runs arrivals (with phases for workflow tasks) on `h`'s scheduler
/// (its policies only: the harness keeps its own arrivals and events).
fn run(h: &Harness, arrivals: Vec<Arrival>) -> Run {
    run_with(h, arrivals, &[])
}

/// [`run`] with outside events at whole seconds.
fn run_with(h: &Harness, arrivals: Vec<Arrival>, events: &[(i64, Event)]) -> Run {
    let mut sim = Simulation::new(h.scheduler());
    for (at, ev) in events {
        sim.schedule(Time::from_secs(*at), ev.clone());
    }
    let mut r = Run::default();
    sim.run(arrivals.into_iter().map(Ok), &mut r).unwrap();
    r
}

/// Two slots. Workflow 1: 8 tasks at t=0; background task 100 at t=1;
/// workflow 2: 6 tasks at t=5; background task 101 at t=6. Workflow tasks
/// run phases of 1, 1, 8, 1 s (11 s), background tasks 11 s.
fn two_workflows() -> Vec<Arrival> {
    let ph = [1, 1, 8, 1].map(Time::from_secs);
    let mut v = Vec::new();
    for id in 1..=8 {
        v.push(Arrival::with_phases(wf_task(id, 1, 0), Time::ZERO, ph));
    }
    v.push(Arrival::new(
        TaskSpec::new(100, 9, 0),
        Time::from_secs(1),
        Time::from_secs(11),
    ));
    for id in 11..=16 {
        v.push(Arrival::with_phases(wf_task(id, 2, 0), Time::from_secs(5), ph));
    }
    v.push(Arrival::new(
        TaskSpec::new(101, 9, 0),
        Time::from_secs(6),
        Time::from_secs(11),
    ));
    v
}

/// (second, task, new priority) of every Control priority change.
fn raised(r: &Run) -> Vec<(i64, u64, i64)> {
    r.actions
        .iter()
        .filter_map(|(at, a)| match a {
            Action::Priority { task, priority } => Some((at.whole_secs(), task.0, *priority)),
            _ => None,
        })
        .collect()
}

fn timers(r: &Run) -> Vec<Time> {
    r.actions
        .iter()
        .filter_map(|(_, a)| match a {
            Action::Timer { at, .. } => Some(*at),
            _ => None,
        })
        .collect()
}

#[test]
fn the_later_workflow_gets_its_tasks_raised_background_untouched() {
    let h = Harness::pool(2, "priority");
    let base = run(&h, two_workflows());
    // FIFO: workflow 1, the background task, then workflow 2.
    assert_eq!(
        base.order(),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 100, 11, 12, 13, 14, 15, 16, 101]
    );
    assert_eq!(base.priority_actions(), 0);

    let fair = run(&h.clone().control("workflow-fairness"), two_workflows());
    let ch = raised(&fair);
    // At t=5: workflow 1 has Q=6, R=2 and no completion (T̂ = P = 1), so
    // W_1 = 6/8 = 0.75; workflow 2 has W_2 = 1: η_u = 0.25 > 0.2, and
    // Δ_21 = 6 − ⌊(0.2 + 0.75)·6⌋ = 6 − 5 = 1: its oldest task, to 2.
    assert_eq!(ch[0], (5, 11, 2), "{ch:?}");
    assert!(ch.iter().all(|&(_, t, _)| (11..=16).contains(&t)), "{ch:?}");
    // Workflow 2 starts before workflow 1 is done, and before the
    // background task submitted before it; background tasks are never
    // raised.
    let order = fair.order();
    let pos = |t: u64| order.iter().position(|&x| x == t).unwrap();
    assert!(pos(11) < pos(8), "{order:?}");
    assert!(pos(11) < pos(100), "{order:?}");
    for bg in [100, 101] {
        assert!(ch.iter().all(|&(_, t, _)| t != bg));
        assert_eq!(fair.end(bg).spec.priority, 1);
    }
    assert_eq!(fair.priority_actions(), ch.len());
    // No timer in event mode.
    assert!(fair.timers().is_empty());
}

#[test]
fn own_changes_are_booked_into_max_priority() {
    // The core never tells the Control of its own changes: without its own
    // bookkeeping every raise would go to 2 (every task starts at 1 and
    // nobody else changes one). With τ = 0 it acts at many instants.
    let h = Harness::pool(2, "priority").control("workflow-fairness[tau=0]");
    let ch = raised(&run(&h, two_workflows()));
    assert!(ch.iter().any(|&(_, _, p)| p > 2), "{ch:?}");
}

#[test]
fn reraise_no_skips_tasks_the_controller_raised_before() {
    // One slot busy for 11 s; workflows of 4 tasks arrive at t = 0, 1, 2,
    // 3 and 4, each arrival a reaction while the tasks raised before still
    // wait. As printed (reraise=yes), a raised task is at maxPriority at
    // the next reaction, so "priority ≤ maxPriority" takes it again; with
    // reraise=no, never.
    let ph = [1, 1, 8, 1].map(Time::from_secs);
    let arrivals = || {
        let mut v = Vec::new();
        for w in 0..5u32 {
            for k in 0..4u64 {
                let id = u64::from(w) * 10 + k + 1;
                v.push(Arrival::with_phases(
                    wf_task(id, w + 1, 0),
                    Time::from_secs(i64::from(w)),
                    ph,
                ));
            }
        }
        v
    };
    let twice = |spec: &str| {
        let ch = raised(&run(&Harness::pool(1, "priority").control(spec), arrivals()));
        let mut tasks: Vec<u64> = ch.iter().map(|&(_, t, _)| t).collect();
        let n = tasks.len();
        tasks.sort_unstable();
        tasks.dedup();
        (n - tasks.len(), tasks.len())
    };
    let (again, once) = twice("workflow-fairness[tau=0]");
    assert!(
        again > 0 && once > 0,
        "as printed: {again} raised again of {once}"
    );
    let (again, once) = twice("workflow-fairness[tau=0,reraise=no]");
    assert_eq!(again, 0);
    assert!(once > 0);
}

#[test]
fn outside_priorities_count_in_max_priority() {
    // Task 3 of workflow 1 (waiting) is set to 9 from outside at t=2: the
    // raised task of workflow 2 goes to 10.
    let h = Harness::pool(2, "priority").control("workflow-fairness");
    let set = Event::SetPriority {
        task: TaskId(3),
        priority: 9,
    };
    let r = run_with(&h, two_workflows(), &[(2, set)]);
    assert_eq!(raised(&r)[0], (5, 11, 10));
}

#[test]
fn timer_mode_acts_only_at_timer_instants() {
    let h = Harness::pool(2, "priority").control("workflow-fairness[every=3]");
    let r = run(&h, two_workflows());
    let timers = timers(&r);
    // Armed when workflow 1 arrives (t=0), then every 3 s while a workflow
    // is active.
    assert_eq!(&timers[..3], &[3, 6, 9].map(Time::from_secs));
    let ch = raised(&r);
    assert!(!ch.is_empty());
    for (at, _, _) in &ch {
        assert!(
            timers.contains(&Time::from_secs(*at)),
            "change at {at}, timers {timers:?}"
        );
    }
    // The first look after workflow 2 arrived (t=5) is at t=6.
    assert_eq!(ch[0].0, 6);
    // Not re-armed once no workflow task is left.
    let last_end = r.ended.iter().map(|e| e.end).max().unwrap();
    assert!(timers.iter().all(|&t| t <= last_end + Time::from_secs(3)));
}

#[test]
fn every_60_acts_only_at_60_s_instants() {
    let h = Harness::pool(2, "priority").control("workflow-fairness[every=60]");
    let ph = [5, 5, 50, 5].map(Time::from_secs);
    let mut v = Vec::new();
    for id in 1..=10 {
        v.push(Arrival::with_phases(wf_task(id, 1, 0), Time::ZERO, ph));
    }
    for id in 11..=16 {
        v.push(Arrival::with_phases(wf_task(id, 2, 0), Time::from_secs(30), ph));
    }
    let r = run(&h, v);
    let ch = raised(&r);
    assert!(!ch.is_empty());
    assert!(ch.iter().all(|&(at, _, _)| at % 60 == 0 && at > 0), "{ch:?}");
    assert!(r.timers().iter().all(|&t| t % 60 == 0));
}

#[test]
fn a_lone_workflow_is_never_raised() {
    // η_u = 0 with one workflow (background load does not count).
    let h = Harness::pool(1, "priority").control("workflow-fairness[tau=0]");
    let ph = [1, 1, 3, 1].map(Time::from_secs);
    let mut v: Vec<Arrival> = (1..=5)
        .map(|id| Arrival::with_phases(wf_task(id, 1, 0), Time::ZERO, ph))
        .collect();
    v.push(Arrival::new(
        TaskSpec::new(9, 9, 0),
        Time::from_secs(1),
        Time::from_secs(4),
    ));
    assert_eq!(run(&h, v).priority_actions(), 0);
}

fn wf(id: u64, w: u32) -> TaskSpec {
    wf_task(id, w, 0)
}

#[test]
fn workflow_fcfs_runs_an_earlier_workflow_first_at_equal_priority() {
    // One slot busy until t=100 (background task 1). Workflow 7 is
    // submitted first (t=1), then workflow 3 (t=2), a background task
    // (t=3), workflow 7 again (t=4): ids do not give the order.
    let h = |order: &str| {
        Harness::pool(1, order)
            .task(1, 0, 100)
            .spec(1, 10, wf(2, 7))
            .spec(2, 10, wf(3, 3))
            .task(4, 3, 10)
            .spec(4, 10, wf(5, 7))
    };
    assert_eq!(h("priority").run().order(), vec![1, 2, 3, 4, 5]);
    assert_eq!(h("workflow-fcfs").run().order(), vec![1, 2, 5, 3, 4]);
    // Priority still comes first.
    let r = h("workflow-fcfs").spec(5, 10, wf(6, 3).priority(2)).run();
    assert_eq!(r.order(), vec![1, 6, 2, 5, 3, 4]);
    // An outside change reorders a waiting task at once.
    let r = h("workflow-fcfs").set_priority(50, 4, 3).run();
    assert_eq!(r.order(), vec![1, 4, 2, 5, 3]);
}

#[test]
fn workflow_fcfs_ranks_background_tasks_by_their_own_submission() {
    // A background task submitted before a workflow goes before all of its
    // tasks, even the later ones; one submitted after, after them all.
    let r = Harness::pool(1, "workflow-fcfs")
        .task(1, 0, 100)
        .task(2, 1, 10)
        .spec(2, 10, wf(3, 1))
        .task(4, 3, 10)
        .spec(4, 10, wf(5, 1))
        .run();
    assert_eq!(r.order(), vec![1, 2, 3, 5, 4]);
}

#[test]
fn workflow_fcfs_under_the_control() {
    // The controller on top of workflow-fcfs still raises the later
    // workflow, and the FCFS baseline alone keeps workflow 1 first.
    let base = run(&Harness::pool(2, "workflow-fcfs"), two_workflows());
    assert_eq!(
        base.order(),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 100, 11, 12, 13, 14, 15, 16, 101]
    );
    let fair = run(
        &Harness::pool(2, "workflow-fcfs").control("workflow-fairness"),
        two_workflows(),
    );
    assert_eq!(raised(&fair)[0], (5, 11, 2));
}
