//! The Shapley paper's experiment (spec/shapley.md, "Experiments to
//! reproduce"): Δψ / p_tot of each algorithm against REF on random windows
//! of real logs.
//!
//! Protocol, per trace and instance (seeded from the master seed, the
//! trace's name and the instance number, so adding a trace or changing
//! the thread count changes nothing else):
//! - the window start is drawn uniformly so that the window
//!   `[t_start, t_start + len)` lies within the log's submits (the whole
//!   log if it is shorter); only jobs submitted in it take part, with
//!   submit times re-based to the window start; the platform starts empty;
//! - a job needing q processors becomes q sequential jobs of the same run
//!   time;
//! - every user id goes to an organization uniformly at random (or as a
//!   platform file says); processors are split by Zipf (exponent 1) or
//!   uniformly, or as the platform file says;
//! - REF's schedule gives ψ* and p_tot = Σ min(p, t_end − s) over its runs
//!   started by t_end; every algorithm runs on the same instance, and
//!   Δψ = Σ_u |ψ_u − ψ*_u| at t_end.
//!
//! Runs go on after the window's end until every job finished (later
//! events cannot change a utility at t_end, and REF's hypothetical
//! schedules stay exact).

use crate::engine::{Arrival, RunStats, Simulation};
use crate::errors::SimError;
use crate::platform_file::PlatformFile;
use crate::{Ownership, TraceInput};
use fairsched_core::policy::shapley::reference::check_orgs;
use fairsched_core::shapley::{PsiMeter, Units, delta_psi};
use fairsched_core::{
    OrgId, Platform, PolicySpec, Registry, Scheduler, TaskId, TaskSpec, Time, UserId, derive_seed,
};
use fairsched_trace::{FilterCounts, Job, StreamOptions, UserOrgMap, ownership_uniform, ownership_zipf};
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub mod experiment;
pub mod study;

/// The paper's traces, in its column order.
pub const PAPER_TRACES: [&str; 4] = ["LPC-EGEE", "PIK-IPLEX", "SHARCNET-Whale", "RICC"];

/// The paper's traces that are not available here.
pub const UNAVAILABLE: [&str; 2] = ["PIK-IPLEX", "SHARCNET-Whale"];

/// A shared Parallel Workloads Archive log (`../shared/data/traces/swf/`).
#[derive(Clone, Copy, Debug)]
pub struct SharedLog {
    pub name: &'static str,
    pub file: &'static str,
    /// The machine's processors (the header's `MaxProcs` is wrong or
    /// missing for some: LPC-EGEE counts 140 CPUs of 70 dual nodes whose
    /// jobs each use one node; RICC's copy has no header).
    pub procs: u32,
}

impl SharedLog {
    /// The log named `name` (case-insensitive), if it is a shared one.
    pub fn named(name: &str) -> Option<&'static SharedLog> {
        SHARED_LOGS.iter().find(|l| l.name.eq_ignore_ascii_case(name))
    }

    /// Loads it from `dir`; a missing file is an error naming it.
    pub fn load(&self, dir: &std::path::Path) -> Result<LoadedTrace, SimError> {
        let path = dir.join(self.file);
        if !path.exists() {
            return Err(SimError::Config(format!(
                "{}: not found (the shared logs are expected in {}; or give --trace FILE:PROCS)",
                path.display(),
                dir.display()
            )));
        }
        LoadedTrace::load(self.name, &TraceInput::Path(path), self.procs)
    }
}

/// Every shared log, the paper's first.
pub const SHARED_LOGS: &[SharedLog] = &[
    SharedLog {
        name: "LPC-EGEE",
        file: "LPC-EGEE-2004-1.2-cln.swf.gz",
        procs: 70,
    },
    SharedLog {
        name: "RICC",
        file: "RICC-2010-2.swf.gz",
        procs: 8192,
    },
    SharedLog {
        name: "CTC-SP2",
        file: "CTC-SP2-1996-3.1-cln.swf.gz",
        procs: 338,
    },
    SharedLog {
        name: "HPC2N",
        file: "HPC2N-2002-2.2-cln.swf.gz",
        procs: 240,
    },
    SharedLog {
        name: "KTH-SP2",
        file: "KTH-SP2-1996-2.1-cln.swf.gz",
        procs: 100,
    },
    SharedLog {
        name: "LANL-CM5",
        file: "LANL-CM5-1994-4.1-cln.swf.gz",
        procs: 1024,
    },
    SharedLog {
        name: "SDSC-BLUE",
        file: "SDSC-BLUE-2000-4.2-cln.swf.gz",
        procs: 1152,
    },
    SharedLog {
        name: "SDSC-DS",
        file: "SDSC-DS-2004-2.1-cln.swf.gz",
        procs: 1664,
    },
    SharedLog {
        name: "SDSC-SP2",
        file: "SDSC-SP2-1998-4.2-cln.swf.gz",
        procs: 128,
    },
];

