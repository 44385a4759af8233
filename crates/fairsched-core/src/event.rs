//! What drivers tell the core ([`Event`]), what the core tells drivers
//! ([`Action`]), and what the core tells policies ([`Notice`]).

use crate::ids::{MachineId, OrgId, SlotId, TaskId};
use crate::model::{Outcome, Phase, TaskSpec};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// Something that happened, reported by a driver (simulator or broker).
///
/// Events that do not apply (a completion for a task that is not running, a
/// duplicate cancel) are ignored and counted in [`crate::CoreStats`]: the
/// live broker must tolerate replays and duplicates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// A task arrives.
    Submit(TaskSpec),
    /// A running task finished its work.
    Complete { task: TaskId },
    /// A running task failed (its slot crashed, the process exited non-zero).
    Fail { task: TaskId },
    /// The submitter withdraws a waiting or running task.
    Cancel { task: TaskId },
    /// An operator (or an outside system) kills a running task.
    Kill { task: TaskId },
    /// A running task entered a phase (workflow tasks report four phases).
    Phase { task: TaskId, phase: Phase },
    /// Someone outside the policies changes a task's priority.
    SetPriority { task: TaskId, priority: i64 },
    /// A new slot joins `machine`, owned by `owner`. Slot ids are handed
    /// out in join order after the initial platform's slots.
    SlotJoin { machine: MachineId, owner: OrgId },
    /// A slot leaves; a task running on it is stopped ([`Outcome::Killed`]).
    SlotLeave { slot: SlotId },
    /// A timer requested by [`Action::Timer`] fires.
    Timer { token: u64 },
}

/// What the core asks the driver to do, or reports as done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Run `task` on these slots of `machine`, starting now.
    Start {
        task: TaskId,
        machine: MachineId,
        slots: Vec<SlotId>,
    },
    /// Stop a running task now. With `requeued`, it went back to its
    /// machine's queue (its work is lost) and may start again later.
    Stop { task: TaskId, requeued: bool },
    /// The task left the platform; every submitted task gets exactly one.
    Ended(EndRecord),
    /// Deliver [`Event::Timer`] with this token at `at`.
    Timer { at: Time, token: u64 },
    /// A policy (Control) changed a task's priority.
    Priority { task: TaskId, priority: i64 },
}

/// Everything the core knew about a task when it left.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    pub spec: TaskSpec,
    pub submit: Time,
    /// Start of the run it ended in; `None` if it ended while waiting
    /// (even after earlier, requeued runs: see `attempts` and `busy`).
    pub start: Option<Time>,
    pub end: Time,
    pub machine: Option<MachineId>,
    /// The first slot it ran on in its last attempt.
    pub slot: Option<SlotId>,
    pub outcome: Outcome,
    /// How many times it started (requeues start it again).
    pub attempts: u32,
    /// Time it held its slots over all attempts, including attempts that
    /// were stopped and requeued (their work was lost, the time was spent).
    pub busy: Time,
    /// Measured duration of each finished phase.
    pub phases: [Option<Time>; 4],
}

/// A state change, as seen by policies. Delivered to `Allocate` and `Order`
/// synchronously, while the core applies it (so a policy's own indexes stay
/// consistent with the view), and to `Control` in batches.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The task entered `machine`'s queue (on submit or requeue).
    Queued {
        task: TaskId,
        machine: MachineId,
    },
    /// The task started on `machine`.
    Started {
        task: TaskId,
        machine: MachineId,
    },
    /// A running task was stopped and put back in the queue.
    Requeued {
        task: TaskId,
        machine: MachineId,
    },
    /// The task left; `was_running` tells whether it held slots. The view
    /// still shows it as it was. (A rejected task never entered a queue:
    /// it gets no notice, only [`Action::Ended`].)
    Left {
        task: TaskId,
        machine: Option<MachineId>,
        outcome: Outcome,
        was_running: bool,
    },
    /// The task's priority changed (it may be waiting or running).
    PriorityChanged {
        task: TaskId,
        old: i64,
        new: i64,
    },
    /// A phase began.
    PhaseStarted {
        task: TaskId,
        phase: Phase,
    },
    SlotJoined {
        slot: SlotId,
        machine: MachineId,
    },
    SlotLeft {
        slot: SlotId,
        machine: MachineId,
    },
}
