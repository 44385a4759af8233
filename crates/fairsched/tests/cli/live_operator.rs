//! An operator's controls, as the README shows them, through the command
//! line and a real broker (issue 27, findings 6 and 7): quotas, the
//! priority range, revoking and rotating tokens, evicting a worker,
//! removing users and organizations.

use crate::common::{Broker, run_in};
use serde_json::json;
use std::process::Output;

struct Setup {
    broker: Broker,
    alice: String,
    bob: String,
    worker: String,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    broker.add_org("chemistry");
    let alice = broker.add_user("alice", "physics");
    let bob = broker.add_user("bob", "physics");
    let worker = broker.worker_token("physics");
    Setup {
        broker,
        alice,
        bob,
        worker,
        _dir: dir,
    }
}

/// `fairsched ARGS --broker URL --token TOKEN`.
fn cli(s: &Setup, token: &str, args: &[&str]) -> Output {
    // Before a `--`: what follows it is the task's command.
    let at = args.iter().position(|&a| a == "--").unwrap_or(args.len());
    let mut all: Vec<&str> = args[..at].to_vec();
    all.extend(["--broker", &s.broker.url, "--token", token]);
    all.extend(&args[at..]);
    run_in(&s.broker.dir, &all)
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[track_caller]
fn refused(o: &Output, says: &str) {
    assert!(!o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(says), "expected {says:?} in: {err}");
}

/// Quotas on queued tasks, a user's and an organization's; lifted again
/// (finding 7: none existed).
#[test]
fn quotas_refuse_what_would_pass_them() {
    let s = setup();
    let admin = s.broker.admin.clone();
    ok(&cli(
        &s,
        &admin,
        &["admin", "quota", "set", "--user", "alice", "--max-queued", "2"],
    ));
    ok(&cli(&s, &s.alice, &["submit", "--count", "2", "--", "true"]));
    refused(
        &cli(&s, &s.alice, &["submit", "--", "true"]),
        "quota: you have 2 tasks queued",
    );
    // bob is not limited, until the organization is.
    ok(&cli(&s, &s.bob, &["submit", "--count", "3", "--", "true"]));
    ok(&cli(
        &s,
        &admin,
        &["admin", "quota", "set", "--org", "physics", "--max-queued", "6"],
    ));
    refused(
        &cli(&s, &s.bob, &["submit", "--count", "2", "--", "true"]),
        "your organization has 5",
    );
    ok(&cli(&s, &s.bob, &["submit", "--", "true"]));
    let list = ok(&cli(&s, &admin, &["admin", "quota", "list"]));
    assert_eq!(
        list,
        "user alice: at most 2 queued\norganization physics: at most 6 queued\n"
    );
    ok(&cli(
        &s,
        &admin,
        &[
            "admin",
            "quota",
            "set",
            "--org",
            "physics",
            "--max-queued",
            "none",
        ],
    ));
    ok(&cli(
        &s,
        &admin,
        &["admin", "quota", "set", "--user", "alice", "--max-queued", "none"],
    ));
    ok(&cli(&s, &s.alice, &["submit", "--count", "5", "--", "true"]));
    assert_eq!(ok(&cli(&s, &admin, &["admin", "quota", "list"])), "no quotas\n");
    assert_eq!(s.broker.api().status(&admin).waiting, 2 + 3 + 1 + 5);
}

/// Users may lower their tasks' priority, not raise it over others'
/// (finding 7: any priority up to 2^63 − 1 was taken).
#[test]
fn users_may_only_lower_their_priority() {
    let s = setup();
    refused(
        &cli(&s, &s.alice, &["submit", "--priority", "2", "--", "true"]),
        "--max-user-priority",
    );
    let huge = i64::MAX.to_string();
    refused(
        &cli(&s, &s.alice, &["submit", "--priority", &huge, "--", "true"]),
        "at most 1",
    );
    ok(&cli(&s, &s.alice, &["submit", "--priority", "-5", "--", "true"]));
    ok(&cli(&s, &s.alice, &["submit", "--priority", "1", "--", "true"]));
}

/// A leaked user token is revoked at once, even one the broker has just
/// accepted (its cache); rotation gives a new one; a worker token revoked
/// registers nothing more, and the worker it registered is evicted
/// (finding 6: tokens could not be revoked, and were cached for the
/// process's life).
#[test]
fn leaked_tokens_are_revoked_and_rotated() {
    let s = setup();
    let admin = s.broker.admin.clone();
    let api = s.broker.api();
    assert_eq!(api.get("/v1/status", Some(&s.alice)).status, 200);
    let said = ok(&cli(&s, &admin, &["admin", "token", "revoke", &s.alice]));
    assert_eq!(said, "revoked a token of user `alice`\n");
    assert_eq!(api.get("/v1/status", Some(&s.alice)).status, 401);
    refused(
        &cli(&s, &admin, &["admin", "token", "revoke", &admin]),
        "admin token",
    );

    assert_eq!(api.get("/v1/status", Some(&s.bob)).status, 200);
    let new = ok(&cli(&s, &admin, &["admin", "user", "rotate", "bob"]));
    let new = new.trim();
    assert_eq!(api.get("/v1/status", Some(&s.bob)).status, 401);
    assert_eq!(api.get("/v1/status", Some(new)).status, 200);

    // A worker registered with the token, then the token revoked.
    let reg = api.post_ok("/v1/workers", &s.worker, &json!({"slots": 1, "host": "w"}));
    let (w, session) = (
        reg["worker"].as_u64().unwrap(),
        reg["session"].as_str().unwrap().to_string(),
    );
    let said = ok(&cli(
        &s,
        &admin,
        &["admin", "token", "revoke", "--worker-tokens-of", "physics"],
    ));
    assert_eq!(said, "revoked 1 worker token of physics\n");
    let r = api.post("/v1/workers", Some(&s.worker), br#"{"slots":1,"host":"w2"}"#);
    assert_eq!(r.status, 401, "{}", r.text);
    // Its session still works, until the worker is evicted.
    let poll = |api: &crate::common::Api| {
        api.post(
            &format!("/v1/workers/{w}/poll"),
            Some(&session),
            br#"{"wait_ms":0}"#,
        )
    };
    assert_eq!(poll(&api).status, 200);
    let id = api.submit(new, &["sleep 60".into()])[0];
    assert_eq!(api.get_ok(&format!("/v1/tasks/{id}"), new)["state"], "running");
    ok(&cli(&s, &admin, &["admin", "worker", "evict", &w.to_string()]));
    let r = poll(&api);
    assert_eq!(r.status, 410, "{}", r.text);
    let t = api.get_ok(&format!("/v1/tasks/{id}"), new);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("waiting"), Some(1)),
        "{t}"
    );
}

