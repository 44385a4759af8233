//! Workload statistics of a log (the PFFP paper's appendices): descriptive statistics of
//! the run times (Table 11), a Pareto I fit (Appendix B), Hurst exponent estimates on the
//! run-time series in submission order, raw and detrended (Table 12), and the
//! aggregation series of Figs 1–4.
//!
//! - [`descriptive`]: [`Descriptive`], spreadsheet conventions (sample variance, excess
//!   kurtosis).
//! - [`pareto`]: [`fit_pareto`]: for each candidate scale `S_m` the MLE shape
//!   `β = n / Σ ln(x_i / S_m)` over the tail `x ≥ S_m`, and the scale minimising the KS
//!   distance between the tail's ECDF and `1 − (S_m / x)^β`. Candidates are the distinct
//!   values with a tail of ≥ [`pareto::MIN_TAIL`] values, thinned to
//!   [`pareto::MAX_CANDIDATES`] evenly spaced ranks when there are more.
//! - [`hurst`]: nine estimators ([`Estimator::ALL`]).
//! - [`detrend`](mod@detrend): polynomial detrending by orthogonal polynomials.
//! - [`fgn`](mod@fgn): exact synthetic fractional Gaussian noise (Davies–Harte), the
//!   estimators' validation input.
//!
//! [`workload_stats`] computes everything for one series.

pub mod descriptive;
pub mod detrend;
pub mod fgn;
pub mod hurst;
pub mod pareto;

pub use descriptive::Descriptive;
pub use detrend::detrend;
pub use fgn::fgn;
pub use hurst::Estimator;
pub use pareto::{ParetoFit, fit_pareto};

use serde::Serialize;

/// Aggregation factor between levels (the paper averages every 10 items).
pub const AGGREGATION_FACTOR: usize = 10;

/// The order of the polynomial detrending (as in the paper's Table 12).
pub const POLY_ORDER: usize = 10;

/// One level of the aggregation series: the means of consecutive non-overlapping blocks of
/// `factor` values (an incomplete last block is dropped).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AggregationLevel {
    /// Values averaged per point: 1, 10, 100, …
    pub factor: usize,
    /// Points at this level (⌊n / factor⌋).
    pub len: usize,
    /// The first points of this level (all of them if `len` ≤ the limit asked for).
    pub values: Vec<f64>,
}

/// Levels 1, 10, 100, … of repeated averaging of every [`AGGREGATION_FACTOR`] values, while
/// a level keeps at least `min_len` points; each level keeps its first `keep` points (so
/// level k covers 10× the span of level k − 1, as in the paper's figures).
pub fn aggregation(x: &[f64], min_len: usize, keep: usize) -> Vec<AggregationLevel> {
    let mut out = Vec::new();
    let mut level = x.to_vec();
    let mut factor = 1;
    while level.len() >= min_len.max(1) {
        out.push(AggregationLevel {
            factor,
            len: level.len(),
            values: level[..level.len().min(keep)].to_vec(),
        });
        level = level
            .chunks_exact(AGGREGATION_FACTOR)
            .map(|c| c.iter().sum::<f64>() / AGGREGATION_FACTOR as f64)
            .collect();
        factor *= AGGREGATION_FACTOR;
    }
    out
}

/// One estimator's H on the raw, linearly detrended and order-10-detrended series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HurstRow {
    /// The estimator.
    pub estimator: Estimator,
    /// Its Table 12 name.
    pub name: &'static str,
    /// On the raw series.
    pub raw: Option<f64>,
    /// After removing a linear trend.
    pub linear: Option<f64>,
    /// After removing a polynomial trend of order [`POLY_ORDER`].
    pub poly: Option<f64>,
}

/// Every estimator on `x`, raw and detrended.
pub fn hurst_table(x: &[f64]) -> Vec<HurstRow> {
    let lin = detrend(x, 1);
    let poly = detrend(x, POLY_ORDER);
    Estimator::ALL
        .iter()
        .map(|&e| HurstRow {
            estimator: e,
            name: e.name(),
            raw: e.estimate(x),
            linear: e.estimate(&lin),
            poly: e.estimate(&poly),
        })
        .collect()
}

/// Points kept per aggregation level in [`WorkloadStats`].
pub const AGGREGATION_KEEP: usize = 200;

/// Everything about one log's jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadStats {
    /// Jobs (run times) analysed.
    pub jobs: usize,
    /// Run times (seconds).
    pub runtime: Option<Descriptive>,
    /// Inter-arrival times (seconds between consecutive submits).
    pub interarrival: Option<Descriptive>,
    /// Pareto I fit of the positive run times.
    pub pareto: Option<ParetoFit>,
    /// Hurst estimates of the run-time series in submission order.
    pub hurst: Vec<HurstRow>,
    /// Aggregation levels of the run-time series (first [`AGGREGATION_KEEP`] points each;
    /// levels with ≥ [`AGGREGATION_KEEP`] points).
    pub aggregation: Vec<AggregationLevel>,
}

/// Statistics of run times given in submission order, with their submit times.
pub fn workload_stats(runtimes: &[f64], submits: &[i64]) -> WorkloadStats {
    // In i128: submits anywhere in i64 (a hostile log's) cannot overflow.
    let interarrival: Vec<f64> = submits
        .windows(2)
        .map(|w| (i128::from(w[1]) - i128::from(w[0])) as f64)
        .collect();
    WorkloadStats {
        jobs: runtimes.len(),
        runtime: Descriptive::of(runtimes),
        interarrival: Descriptive::of(&interarrival),
        pareto: fit_pareto(runtimes),
        hurst: hurst_table(runtimes),
        aggregation: aggregation(runtimes, AGGREGATION_KEEP, AGGREGATION_KEEP),
    }
}
