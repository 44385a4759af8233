//! What a task is, as the scheduler may know it.
//!
//! A [`TaskSpec`] is what a submitter tells the platform. It carries no true
//! runtime: the simulator keeps those apart and hands them out only through
//! a [`crate::RuntimeOracle`]. A user *estimate* (SWF field 9) is fine: it
//! is something the user said, not what will happen.
//!
//! Nor does it say which tasks came from one parallel job: the parts of a
//! split job share one runtime, so the first to end would reveal when the
//! others end. The job number stays with the driver (see
//! [`crate::TaskMeta`]) and reaches outputs, never policies.

use crate::ids::{MachineId, OrgId, TaskId, UserId, WorkflowId};
use crate::time::Time;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Where a task belongs in a workflow (workflow fairness model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRef {
    pub workflow: WorkflowId,
    pub activity: u32,
}

/// A task as submitted: sequential when `slots == 1`, a rigid parallel job
/// needing `slots` slots at once (all on one machine) otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    pub id: TaskId,
    pub user: UserId,
    pub org: OrgId,
    pub slots: u32,
    /// Higher runs first under priority-aware orders. Default 1.
    pub priority: i64,
    /// The user's runtime estimate (SWF "requested time"), if any.
    #[serde(default)]
    pub estimate: Option<Time>,
    #[serde(default)]
    pub workflow: Option<WorkflowRef>,
    /// Diet-ethic: an optional (as opposed to mandatory) request.
    #[serde(default)]
    pub optional: bool,
    /// The machine the submitter chose (a Diet-ethic client sends each
    /// request to a given server). The core queues it there without asking
    /// the `Allocate` policy; a machine that does not exist, or is too
    /// small, rejects the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<MachineId>,
}

impl TaskSpec {
    /// A sequential task of priority 1 with no estimate.
    pub fn new(id: u64, user: i64, org: u32) -> TaskSpec {
        TaskSpec {
            id: TaskId(id),
            user: UserId(user),
            org: OrgId(org),
            slots: 1,
            priority: 1,
            estimate: None,
            workflow: None,
            optional: false,
            target: None,
        }
    }
    pub fn slots(mut self, q: u32) -> Self {
        self.slots = q;
        self
    }
    pub fn priority(mut self, p: i64) -> Self {
        self.priority = p;
        self
    }
    pub fn estimate(mut self, e: Time) -> Self {
        self.estimate = Some(e);
        self
    }
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
    /// Send the task to this machine (see [`TaskSpec::target`]).
    pub fn on(mut self, m: MachineId) -> Self {
        self.target = Some(m);
        self
    }
}

/// The four phases of a workflow task (workflow fairness model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Phase {
    Setup = 0,
    Input = 1,
    Exec = 2,
    Output = 3,
}

impl Phase {
    pub const ALL: [Phase; 4] = [Phase::Setup, Phase::Input, Phase::Exec, Phase::Output];
    pub fn name(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Input => "input",
            Phase::Exec => "exec",
            Phase::Output => "output",
        }
    }
}

/// How a task left the platform. Every submitted task ends exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Completed,
    /// Stopped while running by a kill or by its slot leaving.
    Killed,
    /// Failed while running (reported by the driver).
    Failed,
    /// Withdrawn by its submitter, waiting or running.
    Cancelled,
    /// No machine can ever hold it (needs more slots than exist).
    Rejected,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Killed => "killed",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Rejected => "rejected",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
