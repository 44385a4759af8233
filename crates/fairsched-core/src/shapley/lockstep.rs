//! Hypothetical schedules of coalitions, advanced in lockstep.
//!
//! The value of a coalition S is the utility its members would get by
//! scheduling only their own jobs on their own processors from the window
//! start (spec/shapley.md). [`Coalitions`] keeps one such schedule per
//! coalition it was asked for and advances them all together over the
//! union of their event times (releases and completions). It needs every
//! job's runtime, so only clairvoyant benchmarks (REF, RAND) and after-the-
//! fact metrics use it; the runtime is given with the job
//! ([`Coalitions::push`]).
//!
//! Processors are identical and a coalition's value depends only on start
//! times, so a schedule is counts: free processors, and per organization a
//! cursor into its jobs (each organization's jobs start in the order it
//! submitted them). Completions of every schedule share one heap.
//!
//! A job may stand for several identical unit jobs ([`Coalitions::push_n`]:
//! a task holding q processors is q jobs of one processor each, released
//! together with one runtime). They are kept, started and ended as one
//! batch per instant (the units a schedule starts at one instant end
//! together), which gives exactly the schedule and the values of q separate
//! pushes, at the cost of one.
//!
//! Sub-schedules:
//! - [`SubSchedule::Fair`] (REF): each coalition is itself scheduled fairly,
//!   from the Shapley values of its own sub-coalitions at the same instant
//!   (so every subset of a simulated coalition is simulated too); the rule
//!   of [`rank`]. Decisions at an instant do not change any value at that
//!   instant (a job started at t is worth 0 at t), so the order in which
//!   coalitions decide within an instant does not matter.
//! - [`SubSchedule::Fifo`] (RAND, `ref[sub=fifo]`): greedy by release time,
//!   ties by submission order.
//!
//! Decisions at the latest instant reached are deferred until time moves on
//! ([`Coalitions::advance`]), so jobs that a driver reports later at that
//! same instant are still considered at it.

use super::game::{factorial, shapley_scaled};
use super::psi::{Psi, Units};
use crate::prelude::*;
use crate::time::Time;
use alloc::collections::BinaryHeap;
use core::cmp::Reverse;

/// How each hypothetical coalition schedules its own jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubSchedule {
    Fair,
    Fifo,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    release: Time,
    runtime: Time,
    seq: u64,
    /// Identical unit jobs it stands for (≥ 1).
    count: u32,
}

/// `(end, schedule, organization, start, units)`: unit jobs that one
/// schedule started together (they end together).
type Batch = (Time, u32, u32, Time, u32);

#[derive(Clone, Debug)]
struct Sched {
    mask: u32,
    free: i64,
    /// Per organization: jobs whose units all started in this schedule.
    next: Vec<u32>,
    /// Per organization: units of job `next` already started.
    part: Vec<u32>,
    psi: Vec<Psi>,
    dirty: bool,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Coalitions {
    k: usize,
    mode: SubSchedule,
    jobs: Vec<Vec<Job>>,
    /// Per organization: jobs released by `clock`.
    released: Vec<u32>,
    /// Mask → index in `scheds` (`u32::MAX`: not simulated).
    index: Vec<u32>,
    scheds: Vec<Sched>,
    /// Every batch of running unit jobs of every schedule.
    heap: BinaryHeap<Reverse<Batch>>,
    clock: Time,
    dirty: Vec<u32>,
    /// Values by mask; `values[m]` is current when `fresh[m] == epoch`.
    values: Vec<Units>,
    fresh: Vec<u64>,
    /// Bumped whenever values may have changed: at events, or when asked
    /// at another instant than `epoch_at`.
    epoch: u64,
    epoch_at: Option<Time>,
    seq: u64,
    /// Scratch for ranking.
    keys: Vec<(Units, usize)>,
}

impl Coalitions {
    /// Schedules for `masks` (non-empty, each below 2^k), with `procs[u]`
    /// processors for organization u. With [`SubSchedule::Fair`], every
    /// non-empty subset of a listed mask must be listed too.
    pub fn new(procs: &[u32], mode: SubSchedule, masks: impl IntoIterator<Item = u32>) -> Coalitions {
        let k = procs.len();
        let mut index = vec![u32::MAX; 1 << k];
        let mut scheds = Vec::new();
        for m in masks {
            if m == 0 || index[m as usize] != u32::MAX {
                continue;
            }
            index[m as usize] = scheds.len() as u32;
            let free = super::game::members(m).map(|u| procs[u] as i64).sum();
            scheds.push(Sched {
                mask: m,
                free,
                next: vec![0; k],
                part: vec![0; k],
                psi: vec![Psi::default(); k],
                dirty: false,
            });
        }
        if mode == SubSchedule::Fair {
            for s in &scheds {
                let mut t = s.mask;
                while t != 0 {
                    assert!(index[t as usize] != u32::MAX, "Fair schedules need every subset");
                    t = (t - 1) & s.mask;
                }
            }
        }
        Coalitions {
            k,
            mode,
            jobs: vec![Vec::new(); k],
            released: vec![0; k],
            index,
            scheds,
            heap: BinaryHeap::new(),
            clock: Time::MIN,
            dirty: Vec::new(),
            values: vec![0; 1 << k],
            fresh: vec![0; 1 << k],
            epoch: 1,
            epoch_at: None,
            seq: 0,
            keys: Vec::new(),
        }
    }

