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
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Live::open(&text, &fairsched_core::Registry::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("notes.txt") && e.contains("not a database"), "{e}");
    // Not a database: its mode is not touched.
    let mode = std::fs::metadata(&text).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);

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

/// Rows of `table` in the SQLite file at `path`.
fn rows(path: &std::path::Path, table: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// `admin compact`: the steps up to the older kept snapshot go to the
/// archive, the database keeps the rest; a restart restores the same state
/// from the same snapshot and decides the same from there on, a replay of
/// the whole log reads the archive then the database, and a later
/// compaction appends. Without the archive, a restart still works (it
/// needs none of those steps); a whole replay says what is missing.
#[test]
fn compaction_keeps_what_a_restart_needs_and_archives_the_rest() {
    use fairsched_broker::upkeep::{backup, compact};
    let registry = fairsched_core::Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let steps = script();
    let cut = steps.len() * 2 / 3;
    let a_path = dir.path().join("a.db");
    let mut a = Live::create(&a_path, &config("fair-share"), &registry).unwrap();
    a.set_snapshot_every(5);
    let mut started = Vec::new();
    drive(&mut a, &steps[..cut], &mut started);
    drop(a);
    // b: the same database, compacted.
    let b_path = dir.path().join("b.db");
    backup(&a_path, &b_path).unwrap();
    let before = rows(&b_path, "steps");
    let snaps: Vec<i64> = {
        let c = rusqlite::Connection::open(&b_path).unwrap();
        let mut q = c.prepare("SELECT seq FROM snapshots ORDER BY seq").unwrap();
        q.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(snaps.len(), 2, "{snaps:?}");
    let c = compact(&b_path, None).unwrap();
    assert_eq!(c.archived_through, snaps[0], "up to the older kept snapshot");
    assert_eq!(c.moved as i64, snaps[0]);
    assert_eq!(c.archive, dir.path().canonicalize().unwrap().join("b.db.archive"));
    assert_eq!(rows(&b_path, "steps"), before - snaps[0], "the live log shrank");
    assert_eq!(rows(&c.archive, "steps"), snaps[0]);

    let a = Live::open(&a_path, &registry).unwrap();
    let b = Live::open(&b_path, &registry).unwrap();
    assert_eq!(b.restored_from(), Some(snaps[1]));
    assert_eq!(b.core().snapshot().unwrap(), a.core().snapshot().unwrap());
    assert_eq!((b.now(), b.steps()), (a.now(), a.steps()));
    assert_eq!(b.pending_timers(), a.pending_timers());
    // The whole log, archive first.
    let fa = Live::open_from_log(&a_path, &registry).unwrap();
    let fb = Live::open_from_log(&b_path, &registry).unwrap();
    assert_eq!(fb.replayed_actions(), fa.replayed_actions());
    assert_eq!(fb.core().snapshot().unwrap(), fa.core().snapshot().unwrap());
    drop((fa, fb));

    // The same next decisions, and a second compaction appends.
    let (mut a, mut b) = (a, b);
    a.set_snapshot_every(5);
    b.set_snapshot_every(5);
    let a_next = drive(&mut a, &steps[cut..], &mut started.clone());
    let b_next = drive(&mut b, &steps[cut..], &mut started);
    assert_eq!(a_next, b_next);
    drop((a, b));
    let c2 = compact(&b_path, None).unwrap();
    assert!(c2.archived_through > c.archived_through && c2.moved > 0, "{c2:?}");
    assert_eq!(rows(&c2.archive, "steps"), c2.archived_through);
    let again = compact(&b_path, None).unwrap();
    assert_eq!(again.moved, 0, "nothing new");
    let fa = Live::open_from_log(&a_path, &registry).unwrap();
    let fb = Live::open_from_log(&b_path, &registry).unwrap();
    assert_eq!(fb.replayed_actions(), fa.replayed_actions());
    drop((fa, fb));

    // Another archive for the same database is refused.
    let e = compact(&b_path, Some(&dir.path().join("other.archive"))).unwrap_err();
    assert!(e.to_string().contains("a database keeps one archive"), "{e}");

    // Without its archive: a restart is fine, a whole replay is refused.
    let moved = dir.path().join("elsewhere");
    std::fs::rename(&c2.archive, &moved).unwrap();
    let b = Live::open(&b_path, &registry).unwrap();
    assert_eq!(
        b.core().snapshot().unwrap(),
        Live::open(&a_path, &registry).unwrap().core().snapshot().unwrap()
    );
    drop(b);
    let e = Live::open_from_log(&b_path, &registry).err().unwrap().to_string();
    assert!(e.contains("b.db.archive") && e.contains("is missing"), "{e}");
    // Nor is a compaction (more steps, newer snapshots: some to move).
    let mut b = Live::open(&b_path, &registry).unwrap();
    b.set_snapshot_every(4);
    for i in 0..12 {
        b.step(s(1000 + i), vec![submit(1000 + i as u64, 1, 0)]).unwrap();
    }
    drop(b);
    let e = compact(&b_path, None).unwrap_err().to_string();
    assert!(e.contains("is missing"), "{e}");
    assert!(!c2.archive.exists(), "not made again, empty");
    std::fs::rename(&moved, &c2.archive).unwrap();
    assert!(compact(&b_path, None).unwrap().moved > 0);
    let fb = Live::open_from_log(&b_path, &registry).unwrap();
    let b = Live::open(&b_path, &registry).unwrap();
    assert_eq!(fb.core().snapshot().unwrap(), b.core().snapshot().unwrap());
}

/// A compaction that stopped between its two transactions left steps in
/// both files: the database still reads its own, and the next compaction
/// goes on. An archive whose steps differ from the database's (a copy's,
/// which went its own way) is refused, and nothing moves.
#[test]
fn a_compaction_cut_short_is_finished_by_the_next_and_a_foreign_archive_refused() {
    use fairsched_broker::upkeep::compact;
    let registry = fairsched_core::Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &config("fifo"), &registry).unwrap();
    live.set_snapshot_every(4);
    drive(&mut live, &script()[..20], &mut Vec::new());
    drop(live);
    let c = compact(&path, None).unwrap();
    let through = c.archived_through;
    let want = Live::open_from_log(&path, &registry)
        .unwrap()
        .core()
        .snapshot()
        .unwrap();
    // The first transaction of a next compaction, alone: the steps up to
    // 6 beyond, copied into the archive.
    let arch = rusqlite::Connection::open(&c.archive).unwrap();
    arch.execute("ATTACH ?1 AS live", [path.to_str().unwrap()])
        .unwrap();
    arch.execute(
        "INSERT INTO steps SELECT * FROM live.steps WHERE seq > ?1 AND seq <= ?1 + 6",
        [through],
    )
    .unwrap();
    arch.execute("DETACH live", []).unwrap();
    let full = Live::open_from_log(&path, &registry).unwrap();
    assert_eq!(full.core().snapshot().unwrap(), want);
    drop(full);

    let mut live = Live::open(&path, &registry).unwrap();
    live.set_snapshot_every(4);
    drive(&mut live, &script()[20..], &mut Vec::new());
    drop(live);
    // A copied step that differs: refused, nothing moved.
    arch.execute(
        "UPDATE steps SET now_ms = now_ms + 1 WHERE seq = ?1",
        [through + 3],
    )
    .unwrap();
    let before = rows(&path, "steps");
    let e = compact(&path, None).unwrap_err().to_string();
    assert!(e.contains(&format!("another step {}", through + 3)), "{e}");
    assert_eq!(rows(&path, "steps"), before);
    arch.execute(
        "UPDATE steps SET now_ms = now_ms - 1 WHERE seq = ?1",
        [through + 3],
    )
    .unwrap();
    drop(arch);
    let c2 = compact(&path, None).unwrap();
    assert!(c2.archived_through > through + 6, "{c2:?}");
    let want = Live::open(&path, &registry).unwrap().core().snapshot().unwrap();
    let full = Live::open_from_log(&path, &registry).unwrap();
    assert_eq!(full.core().snapshot().unwrap(), want);
}

/// `admin compact` takes the lock `fairsched serve` takes: refused while
/// it is held, nothing touched.
#[test]
fn compaction_is_refused_while_the_database_is_locked() {
    use fairsched_broker::upkeep::{compact, lock_path};
    let registry = fairsched_core::Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &config("fifo"), &registry).unwrap();
    live.set_snapshot_every(4);
    drive(&mut live, &script()[..20], &mut Vec::new());
    drop(live);
    let lock = std::fs::File::create(lock_path(&path)).unwrap();
    lock.try_lock().unwrap();
    let before = rows(&path, "steps");
    let e = compact(&path, None).unwrap_err().to_string();
    assert!(
        e.contains("is using this database") && e.contains("x.db.lock"),
        "{e}"
    );
    assert_eq!(rows(&path, "steps"), before);
    assert!(!dir.path().join("x.db.archive").exists());
    drop(lock);
    assert!(compact(&path, None).unwrap().moved > 0);
}

