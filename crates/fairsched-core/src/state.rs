//! Platform state and the read-only views policies receive.
//!
//! The views are the non-clairvoyance boundary: they expose what a real
//! platform can observe (submit and start times, elapsed times, counts,
//! priorities, phase timings) and nothing else. No true runtime is stored
//! here at all; it lives in the driver, behind [`crate::RuntimeOracle`].
//! The users' estimates are shown only in the views of a policy whose
//! registry entry declares it reads them ([`crate::registry::Reads`]): a
//! blind policy's view answers `None` for every task, and no method of a
//! view hands out a whole [`TaskSpec`].

use crate::event::{Attempt, SlotList};
use crate::ids::{MachineId, OrgId, SlotId, TaskId, UserId};
use crate::model::{Phase, TaskSpec, WorkflowRef};
use crate::prelude::*;
use crate::snapshot::SnapshotError;
use crate::time::Time;
use core::hash::BuildHasher;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// Waiting, or running (boxed: one pointer in every live task, and most
/// live tasks wait; a run's slot list takes 24 bytes more). Its snapshot
/// form is the one of a struct variant `Running { start, slots }`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Status {
    Waiting,
    Running(Box<Run>),
}

/// The current run of a running task.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Run {
    pub start: Time,
    pub slots: crate::event::SlotList,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct PhaseLog {
    pub current: Option<(Phase, Time)>,
    pub done: [Option<Time>; 4],
}

/// A live task (112 bytes: the table holds one per waiting or running
/// task, ~190,000 at once in RICC's backlog under fair-share). The start
/// of its latest run is not kept: it is the running start, else the last
/// requeued run's ([`TaskView::last_start`]).
#[derive(Clone, Debug)]
pub(crate) struct TaskState {
    pub spec: TaskSpec,
    pub seq: u64,
    pub submit: Time,
    pub machine: MachineId,
    pub status: Status,
    /// Times it started.
    pub starts: u32,
    /// Requeued runs and phase timings: rare (a trace replay has neither).
    pub extra: Extra,
}

impl TaskState {
    /// The start of its latest run, if it ever started.
    pub fn last_start(&self) -> Option<Time> {
        match &self.status {
            Status::Running(run) => Some(run.start),
            Status::Waiting => self.extra.requeued().last().map(|a| a.start),
        }
    }
}

/// What few tasks have: runs stopped and requeued (the final run is added
/// to the end record) and the phase log of the current run. One pointer in
/// every live task, allocated at a task's first requeue or phase.
#[derive(Clone, Debug, Default)]
pub(crate) struct Extra(Option<Box<ExtraParts>>);

#[derive(Clone, Debug, Default)]
struct ExtraParts {
    requeued: Vec<Attempt>,
    phases: Option<PhaseLog>,
}

impl Extra {
    fn parts(&mut self) -> &mut ExtraParts {
        self.0.get_or_insert_with(Box::default)
    }
    pub fn requeued(&self) -> &[Attempt] {
        self.0.as_deref().map_or(&[], |p| p.requeued.as_slice())
    }
    pub fn push_requeued(&mut self, run: Attempt) {
        self.parts().requeued.push(run);
    }
    pub fn phases(&self) -> Option<&PhaseLog> {
        self.0.as_deref().and_then(|p| p.phases.as_ref())
    }
    /// The current run's phase log, created empty if it has none.
    pub fn phases_mut(&mut self) -> &mut PhaseLog {
        self.parts().phases.get_or_insert_with(PhaseLog::default)
    }
    /// A new run: no phase seen yet.
    pub fn clear_phases(&mut self) {
        if let Some(p) = self.0.as_deref_mut() {
            p.phases = None;
        }
    }
    /// The requeued runs and the last run's phase log.
    pub fn into_parts(self) -> (Vec<Attempt>, Option<PhaseLog>) {
        self.0
            .map_or_else(|| (Vec::new(), None), |p| (p.requeued, p.phases))
    }
    fn from_parts(requeued: Vec<Attempt>, phases: Option<PhaseLog>) -> Extra {
        Extra((!requeued.is_empty() || phases.is_some()).then(|| Box::new(ExtraParts { requeued, phases })))
    }
}

