//! `ut-fair-share` — UTFAIRSHARE (spec/shapley.md): serve the organization
//! with the smallest ψsp / share, where ψsp is its utility in the real
//! schedule so far (running jobs counted up to now, from elapsed times)
//! and the share its fraction of the platform's slots. Ties, organizations
//! without slots and the FIFO order within an organization as in
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

pub const NAME: &str = "ut-fair-share";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "UTFAIRSHARE: organization with the smallest utility ψsp / share of slots first; each organization FIFO",
    params: &[],
    parallel: true,
    orgs: true,
    picks: Picks::Weighs(
        "it starts the organization that got the least for its share of the slots first, not tasks by priority",
    ),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(UtFairShare::default()))
}

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UtFairShare {
    queues: OrgQueues,
    real: RealPsi,
}

impl Order for UtFairShare {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        self.real.notify(view, n);
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let now = view.now();
        let real = &self.real;
        least_per_share(&mut self.queues, view, machine, |o| real.at(o.index(), now))
    }
}
