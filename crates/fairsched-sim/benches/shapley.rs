//! The Shapley experiment's policies on real logs (the paper's protocol:
//! jobs split into sequential tasks, users mapped to 5 organizations,
//! Zipf ownership, the platform empty at the window start):
//!
//! - `shapley/direct_contr/<log>`: DIRECTCONTR on one window of 5·10⁵ s of
//!   LPC-EGEE (70 processors) and of RICC (8192 processors), throughput in
//!   core steps (events): the per-event cost must not grow with the
//!   processors (RICC / LPC-EGEE ≤ 2 in time per event). `fifo` on the
//!   same windows is the control: what the engine and core cost alone.
//! - `shapley/ref_10_orgs/LPC-EGEE`: exact REF with 10 organizations on a
//!   window of 5·10⁴ s of LPC-EGEE (the busiest of the first 20 windows of
//!   the experiment's seed 0), target ≤ 60 s.
//!
//! Needs `../shared/data/traces/swf/` beside the repository.
//! `cargo bench -p fairsched-sim --bench shapley -- --warm-up-time 1 --measurement-time 5`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairsched_core::PolicySpec;
use fairsched_sim::experiments::shapley::{
    Config, Instance, LoadedTrace, SharedLog, WINDOWS, instance, run_policy,
};
use std::path::PathBuf;
use std::time::Duration;

fn load(name: &str) -> LoadedTrace {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/swf"
    ));
    SharedLog::named(name)
        .expect("a shared log")
        .load(&dir, None)
        .expect("the log loads (needs ../shared beside the repository)")
}

/// The instance among the first `n` with the most tasks.
fn busiest(trace: &LoadedTrace, cfg: &Config, n: u32) -> Instance {
    (0..n)
        .map(|i| instance(trace, cfg, i).expect("an instance"))
        .max_by_key(|i| i.arrivals.len())
        .expect("n > 0")
}

fn direct_contr(c: &mut Criterion) {
    let cfg = Config::paper(WINDOWS[1]);
    let mut g = c.benchmark_group("shapley/direct_contr");
    g.sample_size(10);
    for name in ["LPC-EGEE", "RICC"] {
        let trace = load(name);
        let inst = busiest(&trace, &cfg, 5);
        for policy in ["direct-contr", "fifo"] {
            let p: PolicySpec = policy.parse().unwrap();
            let (_, stats) = run_policy(&cfg.registry, &inst, &p, cfg.window).unwrap();
            eprintln!(
                "{name} {policy}: {} tasks, {} steps, {} processors",
                inst.arrivals.len(),
                stats.steps,
                trace.procs
            );
            g.throughput(Throughput::Elements(stats.steps));
            g.bench_function(format!("{policy}/{name}"), |b| {
                b.iter(|| run_policy(&cfg.registry, &inst, &p, cfg.window).unwrap())
            });
        }
    }
    g.finish();
}

fn ref_10_orgs(c: &mut Criterion) {
    let mut cfg = Config::paper(WINDOWS[0]);
    cfg.orgs = 10;
    let trace = load("LPC-EGEE");
    let inst = busiest(&trace, &cfg, 20);
    let p: PolicySpec = "ref".parse().unwrap();
    eprintln!("LPC-EGEE ref, 10 organizations: {} tasks", inst.arrivals.len());
    let mut g = c.benchmark_group("shapley/ref_10_orgs");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("LPC-EGEE", |b| {
        b.iter(|| run_policy(&cfg.registry, &inst, &p, cfg.window).unwrap())
    });
    g.finish();
}

criterion_group!(benches, direct_contr, ref_10_orgs);
criterion_main!(benches);
