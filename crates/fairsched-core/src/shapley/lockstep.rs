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
}

#[derive(Clone, Debug)]
struct Sched {
    mask: u32,
    free: i64,
    /// Per organization: jobs already started in this schedule.
    next: Vec<u32>,
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
    /// `(end, sched, org, start)` of every running job of every schedule.
    heap: BinaryHeap<Reverse<(Time, u32, u32, Time)>>,
    clock: Time,
    dirty: Vec<u32>,
    /// Values by mask at `values_at`.
    values: Vec<Units>,
    values_at: Option<Time>,
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
            values_at: None,
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
        let release = release.max(self.clock);
        self.jobs[org].push(Job {
            release,
            runtime: runtime.max(Time::ZERO),
            seq: self.seq,
        });
        self.seq += 1;
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
        while let Some(&Reverse((end, i, u, start))) = self.heap.peek() {
            if end > t {
                break;
            }
            self.heap.pop();
            let s = &mut self.scheds[i as usize];
            s.psi[u as usize].stop(start, end);
            s.free += 1;
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
        self.values_at = None;
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
        if self.values_at != Some(t) {
            for s in &self.scheds {
                self.values[s.mask as usize] = super::game::members(s.mask).map(|u| s.psi[u].at(t)).sum();
            }
            self.values_at = Some(t);
        }
        &self.values
    }

    /// ψ of organization `u` in the schedule of `mask` at `t`.
    pub fn psi(&self, mask: u32, u: usize, t: Time) -> Units {
        let i = self.index[mask as usize];
        assert!(i != u32::MAX, "coalition {mask:#b} is not simulated");
        self.scheds[i as usize].psi[u].at(t)
    }

    /// Takes the decisions due at `clock` in every schedule with news.
    fn decide(&mut self) {
        let t = self.clock;
        let dirty = core::mem::take(&mut self.dirty);
        if self.mode == SubSchedule::Fair {
            self.values(t);
        }
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

    fn waiting(&self, s: &Sched, u: usize) -> u32 {
        self.released[u] - s.next[u]
    }

    fn start(&mut self, i: u32, u: usize, t: Time) {
        let s = &mut self.scheds[i as usize];
        let job = self.jobs[u][s.next[u] as usize];
        s.next[u] += 1;
        s.free -= 1;
        s.psi[u].start(t);
        self.heap.push(Reverse((t + job.runtime, i, u as u32, t)));
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
                .filter(|&u| self.waiting(s, u) > 0)
                .map(|u| (0, u)),
        );
        if keys.len() > 1 {
            for (key, u) in keys.iter_mut() {
                *key = shapley_scaled(mask, *u, &self.values) - s.psi[*u].at(t) * n;
            }
            rank(&mut keys);
        }
        for &(_, u) in &keys {
            while self.scheds[i as usize].free > 0 && self.waiting(&self.scheds[i as usize], u) > 0 {
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
                .filter(|&u| self.waiting(s, u) > 0)
                .min_by_key(|&u| {
                    let j = &self.jobs[u][s.next[u] as usize];
                    (j.release, j.seq)
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
