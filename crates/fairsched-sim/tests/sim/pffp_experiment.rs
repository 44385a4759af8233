//! The PFFP experiment: instance preparation (weeks, bags of tasks,
//! utilisation scaling, disjoint workloads), ρ and t_w of a tiny run by
//! hand, invariants on real weeks, and results independent of the thread
//! count. Real logs from `../shared/data/traces/swf/`.

use fairsched_sim::experiments::pffp::{self as exp, Kind, Test, WeekLog, Workload};
use fairsched_trace::{FilterCounts, Job, Week};
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/swf"
    ))
}

/// Two of the paper's logs (the smallest ones), loaded once; `None` (with
/// a note) when `../shared/data` is absent.
fn logs() -> Option<&'static [WeekLog]> {
    if !dir().exists() {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return None;
    }
    static L: OnceLock<Vec<WeekLog>> = OnceLock::new();
    Some(L.get_or_init(|| {
        ["KTH-SP2", "SDSC-SP2"]
            .iter()
            .map(|n| WeekLog::shared(n, &dir()).unwrap())
            .collect()
    }))
}

fn job(id: u64, submit: i64, runtime: i64, procs: u32, est: Option<i64>) -> Job {
    Job {
        id,
        submit,
        runtime,
        procs,
        requested_time: est,
        user: 1,
        group: 1,
        status: 1,
        org: 0,
        part: 0,
    }
}

/// A log of one week made by hand.
fn hand_log(jobs: Vec<Job>) -> WeekLog {
    WeekLog {
        name: "hand".into(),
        path: "hand".into(),
        clock: "UTC".into(),
        clock_note: None,
        jobs,
        filters: FilterCounts::default(),
        weeks: vec![Week {
            index: 0,
            start: 1000,
            end: 1000 + 432_000,
        }],
        median_estimate: Some(7),
    }
}

fn test_on(machines: Vec<u32>, bags: bool, strategies: &[(&str, &str)]) -> Test {
    Test {
        number: 2,
        workload: Workload::B,
        machines,
        bags,
        utilization: None,
        kind: Kind::Compare(
            strategies
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        ),
        notes: Vec::new(),
        fitted: None,
        weeks: fairsched_sim::experiments::pffp::WeekDraw::Pool,
    }
}

/// Two machines of 1, jobs (r, p) = (0, 10), (0, 20), (1, 5) after the
/// Monday. MST: job 1 → machine 0 (tie), job 2 → machine 1 (free), job 3
/// at t = 1 → machine 0 (frees at 10, not 20): starts 10, ends 15.
/// C = 20, LB = max(max r+p = 20, 35/2) = 20, ρ = 1; t_w = (0+0+9)/3 = 3.
/// A job before the week or on Saturday takes no part.
#[test]
fn a_tiny_week_by_hand() {
    let log = hand_log(vec![
        job(9, 500, 100, 1, None),
        job(1, 1000, 10, 1, None),
        job(2, 1000, 20, 1, None),
        job(3, 1001, 5, 1, None),
        job(8, 1000 + 432_000, 100, 1, None),
    ]);
    let t = test_on(vec![1, 1], false, &[("MST", "mst")]);
    let inst = exp::instance(&log, log.weeks[0], 0, &t, 0);
    assert_eq!((inst.jobs, inst.tasks, inst.scale), (3, 3, 1.0));
    let m = exp::run_strategy(&fairsched_core::Registry::builtin(), &inst, &t.machines, "mst", 0).unwrap();
    assert_eq!(
        (m.makespan, m.lower_bound, m.rho, m.mean_wait),
        (20.0, 20.0, 1.0, 3.0)
    );
    // Three jobs without an estimate: MSTUser gets the log's median.
    assert_eq!(inst.missing_estimates, 3);
    assert_eq!(
        exp::spec_for("mst-user", &inst).unwrap().to_string(),
        "mst-user[missing=7]"
    );
    assert_eq!(
        exp::spec_for("mst-user[missing=9]", &inst).unwrap().to_string(),
        "mst-user[missing=9]"
    );
}

