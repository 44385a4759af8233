//! `fair-share` (spec/shapley.md, FAIRSHARE): serve the organization with
//! the smallest processor time used so far divided by its share, where the
//! share is its fraction of the platform's slots and running tasks count
//! up to now. Ties go to the lowest organization index; each
//! organization's tasks start in the order it submitted them.
//!
//! Usage is kept as aggregates per organization (finished slot-time, plus
//! the number and start-time sum of running slots), so a decision costs
//! O(organizations), whatever the number of processors.
//!
//! An organization owning no slot has no share (its key would be infinite,
//! or 0/0): it is served only when no organization with a share has a task
//! that fits, and among such organizations the one that used less goes
//! first (then the lowest index), so that they too share fairly what is
//! left to them.

use crate::event::Notice;
use crate::ids::{MachineId, OrgId};
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::OrgQueues;
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::View;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "fair-share";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "organization with the least processor time used / share of slots first; each organization FIFO",
    params: &[],
    parallel: true,
    orgs: true,
    picks: Picks::Weighs(
        "it starts the organization that got the least for its share of the slots first, not tasks by priority",
    ),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(FairShare::default()))
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
struct Usage {
    /// Slot-milliseconds of finished (or stopped) runs.
    done: i128,
    /// Slots held by running tasks.
    running: i128,
    /// Sum over running tasks of slots × start.
    start_sum: i128,
}

impl Usage {
    fn at(&self, now: i128) -> i128 {
        self.done + self.running * now - self.start_sum
    }
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FairShare {
    queues: OrgQueues,
    usage: Vec<Usage>,
    #[serde(with = "crate::snapshot::sorted_map")]
    starts: FxHashMap<crate::ids::TaskId, (OrgId, i128, i128)>,
}

impl FairShare {
    fn usage(&mut self, org: OrgId) -> &mut Usage {
        if org.index() >= self.usage.len() {
            self.usage.resize(org.index() + 1, Usage::default());
        }
        &mut self.usage[org.index()]
    }
    fn stop(&mut self, task: crate::ids::TaskId, now: i128) {
        if let Some((org, q, start)) = self.starts.remove(&task) {
            let u = self.usage(org);
            u.running -= q;
            u.start_sum -= q * start;
            u.done += q * (now - start);
        }
    }
}

impl Order for FairShare {
    snapshot_policy!(NAME);
    fn gauges(&self, view: &View, out: &mut Vec<crate::point::Gauge>) {
        let now = view.now().millis() as i128;
        for (o, u) in self.usage.iter().enumerate() {
            out.push(crate::point::Gauge {
                name: "org_usage_slot_seconds",
                help: "Slot-seconds an organization's tasks have used (fair-share starts the least-served first).",
                key: Some(("org", o as i64)),
                value: u.at(now) as f64 / 1000.0,
            });
        }
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        let now = view.now().millis() as i128;
        match *n {
            Notice::Started { task, .. } => {
                if let Some(t) = view.task(task) {
                    let q = t.slots() as i128;
                    let u = self.usage(t.org());
                    u.running += q;
                    u.start_sum += q * now;
                    self.starts.insert(task, (t.org(), q, now));
                }
            }
            Notice::Left {
                task,
                was_running: true,
                ..
            }
            | Notice::Requeued { task, .. } => self.stop(task, now),
            _ => {}
        }
    }

    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let now = view.now().millis() as i128;
        let usage = &self.usage;
        least_per_share(&mut self.queues, view, machine, |org| {
            usage.get(org.index()).map_or(0, |u| u.at(now))
        })
    }
}

/// The rule of the fair-share family: among organizations with a waiting
/// task that fits, the smallest `measure / share` (share = owned slots /
/// all slots), compared exactly as `measure_a × slots_b < measure_b ×
/// slots_a`; ties to the lowest index. Organizations owning no slot come
/// after all others, by smallest `measure`.
pub fn least_per_share(
    queues: &mut OrgQueues,
    view: &View,
    machine: MachineId,
    measure: impl Fn(OrgId) -> i128,
) -> Option<Pick> {
    let free = view.machine(machine).free();
    let mut best: Option<(i128, i128, crate::ids::TaskId)> = None;
    for (org, task) in queues.eligible(machine, free) {
        let used = measure(org);
        let slots = view.org_slots(org) as i128;
        let better = match best {
            None => true,
            Some((bu, bs, _)) => match (slots == 0, bs == 0) {
                (false, true) => true,
                (true, false) => false,
                (true, true) => used < bu,
                (false, false) => used * bs < bu * slots,
            },
        };
        if better {
            best = Some((used, slots, task));
        }
    }
    best.map(|(_, _, t)| Pick::Start(t))
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

    #[test]
    fn the_organization_with_less_usage_per_share_goes_first() {
        // Two slots, one per organization. At t=10 org 0 has used 20
        // slot-seconds and org 1 nothing: org 1's later task overtakes org
        // 0's earlier one.
        let r = Harness::owned(&[1, 1], "fair-share")
            .org_task(1, 0, 10, 0)
            .org_task(2, 0, 20, 0)
            .org_task(3, 5, 10, 0)
            .org_task(4, 6, 10, 1)
            .run();
        assert_eq!(r.order(), vec![1, 2, 4, 3]);
    }

    #[test]
    fn organizations_owning_nothing_go_last_and_by_usage() {
        // One slot, owned by org 0; orgs 1 and 2 own nothing. Org 1's task 1
        // runs 0..10; org 1's task 2 (at 1) and org 2's task 3 (at 2) wait.
        // At 10 org 1 has used 10 s, org 2 nothing: task 3 first. Org 0's
        // task 4 (at 11) goes before both of them once the slot frees.
        let r = Harness::owned(&[1, 0, 0], "fair-share")
            .org_task(1, 0, 10, 1)
            .org_task(2, 1, 10, 1)
            .org_task(3, 2, 10, 2)
            .org_task(4, 11, 10, 0)
            .run();
        assert_eq!(r.order(), vec![1, 3, 4, 2]);
    }

    #[test]
    fn shares_weight_the_usage() {
        let r = Harness::owned(&[3, 1], "fair-share")
            .org_job(1, 0, 10, 2, 0)
            .org_job(2, 0, 20, 2, 1)
            .org_job(3, 1, 10, 4, 1)
            .org_job(4, 2, 10, 4, 0)
            .run();
        // Org 0 owns 3 of 4 slots, org 1 owns 1. Jobs 3 and 4 need all four
        // slots and wait until job 2 ends at t=20. Usage then: org 0 = 20,
        // org 1 = 40 slot-seconds; keys 20/0.75 < 40/0.25: org 0's later
        // job 4 goes before org 1's earlier job 3.
        assert_eq!(r.order(), vec![1, 2, 4, 3]);
    }
}