/// The snapshot form of a [`TaskState`] (format version 1, unchanged: the
/// latest start is written, and checked against the runs when read).
#[derive(Serialize)]
struct TaskRepr<'a> {
    #[serde(with = "crate::snapshot::spec")]
    spec: &'a TaskSpec,
    seq: u64,
    submit: Time,
    machine: MachineId,
    status: &'a Status,
    starts: u32,
    requeued: &'a [Attempt],
    last_start: Option<Time>,
    phases: Option<&'a PhaseLog>,
}

#[derive(Deserialize)]
struct TaskOwned {
    #[serde(with = "crate::snapshot::spec")]
    spec: TaskSpec,
    seq: u64,
    submit: Time,
    machine: MachineId,
    status: Status,
    starts: u32,
    requeued: Vec<Attempt>,
    last_start: Option<Time>,
    phases: Option<PhaseLog>,
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TaskRepr {
            spec: &self.spec,
            seq: self.seq,
            submit: self.submit,
            machine: self.machine,
            status: &self.status,
            starts: self.starts,
            requeued: self.extra.requeued(),
            last_start: self.last_start(),
            phases: self.extra.phases(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let o = TaskOwned::deserialize(d)?;
        let t = TaskState {
            spec: o.spec,
            seq: o.seq,
            submit: o.submit,
            machine: o.machine,
            status: o.status,
            starts: o.starts,
            extra: Extra::from_parts(o.requeued, o.phases),
        };
        if t.last_start() != o.last_start {
            return Err(serde::de::Error::custom(
                "a task's latest start disagrees with its runs",
            ));
        }
        Ok(t)
    }
}

/// Slab positions per chunk of a [`TaskTable`].
const CHUNK: usize = 4096;

/// The live tasks by id: a slab in chunks of [`CHUNK`] (grown a chunk at
/// a time and never moved, so growing never holds two copies of the
/// table, as a hash map's doubling does) and a hash index of slab
/// positions (4 bytes a bucket: the id is read from the slab). Memory
/// follows the most tasks live at once. Iteration order is the slab's,
/// not part of any contract.
#[derive(Clone, Default)]
pub(crate) struct TaskTable {
    chunks: Vec<Vec<Option<TaskState>>>,
    /// Empty positions, reused last-freed first.
    free: Vec<u32>,
    index: hashbrown::HashTable<u32>,
    len: usize,
}

/// The index's hash of a task id.
fn hash_id(id: TaskId) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(id.0)
}

fn slot_at(chunks: &[Vec<Option<TaskState>>], p: u32) -> &TaskState {
    chunks[p as usize / CHUNK][p as usize % CHUNK]
        .as_ref()
        .expect("an indexed position holds a task")
}

impl TaskTable {
    pub fn len(&self) -> usize {
        self.len
    }
    fn position(&self, id: TaskId) -> Option<u32> {
        let chunks = &self.chunks;
        self.index
            .find(hash_id(id), |&p| slot_at(chunks, p).spec.id == id)
            .copied()
    }
    pub fn contains_key(&self, id: &TaskId) -> bool {
        self.position(*id).is_some()
    }
    pub fn get(&self, id: &TaskId) -> Option<&TaskState> {
        self.position(*id).map(|p| slot_at(&self.chunks, p))
    }
    pub fn get_mut(&mut self, id: &TaskId) -> Option<&mut TaskState> {
        let p = self.position(*id)? as usize;
        self.chunks[p / CHUNK][p % CHUNK].as_mut()
    }
    /// Adds `task` under `id`, which must be its `spec.id` (the index
    /// reads ids from the slab); returns the task it replaces.
    pub fn insert(&mut self, id: TaskId, task: TaskState) -> Option<TaskState> {
        debug_assert_eq!(id, task.spec.id);
        let chunks = &self.chunks;
        let hash = hash_id(id);
        let entry = self.index.entry(
            hash,
            |&p| slot_at(chunks, p).spec.id == id,
            |&q| hash_id(slot_at(chunks, q).spec.id),
        );
        let vacant = match entry {
            hashbrown::hash_table::Entry::Occupied(o) => {
                let p = *o.get() as usize;
                return self.chunks[p / CHUNK][p % CHUNK].replace(task);
            }
            hashbrown::hash_table::Entry::Vacant(v) => v,
        };
        let p = match self.free.pop() {
            Some(p) => {
                self.chunks[p as usize / CHUNK][p as usize % CHUNK] = Some(task);
                p
            }
            None => {
                if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
                    self.chunks.push(Vec::with_capacity(CHUNK));
                }
                let n = self.chunks.len() - 1;
                let last = &mut self.chunks[n];
                last.push(Some(task));
                (n * CHUNK + last.len() - 1) as u32
            }
        };
        vacant.insert(p);
        self.len += 1;
        None
    }
    pub fn remove(&mut self, id: &TaskId) -> Option<TaskState> {
        let chunks = &self.chunks;
        let entry = self
            .index
            .find_entry(hash_id(*id), |&p| slot_at(chunks, p).spec.id == *id)
            .ok()?;
        let (p, _) = entry.remove();
        self.free.push(p);
        self.len -= 1;
        self.chunks[p as usize / CHUNK][p as usize % CHUNK].take()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&TaskId, &TaskState)> {
        self.chunks.iter().flatten().flatten().map(|t| (&t.spec.id, t))
    }
    pub fn keys(&self) -> impl Iterator<Item = &TaskId> {
        self.iter().map(|(id, _)| id)
    }
}

