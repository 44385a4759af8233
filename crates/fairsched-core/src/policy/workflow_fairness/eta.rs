//! The fairness metric η_u of spec/workflow-fairness.md, computed by one
//! [`Tracker`] fed by plain calls, so the Control, the simulator's η_u time
//! series and the τ_u trace tool all share this code path; and the terms of
//! the formulas as pure functions ([`estimate_total`], [`p_factor`],
//! [`w_term`], [`delta`]) so they can be checked one by one.
//!
//! Hidden-runtime discipline: a running task's estimate t_u uses only the
//! time elapsed in its phases (measured by the caller's clock at the calls)
//! and the medians of completed tasks; no runtime is ever given to the
//! tracker.
//!
//! Tasks that report no phase at all (a workload without phase events) are
//! counted as one long `exec` phase: running, since their start; completed,
//! with their whole run as `exec` and 0 for the other phases. For a
//! phase-less activity this makes `t_u = max(elapsed, t̃)`.

use crate::ids::{TaskId, WorkflowId};
use crate::model::Phase;
use crate::prelude::*;
use crate::time::Time;
use alloc::collections::{BTreeMap, BTreeSet};
use core::ops::Range;
use serde::{Deserialize, Serialize};

use super::median::UpperMedian;

/// An activity: `(workflow, activity)`.
pub type ActivityKey = (WorkflowId, u32);

/// What the tracker knows of a running task's phases.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Run {
    start: Time,
    /// The phase it is in and since when.
    current: Option<(Phase, Time)>,
    /// Measured durations of its finished phases.
    done: [Option<Time>; 4],
}

impl Run {
    fn new(start: Time) -> Run {
        Run {
            start,
            current: None,
            done: [None; 4],
        }
    }
    /// `elapsed_in_phase` for each phase at `now`: finished phases their
    /// measured duration, the current one the time since it began, phases
    /// not started 0. A task that reported no phase is in `exec` since its
    /// start.
    fn elapsed(&self, now: Time) -> [Time; 4] {
        let mut e = self.done.map(|d| d.unwrap_or(Time::ZERO));
        match self.current {
            Some((p, since)) => e[p as usize] = now - since,
            None if self.done.iter().all(Option::is_none) => e[Phase::Exec as usize] = now - self.start,
            None => {}
        }
        e
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct TaskEntry {
    key: ActivityKey,
    run: Option<Run>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Activity {
    /// Waiting tasks (Q_ij).
    q: u32,
    /// Running tasks (R_ij = `running.len()`).
    running: BTreeSet<TaskId>,
    /// One median per phase, over the completed tasks.
    medians: [UpperMedian; 4],
    completed: u64,
}

impl Activity {
    fn is_active(&self) -> bool {
        self.q > 0 || !self.running.is_empty()
    }
    /// The four phase medians, once at least two tasks completed.
    fn medians(&self) -> Option<[Time; 4]> {
        if self.completed < 2 {
            return None;
        }
        let m = &self.medians;
        Some([m[0].get()?, m[1].get()?, m[2].get()?, m[3].get()?])
    }
}

/// The state behind η_u: per activity the waiting count Q, the running
/// tasks with their phase starts, the four phase medians of its completed
/// tasks and how many completed; per workflow how many of its activities
/// are active.
///
/// Calls for a task the tracker does not know (never `queued`, or gone) are
/// ignored, so a caller may forward every event of every task it sees
/// after filtering the workflow ones at `queued`.
///
/// Cost: each call is O(log) in the live tasks and activities; [`Tracker::eta`]
/// is proportional to the active activities plus their running tasks,
/// never to completed tasks or finished activities (medians are
/// incremental, active activities are kept in an index).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Tracker {
    #[serde(with = "crate::snapshot::sorted_map")]
    tasks: FxHashMap<TaskId, TaskEntry>,
    #[serde(with = "crate::snapshot::sorted_map")]
    activities: FxHashMap<ActivityKey, Activity>,
    /// Activities with ≥ 1 waiting or running task, in (workflow, activity)
    /// order.
    active: BTreeSet<ActivityKey>,
    /// Workflows with ≥ 1 active activity, with how many.
    workflows: BTreeMap<WorkflowId, u32>,
}

/// One active activity's terms at an instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActivityEta {
    pub workflow: WorkflowId,
    pub activity: u32,
    /// Waiting tasks Q_ij.
    pub q: u32,
    /// Running tasks R_ij.
    pub r: u32,
    /// t̃_ij, the sum of the four phase medians; `None` before two
    /// completions.
    pub t_tilde: Option<Time>,
    /// T̂_ij.
    pub t_hat: f64,
    /// max_u t_u over its running tasks; `None` when R = 0 or t̃ is undefined.
    pub max_t_u: Option<Time>,
    /// P_ij.
    pub p: f64,
    /// w_ij.
    pub w: f64,
}

/// One workflow with an active activity.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowEta {
    pub workflow: WorkflowId,
    /// W_i = max_j w_ij over its active activities.
    pub w: f64,
    /// Its active activities: a range of [`Eta::activities`].
    pub activities: Range<usize>,
}

