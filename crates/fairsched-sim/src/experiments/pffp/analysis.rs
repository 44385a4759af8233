//! The PFFP paper's metrics and its analysis (spec/pffp.md, "Metrics and
//! analysis"): competitive factor ρ = C / LB, mean waiting time t_w, the
//! degradation table with ranks, and performance profiles.

use serde::{Deserialize, Serialize};

/// ρ and t_w of one run of one instance (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Jobs that took part.
    pub jobs: u64,
    /// C = max_j c_j.
    pub makespan: f64,
    /// LB = max(max_j (r_j + p_j), Σ_j p_j / Σ_i m_i).
    pub lower_bound: f64,
    /// C / LB (1 when there was no job).
    pub rho: f64,
    /// t_w = (1/n) Σ_j (c_j − p_j − r_j).
    pub mean_wait: f64,
}

/// Collects (r_j, p_j, c_j) job by job, in exact integer milliseconds
/// (a week where no job waited has t_w exactly 0, not a rounding error).
#[derive(Clone, Debug, Default)]
pub struct MetricsAcc {
    jobs: u64,
    makespan: i64,
    latest_alone: i64,
    work: i128,
    wait: i128,
}

impl MetricsAcc {
    /// A job released at `r`, processed for `p`, completed at `c` (ms).
    pub fn add(&mut self, r: i64, p: i64, c: i64) {
        self.jobs += 1;
        self.makespan = self.makespan.max(c);
        self.latest_alone = self.latest_alone.max(r.saturating_add(p));
        self.work += p as i128;
        self.wait += c as i128 - p as i128 - r as i128;
    }

    /// The metrics (seconds) on a platform of `procs` processors in all.
    pub fn finish(&self, procs: u32) -> RunMetrics {
        let ms = 1000.0;
        let lower_bound = (self.latest_alone as f64).max(self.work as f64 / procs.max(1) as f64) / ms;
        let makespan = self.makespan as f64 / ms;
        RunMetrics {
            jobs: self.jobs,
            makespan,
            lower_bound,
            rho: if lower_bound > 0.0 {
                makespan / lower_bound
            } else {
                1.0
            },
            mean_wait: if self.jobs == 0 {
                0.0
            } else {
                self.wait as f64 / self.jobs as f64 / ms
            },
        }
    }
}

/// The two metrics compared, in the paper's order.
pub const METRICS: [&str; 2] = ["rho", "t_w"];

/// γ = value / best of each strategy on one instance for one metric.
/// When the best is 0, a strategy also at 0 gets γ = 1 and the instance
/// is left out (`None`) if another is above 0: γ would be infinite.
pub fn gammas(values: &[f64]) -> Option<Vec<f64>> {
    let best = values.iter().copied().fold(f64::INFINITY, f64::min);
    if best > 0.0 {
        Some(values.iter().map(|v| v / best).collect())
    } else if values.iter().all(|&v| v == best) {
        Some(vec![1.0; values.len()])
    } else {
        None
    }
}

/// γ per instance (rows) and strategy (columns) for metric `m` (0: ρ,
/// 1: t_w) of `values[instance][strategy]`; rows left out as
/// [`gammas`] says are `None`.
pub fn gamma_matrix(values: &[Vec<[f64; 2]>], m: usize) -> Vec<Option<Vec<f64>>> {
    values
        .iter()
        .map(|inst| gammas(&inst.iter().map(|v| v[m]).collect::<Vec<_>>()))
        .collect()
}

/// One strategy's line of a degradation table (percent).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DegradationRow {
    pub strategy: String,
    /// Mean of (γ − 1)·100 over instances, for ρ and t_w.
    pub rho: f64,
    pub wait: f64,
    /// (rho + wait) / 2.
    pub mean: f64,
    /// Medians over instances of (γ − 1)·100 for ρ and t_w: a few weeks
    /// whose best t_w is near 0 can dominate the means.
    pub rho_median: f64,
    pub wait_median: f64,
    /// 1 = lowest mean; equal means share a rank (1, 2, 2, 4).
    pub rank: u32,
}

/// The degradation table of `values[instance][strategy] = [ρ, t_w]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Degradation {
    pub rows: Vec<DegradationRow>,
    /// Instances counted per metric, and those left out because the best
    /// value was 0 while another was not.
    pub counted: [u32; 2],
    pub left_out: [u32; 2],
}

