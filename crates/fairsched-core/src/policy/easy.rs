//! `easy`: EASY backfilling (Lifka 1995) with the users' requested times
//! (SWF field 9) as runtime estimates.
//!
//! The oldest job starts as soon as it fits. When it does not, it gets a
//! reservation at the *shadow time*: the earliest instant at which the
//! running jobs, assumed to end at `start + estimate`, free enough slots.
//! A later job may start now (backfill) if it fits in the free slots and
//! either ends by the shadow time by its own estimate or uses only the
//! *extra* slots the head will not need at the shadow time.
//!
//! Non-clairvoyant: estimates are what users said, not true runtimes. A job
//! without an estimate, or still running past its estimate (real logs have
//! many), has an unknown end: it is never assumed to free its slots. It
//! backfills only into extra slots, and when the head's reservation
//! depends on such jobs nothing backfills (the head keeps FCFS priority).
//!
//! Cost: the queue entries carry the estimates, and within one instant the
//! backfill scan resumes after the last job it started (a start never makes
//! an earlier-rejected job eligible: free slots and extra slots only shrink
//! and the shadow time does not move), so filling a machine costs one pass
//! over its queue per instant, not one per started job.

use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{KeyedQueues, PerMachine, QueueKey};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{TaskView, View};
use crate::time::Time;
use alloc::collections::BTreeMap;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "easy";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "EASY backfilling: FCFS with a reservation for the head; later jobs backfill using requested times",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Submission,
    build: Ctor::order_with_estimates(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(Easy::default()))
}

/// Submission order, with the estimate as payload.
#[derive(Clone, Debug)]
pub struct BySeqWithEstimate;

impl QueueKey for BySeqWithEstimate {
    type K = u64;
    type V = Option<Time>;
    fn key(t: &TaskView) -> u64 {
        t.seq()
    }
    fn value(t: &TaskView) -> Option<Time> {
        t.spec().estimate()
    }
}

/// Expected end of a task started at `start`.
fn expected_end(start: Time, estimate: Option<Time>) -> Time {
    estimate.map_or(Time::MAX, |e| start + e)
}

/// See the module docs.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Easy {
    /// Waiting jobs by submission order, with their estimates.
    queues: KeyedQueues<BySeqWithEstimate>,
    /// Per machine: running jobs by expected end, with their widths.
    running: PerMachine<BTreeMap<(Time, TaskId), u32>>,
    #[serde(with = "crate::snapshot::sorted_map")]
    running_key: FxHashMap<TaskId, (MachineId, Time)>,
    /// `(now, machine, seq)` of the last backfilled job: where the next
    /// scan of the same instant resumes. Cleared by any change other than
    /// a start or an arrival.
    resume: Option<(Time, MachineId, u64)>,
}

impl Easy {
    /// Shadow time and extra slots for a head needing `need` slots, given
    /// `free` slots now. Every slot freed at the shadow time counts: jobs
    /// expected to end at that same instant all add to the extra slots.
    fn reservation(&mut self, machine: MachineId, now: Time, free: u32, need: u32) -> (Time, u32) {
        let mut avail = free;
        let mut shadow = None;
        for (&(end, _), &q) in self.running.get(machine).iter() {
            if end == Time::MAX {
                // Jobs without an estimate are never assumed to end.
                break;
            }
            if end <= now {
                // Running past its estimate (completions at `now` were
                // applied before this pick): its end is unknown.
                continue;
            }
            if shadow.is_some_and(|s| end > s) {
                break;
            }
            avail += q;
            if shadow.is_none() && avail >= need {
                shadow = Some(end);
            }
        }
        match shadow {
            Some(s) => (s, avail - need),
            // Not enough slots even when everything ends (slots left the
            // machine, or estimates are missing): no backfill may delay it.
            None => (Time::MAX, 0),
        }
    }
}

