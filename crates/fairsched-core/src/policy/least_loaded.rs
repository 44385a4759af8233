//! `least-loaded`: send an arriving task to the machine with the smallest
//! load per slot, counting the slots its running and waiting tasks need and
//! the arriving task itself. Ties go to the lowest machine index; machines
//! too small for the task are skipped (rejected if none can hold it).
//!
//! Reads only counts and machine sizes from the view: non-clairvoyant.

use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use serde::{Deserialize, Serialize};

pub const NAME: &str = "least-loaded";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "machine minimising (busy + waiting slots + task slots) / machine size; ties to the lowest index",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    Ok(Box::new(LeastLoaded))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LeastLoaded;

impl Allocate for LeastLoaded {
    snapshot_policy!(NAME);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        let mut best: Option<(u128, u128, MachineId)> = None;
        for m in view.machines() {
            let cap = m.capacity() as u128;
            if cap < task.slots() as u128 {
                continue;
            }
            let load = m.busy() as u128 + m.waiting_slots() as u128 + task.slots() as u128;
            // load/cap < best_load/best_cap, compared exactly.
            let better = best.is_none_or(|(bl, bc, _)| load * bc < bl * cap);
            if better {
                best = Some((load, cap, m.id()));
            }
        }
        best.map(|(_, _, m)| m)
    }
}
