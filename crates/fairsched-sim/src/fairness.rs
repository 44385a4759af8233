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
//! - Over time ([`OrgFairness::over_time`], `simulate`'s `fairness.csv`):
//!   ψ (and φ when asked) at the first submit, then at about
//!   [`OVER_TIME_POINTS`] evenly spaced instants, and at the end instant
//!   (the summary's). The span is known only when the run is over (the
//!   first submit and the last end), and keeping every run would cost 24
//!   bytes a run, so ψ over time is kept on a grid of round instants
//!   (`PsiGrid`): each run adds the coefficients of its exact quadratic
//!   piece where it starts and ends (difference arrays over at most
//!   [`GRID_KEYS`] grid points, the grid's step growing by whole
//!   multiples as the span does: O(organizations) memory, O(1) per run). The instants are then grid points; ψ is 0 at the first
//!   submit (no run started before it) and the aggregators above give it
//!   at the end. φ reads the coalition schedules it replays anyway at
//!   each instant on the way to the last.
//!
//! The observer reads true runtimes (this is a metric, computed after the
//! fact, never shown to a policy).

use fairsched_core::shapley::{Coalitions, Psi, SubSchedule, Units, full_mask, seconds, shapley_scaled};
use fairsched_core::{EndRecord, Observer, Outcome, TaskMeta, Time};
use serde::Serialize;

/// Most organizations φ is computed for at the end of a run (2^k − 2
/// coalition schedules of the whole log).
pub const MAX_SIMULATE_ORGS: usize = 8;

/// Instants of [`OrgFairness::over_time`] between the first submit and
/// the end instant, at most (grid points evenly spaced: from about half
/// as many when the grid is coarse).
pub const OVER_TIME_POINTS: usize = 50;

/// One organization's utilities at one instant (a line of `fairness.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FairnessPoint {
    pub at: Time,
    pub org: u32,
    /// ψsp at `at`, s².
    pub psi: f64,
    /// Shapley value at `at`, s² (`None` when not computed).
    pub phi: Option<f64>,
}

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
    /// ψ (and φ) of every organization at the first submit, at up to
    /// [`OVER_TIME_POINTS`] evenly spaced instants after it and at `at_s`,
    /// instant by instant, organizations in index order; the last instant's
    /// lines are `orgs`' figures. Not in `summary.json`: `simulate` writes
    /// it as `fairness.csv`.
    #[serde(skip)]
    pub over_time: Vec<FairnessPoint>,
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

/// Grid points kept (for each organization), at most: the grid's step
/// grows when the runs span more.
pub const GRID_KEYS: usize = 1024;

/// ψ of every organization at grid instants `j · step` (ms), as
/// differences of the coefficients of `T², T, 1`: a run `(s, e)` of `n`
/// processors is worth `n·(T−s)(T−s+1 s)` at `s ≤ T < e` and
/// `n·(2p·T − 2p·s − p(p − 1 s))` (`p = e − s`) at `T ≥ e`
/// ([`fairsched_core::shapley::Psi`]'s pieces), so it adds the first
/// piece's coefficients at the first grid point ≥ s and takes them back
/// at the first ≥ e, where it adds the second's. Exact in integers at
/// every grid point. The points kept, `base .. base + len`, span every
/// run seen; when they would be more than `max_keys`, the step becomes a
/// whole multiple `r` of itself and each point `j` moves to `⌈j / r⌉`
/// (the first new point ≥ a time is the first new point ≥ the first old
/// point ≥ it).
#[derive(Clone, Debug)]
struct PsiGrid {
    step: i64,
    max_keys: usize,
    base: i64,
    len: usize,
    /// Per organization, `len` points from `base`.
    diffs: Vec<Vec<[i128; 3]>>,
}

/// `⌈a / b⌉` for `b > 0`.
fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// The grid step after `step` (ms): 1, 2, 10, 20, 100, 200 ms, 1, 2, 10,
/// 20 s, 1, 2, 10, 20 min, 1, 2, 6, 12 h, 1, 2, 10, 20 d, … each a whole
/// multiple of the one before.
fn next_step(step: i64) -> i64 {
    const STEPS: [i64; 32] = [
        1,
        2,
        10,
        20,
        100,
        200,
        1_000,
        2_000,
        10_000,
        20_000,
        60_000,
        120_000,
        600_000,
        1_200_000,
        3_600_000,
        7_200_000,
        21_600_000,
        43_200_000,
        86_400_000,
        172_800_000,
        864_000_000,
        1_728_000_000,
        8_640_000_000,
        17_280_000_000,
        86_400_000_000,
        172_800_000_000,
        864_000_000_000,
        1_728_000_000_000,
        8_640_000_000_000,
        17_280_000_000_000,
        86_400_000_000_000,
        172_800_000_000_000,
    ];
    match STEPS.iter().find(|&&x| x > step) {
        Some(&x) => x,
        None => step.saturating_mul(2),
    }
}

