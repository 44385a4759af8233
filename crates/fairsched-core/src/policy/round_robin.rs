//! `round-robin` over organizations (spec/shapley.md, ROUNDROBIN): cycle
//! through the platform's organizations (`0..View::org_count()`, owners and
//! submitters alike) in index order, skipping those with no waiting task
//! that fits; the pointer persists between events. Each organization's
//! tasks start in the order it submitted them.

use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{OrgQueues, PerMachine};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::View;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "round-robin";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "cycle over organizations in index order (pointer persists), each organization FIFO",
    params: &[],
    parallel: true,
    orgs: true,
    picks: Picks::Weighs("it takes organizations in turn, not tasks by priority"),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(RoundRobin::default()))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundRobin {
    queues: OrgQueues,
    /// Per machine, the organization after the one served last (not
    /// reduced modulo the organization count, which may grow).
    next: PerMachine<usize>,
}

impl Order for RoundRobin {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        let k = view.org_count();
        // The pointer is kept as "the organization after the last served",
        // unreduced: reduced here, by the organizations known now. An
        // organization that becomes known later (its first submission) then
        // takes its turn in index order instead of being wrapped past.
        let start = *self.next.get(machine) % k.max(1);
        for i in 0..k {
            let o = (start + i) % k;
            if let Some((t, q)) = self.queues.head(machine, o)
                && q <= free
            {
                *self.next.get(machine) = o + 1;
                return Some(Pick::Start(t));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

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

    #[test]
    fn an_undeclared_organization_that_submits_late_gets_its_turn() {
        // The platform declares only org 0 (one slot). Org 0 submits tasks
        // 1 and 2 at 0; org 1 (unknown until then) submits task 3 at 1.
        // After serving org 0, it is org 1's turn: 1, 3, 2. (Keeping the
        // pointer modulo the one organization known at 0 wrapped it to
        // org 0: 1, 2, 3.)
        let r = Harness::owned(&[1], "round-robin")
            .org_task(1, 0, 28, 0)
            .org_task(2, 0, 1, 0)
            .org_task(3, 1, 1, 1)
            .run();
        assert_eq!(r.order(), vec![1, 3, 2]);
    }

    #[test]
    fn an_organization_that_submits_late_gets_its_turn() {
        // One slot owned by org 0; orgs 1 and 2 own nothing. Orgs 0 and 1
        // submit at 0, org 2 at 15. Served: 1 (org 0) at 0, 4 (org 1) at 10;
        // the pointer is then at org 2, which has waited since 15: task 6
        // goes at 20, before org 0's task 2. Cycling over the queues seen so
        // far (two) would wrap to org 0 and serve task 6 last but one.
        let r = Harness::owned(&[1, 0, 0], "round-robin")
            .org_task(1, 0, 10, 0)
            .org_task(2, 0, 10, 0)
            .org_task(3, 0, 10, 0)
            .org_task(4, 0, 10, 1)
            .org_task(5, 0, 10, 1)
            .org_task(6, 15, 10, 2)
            .run();
        assert_eq!(r.order(), vec![1, 4, 6, 2, 5, 3]);
    }
}
