//! Per-organization fairness of a finished run (spec/shapley.md): each
//! organization's utility ψsp at the run's end, its Shapley value φ in the
//! game whose coalitions schedule their own jobs on their own processors
//! (each fairly, as REF does), and φ − ψ (what it contributed beyond what
//! it got). Σ φ = Σ ψ: the grand coalition's value is the evaluated
//! schedule's.
//!
//! An observer collects what it needs as tasks end (organization, submit,
//! true runtime — this is a metric, computed after the fact, so it may
//! read runtimes); [`OrgFairness::finish`] then simulates the 2^k − 2
//! proper coalitions up to the end instant. Runs on several machines,
//! with more than [`MAX_SIMULATE_ORGS`] organizations or with a single one get ψ
//! only, and say why.

use fairsched_core::shapley::{
    Coalitions, MAX_ORGS, PsiMeter, SubSchedule, Units, full_mask, seconds, shapley_scaled,
};
use fairsched_core::{EndRecord, Observer, TaskMeta, Time};
use serde::Serialize;

/// Most organizations φ is computed for at the end of a run (2^k − 2
/// coalition schedules of the whole log).
pub const MAX_SIMULATE_ORGS: usize = 8;

/// One organization's line of `orgs.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct OrgLine {
    pub org: u32,
    pub procs: u32,
    pub tasks: u64,
    /// ψsp at the end instant, s².
    pub psi: f64,
    /// Shapley value, s² (`None` when not computed).
    pub phi: Option<f64>,
    pub phi_minus_psi: Option<f64>,
}

/// The fairness section of `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct OrgFairness {
    /// The instant utilities are seen at (s, in the log's time, re-based to
    /// the window's start with `--window`): the window's end, else the
    /// run's last end.
    pub at_s: f64,
    pub orgs: Vec<OrgLine>,
    /// Σ_u |φ_u − ψ_u| / p_tot (s): how far the run is from giving every
    /// organization its contribution (not the experiment's Δψ/p_tot, which
    /// measures the distance to REF's schedule).
    pub phi_gap_per_work_s: Option<f64>,
    pub note: Option<String>,
}

/// Collects a run's tasks for [`OrgFairness`].
#[derive(Clone, Debug, Default)]
pub struct FairnessObserver {
    /// `(org, submit, runtime)` of every task that was submitted.
    jobs: Vec<(u32, Time, Time)>,
    /// Every run: `(org, slots, start, stop)`.
    runs: Vec<(u32, u32, Time, Time)>,
    tasks: Vec<u64>,
    last: Time,
}

impl Observer for FairnessObserver {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        let org = rec.spec.org.0;
        if let (Some(p), false) = (meta.runtime, rec.outcome == fairsched_core::Outcome::Rejected) {
            for _ in 0..rec.spec.slots.max(1) {
                self.jobs.push((org, rec.submit, p));
            }
        }
        for a in rec.runs() {
            self.runs.push((org, a.slots, a.start, a.stop));
        }
        let o = org as usize;
        if o >= self.tasks.len() {
            self.tasks.resize(o + 1, 0);
        }
        self.tasks[o] += 1;
        self.last = self.last.max(rec.end);
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

impl FairnessObserver {
    /// ψ, φ and φ − ψ at `at` (default: the last end), for a platform
    /// whose organizations own `procs` processors on `machines` machines.
    pub fn finish(mut self, procs: &[u32], machines: usize, at: Option<Time>) -> OrgFairness {
        let at = at.unwrap_or(self.last);
        let k = procs.len().max(self.tasks.len());
        let mut meter = PsiMeter::new(k, at);
        for &(o, q, s, e) in &self.runs {
            meter.record_run(o as usize, q, s, e);
        }
        let psi: Vec<Units> = meter.units();
        let work = meter.work_s();
        let note = if k < 2 {
            Some("one organization: φ = ψ".to_string())
        } else if machines > 1 {
            Some("φ is defined for one shared pool of processors; this run has several machines".to_string())
        } else if k > MAX_ORGS {
            Some(format!(
                "φ needs 2^k coalition schedules: computed for at most {MAX_ORGS} organizations"
            ))
        } else if procs.len() < k {
            Some("tasks of organizations the platform does not declare: φ not computed".to_string())
        } else {
            None
        };
        let phi: Option<Vec<Units>> = note.is_none().then(|| {
            self.jobs.sort_by_key(|&(_, s, _)| s);
            let mut game = Coalitions::all(procs, SubSchedule::Fair, false);
            for &(o, s, p) in &self.jobs {
                game.push(o as usize, s, p);
            }
            game.advance(at);
            let mut v = game.values(at).to_vec();
            let full = full_mask(k);
            v[full as usize] = psi.iter().sum();
            (0..k).map(|u| shapley_scaled(full, u, &v)).collect()
        });
        let n = fairsched_core::shapley::game::factorial(k) as f64;
        let orgs = (0..k)
            .map(|u| {
                let ph = phi
                    .as_ref()
                    .map(|p| p[u] as f64 / n / fairsched_core::shapley::psi::UNITS_PER_S2);
                OrgLine {
                    org: u as u32,
                    procs: procs.get(u).copied().unwrap_or(0),
                    tasks: self.tasks.get(u).copied().unwrap_or(0),
                    psi: seconds(psi[u]),
                    phi: ph,
                    phi_minus_psi: ph.map(|p| p - seconds(psi[u])),
                }
            })
            .collect::<Vec<_>>();
        let phi_gap_per_work_s = phi.as_ref().and_then(|_| {
            let d: f64 = orgs.iter().filter_map(|o| o.phi_minus_psi).map(f64::abs).sum();
            (work > 0.0).then(|| d / work)
        });
        OrgFairness {
            at_s: at.as_secs_f64(),
            orgs,
            phi_gap_per_work_s,
            note,
        }
    }
}
