//! What a tenant cannot do to another on a shared worker (issue 38,
//! findings 2, 3, 4): a fork bomb, a full work disk, descriptor exhaustion
//! and a memory bomb of bob's fail bob's run alone, its limit named, while
//! alice's tasks on the same worker all complete and the worker goes on;
//! a worker started as root runs no task as root unless told.
//!
//! They need root (other accounts, a tmpfs): CI runs them as root with
//! FAIRSCHED_CGROUPS=required, where a test that cannot run fails.

use crate::common::{Broker, Proc, bin};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Whether the test runs: as root; otherwise it says why it is skipped,
/// or fails under FAIRSCHED_CGROUPS=required (CI runs as root).
fn as_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert_ne!(
        std::env::var("FAIRSCHED_CGROUPS").as_deref(),
        Ok("required"),
        "{test} needs root"
    );
    eprintln!("skipping {test}: it needs root (tasks as other accounts, a tmpfs)");
    false
}

/// A broker with alice (physics, tasks as nobody) and bob (chemistry, tasks
/// as www-data), and the worker token's file.
struct Tenants {
    broker: Broker,
    alice: String,
    bob: String,
    token_file: std::path::PathBuf,
}

fn tenants(dir: &Path) -> Tenants {
    let broker = Broker::start(dir, "fifo", "30s");
    broker.add_org("physics");
    broker.add_org("chemistry");
    let alice = broker.add_user("alice", "physics");
    let bob = broker.add_user("bob", "chemistry");
    for (user, account) in [("alice", "nobody"), ("bob", "www-data")] {
        broker.api().post_ok(
            "/v1/admin/users/run-as",
            &broker.admin,
            &json!({"name": user, "account": account}),
        );
    }
    let token_file = dir.join("worker.token");
    std::fs::write(&token_file, broker.worker_token("physics")).unwrap();
    Tenants {
        broker,
        alice,
        bob,
        token_file,
    }
}

impl Tenants {
    /// A worker of 3 slots in `workdir`, each task as its user's account,
    /// with `more` flags.
    fn worker(&self, workdir: &Path, more: &[&str]) -> Proc {
        let mut args = vec!["--run-as-user", "--token-file", self.token_file.to_str().unwrap()];
        args.extend_from_slice(more);
        let w = self.broker.worker_exact("w", "", 3, workdir, "process", &args);
        self.broker.wait_slots(3);
        w
    }

    fn submit(&self, token: &str, tasks: Value) -> Vec<u64> {
        let v = self
            .broker
            .api()
            .post_ok("/v1/tasks", token, &json!({ "tasks": tasks }));
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap())
            .collect()
    }

    /// Six short tasks of alice's.
    fn alice_tasks(&self) -> Vec<u64> {
        let tasks: Vec<Value> = (0..6)
            .map(|i| json!({"command": format!("sleep 0.3; echo ok {i}")}))
            .collect();
        self.submit(&self.alice, Value::Array(tasks))
    }

    fn task(&self, id: u64) -> Value {
        self.broker
            .api()
            .get_ok(&format!("/v1/tasks/{id}"), &self.broker.admin)
    }

    /// Every one of alice's tasks completed; bob's `hostile` failed, its
    /// reason and explanation naming `limit`; the worker never stopped.
    fn check(&self, alice: &[u64], hostile: u64, limit: &str, worker: &mut Proc) {
        self.broker.wait_idle(Duration::from_secs(90));
        for &id in alice {
            let t = self.task(id);
            if t["state"] != "completed" {
                let err = self.stderr(id, &self.alice);
                panic!("alice's task {id}: {t:#}\n{err}");
            }
            assert_eq!(t["attempts"], 1, "alice's task {id} ran again: {t:#}");
        }
        let t = self.task(hostile);
        assert_eq!(t["state"], "failed", "{t:#}");
        assert_eq!(t["attempts"], 1, "the hostile run went back to the queue: {t:#}");
        let reason = t["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(limit), "reason {reason:?}, not naming {limit:?}");
        let explain = self
            .broker
            .api()
            .get_ok(&format!("/v1/tasks/{hostile}/explain"), &self.bob);
        assert!(explain.to_string().contains(limit), "{explain:#}");
        assert!(worker.alive(), "the worker stopped");
        let log = std::fs::read_to_string(self.broker.dir.join("w.stderr")).unwrap();
        assert!(!log.contains("panicked"), "{log}");
    }

    /// The end of the run's `stderr`.
    fn stderr(&self, id: u64, token: &str) -> String {
        crate::common::wait_for("the output", Duration::from_secs(20), || {
            let r = self
                .broker
                .api()
                .get(&format!("/v1/tasks/{id}/output?stream=stderr"), Some(token));
            (r.status == 200).then_some(r.text)
        })
    }
}

