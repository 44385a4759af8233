//! `rand[n=15]` — RAND, the Monte Carlo approximation of REF
//! (spec/shapley.md).
//!
//! For every organization u, `n` random orderings of the organizations are
//! drawn once (from the scheduler's seeded generator, at the first
//! decision); the organizations before u in an ordering form a coalition
//! T. The schedules of every sampled T and T ∪ {u} (deduplicated) are
//! simulated, and φ_u is estimated by the mean of v(T ∪ {u}) − v(T); the
//! real schedule serves the largest φ_u − ψ_u, ties to the lowest index.
//!
//! **Decision: sampled schedules are FIFO** (greedy by release time), not
//! themselves fair. With unit-size jobs every greedy schedule of a
//! coalition has the same value, which is what the authors' randomized
//! approximation relies on; it keeps RAND polynomial (at most 2·k·n
//! schedules instead of 2^k). The grand coalition's value is the real
//! schedule's (as in REF), and v(∅) = 0.
//!
//! Like REF, RAND reads true runtimes, for the sampled hypothetical
//! schedules only ([`ClairvoyantOrder`]). When the organizations or their
//! processors change, orderings are drawn again and the schedules rebuilt.

use super::Game;
use crate::event::Notice;
use crate::ids::MachineId;
use crate::point::{ClairvoyantOrder, Pick, RuntimeOracle, SimRng};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::shapley::{Coalitions, SubSchedule, Units, full_mask};
use crate::state::View;
use rand::RngExt;

pub const NAME: &str = "rand";

/// Organizations above which RAND refuses to build masks (u32 coalitions).
const MAX_ORGS: usize = 24;

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "RAND: Monte Carlo Shapley-fair order (clairvoyant benchmark: n sampled orderings, first-fit sub-schedules by release time)",
    params: &[ParamDoc {
        name: "n",
        default: "15",
        doc: "orderings sampled per organization",
    }],
    parallel: true,
    orgs: true,
    picks: Picks::Priority,
    build: Ctor::clairvoyant_order(from_params),
};

