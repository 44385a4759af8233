//! Cheap reads of a real `fairsched serve` (issue 27, finding 4): the
//! routes that need no token are served from published frames, not by the
//! broker's thread; each client address has a rate limit on them; a
//! connection slow to send its request head, or idle, is closed; and
//! `GET /v1/tasks` pages.

use crate::common::{Api, Broker, run_in};
use fairsched_broker::api::TasksReply;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A broker (fifo) with more `serve` arguments.
fn broker(dir: &std::path::Path, serve: &[&str]) -> Broker {
    Broker::start_with(dir, &["--policy", "fifo"], serve, "30s", "127.0.0.1:0")
}

/// The value of the sample `name` (a whole line's name, labels included).
fn sample(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
        .trim()
        .parse()
        .unwrap()
}

/// Reads until the peer closes the connection (or resets it); how long it
/// took, or `None` if it was still open after `limit`.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            // A reset is a close too.
            Err(_) => return Some(start.elapsed()),
        }
    }
}

/// A request whose head never ends is closed once `--header-timeout` has
/// passed; so is a kept-alive connection left idle after a reply.
#[test]
fn a_half_sent_request_and_an_idle_connection_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), &["--header-timeout", "1s"]);
    let addr = b.url.trim_start_matches("http://").to_string();

    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    let took = closed_within(&mut half, Duration::from_secs(15))
        .expect("the half-sent request was still open after 15 s");
    assert!(took < Duration::from_secs(5), "closed after {took:?}");

    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 1024];
    let n = idle.read(&mut buf).unwrap();
    let reply = String::from_utf8_lossy(&buf[..n]);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("ok"), "{reply}");
    let took = closed_within(&mut idle, Duration::from_secs(15))
        .expect("the idle connection was still open after 15 s");
    assert!(took < Duration::from_secs(5), "closed after {took:?}");

    // Meanwhile the broker serves others.
    assert!(b.api().healthy());
}

/// Pages of `GET /v1/tasks` hold every task of the caller exactly once, by
/// id; `next` is absent on the last; `fairsched status --tasks` follows
/// them.
#[test]
fn paging_returns_every_task_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), &[]);
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let bob = b.add_user("bob", "physics");
    let api = b.api();
    let mut mine = BTreeSet::new();
    for round in 0..5 {
        let cmds: Vec<String> = (0..5).map(|i| format!("echo {round} {i}")).collect();
        mine.extend(api.submit(&alice, &cmds));
        api.submit(&bob, &["true".to_string()]);
    }
    assert_eq!(mine.len(), 25);

    let pages = |token: &str, limit: u32| -> (Vec<u64>, usize, TasksReply) {
        let (mut ids, mut pages) = (Vec::new(), 0);
        let mut path = format!("/v1/tasks?limit={limit}");
        loop {
            let r: TasksReply = serde_json::from_value(api.get_ok(&path, token)).unwrap();
            pages += 1;
            assert!(
                r.tasks.len() <= limit as usize,
                "{} tasks in a page of {limit}",
                r.tasks.len()
            );
            ids.extend(r.tasks.iter().map(|t| t.id));
            match r.next {
                Some(n) => {
                    assert_eq!(Some(n), r.tasks.last().map(|t| t.id));
                    path = format!("/v1/tasks?after={n}&limit={limit}");
                }
                None => return (ids, pages, r),
            }
        }
    };
    let (ids, n, _) = pages(&alice, 7);
    assert_eq!(n, 4, "25 tasks in pages of 7");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>(), mine);
    assert_eq!(ids.len(), 25);
    // A page exactly full, then none after it.
    let (ids, n, last) = pages(&alice, 25);
    assert_eq!((ids.len(), n), (25, 1));
    assert_eq!(last.next, None);
    // The admin: everyone's, with the names of their users.
    let (ids, _, last) = pages(&b.admin, 10);
    assert_eq!(ids.len(), 30);
    assert!(
        last.users.values().any(|n| n == "bob" || n == "alice"),
        "{:?}",
        last.users
    );
    // The default page holds them all; out of range and unknown parameters are 400.
    let r: TasksReply = serde_json::from_value(api.get_ok("/v1/tasks", &alice)).unwrap();
    assert_eq!((r.tasks.len(), r.next), (25, None));
    for bad in ["limit=0", "limit=10001", "after=x", "page=2"] {
        let r = api.get(&format!("/v1/tasks?{bad}"), Some(&alice));
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert!(!r.error().is_empty());
    }

    // More than a default page: the command line reads them all.
    let many: Vec<String> = (0..2500).map(|_| "true".to_string()).collect();
    let ids = api.submit(&bob, &many);
    let o = run_in(
        dir.path(),
        &["status", "--tasks", "--json", "--broker", &b.url, "--token", &bob],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed: Vec<u64> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(listed.len(), 2505);
    assert!(listed.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|i| listed.binary_search(i).is_ok()));
}

/// Past its burst a client gets 429 with `Retry-After` on the routes that
/// need no token (not on the others), and is served again once that time
/// has passed.
#[test]
fn the_rate_limit_answers_429_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), &["--anonymous-rate", "2", "--anonymous-burst", "5"]);
    let api = b.api();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(api.get("/healthz", None).status);
    }
    assert_eq!(&statuses[..5], &[200; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    let r = api.get("/v1/dashboard", None);
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.error().contains("too many requests"), "{}", r.text);
    let wait: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert!((1..=2).contains(&wait), "Retry-After: {wait}");
    // A route with a token is not limited.
    for _ in 0..10 {
        assert_eq!(api.get("/v1/status", Some(&b.admin)).status, 200);
    }
    std::thread::sleep(Duration::from_secs(wait));
    let r = api.get("/metrics", None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        sample(&r.text, "fairsched_http_rate_limited_total") >= 4,
        "{}",
        r.text
    );
    assert_eq!(api.get("/v1/dashboard", None).status, 200);
}

/// Many requests for the dashboard's snapshot from several clients at once
/// cost the broker's thread a few frame builds, not one read each: the
/// broker's count of its reads grows by no more than the builds the gap
/// allows in the time they took (an upper bound, not a timing: a slower
/// machine gets a looser one). An authenticated read is counted.
#[test]
fn anonymous_reads_do_not_go_through_the_broker_thread() {
    const CLIENTS: usize = 4;
    const EACH: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), &["--anonymous-rate", "0"]);
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let api = b.api();
    api.submit(&alice, &(0..50).map(|i| format!("echo {i}")).collect::<Vec<_>>());

    let reads = |api: &Api| {
        sample(
            &api.get("/metrics", None).text,
            "fairsched_http_broker_reads_total",
        )
    };
    let before = reads(&api);
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let api = Api::new(&b.url);
            std::thread::spawn(move || {
                for _ in 0..EACH {
                    let r = api.get("/v1/dashboard", None);
                    assert_eq!(r.status, 200, "{}", r.text);
                    assert_eq!(r.json()["counts"]["waiting"], 50);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let took = started.elapsed();
    let after = reads(&api);
    // Builds: one at first, then at most one per gap, for the dashboard;
    // and one for the second /metrics.
    let gaps = took.as_millis() as u64 / fairsched_broker::frames::MIN_GAP.as_millis() as u64;
    let allowed = 1 + (1 + gaps) + 1;
    let grew = after - before;
    assert!(
        grew <= allowed,
        "{} dashboard requests in {took:?} made {grew} reads of the broker's thread (at most {allowed} builds)",
        CLIENTS * EACH
    );
    // The counter counts: an authenticated read is one (and its token's
    // lookup, the first time).
    api.status(&alice);
    assert!(reads(&api) > after);
}
