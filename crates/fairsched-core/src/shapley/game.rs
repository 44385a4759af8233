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
    let mut rest = mask;
    core::iter::from_fn(move || {
        (rest != 0).then(|| {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            i
        })
    })
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

    use proptest::prelude::*;

    /// A random game of `k ≤ 5` players: `v` by mask, `v[0] = 0`.
    fn game() -> impl Strategy<Value = (usize, Vec<Units>)> {
        (1usize..=5).prop_flat_map(|k| {
            proptest::collection::vec(-1_000_000_000i128..1_000_000_000, 1 << k).prop_map(move |mut v| {
                v[0] = 0;
                (k, v)
            })
        })
    }

    /// Every ordering of `items`.
    fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
        if items.is_empty() {
            return vec![Vec::new()];
        }
        let mut out = Vec::new();
        for i in 0..items.len() {
            let mut rest = items.to_vec();
            let first = rest.remove(i);
            for mut p in permutations(&rest) {
                p.insert(0, first);
                out.push(p);
            }
        }
        out
    }

    /// Σ over the orderings of S of u's marginal contribution, i.e.
    /// φ_u(S)·|S|! by its definition as an average over orderings.
    fn by_orderings(s: u32, u: usize, v: &[Units]) -> Units {
        let players: Vec<usize> = members(s).collect();
        permutations(&players)
            .iter()
            .map(|order| {
                let before: u32 = order.iter().take_while(|&&o| o != u).map(|&o| 1u32 << o).sum();
                v[(before | 1 << u) as usize] - v[before as usize]
            })
            .sum()
    }

    /// Player `i` and `j` exchanged in a mask.
    fn swap(m: u32, i: usize, j: usize) -> u32 {
        let (bi, bj) = (m >> i & 1, m >> j & 1);
        (m & !(1 << i) & !(1 << j)) | bi << j | bj << i
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The subset formula equals the average over orderings, for the
        /// grand coalition and every sub-coalition; `shapley_values` is it
        /// divided by k!.
        #[test]
        fn the_subset_formula_is_the_average_over_orderings((k, v) in game()) {
            for s in 1..=full_mask(k) {
                for u in members(s) {
                    prop_assert_eq!(shapley_scaled(s, u, &v), by_orderings(s, u, &v), "S={:#b} u={}", s, u);
                }
            }
            let f = factorial(k) as f64;
            for (u, phi) in shapley_values(k, &v).into_iter().enumerate() {
                let want = by_orderings(full_mask(k), u, &v) as f64 / f;
                prop_assert!((phi - want).abs() <= 1e-9 * want.abs().max(1.0));
            }
        }

        /// Efficiency: Σ_{u∈S} φ_u(S) = v(S), exactly (scaled by |S|!).
        #[test]
        fn efficiency((k, v) in game()) {
            for s in 1..=full_mask(k) {
                let sum: Units = members(s).map(|u| shapley_scaled(s, u, &v)).sum();
                prop_assert_eq!(sum, v[s as usize] * factorial(s.count_ones() as usize));
            }
        }

        /// Symmetry: made symmetric in two players (v'(S) = v(S) + v(S with
        /// i and j exchanged), so their marginal contributions to every
        /// coalition are equal), they get equal values.
        #[test]
        fn symmetry((k, v) in game(), i in 0usize..5, j in 0usize..5) {
            let (i, j) = (i % k, j % k);
            let w: Vec<Units> = (0..v.len() as u32).map(|m| v[m as usize] + v[swap(m, i, j) as usize]).collect();
            for t in 0..w.len() as u32 {
                if t & (1 << i | 1 << j) == 0 {
                    prop_assert_eq!(w[(t | 1 << i) as usize] - w[t as usize], w[(t | 1 << j) as usize] - w[t as usize]);
                }
            }
            let full = full_mask(k);
            prop_assert_eq!(shapley_scaled(full, i, &w), shapley_scaled(full, j, &w));
        }

        /// Null player: with v'(S) = v(S ∖ {n}), n contributes 0 to every
        /// coalition and gets 0; the others get what they get in the game
        /// without n (scaled by the larger factorial).
        #[test]
        fn null_player((k, v) in game(), n in 0usize..5) {
            let n = n % k;
            let w: Vec<Units> = (0..v.len() as u32).map(|m| v[(m & !(1 << n)) as usize]).collect();
            let full = full_mask(k);
            prop_assert_eq!(shapley_scaled(full, n, &w), 0);
            let rest = full & !(1 << n);
            for u in members(rest) {
                prop_assert_eq!(shapley_scaled(full, u, &w), shapley_scaled(rest, u, &w) * k as i128);
            }
        }

        /// Additivity: φ(v + w) = φ(v) + φ(w), exactly.
        #[test]
        fn additivity((k, v) in game(), seed in proptest::collection::vec(-1_000_000_000i128..1_000_000_000, 32)) {
            let mut w: Vec<Units> = seed[..v.len()].to_vec();
            w[0] = 0;
            let sum: Vec<Units> = v.iter().zip(&w).map(|(a, b)| a + b).collect();
            for s in 1..=full_mask(k) {
                for u in members(s) {
                    prop_assert_eq!(
                        shapley_scaled(s, u, &sum),
                        shapley_scaled(s, u, &v) + shapley_scaled(s, u, &w)
                    );
                }
            }
        }
    }

    #[test]
    fn twelve_players_at_riccs_largest_values_do_not_overflow() {
        // v(S) = |S| · 2·10²⁴ (each organization as busy as all of RICC
        // over 1.5·10⁷ s): every player gets 2·10²⁴, scaled by 12!.
        let k = MAX_ORGS;
        let unit: Units = 8192 * 15_000_000 * 15_000_001 * 1_000_000;
        let v: Vec<Units> = (0..1u32 << k).map(|m| m.count_ones() as i128 * unit).collect();
        for u in 0..k {
            assert_eq!(shapley_scaled(full_mask(k), u, &v), unit * factorial(k));
        }
    }

    #[test]
    fn a_singleton_gets_its_own_value() {
        let v = [0, 7];
        assert_eq!(shapley_scaled(1, 0, &v), 7);
    }
}
