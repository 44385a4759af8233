//! The dashboard's snapshot (`GET /v1/dashboard`), built in process from a
//! broker driven through its writes: counts, queue order, workers' runs,
//! the policies' fairness columns, recent events, what it must never
//! carry, and that `/openapi.json` describes every field it has.

use fairsched_broker::api::{NewTask, WorkflowSpec};
use fairsched_broker::dashboard::{self, Dashboard, QUEUE_SHOWN, RECENT_KEPT};
use fairsched_broker::service::{Broker, Settings, Write, Written};
use fairsched_broker::{Config, Live};
use fairsched_proto::wire::{Report, ReportRequest, RunKey};
use serde_json::Value;
use std::path::PathBuf;

struct Setup {
    _dir: tempfile::TempDir,
    path: PathBuf,
    admin: String,
    /// (user id, token, org id).
    alice: (i64, String, u32),
    bob: (i64, String, u32),
    worker_token: String,
}

/// A database with two organizations, `physics` (alice) and `chemistry`
/// (bob), under these policies.
fn setup(order: &str, control: Option<&str>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.db");
    let live = Live::create(
        &path,
        &Config {
            order: order.into(),
            control: control.map(Into::into),
            ..Config::default()
        },
        &fairsched_core::Registry::builtin(),
    )
    .unwrap();
    let st = live.store();
    let admin = st.admin_token().unwrap();
    let physics = st.add_org("physics").unwrap();
    let chemistry = st.add_org("chemistry").unwrap();
    let a = st.add_user("alice", "physics").unwrap();
    let b = st.add_user("bob", "chemistry").unwrap();
    let worker_token = st.worker_token("physics").unwrap();
    let id = |t: &str| match st.authenticate(t).unwrap() {
        Some(fairsched_broker::Principal::User { id, .. }) => id,
        p => panic!("{p:?}"),
    };
    let alice = (id(&a), a, physics);
    let bob = (id(&b), b, chemistry);
    drop(live);
    Setup {
        _dir: dir,
        path,
        admin,
        alice,
        bob,
        worker_token,
    }
}

fn open(s: &Setup) -> Broker {
    Broker::open(&s.path, Settings::default()).unwrap()
}

fn one(b: &mut Broker, w: Write) -> Written {
    b.write(vec![w]).pop().unwrap().unwrap()
}

fn submit(b: &mut Broker, who: &(i64, String, u32), tasks: Vec<NewTask>) -> Vec<u64> {
    match one(
        b,
        Write::Submit {
            user: who.0,
            org: who.2,
            tasks,
            workflow: None,
            key: None,
            reservation: None,
        },
    ) {
        Written::Submitted { ids, .. } => ids,
        w => panic!("{w:?}"),
    }
}

fn task(command: &str) -> NewTask {
    NewTask {
        command: command.into(),
        ..NewTask::default()
    }
}

fn register(b: &mut Broker, org: u32, slots: u32, host: &str) -> u64 {
    match one(
        b,
        Write::Register {
            org,
            slots,
            host: host.into(),
        },
    ) {
        Written::Registered(r) => r.worker,
        w => panic!("{w:?}"),
    }
}

/// The worker's new assignments: (task, attempt).
fn poll(b: &mut Broker, worker: u64, org: u32) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = b
        .poll(worker, org)
        .unwrap()
        .assign
        .into_iter()
        .map(|a| (a.task, a.attempt))
        .collect();
    v.sort_unstable();
    v
}

/// `task` (attempt 1) exits with `code` on `worker`.
fn exit(b: &mut Broker, worker: u64, org: u32, task: u64, code: i32, still: &[u64]) {
    one(
        b,
        Write::Report {
            worker,
            org,
            body: ReportRequest {
                running: still.iter().map(|&t| RunKey { task: t, attempt: 1 }).collect(),
                reports: vec![Report::exit(RunKey { task, attempt: 1 }, code)],
                polled: None,
                short_of_disk: None,
            },
        },
    );
}

