//! Per-organization fairness of a finished run (spec/shapley.md): each
//! organization's utility ψsp at the run's end, and on request its Shapley
//! value φ in the game whose coalitions schedule their own jobs on their
//! own processors (each fairly, as REF does) and φ − ψ (what it
//! contributed beyond what it got). Σ φ = Σ ψ: the grand coalition's value
//! is the evaluated schedule's.
//!
//! What it costs, and so when it is computed:
//!
//! - ψ always. It is kept as aggregates while tasks end (O(organizations)
//!   memory, O(1) per task): each run is added seen at the window's end
//!   when there is a window, and whole otherwise (the instant is then the
//!   run's last end, which no run passes).
//! - φ only when asked ([`FairnessObserver::new`] with `phi`, `simulate
//!   --phi`): [`FairnessObserver::finish`] replays the 2^k − 2 proper
//!   coalitions' schedules of the whole run ([`Coalitions`]), so the
//!   observer keeps `(organization, submit, runtime, processors)` of every
//!   task (24 bytes a task) — on RICC's 447,784 jobs and 5 organizations,
//!   30 schedules of the whole log. A task holding q processors is q unit
//!   jobs, kept and scheduled as one batch. Without the request, φ is
//!   `None` and the note says how to get it. Runs on several machines,
//!   with more than [`MAX_SIMULATE_ORGS`] organizations or with a single
//!   one get ψ only, and say why.
//!
//! The observer reads true runtimes (this is a metric, computed after the
//! fact, never shown to a policy).

use fairsched_core::shapley::{Coalitions, Psi, SubSchedule, Units, full_mask, seconds, shapley_scaled};
use fairsched_core::{EndRecord, Observer, Outcome, TaskMeta, Time};
use serde::Serialize;

/// Most organizations φ is computed for at the end of a run (2^k − 2
/// coalition schedules of the whole log).
pub const MAX_SIMULATE_ORGS: usize = 8;

/// One organization's line of `orgs.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct OrgLine {
    pub org: u32,
    /// Its name (`org<i>` here; the run puts the platform file's).
    pub name: String,
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
    /// Why φ is missing, when it is.
    pub note: Option<String>,
}

/// A task as the coalition schedules need it.
#[derive(Clone, Copy, Debug)]
struct TaskJob {
    submit: Time,
    runtime: Time,
    org: u32,
    /// Processors it held: as many unit jobs.
    slots: u32,
}

/// Collects a run's utilities (and, for φ, its tasks) for [`OrgFairness`].
#[derive(Clone, Debug, Default)]
pub struct FairnessObserver {
    /// The instant ψ is seen at, when known before the run (a window's
    /// end); `None`: the run's last end.
    at: Option<Time>,
    /// ψ aggregates per organization.
    psi: Vec<Psi>,
    /// Σ processors × time run by the instant, ms.
    work_ms: i128,
    tasks: Vec<u64>,
    last: Time,
    /// With φ: every submitted task, in the order tasks ended.
    jobs: Option<Vec<TaskJob>>,
}

impl Observer for FairnessObserver {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        let org = rec.spec.org.0;
        let o = org as usize;
        if o >= self.tasks.len() {
            self.tasks.resize(o + 1, 0);
            self.psi.resize(o + 1, Psi::default());
        }
        if let (Some(jobs), Some(p), false) = (&mut self.jobs, meta.runtime, rec.outcome == Outcome::Rejected)
        {
            jobs.push(TaskJob {
                submit: rec.submit,
                runtime: p,
                org,
                slots: rec.spec.slots.max(1),
            });
        }
        for a in rec.runs() {
            match self.at {
                Some(at) => {
                    if a.start <= at {
                        self.psi[o].add_runs_seen_at(a.start, a.stop, at, a.slots);
                        self.work_ms +=
                            i128::from(a.slots) * i128::from(a.stop.min(at).millis() - a.start.millis());
                    }
                }
                // Seen at the last end, which no run passes.
                None => {
                    self.psi[o].add_finished_n(a.start, a.stop, a.slots);
                    self.work_ms += i128::from(a.slots) * i128::from(a.stop.millis() - a.start.millis());
                }
            }
        }
        self.tasks[o] += 1;
        self.last = self.last.max(rec.end);
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

impl FairnessObserver {
    /// Utilities seen at `at` (default: the run's last end); with `phi`,
    /// also the Shapley values (which keeps every task until the end).
    pub fn new(at: Option<Time>, phi: bool) -> FairnessObserver {
        FairnessObserver {
            at,
            jobs: phi.then(Vec::new),
            ..FairnessObserver::default()
        }
    }

