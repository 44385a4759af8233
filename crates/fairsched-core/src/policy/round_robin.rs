//! `round-robin` over organizations (spec/shapley.md, ROUNDROBIN): cycle
//! through organizations in index order, skipping those with no waiting
//! task that fits; the pointer persists between events. Each
//! organization's tasks start in the order it submitted them.

use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{OrgQueues, PerMachine};
use crate::registry::{Built, Entry, Kind, Params, SpecError};
use crate::state::View;

pub const NAME: &str = "round-robin";

pub const ENTRY: Entry = Entry {
    name: NAME,
    kind: Kind::Order,
    doc: "cycle over organizations in index order (pointer persists), each organization FIFO",
    params: &[],
    clairvoyant: false,
    parallel: true,
    build: from_params,
};

fn from_params(_: &Params) -> Result<Built, SpecError> {
    Ok(Built::Order(Box::new(RoundRobin::default())))
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct RoundRobin {
    queues: OrgQueues,
    /// Next organization to serve, per machine.
    next: PerMachine<usize>,
}

impl Order for RoundRobin {
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        let k = self.queues.orgs(machine);
        let start = *self.next.get(machine);
        for i in 0..k {
            let o = (start + i) % k;
            if let Some((t, q)) = self.queues.head(machine, o)
                && q <= free
            {
                *self.next.get(machine) = (o + 1) % k;
                return Some(Pick::Start(t));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::Harness;

    #[test]
    fn organizations_take_turns_and_the_pointer_persists() {
        // One slot. Org 0 submits 3 tasks, org 1 submits 2, all at t=0.
        let r = Harness::pool(1, "round-robin")
            .org_task(1, 0, 10, 0)
            .org_task(2, 0, 10, 0)
            .org_task(3, 0, 10, 0)
            .org_task(4, 0, 10, 1)
            .org_task(5, 0, 10, 1)
            .run();
        assert_eq!(r.order(), vec![1, 4, 2, 5, 3]);
    }
}
