//! Metric definitions for every run: per task wait, response, bounded
//! slowdown; per run makespan and utilization; aggregates per user and per
//! organization. Pure arithmetic over [`EndRecord`]s and capacity samples.

use crate::event::EndRecord;
use crate::ids::{OrgId, UserId};
use crate::model::Outcome;
use crate::prelude::*;
use crate::time::Time;
use alloc::collections::BTreeMap;
use serde::Serialize;

/// The bound τ of the bounded slowdown: runs shorter than this count as
/// this long, so tiny jobs do not dominate the mean.
pub const BSLD_BOUND: Time = Time::from_secs(10);

/// Metrics of one task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskMetrics {
    /// Start − submit (last start), if it started.
    pub wait: Option<Time>,
    /// End − submit.
    pub response: Time,
    /// End − start of the last attempt, if it started.
    pub run: Option<Time>,
    /// max(1, response / max(run, 10 s)), for completed tasks.
    pub bsld: Option<f64>,
    /// Time it held its slots over all runs.
    pub busy: Time,
}

impl TaskMetrics {
    pub fn of(r: &EndRecord) -> TaskMetrics {
        let start = r.start();
        let wait = start.map(|s| s - r.submit);
        let run = start.map(|s| r.end - s);
        let response = r.end - r.submit;
        let bsld = match (r.outcome, run) {
            (Outcome::Completed, Some(run)) => {
                let denom = run.max(BSLD_BOUND).millis() as f64;
                Some((response.millis() as f64 / denom).max(1.0))
            }
            _ => None,
        };
        TaskMetrics {
            wait,
            response,
            run,
            bsld,
            busy: r.busy(),
        }
    }
}

/// Sums over a set of tasks; means are over the tasks they apply to.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Aggregate {
    pub tasks: u64,
    pub completed: u64,
    pub started: u64,
    #[serde(skip)]
    sum_wait_ms: i128,
    #[serde(skip)]
    sum_response_ms: i128,
    #[serde(skip)]
    sum_bsld: f64,
    pub max_wait: f64,
    /// Slot-seconds held, over all attempts.
    pub slot_seconds: f64,
}

impl Aggregate {
    pub fn add(&mut self, r: &EndRecord, m: &TaskMetrics) {
        self.tasks += 1;
        if let Some(w) = m.wait {
            self.started += 1;
            self.sum_wait_ms += w.millis() as i128;
            self.max_wait = self.max_wait.max(w.as_secs_f64());
        }
        self.slot_seconds += m.busy.as_secs_f64() * r.spec.slots as f64;
        if let Some(b) = m.bsld {
            self.completed += 1;
            self.sum_response_ms += m.response.millis() as i128;
            self.sum_bsld += b;
        }
    }
    /// Mean wait of started tasks, seconds.
    pub fn mean_wait(&self) -> f64 {
        mean(self.sum_wait_ms as f64 / 1000.0, self.started)
    }
    /// Mean response of completed tasks, seconds.
    pub fn mean_response(&self) -> f64 {
        mean(self.sum_response_ms as f64 / 1000.0, self.completed)
    }
    /// Mean bounded slowdown of completed tasks.
    pub fn mean_bsld(&self) -> f64 {
        mean(self.sum_bsld, self.completed)
    }
}

fn mean(sum: f64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// Run-level metrics, fed with every ended task and every capacity change.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub all: Aggregate,
    pub by_user: BTreeMap<UserId, Aggregate>,
    pub by_org: BTreeMap<OrgId, Aggregate>,
    pub outcomes: BTreeMap<&'static str, u64>,
    pub first_submit: Option<Time>,
    pub last_end: Option<Time>,
    /// Slot-milliseconds occupied by any run (completed or stopped).
    busy_ms: i128,
    /// Capacity changes `(time, slots)`, in time order.
    capacity: Vec<(Time, u64)>,
}

