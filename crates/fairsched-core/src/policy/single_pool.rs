//! `single-pool`: the whole platform is one machine; every task goes to it.

use crate::ids::MachineId;
use crate::model::TaskSpec;
use crate::point::{Allocate, SimRng};
use crate::registry::{Built, Entry, Kind, Params, SpecError};
use crate::state::View;

pub const NAME: &str = "single-pool";

pub const ENTRY: Entry = Entry {
    name: NAME,
    kind: Kind::Allocate,
    doc: "every task goes to machine 0 (the platform is one shared pool)",
    params: &[],
    clairvoyant: false,
    parallel: true,
    build: from_params,
};

fn from_params(_: &Params) -> Result<Built, SpecError> {
    Ok(Built::Allocate(Box::new(SinglePool)))
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct SinglePool;

impl Allocate for SinglePool {
    fn allocate(&mut self, view: &View, _task: &TaskSpec, _rng: &mut SimRng) -> Option<MachineId> {
        (view.machine_count() > 0).then_some(MachineId(0))
    }
}
