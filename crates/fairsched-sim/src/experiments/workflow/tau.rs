//! Deriving τ_u from runs (spec/workflow-fairness.md, "Threshold τ_u"):
//! replay workflows under No-Fairness (the `workflow-fcfs` queue, no
//! Control, no mirrored raises), take η_u after every event — every sample
//! of the run's [`EtaSeries`], not the thinned series of [`RunOutcome`] —
//! and histogram the non-zero values with [`tau_histogram`].
//!
//! [`RunOutcome`]: super::RunOutcome
//! [`EtaSeries`]: super::observe::EtaSeries

use super::grid::Grid;
use super::stats::{TauHistogram, tau_histogram};
use super::{System, simulate};
use crate::errors::SimError;
use fairsched_core::{Time, derive_seed};
use fairsched_trace::workflow::WorkflowSource;
use rayon::prelude::*;
use serde::Serialize;

/// Every η_u sample of one run.
#[derive(Clone, Debug)]
pub struct EtaRun {
    /// (time, η_u): one sample per instant with a step (as [`EtaSeries`](super::observe::EtaSeries)
    /// records them), up to `end`.
    pub series: Vec<(Time, f64)>,
    /// When the last workflow ended (the set's makespan).
    pub end: Time,
}

/// Runs `sources` once under No-Fairness on `grid` with `seed`, submitted
/// `spacing` apart, and returns every η_u sample until the set's makespan.
/// The run is the one [`run`](super::run) makes with
/// `System::NoFairness` and no mirrored raises (a test checks it).
pub fn eta_samples(
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    spacing: Time,
) -> Result<EtaRun, SimError> {
    let builtin = fairsched_core::Registry::builtin();
    let (world, eta, _) = simulate(
        &builtin,
        grid,
        seed,
        sources,
        spacing,
        &System::NoFairness,
        Vec::new(),
    )?;
    let end = world.end();
    let mut series = eta.series;
    let keep = series.iter().take_while(|p| p.0 <= end).count();
    series.truncate(keep);
    Ok(EtaRun { series, end })
}

/// One repetition's share of the samples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TauRepetition {
    pub repetition: u32,
    pub seed: u64,
    /// η_u samples until the set's makespan.
    pub samples: u64,
    /// Those with η_u > 0 (the ones histogrammed).
    pub nonzero: u64,
    /// The set's makespan, s (the first workflow is submitted at 0).
    pub set_makespan_s: f64,
}

/// The histogram over all repetitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TauRun {
    pub repetitions: Vec<TauRepetition>,
    /// Samples of all repetitions.
    pub samples: u64,
    /// Non-zero samples of all repetitions (= the histogram's total).
    pub nonzero: u64,
    pub histogram: TauHistogram,
}

/// `n` No-Fairness runs with seeds derived from `seed` as
/// [`repetitions`](super::repetitions) derives them (so repetition r
/// replays the grid of the experiment's repetition r), in parallel; the η_u
/// samples of all of them histogrammed in bins of `bin`. The result does
/// not depend on the thread count. `tick` is called after each run.
pub fn tau(
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    spacing: Time,
    n: u32,
    bin: f64,
    tick: &(dyn Fn() + Sync),
) -> Result<TauRun, SimError> {
    let runs: Vec<(u64, EtaRun)> = (0..n)
        .into_par_iter()
        .map(|r| {
            let s = derive_seed(seed, 0x5E7 + r as u64);
            let run = eta_samples(grid, s, sources, spacing)?;
            tick();
            Ok((s, run))
        })
        .collect::<Result<_, SimError>>()?;
    let repetitions = runs
        .iter()
        .enumerate()
        .map(|(r, (s, run))| TauRepetition {
            repetition: r as u32 + 1,
            seed: *s,
            samples: run.series.len() as u64,
            nonzero: run.series.iter().filter(|p| p.1 > 0.0).count() as u64,
            set_makespan_s: run.end.as_secs_f64(),
        })
        .collect::<Vec<_>>();
    let histogram = tau_histogram(
        runs.iter().flat_map(|(_, run)| run.series.iter().map(|p| p.1)),
        bin,
    );
    Ok(TauRun {
        samples: repetitions.iter().map(|r| r.samples).sum(),
        nonzero: repetitions.iter().map(|r| r.nonzero).sum(),
        repetitions,
        histogram,
    })
}

#[cfg(test)]
mod tests {
    use super::super::stats::area;
    use super::super::{SERIES_POINTS, System, repetitions, run, thin};
    use super::*;

    fn sources() -> Vec<WorkflowSource> {
        ["gate", "gate", "simubloch"]
            .iter()
            .map(|n| WorkflowSource::builtin(n).expect("builtin"))
            .collect()
    }

    #[test]
    fn the_samples_are_those_of_the_no_fairness_run() {
        let grid = Grid::default();
        let spacing = Time::from_millis(300_000);
        let s = sources();
        let full = eta_samples(&grid, 7, &s, spacing).unwrap();
        let out = run(
            &fairsched_core::Registry::builtin(),
            &grid,
            7,
            &s,
            spacing,
            &System::NoFairness,
            Vec::new(),
        )
        .unwrap();
        assert!(full.series.iter().all(|p| p.0 <= full.end));
        assert!(full.series.iter().any(|p| p.1 > 0.0), "workflows side by side");
        assert_eq!(thin(&full.series, full.end, SERIES_POINTS), out.eta);
        assert_eq!(area(&full.series, full.end), out.mu);
        assert_eq!(out.priority_changes, 0);
    }

    #[test]
    fn repetitions_replay_the_experiment_seeds_in_order() {
        let grid = Grid::constant(20);
        let spacing = Time::from_millis(5_000);
        let s = sources();
        let t = tau(&grid, 3, &s, spacing, 3, 0.05, &|| {}).unwrap();
        let p = repetitions(
            &fairsched_core::Registry::builtin(),
            &grid,
            3,
            &s,
            &super::super::Protocol::default(),
            3,
            &|| {},
        )
        .unwrap();
        let seeds: Vec<u64> = t.repetitions.iter().map(|r| r.seed).collect();
        assert_eq!(seeds, p.iter().map(|p| p.seed).collect::<Vec<_>>());
        assert_eq!(t.nonzero, t.histogram.counts.iter().sum::<u64>());
        assert!(t.samples >= t.nonzero);
        // The same whatever the thread count.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let again = one.install(|| tau(&grid, 3, &s, spacing, 3, 0.05, &|| {}).unwrap());
        assert_eq!(again, t);
    }
}
