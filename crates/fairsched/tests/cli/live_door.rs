//! The door (issue 38, finding 1): no one without a token, and no tenant,
//! can take the memory the broker reads request bodies with from another.
//! Before, one 256 MiB budget for every body being read was taken before
//! the token was checked: 64 anonymous connections each holding 4 MiB less
//! a few bytes of a `POST /v1/tasks` body made every POST with a body
//! answer 503 (the workers' polls and reports too, until their runs were
//! killed). Now a body is read only once its token is known, within its
//! principal's budget; a worker whose call is refused for want of budget
//! is not evicted for it.

use crate::common::{Api, Broker, wait_for};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The attack's declared length: the broker's largest body.
const DECLARED: usize = 4 << 20;
/// What each connection sends of it.
const SENT: usize = DECLARED - 16;

/// Connections that each send a `POST /v1/tasks` head declaring
/// [`DECLARED`] bytes, then [`SENT`] of them, and hold the connection open
/// until the broker closes it; then again, until `stop`.
struct Flood {
    stop: Arc<AtomicBool>,
    /// Heads and bodies sent in full (the broker read them, or buffers do).
    sent: Arc<AtomicU64>,
    /// Attempts that ended (refused, timed out, or reset).
    ended: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Flood {
    fn start(addr: &str, token: Option<&str>, connections: usize) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let ended = Arc::new(AtomicU64::new(0));
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let head = format!(
            "POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}Content-Length: {DECLARED}\r\n\r\n"
        );
        let threads = (0..connections)
            .map(|_| {
                let (stop, sent, ended) = (stop.clone(), sent.clone(), ended.clone());
                let (addr, head) = (addr.to_string(), head.clone());
                std::thread::spawn(move || {
                    let body = vec![b' '; SENT];
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(mut c) = TcpStream::connect(&addr) else {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        };
                        let _ = c.set_read_timeout(Some(Duration::from_millis(100)));
                        if c.write_all(head.as_bytes())
                            .and_then(|()| c.write_all(&body))
                            .is_ok()
                        {
                            sent.fetch_add(1, Ordering::Relaxed);
                        }
                        // Held until the broker closes it.
                        let mut sink = [0u8; 4096];
                        while !stop.load(Ordering::Relaxed) {
                            match c.read(&mut sink) {
                                Ok(0) => break,
                                Ok(_) => {}
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => break,
                            }
                        }
                        ended.fetch_add(1, Ordering::Relaxed);
                        // Then again (not in a tight loop: the machine is shared).
                        std::thread::sleep(Duration::from_millis(300));
                    }
                })
            })
            .collect();
        Flood {
            stop,
            sent,
            ended,
            threads,
        }
    }

    /// Waits until every connection has made one attempt (sent its partial
    /// body, or was refused before).
    fn wait_started(&self, connections: u64) {
        wait_for("the flood to start", Duration::from_secs(60), || {
            (self.sent.load(Ordering::Relaxed) + self.ended.load(Ordering::Relaxed) >= connections)
                .then_some(())
        });
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// One value of `/metrics`.
fn metric(api: &Api, name: &str) -> Option<f64> {
    let r = api.try_get("/metrics", None).ok()?;
    r.text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A submission of `n` tasks of `sleep SECS` (over 1 KiB of JSON: what the
/// shared budget left before was not enough).
fn batch(n: usize, secs: &str) -> Value {
    let tasks: Vec<Value> = (0..n)
        .map(|i| json!({"command": format!("sleep {secs}"), "name": format!("victim-{i}")}))
        .collect();
    json!({ "tasks": tasks })
}

/// Submits `batches` batches as `token`, each once the previous one has
/// started (waits on the queue, not on time); every submission must be
/// 201.
fn submit_batches(broker: &Broker, token: &str, batches: usize, per: usize) {
    let api = broker.api();
    for b in 0..batches {
        let body = batch(per, "0.1");
        assert!(body.to_string().len() > 1024);
        let r = api.post("/v1/tasks", Some(token), body.to_string().as_bytes());
        assert_eq!(r.status, 201, "submission {b} under the flood: {}", r.text);
        wait_for("the batch to start", Duration::from_secs(60), || {
            (api.status(&broker.admin).waiting == 0).then_some(())
        });
    }
}

/// Every task completed on its first run, no worker lost its lease, the
/// worker never failed a call.
fn nothing_was_hurt(broker: &Broker, worker_log: &str, tasks: usize) {
    let st = broker.wait_idle(Duration::from_secs(60));
    assert_eq!(st.completed as usize, tasks, "{st:?}");
    assert_eq!(st.workers, 1, "{st:?}");
    for t in broker.tasks() {
        assert_eq!((t.state.as_str(), t.attempts), ("completed", 1), "task {t:?}");
    }
    let api = broker.api();
    assert_eq!(metric(&api, "fairsched_requeued_lost_total"), Some(0.0));
    let log = std::fs::read_to_string(broker.dir.join(worker_log)).unwrap();
    for bad in ["poll failed", "report failed", "no call answered", "gone ("] {
        assert!(!log.contains(bad), "the worker said `{bad}`:\n{log}");
    }
    let blog = std::fs::read_to_string(broker.dir.join("broker.stderr")).unwrap();
    assert!(!blog.contains("lost its lease"), "{blog}");
}

/// 64 anonymous connections each holding a partial 4 MiB body: another
/// tenant's submissions, and the worker running its tasks, are not
/// touched (before: every submission was 503, and the worker's polls and
/// reports too).
#[test]
fn anonymous_partial_bodies_hurt_no_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "3s");
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let wt = broker.worker_token("physics");
    let _w = broker.worker("w", &wt, 8, &dir.path().join("wd"), "process");
    broker.wait_slots(8);
    let addr = broker.url.trim_start_matches("http://").to_string();
    let flood = Flood::start(&addr, None, 64);
    flood.wait_started(64);
    submit_batches(&broker, &alice, 5, 40);
    // The flood goes on until every task has ended.
    nothing_was_hurt(&broker, "w.stderr", 200);
    flood.stop();
    let api = broker.api();
    assert_eq!(metric(&api, "fairsched_http_bodies_shed_total"), Some(0.0));
    // (The worker's long poll holds its small body.)
    assert!(metric(&api, "fairsched_http_body_bytes").unwrap() < 65536.0);
    // A body without a token is refused before it is read.
    let r = api.post("/v1/tasks", None, batch(1, "0").to_string().as_bytes());
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.error().contains("without a token takes no body"), "{}", r.text);
    let r = api.post("/healthz", None, b"{}");
    assert_eq!(r.status, 401, "{}", r.text);
}

