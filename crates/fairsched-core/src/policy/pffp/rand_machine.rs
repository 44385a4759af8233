//! `rand` (Allocate) — Rand of spec/pffp.md: a uniformly random machine
//! among those large enough for the task (seeded: the scheduler's
//! generator).

use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use rand::RngExt;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "rand";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "Rand: a uniformly random machine large enough for the task (seeded)",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    Ok(Box::new(RandMachine))
}

/// See the module docs.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct RandMachine;

impl Allocate for RandMachine {
    snapshot_policy!(NAME);
    fn allocate(&mut self, view: &View, task: SpecView, rng: &mut SimRng) -> Option<MachineId> {
        let fits = view.machines().filter(|m| m.capacity() >= task.slots()).count();
        if fits == 0 {
            return None;
        }
        let k = rng.random_range(0..fits);
        view.machines()
            .filter(|m| m.capacity() >= task.slots())
            .nth(k)
            .map(|m| m.id())
    }
}
