//! The live dashboard of a real `fairsched serve` (docs/protocol.md,
//! "Dashboard"): the page and its files come from the broker alone; the
//! snapshot's counts follow tasks a real worker runs; the event stream
//! pushes a new snapshot when a task ends and ends when the broker stops;
//! no token is needed, and none (nor any command) is shown.

use crate::common::{Api, Broker, Proc, bin, run_in, wait_for};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `src` and `href` attribute values of an HTML page.
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            let end = rest.find('"').expect("a closing quote");
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// A broker (first-fit) with one organization, `physics`: the broker,
/// alice's token and a worker token.
fn physics(dir: &std::path::Path) -> (Broker, String, String) {
    let broker = Broker::start(dir, "first-fit", "30s");
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let wtoken = broker.worker_token("physics");
    (broker, alice, wtoken)
}

#[test]
fn the_page_and_its_files_come_from_the_broker_alone() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    let api = broker.api();
    let page = api.get("/", None);
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(
        page.header("content-type").unwrap().starts_with("text/html"),
        "{:?}",
        page.headers
    );
    let csp = page.header("content-security-policy").expect("a CSP");
    for d in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "style-src 'self'",
    ] {
        assert!(csp.contains(d), "{csp}");
    }
    for id in [
        "waiting-count",
        "running-count",
        "completed-count",
        "queue",
        "workers",
        "orgs",
        "users",
        "events",
        "updated",
        "status",
    ] {
        assert!(page.text.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    assert!(page.text.contains("<body data-state=\"connecting\">"));
    let refs = references(&page.text);
    assert!(refs.contains(&"dashboard.js".to_string()), "{refs:?}");
    assert!(refs.contains(&"dashboard.css".to_string()), "{refs:?}");
    let mut texts = vec![("/".to_string(), page.text.clone())];
    for r in &refs {
        if r == "data:," {
            continue;
        }
        assert!(
            !r.contains(':') && !r.starts_with("//") && !r.starts_with('/'),
            "`{r}` is not relative to the page"
        );
        let got = api.get(&format!("/{r}"), None);
        assert_eq!(got.status, 200, "{r}: {}", got.text);
        let ct = got.header("content-type").unwrap();
        let want = if r.ends_with(".js") {
            "text/javascript"
        } else {
            "text/css"
        };
        assert!(ct.starts_with(want), "{r}: {ct}");
        assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
        texts.push((r.clone(), got.text));
    }
    for (name, text) in &texts {
        for bad in ["http://", "https://", "//cdn", "@import", "fonts.googleapis"] {
            assert!(!text.contains(bad), "{name} contains `{bad}`");
        }
    }
    // The script reaches the broker by relative URLs only.
    let js = &texts.iter().find(|t| t.0 == "dashboard.js").unwrap().1;
    assert!(js.contains("new EventSource(\"v1/dashboard/events\")"));
    assert!(js.contains("fetch(\"v1/dashboard\""));
}

/// GET /v1/dashboard, without a token.
fn snapshot(api: &Api) -> Value {
    let r = api.get("/v1/dashboard", None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    r.json()
}

fn counts(v: &Value) -> (u64, u64, u64) {
    let c = &v["counts"];
    (
        c["waiting"].as_u64().unwrap(),
        c["running"].as_u64().unwrap(),
        c["completed"].as_u64().unwrap(),
    )
}

/// A command that runs until `gate/NAME` exists.
fn gated(gate: &Path, name: &str) -> String {
    format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done",
        gate.join(name).display()
    )
}

fn open_gate(gate: &Path, name: &str) {
    std::fs::write(gate.join(name), b"").unwrap();
}

#[test]
fn counts_follow_the_tasks_a_worker_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, alice, wtoken) = physics(dir.path());
    let api = broker.api();
    let gate = dir.path().join("gate");
    std::fs::create_dir(&gate).unwrap();

    assert_eq!(counts(&snapshot(&api)), (0, 0, 0));
    let ids = api.submit(&alice, &[gated(&gate, "0"), gated(&gate, "1"), gated(&gate, "2")]);
    let v = snapshot(&api);
    assert_eq!(counts(&v), (3, 0, 0));
    let queued: Vec<u64> = v["queue"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].as_u64().unwrap())
        .collect();
    assert_eq!(queued, ids);
    assert_eq!(v["events"][0]["kind"], "submit");
    assert_eq!(v["events"][0]["count"], 3);

    let _worker = broker.worker("w1", &wtoken, 2, &dir.path().join("wd"), "process");
    let v = wait_for("two tasks running", Duration::from_secs(30), || {
        let v = snapshot(&api);
        (counts(&v) == (1, 2, 0)).then_some(v)
    });
    let w = &v["workers"][0];
    assert_eq!(w["host"], "w1");
    assert_eq!((&w["slots"], &w["busy"]), (&Value::from(2), &Value::from(2)));
    let mut running: Vec<u64> = w["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].as_u64().unwrap())
        .collect();
    running.sort_unstable();
    assert_eq!(running, ids[..2]);
    assert_eq!(v["queue"]["tasks"][0]["task"], ids[2]);
    assert_eq!(v["orgs"][0]["running"], 2);
    assert_eq!(v["users"][0]["waiting"], 1);

    open_gate(&gate, "0");
    wait_for(
        "one completed, the third started",
        Duration::from_secs(30),
        || (counts(&snapshot(&api)) == (0, 2, 1)).then_some(()),
    );
    open_gate(&gate, "1");
    open_gate(&gate, "2");
    let v = wait_for("all three completed", Duration::from_secs(30), || {
        let v = snapshot(&api);
        (counts(&v) == (0, 0, 3)).then_some(v)
    });
    assert!(v["queue"]["tasks"].as_array().unwrap().is_empty());
    assert_eq!(v["workers"][0]["busy"], 0);
    assert_eq!(v["users"][0]["completed"], 3);
    let ended: Vec<u64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "end" && e["outcome"] == "completed")
        .map(|e| e["task"].as_u64().unwrap())
        .collect();
    let mut ended_sorted = ended.clone();
    ended_sorted.sort_unstable();
    assert_eq!(ended_sorted, ids, "{}", v["events"]);
    assert!(
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "worker-join" && e["slots"] == 2),
        "{}",
        v["events"]
    );
    let s = v["users"][0]["satisfaction"]
        .as_f64()
        .expect("alice's satisfaction");
    assert!(s > 0.0, "{s}");
}

