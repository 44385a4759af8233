//! The PFFP paper's Tests 1–5 (spec/pffp.md): allocation of sequential
//! jobs (or bags of tasks) to machines with FCFS queues, on Monday–Friday
//! weeks of real logs.
//!
//! Protocol:
//! - each log is read whole (invalid jobs dropped and counted), its submit
//!   times put on local time from the header (`UnixStartTime`,
//!   `TimeZoneString`) and cut into Monday 00:00 – Saturday 00:00 weeks;
//!   jobs before the first Monday and on weekends take no part;
//! - every week with a job, from every log, goes into one pool, shuffled
//!   with the seed: Workload A is the first 18, B the next 30, C the next
//!   30 (disjoint; `--instances N` takes the first N of a workload, so a
//!   smaller run is a prefix of a larger one);
//! - a week is an instance: its jobs, submit times re-based to the
//!   Monday, each a sequential job of its run time (Tests 1–4, the
//!   paper's model), or q sequential tasks for a q-processor job (bags of
//!   tasks, Test 5); arrival times may be scaled to reach a target
//!   utilisation (Test 5 draws one per week, uniformly in [20 %, 90 %]);
//! - each strategy runs the instance on the test's machines (FCFS local
//!   queues, no backfilling) until every job completed; ρ and t_w come
//!   from the completions (`analysis`).

pub mod analysis;
pub mod experiment;
pub mod paper;
pub mod study;

use self::analysis::{Degradation, MetricsAcc, RunMetrics, degradation, degradation_of_means};
use crate::TraceInput;
use crate::engine::{Arrival, Simulation};
use crate::errors::SimError;
use fairsched_core::event::EndRecord;
use fairsched_core::model::Outcome;
use fairsched_core::sink::{Observer, TaskMeta};
use fairsched_core::{
    OrgId, Platform, PolicySpec, Registry, Scheduler, TaskId, TaskSpec, Time, UserId, derive_seed,
};
use fairsched_trace::{FilterCounts, Job, LocalClock, StreamOptions, Week, weeks};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The seven logs the paper names, in its Table 2 order.
pub const PAPER_LOGS: [&str; 7] = [
    "KTH-SP2",
    "CTC-SP2",
    "HPC2N",
    "LANL-CM5",
    "SDSC-BLUE",
    "SDSC-DS",
    "SDSC-SP2",
];

/// A log cut into weeks.
#[derive(Clone, Debug)]
pub struct WeekLog {
    pub name: String,
    pub path: String,
    /// How its times were put on local time, and what was assumed.
    pub clock: String,
    pub clock_note: Option<String>,
    /// Cleaned jobs in submit order.
    pub jobs: Vec<Job>,
    pub filters: FilterCounts,
    pub weeks: Vec<Week>,
    /// The median user estimate (SWF field 9) over jobs that have one:
    /// MSTUser's estimate for a job without (spec/pffp.md).
    pub median_estimate: Option<i64>,
}

impl WeekLog {
    /// Reads `input` whole and cuts it into weeks.
    pub fn load(name: &str, input: &TraceInput) -> Result<WeekLog, SimError> {
        let scan = input.scan(false)?;
        let mut stream = input.jobs(StreamOptions::default(), &scan)?;
        let jobs = stream.by_ref().collect::<Result<Vec<Job>, _>>()?;
        let (clock, clock_note) = LocalClock::from_header(&scan.header);
        let weeks = match (jobs.first(), jobs.last()) {
            (Some(f), Some(l)) => weeks(&clock, f.submit, l.submit),
            _ => Vec::new(),
        };
        let mut est: Vec<i64> = jobs.iter().filter_map(|j| j.requested_time).collect();
        est.sort_unstable();
        Ok(WeekLog {
            name: name.to_string(),
            path: input.name(),
            clock: clock.describe(),
            clock_note,
            filters: stream.counts(),
            median_estimate: (!est.is_empty()).then(|| est[(est.len() - 1) / 2]),
            jobs,
            weeks,
        })
    }

