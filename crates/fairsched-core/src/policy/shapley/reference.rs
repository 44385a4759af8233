//! `ref[sub=fair|fifo]` — REF, the exact fair algorithm and the fairness
//! benchmark of spec/shapley.md.
//!
//! Every proper coalition S of the organizations has its own hypothetical
//! schedule (S's jobs on S's processors from the start), advanced in
//! lockstep with the real one ([`Coalitions`]); with `sub=fair` (default)
//! each of those schedules is itself fair, from its own sub-coalitions'
//! values; with `sub=fifo` they are greedy by release time (cheaper). At
//! each decision the real schedule serves the organization with waiting
//! work and the largest φ_u − ψ_u, where ψ_u is its utility in the real
//! schedule and φ_u its exact Shapley value, computed from the
//! sub-coalitions' values and the real schedule's total.
//!
//! **What it may know.** The hypothetical schedules need to know when
//! their jobs would finish, which only the true runtimes tell: REF is a
//! [`ClairvoyantOrder`] and reads the [`RuntimeOracle`] for them, and for
//! nothing else. The real schedule's ψ comes from elapsed times
//! ([`RealPsi`]).
//!
//! **Where the paper is silent.** The game is over the organizations the
//! view knows at a decision (`View::org_count`) with the processors they
//! own then (`View::org_slots`); if either changes (an organization's
//! first submission, slots joining or leaving), the hypothetical
//! schedules are rebuilt from the start with the new counts. Organizations
//! beyond [`MAX_ORGS`] are too many for exact values: REF then serves
//! organizations in the order of their first waiting task (the checks of
//! the run library refuse such a configuration before it starts). A task
//! cancelled before any decision saw it has no runtime and is left out of
//! the hypothetical schedules.
//!
//! Cost per decision instant O(k·2^(k−1)) for the real schedule's φ, plus
//! the hypothetical schedules' events: O(k (2^k Σm + 3^k)) per event in
//! the paper's words.

use super::{RealPsi, best};
use crate::event::Notice;
use crate::ids::{MachineId, TaskId};
use crate::point::{ClairvoyantOrder, Pick, RuntimeOracle, SimRng};
use crate::policy::queue::OrgQueues;
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, SpecError};
use crate::shapley::{Coalitions, MAX_ORGS, SubSchedule, Units, full_mask, game::factorial, shapley_scaled};
use crate::state::View;
use crate::time::Time;

pub const NAME: &str = "ref";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "REF: exact Shapley-fair order (clairvoyant benchmark: every sub-coalition simulated with true runtimes)",
    params: &[ParamDoc {
        name: "sub",
        default: "fair",
        doc: "how sub-coalitions schedule: fair (each itself REF) or fifo (greedy by release)",
    }],
    parallel: true,
    build: Ctor::ClairvoyantOrder(from_params),
};

/// Refuses exact REF for more organizations than it handles (a driver
/// calls it at configuration time, when it knows the organizations).
pub fn check_orgs(spec: &crate::registry::PolicySpec, orgs: usize) -> Result<(), String> {
    if spec.name == NAME && orgs > MAX_ORGS {
        return Err(format!(
            "{spec}: exact REF simulates 2^k coalitions and accepts at most {MAX_ORGS} organizations, not {orgs}"
        ));
    }
    Ok(())
}

fn from_params(p: &Params) -> Result<Box<dyn ClairvoyantOrder>, SpecError> {
    let mode = match p.choice("sub", &["fair", "fifo"])? {
        "fifo" => SubSchedule::Fifo,
        _ => SubSchedule::Fair,
    };
    Ok(Box::new(Ref::new(mode)))
}

/// Jobs known to a coalition game: released tasks waiting to be pushed
/// (runtime not read yet) and everything pushed so far (to rebuild the
/// game when the organizations change). A task holding q slots is q jobs
/// of its runtime in the hypothetical schedules, as it is q jobs in the
/// real schedule's ψ ([`RealPsi`]) and in spec/shapley.md's split of
/// parallel jobs.
#[derive(Clone, Debug, Default)]
pub(super) struct GameJobs {
    /// (task, organization, release, slots).
    pending: Vec<(TaskId, usize, Time, u32)>,
    pushed: Vec<(usize, Time, Time)>,
    procs: Vec<u32>,
}

