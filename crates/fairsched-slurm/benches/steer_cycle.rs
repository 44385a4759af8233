//! The steering controller's own time per cycle (outside Slurm's tools)
//! against the number of pending jobs, on a scripted Slurm that prints
//! what the CI Slurm prints: 16 CPUs, a full cluster, N pending jobs of
//! two users in two accounts. Three cycles, as bench/slurm-steer.sh runs
//! them on the real one:
//!
//! - `first`: a new controller sees N new jobs (N submissions, N factors);
//! - `steady`: nothing changed since the last cycle, the clock either
//!   (nothing sent);
//! - `wave`: the 16 running jobs ended and Slurm started the 16 it ranked
//!   first (the fair-share order shifts: many factors change).
//!
//! Target (issue 40): <= 50 ms at 10,000 pending.
//!
//!   cargo bench -p fairsched-slurm --features steer --bench steer_cycle

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use fairsched_core::Registry;
use fairsched_slurm::SlurmError;
use fairsched_slurm::steer::{Cluster, Controller, Sent, Settings};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const CPUS: u32 = 16;

/// A queue: jobs by number, pending or running, with their site factor.
#[derive(Clone)]
struct Scripted {
    /// job -> (user index, running, site factor)
    jobs: BTreeMap<u64, (usize, bool, i64)>,
}

const USERS: [(&str, &str); 2] = [("alice", "physics"), ("carol", "chemistry")];

impl Scripted {
    fn new(pending: u64) -> Scripted {
        let mut jobs = BTreeMap::new();
        for id in 1..=u64::from(CPUS) {
            jobs.insert(id, (0, true, 0));
        }
        for i in 0..pending {
            jobs.insert(u64::from(CPUS) + 1 + i, ((i % 2) as usize, false, 0));
        }
        Scripted { jobs }
    }
    /// The running jobs end; Slurm starts the pending jobs of highest
    /// site factor (then lowest number).
    fn wave(&mut self) {
        self.jobs.retain(|_, j| !j.1);
        let mut next: Vec<(i64, u64)> = self.jobs.iter().map(|(id, j)| (-j.2, *id)).collect();
        next.sort_unstable();
        for (_, id) in next.into_iter().take(CPUS as usize) {
            self.jobs.get_mut(&id).expect("listed").1 = true;
        }
    }
}

impl Cluster for Scripted {
    fn squeue(&mut self) -> Result<String, SlurmError> {
        let mut s = String::with_capacity(self.jobs.len() * 64);
        for (id, (u, running, _)) in &self.jobs {
            let (user, account) = USERS[*u];
            let (state, reason) = if *running {
                ("RUNNING", "None")
            } else {
                ("PENDING", "Priority")
            };
            writeln!(
                s,
                "{id}|{id}|{user}|{account}|1|5:00|{state}|{reason}|(null)|wrap"
            )
            .expect("a String");
        }
        Ok(s)
    }
    fn sprio(&mut self) -> Result<String, SlurmError> {
        let mut s = String::with_capacity(self.jobs.len() * 16);
        for (id, (_, running, site)) in &self.jobs {
            if !running {
                writeln!(s, "{id}|{site}").expect("a String");
            }
        }
        Ok(s)
    }
    fn sinfo_cpus(&mut self) -> Result<String, SlurmError> {
        Ok(format!("{CPUS}/0/0/{CPUS}\n"))
    }
    fn config(&mut self) -> Result<String, SlurmError> {
        Ok(
            "PriorityType = priority/multifactor\nPrioritySiteFactorPlugin = (null)\n\
            PriorityWeightAge = 1000\nPriorityWeightFairShare = 10000\n"
                .into(),
        )
    }
    fn accounts(&mut self) -> Result<String, SlurmError> {
        Ok("physics|alice\nchemistry|carol\n".into())
    }
    fn set_site_factors(&mut self, updates: &[(String, i64)]) -> Result<Sent, SlurmError> {
        for (id, v) in updates {
            if let Some(j) = id.parse().ok().and_then(|id: u64| self.jobs.get_mut(&id)) {
                j.2 = *v;
            }
        }
        Ok(Sent {
            calls: updates.len().div_ceil(1000) as u32,
            refused: Vec::new(),
        })
    }
}

fn settings() -> Settings {
    Settings {
        policy: "fair-share".into(),
        control: None,
        seed: 0,
        partition: None,
        orgs: vec![("physics".into(), 8), ("chemistry".into(), 8)],
        step: None,
    }
}

/// A controller that has run its first cycle on `pending` jobs.
fn after_first(dir: &tempfile::TempDir, pending: u64) -> (Controller, Scripted, i64) {
    let mut slurm = Scripted::new(pending);
    let mut c = Controller::open_or_create(
        &dir.path().join("steer.db"),
        &settings(),
        &Registry::builtin(),
        &mut slurm,
    )
    .expect("a controller");
    let t = c.live().store().epoch_ms() + 1000;
    c.cycle(&mut slurm, t, false).expect("the first cycle");
    (c, slurm, t)
}

fn cycles(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("steer_cycle");
    g.sample_size(10);
    for pending in [1_000u64, 10_000] {
        g.bench_function(format!("first/{pending}"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("a temporary folder");
                    let mut slurm = Scripted::new(pending);
                    let c = Controller::open_or_create(
                        &dir.path().join("steer.db"),
                        &settings(),
                        &Registry::builtin(),
                        &mut slurm,
                    )
                    .expect("a controller");
                    (dir, c, slurm)
                },
                |(dir, mut c, mut slurm)| {
                    let t = c.live().store().epoch_ms() + 1000;
                    let r = c.cycle(&mut slurm, t, false).expect("a cycle");
                    assert_eq!(r.changes.len() as u64, pending);
                    (dir, c)
                },
                BatchSize::PerIteration,
            )
        });
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (mut c, mut slurm, t) = after_first(&dir, pending);
        // At the same instant: a fair-share order also moves as running
        // jobs accrue usage.
        g.bench_function(format!("steady/{pending}"), |b| {
            b.iter(|| {
                let r = c.cycle(&mut slurm, t, false).expect("a cycle");
                assert!(r.changes.is_empty());
            })
        });
        g.bench_function(format!("wave/{pending}"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("a temporary folder");
                    let (c, mut slurm, t) = after_first(&dir, pending);
                    slurm.wave();
                    (dir, c, slurm, t)
                },
                |(dir, mut c, mut slurm, t)| {
                    let r = c.cycle(&mut slurm, t + 5000, false).expect("a cycle");
                    assert_eq!(r.ended, CPUS as usize);
                    (dir, c)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, cycles);
criterion_main!(benches);