impl Order for Easy {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        if !matches!(n, Notice::Started { .. } | Notice::Queued { .. }) {
            self.resume = None;
        }
        match *n {
            Notice::Started { task, machine } => {
                if let Some(t) = view.task(task) {
                    let end = expected_end(t.start().unwrap_or(view.now()), t.spec().estimate());
                    self.running.get(machine).insert((end, task), t.slots());
                    self.running_key.insert(task, (machine, end));
                }
            }
            Notice::Left {
                task,
                was_running: true,
                ..
            }
            | Notice::Requeued { task, .. } => {
                if let Some((m, end)) = self.running_key.remove(&task) {
                    self.running.get(m).remove(&(end, task));
                }
            }
            _ => {}
        }
    }

    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let now = view.now();
        let free = view.machine(machine).free();
        let q = self.queues.get(machine);
        let (head_seq, head, need, _) = q.first()?;
        if need <= free {
            return Some(Pick::Start(head));
        }
        if q.narrowest().is_none_or(|w| w > free) {
            return None;
        }
        let (shadow, extra) = self.reservation(machine, now, free, need);
        // With no finite reservation (the slots the head needs are held by
        // jobs of unknown end), nothing may backfill: it could delay the
        // head without bound.
        if shadow == Time::MAX {
            return None;
        }
        let from = match self.resume {
            Some((t, m, seq)) if t == now && m == machine => seq,
            _ => head_seq,
        };
        let found = self
            .queues
            .get(machine)
            .after(from)
            .find(|&(_, _, q, est)| q <= free && (est.is_some_and(|e| now + e <= shadow) || q <= extra));
        found.map(|(seq, t, _, _)| {
            self.resume = Some((now, machine, seq));
            Pick::Start(t)
        })
    }
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

    #[test]
    fn backfills_a_short_job_without_delaying_the_head() {
        // 4 slots. Job 1 (3 slots, est 100) runs; job 2 (4 slots) waits with
        // a reservation at t=100; job 3 (1 slot, est 50) ends by then and
        // backfills; job 4 (1 slot, est 500) would delay the head and waits.
        let r = Harness::pool(4, "easy")
            .job_est(1, 0, 100, 3, 100)
            .job_est(2, 1, 10, 4, 10)
            .job_est(3, 2, 50, 1, 50)
            .job_est(4, 3, 500, 1, 500)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (3, 2), (2, 100), (4, 110)]);
    }

    #[test]
    fn backfills_into_extra_slots_whatever_the_estimate() {
        // 4 slots. Job 1 (2 slots, est 100) runs; job 2 needs 3: at the
        // shadow time 4 slots are free, 1 extra. Job 3 (1 slot, est 1000)
        // uses that extra slot and starts now.
        let r = Harness::pool(4, "easy")
            .job_est(1, 0, 100, 2, 100)
            .job_est(2, 1, 10, 3, 10)
            .job_est(3, 2, 1000, 1, 1000)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (3, 2), (2, 100)]);
    }

    #[test]
    fn a_job_past_its_estimate_does_not_pin_the_shadow_time_to_now() {
        // 5 slots. A (2 slots, est 10, really 100) and B (2 slots, est 50)
        // run from 0; head H needs 3 and waits. At t=20, A has overrun: its
        // end is unknown, so H's reservation is B's end (50), and C (1 slot,
        // est 20) ends by then and backfills at once. Treating A as ending
        // "now" would have pinned the shadow to 20 and kept C waiting until
        // A really ended at 100.
        let r = Harness::pool(5, "easy")
            .job_est(1, 0, 100, 2, 10)
            .job_est(2, 0, 50, 2, 50)
            .job_est(3, 1, 10, 3, 10)
            .job_est(4, 20, 20, 1, 20)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (2, 0), (4, 20), (3, 50)]);
    }

    #[test]
    fn every_slot_freed_at_the_shadow_time_is_extra() {
        // 4 slots. Jobs 1 (2 slots) and 2 (1 slot) both expect to end at 50;
        // head 3 needs 3 slots: at the shadow time 50, 1 + 2 + 1 = 4 slots
        // are free, so 1 is extra, and job 4 (1 slot, est 1000) takes it now.
        // Counting only job 1's slots at 50 would leave no extra slot and
        // keep job 4 waiting until 60.
        let r = Harness::pool(4, "easy")
            .job_est(1, 0, 50, 2, 50)
            .job_est(2, 0, 50, 1, 50)
            .job_est(3, 1, 10, 3, 10)
            .job_est(4, 2, 1000, 1, 1000)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (2, 0), (4, 2), (3, 50)]);
    }

    #[test]
    fn no_backfill_when_the_reservation_depends_on_unknown_ends() {
        // 4 slots. Job 1 (2 slots, no estimate) runs; the head needs 4: its
        // reservation is unknown, so job 3 (1 slot, est 5) does not backfill.
        let r = Harness::pool(4, "easy")
            .job(1, 0, 50, 2)
            .job_est(2, 1, 10, 4, 10)
            .job_est(3, 2, 5, 1, 5)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (2, 50), (3, 60)]);
    }
}
