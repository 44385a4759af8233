//! `workflow-fairness[tau=…,every=…]`: the Control of spec/workflow-fairness.md
//! (Algorithms 1 and 2). See the module docs of [`super`].

use crate::event::Notice;
use crate::ids::TaskId;
use crate::model::{Outcome, Phase};
use crate::point::{Control, ControlOut};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{TaskView, View};
use crate::time::Time;
use alloc::collections::{BTreeMap, BTreeSet};
use serde::{Deserialize, Serialize};

use super::eta::{ActivityKey, Eta, Tracker, delta, end_phases};

pub const NAME: &str = "workflow-fairness";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "raise waiting workflow tasks' priorities when the workflow unfairness η_u exceeds τ (workflow fairness control)",
    params: &[
        ParamDoc {
            name: "tau",
            default: "0.2",
            doc: "threshold τ_u on η_u, in [0, 1) (η_u lies in [0, 1]; τ ≥ 1 never acts)",
        },
        ParamDoc {
            name: "every",
            default: "0",
            doc: "0: act at every workflow task status change; otherwise act on a timer every `every` (s; or 3m, 1h, 250ms)",
        },
        ParamDoc {
            name: "reraise",
            default: "yes",
            doc: "yes: Algorithm 2 as printed, every waiting task at or below maxPriority may be raised, tasks raised before too; no: skip tasks this controller raised before",
        },
    ],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::control(from_params),
};

fn from_params(p: &Params) -> Result<Box<dyn Control>, SpecError> {
    let tau = p.f64("tau")?;
    // η_u lies in [0, 1]: with τ ≥ 1 the controller would never act.
    if !(0.0..1.0).contains(&tau) {
        return Err(SpecError::BadValue {
            policy: NAME.into(),
            key: "tau".into(),
            value: format!("{tau}"),
            reason: "must be in [0, 1) (η_u lies in [0, 1]; τ ≥ 1 never acts)".into(),
        });
    }
    let mut c = WorkflowFairness::new(tau, p.duration("every")?);
    c.reraise = p.choice("reraise", &["yes", "no"])? == "yes";
    Ok(Box::new(c))
}

fn yes() -> bool {
    true
}

/// The token of this Control's timers.
const TICK: u64 = 0;

/// What the Control keeps of a live workflow task.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Meta {
    key: ActivityKey,
    seq: u64,
    priority: i64,
    waiting: bool,
    /// This controller raised it before.
    #[serde(default)]
    raised: bool,
}

/// See the module docs of [`super`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkflowFairness {
    tau: f64,
    /// `Time::ZERO`: react at every status change; else the timer period.
    every: Time,
    /// Algorithm 2 as printed: tasks raised before may be raised again
    /// (`reraise=yes`); else they are skipped.
    #[serde(default = "yes")]
    reraise: bool,
    tracker: Tracker,
    #[serde(with = "crate::snapshot::sorted_map")]
    tasks: FxHashMap<TaskId, Meta>,
    /// Waiting tasks of each activity, oldest (`seq`) first.
    waiting: BTreeMap<ActivityKey, BTreeSet<(u64, TaskId)>>,
    /// Multiset of the priorities of live workflow tasks (maxPriority).
    priorities: BTreeMap<i64, u32>,
    /// A workflow task changed status since the last evaluation.
    dirty: bool,
    /// A timer is pending (timer mode).
    timer_pending: bool,
    changes: u64,
    evaluations: u64,
    last_eta: f64,
    /// A buffer `act` reuses (emptied at each use): not state.
    #[serde(skip)]
    scratch: Eta,
}

impl WorkflowFairness {
    /// `every == Time::ZERO` reacts at every status change of a workflow task.
    pub fn new(tau: f64, every: Time) -> WorkflowFairness {
        WorkflowFairness {
            tau,
            every,
            reraise: true,
            tracker: Tracker::new(),
            tasks: FxHashMap::default(),
            waiting: BTreeMap::new(),
            priorities: BTreeMap::new(),
            dirty: false,
            timer_pending: false,
            changes: 0,
            evaluations: 0,
            last_eta: 0.0,
            scratch: Eta::default(),
        }
    }

    /// Priority changes emitted so far.
    pub fn priority_changes(&self) -> u64 {
        self.changes
    }

    /// Times η_u was computed (one per reaction that looked).
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// η_u at the last evaluation.
    pub fn last_eta(&self) -> f64 {
        self.last_eta
    }