    /// The jobs submitted in `w`.
    pub fn jobs_in(&self, w: &Week) -> &[Job] {
        let lo = self.jobs.partition_point(|j| j.submit < w.start);
        let hi = self.jobs.partition_point(|j| j.submit < w.end);
        &self.jobs[lo..hi]
    }

    /// The shared log of that name in `dir`.
    pub fn shared(name: &str, dir: &std::path::Path) -> Result<WeekLog, SimError> {
        let log = crate::experiments::shapley::SharedLog::named(name)
            .ok_or_else(|| SimError::Config(format!("{name}: not a shared log")))?;
        let path = dir.join(log.file);
        if !path.exists() {
            return Err(SimError::Config(format!(
                "{}: not found (the shared logs are expected in {}; or give --logs FILE,...)",
                path.display(),
                dir.display()
            )));
        }
        WeekLog::load(log.name, &TraceInput::Path(path))
    }
}

/// A workload of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    A,
    B,
    C,
}

impl Workload {
    /// Its weeks in the shuffled pool: A 18, B 30, C 30.
    pub fn range(self) -> std::ops::Range<usize> {
        match self {
            Workload::A => 0..18,
            Workload::B => 18..48,
            Workload::C => 48..78,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "A",
            Workload::B => "B",
            Workload::C => "C",
        }
    }
}

/// What a test compares.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// PFFP over (H, φ, ψ) settings; a grid for each H of `grid_h`, and
    /// the single settings of `extra`.
    Grid {
        grid_h: Vec<f64>,
        extra: Vec<(f64, f64, f64)>,
    },
    /// Named strategies (label, allocation policy).
    Compare(Vec<(String, String)>),
}

/// One of the paper's tests (spec/pffp.md, "Tests to reproduce").
#[derive(Clone, Debug)]
pub struct Test {
    pub number: u8,
    pub workload: Workload,
    pub machines: Vec<u32>,
    pub bags: bool,
    /// A fixed target utilisation, or (None and `bags`) one drawn per
    /// week in [0.2, 0.9]; None otherwise: arrivals as logged.
    pub utilization: Option<f64>,
    pub kind: Kind,
    /// What we read differently from the paper, printed with the results.
    pub notes: Vec<String>,
    /// PFFP's workload parameters fitted on the logs instead of the
    /// paper's Table 3 values.
    pub fitted: Option<Fitted>,
    /// How the weeks are drawn from the logs.
    pub weeks: WeekDraw,
}

/// How the workloads' weeks are drawn from the logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WeekDraw {
    /// Every week of every log in one pool, shuffled: a log contributes
    /// in proportion to its weeks (the spec's reading).
    #[default]
    Pool,
    /// Each log's weeks shuffled apart, then taken from the logs in turn:
    /// every log contributes about equally to each workload.
    PerLog,
}

impl WeekDraw {
    pub fn name(self) -> &'static str {
        match self {
            WeekDraw::Pool => "pool",
            WeekDraw::PerLog => "per-log",
        }
    }
}

impl std::str::FromStr for WeekDraw {
    type Err = String;
    fn from_str(s: &str) -> Result<WeekDraw, String> {
        match s {
            "pool" => Ok(WeekDraw::Pool),
            "per-log" => Ok(WeekDraw::PerLog),
            _ => Err(format!("{s:?}: expected pool or per-log")),
        }
    }
}

fn compare(labels: &[(&str, &str)]) -> Kind {
    Kind::Compare(
        labels
            .iter()
            .map(|(l, p)| (l.to_string(), p.to_string()))
            .collect(),
    )
}

