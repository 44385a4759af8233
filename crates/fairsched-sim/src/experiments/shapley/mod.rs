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
//!
//! Readings the paper's text allows besides (off by default; see
//! docs/shapley.md):
//! - **congested windows** ([`Config::congested`] = F): a window counts
//!   only if REF's schedule has a non-empty queue (a job released and
//!   waiting) for at least the fraction F of it. Instance i draws
//!   candidate windows, candidate a from a seed of (seed, trace, i, a)
//!   (candidate 0 is the window the instance has without the option),
//!   until one counts, at most [`CONGESTED_ATTEMPTS`]; if none does, the
//!   most congested candidate is run and its rows say it did not count
//!   (`counted = false`, left out of the means). The queue is measured
//!   on the REF run the instance needs anyway;
//! - **warm start** ([`Config::warm_start`]): the jobs submitted during
//!   one window length before t_start (from the log's first submit if
//!   that is later) are replayed first, scheduled by the same algorithm,
//!   so the platform is not empty at t_start; Δψ and p_tot measure the
//!   schedule cut at t_start: ψsp of the spec where a job running at
//!   t_start counts as started then with what is left of it (every unit
//!   part processed in [t_start, t_end] is worth t_end minus its end, as
//!   on a cold start), and p_tot is the work REF did in the window.

