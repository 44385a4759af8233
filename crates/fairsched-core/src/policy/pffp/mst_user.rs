//! `mst-user[missing=…]` — MSTUser of spec/pffp.md: MST with the users'
//! runtime estimates (SWF field 9) instead of true runtimes. A running
//! task's remaining time is max(estimate − elapsed, 0); a task without an
//! estimate counts `missing` (the experiment passes the log's median
//! estimate). Non-clairvoyant: estimates are what users declare.

use super::argmin;
use super::projection::FcfsBook;
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use crate::time::Time;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "mst-user";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "MSTUser: machine with the earliest start, from user runtime estimates (FCFS queues)",
    params: &[ParamDoc {
        name: "missing",
        default: "3600",
        doc: "estimate for a task without one (s; or 10m, 1h)",
    }],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate_with_estimates(from_params),
};

fn from_params(p: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    Ok(Box::new(MstUser {
        missing: p.duration("missing")?,
        book: FcfsBook::new(true),
    }))
}

/// See the module docs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MstUser {
    missing: Time,
    book: FcfsBook,
}

impl Allocate for MstUser {
    snapshot_policy!(NAME, config: missing);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        let book = &mut self.book;
        let m = argmin(view, task, |m| {
            book.start_of(view, m, task.slots()).unwrap_or(Time::MAX)
        })?;
        self.book
            .expect(task.id(), task.estimate().unwrap_or(self.missing));
        Some(m)
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.book.notify(view, n);
    }
}
