//! The run library: one run with its typed result ([`RunConfig::execute`]
//! → [`RunOutcome`]: the `summary.json` schema and the run's metrics), and
//! a sweep of runs in parallel ([`Sweep`]). The CLI, the paper experiments,
//! the broker's what-if replay and the tests all go through here, so they
//! share the defaults, the summary and its checks.

use crate::config::{PlatformInfo, RunConfig};
use crate::errors::SimError;
use crate::fairness::{FairnessObserver, OrgFairness};
use crate::semantics::{ProcsFrom, RuntimeLimit};
use fairsched_core::metrics::{BSLD_BOUND, Distributions, JainIndex, LogStatusCounts, Metrics};
use fairsched_core::{CoreStats, Fanout, Observer, PolicySpec, Time};
use fairsched_trace::{FilterCounts, TraceScan};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one run reports: `summary.json`. Times are seconds of simulated
/// time; [`Definitions`] (in the file as `definitions`) says what each
/// figure is.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The program that ran it, its build and its command line: set by
    /// the program (the library leaves it `None`).
    pub tool: Option<Tool>,
    pub policy: String,
    pub allocate: String,
    pub control: Option<String>,
    pub trace: String,
    pub seed: u64,
    /// Tasks simulated (after filters, window and splitting).
    pub jobs: u64,
    pub outcomes: BTreeMap<&'static str, u64>,
    /// The simulated tasks by their job's status in the log (SWF field 11).
    pub log_status: LogStatusCounts,
    pub makespan_s: f64,
    /// Over the started tasks; `None` (null) when none started.
    pub mean_wait_s: Option<f64>,
    /// Over the completed tasks; `None` (null) when none completed.
    pub mean_response_s: Option<f64>,
    /// Over the completed tasks (≥ 1 each); `None` (null) when none completed.
    pub mean_bounded_slowdown: Option<f64>,
    /// p50, p90, p99 (nearest rank) and max of wait, response and bounded
    /// slowdown, over the tasks each mean is over.
    pub percentiles: Distributions,
    /// `None` (null) when no task ran: 0 / 0 processor-time.
    pub utilization: Option<f64>,
    /// Jain's index over the users' mean bounded slowdowns (users with a
    /// completed task).
    pub jain_users_bsld: JainIndex,
    /// Jain's index over the organizations' mean bounded slowdowns.
    pub jain_orgs_bsld: JainIndex,
    /// Per organization: its name, processors owned and processor time
    /// received, each as a share of the total.
    pub org_shares: Vec<OrgShareLine>,
    pub platform: PlatformInfo,
    pub orgs: u32,
    pub ownership: String,
    /// Per organization ψ at the end, and with [`RunConfig::phi`] φ and
    /// φ − ψ (with several organizations): see [`crate::fairness`].
    pub fairness: Option<OrgFairness>,
    pub window: Option<(i64, i64)>,
    pub split_parallel: bool,
    /// Which SWF field gave the jobs' processors: `allocated` (field 5,
    /// else 8) or `requested` (field 8, else 5). See docs/semantics.md.
    pub procs_from: ProcsFrom,
    /// Kept jobs whose processors are not field 5's (0 with `allocated`),
    /// counted over the lines read, as `filters` (see `filters_scope`).
    pub procs_differ: u64,
    /// A job running past its requested time: `ignore` (runs its logged
    /// runtime) or `kill` (killed there, outcome `killed`).
    pub runtime_limit: RuntimeLimit,
    /// Tasks killed at their requested time (0 with `ignore`).
    pub killed_at_limit: u64,
    pub filters: FilterCounts,
    /// What `filters` counted: the whole log, or (with a window, whose
    /// reading stops at its end) the lines up to the window's end.
    pub filters_scope: &'static str,
    pub sorted_submits: bool,
    /// Jobs dropped for needing more processors than the largest machine.
    pub too_wide: u64,
    pub stranded: u64,
    pub core: CoreStats,
    /// The only field that differs between two runs of the same config
    /// (with `tool`'s command line and commit): seconds, rounded to the
    /// millisecond.
    pub wall_time_s: f64,
    pub definitions: Definitions,
}

/// One organization's entry of `org_shares`: [`fairsched_core::metrics::OrgShare`] with its name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OrgShareLine {
    pub org: u32,
    /// The platform file's name for it; `org<i>` when it gives none, and
    /// without a platform file.
    pub name: String,
    /// Processors it owns.
    pub procs: u32,
    /// Its processors / all processors (`None` when there are none).
    pub owned_share: Option<f64>,
    /// Processor-seconds its tasks held, over all their runs.
    pub slot_seconds: f64,
    /// Its processor-seconds / every task's (`None` when no task ran).
    pub received_share: Option<f64>,
}