impl<'a> IntoIterator for &'a TaskTable {
    type Item = (&'a TaskId, &'a TaskState);
    type IntoIter = alloc::boxed::Box<dyn Iterator<Item = (&'a TaskId, &'a TaskState)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl core::ops::Index<&TaskId> for TaskTable {
    type Output = TaskState;
    fn index(&self, id: &TaskId) -> &TaskState {
        self.get(id).expect("a live task")
    }
}

impl core::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Written as [`crate::snapshot::sorted_map`] writes a map: the entries
/// in increasing id order (one state, one encoding).
impl Serialize for TaskTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut entries: Vec<(&TaskId, &TaskState)> = self.iter().collect();
        entries.sort_unstable_by_key(|e| *e.0);
        s.collect_seq(entries)
    }
}

impl<'de> Deserialize<'de> for TaskTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map: FxHashMap<TaskId, TaskState> = crate::snapshot::sorted_map::deserialize(d)?;
        let mut entries: Vec<(TaskId, TaskState)> = map.into_iter().collect();
        entries.sort_unstable_by_key(|e| e.0);
        let mut table = TaskTable::default();
        for (id, t) in entries {
            if t.spec.id != id {
                return Err(serde::de::Error::custom(format!(
                    "task {id} is stored with the spec of task {}",
                    t.spec.id
                )));
            }
            table.insert(id, t);
        }
        Ok(table)
    }
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
    /// Leaves when its task's run ends ([`crate::Event::SlotDrain`]).
    pub draining: bool,
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
    pub(crate) tasks: TaskTable,
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
            tasks: TaskTable::default(),
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
            draining: false,
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

    /// The whole view, estimates included: for drivers (a live broker
    /// explaining a decision, a test), never handed to a policy.
    pub fn view(&self) -> View<'_> {
        View {
            s: self,
            estimates: true,
        }
    }

    /// The view handed to a policy: with the users' estimates only if it
    /// declared it reads them.
    pub(crate) fn policy_view(&self, estimates: bool) -> View<'_> {
        View { s: self, estimates }
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
            if s.draining && (free || !s.present) {
                return Err(format!("draining slot {i} is free or has left"));
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
                Status::Running(run) => {
                    let slots = &run.slots;
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
    /// Whether it shows the users' estimates.
    estimates: bool,
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
    /// Whether `slot` drains: it takes no new task and leaves when its
    /// run ends ([`Event::SlotDrain`](crate::Event::SlotDrain)).
    pub fn slot_draining(&self, slot: SlotId) -> bool {
        self.s
            .slots
            .get(slot.index())
            .is_some_and(|s| s.present && s.draining)
    }
    pub fn slot_machine(&self, slot: SlotId) -> Option<MachineId> {
        self.s.slots.get(slot.index()).map(|s| s.machine)
    }
    pub fn task(&self, id: TaskId) -> Option<TaskView<'a>> {
        let now = self.s.now;
        let estimates = self.estimates;
        self.s.tasks.get(&id).map(|t| TaskView { t, now, estimates })
    }
    /// Whether this view shows the users' estimates (the policy's entry
    /// declared it reads them).
    pub fn shows_estimates(&self) -> bool {
        self.estimates
    }
    /// A task as submitted, seen through this view (what an `Allocate`
    /// policy is handed for an arriving task).
    pub fn spec<'s>(&self, spec: &'s TaskSpec) -> SpecView<'s> {
        SpecView {
            spec,
            estimates: self.estimates,
        }
    }
}