impl PsiGrid {
    fn new(max_keys: usize) -> PsiGrid {
        PsiGrid {
            step: 1,
            max_keys: max_keys.max(4),
            base: 0,
            len: 0,
            diffs: Vec::new(),
        }
    }

    /// Points `j` of the grid covering `s ..= e` (ms), coarser if needed.
    fn cover(&mut self, s: i64, e: i64) -> (i64, i64) {
        loop {
            let (j0, j1) = (ceil_div(s, self.step), ceil_div(e, self.step));
            let (lo, hi) = if self.len == 0 {
                (j0, j1)
            } else {
                (j0.min(self.base), j1.max(self.base + self.len as i64 - 1))
            };
            let span = (hi - lo + 1) as usize;
            if span > self.max_keys {
                self.coarsen();
                continue;
            }
            if self.len == 0 {
                self.base = lo;
            }
            if lo < self.base {
                // Room below, with some slack (starts earlier than all seen
                // come as long tasks end).
                let more = ((self.base - lo) as usize)
                    .max(self.len / 2)
                    .min(self.max_keys - self.len);
                for d in &mut self.diffs {
                    d.splice(0..0, std::iter::repeat_n([0; 3], more));
                }
                self.base -= more as i64;
                self.len += more;
            }
            let top = (hi - self.base + 1) as usize;
            if top > self.len {
                for d in &mut self.diffs {
                    d.resize(top, [0; 3]);
                }
                self.len = top;
            }
            return (j0, j1);
        }
    }

    /// The next step: points `j` move to `⌈j / r⌉`.
    fn coarsen(&mut self) {
        let next = next_step(self.step);
        let r = next / self.step;
        if self.len > 0 {
            let new_base = ceil_div(self.base, r);
            let new_len = (ceil_div(self.base + self.len as i64 - 1, r) - new_base + 1) as usize;
            for d in &mut self.diffs {
                let mut merged = vec![[0i128; 3]; new_len];
                for (i, c) in d.iter().enumerate() {
                    let m = &mut merged[(ceil_div(self.base + i as i64, r) - new_base) as usize];
                    for (x, y) in m.iter_mut().zip(c) {
                        *x += y;
                    }
                }
                *d = merged;
            }
            self.base = new_base;
            self.len = new_len;
        }
        self.step = next;
    }

    fn add_at(&mut self, org: usize, j: i64, c: [i128; 3]) {
        let cell = &mut self.diffs[org][(j - self.base) as usize];
        for (x, y) in cell.iter_mut().zip(c) {
            *x += y;
        }
    }

    /// A run from `s` to `e` (ms) of `n` processors of `org`.
    fn add(&mut self, org: usize, s: i64, e: i64, n: u32) {
        const SEC: i128 = 1000;
        let e = e.max(s);
        if org >= self.diffs.len() {
            let len = self.len;
            self.diffs.resize_with(org + 1, || vec![[0; 3]; len]);
        }
        let (j0, j1) = self.cover(s, e);
        let (si, p, n) = (i128::from(s), i128::from(e) - i128::from(s), i128::from(n));
        if j0 < j1 {
            let run = [n, n * (SEC - 2 * si), n * (si * si - SEC * si)];
            self.add_at(org, j0, run);
            self.add_at(org, j1, run.map(|x| -x));
        }
        self.add_at(org, j1, [0, 2 * p * n, n * (-2 * p * si - p * (p - SEC))]);
    }

    /// ψ of organizations `0..k` at grid points `js` (increasing):
    /// `[point][org]`.
    fn at(&self, js: &[i64], k: usize) -> Vec<Vec<Units>> {
        let mut out = vec![vec![0; k]; js.len()];
        for (u, d) in self.diffs.iter().enumerate().take(k) {
            let mut c = [0i128; 3];
            let mut next = 0usize;
            for (i, &j) in js.iter().enumerate() {
                while next < d.len() && self.base + next as i64 <= j {
                    for (x, y) in c.iter_mut().zip(d[next]) {
                        *x += y;
                    }
                    next += 1;
                }
                let t = i128::from(j) * i128::from(self.step);
                out[i][u] = c[0] * t * t + c[1] * t + c[2];
            }
        }
        out
    }
}

