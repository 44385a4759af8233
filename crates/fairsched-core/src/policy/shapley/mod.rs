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
use crate::ids::{MachineId, OrgId, TaskId};
use crate::point::{Pick, RuntimeOracle};
use crate::policy::queue::OrgQueues;
use crate::prelude::*;
use crate::shapley::{Coalitions, Psi, Units};
use crate::state::View;
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// ψsp of every organization in the real schedule, kept from notices
/// (elapsed times only: no runtime). A task holding q slots counts as q
/// jobs (one per processor).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RealPsi {
    psi: Vec<Psi>,
    #[serde(with = "crate::snapshot::sorted_map")]
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

/// What REF and RAND share: each organization's queue, the real
/// schedule's ψ, the jobs of the coalition game (released tasks whose
/// runtime is not read yet, and every job pushed so far, to rebuild the
/// game when the organizations change), the hypothetical schedules, and
/// every organization's key at the last instant they were computed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Game {
    queues: OrgQueues,
    real: RealPsi,
    pending: Vec<(TaskId, usize, Time, u32)>,
    pushed: Vec<(usize, Time, Time)>,
    procs: Vec<u32>,
    game: Option<Coalitions>,
    keys: Vec<Units>,
    keys_at: Option<Time>,
}

impl Game {
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        self.real.notify(view, n);
        if let Notice::Queued { task, .. } = *n
            && let Some(t) = view.task(task)
        {
            self.pending.push((task, t.org().index(), view.now(), t.slots()));
        }
    }

    /// The organizations' processors now; true if they differ from the
    /// ones the game was built with (or it was never built).
    fn changed(&mut self, view: &View) -> bool {
        let k = view.org_count();
        let owned = |o: usize| view.org_slots(OrgId(o as u32));
        let same = self.procs.len() == k && (0..k).all(|o| self.procs[o] == owned(o));
        if !same {
            self.procs = (0..k).map(owned).collect();
        }
        !same
    }

    /// Brings the hypothetical schedules up to `now`, first rebuilding them
    /// with `build` (from the organizations' processors) if those changed;
    /// reads the runtimes of newly released tasks (a task holding q slots
    /// is q jobs, as in the real ψ). True when the keys must be computed
    /// (into the emptied `keys`) for this instant.
    fn advance(
        &mut self,
        view: &View,
        oracle: &dyn RuntimeOracle,
        build: impl FnOnce(&[u32]) -> Option<Coalitions>,
    ) -> bool {
        let now = view.now();
        if self.changed(view) {
            self.game = build(&self.procs).map(|mut g| {
                for &(o, r, p) in &self.pushed {
                    g.push(o, r, p);
                }
                g
            });
            self.keys_at = None;
        }
        let Some(game) = self.game.as_mut() else {
            self.pending.clear();
            return false;
        };
        for (task, o, r, q) in self.pending.drain(..) {
            if let Some(p) = oracle.runtime(task) {
                for _ in 0..q {
                    game.push(o, r, p);
                    self.pushed.push((o, r, p));
                }
            }
        }
        game.advance(now);
        if self.keys_at == Some(now) {
            return false;
        }
        self.keys_at = Some(now);
        self.keys.clear();
        true
    }

    /// The rule of the module docs with the keys; without a game (too many
    /// organizations), the oldest waiting head.
    fn pick(&mut self, view: &View, machine: MachineId) -> Option<Pick> {
        let task = if self.game.is_some() {
            let keys = &self.keys;
            best(&mut self.queues, view, machine, |o| {
                keys.get(o).copied().unwrap_or(Units::MIN)
            })
        } else {
            let free = view.machine(machine).free();
            self.queues
                .eligible(machine, free)
                .min_by_key(|&(_, t)| view.task(t).map(|t| t.seq()))
                .map(|(_, t)| t)
        };
        task.map(Pick::Start)
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
