//! The broker SIGKILLed at (seeded) random moments of a run and restarted
//! on the same database and port, while workers keep running (retrying)
//! and a client keeps submitting (retrying until acknowledged): every
//! acknowledged task completes, none runs twice, no retried submission
//! (each has its idempotency key) is submitted twice, and the final state
//! is the one an uninterrupted replay of the logged steps gives.
//!
//! Meanwhile workers are stopped (SIGSTOP) for moments shorter than their
//! lapse and continued: nothing of theirs is requeued or doubled.
//!
//! `FAIRSCHED_CRASH_SEED=N` replays another schedule of kills;
//! `FAIRSCHED_CRASH_KILLS` (default 6) and `FAIRSCHED_CRASH_TASKS` (at
//! least this many tasks acknowledged, default 0) size it:
//! `bench/kill-test.sh` runs 20 kills and 10,000 tasks.

use crate::common::{Api, Broker, free_port};
use fairsched_broker::Live;
use fairsched_broker::api::TaskOut;
use fairsched_core::Action;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `FAIRSCHED_CRASH_…` or `default`.
fn knob(name: &str, default: usize) -> usize {
    std::env::var(format!("FAIRSCHED_CRASH_{name}"))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Sets the flag when dropped (also when the test panics), so that the
/// submitter stops and the scope can end.
struct Raise<'a>(&'a AtomicBool);

impl Drop for Raise<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn sigkilled_broker_loses_nothing_and_runs_nothing_twice() {
    let seed: u64 = std::env::var("FAIRSCHED_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_241_122);
    let kills = knob("KILLS", 6);
    let target = knob("TASKS", 0);
    println!("seed {seed}, {kills} kills, at least {target} tasks");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let listen = format!("127.0.0.1:{}", free_port());
    // A lease far longer than any outage: no run is lost to an expired
    // lease, so a second run could only come from a broker mistake.
    // Snapshots every 25 steps: restarts restore one and replay the tail.
    let mut broker = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--snapshot-every", "25"],
        "20s",
        &listen,
    );
    broker.add_org("physics");
    let user = broker.add_user("alice", "physics");
    let wtoken = broker.worker_token("physics");
    let mut workers: Vec<_> = (0..2)
        .map(|w| {
            broker.worker(
                &format!("w{w}"),
                &wtoken,
                2,
                &dir.path().join(format!("wd{w}")),
                "process",
            )
        })
        .collect();
    broker.wait_slots(4);
    let url = broker.url.clone();