/// Which program wrote a summary: its name and version, the git commit it
/// was built from, and the command line that ran it.
#[derive(Clone, Debug, Serialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// The short hash of the commit, with `-dirty` when the checkout had
    /// uncommitted changes to tracked files; `unknown` when it was built
    /// outside a git checkout.
    pub commit: String,
    /// The command line, each argument shell-quoted when it needs it.
    pub command: String,
}

impl Tool {
    /// A program that uses the library without saying who it is: this
    /// library's name and version, commit unknown, the process's command
    /// line.
    pub fn library() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
            commit: "unknown".into(),
            command: fairsched_report::files::command_line(),
        }
    }
}

/// What each figure of a summary is, and its unit: written into every
/// `summary.json`, so a file read years later still says it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Definitions {
    pub units: &'static str,
    pub wait: &'static str,
    pub response: &'static str,
    pub bounded_slowdown: &'static str,
    /// τ, seconds.
    pub bounded_slowdown_tau_s: f64,
    pub makespan: &'static str,
    pub utilization: &'static str,
    pub percentiles: &'static str,
    pub jain: &'static str,
    pub org_shares: &'static str,
    pub log_status: &'static str,
}

/// The definitions every summary carries.
pub const DEFINITIONS: Definitions = Definitions {
    units: "times in seconds of simulated time (the log's clock; with --window, from the \
            window's start); slot_seconds in processor-seconds; psi and phi in s²; \
            wall_time_s in seconds of the host's clock",
    wait: "start − submit of a task's last start, over the tasks that started",
    response: "end − submit, over the completed tasks",
    bounded_slowdown: "max(1, response / max(run, τ)) with run = end − start of the last run \
                       and τ = 10 s, over the completed tasks",
    bounded_slowdown_tau_s: BSLD_BOUND.millis() as f64 / 1000.0,
    makespan: "last end − first submit of the simulated tasks",
    utilization: "processor-time held by the tasks' runs (completed or not) / processor-time \
                  present, over [first submit, last end]",
    percentiles: "nearest rank: pP of n values is the ⌈P·n/100⌉-th smallest, max the largest; \
                  null when n = 0. Kept as f32: exact for whole seconds below 2^24 s, else 7 \
                  significant digits; max is exact",
    jain: "Jain's index J = (Σx)² / (n·Σx²) over the mean bounded slowdowns x of the n users \
           (organizations) with a completed task: 1 when all are equal, down to 1/n; \
           1 when n = 1, null when n = 0",
    org_shares: "owned_share = the organization's processors / all processors; received_share = \
                 processor-time its tasks held (every run) / processor-time all tasks held",
    log_status: "tasks by their job's status in the log (SWF field 11): completed 1, failed 0, \
                 cancelled 5, other (2–4 partial, -1 unknown, none). Whatever its status, the \
                 simulation runs a job as logged (field 4's runtime); --drop-failed and \
                 --drop-cancelled leave such jobs out",
};

/// A finished run: its summary and its metrics (per user, per
/// organization).
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub summary: Summary,
    pub metrics: Metrics,
    /// The log's scan, gathered while it was read when the run started
    /// from a header-only one ([`crate::RunReport::read`]).
    pub read: Option<TraceScan>,
}

