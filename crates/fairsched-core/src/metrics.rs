//! Metric definitions for every run: per task wait, response, bounded
//! slowdown; per run makespan, utilization, percentiles and Jain's
//! fairness index; aggregates per user and per organization, and each
//! organization's share of the processor time. Pure arithmetic over
//! [`EndRecord`]s and capacity samples.
//!
//! Definitions (the `definitions` object of `summary.json` says the same):
//!
//! - **wait** = start − submit (of the last start), over tasks that started;
//! - **response** = end − submit, over completed tasks;
//! - **bounded slowdown** = max(1, response / max(run, τ)), τ = 10 s
//!   ([`BSLD_BOUND`]), run = end − start of the last run, over completed
//!   tasks;
//! - **percentiles**, nearest rank ([`nearest_rank`]): pP of n values is
//!   the ⌈P·n/100⌉-th smallest; none when n = 0;
//! - **Jain's index** ([`jain`]) J = (Σx)² / (n·Σx²) over n values x:
//!   1 when all are equal, down to 1/n when one takes everything; 1 when
//!   n = 1, none when n = 0.

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

/// The percentiles every run reports.
pub const PERCENTILES: [u32; 3] = [50, 90, 99];

/// The nearest rank of the `p`-th percentile of `n` values: ⌈p·n/100⌉,
/// 1-based, clamped to 1..=n (the percentile is the value of that rank in
/// ascending order). `None` when `n` is 0.
pub fn nearest_rank(n: usize, p: u32) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let r = (p as u128 * n as u128).div_ceil(100);
    Some((r as usize).clamp(1, n))
}

/// A distribution's summary: nearest-rank percentiles p50, p90, p99 and
/// the maximum, over `n` values (all `None` when `n` is 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    pub n: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// Values kept for their percentiles, each as an `f32`: 4 bytes per
/// value (plus the `Vec`'s growth slack, under 2×), sorted only once, at
/// the end, by three `select_nth_unstable` calls (O(n)). An `f32` holds
/// every whole number of seconds below 2²⁴ s (194 days) exactly, and 7
/// significant digits otherwise; the maximum is kept exactly beside.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    values: Vec<f32>,
    max: Option<f64>,
}

impl Samples {
    pub fn push(&mut self, x: f64) {
        self.values.push(x as f32);
        self.max = Some(self.max.map_or(x, |m| m.max(x)));
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// p50, p90, p99 (nearest rank) and max. Reorders the values (they
    /// stay the same multiset).
    pub fn distribution(&mut self) -> Distribution {
        let n = self.values.len();
        let mut p = [None; 3];
        // Largest rank first: each smaller rank is then selected within
        // the part left of the previous one.
        let mut upto = n;
        for (i, &q) in PERCENTILES.iter().enumerate().rev() {
            let Some(r) = nearest_rank(n, q) else { break };
            let (_, v, _) = self.values[..upto].select_nth_unstable_by(r - 1, f32::total_cmp);
            // Never above the exact maximum (an f32 may round up).
            p[i] = Some(widen(*v).min(self.max.unwrap_or(f64::INFINITY)));
            upto = r;
        }
        Distribution {
            n: n as u64,
            p50: p[0],
            p90: p[1],
            p99: p[2],
            max: self.max,
        }
    }
}

/// An `f32` as the `f64` of its shortest decimal form (0.1f32 → 0.1, not
/// 0.10000000149011612), so outputs show the value that was kept.
fn widen(x: f32) -> f64 {
    format!("{x}").parse().unwrap_or(x as f64)
}

/// The percentiles of a run's wait (started tasks), response and bounded
/// slowdown (completed tasks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Distributions {
    pub wait_s: Distribution,
    pub response_s: Distribution,
    pub bounded_slowdown: Distribution,
}