impl Metrics {
    pub fn record(&mut self, r: &EndRecord) {
        let m = TaskMetrics::of(r);
        self.all.add(r, &m);
        self.by_user.entry(r.spec.user).or_default().add(r, &m);
        self.by_org.entry(r.spec.org).or_default().add(r, &m);
        *self.outcomes.entry(r.outcome.name()).or_insert(0) += 1;
        self.first_submit = Some(self.first_submit.map_or(r.submit, |f| f.min(r.submit)));
        self.last_end = Some(self.last_end.map_or(r.end, |l| l.max(r.end)));
        self.busy_ms += m.busy.millis() as i128 * r.spec.slots as i128;
    }
    /// The platform has `slots` present slots from `t` on.
    pub fn capacity(&mut self, t: Time, slots: u64) {
        match self.capacity.last_mut() {
            Some(&mut (_, s)) if s == slots => {}
            Some(last) if last.0 == t => last.1 = slots,
            _ => self.capacity.push((t, slots)),
        }
    }
    /// Last end − first submit.
    pub fn makespan(&self) -> Time {
        match (self.first_submit, self.last_end) {
            (Some(f), Some(l)) => l - f,
            _ => Time::ZERO,
        }
    }
    /// Occupied slot-time / available slot-time over [first submit, last end].
    pub fn utilization(&self) -> f64 {
        let (Some(from), Some(to)) = (self.first_submit, self.last_end) else {
            return 0.0;
        };
        let mut avail: i128 = 0;
        for (i, &(t, slots)) in self.capacity.iter().enumerate() {
            let next = self.capacity.get(i + 1).map_or(to, |&(n, _)| n);
            let (a, b) = (t.max(from), next.min(to));
            if b > a {
                avail += (b - a).millis() as i128 * slots as i128;
            }
        }
        if avail == 0 {
            0.0
        } else {
            self.busy_ms as f64 / avail as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Attempt, AttemptEnd};
    use crate::ids::{MachineId, SlotId};
    use crate::model::TaskSpec;

    fn rec(submit: i64, start: Option<i64>, end: i64, slots: u32, outcome: Outcome) -> EndRecord {
        let how = match outcome {
            Outcome::Completed => AttemptEnd::Completed,
            Outcome::Killed => AttemptEnd::Killed,
            _ => AttemptEnd::Failed,
        };
        EndRecord {
            spec: TaskSpec::new(1, 3, 2).slots(slots),
            submit: Time::from_secs(submit),
            end: Time::from_secs(end),
            outcome,
            machine: Some(MachineId(0)),
            requeued: Vec::new(),
            last: start.map(|s| Attempt {
                machine: MachineId(0),
                slot: SlotId(0),
                slots,
                start: Time::from_secs(s),
                stop: Time::from_secs(end),
                end: how,
            }),
            phases: [None; 4],
        }
    }

    #[test]
    fn bounded_slowdown_uses_the_ten_second_bound() {
        // 1 s run after 99 s wait: response 100, bound 10 → 10.
        let m = TaskMetrics::of(&rec(0, Some(99), 100, 1, Outcome::Completed));
        assert_eq!(m.bsld, Some(10.0));
        // 100 s run, no wait: 1.
        let m = TaskMetrics::of(&rec(0, Some(0), 100, 1, Outcome::Completed));
        assert_eq!(m.bsld, Some(1.0));
        // 2 s run, no wait: max(1, 2/10) = 1.
        assert_eq!(
            TaskMetrics::of(&rec(0, Some(0), 2, 1, Outcome::Completed)).bsld,
            Some(1.0)
        );
        assert_eq!(
            TaskMetrics::of(&rec(0, Some(0), 2, 1, Outcome::Killed)).bsld,
            None
        );
    }

    #[test]
    fn makespan_and_utilization() {
        let mut m = Metrics::default();
        m.capacity(Time::ZERO, 4);
        m.record(&rec(0, Some(0), 10, 2, Outcome::Completed));
        m.record(&rec(5, Some(10), 20, 4, Outcome::Completed));
        assert_eq!(m.makespan(), Time::from_secs(20));
        // busy = 2*10 + 4*10 = 60 of 4*20 = 80.
        assert!((m.utilization() - 0.75).abs() < 1e-12);
        assert_eq!(m.all.mean_wait(), 2.5);
        assert_eq!(m.by_org[&OrgId(2)].tasks, 2);
        // Capacity halves at t=10: available = 4*10 + 2*10 = 60 → 1.0.
        m.capacity(Time::from_secs(10), 2);
        assert!((m.utilization() - 1.0).abs() < 1e-12);
    }
}
