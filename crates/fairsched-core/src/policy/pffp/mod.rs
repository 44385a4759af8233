//! Allocation under runtime uncertainty (spec/pffp.md): a broker sends
//! each arriving job to one of several machines, each with its own FCFS
//! queue. One file per strategy: `rand`, `mlp`, `mst` (clairvoyant
//! baseline), `mst-user` (user estimates) and `pffp` with the paper's
//! presets `pffp1` and `pffp2`.
//!
//! Shared rules: machines too small for a task are skipped (the task is
//! rejected when none can hold it); ties go to the lowest machine index
//! ([`argmin`]).

pub mod mlp;
pub mod mst;
pub mod mst_user;
pub mod predictor;
pub mod projection;
pub mod rand_machine;

use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::policy::queue::PerMachine;
use crate::prelude::*;
use crate::state::{SpecView, View};
use crate::time::Time;
use alloc::collections::BTreeSet;
use serde::{Deserialize, Serialize};

/// The machine that can hold `task` with the smallest `key`, ties to the
/// lowest index; `None` when no machine is large enough.
pub fn argmin<K: PartialOrd>(
    view: &View,
    task: SpecView,
    mut key: impl FnMut(MachineId) -> K,
) -> Option<MachineId> {
    let mut best: Option<(K, MachineId)> = None;
    for m in view.machines() {
        if m.capacity() < task.slots() {
            continue;
        }
        let k = key(m.id());
        if best.as_ref().is_none_or(|(b, _)| k < *b) {
            best = Some((k, m.id()));
        }
    }
    best.map(|(_, m)| m)
}

/// Per machine, the start times of its running tasks (ordered), kept from
/// notices: the elapsed time of the longest-running task in O(log n).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunningStarts {
    starts: PerMachine<BTreeSet<(Time, TaskId)>>,
    #[serde(with = "crate::snapshot::sorted_map")]
    of: FxHashMap<TaskId, (MachineId, Time)>,
}

impl RunningStarts {
    pub fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Started { task, machine } => {
                let now = view.now();
                self.starts.get(machine).insert((now, task));
                self.of.insert(task, (machine, now));
            }
            Notice::Left {
                task,
                was_running: true,
                ..
            }
            | Notice::Requeued { task, .. } => {
                if let Some((m, s)) = self.of.remove(&task) {
                    self.starts.get(m).remove(&(s, task));
                }
            }
            _ => {}
        }
    }

    /// Start of the longest-running task of `m`, if any runs.
    pub fn oldest(&mut self, m: MachineId) -> Option<Time> {
        self.starts.get(m).first().map(|&(s, _)| s)
    }
}
