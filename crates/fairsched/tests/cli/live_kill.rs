//! Kills reach the processes at once, real processes on 127.0.0.1: a
//! cancel and a Diet-ethic preemption reach the worker in its long poll
//! (the lease is 30 s, so the heartbeat, every 10 s, would be too late),
//! and the processes of a task die with a SIGKILLed worker (its task
//! guard). A task records the PIDs of its processes in its directory; a
//! process is gone when /proc has no running process of that number.

use crate::common::{Broker, wait_for};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// What a kill may take, from the broker's decision to the processes'
/// death, on a noisy machine (the lease path takes up to 10 s here).
const KILL_BOUND: Duration = Duration::from_secs(2);

/// Whether a process numbered `pid` still runs (a zombie does not).
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    state != Some("Z")
}

/// The PIDs a task wrote to `file` (written whole with a rename).
fn pids(file: &Path, timeout: Duration) -> Vec<i32> {
    wait_for(&format!("{}", file.display()), timeout, || {
        let text = std::fs::read_to_string(file).ok()?;
        let v: Vec<i32> = text.split_whitespace().map(|p| p.parse().unwrap()).collect();
        (!v.is_empty()).then_some(v)
    })
}

/// Waits until none of `pids` runs; how long that took.
fn until_gone(what: &str, pids: &[i32], since: Instant, bound: Duration) -> Duration {
    wait_for(&format!("{what}: PIDs {pids:?} to die"), bound, || {
        pids.iter().all(|&p| !running(p)).then(|| since.elapsed())
    })
}

fn task(broker: &Broker, token: &str, id: u64) -> Value {
    broker.api().get_ok(&format!("/v1/tasks/{id}"), token)
}

fn submit(broker: &Broker, token: &str, command: &str, optional: bool) -> u64 {
    let v = broker.api().post_ok(
        "/v1/tasks",
        token,
        &json!({ "tasks": [{ "command": command, "optional": optional }] }),
    );
    v["ids"][0].as_u64().unwrap()
}

/// A broker (policy `order`, a 30 s lease), its user `ann` of `lab`, and
/// a worker of `slots` slots running processes in `dir/wd`, registered.
fn lab(dir: &Path, order: &str, slots: u32) -> (Broker, String, std::path::PathBuf, crate::common::Proc) {
    let broker = Broker::start(dir, order, "30s");
    broker.add_org("lab");
    let user = broker.add_user("ann", "lab");
    let wtoken = broker.worker_token("lab");
    let wd = dir.join("wd");
    let worker = broker.worker("w", &wtoken, slots, &wd, "process");
    broker.wait_slots(u64::from(slots));
    (broker, user, wd, worker)
}

/// Writes `$$` (the shell, which becomes `sleep`) to `pid`, then sleeps.
const SLEEPER: &str = "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep";

#[test]
fn a_cancelled_task_dies_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, user, wd, mut worker) = lab(dir.path(), "fifo", 1);

    let id = submit(&broker, &user, &format!("{SLEEPER} 60"), false);
    let pid = pids(&wd.join(format!("task-{id}-1/pid")), Duration::from_secs(30))[0];
    assert!(running(pid));
    let asked = Instant::now();
    let t = broker
        .api()
        .post_ok(&format!("/v1/tasks/{id}/cancel"), &user, &json!({}));
    assert_eq!(t["state"], "cancelled", "{t}");
    let took = until_gone("the cancelled task", &[pid], asked, KILL_BOUND);
    println!("cancel → process gone: {took:?}");

    // The slot is free again: the next task runs at once.
    let next = submit(&broker, &user, "true", false);
    let t = wait_for("the next task to complete", Duration::from_secs(10), || {
        let t = task(&broker, &user, next);
        (t["state"] == "completed").then_some(t)
    });
    assert_eq!(t["attempts"], 1, "{t}");
    assert!(worker.alive());
    worker.terminate(Duration::from_secs(5));
}

#[test]
fn a_preempted_optional_task_dies_at_once_and_runs_again_later() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, user, wd, mut worker) = lab(dir.path(), "diet-ethic", 1);

    let opt = submit(&broker, &user, &format!("{SLEEPER} 30"), true);
    let pid = pids(&wd.join(format!("task-{opt}-1/pid")), Duration::from_secs(30))[0];
    let t = task(&broker, &user, opt);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("running"), Some(1)),
        "{t}"
    );

    let submitted = Instant::now();
    let mand = submit(&broker, &user, "sleep 0.2", false);
    let killed = until_gone("the preempted optional task", &[pid], submitted, KILL_BOUND);
    let t = task(&broker, &user, opt);
    // Back in the queue (or, already, running again once the mandatory
    // task completed).
    match t["state"].as_str() {
        Some("waiting") => assert_eq!(t["attempts"], 1, "{t}"),
        _ => assert_eq!(
            (t["state"].as_str(), t["attempts"].as_u64()),
            (Some("running"), Some(2)),
            "{t}"
        ),
    }
    let done = wait_for("the mandatory task to complete", Duration::from_secs(10), || {
        let t = task(&broker, &user, mand);
        (t["state"] != "waiting" && t["state"] != "running").then(|| (t, submitted.elapsed()))
    });
    assert_eq!(done.0["state"], "completed", "{}", done.0);
    assert_eq!(done.0["attempts"], 1, "{}", done.0);
    assert!(
        done.1 < Duration::from_secs(3),
        "the mandatory task took {:?}",
        done.1
    );
    println!(
        "preemption → optional process gone: {killed:?}; mandatory completed after {:?}",
        done.1
    );

    // Then the optional task runs again, as attempt 2, in its own directory.
    let pid2 = pids(&wd.join(format!("task-{opt}-2/pid")), Duration::from_secs(10))[0];
    let t = task(&broker, &user, opt);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("running"), Some(2)),
        "{t}"
    );
    assert_ne!(pid, pid2);
    let asked = Instant::now();
    broker
        .api()
        .post_ok(&format!("/v1/tasks/{opt}/cancel"), &user, &json!({}));
    until_gone("the optional task's second run", &[pid2], asked, KILL_BOUND);
    assert!(worker.alive());
    worker.terminate(Duration::from_secs(5));
}

