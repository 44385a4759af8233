//! When would a task start on a machine whose queue runs FCFS without
//! backfilling? [`Projection`] places tasks one after another on the
//! machine's processors (a heap of the instants each processor frees);
//! [`FcfsBook`] keeps one per machine from notices, with the durations
//! the strategy believes (true runtimes for MST, user estimates for
//! MSTUser).
//!
//! A projection is updated in O(q log m) when a task joins a queue and
//! stays right as long as tasks end when it expected them to: for MST
//! (exact runtimes) that is always, unless a task is killed, requeued or
//! cancelled, or slots join or leave; MSTUser's estimates are wrong at
//! almost every end. On such an event the machine's projection is rebuilt
//! from its running and queued tasks at the next decision.

use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::model::Outcome;
use crate::policy::queue::PerMachine;
use crate::prelude::*;
use crate::state::View;
use crate::time::Time;
use alloc::collections::{BTreeMap, BinaryHeap};
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

/// FCFS placement on one machine's processors.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Projection {
    /// When each processor frees (earlier than now means free now).
    #[serde(with = "crate::snapshot::sorted_heap")]
    free: BinaryHeap<Reverse<Time>>,
    /// Start of the last task placed: FCFS starts never go backwards.
    last_start: Option<Time>,
}

impl Projection {
    /// `capacity` processors, those in `busy_until` busy until then, the
    /// others free; `last_start`: latest start of a task already running.
    pub fn new(
        capacity: u32,
        busy_until: impl IntoIterator<Item = Time>,
        last_start: Option<Time>,
    ) -> Projection {
        let mut free: BinaryHeap<Reverse<Time>> = busy_until.into_iter().map(Reverse).collect();
        while free.len() < capacity as usize {
            free.push(Reverse(Time::MIN));
        }
        Projection { free, last_start }
    }

    /// When a task of `q` slots placed now would start (`None`: it never
    /// fits).
    pub fn start_of(&self, now: Time, q: u32) -> Option<Time> {
        let q = q.max(1) as usize;
        if q > self.free.len() {
            return None;
        }
        let qth = if q == 1 {
            self.free.peek().map(|r| r.0).unwrap_or(Time::MIN)
        } else {
            let mut v: Vec<Time> = self.free.iter().map(|r| r.0).collect();
            v.sort_unstable();
            v[q - 1]
        };
        Some(now.max(qth).max(self.last_start.unwrap_or(Time::MIN)))
    }

    /// Places a task of `q` slots lasting `d`; returns its start.
    pub fn place(&mut self, now: Time, q: u32, d: Time) -> Option<Time> {
        let start = self.start_of(now, q)?;
        for _ in 0..q.max(1) {
            self.free.pop();
        }
        for _ in 0..q.max(1) {
            self.free.push(Reverse(start + d));
        }
        self.last_start = Some(start);
        Some(start)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Machine {
    proj: Projection,
    /// The projection must be rebuilt before it is read.
    dirty: bool,
    built: bool,
    /// Waiting tasks in FCFS order: seq → (task, slots, duration).
    queued: BTreeMap<u64, (TaskId, u32, Time)>,
    /// Running tasks: start, slots, duration.
    #[serde(with = "crate::snapshot::sorted_map")]
    running: FxHashMap<TaskId, (Time, u32, Time)>,
    /// Where each waiting task is in `queued`.
    #[serde(with = "crate::snapshot::sorted_map")]
    seq_of: FxHashMap<TaskId, u64>,
}

/// One [`Projection`] per machine, kept from notices.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FcfsBook {
    machines: PerMachine<Machine>,
    /// Durations of tasks allocated but not yet queued.
    #[serde(with = "crate::snapshot::sorted_map")]
    pending: FxHashMap<TaskId, Time>,
    /// Rebuild on every end (durations are estimates).
    estimates: bool,
}

impl FcfsBook {
    /// `estimates`: the durations may be wrong (rebuild at every end).
    pub fn new(estimates: bool) -> FcfsBook {
        FcfsBook {
            estimates,
            ..FcfsBook::default()
        }
    }

    /// The duration believed for `task`, given when it is allocated.
    pub fn expect(&mut self, task: TaskId, d: Time) {
        self.pending.insert(task, d);
    }