fn snap(b: &Broker) -> Dashboard {
    dashboard::snapshot(b, 0).unwrap()
}

fn json(b: &Broker) -> Value {
    serde_json::to_value(snap(b)).unwrap()
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].as_u64().unwrap())
        .collect()
}

/// (kind, task, outcome) of the recent events, oldest first.
fn kinds(v: &Value) -> Vec<(String, Option<u64>, Option<String>)> {
    let mut out: Vec<_> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["task"].as_u64(),
                e["outcome"].as_str().map(String::from),
            )
        })
        .collect();
    out.reverse();
    out
}

#[test]
fn counts_queue_runs_and_events_follow_the_tasks() {
    let s = setup("first-fit", None);
    let mut b = open(&s);
    let v = json(&b);
    assert_eq!(v["schema"], 1);
    assert_eq!(
        (
            &v["counts"]["waiting"],
            &v["counts"]["running"],
            &v["counts"]["completed"]
        ),
        (&Value::from(0), &Value::from(0), &Value::from(0))
    );
    assert_eq!(v["policy"]["order"], "first-fit");
    assert_eq!(v["workers"].as_array().unwrap().len(), 0);
    assert!(v["events"].as_array().unwrap().is_empty(), "{v}");
    let orgs: Vec<&str> = v["orgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(orgs, ["physics", "chemistry"]);
    let users: Vec<(&str, &str)> = v["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["name"].as_str().unwrap(), u["org"].as_str().unwrap()))
        .collect();
    assert_eq!(users, [("alice", "physics"), ("bob", "chemistry")]);

    let a = submit(&mut b, &s.alice, vec![task("true"), task("true"), task("true")]);
    let bb = submit(&mut b, &s.bob, vec![task("true")]);
    let v = json(&b);
    assert_eq!(v["counts"]["waiting"], 4);
    assert_eq!(v["queue"]["waiting"], 4);
    // No priorities: submission order.
    assert_eq!(ids(&v["queue"]["tasks"]), [a[0], a[1], a[2], bb[0]]);
    assert_eq!(v["queue"]["tasks"][3]["user"], "bob");
    assert_eq!(v["queue"]["tasks"][3]["org"], "chemistry");
    assert!(v["queue"]["tasks"][0]["wait_ms"].as_i64().unwrap() >= 0);

    let w = register(&mut b, s.alice.2, 2, "node-7");
    assert_eq!(poll(&mut b, w, s.alice.2), [(a[0], 1), (a[1], 1)]);
    let v = json(&b);
    assert_eq!(
        (&v["counts"]["waiting"], &v["counts"]["running"]),
        (&Value::from(2), &Value::from(2))
    );
    assert_eq!(ids(&v["queue"]["tasks"]), [a[2], bb[0]]);
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0]["worker"], w);
    assert_eq!(workers[0]["host"], "node-7");
    assert_eq!(workers[0]["org"], "physics");
    assert_eq!(
        (&workers[0]["slots"], &workers[0]["busy"]),
        (&Value::from(2), &Value::from(2))
    );
    let mut running = ids(&workers[0]["tasks"]);
    running.sort_unstable();
    assert_eq!(running, [a[0], a[1]]);
    assert_eq!(workers[0]["tasks"][0]["attempt"], 1);
    assert_eq!(workers[0]["tasks"][0]["user"], "alice");
    let physics = &v["orgs"][0];
    assert_eq!(
        (&physics["slots"], &physics["running"], &physics["waiting"]),
        (&Value::from(2), &Value::from(2), &Value::from(1))
    );
    assert_eq!(v["orgs"][1]["waiting"], 1);
    assert_eq!(v["users"][0]["running"], 2);
    assert_eq!(v["users"][1]["waiting"], 1);

    // One completes (the next starts), one fails.
    exit(&mut b, w, s.alice.2, a[0], 0, &[a[1]]);
    assert_eq!(poll(&mut b, w, s.alice.2), [(a[2], 1)]);
    let v = json(&b);
    assert_eq!(
        (
            &v["counts"]["waiting"],
            &v["counts"]["running"],
            &v["counts"]["completed"]
        ),
        (&Value::from(1), &Value::from(2), &Value::from(1))
    );
    exit(&mut b, w, s.alice.2, a[1], 3, &[a[2]]);
    assert_eq!(poll(&mut b, w, s.alice.2), [(bb[0], 1)]);
    let v = json(&b);
    assert_eq!(
        (
            &v["counts"]["waiting"],
            &v["counts"]["running"],
            &v["counts"]["completed"],
            &v["counts"]["failed"]
        ),
        (&Value::from(0), &Value::from(2), &Value::from(1), &Value::from(1))
    );
    assert_eq!(v["users"][0]["completed"], 1);
    assert_eq!(v["users"][0]["failed"], 1);
    assert!(v["queue"]["tasks"].as_array().unwrap().is_empty());

    let k = kinds(&v);
    let expected: Vec<(String, Option<u64>, Option<String>)> = vec![
        ("submit".into(), Some(a[0]), None),
        ("submit".into(), Some(bb[0]), None),
        ("worker-join".into(), None, None),
        ("start".into(), Some(a[0]), None),
        ("start".into(), Some(a[1]), None),
        ("end".into(), Some(a[0]), Some("completed".into())),
        ("start".into(), Some(a[2]), None),
        ("end".into(), Some(a[1]), Some("failed".into())),
        ("start".into(), Some(bb[0]), None),
    ];
    assert_eq!(k, expected);
    let e = v["events"].as_array().unwrap();
    assert_eq!(e.last().unwrap()["count"], 3, "alice's submission: {e:?}");
    assert_eq!(e.last().unwrap()["user"], "alice");
    assert_eq!(e[e.len() - 3]["slots"], 2, "the worker joined with 2 slots");
    assert!(
        e.windows(2)
            .all(|w| w[0]["seq"].as_u64() > w[1]["seq"].as_u64()
                && w[0]["t_ms"].as_i64() >= w[1]["t_ms"].as_i64()),
        "newest first: {e:?}"
    );
    assert_eq!(e[0]["worker"], w, "bob's task started on the worker");

    // The worker leaves: its tasks go back to the queue.
    one(
        &mut b,
        Write::Leave {
            worker: w,
            org: s.alice.2,
            why: fairsched_broker::service::Gone::Left,
        },
    );
    let v = json(&b);
    assert!(v["workers"].as_array().unwrap().is_empty());
    assert_eq!(v["counts"]["waiting"], 2);
    assert_eq!(v["orgs"][0]["slots"], 0);
    let k = kinds(&v);
    let tail: Vec<&str> = k[k.len() - 3..].iter().map(|x| x.0.as_str()).collect();
    assert_eq!(tail, ["worker-leave", "requeue", "requeue"], "{k:?}");
}

