//! The log kept in bounds, on real brokers: `admin backup` copies the
//! database of a broker that goes on writing, and the copy serves with its
//! tasks; `admin compact` is refused while a broker serves, then moves the
//! steps no restart needs to the archive, and the broker restarts from the
//! compacted database with the same tasks and goes on deciding, while the
//! export and a replay of the whole log read the same as before.

use crate::common::{Broker, run_in, wait_for};
use fairsched_broker::api::TaskOut;
use fairsched_broker::{Live, Store};
use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn commands(n: usize, tag: &str) -> Vec<String> {
    (0..n).map(|i| format!("true {tag}-{i}")).collect()
}

#[test]
fn a_backup_of_a_serving_broker_serves_with_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fair-share", "30s");
    broker.add_org("physics");
    let user = broker.add_user("alice", "physics");
    let wtoken = broker.worker_token("physics");
    let worker = broker.worker("w0", &wtoken, 4, &dir.path().join("w0"), "noop");
    let api = broker.api();
    let ran = api.submit(&user, &commands(30, "ran"));
    broker.wait_idle(Duration::from_secs(30));
    drop(worker);

    // A client keeps submitting (nobody runs these) while the backup runs.
    let out = dir.path().join("copy").join("copy.db");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let acked: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let (before, after, o) = std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let ids = api.submit(&user, &[format!("true waits-{i}")]);
                acked.lock().unwrap().extend(ids);
                i += 1;
            }
        });
        wait_for("some submissions", Duration::from_secs(30), || {
            (acked.lock().unwrap().len() >= 5).then_some(())
        });
        let before = acked.lock().unwrap().clone();
        let o = run_in(
            dir.path(),
            &[
                "admin",
                "backup",
                "--db",
                broker.db.to_str().unwrap(),
                out.to_str().unwrap(),
            ],
        );
        let after = acked.lock().unwrap().clone();
        // And some more after it.
        wait_for("submissions after the backup", Duration::from_secs(30), || {
            (acked.lock().unwrap().len() >= after.len() + 3).then_some(())
        });
        stop.store(true, Ordering::Relaxed);
        (before, after, o)
    });
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(said.contains("copy.db") && said.contains("steps"), "{said}");
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the copy holds every command and token hash");
    let again = run_in(
        dir.path(),
        &[
            "admin",
            "backup",
            "--db",
            broker.db.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // The original goes on; the copy serves what was acknowledged by the
    // time the backup ended, at least everything acknowledged before it
    // began, with the same states.
    let original: Vec<TaskOut> = broker.tasks();
    let copy = Broker::open(out.parent().unwrap(), &out, &broker.admin, "30s");
    let tasks = copy.tasks();
    let ids: Vec<u64> = tasks.iter().map(|t| t.id).collect();
    for id in ran.iter().chain(&before) {
        assert!(
            ids.contains(id),
            "task {id}, acknowledged before the backup, is in the copy"
        );
    }
    for id in &ids {
        assert!(
            ran.contains(id) || after.contains(id),
            "task {id} in the copy was acknowledged by the end of the backup"
        );
    }
    assert!(
        tasks.len() < original.len(),
        "the original went on after the copy"
    );
    for t in &tasks {
        let o = original.iter().find(|o| o.id == t.id).unwrap();
        assert_eq!(t, o, "the copy's task {} as the original has it", t.id);
        let want = if ran.contains(&t.id) {
            "completed"
        } else {
            "waiting"
        };
        assert_eq!(t.state, want, "{t:?}");
    }
    // The copy is a broker: its waiting tasks run, new ones are taken.
    let wtoken = copy.worker_token("physics");
    let _w = copy.worker("w1", &wtoken, 4, &dir.path().join("w1"), "noop");
    let new = copy.api().submit(&user, &commands(2, "new"));
    assert!(new[0] > *ids.iter().max().unwrap());
    let s = copy.wait_idle(Duration::from_secs(30));
    assert_eq!(s.waiting + s.running, 0);
    assert!(copy.tasks().iter().all(|t| t.state == "completed"));
}

#[test]
fn a_compacted_database_restarts_with_the_same_tasks_and_exports_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Broker::start_with(
        dir.path(),
        &["--policy", "fair-share"],
        &["--snapshot-every", "5"],
        "30s",
        "127.0.0.1:0",
    );
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let bob = broker.add_user("bob", "physics");
    let wtoken = broker.worker_token("physics");
    let worker = broker.worker("w0", &wtoken, 2, &dir.path().join("w0"), "noop");
    let api = broker.api();
    for i in 0..10 {
        api.submit(&alice, &commands(3, &format!("a{i}")));
        api.submit(&bob, &commands(1, &format!("b{i}")));
    }
    broker.wait_idle(Duration::from_secs(60));
    drop(worker);
    // Left waiting (no worker): the restart must still know them, and the
    // policy's usage decides who goes first once a worker comes back.
    api.submit(&alice, &commands(4, "later-a"));
    api.submit(&bob, &commands(4, "later-b"));
    let db = broker.db.to_str().unwrap().to_string();

    let refused = run_in(dir.path(), &["admin", "compact", "--db", &db]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("is using this database"), "{err}");

    let tasks = broker.tasks();
    broker.kill9();
    // What a restart and a whole replay give before the compaction.
    let registry = fairsched_core::Registry::builtin();
    let fast = Live::open(&broker.db, &registry).unwrap();
    let want_core = fast.core().snapshot().unwrap();
    let want_from = fast.restored_from();
    drop(fast);
    let full = Live::open_from_log(&broker.db, &registry).unwrap();
    let want_actions = full.replayed_actions().to_vec();
    drop(full);
    let steps = Store::open(&broker.db).unwrap().0.len();
    let export = |name: &str| {
        let swf = dir.path().join(name);
        let o = run_in(
            dir.path(),
            &["export", "--db", &db, "--swf", swf.to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(swf).unwrap()
    };
    let swf_before = export("before.swf");

    let o = run_in(dir.path(), &["admin", "compact", "--db", &db]);
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(said.contains("archived in"), "{said}");
    let archive = dir.path().join("broker.db.archive");
    let mode = std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (store, _) = Store::open(&broker.db).unwrap();
    let through = store.archived_through();
    assert!(through > 0 && (through as u64) < steps, "{through} of {steps}");
    assert_eq!(store.len(), steps, "the log's length is the same");
    drop(store);

    // The export and a replay of the whole log read the same; a restart
    // restores the same state from the same snapshot.
    assert_eq!(export("after.swf"), swf_before);
    let full = Live::open_from_log(&broker.db, &registry).unwrap();
    assert_eq!(full.replayed_actions(), want_actions.as_slice());
    assert_eq!(full.core().snapshot().unwrap(), want_core);
    drop(full);
    let fast = Live::open(&broker.db, &registry).unwrap();
    assert_eq!(fast.restored_from(), want_from);
    assert_eq!(fast.core().snapshot().unwrap(), want_core);
    drop(fast);

    broker.serve();
    assert_eq!(broker.tasks(), tasks, "the tasks after the restart");
    let worker = broker.worker("w1", &wtoken, 2, &dir.path().join("w1"), "noop");
    let more = broker.api().submit(&alice, &commands(2, "after"));
    assert!(more[0] > tasks.iter().map(|t| t.id).max().unwrap());
    broker.wait_idle(Duration::from_secs(60));
    drop(worker);
    assert!(broker.tasks().iter().all(|t| t.state == "completed"));

    // A second compaction appends to the same archive.
    broker.kill9();
    let o = run_in(dir.path(), &["admin", "compact", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (store, _) = Store::open(&broker.db).unwrap();
    assert!(
        store.archived_through() > through,
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(store.archive(), Some(archive.canonicalize().unwrap().as_path()));
}
