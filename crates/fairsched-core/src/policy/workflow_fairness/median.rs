//! [`UpperMedian`]: the running median of a growing multiset of durations,
//! with the spec's *upper* median for even counts.

use crate::time::Time;
use alloc::collections::BinaryHeap;
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

/// The median of a multiset of [`Time`]s that only grows: for the values
/// sorted as `a[0..n)`, the median is `a[n / 2]` (for an even count, the
/// upper of the two middle values, as in the paper's Table 1: the median
/// of {2, 1} is 2).
///
/// Two heaps: `lower`, a max-heap of the `⌊n/2⌋` smallest values, and
/// `upper`, a min-heap of the `⌈n/2⌉` largest; the median is the minimum
/// of `upper`. [`UpperMedian::push`] is O(log n), [`UpperMedian::get`]
/// O(1). Memory is one word per value (an exact median needs them all).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UpperMedian {
    #[serde(with = "crate::snapshot::sorted_heap")]
    lower: BinaryHeap<Time>,
    #[serde(with = "crate::snapshot::sorted_heap")]
    upper: BinaryHeap<Reverse<Time>>,
}

impl UpperMedian {
    pub fn new() -> UpperMedian {
        UpperMedian::default()
    }

    /// Adds a value.
    pub fn push(&mut self, x: Time) {
        match self.upper.peek() {
            Some(&Reverse(min_up)) if x < min_up => self.lower.push(x),
            _ => self.upper.push(Reverse(x)),
        }
        // Rebalance to |lower| = ⌊n/2⌋, |upper| = ⌈n/2⌉: every value of
        // `lower` stays ≤ every value of `upper`.
        let n = self.len();
        if self.lower.len() > n / 2 {
            let v = self.lower.pop().expect("non-empty");
            self.upper.push(Reverse(v));
        } else if self.upper.len() > n - n / 2 {
            let Reverse(v) = self.upper.pop().expect("non-empty");
            self.lower.push(v);
        }
    }

    /// `a[n/2]` of the sorted values; `None` when empty.
    pub fn get(&self) -> Option<Time> {
        self.upper.peek().map(|&Reverse(v)| v)
    }

    /// How many values were pushed.
    pub fn len(&self) -> usize {
        self.lower.len() + self.upper.len()
    }

    pub fn is_empty(&self) -> bool {
        self.upper.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of(xs: &[i64]) -> Option<i64> {
        let mut m = UpperMedian::new();
        for &x in xs {
            m.push(Time(x));
        }
        m.get().map(|t| t.0)
    }

    #[test]
    fn the_papers_even_counts_take_the_upper_middle() {
        // Table 1: setup {2,1}, input {2,2}, exec {4,3}, output {1,2}.
        assert_eq!(of(&[2, 1]), Some(2));
        assert_eq!(of(&[2, 2]), Some(2));
        assert_eq!(of(&[4, 3]), Some(4));
        assert_eq!(of(&[1, 2]), Some(2));
        assert_eq!(of(&[5, 1, 4, 2]), Some(4));
    }

    #[test]
    fn odd_counts_and_empty() {
        assert_eq!(of(&[]), None);
        assert_eq!(of(&[7]), Some(7));
        assert_eq!(of(&[3, 1, 2]), Some(2));
        assert_eq!(of(&[9, 9, 1, 1, 5]), Some(5));
        assert_eq!(of(&[1, 1, 1, 9, 9]), Some(1));
        let mut m = UpperMedian::new();
        assert!(m.is_empty());
        m.push(Time(4));
        assert_eq!((m.len(), m.is_empty()), (1, false));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn matches_sorting_after_every_push(xs in proptest::collection::vec(-50i64..50, 1..200)) {
            let mut m = UpperMedian::new();
            let mut sorted: Vec<i64> = Vec::new();
            for &x in &xs {
                m.push(Time(x));
                let at = sorted.partition_point(|&y| y <= x);
                sorted.insert(at, x);
                prop_assert_eq!(m.get(), Some(Time(sorted[sorted.len() / 2])));
                prop_assert_eq!(m.len(), sorted.len());
            }
        }
    }
}
