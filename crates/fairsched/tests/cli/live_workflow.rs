//! Workflows on the live service, real processes: `fairsched submit
//! --workflow` with a TOML DAG and with a WfCommons trace, a broker under
//! `--policy priority --control workflow-fairness` (which reads the
//! phases the worker reports). A task runs only after its parents
//! completed; a failed parent cancels what follows it; a broker SIGKILLed
//! right after a parent completed still releases the child once restarted.

use crate::common::{Broker, Proc, run_in, wait_for};
use fairsched_broker::api::{StatusReply, TaskOut};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A broker whose database was made by `admin init --policy priority
/// --control workflow-fairness` (`Broker::start` gives only `--policy`:
/// its database is made again with the control).
fn workflow_broker(dir: &Path) -> Broker {
    let mut b = Broker::start(dir, "priority", "30s");
    b.kill9();
    for ext in ["", "-wal", "-shm"] {
        let mut p = b.db.clone().into_os_string();
        p.push(ext);
        let _ = std::fs::remove_file(p);
    }
    let o = run_in(
        dir,
        &[
            "admin",
            "init",
            "--db",
            b.db.to_str().unwrap(),
            "--policy",
            "priority",
            "--control",
            "workflow-fairness",
        ],
    );
    assert!(
        o.status.success(),
        "admin init: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    b.admin = String::from_utf8(o.stdout).unwrap().trim().to_string();
    b.serve();
    b
}

/// A broker as [`workflow_broker`], an organization `physics` with a user
/// `alice` (her token) and a worker of `slots` slots.
fn setup(dir: &Path, slots: u32) -> (Broker, String, Proc) {
    let b = workflow_broker(dir);
    b.add_org("physics");
    let user = b.add_user("alice", "physics");
    let wtoken = b.worker_token("physics");
    let w = b.worker("w0", &wtoken, slots, &dir.join("wd"), "process");
    b.wait_slots(slots as u64);
    (b, user, w)
}

/// `fairsched ARGS --broker URL --token T` in `dir`, which must succeed;
/// its stdout.
fn cli(b: &Broker, token: &str, args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--broker", &b.url, "--token", token]);
    let o = run_in(&b.dir, &all);
    assert!(
        o.status.success(),
        "fairsched {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `submit --workflow FILE --json`: the ids, in the order of the file's
/// tasks once sorted parents first.
fn submit(b: &Broker, token: &str, file: &Path, extra: &[&str]) -> Vec<u64> {
    let mut args = vec!["submit", "--workflow", file.to_str().unwrap(), "--json"];
    args.extend(extra);
    let out = cli(b, token, &args);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(v["workflow"].as_u64().is_some(), "{v}");
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap())
        .collect()
}

/// `status --tasks --json`: the counts and every task by name.
fn status(b: &Broker, token: &str) -> (StatusReply, HashMap<String, TaskOut>) {
    let out = cli(b, token, &["status", "--tasks", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let st: StatusReply = serde_json::from_value(v.clone()).unwrap();
    let tasks: Vec<TaskOut> = serde_json::from_value(v["tasks"].clone()).unwrap();
    (st, tasks.into_iter().map(|t| (t.name.clone(), t)).collect())
}

/// Waits until nothing is held, waiting or running.
fn wait_done(b: &Broker, timeout: Duration) -> StatusReply {
    let api = b.api();
    wait_for("every task to end", timeout, || {
        let s = api.try_status(&b.admin)?;
        (s.held == 0 && s.waiting == 0 && s.running == 0).then_some(s)
    })
}

/// `parent` ended before `child` started.
fn before(tasks: &HashMap<String, TaskOut>, parent: &str, child: &str) {
    let p = &tasks[parent];
    let c = &tasks[child];
    let (end, start) = (
        p.end_ms.expect("parent ended"),
        c.start_ms.expect("child started"),
    );
    assert!(
        end <= start,
        "{child} started at {start} before {parent} ended at {end}"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_diamond_runs_in_dependency_order() {
    let dir = tempfile::tempdir().unwrap();
    let (b, user, _w) = setup(dir.path(), 3);
    let file = write(
        dir.path(),
        "diamond.toml",
        r#"
name = "diamond"
[[task]]
name = "d"
command = "sleep 0.2"
after = ["b", "c-1"]
[[task]]
name = "a"
command = "sleep 0.3"
[[task]]
name = "b"
command = "sleep 0.3; echo {name} > b.out"
after = ["a"]
[[task]]
name = "c-1"
command = "sleep 0.3"
after = ["a"]
activity = "c"
"#,
    );
    let ids = submit(&b, &user, &file, &[]);
    assert_eq!(ids.len(), 4);
    let (st, tasks) = status(&b, &user);
    assert_eq!(st.held, 3, "{st:?}");
    assert_eq!(tasks["d"].state, "held");
    let d = tasks["d"].id;
    // `explain`: a line saying why, then `key: value` lines (no JSON);
    // `explain --json`: the JSON alone.
    let out = cli(&b, &user, &["explain", &d.to_string()]);
    let (why, rest) = out.split_once('\n').unwrap();
    assert!(why.contains("held until its parents complete"), "{why}");
    assert!(!rest.contains('{'), "{out}");
    for key in [
        "state:        held",
        "policy:       priority, control workflow-fairness",
        "waiting for:  task(s) ",
    ] {
        assert!(
            rest.lines().any(|l| l.starts_with(key)),
            "no `{key}` line in\n{out}"
        );
    }
    assert!(rest.contains("organization: physics"), "{out}");
    let json = cli(&b, &user, &["explain", &d.to_string(), "--json"]);
    let e: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(e["state"], "held");
    assert_eq!(e["org_name"], "physics");
    assert!(e["fairness"]["eta_u"].is_number(), "{e}");
    assert_eq!(e["waiting_for"].as_array().unwrap().len(), 2, "{e}");
    assert!(e.get("user_satisfaction").is_some(), "{e}");

    let st = wait_done(&b, Duration::from_secs(20));
    assert_eq!(st.completed, 4, "{st:?}");
    let (_, tasks) = status(&b, &user);
    before(&tasks, "a", "b");
    before(&tasks, "a", "c-1");
    before(&tasks, "b", "d");
    before(&tasks, "c-1", "d");
    // b and c-1 ran side by side (3 slots).
    let (b_, c) = (&tasks["b"], &tasks["c-1"]);
    assert!(b_.start_ms.unwrap() < c.end_ms.unwrap() && c.start_ms.unwrap() < b_.end_ms.unwrap());
    assert!(
        tasks
            .values()
            .all(|t| t.workflow == tasks["a"].workflow && t.workflow.is_some())
    );
    let out = std::fs::read_dir(dir.path().join("wd"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("b.out")).ok())
        .collect::<Vec<_>>();
    assert_eq!(out, vec!["b\n".to_string()], "`{{name}}` became the task's name");

    // Satisfaction and organizations by name in /metrics, satisfaction in explain.
    let m = b.api().get("/metrics", None).text;
    assert!(m.contains("fairsched_org_slots{org=\"physics\"} 3"), "{m}");
    let line = m
        .lines()
        .find(|l| l.starts_with("fairsched_user_satisfaction{user=\"alice\"}"))
        .unwrap_or_else(|| panic!("no satisfaction of alice in\n{m}"));
    let s: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(s > 0.0 && s <= 1.0, "{line}");
    assert!(m.contains("fairsched_policy_eta_u"), "{m}");
    let e = b.api().get_ok(&format!("/v1/tasks/{d}/explain"), &user);
    assert!(e["user_satisfaction"].as_f64().unwrap() > 0.0, "{e}");
}

/// The WfCommons trace of the test: a small real one from
/// ../shared/data/traces/workflows, else the loader's own fixture.
fn trace() -> PathBuf {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/workflows/pegasus/1000genome-chameleon-2ch-100k-001.json.gz");
    if shared.exists() {
        return shared;
    }
    eprintln!("{}: not found; using the small fixture", shared.display());
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fairsched-trace/tests/fixtures/wfcommons-1.5-split.json")
}

#[test]
fn a_wfcommons_trace_runs_every_task_after_its_parents() {
    let dir = tempfile::tempdir().unwrap();
    let (b, user, _w) = setup(dir.path(), 4);
    let file = trace();
    let w = match fairsched_trace::workflow::WorkflowSource::load(&file, &Default::default()).unwrap() {
        fairsched_trace::workflow::WorkflowSource::Trace(w) => w,
        _ => unreachable!(),
    };
    // Without a command per activity: a usage error naming the missing ones.
    let o = run_in(
        dir.path(),
        &[
            "submit",
            "--workflow",
            file.to_str().unwrap(),
            "--command",
            &format!("{}=true", w.activities[0]),
            "--broker",
            &b.url,
            "--token",
            &user,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    for a in &w.activities[1..] {
        assert!(err.contains(a.as_str()), "{a} not named in: {err}");
    }
    assert!(!err.contains(&format!(" {},", w.activities[0])), "{err}");

    let log = dir.path().join("ran.log");
    let commands: Vec<String> = w
        .activities
        .iter()
        .map(|a| format!("{a}=echo {{name}} >> {}", log.display()))
        .collect();
    let mut extra: Vec<&str> = Vec::new();
    for c in &commands {
        extra.extend(["--command", c.as_str()]);
    }
    extra.extend(["--name", "genome"]);
    let ids = submit(&b, &user, &file, &extra);
    assert_eq!(ids.len(), w.tasks.len());
    let st = wait_done(&b, Duration::from_secs(60));
    assert_eq!(st.completed as usize, w.tasks.len(), "{st:?}");
    let (_, tasks) = status(&b, &user);
    for t in &w.tasks {
        for &p in &t.parents {
            before(&tasks, &w.tasks[p as usize].name, &t.name);
        }
    }
    let mut ran: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    ran.sort();
    let mut names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(ran, names, "each task ran once, with its name in its command");
}

#[test]
fn a_failed_parent_cancels_its_descendants() {
    let dir = tempfile::tempdir().unwrap();
    let (b, user, _w) = setup(dir.path(), 2);
    let file = write(
        dir.path(),
        "chain.toml",
        r#"
[[task]]
name = "bad"
command = "exit 3"
[[task]]
name = "next"
command = "true"
after = ["bad"]
[[task]]
name = "last"
command = "true"
after = ["next"]
[[task]]
name = "other"
command = "true"
"#,
    );
    submit(&b, &user, &file, &[]);
    let st = wait_done(&b, Duration::from_secs(20));
    assert_eq!((st.failed, st.cancelled, st.completed), (1, 2, 1), "{st:?}");
    let (_, tasks) = status(&b, &user);
    let bad = tasks["bad"].id;
    assert_eq!(tasks["bad"].exit_code, Some(3));
    assert_eq!(tasks["next"].state, "cancelled");
    assert_eq!(
        tasks["next"].reason.as_deref(),
        Some(format!("parent task {bad} failed").as_str())
    );
    assert_eq!(tasks["last"].state, "cancelled");
    assert!(tasks["last"].start_ms.is_none());
    let out = cli(&b, &user, &["explain", &tasks["last"].id.to_string()]);
    assert!(out.contains("was cancelled"), "{out}");
    // The failed one says in which phase (the worker reports phases).
    assert_eq!(
        tasks["bad"].reason.as_deref(),
        Some("the exec phase failed (exit 3)")
    );

    // `status --tasks` shows the reasons; the admin's also the users.
    let line_of = |out: &str, id: u64| -> String {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(id.to_string().as_str()))
            .unwrap_or_else(|| panic!("no line for task {id} in\n{out}"))
            .to_string()
    };
    let out = cli(&b, &user, &["status", "--tasks"]);
    let header = out.lines().nth(2).unwrap();
    assert!(header.ends_with("reason") && !header.contains("user"), "{out}");
    let next = tasks["next"].id;
    assert!(
        line_of(&out, next).ends_with(&format!("parent task {bad} failed")),
        "{out}"
    );
    assert!(
        line_of(&out, bad).ends_with("the exec phase failed (exit 3)"),
        "{out}"
    );
    assert!(line_of(&out, tasks["other"].id).ends_with("other"), "{out}");
    let out = cli(&b, &b.admin, &["status", "--tasks"]);
    let header = out.lines().nth(2).unwrap();
    assert!(header.contains("user") && header.ends_with("reason"), "{out}");
    assert!(line_of(&out, next).contains("alice"), "{out}");
    let json = cli(&b, &b.admin, &["status", "--tasks", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["users"][tasks["next"].user.to_string()], "alice", "{v}");
    // A reason too long for the width goes on under its column.
    let o = crate::common::bin()
        .current_dir(&b.dir)
        .env("COLUMNS", "60")
        .args(["status", "--tasks", "--broker", &b.url, "--token", &user])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let first = line_of(&out, bad);
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| *l == first).unwrap();
    let column = first.find("the ").unwrap_or_else(|| panic!("{out}"));
    let more: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.len() > column && l[..column].trim().is_empty())
        .map(|l| l.trim())
        .collect();
    assert!(!more.is_empty(), "not wrapped:\n{out}");
    let whole = std::iter::once(&first[column..])
        .chain(more)
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(whole, "the exec phase failed (exit 3)", "{out}");

    // A held task cancelled by its user: its descendants go, its parent runs on.
    let file = write(
        dir.path(),
        "wait.toml",
        r#"
[[task]]
name = "slow"
command = "sleep 1"
[[task]]
name = "then"
command = "true"
after = ["slow"]
[[task]]
name = "after-then"
command = "true"
after = ["then"]
"#,
    );
    let ids = submit(&b, &user, &file, &[]);
    let out = cli(&b, &user, &["cancel", &ids[1].to_string()]);
    assert_eq!(out.trim(), format!("{} cancelled", ids[1]));
    let st = wait_done(&b, Duration::from_secs(20));
    assert_eq!((st.completed, st.cancelled), (2, 4), "{st:?}");
    let (_, tasks) = status(&b, &user);
    assert_eq!(tasks["slow"].state, "completed");
    assert_eq!(tasks["after-then"].state, "cancelled");

    // `export --swf -`: the log on standard output, the summary on
    // standard error; only tasks that ran are in it.
    let o = run_in(
        dir.path(),
        &["export", "--db", b.db.to_str().unwrap(), "--swf", "-"],
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with("; "), "{out}");
    assert_eq!(out.lines().filter(|l| !l.starts_with(';')).count(), 3, "{out}");
    assert!(err.contains("3 ended tasks (4 that never started"), "{err}");
    // A directory is not a database.
    let o = run_in(
        dir.path(),
        &["export", "--db", dir.path().to_str().unwrap(), "--swf", "-"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(dir.path().to_str().unwrap()) && err.contains("a directory"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_child_is_released_after_the_broker_is_killed_as_its_parent_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut b, user, mut w) = setup(dir.path(), 1);
    let log = dir.path().join("ran.log");
    let file = write(
        dir.path(),
        "pair.toml",
        &format!(
            r#"
[[task]]
name = "parent"
command = "sleep 0.5; echo parent >> {log}"
[[task]]
name = "child"
command = "echo child >> {log}"
after = ["parent"]
"#,
            log = log.display()
        ),
    );
    let ids = submit(&b, &user, &file, &[]);
    let api = b.api();
    let path = format!("/v1/tasks/{}", ids[0]);
    wait_for("the parent to complete", Duration::from_secs(20), || {
        let r = api.try_get(&path, Some(&user)).ok()?;
        (r.json()["state"] == "completed").then_some(())
    });
    b.kill9();
    b.serve();
    let st = wait_done(&b, Duration::from_secs(20));
    assert_eq!(st.completed, 2, "{st:?}");
    let (_, tasks) = status(&b, &user);
    before(&tasks, "parent", "child");
    assert_eq!(tasks["child"].attempts, 1);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "parent\nchild\n");
    assert!(w.alive(), "the worker rode out the restart");
}

#[test]
fn bad_workflow_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "cycle.toml",
            "[[task]]\nname = \"x\"\ncommand = \"true\"\nafter = [\"y\"]\n[[task]]\nname = \"y\"\ncommand = \"true\"\nafter = [\"x\"]\n",
            "a cycle of dependencies",
        ),
        (
            "unknown.toml",
            "[[task]]\nname = \"x\"\ncommand = \"true\"\nafter = [\"nope\"]\n",
            "task \"x\": after: \"nope\" is not a task",
        ),
        (
            "twice.toml",
            "[[task]]\nname = \"x\"\ncommand = \"true\"\n[[task]]\nname = \"x\"\ncommand = \"true\"\n",
            "task \"x\": two tasks have this name",
        ),
        (
            "field.toml",
            "[[task]]\nname = \"x\"\ncommand = \"true\"\nrequires = [\"y\"]\n",
            "field.toml:4",
        ),
    ];
    for (name, text, why) in cases {
        let file = write(dir.path(), name, text);
        // No broker is needed: the file is read first.
        let o = run_in(
            dir.path(),
            &[
                "submit",
                "--workflow",
                file.to_str().unwrap(),
                "--broker",
                "http://127.0.0.1:9",
                "--token",
                "t",
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(name) && err.contains(why), "{name}: {err}");
    }
}
