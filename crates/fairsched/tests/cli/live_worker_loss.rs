//! A worker SIGKILLed while it runs a task: once its lease runs out the
//! broker gives the task to another worker, as attempt 2.

use crate::common::{Broker, kill_group, wait_for};
use std::time::{Duration, Instant};

#[test]
fn a_task_of_a_killed_worker_runs_again_elsewhere_after_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "1s");
    broker.add_org("physics");
    let user = broker.add_user("alice", "physics");
    let wtoken = broker.worker_token("physics");
    let api = broker.api();
    let (wd_a, wd_b) = (dir.path().join("wd-a"), dir.path().join("wd-b"));

    let mut a = broker.worker("worker-a", &wtoken, 1, &wd_a, "process");
    broker.wait_slots(1);
    // Records its process group, runs long enough to be caught running,
    // short enough that the orphan the SIGKILL leaves ends by itself.
    let id = api.submit(&user, &["echo $$ > pgid; sleep 2; echo done".into()])[0];
    let first = wd_a.join(format!("task-{id}-1"));
    let pgid: i32 = wait_for("the task to run on worker A", Duration::from_secs(30), || {
        std::fs::read_to_string(first.join("pgid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    let t = api.get_ok(&format!("/v1/tasks/{id}"), &user);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("running"), Some(1)),
        "{t}"
    );
    let first_start = t["start_ms"].as_i64().unwrap();

    a.kill9();
    let killed = Instant::now();
    // The orphaned run is not the broker's business any more; don't leave it behind.
    kill_group(pgid);
    let mut b = broker.worker("worker-b", &wtoken, 1, &wd_b, "process");

    let t = wait_for("the task to complete", Duration::from_secs(30), || {
        let t = api.get_ok(&format!("/v1/tasks/{id}"), &user);
        (t["state"] != "waiting" && t["state"] != "running").then_some(t)
    });
    let waited = killed.elapsed();
    assert_eq!(t["state"], "completed", "{t}");
    assert_eq!(t["attempts"], 2, "{t}");
    assert_eq!(t["exit_code"], 0, "{t}");
    // The second run is worker B's, in task-ID-2; worker A never had one.
    let second = wd_b.join(format!("task-{id}-2"));
    assert_eq!(
        std::fs::read_to_string(second.join("stdout")).unwrap_or_default(),
        "done\n",
        "{} holds the second run",
        second.display()
    );
    assert!(!wd_a.join(format!("task-{id}-2")).exists());
    assert!(!wd_b.join(format!("task-{id}-1")).exists());
    // The first run never finished (killed with its worker).
    assert!(
        !std::fs::read_to_string(first.join("stdout"))
            .unwrap_or_default()
            .contains("done")
    );
    // Not before the lease ran out: worker A was last heard of when it
    // was handed the task (its poll renewed the lease), so the second run
    // starts at least 1 s (the lease) after the first; and it ran whole.
    let (s1, s2) = (first_start, t["start_ms"].as_i64().unwrap());
    assert!(
        s2 - s1 >= 950,
        "second run at {s2} ms, first at {s1} ms: before the 1 s lease ran out"
    );
    assert!(t["end_ms"].as_i64().unwrap() - s2 >= 2000, "{t}");
    assert!(
        waited >= Duration::from_secs(2),
        "completed {waited:?} after the kill"
    );
    let st = api.status(&broker.admin);
    assert_eq!((st.workers, st.slots), (1, 1), "worker A's slot left: {st:?}");
    assert!(b.alive(), "worker B still runs");
    b.terminate(Duration::from_secs(5));
}
