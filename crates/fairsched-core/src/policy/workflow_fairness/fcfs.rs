//! `workflow-fcfs`: the spec's FCFS-across-workflows baseline
//! ("No-Fairness"). The `priority` queue (highest priority first, greedy
//! first-fit) whose tie-break at equal priority is the workflow's rank,
//! then submission order: key `(priority desc, rank asc, seq asc)`.
//!
//! The rank of a workflow is the `seq` of the first of its tasks this
//! order saw queued (the workflow's submission order, tracked from
//! `Queued` notices, so `WorkflowId`s need not be handed out in submission
//! order). A task without a workflow (background load, priority 1 in the
//! same queue) is ranked by its own `seq`: it sits among the workflows by
//! when it was submitted, like a one-task workflow. The paper imposed the
//! same order on DIRAC by giving each later workflow a lower priority; here
//! priorities stay free for a Control, and the rank breaks ties.
//!
//! The rank of a workflow is kept for the whole run (one entry per
//! workflow): a workflow whose tasks are all done keeps its place when its
//! next activity releases tasks.

use crate::event::Notice;
use crate::ids::{MachineId, WorkflowId};
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{PerMachine, Waiting};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{TaskView, View};
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "workflow-fcfs";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "highest priority first, then the earliest-submitted workflow, then submission order; greedy first-fit",
    params: &[],
    parallel: true,
    orgs: false,
    picks: Picks::Weighs("among equal priorities it puts the earliest-submitted workflow first"),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(WorkflowFcfs::default()))
}

type Key = (Reverse<i64>, u64, u64);

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkflowFcfs {
    queues: PerMachine<Waiting<Key>>,
    /// Each workflow's rank: the `seq` of its first task seen.
    #[serde(with = "crate::snapshot::sorted_map")]
    ranks: FxHashMap<WorkflowId, u64>,
}

impl WorkflowFcfs {
    fn key(&mut self, t: &TaskView) -> Key {
        let rank = match t.spec().workflow() {
            Some(w) => *self.ranks.entry(w.workflow).or_insert(t.seq()),
            None => t.seq(),
        };
        (Reverse(t.priority()), rank, t.seq())
    }
}

impl Order for WorkflowFcfs {
    snapshot_policy!(NAME);
    fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                if let Some(t) = view.task(task) {
                    let k = self.key(&t);
                    self.queues.get(machine).insert(task, k, t.slots());
                }
            }
            Notice::Started { task, machine }
            | Notice::Left {
                task,
                machine: Some(machine),
                was_running: false,
                ..
            } => {
                self.queues.get(machine).remove(task);
            }
            Notice::PriorityChanged { task, .. } => {
                if let Some(t) = view.task(task).filter(|t| !t.is_running()) {
                    let k = self.key(&t);
                    self.queues.get(t.machine()).rekey(task, k);
                }
            }
            _ => {}
        }
    }
    fn pick(&mut self, view: &View, machine: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(machine).free();
        self.queues.get(machine).first_fit(free).map(Pick::Start)
    }
}

// Tests: tests/core/workflow_fairness.rs (runs on the simulator).