use crate::engine::{Arrival, RunStats, Simulation};
use crate::errors::SimError;
use crate::platform_file::PlatformFile;
use crate::{Ownership, TraceInput};
use fairsched_core::event::{AttemptEnd, EndRecord};
use fairsched_core::policy::shapley::reference::check_orgs;
use fairsched_core::shapley::{PsiMeter, Units, delta_psi};
use fairsched_core::sink::{Observer, TaskMeta};
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

    /// Loads it from `dir`, on `procs` processors instead of its stated
    /// count when given; a missing file is an error naming it.
    pub fn load(&self, dir: &std::path::Path, procs: Option<u32>) -> Result<LoadedTrace, SimError> {
        let path = dir.join(self.file);
        if !path.exists() {
            return Err(SimError::Config(format!(
                "{}: not found (the shared logs are expected in {}; or give --trace FILE:PROCS)",
                path.display(),
                dir.display()
            )));
        }
        LoadedTrace::load(self.name, &TraceInput::Path(path), procs.unwrap_or(self.procs))
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

/// With [`Config::congested`], the candidate windows an instance draws
/// at most before it gives up (the most congested one then runs, not
/// counted). 50: on LPC-EGEE and RICC the share of 5·10⁴ s windows that
/// count is large enough that 50 draws almost never all fail, and a
/// stricter F than the logs can give still ends in bounded time.
pub const CONGESTED_ATTEMPTS: u32 = 50;

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
    /// Count a window only if REF's queue is non-empty for at least this
    /// fraction of it, 0 < F ≤ 1 (`None`: every window counts).
    pub congested: Option<f64>,
    /// Replay one window length of the log before the window (scheduled
    /// by the same algorithm) instead of starting on an empty platform.
    pub warm_start: bool,
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
            congested: None,
            warm_start: false,
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
        if let Some(f) = self.congested
            && !(f > 0.0 && f <= 1.0)
        {
            return Err(SimError::Config(format!(
                "--congested {f}: F is the fraction of a window during which REF's queue must be non-empty; expected 0 < F ≤ 1"
            )));
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
    /// The candidate window it is (0 unless [`Config::congested`] drew
    /// more).
    pub attempt: u32,
    pub seed: u64,
    /// Window start in the log's time, seconds.
    pub start: i64,
    /// Seconds of the log replayed before the window (0: cold start);
    /// arrivals are re-based to `start − warmup`, so the window is
    /// `[warmup, warmup + window)` in the run's time.
    pub warmup: i64,
    pub procs: Vec<u32>,
    /// Jobs of the log submitted in the window (before splitting).
    pub jobs: u64,
    /// Jobs and tasks of the warm-up (0 on a cold start); the warm-up's
    /// tasks are the first of `arrivals`.
    pub warmup_jobs: u64,
    pub warmup_tasks: u64,
    pub arrivals: Vec<Arrival>,
}

impl Instance {
    /// Tasks submitted in the window (after splitting).
    pub fn window_tasks(&self) -> u64 {
        self.arrivals.len() as u64 - self.warmup_tasks
    }
}

/// A user's organization.
type OrgOf = Box<dyn Fn(i64) -> Result<u32, String>>;

/// FNV-1a of a trace's name: its seed stream.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Draws instance `index` of `trace` (its first candidate window).
pub fn instance(trace: &LoadedTrace, cfg: &Config, index: u32) -> Result<Instance, SimError> {
    instance_attempt(trace, cfg, index, 0)
}

/// The seed of candidate `attempt` of instance `index` of `trace`:
/// candidate 0 is the instance's seed without [`Config::congested`], so
/// the option only adds windows where the first did not count.
pub fn instance_seed(cfg: &Config, trace: &str, index: u32, attempt: u32) -> u64 {
    let seed = derive_seed(cfg.seed ^ name_hash(trace), index as u64);
    if attempt == 0 {
        seed
    } else {
        // Streams 0–2 of an instance's seed are its window, its users'
        // organizations and its schedulers; 3 is the candidates'.
        derive_seed(derive_seed(seed, 3), attempt as u64)
    }
}

/// Draws candidate window `attempt` of instance `index` of `trace`
/// (independent of every other candidate and instance).
pub fn instance_attempt(
    trace: &LoadedTrace,
    cfg: &Config,
    index: u32,
    attempt: u32,
) -> Result<Instance, SimError> {
    let seed = instance_seed(cfg, &trace.name, index, attempt);
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
    // The warm-up: one window length before, or from the log's start.
    let from = if cfg.warm_start {
        (start - cfg.window).max(first)
    } else {
        start
    };
    let lo = trace.jobs.partition_point(|j| j.submit < from);
    let mid = trace.jobs.partition_point(|j| j.submit < start);
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
    let mut warmup_tasks = 0u64;
    for (n, j) in trace.jobs[lo..hi].iter().enumerate() {
        if lo + n == mid {
            warmup_tasks = id;
        }
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
                Arrival::new(spec, Time::from_secs(j.submit - from), Time::from_secs(j.runtime)).job(j.id),
            );
        }
    }
    if mid == hi {
        warmup_tasks = id;
    }
    Ok(Instance {
        trace: trace.name.clone(),
        index,
        attempt,
        seed,
        start,
        warmup: start - from,
        procs,
        jobs: (hi - mid) as u64,
        warmup_jobs: (mid - lo) as u64,
        warmup_tasks,
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
    measure(registry, inst, policy, window).map(|(m, s)| (m.psi, s))
}

/// What one run of an instance shows (see [`WindowMeter`]).
#[derive(Clone, Debug)]
pub struct Measured {
    /// ψ at the window's end and p_tot, of the schedule cut at the
    /// window's start.
    pub psi: PsiMeter,
    /// The fraction of the window during which some task was released
    /// and waiting (warm-up tasks included), in [0, 1].
    pub queue_fraction: f64,
    /// Warm-up tasks running at the window's start (started before it,
    /// ending after it), and waiting then (submitted before it, started
    /// at or after it). 0 on a cold start.
    pub running_at_start: u64,
    pub queued_at_start: u64,
}

/// Runs `policy` on `inst` and measures the window `[inst.warmup,
/// inst.warmup + window)` of the run.
pub fn measure(
    registry: &Registry,
    inst: &Instance,
    policy: &PolicySpec,
    window: i64,
) -> Result<(Measured, RunStats), SimError> {
    let core = Scheduler::new(
        &Platform::owned_pool(&inst.procs),
        derive_seed(inst.seed, 2),
        registry.build_allocate(&"single-pool".parse().expect("registered"))?,
        registry.build_order(policy)?,
        None,
    );
    let from = Time::from_secs(inst.warmup);
    let mut meter = WindowMeter::new(inst.procs.len(), from, Time::from_secs(inst.warmup + window));
    let stats = Simulation::new(core).run(inst.arrivals.iter().cloned().map(Ok), &mut meter)?;
    Ok((meter.finish(), stats))
}

/// An observer of one run: ψ at the window's end of the schedule cut at
/// the window's start ([`PsiMeter`]; a run going on at the start counts
/// as started then, with what is left of it; runs ended by then do not
/// count), the time some task waited during the window, and the
/// warm-up's tasks still on the platform at the window's start.
#[derive(Clone, Debug)]
pub struct WindowMeter {
    psi: PsiMeter,
    from: Time,
    to: Time,
    /// Waiting intervals cut to the window, in ms.
    waits: Vec<(i64, i64)>,
    running_at_start: u64,
    queued_at_start: u64,
}

impl WindowMeter {
    /// The window `[from, to)` of the run, for `orgs` organizations.
    pub fn new(orgs: usize, from: Time, to: Time) -> WindowMeter {
        WindowMeter {
            psi: PsiMeter::new(orgs, to),
            from,
            to,
            waits: Vec::new(),
            running_at_start: 0,
            queued_at_start: 0,
        }
    }

    fn wait(&mut self, a: Time, b: Time) {
        let (a, b) = (a.max(self.from).millis(), b.min(self.to).millis());
        if a < b {
            self.waits.push((a, b));
        }
    }

    /// What the run showed.
    pub fn finish(mut self) -> Measured {
        self.waits.sort_unstable();
        let (mut queued, mut upto) = (0i64, i64::MIN);
        for &(a, b) in &self.waits {
            let a = a.max(upto);
            if b > a {
                queued += b - a;
                upto = b;
            }
        }
        let len = (self.to.millis() - self.from.millis()).max(1);
        Measured {
            psi: self.psi,
            queue_fraction: queued as f64 / len as f64,
            running_at_start: self.running_at_start,
            queued_at_start: self.queued_at_start,
        }
    }
}

impl Observer for WindowMeter {
    fn on_task(&mut self, rec: &EndRecord, _meta: &TaskMeta) {
        // Waiting: from the submit to the first run, between runs, and
        // to the end if it never ran again.
        let mut since = Some(rec.submit);
        for a in rec.runs() {
            if let Some(w) = since {
                self.wait(w, a.start);
            }
            since = (a.end == AttemptEnd::Requeued).then_some(a.stop);
        }
        if let Some(w) = since {
            self.wait(w, rec.end);
        }
        if rec.submit < self.from && rec.end > self.from {
            if rec.runs().any(|a| a.start < self.from && a.stop > self.from) {
                self.running_at_start += 1;
            } else {
                self.queued_at_start += 1;
            }
        }
        // The schedule cut at the window's start: a run going on then
        // counts as started then, with what was left of it.
        for a in rec.runs().filter(|a| a.stop > self.from) {
            self.psi
                .record_run(rec.spec.org.index(), a.slots, a.start.max(self.from), a.stop);
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
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
    /// The fraction of the window during which REF's schedule had a
    /// task released and waiting.
    #[serde(default)]
    pub queue_fraction: f64,
    /// Which candidate window this is, and how many the instance drew
    /// (1 unless [`Config::congested`]).
    #[serde(default)]
    pub attempt: u32,
    #[serde(default = "one")]
    pub candidates: u32,
    /// False when [`Config::congested`] is set and no candidate was
    /// congested enough: this is the most congested one, left out of the
    /// means.
    #[serde(default = "yes")]
    pub counted: bool,
    /// Seconds replayed before the window, its tasks, and REF's warm-up
    /// tasks running and waiting at the window's start (0 on a cold
    /// start).
    #[serde(default)]
    pub warmup_s: i64,
    #[serde(default)]
    pub warmup_tasks: u64,
    #[serde(default)]
    pub running_at_start: u64,
    #[serde(default)]
    pub queued_at_start: u64,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

/// Runs REF and every algorithm on one instance (counted if REF's queue
/// fraction reaches [`Config::congested`]).
pub fn run_instance(inst: &Instance, cfg: &Config, orgs: u32) -> Result<Vec<Row>, SimError> {
    let (reference, _) = measure(&cfg.registry, inst, &cfg.reference, cfg.window)?;
    let counted = cfg.congested.is_none_or(|f| reference.queue_fraction >= f);
    rows(inst, cfg, orgs, &reference, inst.attempt + 1, counted)
}

/// Every algorithm's rows on `inst`, REF's run given.
fn rows(
    inst: &Instance,
    cfg: &Config,
    orgs: u32,
    reference: &Measured,
    candidates: u32,
    counted: bool,
) -> Result<Vec<Row>, SimError> {
    let star: Vec<Units> = reference.psi.units();
    let p_tot = reference.psi.work_s();
    let mut rows = Vec::new();
    let mut one = |label: &str, policy: &PolicySpec, m: &PsiMeter| {
        let d = delta_psi(&m.units(), &star);
        rows.push(Row {
            trace: inst.trace.clone(),
            orgs,
            instance: inst.index,
            window_start: inst.start,
            jobs: inst.jobs,
            tasks: inst.window_tasks(),
            algorithm: label.to_string(),
            policy: policy.to_string(),
            delta_psi: d,
            p_tot,
            ratio: (p_tot > 0.0).then(|| d / p_tot),
            psi: m.psi(),
            psi_ref: reference.psi.psi(),
            queue_fraction: reference.queue_fraction,
            attempt: inst.attempt,
            candidates,
            counted,
            warmup_s: inst.warmup,
            warmup_tasks: inst.warmup_tasks,
            running_at_start: reference.running_at_start,
            queued_at_start: reference.queued_at_start,
        });
    };
    one("REF", &cfg.reference, &reference.psi);
    for (label, policy) in &cfg.algorithms {
        let m = utilities(&cfg.registry, inst, policy, cfg.window)?;
        one(label, policy, &m);
    }
    Ok(rows)
}

/// Instance `index` of `trace`: its window (with [`Config::congested`],
/// the first candidate that counts, or the most congested of
/// [`CONGESTED_ATTEMPTS`]), REF and every algorithm on it. REF runs once
/// per candidate: the run that judges a candidate is the reference of
/// the one kept.
pub fn run_window(trace: &LoadedTrace, cfg: &Config, index: u32) -> Result<Vec<Row>, SimError> {
    let orgs = cfg.orgs();
    let Some(f) = cfg.congested else {
        return run_instance(&instance(trace, cfg, index)?, cfg, orgs);
    };
    let mut best: Option<(Instance, Measured)> = None;
    for attempt in 0..CONGESTED_ATTEMPTS {
        let inst = instance_attempt(trace, cfg, index, attempt)?;
        let (reference, _) = measure(&cfg.registry, &inst, &cfg.reference, cfg.window)?;
        if reference.queue_fraction >= f {
            return rows(&inst, cfg, orgs, &reference, attempt + 1, true);
        }
        if best
            .as_ref()
            .is_none_or(|(_, b)| reference.queue_fraction > b.queue_fraction)
        {
            best = Some((inst, reference));
        }
    }
    let (inst, reference) = best.expect("at least one candidate");
    rows(&inst, cfg, orgs, &reference, CONGESTED_ATTEMPTS, false)
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
            let rows = run_window(&traces[t], cfg, i);
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
    /// Instances left out because none of their candidate windows was
    /// congested enough ([`Config::congested`]).
    pub uncounted: u32,
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
            let counted: Vec<&&Row> = sel.iter().filter(|r| r.counted).collect();
            let xs: Vec<f64> = counted.iter().filter_map(|r| r.ratio).collect();
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
                empty: (counted.len() - xs.len()) as u32,
                uncounted: (sel.len() - counted.len()) as u32,
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

/// The windows of one trace (and organization count), from REF's rows:
/// how many candidates [`Config::congested`] drew and rejected, how
/// congested the counted windows were, and the platform at their start.
#[derive(Clone, Debug, Serialize)]
pub struct WindowStat {
    pub trace: String,
    pub orgs: u32,
    pub instances: u32,
    /// Candidate windows drawn in all, and rejected (not congested
    /// enough; those of an uncounted instance included).
    pub candidates: u32,
    pub rejected: u32,
    /// Instances none of whose candidates counted.
    pub uncounted: u32,
    /// REF's queue fraction over the counted windows: mean and minimum,
    /// and how many had no queue at all.
    pub queue_fraction_mean: f64,
    pub queue_fraction_min: f64,
    pub no_queue: u32,
    /// Mean warm-up tasks of REF's schedule running and waiting at the
    /// window's start, over the counted windows (0 on a cold start).
    pub running_at_start_mean: f64,
    pub queued_at_start_mean: f64,
}

/// [`WindowStat`] per (trace, orgs), in first-seen order.
pub fn window_stats(rows: &[Row]) -> Vec<WindowStat> {
    let refs: Vec<&Row> = rows.iter().filter(|r| r.algorithm == "REF").collect();
    let mut keys: Vec<(String, u32)> = Vec::new();
    for r in &refs {
        let k = (r.trace.clone(), r.orgs);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(trace, orgs)| {
            let sel: Vec<&&Row> = refs
                .iter()
                .filter(|r| r.trace == trace && r.orgs == orgs)
                .collect();
            let counted: Vec<&&&Row> = sel.iter().filter(|r| r.counted).collect();
            let n = counted.len().max(1) as f64;
            let mean = |f: &dyn Fn(&Row) -> f64| counted.iter().map(|r| f(r)).sum::<f64>() / n;
            WindowStat {
                instances: sel.len() as u32,
                candidates: sel.iter().map(|r| r.candidates).sum(),
                rejected: sel.iter().map(|r| r.candidates - r.counted as u32).sum(),
                uncounted: (sel.len() - counted.len()) as u32,
                queue_fraction_mean: mean(&|r| r.queue_fraction),
                queue_fraction_min: if counted.is_empty() {
                    0.0
                } else {
                    counted.iter().map(|r| r.queue_fraction).fold(1.0, f64::min)
                },
                no_queue: counted.iter().filter(|r| r.queue_fraction == 0.0).count() as u32,
                running_at_start_mean: mean(&|r| r.running_at_start as f64),
                queued_at_start_mean: mean(&|r| r.queued_at_start as f64),
                trace,
                orgs,
            }
        })
        .collect()
}

/// Where the shared logs are by default: `../shared/data/traces/swf`.
pub fn default_traces_dir() -> PathBuf {
    PathBuf::from("../shared/data/traces/swf")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, submit: i64, runtime: i64, user: i64) -> Job {
        Job {
            id,
            submit,
            runtime,
            procs: 1,
            requested_time: None,
            user,
            group: -1,
            status: 1,
            org: 0,
            part: 0,
        }
    }

    fn trace(procs: u32, jobs: Vec<Job>) -> LoadedTrace {
        LoadedTrace {
            name: "synthetic".into(),
            path: "synthetic".into(),
            procs,
            jobs,
            filters: FilterCounts::default(),
        }
    }

    /// 4 processors; 10⁴ s of congestion (a 200 s job every 10 s, five
    /// users), then 10⁴ s nearly idle (a 10 s job every 2000 s).
    fn busy_then_idle() -> LoadedTrace {
        let mut jobs = Vec::new();
        for i in 0..1000 {
            jobs.push(job(i + 1, i as i64 * 10, 200, (i % 5) as i64));
        }
        for i in 0..5 {
            jobs.push(job(2000 + i, 10_000 + i as i64 * 2000, 10, (i % 5) as i64));
        }
        trace(4, jobs)
    }

    /// REF and two cheap algorithms, 2 organizations, windows of 1000 s.
    fn small(window: i64, instances: u32) -> Config {
        let mut cfg = Config::paper(window);
        cfg.instances = instances;
        cfg.orgs = 2;
        cfg.algorithms
            .retain(|(l, _)| l == "ROUNDROBIN" || l == "FAIRSHARE");
        cfg
    }

    /// A hand-made instance on one processor of one organization.
    fn hand(warmup: i64, tasks: &[(i64, i64)]) -> Instance {
        let arrivals = tasks
            .iter()
            .enumerate()
            .map(|(i, &(submit, runtime))| {
                let spec = TaskSpec {
                    id: TaskId(i as u64 + 1),
                    user: UserId(0),
                    org: OrgId(0),
                    slots: 1,
                    priority: 1,
                    estimate: None,
                    workflow: None,
                    optional: false,
                    target: None,
                };
                Arrival::new(spec, Time::from_secs(submit), Time::from_secs(runtime))
            })
            .collect();
        Instance {
            trace: "hand".into(),
            index: 0,
            attempt: 0,
            seed: 1,
            start: warmup,
            warmup,
            procs: vec![1],
            jobs: 0,
            warmup_jobs: 0,
            warmup_tasks: tasks.iter().filter(|t| t.0 < warmup).count() as u64,
            arrivals,
        }
    }

    #[test]
    fn on_a_cold_start_the_measure_is_the_plain_psi_meters() {
        let t = busy_then_idle();
        let cfg = small(1000, 6);
        for i in 0..cfg.instances {
            let inst = instance(&t, &cfg, i).unwrap();
            assert_eq!((inst.warmup, inst.warmup_tasks), (0, 0));
            for policy in ["ref", "round-robin"] {
                let p: PolicySpec = policy.parse().unwrap();
                let (m, _) = measure(&cfg.registry, &inst, &p, cfg.window).unwrap();
                let core = Scheduler::new(
                    &Platform::owned_pool(&inst.procs),
                    derive_seed(inst.seed, 2),
                    cfg.registry
                        .build_allocate(&"single-pool".parse().unwrap())
                        .unwrap(),
                    cfg.registry.build_order(&p).unwrap(),
                    None,
                );
                let mut plain = PsiMeter::new(inst.procs.len(), Time::from_secs(cfg.window));
                Simulation::new(core)
                    .run(inst.arrivals.iter().cloned().map(Ok), &mut plain)
                    .unwrap();
                assert_eq!(m.psi.units(), plain.units());
                assert_eq!(m.psi.work_s(), plain.work_s());
            }
        }
    }

    #[test]
    fn the_queue_fraction_is_the_time_a_job_waits_in_the_window() {
        // A runs 0–50, B (released at 10) waits until 50: 40 s of 100.
        let inst = hand(0, &[(0, 50), (10, 10)]);
        let (m, _) = measure(&Registry::builtin(), &inst, &"fcfs".parse().unwrap(), 100).unwrap();
        assert_eq!(m.queue_fraction, 0.4);
        assert_eq!((m.running_at_start, m.queued_at_start), (0, 0));
        // Two waits that overlap count once: B and C wait 10–50 and 20–60.
        let inst = hand(0, &[(0, 50), (10, 10), (20, 10)]);
        let (m, _) = measure(&Registry::builtin(), &inst, &"fcfs".parse().unwrap(), 100).unwrap();
        assert_eq!(m.queue_fraction, 0.5);
    }

    /// ψ at 200 of a job started at `s` for `p` s: Σ_{k<p} (200 − s − k).
    fn psi_at_200(s: i64, p: i64) -> f64 {
        (0..p).map(|k| (200 - s - k) as f64).sum()
    }

    #[test]
    fn a_warm_start_measures_the_schedule_cut_at_the_windows_start() {
        // Warm-up of 100 s: its job runs 0–150; the window's job (released
        // at 100) waits until 150 and runs 150–160. Window [100, 200).
        let inst = hand(100, &[(0, 150), (100, 10)]);
        assert_eq!(inst.window_tasks(), 1);
        let (m, _) = measure(&Registry::builtin(), &inst, &"fcfs".parse().unwrap(), 100).unwrap();
        assert_eq!((m.running_at_start, m.queued_at_start), (1, 0));
        assert_eq!(m.queue_fraction, 0.5);
        // The schedule cut at 100: the warm-up job counts as started at
        // 100 with 50 s left, ψ = Σ_{k<50} (200 − 100 − k) = 3775, the
        // window's job Σ_{k<10} (200 − 150 − k) = 455; p_tot = 50 + 10.
        assert_eq!(m.psi.work_s(), 60.0);
        assert_eq!(m.psi.psi(), vec![psi_at_200(100, 50) + psi_at_200(150, 10)]);
        assert_eq!(m.psi.psi(), vec![3775.0 + 455.0]);
        // A warm-up job ended by the window's start counts for nothing.
        let inst = hand(100, &[(0, 60), (100, 10)]);
        let (m, _) = measure(&Registry::builtin(), &inst, &"fcfs".parse().unwrap(), 100).unwrap();
        assert_eq!((m.running_at_start, m.queued_at_start), (0, 0));
        assert_eq!(m.psi.work_s(), 10.0);
        assert_eq!(m.psi.psi(), vec![psi_at_200(100, 10)]);
        // A warm-up job still waiting at the start counts as queued.
        let inst = hand(100, &[(0, 150), (50, 10), (100, 10)]);
        let (m, _) = measure(&Registry::builtin(), &inst, &"fcfs".parse().unwrap(), 100).unwrap();
        assert_eq!((m.running_at_start, m.queued_at_start), (1, 1));
    }

    #[test]
    fn congested_windows_count_only_when_refs_queue_is_long_enough() {
        let t = busy_then_idle();
        let mut cfg = small(1000, 12);
        cfg.congested = Some(0.5);
        let rows = run(std::slice::from_ref(&t), &cfg, &|| {}).unwrap();
        for r in &rows {
            assert!(r.counted, "instance {} found no congested window", r.instance);
            assert!(
                r.queue_fraction >= 0.5,
                "instance {}: REF's queue fraction {} < 0.5",
                r.instance,
                r.queue_fraction
            );
            assert!(r.candidates == r.attempt + 1 && r.candidates <= CONGESTED_ATTEMPTS);
        }
        let w = &window_stats(&rows)[0];
        assert!(w.rejected > 0, "half the log is idle, yet no window was rejected");
        assert_eq!(w.candidates, w.instances + w.rejected);
        assert!(w.queue_fraction_min >= 0.5);
        // Without the option the same instances include idle windows, and
        // candidate 0 is the instance's window either way.
        let plain = run(std::slice::from_ref(&t), &small(1000, 12), &|| {}).unwrap();
        let wp = &window_stats(&plain)[0];
        assert_eq!(wp.rejected, 0);
        assert!(wp.queue_fraction_min < 0.5);
        for r in rows.iter().filter(|r| r.attempt == 0) {
            let p = plain
                .iter()
                .find(|p| p.instance == r.instance && p.algorithm == r.algorithm)
                .unwrap();
            assert_eq!(format!("{r:?}"), format!("{p:?}"));
        }
        // Each instance alone gives its rows (independent, deterministic).
        let again = run_window(&t, &cfg, 5).unwrap();
        let first: Vec<String> = rows
            .iter()
            .filter(|r| r.instance == 5)
            .map(|r| format!("{r:?}"))
            .collect();
        assert_eq!(first, again.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>());
    }

    #[test]
    fn an_instance_with_no_congested_window_says_so_and_is_left_out() {
        // Nothing ever waits: every candidate is rejected.
        let jobs = (0..20)
            .map(|i| job(i + 1, i as i64 * 500, 10, i as i64))
            .collect();
        let t = trace(4, jobs);
        let mut cfg = small(1000, 2);
        cfg.congested = Some(0.1);
        let rows = run(std::slice::from_ref(&t), &cfg, &|| {}).unwrap();
        assert_eq!(rows.len(), 2 * 3);
        assert!(
            rows.iter()
                .all(|r| !r.counted && r.candidates == CONGESTED_ATTEMPTS)
        );
        let w = &window_stats(&rows)[0];
        assert_eq!((w.uncounted, w.rejected), (2, 2 * CONGESTED_ATTEMPTS));
        for s in stats(&rows, None) {
            assert_eq!((s.instances, s.uncounted), (0, 2));
            assert!(s.mean.is_nan());
        }
    }

    #[test]
    fn a_warm_start_fills_the_platform_and_changes_the_results() {
        let t = busy_then_idle();
        let cold = run(std::slice::from_ref(&t), &small(1000, 8), &|| {}).unwrap();
        let mut cfg = small(1000, 8);
        cfg.warm_start = true;
        let warm = run(std::slice::from_ref(&t), &cfg, &|| {}).unwrap();
        assert_eq!(cold.len(), warm.len());
        let mut differ = 0;
        for (c, w) in cold.iter().zip(&warm) {
            // The same window, its jobs and tasks.
            assert_eq!(
                (c.instance, c.window_start, c.jobs, c.tasks, &c.algorithm),
                (w.instance, w.window_start, w.jobs, w.tasks, &w.algorithm)
            );
            assert_eq!(
                (c.warmup_s, c.warmup_tasks, c.running_at_start, c.queued_at_start),
                (0, 0, 0, 0)
            );
            let first = t.jobs[0].submit;
            assert_eq!(w.warmup_s, (w.window_start - first).min(1000));
            // A window in the busy half starts on a full platform.
            if w.window_start >= 1000 && w.window_start < 10_000 {
                assert!(w.warmup_tasks > 0);
                assert!(
                    w.running_at_start + w.queued_at_start > 0,
                    "window at {}: the platform is empty at its start",
                    w.window_start
                );
            }
            if c.psi != w.psi || c.p_tot != w.p_tot {
                differ += 1;
            }
        }
        assert!(
            warm.iter().any(|w| w.running_at_start > 0),
            "no warm-started window had work running at its start"
        );
        assert!(differ > 0, "the warm start changed nothing");
    }
}