    /// ψ, and φ and φ − ψ if asked, for a platform whose organizations own
    /// `procs` processors on `machines` machines.
    pub fn finish(self, procs: &[u32], machines: usize) -> OrgFairness {
        let at = self.at.unwrap_or(self.last);
        let k = procs.len().max(self.tasks.len());
        let psi: Vec<Units> = (0..k).map(|u| self.psi.get(u).map_or(0, |p| p.at(at))).collect();
        let work = self.work_ms as f64 / 1000.0;
        let schedules = (1u64 << k.min(63)).saturating_sub(2);
        let note = if k < 2 {
            Some("one organization: φ = ψ".to_string())
        } else if machines > 1 {
            Some("φ is defined for one shared pool of processors; this run has several machines".to_string())
        } else if k > MAX_SIMULATE_ORGS {
            Some(format!(
                "φ needs 2^k − 2 coalition schedules of the whole run: computed for at most \
                 {MAX_SIMULATE_ORGS} organizations"
            ))
        } else if procs.len() < k {
            Some("tasks of organizations the platform does not declare: φ not computed".to_string())
        } else if self.jobs.is_none() {
            Some(format!(
                "φ not computed: it needs {schedules} coalition schedules of the whole run; \
                 ask for it with `simulate --phi`"
            ))
        } else {
            None
        };
        let phi: Option<Vec<Units>> = match (&note, self.jobs) {
            (None, Some(mut jobs)) => {
                // By submit; tasks submitted together in the order they
                // ended (a stable sort).
                jobs.sort_by_key(|j| j.submit);
                let mut game = Coalitions::all(procs, SubSchedule::Fair, false);
                for j in jobs {
                    game.push_n(j.org as usize, j.submit, j.runtime, j.slots);
                }
                game.advance(at);
                let mut v = game.values(at).to_vec();
                let full = full_mask(k);
                v[full as usize] = psi.iter().sum();
                Some((0..k).map(|u| shapley_scaled(full, u, &v)).collect())
            }
            _ => None,
        };
        let n = fairsched_core::shapley::game::factorial(k.min(MAX_SIMULATE_ORGS)) as f64;
        let orgs = (0..k)
            .map(|u| {
                let ph = phi
                    .as_ref()
                    .map(|p| p[u] as f64 / n / fairsched_core::shapley::psi::UNITS_PER_S2);
                OrgLine {
                    org: u as u32,
                    name: format!("org{u}"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RunConfig, TraceInput};
    use crate::platform_file::PlatformFile;
    use fairsched_core::shapley::PsiMeter;
    use fairsched_core::shapley::psi::brute_force;
    use std::collections::BinaryHeap;
    use std::path::Path;

    /// Rigid jobs of two users, distinct submits (job, submit, run, procs,
    /// user): user 1's go to organization a (2 processors), user 2's to b
    /// (1 processor).
    const LOG: &str = "; MaxProcs: 3
1  0 0 30 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
2  1 0 20 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1
3  2 0 10 3 -1 -1 3 -1 -1 1 1 1 -1 -1 -1 -1 -1
4  5 0 25 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1
5  8 0 15 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
6 40 0  5 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1
";
    const PLATFORM: &str =
        "[[org]]\nname = \"a\"\nprocs = 2\nusers = [1]\n[[org]]\nname = \"b\"\nprocs = 1\nusers = [2]\n";

    fn config(phi: bool, window: Option<(i64, i64)>) -> RunConfig {
        let mut c = RunConfig::new(
            TraceInput::Bytes {
                name: "two-orgs.swf".into(),
                data: LOG.as_bytes(),
            },
            "fcfs".parse().unwrap(),
        );
        c.platform_file = Some(PlatformFile::parse(Path::new("two.toml"), PLATFORM).unwrap());
        c.phi = phi;
        c.window = window;
        c
    }

    /// One organization alone: its jobs as unit jobs (q processors = q
    /// jobs) in submit order, each started as soon as one of its `procs`
    /// processors is free; ψ at `t` by the definition.
    fn alone(jobs: &[(i64, i64, u32)], procs: usize, t: i64) -> Units {
        let mut free: BinaryHeap<std::cmp::Reverse<i64>> =
            (0..procs).map(|_| std::cmp::Reverse(i64::MIN)).collect();
        let mut runs = Vec::new();
        for &(submit, run, q) in jobs {
            for _ in 0..q {
                let std::cmp::Reverse(at) = free.pop().unwrap();
                let start = at.max(submit);
                runs.push((start, run));
                free.push(std::cmp::Reverse(start + run));
            }
        }
        brute_force(&runs, t)
    }

    #[test]
    fn phi_of_two_organizations_by_hand() {
        let c = config(true, None);
        let scan = c.trace.scan(false).unwrap();
        let done = c.execute(&scan, &mut fairsched_core::Fanout(vec![])).unwrap();
        let f = done.summary.fairness.unwrap();
        assert_eq!(f.note, None);
        let t = f.at_s as i64;
        // The real schedule's utilities are the grand coalition's value.
        let v_n: f64 = f.orgs.iter().map(|o| o.psi).sum();
        let v_a = seconds(alone(&[(0, 30, 2), (2, 10, 3), (8, 15, 2)], 2, t));
        let v_b = seconds(alone(&[(1, 20, 1), (5, 25, 1), (40, 5, 1)], 1, t));
        let phi_a = (v_a + v_n - v_b) / 2.0;
        let phi_b = (v_b + v_n - v_a) / 2.0;
        let got: Vec<f64> = f.orgs.iter().map(|o| o.phi.unwrap()).collect();
        assert!(
            (got[0] - phi_a).abs() < 1e-6 && (got[1] - phi_b).abs() < 1e-6,
            "{got:?} vs {phi_a}, {phi_b}"
        );
        assert!(((got[0] + got[1]) - v_n).abs() < 1e-6, "Σφ = Σψ");
        assert!(f.phi_gap_per_work_s.unwrap() > 0.0);

        // Not asked: the same ψ, no φ, and the note says how to get it.
        let done = config(false, None)
            .execute(&scan, &mut fairsched_core::Fanout(vec![]))
            .unwrap();
        let g = done.summary.fairness.unwrap();
        assert!(
            g.orgs
                .iter()
                .all(|o| o.phi.is_none() && o.phi_minus_psi.is_none())
        );
        assert_eq!(g.phi_gap_per_work_s, None);
        let note = g.note.clone().unwrap();
        assert!(
            note.contains("2 coalition schedules") && note.contains("--phi"),
            "{note}"
        );
        let psi = |f: &OrgFairness| f.orgs.iter().map(|o| o.psi).collect::<Vec<_>>();
        assert_eq!(psi(&f), psi(&g));
        assert_eq!(f.at_s, g.at_s);
    }

    /// ψ kept while tasks end equals ψ read after the fact from every run
    /// ([`PsiMeter`]), at a window's end (runs cut there, later ones left
    /// out) and at the run's last end: on the bundled KTH-SP2 log, three
    /// organizations.
    #[test]
    fn psi_as_tasks_end_equals_psi_after_the_fact() {
        let data: &'static [u8] = include_bytes!("../../../data/KTH-SP2-1996-2.1-cln.swf.gz");
        for window in [Some((600_000, 100_000)), None] {
            let mut c = RunConfig::new(
                TraceInput::Bytes {
                    name: "KTH-SP2-1996-2.1-cln.swf.gz".into(),
                    data,
                },
                "fair-share".parse().unwrap(),
            );
            c.orgs = 3;
            c.window = window;
            let scan = c.trace.scan(false).unwrap();
            let first = c.execute(&scan, &mut fairsched_core::Fanout(vec![])).unwrap();
            let f = first.summary.fairness.unwrap();
            let at = Time::from_millis((f.at_s * 1000.0) as i64);
            let mut meter = PsiMeter::new(3, at);
            c.execute(&scan, &mut meter).unwrap();
            let want = meter.psi();
            let got: Vec<f64> = f.orgs.iter().map(|o| o.psi).collect();
            assert_eq!(got, want, "window {window:?}");
            assert!(got.iter().all(|&p| p > 0.0));
        }
    }
}
