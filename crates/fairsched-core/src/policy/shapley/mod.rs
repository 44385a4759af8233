//! Shapley-fair orders across organizations (spec/shapley.md), one file
//! each: `ref` (exact, clairvoyant benchmark), `rand` (Monte Carlo,
//! clairvoyant benchmark), `direct-contr` (the paper's heuristic),
//! `ut-fair-share` and `curr-fair-share`. `fair-share` and `round-robin`
//! are the foundation's ([`crate::policy::fair_share`],
//! [`crate::policy::round_robin`]).
//!
//! REF, RAND and DIRECTCONTR share one selection rule: among organizations
//! with a waiting task that fits, the largest φ − ψ, ties to the lowest
//! index ([`best`]); each organization's tasks start in the order it
//! submitted them.

pub mod curr_fair_share;
pub mod direct_contr;
pub mod rand;
pub mod reference;
pub mod ut_fair_share;

use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::policy::queue::OrgQueues;
use crate::prelude::*;
use crate::shapley::{Psi, Units};
use crate::state::View;
use crate::time::Time;

/// ψsp of every organization in the real schedule, kept from notices
/// (elapsed times only: no runtime). A task holding q slots counts as q
/// jobs (one per processor).
#[derive(Clone, Debug, Default)]
pub struct RealPsi {
    psi: Vec<Psi>,
    runs: FxHashMap<TaskId, (usize, Time, u32)>,
}

impl RealPsi {
    pub fn notify(&mut self, view: &View, n: &Notice) {
        let now = view.now();
        match *n {
            Notice::Started { task, .. } => {
                if let Some(t) = view.task(task) {
                    let o = t.org().index();
                    if o >= self.psi.len() {
                        self.psi.resize(o + 1, Psi::default());
                    }
                    for _ in 0..t.slots() {
                        self.psi[o].start(now);
                    }
                    self.runs.insert(task, (o, now, t.slots()));
                }
            }
            Notice::Left {
                task,
                was_running: true,
                ..
            }
            | Notice::Requeued { task, .. } => {
                if let Some((o, s, q)) = self.runs.remove(&task) {
                    for _ in 0..q {
                        self.psi[o].stop(s, now);
                    }
                }
            }
            _ => {}
        }
    }

    /// ψ of `org` at `t` (≥ the last notice).
    pub fn at(&self, org: usize, t: Time) -> Units {
        self.psi.get(org).map_or(0, |p| p.at(t))
    }

    /// Running jobs (slots) of `org`.
    pub fn running(&self, org: usize) -> i128 {
        self.psi.get(org).map_or(0, |p| p.running())
    }
}

/// The organization with a waiting task that fits in the machine's free
/// slots and the largest `key`, ties to the lowest index; its first task.
pub fn best(
    queues: &mut OrgQueues,
    view: &View,
    machine: MachineId,
    key: impl Fn(usize) -> Units,
) -> Option<TaskId> {
    let free = view.machine(machine).free();
    let mut best: Option<(Units, TaskId)> = None;
    for (org, task) in queues.eligible(machine, free) {
        let k = key(org.index());
        // Index order: a later organization wins only with a larger key.
        if best.is_none_or(|(b, _)| k > b) {
            best = Some((k, task));
        }
    }
    best.map(|(_, t)| t)
}