/// Collects a run's utilities (and, for φ, its tasks) for [`OrgFairness`].
#[derive(Clone, Debug)]
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
    /// ψ over time.
    grid: PsiGrid,
    /// The earliest submit.
    first: Option<Time>,
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
        self.first = Some(self.first.map_or(rec.submit, |f| f.min(rec.submit)));
        for a in rec.runs() {
            if self.at.is_none_or(|at| a.start <= at) {
                self.grid.add(o, a.start.millis(), a.stop.millis(), a.slots);
            }
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
            psi: Vec::new(),
            work_ms: 0,
            tasks: Vec::new(),
            last: Time::ZERO,
            jobs: phi.then(Vec::new),
            grid: PsiGrid::new(GRID_KEYS),
            first: None,
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
                 ask for it with --phi"
            ))
        } else {
            None
        };
        // The instants of `over_time`: the first submit (where ψ is 0),
        // grid points evenly spaced after it, and `at` (the summary's).
        let step = self.grid.step;
        let (instants, psi_over) = match self.first {
            Some(f) if f < at => {
                let span = at.millis() - f.millis();
                let stride = ceil_div(span, OVER_TIME_POINTS as i64 * step).max(1);
                let first_j = ceil_div(f.millis() + 1, step * stride) * stride;
                let js: Vec<i64> = (0..)
                    .map(|i| first_j + i * stride)
                    .take_while(|j| j.saturating_mul(step) < at.millis())
                    .collect();
                let mut instants = vec![f];
                instants.extend(js.iter().map(|j| Time::from_millis(j * step)));
                instants.push(at);
                let mut psi_over = vec![vec![0; k]];
                psi_over.extend(self.grid.at(&js, k));
                psi_over.push(psi.clone());
                (instants, psi_over)
            }
            _ => (vec![at], vec![psi.clone()]),
        };
        // φ · k! at every instant (the last one `at`'s).
        let phi_over: Option<Vec<Vec<Units>>> = match (&note, self.jobs) {
            (None, Some(mut jobs)) => {
                // By submit; tasks submitted together in the order they
                // ended (a stable sort).
                jobs.sort_by_key(|j| j.submit);
                let mut game = Coalitions::all(procs, SubSchedule::Fair, false);
                for j in jobs {
                    game.push_n(j.org as usize, j.submit, j.runtime, j.slots);
                }
                let full = full_mask(k);
                // Advanced instant by instant: decisions at an instant are
                // taken when time moves past it, so the schedules (and the
                // values at `at`) are those of one advance to `at`.
                let out = instants
                    .iter()
                    .zip(&psi_over)
                    .map(|(&t, psi_t)| {
                        game.advance(t);
                        let mut v = game.values(t).to_vec();
                        v[full as usize] = psi_t.iter().sum();
                        (0..k).map(|u| shapley_scaled(full, u, &v)).collect()
                    })
                    .collect();
                Some(out)
            }
            _ => None,
        };
        let n = fairsched_core::shapley::game::factorial(k.min(MAX_SIMULATE_ORGS)) as f64;
        let phi_s2 = |scaled: Units| scaled as f64 / n / fairsched_core::shapley::psi::UNITS_PER_S2;
        let phi = phi_over.as_ref().and_then(|p| p.last());
        let orgs = (0..k)
            .map(|u| {
                let ph = phi.map(|p| phi_s2(p[u]));
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
        let over_time = instants
            .iter()
            .enumerate()
            .flat_map(|(i, &t)| {
                let phi_i = phi_over.as_ref().map(|p| &p[i]);
                let psi_i = &psi_over[i];
                (0..k).map(move |u| FairnessPoint {
                    at: t,
                    org: u as u32,
                    psi: seconds(psi_i[u]),
                    phi: phi_i.map(|p| phi_s2(p[u])),
                })
            })
            .collect();
        let phi_gap_per_work_s = phi.and_then(|_| {
            let d: f64 = orgs.iter().filter_map(|o| o.phi_minus_psi).map(f64::abs).sum();
            (work > 0.0).then(|| d / work)
        });
        OrgFairness {
            at_s: at.as_secs_f64(),
            orgs,
            phi_gap_per_work_s,
            note,
            over_time,
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
            // Over time: ψ at an instant on the way, read after the fact.
            let mid = &f.over_time[f.over_time.len() / 2 / 3 * 3..][..3];
            let mut meter = PsiMeter::new(3, mid[0].at);
            c.execute(&scan, &mut meter).unwrap();
            let got: Vec<f64> = mid.iter().map(|p| p.psi).collect();
            assert_eq!(got, meter.psi(), "window {window:?}, at {:?}", mid[0].at);
            assert!(got.iter().all(|&p| p > 0.0) && got[0] < f.orgs[0].psi);
        }
    }

    /// ψ on the grid equals ψ by its definition at every grid point,
    /// runs added in any order (finished, running and not yet started at
    /// each point, several processors, two organizations), whether the
    /// step stays fine or grows (a few points allowed).
    #[test]
    fn psi_on_the_grid_is_psi_at_each_point() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let runs: Vec<(i64, i64, usize, u32)> = (0..300)
            .map(|_| {
                let s = next(10_000) as i64;
                (s, s + next(3000) as i64, next(2) as usize, 1 + next(4) as u32)
            })
            .collect();
        for max_keys in [GRID_KEYS, 16] {
            let mut g = PsiGrid::new(max_keys);
            for &(s, e, u, n) in &runs {
                g.add(u, s * 1000, e * 1000, n);
            }
            assert!(g.len <= max_keys && g.diffs.iter().all(|d| d.len() == g.len));
            if max_keys == 16 {
                assert!(g.step >= 600_000, "coarsened: {}", g.step);
            } else {
                // 13,000 s in at most 1024 points.
                assert_eq!(g.step, 20_000, "{}", g.step);
            }
            let js: Vec<i64> = (0..=40).map(|i| i * 14_000_000 / 40 / g.step).collect();
            let got = g.at(&js, 2);
            for (j, got) in js.iter().zip(&got) {
                let t = j * g.step;
                for (u, got) in got.iter().enumerate() {
                    let mut jobs = Vec::new();
                    for &(s, e, org, n) in &runs {
                        if org == u {
                            jobs.extend((0..n).map(|_| (s, e - s)));
                        }
                    }
                    assert_eq!(
                        *got,
                        brute_force(&jobs, t.div_euclid(1000)),
                        "t = {t} ms, org {u}"
                    );
                }
            }
        }
        // Steps grow by whole multiples; ceilings of negative times.
        let mut s = 1;
        for _ in 0..40 {
            let n = next_step(s);
            assert!(n > s && n % s == 0, "{s} → {n}");
            s = n;
        }
        assert_eq!((ceil_div(-5, 2), ceil_div(5, 2), ceil_div(4, 2)), (-2, 3, 2));
    }

    /// `over_time` runs from the first submit to the summary's instant,
    /// ψ never decreases, and its last instant's lines are the summary's
    /// ψ and φ to the bit: with and without --phi, with and without a
    /// window.
    #[test]
    fn fairness_over_time_ends_at_the_summary() {
        for (phi, window) in [(true, None), (false, None), (true, Some((0, 30)))] {
            let c = config(phi, window);
            let scan = c.trace.scan(false).unwrap();
            let done = c.execute(&scan, &mut fairsched_core::Fanout(vec![])).unwrap();
            let f = done.summary.fairness.unwrap();
            let k = f.orgs.len();
            assert_eq!(k, 2);
            let pts = &f.over_time;
            assert_eq!(pts.len() % k, 0);
            let n = pts.len() / k;
            assert!(
                (25..=OVER_TIME_POINTS + 2).contains(&n),
                "{n} instants, {phi} {window:?}"
            );
            assert_eq!(pts[0].at, Time::ZERO, "the first submit");
            assert_eq!(pts[pts.len() - 1].at.as_secs_f64(), f.at_s);
            for w in pts.windows(k + 1) {
                assert!(w[k].at > w[0].at && w[k].org == w[0].org);
                assert!(w[k].psi >= w[0].psi, "ψ never decreases: {w:?}");
            }
            for (p, o) in pts[pts.len() - k..].iter().zip(&f.orgs) {
                assert_eq!((p.org, p.psi, p.phi), (o.org, o.psi, o.phi));
                assert_eq!(p.phi.is_some(), phi);
            }
            if phi {
                // Σ φ = Σ ψ at every instant (the grand coalition's value).
                for ps in pts.chunks(k) {
                    let (a, b): (f64, f64) = (
                        ps.iter().map(|p| p.psi).sum(),
                        ps.iter().map(|p| p.phi.unwrap()).sum(),
                    );
                    assert!((a - b).abs() <= 1e-9 * a.max(1.0), "{ps:?}");
                }
            }
        }
    }
}
