//! Removing polynomial trends from a series (in index order).

/// The residuals of the least-squares polynomial of degree `order` in the index `t`.
///
/// Numerically stable for high orders: `t` is rescaled to [−1, 1] and the fit is a
/// projection onto discrete orthogonal polynomials built by the three-term (Forsythe)
/// recurrence, subtracted one at a time (modified Gram–Schmidt), never a normal-equations
/// solve on raw powers. Order 0 removes the mean, 1 a linear trend.
pub fn detrend(x: &[f64], order: usize) -> Vec<f64> {
    let n = x.len();
    let mut r = x.to_vec();
    if n == 0 {
        return r;
    }
    let t: Vec<f64> = if n == 1 {
        vec![0.0]
    } else {
        (0..n).map(|i| 2.0 * i as f64 / (n - 1) as f64 - 1.0).collect()
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let mut prev: Vec<f64> = vec![0.0; n];
    let mut cur: Vec<f64> = vec![1.0; n];
    let mut prev_norm = 1.0;
    for k in 0..=order.min(n - 1) {
        let norm = dot(&cur, &cur);
        if norm <= 0.0 || !norm.is_finite() {
            break;
        }
        let coef = dot(&r, &cur) / norm;
        for (ri, ci) in r.iter_mut().zip(&cur) {
            *ri -= coef * ci;
        }
        if k == order {
            break;
        }
        // p_{k+1} = (t − a) p_k − b p_{k−1}
        let a = cur.iter().zip(&t).map(|(p, ti)| ti * p * p).sum::<f64>() / norm;
        let b = if k == 0 { 0.0 } else { norm / prev_norm };
        let next: Vec<f64> = (0..n).map(|i| (t[i] - a) * cur[i] - b * prev[i]).collect();
        prev = std::mem::replace(&mut cur, next);
        prev_norm = norm;
    }
    r
}