/// Removing a user cancels what it had not finished and revokes its
/// tokens; removing an organization removes its users, evicts its
/// workers and takes no new user (finding 6: neither existed).
#[test]
fn removed_users_and_organizations_are_gone() {
    let s = setup();
    let admin = s.broker.admin.clone();
    let api = s.broker.api();
    let ids = api.submit(&s.bob, &["true".into(), "true".into()]);
    let said = ok(&cli(&s, &admin, &["admin", "user", "remove", "bob"]));
    assert_eq!(said, "removed user bob: 2 tasks cancelled\n");
    for id in ids {
        assert_eq!(
            api.get_ok(&format!("/v1/tasks/{id}"), &admin)["state"],
            "cancelled"
        );
    }
    assert_eq!(api.get("/v1/status", Some(&s.bob)).status, 401);

    let carol = s.broker.add_user("carol", "chemistry");
    let chem = s.broker.worker_token("chemistry");
    let reg = api.post_ok("/v1/workers", &chem, &json!({"slots": 2, "host": "c"}));
    let w = reg["worker"].as_u64().unwrap();
    api.submit(&carol, &["sleep 60".into(), "sleep 60".into(), "true".into()]);
    let said = ok(&cli(&s, &admin, &["admin", "org", "remove", "chemistry"]));
    assert_eq!(
        said,
        format!("removed organization chemistry: 3 tasks cancelled, workers evicted: [{w}]\n")
    );
    assert_eq!(api.get("/v1/status", Some(&carol)).status, 401);
    assert_eq!(
        api.post("/v1/workers", Some(&chem), br#"{"slots":1,"host":"c"}"#)
            .status,
        401
    );
    refused(
        &cli(
            &s,
            &admin,
            &["admin", "user", "add", "dave", "--org", "chemistry"],
        ),
        "was removed",
    );
    let st = api.status(&admin);
    assert_eq!((st.running, st.waiting, st.slots), (0, 0, 0), "{st:?}");
    // physics is untouched.
    ok(&cli(&s, &s.alice, &["submit", "--", "true"]));
}

/// Per-task limits: the operator's maximum is every task's default and
/// cap; the worker enforces them (finding 7: there were none).
#[test]
fn time_and_memory_limits_are_capped_defaulted_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--max-time-limit", "2s", "--max-memory", "64M"],
        "30s",
        "127.0.0.1:0",
    );
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let wt = broker.worker_token("physics");
    let s = Setup {
        broker,
        alice: alice.clone(),
        bob: String::new(),
        worker: wt.clone(),
        _dir: dir,
    };
    refused(
        &cli(&s, &alice, &["submit", "--time-limit", "1h", "--", "true"]),
        "at most 2000",
    );
    refused(
        &cli(&s, &alice, &["submit", "--memory", "1G", "--", "true"]),
        "serve --max-memory",
    );
    let api = s.broker.api();
    let slow = api.submit(&alice, &["sleep 60".into()])[0];
    let short = ok(&cli(
        &s,
        &alice,
        &["submit", "--time-limit", "500ms", "--", "sleep 60"],
    ));
    let short: u64 = short.trim().parse().unwrap();
    let greedy = api.submit(&alice, &["dd if=/dev/zero of=/dev/null bs=200M count=1".into()])[0];
    let fits = ok(&cli(
        &s,
        &alice,
        &[
            "submit",
            "--memory",
            "32M",
            "--",
            "dd if=/dev/zero of=/dev/null bs=1M count=1",
        ],
    ));
    let fits: u64 = fits.trim().parse().unwrap();
    let wd = s.broker.dir.join("wd");
    let _w = s.broker.worker("w", &s.worker, 4, &wd, "process");
    s.broker.wait_idle(std::time::Duration::from_secs(30));
    let state = |id: u64| {
        let t = api.get_ok(&format!("/v1/tasks/{id}"), &alice);
        (t["state"].as_str().unwrap().to_string(), t["exit_code"].as_i64())
    };
    assert_eq!(
        state(slow),
        ("failed".to_string(), Some(124)),
        "the default limit, 2 s"
    );
    assert_eq!(state(short), ("failed".to_string(), Some(124)));
    let (st, code) = state(greedy);
    assert_eq!(st, "failed", "200 MB under a 64 MiB limit");
    assert_ne!(code, Some(0));
    assert_eq!(state(fits).0, "completed");
}

