//! The run library: one run with its typed result ([`RunConfig::execute`]
//! → [`RunOutcome`]: the `summary.json` schema and the run's metrics), and
//! a sweep of runs in parallel ([`Sweep`]). The CLI, the paper experiments,
//! the broker's what-if replay and the tests all go through here, so they
//! share the defaults, the summary and its checks.

use crate::config::{PlatformInfo, RunConfig};
use crate::errors::SimError;
use crate::fairness::{FairnessObserver, OrgFairness};
use crate::semantics::{ProcsFrom, RuntimeLimit};
use fairsched_core::metrics::Metrics;
use fairsched_core::{CoreStats, Fanout, Observer, PolicySpec, Time};
use fairsched_trace::{FilterCounts, TraceScan};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one run reports: `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub policy: String,
    pub allocate: String,
    pub control: Option<String>,
    pub trace: String,
    pub seed: u64,
    /// Tasks simulated (after filters, window and splitting).
    pub jobs: u64,
    pub outcomes: BTreeMap<&'static str, u64>,
    pub makespan_s: f64,
    pub mean_wait_s: f64,
    pub mean_response_s: f64,
    pub mean_bounded_slowdown: f64,
    pub utilization: f64,
    pub platform: PlatformInfo,
    pub orgs: u32,
    pub ownership: String,
    /// Per organization ψ, φ and φ − ψ at the end (with several
    /// organizations): see [`crate::fairness`].
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
    /// The only field that differs between two runs of the same config.
    pub wall_time_s: f64,
}

/// A finished run: its summary and its metrics (per user, per
/// organization).
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub summary: Summary,
    pub metrics: Metrics,
}

impl RunConfig {
    /// Runs to the end, with metrics, pushing every record into `obs` as
    /// well; checks that every submitted task ended exactly once and
    /// assembles the summary.
    pub fn execute(&self, scan: &TraceScan, obs: &mut dyn Observer) -> Result<RunOutcome, SimError> {
        let mut metrics = Metrics::default();
        let started = Instant::now();
        let orgs = self.platform_file.as_ref().map_or(self.orgs, |f| f.orgs());
        let mut fair = (orgs > 1).then(FairnessObserver::default);
        let report = match fair.as_mut() {
            Some(f) => self.run(scan, &mut Fanout(vec![&mut metrics, f, obs]))?,
            None => self.run(scan, &mut Fanout(vec![&mut metrics, obs]))?,
        };
        let fairness = fair.map(|f| {
            let at = self.window.map(|(_, len)| Time::from_secs(len));
            f.finish(&report.platform.per_org, report.platform.machines.len(), at)
        });
        let wall_time_s = started.elapsed().as_secs_f64();
        let ended: u64 = metrics.outcomes.values().sum();
        if ended != report.stats.submitted || metrics.all.tasks != ended {
            return Err(SimError::Internal(format!(
                "{} tasks submitted but {ended} ended",
                report.stats.submitted
            )));
        }
        let summary = Summary {
            policy: self.order.to_string(),
            allocate: self.allocate().to_string(),
            control: self.control.as_ref().map(|c| c.to_string()),
            trace: self.trace.name(),
            seed: self.seed,
            jobs: metrics.all.tasks,
            outcomes: metrics.outcomes.clone(),
            makespan_s: metrics.makespan().as_secs_f64(),
            mean_wait_s: metrics.all.mean_wait(),
            mean_response_s: metrics.all.mean_response(),
            mean_bounded_slowdown: metrics.all.mean_bsld(),
            utilization: metrics.utilization(),
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
        };
        Ok(RunOutcome { summary, metrics })
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

    /// Calls `f` on every run, in parallel; results in run order.
    pub fn run<T: Send>(&self, f: impl Fn(&SweepRun) -> T + Sync) -> Vec<T> {
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

    #[test]
    fn repeated_names_get_a_suffix() {
        let names = unique_names(["fifo", "fifo", "easy", "fifo"].map(String::from));
        assert_eq!(names, ["fifo", "fifo@2", "easy", "fifo@3"]);
    }
}
