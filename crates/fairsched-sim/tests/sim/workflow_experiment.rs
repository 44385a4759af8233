//! The workflow-fairness experiment end to end: the paper's worst case,
//! identical grids for both systems, determinism, and every shared
//! WfCommons trace run to completion.

use fairsched_core::Time;
use fairsched_sim::experiments::workflow::{self as exp, System, grid::Grid};
use fairsched_trace::workflow::{LoadOptions, WorkflowSource};
use std::path::{Path, PathBuf};

fn sources(n: u32) -> Vec<WorkflowSource> {
    exp::experiment(n)
        .unwrap()
        .iter()
        .map(|s| WorkflowSource::builtin(s).unwrap())
        .collect()
}

fn mins(m: i64) -> Time {
    Time::from_millis(m * 60_000)
}

/// Paper §4: with resources constant and equal to the first workflow's
/// task count, nothing can be done until the first workflow completes,
/// and the method does no better than first-come-first-served.
#[test]
fn the_worst_case_shows_no_gain_over_fcfs() {
    let src = sources(1); // three GATE of 100 tasks
    for seed in [1, 2] {
        let (f, nf) = exp::pair(
            &fairsched_core::Registry::builtin(),
            &Grid::constant(100),
            seed,
            &src,
            &exp::Protocol::default(),
        )
        .unwrap();
        // The first GATE holds every slot from its start: the same run.
        assert_eq!(
            f.workflows[0].makespan_s, nf.workflows[0].makespan_s,
            "seed {seed}"
        );
        assert_eq!(f.workflows[0].mean_wait_s, 0.0);
        eprintln!(
            "seed {seed}: σ_s NF {:.3} F {:.3}; set makespan NF {:.0} F {:.0}",
            nf.sigma_s, f.sigma_s, nf.set_makespan_s, f.set_makespan_s
        );
        assert!(
            f.sigma_s >= 0.9 * nf.sigma_s,
            "seed {seed}: F {} NF {}",
            f.sigma_s,
            nf.sigma_s
        );
    }
}

/// Fairness and No-Fairness see the same grid: same workflow instances,
/// same pilots; and a run is a function of its seed.
#[test]
fn both_systems_see_the_same_grid_and_runs_are_deterministic() {
    let src = sources(2);
    let g = Grid::default();
    let a = exp::run(
        &fairsched_core::Registry::builtin(),
        &g,
        7,
        &src,
        mins(5),
        &System::NoFairness,
        Vec::new(),
    )
    .unwrap();
    let b = exp::run(
        &fairsched_core::Registry::builtin(),
        &g,
        7,
        &src,
        mins(5),
        &System::NoFairness,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let f = exp::run(
        &fairsched_core::Registry::builtin(),
        &g,
        7,
        &src,
        mins(5),
        &System::Fairness {
            tau: 0.2,
            every: 0.0,
            reraise: true,
        },
        Vec::new(),
    )
    .unwrap();
    assert!(f.priority_changes > 0, "the controller acted");
    assert_eq!(a.priority_changes, 0);
    let names = |r: &exp::RunOutcome| {
        r.workflows
            .iter()
            .map(|w| (w.name.clone(), w.tasks))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), names(&f));
    assert_eq!(names(&a)[3], ("SimuBloch".to_string(), 25));
    // Every workflow completed, slowdowns ≥ 1 (M_own is a lower bound on
    // the makespan when durations are the measured ones).
    for r in [&a, &f] {
        for w in &r.workflows {
            assert!(!w.failed, "{}", w.name);
            assert!(w.slowdown >= 1.0 - 1e-9, "{}: {}", w.name, w.slowdown);
        }
        assert!(r.mu > 0.0);
    }
    // Parallel repetitions give the rows of the sequential ones.
    let reps = exp::repetitions(
        &fairsched_core::Registry::builtin(),
        &g,
        3,
        &src[3..],
        &exp::Protocol::default(),
        2,
        &|| {},
    )
    .unwrap();
    let again = exp::repetitions(
        &fairsched_core::Registry::builtin(),
        &g,
        3,
        &src[3..],
        &exp::Protocol::default(),
        2,
        &|| {},
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&reps).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

fn shared_workflows() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/traces/workflows/pegasus");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: {} not found", dir.display());
        return None;
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    v.sort();
    Some(v)
}

