//! A policy written outside fairsched, in the live broker: built from the
//! broker's registry, snapshotted with its own state and restored from it
//! on reopen (deciding as an uninterrupted broker), and refused by name
//! when it reads what a live service does not have.

use fairsched_broker::{Config, Live, LiveError};
use fairsched_core::registry::{Ctor, Registry};
use fairsched_core::{
    Action, ClairvoyantOrder, Event, MachineId, Notice, Order, OrgId, Pick, RuntimeOracle, SimRng, TaskId,
    TaskSpec, Time, View, snapshot_policy,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Starts the waiting task with the highest id (a last-come-first-served
/// toy), with snapshots of its own.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Newest {
    waiting: BTreeSet<TaskId>,
}

impl Order for Newest {
    snapshot_policy!("newest-first");
    fn notify(&mut self, _: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, .. } | Notice::Requeued { task, .. } => {
                self.waiting.insert(task);
            }
            Notice::Started { task, .. } | Notice::Left { task, .. } => {
                self.waiting.remove(&task);
            }
            _ => {}
        }
    }
    fn pick(&mut self, _: &View, _: MachineId, _: &mut SimRng) -> Option<Pick> {
        self.waiting.last().map(|&t| Pick::Start(t))
    }
}

/// A clairvoyant toy (reads true runtimes).
#[derive(Clone, Default)]
struct Peek;
impl ClairvoyantOrder for Peek {
    fn notify(&mut self, _: &View, _: &Notice) {}
    fn pick(&mut self, _: &View, _: MachineId, _: &dyn RuntimeOracle, _: &mut SimRng) -> Option<Pick> {
        None
    }
}

fn registry() -> Registry {
    Registry::builtin()
        .with_order(
            "newest-first",
            "the newest waiting task first",
            &[],
            Ctor::order(|_| Ok(Box::new(Newest::default()))),
        )
        .unwrap()
        .with_order(
            "peek",
            "reads true runtimes",
            &[],
            Ctor::clairvoyant_order(|_| Ok(Box::new(Peek))),
        )
        .unwrap()
        .with_order(
            "by-estimate",
            "reads the users' estimates",
            &[],
            Ctor::order_with_estimates(|_| Ok(Box::new(Newest::default()))),
        )
        .unwrap()
}

fn config(order: &str) -> Config {
    Config {
        order: order.into(),
        seed: 3,
        ..Config::default()
    }
}

/// Two slots, then waves of submissions, each step completing what the
/// core started two steps before; every action.
fn drive(live: &mut Live, from: usize, to: usize, started: &mut Vec<TaskId>) -> Vec<Action> {
    let mut all = Vec::new();
    for k in from..to {
        let now = Time::from_secs(k as i64 * 10);
        let mut events = if k == 0 {
            vec![
                Event::SlotJoin {
                    machine: MachineId(0),
                    owner: OrgId(0),
                };
                2
            ]
        } else {
            Vec::new()
        };
        events.extend((0..3).map(|i| Event::Submit(TaskSpec::new(k as u64 * 3 + i + 1, 1, 0))));
        if started.len() >= 2 {
            events.push(Event::Complete {
                task: started.remove(0),
            });
        }
        let out = live.step(now, events).unwrap();
        for a in &out {
            if let Action::Start { task, .. } = a {
                started.push(*task);
            }
        }
        all.extend(out);
    }
    all
}

#[test]
fn an_out_of_tree_policy_decides_live_and_restores_from_its_snapshot() {
    let r = registry();
    let dir = tempfile::tempdir().unwrap();
    // Uninterrupted.
    let mut whole = Live::create(&dir.path().join("a.db"), &config("newest-first"), &r).unwrap();
    let mut started = Vec::new();
    let all = drive(&mut whole, 0, 12, &mut started);
    // Newest first: the first start is the last task submitted at 0.
    assert!(
        matches!(
            all.iter().find(|a| matches!(a, Action::Start { .. })),
            Some(Action::Start { task: TaskId(3), .. })
        ),
        "{all:?}"
    );
    // Interrupted: snapshots every 4 steps, reopened halfway.
    let path = dir.path().join("b.db");
    let mut first = Live::create(&path, &config("newest-first"), &r).unwrap();
    first.set_snapshot_every(4);
    let mut started2 = Vec::new();
    let mut got = drive(&mut first, 0, 6, &mut started2);
    drop(first);
    let mut again = Live::open(&path, &r).unwrap();
    assert!(again.restored_from().is_some(), "restored from a snapshot");
    got.extend(drive(&mut again, 6, 12, &mut started2));
    assert_eq!(got, all, "the restored broker decides as the uninterrupted one");
    // Without the policy in its registry, a database that needs it is
    // refused, by name.
    let e = Live::open(&path, &Registry::builtin()).err().unwrap().to_string();
    assert!(e.contains("newest-first"), "{e}");
}

#[test]
fn a_policy_that_reads_more_than_the_views_is_refused_by_name() {
    let r = registry();
    let dir = tempfile::tempdir().unwrap();
    for (order, says) in [
        ("peek", "`peek` is clairvoyant"),
        ("by-estimate", "`by-estimate` reads the users' runtime estimates"),
    ] {
        let e = Live::create(&dir.path().join(format!("{order}.db")), &config(order), &r)
            .err()
            .unwrap();
        assert!(matches!(e, LiveError::Config(_)), "{e}");
        assert!(e.to_string().contains(says), "{order}: {e}");
    }
}