/// A user flooding partial bodies with its own token holds its own budget
/// (16 MiB) and no more: another user's submissions go through, the
/// flooder's own are 503 with Retry-After.
#[test]
fn a_tenant_flooding_bodies_hurts_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "3s");
    broker.add_org("physics");
    broker.add_org("chemistry");
    let alice = broker.add_user("alice", "physics");
    let mallory = broker.add_user("mallory", "chemistry");
    let wt = broker.worker_token("physics");
    let _w = broker.worker("w", &wt, 8, &dir.path().join("wd"), "process");
    broker.wait_slots(8);
    let api = broker.api();
    let addr = broker.url.trim_start_matches("http://").to_string();
    let flood = Flood::start(&addr, Some(&mallory), 64);
    flood.wait_started(64);
    // Her budget is full (4 bodies of 4 MiB), no more is held.
    wait_for("mallory's budget to fill", Duration::from_secs(30), || {
        (metric(&api, "fairsched_http_body_bytes")? >= (16 << 20) as f64).then_some(())
    });
    // (And the worker's long poll, its small body.)
    assert!(metric(&api, "fairsched_http_body_bytes").unwrap() < ((16 << 20) + 65536) as f64);
    let r = api.post("/v1/tasks", Some(&mallory), batch(1, "0").to_string().as_bytes());
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.error().contains("--body-budget"), "{}", r.text);
    assert_eq!(r.header("fairsched-lease"), None);
    submit_batches(&broker, &alice, 5, 40);
    nothing_was_hurt(&broker, "w.stderr", 200);
    flood.stop();
}