    /// Every non-empty coalition, the grand one included or not.
    pub fn all(procs: &[u32], mode: SubSchedule, with_grand: bool) -> Coalitions {
        let full = super::game::full_mask(procs.len());
        let masks = (1..=full).filter(move |&m| with_grand || m != full);
        Coalitions::new(procs, mode, masks)
    }

    pub fn orgs(&self) -> usize {
        self.k
    }

    /// A job of `org` released at `release` (not before any release pushed
    /// so far nor before the last instant advanced to) with its true
    /// `runtime`.
    pub fn push(&mut self, org: usize, release: Time, runtime: Time) {
        self.push_n(org, release, runtime, 1);
    }

    /// `count` identical jobs of `org` (a task holding `count` processors),
    /// as `count` calls of [`Coalitions::push`] in a row; nothing for 0.
    pub fn push_n(&mut self, org: usize, release: Time, runtime: Time, count: u32) {
        if count == 0 {
            return;
        }
        let release = release.max(self.clock);
        self.jobs[org].push(Job {
            release,
            runtime: runtime.max(Time::ZERO),
            seq: self.seq,
            count,
        });
        self.seq += u64::from(count);
    }

    fn next_time(&self) -> Option<Time> {
        let c = self.heap.peek().map(|Reverse(e)| e.0);
        let r = (0..self.k)
            .filter_map(|u| self.jobs[u].get(self.released[u] as usize).map(|j| j.release))
            .min();
        match (c, r) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn mark(&mut self, i: u32) {
        let s = &mut self.scheds[i as usize];
        if !s.dirty {
            s.dirty = true;
            self.dirty.push(i);
        }
    }

    /// Completions and releases at `clock`.
    fn apply_events(&mut self) {
        let t = self.clock;
        while let Some(&Reverse((end, i, u, start, n))) = self.heap.peek() {
            if end > t {
                break;
            }
            self.heap.pop();
            let s = &mut self.scheds[i as usize];
            s.psi[u as usize].stop_n(start, end, n);
            s.free += i64::from(n);
            self.mark(i);
        }
        for u in 0..self.k {
            let before = self.released[u];
            let jobs = &self.jobs[u];
            let mut r = before as usize;
            while r < jobs.len() && jobs[r].release <= t {
                r += 1;
            }
            if r as u32 != before {
                self.released[u] = r as u32;
                for i in 0..self.scheds.len() as u32 {
                    if self.scheds[i as usize].mask & (1 << u) != 0 {
                        self.mark(i);
                    }
                }
            }
        }
        self.epoch += 1;
        self.epoch_at = None;
    }

    /// Advances every schedule to `now`: all events up to `now` are
    /// applied and all decisions before `now` taken; decisions at `now`
    /// wait for the next call with a later time (values at `now` do not
    /// depend on them).
    pub fn advance(&mut self, now: Time) {
        loop {
            let next = self.next_time();
            if next.is_some_and(|t| t <= self.clock) {
                self.apply_events();
                continue;
            }
            if !self.dirty.is_empty() {
                if self.clock < now {
                    self.decide();
                    continue;
                }
                break;
            }
            match next {
                Some(t) if t <= now => self.clock = t,
                _ => break,
            }
        }
    }

    /// `v(S, t)` for every simulated S (0 for the others), `t` ≥ the
    /// instant advanced to and before the next event.
    pub fn values(&mut self, t: Time) -> &[Units] {
        self.at_instant(t);
        for i in 0..self.scheds.len() {
            self.refresh(i, t);
        }
        &self.values
    }

    /// Starts a new epoch if `t` is not the instant of the current one.
    fn at_instant(&mut self, t: Time) {
        if self.epoch_at != Some(t) {
            self.epoch += 1;
            self.epoch_at = Some(t);
        }
    }

    /// Makes `values[mask of schedule i]` current (at `t`, the epoch's).
    fn refresh(&mut self, i: usize, t: Time) {
        let s = &self.scheds[i];
        let m = s.mask as usize;
        if self.fresh[m] != self.epoch {
            self.values[m] = super::game::members(s.mask).map(|u| s.psi[u].at(t)).sum();
            self.fresh[m] = self.epoch;
        }
    }

    /// `values` of every non-empty subset of `mask` at `t` (what ranking
    /// inside `mask` reads), the others left as they are.
    fn values_within(&mut self, mask: u32, t: Time) {
        self.at_instant(t);
        let mut sub = mask;
        while sub != 0 {
            let i = self.index[sub as usize];
            if i != u32::MAX {
                self.refresh(i as usize, t);
            }
            sub = (sub - 1) & mask;
        }
    }

    /// ψ of organization `u` in the schedule of `mask` at `t`.
    pub fn psi(&self, mask: u32, u: usize, t: Time) -> Units {
        let i = self.index[mask as usize];
        assert!(i != u32::MAX, "coalition {mask:#b} is not simulated");
        self.scheds[i as usize].psi[u].at(t)
    }

    /// Takes the decisions due at `clock` in every schedule with news. The
    /// values a fair schedule ranks by are computed (once) only when one
    /// must choose between members; starts at `clock` do not change them.
    fn decide(&mut self) {
        let t = self.clock;
        let dirty = core::mem::take(&mut self.dirty);
        for &i in &dirty {
            self.scheds[i as usize].dirty = false;
            match self.mode {
                SubSchedule::Fair => self.decide_fair(i, t),
                SubSchedule::Fifo => self.decide_fifo(i, t),
            }
        }
        self.dirty = dirty;
        self.dirty.clear();
    }

    /// Whether a released job of `u` has units not started in `s`.
    fn waiting(&self, s: &Sched, u: usize) -> bool {
        s.next[u] < self.released[u]
    }

    /// Starts as many units of `u`'s next job as `s` has free processors
    /// (at least one is free).
    fn start(&mut self, i: u32, u: usize, t: Time) {
        let s = &mut self.scheds[i as usize];
        let job = self.jobs[u][s.next[u] as usize];
        let left = job.count - s.part[u];
        let n = left.min(u32::try_from(s.free).unwrap_or(u32::MAX));
        if n == left {
            s.next[u] += 1;
            s.part[u] = 0;
        } else {
            s.part[u] += n;
        }
        s.free -= i64::from(n);
        s.psi[u].start_n(t, n);
        self.heap.push(Reverse((t + job.runtime, i, u as u32, t, n)));
    }

    fn decide_fair(&mut self, i: u32, t: Time) {
        let s = &self.scheds[i as usize];
        if s.free <= 0 {
            return;
        }
        let mask = s.mask;
        let mut keys = core::mem::take(&mut self.keys);
        keys.clear();
        let n = factorial(mask.count_ones() as usize);
        // Members with waiting jobs; φ − ψ only matters when several wait.
        keys.extend(
            super::game::members(mask)
                .filter(|&u| self.waiting(s, u))
                .map(|u| (0, u)),
        );
        if keys.len() > 1 {
            self.values_within(mask, t);
            let s = &self.scheds[i as usize];
            for (key, u) in keys.iter_mut() {
                *key = shapley_scaled(mask, *u, &self.values) - s.psi[*u].at(t) * n;
            }
            rank(&mut keys);
        }
        for &(_, u) in &keys {
            while self.scheds[i as usize].free > 0 && self.waiting(&self.scheds[i as usize], u) {
                self.start(i, u, t);
            }
        }
        self.keys = keys;
    }

    fn decide_fifo(&mut self, i: u32, t: Time) {
        loop {
            let s = &self.scheds[i as usize];
            if s.free <= 0 {
                return;
            }
            let best = super::game::members(s.mask)
                .filter(|&u| self.waiting(s, u))
                .min_by_key(|&u| {
                    let j = &self.jobs[u][s.next[u] as usize];
                    (j.release, j.seq + u64::from(s.part[u]))
                });
            match best {
                Some(u) => self.start(i, u, t),
                None => return,
            }
        }
    }
}

/// The selection rule shared by REF, RAND and DIRECTCONTR: largest key
/// (φ − ψ) first, ties to the lowest organization index.
pub fn rank(keys: &mut [(Units, usize)]) {
    keys.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_puts_the_largest_key_first_and_ties_to_the_lowest_index() {
        let mut keys = vec![(5, 3), (7, 2), (5, 0), (7, 4), (-1, 1), (5, 1)];
        rank(&mut keys);
        assert_eq!(keys, vec![(7, 2), (7, 4), (5, 0), (5, 1), (5, 3), (-1, 1)]);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A job of q units pushed once ([`Coalitions::push_n`]) schedules
        /// and values exactly as q pushes of one unit, in both modes, at
        /// every instant a driver advances to: 3 organizations with 1–4
        /// processors, jobs of 1–5 units released in order.
        #[test]
        fn batches_equal_units_pushed_one_by_one(
            procs in proptest::collection::vec(1u32..5, 3),
            jobs in proptest::collection::vec((0usize..3, 0i64..6, 1i64..30, 1u32..6), 1..25),
            fair in any::<bool>(),
        ) {
            let mode = if fair { SubSchedule::Fair } else { SubSchedule::Fifo };
            let s = Time::from_secs;
            let mut units = Coalitions::all(&procs, mode, true);
            let mut batches = Coalitions::all(&procs, mode, true);
            let mut release = 0;
            for &(o, gap, p, q) in &jobs {
                release += gap;
                batches.push_n(o, s(release), s(p), q);
                for _ in 0..q {
                    units.push(o, s(release), s(p));
                }
            }
            for t in (0..=release + 200).step_by(7) {
                units.advance(s(t));
                batches.advance(s(t));
                prop_assert_eq!(units.values(s(t)), batches.values(s(t)), "at {}", t);
            }
        }
    }

    /// Two organizations with one processor each; org 1's 10 s job at 0,
    /// org 0's two 10 s jobs at 0. Alone, org 0 runs 0..10 and 10..20,
    /// org 1 0..10. Together (fair): at 0 every key is 0, so org 0 takes
    /// both processors; at 10, v({0}) = 55, v({1}) = 55, v({0,1}) =
    /// 2·55 = 110 s², φ0 = φ1 = 55, ψ0 = 110, ψ1 = 0: org 1 goes.
    /// FIFO: org 1's job was pushed first and starts at 0 with org 0's
    /// first.
    #[test]
    fn a_fair_and_a_fifo_grand_coalition_by_hand() {
        let s = |x: i64| Time::from_secs(x);
        let u = |x: i128| x * 2_000_000;
        for mode in [SubSchedule::Fair, SubSchedule::Fifo] {
            let mut c = Coalitions::all(&[1, 1], mode, true);
            c.push(1, s(0), s(10));
            c.push(0, s(0), s(10));
            c.push(0, s(0), s(10));
            c.advance(s(10));
            let v = c.values(s(10)).to_vec();
            match mode {
                SubSchedule::Fair => {
                    assert_eq!(v, vec![0, u(55), u(55), u(110)]);
                    assert_eq!((c.psi(3, 0, s(10)), c.psi(3, 1, s(10))), (u(110), 0));
                    c.advance(s(20));
                    // Org 1's job runs 10..20 (55 at 20); org 0's two
                    // jobs 0..10 are worth 2·(10·20 − 45) = 310 at 20.
                    assert_eq!((c.psi(3, 0, s(20)), c.psi(3, 1, s(20))), (u(310), u(55)));
                }
                SubSchedule::Fifo => {
                    assert_eq!(v, vec![0, u(55), u(55), u(110)]);
                    assert_eq!((c.psi(3, 0, s(10)), c.psi(3, 1, s(10))), (u(55), u(55)));
                    c.advance(s(20));
                    // Org 0's second job 10..20: 155 + 55.
                    assert_eq!((c.psi(3, 0, s(20)), c.psi(3, 1, s(20))), (u(210), u(155)));
                }
            }
        }
    }
}