/// An algorithm of the tables: its label in the paper and its policy.
#[derive(Clone, Copy, Debug)]
pub struct Algorithm {
    pub label: &'static str,
    pub policy: &'static str,
    /// The paper's (mean, std) per column of [`PAPER_TRACES`], for
    /// Table 1 and Table 2.
    pub paper: [[(f64, f64); 4]; 2],
}

/// The reference every Δψ is measured against.
pub const REFERENCE: &str = "ref";

/// The paper's rows (spec/shapley.md, Tables 1 and 2).
pub const ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        label: "ROUNDROBIN",
        policy: "round-robin",
        paper: [
            [(238.0, 353.0), (6.0, 33.0), (145.0, 38.0), (2839.0, 357.0)],
            [
                (4511.0, 6257.0),
                (242.0, 1420.0),
                (404.0, 1221.0),
                (10850.0, 13773.0),
            ],
        ],
    },
    Algorithm {
        label: "RAND (N=15)",
        policy: "rand[n=15]",
        paper: [
            [(8.0, 21.0), (0.014, 0.01), (6.0, 6.0), (162.0, 187.0)],
            [(562.0, 1670.0), (1.3, 7.0), (26.0, 158.0), (771.0, 1479.0)],
        ],
    },
    Algorithm {
        label: "DIRECTCONTR",
        policy: "direct-contr",
        paper: [
            [(5.0, 11.0), (0.02, 0.15), (10.0, 7.0), (537.0, 303.0)],
            [(410.0, 1083.0), (0.2, 1.4), (60.0, 204.0), (1808.0, 3397.0)],
        ],
    },
    Algorithm {
        label: "FAIRSHARE",
        policy: "fair-share",
        paper: [
            [(16.0, 25.0), (0.3, 1.38), (13.0, 8.0), (626.0, 309.0)],
            [(575.0, 1404.0), (2.3, 12.0), (94.0, 307.0), (2746.0, 4070.0)],
        ],
    },
    Algorithm {
        label: "UTFAIRSHARE",
        policy: "ut-fair-share",
        paper: [
            [(16.0, 25.0), (0.3, 1.38), (38.0, 67.0), (515.0, 284.0)],
            [(888.0, 2101.0), (1.2, 5.0), (120.0, 344.0), (4963.0, 6080.0)],
        ],
    },
    Algorithm {
        label: "CURRFAIRSHARE",
        policy: "curr-fair-share",
        paper: [
            [(87.0, 106.0), (0.3, 1.58), (145.0, 80.0), (1231.0, 243.0)],
            [(1082.0, 2091.0), (2.2, 11.0), (180.0, 805.0), (5387.0, 9083.0)],
        ],
    },
];

/// Window lengths of Table 1 and Table 2, in seconds.
pub const WINDOWS: [i64; 2] = [50_000, 500_000];

/// A log as the experiment uses it: cleaned jobs in submit order.
#[derive(Clone, Debug)]
pub struct LoadedTrace {
    pub name: String,
    pub path: String,
    pub procs: u32,
    pub jobs: Vec<Job>,
    pub filters: FilterCounts,
}

impl LoadedTrace {
    /// Reads `input` whole (default cleaning, submits sorted).
    pub fn load(name: &str, input: &TraceInput, procs: u32) -> Result<LoadedTrace, SimError> {
        if procs == 0 {
            return Err(SimError::Config(format!(
                "{name}: the platform needs at least one processor"
            )));
        }
        let scan = input.scan(false)?;
        let mut stream = input.jobs(StreamOptions::default(), &scan)?;
        let jobs = stream.by_ref().collect::<Result<Vec<Job>, _>>()?;
        Ok(LoadedTrace {
            name: name.to_string(),
            path: input.name(),
            procs,
            filters: stream.counts(),
            jobs,
        })
    }