fn from_params(p: &Params) -> Result<Box<dyn ClairvoyantOrder>, SpecError> {
    let n = p.u64("n")?;
    if n == 0 || n > 100_000 {
        return Err(SpecError::BadValue {
            policy: NAME.into(),
            key: "n".into(),
            value: n.to_string(),
            reason: "must be between 1 and 100000".into(),
        });
    }
    Ok(Box::new(Rand {
        n: n as u32,
        g: Game::default(),
        samples: Vec::new(),
    }))
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Rand {
    n: u32,
    g: Game,
    /// Per organization, the predecessor set T of each sampled ordering.
    samples: Vec<Vec<u32>>,
}

/// Predecessor sets of `n` uniformly random orderings, for every
/// organization of `k`.
fn draw(k: usize, n: u32, rng: &mut SimRng) -> Vec<Vec<u32>> {
    let mut perm: Vec<usize> = (0..k).collect();
    (0..k)
        .map(|u| {
            (0..n)
                .map(|_| {
                    for i in (1..k).rev() {
                        let j = rng.random_range(0..=i);
                        perm.swap(i, j);
                    }
                    let mut t = 0u32;
                    for &o in &perm {
                        if o == u {
                            break;
                        }
                        t |= 1 << o;
                    }
                    t
                })
                .collect()
        })
        .collect()
}

impl Rand {
    /// Brings the sampled schedules up to `now` and computes every
    /// organization's key, Σ_samples (v(T∪u) − v(T)) − n·ψ_u.
    fn keys(&mut self, view: &View, oracle: &dyn RuntimeOracle, rng: &mut SimRng) {
        let (n, samples) = (self.n, &mut self.samples);
        let build = |procs: &[u32]| {
            let k = procs.len();
            (k <= MAX_ORGS).then(|| {
                *samples = draw(k, n, rng);
                let full = full_mask(k);
                let mut masks: Vec<u32> = samples
                    .iter()
                    .enumerate()
                    .flat_map(|(u, ts)| ts.iter().flat_map(move |&t| [t, t | (1 << u)]))
                    .filter(|&m| m != 0 && m != full)
                    .collect();
                masks.sort_unstable();
                masks.dedup();
                Coalitions::new(procs, SubSchedule::Fifo, masks)
            })
        };
        if !self.g.advance(view, oracle, build) {
            return;
        }
        let now = view.now();
        let Game { game, real, keys, .. } = &mut self.g;
        let game = game.as_mut().expect("advanced");
        let k = game.orgs();
        let full = full_mask(k);
        let real_total: Units = (0..k).map(|u| real.at(u, now)).sum();
        let v = game.values(now);
        let value = |m: u32| if m == full { real_total } else { v[m as usize] };
        for u in 0..k {
            let sum: Units = self.samples[u]
                .iter()
                .map(|&t| value(t | (1 << u)) - value(t))
                .sum();
            keys.push(sum - self.n as Units * real.at(u, now));
        }
    }
}

impl ClairvoyantOrder for Rand {
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
        rng: &mut SimRng,
    ) -> Option<Pick> {
        self.keys(view, oracle, rng);
        self.g.pick(view, machine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapley::game::factorial;
    use crate::shapley::{shapley_scaled, shapley_values};
    use ::rand::SeedableRng;

    /// A fixed game of `k` players (pseudo-random values, `v[0] = 0`).
    fn game(k: usize, seed: u64) -> Vec<Units> {
        let mut rng = SimRng::seed_from_u64(seed);
        let mut v: Vec<Units> = (0..1u32 << k)
            .map(|_| rng.random_range(-1_000_000..1_000_000))
            .collect();
        v[0] = 0;
        v
    }

    /// The predecessor sets RAND samples are those of uniformly random
    /// orderings: T never holds u, and over many draws each T ⊆ C∖{u}
    /// comes up with probability |T|!(k−|T|−1)!/k! (within 5 standard
    /// deviations of a binomial count; the draws are seeded, so the test is
    /// deterministic). The estimate of φ_u, the mean of v(T∪u) − v(T),
    /// then approaches the exact Shapley value: within 5 standard errors
    /// (the standard deviation of u's marginal contribution, computed
    /// exactly from those probabilities, over √n) at n = 20 000, and
    /// closer on average than with n = 15.
    #[test]
    fn sampled_orderings_estimate_the_shapley_values() {
        for (k, seed) in [(2usize, 1u64), (3, 2), (4, 3), (5, 4)] {
            let v = game(k, seed);
            let exact = shapley_values(k, &v);
            let f = factorial(k) as f64;
            let mut rng = SimRng::seed_from_u64(seed + 100);
            let mut err = [0.0f64; 2];
            for (i, n) in [15u32, 20_000].into_iter().enumerate() {
                let samples = draw(k, n, &mut rng);
                assert_eq!(samples.len(), k);
                for u in 0..k {
                    assert_eq!(samples[u].len(), n as usize);
                    assert!(samples[u].iter().all(|&t| t & (1 << u) == 0 && t < 1 << k));
                    let marg = |t: u32| (v[(t | 1 << u) as usize] - v[t as usize]) as f64;
                    let est = samples[u].iter().map(|&t| marg(t)).sum::<f64>() / n as f64;
                    err[i] += (est - exact[u]).abs();
                    if n < 1000 {
                        continue;
                    }
                    // Exact distribution of T: weights |T|!(k−|T|−1)!/k!.
                    let others = full_mask(k) & !(1 << u);
                    let mut subsets = Vec::new();
                    let mut t = others;
                    loop {
                        let p = (factorial(t.count_ones() as usize)
                            * factorial(k - t.count_ones() as usize - 1))
                            as f64
                            / f;
                        subsets.push((t, p));
                        if t == 0 {
                            break;
                        }
                        t = (t - 1) & others;
                    }
                    let total: f64 = subsets.iter().map(|s| s.1).sum();
                    assert!((total - 1.0).abs() < 1e-12);
                    let mean: f64 = subsets.iter().map(|&(t, p)| p * marg(t)).sum();
                    assert!((mean - exact[u]).abs() <= 1e-6 * mean.abs().max(1.0));
                    let var: f64 = subsets.iter().map(|&(t, p)| p * (marg(t) - mean).powi(2)).sum();
                    let bound = 5.0 * (var / n as f64).sqrt() + 1e-9;
                    assert!(
                        (est - exact[u]).abs() <= bound,
                        "k={k} u={u}: {est} vs {}",
                        exact[u]
                    );
                    for &(t, p) in &subsets {
                        let count = samples[u].iter().filter(|&&s| s == t).count() as f64;
                        let sd = (n as f64 * p * (1.0 - p)).sqrt();
                        assert!(
                            (count - n as f64 * p).abs() <= 5.0 * sd + 1.0,
                            "k={k} u={u} T={t:#b}: {count} draws, expected {}",
                            n as f64 * p
                        );
                    }
                    // The scaled exact value agrees with the float one.
                    assert!((shapley_scaled(full_mask(k), u, &v) as f64 / f - exact[u]).abs() < 1e-6);
                }
            }
            if k > 2 {
                assert!(
                    err[1] < err[0],
                    "k={k}: error {} with n=20000, {} with n=15",
                    err[1],
                    err[0]
                );
            }
        }
    }
}
