//! The live service at scale, real processes: (a) 1,000 tasks of 3 users
//! over 4 workers under `fifo` run exactly once each, in submission order;
//! (b) under `fair-share`, organizations contributing 4, 2 and 2 slots get
//! those shares of the busy slot-time while all of them have work waiting.

use crate::common::Broker;
use fairsched_broker::api::TaskOut;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn fifo_runs_a_thousand_tasks_exactly_once_in_submission_order() {
    const TASKS: usize = 1000;
    const BATCH: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("physics");
    let users: Vec<String> = (0..3)
        .map(|u| broker.add_user(&format!("u{u}"), "physics"))
        .collect();
    let wtoken = broker.worker_token("physics");
    let workdirs: Vec<_> = (0..4).map(|w| dir.path().join(format!("wd{w}"))).collect();
    let _workers: Vec<_> = workdirs
        .iter()
        .enumerate()
        .map(|(w, wd)| broker.worker(&format!("w{w}"), &wtoken, 2, wd, "process"))
        .collect();
    broker.wait_slots(8);
    let api = broker.api();

    // The users take turns, a batch each, while the workers already run
    // the earlier batches. `(user, i)` of every id.
    let mut who: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut next = [0usize; 3];
    let mut submitted = 0;
    let started = Instant::now();
    'submit: loop {
        for (u, token) in users.iter().enumerate() {
            let n = BATCH.min(TASKS - submitted);
            if n == 0 {
                break 'submit;
            }
            let commands: Vec<String> = (next[u]..next[u] + n)
                .map(|i| {
                    format!(
                        "echo u{u} {i} $FAIRSCHED_TASK $FAIRSCHED_ATTEMPT >> {}",
                        log.display()
                    )
                })
                .collect();
            let ids = api.submit(token, &commands);
            assert_eq!(ids.len(), n);
            for (k, id) in ids.into_iter().enumerate() {
                assert!(who.insert(id, (u, next[u] + k)).is_none(), "id {id} given twice");
            }
            next[u] += n;
            submitted += n;
        }
    }
    let st = broker.wait_idle(Duration::from_secs(120));
    let elapsed = started.elapsed();
    assert_eq!(st.completed, TASKS as u64, "{st:?}");

    let tasks = broker.tasks();
    assert_eq!(tasks.len(), TASKS);
    let user_ids: Vec<i64> = users
        .iter()
        .map(|t| {
            let mine = api.tasks(t);
            assert!(!mine.is_empty());
            mine[0].user
        })
        .collect();
    for t in &tasks {
        let (u, _) = who[&t.id];
        assert_eq!(t.state, "completed", "{t:?}");
        assert_eq!(t.attempts, 1, "{t:?}");
        assert_eq!(t.exit_code, Some(0), "{t:?}");
        assert_eq!(t.user, user_ids[u], "{t:?}");
        assert!(t.start_ms.is_some() && t.end_ms >= t.start_ms, "{t:?}");
    }

    // Each task ran once: one line in the log, one run directory.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut runs: HashMap<u64, usize> = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 4, "log line {line:?}");
        let id: u64 = f[2].parse().unwrap();
        let (u, i) = who
            .get(&id)
            .copied()
            .unwrap_or_else(|| panic!("unknown task in {line:?}"));
        assert_eq!(
            (f[0], f[1]),
            (format!("u{u}").as_str(), i.to_string().as_str()),
            "{line:?}"
        );
        assert_eq!(f[3], "1", "attempt: {line:?}");
        *runs.entry(id).or_default() += 1;
    }
    assert_eq!(runs.len(), TASKS, "tasks in the log");
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "ran more than once: {twice:?}");
    let dirs: usize = workdirs
        .iter()
        .map(|wd| {
            std::fs::read_dir(wd)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("task-"))
                .count()
        })
        .sum();
    assert_eq!(dirs, TASKS, "run directories");

    // FIFO: start times never decrease with the id, overall and per user.
    let mut by_id: Vec<&TaskOut> = tasks.iter().collect();
    by_id.sort_by_key(|t| t.id);
    let mut last = i64::MIN;
    let mut last_of = [i64::MIN; 3];
    for t in by_id {
        let s = t.start_ms.unwrap();
        let u = who[&t.id].0;
        assert!(
            s >= last_of[u],
            "user {u}: task {} started at {s} before an earlier task",
            t.id
        );
        assert!(
            s >= last,
            "task {} started at {s}, before an earlier task (at {last})",
            t.id
        );
        last = s;
        last_of[u] = s;
    }
    println!("{TASKS} tasks in {elapsed:?}");
}

