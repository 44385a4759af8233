//! `direct-contr` — DIRECTCONTR, the paper's heuristic (Algorithm 1 of
//! spec/shapley.md, with the seed's typo in lines 15–16 corrected: an
//! interval's utility goes to ψ of the job's owner and to φ of the
//! processor's owner).
//!
//! Per organization it keeps finUt, finCon, φ, ψ (all 0 at the start). On
//! each event (tprev → t), with Δ = t − tprev:
//! 1. `φ[O] += Δ·finCon[O]`, `ψ[O] += Δ·finUt[O]`;
//! 2. for every processor that ran a job J during (tprev, t] (jobs that
//!    complete at t included): finUt[own(J)] += Δ, finCon[own(m)] += Δ,
//!    ψ[own(J)] += ½Δ(Δ+1), φ[own(m)] += ½Δ(Δ+1);
//! 3. each free processor, in a random order, goes to the organization with
//!    waiting jobs and the largest φ − ψ (ties: lowest index), which starts
//!    its first waiting job there: `finUt[org] += 1`, `finCon[own(m)] += 1`.
//!
//! It never reads a runtime: φ and ψ are its own estimates (the `+1` at a
//! start makes ψ run ahead of ψsp); metrics use the exact ψsp.
//!
//! **Flat in processors.** The paper walks all processors at every event.
//! Step 2 only needs, per organization, how many processors run its jobs
//! and how many of its processors are busy, so those counts are kept
//! instead. The accrual of an interval is additive (two steps Δ₁, Δ₂ give
//! what one step Δ₁+Δ₂ gives), so it is applied lazily, whenever the
//! policy is told or asked something, and always before a count changes.
//! A random permutation's first free processor is a uniformly random free
//! processor: free slots are kept in an array (O(1) removal by position, kept per
//! slot id),
//! and one is drawn uniformly for each start. Cost per event: O(k).
//!
//! Units: φ and ψ in [`Units`] (2·10⁶ per s², exact on a millisecond
//! clock); finUt and finCon in milliseconds.

use super::best;
use crate::event::Notice;
use crate::ids::{MachineId, OrgId, SlotId, TaskId};
use crate::point::{Order, Pick, SimRng};
use crate::policy::queue::{OrgQueues, PerMachine};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, Params, Picks, SpecError};
use crate::shapley::Units;
use crate::snapshot::snapshot_policy;
use crate::state::View;
use crate::time::Time;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

pub const NAME: &str = "direct-contr";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "DIRECTCONTR: Shapley-fair heuristic (contributions accrued per processor owner); random free processor",
    params: &[],
    parallel: true,
    orgs: true,
    picks: Picks::Weighs("it weighs organizations by their contribution (Shapley), not tasks by priority"),
    build: Ctor::order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(DirectContr::default()))
}

/// Per organization bookkeeping of Algorithm 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Books {
    pub fin_ut: i128,
    pub fin_con: i128,
    pub phi: Units,
    pub psi: Units,
    /// Processors running this organization's jobs.
    pub run_jobs: i128,
    /// This organization's processors that are busy.
    pub run_procs: i128,
}

/// Free slots of one machine, in an array with positions (O(1) removal);
/// positions are indexed by slot id (dense).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct FreeSlots {
    built: bool,
    slots: Vec<SlotId>,
    /// `pos[slot]`: where the slot is in `slots`, `u32::MAX` if not free.
    pos: Vec<u32>,
}

impl FreeSlots {
    fn add(&mut self, s: SlotId) {
        let i = s.index();
        if i >= self.pos.len() {
            self.pos.resize(i + 1, u32::MAX);
        }
        if self.pos[i] == u32::MAX {
            self.pos[i] = self.slots.len() as u32;
            self.slots.push(s);
        }
    }
    fn remove(&mut self, s: SlotId) {
        let Some(&p) = self.pos.get(s.index()) else { return };
        if p == u32::MAX {
            return;
        }
        self.pos[s.index()] = u32::MAX;
        self.slots.swap_remove(p as usize);
        if let Some(&moved) = self.slots.get(p as usize) {
            self.pos[moved.index()] = p;
        }
    }
    fn swap(&mut self, i: usize, j: usize) {
        self.slots.swap(i, j);
        self.pos[self.slots[i].index()] = i as u32;
        self.pos[self.slots[j].index()] = j as u32;
    }
}

