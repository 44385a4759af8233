//! Hurst exponent estimators for a stationary series (fGn-like: increments, not a path).
//!
//! Each estimator fits a power law over scales or frequencies; the scale grids are fixed
//! here so that the validation on synthetic fGn (`tests/trace/stats.rs`, `docs/pffp-stats.md`)
//! measures exactly what runs on logs. All return `None` when the series is too short
//! (< [`MIN_LEN`]) or degenerate (constant).

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;
use serde::Serialize;

/// Shortest series the estimators accept.
pub const MIN_LEN: usize = 256;

/// A Hurst exponent estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Abry–Veitch: Haar wavelet detail variance per octave j, weighted regression of
    /// `log2 E[d_j²]` on j, slope 2H − 1 (with the Gaussian log bias correction).
    AbryVeitch,
    /// Rescaled range: mean R/S of non-overlapping blocks of size m, slope H.
    RescaledRange,
    /// Absolute moments: mean |block mean − overall mean| against m, slope H − 1.
    AbsoluteMoments,
    /// Aggregated variance: variance of block means against m, slope 2H − 2.
    AggregatedVariance,
    /// Boxed periodogram: the lowest 10 % of frequencies averaged in log-spaced boxes,
    /// slope 1 − 2H.
    BoxedPeriodogram,
    /// Higuchi: curve length L(k) of the cumulated series, slope −(2 − H).
    Higuchi,
    /// Peng (detrended fluctuation analysis, order 1): residual variance of a linear fit to
    /// the cumulated series in boxes of size m, slope 2H.
    Peng,
    /// Periodogram: log I(λ) on log λ over the lowest 10 % of frequencies, slope 1 − 2H.
    Periodogram,
    /// Local Whittle (Robinson 1995) over the lowest ⌊n^0.65⌋ frequencies.
    Whittle,
}

impl Estimator {
    /// Every estimator, in the paper's Table 12 order.
    pub const ALL: [Estimator; 9] = [
        Estimator::AbryVeitch,
        Estimator::RescaledRange,
        Estimator::AbsoluteMoments,
        Estimator::AggregatedVariance,
        Estimator::BoxedPeriodogram,
        Estimator::Higuchi,
        Estimator::Peng,
        Estimator::Periodogram,
        Estimator::Whittle,
    ];

    /// Short name (as in the paper's Table 12).
    pub fn name(self) -> &'static str {
        match self {
            Estimator::AbryVeitch => "Abry-Veitch",
            Estimator::RescaledRange => "R/S",
            Estimator::AbsoluteMoments => "Absval",
            Estimator::AggregatedVariance => "Aggvar",
            Estimator::BoxedPeriodogram => "Box Per",
            Estimator::Higuchi => "Higuchi",
            Estimator::Peng => "Peng",
            Estimator::Periodogram => "Periodogram",
            Estimator::Whittle => "Whittle",
        }
    }

    /// Estimates H of `x`.
    pub fn estimate(self, x: &[f64]) -> Option<f64> {
        if x.len() < MIN_LEN || x.iter().any(|v| !v.is_finite()) || x.iter().all(|&v| v == x[0]) {
            return None;
        }
        let h = match self {
            Estimator::AbryVeitch => abry_veitch(x),
            Estimator::RescaledRange => rescaled_range(x),
            Estimator::AbsoluteMoments => absolute_moments(x),
            Estimator::AggregatedVariance => aggregated_variance(x),
            Estimator::BoxedPeriodogram => boxed_periodogram(&periodogram(x), x.len()),
            Estimator::Higuchi => higuchi(x),
            Estimator::Peng => peng(x),
            Estimator::Periodogram => periodogram_slope(&periodogram(x), x.len()),
            Estimator::Whittle => local_whittle(&periodogram(x), x.len()),
        }?;
        h.is_finite().then_some(h)
    }
}

/// Least-squares slope of y on x with weights w.
fn slope(xs: &[f64], ys: &[f64], w: Option<&[f64]>) -> Option<f64> {
    let wt = |i: usize| w.map_or(1.0, |w| w[i]);
    let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for i in 0..xs.len() {
        if !(xs[i].is_finite() && ys[i].is_finite()) {
            return None;
        }
        sw += wt(i);
        sx += wt(i) * xs[i];
        sy += wt(i) * ys[i];
    }
    if xs.len() < 2 || sw <= 0.0 {
        return None;
    }
    let (mx, my) = (sx / sw, sy / sw);
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for i in 0..xs.len() {
        sxx += wt(i) * (xs[i] - mx) * (xs[i] - mx);
        sxy += wt(i) * (xs[i] - mx) * (ys[i] - my);
    }
    (sxx > 0.0).then(|| sxy / sxx)
}