    /// Seconds between the first and the last submit.
    pub fn span(&self) -> i64 {
        match (self.jobs.first(), self.jobs.last()) {
            (Some(f), Some(l)) => l.submit - f.submit,
            _ => 0,
        }
    }

    /// The column of the paper's tables this trace is, if any.
    pub fn paper_column(&self) -> Option<usize> {
        PAPER_TRACES.iter().position(|&p| p == self.name)
    }
}

/// What an experiment runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Window length in seconds.
    pub window: i64,
    pub instances: u32,
    pub orgs: u32,
    pub ownership: Ownership,
    /// Organizations, processors and users from a file instead.
    pub platform: Option<PlatformFile>,
    pub seed: u64,
    pub reference: PolicySpec,
    pub algorithms: Vec<(String, PolicySpec)>,
    /// Where the policies are looked up.
    pub registry: Registry,
}

impl Config {
    /// The paper's set-up for a window length: every algorithm of the
    /// tables, 100 instances, 5 organizations, Zipf ownership.
    pub fn paper(window: i64) -> Config {
        Config {
            window,
            instances: 100,
            orgs: 5,
            ownership: Ownership::DEFAULT,
            platform: None,
            seed: 0,
            reference: REFERENCE.parse().expect("registered"),
            algorithms: ALGORITHMS
                .iter()
                .map(|a| (a.label.to_string(), a.policy.parse().expect("registered")))
                .collect(),
            registry: Registry::builtin(),
        }
    }

    /// Organizations of a run.
    pub fn orgs(&self) -> u32 {
        self.platform.as_ref().map_or(self.orgs, |p| p.orgs())
    }

    /// Builds every policy once (a mistake is reported before any reading).
    pub fn check(&self) -> Result<(), SimError> {
        if self.window <= 0 {
            return Err(SimError::Config("the window length must be positive".into()));
        }
        if self.instances == 0 {
            return Err(SimError::Config("--instances 0: nothing to run".into()));
        }
        if self.orgs() == 0 {
            return Err(SimError::Config(
                "--orgs 0: there must be at least one organization".into(),
            ));
        }
        let k = self.orgs() as usize;
        check_orgs(&self.reference, k).map_err(|e| {
            SimError::Config(format!(
                "--orgs {k}: {e} (REF is the reference every algorithm is measured against)"
            ))
        })?;
        for p in std::iter::once(&self.reference).chain(self.algorithms.iter().map(|a| &a.1)) {
            self.registry
                .build_order(p)
                .map_err(|e| SimError::Config(format!("{p}: {e}")))?;
            check_orgs(p, k).map_err(SimError::Config)?;
        }
        Ok(())
    }
}

/// One window of one trace, ready to run.
#[derive(Clone, Debug)]
pub struct Instance {
    pub trace: String,
    pub index: u32,
    pub seed: u64,
    /// Window start in the log's time, seconds.
    pub start: i64,
    pub procs: Vec<u32>,
    pub jobs: u64,
    pub arrivals: Vec<Arrival>,
}

/// A user's organization.
type OrgOf = Box<dyn Fn(i64) -> Result<u32, String>>;

