//! `mlp[n=reference|printed|load]` — MLp of spec/pffp.md: the machine
//! minimising a load per processor, compared exactly, ties to the lowest
//! index. The paper prints n_i / m_i and leaves n_i's count unstated;
//! `n` picks the reading:
//! - `reference` (default, the spec): (n_i + 1) / m_i, n_i = tasks
//!   allocated to N_i and not finished (waiting + running), m_i its
//!   processors. The +1 (the task being placed) follows the paper's
//!   reference implementation (tGSF): an idle large machine wins over an
//!   idle small one;
//! - `printed`: n_i / m_i with the same n_i, as the paper prints it: idle
//!   machines tie whatever their size, so the first wins;
//! - `load`: n_i / m_i with n_i the busy processors only (waiting tasks
//!   are not counted): once every machine is full they all tie at 1 and
//!   every task goes to the first machine.

use super::argmin;
use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{MachineView, SpecView, View};
use core::cmp::Ordering;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "mlp";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "MLp: machine minimising (unfinished tasks + 1) / processors (other readings: n); ties to the lowest index",
    params: &[ParamDoc {
        name: "n",
        default: "reference",
        doc: "reading of n_i: reference = (waiting + running + 1)/m_i as the paper's simulator (tGSF); \
              printed = (waiting + running)/m_i as the paper prints it; load = busy processors/m_i \
              (waiting tasks not counted; a full platform ties, so tasks go to the first machine)",
    }],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn from_params(p: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    let n = match p.choice("n", &["reference", "printed", "load"])? {
        "printed" => Reading::Printed,
        "load" => Reading::Load,
        _ => Reading::Reference,
    };
    Ok(Box::new(Mlp { n }))
}

/// What n_i counts, and whether the task being placed adds one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reading {
    /// (waiting + running + 1) / m_i (tGSF).
    #[default]
    Reference,
    /// (waiting + running) / m_i (the paper's equation).
    Printed,
    /// busy processors / m_i.
    Load,
}

impl Reading {
    fn numerator(self, m: &MachineView) -> u64 {
        let unfinished = m.waiting() as u64 + m.running() as u64;
        match self {
            Reading::Reference => unfinished + 1,
            Reading::Printed => unfinished,
            Reading::Load => m.busy() as u64,
        }
    }
}

/// A fraction compared exactly.
#[derive(Clone, Copy, Debug)]
struct Ratio(u64, u64);

impl PartialEq for Ratio {
    fn eq(&self, o: &Ratio) -> bool {
        self.partial_cmp(o) == Some(Ordering::Equal)
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, o: &Ratio) -> Option<Ordering> {
        (self.0 as u128 * o.1 as u128).partial_cmp(&(o.0 as u128 * self.1 as u128))
    }
}

/// See the module docs.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Mlp {
    n: Reading,
}

impl Allocate for Mlp {
    snapshot_policy!(NAME, config: n);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        argmin(view, task, |m| {
            let m = view.machine(m);
            Ratio(self.n.numerator(&m), m.capacity().max(1) as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_sim::harness::Harness;

    /// The machine of each of `tasks` long tasks arriving together at
    /// t = 0 on `sizes`, under `spec`.
    fn burst(sizes: &[u32], spec: &str, tasks: u64) -> Vec<u32> {
        let mut h = Harness::machines(sizes, spec, "fcfs");
        for id in 1..=tasks {
            h = h.task(id, 0, 1000);
        }
        let r = h.run();
        (1..=tasks).map(|id| r.end(id).machine.unwrap().0).collect()
    }

    #[test]
    fn each_reading_sends_a_burst_where_its_count_says() {
        // Three single-processor machines, six tasks at once (all placed
        // before any starts). Counting waiting and running tasks spreads
        // them round-robin (with or without the +1); counting busy
        // processors sees three idle machines at every decision: a tie at
        // 0, so the whole burst piles onto machine 0.
        assert_eq!(burst(&[1, 1, 1], "mlp", 6), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(burst(&[1, 1, 1], "mlp[n=reference]", 6), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(burst(&[1, 1, 1], "mlp[n=printed]", 6), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(burst(&[1, 1, 1], "mlp[n=load]", 6), vec![0; 6]);
        // Machines of 1 and 2: the +1 makes the idle larger machine win
        // (1/2 < 1/1); as printed both idle machines tie at 0, machine 0.
        // Then reference: 1/1 vs (1+1)/2, a tie → 0; (1+1)/1 vs (1+1)/2
        // → 1; (1+1)/1 vs (2+1)/2 → 1.
        assert_eq!(burst(&[1, 2], "mlp", 4), vec![1, 0, 1, 1]);
        // Printed: 0/1 = 0/2 → 0; 1/1 vs 0/2 → 1; 1/1 vs 1/2 → 1; 1/1 vs
        // 2/2: a tie → 0.
        assert_eq!(burst(&[1, 2], "mlp[n=printed]", 4), vec![0, 1, 1, 0]);
        // Load: nothing is busy while the burst is placed: machine 0.
        assert_eq!(burst(&[1, 2], "mlp[n=load]", 4), vec![0; 4]);
    }

    #[test]
    fn load_counts_busy_processors_and_ties_go_to_the_first_full_machine() {
        // One task a second on three single-processor machines: load sees
        // each busy machine, fills the idle ones in order, then, with all
        // three full (1/1 each), sends the fourth and fifth to machine 0
        // where reference spreads them.
        let staggered = |spec: &str| {
            let r = Harness::machines(&[1, 1, 1], spec, "fcfs")
                .task(1, 0, 1000)
                .task(2, 1, 1000)
                .task(3, 2, 1000)
                .task(4, 3, 1000)
                .task(5, 4, 1000)
                .run();
            (1..=5).map(|id| r.end(id).machine.unwrap().0).collect::<Vec<_>>()
        };
        assert_eq!(staggered("mlp[n=load]"), vec![0, 1, 2, 0, 0]);
        assert_eq!(staggered("mlp"), vec![0, 1, 2, 0, 1]);
    }

    #[test]
    fn the_reading_is_checked_and_kept_in_snapshots() {
        let reg = crate::registry::Registry::builtin();
        let build = |s: &str| reg.build_allocate(&s.parse().unwrap());
        assert!(build("mlp").is_ok() && build("mlp[n=load]").is_ok());
        assert!(build("mlp[n=busy]").is_err());
        let load = Mlp { n: Reading::Load };
        let mut reference = Mlp::default();
        let bytes = load.save().unwrap();
        // A snapshot of one reading does not load into another.
        assert!(reference.load(&bytes).is_err());
        let mut other = Mlp { n: Reading::Load };
        assert!(other.load(&bytes).is_ok());
    }
}
