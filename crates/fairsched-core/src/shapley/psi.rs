//! ψsp, the strategy-resilient utility of an organization's schedule
//! (spec/shapley.md): at time t, every unit part (one second of
//! processing) started at s+k is worth t − s − k, so
//!
//! ```text
//! ψsp(σ, t) = Σ_{(s,p) ∈ σ, s ≤ t} Σ_{k=0}^{p−1} (t − s − k),   p = t − s for a running job
//! ```
//!
//! [`Psi`] keeps it as aggregates, so evaluating it is O(1) whatever the
//! number of jobs. The clock ticks in milliseconds while a unit part is one
//! second, and p(p−1)/2 is not an integer in seconds once times are
//! fractional: every value is kept exactly, as an integer count of
//! [`Units`], `2·10⁶ · ψ` (ψ in s²). A finished job (start S, length P, in
//! ms) is worth `2·P·(T−S) − P·(P−1000)` units at T, a running one
//! `(T−S)·(T−S+1000)`. Sums are `i128`: on RICC's whole log (8192
//! processors, 1.3·10⁷ s) ψ reaches 10¹⁸ s², 2·10²⁴ units, far inside.

use crate::time::Time;
use serde::{Deserialize, Serialize};

/// `2·10⁶ · ψ` (ψ in s²): an exact integer whatever the clock's resolution.
pub type Units = i128;

/// Units per s² of ψ.
pub const UNITS_PER_S2: f64 = 2.0e6;

/// ψ in s² from [`Units`].
pub fn seconds(u: Units) -> f64 {
    u as f64 / UNITS_PER_S2
}

/// One second in the clock's milliseconds.
const SEC: i128 = 1000;

/// ψsp aggregates of one organization's schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Psi {
    /// Finished jobs: Σ 2P (the coefficient of T) and the constant part.
    fin_t: i128,
    fin_c: i128,
    /// Running jobs: count, Σ S, Σ S².
    run_n: i128,
    run_s: i128,
    run_s2: i128,
}

impl Psi {
    /// A job starts at `s`.
    pub fn start(&mut self, s: Time) {
        let s = s.millis() as i128;
        self.run_n += 1;
        self.run_s += s;
        self.run_s2 += s * s;
    }

    /// The job started at `s` stops at `e` (completed or stopped: the
    /// seconds it ran count).
    pub fn stop(&mut self, s: Time, e: Time) {
        let si = s.millis() as i128;
        self.run_n -= 1;
        self.run_s -= si;
        self.run_s2 -= si * si;
        self.add_finished(s, e);
    }

    /// `n` jobs start at `s` ([`Psi::start`] `n` times).
    pub fn start_n(&mut self, s: Time, n: u32) {
        let (s, n) = (s.millis() as i128, i128::from(n));
        self.run_n += n;
        self.run_s += n * s;
        self.run_s2 += n * s * s;
    }

    /// `n` jobs started at `s` stop at `e` ([`Psi::stop`] `n` times).
    pub fn stop_n(&mut self, s: Time, e: Time, n: u32) {
        let (si, k) = (s.millis() as i128, i128::from(n));
        self.run_n -= k;
        self.run_s -= k * si;
        self.run_s2 -= k * si * si;
        self.add_finished_n(s, e, n);
    }

    /// A job that ran from `s` to `e` (never seen running).
    pub fn add_finished(&mut self, s: Time, e: Time) {
        self.add_finished_n(s, e, 1);
    }

    /// `n` jobs that ran from `s` to `e` ([`Psi::add_finished`] `n` times).
    pub fn add_finished_n(&mut self, s: Time, e: Time, n: u32) {
        let s = s.millis() as i128;
        let p = e.millis() as i128 - s;
        let n = i128::from(n);
        self.fin_t += n * 2 * p;
        self.fin_c += n * (-2 * p * s - p * (p - SEC));
    }

    /// A run from `s` to `e` as seen at `t`: nothing if it starts after
    /// `t`, its first `t − s` seconds if it ends after `t`. For metrics
    /// read after the fact (the whole schedule known, evaluated at a
    /// window's end): read the result with [`Psi::at`] at this same `t`.
    pub fn add_run_seen_at(&mut self, s: Time, e: Time, t: Time) {
        self.add_runs_seen_at(s, e, t, 1);
    }

    /// `n` runs from `s` to `e` seen at `t` ([`Psi::add_run_seen_at`] `n`
    /// times: a task holding `n` processors).
    pub fn add_runs_seen_at(&mut self, s: Time, e: Time, t: Time, n: u32) {
        if s > t {
            return;
        }
        if e > t {
            // Running at t: worth (t−s)(t−s+1000) units at t.
            let d = (t.millis() - s.millis()) as i128;
            self.fin_c += i128::from(n) * d * (d + SEC);
        } else {
            self.add_finished_n(s, e, n);
        }
    }