/// Reads server-sent events from `url` on a thread: each `snapshot`
/// event's data, parsed, then `None` when the stream ends.
fn events(url: &str) -> (mpsc::Receiver<Option<Value>>, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let r = agent.get(url).call().expect("the stream opens");
    assert_eq!(r.status().as_u16(), 200);
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = r;
        let reader = BufReader::new(r.body_mut().as_reader());
        let (mut event, mut data) = (String::new(), String::new());
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if line.is_empty() {
                if event == "snapshot" {
                    let v = serde_json::from_str(&data).expect("a snapshot is JSON");
                    if tx.send(Some(v)).is_err() {
                        return;
                    }
                }
                event.clear();
                data.clear();
            } else if let Some(e) = line.strip_prefix("event:") {
                event = e.trim().to_string();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        let _ = tx.send(None);
    });
    (rx, ct)
}

/// The next snapshot for which `f` holds, within `timeout`.
fn next_where(
    rx: &mpsc::Receiver<Option<Value>>,
    timeout: Duration,
    what: &str,
    f: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Some(v)) if f(&v) => return v,
            Ok(Some(_)) => {}
            Ok(None) => panic!("the stream ended before {what}"),
            Err(_) => panic!("no snapshot with {what} within {timeout:?}"),
        }
    }
}