#[test]
fn recent_events_keep_the_last_ones() {
    let s = setup("first-fit", None);
    let mut b = open(&s);
    let mut all = Vec::new();
    for _ in 0..RECENT_KEPT + 5 {
        all.extend(submit(&mut b, &s.alice, vec![task("true")]));
    }
    let v = json(&b);
    let shown: Vec<u64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["task"].as_u64().unwrap())
        .collect();
    assert_eq!(shown.len(), RECENT_KEPT);
    let mut newest: Vec<u64> = all[all.len() - RECENT_KEPT..].to_vec();
    newest.reverse();
    assert_eq!(shown, newest);
}

#[test]
fn the_queue_is_in_priority_then_submission_order_and_capped() {
    let s = setup("priority", None);
    // Any priority, the highest included (`serve --max-user-priority`).
    let mut b = Broker::open(
        &s.path,
        Settings {
            max_user_priority: i64::MAX,
            ..Settings::default()
        },
    )
    .unwrap();
    let p = |prio: i64| NewTask {
        priority: Some(prio),
        ..task("true")
    };
    let a = submit(
        &mut b,
        &s.alice,
        vec![p(1), p(5), p(3), p(5), p(i64::MIN), p(i64::MAX)],
    );
    let v = json(&b);
    assert_eq!(ids(&v["queue"]["tasks"]), [a[5], a[1], a[3], a[2], a[0], a[4]]);
    let prios: Vec<i64> = v["queue"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(prios, [i64::MAX, 5, 5, 3, 1, i64::MIN]);

    // More than shown: the first QUEUE_SHOWN in that order, the rest counted.
    let more: Vec<NewTask> = (0..QUEUE_SHOWN as i64 + 40).map(|i| p(i % 7)).collect();
    let m = submit(&mut b, &s.bob, more);
    let v = json(&b);
    let total = a.len() + m.len();
    assert_eq!(v["queue"]["waiting"], total as u64);
    let shown = v["queue"]["tasks"].as_array().unwrap();
    assert_eq!(shown.len(), QUEUE_SHOWN);
    assert_eq!(v["queue"]["machines"][0]["hidden"], (total - QUEUE_SHOWN) as u64);
    assert_eq!(v["queue"]["machines"][0]["waiting"], total as u64);
    // The same as sorting every waiting task.
    let mut every: Vec<(std::cmp::Reverse<i64>, u64)> = a
        .iter()
        .zip([1, 5, 3, 5, i64::MIN, i64::MAX])
        .map(|(&id, pr)| (std::cmp::Reverse(pr), id))
        .chain(m.iter().zip(0..).map(|(&id, i)| (std::cmp::Reverse(i % 7), id)))
        .collect();
    every.sort_unstable();
    let expected: Vec<u64> = every[..QUEUE_SHOWN].iter().map(|x| x.1).collect();
    assert_eq!(ids(&v["queue"]["tasks"]), expected);
}

/// Which fairness columns each policy defines; undefined ones are null.
#[test]
fn fairness_columns_follow_the_policy() {
    // first-fit: only satisfaction.
    let s = setup("first-fit", None);
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 1, "h");
    submit(&mut b, &s.alice, vec![task("true")]);
    poll(&mut b, w, s.alice.2);
    std::thread::sleep(std::time::Duration::from_millis(30));
    let v = json(&b);
    let d = &v["policy"]["defines"];
    assert_eq!(
        (&d["satisfaction"], &d["phi_psi"], &d["usage"], &d["eta_u"]),
        (
            &Value::Bool(true),
            &Value::Bool(false),
            &Value::Bool(false),
            &Value::Bool(false)
        )
    );
    for o in v["orgs"].as_array().unwrap() {
        for k in ["phi", "psi", "phi_minus_psi", "usage_slot_s"] {
            assert!(o[k].is_null(), "{k} under first-fit: {o}");
        }
    }
    assert!(v["policy"]["eta_u"].is_null());
    // alice alone has had work: she got everything she deserved.
    let alice = v["users"][0]["satisfaction"].as_f64().unwrap();
    assert!((alice - 1.0).abs() < 0.05, "{alice}");
    assert!(v["users"][1]["satisfaction"].is_null(), "bob has had no work");
    let physics = v["orgs"][0]["satisfaction"].as_f64().unwrap();
    assert!((physics - alice).abs() < 0.05, "{physics} vs {alice}");
    assert!(v["orgs"][1]["satisfaction"].is_null());

    // direct-contr: φ, ψ and φ − ψ for every organization (0 before any
    // of its tasks started), no usage.
    let s = setup("direct-contr", None);
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 2, "h");
    let t = submit(&mut b, &s.alice, vec![task("true"), task("true")]);
    poll(&mut b, w, s.alice.2);
    std::thread::sleep(std::time::Duration::from_millis(30));
    exit(&mut b, w, s.alice.2, t[0], 0, &[t[1]]);
    let v = json(&b);
    assert_eq!(v["policy"]["defines"]["phi_psi"], true);
    for o in v["orgs"].as_array().unwrap() {
        let (phi, psi, diff) = (
            o["phi"].as_f64().unwrap(),
            o["psi"].as_f64().unwrap(),
            o["phi_minus_psi"].as_f64().unwrap(),
        );
        assert!((phi - psi - diff).abs() <= 1e-9 * phi.abs().max(1.0), "{o}");
        assert!(o["usage_slot_s"].is_null(), "{o}");
    }
    assert!(
        v["orgs"][0]["phi"].as_f64().unwrap() > 0.0,
        "physics contributed: {v}"
    );
    assert_eq!(v["orgs"][1]["phi"], 0.0, "chemistry has no slot");

    // fair-share: usage, no φ.
    let s = setup("fair-share", None);
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 1, "h");
    submit(&mut b, &s.alice, vec![task("true")]);
    poll(&mut b, w, s.alice.2);
    std::thread::sleep(std::time::Duration::from_millis(30));
    // The policies' state is as of the core's last step.
    submit(&mut b, &s.bob, vec![task("true")]);
    let v = json(&b);
    assert_eq!(v["policy"]["defines"]["usage"], true);
    assert!(v["orgs"][0]["usage_slot_s"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["orgs"][1]["usage_slot_s"], 0.0);
    assert!(v["orgs"][0]["phi"].is_null());
}

