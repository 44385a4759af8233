//! Tenants who do not trust each other (issue 27, "a hostile-tenant
//! suite"): user B's task, on the same worker as user A's, tries to read
//! A's files, the worker's environment and token, to signal A's processes;
//! B's token tries A's tasks and outputs. Each attempt is refused or does
//! nothing. The worker runs as root with --run-as-user, tasks as accounts
//! of their own (nobody and www-data here), its token in a root-only file.

use crate::common::{Broker, wait_for};
use serde_json::json;
use std::time::Duration;

/// Whether tasks can be switched to other accounts here; says so when not
/// (.ci/run runs as root).
fn is_root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        crate::common::skipping(module_path!(), "--run-as-user needs root");
    }
    root
}

#[test]
fn another_tenants_task_reaches_nothing_of_mine() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    broker.add_org("chemistry");
    let alice = broker.add_user("alice", "physics");
    let bob = broker.add_user("bob", "chemistry");
    let api = broker.api();
    let admin = broker.admin.clone();
    for (user, account) in [("alice", "nobody"), ("bob", "www-data")] {
        api.post_ok(
            "/v1/admin/users/run-as",
            &admin,
            &json!({"name": user, "account": account}),
        );
    }
    let token_file = dir.path().join("worker.token");
    std::fs::write(&token_file, broker.worker_token("physics")).unwrap();
    std::fs::set_permissions(&token_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();

    // A's task: a secret in its directory, a process that must survive B.
    let a = api.submit(
        &alice,
        &["umask 077; echo SECRET-A > mine.txt; sleep 3; cat mine.txt".into()],
    )[0];
    // B's task: every attempt prints `LEAK …` if it worked.
    let hostile = format!(
        r#"try() {{ if sh -c "$1" >/dev/null 2>&1; then echo "LEAK: $1"; else echo "denied: $1"; fi; }}
sleep 1
W=$(awk '{{print $4}}' /proc/$PPID/stat)
try "cat ../task-{a}-1/mine.txt"
try "ls ../task-{a}-1"
try "cat ../task-{a}-1/stdout"
try "cat /proc/$W/environ"
try "cat /proc/$W/mem"
try "cat {token}"
try "ls /proc/$W/fd"
try "kill -0 $(pgrep -u nobody sleep | head -n 1)"
env | grep -i -e token -e fairsched_broker | sed 's/^/LEAK: env /'
echo "env: $(env | grep -c FAIRSCHED_) FAIRSCHED_ variables, user $(id -un)"
echo end"#,
        token = token_file.display()
    );
    let b = api.submit(&bob, &[hostile])[0];
    let wd = dir.path().join("wd");
    let _w = broker.worker_with(
        "w",
        "",
        2,
        &wd,
        "process",
        &["--run-as-user", "--token-file", token_file.to_str().unwrap()],
    );
    broker.wait_idle(Duration::from_secs(60));

    let task = |id: u64, token: &str| api.get_ok(&format!("/v1/tasks/{id}"), token);
    assert_eq!(task(a, &alice)["state"], "completed", "A's task was disturbed");
    assert_eq!(task(b, &bob)["state"], "completed");
    let output = |id: u64, token: &str| {
        wait_for("the output", Duration::from_secs(20), || {
            let r = api.get(&format!("/v1/tasks/{id}/output"), Some(token));
            (r.status == 200).then_some(r.text)
        })
    };
    assert_eq!(output(a, &alice), "SECRET-A\n");
    let said = output(b, &bob);
    assert!(!said.contains("LEAK"), "{said}");
    assert_eq!(said.matches("denied: ").count(), 8, "{said}");
    assert!(
        said.contains("env: 2 FAIRSCHED_ variables, user www-data"),
        "{said}"
    );
    assert!(said.ends_with("end\n"), "{said}");
    // Run directories belong to their tasks' accounts, private.
    let meta = |p: std::path::PathBuf| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&p).unwrap();
        (m.uid(), m.mode() & 0o777)
    };
    let nobody = nix::unistd::User::from_name("nobody")
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    assert_eq!(meta(wd.join(format!("task-{a}-1"))), (nobody, 0o700));

    // B's token: A's task, its output, its explanation, its cancel.
    for path in [
        format!("/v1/tasks/{a}"),
        format!("/v1/tasks/{a}/output"),
        format!("/v1/tasks/{a}/explain"),
    ] {
        assert_eq!(api.get(&path, Some(&bob)).status, 403, "{path}");
    }
    let r = api.post(&format!("/v1/tasks/{a}/cancel"), Some(&bob), b"{}");
    assert_eq!(r.status, 403, "{}", r.text);
    // Nor can B's token act as a worker.
    let r = api.post("/v1/workers", Some(&bob), br#"{"slots":1,"host":"x"}"#);
    assert_eq!(r.status, 403, "{}", r.text);
    let r = api.post("/v1/workers/1/poll", Some(&bob), br#"{"wait_ms":0}"#);
    assert_eq!(r.status, 403, "{}", r.text);
}

/// A worker with --run-as-user refuses a task whose user has no local
/// account (fail closed: never as root, never as the worker's user).
#[test]
fn a_task_without_an_account_is_refused_by_a_run_as_user_worker() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    let carol = broker.add_user("carol", "physics");
    let api = broker.api();
    let r = api.post_json(
        "/v1/admin/users/run-as",
        &broker.admin,
        &json!({"name": "carol", "account": "root"}),
    );
    assert_eq!(r.status, 400, "{}", r.text);
    let id = api.submit(&carol, &["touch /tmp/should-not-exist-$FAIRSCHED_TASK".into()])[0];
    let wd = dir.path().join("wd");
    let wt = broker.worker_token("physics");
    let _w = broker.worker_with("w", &wt, 1, &wd, "process", &["--run-as-user"]);
    broker.wait_idle(Duration::from_secs(30));
    let t = api.get_ok(&format!("/v1/tasks/{id}"), &carol);
    assert_eq!(
        (t["state"].as_str(), t["exit_code"].as_i64()),
        (Some("failed"), Some(125)),
        "{t}"
    );
    assert!(!std::path::Path::new(&format!("/tmp/should-not-exist-{id}")).exists());
}