    /// ψsp at `t` (≥ every start), in [`Units`].
    pub fn at(&self, t: Time) -> Units {
        let t = t.millis() as i128;
        let run = self.run_n * t * t - 2 * t * self.run_s + self.run_s2 + SEC * (self.run_n * t - self.run_s);
        self.fin_t * t + self.fin_c + run
    }

    /// Running jobs.
    pub fn running(&self) -> i128 {
        self.run_n
    }
}

/// ψsp by its definition, summing unit parts one by one: jobs `(s, p)` in
/// whole seconds, seen at `t` (tests compare [`Psi`] against it).
pub fn brute_force(jobs: &[(i64, i64)], t: i64) -> Units {
    let mut sum: i128 = 0;
    for &(s, p) in jobs {
        if s > t {
            continue;
        }
        let p = p.min(t - s);
        for k in 0..p {
            sum += (t - s - k) as i128;
        }
    }
    sum * 2_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> Time {
        Time::from_secs(s)
    }

    #[test]
    fn one_job_step_by_step() {
        // A job of 3 s started at 10: worth 1 at 11, 1+2 at 12, 1+2+3 at 13,
        // then 3 more per second.
        let mut p = Psi::default();
        p.start(secs(10));
        assert_eq!(p.at(secs(10)), 0);
        assert_eq!(p.at(secs(11)), 2_000_000);
        assert_eq!(p.at(secs(12)), 6_000_000);
        p.stop(secs(10), secs(13));
        assert_eq!(p.at(secs(13)), 12_000_000);
        assert_eq!(p.at(secs(20)), 12_000_000 + 7 * 3 * 2_000_000);
    }

    /// The paper's illustration of §3.2 (seed 002, "Strategy-resilient
    /// utility functions"), verbatim ("spit" is the seed's typo for
    /// "split"):
    ///
    /// > E.g., consider a job released and started in time 0 and completed
    /// > in time 2. The flow time of the job is 2. If the job is spit into
    /// > two smaller jobs – one started in time 0 and completed in time 1
    /// > and the other started in time 1 and completed in time 2, then the
    /// > total flow time of the two jobs is 3. Thus, by splitting a job,
    /// > the organization can later require better service by claiming
    /// > that it obtained worse service from what it actually got.
    ///
    /// followed by "A strategy-resilient (non-manipulable) utility
    /// function exists [17]": ψsp, spec/shapley.md, "Utility ψsp
    /// (strategy-resilient)": `ψsp(σ, t) = Σ p · (t − (s + (s + p − 1)) / 2)`
    /// over jobs (s, p) with s ≤ t, p = t − s for a job still running.
    /// The paper does not spell the equality out; it is what "cannot be
    /// manipulated" means for this example: the whole job (0, 2) is worth
    /// 2·(t − ½) = 2t − 1, the halves (0, 1) and (1, 1) t + (t − 1) = 2t − 1.
    ///
    /// The equality alone would not catch a misplaced ½ (p·(t − s − p/2)
    /// gives 2t − 2 to both), so the value is checked too, against the
    /// definition summed unit part by unit part ([`brute_force`]) and by
    /// hand: 0 at t = 0, then 2t − 1 for every t ≥ 1 (at t = 1 the whole
    /// job is seen running with p = 1, and the split's first half is done,
    /// its second just started, p = 0: 1 either way). Both ways the
    /// core builds ψsp are checked: runs read after the fact (the metric,
    /// [`Psi::add_run_seen_at`]) and events replayed as they happen (the
    /// policies, [`Psi::start`] / [`Psi::stop`]).
    #[test]
    fn splitting_a_job_leaves_its_utility_unchanged() {
        let flow = |jobs: &[(i64, i64)]| -> i64 { jobs.iter().map(|&(s, p)| s + p).sum() };
        let whole = [(0, 2)];
        let split = [(0, 1), (1, 1)];
        assert_eq!((flow(&whole), flow(&split)), (2, 3));
        // Runs read after the fact, cut at t.
        let seen = |jobs: &[(i64, i64)], t: i64| {
            let mut psi = Psi::default();
            for &(s, p) in jobs {
                psi.add_run_seen_at(secs(s), secs(s + p), secs(t));
            }
            psi.at(secs(t))
        };
        // Events up to t: a start once it happened, a stop once it did.
        let live = |jobs: &[(i64, i64)], t: i64| {
            let mut psi = Psi::default();
            for &(s, p) in jobs {
                if s <= t {
                    psi.start(secs(s));
                    if s + p <= t {
                        psi.stop(secs(s), secs(s + p));
                    }
                }
            }
            psi.at(secs(t))
        };
        for t in 0..=10 {
            let want = brute_force(&whole, t);
            assert_eq!(brute_force(&split, t), want, "t = {t}");
            for (how, f) in [
                ("seen", &seen as &dyn Fn(&[(i64, i64)], i64) -> Units),
                ("live", &live),
            ] {
                assert_eq!(f(&whole, t), want, "{how}, whole, t = {t}");
                assert_eq!(f(&split, t), want, "{how}, split, t = {t}");
            }
            let by_hand = if t == 0 { 0 } else { 2 * t - 1 };
            assert_eq!(seconds(want), by_hand as f64, "t = {t}");
        }
    }

    use proptest::prelude::*;

    /// Random jobs `(start, length)` in whole seconds, a time `t` to see
    /// them at (some start after it, some still run at it, lengths 0
    /// included) and an absolute offset (RICC counts from 0, other logs
    /// in Unix seconds).
    fn schedule() -> impl Strategy<Value = (Vec<(i64, i64)>, i64, i64)> {
        (
            proptest::collection::vec((0i64..200, 0i64..120), 0..25),
            0i64..320,
            prop_oneof![Just(0i64), Just(1_270_000_000i64)],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// ψsp kept as aggregates equals ψsp summed unit part by unit part,
        /// whichever way the jobs reach the aggregates: replayed as events
        /// up to `t` (start, and stop for those done by `t`; the others
        /// still running), as finished runs, or as runs seen at `t`.
        #[test]
        fn closed_form_equals_the_definition((jobs, t, off) in schedule()) {
            let shifted: Vec<(i64, i64)> = jobs.iter().map(|&(s, p)| (s + off, p)).collect();
            let want = brute_force(&shifted, t + off);
            let t_abs = secs(t + off);

            // Events in time order up to t (stops before starts at an instant).
            let mut events: Vec<(i64, bool, i64, i64)> = Vec::new();
            for &(s, p) in &shifted {
                if s <= t + off {
                    events.push((s, true, s, p));
                    if s + p <= t + off {
                        events.push((s + p, false, s, p));
                    }
                }
            }
            events.sort_by_key(|&(at, start, _, _)| (at, start));
            let mut live = Psi::default();
            for &(_, start, s, p) in &events {
                if start {
                    live.start(secs(s));
                } else {
                    live.stop(secs(s), secs(s + p));
                }
            }
            let running = shifted.iter().filter(|&&(s, p)| s <= t + off && s + p > t + off).count();
            prop_assert_eq!(live.running(), running as i128);
            prop_assert_eq!(live.at(t_abs), want);

            // Finished runs plus running ones.
            let mut mixed = Psi::default();
            for &(s, p) in &shifted {
                if s + p <= t + off {
                    mixed.add_finished(secs(s), secs(s + p));
                } else if s <= t + off {
                    mixed.start(secs(s));
                }
            }
            prop_assert_eq!(mixed.at(t_abs), want);

            // After the fact, cut at t.
            let mut seen = Psi::default();
            for &(s, p) in &shifted {
                seen.add_run_seen_at(secs(s), secs(s + p), t_abs);
            }
            prop_assert_eq!(seen.at(t_abs), want);

            // A later instant before any other event: finished jobs grow by
            // p per second, running ones by (d+1) for d elapsed.
            let next = shifted
                .iter()
                .flat_map(|&(s, p)| [s, s + p])
                .filter(|&x| x > t + off)
                .min()
                .unwrap_or(t + off + 7);
            for later in (t + off)..=next {
                let want: i128 = shifted
                    .iter()
                    .filter(|&&(s, _)| s <= t + off)
                    .map(|&(s, p)| if s + p <= t + off { (s, p) } else { (s, later - s) })
                    .map(|job| brute_force(&[job], later))
                    .sum();
                prop_assert_eq!(live.at(secs(later)), want);
            }
        }

        /// On a millisecond clock (no brute force in seconds), the three
        /// ways to build the aggregates still agree, and a run seen at its
        /// own end is worth what the finished run is.
        #[test]
        fn the_aggregates_agree_on_a_millisecond_clock(
            jobs in proptest::collection::vec((0i64..200_000, 0i64..120_000), 0..20),
            t in 0i64..320_000,
        ) {
            let ms = Time::from_millis;
            let (mut live, mut seen) = (Psi::default(), Psi::default());
            for &(s, p) in &jobs {
                seen.add_run_seen_at(ms(s), ms(s + p), ms(t));
                if s + p <= t {
                    live.add_finished(ms(s), ms(s + p));
                } else if s <= t {
                    live.start(ms(s));
                }
                let (mut a, mut b) = (Psi::default(), Psi::default());
                a.start(ms(s));
                a.stop(ms(s), ms(s + p));
                b.add_finished(ms(s), ms(s + p));
                prop_assert_eq!(a, b);
                let mut c = Psi::default();
                c.start(ms(s));
                prop_assert_eq!(c.at(ms(s + p)), b.at(ms(s + p)));
            }
            prop_assert_eq!(live.at(ms(t)), seen.at(ms(t)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The batched forms equal their single form repeated `n` times.
        #[test]
        fn n_jobs_at_once_equal_n_jobs_one_by_one(
            jobs in proptest::collection::vec((0i64..200_000, 0i64..120_000, 0u32..9), 0..12),
            t in 0i64..320_000,
        ) {
            let ms = Time::from_millis;
            let (mut one, mut many) = (Psi::default(), Psi::default());
            let (mut seen_one, mut seen_many) = (Psi::default(), Psi::default());
            for &(s, p, n) in &jobs {
                many.start_n(ms(s), n);
                seen_many.add_runs_seen_at(ms(s), ms(s + p), ms(t), n);
                for _ in 0..n {
                    one.start(ms(s));
                    seen_one.add_run_seen_at(ms(s), ms(s + p), ms(t));
                }
                prop_assert_eq!(one, many);
            }
            prop_assert_eq!(seen_one, seen_many);
            for &(s, p, n) in &jobs {
                many.stop_n(ms(s), ms(s + p), n);
                for _ in 0..n {
                    one.stop(ms(s), ms(s + p));
                }
                prop_assert_eq!(one, many);
            }
            let mut fin = Psi::default();
            for &(s, p, n) in &jobs {
                fin.add_finished_n(ms(s), ms(s + p), n);
            }
            prop_assert_eq!(fin, many);
        }
    }

    /// RICC: 8192 processors kept busy over a 5·10⁵ s window (Table 2) and
    /// over 1.5·10⁷ s (more than the whole log), from 0 (RICC's relative
    /// times) and from a Unix-time offset. Each processor runs back-to-back
    /// jobs of its own length, the last still running at the end; busy
    /// from w0 to T, a processor's unit parts are worth Σ_{k<W} (W − k) =
    /// W(W+1)/2 s² whatever the jobs, so the total is exactly
    /// 8192·W(W+1)/2 s², computed here in u128 apart from [`Psi`]. The
    /// value times 12! (the largest |S|! of exact Shapley values) must
    /// still fit in i128.
    #[test]
    fn no_overflow_on_riccs_longest_windows() {
        const PROCS: i64 = 8192;
        for window in [500_000i64, 15_000_000] {
            for w0 in [0i64, 1_270_000_000] {
                let end = w0 + window;
                let mut live = Psi::default();
                let mut seen = Psi::default();
                for m in 0..PROCS {
                    // Lengths 50 000 .. 150 000 s, so several jobs per
                    // processor on the long window and a cut one on the
                    // short one.
                    let len = 50_000 + (m * 7919) % 100_000;
                    let mut s = w0;
                    while s < end {
                        let e = s + len;
                        seen.add_run_seen_at(secs(s), secs(e), secs(end));
                        live.start(secs(s));
                        if e <= end {
                            live.stop(secs(s), secs(e));
                        }
                        s = e;
                    }
                }
                let w = window as u128;
                let want = PROCS as u128 * w * (w + 1) * 1_000_000; // 2·10⁶ · W(W+1)/2
                assert!(want < i128::MAX as u128);
                let want = want as i128;
                assert_eq!(live.at(secs(end)), want, "window {window} from {w0}");
                assert_eq!(seen.at(secs(end)), want, "window {window} from {w0}");
                let f = PROCS as f64 * window as f64 * (window as f64 + 1.0) / 2.0;
                assert!((seconds(want) - f).abs() <= f * 1e-12);
                assert!(want.checked_mul(super::super::game::factorial(12)).is_some());
                // Twelve organizations all that busy: v(C)·12! still fits.
                assert!(
                    (want * 12)
                        .checked_mul(super::super::game::factorial(12))
                        .is_some()
                );
            }
        }
    }

    #[test]
    fn a_run_seen_at_a_window_end_is_cut_there() {
        let mut p = Psi::default();
        p.add_run_seen_at(secs(0), secs(100), secs(4));
        p.add_run_seen_at(secs(5), secs(9), secs(4));
        assert_eq!(p.at(secs(4)), brute_force(&[(0, 100)], 4));
    }
}
