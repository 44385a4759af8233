//! From the policy's order of the pending jobs to site factors: values
//! that strictly decrease along the order, at least `step` apart (so that,
//! with `step` above the sum of Slurm's own weights, the site factor alone
//! decides the order), changing as few jobs as it can.
//!
//! Jobs that already stand in the right order, far enough apart, keep
//! their values (the longest such run of them); the others get new values
//! between their neighbours. So a job that starts changes nothing, a new
//! job changes itself, and only a real reordering (a user's standing
//! changed) costs the jobs it moves. When nothing fits, every job is
//! renumbered around the middle of the range, with room between.

/// The lowest value given: Slurm's default site factor (a job never
/// steered has it, and is always given another).
pub const LOWEST: i64 = 0;
/// The highest value given (Slurm takes ±2,147,483,645).
pub const HIGHEST: i64 = 2_000_000_000;
const MIDDLE: i64 = 1_000_000_000;

/// The values for jobs whose current values are `current`, listed in the
/// order they should start (first first). `step` ≥ 1; when the range
/// cannot hold `current.len()` values `step` apart, the step is narrowed to
/// fit (see [`effective_step`]).
pub fn assign(current: &[i64], step: i64) -> Vec<i64> {
    let n = current.len();
    if n == 0 {
        return Vec::new();
    }
    let step = effective_step(n, step);
    let kept = keepable(current, step);
    if kept.is_empty() {
        return renumber(n, step);
    }
    let mut out = vec![0i64; n];
    for &k in &kept {
        out[k] = current[k];
    }
    // Above the first kept job: upward, `step` apart.
    let first = kept[0];
    for (i, v) in out.iter_mut().enumerate().take(first) {
        *v = current[first] + step * (first - i) as i64;
    }
    // Between kept neighbours: spread evenly over the room.
    for w in kept.windows(2) {
        let (a, b) = (w[0], w[1]);
        let room = current[a] - current[b];
        let parts = (b - a) as i64;
        for (j, i) in (a + 1..b).enumerate() {
            out[i] = current[a] - room * (j as i64 + 1) / parts;
        }
    }
    // Below the last kept job: downward, `step` apart.
    let last = *kept.last().expect("not empty");
    for (i, v) in out.iter_mut().enumerate().skip(last + 1) {
        *v = current[last] - step * (i - last) as i64;
    }
    out
}

/// The step used for `n` jobs: `step`, or the widest that fits the range.
pub fn effective_step(n: usize, step: i64) -> i64 {
    let fits = (HIGHEST - LOWEST) / (n as i64 + 1);
    step.clamp(1, fits.max(1))
}

/// Spacing of a renumbering, in steps: room for later jobs between any
/// two (a new job ranked in the middle then changes only itself).
const ROOM: i64 = 16;

/// Every job renumbered, [`ROOM`] steps apart where the range allows (at
/// least `step`), centred in the range.
fn renumber(n: usize, step: i64) -> Vec<i64> {
    let wide = effective_step(n, step.saturating_mul(ROOM)).max(step);
    let top = (MIDDLE + wide * (n as i64) / 2).min(HIGHEST);
    (0..n).map(|i| top - wide * i as i64).collect()
}

/// Indices of the jobs that keep their values: the longest subsequence
/// whose values decrease along the order, then thinned (greedily, from
/// the top) until every gap leaves `step` per job between, and the jobs
/// above the first and below the last fit in the range.
fn keepable(current: &[i64], step: i64) -> Vec<usize> {
    let lis = longest_decreasing(current);
    let mut kept: Vec<usize> = Vec::with_capacity(lis.len());
    for i in lis {
        let v = current[i];
        // A value at the bottom of the range (Slurm's default 0: a job
        // never steered) leaves no room below it: renumbered.
        if !(LOWEST + 1..=HIGHEST).contains(&v) {
            continue;
        }
        match kept.last() {
            None => {
                if HIGHEST - v >= step * i as i64 {
                    kept.push(i);
                }
            }
            Some(&p) => {
                if current[p] - v >= step * (i - p) as i64 {
                    kept.push(i);
                }
            }
        }
    }
    // The jobs below the last kept one must fit above LOWEST.
    let n = current.len();
    while let Some(&l) = kept.last() {
        if current[l] - LOWEST >= step * (n - 1 - l) as i64 {
            break;
        }
        kept.pop();
    }
    kept
}