impl Test {
    /// Test `n` (1–5) as the paper sets it up; `grid` turns Test 5 into
    /// its φ×ψ grid (Table 9).
    pub fn paper(n: u8, grid: bool) -> Result<Test, SimError> {
        let full = || Kind::Grid {
            grid_h: vec![0.78],
            extra: Vec::new(),
        };
        let versus = compare(&[
            ("MST", "mst"),
            ("PFFP1", "pffp1"),
            ("PFFP2", "pffp2"),
            ("MSTUser", "mst-user"),
            ("MLp", "mlp"),
            ("Rand", "rand"),
        ]);
        let t = match n {
            1 => Test {
                number: 1,
                workload: Workload::A,
                machines: vec![1, 1, 1],
                bags: false,
                utilization: None,
                kind: Kind::Grid {
                    grid_h: vec![0.78],
                    extra: paper::TABLE4
                        .iter()
                        .filter(|e| e.0 != 0.78)
                        .map(|e| (e.0, e.1, e.2))
                        .collect(),
                },
                notes: vec![
                    "The paper's Table 3 prints one machine of 1 processor for Test 1; with one machine every \
                     strategy is the same, so we read it as Test 2's 3 machines of 1."
                        .into(),
                ],
                fitted: None,
                weeks: WeekDraw::Pool,
            },
            2 => Test {
                number: 2,
                workload: Workload::B,
                machines: vec![1, 1, 1],
                bags: false,
                utilization: None,
                kind: versus,
                notes: Vec::new(),
                fitted: None,
                weeks: WeekDraw::Pool,
            },
            3 => Test {
                number: 3,
                workload: Workload::A,
                machines: vec![2, 4, 8],
                bags: false,
                utilization: None,
                kind: full(),
                notes: Vec::new(),
                fitted: None,
                weeks: WeekDraw::Pool,
            },
            4 => Test {
                number: 4,
                workload: Workload::B,
                machines: vec![2, 4, 8],
                bags: false,
                utilization: None,
                kind: versus,
                notes: Vec::new(),
                fitted: None,
                weeks: WeekDraw::Pool,
            },
            5 => Test {
                number: 5,
                workload: Workload::C,
                machines: vec![50, 100, 150],
                bags: true,
                utilization: None,
                kind: if grid {
                    full()
                } else {
                    compare(&[
                        ("MST", "mst"),
                        ("PFFP", "pffp[phi=0.001,psi=0.0082]"),
                        ("MSTUser", "mst-user"),
                        ("MLp", "mlp"),
                        ("Rand", "rand"),
                    ])
                },
                notes: vec![
                    "Workload C (the paper's 77.6 M tasks) is weeks 49–78 of the same shuffled pool, as bags \
                     of tasks; each week's arrivals are scaled to a utilisation drawn uniformly in [20 %, 90 %] \
                     (the paper says utilisation oscillates in that range)."
                        .into(),
                ],
                fitted: None,
                weeks: WeekDraw::Pool,
            },
            _ => {
                return Err(SimError::Config(format!("--test {n}: the paper has Tests 1 to 5")));
            }
        };
        if grid && n != 5 && n != 1 && n != 3 {
            return Err(SimError::Config(format!(
                "--grid: Test {n} compares strategies; the φ×ψ grids are Tests 1, 3 and 5"
            )));
        }
        Ok(t)
    }

    /// Uses the parameters fitted on the logs: the grids run at the
    /// fitted H, and every PFFP spec gets the fitted β, S_m, μ (and H
    /// unless it sets one).
    pub fn with_fitted(mut self, f: Fitted) -> Test {
        if let Kind::Grid { grid_h, .. } = &mut self.kind {
            *grid_h = vec![f.h];
        }
        self.fitted = Some(f);
        self
    }

    /// The strategies run, as (label, policy spec), in column order.
    pub fn strategies(&self) -> Vec<(String, String)> {
        let mut all = self.specs();
        if let Some(f) = &self.fitted {
            for (_, spec) in &mut all {
                *spec = f.apply(spec);
            }
        }
        all
    }

    fn specs(&self) -> Vec<(String, String)> {
        match &self.kind {
            Kind::Compare(s) => s.clone(),
            Kind::Grid { grid_h, extra } => {
                let g = paper::grid_values();
                let mut out = Vec::new();
                for &h in grid_h {
                    for &phi in &g {
                        for &psi in &g {
                            out.push(setting(h, phi, psi));
                        }
                    }
                }
                out.extend(extra.iter().map(|&(h, phi, psi)| setting(h, phi, psi)));
                out
            }
        }
    }
}

