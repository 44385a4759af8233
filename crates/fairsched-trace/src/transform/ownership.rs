//! Processor ownership: how many of `total` processors each of `k` organizations owns.

use std::collections::BinaryHeap;

use crate::errors::{Result, TraceError};

/// `total` processors split as evenly as possible over `k` organizations (the first
/// `total % k` get one more). Errors if `k == 0` or `total < k`.
pub fn ownership_uniform(total: u32, k: u32) -> Result<Vec<u32>> {
    check(total, k)?;
    let (base, extra) = (total / k, total % k);
    Ok((0..k).map(|i| base + u32::from(i < extra)).collect())
}

/// `total` processors split over `k` organizations in proportion to Zipf weights
/// `1 / i^s` (i = 1..k): largest-remainder rounding (ties to the lower index), then every
/// organization left with 0 takes one processor from the largest share. The result sums to
/// `total`, every share is ≥ 1, and shares are non-increasing. `s = 0` gives
/// [`ownership_uniform`]. Errors if `k == 0`, `total < k`, or `s` is negative or not finite.
pub fn ownership_zipf(total: u32, k: u32, s: f64) -> Result<Vec<u32>> {
    check(total, k)?;
    if !s.is_finite() || s < 0.0 {
        return Err(TraceError::Config(format!(
            "Zipf exponent must be finite and >= 0, got {s}"
        )));
    }
    let weights: Vec<f64> = (1..=k).map(|i| libm::pow(f64::from(i), -s)).collect();
    let sum: f64 = weights.iter().sum();
    let quotas: Vec<f64> = weights.iter().map(|w| f64::from(total) * w / sum).collect();
    let mut shares: Vec<u32> = quotas.iter().map(|q| q.floor() as u32).collect();

    // Largest remainder first; a stable sort keeps ties in index order.
    let mut order: Vec<usize> = (0..k as usize).collect();
    order.sort_by(|&a, &b| {
        let ra = quotas[a] - quotas[a].floor();
        let rb = quotas[b] - quotas[b].floor();
        rb.total_cmp(&ra)
    });
    let assigned: u64 = shares.iter().map(|&x| u64::from(x)).sum();
    let total64 = u64::from(total);
    if assigned < total64 {
        for &i in order.iter().cycle().take((total64 - assigned) as usize) {
            shares[i] += 1;
        }
    } else {
        // Only reachable through floating-point error: take back from the smallest remainders.
        let mut excess = assigned - total64;
        for &i in order.iter().rev().cycle() {
            if excess == 0 {
                break;
            }
            if shares[i] > 0 {
                shares[i] -= 1;
                excess -= 1;
            }
        }
    }

    // Fix-ups: every organization owns at least one processor. The donor is the last of the
    // largest shares, which keeps the vector non-increasing. A heap of (share, index) holds
    // every positive share, so the donor is its top (a scan per zero share was quadratic:
    // 2^24 organizations never finished).
    if shares.contains(&0) {
        let mut heap: BinaryHeap<(u32, usize)> = (0..shares.len())
            .filter(|&i| shares[i] > 0)
            .map(|i| (shares[i], i))
            .collect();
        for i in 0..shares.len() {
            if shares[i] == 0 {
                // max >= 2 because total >= k and some share is 0
                let (max, donor) = heap.pop().expect("a positive share exists");
                shares[donor] = max - 1;
                heap.push((max - 1, donor));
                shares[i] = 1;
                heap.push((1, i));
            }
        }
    }
    Ok(shares)
}

fn check(total: u32, k: u32) -> Result<()> {
    if k == 0 {
        return Err(TraceError::Config(
            "--orgs 0: ownership needs at least 1 organization".into(),
        ));
    }
    if total < k {
        return Err(TraceError::Config(format!(
            "--orgs {k}: cannot give each of {k} organizations a processor: the platform has only {total} (lower --orgs, or raise --procs)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform() {
        assert_eq!(ownership_uniform(10, 3).unwrap(), [4, 3, 3]);
        assert_eq!(ownership_uniform(3, 3).unwrap(), [1, 1, 1]);
        assert!(ownership_uniform(2, 3).is_err());
        assert!(ownership_uniform(2, 0).is_err());
    }

    #[test]
    fn zipf_examples() {
        // weights 1, 1/2, 1/3 → 54.5, 27.3, 18.2 of 100
        assert_eq!(ownership_zipf(100, 3, 1.0).unwrap(), [55, 27, 18]);
        // 10 orgs on 10 processors: everyone gets exactly one
        assert_eq!(ownership_zipf(10, 10, 3.0).unwrap(), [1; 10]);
        assert!(ownership_zipf(9, 10, 1.0).is_err());
        assert!(ownership_zipf(10, 2, -1.0).is_err());
        assert!(ownership_zipf(10, 2, f64::NAN).is_err());
    }

    #[test]
    fn invariants_over_a_grid() {
        for total in [1u32, 2, 3, 7, 70, 100, 1024, 8192] {
            for k in 1..=total.min(40) {
                let uni = ownership_uniform(total, k).unwrap();
                for s in [0.0, 0.5, 1.0, 1.5, 2.0, 4.0] {
                    let z = ownership_zipf(total, k, s).unwrap();
                    assert_eq!(z.len(), k as usize);
                    assert_eq!(z.iter().map(|&x| u64::from(x)).sum::<u64>(), u64::from(total));
                    assert!(z.iter().all(|&x| x >= 1), "{total} {k} {s}: {z:?}");
                    assert!(z.windows(2).all(|w| w[0] >= w[1]), "{total} {k} {s}: {z:?}");
                    if s == 0.0 {
                        assert_eq!(z, uni, "{total} {k}");
                    }
                }
                assert_eq!(uni.iter().sum::<u32>(), total);
                assert!(uni.iter().all(|&x| x >= 1));
            }
        }
    }
}
