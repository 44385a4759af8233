//! Waiting-task indexes shared by the Order policies.

use crate::event::Notice;
use crate::ids::{MachineId, OrgId, TaskId};
use crate::prelude::*;
use crate::state::{TaskView, View};
use alloc::collections::BTreeMap;
use core::fmt::Debug;
use core::marker::PhantomData;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Waiting tasks ordered by a key `K` (which must be unique: end it with
/// the task's `seq`), each with its width (slots needed) and a small
/// payload `V` the policy reads on its hot path, plus the multiset of
/// widths so "nothing waiting can fit" is answered in O(log n).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Waiting<K: Ord + Copy, V: Copy = ()> {
    by_key: BTreeMap<K, (TaskId, u32, V)>,
    #[serde(with = "crate::snapshot::sorted_map")]
    keys: FxHashMap<TaskId, K>,
    widths: BTreeMap<u32, u32>,
}

impl<K: Ord + Copy, V: Copy> Default for Waiting<K, V> {
    fn default() -> Self {
        Waiting {
            by_key: BTreeMap::new(),
            keys: FxHashMap::default(),
            widths: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy> Waiting<K> {
    pub fn insert(&mut self, task: TaskId, key: K, slots: u32) {
        self.insert_with(task, key, slots, ());
    }
}

impl<K: Ord + Copy, V: Copy> Waiting<K, V> {
    pub fn insert_with(&mut self, task: TaskId, key: K, slots: u32, value: V) {
        if let Some(old) = self.keys.insert(task, key) {
            self.by_key.remove(&old);
        } else {
            *self.widths.entry(slots).or_insert(0) += 1;
        }
        self.by_key.insert(key, (task, slots, value));
    }
    pub fn remove(&mut self, task: TaskId) -> bool {
        let Some(k) = self.keys.remove(&task) else {
            return false;
        };
        if let Some((_, q, _)) = self.by_key.remove(&k)
            && let alloc::collections::btree_map::Entry::Occupied(mut e) = self.widths.entry(q)
        {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
        true
    }
    pub fn rekey(&mut self, task: TaskId, key: K) {
        if let Some(old) = self.keys.get_mut(&task) {
            let v = self.by_key.remove(old).expect("indexed");
            *old = key;
            self.by_key.insert(key, v);
        }
    }
    pub fn len(&self) -> usize {
        self.by_key.len()
    }
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
    /// The first task in key order with its width.
    pub fn head(&self) -> Option<(TaskId, u32)> {
        self.by_key.first_key_value().map(|(_, &(t, q, _))| (t, q))
    }
    /// The first entry in key order, with its key and payload.
    pub fn first(&self) -> Option<(K, TaskId, u32, V)> {
        self.by_key.first_key_value().map(|(&k, &(t, q, v))| (k, t, q, v))
    }
    /// Tasks in key order.
    pub fn iter(&self) -> impl Iterator<Item = (TaskId, u32)> + '_ {
        self.by_key.values().map(|&(t, q, _)| (t, q))
    }
    /// Entries with a key greater than `after`, in key order, with payloads.
    pub fn after(&self, after: K) -> impl Iterator<Item = (K, TaskId, u32, V)> + '_ {
        use core::ops::Bound::{Excluded, Unbounded};
        self.by_key
            .range((Excluded(after), Unbounded))
            .map(|(&k, &(t, q, v))| (k, t, q, v))
    }
    /// The fewest slots any waiting task needs.
    pub fn narrowest(&self) -> Option<u32> {
        self.widths.first_key_value().map(|(&w, _)| w)
    }
    /// The first task in key order that needs at most `free` slots.
    /// O(log n) when everything waiting is sequential; in the worst case
    /// it scans past wider tasks, never when nothing can fit.
    pub fn first_fit(&self, free: u32) -> Option<TaskId> {
        if self.narrowest()? > free {
            return None;
        }
        self.iter().find(|&(_, q)| q <= free).map(|(t, _)| t)
    }
}

/// A [`Waiting`] index per machine, grown on demand.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PerMachine<T>(pub Vec<T>);

impl<T: Default> Default for PerMachine<T> {
    fn default() -> Self {
        PerMachine(Vec::new())
    }
}

impl<T: Default> PerMachine<T> {
    pub fn get(&mut self, m: MachineId) -> &mut T {
        if m.index() >= self.0.len() {
            self.0.resize_with(m.index() + 1, T::default);
        }
        &mut self.0[m.index()]
    }
}

/// One organization's waiting tasks in submission order (`seq`, which a
/// requeued task keeps), with their widths. Unlike [`Waiting`] it keeps
/// no index by task (16 bytes and a hash table's growth per waiting task,
/// ~190,000 of them in RICC's backlog): every notice that removes a task
/// comes with the view, which gives its `seq`. Its snapshot form is
/// [`Waiting<u64>`]'s.
#[derive(Clone, Debug, Default)]
pub struct Fifo {
    by_seq: BTreeMap<u64, (TaskId, u32, ())>,
}

impl Fifo {
    fn insert(&mut self, task: TaskId, seq: u64, slots: u32) {
        self.by_seq.insert(seq, (task, slots, ()));
    }
    fn remove(&mut self, task: TaskId, seq: u64) -> bool {
        match self.by_seq.get(&seq) {
            Some(&(t, _, _)) if t == task => self.by_seq.remove(&seq).is_some(),
            _ => false,
        }
    }
    fn head(&self) -> Option<(TaskId, u32)> {
        self.by_seq.first_key_value().map(|(_, &(t, q, _))| (t, q))
    }
}

impl Serialize for Fifo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // `Waiting<u64>`'s fields: the index by task in increasing task
        // order, as `sorted_map` writes it, and the widths' multiset.
        let mut keys: Vec<(TaskId, u64)> = self.by_seq.iter().map(|(&k, &(t, _, _))| (t, k)).collect();
        keys.sort_unstable();
        let mut widths: BTreeMap<u32, u32> = BTreeMap::new();
        for &(_, q, _) in self.by_seq.values() {
            *widths.entry(q).or_insert(0) += 1;
        }
        let mut st = s.serialize_struct("Waiting", 3)?;
        st.serialize_field("by_key", &self.by_seq)?;
        st.serialize_field("keys", &keys)?;
        st.serialize_field("widths", &widths)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Fifo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Waiting::<u64>::deserialize(d)?;
        Ok(Fifo { by_seq: w.by_key })
    }
}

