//! `curr-fair-share` — CURRFAIRSHARE (spec/shapley.md): serve the
//! organization with the smallest number of currently running jobs /
//! share (a task holding q slots counts q). Ties, organizations without
//! slots and the FIFO order within an organization as in
//! [`crate::policy::fair_share`].

use super::RealPsi;
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Order, Pick, SimRng};
use crate::policy::fair_share::least_per_share;
use crate::policy::queue::OrgQueues;
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::View;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "curr-fair-share";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "CURRFAIRSHARE: organization with the fewest running jobs / share of slots first; each organization FIFO",
    params: &[],
    parallel: true,
    orgs: true,
    picks: Picks::Weighs(
        "it starts the organization that got the least for its share of the slots first, not tasks by priority",
    ),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(CurrFairShare::default()))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CurrFairShare {
    queues: OrgQueues,
    real: RealPsi,
}

impl Order for CurrFairShare {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        self.real.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let real = &self.real;
        least_per_share(&mut self.queues, view, machine, |o| real.running(o.index()))
    }
}