/// Degradations in percent, averaged over instances per metric, then the
/// mean of the two metrics, ranked.
pub fn degradation(strategies: &[String], values: &[Vec<[f64; 2]>]) -> Degradation {
    let n = strategies.len();
    let mut sums = [vec![0.0; n], vec![0.0; n]];
    let mut all: [Vec<Vec<f64>>; 2] = [vec![Vec::new(); n], vec![Vec::new(); n]];
    let mut counted = [0u32; 2];
    let mut left_out = [0u32; 2];
    for m in 0..2 {
        for g in gamma_matrix(values, m) {
            match g {
                Some(g) => {
                    counted[m] += 1;
                    for (i, x) in g.into_iter().enumerate() {
                        sums[m][i] += (x - 1.0) * 100.0;
                        all[m][i].push((x - 1.0) * 100.0);
                    }
                }
                None => left_out[m] += 1,
            }
        }
    }
    let avg = |m: usize, i: usize| {
        if counted[m] == 0 {
            0.0
        } else {
            sums[m][i] / counted[m] as f64
        }
    };
    let mut rows: Vec<DegradationRow> = strategies
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (rho, wait) = (avg(0, i), avg(1, i));
            DegradationRow {
                strategy: s.clone(),
                rho,
                wait,
                mean: (rho + wait) / 2.0,
                rho_median: median(&mut all[0][i].clone()),
                wait_median: median(&mut all[1][i].clone()),
                rank: 0,
            }
        })
        .collect();
    let means: Vec<f64> = rows.iter().map(|r| r.mean).collect();
    for r in &mut rows {
        r.rank = 1 + means.iter().filter(|&&m| m < r.mean).count() as u32;
    }
    Degradation {
        rows,
        counted,
        left_out,
    }
}

/// The other reading of degradation (issue 28): each strategy's mean ρ
/// and mean t_w over the instances, against the best strategy's mean, in
/// percent; then the mean of the two metrics, ranked. The spec's
/// [`degradation`] averages per-instance ratios instead, so a few
/// instances with a near-0 best weigh as much as any other; here each
/// instance weighs by its size. The medians are those of the per-instance
/// ratios, unchanged; `counted` is the instances averaged.
pub fn degradation_of_means(strategies: &[String], values: &[Vec<[f64; 2]>]) -> Degradation {
    let n = strategies.len();
    let k = values.len().max(1) as f64;
    let means: Vec<[f64; 2]> = (0..n)
        .map(|s| {
            let sum = |m: usize| values.iter().map(|inst| inst[s][m]).sum::<f64>() / k;
            [sum(0), sum(1)]
        })
        .collect();
    let per_week = degradation(strategies, values);
    let mut d = degradation(strategies, &[means]);
    for (r, w) in d.rows.iter_mut().zip(&per_week.rows) {
        r.rho_median = w.rho_median;
        r.wait_median = w.wait_median;
    }
    // The means are one comparison: every instance counts, unless the
    // best mean is 0 while another is not (`left_out` is then 1).
    let all = values.len() as u32;
    d.counted = [0, 1].map(|m| if d.left_out[m] > 0 { 0 } else { all });
    d
}

/// The median (mean of the two middle values; 0 when empty).
fn median(x: &mut [f64]) -> f64 {
    x.sort_by(f64::total_cmp);
    match x.len() {
        0 => 0.0,
        n if n % 2 == 1 => x[n / 2],
        n => (x[n / 2 - 1] + x[n / 2]) / 2.0,
    }
}

/// p(τ) for each τ of `taus`: the fraction of `gammas` that are ≤ τ.
pub fn profile(gammas: &[f64], taus: &[f64]) -> Vec<f64> {
    let mut sorted = gammas.to_vec();
    sorted.sort_by(f64::total_cmp);
    taus.iter()
        .map(|&t| {
            if sorted.is_empty() {
                0.0
            } else {
                sorted.partition_point(|&g| g <= t) as f64 / sorted.len() as f64
            }
        })
        .collect()
}

