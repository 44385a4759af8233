//! Simulator throughput on synthetic workloads generated in-process (seeded, so
//! every run measures the same events):
//!
//! - `engine/events_per_second`: 100k sequential tasks on 256 slots under `fifo`.
//! - `engine/order_cost_vs_processors/<policy>/<procs>`: 50k sequential tasks at the
//!   same load (~0.9) on 64 … 8192 slots under `fifo`, `priority`, `fair-share` and
//!   `round-robin`; the time per task should not grow with the number of processors.
//!   `fifo-light/8192` is a control: 8192 processors at the load of the 64-processor
//!   case, so as few tasks run at once as on 64 processors.
//! - `engine/decision_vs_processors/<policy>/<procs>`: the cost of one scheduling
//!   decision on a saturated pool of 64 … 8192 slots (RICC's size) with 2,000 tasks
//!   waiting: each iteration is one core step in which a running task completes, a
//!   new one arrives, and the Order picks the task that takes the freed slot. The
//!   queue length is the same at every size, so any growth is due to the processors.
//! - `engine/rigid_fcfs_easy/<policy>`: 20k rigid jobs (1..64 slots) on 256 slots under
//!   `fcfs` and `easy`.
//!
//! Every throughput is in tasks (one arrival and one completion event each).
//!
//! `cargo bench -p fairsched-sim -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fairsched_core::rand::{RngExt, SeedableRng};
use fairsched_core::rand_pcg::Pcg64Mcg;
use fairsched_core::{Observer, Platform, Scheduler, TaskSpec, Time, registry};
use fairsched_sim::{Arrival, RunStats, SimError, Simulation};
use fairsched_trace::ownership_zipf;

/// Target load: arrival rate × mean work / processors.
const LOAD: f64 = 0.9;
/// Mean runtime of the synthetic tasks (ms): 10 minutes.
const MEAN_RUNTIME_MS: f64 = 600_000.0;
/// The orders measured on sequential tasks (every one that serves
/// organizations, and two controls).
const ORG_ORDERS: [&str; 7] = [
    "fifo",
    "priority",
    "fair-share",
    "round-robin",
    "direct-contr",
    "ut-fair-share",
    "curr-fair-share",
];
/// Organizations of the order-cost workload (fair-share, round-robin).
const ORGS: u32 = 5;

/// Discards every result: only the engine and the core are measured.
struct Discard;
impl Observer for Discard {}

/// An exponential draw with mean `mean` (ms), rounded to the millisecond.
fn exp_ms(rng: &mut Pcg64Mcg, mean: f64) -> i64 {
    let u: f64 = rng.random_range(f64::EPSILON..1.0);
    (-u.ln() * mean).round() as i64
}

/// `n` sequential tasks for `procs` slots at `load`: Poisson arrivals, exponential
/// runtimes (≥ 1 ms), organizations uniform in `0..orgs`, priorities uniform in
/// 1..=3. Same seed and `n` on every size: only the arrival rate scales.
fn sequential(n: u64, procs: u32, load: f64, orgs: u32, seed: u64) -> Vec<Arrival> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mean_gap = MEAN_RUNTIME_MS / (load * f64::from(procs));
    let mut t = 0i64;
    (1..=n)
        .map(|id| {
            t += exp_ms(&mut rng, mean_gap);
            let runtime = exp_ms(&mut rng, MEAN_RUNTIME_MS).max(1);
            let org = rng.random_range(0..orgs);
            let spec = TaskSpec::new(id, i64::from(org), org).priority(rng.random_range(1..=3));
            Arrival::new(spec, Time::from_millis(t), Time::from_millis(runtime))
        })
        .collect()
}

