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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

    /// A job that ran from `s` to `e` (never seen running).
    pub fn add_finished(&mut self, s: Time, e: Time) {
        let s = s.millis() as i128;
        let p = e.millis() as i128 - s;
        self.fin_t += 2 * p;
        self.fin_c += -2 * p * s - p * (p - SEC);
    }

    /// A run from `s` to `e` as seen at `t`: nothing if it starts after
    /// `t`, its first `t − s` seconds if it ends after `t`. For metrics
    /// read after the fact (the whole schedule known, evaluated at a
    /// window's end): read the result with [`Psi::at`] at this same `t`.
    pub fn add_run_seen_at(&mut self, s: Time, e: Time, t: Time) {
        if s > t {
            return;
        }
        if e > t {
            // Running at t: worth (t−s)(t−s+1000) units at t.
            let d = (t.millis() - s.millis()) as i128;
            self.fin_c += d * (d + SEC);
        } else {
            self.add_finished(s, e);
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

    #[test]
    fn a_run_seen_at_a_window_end_is_cut_there() {
        let mut p = Psi::default();
        p.add_run_seen_at(secs(0), secs(100), secs(4));
        p.add_run_seen_at(secs(5), secs(9), secs(4));
        assert_eq!(p.at(secs(4)), brute_force(&[(0, 100)], 4));
    }
}
