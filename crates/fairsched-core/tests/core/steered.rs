//! A steered core ([`Scheduler::steered`]): another resource manager
//! starts the tasks ([`Event::Start`]); the core ranks the waiting ones
//! ([`Scheduler::rank`]) in the order its `Order` policy would start them.

use fairsched_core::registry::PolicySpec;
use fairsched_core::{Action, Event, MachineId, Platform, Registry, Scheduler, TaskId, TaskSpec, Time};

fn core(per_org: &[u32], order: &str) -> Scheduler {
    let r = Registry::builtin();
    let spec = |s: &str| s.parse::<PolicySpec>().unwrap();
    Scheduler::new(
        &Platform::owned_pool(per_org),
        0,
        r.build_allocate(&spec("single-pool")).unwrap(),
        r.build_order(&spec(order)).unwrap(),
        None,
    )
}

fn starts(out: &[Action]) -> Vec<TaskId> {
    out.iter()
        .filter_map(|a| match a {
            Action::Start { task, .. } => Some(*task),
            _ => None,
        })
        .collect()
}

/// Two organizations' tasks: org 0 floods, org 1 arrives later.
fn workload() -> Vec<(i64, Vec<Event>)> {
    let mut steps = Vec::new();
    let flood: Vec<Event> = (1..=12)
        .map(|i| Event::Submit(TaskSpec::new(i, 1, 0).slots(1 + (i as u32 % 2))))
        .collect();
    steps.push((0, flood));
    let trickle: Vec<Event> = (13..=16).map(|i| Event::Submit(TaskSpec::new(i, 2, 1))).collect();
    steps.push((30, trickle));
    steps
}

#[test]
fn a_steered_core_starts_nothing_itself_and_mirrors_the_starts_it_is_told() {
    let mut c = core(&[2, 2], "fair-share").steered();
    let mut out = Vec::new();
    for (at, events) in workload() {
        c.step(Time::from_secs(at), events, None, &mut out).unwrap();
    }
    assert!(starts(&out).is_empty(), "{out:?}");
    // Task 1 needs 2 slots: it starts on 2 of the 4.
    c.step(
        Time::from_secs(31),
        [Event::Start { task: TaskId(1) }],
        None,
        &mut out,
    )
    .unwrap();
    assert_eq!(starts(&out), vec![TaskId(1)]);
    assert_eq!(c.view().machine(MachineId(0)).free(), 2);
    // Three more slots are not free: ignored, counted.
    let ignored = c.stats().ignored_events;
    c.step(
        Time::from_secs(32),
        [Event::Start { task: TaskId(3) }, Event::Start { task: TaskId(5) }],
        None,
        &mut out,
    )
    .unwrap();
    assert_eq!(starts(&out), vec![TaskId(1), TaskId(3)]);
    assert_eq!(c.stats().ignored_events, ignored + 1);
    // A running task is not started twice.
    c.step(
        Time::from_secs(33),
        [Event::Start { task: TaskId(1) }],
        None,
        &mut out,
    )
    .unwrap();
    assert_eq!(c.stats().ignored_events, ignored + 2);
}

/// The ranking is the order dispatch would start the waiting tasks in,
/// had their slots all freed at once: checked against an unsteered twin
/// that gets the slots.
#[test]
fn rank_is_the_order_dispatch_would_start_them_in() {
    for order in [
        "fair-share",
        "round-robin",
        "direct-contr",
        "fcfs",
        "curr-fair-share",
        "ut-fair-share",
    ] {
        let mut steered = core(&[2, 2], order).steered();
        let mut out = Vec::new();
        // Two tasks run (as Slurm started them) and one ends.
        let mut history = workload();
        history.insert(
            1,
            (
                5,
                vec![Event::Start { task: TaskId(1) }, Event::Start { task: TaskId(3) }],
            ),
        );
        history.insert(2, (20, vec![Event::Complete { task: TaskId(1) }]));
        for (at, events) in &history {
            steered
                .step(Time::from_secs(*at), events.clone(), None, &mut out)
                .unwrap();
        }
        let ranked = steered.rank(MachineId(0), Time::from_secs(31)).unwrap();
        assert_eq!(ranked.len(), 16 - 2, "{order}: {ranked:?}");
        let mut sorted = ranked.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ranked.len(), "{order}: a task ranked twice");
        // Ranking changes nothing.
        assert_eq!(
            steered.rank(MachineId(0), Time::from_secs(31)).unwrap(),
            ranked,
            "{order}"
        );
        assert_eq!(starts(&out), vec![TaskId(1), TaskId(3)], "{order}");
        // The twin: the same state in a core that dispatches, then
        // every waiting task's slots join at once.
        let mut twin = core(&[2, 2], order);
        twin.restore(&steered.snapshot().unwrap()).unwrap();
        let need = twin.view().machine(MachineId(0)).waiting_slots();
        let owners = [0u32, 0, 1, 1];
        let joins: Vec<Event> = (0..need)
            .map(|k| Event::SlotJoin {
                machine: MachineId(0),
                owner: fairsched_core::OrgId(owners[k as usize % 4]),
            })
            .collect();
        let mut twin_out = Vec::new();
        twin.step(Time::from_secs(31), joins, None, &mut twin_out)
            .unwrap();
        assert_eq!(starts(&twin_out), ranked, "{order}");
    }
}

/// Between two steps a steered core's clock stays at the last one (a
/// step without events moves nothing); `gauges_at` reads its gauges as
/// of a later instant, leaving the core as it was.
#[test]
fn gauges_read_at_a_later_instant_count_the_running_tasks_usage() {
    let mut c = core(&[2, 2], "fair-share").steered();
    let mut out = Vec::new();
    c.step(
        Time::from_secs(0),
        [Event::Submit(TaskSpec::new(1, 1, 0))],
        None,
        &mut out,
    )
    .unwrap();
    c.step(
        Time::from_secs(10),
        [Event::Start { task: TaskId(1) }],
        None,
        &mut out,
    )
    .unwrap();
    let usage = |gauges: Vec<fairsched_core::point::Gauge>| -> f64 {
        gauges
            .iter()
            .find(|g| g.name == "org_usage_slot_seconds" && g.key == Some(("org", 0)))
            .map_or(-1.0, |g| g.value)
    };
    assert_eq!(usage(c.gauges()), 0.0);
    assert_eq!(usage(c.gauges_at(Time::from_secs(25))), 15.0);
    assert_eq!(
        usage(c.gauges_at(Time::from_secs(5))),
        0.0,
        "never before the core's clock"
    );
    assert_eq!(usage(c.gauges()), 0.0, "the core is left as it was");
}