/// `n` rigid jobs on `procs` slots at load [`LOAD`]: widths a power of two up to 64
/// (60%) or uniform in 1..=64, exponential runtimes, and a user estimate of 1 to 5
/// times the runtime rounded up to the minute (as EASY sees in real logs).
fn rigid(n: u64, procs: u32, seed: u64) -> Vec<Arrival> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    // Mean width: 0.6 × mean(1, 2, …, 64) + 0.4 × 32.5.
    let mean_width = 0.6 * 127.0 / 7.0 + 0.4 * 32.5;
    let mean_gap = MEAN_RUNTIME_MS * mean_width / (LOAD * f64::from(procs));
    let mut t = 0i64;
    (1..=n)
        .map(|id| {
            t += exp_ms(&mut rng, mean_gap);
            let runtime = exp_ms(&mut rng, MEAN_RUNTIME_MS).max(1000);
            let width = if rng.random_range(0.0..1.0) < 0.6 {
                1 << rng.random_range(0..=6u32)
            } else {
                rng.random_range(1..=64u32)
            };
            let estimate = (runtime as f64 * rng.random_range(1.0..5.0) / 60_000.0).ceil() as i64 * 60_000;
            let spec = TaskSpec::new(id, 0, 0)
                .slots(width)
                .estimate(Time::from_millis(estimate));
            Arrival::new(spec, Time::from_millis(t), Time::from_millis(runtime))
        })
        .collect()
}

fn simulation(platform: &Platform, order: &str) -> Simulation<'static> {
    let allocate = registry::Registry::builtin()
        .build_allocate(&"single-pool".parse().expect("valid spec"))
        .expect("allocate");
    let order = registry::Registry::builtin()
        .build_order(&order.parse().expect("valid spec"))
        .expect("order");
    Simulation::new(Scheduler::new(platform, 0, allocate, order, None))
}

fn run(mut sim: Simulation, arrivals: Vec<Arrival>) -> (Simulation, RunStats) {
    let stats = sim
        .run(arrivals.into_iter().map(Ok::<_, SimError>), &mut Discard)
        .expect("run");
    (sim, stats)
}

/// Runs once outside the timing and checks that every task was submitted and ran.
fn check(platform: &Platform, order: &str, arrivals: &[Arrival]) {
    let (_, stats) = run(simulation(platform, order), arrivals.to_vec());
    assert_eq!(
        stats.submitted,
        arrivals.len() as u64,
        "{order}: not every task was submitted"
    );
    assert_eq!(
        stats.core.starts,
        arrivals.len() as u64,
        "{order}: not every task started"
    );
    assert_eq!(stats.stranded, 0, "{order}: stranded tasks");
}

/// Times a whole run; building the core and cloning the workload are not timed,
/// nor is dropping the simulation.
fn bench_run(b: &mut criterion::Bencher<'_>, platform: &Platform, order: &str, arrivals: &[Arrival]) {
    b.iter_batched(
        || (simulation(platform, order), arrivals.to_vec()),
        |(sim, arrivals)| black_box(run(sim, black_box(arrivals))),
        BatchSize::PerIteration,
    );
}

fn events_per_second(c: &mut Criterion) {
    let platform = Platform::pool(256);
    let arrivals = sequential(100_000, 256, LOAD, 1, 1);
    check(&platform, "fifo", &arrivals);
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(arrivals.len() as u64));
    group.bench_function("events_per_second", |b| {
        bench_run(b, &platform, "fifo", &arrivals)
    });
    group.finish();
}