/// PFFP's workload parameters fitted on the logs (spec/pffp.md: "the
/// `fit` tool computes the workload's own values and a flag uses them").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fitted {
    /// Run times fitted: Workload A's jobs, week after week in submission
    /// order (the paper tunes on Workload A).
    pub jobs: usize,
    /// Pareto I shape and scale (MLE shape, scale by minimum KS distance).
    pub beta: f64,
    pub sm: f64,
    /// Mean run time (s): with β ≤ 1 the fitted law has no mean, so the
    /// sample mean.
    pub mu: f64,
    /// Median of the nine Hurst estimators on the raw series.
    pub h: f64,
    pub hurst: Vec<(String, Option<f64>)>,
}

impl Fitted {
    /// Fits Workload A's run times of `logs` (pool drawn with `seed`).
    pub fn on(logs: &[WeekLog], seed: u64) -> Result<Fitted, SimError> {
        let pool = pool(logs, seed);
        let weeks = workload_weeks(&pool, Workload::A, None)?;
        let x: Vec<f64> = weeks
            .iter()
            .flat_map(|(l, w)| logs[*l].jobs_in(w).iter().map(|j| j.runtime as f64))
            .collect();
        let fit = fairsched_trace::stats::pareto::fit_pareto(&x).ok_or_else(|| {
            SimError::Config(format!(
                "--fitted: {} run times in Workload A, too few (or all equal) for a Pareto fit",
                x.len()
            ))
        })?;
        let hurst: Vec<(String, Option<f64>)> = fairsched_trace::stats::hurst::Estimator::ALL
            .iter()
            .map(|e| (e.name().to_string(), e.estimate(&x)))
            .collect();
        let mut hs: Vec<f64> = hurst
            .iter()
            .filter_map(|h| h.1)
            .filter(|h| h.is_finite())
            .collect();
        hs.sort_by(f64::total_cmp);
        if hs.is_empty() {
            return Err(SimError::Config(format!(
                "--fitted: no Hurst estimator gives a value on {} run times",
                x.len()
            )));
        }
        // PFFP takes 0 < H ≤ 1.
        let h = hs[hs.len() / 2].clamp(0.01, 1.0);
        let round = |v: f64| (v * 1e4).round() / 1e4;
        Ok(Fitted {
            jobs: x.len(),
            beta: round(fit.shape),
            sm: round(fit.scale),
            mu: round(x.iter().sum::<f64>() / x.len() as f64),
            h: round(h),
            hurst,
        })
    }

    /// `spec` with the fitted parameters, if it is a PFFP strategy.
    pub fn apply(&self, spec: &str) -> String {
        let Ok(mut p) = spec.parse::<PolicySpec>() else {
            return spec.to_string();
        };
        if !matches!(p.name.as_str(), "pffp" | "pffp1" | "pffp2") {
            return spec.to_string();
        }
        for (k, v) in [
            ("h", self.h),
            ("beta", self.beta),
            ("sm", self.sm),
            ("mu", self.mu),
        ] {
            if !p.params.iter().any(|(key, _)| key == k) {
                p.params.push((k.to_string(), format!("{v}")));
            }
        }
        p.to_string()
    }
}

/// A PFFP setting's label and spec.
fn setting(h: f64, phi: f64, psi: f64) -> (String, String) {
    (
        format!("H={h} φ={phi} ψ={psi}"),
        format!("pffp[phi={phi},psi={psi},h={h}]"),
    )
}

/// One week of one log, ready to run.
#[derive(Clone, Debug, Serialize)]
pub struct Instance {
    pub index: u32,
    pub log: String,
    pub week: Week,
    /// Jobs of the log in the week, and the tasks they became.
    pub jobs: u64,
    pub tasks: u64,
    /// Arrival times were multiplied by this (1: as logged).
    pub scale: f64,
    /// Σ work / (Σ processors × the week's length), after scaling.
    pub utilization: f64,
    /// Jobs without a user estimate (MSTUser uses the log's median).
    pub missing_estimates: u64,
    pub median_estimate: Option<i64>,
    #[serde(skip)]
    pub arrivals: Vec<Arrival>,
}