/// About `count` distinct integers log-spaced in [lo, hi].
fn log_scales(lo: usize, hi: usize, count: usize) -> Vec<usize> {
    if hi < lo {
        return Vec::new();
    }
    let (a, b) = (libm::log(lo as f64), libm::log(hi as f64));
    let mut v: Vec<usize> = (0..count)
        .map(|i| libm::exp(a + (b - a) * i as f64 / (count - 1).max(1) as f64).round() as usize)
        .collect();
    v.dedup();
    v
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Fits log y = c + slope · log m over the scales with positive finite y.
fn loglog(points: impl Iterator<Item = (usize, f64)>) -> Option<f64> {
    let (xs, ys): (Vec<f64>, Vec<f64>) = points
        .filter(|(_, y)| y.is_finite() && *y > 0.0)
        .map(|(m, y)| (libm::log(m as f64), libm::log(y)))
        .unzip();
    slope(&xs, &ys, None)
}

fn block_means(x: &[f64], m: usize) -> Vec<f64> {
    x.chunks_exact(m).map(mean).collect()
}

/// Aggregated variance; scales m ∈ [4, n/20] so every variance has ≥ 20 blocks.
fn aggregated_variance(x: &[f64]) -> Option<f64> {
    let s = log_scales(4, x.len() / 20, 20);
    let b = loglog(s.into_iter().map(|m| {
        let bm = block_means(x, m);
        let mu = mean(&bm);
        (
            m,
            bm.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / (bm.len() - 1) as f64,
        )
    }))?;
    Some(1.0 + b / 2.0)
}

/// Absolute moments (first moment); scales as aggregated variance.
fn absolute_moments(x: &[f64]) -> Option<f64> {
    let mu = mean(x);
    let s = log_scales(4, x.len() / 20, 20);
    let b = loglog(s.into_iter().map(|m| {
        let bm = block_means(x, m);
        (
            m,
            bm.iter().map(|v| (v - mu).abs()).sum::<f64>() / bm.len() as f64,
        )
    }))?;
    Some(1.0 + b)
}

/// R/S over blocks m ∈ [16, n/4].
fn rescaled_range(x: &[f64]) -> Option<f64> {
    let s = log_scales(16, x.len() / 4, 20);
    loglog(s.into_iter().map(|m| {
        let (mut total, mut count) = (0.0, 0usize);
        for b in x.chunks_exact(m) {
            let mu = mean(b);
            let (mut y, mut lo, mut hi, mut ss) = (0.0f64, 0.0f64, 0.0f64, 0.0);
            for v in b {
                let d = v - mu;
                y += d;
                lo = lo.min(y);
                hi = hi.max(y);
                ss += d * d;
            }
            let sd = (ss / m as f64).sqrt();
            if sd > 0.0 {
                total += (hi - lo) / sd;
                count += 1;
            }
        }
        (m, if count > 0 { total / count as f64 } else { f64::NAN })
    }))
}

/// The mean-removed cumulated series (a path).
fn profile(x: &[f64]) -> Vec<f64> {
    let mu = mean(x);
    let mut y = 0.0;
    x.iter()
        .map(|v| {
            y += v - mu;
            y
        })
        .collect()
}

/// Higuchi over k ∈ [1, n/20] (≥ 20 points per sub-series).
fn higuchi(x: &[f64]) -> Option<f64> {
    let y = profile(x);
    let n = y.len();
    let s = log_scales(1, n / 20, 20);
    let b = loglog(s.into_iter().map(|k| {
        let mut l = 0.0;
        for m in 0..k {
            let steps = (n - 1 - m) / k;
            if steps == 0 {
                continue;
            }
            let len: f64 = (1..=steps)
                .map(|i| (y[m + i * k] - y[m + (i - 1) * k]).abs())
                .sum();
            l += len * (n - 1) as f64 / (steps * k) as f64 / k as f64;
        }
        (k, l / k as f64)
    }))?;
    Some(2.0 + b)
}

/// Peng / DFA-1 over boxes m ∈ [8, n/4].
fn peng(x: &[f64]) -> Option<f64> {
    let y = profile(x);
    let s = log_scales(8, y.len() / 4, 20);
    let b = loglog(s.into_iter().map(|m| {
        let tm = (m as f64 - 1.0) / 2.0;
        let stt: f64 = (0..m).map(|t| (t as f64 - tm) * (t as f64 - tm)).sum();
        let mut total = 0.0;
        let mut count = 0;
        for b in y.chunks_exact(m) {
            let ym = mean(b);
            let (mut sty, mut syy) = (0.0, 0.0);
            for (t, v) in b.iter().enumerate() {
                let d = v - ym;
                sty += (t as f64 - tm) * d;
                syy += d * d;
            }
            total += (syy - sty * sty / stt).max(0.0) / m as f64;
            count += 1;
        }
        (m, total / count as f64)
    }))?;
    Some(b / 2.0)
}

/// Periodogram `I(λ_k) = |Σ (x_t − x̄) e^{−i t λ_k}|² / (2π n)` at `λ_k = 2πk/n`,
/// k = 1 … ⌊(n − 1)/2⌋ (index k − 1).
pub fn periodogram(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mu = mean(x);
    let mut buf: Vec<Complex<f64>> = x.iter().map(|v| Complex::new(v - mu, 0.0)).collect();
    FftPlanner::new().plan_fft_forward(n).process(&mut buf);
    let norm = 2.0 * std::f64::consts::PI * n as f64;
    buf[1..=(n - 1) / 2].iter().map(|z| z.norm_sqr() / norm).collect()
}

/// λ_k for periodogram index i (k = i + 1) of a series of length n.
fn freq(i: usize, n: usize) -> f64 {
    std::f64::consts::TAU * (i + 1) as f64 / n as f64
}

/// Log-periodogram regression over the lowest 10 % of the frequencies.
fn periodogram_slope(p: &[f64], n: usize) -> Option<f64> {
    let m = (p.len() / 10).max(4);
    let (xs, ys): (Vec<f64>, Vec<f64>) = (0..m)
        .filter(|&i| p[i] > 0.0)
        .map(|i| (libm::log(freq(i, n)), libm::log(p[i])))
        .unzip();
    Some((1.0 - slope(&xs, &ys, None)?) / 2.0)
}

/// Lowest 10 % of the frequencies in 50 log-spaced boxes; regression of log mean I on the
/// mean log λ of each box.
fn boxed_periodogram(p: &[f64], n: usize) -> Option<f64> {
    let m = (p.len() / 10).max(4);
    let boxes = 50usize;
    let edges = |b: usize| libm::pow(m as f64, b as f64 / boxes as f64).floor() as usize;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut start = 0;
    for b in 1..=boxes {
        let end = edges(b).min(m);
        if end <= start {
            continue;
        }
        let k = (end - start) as f64;
        let mi = p[start..end].iter().sum::<f64>() / k;
        let ml = (start..end).map(|i| libm::log(freq(i, n))).sum::<f64>() / k;
        if mi > 0.0 {
            xs.push(ml);
            ys.push(libm::log(mi));
        }
        start = end;
    }
    Some((1.0 - slope(&xs, &ys, None)?) / 2.0)
}

/// Local Whittle: minimises `R(H) = ln((1/m) Σ λ_j^{2H−1} I_j) − (2H − 1)(1/m) Σ ln λ_j`
/// over H ∈ [0.01, 1.49] by golden-section search, m = ⌊n^0.65⌋.
fn local_whittle(p: &[f64], n: usize) -> Option<f64> {
    let m = (libm::pow(n as f64, 0.65) as usize).min(p.len());
    if m < 8 {
        return None;
    }
    let lam: Vec<f64> = (0..m).map(|i| libm::log(freq(i, n))).collect();
    let mean_log = lam.iter().sum::<f64>() / m as f64;
    let r = |h: f64| {
        let e = 2.0 * h - 1.0;
        let s: f64 = (0..m).map(|i| libm::exp(e * lam[i]) * p[i]).sum::<f64>() / m as f64;
        libm::log(s) - e * mean_log
    };
    let (mut a, mut b) = (0.01f64, 1.49f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (r(c), r(d));
    for _ in 0..80 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = r(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = r(d);
        }
    }
    Some((a + b) / 2.0)
}

/// Abry–Veitch with the Haar wavelet: octaves j ≥ 1 with at least 16 details, weighted by
/// the number of details.
fn abry_veitch(x: &[f64]) -> Option<f64> {
    let mut a = x.to_vec();
    let (mut js, mut ys, mut ws) = (Vec::new(), Vec::new(), Vec::new());
    let mut j = 1;
    while a.len() >= 32 {
        let half = a.len() / 2;
        let mut next = Vec::with_capacity(half);
        let mut energy = 0.0;
        for k in 0..half {
            let (p, q) = (a[2 * k], a[2 * k + 1]);
            let d = (p - q) / std::f64::consts::SQRT_2;
            energy += d * d;
            next.push((p + q) / std::f64::consts::SQRT_2);
        }
        let nj = half as f64;
        let mu = energy / nj;
        if mu > 0.0 {
            // E[log2 of a mean of nj χ²₁/1] − log2 E ≈ g(nj) = ψ(nj/2)/ln 2 − log2(nj/2).
            let g = (digamma(nj / 2.0) - libm::log(nj / 2.0)) / std::f64::consts::LN_2;
            js.push(j as f64);
            ys.push(libm::log2(mu) - g);
            ws.push(nj);
        }
        a = next;
        j += 1;
    }
    Some((1.0 + slope(&js, &ys, Some(&ws))?) / 2.0)
}

/// ψ(x) for x > 0 (recurrence up to 6, then the asymptotic series).
fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 6.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    r + libm::log(x) - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0)))
}