fn order_cost_vs_processors(c: &mut Criterion) {
    const TASKS: u64 = 50_000;
    let mut group = c.benchmark_group("engine/order_cost_vs_processors");
    group.throughput(Throughput::Elements(TASKS));
    for procs in [64u32, 512, 4096, 8192] {
        let shares = ownership_zipf(procs, ORGS, 1.0).expect("zipf shares");
        let platform = Platform::owned_pool(&shares);
        let arrivals = sequential(TASKS, procs, LOAD, ORGS, 2);
        for order in ORG_ORDERS {
            check(&platform, order, &arrivals);
            group.bench_with_input(BenchmarkId::new(order, procs), &arrivals, |b, arrivals| {
                bench_run(b, &platform, order, arrivals)
            });
        }
    }
    // Control: 8192 processors at the load of the 64-processor case (≈ 58 tasks running
    // instead of ≈ 7400). Compared with fifo/64 and fifo/8192, it tells a cost that grows
    // with the processors from one that grows with the running tasks (event heap, task
    // tables: their size and cache footprint).
    let platform = Platform::owned_pool(&ownership_zipf(8192, ORGS, 1.0).expect("zipf shares"));
    let arrivals = sequential(TASKS, 8192, LOAD * 64.0 / 8192.0, ORGS, 2);
    check(&platform, "fifo", &arrivals);
    group.bench_with_input(BenchmarkId::new("fifo-light", 8192), &arrivals, |b, arrivals| {
        bench_run(b, &platform, "fifo", arrivals)
    });
    group.finish();
}

fn decision_vs_processors(c: &mut Criterion) {
    use fairsched_core::{Action, Event, TaskId};
    use std::collections::VecDeque;
    const WAITING: u64 = 2_000;
    let mut group = c.benchmark_group("engine/decision_vs_processors");
    group.throughput(Throughput::Elements(1));
    for order in ORG_ORDERS.into_iter().chain(["fcfs", "easy"]) {
        for procs in [64u32, 512, 4096, 8192] {
            let platform = Platform::owned_pool(&ownership_zipf(procs, ORGS, 1.0).expect("zipf shares"));
            let mut core = Scheduler::new(
                &platform,
                1,
                registry::Registry::builtin()
                    .build_allocate(&"single-pool".parse().expect("spec"))
                    .expect("policy"),
                registry::Registry::builtin()
                    .build_order(&order.parse().expect("spec"))
                    .expect("policy"),
                None,
            );
            let mut rng = Pcg64Mcg::seed_from_u64(4);
            let mut spec = |id: u64| {
                let org = rng.random_range(0..ORGS);
                TaskSpec::new(id, i64::from(org), org).priority(rng.random_range(1..=3))
            };
            let mut out = Vec::new();
            let first: Vec<Event> = (1..=u64::from(procs) + WAITING)
                .map(|id| Event::Submit(spec(id)))
                .collect();
            core.step(Time::ZERO, first, None, &mut out).expect("step");
            let mut running: VecDeque<TaskId> = out
                .iter()
                .filter_map(|a| match a {
                    Action::Start { task, .. } => Some(*task),
                    _ => None,
                })
                .collect();
            assert_eq!(running.len(), procs as usize, "{order}: the pool is saturated");
            assert_eq!(core.view().waiting_tasks(), WAITING);
            let mut next = u64::from(procs) + WAITING + 1;
            let mut now = 0i64;
            group.bench_function(BenchmarkId::new(order, procs), |b| {
                b.iter(|| {
                    now += 1;
                    out.clear();
                    let done = running.pop_front().expect("running");
                    let events = [Event::Complete { task: done }, Event::Submit(spec(next))];
                    next += 1;
                    core.step(Time::from_millis(now), events, None, &mut out)
                        .expect("step");
                    for a in &out {
                        if let Action::Start { task, .. } = a {
                            running.push_back(*task);
                        }
                    }
                    black_box(out.len())
                })
            });
            assert_eq!(core.view().waiting_tasks(), WAITING, "{order}: one in, one out");
        }
    }
    group.finish();
}

fn rigid_fcfs_easy(c: &mut Criterion) {
    let platform = Platform::pool(256);
    let arrivals = rigid(20_000, 256, 3);
    let mut group = c.benchmark_group("engine/rigid_fcfs_easy");
    group.throughput(Throughput::Elements(arrivals.len() as u64));
    for order in ["fcfs", "easy"] {
        check(&platform, order, &arrivals);
        group.bench_function(order, |b| bench_run(b, &platform, order, &arrivals));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = events_per_second, order_cost_vs_processors, decision_vs_processors, rigid_fcfs_easy
}
criterion_main!(benches);