/// The shuffled pool of every week with a job: (log, week) pairs.
pub fn pool(logs: &[WeekLog], seed: u64) -> Vec<(usize, Week)> {
    pool_drawn(logs, seed, WeekDraw::Pool)
}

/// The weeks of `logs` in the order the workloads take them, drawn as
/// `how` says.
pub fn pool_drawn(logs: &[WeekLog], seed: u64, how: WeekDraw) -> Vec<(usize, Week)> {
    if how == WeekDraw::PerLog {
        let mut each: Vec<std::collections::VecDeque<(usize, Week)>> = logs
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut v: Vec<(usize, Week)> = l
                    .weeks
                    .iter()
                    .filter(|w| !l.jobs_in(w).is_empty())
                    .map(|w| (i, *w))
                    .collect();
                let mut rng =
                    rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(derive_seed(seed, 0x7FFA), i as u64));
                v.shuffle(&mut rng);
                v.into()
            })
            .collect();
        let mut out = Vec::new();
        while each.iter().any(|q| !q.is_empty()) {
            for q in &mut each {
                if let Some(w) = q.pop_front() {
                    out.push(w);
                }
            }
        }
        return out;
    }
    let mut all: Vec<(usize, Week)> = logs
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            l.weeks
                .iter()
                .filter(|w| !l.jobs_in(w).is_empty())
                .map(move |w| (i, *w))
        })
        .collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0x7FF9));
    all.shuffle(&mut rng);
    all
}

/// The weeks of `workload`, at most `instances` of them.
pub fn workload_weeks(
    pool: &[(usize, Week)],
    workload: Workload,
    instances: Option<u32>,
) -> Result<Vec<(usize, Week)>, SimError> {
    let r = workload.range();
    let want = instances.map_or(r.len(), |n| (n as usize).min(r.len()));
    let end = (r.start + want).min(pool.len());
    if r.start >= end {
        return Err(SimError::Config(format!(
            "the logs have {} weeks with jobs in all; Workload {} takes weeks {}..{} of the shuffled pool \
             (A: 18, B: 30, C: 30): give more logs",
            pool.len(),
            workload.name(),
            r.start + 1,
            r.end
        )));
    }
    Ok(pool[r.start..end].to_vec())
}

