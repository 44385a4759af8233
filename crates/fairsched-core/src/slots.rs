//! Slots in runs of consecutive ids: what a run holds ([`SlotList`]) and a
//! machine's free slots ([`FreePool`]), so that starting or ending a job
//! costs the number of runs it holds, not its width (a 4,096-slot job on
//! a fresh machine is one run), and no step costs the machine's size.
//!
//! Both keep the order the per-slot representation had: a [`SlotList`]
//! iterates its slots in the order they were handed out, and a
//! [`FreePool`] hands slots out in exactly the order the former stack of
//! single slots did (last freed, first handed out; a run given back is
//! handed out again in its own order), so every schedule and every output
//! is the same.

use crate::ids::SlotId;
use crate::prelude::*;
use core::ops::Range;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Consecutive slot ids `first, first + 1, …, first + len - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRun {
    pub first: SlotId,
    pub len: u32,
}

impl SlotRun {
    fn range(self) -> Range<u32> {
        self.first.0..self.first.0 + self.len
    }
    fn end(self) -> u32 {
        self.first.0 + self.len
    }
}

/// The slots a run holds, in the order they were handed out, kept as
/// maximal runs of consecutive ids (inline up to two runs: no allocation
/// for most jobs, however wide). Two lists of the same slots in the same
/// order are equal, and serialize as the plain sequence of ids.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SlotList {
    runs: smallvec::SmallVec<[SlotRun; 2]>,
    len: u32,
}

impl SlotList {
    pub fn new() -> SlotList {
        SlotList::default()
    }
    /// Slots held.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The first slot.
    pub fn first(&self) -> Option<&SlotId> {
        self.runs.first().map(|r| &r.first)
    }
    /// The maximal runs of consecutive ids, in order.
    pub fn runs(&self) -> &[SlotRun] {
        &self.runs
    }
    /// The slots in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            runs: self.runs.iter(),
            front: 0..0,
            back: 0..0,
            left: self.len,
        }
    }
    pub fn contains(&self, slot: SlotId) -> bool {
        self.runs.iter().any(|r| r.range().contains(&slot.0))
    }
    pub fn to_vec(&self) -> Vec<SlotId> {
        self.iter().collect()
    }
    /// Appends `slot`.
    pub fn push(&mut self, slot: SlotId) {
        self.push_run(slot, 1);
    }
    /// Appends `first, first + 1, …, first + len - 1`.
    pub fn push_run(&mut self, first: SlotId, len: u32) {
        if len == 0 {
            return;
        }
        self.len += len;
        if let Some(last) = self.runs.last_mut()
            && last.end() == first.0
        {
            last.len += len;
            return;
        }
        self.runs.push(SlotRun { first, len });
    }
    pub fn from_slice(slots: &[SlotId]) -> SlotList {
        slots.iter().copied().collect()
    }
    pub fn from_vec(slots: Vec<SlotId>) -> SlotList {
        slots.into_iter().collect()
    }
}

impl core::fmt::Debug for SlotList {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<SlotId> for SlotList {
    fn from_iter<I: IntoIterator<Item = SlotId>>(iter: I) -> SlotList {
        let mut l = SlotList::new();
        for s in iter {
            l.push(s);
        }
        l
    }
}

impl PartialEq<[SlotId]> for SlotList {
    fn eq(&self, other: &[SlotId]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl<'a> IntoIterator for &'a SlotList {
    type Item = SlotId;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The slots of a [`SlotList`] in order (either end).
#[derive(Clone)]
pub struct Iter<'a> {
    runs: core::slice::Iter<'a, SlotRun>,
    front: Range<u32>,
    back: Range<u32>,
    left: u32,
}

impl Iterator for Iter<'_> {
    type Item = SlotId;
    fn next(&mut self) -> Option<SlotId> {
        loop {
            if let Some(s) = self.front.next() {
                self.left -= 1;
                return Some(SlotId(s));
            }
            match self.runs.next() {
                Some(r) => self.front = r.range(),
                None => {
                    let s = self.back.next()?;
                    self.left -= 1;
                    return Some(SlotId(s));
                }
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<SlotId> {
        loop {
            if let Some(s) = self.back.next_back() {
                self.left -= 1;
                return Some(SlotId(s));
            }
            match self.runs.next_back() {
                Some(r) => self.back = r.range(),
                None => {
                    let s = self.front.next_back()?;
                    self.left -= 1;
                    return Some(SlotId(s));
                }
            }
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// The sequence of slot ids (the format of the former list of single
/// slots, byte for byte).
impl Serialize for SlotList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for SlotList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(SlotList::from_vec(Vec::<SlotId>::deserialize(d)?))
    }
}

/// A machine's free slots, handed out last freed first (a stack). Kept as
/// runs of consecutive ids while slots are only taken from the top and
/// given back whole (every replay whose policies let the core choose the
/// slots), so a start and an end cost the runs they move; turned into a
/// stack of single slots, indexed by each slot's position, the first time
/// a slot is taken out of the middle ([`FreePool::take`]: a policy that
/// picks its slots, a slot that leaves), which it then stays. Both hand
/// out the same slots in the same order.
#[derive(Clone, Debug)]
pub(crate) enum FreePool {
    /// Runs from the bottom of the stack to its top; the top run's first
    /// slot is handed out next, then its second, and so on.
    Runs { runs: Vec<SlotRun>, count: u32 },
    /// Single slots, bottom to top; each one's index is its `free_pos`.
    Slots(Vec<SlotId>),
}

impl Default for FreePool {
    fn default() -> FreePool {
        FreePool::Runs {
            runs: Vec::new(),
            count: 0,
        }
    }
}

/// Where a [`FreePool::Slots`] records each free slot's position.
pub(crate) trait Positions {
    fn set_pos(&mut self, slot: SlotId, pos: Option<u32>);
}

impl FreePool {
    pub fn len(&self) -> usize {
        match self {
            FreePool::Runs { count, .. } => *count as usize,
            FreePool::Slots(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether it keeps runs (no slot was taken out of its middle).
    pub fn in_runs(&self) -> bool {
        matches!(self, FreePool::Runs { .. })
    }
    /// Puts `slot` on top.
    pub fn push(&mut self, slot: SlotId, pos: &mut (impl Positions + ?Sized)) {
        match self {
            FreePool::Runs { runs, count } => {
                *count += 1;
                push_run(runs, SlotRun { first: slot, len: 1 });
            }
            FreePool::Slots(v) => {
                pos.set_pos(slot, Some(v.len() as u32));
                v.push(slot);
            }
        }
    }
    /// Gives back `list` whole: it is handed out again in its own order
    /// (as pushing its slots one by one from the last did).
    pub fn push_list(&mut self, list: &SlotList, pos: &mut (impl Positions + ?Sized)) {
        match self {
            FreePool::Runs { runs, count } => {
                *count += list.len;
                for &r in list.runs().iter().rev() {
                    push_run(runs, r);
                }
            }
            FreePool::Slots(_) => {
                for s in list.iter().rev() {
                    self.push(s, pos);
                }
            }
        }
    }
    /// Takes the `q` slots handed out next, in that order (`q` ≤ the
    /// free slots).
    pub fn pop_n(&mut self, q: usize, pos: &mut (impl Positions + ?Sized)) -> SlotList {
        let mut out = SlotList::new();
        match self {
            FreePool::Runs { runs, count } => {
                let mut need = q as u32;
                *count -= need;
                while need > 0 {
                    let top = runs.last_mut().expect("q free slots");
                    let take = need.min(top.len);
                    out.push_run(top.first, take);
                    top.first.0 += take;
                    top.len -= take;
                    if top.len == 0 {
                        runs.pop();
                    }
                    need -= take;
                }
            }
            FreePool::Slots(v) => {
                let at = v.len() - q;
                out = v[at..].iter().rev().copied().collect();
                v.truncate(at);
                for s in &out {
                    pos.set_pos(s, None);
                }
            }
        }
        out
    }
    /// Takes the free slot `slot` at stack position `at` (its `free_pos`,
    /// once a stack of single slots) out, the top slot taking its place:
    /// the first call turns runs into single slots (see [`FreePool`]).
    /// `position` finds `slot` in the runs' order when it has none.
    pub fn take(&mut self, slot: SlotId, at: Option<u32>, pos: &mut (impl Positions + ?Sized)) -> bool {
        if self.in_runs() {
            let stack = self.to_stack();
            let Some(p) = stack.iter().position(|&s| s == slot) else {
                return false;
            };
            for (i, &s) in stack.iter().enumerate() {
                pos.set_pos(s, Some(i as u32));
            }
            *self = FreePool::Slots(stack);
            return self.take(slot, Some(p as u32), pos);
        }
        let FreePool::Slots(v) = self else { unreachable!() };
        let Some(p) = at else { return false };
        v.swap_remove(p as usize);
        if let Some(&moved) = v.get(p as usize) {
            pos.set_pos(moved, Some(p));
        }
        pos.set_pos(slot, None);
        true
    }
    /// The free slots in the order they are handed out.
    pub fn iter(&self) -> Box<dyn Iterator<Item = SlotId> + '_> {
        match self {
            FreePool::Runs { runs, .. } => Box::new(runs.iter().rev().flat_map(|r| r.range().map(SlotId))),
            FreePool::Slots(v) => Box::new(v.iter().rev().copied()),
        }
    }
    /// The stack of single slots, bottom to top (the snapshot's form).
    pub fn to_stack(&self) -> Vec<SlotId> {
        let mut v: Vec<SlotId> = self.iter().collect();
        v.reverse();
        v
    }
    /// Runs holding the stack `bottom_to_top`.
    pub fn from_stack(bottom_to_top: &[SlotId]) -> FreePool {
        let mut runs = Vec::new();
        for &s in bottom_to_top {
            push_run(&mut runs, SlotRun { first: s, len: 1 });
        }
        FreePool::Runs {
            runs,
            count: bottom_to_top.len() as u32,
        }
    }
}

/// Puts `r` on top of `runs`, merged with the top run when `r` ends where
/// it starts (handed out `r`'s slots, then the top's, in one run).
fn push_run(runs: &mut Vec<SlotRun>, r: SlotRun) {
    if let Some(top) = runs.last_mut()
        && r.end() == top.first.0
    {
        top.first = r.first;
        top.len += r.len;
        return;
    }
    runs.push(r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The per-slot stack the pool replaces, with its positions.
    #[derive(Default)]
    struct Model {
        stack: Vec<SlotId>,
    }

    struct Pos(Vec<Option<u32>>);
    impl Positions for Pos {
        fn set_pos(&mut self, slot: SlotId, pos: Option<u32>) {
            self.0[slot.index()] = pos;
        }
    }

    #[test]
    fn a_list_keeps_order_and_runs() {
        let ids = |v: &[u32]| v.iter().map(|&s| SlotId(s)).collect::<Vec<_>>();
        let l = SlotList::from_slice(&ids(&[3, 4, 5, 9, 2, 3]));
        assert_eq!(l.len(), 6);
        assert_eq!(l.runs().len(), 3);
        assert_eq!(l.first(), Some(&SlotId(3)));
        assert_eq!(l.to_vec(), ids(&[3, 4, 5, 9, 2, 3]));
        assert_eq!(l.iter().rev().collect::<Vec<_>>(), ids(&[3, 2, 9, 5, 4, 3]));
        assert!(l.contains(SlotId(9)) && !l.contains(SlotId(6)));
        assert!(l == *ids(&[3, 4, 5, 9, 2, 3]).as_slice());
        assert_eq!(format!("{l:?}"), format!("{:?}", ids(&[3, 4, 5, 9, 2, 3])));
        // Both ends at once meet in the middle.
        let mut it = l.iter();
        assert_eq!(
            (it.next(), it.next_back(), it.len()),
            (Some(SlotId(3)), Some(SlotId(3)), 4)
        );
        assert_eq!(it.collect::<Vec<_>>(), ids(&[4, 5, 9, 2]));
        // One wide run takes no more room than one slot.
        let mut wide = SlotList::new();
        wide.push_run(SlotId(0), 100_000);
        assert_eq!((wide.len(), wide.runs().len()), (100_000, 1));
    }

    /// The wire format is the former `SmallVec<[SlotId; 4]>`'s.
    #[test]
    fn a_list_serializes_as_its_ids() {
        let ids: Vec<SlotId> = [7u32, 8, 9, 1, 40].iter().map(|&s| SlotId(s)).collect();
        let old: smallvec::SmallVec<[SlotId; 4]> = ids.iter().copied().collect();
        let new = SlotList::from_slice(&ids);
        let bytes = postcard::to_allocvec(&new).unwrap();
        assert_eq!(bytes, postcard::to_allocvec(&old).unwrap());
        assert_eq!(postcard::from_bytes::<SlotList>(&bytes).unwrap(), new);
    }

    proptest! {
        /// Random pops, pushes of single slots and of whole lists, and
        /// takes out of the middle, against the stack of single slots:
        /// the same slots handed out in the same order, the same free
        /// list, positions right once single slots, and never a slot
        /// handed out twice.
        #[test]
        fn the_pool_hands_out_what_the_stack_did(
            n in 1u32..200,
            ops in proptest::collection::vec((0u8..4, 0usize..64), 0..300),
        ) {
            let mut pool = FreePool::default();
            let mut model = Model::default();
            let mut pos = Pos(vec![None; n as usize]);
            let mut model_pos = vec![None; n as usize];
            for s in (0..n).rev() {
                pool.push(SlotId(s), &mut pos);
                model_pos[s as usize] = Some(model.stack.len() as u32);
                model.stack.push(SlotId(s));
            }
            let mut held: Vec<SlotList> = Vec::new();
            let mut out = vec![false; n as usize];
            for (op, x) in ops {
                match op {
                    0 | 1 if !model.stack.is_empty() => {
                        let q = 1 + x % model.stack.len().min(if op == 0 { 3 } else { 64 });
                        let got = pool.pop_n(q, &mut pos);
                        let at = model.stack.len() - q;
                        let want: Vec<SlotId> = model.stack[at..].iter().rev().copied().collect();
                        model.stack.truncate(at);
                        for s in &want {
                            model_pos[s.index()] = None;
                        }
                        prop_assert_eq!(got.to_vec(), want);
                        for s in &got {
                            prop_assert!(!core::mem::replace(&mut out[s.index()], true), "slot {} handed out twice", s);
                        }
                        held.push(got);
                    }
                    2 if !held.is_empty() => {
                        let list = held.swap_remove(x % held.len());
                        pool.push_list(&list, &mut pos);
                        for s in list.iter().rev() {
                            out[s.index()] = false;
                            model_pos[s.index()] = Some(model.stack.len() as u32);
                            model.stack.push(s);
                        }
                    }
                    3 if !model.stack.is_empty() => {
                        let slot = model.stack[x % model.stack.len()];
                        let p = pos.0[slot.index()];
                        prop_assert!(pool.take(slot, p, &mut pos));
                        let mp = model_pos[slot.index()].unwrap();
                        model.stack.swap_remove(mp as usize);
                        if let Some(&moved) = model.stack.get(mp as usize) {
                            model_pos[moved.index()] = Some(mp);
                        }
                        model_pos[slot.index()] = None;
                        // Taken out, it is not there to take again.
                        prop_assert!(!pool.take(slot, pos.0[slot.index()], &mut pos));
                        held.push(SlotList::from_slice(&[slot]));
                        out[slot.index()] = true;
                    }
                    _ => {}
                }
                prop_assert_eq!(pool.len(), model.stack.len());
                prop_assert_eq!(pool.to_stack(), model.stack.clone());
                if !pool.in_runs() {
                    prop_assert_eq!(&pos.0, &model_pos);
                }
            }
            prop_assert_eq!(FreePool::from_stack(&model.stack).to_stack(), model.stack.clone());
        }
    }

    /// A wide job on a fresh machine, and its end, move one run.
    #[test]
    fn a_wide_job_moves_one_run() {
        let mut pos = Pos(vec![None; 100_000]);
        let mut pool = FreePool::default();
        for s in (0..100_000).rev() {
            pool.push(SlotId(s), &mut pos);
        }
        let FreePool::Runs { runs, .. } = &pool else {
            panic!()
        };
        assert_eq!(runs.len(), 1);
        let a = pool.pop_n(60_000, &mut pos);
        let b = pool.pop_n(30_000, &mut pos);
        assert_eq!((a.runs().len(), b.runs().len()), (1, 1));
        assert_eq!((a.first(), b.first()), (Some(&SlotId(0)), Some(&SlotId(60_000))));
        pool.push_list(&a, &mut pos);
        pool.push_list(&b, &mut pos);
        let FreePool::Runs { runs, count } = &pool else {
            panic!()
        };
        assert_eq!((runs.len(), *count), (3, 100_000));
        // b's slots first, then a's, then the rest.
        assert_eq!(pool.pop_n(1, &mut pos).first(), Some(&SlotId(60_000)));
    }
}