/// Under the workflow-fairness control: η_u, τ_u and each active
/// workflow's W_i.
#[test]
fn workflows_show_their_w_i_under_the_workflow_control() {
    let s = setup("priority", Some("workflow-fairness[tau=0.3]"));
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 1, "h");
    let wf = |name: &str| {
        Some(WorkflowSpec {
            name: name.into(),
            activities: vec!["step".into()],
        })
    };
    let submit_wf = |b: &mut Broker, who: &(i64, String, u32), name: &str| match one(
        b,
        Write::Submit {
            user: who.0,
            org: who.2,
            tasks: vec![task("true"), task("true"), task("true")],
            workflow: wf(name),
            key: None,
            reservation: None,
        },
    ) {
        Written::Submitted { workflow, .. } => workflow.unwrap(),
        w => panic!("{w:?}"),
    };
    let first = submit_wf(&mut b, &s.alice, "montage");
    let second = submit_wf(&mut b, &s.bob, "gate");
    poll(&mut b, w, s.alice.2);
    let v = json(&b);
    assert_eq!(v["policy"]["defines"]["eta_u"], true);
    assert_eq!(v["policy"]["tau_u"], 0.3);
    assert!(v["policy"]["eta_u"].is_number(), "{}", v["policy"]);
    let wfs = v["workflows"].as_array().unwrap();
    let listed: Vec<(u64, &str, &str, &str)> = wfs
        .iter()
        .map(|w| {
            (
                w["workflow"].as_u64().unwrap(),
                w["name"].as_str().unwrap(),
                w["user"].as_str().unwrap(),
                w["org"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (first as u64, "montage", "alice", "physics"),
            (second as u64, "gate", "bob", "chemistry")
        ]
    );
    let ws: Vec<f64> = wfs.iter().map(|w| w["w"].as_f64().unwrap()).collect();
    let eta = v["policy"]["eta_u"].as_f64().unwrap();
    let spread = ws.iter().cloned().fold(f64::MIN, f64::max) - ws.iter().cloned().fold(f64::MAX, f64::min);
    assert!((eta - spread).abs() < 1e-9, "η_u {eta} = W_max − W_min of {ws:?}");
}

/// No command, task or workflow-free text a user typed, token, or token
/// hash: the snapshot needs no token.
#[test]
fn the_snapshot_carries_no_command_name_or_token() {
    let s = setup("first-fit", None);
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 1, "h");
    submit(
        &mut b,
        &s.alice,
        vec![NewTask {
            command: "echo command-marker-8731".into(),
            name: Some("name-marker-5512".into()),
            stage_in: Some("cp stage-marker-2291 .".into()),
            ..NewTask::default()
        }],
    );
    submit(&mut b, &s.bob, vec![task("echo command-marker-8731")]);
    poll(&mut b, w, s.alice.2);
    let text = serde_json::to_string(&snap(&b)).unwrap();
    for secret in [
        "command-marker-8731",
        "name-marker-5512",
        "stage-marker-2291",
        s.admin.as_str(),
        s.alice.1.as_str(),
        s.bob.1.as_str(),
        s.worker_token.as_str(),
    ] {
        assert!(!text.contains(secret), "`{secret}` in {text}");
    }
    for token in [&s.admin, &s.alice.1, &s.bob.1, &s.worker_token] {
        // As the store keeps them (identity.rs).
        let h: String = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(!text.contains(&h), "a token hash in {text}");
    }
}

