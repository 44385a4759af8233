//! `fcfs`: strict first-come-first-served for rigid parallel jobs. The
//! oldest waiting job starts when enough slots are free; nothing overtakes
//! it (head-of-line blocking). This is the classic batch baseline.

use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::fifo::BySeq;
use crate::policy::queue::KeyedQueues;
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::View;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "fcfs";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "strict first-come-first-served: the oldest job starts when it fits, nothing overtakes it",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Submission,
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(Fcfs::default()))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Fcfs {
    queues: KeyedQueues<BySeq>,
}

impl Order for Fcfs {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        let (head, q) = self.queues.get(machine).head()?;
        (q <= free).then_some(Pick::Start(head))
    }
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

    #[test]
    fn a_wide_head_blocks_everyone_behind_it() {
        let r = Harness::pool(4, "fcfs")
            .job(1, 0, 10, 3)
            .job(2, 1, 10, 4)
            .job(3, 2, 10, 1)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (2, 10), (3, 20)]);
    }
}