impl RunConfig {
    /// Runs to the end, with metrics, pushing every record into `obs` as
    /// well; checks that every submitted task ended exactly once and
    /// assembles the summary.
    pub fn execute(&self, scan: &TraceScan, obs: &mut dyn Observer) -> Result<RunOutcome, SimError> {
        let mut metrics = Metrics::default();
        let started = Instant::now();
        let orgs = self.platform_file.as_ref().map_or(self.orgs, |f| f.orgs());
        let at = self.window.map(|(_, len)| Time::from_secs(len));
        let mut fair = (orgs > 1).then(|| FairnessObserver::new(at, self.phi));
        let report = match fair.as_mut() {
            Some(f) => self.run(scan, &mut Fanout(vec![&mut metrics, f, obs]))?,
            None => self.run(scan, &mut Fanout(vec![&mut metrics, obs]))?,
        };
        let names = self.org_names(orgs.max(report.platform.per_org.len() as u32));
        let name = |o: u32| {
            names
                .get(o as usize)
                .cloned()
                .unwrap_or_else(|| format!("org{o}"))
        };
        let mut fairness = fair.map(|f| f.finish(&report.platform.per_org, report.platform.machines.len()));
        for line in fairness.iter_mut().flat_map(|f| f.orgs.iter_mut()) {
            line.name = name(line.org);
        }
        let wall_time_s = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let ended: u64 = metrics.outcomes.values().sum();
        if ended != report.stats.submitted || metrics.all.tasks != ended {
            return Err(SimError::Internal(format!(
                "{} tasks submitted but {ended} ended",
                report.stats.submitted
            )));
        }
        let percentiles = metrics.distributions();
        // The values are needed no more: the caller writes per-user and
        // per-organization tables only.
        metrics.drop_samples();
        let summary = Summary {
            tool: None,
            policy: self.order.to_string(),
            allocate: self.allocate().to_string(),
            control: self.control.as_ref().map(|c| c.to_string()),
            trace: self.trace.name(),
            seed: self.seed,
            jobs: metrics.all.tasks,
            outcomes: metrics.outcomes.clone(),
            log_status: metrics.log_status,
            makespan_s: metrics.makespan().as_secs_f64(),
            mean_wait_s: (metrics.all.started > 0).then(|| metrics.all.mean_wait()),
            mean_response_s: (metrics.all.completed > 0).then(|| metrics.all.mean_response()),
            mean_bounded_slowdown: (metrics.all.completed > 0).then(|| metrics.all.mean_bsld()),
            percentiles,
            utilization: (metrics.all.tasks > 0).then(|| metrics.utilization()),
            jain_users_bsld: metrics.jain_users_bsld(),
            jain_orgs_bsld: metrics.jain_orgs_bsld(),
            org_shares: metrics
                .org_shares(&report.platform.per_org)
                .into_iter()
                .map(|s| OrgShareLine {
                    org: s.org,
                    name: name(s.org),
                    procs: s.procs,
                    owned_share: s.owned_share,
                    slot_seconds: s.slot_seconds,
                    received_share: s.received_share,
                })
                .collect(),
            platform: report.platform,
            orgs,
            ownership: match &self.platform_file {
                Some(f) => format!("platform file {}", f.path.display()),
                None => self.ownership.to_string(),
            },
            fairness,
            window: self.window,
            split_parallel: self.split_parallel,
            procs_from: self.procs_from,
            procs_differ: report.procs_differ,
            runtime_limit: self.runtime_limit,
            killed_at_limit: report.killed_at_limit,
            filters: report.filters,
            filters_scope: if report.filters_complete {
                "whole log"
            } else {
                "lines read up to the window's end"
            },
            sorted_submits: report.sorted,
            too_wide: report.too_wide,
            stranded: report.stats.stranded,
            core: report.stats.core,
            wall_time_s,
            definitions: DEFINITIONS,
        };
        Ok(RunOutcome {
            summary,
            metrics,
            read: report.read,
        })
    }
}

impl RunConfig {
    /// The names of organizations `0..orgs`: the platform file's
    /// (`org<i>` for one it does not name), else `org<i>`.
    pub fn org_names(&self, orgs: u32) -> Vec<String> {
        (0..orgs)
            .map(|o| match &self.platform_file {
                Some(f) => f
                    .orgs
                    .get(o as usize)
                    .map_or_else(|| format!("org{o}"), |d| d.name.clone()),
                None => format!("org{o}"),
            })
            .collect()
    }
}

/// One run of a sweep, with a name unique within the sweep (a folder name).
#[derive(Clone, Debug)]
pub struct SweepRun {
    pub name: String,
    pub config: RunConfig,
}

/// Runs that share a trace, executed in parallel. Results come back in the
/// order of the runs, and each run's output depends only on its own
/// config: the same whatever the number of threads.
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    pub runs: Vec<SweepRun>,
}

impl Sweep {
    /// One run per order policy on top of `base`, named by
    /// [`PolicySpec::slug`] (one to one); a spec given twice gets `@2`,
    /// `@3`… so that no two runs share a name.
    pub fn over_orders(base: &RunConfig, orders: &[PolicySpec]) -> Sweep {
        let names = unique_names(orders.iter().map(PolicySpec::slug));
        let runs = orders
            .iter()
            .zip(names)
            .map(|(order, name)| SweepRun {
                name,
                config: RunConfig {
                    order: order.clone(),
                    ..base.clone()
                },
            })
            .collect();
        Sweep { runs }
    }

