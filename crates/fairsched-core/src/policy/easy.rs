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
//! that overran its estimate is assumed to end now; a job without an
//! estimate is assumed never to end: it backfills only into extra slots,
//! and it frees no slot in the shadow computation; when the head's
//! reservation depends on such jobs, nothing backfills.

use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{KeyedQueues, PerMachine};
use crate::registry::{Built, Entry, Kind, Params, SpecError};
use crate::state::{TaskView, View};
use crate::time::Time;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

pub const NAME: &str = "easy";

pub const ENTRY: Entry = Entry {
    name: NAME,
    kind: Kind::Order,
    doc: "EASY backfilling: FCFS with a reservation for the head; later jobs backfill using requested times",
    params: &[],
    clairvoyant: false,
    parallel: true,
    build: from_params,
};

fn from_params(_: &Params) -> Result<Built, SpecError> {
    Ok(Built::Order(Box::new(Easy::default())))
}

fn key(t: &TaskView) -> u64 {
    t.seq()
}

/// Expected end of a task started at `start`.
fn expected_end(start: Time, estimate: Option<Time>) -> Time {
    estimate.map_or(Time::MAX, |e| start + e)
}

/// See the module docs.
pub struct Easy {
    queues: KeyedQueues<u64>,
    /// Per machine: running jobs by expected end, with their widths.
    running: PerMachine<BTreeMap<(Time, TaskId), u32>>,
    running_key: FxHashMap<TaskId, (MachineId, Time)>,
}

impl Default for Easy {
    fn default() -> Self {
        Easy {
            queues: KeyedQueues::new(key),
            running: PerMachine::default(),
            running_key: FxHashMap::default(),
        }
    }
}

impl Easy {
    /// Shadow time and extra slots for a head needing `need` slots, given
    /// `free` slots now.
    fn reservation(&mut self, machine: MachineId, now: Time, free: u32, need: u32) -> (Time, u32) {
        let mut avail = free;
        for (&(end, _), &q) in self.running.get(machine).iter() {
            if end == Time::MAX {
                // Jobs without an estimate are never assumed to end.
                break;
            }
            avail += q;
            if avail >= need {
                return (end.max(now), avail - need);
            }
        }
        // Not enough slots even when everything ends (slots left the
        // machine, or estimates are missing): no backfill may delay it.
        (Time::MAX, 0)
    }
}

impl Order for Easy {
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        match *n {
            Notice::Started { task, machine } => {
                if let Some(t) = view.task(task) {
                    let end = expected_end(t.start().unwrap_or(view.now()), t.spec().estimate);
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
        let (head, need) = self.queues.get(machine).head()?;
        if need <= free {
            return Some(Pick::Start(head));
        }
        let (shadow, extra) = self.reservation(machine, now, free, need);
        // With no finite reservation (the slots the head needs are held by
        // jobs without estimates), nothing may backfill: it could delay
        // the head without bound.
        if shadow == Time::MAX {
            return None;
        }
        self.queues
            .get(machine)
            .iter()
            .skip(1)
            .filter(|&(_, q)| q <= free)
            .find(|&(t, q)| {
                let est = view.task(t).and_then(|t| t.spec().estimate);
                expected_end(now, est) <= shadow || q <= extra
            })
            .map(|(t, _)| Pick::Start(t))
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Harness;

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
}