/// `fairsched output`: the end of a run's stdout and stderr, from the
/// broker, for its owner only, after the worker removed the run's
/// directory (`--keep-runs`) (issue 27, item 7: output could only be read
/// on the worker's disk, where run directories stayed for ever).
#[test]
fn a_tasks_output_is_read_from_the_broker_by_its_owner() {
    let s = setup();
    let api = s.broker.api();
    let small = api.submit(&s.alice, &["echo hello; echo oops >&2; exit 3".into()])[0];
    let big = api.submit(&s.alice, &["seq 1 200000".into()])[0];
    let wd = s.broker.dir.join("wd");
    let _w = s
        .broker
        .worker_with("w", &s.worker, 2, &wd, "process", &["--keep-runs", "1s"]);
    s.broker.wait_idle(std::time::Duration::from_secs(30));
    // The run directories go once a second has passed…
    crate::common::wait_for(
        "the run directories removed",
        std::time::Duration::from_secs(20),
        || {
            let left = std::fs::read_dir(&wd)
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.file_name().to_string_lossy().starts_with("task-"))
                        .count()
                })
                .unwrap_or(0);
            (left == 0).then_some(())
        },
    );
    // …and the output stays readable.
    let id = small.to_string();
    assert_eq!(ok(&cli(&s, &s.alice, &["output", &id])), "hello\n");
    assert_eq!(ok(&cli(&s, &s.alice, &["output", &id, "--stderr"])), "oops\n");
    let o = cli(&s, &s.alice, &["output", &big.to_string()]);
    let out = ok(&o);
    assert!(out.ends_with("199999\n200000\n"), "{}", &out[out.len() - 40..]);
    assert_eq!(out.len(), 256 * 1024);
    let full: usize = (1..=200_000).map(|i: u32| i.to_string().len() + 1).sum();
    let note = String::from_utf8_lossy(&o.stderr);
    assert!(
        note.contains(&format!("the last 262144 of its {full} bytes")),
        "{note}"
    );
    // Not bob's to read; no such attempt.
    refused(&cli(&s, &s.bob, &["output", &id]), "belongs to another user");
    refused(
        &cli(&s, &s.alice, &["output", &id, "--attempt", "2"]),
        "no output of attempt 2",
    );
}