/// A task that replaces its output files with links to the root worker's
/// files (its directory is its own) gets nothing through them: the worker
/// neither writes, nor gives away, nor sends back what they point to.
#[test]
fn links_in_a_run_directory_do_not_reach_the_root_worker() {
    if !is_root() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "root:secret\n").unwrap();
    std::fs::set_permissions(&victim, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // Reachable by path from the task's account, not readable by it.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o711)).unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    let mallory = broker.add_user("mallory", "physics");
    let api = broker.api();
    api.post_ok(
        "/v1/admin/users/run-as",
        &broker.admin,
        &json!({"name": "mallory", "account": "nobody"}),
    );
    let v = victim.display();
    let body = json!({"tasks": [{
        "command": format!("rm -f stdout stderr; ln -s {v} stdout; ln -s {v} stderr"),
        "stage_out": "echo more",
    }]});
    let id = api.post_ok("/v1/tasks", &mallory, &body)["ids"][0]
        .as_u64()
        .unwrap();
    let wd = dir.path().join("wd");
    let wt = broker.worker_token("physics");
    let _w = broker.worker_with("w", &wt, 1, &wd, "process", &["--run-as-user"]);
    broker.wait_idle(Duration::from_secs(30));
    let t = api.get_ok(&format!("/v1/tasks/{id}"), &mallory);
    assert_eq!(
        (t["state"].as_str(), t["exit_code"].as_i64()),
        (Some("failed"), Some(125)),
        "{t}"
    );
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(
        (after.uid(), after.mode(), after.len()),
        (before.uid(), before.mode(), before.len())
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
    for stream in ["stdout", "stderr"] {
        let r = api.get(&format!("/v1/tasks/{id}/output?stream={stream}"), Some(&mallory));
        assert!(!r.text.contains("secret"), "{stream}: {}", r.text);
    }
}