/// Per machine, one FIFO queue per organization: the index behind the
/// organization-level orders (round-robin, fair-share), where each
/// organization's tasks start in the order it submitted them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OrgQueues {
    machines: PerMachine<Vec<Fifo>>,
}

impl OrgQueues {
    /// Keeps the index in step with the core.
    pub fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                let Some(t) = view.task(task) else { return };
                let o = t.org().index();
                let orgs = self.machines.get(machine);
                if o >= orgs.len() {
                    orgs.resize_with(o + 1, Fifo::default);
                }
                orgs[o].insert(task, t.seq(), t.slots());
            }
            Notice::Started { task, machine }
            | Notice::Left {
                task,
                machine: Some(machine),
                was_running: false,
                ..
            } => {
                if let Some(t) = view.task(task) {
                    let orgs = self.machines.get(machine);
                    if let Some(q) = orgs.get_mut(t.org().index()) {
                        q.remove(task, t.seq());
                    }
                }
            }
            _ => {}
        }
    }
    /// Organizations with a waiting head task that fits in `free` slots, in
    /// index order, with that head.
    pub fn eligible(&mut self, machine: MachineId, free: u32) -> impl Iterator<Item = (OrgId, TaskId)> + '_ {
        self.machines
            .get(machine)
            .iter()
            .enumerate()
            .filter_map(move |(o, q)| {
                q.head()
                    .filter(|&(_, w)| w <= free)
                    .map(|(t, _)| (OrgId(o as u32), t))
            })
    }
    pub fn head(&mut self, machine: MachineId, org: usize) -> Option<(TaskId, u32)> {
        self.machines.get(machine).get(org).and_then(|q| q.head())
    }
}