/// Jain's fairness index J = (Σx)² / (n·Σx²) of `xs`: 1 when all are
/// equal, down to 1/n for non-negative values when one alone is non-zero.
/// `None` for no value; 1 for one value or for values all zero.
pub fn jain(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut n, mut sum, mut sum_sq) = (0u64, 0.0f64, 0.0f64);
    for x in xs {
        n += 1;
        sum += x;
        sum_sq += x * x;
    }
    match n {
        0 => None,
        1 => Some(1.0),
        _ if sum_sq == 0.0 => Some(1.0),
        // Equal values may round a hair above 1.
        _ => Some((sum * sum / (n as f64 * sum_sq)).min(1.0)),
    }
}

/// Jain's index over a population, with the number of members it is over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct JainIndex {
    pub index: Option<f64>,
    pub n: u64,
}

/// One organization's processors and processor time: what it owns against
/// what its tasks received.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OrgShare {
    pub org: u32,
    /// Processors it owns.
    pub procs: u32,
    /// Its processors / all processors (`None` when there are none).
    pub owned_share: Option<f64>,
    /// Processor-seconds its tasks held, over all their runs.
    pub slot_seconds: f64,
    /// Its processor-seconds / every task's (`None` when no task ran).
    pub received_share: Option<f64>,
}

/// SWF status codes (field 11) the outputs name.
pub mod swf_status {
    pub const FAILED: i8 = 0;
    pub const COMPLETED: i8 = 1;
    pub const CANCELLED: i8 = 5;
}

/// Tasks by the status the workload log gives their job (SWF field 11):
/// what happened to the job in the real system, not in the simulation
/// (which runs every job its logged runtime). `other` counts any other
/// status (2–4: partial executions, -1: unknown) and tasks that did not
/// come from a log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogStatusCounts {
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub other: u64,
}

impl LogStatusCounts {
    pub fn add(&mut self, status: Option<i8>) {
        match status {
            Some(swf_status::COMPLETED) => self.completed += 1,
            Some(swf_status::FAILED) => self.failed += 1,
            Some(swf_status::CANCELLED) => self.cancelled += 1,
            _ => self.other += 1,
        }
    }
}

/// Run-level metrics, fed with every ended task and every capacity change.
///
/// Memory: the aggregates are per user and per organization; the
/// percentiles need every value ([`Samples`]): 12 bytes per completed task
/// (wait, response, bounded slowdown as `f32`), 4 per task that started
/// and did not complete.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub all: Aggregate,
    pub by_user: BTreeMap<UserId, Aggregate>,
    pub by_org: BTreeMap<OrgId, Aggregate>,
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Tasks by their job's status in the log (see [`Metrics::record_task`]).
    pub log_status: LogStatusCounts,
    pub first_submit: Option<Time>,
    pub last_end: Option<Time>,
    /// Slot-milliseconds occupied by any run (completed or stopped).
    busy_ms: i128,
    /// Capacity changes `(time, slots)`, in time order.
    capacity: Vec<(Time, u64)>,
    /// The organizations each user's tasks belonged to, ascending (one in
    /// every run the CLI makes).
    user_orgs: BTreeMap<UserId, Vec<OrgId>>,
    wait: Samples,
    response: Samples,
    bsld: Samples,
}

