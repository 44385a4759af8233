//! `pffp[phi,psi,h,beta,sm,mu,floor]` — the Pareto Fractal Flow Predictor
//! (spec/pffp.md), with the paper's presets `pffp1` (φ, ψ) = (0.0028,
//! 0.0046) and `pffp2` (0.0019, 0.0082); the other defaults are the
//! paper's Table 3 (H = 0.78, β = 0.524, S_m = 1320 s, μ = 5248 s).
//!
//! The machine minimising δ_i + ϕ_i (seconds), ties to the lowest index:
//! - δ_i = τ_i (ψ^(−1/β) − 1), τ_i the elapsed time of the longest-running
//!   task on N_i (0 if none runs): the residual runtime of the running
//!   tasks, from the Pareto tail (eq. 2–3);
//! - ϕ_i = k_i μ + S_m k_i^H φ^(−1/β), k_i = ⌊n_i / m_i⌋ with n_i the
//!   waiting tasks and m_i the processors (eq. 6–7). The floor follows the
//!   paper's simulator (tGSF): the queue drains m_i tasks at a time, so
//!   fewer waiting tasks than processors add no queue term; `floor=false`
//!   gives the printed equation's n_i / m_i.
//!
//! It reads only queue lengths, machine sizes and elapsed times.

use super::{RunningStarts, argmin};
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{Allocate, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::{SpecView, View};
use serde::{Deserialize, Serialize};

pub const NAME: &str = "pffp";

/// The parameters, with `phi`/`psi` defaults given per preset.
const fn params(phi: &'static str, psi: &'static str) -> [ParamDoc; 7] {
    [
        ParamDoc {
            name: "phi",
            default: phi,
            doc: "φ: probability bound of the queue term (0 < φ ≤ 1)",
        },
        ParamDoc {
            name: "psi",
            default: psi,
            doc: "ψ: probability bound of the residual runtime (0 < ψ ≤ 1)",
        },
        ParamDoc {
            name: "h",
            default: "0.78",
            doc: "Hurst exponent H of the runtime series (0 < H ≤ 1)",
        },
        ParamDoc {
            name: "beta",
            default: "0.524",
            doc: "Pareto shape β of the runtimes (> 0)",
        },
        ParamDoc {
            name: "sm",
            default: "1320",
            doc: "Pareto scale S_m of the runtimes (s)",
        },
        ParamDoc {
            name: "mu",
            default: "5248",
            doc: "mean runtime μ (s)",
        },
        ParamDoc {
            name: "floor",
            default: "true",
            doc: "k_i = ⌊n_i/m_i⌋ as the paper's simulator (true) or n_i/m_i as printed (false)",
        },
    ]
}

const PFFP1: [ParamDoc; 7] = params("0.0028", "0.0046");
const PFFP2: [ParamDoc; 7] = params("0.0019", "0.0082");

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "PFFP: machine minimising predicted residual runtime + queue time (Pareto tail, Hurst); non-clairvoyant",
    params: &PFFP1,
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

/// The paper's PFFP1 (φ, ψ) = (0.0028, 0.0046).
pub const ENTRY_PFFP1: Entry = Entry {
    name: "pffp1",
    doc: "PFFP with the paper's PFFP1 setting (φ = 0.0028, ψ = 0.0046)",
    params: &PFFP1,
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

/// The paper's PFFP2 (φ, ψ) = (0.0019, 0.0082).
pub const ENTRY_PFFP2: Entry = Entry {
    name: "pffp2",
    doc: "PFFP with the paper's PFFP2 setting (φ = 0.0019, ψ = 0.0082)",
    params: &PFFP2,
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::allocate(from_params),
};

fn bad(key: &str, v: f64, reason: &str) -> SpecError {
    SpecError::BadValue {
        policy: NAME.into(),
        key: key.into(),
        value: format!("{v}"),
        reason: reason.into(),
    }
}

fn from_params(p: &Params) -> Result<Box<dyn Allocate>, SpecError> {
    let phi = p.f64("phi")?;
    let psi = p.f64("psi")?;
    let h = p.f64("h")?;
    let beta = p.f64("beta")?;
    let sm = p.f64("sm")?;
    let mu = p.f64("mu")?;
    let floor = p.choice("floor", &["true", "false"])? == "true";
    for (k, v) in [("phi", phi), ("psi", psi), ("h", h)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(bad(k, v, "must be in (0, 1]"));
        }
    }
    if !(beta > 0.0 && beta.is_finite()) {
        return Err(bad("beta", beta, "must be positive"));
    }
    for (k, v) in [("sm", sm), ("mu", mu)] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(bad(k, v, "must be ≥ 0"));
        }
    }
    Ok(Box::new(Pffp::new(Predictor::new(
        phi, psi, h, beta, sm, mu, floor,
    ))))
}

/// PFFP's prediction, from its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predictor {
    /// ψ^(−1/β) − 1.
    residual: f64,
    /// S_m φ^(−1/β).
    queue: f64,
    h: f64,
    mu: f64,
    floor: bool,
}

impl Predictor {
    pub fn new(phi: f64, psi: f64, h: f64, beta: f64, sm: f64, mu: f64, floor: bool) -> Predictor {
        Predictor {
            residual: libm::pow(psi, -1.0 / beta) - 1.0,
            queue: sm * libm::pow(phi, -1.0 / beta),
            h,
            mu,
            floor,
        }
    }