    pub fn notify(&mut self, view: &View, n: &Notice) {
        let now = view.now();
        match *n {
            Notice::Queued { task, machine } => {
                let d = self.pending.remove(&task).unwrap_or(Time::ZERO);
                let Some(t) = view.task(task) else { return };
                let m = self.machines.get(machine);
                m.queued.insert(t.seq(), (task, t.slots(), d));
                m.seq_of.insert(task, t.seq());
                if m.built && !m.dirty {
                    m.proj.place(now, t.slots(), d);
                }
            }
            Notice::Started { task, machine } => {
                let m = self.machines.get(machine);
                if let Some(seq) = m.seq_of.remove(&task)
                    && let Some((_, q, d)) = m.queued.remove(&seq)
                {
                    m.running.insert(task, (now, q, d));
                }
            }
            Notice::Left {
                task,
                machine: Some(machine),
                outcome,
                ..
            } => {
                let estimates = self.estimates;
                let m = self.machines.get(machine);
                if let Some(seq) = m.seq_of.remove(&task) {
                    m.queued.remove(&seq);
                    m.dirty = true;
                } else if m.running.remove(&task).is_some() && (estimates || outcome != Outcome::Completed) {
                    m.dirty = true;
                }
            }
            Notice::Requeued { task, machine } => {
                let m = self.machines.get(machine);
                if let Some((_, q, d)) = m.running.remove(&task)
                    && let Some(t) = view.task(task)
                {
                    m.queued.insert(t.seq(), (task, q, d));
                    m.seq_of.insert(task, t.seq());
                }
                m.dirty = true;
            }
            Notice::SlotJoined { machine, .. } | Notice::SlotLeft { machine, .. } => {
                self.machines.get(machine).dirty = true;
            }
            _ => {}
        }
    }

    /// When a task of `q` slots allocated now to `machine` would start.
    pub fn start_of(&mut self, view: &View, machine: MachineId, q: u32) -> Option<Time> {
        let now = view.now();
        let capacity = view.machine(machine).capacity();
        let m = self.machines.get(machine);
        if !m.built || m.dirty {
            let ends = m
                .running
                .values()
                .flat_map(|&(s, q, d)| core::iter::repeat_n((s + d).max(now), q as usize));
            let last = m.running.values().map(|r| r.0).max();
            m.proj = Projection::new(capacity, ends, last);
            for &(_, q, d) in m.queued.values() {
                m.proj.place(now, q, d);
            }
            m.built = true;
            m.dirty = false;
        }
        m.proj.start_of(now, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_sim::harness::Harness;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The projection's start of every task equals its start in a
        /// simulation of the machine's FCFS queue (the brute force), for
        /// sequential and parallel tasks.
        #[test]
        fn projected_starts_are_the_fcfs_starts(
            procs in 1u32..5,
            jobs in proptest::collection::vec((0i64..40, 1i64..30, 1u32..5), 1..25),
        ) {
            let mut jobs = jobs;
            jobs.sort_by_key(|j| j.0);
            let jobs: Vec<(i64, i64, u32)> = jobs.into_iter().map(|(r, p, q)| (r, p, q.min(procs))).collect();
            let mut h = Harness::machines(&[procs], "single-pool", "fcfs");
            for (i, &(r, p, q)) in jobs.iter().enumerate() {
                h = h.job(i as u64 + 1, r, p, q);
            }
            let run = h.run();
            let mut proj = Projection::new(procs, [], None);
            for (i, &(r, p, q)) in jobs.iter().enumerate() {
                let predicted = proj.place(Time::from_secs(r), q, Time::from_secs(p)).unwrap();
                let actual = run.end(i as u64 + 1).start().map(|t| t.millis());
                prop_assert_eq!(Some(predicted.millis()), actual, "job {}", i + 1);
            }
        }
    }

    #[test]
    fn mst_knows_the_runtimes_and_mst_user_believes_the_estimates() {
        // Two single-processor machines. Task 1 (t=0) runs 100 s on machine
        // 0, task 2 (t=0) 10 s on machine 1. At t=1 task 3: machine 1 frees
        // first (t=10), so MST sends it there. Task 2's user estimated
        // 1000 s (task 1's 50 s): MSTUser believes machine 0 frees first.
        let run = |allocate: &str| {
            Harness::machines(&[1, 1], allocate, "fcfs")
                .job_est(1, 0, 100, 1, 50)
                .job_est(2, 0, 10, 1, 1000)
                .task(3, 1, 5)
                .run()
        };
        let on = |r: &fairsched_sim::harness::Run, id| r.end(id).machine.map(|m| m.0);
        let mst = run("mst");
        assert_eq!(
            (on(&mst, 1), on(&mst, 2), on(&mst, 3)),
            (Some(0), Some(1), Some(1))
        );
        let user = run("mst-user");
        assert_eq!(
            (on(&user, 1), on(&user, 2), on(&user, 3)),
            (Some(0), Some(1), Some(0))
        );
    }
}
