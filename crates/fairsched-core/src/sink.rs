//! Where results go. Drivers push into an [`Observer`]; each output (run
//! metrics, a CSV file, a progress bar, a time-series, a Gantt chart) is one
//! implementation. The core itself never formats anything.

use crate::event::{Action, EndRecord, Event};
use crate::metrics::Metrics;
use crate::prelude::*;
use crate::state::View;
use crate::time::Time;

/// The platform's occupancy right after an instant's decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub time: Time,
    pub total_slots: u64,
    pub busy_slots: u64,
    pub waiting_tasks: u64,
    pub running_tasks: u64,
}

/// What the driver knows about a task and keeps from the core: outputs
/// may show it, policies never see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskMeta {
    /// The job the task came from (the SWF job number; the parts of a split
    /// parallel job share it).
    pub job: u64,
    /// Its true processing time, when the driver knows it (simulation).
    pub runtime: Option<Time>,
    /// The status the workload log gives its job (SWF field 11: 1
    /// completed, 0 failed, 5 cancelled, 2–4 partial, -1 unknown), when it
    /// came from a log: outputs count it ([`crate::metrics::LogStatusCounts`]).
    pub log_status: Option<i8>,
}

/// Receives what a run produces, in the order it happens. For each step
/// of the core: [`Observer::on_step`] with all its actions, then
/// [`Observer::on_task`] for each task that ended in it, then
/// [`Observer::on_sample`] if occupancy changed.
pub trait Observer {
    /// The core finished a step at `now`. `actions` are every action of the
    /// step, in order: starts and stops (with their machine), ends, timers,
    /// priority changes; `view` shows the state after it.
    fn on_step(&mut self, _now: Time, _actions: &[Action], _view: &View) {}
    /// A task left the platform (also among the step's actions, as
    /// [`Action::Ended`]), with what the driver knows of it.
    fn on_task(&mut self, _rec: &EndRecord, _meta: &TaskMeta) {}
    /// Occupancy changed.
    fn on_sample(&mut self, _s: &Sample) {}
    /// Called now and then with the virtual time and the number of tasks
    /// submitted so far (for progress bars).
    fn on_progress(&mut self, _now: Time, _submitted: u64) {}
    /// False when [`Observer::on_step`] does nothing: the driver then does
    /// not call it (asked once, before the run).
    fn wants_steps(&self) -> bool {
        true
    }
    /// The events the driver is about to hand the core in a step at `now`
    /// (submissions, completions, phase changes, cancellations, slots…),
    /// in order: what an observer needs to follow the platform as the
    /// scheduler sees it (the η_u series). Called only when
    /// [`Observer::wants_events`] says so.
    fn on_events(&mut self, _now: Time, _events: &[Event]) {}
    /// False (the default) when [`Observer::on_events`] does nothing
    /// (asked once, before the run).
    fn wants_events(&self) -> bool {
        false
    }
}

impl Observer for Metrics {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        self.record_task(rec, meta.log_status);
    }
    fn on_sample(&mut self, s: &Sample) {
        self.capacity(s.time, s.total_slots);
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn on_step(&mut self, now: Time, actions: &[Action], view: &View) {
        (**self).on_step(now, actions, view)
    }
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        (**self).on_task(rec, meta)
    }
    fn on_sample(&mut self, s: &Sample) {
        (**self).on_sample(s)
    }
    fn on_progress(&mut self, now: Time, submitted: u64) {
        (**self).on_progress(now, submitted)
    }
    fn wants_steps(&self) -> bool {
        (**self).wants_steps()
    }
    fn on_events(&mut self, now: Time, events: &[Event]) {
        (**self).on_events(now, events)
    }
    fn wants_events(&self) -> bool {
        (**self).wants_events()
    }
}

/// Fans out to several observers, in order. A sized value, so it can be
/// passed wherever a `&mut dyn Observer` is expected.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn on_step(&mut self, now: Time, actions: &[Action], view: &View) {
        for o in &mut self.0 {
            o.on_step(now, actions, view);
        }
    }
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        for o in &mut self.0 {
            o.on_task(rec, meta);
        }
    }
    fn on_sample(&mut self, s: &Sample) {
        for o in &mut self.0 {
            o.on_sample(s);
        }
    }
    fn on_progress(&mut self, now: Time, submitted: u64) {
        for o in &mut self.0 {
            o.on_progress(now, submitted);
        }
    }
    fn wants_steps(&self) -> bool {
        self.0.iter().any(|o| o.wants_steps())
    }
    fn on_events(&mut self, now: Time, events: &[Event]) {
        for o in &mut self.0 {
            o.on_events(now, events);
        }
    }
    fn wants_events(&self) -> bool {
        self.0.iter().any(|o| o.wants_events())
    }
}
