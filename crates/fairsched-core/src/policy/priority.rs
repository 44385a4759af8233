//! `priority`: the highest priority first, then submission order (FIFO);
//! greedy first-fit like `fifo`. Priorities change from outside
//! ([`crate::Event::SetPriority`]) or from a Control policy; a change
//! reorders the waiting task at once.

use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{KeyedQueues, QueueKey};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{TaskView, View};
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "priority";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "highest priority first, then submission order; greedy first-fit",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(PriorityOrder::default()))
}

/// Highest priority first, then submission order.
#[derive(Clone, Debug)]
pub struct ByPriority;

impl QueueKey for ByPriority {
    type K = (Reverse<i64>, u64);
    type V = ();
    fn key(t: &TaskView) -> Self::K {
        (Reverse(t.priority()), t.seq())
    }
    fn value(_: &TaskView) {}
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PriorityOrder {
    queues: KeyedQueues<ByPriority>,
}

impl Order for PriorityOrder {
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
    fn higher_priority_first_then_fifo() {
        let r = Harness::pool(1, "priority")
            .task(1, 0, 10)
            .task_prio(2, 1, 5, 1)
            .task_prio(3, 2, 5, 7)
            .task_prio(4, 3, 5, 7)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (3, 10), (4, 15), (2, 20)]);
    }

    #[test]
    fn an_outside_priority_change_reorders_the_queue() {
        let r = Harness::pool(1, "priority")
            .task(1, 0, 10)
            .task(2, 1, 5)
            .task(3, 2, 5)
            .set_priority(5, 3, 9)
            .run();
        assert_eq!(r.starts(), vec![(1, 0), (3, 10), (2, 15)]);
    }
}
