//! Workload statistics: descriptive values by hand, the Pareto fit on known Pareto samples,
//! every Hurst estimator on exact synthetic fGn, and a real log.
//!
//! The bias table of `docs/pffp-stats.md` is printed by the ignored test:
//! `cargo test --release -p fairsched-trace --test stats -- --ignored --nocapture bias_table`.

use fairsched_trace::stats::{
    self, Descriptive, Estimator, aggregation, detrend, fgn, fit_pareto, workload_stats,
};
use fairsched_trace::{JobStream, StreamOptions};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

const N: usize = 1 << 14;
const HS: [f64; 4] = [0.6, 0.7, 0.8, 0.9];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

#[test]
fn descriptive_statistics_by_hand() {
    // 1, 2, 2, 3, 7: n 5, sum 15, mean 3, deviations −2 −1 −1 0 4.
    // Σd² = 22 → variance 5.5; Σd³ = −8 −1 −1 + 64 = 54; Σd⁴ = 16 + 1 + 1 + 256 = 274.
    let d = Descriptive::of(&[7.0, 2.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(
        (d.count, d.sum, d.mean, d.median, d.mode, d.mode_count),
        (5, 15.0, 3.0, 2.0, 2.0, 2)
    );
    assert_eq!((d.min, d.max, d.range), (1.0, 7.0, 6.0));
    assert!(close(d.variance, 5.5, 1e-12));
    assert!(close(d.std, 5.5f64.sqrt(), 1e-12));
    assert!(close(d.std_error, (5.5f64 / 5.0).sqrt(), 1e-12));
    let s = 5.5f64.sqrt();
    // Adjusted skewness n/((n−1)(n−2)) Σ(d/s)³ = 5/12 · 54 / s³.
    assert!(close(d.skewness, 5.0 / 12.0 * 54.0 / s.powi(3), 1e-12));
    // Excess kurtosis n(n+1)/((n−1)(n−2)(n−3)) Σ(d/s)⁴ − 3(n−1)²/((n−2)(n−3))
    //   = 30/24 · 274/30.25 − 48/6.
    assert!(close(d.kurtosis, 1.25 * 274.0 / 30.25 - 8.0, 1e-12));
    assert!((d.kurtosis - 3.322_314).abs() < 1e-5);
    // Even count: median is the mean of the middle two; ties in the mode go to the smallest.
    let e = Descriptive::of(&[4.0, 1.0, 4.0, 1.0]).unwrap();
    assert_eq!((e.median, e.mode, e.mode_count), (2.5, 1.0, 2));
    assert!(Descriptive::of(&[]).is_none());
    assert!(Descriptive::of(&[1.0, f64::NAN]).is_none());
    let one = Descriptive::of(&[3.0]).unwrap();
    assert!(one.variance.is_nan() && one.kurtosis.is_nan());
}

/// Pareto I samples `S_m · U^(−1/β)`.
fn pareto_sample(n: usize, scale: f64, shape: f64, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    (0..n)
        .map(|_| scale * (1.0 - rng.random::<f64>()).powf(-1.0 / shape))
        .collect()
}

#[test]
fn pareto_fit_recovers_scale_and_shape() {
    for (scale, shape, seed) in [(1320.0, 0.596, 1), (1.0, 1.5, 2), (10.0, 2.5, 3)] {
        let x = pareto_sample(20_000, scale, shape, seed);
        let f = fit_pareto(&x).unwrap();
        assert!(
            f.scale >= scale && f.scale < scale * 1.3,
            "{scale} {shape}: {f:?}"
        );
        assert!((f.shape / shape - 1.0).abs() < 0.08, "{scale} {shape}: {f:?}");
        assert!(f.ks < 0.03 && f.tail > 5_000, "{f:?}");
    }
    // A Pareto tail above an exponential body: the scale lands near where the tail starts.
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let mut x: Vec<f64> = (0..10_000)
        .map(|_| -100.0 * (1.0 - rng.random::<f64>()).ln())
        .collect();
    x.extend(pareto_sample(10_000, 1000.0, 1.2, 10));
    let f = fit_pareto(&x).unwrap();
    assert!(f.scale > 500.0 && f.scale < 1500.0, "{f:?}");
    assert!((f.shape - 1.2).abs() < 0.15, "{f:?}");
    // Degenerate input.
    assert!(fit_pareto(&[5.0; 100]).is_none());
    assert!(fit_pareto(&[1.0, 2.0]).is_none());
}

#[test]
fn fgn_has_unit_variance_and_the_right_lag_one_correlation() {
    for h in HS {
        // Mean over 8 series of the lag-0 and lag-1 autocovariances about the true mean 0
        // (unbiased: exactly 1 and γ(1) in expectation).
        let (mut v, mut c1) = (0.0, 0.0);
        for seed in 0..8 {
            let x = fgn(N, h, seed);
            v += x.iter().map(|a| a * a).sum::<f64>() / N as f64 / 8.0;
            c1 += x.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / (N - 1) as f64 / 8.0;
        }
        let want = stats::fgn::fgn_autocovariance(1, h);
        assert!((v - 1.0).abs() < 0.15, "H {h}: variance {v}");
        assert!((c1 - want).abs() < 0.15, "H {h}: lag-1 {c1} vs {want}");
        assert!(
            (c1 / v - want).abs() < 0.02,
            "H {h}: lag-1 correlation {} vs {want}",
            c1 / v
        );
    }
    assert_eq!(fgn(100, 0.7, 3), fgn(100, 0.7, 3));
}

#[test]
fn detrending_removes_polynomials_exactly() {
    let n = 5000;
    let t = |i: usize| 2.0 * i as f64 / (n - 1) as f64 - 1.0;
    let noise = fgn(n, 0.5 + 1e-9, 1);
    // Order-10 polynomial plus noise: the residual is the noise minus its own order-10 fit.
    let x: Vec<f64> = (0..n)
        .map(|i| 1e4 * t(i).powi(10) - 3e3 * t(i).powi(3) + 50.0 + noise[i])
        .collect();
    let r = detrend(&x, 10);
    let rn = detrend(&noise, 10);
    let err = r.iter().zip(&rn).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(err < 1e-6, "order 10: {err}");
    let lin: Vec<f64> = (0..n).map(|i| 3.0 * i as f64 + 7.0).collect();
    assert!(detrend(&lin, 1).iter().all(|v| v.abs() < 1e-8));
}

/// Mean of Ĥ − H over `seeds` series per H, for one estimator.
fn mean_bias(e: Estimator, h: f64, seeds: std::ops::Range<u64>) -> (f64, f64) {
    let errs: Vec<f64> = seeds
        .map(|s| e.estimate(&fgn(N, h, 1000 * s + (h * 100.0) as u64)).unwrap() - h)
        .collect();
    let k = errs.len() as f64;
    let m = errs.iter().sum::<f64>() / k;
    let sd = (errs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (k - 1.0).max(1.0)).sqrt();
    (m, sd)
}

/// The measured bias (mean Ĥ − H over 20 seeds, `bias_table`) for H = 0.6, 0.7, 0.8, 0.9, and
/// the margin allowed around it for the mean of 3 seeds (about 1.7 × the 20-seed standard
/// deviation: the mean of 3 has sd ≈ sd/√3, so the margin is ≈ 3 of its sds).
fn expected(e: Estimator) -> ([f64; 4], f64) {
    match e {
        Estimator::AbryVeitch => ([0.000, 0.000, -0.001, 0.000], 0.02),
        Estimator::RescaledRange => ([0.017, 0.011, -0.015, -0.046], 0.04),
        Estimator::AbsoluteMoments => ([-0.013, -0.010, -0.025, -0.052], 0.05),
        Estimator::AggregatedVariance => ([-0.013, -0.009, -0.024, -0.051], 0.05),
        Estimator::BoxedPeriodogram => ([-0.073, -0.053, -0.055, -0.038], 0.07),
        Estimator::Higuchi => ([-0.009, -0.008, -0.020, -0.046], 0.04),
        Estimator::Peng => ([-0.003, 0.002, -0.004, -0.002], 0.04),
        Estimator::Periodogram => ([-0.006, 0.004, 0.002, 0.004], 0.045),
        Estimator::Whittle => ([0.000, 0.006, 0.001, 0.002], 0.045),
    }
}

#[test]
fn hurst_estimators_recover_h_on_fgn() {
    let mut failures = Vec::new();
    for e in Estimator::ALL {
        let (bias, margin) = expected(e);
        for (i, h) in HS.into_iter().enumerate() {
            let (m, _) = mean_bias(e, h, 0..3);
            if (m - bias[i]).abs() > margin {
                failures.push(format!(
                    "{} H {h}: mean error {m:+.3}, expected {:+.3} ± {margin}",
                    e.name(),
                    bias[i]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn hurst_estimators_refuse_short_or_constant_series() {
    for e in Estimator::ALL {
        assert_eq!(e.estimate(&[1.0; 100]), None, "{}", e.name());
        assert_eq!(e.estimate(&vec![1.0; 1000]), None, "{}", e.name());
    }
}

#[test]
#[ignore = "prints the bias table of docs/pffp-stats.md (20 seeds per H; run with --release)"]
fn bias_table() {
    println!("| estimator | H = 0.6 | H = 0.7 | H = 0.8 | H = 0.9 |");
    println!("|---|---|---|---|---|");
    for e in Estimator::ALL {
        let cells: Vec<String> = HS
            .iter()
            .map(|&h| {
                let (m, sd) = mean_bias(e, h, 0..20);
                format!("{m:+.3} ± {sd:.3}")
            })
            .collect();
        println!("| {} | {} |", e.name(), cells.join(" | "));
    }
}

#[test]
fn aggregation_levels_average_every_ten() {
    let x: Vec<f64> = (0..1234).map(|i| i as f64).collect();
    let a = aggregation(&x, 5, 3);
    let f: Vec<(usize, usize)> = a.iter().map(|l| (l.factor, l.len)).collect();
    assert_eq!(f, [(1, 1234), (10, 123), (100, 12)]);
    assert_eq!(a[1].values, [4.5, 14.5, 24.5]);
    assert_eq!(a[2].values, [49.5, 149.5, 249.5]);
}

#[test]
fn real_log_statistics_are_finite() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/swf/KTH-SP2-1996-2.1-cln.swf.gz"
    );
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: {path} is absent");
        return;
    }
    let jobs: Vec<_> = JobStream::open(path, StreamOptions::default())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let rt: Vec<f64> = jobs.iter().map(|j| j.runtime as f64).collect();
    let sub: Vec<i64> = jobs.iter().map(|j| j.submit).collect();
    let s = workload_stats(&rt, &sub);
    let d = s.runtime.as_ref().unwrap();
    assert_eq!(d.count, jobs.len());
    for v in [d.mean, d.std, d.kurtosis, d.skewness, d.median] {
        assert!(v.is_finite());
    }
    assert!(d.skewness > 0.0 && d.kurtosis > 0.0);
    assert!(s.interarrival.as_ref().unwrap().min >= 0.0);
    let p = s.pareto.as_ref().unwrap();
    assert!(p.shape.is_finite() && p.shape > 0.0 && p.ks < 0.2 && p.tail >= 50);
    assert_eq!(s.hurst.len(), Estimator::ALL.len());
    for row in &s.hurst {
        for h in [row.raw, row.linear, row.poly] {
            let h = h.unwrap_or_else(|| panic!("{}: no estimate", row.name));
            assert!(h.is_finite() && h > 0.0 && h < 1.5, "{}: {h}", row.name);
        }
    }
    assert!(s.aggregation.len() >= 3);
}