    let acked: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let enough = AtomicBool::new(target == 0);
    let retries = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut kill_times = Vec::new();
    let pids: Vec<i32> = workers.iter().map(|w| w.pid() as i32).collect();
    std::thread::scope(|s| {
        let _stop = Raise(&stop);
        let submitter = s.spawn(|| {
            let api = Api::with_timeout(&url, Duration::from_secs(5));
            let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x5b);
            let mut submissions = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let n = if target > 1000 {
                    50
                } else {
                    rng.random_range(1..=5)
                };
                let tasks: Vec<_> = (0..n)
                    .map(|_| {
                        // At full size (bench/kill-test.sh), runs without
                        // the sleep: 10,000 of them on 4 slots.
                        let ms = if target > 1000 {
                            0
                        } else {
                            rng.random_range(10..150)
                        };
                        json!({ "command": format!(
                            "echo $FAIRSCHED_TASK $FAIRSCHED_ATTEMPT >> {}; sleep 0.{ms:03}",
                            log.display()
                        )})
                    })
                    .collect();
                let body = json!({ "tasks": tasks }).to_string();
                // Until acknowledged, each try with the submission's key: a
                // submission whose reply was lost (the broker killed after
                // its commit) is in the log, and its retry gets its ids
                // instead of submitting it again.
                submissions += 1;
                let key = format!("crash-{submissions}");
                let since = Instant::now();
                loop {
                    match api.try_post_with("/v1/tasks", &user, ("Idempotency-Key", &key), body.as_bytes()) {
                        Ok(r) if r.status == 201 => {
                            let ids = r.json()["ids"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|i| i.as_u64().unwrap())
                                .collect::<Vec<_>>();
                            assert_eq!(ids.len(), n);
                            let mut a = acked.lock().unwrap();
                            a.extend(ids);
                            if a.len() >= target {
                                enough.store(true, Ordering::Relaxed);
                            }
                            break;
                        }
                        Ok(r) if r.status != 503 => panic!("submission refused: {} {}", r.status, r.text),
                        _ => {
                            retries.fetch_add(1, Ordering::Relaxed);
                            assert!(
                                since.elapsed() < Duration::from_secs(30),
                                "not acknowledged within 30 s"
                            );
                            std::thread::sleep(Duration::from_millis(30));
                        }
                    }
                }
                if target <= 1000 {
                    std::thread::sleep(Duration::from_millis(rng.random_range(10..80)));
                } else if enough.load(Ordering::Relaxed) {
                    // Enough queued: the kills go on while they run.
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        });
        // Workers stopped for less than their lapse (lease 20 s), then
        // continued, all along.
        let staller = s.spawn(|| {
            let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x57);
            let mut stalls = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(rng.random_range(100..600)));
                let pid = nix::unistd::Pid::from_raw(pids[rng.random_range(0..pids.len())]);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP);
                std::thread::sleep(Duration::from_millis(rng.random_range(50..1500)));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
                stalls += 1;
            }
            stalls
        });
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let t0 = Instant::now();
        let mut k = 0;
        while k < kills || !enough.load(Ordering::Relaxed) {
            k += 1;
            std::thread::sleep(Duration::from_millis(rng.random_range(200..1200)));
            kill_times.push(t0.elapsed());
            broker.kill9();
            std::thread::sleep(Duration::from_millis(rng.random_range(0..400)));
            broker.serve();
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        submitter.join().unwrap();
        println!(
            "{} worker stalls (SIGSTOP, then SIGCONT)",
            staller.join().unwrap()
        );
    });
    let kills = broker.starts as usize - 1;
    assert!(kills >= knob("KILLS", 6));
    assert_eq!(broker.listen, listen, "restarted on the same port");
    println!("killed at {kill_times:?}");

    let st = broker.wait_idle(Duration::from_secs(60 + target as u64 / 50));
    let tasks = broker.tasks();
    let acked = acked.into_inner().unwrap();
    println!(
        "{} tasks acknowledged, {} in the log, {} submission retries; {st:?}",
        acked.len(),
        tasks.len(),
        retries.load(Ordering::Relaxed)
    );
    assert!(acked.len() > 50, "only {} acknowledged tasks", acked.len());
    // Every retry was of a keyed submission: none was submitted twice, and
    // every task in the log is one acknowledged (once).
    let acked_set: BTreeSet<u64> = acked.iter().copied().collect();
    assert_eq!(acked_set.len(), acked.len(), "an id acknowledged twice");
    assert_eq!(
        acked_set,
        tasks.iter().map(|t| t.id).collect::<BTreeSet<u64>>(),
        "the tasks in the log are the tasks acknowledged: 0 duplicated by a retry"
    );
    let by_id: BTreeMap<u64, &TaskOut> = tasks.iter().map(|t| (t.id, t)).collect();
    for id in &acked {
        let t = by_id
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged task {id} is lost"));
        assert_eq!(
            (t.state.as_str(), t.attempts, t.exit_code),
            ("completed", 1, Some(0)),
            "{t:?}"
        );
    }
    for t in &tasks {
        assert_eq!(t.state, "completed", "{t:?}");
    }
    // Each ran exactly once.
    let mut runs: HashMap<u64, Vec<String>> = HashMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let (id, attempt) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("log line {line:?}"));
        runs.entry(id.parse().unwrap())
            .or_default()
            .push(attempt.to_string());
    }
    let ran: BTreeSet<u64> = runs.keys().copied().collect();
    assert_eq!(
        ran,
        by_id.keys().copied().collect(),
        "the tasks that ran are the tasks listed"
    );
    let twice: BTreeMap<_, _> = runs.iter().filter(|(_, r)| r.len() != 1).collect();
    assert!(twice.is_empty(), "ran more than once (task: attempts): {twice:?}");
    // The workers rode out every restart.
    for w in &mut workers {
        assert!(w.alive(), "{} died", w.name);
    }
    drop(workers);

    // The final state is the one of an uninterrupted run of the same
    // steps: replay a copy of the log in one go.
    broker.kill9();
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for ext in ["", "-wal"] {
        let from = dir.path().join(format!("broker.db{ext}"));
        if from.exists() {
            std::fs::copy(&from, copy.join(format!("broker.db{ext}"))).unwrap();
        }
    }
    let live = Live::open_from_log(&copy.join("broker.db"), &fairsched_core::Registry::builtin())
        .expect("the log replays");
    let mut ended = BTreeMap::new();
    for a in live.replayed_actions() {
        if let Action::Ended(r) = a {
            let start = r.runs().last().map(|a| a.start.millis());
            let prev = ended.insert(
                r.spec.id.0,
                (r.outcome.name(), r.runs().count() as u32, start, r.end.millis()),
            );
            assert!(prev.is_none(), "task {} ended twice in the replay", r.spec.id.0);
        }
    }
    assert_eq!(ended.len(), tasks.len(), "tasks ended in the replay");
    for t in &tasks {
        let want = ended
            .get(&t.id)
            .unwrap_or_else(|| panic!("task {} never ends in the replay", t.id));
        let got = (t.state.as_str(), t.attempts, t.start_ms, t.end_ms.unwrap_or(-1));
        assert_eq!(
            got, *want,
            "task {}: served (state, attempts, start, end) vs replayed",
            t.id
        );
    }
    // Restarts went through snapshots, and the snapshot plus its tail is
    // the whole log's state, byte for byte.
    let said = std::fs::read_to_string(dir.path().join("broker.stderr")).unwrap();
    let restored = said.matches("restored from the snapshot").count();
    println!("{restored} of {kills} restarts restored a snapshot");
    assert!(restored >= kills / 2, "{said}");
    let fast = Live::open(&copy.join("broker.db"), &fairsched_core::Registry::builtin()).unwrap();
    assert!(fast.restored_from().is_some());
    assert_eq!(fast.core().snapshot().unwrap(), live.core().snapshot().unwrap());
}
