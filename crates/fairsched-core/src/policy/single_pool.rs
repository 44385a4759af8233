//! `single-pool`: the whole platform is one machine; every task goes to it,
//! except a task wider than the machine, which is rejected (it could never
//! start, and under a strict order it would block the queue forever). An
//! empty machine (no slot joined yet, e.g. pilots still to come) accepts
//! every task.

use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use serde::{Deserialize, Serialize};

pub const NAME: &str = "single-pool";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "every task goes to machine 0 (one shared pool); tasks wider than the pool are rejected",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    Ok(Box::new(SinglePool))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SinglePool;

impl Allocate for SinglePool {
    snapshot_policy!(NAME);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        if view.machine_count() == 0 {
            return None;
        }
        let cap = view.machine(MachineId(0)).capacity();
        (cap == 0 || task.slots() <= cap).then_some(MachineId(0))
    }
}