/// A running task: its owner and the slots it holds with their owners.
type Run = (usize, SmallVec<[(SlotId, Option<OrgId>); 1]>);

/// See the module docs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirectContr {
    queues: OrgQueues,
    books: Vec<Books>,
    last: Option<Time>,
    /// Running tasks: job owner and the owners of the slots they hold.
    #[serde(with = "crate::snapshot::sorted_map")]
    runs: FxHashMap<TaskId, Run>,
    free: PerMachine<FreeSlots>,
}

impl DirectContr {
    /// The bookkeeping (for tests and reports).
    pub fn books(&self) -> &[Books] {
        &self.books
    }

    fn book(&mut self, o: usize) -> &mut Books {
        if o >= self.books.len() {
            self.books.resize(o + 1, Books::default());
        }
        &mut self.books[o]
    }

    /// Steps 1 and 2 of Algorithm 1 for (last, now].
    fn accrue(&mut self, now: Time) {
        if let Some(last) = self.last
            && now > last
        {
            let d = (now.millis() - last.millis()) as i128;
            let tri = d * (d + 1000);
            for b in &mut self.books {
                b.phi += 2 * d * b.fin_con;
                b.psi += 2 * d * b.fin_ut;
                b.fin_ut += d * b.run_jobs;
                b.psi += tri * b.run_jobs;
                b.fin_con += d * b.run_procs;
                b.phi += tri * b.run_procs;
            }
        }
        self.last = Some(now);
    }

    fn free_of(&mut self, view: &View, m: MachineId) -> &mut FreeSlots {
        let f = self.free.get(m);
        if !f.built {
            f.built = true;
            for s in view.machine(m).free_slots() {
                f.add(s);
            }
        }
        f
    }
}

impl Order for DirectContr {
    snapshot_policy!(NAME);
    fn gauges(&self, _view: &View, out: &mut Vec<crate::point::Gauge>) {
        // Units: 2·10⁶ per slot·s² (module docs); as of the last event.
        for (o, b) in self.books.iter().enumerate() {
            for (name, help, v) in [
                (
                    "org_phi_slot_s2",
                    "DIRECTCONTR's estimate of an organization's contribution φ.",
                    b.phi,
                ),
                (
                    "org_psi_slot_s2",
                    "DIRECTCONTR's estimate of an organization's utility ψ.",
                    b.psi,
                ),
            ] {
                out.push(crate::point::Gauge {
                    name,
                    help,
                    key: Some(("org", o as i64)),
                    value: v as f64 / 2e6,
                });
            }
        }
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.accrue(view.now());
        self.queues.notify(view, n);
        match *n {
            Notice::Started { task, machine } => {
                let Some(t) = view.task(task) else { return };
                let o = t.org().index();
                let held: SmallVec<[(SlotId, Option<OrgId>); 1]> =
                    t.held_slots().iter().map(|&s| (s, view.slot_owner(s))).collect();
                let f = self.free_of(view, machine);
                for &(s, _) in &held {
                    f.remove(s);
                }
                for &(_, owner) in &held {
                    let b = self.book(o);
                    b.fin_ut += 1000;
                    b.run_jobs += 1;
                    if let Some(p) = owner {
                        let b = self.book(p.index());
                        b.fin_con += 1000;
                        b.run_procs += 1;
                    }
                }
                self.runs.insert(task, (o, held));
            }
            Notice::Left {
                task,
                machine: Some(machine),
                was_running: true,
                ..
            }
            | Notice::Requeued { task, machine } => {
                let Some((o, held)) = self.runs.remove(&task) else {
                    return;
                };
                for &(s, owner) in &held {
                    self.book(o).run_jobs -= 1;
                    if let Some(p) = owner {
                        self.book(p.index()).run_procs -= 1;
                    }
                    if view.slot_present(s) {
                        self.free_of(view, machine).add(s);
                    }
                }
            }
            Notice::SlotJoined { slot, machine } if view.slot_task(slot).is_none() => {
                self.free_of(view, machine).add(slot);
            }
            Notice::SlotLeft { slot, machine } => self.free_of(view, machine).remove(slot),
            _ => {}
        }
    }