impl GameJobs {
    pub(super) fn notify(&mut self, view: &View, n: &Notice) {
        if let Notice::Queued { task, .. } = *n
            && let Some(t) = view.task(task)
        {
            self.pending.push((task, t.org().index(), view.now(), t.slots()));
        }
    }

    /// The organizations' processors now; true if they differ from the
    /// ones the game was built with (or it was never built).
    pub(super) fn changed(&mut self, view: &View) -> bool {
        let k = view.org_count();
        let same = self.procs.len() == k
            && (0..k).all(|o| self.procs[o] == view.org_slots(crate::ids::OrgId(o as u32)));
        if !same {
            self.procs = (0..k)
                .map(|o| view.org_slots(crate::ids::OrgId(o as u32)))
                .collect();
        }
        !same
    }

    pub(super) fn procs(&self) -> &[u32] {
        &self.procs
    }

    /// Pushes every job pushed so far into a new game.
    pub(super) fn replay(&self, c: &mut Coalitions) {
        for &(o, r, p) in &self.pushed {
            c.push(o, r, p);
        }
    }

    /// Reads the runtimes of newly released tasks and pushes them.
    pub(super) fn flush(&mut self, c: &mut Coalitions, oracle: &dyn RuntimeOracle) {
        for (task, o, r, q) in self.pending.drain(..) {
            if let Some(p) = oracle.runtime(task) {
                for _ in 0..q {
                    c.push(o, r, p);
                    self.pushed.push((o, r, p));
                }
            }
        }
    }
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Ref {
    mode: SubSchedule,
    queues: OrgQueues,
    real: RealPsi,
    jobs: GameJobs,
    game: Option<Coalitions>,
    /// φ_u·k! − ψ_u·k! at `keys_at`.
    keys: Vec<Units>,
    keys_at: Option<Time>,
    values: Vec<Units>,
}

impl Ref {
    pub fn new(mode: SubSchedule) -> Ref {
        Ref {
            mode,
            queues: OrgQueues::default(),
            real: RealPsi::default(),
            jobs: GameJobs::default(),
            game: None,
            keys: Vec::new(),
            keys_at: None,
            values: Vec::new(),
        }
    }

    /// Brings the game up to `now` and computes every organization's key.
    fn keys(&mut self, view: &View, oracle: &dyn RuntimeOracle) {
        let now = view.now();
        if self.jobs.changed(view) {
            let procs = self.jobs.procs();
            self.game = (procs.len() <= MAX_ORGS).then(|| {
                let mut g = Coalitions::all(procs, self.mode, false);
                self.jobs.replay(&mut g);
                g
            });
            self.keys_at = None;
        }
        let Some(game) = self.game.as_mut() else {
            self.jobs.pending.clear();
            return;
        };
        self.jobs.flush(game, oracle);
        game.advance(now);
        if self.keys_at == Some(now) {
            return;
        }
        let k = game.orgs();
        self.values.clear();
        self.values.extend_from_slice(game.values(now));
        let full = full_mask(k);
        self.values[full as usize] = (0..k).map(|u| self.real.at(u, now)).sum();
        let n = factorial(k);
        self.keys.clear();
        for u in 0..k {
            self.keys
                .push(shapley_scaled(full, u, &self.values) - self.real.at(u, now) * n);
        }
        self.keys_at = Some(now);
    }
}

impl ClairvoyantOrder for Ref {
    fn notify(&mut self, view: &View, n: &Notice) {
        self.queues.notify(view, n);
        self.real.notify(view, n);
        self.jobs.notify(view, n);
    }

    fn pick(
        &mut self,
        view: &View,
        machine: MachineId,
        oracle: &dyn RuntimeOracle,
        _rng: &mut SimRng,
    ) -> Option<Pick> {
        self.keys(view, oracle);
        let task = if self.game.is_some() {
            let keys = &self.keys;
            best(&mut self.queues, view, machine, |o| {
                keys.get(o).copied().unwrap_or(Units::MIN)
            })
        } else {
            // Too many organizations for exact values: the oldest head.
            let free = view.machine(machine).free();
            self.queues
                .eligible(machine, free)
                .min_by_key(|&(_, t)| view.task(t).map(|t| t.seq()))
                .map(|(_, t)| t)
        };
        task.map(Pick::Start)
    }
}
