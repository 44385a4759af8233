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
use super::{Simulated, System, simulate};
use crate::errors::SimError;
use fairsched_core::{Time, derive_seed};
use fairsched_report::Table;
use fairsched_report::plot::steps;
use fairsched_trace::workflow::WorkflowSource;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;

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
    let Simulated { world, eta, .. } = simulate(
        &builtin,
        grid,
        seed,
        sources,
        spacing,
        &System::NoFairness,
        Vec::new(),
        None,
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

// What `fairsched trace tau` reports, prints and writes.

/// The paper's τ_u.
const PAPER_TAU: f64 = 0.2;

/// One histogram bin, `[lo, hi)`; the last possible one is `[lo, 1]`
/// (η_u ≤ 1: η_u = 1 counts there, and no bin goes past 1).
#[derive(Serialize)]
pub struct Bin {
    pub bin: usize,
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// `tau.json` of `trace tau` (and its `--json`).
#[derive(Serialize)]
pub struct TauReport {
    pub command: &'static str,
    /// The FILE arguments, as given.
    pub inputs: Vec<String>,
    /// The workflows' names.
    pub workflows: Vec<String>,
    pub system: &'static str,
    pub grid: String,
    pub spacing_s: f64,
    pub seed: u64,
    pub bin: f64,
    /// η_u samples (one per instant with a step, until each run's set
    /// makespan), all repetitions.
    pub samples: u64,
    /// The non-zero ones: the histogram's total.
    pub nonzero: u64,
    pub histogram: Vec<Bin>,
    /// The two highest modes, in η_u order (empty if fewer than two).
    pub modes: Vec<Bin>,
    /// The middle of the emptiest valley between the modes.
    pub threshold: Option<f64>,
    pub paper_tau: f64,
    pub repetitions: Vec<TauRepetition>,
}

/// `x` rounded to 10⁻⁹ (bin edges without binary noise).
fn r9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// Decimals that write `bin` exactly (at least 2, at most 6).
fn decimals(bin: f64) -> usize {
    (2..6)
        .find(|&d| {
            let x = bin * 10f64.powi(d as i32);
            (x - x.round()).abs() < 1e-6
        })
        .unwrap_or(6)
}

/// What `trace tau` takes.
#[derive(Clone, Debug)]
pub struct TauArgs {
    /// The workflows as given (files or built-in profiles).
    pub files: Vec<String>,
    pub grid: Option<std::path::PathBuf>,
    /// Seconds between submissions (default: the experiment's).
    pub spacing: Option<f64>,
    pub repetitions: u32,
    pub seed: u64,
    pub bin: f64,
}

/// Runs `a` (its workflows under No-Fairness, `repetitions` times) into
/// a report; `tick` after each run.
pub fn report(a: &TauArgs, tick: &(dyn Fn() + Sync)) -> Result<TauReport, SimError> {
    if !(a.bin.is_finite() && (0.001..=1.0).contains(&a.bin)) {
        return Err(SimError::Usage(format!(
            "--bin {}: give a width from 0.001 to 1 (η_u lies in [0, 1])",
            a.bin
        )));
    }
    let spacing_s = match a.spacing {
        Some(s) if !(s.is_finite() && (0.0..=1e8).contains(&s)) => {
            return Err(SimError::Usage(format!(
                "--spacing {s}: give seconds from 0 to 10⁸"
            )));
        }
        Some(s) => s,
        None => super::Protocol::default().spacing.as_secs_f64(),
    };
    let sources = super::load_sources(&a.files, false)?;
    let grid = match &a.grid {
        Some(p) => Grid::load(p)?,
        None => Grid::default(),
    };
    let spacing = Time::from_millis((spacing_s * 1000.0).round() as i64);
    let t = tau(&grid, a.seed, &sources, spacing, a.repetitions, a.bin, tick)?;
    let h = &t.histogram;
    let bin = |k: usize| {
        let (lo, hi) = h.bounds(k);
        Bin {
            bin: k,
            lo: r9(lo),
            hi: r9(hi),
            count: h.counts[k],
        }
    };
    Ok(TauReport {
        command: "trace tau",
        inputs: a.files.clone(),
        workflows: sources.iter().map(|s| s.name().to_string()).collect(),
        system: "No-Fairness: workflow-fcfs queue, no control, no mirrored raises",
        grid: match &a.grid {
            Some(p) => format!("{}: {}", p.display(), grid.describe()),
            None => format!("default: {}", grid.describe()),
        },
        spacing_s,
        seed: a.seed,
        bin: a.bin,
        samples: t.samples,
        nonzero: t.nonzero,
        histogram: (0..h.counts.len()).map(bin).collect(),
        modes: h.modes.map_or_else(Vec::new, |(m1, m2)| vec![bin(m1), bin(m2)]),
        threshold: h.threshold.map(r9),
        paper_tau: PAPER_TAU,
        repetitions: t.repetitions.clone(),
    })
}

/// Writes `tau.json`, `tau.svg` and `tables.json` together into `dir`,
/// `tau.json` last.
pub fn write_report(
    mut dir: fairsched_report::OutDir,
    r: &TauReport,
    host: &dyn crate::Host,
) -> Result<(), SimError> {
    use fairsched_report::table::{TABLES_JSON, tables_json};
    let svg = tau_svg(r).map_err(|e| SimError::Plot(format!("the histogram: {e}")))?;
    let printed = tau_tables(r);
    crate::experiment::begin(&mut dir, &["tau.json", "tau.svg", TABLES_JSON], host)?;
    dir.write_set(&[
        (TABLES_JSON, &tables_json(&printed)),
        ("tau.svg", svg.as_bytes()),
        ("tau.json", &crate::experiment::summary_json(host.tool(), r)),
    ])?;
    dir.finish()?;
    Ok(())
}

/// The histogram as bars of `#` within 80 columns, the modes and the
/// threshold's bin marked, then the proposal.
pub fn render_tau(r: &TauReport) -> String {
    let mut o = String::new();
    let d = decimals(r.bin);
    let _ = writeln!(
        o,
        "η_u after every event, No-Fairness (workflow-fcfs): {}",
        r.workflows.join(", ")
    );
    let _ = writeln!(
        o,
        "{} run{} (seed {}), submissions {} s apart: {} samples, {} non-zero",
        r.repetitions.len(),
        if r.repetitions.len() == 1 { "" } else { "s" },
        r.seed,
        r.spacing_s,
        r.samples,
        r.nonzero
    );
    if r.nonzero == 0 {
        let _ = writeln!(
            o,
            "\nno non-zero η_u sample: the workflows never ran side by side with unequal W.\nno threshold proposed (paper: {PAPER_TAU})"
        );
        return o;
    }
    // The last bin ends at 1, included.
    let label = |b: &Bin| {
        let close = if b.hi >= 1.0 { ']' } else { ')' };
        format!("[{:.d$}, {:.d$}{close}", b.lo, b.hi)
    };
    let lw = r
        .histogram
        .iter()
        .map(|b| label(b).chars().count())
        .max()
        .unwrap_or(0);
    let max = r.histogram.iter().map(|b| b.count).max().unwrap_or(0);
    let cw = max.to_string().len().max(5);
    const MARK: usize = 7; // " < mode", " < τ_u"
    let width = 80usize.saturating_sub(lw + 1 + cw + 1 + MARK).max(10);
    let valley = r.threshold.map(|t| (t / r.bin).floor() as usize);
    let _ = writeln!(o, "\n{:<lw$} {:>cw$}  (bins of {})", "η_u", "count", r.bin);
    for b in &r.histogram {
        let n = if b.count == 0 {
            0
        } else {
            ((b.count as f64 / max as f64 * width as f64).round() as usize).max(1)
        };
        let bar = "#".repeat(n);
        let mark = if r.modes.iter().any(|m| m.bin == b.bin) {
            " < mode"
        } else if valley == Some(b.bin) {
            " < τ_u"
        } else {
            ""
        };
        let line = format!("{:<lw$} {:>cw$} {bar:<width$}{mark}", label(b), b.count);
        let _ = writeln!(o, "{}", line.trim_end());
    }
    match r.threshold {
        Some(t) => {
            let _ = writeln!(
                o,
                "\nmodes {} and {}; τ_u: middle of the emptiest valley",
                label(&r.modes[0]),
                label(&r.modes[1])
            );
            let _ = writeln!(o, "proposed τ_u = {t:.p$} (paper: {PAPER_TAU})", p = d + 1);
        }
        None => {
            let _ = writeln!(
                o,
                "\nfewer than two modes in the histogram: no threshold proposed (paper: {PAPER_TAU})"
            );
        }
    }
    o
}

/// The table `trace tau` prints (for `tables.json`): the histogram's bins
/// with their counts and marks (the modes, the threshold's bin), the lines
/// around it as title and notes; none when no sample was non-zero (it
/// prints no histogram then).
pub fn tau_tables(r: &TauReport) -> Vec<Table> {
    if r.nonzero == 0 {
        return Vec::new();
    }
    let text = render_tau(r);
    let mut lines = text.lines();
    let title = lines.next().unwrap_or_default().to_string();
    let mut t = Table::new(["η_u", "count", "mark"]).title(title);
    let d = decimals(r.bin);
    let valley = r.threshold.map(|t| (t / r.bin).floor() as usize);
    for b in &r.histogram {
        let close = if b.hi >= 1.0 { ']' } else { ')' };
        let mark = if r.modes.iter().any(|m| m.bin == b.bin) {
            "mode"
        } else if valley == Some(b.bin) {
            "τ_u"
        } else {
            ""
        };
        t.row([
            format!("[{:.d$}, {:.d$}{close}", b.lo, b.hi),
            b.count.to_string(),
            mark.to_string(),
        ]);
    }
    // The line under the title, and the proposal after the bars.
    if let Some(l) = lines.next() {
        t.note(l);
    }
    let after: Vec<&str> = text
        .rsplit("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    for l in after {
        t.note(l);
    }
    vec![t]
}

/// The histogram as a step outline, with the proposed and the paper's τ_u.
pub fn tau_svg(r: &TauReport) -> Result<String, String> {
    let mut bars = vec![(0.0, 0.0)];
    for b in &r.histogram {
        bars.push((b.lo, b.count as f64));
    }
    let end = r.histogram.last().map_or(r.bin, |b| b.hi);
    bars.push((end, 0.0));
    // Room after the last bar, up to η_u = 1.
    bars.push(((end + r.bin).min(1.0), 0.0));
    let top = r.histogram.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let mut series = vec![(format!("non-zero η_u samples ({})", r.nonzero), bars)];
    if let Some(t) = r.threshold {
        series.push((format!("proposed τ_u = {t}"), vec![(t, 0.0), (t, top)]));
    }
    series.push((
        format!("paper τ_u = {PAPER_TAU}"),
        vec![(PAPER_TAU, 0.0), (PAPER_TAU, top)],
    ));
    steps(
        &format!(
            "η_u histogram, bins of {} — {} ({} runs, No-Fairness)",
            r.bin,
            r.workflows.join(", "),
            r.repetitions.len()
        ),
        "η_u",
        "samples",
        &series,
    )
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
