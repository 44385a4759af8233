//! The workflow-fairness paper's experiments (spec/workflow-fairness.md,
//! "Experiments to reproduce"): workflow sets submitted one after the other
//! on a shared, dynamic grid, run with the η_u controller (Fairness:
//! `priority` queue + `workflow-fairness` Control) and without it
//! (No-Fairness: the `workflow-fcfs` queue) under identical grid
//! conditions; σ_s, σ_m, μ, makespans and slowdowns.

pub mod dirac;
pub mod experiment;
pub mod grid;
pub mod observe;
pub mod stats;
pub mod study;
pub mod tau;
pub mod world;

use self::dirac::{DiracMatching, Matching, Route};
use self::grid::Grid;
use self::observe::EtaSeries;
use self::stats::{area, std_dev};
use self::world::{WorkflowOutcome, World, slot_speed};
use crate::engine::{RunStats, Simulation};
use crate::errors::SimError;
use fairsched_core::{Platform, PolicySpec, Registry, Scheduler, Time, UserId, derive_seed};
use fairsched_trace::workflow::{LoadOptions, WorkflowSource};
use rand::SeedableRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The paper's workflow sets (builtin profile names).
pub fn experiment(n: u32) -> Option<&'static [&'static str]> {
    match n {
        1 => Some(&["gate", "gate", "gate"]),
        2 => Some(&["gate", "gate", "gate", "simubloch"]),
        3 => Some(&["gate", "field2", "pet-sorteo", "simubloch"]),
        _ => None,
    }
}

/// Which system runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum System {
    /// `priority` queue and the `workflow-fairness[tau=…,every=…,reraise=…]`
    /// Control (`every` in seconds; 0 = at every status change; `reraise`:
    /// Algorithm 2 as printed, tasks raised before raised again).
    Fairness { tau: f64, every: f64, reraise: bool },
    /// The `workflow-fcfs` queue (earlier workflows first), no Control;
    /// raises mirrored from a Fairness run, if any.
    NoFairness,
    /// Another order policy, or the `priority` queue and another Control.
    With {
        order: PolicySpec,
        control: Option<PolicySpec>,
    },
}

/// What one run gives.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOutcome {
    pub workflows: Vec<WorkflowOutcome>,
    /// σ of the slowdowns (population).
    pub sigma_s: f64,
    /// σ of the makespans (population).
    pub sigma_m: f64,
    /// Area under η_u until the set's makespan (η · s).
    pub mu: f64,
    /// Priority changes the core made (the Control's raises, or the
    /// mirrored ones).
    pub priority_changes: u64,
    /// End of the last workflow − first submission, s.
    pub set_makespan_s: f64,
    /// (t s, η_u), thinned to at most [`SERIES_POINTS`] points for plots
    /// (μ is computed on every sample).
    pub eta: Vec<(f64, f64)>,
    /// Instants of the core's priority changes (for mirroring).
    #[serde(skip)]
    pub raises: Vec<Time>,
    pub tasks_run: u64,
    /// The other users' tasks: their waits, the queue the first workflow
    /// met.
    #[serde(default)]
    pub background: world::BackgroundStats,
    /// Copies the engine made by replication (both sets' when they ran
    /// together).
    #[serde(default)]
    pub replicas: u64,
    /// Lifts done by cancel and resubmission (both sets' when they ran
    /// together).
    #[serde(default)]
    pub resubmitted_lifts: u64,
}

/// Points kept per η_u series in outputs.
pub const SERIES_POINTS: usize = 2000;

/// Draws the instances of `sources` for `seed` (the same in every system)
/// and their submission times: workflow k at k × `spacing`.
pub fn instances(
    sources: &[WorkflowSource],
    seed: u64,
    spacing: Time,
) -> Vec<(Time, fairsched_trace::workflow::Workflow)> {
    sources
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(derive_seed(seed, 0x1457), k as u64));
            (
                Time::from_millis(spacing.millis() * k as i64),
                s.instantiate(&mut rng),
            )
        })
        .collect()
}

