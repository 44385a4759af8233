//! The durable log: a reopened database decides exactly as an
//! uninterrupted one, refused steps are never logged, a failed commit
//! leaves the core as it was, and bad configurations and files are named.

use fairsched_broker::{Config, Live, LiveError, Store, StoreError};
use fairsched_core::{Action, Event, MachineId, OrgId, TaskId, TaskSpec, Time};

fn s(x: i64) -> Time {
    Time::from_millis(x * 1000)
}

fn join(n: u32, org: u32) -> Vec<Event> {
    (0..n)
        .map(|_| Event::SlotJoin {
            machine: MachineId(0),
            owner: OrgId(org),
        })
        .collect()
}

fn submit(id: u64, user: i64, org: u32) -> Event {
    Event::Submit(TaskSpec::new(id, user, org))
}

/// A script of steps: slots join, tasks from three users in steps of one
/// and of several submissions (a step's boundaries matter), completions
/// of whatever the core started, a slot leaving.
fn script() -> Vec<(Time, Vec<Event>)> {
    let mut steps = vec![(s(0), join(3, 0)), (s(0), join(2, 1))];
    let mut id = 0;
    for k in 0..40u64 {
        let n = 1 + (k % 3);
        let events: Vec<Event> = (0..n)
            .map(|_| {
                id += 1;
                submit(id, (id % 3) as i64, (id % 2) as u32)
            })
            .collect();
        steps.push((s(1 + k as i64 * 7), events));
    }
    steps
}

/// Runs `steps`, completing the tasks each step starts two steps later
/// (so completions depend on the decisions), returning every action.
fn drive(live: &mut Live, steps: &[(Time, Vec<Event>)], started: &mut Vec<TaskId>) -> Vec<Action> {
    let mut all = Vec::new();
    for (now, events) in steps {
        let mut events = events.clone();
        if started.len() >= 2 {
            events.push(Event::Complete {
                task: started.remove(0),
            });
        }
        let out = live.step(*now, events).unwrap();
        for a in &out {
            if let Action::Start { task, .. } = a {
                started.push(*task);
            }
        }
        all.extend(out);
    }
    all
}

fn config(order: &str) -> Config {
    Config {
        order: order.into(),
        seed: 7,
        ..Config::default()
    }
}

#[test]
fn a_reopened_log_decides_exactly_as_an_uninterrupted_run() {
    for order in ["fifo", "fair-share", "round-robin", "priority"] {
        let dir = tempfile::tempdir().unwrap();
        let steps = script();
        let cut = steps.len() / 2;

        let a_path = dir.path().join("a.db");
        let mut a = Live::create(&a_path, &config(order), &fairsched_core::Registry::builtin()).unwrap();
        let mut a_started = Vec::new();
        let a_all = drive(&mut a, &steps, &mut a_started);
        assert!(
            a_all.iter().any(|x| matches!(x, Action::Ended(_))),
            "{order}: tasks ended"
        );

        let b_path = dir.path().join("b.db");
        let mut b = Live::create(&b_path, &config(order), &fairsched_core::Registry::builtin()).unwrap();
        let mut b_started = Vec::new();
        let mut b_all = drive(&mut b, &steps[..cut], &mut b_started);
        drop(b);
        let mut b = Live::open(&b_path, &fairsched_core::Registry::builtin()).unwrap();
        // The replay gave the actions of the first half again.
        assert_eq!(b.replayed_actions(), &b_all[..], "{order}");
        assert_eq!(b.steps(), cut as u64);
        b_all.extend(drive(&mut b, &steps[cut..], &mut b_started));
        assert_eq!(a_all, b_all, "{order}");
        assert_eq!(a.core().live_task_ids(), b.core().live_task_ids());
        assert_eq!(a.core().stats(), b.core().stats());
        assert_eq!(a.now(), b.now());
    }
}

