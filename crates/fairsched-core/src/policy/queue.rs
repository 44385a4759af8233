//! Waiting-task indexes shared by the Order policies.

use crate::event::Notice;
use crate::ids::{MachineId, OrgId, TaskId};
use crate::prelude::*;
use crate::state::{TaskView, View};
use alloc::collections::BTreeMap;

/// Waiting tasks ordered by a key `K` (which must be unique: end it with
/// the task's `seq`), each with its width (slots needed) and a small
/// payload `V` the policy reads on its hot path, plus the multiset of
/// widths so "nothing waiting can fit" is answered in O(log n).
#[derive(Clone, Debug)]
pub struct Waiting<K: Ord + Copy, V: Copy = ()> {
    by_key: BTreeMap<K, (TaskId, u32, V)>,
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
#[derive(Clone, Debug)]
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

/// Per machine, one FIFO queue per organization: the index behind the
/// organization-level orders (round-robin, fair-share), where each
/// organization's tasks start in the order it submitted them.
#[derive(Clone, Debug, Default)]
pub struct OrgQueues {
    machines: PerMachine<Vec<Waiting<u64>>>,
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
                    orgs.resize_with(o + 1, Waiting::default);
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
                        q.remove(task);
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

/// Per machine, waiting tasks keyed by `K` with payload `V`, maintained
/// from notices. `key` and `value` read them from the view (on queue and
/// priority changes).
#[derive(Clone, Debug)]
pub struct KeyedQueues<K: Ord + Copy, V: Copy = ()> {
    pub machines: PerMachine<Waiting<K, V>>,
    key: fn(&TaskView) -> K,
    value: fn(&TaskView) -> V,
}

impl<K: Ord + Copy> KeyedQueues<K> {
    pub fn new(key: fn(&TaskView) -> K) -> Self {
        KeyedQueues::with_value(key, |_| ())
    }
}

impl<K: Ord + Copy, V: Copy> KeyedQueues<K, V> {
    pub fn with_value(key: fn(&TaskView) -> K, value: fn(&TaskView) -> V) -> Self {
        KeyedQueues {
            machines: PerMachine::default(),
            key,
            value,
        }
    }
    pub fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                if let Some(t) = view.task(task) {
                    self.machines
                        .get(machine)
                        .insert_with(task, (self.key)(&t), t.slots(), (self.value)(&t));
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
                    let k = (self.key)(&t);
                    self.machines.get(t.machine()).rekey(task, k);
                }
            }
            _ => {}
        }
    }
    pub fn get(&mut self, m: MachineId) -> &mut Waiting<K, V> {
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
}