/// One snapshot, of the last step (a clean shutdown's): every step goes to
/// the archive and the database's `steps` is empty; it reopens at the same
/// step, logs the next ones after it, and the whole log still replays.
#[test]
fn a_compaction_of_every_step_leaves_a_log_that_goes_on() {
    use fairsched_broker::upkeep::compact;
    let registry = fairsched_core::Registry::builtin();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let mut live = Live::create(&path, &config("fair-share"), &registry).unwrap();
    live.set_snapshot_every(0);
    let mut started = Vec::new();
    drive(&mut live, &script()[..30], &mut started);
    live.write_snapshot().unwrap();
    let steps = live.steps();
    drop(live);
    let c = compact(&path, None).unwrap();
    assert_eq!((c.archived_through, c.moved), (steps as i64, steps));
    assert_eq!(rows(&path, "steps"), 0);
    let mut live = Live::open(&path, &registry).unwrap();
    assert_eq!((live.steps(), live.restored_from()), (steps, Some(steps as i64)));
    drive(&mut live, &script()[30..], &mut started);
    let want = live.core().snapshot().unwrap();
    let all = live.steps();
    drop(live);
    assert_eq!(rows(&path, "steps") as u64, all - steps);
    let full = Live::open_from_log(&path, &registry).unwrap();
    assert_eq!((full.steps(), full.core().snapshot().unwrap()), (all, want));
}