    /// The η_u state (read-only).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn add_priority(&mut self, p: i64) {
        *self.priorities.entry(p).or_insert(0) += 1;
    }

    fn remove_priority(&mut self, p: i64) {
        if let alloc::collections::btree_map::Entry::Occupied(mut e) = self.priorities.entry(p) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }

    fn set_priority(&mut self, task: TaskId, new: i64) {
        let Some(m) = self.tasks.get_mut(&task) else {
            return;
        };
        let old = core::mem::replace(&mut m.priority, new);
        self.remove_priority(old);
        self.add_priority(new);
    }

    fn set_waiting(&mut self, task: TaskId, waiting: bool) {
        let Some(m) = self.tasks.get_mut(&task) else {
            return;
        };
        if m.waiting == waiting {
            return;
        }
        m.waiting = waiting;
        let entry = (m.seq, task);
        let set = self.waiting.entry(m.key).or_default();
        if waiting {
            set.insert(entry);
        } else {
            set.remove(&entry);
            if set.is_empty() {
                self.waiting.remove(&m.key);
            }
        }
    }

    /// Algorithm 2 (when η_u > τ): raise the oldest Δ_ij waiting tasks of
    /// every activity far enough above W_min to maxPriority + 1.
    fn act(&mut self, now: Time, out: &mut ControlOut) {
        self.evaluations += 1;
        let mut eta = core::mem::take(&mut self.scratch);
        self.tracker.eta_into(now, &mut eta);
        self.last_eta = eta.eta_u;
        if eta.eta_u > self.tau
            && let Some((&max_priority, _)) = self.priorities.last_key_value()
        {
            let raised = max_priority.saturating_add(1);
            let first = out.priorities.len();
            for (i, wf) in eta.workflows.iter().enumerate() {
                if wf.w - eta.w_min <= self.tau {
                    continue;
                }
                for a in eta.activities_of(i) {
                    if a.w - eta.w_min <= self.tau {
                        continue;
                    }
                    let d = delta(a.q, a.r, a.p, a.t_hat, self.tau, eta.w_min) as usize;
                    let Some(queue) = self.waiting.get(&(a.workflow, a.activity)) else {
                        continue;
                    };
                    let tasks = &self.tasks;
                    out.priorities.extend(
                        queue
                            .iter()
                            .filter(|(_, t)| {
                                let m = &tasks[t];
                                m.priority <= max_priority && (self.reraise || !m.raised)
                            })
                            .take(d)
                            .map(|&(_, t)| (t, raised)),
                    );
                }
            }
            // The core does not tell a Control of its own changes.
            for i in first..out.priorities.len() {
                let (task, p) = out.priorities[i];
                self.set_priority(task, p);
                if let Some(m) = self.tasks.get_mut(&task) {
                    m.raised = true;
                }
                self.changes += 1;
            }
        }
        self.scratch = eta;
    }
}

/// The measured phase durations of a task that completes now, from the
/// view (delivered before the task is removed): finished phases, plus the
/// current one ending now; a task that reported no phase is one `exec`
/// phase of its whole run. The same values as `EndRecord::phases`.
fn phases_at_end(t: &TaskView, now: Time) -> [Time; 4] {
    let mut d = Phase::ALL.map(|p| t.phase_duration(p));
    if let Some((p, since)) = t.phase() {
        d[p as usize] = Some(now - since);
    }
    end_phases(d, t.elapsed())
}

impl Control for WorkflowFairness {
    snapshot_policy!(NAME, config: tau, every, reraise);
    fn gauges(&self, _view: &View, out: &mut Vec<crate::point::Gauge>) {
        let g = |name, help, value| crate::point::Gauge {
            name,
            help,
            key: None,
            value,
        };
        out.push(g(
            "eta_u",
            "Unfairness η_u = W_max − W_min at the last evaluation.",
            self.last_eta,
        ));
        out.push(g(
            "tau_u",
            "The threshold τ_u above which priorities change.",
            self.tau,
        ));
        out.push(g(
            "priority_changes",
            "Priorities the controller raised so far.",
            self.changes as f64,
        ));
        // `scratch` holds the last evaluation's terms (empty after a restore
        // until the next evaluation).
        for wf in &self.scratch.workflows {
            out.push(crate::point::Gauge {
                name: "workflow_w",
                help: "W_i of each workflow with an active activity, at the last evaluation (η_u = W_max − W_min).",
                key: Some(("workflow", i64::from(wf.workflow.0))),
                value: wf.w,
            });
        }
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        let now = view.now();
        match *n {
            Notice::Queued { task, .. } => {
                let Some(t) = view.task(task) else { return };
                let Some(wf) = t.spec().workflow() else { return };
                if self.tasks.contains_key(&task) {
                    return;
                }
                self.tracker.queued(task, wf.workflow, wf.activity);
                self.tasks.insert(
                    task,
                    Meta {
                        key: (wf.workflow, wf.activity),
                        seq: t.seq(),
                        priority: t.priority(),
                        waiting: false,
                        raised: false,
                    },
                );
                self.add_priority(t.priority());
                self.set_waiting(task, true);
                self.dirty = true;
            }
            Notice::Started { task, .. } if self.tasks.contains_key(&task) => {
                self.tracker.started(task, now);
                self.set_waiting(task, false);
                self.dirty = true;
            }
            Notice::Requeued { task, .. } if self.tasks.contains_key(&task) => {
                self.tracker.requeued(task);
                self.set_waiting(task, true);
                self.dirty = true;
            }
            Notice::PhaseStarted { task, phase } => {
                // Observed for t_u; not a status change.
                self.tracker.phase_started(task, phase, now);
            }
            Notice::Left {
                task,
                outcome,
                was_running,
                ..
            } if self.tasks.contains_key(&task) => {
                match view.task(task) {
                    Some(t) if outcome == Outcome::Completed && was_running => {
                        self.tracker.completed(task, phases_at_end(&t, now));
                    }
                    _ => self.tracker.left(task),
                }
                self.set_waiting(task, false);
                let m = self.tasks.remove(&task).expect("checked");
                self.remove_priority(m.priority);
                self.dirty = true;
            }
            Notice::PriorityChanged { task, new, .. } => self.set_priority(task, new),
            _ => {}
        }
    }

