//! Each user's satisfaction in the live pool, kept in O(1) per change.

use std::collections::{BTreeMap, HashMap};

/// Per-user satisfaction (spec/diet-ethic.md, "Metrics", adapted to a
/// live pool): `s_u = allocated_u / deserved_u`, where `allocated_u` is the
/// slot-time of u's runs, whatever their outcome (killed and requeued runs
/// included, and runs in progress up to now), and `deserved_u` is the
/// integral, over the time u has live work (tasks waiting or running in the
/// core; held workflow tasks do not count), of `slots / |U|`, `U` being the
/// users with live work then.
///
/// Kept in O(1) per change: `G(t) = ∫ slots/|U| dt` is one global integral
/// (advanced lazily: `slots` and `|U|` only change at events); a user's
/// deserved share is the sum of `G` differences over its presence intervals
/// (`deserved` for the closed ones, `G(now) − base` for the current one);
/// its allocated time is `allocated` for closed runs plus
/// `running · now − start_sum` for the runs in progress. Times are the
/// core's milliseconds, slot-time is slot-milliseconds.
///
/// `g`, `at`, and each user's `allocated`, `deserved` and `base` are in the
/// tables (`share_clock`, `shares`), written in the same transaction as the
/// steps that change them; the rest (live and running tasks, slots) is
/// recounted from the core on open.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Satisfaction {
    pub(super) g: f64,
    pub(super) at: i64,
    pub(super) slots: i64,
    /// |U|: users with `live > 0`.
    pub(super) present: u64,
    pub(super) users: HashMap<i64, Share>,
}

/// One user's part of [`Satisfaction`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Share {
    pub(super) live: u64,
    pub(super) running: u64,
    pub(super) start_sum: i64,
    pub(super) allocated: i64,
    pub(super) deserved: f64,
    pub(super) base: f64,
}

/// What a batch of steps changes for [`Satisfaction`] (all at one instant).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct ShareDelta {
    pub(super) slots: i64,
    /// Slots may have left inside the steps (a draining worker's): `G`
    /// is brought to now before the count changes.
    pub(super) slots_moved: bool,
    pub(super) users: BTreeMap<i64, UserDelta>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct UserDelta {
    pub(super) live: i64,
    pub(super) running: i64,
    pub(super) start_sum: i64,
    pub(super) allocated: i64,
}

impl ShareDelta {
    pub(super) fn is_empty(&self) -> bool {
        self.slots == 0 && !self.slots_moved && self.users.is_empty()
    }
    pub(super) fn user(&mut self, u: i64) -> &mut UserDelta {
        self.users.entry(u).or_default()
    }
    pub(super) fn start(&mut self, u: i64, now: i64) {
        let d = self.user(u);
        d.running += 1;
        d.start_sum += now;
    }
    pub(super) fn stop(&mut self, u: i64, start: i64, now: i64) {
        let d = self.user(u);
        d.running -= 1;
        d.start_sum -= start;
        d.allocated += (now - start).max(0);
    }
}

/// [`Satisfaction`] after a batch, before it is committed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Staged {
    pub(super) g: f64,
    pub(super) at: i64,
    pub(super) slots: i64,
    pub(super) present: u64,
    pub(super) users: Vec<(i64, Share)>,
}

impl Satisfaction {
    /// `G(now)`.
    pub(super) fn g_at(&self, now: i64) -> f64 {
        if now > self.at && self.present > 0 {
            self.g + self.slots.max(0) as f64 * (now - self.at) as f64 / self.present as f64
        } else {
            self.g
        }
    }

    /// The state after `d` at `now` (the users it touches only).
    pub(super) fn preview(&self, now: i64, d: &ShareDelta) -> Staged {
        let g = self.g_at(now);
        let mut present = self.present;
        let users = d
            .users
            .iter()
            .map(|(&u, ud)| {
                let mut s = self.users.get(&u).copied().unwrap_or_default();
                let was = s.live > 0;
                s.live = (s.live as i64 + ud.live).max(0) as u64;
                s.running = (s.running as i64 + ud.running).max(0) as u64;
                s.start_sum += ud.start_sum;
                s.allocated += ud.allocated;
                match (was, s.live > 0) {
                    (false, true) => {
                        s.base = g;
                        present += 1;
                    }
                    (true, false) => {
                        s.deserved += g - s.base;
                        s.base = 0.0;
                        present -= 1;
                    }
                    _ => {}
                }
                (u, s)
            })
            .collect();
        Staged {
            g,
            at: now.max(self.at),
            slots: self.slots + d.slots,
            present,
            users,
        }
    }

    pub(super) fn install(&mut self, st: Staged) {
        self.g = st.g;
        self.at = st.at;
        self.slots = st.slots;
        self.present = st.present;
        for (u, s) in st.users {
            self.users.insert(u, s);
        }
    }

    /// Applies `d` at `now` at once (tests; the broker stages and commits).
    #[cfg(test)]
    pub(super) fn apply(&mut self, now: i64, d: &ShareDelta) {
        let st = self.preview(now, d);
        self.install(st);
    }

    /// `(allocated, deserved)` of `user` at `now`, slot-milliseconds.
    pub(super) fn parts(&self, user: i64, now: i64) -> Option<(f64, f64)> {
        let s = self.users.get(&user)?;
        let allocated = s.allocated + s.running as i64 * now - s.start_sum;
        let current = if s.live > 0 { self.g_at(now) - s.base } else { 0.0 };
        Some((allocated as f64, s.deserved + current))
    }

    /// `s_u` at `now`; `None` while nothing is deserved yet.
    pub(super) fn value(&self, user: i64, now: i64) -> Option<f64> {
        let (a, d) = self.parts(user, now)?;
        (d > 0.0).then(|| a / d)
    }
}