/// One run's world, η_u series and engine counts.
pub(crate) struct Simulated {
    pub world: World,
    pub eta: EtaSeries,
    /// The No-Fairness set's η_u when both sets ran together.
    pub shadow_eta: Option<EtaSeries>,
    pub stats: RunStats,
}

/// Builds the core of `system`, runs it once on `grid` with `seed` and
/// returns the world (workflow outcomes, raises), the η_u series and the
/// engine's counts; `mirror`: raise instants to replay (No-Fairness only);
/// `concurrent`: `Some(mirror)` runs a No-Fairness copy of the workflows
/// on the same grid at the same time ([`World::concurrent`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn simulate(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    spacing: Time,
    system: &System,
    mirror: Vec<Time>,
    concurrent: Option<bool>,
) -> Result<Simulated, SimError> {
    if let System::Fairness { tau, .. } = system
        && !(0.0..1.0).contains(tau)
    {
        // η_u lies in [0, 1]: with τ_u ≥ 1 the controller never acts.
        return Err(SimError::Config(format!(
            "workflow-fairness: tau {tau} is not in [0, 1) (η_u lies in [0, 1], so the controller would never act)"
        )));
    }
    let (order, control): (PolicySpec, _) = match system {
        System::Fairness { tau, every, reraise } => (
            "priority".parse().expect("registered"),
            Some(
                registry.build_control(
                    &format!(
                        "workflow-fairness[tau={tau},every={every},reraise={}]",
                        if *reraise { "yes" } else { "no" }
                    )
                    .parse()
                    .map_err(|e| SimError::Config(format!("workflow-fairness: {e}")))?,
                )?,
            ),
        ),
        System::NoFairness => ("workflow-fcfs".parse().expect("registered"), None),
        System::With { order, control } => (
            order.clone(),
            control.as_ref().map(|c| registry.build_control(c)).transpose()?,
        ),
    };
    let mut workflows = instances(sources, seed, spacing);
    let n = workflows.len();
    if concurrent.is_some() {
        workflows.extend(workflows.clone());
    }
    // DIRAC-like matching replaces the priority queue the controller
    // lifts tasks in (the experiment refuses it for other systems).
    let order = match (system, grid.matching) {
        (System::Fairness { .. }, m) if m.is_dirac() => fairsched_core::OrderPolicy::Blind(Box::new(
            dirac_matching(&workflows, m == Matching::DiracOneQueue),
        )),
        _ => registry.build_order(&order)?,
    };
    let core = Scheduler::new(
        &Platform::pool(grid.initial_slots),
        derive_seed(seed, 1),
        registry.build_allocate(&"single-pool".parse().expect("registered"))?,
        order,
        control,
    );
    let mut world = World::new(grid.clone(), seed, workflows).mirror(mirror);
    if let Some(m) = concurrent {
        world = world.concurrent(n, m);
    }
    let mut eta = EtaSeries::new();
    let mut shadow_eta = concurrent.map(|_| EtaSeries::of_tagged(world.shadow_tags()));
    let stats = {
        let mut sim = Simulation::new(core);
        let g = grid.clone();
        sim.slot_speed(move |slot| slot_speed(&g, seed, slot));
        sim.add_agent(&mut world);
        match shadow_eta.as_mut() {
            Some(nf) => sim.run_agents(&mut fairsched_core::Fanout(vec![&mut eta, nf]))?,
            None => sim.run_agents(&mut eta)?,
        }
    };
    Ok(Simulated {
        world,
        eta,
        shadow_eta,
        stats,
    })
}

/// DIRAC-like matching for `workflows` (workflow k is user k): every
/// workflow task is one owner's (the experimenters'), in a task queue per
/// application (workflows of one name share it, as jobs of identical
/// requirements share a DIRAC task queue); other users' tasks are
/// another owner's, in one queue; equal shares ([`dirac`]). `one_queue`:
/// every workflow task in one queue.
fn dirac_matching(
    workflows: &[(Time, fairsched_trace::workflow::Workflow)],
    one_queue: bool,
) -> DiracMatching {
    let mut names: Vec<&str> = Vec::new();
    let mut routes = BTreeMap::new();
    for (k, (_, w)) in workflows.iter().enumerate() {
        let queue = match names.iter().position(|n| *n == w.name) {
            _ if one_queue => 0,
            Some(q) => q,
            None => {
                names.push(&w.name);
                names.len() - 1
            }
        };
        routes.insert(
            UserId(k as i64),
            Route {
                owner: 0,
                queue: queue as u32,
            },
        );
    }
    routes.insert(UserId(world::BACKGROUND_USER), Route { owner: 1, queue: 0 });
    DiracMatching::new(routes, BTreeMap::from([(0, 1.0), (1, 1.0)]))
}