/// Indices of a longest strictly decreasing subsequence (patience
/// sorting, O(n log n)); among equally long ones, the one ending at the
/// lowest index, deterministically.
fn longest_decreasing(v: &[i64]) -> Vec<usize> {
    // tails[k]: index of the smallest-so-far... for decreasing: the
    // largest last value of a decreasing run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut prev: Vec<Option<usize>> = vec![None; v.len()];
    for i in 0..v.len() {
        // First k whose tail value is <= v[i] (a run that v[i] cannot extend).
        let k = tails.partition_point(|&t| v[t] > v[i]);
        prev[i] = if k > 0 { Some(tails[k - 1]) } else { None };
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(i) = at {
        out.push(i);
        at = prev[i];
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn changed(a: &[i64], b: &[i64]) -> usize {
        a.iter().zip(b).filter(|(x, y)| x != y).count()
    }

    fn check(values: &[i64], step: i64) {
        for w in values.windows(2) {
            assert!(w[0] - w[1] >= step, "{values:?} not {step} apart");
        }
        assert!(
            values.iter().all(|v| (LOWEST..=HIGHEST).contains(v)),
            "{values:?}"
        );
    }

    #[test]
    fn first_cycle_numbers_every_job_then_small_changes_cost_little() {
        let step = 12_001;
        let first = assign(&[0; 5], step);
        check(&first, step);
        // The job on top started: the rest keep their values.
        let rest = first[1..].to_vec();
        assert_eq!(assign(&rest, step), rest);
        // A new job ranked last (value 0): only it changes.
        let mut with_new = rest.clone();
        with_new.push(0);
        let next = assign(&with_new, step);
        check(&next, step);
        assert_eq!(changed(&next, &with_new), 1);
        // A new job ranked first: only it changes.
        let mut top = vec![0];
        top.extend(&rest);
        let next = assign(&top, step);
        check(&next, step);
        assert_eq!(changed(&next, &top), 1);
        // A new job in the middle: only it changes.
        let mut mid = rest.clone();
        mid.insert(2, 0);
        let next = assign(&mid, step);
        check(&next, step);
        assert_eq!(changed(&next, &mid), 1);
        // One job moved to the top: only it changes.
        let mut moved = rest.clone();
        let last = moved.pop().unwrap();
        moved.insert(0, last);
        assert_eq!(changed(&assign(&moved, step), &moved), 1);
    }

    #[test]
    fn a_value_changed_behind_its_back_is_the_one_put_back() {
        let step = 100;
        let mut v = assign(&[0; 6], step);
        let good = v.clone();
        v[3] = 7; // someone set job 3's factor by hand
        let next = assign(&v, step);
        check(&next, step);
        assert_eq!(changed(&next, &v), 1);
        assert_eq!(changed(&next, &good), 0, "{next:?} {good:?}");
    }

    #[test]
    fn too_many_jobs_for_the_step_narrow_it() {
        let n = 300_000;
        let s = effective_step(n, 12_001);
        assert!((1..12_001).contains(&s));
        let v = assign(&vec![0; n], 12_001);
        check(&v, s);
    }

    proptest! {
        #[test]
        fn values_decrease_along_the_order(current in prop::collection::vec(-10i64..3_000_000_000, 0..60), step in 1i64..1_000_000) {
            let v = assign(&current, step);
            prop_assert_eq!(v.len(), current.len());
            check(&v, effective_step(current.len(), step));
        }
        #[test]
        fn values_that_already_fit_are_all_kept(n in 1usize..50, step in 1i64..100_000) {
            let v = assign(&vec![0; n], step);
            prop_assert_eq!(assign(&v, step), v);
        }
    }
}