/// η_u at an instant, with every term it was computed from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Eta {
    /// W_max − W_min; 0 when m ≤ 1.
    pub eta_u: f64,
    /// W_min over the m workflows (0 when m = 0).
    pub w_min: f64,
    /// W_max over the m workflows (0 when m = 0).
    pub w_max: f64,
    /// Workflows with an active activity.
    pub m: usize,
    /// The m workflows, in `WorkflowId` order.
    pub workflows: Vec<WorkflowEta>,
    /// Every active activity, in (workflow, activity) order.
    pub activities: Vec<ActivityEta>,
}

impl Eta {
    /// The active activities of `workflows[i]`.
    pub fn activities_of(&self, i: usize) -> &[ActivityEta] {
        &self.activities[self.workflows[i].activities.clone()]
    }
}

/// What the tracker holds for one activity (active or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActivityStats {
    pub q: u32,
    pub r: u32,
    pub completed: u64,
    /// Phase medians (setup, input, exec, output), once ≥ 2 completed.
    pub medians: Option<[Time; 4]>,
}

impl ActivityStats {
    /// t̃: the sum of the phase medians.
    pub fn t_tilde(&self) -> Option<Time> {
        self.medians.map(sum)
    }
}

fn sum(x: [Time; 4]) -> Time {
    x.iter().fold(Time::ZERO, |a, &b| a + b)
}

/// The phase durations [`Tracker::completed`] takes, from measured ones
/// (`EndRecord::phases`) and the length of the run: a phase not reported
/// is 0, and a task that reported none is one `exec` phase of `run` (the
/// rule the Control applies too, so both feed the same medians).
pub fn end_phases(phases: [Option<Time>; 4], run: Time) -> [Time; 4] {
    let mut d = phases.map(|p| p.unwrap_or(Time::ZERO));
    if phases.iter().all(Option::is_none) {
        d[Phase::Exec as usize] = run;
    }
    d
}

/// `t_u = Σ_phases max(elapsed_in_phase, t̃^phase)`.
pub fn estimate_total(elapsed: [Time; 4], medians: [Time; 4]) -> Time {
    (0..4).fold(Time::ZERO, |a, i| a + elapsed[i].max(medians[i]))
}

/// `P = 2 (1 − t_u / (t̃ + t_u))` for the largest t_u of the activity's
/// running tasks (t/(t̃+t) grows with t, so the max of the ratio is the
/// ratio of the max). `1` when `t̃ + t_u = 0`.
pub fn p_factor(t_tilde: Time, max_t_u: Time) -> f64 {
    let den = t_tilde.millis() as f64 + max_t_u.millis() as f64;
    if den <= 0.0 {
        return 1.0;
    }
    2.0 * (1.0 - max_t_u.millis() as f64 / den)
}

/// `w = Q / (Q + R·P) · T̂`, 0 when `Q = 0`.
pub fn w_term(q: u32, r: u32, p: f64, t_hat: f64) -> f64 {
    if q == 0 {
        return 0.0;
    }
    let q = f64::from(q);
    q / (q + f64::from(r) * p) * t_hat
}

