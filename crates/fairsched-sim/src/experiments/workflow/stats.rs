//! The workflow-fairness paper's summary statistics: standard deviations of
//! slowdowns and makespans, the area under the η_u curve (μ), and the τ_u
//! threshold from a histogram of η_u values (spec/workflow-fairness.md).

use fairsched_core::Time;
use serde::Serialize;

/// Population standard deviation (0 for fewer than two values).
pub fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt()
}

/// μ = Σ_{i≥2} η(t_i)(t_i − t_{i−1}) over the samples up to `until`
/// (seconds × η): each sample's value weighs the time since the previous
/// one, as the spec writes it.
pub fn area(series: &[(Time, f64)], until: Time) -> f64 {
    series
        .windows(2)
        .take_while(|w| w[1].0 <= until)
        .map(|w| w[1].1 * (w[1].0 - w[0].0).as_secs_f64())
        .sum()
}

/// A histogram of the non-zero η_u values and the threshold it suggests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TauHistogram {
    pub bin: f64,
    /// Count per bin `[k·bin, (k+1)·bin)`, up to the highest non-empty
    /// one. η_u ≤ 1, so the bins stop at 1: the last possible bin,
    /// [`last_bin`](TauHistogram::last_bin), is `[k·bin, 1]`, closed (η_u =
    /// 1 counts there), and narrower than `bin` when `bin` does not divide 1.
    pub counts: Vec<u64>,
    /// The two highest modes (bin indices, in increasing order), if there
    /// are two.
    pub modes: Option<(usize, usize)>,
    /// The middle of the valley between the two modes: of the bins with
    /// the lowest count between them, the longest run of consecutive ones
    /// (the first on ties), and its centre. A wide empty valley thus gives
    /// its middle, not its first bin, so the threshold does not jump with
    /// a stray sample near one mode.
    pub threshold: Option<f64>,
}

impl TauHistogram {
    /// The index of the last bin within [0, 1] (the one holding η_u = 1).
    pub fn last_bin(&self) -> usize {
        last_bin(self.bin)
    }

    /// Bin `k`'s bounds `(lo, hi)`: `[k·bin, (k+1)·bin)`, the last one
    /// `[k·bin, 1]`.
    pub fn bounds(&self, k: usize) -> (f64, f64) {
        let lo = k as f64 * self.bin;
        if k >= self.last_bin() {
            (lo, 1.0)
        } else {
            (lo, (k + 1) as f64 * self.bin)
        }
    }
}

/// The index of the bin of width `bin` holding 1: ⌈1 / bin⌉ − 1, with a
/// tolerance for binary noise (1 / 0.05 is 20, not 20.000…1).
fn last_bin(bin: f64) -> usize {
    ((1.0 / bin - 1e-9).ceil() as usize).max(1) - 1
}

