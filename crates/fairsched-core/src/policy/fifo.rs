//! `first-fit` (formerly `fifo`, still accepted): tasks start in submission
//! order, greedily. When the oldest waiting task does not fit (a rigid job
//! wider than the free slots), the oldest one that fits starts instead, so
//! no slot idles while a task that fits waits: list scheduling, first fit.
//! For sequential tasks this is plain FIFO; for rigid jobs it is not FCFS
//! (`fcfs` holds the queue behind a head that does not fit).

use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{KeyedQueues, QueueKey};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{TaskView, View};
use serde::{Deserialize, Serialize};

pub const NAME: &str = "first-fit";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "submission order, but any waiting task that fits starts (greedy list scheduling; `fifo` is its former name)",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Submission,
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(Fifo::default()))
}

/// Submission order.
#[derive(Clone, Debug)]
pub struct BySeq;

impl QueueKey for BySeq {
    type K = u64;
    type V = ();
    fn key(t: &TaskView) -> u64 {
        t.seq()
    }
    fn value(_: &TaskView) {}
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Fifo {
    queues: KeyedQueues<BySeq>,
}

impl Order for Fifo {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        self.queues.get(machine).first_fit(free).map(Pick::Start)
    }
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

    #[test]
    fn sequential_tasks_start_in_submission_order() {
        let r = Harness::pool(1, "fifo")
            .task(1, 0, 10)
            .task(2, 1, 5)
            .task(3, 2, 5)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (2, 10), (3, 15)]);
    }

    #[test]
    fn a_wide_head_does_not_block_narrow_tasks() {
        // 4 slots; task 1 takes 3; task 2 needs 4 (waits); task 3 needs 1 and fits.
        let r = Harness::pool(4, "fifo")
            .job(1, 0, 10, 3)
            .job(2, 1, 10, 4)
            .job(3, 2, 10, 1)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (3, 2), (2, 12)]);
    }
}
