//! [`PsiMeter`]: ψsp of every organization in a finished run, seen at a
//! chosen instant (a window's end), and the work p_tot done by then — the
//! two halves of the fairness measure Δψ / p_tot (spec/shapley.md).
//!
//! It reads the runs of ended tasks after the fact (an observer, not a
//! policy), so it needs no oracle: a run's end is known once it happened.
//! Every run counts, a requeued one too (its processing happened), and a
//! task holding q slots counts as q jobs.

use super::psi::{Psi, Units, seconds};
use crate::event::EndRecord;
use crate::prelude::*;
use crate::sink::{Observer, TaskMeta};
use crate::time::Time;

/// See the module docs.
#[derive(Clone, Debug)]
pub struct PsiMeter {
    at: Time,
    psi: Vec<Psi>,
    /// Σ min(p, at − s) over runs started by `at`, in ms (slots counted).
    work_ms: i128,
}

impl PsiMeter {
    /// Utilities at `at`, for organizations `0..orgs` (more are added as
    /// they appear).
    pub fn new(orgs: usize, at: Time) -> PsiMeter {
        PsiMeter {
            at,
            psi: vec![Psi::default(); orgs],
            work_ms: 0,
        }
    }

    /// The instant the utilities are seen at.
    pub fn at(&self) -> Time {
        self.at
    }

    /// Records one run of a task of `org` on `slots` slots.
    pub fn record_run(&mut self, org: usize, slots: u32, start: Time, end: Time) {
        if org >= self.psi.len() {
            self.psi.resize(org + 1, Psi::default());
        }
        if start > self.at {
            return;
        }
        self.psi[org].add_runs_seen_at(start, end, self.at, slots);
        self.work_ms += slots as i128 * (end.min(self.at).millis() - start.millis()) as i128;
    }

    /// ψ_u at the chosen instant, in [`Units`].
    pub fn units(&self) -> Vec<Units> {
        self.psi.iter().map(|p| p.at(self.at)).collect()
    }

    /// ψ_u in s².
    pub fn psi(&self) -> Vec<f64> {
        self.units().into_iter().map(seconds).collect()
    }

    /// p_tot in seconds.
    pub fn work_s(&self) -> f64 {
        self.work_ms as f64 / 1000.0
    }
}

impl Observer for PsiMeter {
    fn on_task(&mut self, rec: &EndRecord, _meta: &TaskMeta) {
        for a in rec.runs() {
            self.record_run(rec.spec.org.index(), a.slots, a.start, a.stop);
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

/// Δψ = Σ_u |ψ_u − ψ*_u| in s², between an evaluated schedule's
/// utilities and the reference's (organizations missing on one side
/// count as 0).
pub fn delta_psi(psi: &[Units], reference: &[Units]) -> f64 {
    let n = psi.len().max(reference.len());
    let d: Units = (0..n)
        .map(|u| {
            let a = psi.get(u).copied().unwrap_or(0);
            let b = reference.get(u).copied().unwrap_or(0);
            (a - b).abs()
        })
        .sum();
    seconds(d)
}