/// FNV-1a of a trace's name: its seed stream.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Draws instance `index` of `trace`.
pub fn instance(trace: &LoadedTrace, cfg: &Config, index: u32) -> Result<Instance, SimError> {
    let seed = derive_seed(cfg.seed ^ name_hash(&trace.name), index as u64);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0));
    let (first, last) = match (trace.jobs.first(), trace.jobs.last()) {
        (Some(f), Some(l)) => (f.submit, l.submit),
        _ => {
            return Err(SimError::Config(format!(
                "{}: no job left after cleaning",
                trace.path
            )));
        }
    };
    let start = rng.random_range(first..=(last - cfg.window + 1).max(first));
    let end = start + cfg.window;
    let lo = trace.jobs.partition_point(|j| j.submit < start);
    let hi = trace.jobs.partition_point(|j| j.submit < end);
    let (procs, map): (Vec<u32>, OrgOf) = match &cfg.platform {
        Some(p) => {
            let m = p.mapper(derive_seed(seed, 1));
            (p.procs(), Box::new(move |u| m.org_of(u)))
        }
        None => {
            let k = cfg.orgs;
            let procs = match cfg.ownership {
                Ownership::Uniform => ownership_uniform(trace.procs, k)?,
                Ownership::Zipf(s) => ownership_zipf(trace.procs, k, s)?,
            };
            let m = UserOrgMap::new(k, derive_seed(seed, 1))?;
            (procs, Box::new(move |u| Ok(m.org_of(u))))
        }
    };
    let mut arrivals = Vec::new();
    let mut id = 0u64;
    for j in &trace.jobs[lo..hi] {
        let org = map(j.user).map_err(|e| SimError::Config(format!("{}: job {}: {e}", trace.path, j.id)))?;
        for _ in 0..j.procs {
            id += 1;
            let spec = TaskSpec {
                id: TaskId(id),
                user: UserId(j.user),
                org: OrgId(org),
                slots: 1,
                priority: 1,
                estimate: None,
                workflow: None,
                optional: false,
                target: None,
            };
            arrivals.push(
                Arrival::new(
                    spec,
                    Time::from_secs(j.submit - start),
                    Time::from_secs(j.runtime),
                )
                .job(j.id),
            );
        }
    }
    Ok(Instance {
        trace: trace.name.clone(),
        index,
        seed,
        start,
        procs,
        jobs: (hi - lo) as u64,
        arrivals,
    })
}

/// ψ at the window's end and p_tot of one policy's run of an instance.
pub fn utilities(
    registry: &Registry,
    inst: &Instance,
    policy: &PolicySpec,
    window: i64,
) -> Result<PsiMeter, SimError> {
    run_policy(registry, inst, policy, window).map(|(m, _)| m)
}

/// [`utilities`] with the run's statistics (steps: the events processed).
pub fn run_policy(
    registry: &Registry,
    inst: &Instance,
    policy: &PolicySpec,
    window: i64,
) -> Result<(PsiMeter, RunStats), SimError> {
    let core = Scheduler::new(
        &Platform::owned_pool(&inst.procs),
        derive_seed(inst.seed, 2),
        registry.build_allocate(&"single-pool".parse().expect("registered"))?,
        registry.build_order(policy)?,
        None,
    );
    let mut meter = PsiMeter::new(inst.procs.len(), Time::from_secs(window));
    let stats = Simulation::new(core).run(inst.arrivals.iter().cloned().map(Ok), &mut meter)?;
    Ok((meter, stats))
}

/// One algorithm on one instance.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub trace: String,
    pub orgs: u32,
    pub instance: u32,
    pub window_start: i64,
    /// Jobs of the log in the window (before splitting) and tasks after.
    pub jobs: u64,
    pub tasks: u64,
    pub algorithm: String,
    pub policy: String,
    /// Δψ in s².
    pub delta_psi: f64,
    /// p_tot in s (REF's schedule).
    pub p_tot: f64,
    /// Δψ / p_tot in s; `None` when p_tot = 0 (nothing ran in the window).
    pub ratio: Option<f64>,
    /// ψ per organization at the window's end (s²), and REF's.
    pub psi: Vec<f64>,
    pub psi_ref: Vec<f64>,
}

/// Runs REF and every algorithm on one instance.
pub fn run_instance(inst: &Instance, cfg: &Config, orgs: u32) -> Result<Vec<Row>, SimError> {
    let reference = utilities(&cfg.registry, inst, &cfg.reference, cfg.window)?;
    let star: Vec<Units> = reference.units();
    let p_tot = reference.work_s();
    let mut rows = Vec::new();
    let mut one = |label: &str, policy: &PolicySpec, m: &PsiMeter| {
        let d = delta_psi(&m.units(), &star);
        rows.push(Row {
            trace: inst.trace.clone(),
            orgs,
            instance: inst.index,
            window_start: inst.start,
            jobs: inst.jobs,
            tasks: inst.arrivals.len() as u64,
            algorithm: label.to_string(),
            policy: policy.to_string(),
            delta_psi: d,
            p_tot,
            ratio: (p_tot > 0.0).then(|| d / p_tot),
            psi: m.psi(),
            psi_ref: reference.psi(),
        });
    };
    one("REF", &cfg.reference, &reference);
    for (label, policy) in &cfg.algorithms {
        let m = utilities(&cfg.registry, inst, policy, cfg.window)?;
        one(label, policy, &m);
    }
    Ok(rows)
}