/// What a submitter said of a task, as a policy may see it: every field
/// of its [`TaskSpec`] but the estimate, which shows only to a policy
/// that declared it reads estimates.
#[derive(Clone, Copy)]
pub struct SpecView<'a> {
    spec: &'a TaskSpec,
    estimates: bool,
}

impl<'a> SpecView<'a> {
    pub fn id(&self) -> TaskId {
        self.spec.id
    }
    pub fn user(&self) -> UserId {
        self.spec.user
    }
    pub fn org(&self) -> OrgId {
        self.spec.org
    }
    pub fn slots(&self) -> u32 {
        self.spec.slots
    }
    pub fn priority(&self) -> i64 {
        self.spec.priority
    }
    /// The user's runtime estimate; `None` without one, and always `None`
    /// in the views of a blind policy.
    pub fn estimate(&self) -> Option<Time> {
        if self.estimates { self.spec.estimate } else { None }
    }
    pub fn workflow(&self) -> Option<WorkflowRef> {
        self.spec.workflow
    }
    pub fn optional(&self) -> bool {
        self.spec.optional
    }
    pub fn target(&self) -> Option<MachineId> {
        self.spec.target
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

/// A task as policies see it: no true runtime, by construction, and its
/// estimate only if the view shows estimates.
#[derive(Clone, Copy)]
pub struct TaskView<'a> {
    t: &'a TaskState,
    now: Time,
    estimates: bool,
}

impl<'a> TaskView<'a> {
    /// What its submitter said (see [`SpecView`]).
    pub fn spec(&self) -> SpecView<'a> {
        SpecView {
            spec: &self.t.spec,
            estimates: self.estimates,
        }
    }
    pub fn user(&self) -> UserId {
        self.t.spec.user
    }
    /// See [`SpecView::estimate`].
    pub fn estimate(&self) -> Option<Time> {
        self.spec().estimate()
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
            Status::Running(run) => Some(run.start),
            Status::Waiting => None,
        }
    }
    /// The start of the latest attempt, even if the task was requeued since.
    pub fn last_start(&self) -> Option<Time> {
        self.t.last_start()
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
            Status::Running(run) => &run.slots,
            Status::Waiting => &[],
        }
    }
    /// Times it started (requeues start it again).
    pub fn attempts(&self) -> u32 {
        self.t.starts
    }
    /// The phase the task is in and since when.
    pub fn phase(&self) -> Option<(Phase, Time)> {
        self.t.extra.phases().and_then(|p| p.current)
    }
    /// Measured duration of a finished phase.
    pub fn phase_duration(&self, p: Phase) -> Option<Time> {
        self.t.extra.phases().and_then(|l| l.done[p as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use proptest::prelude::*;

    fn task(id: u64, seq: u64) -> TaskState {
        TaskState {
            spec: TaskSpec::new(id, 1, 0),
            seq,
            submit: Time::from_secs(seq as i64),
            machine: MachineId(0),
            status: Status::Waiting,
            starts: 0,
            extra: Extra::default(),
        }
    }

    /// What a live task costs in the table (the slab holds `Option`s).
    #[test]
    fn a_live_task_takes_112_bytes() {
        assert!(
            core::mem::size_of::<TaskState>() <= 112,
            "{}",
            core::mem::size_of::<TaskState>()
        );
        assert_eq!(
            core::mem::size_of::<Option<TaskState>>(),
            core::mem::size_of::<TaskState>()
        );
    }

    /// The boxed run is written as the struct variant it replaced
    /// (snapshot format 1 unchanged).
    #[test]
    fn a_status_keeps_its_snapshot_bytes() {
        #[derive(Serialize)]
        enum Format1 {
            Waiting,
            Running { start: Time, slots: SlotList },
        }
        let slots = SlotList::from_slice(&[SlotId(3), SlotId(9)]);
        let start = Time::from_millis(1_234_567);
        let new = Status::Running(Box::new(Run {
            start,
            slots: slots.clone(),
        }));
        let old = Format1::Running { start, slots };
        assert_eq!(
            postcard::to_allocvec(&new).unwrap(),
            postcard::to_allocvec(&old).unwrap()
        );
        assert_eq!(
            postcard::to_allocvec(&Status::Waiting).unwrap(),
            postcard::to_allocvec(&Format1::Waiting).unwrap()
        );
        let back: Status = postcard::from_bytes(&postcard::to_allocvec(&old).unwrap()).unwrap();
        assert!(matches!(back, Status::Running(r) if r.start == start && r.slots.len() == 2));
    }

    proptest! {
        /// The table behaves as a map: random inserts (ids 0..200, some
        /// repeated) and removes against a `BTreeMap`, over several
        /// chunks' worth of positions reused after removal; then a
        /// snapshot round trip gives the same entries and the same bytes.
        #[test]
        fn the_table_is_a_map(ops in proptest::collection::vec((any::<bool>(), 0u64..200), 0..600)) {
            let mut table = TaskTable::default();
            let mut model: BTreeMap<u64, u64> = BTreeMap::new();
            for (i, &(insert, id)) in ops.iter().enumerate() {
                let seq = i as u64;
                if insert {
                    let old = table.insert(TaskId(id), task(id, seq)).map(|t| t.seq);
                    prop_assert_eq!(old, model.insert(id, seq));
                } else {
                    let old = table.remove(&TaskId(id)).map(|t| t.seq);
                    prop_assert_eq!(old, model.remove(&id));
                }
                prop_assert_eq!(table.len(), model.len());
            }
            for id in 0..200 {
                prop_assert_eq!(table.get(&TaskId(id)).map(|t| t.seq), model.get(&id).copied());
                prop_assert_eq!(table.contains_key(&TaskId(id)), model.contains_key(&id));
            }
            let mut listed: Vec<(u64, u64)> = table.iter().map(|(id, t)| (id.0, t.seq)).collect();
            listed.sort_unstable();
            prop_assert_eq!(listed, model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
            let bytes = postcard::to_allocvec(&table).unwrap();
            let back: TaskTable = postcard::from_bytes(&bytes).unwrap();
            prop_assert_eq!(postcard::to_allocvec(&back).unwrap(), bytes);
            prop_assert_eq!(back.len(), model.len());
        }
    }

    #[test]
    fn many_tasks_fill_several_chunks_and_reuse_positions() {
        let mut table = TaskTable::default();
        let n = 3 * CHUNK as u64 + 5;
        for id in 0..n {
            table.insert(TaskId(id), task(id, id));
        }
        for id in (0..n).step_by(2) {
            assert_eq!(table.remove(&TaskId(id)).map(|t| t.seq), Some(id));
        }
        let chunks = table.chunks.len();
        for id in n..n + n / 2 {
            table.insert(TaskId(id), task(id, id));
        }
        // Freed positions were reused: no chunk was added.
        assert_eq!(table.chunks.len(), chunks);
        assert_eq!(table.len() as u64, n - n.div_ceil(2) + n / 2);
        assert_eq!(table[&TaskId(1)].seq, 1);
        assert!(table.get(&TaskId(0)).is_none());
    }

    /// The latest start is the running start, else the last requeued
    /// run's, and a snapshot with another one is refused.
    #[test]
    fn the_latest_start_comes_from_the_runs() {
        let mut t = task(7, 0);
        assert_eq!(t.last_start(), None);
        t.status = Status::Running(Box::new(Run {
            start: Time::from_secs(5),
            slots: SlotList::from_slice(&[SlotId(0)]),
        }));
        assert_eq!(t.last_start(), Some(Time::from_secs(5)));
        t.status = Status::Waiting;
        t.extra.push_requeued(Attempt {
            machine: MachineId(0),
            slot: SlotId(0),
            slots: 1,
            start: Time::from_secs(5),
            stop: Time::from_secs(9),
            end: crate::event::AttemptEnd::Requeued,
        });
        assert_eq!(t.last_start(), Some(Time::from_secs(5)));
        let bytes = postcard::to_allocvec(&t).unwrap();
        let back: TaskState = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.last_start(), Some(Time::from_secs(5)));
        assert_eq!(back.extra.requeued().len(), 1);
        // A task that never ran, written with a latest start.
        let mut wrong = t.clone();
        wrong.extra = Extra::default();
        let forged = postcard::to_allocvec(&TaskRepr {
            spec: &wrong.spec,
            seq: 0,
            submit: wrong.submit,
            machine: wrong.machine,
            status: &wrong.status,
            starts: 0,
            requeued: &[],
            last_start: Some(Time::from_secs(3)),
            phases: None,
        })
        .unwrap();
        assert!(postcard::from_bytes::<TaskState>(&forged).is_err());
    }
}
