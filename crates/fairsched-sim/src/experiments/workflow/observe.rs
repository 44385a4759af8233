//! The η_u series of a run, from what the scheduler sees: an observer that
//! feeds the same [`Tracker`] the `workflow-fairness` Control uses with the
//! events handed to the core (submissions, phase changes) and its actions
//! (starts, requeues, ends), and samples η_u after every step. It works
//! the same whether or not a Control runs, so Fairness and No-Fairness are
//! measured alike.

use fairsched_core::policy::workflow_fairness::{Eta, Tracker, end_phases};
use fairsched_core::{Action, Event, Observer, Outcome, TaskId, Time, View, WorkflowRef};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

/// Workflow references the core does not see: tasks submitted without one
/// (so that no Control acts on them) but measured as workflows.
pub type Tags = Arc<Mutex<FxHashMap<TaskId, WorkflowRef>>>;

/// η_u after every step, and the priority changes of the run.
#[derive(Default)]
pub struct EtaSeries {
    tracker: Tracker,
    eta: Eta,
    /// (time, η_u): one sample per instant with a step, the value after
    /// its last step (μ weighs each sample by the time since the previous
    /// one, so samples are kept even when η_u did not change).
    pub series: Vec<(Time, f64)>,
    /// `Action::Priority` count.
    pub priority_changes: u64,
    /// The largest number of workflows active at once.
    pub max_active: usize,
    /// Measure the tasks of these tags only, not the core's references.
    tags: Option<Tags>,
}

impl EtaSeries {
    pub fn new() -> EtaSeries {
        EtaSeries::default()
    }
    /// η_u of the tasks `tags` names (filled by the world as it submits
    /// them), whatever workflow reference the core sees.
    pub fn of_tagged(tags: Tags) -> EtaSeries {
        EtaSeries {
            tags: Some(tags),
            ..EtaSeries::default()
        }
    }
    /// The tracker as it stands (tests).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }
    fn sample(&mut self, now: Time) {
        self.tracker.eta_into(now, &mut self.eta);
        self.max_active = self.max_active.max(self.eta.m);
        let v = self.eta.eta_u;
        match self.series.last_mut() {
            Some(last) if last.0 == now => last.1 = v,
            _ => self.series.push((now, v)),
        }
    }
}

impl Observer for EtaSeries {
    fn on_events(&mut self, now: Time, events: &[Event]) {
        for e in events {
            match e {
                Event::Submit(spec) => {
                    let w = match &self.tags {
                        Some(t) => t.lock().ok().and_then(|t| t.get(&spec.id).copied()),
                        None => spec.workflow,
                    };
                    if let Some(w) = w {
                        self.tracker.queued(spec.id, w.workflow, w.activity);
                    }
                }
                &Event::Phase { task, phase } => self.tracker.phase_started(task, phase, now),
                _ => {}
            }
        }
    }
    fn wants_events(&self) -> bool {
        true
    }
    fn on_step(&mut self, now: Time, actions: &[Action], _view: &View) {
        for a in actions {
            match a {
                &Action::Start { task, .. } => self.tracker.started(task, now),
                &Action::Stop {
                    task, requeued: true, ..
                } => self.tracker.requeued(task),
                Action::Ended(rec) => {
                    let id = rec.spec.id;
                    if rec.outcome == Outcome::Completed {
                        let run = rec.last.as_ref().map_or(Time::ZERO, |a| a.stop - a.start);
                        self.tracker.completed(id, end_phases(rec.phases, run));
                    } else {
                        self.tracker.left(id);
                    }
                }
                Action::Priority { .. } => self.priority_changes += 1,
                _ => {}
            }
        }
        self.sample(now);
    }
}