/// Runs `system` once on `grid` with `seed`; `mirror`: raise instants to
/// replay (No-Fairness only).
pub fn run(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    spacing: Time,
    system: &System,
    mirror: Vec<Time>,
) -> Result<RunOutcome, SimError> {
    let Simulated {
        mut world,
        eta,
        stats,
        ..
    } = simulate(registry, grid, seed, sources, spacing, system, mirror, None)?;
    let workflows = world.outcomes();
    let end = world.end();
    let raises = std::mem::take(&mut world.raises);
    Ok(RunOutcome {
        replicas: world.replicas,
        resubmitted_lifts: world.resubmitted_lifts,
        ..outcome(
            workflows,
            Some(&eta),
            end,
            raises,
            stats.submitted,
            world.background(),
        )
    })
}

/// A set's outcome: σ_s, σ_m, and μ from `eta` (η_u of this set) until
/// `end` (NaN without it).
fn outcome(
    workflows: Vec<WorkflowOutcome>,
    eta: Option<&EtaSeries>,
    end: Time,
    raises: Vec<Time>,
    tasks_run: u64,
    background: world::BackgroundStats,
) -> RunOutcome {
    let first = workflows.iter().map(|w| w.submit_s).fold(f64::INFINITY, f64::min);
    let slow: Vec<f64> = workflows
        .iter()
        .map(|w| w.slowdown)
        .filter(|s| s.is_finite())
        .collect();
    let spans: Vec<f64> = workflows.iter().map(|w| w.makespan_s).collect();
    RunOutcome {
        sigma_s: std_dev(&slow),
        sigma_m: std_dev(&spans),
        mu: eta.map_or(f64::NAN, |e| area(&e.series, end)),
        priority_changes: eta.map_or(0, |e| e.priority_changes),
        set_makespan_s: end.as_secs_f64() - if first.is_finite() { first } else { 0.0 },
        eta: eta.map_or_else(Vec::new, |e| thin(&e.series, end, SERIES_POINTS)),
        raises,
        tasks_run,
        background,
        workflows,
        replicas: 0,
        resubmitted_lifts: 0,
    }
}

/// Fairness and No-Fairness at the same time on one grid (the paper's
/// set-up): one run of the Fairness system whose world carries a
/// No-Fairness copy of the workflows ([`World::concurrent`]); each set's
/// σ_s, σ_m and μ from its own workflows. The No-Fairness set's tasks
/// carry no workflow reference in the core (else the controller would
/// lift them); its η_u comes from an observer the world hands their
/// references to ([`World::shadow_tags`]).
pub fn concurrent_pair(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    p: &Protocol,
) -> Result<(RunOutcome, RunOutcome), SimError> {
    let system = p.fairness();
    let Simulated {
        mut world,
        eta,
        shadow_eta,
        stats,
    } = simulate(
        registry,
        grid,
        seed,
        sources,
        p.spacing,
        &system,
        Vec::new(),
        Some(p.mirror),
    )?;
    let mut all = world.outcomes();
    let nf = all.split_off(sources.len());
    let end_of = |ws: &[WorkflowOutcome]| {
        Time::from_millis(
            (ws.iter().map(|w| w.submit_s + w.makespan_s).fold(0.0, f64::max) * 1000.0).round() as i64,
        )
    };
    let (f_end, nf_end) = (end_of(&all), end_of(&nf));
    let raises = std::mem::take(&mut world.raises);
    let bg = world.background();
    let engine = |o: RunOutcome| RunOutcome {
        replicas: world.replicas,
        resubmitted_lifts: world.resubmitted_lifts,
        ..o
    };
    Ok((
        engine(outcome(all, Some(&eta), f_end, raises, stats.submitted, bg)),
        engine(RunOutcome {
            // Its tasks' lifts are mirrored ones, not the Control's.
            priority_changes: 0,
            ..outcome(nf, shadow_eta.as_ref(), nf_end, Vec::new(), stats.submitted, bg)
        }),
    ))
}

