//! Where results go. Drivers push into an [`Observer`]; each output (run
//! metrics, a CSV file, a progress bar, a time-series) is one
//! implementation. The core itself never formats anything.

use crate::event::EndRecord;
use crate::metrics::Metrics;
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

/// Receives what a run produces.
pub trait Observer {
    /// A task left the platform. `runtime` is its true processing time when
    /// the driver knows it (simulation), for outputs only.
    fn on_task(&mut self, _rec: &EndRecord, _runtime: Option<Time>) {}
    /// Occupancy changed.
    fn on_sample(&mut self, _s: &Sample) {}
    /// Called now and then with the virtual time and the number of tasks
    /// submitted so far (for progress bars).
    fn on_progress(&mut self, _now: Time, _submitted: u64) {}
}

impl Observer for Metrics {
    fn on_task(&mut self, rec: &EndRecord, _runtime: Option<Time>) {
        self.record(rec);
    }
    fn on_sample(&mut self, s: &Sample) {
        self.capacity(s.time, s.total_slots);
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn on_task(&mut self, rec: &EndRecord, runtime: Option<Time>) {
        (**self).on_task(rec, runtime)
    }
    fn on_sample(&mut self, s: &Sample) {
        (**self).on_sample(s)
    }
    fn on_progress(&mut self, now: Time, submitted: u64) {
        (**self).on_progress(now, submitted)
    }
}

/// Fans out to several observers, in order. A sized value, so it can be
/// passed wherever a `&mut dyn Observer` is expected.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn on_task(&mut self, rec: &EndRecord, runtime: Option<Time>) {
        for o in &mut self.0 {
            o.on_task(rec, runtime);
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
}
