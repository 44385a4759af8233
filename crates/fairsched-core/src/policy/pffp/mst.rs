//! `mst` — MST of spec/pffp.md, the clairvoyant baseline: the machine on
//! which the task would start earliest, computed from the exact runtimes
//! of its running and queued tasks, its queue running FCFS without
//! backfilling ([`FcfsBook`]). It reads true runtimes through the
//! [`RuntimeOracle`] (simulation only). Ties to the lowest index.

use super::argmin;
use super::projection::FcfsBook;
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{ClairvoyantAllocate, RuntimeOracle, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::state::{SpecView, View};
use crate::time::Time;

pub const NAME: &str = "mst";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "MST: machine with the earliest start, from true runtimes (clairvoyant baseline; FCFS queues)",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::clairvoyant_allocate(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn ClairvoyantAllocate>, SpecError> {
    Ok(Box::new(Mst {
        book: FcfsBook::new(false),
    }))
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Mst {
    book: FcfsBook,
}

impl ClairvoyantAllocate for Mst {
    /// Clairvoyant: no snapshots (`save` and `load` refuse, the default).
    fn policy_name(&self) -> &'static str {
        NAME
    }
    fn allocate(
        &mut self,
        view: &View,
        task: SpecView,
        oracle: &dyn RuntimeOracle,
        _rng: &mut SimRng,
    ) -> Option<MachineId> {
        let book = &mut self.book;
        let m = argmin(view, task, |m| {
            book.start_of(view, m, task.slots()).unwrap_or(Time::MAX)
        })?;
        self.book
            .expect(task.id(), oracle.runtime(task.id()).unwrap_or(Time::ZERO));
        Some(m)
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.book.notify(view, n);
    }
}