/// What a run of `workload` leaves out of what was asked for, in words
/// (`None` when every week asked for runs): `--instances N` takes at most
/// the paper's size of the workload (its weeks of the shuffled pool, which
/// the other workloads do not share), and a pool of `pool` weeks may end
/// before the workload does. The CLI says it on standard error and in
/// `summary.json`'s notes.
pub fn shortfall(pool: usize, workload: Workload, requested: Option<u32>) -> Option<String> {
    let r = workload.range();
    let size = r.len();
    let want = requested.map_or(size, |n| n as usize);
    let capped = want.min(size);
    let ran = (r.start + capped).min(pool).saturating_sub(r.start);
    let w = workload.name();
    let (first, last) = (r.start + 1, r.end);
    let mut said = Vec::new();
    if want > size {
        said.push(format!(
            "--instances {want}: Workload {w} is the paper's {size} weeks (weeks {first}–{last} of the \
             seed's shuffled pool; Workloads A, B and C take disjoint weeks), so at most {size} run"
        ));
    }
    if ran < capped {
        let asked = if requested.is_some() {
            "asked for"
        } else {
            "of the workload"
        };
        said.push(format!(
            "the logs have {pool} weeks with jobs in all and Workload {w} takes weeks {first}–{last} \
             of the shuffled pool: {ran} of the {capped} weeks {asked} ran (give more logs for all)"
        ));
    } else if want > size {
        said.push(format!("{ran} ran"));
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// Builds instance `index` from `week` of `log`.
pub fn instance(log: &WeekLog, week: Week, index: u32, test: &Test, seed: u64) -> Instance {
    let jobs = log.jobs_in(&week);
    let procs: u64 = test.machines.iter().map(|&m| m as u64).sum();
    let per_job = |j: &Job| if test.bags { j.procs as u64 } else { 1 };
    let work: f64 = jobs.iter().map(|j| (per_job(j) * j.runtime as u64) as f64).sum();
    let span = (week.end - week.start) as f64;
    let natural = work / (procs as f64 * span);
    // Test 5 draws a utilisation per week; q-task Tests 1–4 keep the log's.
    let target = test.utilization.or_else(|| {
        (test.bags && test.workload == Workload::C).then(|| {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0x5CA1E ^ index as u64));
            rng.random_range(0.2..=0.9)
        })
    });
    let scale = match target {
        Some(u) if natural > 0.0 => natural / u,
        _ => 1.0,
    };
    let mut arrivals = Vec::new();
    let mut id = 0u64;
    for j in jobs {
        let at = Time::from_millis(((j.submit - week.start) as f64 * scale * 1000.0).round() as i64);
        for _ in 0..per_job(j) {
            id += 1;
            let spec = TaskSpec {
                id: TaskId(id),
                user: UserId(j.user),
                org: OrgId(0),
                slots: 1,
                priority: 1,
                estimate: j.requested_time.map(Time::from_secs),
                workflow: None,
                optional: false,
                target: None,
            };
            arrivals.push(Arrival::new(spec, at, Time::from_secs(j.runtime)).job(j.id));
        }
    }
    Instance {
        index,
        log: log.name.clone(),
        week,
        jobs: jobs.len() as u64,
        tasks: arrivals.len() as u64,
        scale,
        utilization: natural / scale,
        missing_estimates: jobs.iter().filter(|j| j.requested_time.is_none()).count() as u64,
        median_estimate: log.median_estimate,
        arrivals,
    }
}

/// Collects ρ and t_w from a run's completions.
struct Collect {
    acc: MetricsAcc,
    failed: Option<String>,
}