#[test]
fn a_reused_task_id_is_refused_and_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &Config::default(), &fairsched_core::Registry::builtin()).unwrap();
    live.step(s(0), join(1, 0)).unwrap();
    let out = live.step(s(1), vec![submit(5, 1, 0)]).unwrap();
    assert!(out.iter().any(|a| matches!(a, Action::Start { .. })));
    live.step(s(2), vec![Event::Complete { task: TaskId(5) }])
        .unwrap();
    // Task 5 ended; the core alone would take its id as new.
    let before = live.steps();
    for id in [5, 3] {
        match live.step(s(3), vec![submit(id, 1, 0)]) {
            Err(LiveError::Refused(m)) => assert!(m.contains("already used"), "{m}"),
            other => panic!("{id}: {other:?}"),
        }
    }
    assert_eq!(live.steps(), before, "nothing logged");
    assert_eq!(live.fresh_id(), TaskId(6));
    // A group with a refused step in the middle logs the others.
    let r = live.commit(vec![
        (s(4), vec![submit(6, 1, 0)]),
        (s(4), vec![submit(6, 1, 0)]),
        (s(4), vec![submit(7, 1, 0)]),
    ]);
    assert!(r[0].is_ok() && r[1].is_err() && r[2].is_ok(), "{r:?}");
    assert_eq!(live.steps(), before + 2);
    drop(live);
    let live = Live::open(&path, &fairsched_core::Registry::builtin()).unwrap();
    assert_eq!(live.steps(), before + 2);
    assert_eq!(live.core().live_task_ids(), vec![TaskId(6), TaskId(7)]);
}

#[test]
fn a_failed_commit_puts_the_core_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &Config::default(), &fairsched_core::Registry::builtin()).unwrap();
    live.step(s(0), join(2, 0)).unwrap();
    // Another connection holds the write lock past the busy timeout.
    live.store()
        .set_busy_timeout(std::time::Duration::from_millis(100))
        .unwrap();
    let other = rusqlite_lock(&path);
    let r = live.step(s(1), vec![submit(1, 1, 0)]);
    assert!(
        matches!(r, Err(LiveError::Refused(ref m)) if m.contains("not logged")),
        "{r:?}"
    );
    assert!(
        live.core().live_task_ids().is_empty(),
        "the submission was taken back"
    );
    assert_eq!(live.steps(), 1);
    drop(other);
    // The same submission goes through once the lock is gone.
    live.step(s(2), vec![submit(1, 1, 0)]).unwrap();
    assert_eq!(live.core().live_task_ids(), vec![TaskId(1)]);
}

/// Holds an exclusive transaction on `path` until dropped.
fn rusqlite_lock(path: &std::path::Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch("BEGIN EXCLUSIVE").unwrap();
    c
}

#[test]
fn clairvoyant_and_unknown_policies_are_refused_at_configuration() {
    let dir = tempfile::tempdir().unwrap();
    for (cfg, want) in [
        (
            Config {
                allocate: "mst".into(),
                ..Config::default()
            },
            "`mst` is clairvoyant",
        ),
        (config("ref"), "`ref` is clairvoyant"),
        (config("rand"), "`rand` is clairvoyant"),
        (config("no-such-policy"), "no-such-policy"),
    ] {
        let path = dir.path().join("c.db");
        match Live::create(&path, &cfg, &fairsched_core::Registry::builtin()) {
            Err(LiveError::Config(m)) => assert!(m.contains(want), "{m}"),
            Err(e) => panic!("{want}: {e}"),
            Ok(_) => panic!("{want}: accepted"),
        }
        assert!(!path.exists(), "nothing created for a refused configuration");
    }
}

#[test]
fn bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let e = Live::open(&missing, &fairsched_core::Registry::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("missing.db") && e.contains("admin init"), "{e}");

    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database, just some text that is long enough ".repeat(20),
    )
    .unwrap();
    let e = Live::open(&text, &fairsched_core::Registry::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("notes.txt"), "{e}");

    let db = dir.path().join("x.db");
    drop(Live::create(&db, &Config::default(), &fairsched_core::Registry::builtin()).unwrap());
    assert!(matches!(
        Store::create(&db, &Config::default()),
        Err(StoreError::AlreadyInitialized(_))
    ));
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE meta SET value = '99' WHERE key = 'schema'", [])
        .unwrap();
    drop(c);
    let e = Live::open(&db, &fairsched_core::Registry::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("schema version 99") && e.contains("x.db"), "{e}");
}