#[test]
fn the_event_stream_pushes_a_snapshot_when_a_task_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, alice, wtoken) = physics(dir.path());
    let api = broker.api();
    let gate = dir.path().join("gate");
    std::fs::create_dir(&gate).unwrap();

    let (rx, ct) = events(&format!("{}/v1/dashboard/events", broker.url));
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let first = next_where(&rx, Duration::from_secs(10), "the first snapshot", |_| true);
    assert_eq!(counts(&first), (0, 0, 0));

    let id = api.submit(&alice, &[gated(&gate, "go")])[0];
    next_where(&rx, Duration::from_secs(10), "the task waiting", |v| {
        counts(v) == (1, 0, 0)
    });
    let _worker = broker.worker("w1", &wtoken, 1, &dir.path().join("wd"), "process");
    let v = next_where(&rx, Duration::from_secs(30), "the task running", |v| {
        counts(v) == (0, 1, 0)
    });
    assert_eq!(v["workers"][0]["tasks"][0]["task"], id);

    open_gate(&gate, "go");
    let v = next_where(&rx, Duration::from_secs(30), "the task completed", |v| {
        counts(v) == (0, 0, 1)
    });
    assert_eq!(v["events"][0]["kind"], "end", "{}", v["events"]);
    assert_eq!(v["events"][0]["task"], id);
    assert_eq!(v["events"][0]["outcome"], "completed");
    // Nothing changes: snapshots still come (waits and satisfactions move).
    next_where(&rx, Duration::from_secs(10), "a refresh", |v| {
        counts(v) == (0, 0, 1)
    });
}

/// `fairsched serve` as a process of its own (the shared helper has no
/// SIGTERM): the process and the URL it listens on.
fn serve(dir: &Path) -> (Proc, String) {
    let db = dir.join("broker.db");
    let o = run_in(
        dir,
        &["admin", "init", "--db", db.to_str().unwrap(), "--policy", "fifo"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("serve.stdout");
    let mut cmd = bin();
    cmd.current_dir(dir)
        .args(["serve", "--db", db.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null());
    let p = Proc::spawn("broker", &mut cmd, None);
    let url = wait_for("`listening on`", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&out).ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("listening on "))?;
        Some(line.trim().to_string())
    });
    (p, url)
}

#[test]
fn the_stream_ends_when_the_broker_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, url) = serve(dir.path());
    let (rx, _) = events(&format!("{url}/v1/dashboard/events"));
    next_where(&rx, Duration::from_secs(10), "the first snapshot", |_| true);
    let asked = Instant::now();
    let status = p.terminate(Duration::from_secs(10));
    let status = status.expect("the broker exits by itself on SIGTERM with a stream open");
    assert!(status.success(), "{status:?}");
    assert!(asked.elapsed() < Duration::from_secs(5), "{:?}", asked.elapsed());
    // The stream ended (it was not cut by a kill).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => panic!("the stream did not end"),
        }
    }
}

#[test]
fn no_token_is_needed_and_none_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, alice, wtoken) = physics(dir.path());
    let api = broker.api();
    api.post_ok(
        "/v1/tasks",
        &alice,
        &serde_json::json!({"tasks": [{"command": "echo marker-3318", "name": "marker-4471"}]}),
    );
    // No token, a token the broker does not know, a user's: the same data.
    let none = api.get("/v1/dashboard", None);
    let bogus = api.get("/v1/dashboard", Some(&"0".repeat(64)));
    let user = api.get("/v1/dashboard", Some(&alice));
    for r in [&none, &bogus, &user] {
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(r.header("content-type").unwrap().starts_with("application/json"));
        assert_eq!(counts(&r.json()), (1, 0, 0));
    }
    for secret in [
        broker.admin.as_str(),
        alice.as_str(),
        wtoken.as_str(),
        "marker-3318",
        "marker-4471",
    ] {
        assert!(!none.text.contains(secret), "`{secret}` in {}", none.text);
    }
    // The rule for the rest is unchanged.
    assert_eq!(api.get("/v1/status", None).status, 401);
    assert_eq!(api.get("/v1/tasks", None).status, 401);
    // Read-only: a write without a token is refused at the door, before
    // its body is read (docs/security.md, "The door"); with one, 405.
    let r = api.post("/v1/dashboard", None, b"{}");
    assert_eq!(r.status, 401, "{}", r.text);
    let r = api.post("/v1/dashboard", Some(alice.as_str()), b"{}");
    assert_eq!(r.status, 405, "{}", r.text);
    assert!(r.header("allow").unwrap().contains("GET"));
    let (rx, ct) = events(&format!("{}/v1/dashboard/events", broker.url));
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let first = next_where(&rx, Duration::from_secs(10), "the first snapshot", |_| true);
    let text = first.to_string();
    for secret in [
        broker.admin.as_str(),
        alice.as_str(),
        wtoken.as_str(),
        "marker-3318",
    ] {
        assert!(!text.contains(secret), "`{secret}` in the stream");
    }
}