/// Every WfCommons trace of `../shared` runs to completion, with and
/// without the controller, on heterogeneous pilots with failures.
#[test]
fn every_shared_wfcommons_trace_runs_to_completion() {
    let Some(files) = shared_workflows() else {
        return;
    };
    assert!(files.len() >= 80, "{} files", files.len());
    // Pilots that stay (some of these traces have tasks of many hours,
    // longer than the default pilots live), runs that fail now and then.
    let g = Grid {
        background_per_hour: 0.0,
        lifetime: fairsched_trace::workflow::Dist::Constant { value: f64::INFINITY },
        ..Grid::default()
    };
    for (i, f) in files.iter().enumerate() {
        let src = WorkflowSource::load(f, &LoadOptions::default()).unwrap();
        let n = src.task_count();
        let sys = if i % 2 == 0 {
            System::Fairness {
                tau: 0.2,
                every: 0.0,
                reraise: true,
            }
        } else {
            System::NoFairness
        };
        let two = [src.clone(), src];
        let r = exp::run(
            &fairsched_core::Registry::builtin(),
            &g,
            i as u64,
            &two,
            mins(1),
            &sys,
            Vec::new(),
        )
        .unwrap();
        for w in &r.workflows {
            assert!(!w.failed, "{}", f.display());
            assert_eq!(w.tasks, n);
            assert!(w.makespan_s >= w.m_own_s - 1e-6, "{}", f.display());
        }
    }
}

/// Experiment 2 as `fairsched experiment workflow-fairness --exp 2` runs
/// it (seed 0, 4 repetitions, default grid and protocol).
fn exp2_pairs() -> Vec<exp::Pair> {
    exp::repetitions(
        &fairsched_core::Registry::builtin(),
        &Grid::default(),
        0,
        &sources(2),
        &exp::Protocol::default(),
        4,
        &|| {},
    )
    .unwrap()
}

fn simubloch(r: &exp::RunOutcome) -> &fairsched_sim::experiments::workflow::world::WorkflowOutcome {
    r.workflows.iter().find(|w| w.name == "SimuBloch").unwrap()
}

/// What reproduces of the paper's Table 3 on our grid: a SimuBloch
/// arriving after three GATE has W = 1, the controller lifts most of its
/// tasks at once, and its tasks' mean wait is lower than under FCFS (where
/// they wait for every GATE task to start), in every repetition.
#[test]
fn exp2_fairness_lowers_simublochs_mean_wait() {
    for p in exp2_pairs() {
        let (nf, f) = (simubloch(&p.no_fairness), simubloch(&p.fairness));
        eprintln!(
            "rep {}: SimuBloch w̄ NF {:.0} F {:.0}; s NF {:.2} F {:.2}; σ_s NF {:.3} F {:.3}",
            p.repetition,
            nf.mean_wait_s,
            f.mean_wait_s,
            nf.slowdown,
            f.slowdown,
            p.no_fairness.sigma_s,
            p.fairness.sigma_s
        );
        assert!(
            f.mean_wait_s < nf.mean_wait_s,
            "rep {}: F {} NF {}",
            p.repetition,
            f.mean_wait_s,
            nf.mean_wait_s
        );
    }
}

/// The check of the paper's headline (σ_s and SimuBloch's
/// slowdown lower under Fairness in Experiment 2). It FAILS on our grid,
/// and is therefore ignored (run it with `cargo test -- --ignored`): once
/// two SimuBloch tasks completed its T̂ ≈ 0.03 makes it W_min and the
/// controller lifts the GATE workflows above its remaining tasks, which
/// finish late (unit test `a_short_workflow_is_lifted_on_arrival_then_
/// becomes_w_min`; docs/workflow-fairness.md, "SimuBloch in Experiment
/// 2", lists the grids and queue semantics we tried).
#[test]
#[ignore = "does not reproduce on our grid; see docs/workflow-fairness.md, \"SimuBloch in Experiment 2\""]
fn exp2_fairness_lowers_sigma_s_and_simublochs_slowdown() {
    for p in exp2_pairs() {
        let (nf, f) = (simubloch(&p.no_fairness), simubloch(&p.fairness));
        assert!(
            p.fairness.sigma_s < p.no_fairness.sigma_s,
            "rep {}: σ_s",
            p.repetition
        );
        assert!(f.slowdown < nf.slowdown, "rep {}: slowdown", p.repetition);
    }
}