/// At most `n` points of `series` up to `until`, evenly picked (the last
/// one kept).
fn thin(series: &[(Time, f64)], until: Time, n: usize) -> Vec<(f64, f64)> {
    let s: Vec<&(Time, f64)> = series.iter().take_while(|p| p.0 <= until).collect();
    if s.len() <= n {
        return s.iter().map(|p| (p.0.as_secs_f64(), p.1)).collect();
    }
    let step = s.len() as f64 / n as f64;
    let mut out: Vec<(f64, f64)> = (0..n)
        .map(|i| s[(i as f64 * step) as usize])
        .map(|p| (p.0.as_secs_f64(), p.1))
        .collect();
    let last = s[s.len() - 1];
    out.push((last.0.as_secs_f64(), last.1));
    out
}

/// Fairness and No-Fairness on the same grid (and the `with` systems).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pair {
    pub repetition: u32,
    pub seed: u64,
    pub fairness: RunOutcome,
    pub no_fairness: RunOutcome,
    /// The systems added to the paper's two, on the same grid, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<RunOutcome>,
}

/// How a pair of runs is set up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Protocol {
    /// Between two workflow submissions.
    pub spacing: Time,
    /// The controller's τ_u, in [0, 1) (runs refuse others).
    pub tau: f64,
    /// The controller's period, s (0: every status change).
    pub every: f64,
    /// Mirror the Fairness run's lifts in the No-Fairness run.
    pub mirror: bool,
    /// Algorithm 2 as printed: tasks raised before may be raised again.
    pub reraise: bool,
    /// Both systems at the same time on one grid ([`concurrent_pair`]).
    pub concurrent: bool,
}

impl Protocol {
    /// The Fairness system this protocol runs.
    pub fn fairness(&self) -> System {
        System::Fairness {
            tau: self.tau,
            every: self.every,
            reraise: self.reraise,
        }
    }
}

impl Default for Protocol {
    /// Submissions 5 minutes apart, τ_u = 0.2 at every status change,
    /// lifts mirrored.
    fn default() -> Protocol {
        Protocol {
            spacing: Time::from_millis(300_000),
            tau: 0.2,
            every: 0.0,
            mirror: true,
            reraise: true,
            concurrent: false,
        }
    }
}

/// One repetition: Fairness first, then No-Fairness on the same grid with
/// the Fairness run's lifts mirrored (if `p.mirror`), as the paper did.
pub fn pair(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    p: &Protocol,
) -> Result<(RunOutcome, RunOutcome), SimError> {
    let system = p.fairness();
    let f = run(registry, grid, seed, sources, p.spacing, &system, Vec::new())?;
    let raises = if p.mirror { f.raises.clone() } else { Vec::new() };
    let nf = run(
        registry,
        grid,
        seed,
        sources,
        p.spacing,
        &System::NoFairness,
        raises,
    )?;
    Ok((f, nf))
}

/// Repetition `r` (1-based in the results) of the experiment seeded by
/// `seed`: the pair, then each `with` system on the same grid (its seed
/// derived as [`repetitions`] does).
pub fn repetition(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    p: &Protocol,
    with: &[System],
    r: u32,
) -> Result<Pair, SimError> {
    let s = derive_seed(seed, 0x5E7 + r as u64);
    let (fairness, no_fairness) = if p.concurrent {
        concurrent_pair(registry, grid, s, sources, p)?
    } else {
        pair(registry, grid, s, sources, p)?
    };
    let with = with
        .iter()
        .map(|sys| run(registry, grid, s, sources, p.spacing, sys, Vec::new()))
        .collect::<Result<_, _>>()?;
    Ok(Pair {
        repetition: r + 1,
        seed: s,
        fairness,
        no_fairness,
        with,
    })
}