    fn pick(&mut self, view: &View, machine: MachineId, rng: &mut SimRng) -> Option<Pick> {
        self.accrue(view.now());
        let books = &self.books;
        let key = |o: usize| books.get(o).map_or(0, |b| b.phi - b.psi);
        let task = best(&mut self.queues, view, machine, key)?;
        let q = view.task(task)?.slots() as usize;
        let f = self.free_of(view, machine);
        if f.slots.len() < q {
            return None;
        }
        // The first q free processors of a uniformly random order.
        for i in 0..q {
            let j = rng.random_range(i..f.slots.len());
            f.swap(i, j);
        }
        Some(Pick::StartOn(task, f.slots[..q].to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Action, Event};
    use crate::model::TaskSpec;
    use crate::policy::single_pool::SinglePool;
    use crate::scheduler::{AllocatePolicy, OrderPolicy, Scheduler};
    use crate::state::Platform;
    use std::sync::{Arc, Mutex};

    /// DirectContr with its books copied out after every call.
    #[derive(Clone)]
    struct Spy {
        inner: DirectContr,
        books: Arc<Mutex<Vec<Books>>>,
    }

    impl Spy {
        fn copy(&self) {
            *self.books.lock().unwrap() = self.inner.books().to_vec();
        }
    }

    impl Order for Spy {
        fn notify(&mut self, view: &View, n: &Notice) {
            self.inner.notify(view, n);
            self.copy();
        }
        fn pick(&mut self, view: &View, machine: MachineId, rng: &mut SimRng) -> Option<Pick> {
            let p = self.inner.pick(view, machine, rng);
            self.copy();
            p
        }
    }

    /// finUt, finCon in seconds and φ, ψ in s², as the books keep them
    /// (ms and Units = 2·10⁶ per s²).
    fn books(fin_ut: i128, fin_con: i128, phi: i128, psi: i128) -> (i128, i128, Units, Units) {
        (fin_ut * 1000, fin_con * 1000, phi * 2_000_000, psi * 2_000_000)
    }

    struct Trace {
        core: Scheduler,
        books: Arc<Mutex<Vec<Books>>>,
        /// Task → slots it started on.
        on: Vec<(u64, Vec<SlotId>)>,
    }

    impl Trace {
        fn step(&mut self, t: i64, events: Vec<Event>) -> Vec<(u64, Vec<u32>)> {
            let mut out = Vec::new();
            self.core
                .step(Time::from_secs(t), events, None, &mut out)
                .unwrap();
            let mut started = Vec::new();
            for a in out {
                if let Action::Start { task, slots, .. } = a {
                    self.on.push((task.0, slots.to_vec()));
                    // Owner of each slot: 0, 1 → org 0; 2 → org 1.
                    started.push((task.0, slots.iter().map(|s| u32::from(s.0 == 2)).collect()));
                }
            }
            started
        }
        fn now(&self) -> Vec<(i128, i128, Units, Units)> {
            let b = self.books.lock().unwrap();
            (0..2)
                .map(|o| b.get(o).copied().unwrap_or_default())
                .map(|b| (b.fin_ut, b.fin_con, b.phi, b.psi))
                .collect()
        }
        fn on_slot(&self, slot: u32) -> u64 {
            let busy = |t: u64| {
                self.on
                    .iter()
                    .rfind(|(id, _)| *id == t)
                    .is_some_and(|(_, s)| s.contains(&SlotId(slot)))
            };
            self.on.iter().map(|(id, _)| *id).rfind(|&id| busy(id)).unwrap()
        }
    }

    fn submit(id: u64, org: u32) -> Event {
        Event::Submit(TaskSpec::new(id, org as i64, org))
    }
    fn done(id: u64) -> Event {
        Event::Complete { task: TaskId(id) }
    }

    /// Algorithm 1 of spec/shapley.md by hand over seven events, on three
    /// processors: slots 0 and 1 owned by organization 0, slot 2 by
    /// organization 1. Jobs: B1..B6 of org 1 (ids 1..6), A1..A4 of org 0
    /// (ids 11..14). Completions are reported when the test chooses (the
    /// policy is blind). Hand values in seconds and s²; Δ = t − tprev,
    /// tri = ½Δ(Δ+1). Step 1 uses finUt/finCon before step 2 updates them.
    ///
    /// t=0: B1, B2, B3 submitted; only org 1 waits: all three start, one
    ///   per processor. finUt1 = 3; finCon0 = 2, finCon1 = 1. φ = ψ = 0.
    /// t=2: A1, A2 (org 0), B4 (org 1) submitted, nothing free. Δ=2, tri=3.
    ///   1: φ0 += 2·2 = 4, φ1 += 2·1 = 2, ψ1 += 2·3 = 6.
    ///   2: three org-1 jobs, two on org-0 processors, one on org 1's:
    ///   finUt1 += 3·2 → 9; finCon0 += 2·2 → 6; finCon1 += 2 → 3;
    ///   ψ1 += 3·3 → 15; φ0 += 2·3 → 10; φ1 += 3 → 5.
    ///   → finUt [0, 9], finCon [6, 3], φ [10, 5], ψ [0, 15].
    /// t=3: the B on slot 2 completes. Δ=1, tri=1.
    ///   1: φ0 += 6 → 16, φ1 += 3 → 8, ψ1 += 9 → 24.
    ///   2: same three runs: finUt1 += 3 → 12; finCon0 += 2 → 8;
    ///   finCon1 += 1 → 4; ψ1 += 3 → 27; φ0 += 2 → 18; φ1 += 1 → 9.
    ///   4: slot 2 is free; keys φ−ψ: org 0: 18 − 0 = 18, org 1: 9 − 27 =
    ///   −18: A1 on slot 2 (owner 1): finUt0 += 1 → 1; finCon1 += 1 → 5.
    ///   → finUt [1, 12], finCon [8, 5], φ [18, 9], ψ [0, 27].
    /// t=5: the other two B's complete (slots 0, 1). Δ=2, tri=3.
    ///   1: φ0 += 2·8 → 34, φ1 += 2·5 → 19, ψ0 += 2·1 → 2, ψ1 += 2·12 → 51.
    ///   2: runs: two org-1 jobs on org-0 processors, A1 on org 1's:
    ///   finUt0 += 2 → 3; finUt1 += 4 → 16; finCon0 += 4 → 12;
    ///   finCon1 += 2 → 7; ψ0 += 3 → 5; ψ1 += 6 → 57; φ0 += 6 → 40;
    ///   φ1 += 3 → 22.
    ///   4: slots 0, 1 free; keys org 0: 35, org 1: −35: A2 first, then
    ///   (org 0 has nothing left) B4, both on org-0 processors:
    ///   finUt0 → 4, finUt1 → 17, finCon0 += 2 → 14.
    ///   → finUt [4, 17], finCon [14, 7], φ [40, 22], ψ [5, 57].
    /// t=6: B5, B6, then A3, A4 submitted; nothing free. Δ=1, tri=1.
    ///   1: φ0 += 14 → 54, φ1 += 7 → 29, ψ0 += 4 → 9, ψ1 += 17 → 74.
    ///   2: runs A1 (org 0 on org 1's), A2 (0 on 0), B4 (1 on 0):
    ///   finUt0 += 2 → 6; finUt1 += 1 → 18; finCon0 += 2 → 16;
    ///   finCon1 += 1 → 8; ψ0 += 2 → 11; ψ1 += 1 → 75; φ0 += 2 → 56;
    ///   φ1 += 1 → 30.
    ///   → finUt [6, 18], finCon [16, 8], φ [56, 30], ψ [11, 75].
    /// t=8: A1 (slot 2) and B4 (an org-0 slot) complete. Δ=2, tri=3.
    ///   1: φ0 += 32 → 88, φ1 += 16 → 46, ψ0 += 12 → 23, ψ1 += 36 → 111.
    ///   2: same runs: finUt0 += 4 → 10; finUt1 += 2 → 20; finCon0 += 4 →
    ///   20; finCon1 += 2 → 10; ψ0 += 6 → 29; ψ1 += 3 → 114; φ0 += 6 → 94;
    ///   φ1 += 3 → 49.
    ///   4: two free processors, one of each owner; keys org 0: 65, org 1:
    ///   −65, not updated between the two starts: both go to org 0 (A3,
    ///   A4), though B5 and B6 were submitted first. finUt0 += 2 → 12;
    ///   finCon0 += 1 → 21; finCon1 += 1 → 11.
    ///   → finUt [12, 20], finCon [21, 11], φ [94, 49], ψ [29, 114].
    /// t=9: A2 (an org-0 slot) completes. Δ=1, tri=1.
    ///   1: φ0 += 21 → 115, φ1 += 11 → 60, ψ0 += 12 → 41, ψ1 += 20 → 134.
    ///   2: runs A2, A3, A4 (org 0) on two org-0 processors and org 1's:
    ///   finUt0 += 3 → 15; finCon0 += 2 → 23; finCon1 += 1 → 12;
    ///   ψ0 += 3 → 44; φ0 += 2 → 117; φ1 += 1 → 61.
    ///   4: only org 1 waits: B5 on the free org-0 processor:
    ///   finUt1 += 1 → 21; finCon0 += 1 → 24.
    ///   → finUt [15, 21], finCon [24, 12], φ [117, 61], ψ [44, 134].
    #[test]
    fn bookkeeping_follows_algorithm_1_by_hand() {
        // The processor draws differ with the seed; the books do not.
        for seed in [1, 11, 2024] {
            let spy = Spy {
                inner: DirectContr::default(),
                books: Arc::new(Mutex::new(Vec::new())),
            };
            let log = spy.books.clone();
            let core = Scheduler::new(
                &Platform::owned_pool(&[2, 1]),
                seed,
                AllocatePolicy::Blind(Box::new(SinglePool)),
                OrderPolicy::Blind(Box::new(spy)),
                None,
            );
            let mut tr = Trace {
                core,
                books: log,
                on: Vec::new(),
            };

            let s = tr.step(0, vec![submit(1, 1), submit(2, 1), submit(3, 1)]);
            let mut owners: Vec<u32> = s.iter().map(|(_, o)| o[0]).collect();
            owners.sort();
            assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3]);
            assert_eq!(owners, vec![0, 0, 1]);
            assert_eq!(tr.now(), vec![books(0, 2, 0, 0), books(3, 1, 0, 0)]);

            let s = tr.step(2, vec![submit(11, 0), submit(12, 0), submit(4, 1)]);
            assert!(s.is_empty());
            assert_eq!(tr.now(), vec![books(0, 6, 10, 0), books(9, 3, 5, 15)]);

            let b_on_2 = tr.on_slot(2);
            let s = tr.step(3, vec![done(b_on_2)]);
            assert_eq!(s, vec![(11, vec![1])]);
            assert_eq!(tr.now(), vec![books(1, 8, 18, 0), books(12, 5, 9, 27)]);

            let others: Vec<u64> = [1, 2, 3].into_iter().filter(|&b| b != b_on_2).collect();
            let s = tr.step(5, others.iter().map(|&b| done(b)).collect());
            assert_eq!(s, vec![(12, vec![0]), (4, vec![0])]);
            assert_eq!(tr.now(), vec![books(4, 14, 40, 5), books(17, 7, 22, 57)]);

            let s = tr.step(6, vec![submit(5, 1), submit(6, 1), submit(13, 0), submit(14, 0)]);
            assert!(s.is_empty());
            assert_eq!(tr.now(), vec![books(6, 16, 56, 11), books(18, 8, 30, 75)]);

            let s = tr.step(8, vec![done(11), done(4)]);
            let mut owners: Vec<u32> = s.iter().map(|(_, o)| o[0]).collect();
            owners.sort();
            assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), vec![13, 14]);
            assert_eq!(owners, vec![0, 1]);
            assert_eq!(tr.now(), vec![books(12, 21, 94, 29), books(20, 11, 49, 114)]);

            let s = tr.step(9, vec![done(12)]);
            assert_eq!(s, vec![(5, vec![0])]);
            assert_eq!(tr.now(), vec![books(15, 24, 117, 44), books(21, 12, 61, 134)]);

            // The running counts behind the lazy accrual: org 0 runs A3, A4;
            // org 1 runs B5; all three processors busy.
            let b = tr.books.lock().unwrap().clone();
            assert_eq!((b[0].run_jobs, b[1].run_jobs), (2, 1));
            assert_eq!((b[0].run_procs, b[1].run_procs), (2, 1));
        }
    }
}