#[test]
fn a_root_worker_runs_no_task_as_root_unless_told() {
    if !as_root("a_root_worker_runs_no_task_as_root_unless_told") {
        return;
    }
    // Finding 4: without --run-as-user, every task ran as root.
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let token = broker.worker_token("physics");
    let api = broker.api();
    let run = |more: &[&str]| {
        let mut w = broker.worker_exact("w", &token, 1, &dir.path().join("wd"), "process", more);
        let id = api.submit(&alice, &["id -un; echo $TMPDIR; touch /tmp/mine; ls /tmp".into()])[0];
        broker.wait_idle(Duration::from_secs(30));
        let out = crate::common::wait_for("the output", Duration::from_secs(20), || {
            let r = api.get(&format!("/v1/tasks/{id}/output"), Some(&alice));
            (r.status == 200).then_some(r.text)
        });
        w.terminate(Duration::from_secs(10));
        out
    };
    // A private /tmp: the task sees its own file alone there.
    assert_eq!(run(&[]), "nobody\n/tmp\nmine\n");
    assert_eq!(run(&["--task-user", "www-data"]), "www-data\n/tmp\nmine\n");
    // As root, the machine's /tmp (a root task could leave a namespace).
    let root = run(&["--allow-root-tasks"]);
    let tmpdir = root.lines().nth(1).unwrap_or_default();
    assert!(
        root.starts_with("root\n") && tmpdir.ends_with("/tmp") && tmpdir != "/tmp",
        "{root}"
    );
    // An account that is not there: a clear refusal naming the ways out.
    let out = bin()
        .args([
            "worker",
            "--broker",
            &broker.url,
            "--token",
            &token,
            "--task-user",
            "no-such-account-38",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for way in [
        "--task-user",
        "--run-as-user",
        "--allow-root-tasks",
        "no-such-account-38",
    ] {
        assert!(err.contains(way), "{way} not in: {err}");
    }
}

#[test]
fn a_fork_bomb_fails_alone_at_its_process_limit() {
    if !as_root("a_fork_bomb_fails_alone_at_its_process_limit") {
        return;
    }
    // Finding 2: the bomb had no limit; the worker hit its own and panicked.
    let dir = tempfile::tempdir().unwrap();
    let t = tenants(dir.path());
    let mut w = t.worker(&dir.path().join("wd"), &["--max-processes", "64"]);
    let bomb = t.submit(
        &t.bob,
        json!([{"command": "f() { f | f & }; f; sleep 30", "time_limit_ms": 20000}]),
    )[0];
    let alice = t.alice_tasks();
    t.check(&alice, bomb, "process limit", &mut w);
    let err = t.stderr(bomb, &t.bob);
    assert!(err.contains("process limit of 64 reached"), "{err}");
}

/// Unmounts the tmpfs on its path when dropped.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A tmpfs of `size` (e.g. `30M`) mounted on `wd` (made), unmounted when
/// the value is dropped.
fn tmpfs(wd: &Path, size: &str) -> Unmount {
    std::fs::create_dir(wd).unwrap();
    let mounted = std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0755"),
            "tmpfs",
            wd.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(mounted.success(), "cannot mount a tmpfs on {}", wd.display());
    Unmount(wd.to_path_buf())
}

#[test]
fn a_full_work_disk_fails_the_run_that_filled_it_alone() {
    if !as_root("a_full_work_disk_fails_the_run_that_filled_it_alone") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().join("wd");
    let _unmount = tmpfs(&wd, "30M");
    let t = tenants(dir.path());
    let mut w = t.worker(&wd, &["--max-disk", "8M", "--min-free-disk", "8M"]);
    // Finding 3: a 100 MB file on a 30 MB disk, kept for --keep-runs, and
    // every later task failed at once (exit 125, no space for its script).
    let dd = t.submit(
        &t.bob,
        json!([{"command": "dd if=/dev/zero of=big bs=1M count=100"}]),
    )[0];
    t.broker.wait_idle(Duration::from_secs(30));
    assert_eq!(t.task(dd)["state"], "failed");
    let later = t.alice_tasks();
    // And a run over its disk limit, beside alice's.
    let fill = t.submit(
        &t.bob,
        json!([{"command": "head -c 20M /dev/zero > big; sleep 30"}]),
    )[0];
    let more = t.alice_tasks();
    t.check(&[later, more].concat(), fill, "disk limit", &mut w);
}

/// A worker whose work disk is below its `--min-free-disk` starts no run
/// and says so: the broker's status counts it (`workers_short_of_disk`,
/// the line of `fairsched status`) and the dashboard marks it; once there
/// is room again, it starts the runs it held and the status says nothing
/// more.
#[test]
fn a_worker_short_of_disk_says_so_in_the_status_and_the_dashboard() {
    if !as_root("a_worker_short_of_disk_says_so_in_the_status_and_the_dashboard") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().join("wd");
    let _unmount = tmpfs(&wd, "20M");
    let t = tenants(dir.path());
    let mut w = t.worker(&wd, &["--min-free-disk", "40M"]);
    let ids = t.alice_tasks();
    let api = t.broker.api();
    crate::common::wait_for(
        "the status to count the worker short of disk",
        Duration::from_secs(30),
        || (api.status(&t.alice).workers_short_of_disk == 1).then_some(()),
    );
    let said = crate::common::run_in(
        dir.path(),
        &["status", "--broker", &t.broker.url, "--token", &t.alice],
    );
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("1 worker(s) short of disk space"), "{said}");
    let board = api.get_ok("/v1/dashboard", &t.broker.admin);
    let free = board["workers"][0]["short_of_disk"].as_u64();
    assert!(free.is_some_and(|b| b < 40 << 20), "{board:#}");
    for &id in &ids {
        assert_ne!(t.task(id)["state"], "completed", "a run started below the floor");
    }
    // A task it holds says why.
    let why = crate::common::wait_for("a task handed to the worker", Duration::from_secs(30), || {
        ids.iter().find_map(|&id| {
            let e = api.get_ok(&format!("/v1/tasks/{id}/explain"), &t.alice);
            e["why"]
                .as_str()
                .filter(|w| w.contains("short of disk space"))
                .map(String::from)
        })
    });
    assert!(why.contains("--min-free-disk"), "{why}");
    // Room again: the runs start, the status says nothing more.
    let grown = std::process::Command::new("mount")
        .args(["-o", "remount,size=100M", wd.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(grown.success());
    t.broker.wait_idle(Duration::from_secs(60));
    for &id in &ids {
        assert_eq!(t.task(id)["state"], "completed");
    }
    crate::common::wait_for(
        "the status to count no worker short of disk",
        Duration::from_secs(30),
        || (api.status(&t.alice).workers_short_of_disk == 0).then_some(()),
    );
    assert!(w.alive());
}

#[test]
fn descriptor_exhaustion_fails_alone_at_its_open_file_limit() {
    if !as_root("descriptor_exhaustion_fails_alone_at_its_open_file_limit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let t = tenants(dir.path());
    let mut w = t.worker(&dir.path().join("wd"), &["--max-open-files", "64"]);
    // Every descriptor it may open, held, then more.
    let hog = t.submit(
        &t.bob,
        json!([{"command": "bash -c 'for i in $(seq 200); do exec {fd}</dev/null || { echo opened $i; exit 3; }; done'"}]),
    )[0];
    let alice = t.alice_tasks();
    t.check(&alice, hog, "open-file limit", &mut w);
    let err = t.stderr(hog, &t.bob);
    assert!(err.contains("may open 64 files"), "{err}");
}

#[test]
fn a_memory_bomb_fails_alone_at_its_memory_limit() {
    if !as_root("a_memory_bomb_fails_alone_at_its_memory_limit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let t = tenants(dir.path());
    let mut w = t.worker(&dir.path().join("wd"), &[]);
    // tail keeps all it reads of a file without a line end.
    let bomb = t.submit(
        &t.bob,
        json!([{"command": "head -c 400M /dev/zero | tail -c 300M > /dev/null", "memory_bytes": 64 << 20}]),
    )[0];
    let alice = t.alice_tasks();
    t.check(&alice, bomb, "memory limit", &mut w);
}

/// A task lowers its own limits below its worker's (`submit
/// --max-open-files`, `--max-disk`…): its run gets the lower of the two,
/// one above the worker's is the worker's, and a run past its own limit
/// fails alone with the limit named. Any user: no root needed.
#[test]
fn a_task_lowers_its_own_limits_below_its_workers() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start(dir.path(), "fifo", "30s");
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let token = b.worker_token("physics");
    let mut w = b.worker("w", &token, 3, &dir.path().join("wd"), "process");
    b.wait_slots(3);
    let submit = |more: &[&str]| -> u64 {
        let mut args = vec!["submit", "--broker", &b.url, "--token", &alice];
        args.extend_from_slice(more);
        let o = crate::common::run_in(dir.path(), &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
    };
    let low = submit(&["--max-open-files", "20", "--", "ulimit -n"]);
    let high = submit(&["--max-open-files", "999999", "--", "ulimit -n"]);
    let disk = submit(&["--max-disk", "1M", "--", "head -c 5M /dev/zero > big; sleep 5"]);
    b.wait_idle(Duration::from_secs(60));
    let api = b.api();
    let out = |id: u64| {
        crate::common::wait_for("the output", Duration::from_secs(20), || {
            let r = api.get(&format!("/v1/tasks/{id}/output"), Some(&alice));
            (r.status == 200).then_some(r.text)
        })
    };
    assert_eq!(out(low).trim(), "20");
    assert_eq!(
        out(high).trim(),
        "4096",
        "the worker's --max-open-files, not more"
    );
    let t = api.get_ok(&format!("/v1/tasks/{disk}"), &alice);
    assert_eq!(t["state"], "failed", "{t:#}");
    let reason = t["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("disk limit"), "{reason}");
    // A limit a run cannot start with (0; too few processes for a shell):
    // refused at the door.
    for processes in [0, 5] {
        let r = api.post_json(
            "/v1/tasks",
            &alice,
            &json!({"tasks": [{"command": "true", "caps": {"processes": processes}}]}),
        );
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.error().contains("tasks[0].caps.processes"), "{}", r.text);
    }
    assert!(w.alive());
}
