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
//! ([`super::RealPsi`]).
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

use super::Game;
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{ClairvoyantOrder, Pick, RuntimeOracle, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::shapley::{Coalitions, MAX_ORGS, SubSchedule, Units, full_mask, game::factorial, shapley_scaled};
use crate::state::View;

pub const NAME: &str = "ref";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "REF: exact Shapley-fair order (clairvoyant benchmark: every sub-coalition simulated with true runtimes)",
    params: &[ParamDoc {
        name: "sub",
        default: "fair",
        doc: "how sub-coalitions schedule: fair (each itself REF) or first-fit (greedy by release; fifo is its former name)",
    }],
    parallel: true,
    orgs: true,
    picks: Picks::Priority,
    build: Ctor::clairvoyant_order(from_params),
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
    let mode = match p.choice("sub", &["fair", "first-fit", "fifo"])? {
        "first-fit" | "fifo" => SubSchedule::Fifo,
        _ => SubSchedule::Fair,
    };
    Ok(Box::new(Ref::new(mode)))
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Ref {
    mode: SubSchedule,
    g: Game,
    values: Vec<Units>,
}

impl Ref {
    pub fn new(mode: SubSchedule) -> Ref {
        Ref {
            mode,
            g: Game::default(),
            values: Vec::new(),
        }
    }

    /// Brings the game up to `now` and computes every organization's key,
    /// φ_u·k! − ψ_u·k!.
    fn keys(&mut self, view: &View, oracle: &dyn RuntimeOracle) {
        let mode = self.mode;
        let build = |procs: &[u32]| (procs.len() <= MAX_ORGS).then(|| Coalitions::all(procs, mode, false));
        if !self.g.advance(view, oracle, build) {
            return;
        }
        let now = view.now();
        let Game { game, real, keys, .. } = &mut self.g;
        let game = game.as_mut().expect("advanced");
        let k = game.orgs();
        self.values.clear();
        self.values.extend_from_slice(game.values(now));
        let full = full_mask(k);
        self.values[full as usize] = (0..k).map(|u| real.at(u, now)).sum();
        let n = factorial(k);
        for u in 0..k {
            keys.push(shapley_scaled(full, u, &self.values) - real.at(u, now) * n);
        }
    }
}

impl ClairvoyantOrder for Ref {
    /// Clairvoyant: no snapshots (`save` and `load` refuse, the default).
    fn policy_name(&self) -> &'static str {
        NAME
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.g.notify(view, n);
    }

    fn pick(
        &mut self,
        view: &View,
        machine: MachineId,
        oracle: &dyn RuntimeOracle,
        _rng: &mut SimRng,
    ) -> Option<Pick> {
        self.keys(view, oracle);
        self.g.pick(view, machine)
    }
}
