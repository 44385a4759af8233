//! Descriptive statistics of a sample, as in the paper's Table 11 (spreadsheet conventions).

use serde::Serialize;

/// Mean, spread and shape of a sample.
///
/// The conventions are the spreadsheet ones the paper's Table 11 uses: `variance` is the
/// sample variance (divisor n − 1), `std` its square root, `std_error` = std / √n,
/// `skewness` the adjusted Fisher–Pearson coefficient `n / ((n−1)(n−2)) Σ ((x−x̄)/s)³`, and
/// `kurtosis` the **excess** kurtosis (normal = 0) with the small-sample correction
/// `n(n+1) / ((n−1)(n−2)(n−3)) Σ ((x−x̄)/s)⁴ − 3(n−1)² / ((n−2)(n−3))`.
/// `mode` is the most frequent value; among equally frequent values the smallest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Descriptive {
    /// Number of values.
    pub count: usize,
    /// Sum of the values.
    pub sum: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Standard error of the mean (std / √n; NaN if n < 2).
    pub std_error: f64,
    /// Median (mean of the two middle values when n is even).
    pub median: f64,
    /// Most frequent value (smallest of the ties).
    pub mode: f64,
    /// How many times the mode occurs.
    pub mode_count: usize,
    /// Sample standard deviation (n − 1; NaN if n < 2).
    pub std: f64,
    /// Sample variance (n − 1; NaN if n < 2).
    pub variance: f64,
    /// Excess kurtosis, bias-corrected (NaN if n < 4 or the values are all equal).
    pub kurtosis: f64,
    /// Adjusted skewness (NaN if n < 3 or the values are all equal).
    pub skewness: f64,
    /// max − min.
    pub range: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Descriptive {
    /// Statistics of `x` (order irrelevant); `None` if `x` is empty or holds a non-finite value.
    pub fn of(x: &[f64]) -> Option<Self> {
        if x.is_empty() || x.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut s = x.to_vec();
        s.sort_unstable_by(f64::total_cmp);
        Some(Self::of_sorted(&s))
    }

    /// Statistics of an ascending, finite, non-empty sample.
    pub(crate) fn of_sorted(s: &[f64]) -> Self {
        let n = s.len();
        let nf = n as f64;
        let sum: f64 = s.iter().sum();
        let mean = sum / nf;
        let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
        for &v in s {
            let d = v - mean;
            let d2 = d * d;
            m2 += d2;
            m3 += d2 * d;
            m4 += d2 * d2;
        }
        let variance = if n >= 2 { m2 / (nf - 1.0) } else { f64::NAN };
        let std = variance.sqrt();
        let skewness = if n >= 3 && std > 0.0 {
            nf / ((nf - 1.0) * (nf - 2.0)) * m3 / std.powi(3)
        } else {
            f64::NAN
        };
        let kurtosis = if n >= 4 && std > 0.0 {
            nf * (nf + 1.0) / ((nf - 1.0) * (nf - 2.0) * (nf - 3.0)) * m4 / (variance * variance)
                - 3.0 * (nf - 1.0) * (nf - 1.0) / ((nf - 2.0) * (nf - 3.0))
        } else {
            f64::NAN
        };
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        };
        // Runs of equal values in the sorted sample; the first longest run wins (smallest value).
        let (mut mode, mut mode_count) = (s[0], 0);
        let mut i = 0;
        while i < n {
            let mut j = i + 1;
            while j < n && s[j] == s[i] {
                j += 1;
            }
            if j - i > mode_count {
                mode = s[i];
                mode_count = j - i;
            }
            i = j;
        }
        Descriptive {
            count: n,
            sum,
            mean,
            std_error: std / nf.sqrt(),
            median,
            mode,
            mode_count,
            std,
            variance,
            kurtosis,
            skewness,
            range: s[n - 1] - s[0],
            min: s[0],
            max: s[n - 1],
        }
    }
}