/// `admin task requeue`: a running task's run is killed on its worker and
/// the task runs again, a new attempt; a task not running is a 409
/// (issue 27, item 4).
#[test]
fn the_admin_requeues_a_running_task() {
    let s = setup();
    let api = s.broker.api();
    let log = s.broker.dir.join("attempts.log");
    let cmd = format!("echo $FAIRSCHED_ATTEMPT >> {}; sleep 60", log.display());
    let ids = api.submit(&s.alice, &[cmd.clone(), cmd]);
    let wd = s.broker.dir.join("wd");
    let _w = s.broker.worker("w", &s.worker, 1, &wd, "process");
    let lines = |n: usize| {
        crate::common::wait_for(
            &format!("{n} runs started"),
            std::time::Duration::from_secs(20),
            || {
                let t = std::fs::read_to_string(&log).unwrap_or_default();
                (t.lines().count() >= n).then_some(t)
            },
        )
    };
    assert_eq!(lines(1), "1\n");
    let admin = s.broker.admin.clone();
    refused(
        &cli(&s, &admin, &["admin", "task", "requeue", &ids[1].to_string()]),
        "is not running (waiting)",
    );
    let said = ok(&cli(
        &s,
        &admin,
        &["admin", "task", "requeue", &ids[0].to_string()],
    ));
    assert!(said.starts_with(&format!("task {}: ", ids[0])), "{said}");
    // FIFO puts it back first in line: it runs again at once, a second
    // attempt, on the slot its killed run left (a one-slot worker starts
    // nothing while a run's processes are alive).
    assert_eq!(lines(2), "1\n2\n");
    let t = api.get_ok(&format!("/v1/tasks/{}", ids[0]), &s.alice);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("running"), Some(2)),
        "{t}"
    );
    let other = api.get_ok(&format!("/v1/tasks/{}", ids[1]), &s.alice);
    assert_eq!(other["state"], "waiting");
}

