//! Platform state and the read-only views policies receive.
//!
//! The views are the non-clairvoyance boundary: they expose what a real
//! platform can observe (submit and start times, elapsed times, counts,
//! priorities, user estimates, phase timings) and nothing else. No true
//! runtime is stored here at all; it lives in the driver, behind
//! [`crate::RuntimeOracle`].

use crate::event::{Attempt, SlotList};
use crate::ids::{MachineId, OrgId, SlotId, TaskId};
use crate::model::{Phase, TaskSpec};
use crate::prelude::*;
use crate::snapshot::SnapshotError;
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// The initial platform: machines, each a list of slot owners.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    /// `machines[i][j]` is the organization owning slot `j` of machine `i`.
    pub machines: Vec<Vec<OrgId>>,
    /// Number of organizations (owners and submitters are `0..orgs`).
    pub orgs: u32,
}

impl Platform {
    /// One machine of `n` slots owned by organization 0.
    pub fn pool(n: u32) -> Platform {
        Platform {
            machines: vec![vec![OrgId(0); n as usize]],
            orgs: 1,
        }
    }
    /// Machines of the given sizes, every slot owned by organization 0.
    pub fn machines(sizes: &[u32]) -> Platform {
        Platform {
            machines: sizes.iter().map(|&n| vec![OrgId(0); n as usize]).collect(),
            orgs: 1,
        }
    }
    /// One machine whose slots are split among organizations:
    /// `per_org[o]` slots owned by `o`, in organization order.
    pub fn owned_pool(per_org: &[u32]) -> Platform {
        let slots = per_org
            .iter()
            .enumerate()
            .flat_map(|(o, &n)| core::iter::repeat_n(OrgId(o as u32), n as usize));
        Platform {
            machines: vec![slots.collect()],
            orgs: per_org.len().max(1) as u32,
        }
    }
    pub fn total_slots(&self) -> u32 {
        self.machines.iter().map(|m| m.len() as u32).sum()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Status {
    Waiting,
    Running {
        start: Time,
        slots: crate::event::SlotList,
    },
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct PhaseLog {
    pub current: Option<(Phase, Time)>,
    pub done: [Option<Time>; 4],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TaskState {
    #[serde(with = "crate::snapshot::spec")]
    pub spec: TaskSpec,
    pub seq: u64,
    pub submit: Time,
    pub machine: MachineId,
    pub status: Status,
    /// Times it started.
    pub starts: u32,
    /// Runs stopped and requeued (rare: empty, so unallocated, for most
    /// tasks); the final run is added to the end record.
    pub requeued: Vec<Attempt>,
    pub last_start: Option<Time>,
    /// Only for tasks that report phases (boxed: most tasks never do).
    pub phases: Option<Box<PhaseLog>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct MachineState {
    /// Present slots (joined and not left).
    pub capacity: u32,
    /// Free present slots; a stack, so the choice is deterministic.
    pub free: Vec<SlotId>,
    pub waiting: u32,
    pub waiting_slots: u64,
    pub running: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SlotState {
    pub machine: MachineId,
    pub owner: OrgId,
    pub task: Option<TaskId>,
    pub present: bool,
    /// Position in its machine's free list, if free.
    pub free_pos: Option<u32>,
}

/// Everything the core tracks. Memory is O(live tasks + slots + orgs).
///
/// Its serde form is the snapshot format's ([`crate::snapshot`]), not a
/// stable interface.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub(crate) now: Time,
    #[serde(with = "crate::snapshot::sorted_map")]
    pub(crate) tasks: FxHashMap<TaskId, TaskState>,
    pub(crate) machines: Vec<MachineState>,
    pub(crate) slots: Vec<SlotState>,
    /// Present slots owned by each organization.
    pub(crate) org_slots: Vec<u32>,
    pub(crate) next_seq: u64,
    pub(crate) waiting: u64,
    pub(crate) busy_slots: u64,
}

impl State {
    pub fn new(platform: &Platform) -> State {
        let mut s = State {
            now: Time::ZERO,
            tasks: FxHashMap::default(),
            machines: Vec::with_capacity(platform.machines.len()),
            slots: Vec::new(),
            org_slots: vec![0; platform.orgs as usize],
            next_seq: 0,
            waiting: 0,
            busy_slots: 0,
        };
        for (m, owners) in platform.machines.iter().enumerate() {
            s.machines.push(MachineState::default());
            // Push in reverse so the free stack hands out low slot ids first.
            let first = s.slots.len() as u32;
            for &o in owners {
                s.add_slot(MachineId(m as u32), o);
            }
            let n = owners.len() as u32;
            s.machines[m].free.clear();
            for id in (first..first + n).rev() {
                s.push_free(SlotId(id));
            }
        }
        s
    }

    /// Makes `org` known (a submitter that owns no slot of the platform).
    pub(crate) fn know_org(&mut self, org: OrgId) {
        if org.index() >= self.org_slots.len() {
            self.org_slots.resize(org.index() + 1, 0);
        }
    }

    pub(crate) fn add_slot(&mut self, machine: MachineId, owner: OrgId) -> SlotId {
        let id = SlotId(self.slots.len() as u32);
        self.slots.push(SlotState {
            machine,
            owner,
            task: None,
            present: true,
            free_pos: None,
        });
        self.know_org(owner);
        self.org_slots[owner.index()] += 1;
        self.machines[machine.index()].capacity += 1;
        self.push_free(id);
        id
    }

    pub(crate) fn push_free(&mut self, slot: SlotId) {
        push_free(&mut self.slots, &mut self.machines, slot);
    }

    /// Take a specific free slot out of its machine's free list in O(1).
    pub(crate) fn take_free(&mut self, slot: SlotId) -> bool {
        let Some(pos) = self.slots.get(slot.index()).and_then(|s| s.free_pos) else {
            return false;
        };
        let machine = self.slots[slot.index()].machine;
        let free = &mut self.machines[machine.index()].free;
        free.swap_remove(pos as usize);
        if let Some(&moved) = free.get(pos as usize) {
            self.slots[moved.index()].free_pos = Some(pos);
        }
        self.slots[slot.index()].free_pos = None;
        true
    }

    /// Take the `q` free slots the core hands out next (the top of the
    /// stack, in the order repeated pops would give).
    pub(crate) fn pop_free_n(&mut self, machine: MachineId, q: usize) -> SlotList {
        let free = &mut self.machines[machine.index()].free;
        let at = free.len() - q;
        let slots: SlotList = free[at..].iter().rev().copied().collect();
        free.truncate(at);
        for &s in &slots {
            self.slots[s.index()].free_pos = None;
        }
        slots
    }

    pub fn view(&self) -> View<'_> {
        View { s: self }
    }

    /// Checks a state read from a snapshot before a scheduler adopts it:
    /// built on the same initial platform as `initial` (the state of the
    /// scheduler being restored, fresh from its configuration), and
    /// consistent (every counter, free list and held slot agrees with the
    /// tasks), so no later step can trip over it. O(state).
    pub(crate) fn check_restored(&self, initial: &State) -> Result<(), SnapshotError> {
        let mismatch = |why: String| Err(SnapshotError::Mismatch(why));
        if self.machines.len() != initial.machines.len() {
            return mismatch(format!(
                "the snapshot's platform has {} machines, this scheduler's {}",
                self.machines.len(),
                initial.machines.len()
            ));
        }
        if self.slots.len() < initial.slots.len() || self.org_slots.len() < initial.org_slots.len() {
            return mismatch(format!(
                "the snapshot's platform has {} slots and {} organizations, fewer than the {} and {} this scheduler starts with",
                self.slots.len(),
                self.org_slots.len(),
                initial.slots.len(),
                initial.org_slots.len()
            ));
        }
        for (i, (a, b)) in self.slots.iter().zip(&initial.slots).enumerate() {
            if (a.machine, a.owner) != (b.machine, b.owner) {
                return mismatch(format!(
                    "slot {i} is on machine {} owned by organization {} in the snapshot, \
                     on machine {} owned by {} in this scheduler's platform",
                    a.machine, a.owner, b.machine, b.owner
                ));
            }
        }
        self.check_consistent().map_err(SnapshotError::Corrupt)
    }

    fn check_consistent(&self) -> Result<(), String> {
        let (nm, ns, no) = (self.machines.len(), self.slots.len(), self.org_slots.len());
        let mut capacity = vec![0u32; nm];
        let mut owned = vec![0u32; no];
        let (mut free_marked, mut held) = (0usize, 0u64);
        for (i, s) in self.slots.iter().enumerate() {
            if s.machine.index() >= nm || s.owner.index() >= no {
                return Err(format!(
                    "slot {i} names a machine or an organization that does not exist"
                ));
            }
            let free = s.free_pos.is_some();
            if s.present {
                capacity[s.machine.index()] += 1;
                owned[s.owner.index()] += 1;
                if free == s.task.is_some() {
                    return Err(format!("present slot {i} is neither free nor held (or both)"));
                }
            } else if free || s.task.is_some() {
                return Err(format!("slot {i} has left but is free or held"));
            }
            free_marked += usize::from(free);
            held += u64::from(s.task.is_some());
        }
        if owned != self.org_slots {
            return Err("slots owned per organization disagree with the slots".into());
        }
        let mut free_listed = 0usize;
        for (m, ms) in self.machines.iter().enumerate() {
            if ms.capacity != capacity[m] {
                return Err(format!("machine {m}'s capacity disagrees with its slots"));
            }
            for (p, slot) in ms.free.iter().enumerate() {
                let ok = self
                    .slots
                    .get(slot.index())
                    .is_some_and(|s| s.machine.index() == m && s.free_pos == Some(p as u32));
                if !ok {
                    return Err(format!(
                        "machine {m}'s free list holds slot {slot}, which is not free there"
                    ));
                }
            }
            free_listed += ms.free.len();
        }
        if free_listed != free_marked {
            return Err("free slots disagree with the machines' free lists".into());
        }
        let mut count = vec![(0u32, 0u64, 0u32); nm];
        let (mut waiting, mut busy) = (0u64, 0u64);
        let mut seqs = Vec::with_capacity(self.tasks.len());
        let mut claimed = vec![false; ns];
        for (&id, t) in &self.tasks {
            let m = t.machine.index();
            if t.spec.id != id
                || m >= nm
                || t.spec.slots == 0
                || t.spec.org.index() >= no
                || t.seq >= self.next_seq
            {
                return Err(format!("task {id} is inconsistent"));
            }
            seqs.push(t.seq);
            match &t.status {
                Status::Waiting => {
                    count[m].0 += 1;
                    count[m].1 += u64::from(t.spec.slots);
                    waiting += 1;
                }
                Status::Running { slots, .. } => {
                    if slots.len() != t.spec.slots as usize {
                        return Err(format!(
                            "task {id} holds {} slots, needs {}",
                            slots.len(),
                            t.spec.slots
                        ));
                    }
                    for s in slots {
                        let ok = self
                            .slots
                            .get(s.index())
                            .is_some_and(|st| st.task == Some(id) && st.machine == t.machine)
                            && !core::mem::replace(&mut claimed[s.index()], true);
                        if !ok {
                            return Err(format!("task {id} holds slot {s}, which does not run it"));
                        }
                    }
                    count[m].2 += 1;
                    busy += slots.len() as u64;
                }
            }
        }
        for (m, ms) in self.machines.iter().enumerate() {
            if (ms.waiting, ms.waiting_slots, ms.running) != count[m] {
                return Err(format!("machine {m}'s task counters disagree with its tasks"));
            }
        }
        if waiting != self.waiting || busy != self.busy_slots || busy != held {
            return Err("waiting or busy counters disagree with the tasks".into());
        }
        seqs.sort_unstable();
        if seqs.windows(2).any(|w| w[0] == w[1]) {
            return Err("two tasks share a submission sequence number".into());
        }
        Ok(())
    }
}

/// Puts a slot back on top of its machine's free stack (a free function,
/// so callers can hold other fields of [`State`] meanwhile).
pub(crate) fn push_free(slots: &mut [SlotState], machines: &mut [MachineState], slot: SlotId) {
    let s = &mut slots[slot.index()];
    let m = &mut machines[s.machine.index()];
    s.free_pos = Some(m.free.len() as u32);
    m.free.push(slot);
}

/// Read-only view of the platform handed to policies.
#[derive(Clone, Copy)]
pub struct View<'a> {
    s: &'a State,
}

impl<'a> View<'a> {
    pub fn now(&self) -> Time {
        self.s.now
    }
    pub fn machine_count(&self) -> usize {
        self.s.machines.len()
    }
    pub fn machines(&self) -> impl Iterator<Item = MachineView<'a>> + 'a {
        let s = self.s;
        (0..s.machines.len()).map(move |i| MachineView {
            s,
            id: MachineId(i as u32),
        })
    }
    pub fn machine(&self, id: MachineId) -> MachineView<'a> {
        MachineView { s: self.s, id }
    }
    /// Organizations known to the platform: `0..org_count()` covers every
    /// owner declared by the platform and every organization that has
    /// submitted a task so far.
    pub fn org_count(&self) -> usize {
        self.s.org_slots.len()
    }
    /// Present slots owned by `org`.
    pub fn org_slots(&self, org: OrgId) -> u32 {
        self.s.org_slots.get(org.index()).copied().unwrap_or(0)
    }
    pub fn total_slots(&self) -> u32 {
        self.s.machines.iter().map(|m| m.capacity).sum()
    }
    pub fn busy_slots(&self) -> u64 {
        self.s.busy_slots
    }
    pub fn waiting_tasks(&self) -> u64 {
        self.s.waiting
    }
    pub fn slot_owner(&self, slot: SlotId) -> Option<OrgId> {
        self.s.slots.get(slot.index()).map(|s| s.owner)
    }
    /// The task on `slot`, if it is busy.
    pub fn slot_task(&self, slot: SlotId) -> Option<TaskId> {
        self.s.slots.get(slot.index()).and_then(|s| s.task)
    }
    /// Whether `slot` is part of the platform (joined and not left).
    pub fn slot_present(&self, slot: SlotId) -> bool {
        self.s.slots.get(slot.index()).is_some_and(|s| s.present)
    }
    pub fn slot_machine(&self, slot: SlotId) -> Option<MachineId> {
        self.s.slots.get(slot.index()).map(|s| s.machine)
    }
    pub fn task(&self, id: TaskId) -> Option<TaskView<'a>> {
        let now = self.s.now;
        self.s.tasks.get(&id).map(|t| TaskView { t, now })
    }
}

/// A machine as policies see it.
#[derive(Clone, Copy)]
pub struct MachineView<'a> {
    s: &'a State,
    id: MachineId,
}