/// Every field of the snapshot is in `/openapi.json`'s `Dashboard` schema
/// (and the schemas it refers to), at every depth.
#[test]
fn openapi_describes_every_field_of_the_snapshot() {
    let doc: Value = serde_json::from_str(include_str!("../../src/openapi.json")).unwrap();
    let s = setup("direct-contr", Some("workflow-fairness"));
    let mut b = open(&s);
    let w = register(&mut b, s.alice.2, 1, "h");
    let Written::Submitted { ids: t, .. } = one(
        &mut b,
        Write::Submit {
            user: s.alice.0,
            org: s.alice.2,
            tasks: vec![task("true"), task("true"), task("true")],
            workflow: Some(WorkflowSpec {
                name: "w".into(),
                activities: vec!["a".into()],
            }),
            key: None,
            reservation: None,
        },
    ) else {
        panic!()
    };
    poll(&mut b, w, s.alice.2);
    exit(&mut b, w, s.alice.2, t[0], 0, &[]);
    let v = json(&b);
    for list in ["workers", "orgs", "users", "workflows", "events"] {
        assert!(!v[list].as_array().unwrap().is_empty(), "{list} is empty: {v}");
    }
    assert!(!v["queue"]["machines"].as_array().unwrap().is_empty());

    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => {
                let name = r.trim_start_matches("#/components/schemas/");
                &doc["components"]["schemas"][name]
            }
            None => schema,
        }
    }
    fn check(doc: &Value, schema: &Value, v: &Value, at: &str) {
        let schema = resolve(doc, schema);
        match v {
            Value::Object(map) => {
                let props = schema["properties"].as_object();
                if let Some(extra) = schema["additionalProperties"]
                    .as_object()
                    .filter(|_| props.is_none())
                {
                    // A map: every value has that schema.
                    for (k, x) in map {
                        check(doc, &Value::Object(extra.clone()), x, &format!("{at}.{k}"));
                    }
                    return;
                }
                let props = props.unwrap_or_else(|| panic!("{at}: no properties in {schema}"));
                for (k, x) in map {
                    let sub = props
                        .get(k)
                        .unwrap_or_else(|| panic!("{at}.{k} is not in openapi.json"));
                    check(doc, sub, x, &format!("{at}.{k}"));
                }
                for r in schema["required"].as_array().into_iter().flatten() {
                    assert!(map.contains_key(r.as_str().unwrap()), "{at}.{r} is required");
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    check(doc, &schema["items"], x, &format!("{at}[{i}]"));
                }
            }
            _ => {}
        }
    }
    check(
        &doc,
        &serde_json::json!({"$ref": "#/components/schemas/Dashboard"}),
        &v,
        "Dashboard",
    );
}