    /// Calls `f` on every run, in parallel; results in run order. A single
    /// run goes on the calling thread (no thread pool is started for it).
    pub fn run<T: Send>(&self, f: impl Fn(&SweepRun) -> T + Sync) -> Vec<T> {
        if self.runs.len() == 1 {
            return self.runs.iter().map(&f).collect();
        }
        self.runs.par_iter().map(&f).collect()
    }
}

/// Makes names unique: a repeated name gets `@2`, `@3`… (`@` never occurs
/// in a policy slug).
pub fn unique_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    names
        .into_iter()
        .map(|n| {
            let k = seen.entry(n.clone()).or_insert(0);
            *k += 1;
            if *k == 1 { n } else { format!("{n}@{k}") }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::TraceInput;
    use fairsched_core::metrics::Distribution;

    /// Five jobs on one processor, by hand. Under fcfs: job 1 runs [0, 100),
    /// 2 [100, 150), 3 [150, 155), 4 [155, 175), 5 [300, 310). Waits 0, 100,
    /// 140, 135, 0; responses 100, 150, 145, 155, 10; bounded slowdowns 1,
    /// 3, 14.5, 7.75, 1. Job 4 failed in the log (status 0), job 5 was
    /// cancelled (5).
    const HAND: &[u8] = b"; MaxProcs: 1
1   0 -1 100 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2   0 -1  50 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
3  10 -1   5 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1
4  20 -1  20 1 -1 -1 1 -1 -1 0 2 1 -1 -1 -1 -1 -1
5 300 -1  10 1 -1 -1 1 -1 -1 5 3 1 -1 -1 -1 -1 -1
";

    fn dist(p50: f64, p90: f64, p99: f64, max: f64) -> Distribution {
        Distribution {
            n: 5,
            p50: Some(p50),
            p90: Some(p90),
            p99: Some(p99),
            max: Some(max),
        }
    }

    #[test]
    fn a_hand_made_log_gives_the_figures_worked_out_by_hand() {
        let c = RunConfig::new(
            TraceInput::Bytes {
                name: "hand.swf".into(),
                data: HAND,
            },
            "fcfs".parse().unwrap(),
        );
        let scan = c.trace.scan(false).unwrap();
        let done = c.execute(&scan, &mut fairsched_core::Fanout(vec![])).unwrap();
        let s = done.summary;
        assert_eq!(s.makespan_s, 310.0);
        // Sorted waits 0 0 100 135 140: ranks ⌈2.5⌉ = 3, ⌈4.5⌉ = 5, ⌈4.95⌉ = 5.
        assert_eq!(s.percentiles.wait_s, dist(100.0, 140.0, 140.0, 140.0));
        assert_eq!(s.percentiles.response_s, dist(145.0, 155.0, 155.0, 155.0));
        assert_eq!(s.percentiles.bounded_slowdown, dist(3.0, 14.5, 14.5, 14.5));
        assert_eq!(s.mean_wait_s, Some(75.0));
        assert_eq!(
            s.log_status,
            LogStatusCounts {
                completed: 3,
                failed: 1,
                cancelled: 1,
                other: 0,
            }
        );
        // Users' mean bounded slowdowns 2, 11.125, 1.
        let x = [2.0f64, 11.125, 1.0];
        let j = x.iter().sum::<f64>().powi(2) / (3.0 * x.iter().map(|v| v * v).sum::<f64>());
        assert_eq!(s.jain_users_bsld.n, 3);
        assert!((s.jain_users_bsld.index.unwrap() - j).abs() < 1e-12);
        // One organization: J = 1, and it owns and received everything.
        assert_eq!(
            s.jain_orgs_bsld,
            JainIndex {
                index: Some(1.0),
                n: 1
            }
        );
        assert_eq!(s.org_shares.len(), 1);
        assert_eq!(s.org_shares[0].name, "org0");
        assert_eq!(
            (s.org_shares[0].owned_share, s.org_shares[0].received_share),
            (Some(1.0), Some(1.0))
        );
        assert_eq!(s.org_shares[0].slot_seconds, 185.0);
        assert!(s.tool.is_none(), "the program sets it");
        assert_eq!(s.definitions.bounded_slowdown_tau_s, 10.0);
        assert_eq!(s.wall_time_s, (s.wall_time_s * 1000.0).round() / 1000.0);
    }

    #[test]
    fn repeated_names_get_a_suffix() {
        let names = unique_names(["fifo", "fifo", "easy", "fifo"].map(String::from));
        assert_eq!(names, ["fifo", "fifo@2", "easy", "fifo@3"]);
    }
}