impl<'a> MachineView<'a> {
    fn m(&self) -> &'a MachineState {
        &self.s.machines[self.id.index()]
    }
    pub fn id(&self) -> MachineId {
        self.id
    }
    /// Present slots.
    pub fn capacity(&self) -> u32 {
        self.m().capacity
    }
    pub fn free(&self) -> u32 {
        self.m().free.len() as u32
    }
    /// Free slots, in the order the core would hand them out.
    pub fn free_slots(&self) -> impl Iterator<Item = SlotId> + 'a {
        self.m().free.iter().rev().copied()
    }
    pub fn waiting(&self) -> u32 {
        self.m().waiting
    }
    /// Slots demanded by the waiting tasks.
    pub fn waiting_slots(&self) -> u64 {
        self.m().waiting_slots
    }
    pub fn running(&self) -> u32 {
        self.m().running
    }
    pub fn busy(&self) -> u32 {
        self.m().capacity - self.m().free.len() as u32
    }
}

/// A task as policies see it: no true runtime, by construction.
#[derive(Clone, Copy)]
pub struct TaskView<'a> {
    t: &'a TaskState,
    now: Time,
}

impl<'a> TaskView<'a> {
    pub fn spec(&self) -> &'a TaskSpec {
        &self.t.spec
    }
    pub fn id(&self) -> TaskId {
        self.t.spec.id
    }
    pub fn org(&self) -> OrgId {
        self.t.spec.org
    }
    pub fn slots(&self) -> u32 {
        self.t.spec.slots
    }
    pub fn priority(&self) -> i64 {
        self.t.spec.priority
    }
    /// Submission order (unique, increasing): the FIFO key.
    pub fn seq(&self) -> u64 {
        self.t.seq
    }
    pub fn submit(&self) -> Time {
        self.t.submit
    }
    pub fn machine(&self) -> MachineId {
        self.t.machine
    }
    pub fn is_running(&self) -> bool {
        matches!(self.t.status, Status::Running { .. })
    }
    pub fn start(&self) -> Option<Time> {
        match &self.t.status {
            Status::Running { start, .. } => Some(*start),
            Status::Waiting => None,
        }
    }
    /// The start of the latest attempt, even if the task was requeued since.
    pub fn last_start(&self) -> Option<Time> {
        self.t.last_start
    }
    /// Time since the current start (zero while waiting).
    pub fn elapsed(&self) -> Time {
        self.start().map_or(Time::ZERO, |s| self.now - s)
    }
    /// Time since submission.
    pub fn age(&self) -> Time {
        self.now - self.t.submit
    }
    /// Slots held while running.
    pub fn held_slots(&self) -> &'a [SlotId] {
        match &self.t.status {
            Status::Running { slots, .. } => slots,
            Status::Waiting => &[],
        }
    }
    /// Times it started (requeues start it again).
    pub fn attempts(&self) -> u32 {
        self.t.starts
    }
    /// The phase the task is in and since when.
    pub fn phase(&self) -> Option<(Phase, Time)> {
        self.t.phases.as_ref().and_then(|p| p.current)
    }
    /// Measured duration of a finished phase.
    pub fn phase_duration(&self, p: Phase) -> Option<Time> {
        self.t.phases.as_ref().and_then(|l| l.done[p as usize])
    }
}
