//! `direct-contr` — DIRECTCONTR, the paper's heuristic (Algorithm 1 of
//! spec/shapley.md, with the seed's typo in lines 15–16 corrected: an
//! interval's utility goes to ψ of the job's owner and to φ of the
//! processor's owner).
//!
//! Per organization it keeps finUt, finCon, φ, ψ (all 0 at the start). On
//! each event (tprev → t), with Δ = t − tprev:
//! 1. φ[O] += Δ·finCon[O], ψ[O] += Δ·finUt[O];
//! 2. for every processor that ran a job J during (tprev, t] (jobs that
//!    complete at t included): finUt[own(J)] += Δ, finCon[own(m)] += Δ,
//!    ψ[own(J)] += ½Δ(Δ+1), φ[own(m)] += ½Δ(Δ+1);
//! 3. each free processor, in a random order, goes to the organization with
//!    waiting jobs and the largest φ − ψ (ties: lowest index), which starts
//!    its first waiting job there: finUt[org] += 1, finCon[own(m)] += 1.
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
//! processor: free slots are kept in an array (O(1) removal by position),
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
use crate::registry::{Ctor, Entry, Params, SpecError};
use crate::shapley::Units;
use crate::state::View;
use crate::time::Time;
use rand::RngExt;

pub const NAME: &str = "direct-contr";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "DIRECTCONTR: Shapley-fair heuristic (contributions accrued per processor owner); random free processor",
    params: &[],
    parallel: true,
    build: Ctor::Order(from_params),
};

fn from_params(_: &Params) -> Result<Box<dyn Order>, SpecError> {
    Ok(Box::new(DirectContr::default()))
}

/// Per organization bookkeeping of Algorithm 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// Free slots of one machine, in an array with positions (O(1) removal).
#[derive(Clone, Debug, Default)]
struct FreeSlots {
    built: bool,
    slots: Vec<SlotId>,
    pos: FxHashMap<SlotId, usize>,
}

impl FreeSlots {
    fn add(&mut self, s: SlotId) {
        if !self.pos.contains_key(&s) {
            self.pos.insert(s, self.slots.len());
            self.slots.push(s);
        }
    }
    fn remove(&mut self, s: SlotId) {
        if let Some(i) = self.pos.remove(&s) {
            self.slots.swap_remove(i);
            if let Some(&moved) = self.slots.get(i) {
                self.pos.insert(moved, i);
            }
        }
    }
}

/// A running task: its owner and the slots it holds with their owners.
type Run = (usize, Vec<(SlotId, Option<OrgId>)>);

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub struct DirectContr {
    queues: OrgQueues,
    books: Vec<Books>,
    last: Option<Time>,
    /// Running tasks: job owner and the owners of the slots they hold.
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
    fn notify(&mut self, view: &View, n: &Notice) {
        self.accrue(view.now());
        self.queues.notify(view, n);
        match *n {
            Notice::Started { task, machine } => {
                let Some(t) = view.task(task) else { return };
                let o = t.org().index();
                let held: Vec<(SlotId, Option<OrgId>)> =
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
            f.slots.swap(i, j);
            let (a, b) = (f.slots[i], f.slots[j]);
            f.pos.insert(a, i);
            f.pos.insert(b, j);
        }
        Some(Pick::StartOn(task, f.slots[..q].to_vec()))
    }
}