/// Bags of tasks: a q-processor job becomes q sequential tasks of its
/// run time; the arrival scaling reaches the target utilisation.
#[test]
fn bags_of_tasks_and_the_utilisation_target() {
    let log = hand_log(vec![
        job(1, 1000, 100, 4, Some(50)),
        job(2, 1000 + 3600, 200, 2, None),
    ]);
    let mut t = test_on(vec![2, 2], true, &[("MLp", "mlp")]);
    let inst = exp::instance(&log, log.weeks[0], 0, &t, 0);
    assert_eq!((inst.jobs, inst.tasks), (2, 6));
    let runtimes: Vec<i64> = inst.arrivals.iter().map(|a| a.runtime.millis()).collect();
    assert_eq!(
        runtimes,
        vec![100_000; 4]
            .into_iter()
            .chain(vec![200_000; 2])
            .collect::<Vec<_>>()
    );
    // Work 800 s on 4 processors over 432 000 s.
    let natural = 800.0 / (4.0 * 432_000.0);
    t.utilization = Some(0.5);
    let inst = exp::instance(&log, log.weeks[0], 0, &t, 0);
    assert!((inst.utilization - 0.5).abs() < 1e-12);
    assert!((inst.scale - natural / 0.5).abs() < 1e-15);
    // The second bag arrives 3600 s after the Monday, scaled.
    let last = inst.arrivals.last().unwrap().submit.millis();
    assert_eq!(last, (3600.0 * inst.scale * 1000.0).round() as i64);
    // Without a target, q tasks of Tests 1–4 (--q-tasks) keep the log's
    // arrivals; Test 5's bags draw one utilisation per week in [0.2, 0.9].
    t.utilization = None;
    let inst = exp::instance(&log, log.weeks[0], 0, &t, 3);
    assert_eq!((inst.scale, inst.tasks), (1.0, 6));
    assert!((inst.utilization - natural).abs() < 1e-15);
    t.workload = Workload::C;
    for i in 0..20 {
        let u = exp::instance(&log, log.weeks[0], i, &t, 3).utilization;
        assert!((0.2..=0.9).contains(&u), "{u}");
    }
}

/// Workloads A, B and C are disjoint weeks of the shuffled pool, a
/// smaller `--instances` takes a prefix, and the seed changes the draw.
#[test]
fn workloads_are_disjoint_and_instances_take_a_prefix() {
    let Some(logs) = logs() else { return };
    let pool = exp::pool(logs, 0);
    let (a, b) = (
        exp::workload_weeks(&pool, Workload::A, None).unwrap(),
        exp::workload_weeks(&pool, Workload::B, None).unwrap(),
    );
    assert_eq!((a.len(), b.len()), (18, 30));
    for w in &a {
        assert!(!b.contains(w), "{w:?} in A and B");
    }
    let b5 = exp::workload_weeks(&pool, Workload::B, Some(5)).unwrap();
    assert_eq!(&b[..5], &b5[..]);
    assert_ne!(exp::pool(logs, 1), pool);
    // Every week of the pool has a job, and starts on a week boundary.
    for (l, w) in &pool {
        assert!(!logs[*l].jobs_in(w).is_empty());
        assert_eq!(w.end - w.start, 432_000);
    }
    // A pool too small for a workload is an error that says why.
    let err = exp::workload_weeks(&pool[..20], Workload::B, None).map(|w| w.len());
    assert_eq!(err.ok(), Some(2));
    let err = exp::workload_weeks(&pool[..18], Workload::B, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("18 weeks") && err.contains("Workload B"), "{err}");
}

/// On real weeks every strategy's ρ is at least 1 (LB bounds every
/// schedule), waits are non-negative, and all strategies see the same
/// jobs; the degradation table has one rank-1 strategy.
#[test]
fn real_weeks_keep_the_lower_bound() {
    let Some(logs) = logs() else { return };
    let t = Test::paper(4, false).unwrap();
    let insts = exp::instances(logs, &t, Some(4), 0).unwrap();
    let rows = exp::run(&fairsched_core::Registry::builtin(), &insts, &t, 0, &|| {}).unwrap();
    assert_eq!(rows.len(), 4 * 6);
    for r in &rows {
        assert!(r.metrics.rho >= 1.0 - 1e-12, "{r:?}");
        assert!(r.metrics.mean_wait >= 0.0, "{r:?}");
        assert_eq!(r.metrics.jobs, r.tasks);
    }
    let d = exp::degradations(&rows, &t);
    assert_eq!(d.rows.len(), 6);
    assert!(d.rows.iter().any(|r| r.rank == 1));
    assert!(d.rows.iter().all(|r| r.rho >= 0.0 && r.wait >= 0.0));
}

/// The grid of Test 3 has 121 PFFP settings; Test 1 adds the four H =
/// 0.71 settings of Table 4. Cells carry the paper's values.
#[test]
fn grid_tests_run_every_setting() {
    let Some(logs) = logs() else { return };
    let t3 = Test::paper(3, false).unwrap();
    assert_eq!(t3.strategies().len(), 121);
    let t1 = Test::paper(1, false).unwrap();
    assert_eq!(t1.strategies().len(), 125);
    let mut small = t3.clone();
    small.kind = Kind::Grid {
        grid_h: Vec::new(),
        extra: vec![(0.78, 0.0028, 0.0046), (0.71, 0.01, 0.01)],
    };
    let insts = exp::instances(logs, &small, Some(2), 0).unwrap();
    let rows = exp::run(&fairsched_core::Registry::builtin(), &insts, &small, 0, &|| {}).unwrap();
    let cells = exp::cells(&rows, &small);
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0].paper, Some(1.056)); // Table 7, φ = 0.0028, ψ = 0.0046
    assert_eq!(cells[1].paper, None); // Table 7 has H = 0.78 only
    for c in &cells {
        assert!(c.rho >= 1.0);
    }
    assert!(Test::paper(6, false).is_err());
    assert!(Test::paper(2, true).is_err());
}

