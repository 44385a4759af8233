//! Synthetic fractional Gaussian noise, exact, by circulant embedding (Davies–Harte).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// Autocovariance of unit-variance fGn at lag `k`: `½(|k+1|^{2H} − 2|k|^{2H} + |k−1|^{2H})`.
pub fn fgn_autocovariance(k: usize, h: f64) -> f64 {
    let k = k as f64;
    let e = 2.0 * h;
    0.5 * (libm::pow(k + 1.0, e) - 2.0 * libm::pow(k, e) + libm::pow((k - 1.0).abs(), e))
}

/// `n` values of unit-variance fractional Gaussian noise with Hurst exponent `h` ∈ (0, 1),
/// seeded (`Pcg64Mcg`), so equal arguments give equal series.
///
/// Davies–Harte: the autocovariance `γ(0..n)` is embedded in a circulant of size `2n`
/// (`γ0 … γn, γ(n−1) … γ1`) whose eigenvalues `λ` (one FFT) are ≥ 0 for fGn; with
/// `Z` complex standard normal, the real part of `FFT(√(λ/2n) · Z)` has exactly the fGn
/// covariance (the imaginary part is a second, independent sample, unused here).
pub fn fgn(n: usize, h: f64, seed: u64) -> Vec<f64> {
    assert!(h > 0.0 && h < 1.0, "fgn: H must be in (0, 1), got {h}");
    if n == 0 {
        return Vec::new();
    }
    let m = 2 * n;
    let mut c: Vec<Complex<f64>> = (0..m)
        .map(|j| {
            let lag = if j <= n { j } else { m - j };
            Complex::new(fgn_autocovariance(lag, h), 0.0)
        })
        .collect();
    let mut planner = FftPlanner::new();
    let fft = planner.plan_fft_forward(m);
    fft.process(&mut c);
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut w: Vec<Complex<f64>> = c
        .iter()
        .map(|l| {
            let scale = (l.re.max(0.0) / m as f64).sqrt();
            let (a, b) = normal_pair(&mut rng);
            Complex::new(a * scale, b * scale)
        })
        .collect();
    fft.process(&mut w);
    w.truncate(n);
    w.into_iter().map(|z| z.re).collect()
}

/// Two independent standard normals (Box–Muller).
fn normal_pair(rng: &mut Pcg64Mcg) -> (f64, f64) {
    // 1 − u ∈ (0, 1] keeps the log finite.
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random::<f64>();
    let r = (-2.0 * libm::log(u)).sqrt();
    let t = std::f64::consts::TAU * v;
    (r * libm::cos(t), r * libm::sin(t))
}