/// `n + 1` evenly spaced τ from `lo` to `hi`.
pub fn taus(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sequential jobs on 2 processors, by hand: job 1 (r=0, p=10)
    /// ends at 10, job 2 (r=5, p=20) waits 5 s and ends at 30.
    /// LB = max(max(0+10, 5+20), 30/2) = 25; ρ = 30/25 = 1.2;
    /// t_w = (0 + 5)/2 = 2.5.
    #[test]
    fn the_lower_bound_and_the_metrics_by_hand() {
        let mut acc = MetricsAcc::default();
        acc.add(0, 10_000, 10_000);
        acc.add(5_000, 20_000, 30_000);
        let m = acc.finish(2);
        assert_eq!(m.lower_bound, 25.0);
        assert_eq!(m.rho, 1.2);
        assert_eq!(m.mean_wait, 2.5);
        // On one processor the work bound wins: LB = 30, and the same
        // completions are optimal (ρ = 1).
        let m1 = acc.finish(1);
        assert_eq!((m1.lower_bound, m1.rho), (30.0, 1.0));
        assert_eq!(MetricsAcc::default().finish(3).rho, 1.0);
    }

    /// Three strategies on two instances, by hand:
    /// instance 1: ρ = (1.0, 1.5, 2.0), t_w = (10, 10, 30)
    ///   → γ_ρ = (1, 1.5, 2), γ_w = (1, 1, 3);
    /// instance 2: ρ = (2.0, 1.0, 1.0), t_w = (0, 0, 0) → γ_ρ = (2, 1, 1),
    ///   γ_w = (1, 1, 1).
    /// Degradation ρ: A (0+100)/2 = 50, B (50+0)/2 = 25, C (100+0)/2 = 50;
    /// t_w: A 0, B 0, C (200+0)/2 = 100. Means: A 25, B 12.5, C 75.
    #[test]
    fn degradation_and_ranks_by_hand() {
        let names: Vec<String> = ["A", "B", "C"].map(String::from).to_vec();
        let values = vec![
            vec![[1.0, 10.0], [1.5, 10.0], [2.0, 30.0]],
            vec![[2.0, 0.0], [1.0, 0.0], [1.0, 0.0]],
        ];
        let d = degradation(&names, &values);
        let got: Vec<(f64, f64, f64, u32)> = d.rows.iter().map(|r| (r.rho, r.wait, r.mean, r.rank)).collect();
        assert_eq!(
            got,
            vec![(50.0, 0.0, 25.0, 2), (25.0, 0.0, 12.5, 1), (50.0, 100.0, 75.0, 3)]
        );
        assert_eq!((d.counted, d.left_out), ([2, 2], [0, 0]));
        // Medians of two: the means here; C's t_w: (200 + 0)/2.
        let med: Vec<(f64, f64)> = d.rows.iter().map(|r| (r.rho_median, r.wait_median)).collect();
        assert_eq!(med, vec![(50.0, 0.0), (25.0, 0.0), (50.0, 100.0)]);
    }

    #[test]
    fn a_zero_best_with_a_positive_other_is_left_out_and_ties_share_a_rank() {
        assert_eq!(gammas(&[0.0, 3.0]), None);
        assert_eq!(gammas(&[0.0, 0.0]), Some(vec![1.0, 1.0]));
        let names: Vec<String> = ["A", "B", "C"].map(String::from).to_vec();
        let values = vec![
            vec![[1.0, 0.0], [1.0, 5.0], [2.0, 0.0]],
            vec![[1.0, 4.0], [1.0, 4.0], [2.0, 8.0]],
        ];
        let d = degradation(&names, &values);
        assert_eq!((d.counted, d.left_out), ([2, 1], [0, 1]));
        let ranks: Vec<u32> = d.rows.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![1, 1, 3]);
    }

    /// Two weeks on which the two readings rank A and B in opposite
    /// orders. Week 1 is short: ρ = (1, 2), t_w = (10, 20); week 2 long:
    /// ρ = (20, 12), t_w = (200, 120).
    /// Per-week ratios: A (0 + 66.67)/2 = 33.33, B (100 + 0)/2 = 50 on
    /// both metrics: A first.
    /// Means: ρ (10.5, 7), t_w (105, 70): A 50 %, B 0 %: B first.
    #[test]
    fn the_ratio_of_means_can_reverse_the_mean_of_ratios() {
        let names: Vec<String> = ["A", "B"].map(String::from).to_vec();
        let values = vec![vec![[1.0, 10.0], [2.0, 20.0]], vec![[20.0, 200.0], [12.0, 120.0]]];
        let ratios = degradation(&names, &values);
        let means = degradation_of_means(&names, &values);
        let ranks = |d: &Degradation| d.rows.iter().map(|r| r.rank).collect::<Vec<_>>();
        assert_eq!(ranks(&ratios), vec![1, 2]);
        assert_eq!(ranks(&means), vec![2, 1]);
        assert!((ratios.rows[0].rho - 200.0 / 6.0).abs() < 1e-9);
        assert_eq!(ratios.rows[1].rho, 50.0);
        assert!((means.rows[0].rho - 50.0).abs() < 1e-9);
        assert!((means.rows[0].wait - 50.0).abs() < 1e-9);
        assert_eq!((means.rows[1].rho, means.rows[1].wait), (0.0, 0.0));
        assert_eq!(means.counted, [2, 2]);
        // The medians stay those of the per-week ratios.
        assert_eq!(means.rows[1].rho_median, ratios.rows[1].rho_median);
    }

    #[test]
    fn the_performance_profile_by_hand() {
        let g = [1.0, 1.2, 1.5, 3.0];
        assert_eq!(
            profile(&g, &[1.0, 1.2, 1.49, 2.0, 5.0]),
            vec![0.25, 0.5, 0.5, 0.75, 1.0]
        );
        assert_eq!(profile(&[], &[1.0]), vec![0.0]);
        assert_eq!(taus(1.0, 2.0, 4), vec![1.0, 1.25, 1.5, 1.75, 2.0]);
    }
}