/// Every instance of every trace, in parallel; rows in (trace, instance,
/// algorithm) order whatever the thread count. `tick` is called after
/// each instance (progress).
pub fn run(traces: &[LoadedTrace], cfg: &Config, tick: &(dyn Fn() + Sync)) -> Result<Vec<Row>, SimError> {
    cfg.check()?;
    if cfg.platform.is_none() {
        for t in traces {
            if t.procs < cfg.orgs {
                return Err(SimError::Config(format!(
                    "{}: {} processors cannot give each of {} organizations one (lower --orgs)",
                    t.name, t.procs, cfg.orgs
                )));
            }
        }
    }
    let work: Vec<(usize, u32)> = (0..traces.len())
        .flat_map(|t| (0..cfg.instances).map(move |i| (t, i)))
        .collect();
    let results: Vec<Result<Vec<Row>, SimError>> = work
        .par_iter()
        .map(|&(t, i)| {
            let inst = instance(&traces[t], cfg, i)?;
            let rows = run_instance(&inst, cfg, cfg.orgs());
            tick();
            rows
        })
        .collect();
    let mut rows = Vec::new();
    for r in results {
        rows.extend(r?);
    }
    Ok(rows)
}

/// Mean and standard deviation (n − 1) of one algorithm on one trace,
/// over the instances where p_tot > 0.
#[derive(Clone, Debug, Serialize)]
pub struct Stat {
    pub trace: String,
    pub orgs: u32,
    pub algorithm: String,
    pub policy: String,
    pub mean: f64,
    pub std: f64,
    /// Instances counted, and those left out for doing no work.
    pub instances: u32,
    pub empty: u32,
    /// Counted instances where this algorithm's schedule gives every
    /// organization exactly REF's utility (Δψ = 0: often a window where no
    /// queue formed).
    pub zero: u32,
    /// The paper's (mean, std) for this cell, when it has one.
    pub paper: Option<(f64, f64)>,
}

/// Aggregates rows by (trace, orgs, algorithm), in first-seen order.
pub fn stats(rows: &[Row], table: Option<usize>) -> Vec<Stat> {
    let mut keys: Vec<(String, u32, String, String)> = Vec::new();
    for r in rows {
        let k = (r.trace.clone(), r.orgs, r.algorithm.clone(), r.policy.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(trace, orgs, algorithm, policy)| {
            let sel: Vec<&Row> = rows
                .iter()
                .filter(|r| r.trace == trace && r.orgs == orgs && r.algorithm == algorithm)
                .collect();
            let xs: Vec<f64> = sel.iter().filter_map(|r| r.ratio).collect();
            let n = xs.len() as f64;
            let mean = if xs.is_empty() {
                f64::NAN
            } else {
                xs.iter().sum::<f64>() / n
            };
            let std = if xs.len() < 2 {
                0.0
            } else {
                (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            };
            let col = PAPER_TRACES.iter().position(|&p| p == trace);
            let paper = match (table, col, ALGORITHMS.iter().find(|a| a.label == algorithm)) {
                (Some(t), Some(c), Some(a)) if orgs == 5 => Some(a.paper[t][c]),
                _ => None,
            };
            Stat {
                zero: xs.iter().filter(|&&x| x == 0.0).count() as u32,
                empty: (sel.len() - xs.len()) as u32,
                instances: xs.len() as u32,
                trace,
                orgs,
                algorithm,
                policy,
                mean,
                std,
                paper,
            }
        })
        .collect()
}

/// Where the shared logs are by default: `../shared/data/traces/swf`.
pub fn default_traces_dir() -> PathBuf {
    PathBuf::from("../shared/data/traces/swf")
}