/// How a [`KeyedQueues`] orders its tasks: the key (unique: end it with
/// the task's `seq`) and the payload, read from the view on queue and
/// priority changes. A type rather than function pointers, so a policy's
/// queues are plain data (snapshots).
pub trait QueueKey {
    type K: Ord + Copy + Debug + Serialize + DeserializeOwned;
    type V: Copy + Debug + Serialize + DeserializeOwned;
    fn key(t: &TaskView) -> Self::K;
    fn value(t: &TaskView) -> Self::V;
}

/// Per machine, waiting tasks keyed by `Q::K` with payload `Q::V`,
/// maintained from notices.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct KeyedQueues<Q: QueueKey> {
    pub machines: PerMachine<Waiting<Q::K, Q::V>>,
    #[serde(skip)]
    order: PhantomData<fn() -> Q>,
}

impl<Q: QueueKey> Clone for KeyedQueues<Q> {
    fn clone(&self) -> Self {
        KeyedQueues {
            machines: self.machines.clone(),
            order: PhantomData,
        }
    }
}

impl<Q: QueueKey> Debug for KeyedQueues<Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KeyedQueues")
            .field("machines", &self.machines)
            .finish()
    }
}

impl<Q: QueueKey> Default for KeyedQueues<Q> {
    fn default() -> Self {
        KeyedQueues {
            machines: PerMachine::default(),
            order: PhantomData,
        }
    }
}

impl<Q: QueueKey> KeyedQueues<Q> {
    pub fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                if let Some(t) = view.task(task) {
                    self.machines
                        .get(machine)
                        .insert_with(task, Q::key(&t), t.slots(), Q::value(&t));
                }
            }
            Notice::Started { task, machine }
            | Notice::Left {
                task,
                machine: Some(machine),
                was_running: false,
                ..
            } => {
                self.machines.get(machine).remove(task);
            }
            Notice::PriorityChanged { task, .. } => {
                if let Some(t) = view.task(task).filter(|t| !t.is_running()) {
                    let k = Q::key(&t);
                    self.machines.get(t.machine()).rekey(task, k);
                }
            }
            _ => {}
        }
    }
    pub fn get(&mut self, m: MachineId) -> &mut Waiting<Q::K, Q::V> {
        self.machines.get(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_skips_wide_tasks_and_tracks_widths() {
        let mut w = Waiting::<u64>::default();
        w.insert(TaskId(1), 1, 8);
        w.insert(TaskId(2), 2, 2);
        w.insert(TaskId(3), 3, 4);
        assert_eq!(w.first_fit(1), None);
        assert_eq!(w.first_fit(3), Some(TaskId(2)));
        assert_eq!(w.first_fit(8), Some(TaskId(1)));
        assert!(w.remove(TaskId(2)));
        assert!(!w.remove(TaskId(2)));
        assert_eq!(w.first_fit(3), None);
        w.rekey(TaskId(3), 0);
        assert_eq!(w.head(), Some((TaskId(3), 4)));
        assert_eq!(w.len(), 2);
    }

    /// A [`Fifo`] snapshots to the bytes of the [`Waiting<u64>`] it
    /// replaced, and reads them back.
    #[test]
    fn a_fifo_keeps_the_snapshot_bytes_of_waiting() {
        let (mut w, mut f) = (Waiting::<u64>::default(), Fifo::default());
        for (task, seq, q) in [(9, 4, 2), (3, 7, 1), (12, 5, 2), (1, 9, 8)] {
            w.insert(TaskId(task), seq, q);
            f.insert(TaskId(task), seq, q);
        }
        assert!(w.remove(TaskId(12)) && f.remove(TaskId(12), 5));
        assert!(!f.remove(TaskId(3), 4), "another task's seq");
        let bytes = postcard::to_allocvec(&w).unwrap();
        assert_eq!(postcard::to_allocvec(&f).unwrap(), bytes);
        let back: Fifo = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.head(), Some((TaskId(9), 2)));
        assert_eq!(postcard::to_allocvec(&back).unwrap(), bytes);
    }
}