/// `n` pairs, with seeds derived from `seed`, in parallel; results in
/// repetition order whatever the thread count.
pub fn repetitions(
    registry: &Registry,
    grid: &Grid,
    seed: u64,
    sources: &[WorkflowSource],
    p: &Protocol,
    n: u32,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Pair>, SimError> {
    (0..n)
        .into_par_iter()
        .map(|r| {
            let pair = repetition(registry, grid, seed, sources, p, &[], r)?;
            tick();
            Ok(pair)
        })
        .collect()
}

/// The workflows `names` stand for: a built-in profile (gate, simubloch,
/// field2, pet-sorteo) unless a file of that name exists (or always, with
/// `builtins`), else a WfCommons JSON or TOML profile file; errors name
/// the file.
pub fn load_sources(names: &[String], builtins: bool) -> Result<Vec<WorkflowSource>, SimError> {
    let opts = LoadOptions::default();
    let mut sources = Vec::new();
    for n in names {
        if n.trim().is_empty() {
            return Err(SimError::Usage(format!(
                "an empty workflow name in the list `{}` (give files or the built-in gate, simubloch, field2, pet-sorteo, comma-separated)",
                names.join(",")
            )));
        }
        let s = match WorkflowSource::builtin(n) {
            Some(s) if builtins || !std::path::Path::new(n).exists() => s,
            _ => WorkflowSource::load(std::path::Path::new(n), &opts)
                .map_err(|e| SimError::Config(e.to_string()))?,
        };
        sources.push(s);
    }
    Ok(sources)
}

/// What the tables' `input` column says for each of `names` (as
/// [`load_sources`] reads them): a built-in profile's name, a file's name
/// without its folder, or the path as given when two different paths
/// share that name.
pub fn input_labels(names: &[String], builtins: bool) -> Vec<String> {
    let file_name = |n: &String| -> Option<String> {
        let builtin = WorkflowSource::builtin(n).is_some() && (builtins || !std::path::Path::new(n).exists());
        if builtin {
            return None;
        }
        std::path::Path::new(n)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
    };
    let short: Vec<Option<String>> = names.iter().map(file_name).collect();
    names
        .iter()
        .zip(&short)
        .map(|(n, s)| match s {
            Some(s)
                if !names
                    .iter()
                    .zip(&short)
                    .any(|(m, t)| m != n && t.as_ref() == Some(s)) =>
            {
                s.clone()
            }
            _ => n.clone(),
        })
        .collect()
}

/// The paper's headline factors (No-Fairness / Fairness, "up to").
pub struct PaperFactors {
    pub sigma_s: f64,
    pub mu: f64,
    pub sigma_m: Option<f64>,
}

/// Paper §3.2.
pub fn paper(n: u32) -> Option<PaperFactors> {
    match n {
        1 => Some(PaperFactors {
            sigma_s: 7.0,
            mu: 2.0,
            sigma_m: Some(15.0),
        }),
        2 => Some(PaperFactors {
            sigma_s: 5.9,
            mu: 1.9,
            sigma_m: None,
        }),
        3 => Some(PaperFactors {
            sigma_s: 3.8,
            mu: 1.9,
            sigma_m: None,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tau_outside_0_1_is_refused() {
        let sources = [WorkflowSource::builtin("simubloch").expect("builtin")];
        for tau in [1.0, 1.5, -0.1, f64::NAN] {
            let system = System::Fairness {
                tau,
                every: 0.0,
                reraise: true,
            };
            let e = run(
                &Registry::builtin(),
                &Grid::constant(5),
                1,
                &sources,
                Time::ZERO,
                &system,
                Vec::new(),
            )
            .unwrap_err();
            assert!(e.to_string().contains("not in [0, 1)"), "{tau}: {e}");
        }
        let system = System::Fairness {
            tau: 0.0,
            every: 0.0,
            reraise: true,
        };
        assert!(
            run(
                &Registry::builtin(),
                &Grid::constant(5),
                1,
                &sources,
                Time::ZERO,
                &system,
                Vec::new()
            )
            .is_ok()
        );
    }
}
