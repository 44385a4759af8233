//! The cooperative game of spec/shapley.md: organizations `0..k`, a
//! coalition is a bit mask, `v(S)` its value (the sum of its members' ψsp
//! in the schedule of S alone), `v(∅) = 0`. Shapley values are computed
//! exactly, in integers: `φ_u(S) · |S|!` is
//!
//! ```text
//! Σ_{T ⊆ S∖{u}} |T|! (|S|−|T|−1)! · (v(T∪{u}) − v(T))
//! ```
//!
//! so comparisons between organizations are exact and no rounding depends
//! on the order of a sum. [`MAX_ORGS`] bounds k: 2^k schedules are
//! simulated, and `|S|! · v` must stay inside `i128`.

use super::psi::Units;
use crate::prelude::*;

/// The most organizations exact Shapley values (and REF) accept.
pub const MAX_ORGS: usize = 12;

/// `n!` for `n ≤ MAX_ORGS`.
pub fn factorial(n: usize) -> i128 {
    (1..=n as i128).product()
}

/// Members of `mask`, in index order.
pub fn members(mask: u32) -> impl Iterator<Item = usize> {
    (0..32usize).filter(move |&i| mask & (1 << i) != 0)
}

/// `φ_u(S) · |S|!` for `u ∈ S`, from `v` indexed by mask (`v[0] = 0`;
/// every subset of `s` must be present).
pub fn shapley_scaled(s: u32, u: usize, v: &[Units]) -> Units {
    let n = s.count_ones() as usize;
    let bit = 1u32 << u;
    debug_assert!(s & bit != 0);
    let rest = s & !bit;
    let mut w = [0i128; MAX_ORGS + 1];
    for (t, w) in w.iter_mut().enumerate().take(n) {
        *w = factorial(t) * factorial(n - t - 1);
    }
    // Every submask T of `rest`, including ∅ and `rest` itself.
    let mut sum: i128 = 0;
    let mut t = rest;
    loop {
        sum += w[t.count_ones() as usize] * (v[(t | bit) as usize] - v[t as usize]);
        if t == 0 {
            break;
        }
        t = (t - 1) & rest;
    }
    sum
}

/// φ_u of the grand coalition `0..k` for every organization, in the
/// units of `v` (rounded to f64 for reporting; decisions use
/// [`shapley_scaled`]).
pub fn shapley_values(k: usize, v: &[Units]) -> Vec<f64> {
    let full = full_mask(k);
    let f = factorial(k) as f64;
    (0..k).map(|u| shapley_scaled(full, u, v) as f64 / f).collect()
}

/// The grand coalition of `k` organizations.
pub fn full_mask(k: usize) -> u32 {
    if k >= 32 { u32::MAX } else { (1u32 << k) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_player_game_by_hand() {
        // v({0}) = 4, v({1}) = 2, v({0,1}) = 10: φ0 = (4 + 8)/2 = 6, φ1 = 4.
        let v = [0, 4, 2, 10];
        assert_eq!(shapley_scaled(3, 0, &v), 12);
        assert_eq!(shapley_scaled(3, 1, &v), 8);
        assert_eq!(shapley_values(2, &v), vec![6.0, 4.0]);
    }

    #[test]
    fn a_singleton_gets_its_own_value() {
        let v = [0, 7];
        assert_eq!(shapley_scaled(1, 0, &v), 7);
    }
}