/// `hold`/`release` (the user's and `admin task hold|release`) and
/// `admin quota set --max-running` with a real worker: a task on hold
/// does not run until released; past the running quota tasks wait held
/// and run one after another (issue 27, item 4).
#[test]
fn held_tasks_and_running_quotas_with_a_real_worker() {
    let s = setup();
    let api = s.broker.api();
    let admin = s.broker.admin.clone();
    let log = s.broker.dir.join("ran.log");
    ok(&cli(
        &s,
        &admin,
        &["admin", "quota", "set", "--user", "alice", "--max-running", "1"],
    ));
    ok(&cli(
        &s,
        &admin,
        &["admin", "quota", "set", "--user", "alice", "--max-queued", "10"],
    ));
    assert_eq!(
        ok(&cli(&s, &admin, &["admin", "quota", "list"])),
        "user alice: at most 10 queued, at most 1 running\n",
        "a limit not given keeps its value"
    );
    let cmd = |name: &str| format!("echo {name} >> {}; sleep 0.3", log.display());
    let ids = api.submit(&s.alice, &[cmd("a"), cmd("b"), cmd("c")]);
    let id = |i: usize| ids[i].to_string();
    // b is past the quota: held, and says why; alice puts c on hold, the
    // admin b.
    let said = ok(&cli(&s, &s.alice, &["hold", &id(2)]));
    assert!(said.contains("held: on hold (by its user)"), "{said}");
    ok(&cli(&s, &admin, &["admin", "task", "hold", &id(1)]));
    refused(
        &cli(&s, &s.alice, &["release", &id(1)]),
        "only the admin releases it",
    );
    refused(&cli(&s, &s.bob, &["hold", &id(0)]), "belongs to another user");
    // The admin's commands want the admin token (a user's would hold as
    // that user).
    refused(
        &cli(&s, &s.alice, &["admin", "task", "hold", &id(0)]),
        "admin token",
    );
    let wd = s.broker.dir.join("wd");
    let _w = s.broker.worker("w", &s.worker, 4, &wd, "process");
    let state = |i: usize| api.get_ok(&format!("/v1/tasks/{}", ids[i]), &s.alice)["state"].clone();
    crate::common::wait_for("a completes", std::time::Duration::from_secs(20), || {
        (state(0) == "completed").then_some(())
    });
    assert_eq!((state(1), state(2)), (json!("held"), json!("held")));
    ok(&cli(&s, &s.alice, &["release", &id(2)]));
    ok(&cli(&s, &admin, &["admin", "task", "release", &id(1)]));
    crate::common::wait_for("b and c complete", std::time::Duration::from_secs(20), || {
        (state(1) == "completed" && state(2) == "completed").then_some(())
    });
    // One at a time: the quota.
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran.lines().count(), 3, "{ran}");
    let runs: Vec<(i64, i64)> = ids
        .iter()
        .map(|i| {
            let t = api.get_ok(&format!("/v1/tasks/{i}"), &s.alice);
            (t["start_ms"].as_i64().unwrap(), t["end_ms"].as_i64().unwrap())
        })
        .collect();
    for w in runs.windows(2).chain([[runs[0], runs[2]].as_slice()]) {
        let (a, b) = (w[0], w[1]);
        assert!(
            a.1 <= b.0 || b.1 <= a.0,
            "runs overlap under a running quota of 1: {runs:?}"
        );
    }
}

/// `admin worker drain`: the worker takes no new task and, once its run
/// has ended, leaves and exits, as after its own drain (a new user found
/// it stayed registered with no slots for good).
#[test]
fn a_worker_the_admin_drains_leaves_once_its_runs_end() {
    let s = setup();
    let api = s.broker.api();
    let admin = s.broker.admin.clone();
    let ids = api.submit(&s.alice, &["sleep 0.5".into(), "true".into()]);
    let wd = s.broker.dir.join("wd");
    let mut w = s.broker.worker("w", &s.worker, 1, &wd, "process");
    let state = |id: u64| api.get_ok(&format!("/v1/tasks/{id}"), &s.alice)["state"].clone();
    crate::common::wait_for("the first task runs", std::time::Duration::from_secs(20), || {
        (state(ids[0]) == "running").then_some(())
    });
    let said = ok(&cli(&s, &admin, &["admin", "worker", "drain", "1"]));
    assert!(said.contains("drains"), "{said}");
    crate::common::wait_for(
        "the drained worker exits",
        std::time::Duration::from_secs(20),
        || (!w.alive()).then_some(()),
    );
    assert_eq!(state(ids[0]), "completed");
    assert_eq!(state(ids[1]), "waiting", "a drained worker takes no new task");
    assert_eq!(api.status(&admin).workers, 0);
}