    /// δ_i: predicted residual runtime of what runs, for the longest
    /// elapsed time `tau` (s).
    pub fn delta(&self, tau: f64) -> f64 {
        tau * self.residual
    }

    /// ϕ_i for `waiting` tasks on `procs` processors (s).
    pub fn phi(&self, waiting: u32, procs: u32) -> f64 {
        let procs = procs.max(1);
        let k = if self.floor {
            (waiting / procs) as f64
        } else {
            waiting as f64 / procs as f64
        };
        k * self.mu + self.queue * libm::pow(k, self.h)
    }
}

/// See the module docs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pffp {
    predict: Predictor,
    starts: RunningStarts,
}

impl Pffp {
    pub fn new(predict: Predictor) -> Pffp {
        Pffp {
            predict,
            starts: RunningStarts::default(),
        }
    }
}

impl Allocate for Pffp {
    snapshot_policy!(NAME, config: predict);
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        let now = view.now();
        let (p, starts) = (self.predict, &mut self.starts);
        argmin(view, task, |m| {
            let tau = starts
                .oldest(m)
                .map_or(0.0, |s| (now.millis() - s.millis()) as f64 / 1000.0);
            let mv = view.machine(m);
            p.delta(tau) + p.phi(mv.waiting(), mv.capacity())
        })
    }
    fn notify(&mut self, view: &View, n: &Notice) {
        self.starts.notify(view, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_sim::harness::Harness;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn delta_and_phi_by_hand() {
        // β = 0.5 makes the powers squares: ψ^(−2), φ^(−2).
        let p = Predictor::new(0.5, 0.25, 0.5, 0.5, 100.0, 10.0, true);
        // δ = τ (0.25^−2 − 1) = 15 τ.
        assert!(close(p.delta(2.0), 30.0));
        assert_eq!(p.delta(0.0), 0.0);
        // 7 waiting on 2 processors: k = ⌊3.5⌋ = 3; ϕ = 3·10 + 100·√3·4.
        assert!(close(p.phi(7, 2), 30.0 + 400.0 * 3f64.sqrt()));
        // Fewer waiting than processors: no queue term with the floor…
        assert_eq!(p.phi(1, 2), 0.0);
        // …but k = 0.5 without it: 0.5·10 + 400·√0.5.
        let unfloored = Predictor::new(0.5, 0.25, 0.5, 0.5, 100.0, 10.0, false);
        assert!(close(unfloored.phi(1, 2), 5.0 + 400.0 * 0.5f64.sqrt()));
    }

    #[test]
    fn the_papers_presets_are_what_they_say() {
        let spec = |s: &str| {
            crate::registry::Registry::builtin()
                .build_allocate(&s.parse().unwrap())
                .is_ok()
        };
        assert!(spec("pffp1") && spec("pffp2") && spec("pffp[phi=0.001,psi=0.0082]"));
        assert!(
            !spec("pffp[phi=0]")
                && !spec("pffp[psi=2]")
                && !spec("pffp[beta=-1]")
                && !spec("pffp[floor=maybe]")
        );
        let doc = |e: &Entry, k: &str| e.params.iter().find(|p| p.name == k).unwrap().default;
        assert_eq!(
            (doc(&ENTRY_PFFP1, "phi"), doc(&ENTRY_PFFP1, "psi")),
            ("0.0028", "0.0046")
        );
        assert_eq!(
            (doc(&ENTRY_PFFP2, "phi"), doc(&ENTRY_PFFP2, "psi")),
            ("0.0019", "0.0082")
        );
        assert_eq!(doc(&ENTRY, "h"), "0.78");
    }

    #[test]
    fn ties_go_to_the_lowest_machine_and_the_older_runner_repels() {
        // Two machines of one processor. Task 1 at t=0: both idle, a tie:
        // machine 0. Task 2 at t=1: machine 0 has run task 1 for 1 s
        // (δ > 0), machine 1 is idle: machine 1. Task 3 at t=5: machine 0's
        // runner started at 0 (τ = 5), machine 1's at 1 (τ = 4), nothing
        // waits: machine 1.
        let r = Harness::machines(&[1, 1], "pffp1", "fcfs")
            .task(1, 0, 1000)
            .task(2, 1, 1000)
            .task(3, 5, 10)
            .run();
        let machine = |id| r.end(id).machine.map(|m| m.0);
        assert_eq!(machine(1), Some(0));
        assert_eq!(machine(2), Some(1));
        assert_eq!(machine(3), Some(1));
    }

    #[test]
    fn a_waiting_task_counts_once_the_queue_holds_a_processor_s_worth() {
        // Tasks 1 and 2 arrive together on two idle single-processor
        // machines: task 1 is still waiting on machine 0 when task 2 is
        // placed (k_0 = 1): machine 1. With two processors each, one
        // waiting task is k = ⌊1/2⌋ = 0 and δ = 0: a tie, machine 0.
        let one = Harness::machines(&[1, 1], "pffp1", "fcfs")
            .task(1, 0, 10)
            .task(2, 0, 10)
            .run();
        assert_eq!(one.end(2).machine.map(|m| m.0), Some(1));
        let two = Harness::machines(&[2, 2], "pffp1", "fcfs")
            .task(1, 0, 10)
            .task(2, 0, 10)
            .run();
        assert_eq!(two.end(2).machine.map(|m| m.0), Some(0));
    }
}