/// Histograms the non-zero, finite values of `etas` in bins of `bin` (in
/// (0, 1]) and places τ_u in the lowest-density valley between the two
/// highest modes. The bins stop at 1 (η_u ≤ 1): η_u = 1, and any value
/// above it, count in the last bin `[k·bin, 1]`. A mode is a bin higher
/// than both neighbours (a plateau counts once, at its first bin); the two
/// highest win, ties to the lower bin.
pub fn tau_histogram(etas: impl IntoIterator<Item = f64>, bin: f64) -> TauHistogram {
    assert!(
        bin.is_finite() && bin > 0.0 && bin <= 1.0,
        "tau_histogram: bin {bin} is not in (0, 1]"
    );
    let top = last_bin(bin);
    let mut counts: Vec<u64> = Vec::new();
    for e in etas {
        if !(e.is_finite() && e > 0.0) {
            continue;
        }
        let k = ((e / bin).floor() as usize).min(top);
        if counts.len() <= k {
            counts.resize(k + 1, 0);
        }
        counts[k] += 1;
    }
    let mut peaks: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < counts.len() {
        // A plateau [k, j) of equal counts.
        let mut j = k + 1;
        while j < counts.len() && counts[j] == counts[k] {
            j += 1;
        }
        let left = if k == 0 { 0 } else { counts[k - 1] };
        let right = counts.get(j).copied().unwrap_or(0);
        if counts[k] > 0 && counts[k] > left && counts[k] > right {
            peaks.push(k);
        }
        k = j;
    }
    peaks.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
    let modes = (peaks.len() >= 2).then(|| {
        let (a, b) = (peaks[0], peaks[1]);
        (a.min(b), a.max(b))
    });
    let threshold = modes.map(|(a, b)| {
        let Some(low) = (a + 1..b).map(|k| counts[k]).min() else {
            // Adjacent modes: between them.
            return (a + 1) as f64 * bin;
        };
        // The longest run [start, start + len) of bins at `low`.
        let mut best = (a + 1, 0);
        let mut at = a + 1;
        for run in counts[a + 1..b].chunk_by(|x, y| x == y) {
            if run[0] == low && run.len() > best.1 {
                best = (at, run.len());
            }
            at += run.len();
        }
        (best.0 as f64 + best.1 as f64 / 2.0) * bin
    });
    TauHistogram {
        bin,
        counts,
        modes,
        threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: i64) -> Time {
        Time::from_millis(x * 1000)
    }

    #[test]
    fn std_dev_is_the_population_one() {
        assert_eq!(std_dev(&[]), 0.0);
        assert_eq!(std_dev(&[5.0]), 0.0);
        assert!((std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn area_weighs_each_value_by_the_time_since_the_previous_sample() {
        let series = [
            (s(0), 0.9),
            (s(10), 0.5),
            (s(15), 0.0),
            (s(20), 1.0),
            (s(40), 1.0),
        ];
        // 0.5·10 + 0·5 + 1·5, the last sample is after `until`.
        assert!((area(&series, s(30)) - 10.0).abs() < 1e-12);
        assert!((area(&series, s(40)) - 30.0).abs() < 1e-12);
        assert_eq!(area(&series[..1], s(40)), 0.0);
    }

    #[test]
    fn tau_falls_in_the_valley_between_the_two_highest_modes() {
        // Bins of 0.05: a mode at [0.05, 0.1) (5), a smaller one at
        // [0.3, 0.35) (2), the highest at [0.6, 0.65) (8), a valley of one
        // value at [0.45, 0.5) and empty bins between.
        let mut v = vec![0.0; 50]; // zeros are left out
        v.extend([0.07; 5]);
        v.extend([0.32; 2]);
        v.extend([0.47]);
        v.extend([0.56; 3]);
        v.extend([0.61; 8]);
        let h = tau_histogram(v, 0.05);
        assert_eq!(h.counts.iter().sum::<u64>(), 19);
        assert_eq!(h.modes, Some((1, 12)));
        // Between bins 1 and 12 the empty ones are 2..=5, 7..=8 and 10:
        // the middle of the longest run, 2..=5, is 0.1 + 4 · 0.05 / 2.
        assert!((h.threshold.unwrap() - 0.2).abs() < 1e-12, "{:?}", h.threshold);
        // Two runs of equal length: the first; a single lowest bin that is
        // not empty: its centre.
        let h = tau_histogram([0.02, 0.02, 0.12, 0.22, 0.22], 0.05);
        assert_eq!(h.modes, Some((0, 4)));
        assert!((h.threshold.unwrap() - 0.075).abs() < 1e-12, "{:?}", h.threshold);
        let h = tau_histogram([0.02, 0.02, 0.07, 0.12, 0.12], 0.05);
        assert_eq!(h.modes, Some((0, 2)));
        assert!((h.threshold.unwrap() - 0.075).abs() < 1e-12, "{:?}", h.threshold);
        // One mode only: no threshold.
        let h = tau_histogram([0.3, 0.31, 0.32], 0.05);
        assert_eq!((h.modes, h.threshold), (None, None));
    }

    #[test]
    fn the_bins_stop_at_1() {
        // η_u = 1 falls in the last bin [1 − bin, 1], not in [1, 1 + bin).
        let h = tau_histogram([0.1, 0.6, 0.99, 1.0, 1.0], 0.5);
        assert_eq!(h.counts, vec![1, 4]);
        assert_eq!((h.last_bin(), h.bounds(1)), (1, (0.5, 1.0)));
        let h = tau_histogram([0.02, 0.02, 1.0, 1.0, 1.0], 0.05);
        assert_eq!(h.counts.len(), 20);
        assert_eq!((h.counts[19], h.modes), (3, Some((0, 19))));
        let (lo, hi) = h.bounds(19);
        assert!((lo - 0.95).abs() < 1e-12 && hi == 1.0, "{lo} {hi}");
        // A width that does not divide 1: the last bin is narrower.
        let h = tau_histogram([1.0, 0.95, 0.85], 0.3);
        assert_eq!(h.counts, vec![0, 0, 1, 2]);
        let (lo, hi) = h.bounds(3);
        assert!((lo - 0.9).abs() < 1e-12 && hi == 1.0, "{lo} {hi}");
        assert_eq!(tau_histogram([1.0], 1.0).counts, vec![1]);
    }
}