/// Every live policy the snapshot tests cover: (order, control).
const SNAPSHOT_CONFIGS: [(&str, Option<&str>); 7] = [
    ("fifo", None),
    ("fair-share", None),
    ("round-robin", None),
    ("priority", None),
    ("direct-contr", None),
    ("diet-ethic", None),
    ("priority", Some("workflow-fairness")),
];

fn config_with(order: &str, control: Option<&str>) -> Config {
    Config {
        control: control.map(String::from),
        ..config(order)
    }
}

#[test]
fn a_reopened_log_with_snapshots_replays_only_the_tail_and_decides_the_same() {
    for (order, control) in SNAPSHOT_CONFIGS {
        let dir = tempfile::tempdir().unwrap();
        let steps = script();
        let cut = steps.len() / 2;
        let cfg = config_with(order, control);

        let mut a = Live::create(
            &dir.path().join("a.db"),
            &cfg,
            &fairsched_core::Registry::builtin(),
        )
        .unwrap();
        a.set_snapshot_every(0);
        let mut a_started = Vec::new();
        let a_all = drive(&mut a, &steps, &mut a_started);

        let path = dir.path().join("b.db");
        let mut b = Live::create(&path, &cfg, &fairsched_core::Registry::builtin()).unwrap();
        b.set_snapshot_every(7);
        let mut b_started = Vec::new();
        let mut b_all = drive(&mut b, &steps[..cut], &mut b_started);
        drop(b);

        let mut b = Live::open(&path, &fairsched_core::Registry::builtin()).unwrap();
        let from = b.restored_from().expect("opened from a snapshot");
        assert!(from >= 7 && from as u64 <= b.steps(), "{order}: from step {from}");
        // Only the steps after the snapshot were replayed.
        let tail: Vec<Action> = b.replayed_actions().to_vec();
        let full = Live::open_from_log(&path, &fairsched_core::Registry::builtin()).unwrap();
        assert_eq!(full.restored_from(), None);
        assert!(full.replayed_actions().ends_with(&tail), "{order}");
        assert_eq!(full.replayed_actions().len(), b_all.len(), "{order}");
        // The same state, byte for byte, and the same timers.
        assert_eq!(
            b.core().snapshot().unwrap(),
            full.core().snapshot().unwrap(),
            "{order} {control:?}"
        );
        assert_eq!(b.pending_timers(), full.pending_timers(), "{order}");
        assert_eq!((b.now(), b.steps()), (full.now(), full.steps()));
        drop(full);

        b.set_snapshot_every(7);
        b_all.extend(drive(&mut b, &steps[cut..], &mut b_started));
        assert_eq!(a_all, b_all, "{order} {control:?}");
        assert_eq!(a.core().stats(), b.core().stats());
    }
}

#[test]
fn a_snapshot_that_does_not_restore_is_passed_over_for_an_older_one_then_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &config("fair-share"), &fairsched_core::Registry::builtin()).unwrap();
    live.set_snapshot_every(5);
    drive(&mut live, &script(), &mut Vec::new());
    let want = live.core().snapshot().unwrap();
    let steps = live.steps() as i64;
    drop(live);

    let c = rusqlite::Connection::open(&path).unwrap();
    let seqs: Vec<i64> = c
        .prepare("SELECT seq FROM snapshots ORDER BY seq DESC")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(seqs.len(), 2, "two snapshots kept: {seqs:?}");
    assert!(seqs[0] <= steps && steps - seqs[0] < 5, "{seqs:?} of {steps}");

    let check = |want_from: Option<i64>| {
        let live = Live::open(&path, &fairsched_core::Registry::builtin()).unwrap();
        assert_eq!(live.restored_from(), want_from);
        assert_eq!(live.core().snapshot().unwrap(), want);
    };
    check(Some(seqs[0]));
    c.execute(
        "UPDATE snapshots SET core = x'00ff00ff' WHERE seq = ?1",
        [seqs[0]],
    )
    .unwrap();
    check(Some(seqs[1]));
    c.execute("UPDATE snapshots SET timers = 'not json'", []).unwrap();
    check(None);
}