/// A worker whose calls the broker refuses for want of budget is not
/// evicted for it: each refused call renews its lease, and the 503 says so
/// (`fairsched-lease: renewed`), for longer than the lease.
#[test]
fn a_worker_whose_calls_are_refused_keeps_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_secs(3);
    // Each token may hold 4 MiB, no pool: one held body fills a worker's.
    let broker = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--body-budget", "4M", "--worker-body-pool", "0"],
        "3s",
        "127.0.0.1:0",
    );
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let wt = broker.worker_token("physics");
    let api = broker.api();
    let reg = api.post_ok("/v1/workers", &wt, &json!({"slots": 1, "host": "h"}));
    let (worker, session) = (
        reg["worker"].as_u64().unwrap(),
        reg["session"].as_str().unwrap().to_string(),
    );
    let id = api.submit(&alice, &["sleep 60".into()])[0];
    let poll = format!("/v1/workers/{worker}/poll");
    wait_for("the assignment", Duration::from_secs(10), || {
        let r = api.post(&poll, Some(&session), br#"{"wait_ms": 500}"#);
        assert_eq!(r.status, 200, "{}", r.text);
        (!r.json()["assign"].as_array().unwrap().is_empty()).then_some(())
    });
    // One body of 4 MiB less a few bytes, held as this worker: its budget.
    let addr = broker.url.trim_start_matches("http://").to_string();
    let mut held = TcpStream::connect(&addr).unwrap();
    write!(
        held,
        "POST {poll} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {session}\r\nContent-Length: {DECLARED}\r\n\r\n"
    )
    .unwrap();
    held.write_all(&vec![b' '; SENT]).unwrap();
    wait_for("the held body", Duration::from_secs(10), || {
        (metric(&api, "fairsched_http_body_bytes")? >= DECLARED as f64).then_some(())
    });
    // Refused, for longer than the lease: each refusal renews it.
    let start = Instant::now();
    let mut refused = 0;
    while start.elapsed() < lease * 3 / 2 {
        let r = api.post(&poll, Some(&session), br#"{"wait_ms": 0}"#);
        assert_eq!(r.status, 503, "{}", r.text);
        assert_eq!(r.header("fairsched-lease"), Some("renewed"), "{:?}", r.headers);
        refused += 1;
        std::thread::sleep(lease / 8);
    }
    assert!(refused >= 6);
    drop(held);
    wait_for("the held body to go", Duration::from_secs(10), || {
        (metric(&api, "fairsched_http_body_bytes")? == 0.0).then_some(())
    });
    // Still this worker, its run still running.
    let r = api.post(&poll, Some(&session), br#"{"wait_ms": 0}"#);
    assert_eq!(r.status, 200, "the worker was evicted: {}", r.text);
    let t = api.get_ok(&format!("/v1/tasks/{id}"), &alice);
    assert_eq!(
        (t["state"].as_str(), t["attempts"].as_u64()),
        (Some("running"), Some(1)),
        "{t}"
    );
    assert_eq!(api.status(&broker.admin).workers, 1);
    assert!(metric(&api, "fairsched_http_bodies_shed_total").unwrap() >= refused as f64);
}

/// A body that stops arriving is 408 after --body-idle-timeout, and holds
/// nothing after.
#[test]
fn a_stalled_body_is_408_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--body-idle-timeout", "300ms"],
        "30s",
        "127.0.0.1:0",
    );
    broker.add_org("physics");
    let alice = broker.add_user("alice", "physics");
    let api = broker.api();
    let addr = broker.url.trim_start_matches("http://").to_string();
    let mut c = TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\nContent-Length: 100\r\n\r\n{{\"tasks\""
    )
    .unwrap();
    let sent = Instant::now();
    let mut reply = String::new();
    let _ = c.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("sent nothing for 300ms"), "{reply}");
    assert!(sent.elapsed() < Duration::from_secs(5), "{:?}", sent.elapsed());
    assert_eq!(metric(&api, "fairsched_http_body_bytes"), Some(0.0));
}
