//! `mlp` — MLp of spec/pffp.md: the machine minimising (n_i + 1) / m_i,
//! n_i = tasks allocated to it and not finished (waiting + running), m_i
//! its processors. The +1 (the task being placed) follows the paper's
//! reference implementation (tGSF): an idle large machine wins over an
//! idle small one. Compared exactly; ties to the lowest index.

use super::argmin;
use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use core::cmp::Ordering;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "mlp";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "MLp: machine minimising (unfinished tasks + 1) / processors; ties to the lowest index",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    Ok(Box::new(Mlp))
}

/// A fraction compared exactly.
#[derive(Clone, Copy, Debug)]
struct Ratio(u64, u64);

impl PartialEq for Ratio {
    fn eq(&self, o: &Ratio) -> bool {
        self.partial_cmp(o) == Some(Ordering::Equal)
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, o: &Ratio) -> Option<Ordering> {
        (self.0 as u128 * o.1 as u128).partial_cmp(&(o.0 as u128 * self.1 as u128))
    }
}

/// See the module docs.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Mlp;

impl Allocate for Mlp {
    snapshot_policy!(NAME);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        argmin(view, task, |m| {
            let m = view.machine(m);
            Ratio(
                m.waiting() as u64 + m.running() as u64 + 1,
                m.capacity().max(1) as u64,
            )
        })
    }
}