/// Same seed, same rows, whatever the thread count.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let Some(logs) = logs() else { return };
    let t = Test::paper(2, false).unwrap();
    let go = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let insts = exp::instances(logs, &t, Some(3), 5).unwrap();
            let rows = exp::run(&fairsched_core::Registry::builtin(), &insts, &t, 5, &|| {}).unwrap();
            format!("{rows:?}")
        })
    };
    assert_eq!(go(1), go(3));
}

/// `--fitted`: the workload's own Pareto fit, mean and Hurst estimate go
/// into every PFFP spec (not into the others), and a grid runs at the
/// fitted H.
#[test]
fn fitted_parameters_reach_every_pffp_spec() {
    let Some(logs) = logs() else { return };
    let f = exp::Fitted::on(logs, 0).unwrap();
    assert!(f.jobs > 0 && f.beta > 0.0 && f.sm > 0.0 && f.mu > 0.0);
    assert!(f.h > 0.0 && f.h <= 1.0);
    assert_eq!(f.hurst.len(), 9);
    let t = Test::paper(2, false).unwrap().with_fitted(f.clone());
    for (label, spec) in t.strategies() {
        let p: fairsched_core::PolicySpec = spec.parse().unwrap();
        let has = |k: &str| p.params.iter().any(|(key, _)| key == k);
        assert_eq!(
            has("beta") && has("sm") && has("mu") && has("h"),
            label.starts_with("PFFP"),
            "{spec}"
        );
    }
    // An explicit H is kept.
    assert!(
        f.apply("pffp[h=0.5]").contains("h=0.5") && !f.apply("pffp[h=0.5]").contains(&format!("h={}", f.h))
    );
    let g = Test::paper(3, false).unwrap().with_fitted(f.clone());
    assert!(g.strategies().iter().all(|s| s.1.contains(&format!("h={}", f.h))));
    assert!(exp::check(&fairsched_core::Registry::builtin(), &g).is_ok());
}

/// `--replace LABEL=POLICY` runs one of the paper's strategies as another
/// spec under its label (the comparison keeps its six columns); a label
/// the test has not, a label given twice, a grid test or a policy that is
/// not an allocate policy is a usage error that names the choices.
#[test]
fn replace_runs_a_strategy_as_another_spec_under_its_label() {
    use fairsched_sim::experiment::{Experiment, run_local};
    use fairsched_sim::experiments::pffp::experiment::{Args, Pffp, parse_replace};
    use fairsched_sim::{Quiet, SimError};
    let r = fairsched_core::Registry::builtin();
    let usage = |a: &Args| match Pffp::check(a, &r, &Quiet) {
        Err(SimError::Usage(m)) => m,
        other => panic!("{:?}", other.err()),
    };
    let mut a = Args::test(2);
    a.replace = vec![parse_replace("MLp=mlp[n=printed]").unwrap()];
    assert!(Pffp::check(&a, &r, &Quiet).is_ok());
    let mut b = a.clone();
    b.replace.push(parse_replace("Nope=rand").unwrap());
    let m = usage(&b);
    assert!(
        m.contains("Test 2 has no strategy Nope") && m.contains("MST, PFFP1, PFFP2, MSTUser, MLp, Rand"),
        "{m}"
    );
    let mut b = a.clone();
    b.replace.push(parse_replace("MLp=rand").unwrap());
    assert!(usage(&b).contains("MLp is given twice"));
    let mut b = a.clone();
    b.replace = vec![parse_replace("MLp=fcfs").unwrap()];
    assert!(usage(&b).starts_with("--replace MLp=fcfs"), "{}", usage(&b));
    let mut g = Args::test(3);
    g.replace = a.replace.clone();
    assert!(usage(&g).contains("φ×ψ grid"));
    assert!(parse_replace("mlp[n=printed]").is_err_and(|e| e.contains("LABEL=POLICY")));
    assert!(parse_replace("=rand").is_err());
    // A run: six columns, MLp's printed.
    let Some(_) = logs() else { return };
    a.logs = vec![dir().join("KTH-SP2-1996-2.1-cln.swf.gz")];
    a.instances = Some(1);
    let d = tempfile::tempdir().unwrap();
    let s = run_local::<Pffp>(&a, d.path(), false, &r, &Quiet)
        .unwrap()
        .summary;
    assert_eq!(s.strategies.len(), 6);
    assert!(
        s.strategies
            .contains(&("MLp".to_string(), "mlp[n=printed]".to_string())),
        "{:?}",
        s.strategies
    );
    assert!(
        s.notes
            .iter()
            .any(|n| n.starts_with("--replace: MLp runs mlp[n=printed]"))
    );
}
