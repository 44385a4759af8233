//! One full simulated run of a Diet-ethic scenario (`experiments::diet`):
//! the clients (agents), the servers' queues, the kills and the metrics,
//! as `experiment diet-ethic` does for each point and seed.
//!
//! - `diet/scalability/diet-ethic`: the scalability scenario (138 servers,
//!   100 clients arriving at 0 with n_min = 3, n_max = 10,000, requests of
//!   1 s, deadline 100 s: 13,800 server-seconds), the Diet-ethic system
//!   (`diet-ethic` server queues, the dispatcher), seed 0.
//! - `diet/scalability/legacy-1000`: the same with the legacy system
//!   (`fcfs` servers, every client submits n_submit = 1000 requests at once).
//! - `diet/night-consecutive/diet-ethic`: 10 servers, 10 clients arriving
//!   0.1 s apart, Diet-ethic, seed 0.
//!
//! The scenario is built once, outside the timing; a timed iteration is
//! one `run(&setup, system, 0)`. Each case first runs once untimed: its
//! results are printed and checked (every server busy from 0 to the
//! deadline, nobody unhappy under Diet-ethic), and every timed run must
//! complete as many requests. Throughput is in completed requests
//! (`Throughput::Elements`).
//!
//! `cargo bench -p fairsched-sim --bench diet -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairsched_core::Registry;
use fairsched_sim::experiments::diet::{RunResult, Setup, System, run, scenario};

const SEED: u64 = 0;

/// The scenario `name` and its run once under `system`, untimed, printed.
fn preflight(name: &str, label: &str, system: &System) -> (Setup, RunResult) {
    let setup = scenario(name, SEED).expect("scenario");
    let r = run(&Registry::builtin(), &setup, system, SEED).expect("run");
    let m = &r.metrics;
    eprintln!(
        "diet/{name}/{label}: {} servers, {} users: completed {}, unhappy {}, unfairness {:.4}, kills {}",
        setup.servers, r.users, m.completed, m.unhappy, m.unfairness, r.kills
    );
    assert_eq!(r.users, setup.users.len(), "{name}/{label}: every user");
    (setup, r)
}

/// Server-seconds from 0 to the last deadline: what the platform can
/// complete with requests of 1 s.
fn capacity(setup: &Setup) -> u64 {
    let end = setup.users.iter().map(|u| u.deadline).max().expect("users");
    setup.servers as u64 * end.millis() as u64 / 1000
}

/// Times `run(setup, system, SEED)`; each run must complete `completed`
/// requests.
fn bench(c: &mut Criterion, group: &str, label: &str, setup: &Setup, system: System, completed: u64) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(completed));
    let registry = Registry::builtin();
    g.bench_function(label, |b| {
        b.iter(|| {
            let r = run(&registry, black_box(setup), black_box(&system), SEED).expect("run");
            assert_eq!(r.metrics.completed, completed, "{group}/{label}: deterministic");
            r
        })
    });
    g.finish();
}

fn scalability(c: &mut Criterion) {
    let (setup, diet) = preflight("scalability", "diet-ethic", &System::DietEthic);
    assert_eq!((setup.servers, setup.users.len()), (138, 100));
    assert_eq!(capacity(&setup), 13_800);
    // Every server busy from 0 to 100 s with requests of 1 s, every
    // client's 3 mandatory requests done by the deadline.
    assert_eq!(diet.metrics.completed, 13_800, "diet-ethic: {:?}", diet.metrics);
    assert_eq!(diet.metrics.unhappy, 0, "diet-ethic: {:?}", diet.metrics);
    bench(
        c,
        "diet/scalability",
        "diet-ethic",
        &setup,
        System::DietEthic,
        13_800,
    );

    let legacy = System::Legacy { n_submit: 1000 };
    let (setup, r) = preflight("scalability", "legacy-1000", &legacy);
    // 100,000 requests queued at 0 on 138 FCFS servers: the servers never
    // idle before the deadline, and a client whose mandatory requests are
    // not done by then stays (its requests keep running) until they are.
    assert!(r.metrics.completed >= 13_800, "legacy-1000: {:?}", r.metrics);
    assert_eq!(r.kills, 0, "legacy servers never kill");
    bench(
        c,
        "diet/scalability",
        "legacy-1000",
        &setup,
        legacy,
        r.metrics.completed,
    );
}

fn night_consecutive(c: &mut Criterion) {
    let (setup, r) = preflight("night-consecutive", "diet-ethic", &System::DietEthic);
    assert_eq!((setup.servers, setup.users.len()), (10, 10));
    assert_eq!(r.metrics.unhappy, 0, "diet-ethic: {:?}", r.metrics);
    // 10 servers × 100 s: the servers never idle (the first client fills
    // them at 0); a kill (an optional request's run stopped for a
    // mandatory one) loses under a second of one server.
    let cap = capacity(&setup);
    assert_eq!(cap, 1000);
    assert!(
        (950..=cap).contains(&r.metrics.completed),
        "diet-ethic: {} completed, capacity {cap}",
        r.metrics.completed
    );
    bench(
        c,
        "diet/night-consecutive",
        "diet-ethic",
        &setup,
        System::DietEthic,
        r.metrics.completed,
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = scalability, night_consecutive
}
criterion_main!(benches);
