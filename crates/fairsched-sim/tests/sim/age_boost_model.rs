//! `age-boost` against a reference model: the straightforward version of
//! its rule (one engine timer per waiting task per crossing, each checked
//! against the task's due instant when it fires), which is what the policy
//! did before it kept its crossings in one calendar behind a single timer.
//! On random workloads, orders (`priority`; `Diet`, which preempts, so tasks
//! are requeued), outside priority changes, cancels and kills, both must
//! make exactly the same decisions: the same starts, stops, ends and
//! priority changes at the same instants, in the same order. Only the
//! timers differ, and the policy never asks for more of them.

#[allow(dead_code)]
use crate::common::{build_allocate, build_control, build_order};
use crate::fixtures::orders::Diet;
use fairsched_core::{
    Action, Control, ControlOut, ControlPolicy, Event, Notice, Observer, OrderPolicy, Platform, Scheduler,
    TaskId, TaskSpec, Time, View,
};
use fairsched_sim::{Arrival, Simulation};
use proptest::prelude::*;
use std::collections::HashMap;

/// The reference: one timer per waiting task per `after`.
#[derive(Clone)]
struct PerTaskTimers {
    after: Time,
    by: i64,
    due: HashMap<TaskId, Time>,
}

impl Control for PerTaskTimers {
    fn react(&mut self, view: &View, notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        let now = view.now();
        for n in notices {
            match *n {
                Notice::Queued { task, .. } | Notice::Requeued { task, .. } => {
                    let at = now + self.after;
                    self.due.insert(task, at);
                    out.timers.push((at, task.0));
                }
                Notice::Started { task, .. } | Notice::Left { task, .. } => {
                    self.due.remove(&task);
                }
                _ => {}
            }
        }
        for &token in timers {
            let task = TaskId(token);
            if self.due.get(&task) != Some(&now) {
                continue;
            }
            match view.task(task) {
                Some(t) if !t.is_running() => {
                    out.priorities.push((task, t.priority().saturating_add(self.by)));
                    let at = now + self.after;
                    self.due.insert(task, at);
                    out.timers.push((at, token));
                }
                _ => {
                    self.due.remove(&task);
                }
            }
        }
    }
}

/// Every action but timers, with its instant; and the number of timers.
#[derive(Default)]
struct Record {
    decisions: Vec<(Time, Action)>,
    timers: usize,
}

impl Observer for Record {
    fn on_step(&mut self, now: Time, actions: &[Action], _view: &View) {
        for a in actions {
            match a {
                Action::Timer { .. } => self.timers += 1,
                a => self.decisions.push((now, a.clone())),
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    slots: u32,
    diet: bool,
    after: i64,
    by: i64,
    /// (submit, runtime, priority, optional), in submit order, ids 1..=n.
    tasks: Vec<(i64, i64, i64, bool)>,
    /// (at, what, task index, priority): 0 = set priority, 1 = cancel, 2 = kill.
    outside: Vec<(i64, u8, usize, i64)>,
}

fn case() -> impl Strategy<Value = Case> {
    let task = (0i64..15, 1i64..50, 0i64..4, any::<bool>());
    (
        1u32..=3,
        any::<bool>(),
        1i64..=20,
        1i64..=3,
        proptest::collection::vec(task, 1..30),
        proptest::collection::vec((0i64..400, 0u8..3, 0usize..30, -2i64..6), 0..6),
    )
        .prop_map(|(slots, diet, after, by, raw, mut outside)| {
            let mut submit = 0;
            let tasks = raw
                .into_iter()
                .map(|(gap, run, prio, optional)| {
                    submit += gap;
                    (submit, run, prio, optional)
                })
                .collect();
            outside.sort_by_key(|o| o.0);
            Case {
                slots,
                diet,
                after,
                by,
                tasks,
                outside,
            }
        })
}

fn run(c: &Case, control: ControlPolicy) -> Record {
    let platform = Platform::pool(c.slots);
    let order = if c.diet {
        OrderPolicy::Blind(Box::<Diet>::default())
    } else {
        build_order(&"priority".parse().unwrap()).unwrap()
    };
    let allocate = build_allocate(&"single-pool".parse().unwrap()).unwrap();
    let mut sim = Simulation::new(Scheduler::new(&platform, 3, allocate, order, Some(control)));
    for &(at, what, i, priority) in &c.outside {
        let task = TaskId((i % c.tasks.len()) as u64 + 1);
        let ev = match what {
            0 => Event::SetPriority { task, priority },
            1 => Event::Cancel { task },
            _ => Event::Kill { task },
        };
        sim.schedule(Time::from_secs(at), ev);
    }
    let arrivals = c
        .tasks
        .iter()
        .enumerate()
        .map(|(i, &(submit, run, prio, optional))| {
            let mut spec = TaskSpec::new(i as u64 + 1, 0, 0).priority(prio);
            if optional && c.diet {
                spec = spec.optional();
            }
            Ok(Arrival::new(spec, Time::from_secs(submit), Time::from_secs(run)))
        });
    let mut rec = Record::default();
    sim.run(arrivals, &mut rec).expect("the run completes");
    rec
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn age_boost_decides_as_the_per_task_timer_model(c in case()) {
        let spec = format!("age-boost[after={},by={}]", c.after, c.by);
        let policy = run(&c, build_control(&spec.parse().unwrap()).unwrap());
        let model = run(&c, ControlPolicy::Blind(Box::new(PerTaskTimers {
            after: Time::from_secs(c.after),
            by: c.by,
            due: HashMap::new(),
        })));
        prop_assert_eq!(&policy.decisions, &model.decisions);
        prop_assert!(policy.timers <= model.timers, "{} timers vs {}", policy.timers, model.timers);
    }
}

/// A case where tasks are requeued (Diet stops optional tasks for a
/// mandatory one) and boosted both before and after: the model and the
/// policy agree on it, and it does exercise requeues and boosts.
#[test]
fn requeued_tasks_are_boosted_as_the_model_does() {
    let c = Case {
        slots: 2,
        diet: true,
        after: 5,
        by: 1,
        tasks: vec![
            (0, 30, 0, true),
            (0, 30, 0, true),
            (3, 20, 0, false),
            (4, 20, 0, false),
            (6, 10, 0, true),
        ],
        outside: vec![(12, 0, 4, 9)],
    };
    let policy = run(&c, build_control(&"age-boost[after=5]".parse().unwrap()).unwrap());
    let model = run(
        &c,
        ControlPolicy::Blind(Box::new(PerTaskTimers {
            after: Time::from_secs(5),
            by: 1,
            due: HashMap::new(),
        })),
    );
    assert_eq!(policy.decisions, model.decisions);
    let requeues = policy
        .decisions
        .iter()
        .filter(|(_, a)| matches!(a, Action::Stop { requeued: true, .. }))
        .count();
    let boosts = policy
        .decisions
        .iter()
        .filter(|(_, a)| matches!(a, Action::Priority { .. }))
        .count();
    assert!(requeues > 0 && boosts > 0, "{requeues} requeues, {boosts} boosts");
    assert!(policy.timers < model.timers);
}