/// What `fair-share` targets (crates/fairsched-core/src/policy/fair_share.rs,
/// docs/shapley.md): when a slot frees, the organization with the least
/// processor time used so far divided by its share starts next, the share
/// being the fraction of the platform's slots it contributes. With every
/// organization's queue non-empty, the used slot-time of each organization
/// therefore stays proportional to its contribution — 4:2:2 here, i.e.
/// shares 0.5, 0.25, 0.25 of the busy slot-time — up to about one task per
/// slot of lag. (Its counter starts at the first task, not at our window:
/// all three queues fill within milliseconds of each other, after every
/// worker has joined, so nothing is owed from before.) This is the
/// contribution-proportional target, not the Shapley value (which `ref`,
/// `rand` and `direct-contr` aim at, docs/shapley.md).
#[test]
fn fair_share_gives_each_organization_its_contributed_share() {
    const RUN: Duration = Duration::from_secs(8);
    const LOW_WATER: u64 = 100;
    const TOP_UP: usize = 200;
    const TOLERANCE: f64 = 0.04;
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fair-share", "30s");
    let orgs = [("a", 4u32), ("b", 2), ("c", 2)];
    let mut org_ids = Vec::new();
    let mut users = Vec::new();
    for (name, _) in orgs {
        org_ids.push(broker.add_org(name));
        users.push(broker.add_user(&format!("user-{name}"), name));
    }
    let _workers: Vec<_> = orgs
        .iter()
        .map(|&(name, slots)| {
            let token = broker.worker_token(name);
            broker.worker(
                &format!("w-{name}"),
                &token,
                slots,
                &dir.path().join(name),
                "process",
            )
        })
        .collect();
    broker.wait_slots(8);
    let api = broker.api();
    let commands: Vec<String> = vec!["sleep 0.05".into(); TOP_UP];

    // Each user keeps its queue full: at least LOW_WATER waiting, checked
    // every 50 ms.
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for u in &users {
            api.submit(u, &commands);
        }
        let feeder = s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                for u in &users {
                    if api.status(u).waiting < LOW_WATER {
                        api.submit(u, &commands);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        feeder.join().unwrap();
    });
    let tasks = broker.tasks();

    // The window: from when the last user's first tasks arrived to the
    // latest instant the broker reported (a start or an end).
    let by_org = |o: u32| tasks.iter().filter(move |t| t.org == o);
    let t0 = org_ids
        .iter()
        .map(|&o| by_org(o).map(|t| t.submit_ms).min().expect("tasks"))
        .max()
        .unwrap();
    let t1 = tasks
        .iter()
        .flat_map(|t| [t.start_ms, t.end_ms])
        .flatten()
        .max()
        .unwrap();
    assert!(t1 - t0 > 5_000, "a window of {} ms only", t1 - t0);
    // Every organization had work waiting at every instant of the window:
    // the union of its tasks' waiting intervals [submit, start) covers it.
    for &o in &org_ids {
        let mut w: Vec<(i64, i64)> = by_org(o)
            .map(|t| (t.submit_ms, t.start_ms.unwrap_or(i64::MAX)))
            .collect();
        w.sort();
        let mut covered = t0;
        for (a, b) in w {
            if a <= covered {
                covered = covered.max(b);
            }
        }
        assert!(
            covered >= t1,
            "org {o} had nothing waiting from {covered} ms (window {t0}..{t1})"
        );
    }
    // Busy slot-time of each organization within the window (a running
    // task counts up to t1).
    let busy: Vec<i64> = org_ids
        .iter()
        .map(|&o| {
            by_org(o)
                .filter_map(|t| {
                    let s = t.start_ms?;
                    let e = t.end_ms.unwrap_or(t1);
                    Some((e.min(t1) - s.max(t0)).max(0))
                })
                .sum()
        })
        .collect();
    let total: i64 = busy.iter().sum();
    let shares: Vec<f64> = busy.iter().map(|&b| b as f64 / total as f64).collect();
    let expected: Vec<f64> = orgs.iter().map(|&(_, s)| s as f64 / 8.0).collect();
    println!(
        "fair-share over {} ms: busy slot-ms {busy:?}, shares {shares:.3?}, expected {expected:?}",
        t1 - t0
    );
    for (i, (&got, &want)) in shares.iter().zip(&expected).enumerate() {
        assert!(
            (got - want).abs() <= TOLERANCE,
            "org {}: share {got:.3} of the busy slot-time, expected {want} ± {TOLERANCE} (all: {shares:.3?})",
            orgs[i].0
        );
    }
    // The window is real work.
    let done = tasks.iter().filter(|t| t.state == "completed").count();
    assert!(done > 200, "only {done} tasks completed");
}