impl Metrics {
    pub fn record(&mut self, r: &EndRecord) {
        let m = TaskMetrics::of(r);
        self.all.add(r, &m);
        self.by_user.entry(r.spec.user).or_default().add(r, &m);
        self.by_org.entry(r.spec.org).or_default().add(r, &m);
        let orgs = self.user_orgs.entry(r.spec.user).or_default();
        if let Err(i) = orgs.binary_search(&r.spec.org) {
            orgs.insert(i, r.spec.org);
        }
        *self.outcomes.entry(r.outcome.name()).or_insert(0) += 1;
        self.first_submit = Some(self.first_submit.map_or(r.submit, |f| f.min(r.submit)));
        self.last_end = Some(self.last_end.map_or(r.end, |l| l.max(r.end)));
        self.busy_ms += m.busy.millis() as i128 * r.spec.slots as i128;
        if let Some(w) = m.wait {
            self.wait.push(w.as_secs_f64());
        }
        if let Some(b) = m.bsld {
            self.response.push(m.response.as_secs_f64());
            self.bsld.push(b);
        }
    }
    /// [`Metrics::record`], and the log status of the task's job (what the
    /// driver kept in `log_status`; `None` for a task not from a log).
    pub fn record_task(&mut self, r: &EndRecord, log_status: Option<i8>) {
        self.record(r);
        self.log_status.add(log_status);
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
    /// Percentiles and maxima of wait, response and bounded slowdown (see
    /// [`Samples::distribution`]). Cheap to call again.
    pub fn distributions(&mut self) -> Distributions {
        Distributions {
            wait_s: self.wait.distribution(),
            response_s: self.response.distribution(),
            bounded_slowdown: self.bsld.distribution(),
        }
    }
    /// Frees the values kept for the percentiles (after
    /// [`Metrics::distributions`]).
    pub fn drop_samples(&mut self) {
        self.wait = Samples::default();
        self.response = Samples::default();
        self.bsld = Samples::default();
    }
    /// Jain's index over the mean bounded slowdowns of the users with a
    /// completed task.
    pub fn jain_users_bsld(&self) -> JainIndex {
        jain_of(self.by_user.values())
    }
    /// Jain's index over the mean bounded slowdowns of the organizations
    /// with a completed task.
    pub fn jain_orgs_bsld(&self) -> JainIndex {
        jain_of(self.by_org.values())
    }
    /// The organizations `user`'s tasks belonged to, ascending.
    pub fn user_orgs(&self, user: UserId) -> &[OrgId] {
        self.user_orgs.get(&user).map_or(&[], Vec::as_slice)
    }
    /// Each organization's owned and received shares, for organizations
    /// `0..procs.len()` (owning `procs[o]` processors) and any other that
    /// had tasks (owning none), ascending.
    pub fn org_shares(&self, procs: &[u32]) -> Vec<OrgShare> {
        let total_procs: u64 = procs.iter().map(|&p| p as u64).sum();
        let total_busy: f64 = self.by_org.values().map(|a| a.slot_seconds).sum();
        let declared = (0..procs.len() as u32).map(OrgId);
        let mut orgs: Vec<OrgId> = declared.chain(self.by_org.keys().copied()).collect();
        orgs.sort_unstable();
        orgs.dedup();
        orgs.into_iter()
            .map(|o| {
                let p = procs.get(o.0 as usize).copied().unwrap_or(0);
                let busy = self.by_org.get(&o).map_or(0.0, |a| a.slot_seconds);
                OrgShare {
                    org: o.0,
                    procs: p,
                    owned_share: (total_procs > 0).then(|| p as f64 / total_procs as f64),
                    slot_seconds: busy,
                    received_share: (total_busy > 0.0).then(|| busy / total_busy),
                }
            })
            .collect()
    }
}

fn jain_of<'a>(aggs: impl Iterator<Item = &'a Aggregate> + Clone) -> JainIndex {
    let xs = aggs.filter(|a| a.completed > 0).map(Aggregate::mean_bsld);
    JainIndex {
        n: xs.clone().count() as u64,
        index: jain(xs),
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

    #[test]
    fn nearest_rank_is_the_ceiling_of_p_n_over_100() {
        assert_eq!(nearest_rank(0, 50), None);
        assert_eq!(nearest_rank(1, 50), Some(1));
        assert_eq!(nearest_rank(1, 99), Some(1));
        // Wikipedia's example: 5 values, p30 → rank 2, p40 → 2, p50 → 3, p100 → 5.
        assert_eq!(nearest_rank(5, 30), Some(2));
        assert_eq!(nearest_rank(5, 40), Some(2));
        assert_eq!(nearest_rank(5, 50), Some(3));
        assert_eq!(nearest_rank(5, 100), Some(5));
        assert_eq!(nearest_rank(10, 90), Some(9));
        assert_eq!(nearest_rank(10, 99), Some(10));
        assert_eq!(nearest_rank(200, 99), Some(198));
        assert_eq!(nearest_rank(usize::MAX, 99).map(|r| r > 0), Some(true));
    }

    #[test]
    fn percentiles_of_known_values() {
        // 1..=100 shuffled: pP is P exactly.
        let mut s = Samples::default();
        for i in 0..100u64 {
            s.push(((i * 37) % 100 + 1) as f64);
        }
        let d = s.distribution();
        assert_eq!(
            d,
            Distribution {
                n: 100,
                p50: Some(50.0),
                p90: Some(90.0),
                p99: Some(99.0),
                max: Some(100.0),
            }
        );
        // Again, on the values as the first call left them.
        assert_eq!(s.distribution(), d);
        // Few values: ranks ⌈0.5·3⌉ = 2, ⌈0.9·3⌉ = 3, ⌈0.99·3⌉ = 3.
        let mut s = Samples::default();
        for x in [0.1, 7.0, 3.5] {
            s.push(x);
        }
        let d = s.distribution();
        assert_eq!(
            (d.p50, d.p90, d.p99, d.max),
            (Some(3.5), Some(7.0), Some(7.0), Some(7.0))
        );
        // A value kept as f32 shows as its short decimal, not 0.10000000149.
        let mut s = Samples::default();
        s.push(0.1);
        assert_eq!(s.distribution().p50, Some(0.1));
        // Beyond 2^24 s an f32 rounds; the percentile never exceeds the
        // exact maximum.
        let mut s = Samples::default();
        s.push(16_777_217.0);
        let d = s.distribution();
        assert_eq!((d.p99, d.max), (Some(16_777_216.0), Some(16_777_217.0)));
        let mut s = Samples::default();
        s.push(16_777_219.0);
        assert_eq!(s.distribution().p99, Some(16_777_219.0), "rounded up, clamped");
        assert_eq!(
            Samples::default().distribution(),
            Distribution {
                n: 0,
                ..Distribution::default()
            }
        );
    }

    #[test]
    fn run_percentiles_are_over_started_and_completed_tasks() {
        let mut m = Metrics::default();
        // Waits 0, 10, 20 (the killed one started); responses of the two
        // completed: 100, 30.
        m.record(&rec(0, Some(0), 100, 1, Outcome::Completed));
        m.record(&rec(0, Some(10), 30, 1, Outcome::Completed));
        m.record(&rec(0, Some(20), 25, 1, Outcome::Killed));
        m.record(&rec(0, None, 40, 1, Outcome::Cancelled));
        let d = m.distributions();
        assert_eq!(
            (d.wait_s.n, d.wait_s.p50, d.wait_s.max),
            (3, Some(10.0), Some(20.0))
        );
        assert_eq!(
            (d.response_s.n, d.response_s.p50, d.response_s.p99),
            (2, Some(30.0), Some(100.0))
        );
        // Bounded slowdowns 100/100 = 1 and 30/20 = 1.5.
        assert_eq!(
            (d.bounded_slowdown.p50, d.bounded_slowdown.max),
            (Some(1.0), Some(1.5))
        );
        m.drop_samples();
        assert_eq!(m.distributions().wait_s.n, 0);
    }

    #[test]
    fn jain_of_known_values() {
        assert_eq!(jain([]), None);
        assert_eq!(jain([3.7]), Some(1.0));
        assert_eq!(jain([2.0, 2.0, 2.0]), Some(1.0));
        assert_eq!(jain([0.0, 0.0]), Some(1.0));
        // One of n has everything: 1/n.
        assert_eq!(jain([5.0, 0.0, 0.0, 0.0]), Some(0.25));
        // (1 + 2 + 3)² / (3 · 14) = 36 / 42.
        assert!((jain([1.0, 2.0, 3.0]).unwrap() - 36.0 / 42.0).abs() < 1e-15);
        // Equal values that would round above 1 stay at 1.
        assert!(jain([0.1; 7]).unwrap() <= 1.0);
    }

    #[test]
    fn jain_over_users_and_organizations_mean_bounded_slowdowns() {
        let mut m = Metrics::default();
        // User 3 / org 2: bsld 10 (1 s run after 99 s wait).
        m.record(&rec(0, Some(99), 100, 1, Outcome::Completed));
        let mut r = rec(0, Some(0), 100, 1, Outcome::Completed);
        r.spec.user = UserId(4);
        r.spec.org = OrgId(1);
        m.record(&r);
        // A user with no completed task is not counted.
        let mut r = rec(0, None, 10, 1, Outcome::Cancelled);
        r.spec.user = UserId(5);
        m.record(&r);
        // x = 10 and 1: 121 / (2 · 101).
        let j = m.jain_users_bsld();
        assert_eq!(j.n, 2);
        assert!((j.index.unwrap() - 121.0 / 202.0).abs() < 1e-15);
        let j = m.jain_orgs_bsld();
        assert_eq!(j.n, 2);
        assert!((j.index.unwrap() - 121.0 / 202.0).abs() < 1e-15);
        assert_eq!(
            Metrics::default().jain_users_bsld(),
            JainIndex { index: None, n: 0 }
        );
    }

    #[test]
    fn shares_of_owned_and_received_processor_time_sum_to_one() {
        let mut m = Metrics::default();
        // Org 2: 2 slots × 10 s; org 0: 1 slot × 30 s.
        m.record(&rec(0, Some(0), 10, 2, Outcome::Completed));
        let mut r = rec(0, Some(0), 30, 1, Outcome::Completed);
        r.spec.org = OrgId(0);
        m.record(&r);
        let s = m.org_shares(&[6, 3, 1]);
        let orgs: Vec<u32> = s.iter().map(|o| o.org).collect();
        assert_eq!(orgs, [0, 1, 2]);
        assert_eq!(s[0].owned_share, Some(0.6));
        assert_eq!(s[0].received_share, Some(0.6));
        assert_eq!(s[1].received_share, Some(0.0));
        assert_eq!(
            (s[2].procs, s[2].slot_seconds, s[2].received_share),
            (1, 20.0, Some(0.4))
        );
        let owned: f64 = s.iter().filter_map(|o| o.owned_share).sum();
        let received: f64 = s.iter().filter_map(|o| o.received_share).sum();
        assert!((owned - 1.0).abs() < 1e-12 && (received - 1.0).abs() < 1e-12);
        // An organization with tasks but no declared processors is listed.
        let s = m.org_shares(&[5]);
        assert_eq!(
            s.iter().map(|o| (o.org, o.procs)).collect::<Vec<_>>(),
            [(0, 5), (2, 0)]
        );
        // Nothing ran: no received share.
        assert_eq!(Metrics::default().org_shares(&[1])[0].received_share, None);
    }

    #[test]
    fn log_statuses_are_counted_and_users_keep_their_organizations() {
        let mut m = Metrics::default();
        for s in [Some(1), Some(0), Some(5), Some(0), Some(-1), Some(3), None] {
            m.record_task(&rec(0, Some(0), 10, 1, Outcome::Completed), s);
        }
        assert_eq!(
            m.log_status,
            LogStatusCounts {
                completed: 1,
                failed: 2,
                cancelled: 1,
                other: 3,
            }
        );
        assert_eq!(m.outcomes["completed"], 7);
        let mut r = rec(0, Some(0), 10, 1, Outcome::Completed);
        r.spec.org = OrgId(0);
        m.record(&r);
        assert_eq!(m.user_orgs(UserId(3)), [OrgId(0), OrgId(2)]);
        assert_eq!(m.user_orgs(UserId(9)), []);
    }
}