/// `Δ = Q − ⌊(τ + W_min)(Q + R·P) / T̂⌋`, clamped to `[0, Q]` (0 when
/// `T̂ ≤ 0`: such an activity has w = 0 and is never selected).
pub fn delta(q: u32, r: u32, p: f64, t_hat: f64, tau: f64, w_min: f64) -> u32 {
    if t_hat <= 0.0 || t_hat.is_nan() {
        return 0;
    }
    let keep = libm::floor((tau + w_min) * (f64::from(q) + f64::from(r) * p) / t_hat);
    if keep.is_nan() || keep >= f64::from(q) {
        0
    } else if keep <= 0.0 {
        q
    } else {
        q - keep as u32
    }
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    fn activity(&mut self, key: ActivityKey) -> &mut Activity {
        self.activities.entry(key).or_default()
    }

    /// Keeps the active index and the per-workflow counts in step after
    /// `key`'s counts changed.
    fn refresh(&mut self, key: ActivityKey, was_active: bool) {
        let now_active = self.activities.get(&key).is_some_and(Activity::is_active);
        if now_active == was_active {
            return;
        }
        if now_active {
            self.active.insert(key);
            *self.workflows.entry(key.0).or_insert(0) += 1;
        } else {
            self.active.remove(&key);
            if let Some(n) = self.workflows.get_mut(&key.0) {
                *n -= 1;
                if *n == 0 {
                    self.workflows.remove(&key.0);
                }
            }
        }
    }

    /// A task of activity `activity` of `workflow` enters the queue. For a
    /// task already known: no change if it waits, [`Tracker::requeued`] if
    /// it runs.
    pub fn queued(&mut self, task: TaskId, workflow: WorkflowId, activity: u32) {
        if let Some(e) = self.tasks.get(&task) {
            if e.run.is_some() {
                self.requeued(task);
            }
            return;
        }
        let key = (workflow, activity);
        self.tasks.insert(task, TaskEntry { key, run: None });
        let a = self.activity(key);
        let was = a.is_active();
        a.q += 1;
        self.refresh(key, was);
    }

    /// A waiting task starts at `now`.
    pub fn started(&mut self, task: TaskId, now: Time) {
        let Some(e) = self.tasks.get_mut(&task) else {
            return;
        };
        if e.run.is_some() {
            return;
        }
        e.run = Some(Run::new(now));
        let a = self.activities.get_mut(&e.key).expect("tracked");
        a.q -= 1;
        a.running.insert(task);
    }

    /// A running task enters `phase` at `now` (the phase it was in, if any,
    /// is finished).
    pub fn phase_started(&mut self, task: TaskId, phase: Phase, now: Time) {
        let Some(run) = self.tasks.get_mut(&task).and_then(|e| e.run.as_mut()) else {
            return;
        };
        if let Some((cur, since)) = run.current {
            run.done[cur as usize] = Some(now - since);
        }
        run.current = Some((phase, now));
    }

    /// A running task goes back to waiting; what it did in this run is
    /// dropped.
    pub fn requeued(&mut self, task: TaskId) {
        let Some(e) = self.tasks.get_mut(&task) else {
            return;
        };
        if e.run.take().is_none() {
            return;
        }
        let a = self.activities.get_mut(&e.key).expect("tracked");
        a.running.remove(&task);
        a.q += 1;
    }

    /// A task completed with these measured phase durations (setup, input,
    /// exec, output), e.g. `EndRecord::phases` (a phase it did not report
    /// is 0): they join its activity's medians.
    pub fn completed(&mut self, task: TaskId, phases: [Time; 4]) {
        let Some(e) = self.tasks.remove(&task) else { return };
        let a = self.activities.get_mut(&e.key).expect("tracked");
        let was = a.is_active();
        if e.run.is_some() {
            a.running.remove(&task);
        } else {
            a.q -= 1;
        }
        for (m, &d) in a.medians.iter_mut().zip(&phases) {
            m.push(d);
        }
        a.completed += 1;
        self.refresh(e.key, was);
    }

    /// A running task completed at `now`: like [`Tracker::completed`] with
    /// the phase durations measured from the calls this tracker saw (the
    /// current phase ends now). A task that was not running is only
    /// removed, as by [`Tracker::left`].
    pub fn completed_at(&mut self, task: TaskId, now: Time) {
        match self
            .tasks
            .get(&task)
            .map(|e| e.run.as_ref().map(|r| r.elapsed(now)))
        {
            Some(Some(phases)) => self.completed(task, phases),
            Some(None) => self.left(task),
            None => {}
        }
    }

    /// A task left without completing (failed, killed, cancelled): removed,
    /// its durations are not medians.
    pub fn left(&mut self, task: TaskId) {
        let Some(e) = self.tasks.remove(&task) else { return };
        let a = self.activities.get_mut(&e.key).expect("tracked");
        let was = a.is_active();
        if e.run.is_some() {
            a.running.remove(&task);
        } else {
            a.q -= 1;
        }
        self.refresh(e.key, was);
    }

    /// Whether `task` is tracked (waiting or running).
    pub fn contains(&self, task: TaskId) -> bool {
        self.tasks.contains_key(&task)
    }

    /// The activity `task` belongs to, if tracked.
    pub fn activity_of(&self, task: TaskId) -> Option<ActivityKey> {
        self.tasks.get(&task).map(|e| e.key)
    }

    /// m: workflows with an active activity.
    pub fn active_workflows(&self) -> usize {
        self.workflows.len()
    }

    /// Whether no activity is active (no workflow task waits or runs).
    pub fn is_idle(&self) -> bool {
        self.active.is_empty()
    }

    /// Active activities, in (workflow, activity) order.
    pub fn active_activities(&self) -> impl Iterator<Item = ActivityKey> + '_ {
        self.active.iter().copied()
    }

    /// The counts and medians of an activity seen so far.
    pub fn stats(&self, workflow: WorkflowId, activity: u32) -> Option<ActivityStats> {
        self.activities.get(&(workflow, activity)).map(|a| ActivityStats {
            q: a.q,
            r: a.running.len() as u32,
            completed: a.completed,
            medians: a.medians(),
        })
    }

    /// t_u of a running task at `now`; `None` if it is not running or its
    /// activity has fewer than two completed tasks.
    pub fn t_u(&self, task: TaskId, now: Time) -> Option<Time> {
        let e = self.tasks.get(&task)?;
        let run = e.run.as_ref()?;
        let med = self.activities.get(&e.key)?.medians()?;
        Some(estimate_total(run.elapsed(now), med))
    }

    /// η_u at `now` with all its terms.
    pub fn eta(&self, now: Time) -> Eta {
        let mut out = Eta::default();
        self.eta_into(now, &mut out);
        out
    }

    /// [`Tracker::eta`] into a reused value (no allocation once its vectors
    /// have grown).
    pub fn eta_into(&self, now: Time, out: &mut Eta) {
        out.workflows.clear();
        out.activities.clear();
        // max t̃ over active activities with ≥ 2 completed tasks.
        let t_max = self
            .active
            .iter()
            .filter_map(|k| self.activities[k].medians().map(sum))
            .max();
        for &key in &self.active {
            let a = &self.activities[&key];
            let medians = a.medians();
            let t_tilde = medians.map(sum);
            let t_hat = match (t_tilde, t_max) {
                (Some(t), Some(max)) if max > Time::ZERO => t.millis() as f64 / max.millis() as f64,
                _ => 1.0,
            };
            let max_t_u = medians.and_then(|med| {
                a.running
                    .iter()
                    .map(|u| {
                        let run = self.tasks[u].run.as_ref().expect("running");
                        estimate_total(run.elapsed(now), med)
                    })
                    .max()
            });
            let r = a.running.len() as u32;
            let p = match (t_tilde, max_t_u) {
                (Some(t), Some(tu)) => p_factor(t, tu),
                _ => 1.0,
            };
            let w = w_term(a.q, r, p, t_hat);
            let i = out.activities.len();
            out.activities.push(ActivityEta {
                workflow: key.0,
                activity: key.1,
                q: a.q,
                r,
                t_tilde,
                t_hat,
                max_t_u,
                p,
                w,
            });
            match out.workflows.last_mut() {
                Some(wf) if wf.workflow == key.0 => {
                    wf.w = wf.w.max(w);
                    wf.activities.end = i + 1;
                }
                _ => out.workflows.push(WorkflowEta {
                    workflow: key.0,
                    w,
                    activities: i..i + 1,
                }),
            }
        }
        out.m = out.workflows.len();
        let ws = out.workflows.iter().map(|w| w.w);
        out.w_min = ws.clone().reduce(f64::min).unwrap_or(0.0);
        out.w_max = ws.reduce(f64::max).unwrap_or(0.0);
        out.eta_u = if out.m <= 1 { 0.0 } else { out.w_max - out.w_min };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WF1: WorkflowId = WorkflowId(1);
    const WF2: WorkflowId = WorkflowId(2);

    fn s(x: i64) -> Time {
        Time::from_secs(x)
    }

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    /// A running task of `wf`/activity 0 whose finished phases took
    /// `done` seconds and whose current phase (the next one) has been
    /// running `current` seconds at `now`.
    fn run_at(t: &mut Tracker, id: u64, wf: WorkflowId, now: Time, done: &[i64], current: i64) {
        let task = TaskId(id);
        t.queued(task, wf, 0);
        let start = now - s(done.iter().sum::<i64>() + current);
        t.started(task, start);
        let mut at = start;
        for (i, &d) in done.iter().enumerate() {
            t.phase_started(task, Phase::ALL[i], at);
            at += s(d);
        }
        t.phase_started(task, Phase::ALL[done.len()], at);
        assert_eq!(at + s(current), now);
    }

    /// The paper's Table 1, built at now = 100 s.
    fn table_1() -> (Tracker, Time) {
        let now = s(100);
        let mut t = Tracker::new();
        // Workflow 1: two completed tasks (phases in seconds).
        for (id, ph) in [(1, [2, 2, 4, 1]), (2, [1, 2, 3, 2])] {
            t.queued(TaskId(id), WF1, 0);
            t.started(TaskId(id), s(0));
            t.completed(TaskId(id), ph.map(s));
        }
        // Three running: 2,3,5,–; 2,2,–,–; 1,–,–,–.
        run_at(&mut t, 3, WF1, now, &[2, 3], 5);
        run_at(&mut t, 4, WF1, now, &[2], 2);
        run_at(&mut t, 5, WF1, now, &[], 1);
        // One waiting.
        t.queued(TaskId(6), WF1, 0);
        // Workflow 2: six waiting.
        for id in 11..17 {
            t.queued(TaskId(id), WF2, 0);
        }
        (t, now)
    }

    #[test]
    fn table_1_worked_example_term_by_term() {
        let (t, now) = table_1();
        let st = t.stats(WF1, 0).unwrap();
        assert_eq!((st.q, st.r, st.completed), (1, 3, 2));
        assert_eq!(st.medians, Some([s(2), s(2), s(4), s(2)]));
        assert_eq!(st.t_tilde(), Some(s(10)));
        assert_eq!(t.t_u(TaskId(3), now), Some(s(12)));
        assert_eq!(t.t_u(TaskId(4), now), Some(s(10)));
        assert_eq!(t.t_u(TaskId(5), now), Some(s(10)));
        assert_eq!(t.t_u(TaskId(6), now), None, "waiting");

        let eta = t.eta(now);
        assert_eq!(eta.m, 2);
        let a1 = eta.activities_of(0)[0];
        assert_eq!((a1.workflow, a1.q, a1.r), (WF1, 1, 3));
        assert_eq!(a1.t_tilde, Some(s(10)));
        assert_eq!(a1.t_hat, 1.0);
        assert_eq!(a1.max_t_u, Some(s(12)));
        let p = 2.0 * (1.0 - 12.0 / 22.0);
        assert!(close(a1.p, p, 1e-12) && close(a1.p, 0.909, 1e-3), "{}", a1.p);
        let w1 = 1.0 / (1.0 + 3.0 * p);
        assert!(close(a1.w, w1, 1e-12) && close(w1, 0.268, 1e-3), "{}", a1.w);
        let a2 = eta.activities_of(1)[0];
        assert_eq!((a2.workflow, a2.q, a2.r, a2.t_tilde), (WF2, 6, 0, None));
        assert_eq!((a2.t_hat, a2.p, a2.w), (1.0, 1.0, 1.0));
        assert!(close(eta.workflows[0].w, w1, 1e-12));
        assert_eq!(eta.workflows[1].w, 1.0);
        assert!(close(eta.w_min, w1, 1e-12));
        assert_eq!(eta.w_max, 1.0);
        assert!(close(eta.eta_u, 1.0 - w1, 1e-12) && close(eta.eta_u, 0.73, 5e-3));
        assert!(eta.eta_u > 0.2);
        // Δ_21 = 6 − ⌊(0.2 + 0.268)(6 + 0)/1⌋ = 6 − ⌊2.81⌋ = 4.
        assert_eq!(delta(6, 0, 1.0, 1.0, 0.2, eta.w_min), 4);
        // Workflow 1 is not above W_min + τ: not selected (and its Δ is 0).
        assert!(eta.workflows[0].w - eta.w_min <= 0.2);
        assert_eq!(delta(1, 3, p, 1.0, 0.2, eta.w_min), 0);
    }

    /// Why a short workflow arriving last (the paper's SimuBloch after
    /// three GATE) is lifted on arrival and then falls to W_min: before
    /// two of its tasks complete T̂ = 1, afterwards T̂ = t̃ / max t̃ is the
    /// ratio of its task duration to the long workflow's (27 s / 950 s).
    #[test]
    fn a_short_workflow_is_lifted_on_arrival_then_becomes_w_min() {
        let now = s(10_000);
        let mut t = Tracker::new();
        // The long workflow: 2 completed tasks of 950 s, 50 running at
        // about the median so far, 40 waiting.
        for id in 0..2 {
            t.queued(TaskId(id), WF1, 0);
            t.started(TaskId(id), s(0));
            t.completed(TaskId(id), [20, 10, 915, 5].map(s));
        }
        for id in 2..52 {
            run_at(&mut t, id, WF1, now, &[20, 10], 500);
        }
        for id in 52..92 {
            t.queued(TaskId(id), WF1, 0);
        }
        // The short workflow arrives: 25 waiting, nothing known.
        for id in 100..125 {
            t.queued(TaskId(id), WF2, 0);
        }
        let e = t.eta(now);
        let (long, short) = (e.workflows[0].w, e.workflows[1].w);
        assert_eq!(short, 1.0);
        assert!(short - e.w_min > 0.2 && long == e.w_min, "{long} {short}");
        // W_long = 40 / (40 + 50 · 1) = 4/9 (its running tasks are within
        // the medians: P = 1), so Δ = 25 − ⌊(0.2 + 4/9) · 25⌋ = 9.
        assert!(close(long, 4.0 / 9.0, 1e-12), "{long}");
        assert_eq!(delta(25, 0, 1.0, 1.0, 0.2, e.w_min), 9);
        // Two of its tasks ran (27 s each), three more run, 20 wait.
        for id in 100..102 {
            t.started(TaskId(id), now - s(27));
            t.completed(TaskId(id), [20, 2, 5, 0].map(s));
        }
        for id in 102..105 {
            run_at(&mut t, id, WF2, now, &[], 3);
        }
        let e = t.eta(now);
        let a = e.activities_of(1)[0];
        assert!(close(a.t_hat, 27.0 / 950.0, 1e-9), "{}", a.t_hat);
        assert!(e.workflows[1].w <= a.t_hat && e.workflows[1].w == e.w_min);
        // Now the long workflow is the one far above W_min: its tasks are
        // lifted, the short one's are not.
        assert!(e.workflows[0].w - e.w_min > 0.2);
        let l = e.activities_of(0)[0];
        assert!(delta(l.q, l.r, l.p, l.t_hat, 0.2, e.w_min) > 0);
        assert_eq!(delta(a.q, a.r, a.p, a.t_hat, 0.2, e.w_min), 0);
    }

    #[test]
    fn completed_at_measures_the_phases_it_saw() {
        // Same as completing with [2, 3, 5, 1] given explicitly.
        let mut a = Tracker::new();
        let mut b = Tracker::new();
        for t in [&mut a, &mut b] {
            t.queued(TaskId(1), WF1, 0);
            t.started(TaskId(1), s(10));
            for (p, at) in Phase::ALL.iter().zip([10, 12, 15, 20]) {
                t.phase_started(TaskId(1), *p, s(at));
            }
        }
        a.completed_at(TaskId(1), s(21));
        b.completed(TaskId(1), [2, 3, 5, 1].map(s));
        assert_eq!(a.stats(WF1, 0), b.stats(WF1, 0));
        assert_eq!(a.stats(WF1, 0).unwrap().completed, 1);
        // Phase-less tasks count as one exec phase.
        a.queued(TaskId(2), WF1, 0);
        a.started(TaskId(2), s(30));
        a.completed_at(TaskId(2), s(37));
        let st = a.stats(WF1, 0).unwrap();
        assert_eq!(st.medians, Some([s(2), s(3), s(7), s(1)]));
        a.queued(TaskId(3), WF1, 0);
        a.started(TaskId(3), s(40));
        // max(0,2) + max(0,3) + max(9,7) + max(0,1)
        assert_eq!(a.t_u(TaskId(3), s(49)), Some(s(15)));
        // The same rule for end records.
        assert_eq!(end_phases([None; 4], s(7)), [0, 0, 7, 0].map(s));
        assert_eq!(
            end_phases([Some(s(2)), None, Some(s(5)), None], s(9)),
            [2, 0, 5, 0].map(s)
        );
    }

    #[test]
    fn t_hat_and_p_are_1_before_two_completions_and_p_is_1_without_running() {
        let mut t = Tracker::new();
        t.queued(TaskId(1), WF1, 0);
        t.queued(TaskId(2), WF1, 0);
        t.queued(TaskId(3), WF1, 0);
        t.started(TaskId(1), s(0));
        t.completed(TaskId(1), [1, 1, 1, 1].map(s));
        t.started(TaskId(2), s(5));
        let e = t.eta(s(100));
        let a = e.activities[0];
        // One completion: t̃ undefined, T̂ = P = 1 although a task runs.
        assert_eq!((a.t_tilde, a.t_hat, a.p, a.max_t_u), (None, 1.0, 1.0, None));
        assert_eq!(a.w, 1.0 / 2.0);
        // Two completions, nothing running: P = 1.
        t.completed(TaskId(2), [1, 1, 1, 1].map(s));
        let a = t.eta(s(100)).activities[0];
        assert_eq!((a.t_tilde, a.r, a.p, a.w), (Some(s(4)), 0, 1.0, 1.0));
        assert_eq!(p_factor(Time::ZERO, Time::ZERO), 1.0);
    }

    #[test]
    fn t_hat_is_relative_to_the_longest_active_activity() {
        let mut t = Tracker::new();
        for (wf, d) in [(WF1, 2), (WF2, 8)] {
            for id in 0..3 {
                let task = TaskId(u64::from(wf.0) * 10 + id);
                t.queued(task, wf, 0);
                if id < 2 {
                    t.completed(task, [0, 0, d, 0].map(s));
                }
            }
        }
        let e = t.eta(s(0));
        assert_eq!(e.activities[0].t_hat, 0.25);
        assert_eq!(e.activities[1].t_hat, 1.0);
        assert_eq!((e.w_min, e.w_max, e.eta_u), (0.25, 1.0, 0.75));
        // Workflow 2 no longer active: workflow 1 is the longest.
        t.left(TaskId(22));
        let e = t.eta(s(0));
        assert_eq!((e.m, e.activities[0].t_hat, e.eta_u), (1, 1.0, 0.0));
        // Its medians remain for when it is active again.
        assert_eq!(t.stats(WF2, 0).unwrap().t_tilde(), Some(s(8)));
    }

    #[test]
    fn delta_is_clamped_to_0_and_q() {
        // (τ + W_min)(Q + RP)/T̂ ≥ Q: nothing to raise.
        assert_eq!(delta(5, 5, 1.0, 1.0, 0.2, 0.5), 0);
        // Tiny T̂ makes the kept share huge: 0, never negative.
        assert_eq!(delta(5, 0, 1.0, 1e-9, 0.2, 0.0), 0);
        // τ = W_min = 0: every waiting task.
        assert_eq!(delta(7, 3, 0.5, 1.0, 0.0, 0.0), 7);
        assert_eq!(delta(0, 3, 0.5, 1.0, 0.0, 0.0), 0);
        assert_eq!(delta(4, 0, 1.0, 0.0, 0.2, 0.0), 0);
        assert_eq!(delta(4, 0, 1.0, f64::NAN, 0.2, 0.0), 0);
    }

    #[test]
    fn a_new_workflow_gets_w_1_and_eta_is_0_for_one_workflow() {
        let mut t = Tracker::new();
        assert_eq!(t.eta(s(0)), Eta::default());
        t.queued(TaskId(1), WF1, 0);
        t.queued(TaskId(2), WF1, 1);
        t.started(TaskId(1), s(0));
        let e = t.eta(s(10));
        assert_eq!((e.m, e.eta_u), (1, 0.0));
        assert_eq!(e.workflows[0].activities, 0..2);
        // Activity 0: Q = 0 → w = 0; activity 1: w = 1; W_1 = 1.
        assert_eq!(e.workflows[0].w, 1.0);
        t.queued(TaskId(3), WF2, 0);
        let e = t.eta(s(10));
        assert_eq!((e.m, e.workflows[1].w), (2, 1.0));
        assert_eq!(e.eta_u, 0.0);
        t.requeued(TaskId(1));
        assert_eq!(t.stats(WF1, 0).unwrap().q, 1);
        t.left(TaskId(1));
        t.left(TaskId(2));
        assert_eq!(t.active_workflows(), 1);
        t.completed(TaskId(3), [Time::ZERO; 4]);
        assert!(t.is_idle());
        assert_eq!(t.eta(s(10)), Eta::default());
    }

    // Against a model that recomputes everything from scratch.
    #[derive(Clone, Debug)]
    enum Op {
        Queue(u64, u32, u32),
        Start(u64),
        Phase(u64, u8),
        Requeue(u64),
        Complete(u64),
        Leave(u64),
        Tick(i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..30, 0u32..3, 0u32..2).prop_map(|(t, w, a)| Op::Queue(t, w, a)),
            (0u64..30).prop_map(Op::Start),
            (0u64..30, 0u8..4).prop_map(|(t, p)| Op::Phase(t, p)),
            (0u64..30).prop_map(Op::Requeue),
            (0u64..30).prop_map(Op::Complete),
            (0u64..30).prop_map(Op::Leave),
            (1i64..5000).prop_map(Op::Tick),
        ]
    }

    /// A run: its start and its phase log `(phase, since)`.
    type ModelRun = (Time, Vec<(u8, Time)>);

    #[derive(Clone, Debug, Default)]
    struct Model {
        // task → (key, its run if running), while live
        live: BTreeMap<u64, (ActivityKey, Option<ModelRun>)>,
        done: BTreeMap<ActivityKey, Vec<[Time; 4]>>,
    }

    impl Model {
        fn elapsed(start: Time, log: &[(u8, Time)], now: Time) -> [Time; 4] {
            let mut e = [Time::ZERO; 4];
            if log.is_empty() {
                e[2] = now - start;
            }
            for (i, &(p, at)) in log.iter().enumerate() {
                let end = log.get(i + 1).map_or(now, |x| x.1);
                e[p as usize] = end - at;
            }
            e
        }
        fn median(mut v: Vec<Time>) -> Time {
            v.sort();
            v[v.len() / 2]
        }
        fn eta(&self, now: Time) -> (usize, f64) {
            let mut acts: BTreeMap<ActivityKey, (u32, Vec<[Time; 4]>)> = BTreeMap::new();
            for (key, run) in self.live.values() {
                let e = acts.entry(*key).or_default();
                match run {
                    None => e.0 += 1,
                    Some((start, log)) => e.1.push(Self::elapsed(*start, log, now)),
                }
            }
            let med = |k: &ActivityKey| -> Option<[Time; 4]> {
                let d = self.done.get(k).filter(|d| d.len() >= 2)?;
                Some([0, 1, 2, 3].map(|i| Self::median(d.iter().map(|x| x[i]).collect())))
            };
            let t_max = acts.keys().filter_map(|k| med(k).map(sum)).max();
            let mut ws: BTreeMap<WorkflowId, f64> = BTreeMap::new();
            for (k, (q, running)) in &acts {
                let m = med(k);
                let t_hat = match (m, t_max) {
                    (Some(m), Some(x)) if x > Time::ZERO => sum(m).millis() as f64 / x.millis() as f64,
                    _ => 1.0,
                };
                let p = match m {
                    Some(m) if !running.is_empty() => {
                        let tu = running.iter().map(|e| estimate_total(*e, m)).max().unwrap();
                        p_factor(sum(m), tu)
                    }
                    _ => 1.0,
                };
                let w = w_term(*q, running.len() as u32, p, t_hat);
                let e = ws.entry(k.0).or_insert(0.0);
                *e = e.max(w);
            }
            let m = ws.len();
            if m <= 1 {
                return (m, 0.0);
            }
            let max = ws.values().copied().fold(f64::MIN, f64::max);
            let min = ws.values().copied().fold(f64::MAX, f64::min);
            (m, max - min)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn incremental_eta_matches_a_recomputation(ops in proptest::collection::vec(op(), 1..150)) {
            let mut t = Tracker::new();
            let mut m = Model::default();
            let mut now = Time::ZERO;
            for o in ops {
                match o {
                    Op::Queue(id, w, a) => {
                        if let alloc::collections::btree_map::Entry::Vacant(e) = m.live.entry(id) {
                            e.insert(((WorkflowId(w), a), None));
                            t.queued(TaskId(id), WorkflowId(w), a);
                        }
                    }
                    Op::Start(id) => {
                        if let Some(e) = m.live.get_mut(&id).filter(|e| e.1.is_none()) {
                            e.1 = Some((now, Vec::new()));
                            t.started(TaskId(id), now);
                        }
                    }
                    Op::Phase(id, p) => {
                        if let Some((_, Some((_, log)))) = m.live.get_mut(&id) {
                            log.push((p, now));
                            t.phase_started(TaskId(id), Phase::ALL[p as usize], now);
                        }
                    }
                    Op::Requeue(id) => {
                        if let Some(e) = m.live.get_mut(&id).filter(|e| e.1.is_some()) {
                            e.1 = None;
                            t.requeued(TaskId(id));
                        }
                    }
                    Op::Complete(id) => {
                        if let Some((key, Some((start, log)))) = m.live.get(&id).cloned() {
                            m.live.remove(&id);
                            m.done.entry(key).or_default().push(Model::elapsed(start, &log, now));
                            t.completed_at(TaskId(id), now);
                        }
                    }
                    Op::Leave(id) => {
                        if m.live.remove(&id).is_some() {
                            t.left(TaskId(id));
                        }
                    }
                    Op::Tick(d) => now += Time(d),
                }
                let e = t.eta(now);
                let (mm, eta) = m.eta(now);
                prop_assert_eq!(e.m, mm);
                prop_assert_eq!(t.active_workflows(), mm);
                prop_assert!((e.eta_u - eta).abs() < 1e-12, "{} vs {}", e.eta_u, eta);
            }
        }
    }
}
