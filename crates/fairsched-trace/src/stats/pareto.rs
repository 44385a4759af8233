//! Pareto type I fit: MLE shape for each candidate scale, scale chosen by minimum KS distance.

use serde::Serialize;

/// At most this many candidate scales are tried. With more distinct values than this, the
/// candidates are the distinct values at evenly spaced ranks (quantiles) of the positive
/// sample, plus the smallest value.
pub const MAX_CANDIDATES: usize = 1000;

/// A candidate scale is tried only if its tail holds at least this many values (a tail of a
/// handful of values always fits well and says nothing).
pub const MIN_TAIL: usize = 50;

/// A fitted Pareto I law `F(x) = 1 − (S_m / x)^β` for `x ≥ S_m`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParetoFit {
    /// Scale: where the tail starts.
    pub scale: f64,
    /// Shape β (MLE over the tail).
    pub shape: f64,
    /// Kolmogorov–Smirnov distance between the tail's ECDF and the fitted CDF.
    pub ks: f64,
    /// Values ≥ scale.
    pub tail: usize,
    /// Positive values the fit saw (values ≤ 0 are ignored).
    pub n: usize,
    /// Candidate scales tried.
    pub candidates: usize,
}

/// Fits a Pareto I law to the positive values of `x` (see the module doc of
/// [`crate::stats`]). `None` if fewer than [`MIN_TAIL`] positive values or all are equal.
///
/// Cost: one sort, prefix sums of `ln x`, then for each candidate scale one pass over the
/// *distinct* values of its tail: O(n log n + C·d) with C ≤ [`MAX_CANDIDATES`] and d the
/// number of distinct values.
pub fn fit_pareto(x: &[f64]) -> Option<ParetoFit> {
    let mut s: Vec<f64> = x.iter().copied().filter(|v| v.is_finite() && *v > 0.0).collect();
    s.sort_unstable_by(f64::total_cmp);
    let n = s.len();
    if n < MIN_TAIL {
        return None;
    }
    // Distinct values: value, its log, and the index of its first occurrence.
    let mut values = Vec::new();
    let mut logs = Vec::new();
    let mut first = Vec::new();
    for (i, &v) in s.iter().enumerate() {
        if i == 0 || v != s[i - 1] {
            values.push(v);
            logs.push(libm::log(v));
            first.push(i);
        }
    }
    let d = values.len();
    // suffix[i] = Σ_{k ≥ i} ln s[k]
    let mut suffix = vec![0.0; n + 1];
    for i in (0..n).rev() {
        suffix[i] = suffix[i + 1] + libm::log(s[i]);
    }
    // Candidate distinct indices whose tail is big enough.
    let eligible = first.iter().take_while(|&&f| n - f >= MIN_TAIL).count();
    let cands: Vec<usize> = if eligible <= MAX_CANDIDATES {
        (0..eligible).collect()
    } else {
        let mut c: Vec<usize> = (0..MAX_CANDIDATES)
            .map(|q| {
                // Distinct value at the q-th evenly spaced rank among eligible ranks.
                let rank = q * (first[eligible - 1]) / (MAX_CANDIDATES - 1);
                first.partition_point(|&f| f <= rank) - 1
            })
            .collect();
        c.dedup();
        c
    };
    let mut best: Option<ParetoFit> = None;
    for &c in &cands {
        let start = first[c];
        let tail = n - start;
        let tf = tail as f64;
        let ln_s = logs[c];
        let denom = suffix[start] - tf * ln_s;
        if denom <= 0.0 {
            continue;
        }
        let beta = tf / denom;
        // KS over the tail's distinct values: the ECDF jumps at each, compare both sides.
        let mut ks = 0.0f64;
        for k in c..d {
            let below = (first[k] - start) as f64 / tf;
            let upto = (if k + 1 < d { first[k + 1] } else { n } - start) as f64 / tf;
            let f = 1.0 - libm::exp(beta * (ln_s - logs[k]));
            ks = ks.max((f - below).abs()).max((upto - f).abs());
        }
        if best.as_ref().is_none_or(|b| ks < b.ks) {
            best = Some(ParetoFit {
                scale: values[c],
                shape: beta,
                ks,
                tail,
                n,
                candidates: cands.len(),
            });
        }
    }
    best
}