    fn react(&mut self, view: &View, _notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        let now = view.now();
        if self.every == Time::ZERO {
            if core::mem::take(&mut self.dirty) {
                self.act(now, out);
            }
            return;
        }
        // Timer mode (Algorithm 1's timeout): act only when the timer fires;
        // keep one pending while any workflow is active.
        if timers.contains(&TICK) {
            self.timer_pending = false;
            self.dirty = false;
            self.act(now, out);
        }
        if !self.timer_pending && !self.tracker.is_idle() {
            self.timer_pending = true;
            out.timers.push((now + self.every, TICK));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Kind, Registry};
    fn check(kind: Kind, spec: &crate::PolicySpec) -> Result<crate::Entry, crate::SpecError> {
        Registry::builtin().check(kind, spec).cloned()
    }
    fn build_control(spec: &crate::PolicySpec) -> Result<crate::ControlPolicy, crate::SpecError> {
        Registry::builtin().build_control(spec)
    }

    // End-to-end runs on the simulator: tests/core/workflow_fairness.rs (an
    // integration test, so it can name the types the harness takes).

    #[test]
    fn unknown_tasks_are_ignored_and_nothing_is_done_without_a_change() {
        use crate::state::{Platform, State};
        let mut c = WorkflowFairness::new(0.2, Time::ZERO);
        let st = State::new(&Platform::pool(1));
        let n = Notice::PriorityChanged {
            task: TaskId(1),
            old: 1,
            new: 5,
        };
        c.notify(&st.view(), &n);
        assert!(c.priorities.is_empty());
        let mut out = ControlOut::default();
        c.react(&st.view(), &[n], &[], &mut out);
        assert_eq!(out, ControlOut::default());
        assert_eq!((c.priority_changes(), c.evaluations(), c.last_eta()), (0, 0, 0.0));
        assert!(c.tracker().is_idle());
    }

    #[test]
    fn registry_builds_and_refuses_bad_params() {
        for s in [
            "workflow-fairness",
            "workflow-fairness[tau=0.3,every=180]",
            "workflow-fairness[tau=0,every=3m]",
            "workflow-fairness[reraise=no]",
        ] {
            check(Kind::Control, &s.parse().unwrap()).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        for (s, needle) in [
            ("workflow-fairness[tau=-0.1]", "[0, 1)"),
            ("workflow-fairness[tau=1]", "[0, 1)"),
            ("workflow-fairness[tau=NaN]", "number"),
            ("workflow-fairness[tau=high]", "number"),
            ("workflow-fairness[every=-5]", "duration"),
            ("workflow-fairness[every=soon]", "duration"),
            ("workflow-fairness[reraise=maybe]", "yes"),
            ("workflow-fairness[taux=1]", "tau, every, reraise"),
        ] {
            let e = build_control(&s.parse().unwrap())
                .err()
                .unwrap_or_else(|| panic!("{s} built"));
            assert!(e.to_string().contains(needle), "{s}: {e}");
        }
        let e = check(Kind::Order, &"workflow-fcfs".parse().unwrap()).unwrap();
        assert_eq!(e.name, super::super::fcfs::NAME);
        assert!(check(Kind::Order, &"workflow-fcfs[x=1]".parse().unwrap()).is_err());
        // The Control is not an Order, nor the Order a Control.
        assert!(check(Kind::Order, &"workflow-fairness".parse().unwrap()).is_err());
        assert!(check(Kind::Control, &"workflow-fcfs".parse().unwrap()).is_err());
    }
}