impl Observer for Collect {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        match (rec.outcome, meta.runtime) {
            (Outcome::Completed, Some(p)) => self.acc.add(rec.submit.millis(), p.millis(), rec.end.millis()),
            _ if self.failed.is_none() => {
                self.failed = Some(format!("task {} ended {:?}", rec.spec.id.0, rec.outcome));
            }
            _ => {}
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

/// The allocation spec actually run on `inst`: MSTUser without an
/// explicit `missing` gets the log's median estimate.
pub fn spec_for(policy: &str, inst: &Instance) -> Result<PolicySpec, SimError> {
    let mut spec: PolicySpec = policy
        .parse()
        .map_err(|e| SimError::Config(format!("{policy}: {e}")))?;
    if spec.name == "mst-user"
        && !spec.params.iter().any(|(k, _)| k == "missing")
        && let Some(m) = inst.median_estimate
    {
        spec.params.push(("missing".into(), m.to_string()));
    }
    Ok(spec)
}

/// Runs `policy` on `inst` over `machines` (FCFS queues).
pub fn run_strategy(
    registry: &Registry,
    inst: &Instance,
    machines: &[u32],
    policy: &str,
    seed: u64,
) -> Result<RunMetrics, SimError> {
    let spec = spec_for(policy, inst)?;
    let core = Scheduler::new(
        &Platform::machines(machines),
        derive_seed(seed, inst.index as u64),
        registry.build_allocate(&spec)?,
        registry.build_order(&"fcfs".parse().expect("registered"))?,
        None,
    );
    let mut c = Collect {
        acc: MetricsAcc::default(),
        failed: None,
    };
    Simulation::new(core).run(inst.arrivals.iter().cloned().map(Ok), &mut c)?;
    if let Some(f) = c.failed {
        return Err(SimError::Internal(format!(
            "{policy} on week {}: {f}",
            inst.index
        )));
    }
    Ok(c.acc.finish(machines.iter().sum()))
}

/// One strategy on one instance (also a sweep part's row, read back
/// exactly).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub test: u8,
    pub instance: u32,
    pub log: String,
    pub week_start: i64,
    pub jobs: u64,
    pub tasks: u64,
    pub utilization: f64,
    pub strategy: String,
    pub policy: String,
    pub metrics: RunMetrics,
}

/// Checks every strategy's spec before any run.
pub fn check(registry: &Registry, test: &Test) -> Result<(), SimError> {
    if test.machines.is_empty() || test.machines.contains(&0) {
        return Err(SimError::Config(
            "every machine needs at least one processor".into(),
        ));
    }
    for (_, p) in test.strategies() {
        let spec: PolicySpec = p.parse().map_err(|e| SimError::Config(format!("{p}: {e}")))?;
        registry
            .build_allocate(&spec)
            .map_err(|e| SimError::Config(format!("{p}: {e}")))?;
    }
    Ok(())
}

/// Builds the instances of `test` from `logs`.
pub fn instances(
    logs: &[WeekLog],
    test: &Test,
    count: Option<u32>,
    seed: u64,
) -> Result<Vec<Instance>, SimError> {
    let pool = pool_drawn(logs, seed, test.weeks);
    let weeks = workload_weeks(&pool, test.workload, count)?;
    Ok(weeks
        .par_iter()
        .enumerate()
        .map(|(i, &(l, w))| instance(&logs[l], w, i as u32, test, seed))
        .collect())
}

/// Every strategy on every instance, in parallel; rows in (instance,
/// strategy) order whatever the thread count. `tick` after each run.
pub fn run(
    registry: &Registry,
    insts: &[Instance],
    test: &Test,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, SimError> {
    check(registry, test)?;
    run_checked(registry, insts, test, seed, tick)
}

/// [`run`] once [`check`] passed (an experiment checks once, then runs
/// each instance).
pub(crate) fn run_checked(
    registry: &Registry,
    insts: &[Instance],
    test: &Test,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, SimError> {
    let strategies = test.strategies();
    let work: Vec<(usize, usize)> = (0..insts.len())
        .flat_map(|i| (0..strategies.len()).map(move |s| (i, s)))
        .collect();
    let results: Vec<Result<Row, SimError>> = work
        .par_iter()
        .map(|&(i, s)| {
            let inst = &insts[i];
            let (label, policy) = &strategies[s];
            let metrics = run_strategy(registry, inst, &test.machines, policy, seed)?;
            tick();
            Ok(Row {
                test: test.number,
                instance: inst.index,
                log: inst.log.clone(),
                week_start: inst.week.start,
                jobs: inst.jobs,
                tasks: inst.tasks,
                utilization: inst.utilization,
                strategy: label.clone(),
                policy: spec_for(policy, inst)?.to_string(),
                metrics,
            })
        })
        .collect();
    results.into_iter().collect()
}

/// `[instance][strategy] = [ρ, t_w]` from rows in (instance, strategy)
/// order.
pub fn values(rows: &[Row], strategies: usize) -> Vec<Vec<[f64; 2]>> {
    rows.chunks(strategies.max(1))
        .map(|c| c.iter().map(|r| [r.metrics.rho, r.metrics.mean_wait]).collect())
        .collect()
}

/// The degradation table of a comparison.
pub fn degradations(rows: &[Row], test: &Test) -> Degradation {
    let labels: Vec<String> = test.strategies().into_iter().map(|s| s.0).collect();
    degradation(&labels, &values(rows, labels.len()))
}

/// The degradation of a comparison's mean metrics (the ratio of means).
pub fn degradations_of_means(rows: &[Row], test: &Test) -> Degradation {
    let labels: Vec<String> = test.strategies().into_iter().map(|s| s.0).collect();
    degradation_of_means(&labels, &values(rows, labels.len()))
}

/// Mean ρ and t_w of one PFFP setting over the instances.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub h: f64,
    pub phi: f64,
    pub psi: f64,
    pub rho: f64,
    pub mean_wait: f64,
    /// The paper's ρ for this cell in its grid (Table 5, 7 or 9), if it
    /// has one.
    pub paper: Option<f64>,
    /// Test 1: the experiment number of the paper's Table 4 this setting
    /// is, and Table 4's ρ.
    pub table4: Option<(u8, f64)>,
}

/// One cell per setting of a grid test, in the strategies' order.
pub fn cells(rows: &[Row], test: &Test) -> Vec<Cell> {
    let strategies = test.strategies();
    let n = strategies.len();
    let g = paper::grid_values();
    let table = match test.number {
        1 => Some(&paper::TABLE5),
        3 => Some(&paper::TABLE7),
        5 => Some(&paper::TABLE9),
        _ => None,
    };
    let parse = |spec: &str| -> (f64, f64, f64) {
        let s: PolicySpec = spec.parse().expect("built by setting()");
        let get = |k: &str| {
            s.params
                .iter()
                .find(|p| p.0 == k)
                .and_then(|p| p.1.parse().ok())
                .unwrap_or(f64::NAN)
        };
        (get("h"), get("phi"), get("psi"))
    };
    strategies
        .iter()
        .enumerate()
        .map(|(s, (_, spec))| {
            let (h, phi, psi) = parse(spec);
            let mine: Vec<&Row> = rows.iter().skip(s).step_by(n).collect();
            let k = mine.len().max(1) as f64;
            let pos = |x: f64| g.iter().position(|&v| v == x);
            let in_grid = match (pos(phi), pos(psi)) {
                (Some(i), Some(j)) if h == 0.78 && test.fitted.is_none() => table.map(|t| t[i][j]),
                _ => None,
            };
            let table4 = (test.number == 1 && test.fitted.is_none())
                .then(|| {
                    paper::TABLE4
                        .iter()
                        .position(|e| (e.0, e.1, e.2) == (h, phi, psi))
                        .map(|k| (k as u8 + 1, paper::TABLE4[k].3))
                })
                .flatten();
            Cell {
                h,
                phi,
                psi,
                rho: mine.iter().map(|r| r.metrics.rho).sum::<f64>() / k,
                mean_wait: mine.iter().map(|r| r.metrics.mean_wait).sum::<f64>() / k,
                paper: in_grid,
                table4,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asking for more weeks than a workload has, or having fewer weeks in
    /// the pool than it takes, is said with the numbers; a run of all that
    /// was asked for says nothing.
    #[test]
    fn shortfall_says_what_did_not_run() {
        assert_eq!(shortfall(670, Workload::B, None), None);
        assert_eq!(shortfall(670, Workload::B, Some(30)), None);
        assert_eq!(shortfall(670, Workload::B, Some(5)), None);
        assert_eq!(shortfall(20, Workload::A, Some(18)), None);
        let capped = shortfall(670, Workload::B, Some(100)).unwrap();
        assert!(
            capped.starts_with("--instances 100: Workload B is the paper's 30 weeks (weeks 19–48"),
            "{capped}"
        );
        assert!(capped.ends_with("so at most 30 run; 30 ran"), "{capped}");
        let short = shortfall(25, Workload::B, None).unwrap();
        assert_eq!(
            short,
            "the logs have 25 weeks with jobs in all and Workload B takes weeks 19–48 of the shuffled \
             pool: 7 of the 30 weeks of the workload ran (give more logs for all)"
        );
        let both = shortfall(25, Workload::C, Some(40)).unwrap();
        assert!(both.contains("at most 30 run; the logs have 25 weeks"), "{both}");
        assert!(both.contains(": 0 of the 30 weeks"), "{both}");
        assert!(shortfall(30, Workload::B, Some(10)).is_none());
        assert!(
            shortfall(25, Workload::B, Some(10))
                .unwrap()
                .contains(": 7 of the 10 weeks asked for ran")
        );
    }
}
