//! What drivers tell the core ([`Event`]), what the core tells drivers
//! ([`Action`]), and what the core tells policies ([`Notice`]).

use crate::ids::{MachineId, OrgId, SlotId, TaskId};
use crate::model::{Outcome, Phase, TaskSpec};
use crate::prelude::*;
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
    /// The driver lost a running task's run (the live broker: its worker
    /// went silent past its lease): the run is stopped, its work is lost,
    /// and the task goes back to its queue like a run the `Order` policy
    /// requeued. Ignored unless the task is running.
    Requeue { task: TaskId },
    /// A running task entered a phase (workflow tasks report four phases).
    Phase { task: TaskId, phase: Phase },
    /// Someone outside the policies changes a task's priority.
    SetPriority { task: TaskId, priority: i64 },
    /// A new slot joins `machine`, owned by `owner`. Slot ids are handed
    /// out in join order after the initial platform's slots.
    SlotJoin { machine: MachineId, owner: OrgId },
    /// A slot leaves; a task running on it is stopped ([`Outcome::Killed`]).
    SlotLeave { slot: SlotId },
    /// A slot is about to leave (a pilot job near the end of its wall
    /// time): it takes no new task; free, it leaves now, busy, it leaves
    /// when its task's run ends, however it ends. The task is not
    /// disturbed. Policies see [`Notice::SlotLeft`] when it leaves.
    SlotDrain { slot: SlotId },
    /// A timer requested by [`Action::Timer`] fires.
    Timer { token: u64 },
    /// Another resource manager started this waiting task itself (the
    /// steering controller reports Slurm's starts to a
    /// [`crate::Scheduler::steered`] core, which never starts a task on
    /// its own): it takes free slots of its machine, as a pick's start
    /// does, and policies see [`Notice::Started`]. Ignored when the task
    /// is not waiting or its machine has too few free slots.
    Start { task: TaskId },
}

/// What the core asks the driver to do, or reports as done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Run `task` on these slots of `machine`, starting now.
    Start {
        task: TaskId,
        machine: MachineId,
        slots: SlotList,
    },
    /// Stop a running task on `machine` now. With `requeued`, it went back
    /// to the machine's queue (its work is lost) and may start again later.
    Stop {
        task: TaskId,
        machine: MachineId,
        requeued: bool,
    },
    /// The task left the platform; every submitted task gets exactly one.
    Ended(EndRecord),
    /// Deliver [`Event::Timer`] with this token at `at`.
    Timer { at: Time, token: u64 },
    /// A policy (Control) changed a task's priority.
    Priority { task: TaskId, priority: i64 },
}

/// Everything the core knew about a task when it left, every run included
/// (Diet-ethic counts killed work per server; a Gantt chart shows it).
/// Each run is plain data; the full list of slots of a run is in its
/// [`Action::Start`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    pub spec: TaskSpec,
    pub submit: Time,
    pub end: Time,
    pub outcome: Outcome,
    /// The machine whose queue held it; `None` if it was rejected.
    pub machine: Option<MachineId>,
    /// Runs stopped and requeued before (their work was lost, the time was
    /// spent); empty for most tasks.
    pub requeued: Vec<Attempt>,
    /// The run it ended in, if it ended running.
    pub last: Option<Attempt>,
    /// Measured duration of each finished phase of its last run.
    pub phases: [Option<Time>; 4],
}

/// The slots a run holds: inline up to four (no allocation for sequential
/// tasks and small jobs).
pub type SlotList = smallvec::SmallVec<[SlotId; 4]>;

/// One run of a task: where, when, and how it stopped. Plain data: the
/// run's full list of slots is in its [`Action::Start`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub machine: MachineId,
    /// The first slot it held.
    pub slot: SlotId,
    /// How many slots it held.
    pub slots: u32,
    pub start: Time,
    pub stop: Time,
    pub end: AttemptEnd,
}

/// How a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptEnd {
    Completed,
    /// Stopped by the Order policy and put back in the queue.
    Requeued,
    Killed,
    Failed,
    Cancelled,
}

impl AttemptEnd {
    pub fn name(self) -> &'static str {
        match self {
            AttemptEnd::Completed => "completed",
            AttemptEnd::Requeued => "requeued",
            AttemptEnd::Killed => "killed",
            AttemptEnd::Failed => "failed",
            AttemptEnd::Cancelled => "cancelled",
        }
    }
}

impl Attempt {
    /// How long it held its slots.
    pub fn duration(&self) -> Time {
        self.stop - self.start
    }
}

impl EndRecord {
    /// Every run, in order: the requeued ones, then the one it ended in.
    pub fn runs(&self) -> impl Iterator<Item = &Attempt> {
        self.requeued.iter().chain(self.last.as_ref())
    }
    /// The run it ended in; `None` if it ended while waiting (even after
    /// earlier, requeued runs).
    pub fn final_run(&self) -> Option<&Attempt> {
        self.last.as_ref()
    }
    /// Start of the run it ended in.
    pub fn start(&self) -> Option<Time> {
        self.last.map(|a| a.start)
    }
    /// The first slot of the run it ended in.
    pub fn slot(&self) -> Option<SlotId> {
        self.last.map(|a| a.slot)
    }
    /// How many times it started.
    pub fn starts(&self) -> u32 {
        self.requeued.len() as u32 + u32::from(self.last.is_some())
    }
    /// Time it held its slots over all runs.
    pub fn busy(&self) -> Time {
        self.runs().fold(Time::ZERO, |b, a| b + a.duration())
    }
}

/// A state change, as seen by policies. Delivered to `Allocate` and `Order`
/// synchronously, while the core applies it (so a policy's own indexes stay
/// consistent with the view), and to `Control` in batches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