#[test]
fn every_process_of_a_task_dies_with_its_sigkilled_worker() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, user, wd, mut worker) = lab(dir.path(), "fifo", 2);

    // A shell, two background jobs (one a pipeline), a foreground sleep.
    let script = "sleep 60 & a=$!; sleep 60 | sleep 60 & b=$!; \
                  echo $$ $a $b > pid.tmp && mv pid.tmp pid; sleep 60; wait";
    let id = submit(&broker, &user, script, false);
    // A script that traps SIGTERM: SIGKILL after the grace period (1 s).
    let stubborn = submit(
        &broker,
        &user,
        "trap '' TERM; sleep 60 & echo $$ $! > pid.tmp && mv pid.tmp pid; wait; sleep 60",
        false,
    );
    let mut all = pids(&wd.join(format!("task-{id}-1/pid")), Duration::from_secs(30));
    let hard = pids(
        &wd.join(format!("task-{stubborn}-1/pid")),
        Duration::from_secs(30),
    );
    // Every process of the shell's group: its guard (the leader), the
    // shell, the three background sleeps and the foreground one.
    let group = std::fs::read_to_string(format!("/proc/{}/stat", all[0])).unwrap();
    let pgid: i32 = group
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    let members = wait_for("the task's 6 processes", Duration::from_secs(10), || {
        let m = group_members(pgid);
        (m.len() >= 6).then_some(m)
    });
    all.extend(members);
    all.sort_unstable();
    all.dedup();
    assert!(all.iter().all(|&p| running(p)), "{all:?}");

    worker.kill9();
    let killed = Instant::now();
    let took = until_gone("the tasks of the SIGKILLed worker", &all, killed, KILL_BOUND);
    println!(
        "worker SIGKILLed → its task's {} processes gone: {took:?}",
        all.len()
    );
    let took = until_gone(
        "a task ignoring SIGTERM",
        &hard,
        killed,
        Duration::from_secs(1) + KILL_BOUND,
    );
    println!("… and those of the one ignoring SIGTERM: {took:?}");
    assert!(group_members(pgid).is_empty());
}

#[test]
fn a_task_ends_as_its_shell_did_through_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, user, wd, mut worker) = lab(dir.path(), "fifo", 2);
    let ids = broker.api().submit(
        &user,
        &[
            "exit 3".into(),
            "kill -KILL $$".into(),
            "echo hi".into(),
            "kill -TERM $$".into(),
        ],
    );
    broker.wait_idle(Duration::from_secs(30));
    let ends: Vec<(String, Option<i32>, Option<i32>)> = ids
        .iter()
        .map(|&id| {
            let t = broker
                .api()
                .tasks(&user)
                .into_iter()
                .find(|t| t.id == id)
                .unwrap();
            (t.state, t.exit_code, t.signal)
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("failed".into(), Some(3), None),
            ("failed".into(), None, Some(9)),
            ("completed".into(), Some(0), None),
            ("failed".into(), None, Some(15)),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(wd.join(format!("task-{}-1/stdout", ids[2]))).unwrap(),
        "hi\n"
    );
    worker.terminate(Duration::from_secs(5));
}

/// The running processes of group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) && f[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

/// A worker's slots run at once even when its runner threads are idle:
/// two tasks handed together to a worker whose one runner waits for work
/// run side by side (each waits to see the other started), not one after
/// the other.
#[test]
fn tasks_handed_together_run_side_by_side_on_idle_runners() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, user, _wd, _worker) = lab(dir.path(), "fifo", 2);
    // One task first: its runner thread is then idle.
    broker.api().submit(&user, &["true".into()]);
    broker.wait_idle(Duration::from_secs(30));
    let meet = dir.path().join("meet");
    std::fs::create_dir(&meet).unwrap();
    let side = |me: &str, other: &str| {
        format!(
            "touch {m}/{me}; i=0; while [ ! -e {m}/{other} ]; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done",
            m = meet.display()
        )
    };
    let ids = broker.api().submit(&user, &[side("a", "b"), side("b", "a")]);
    let st = broker.wait_idle(Duration::from_secs(30));
    assert_eq!((st.completed, st.failed), (3, 0), "{ids:?} did not meet: {st:?}");
}
