//! Reproduction studies (`experiment PAPER --study --quick`): each runs
//! and writes its files, its figures are the same bytes for a seed, and
//! every reading changes what it says it changes.

use fairsched_core::Registry;
use fairsched_sim::experiment::{Experiment, run_local};
use fairsched_sim::experiments::{diet, pffp, shapley, workflow};
use fairsched_sim::study::{Reading, Studied, Study, StudyArgs};
use fairsched_sim::{Quiet, SimError};
use std::path::PathBuf;

fn traces_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/swf"
    ))
}

/// The error of a quick study of `E` from `base`, with only the readings
/// `only`, that must be refused before it runs anything.
fn refused_quick_study<E: Studied>(base: E::Args, only: &[&str]) -> SimError {
    let args = StudyArgs {
        base,
        quick: true,
        only: only.iter().map(|s| s.to_string()).collect(),
        case: None,
    };
    let d = tempfile::tempdir().unwrap();
    run_local::<Study<E>>(&args, d.path(), false, &Registry::builtin(), &Quiet)
        .map(|_| ())
        .expect_err("refused")
}

/// Runs the quick study of `E` from `base` twice into two folders; checks
/// its files (a chart per case among them) and that study.json and study.csv are the same bytes.
fn quick_study<E: Studied>(base: E::Args) -> serde_json::Value {
    let registry = Registry::builtin();
    let args = StudyArgs {
        base,
        quick: true,
        only: Vec::new(),
        case: None,
    };
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut bytes = Vec::new();
    for d in &dirs {
        let done = run_local::<Study<E>>(&args, d.path(), false, &registry, &Quiet).unwrap();
        assert!(done.text.contains("Claims:"), "{}", done.text);
        for f in ["study.json", "study.csv", "summary.json", "tables.json"] {
            assert!(d.path().join(f).is_file(), "{f} missing");
        }
        // A chart per case, naming its readings.
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.path().join("study.json")).unwrap()).unwrap();
        for r in v["rows"].as_array().unwrap() {
            let case = r["case"].as_str().unwrap();
            let file = format!(
                "study-{}.svg",
                case.replace(
                    |c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                    "-"
                )
            );
            let svg = std::fs::read_to_string(d.path().join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(svg.contains(r["reading"].as_str().unwrap()), "{file}");
        }
        bytes.push((
            std::fs::read(d.path().join("study.json")).unwrap(),
            std::fs::read(d.path().join("study.csv")).unwrap(),
        ));
    }
    assert!(
        bytes[0] == bytes[1],
        "study files differ between two runs of one seed"
    );
    let v: serde_json::Value = serde_json::from_slice(&bytes[0].0).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(
            r["command"]
                .as_str()
                .unwrap()
                .starts_with("fairsched experiment ")
        );
        assert!(!r["figures"].as_array().unwrap().is_empty(), "{r}");
    }
    v
}

/// The readings of a study, each with its case.
fn readings<E: Studied>(base: &E::Args, quick: bool) -> Vec<Reading<E::Args>> {
    E::readings(base, quick)
}

/// One reading's summary, run alone through the experiment.
fn run_reading<E: Experiment>(r: &Reading<E::Args>) -> Result<E::Summary, SimError> {
    let d = tempfile::tempdir().unwrap();
    Ok(run_local::<E>(&r.args, d.path(), false, &Registry::builtin(), &Quiet)?.summary)
}

/// Every reading of a study, full size and quick, names where it comes
/// from (the type has no "unsourced"): quoted words of the paper or the spec, or a sweep over a stated
/// range whose parameter has at least two points in the case (a
/// sensitivity is never one value picked by its result; the spec's
/// default counts as a point when its reading says it is one).
fn assert_sourced<E: Studied>(base: &E::Args) {
    use fairsched_sim::study::Source;
    for quick in [false, true] {
        let rs = readings::<E>(base, quick);
        for r in &rs {
            let at = format!("{}/{}/{}", E::STUDY, r.case, r.name);
            match &r.source {
                Source::Paper { quotes } | Source::Spec { quotes } => {
                    assert!(!quotes.is_empty(), "{at}: no quote");
                    for q in quotes {
                        assert!(
                            !q.text.trim().is_empty() && !q.at.trim().is_empty(),
                            "{at}: {q:?}"
                        );
                    }
                }
                Source::Sensitivity { parameter, range } => {
                    assert!(!range.trim().is_empty(), "{at}: no range");
                    let points = rs
                        .iter()
                        .filter(|o| {
                            o.case == r.case
                                && matches!(&o.source, Source::Sensitivity { parameter: p, .. } if p == parameter)
                        })
                        .count();
                    let default_is_a_point = range.contains("default");
                    assert!(
                        points >= 2 || (points == 1 && default_is_a_point),
                        "{at}: the sweep over {parameter} has {points} point(s) in its case"
                    );
                }
            }
        }
    }
}

/// The workflow study's base as `--study` without `--exp` gives it: every
/// experiment.
fn workflow_all() -> workflow::experiment::Args {
    workflow::experiment::Args {
        exp: None,
        ..workflow::experiment::Args::exp(1)
    }
}

fn find<'a, A>(rs: &'a [Reading<A>], case: &str, name: &str) -> &'a Reading<A> {
    rs.iter()
        .find(|r| r.case == case && r.name == name)
        .unwrap_or_else(|| panic!("no reading {case}/{name}"))
}

#[test]
fn workflow_study_quick_runs_and_is_deterministic() {
    let v = quick_study::<workflow::experiment::WorkflowFairness>(workflow_all());
    let rows = v["rows"].as_array().unwrap();
    let cases: Vec<&str> = rows.iter().map(|r| r["case"].as_str().unwrap()).collect();
    assert!(cases.contains(&"exp1") && cases.contains(&"exp2"));
    // Exp 2's rows judge SimuBloch; Exp 1's do not.
    let verdict = |case: &str, claim: &str| {
        rows.iter().find(|r| r["case"] == case).unwrap()["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["claim"] == claim)
            .unwrap()["holds"]
            .clone()
    };
    assert!(verdict("exp1", "simubloch").is_null());
    assert!(verdict("exp2", "simubloch").is_boolean());
}

#[test]
fn workflow_readings_name_their_sources() {
    assert_sourced::<workflow::experiment::WorkflowFairness>(&workflow_all());
}

#[test]
fn workflow_readings_change_what_they_say() {
    use workflow::experiment::WorkflowFairness;
    let rs = readings::<WorkflowFairness>(&workflow_all(), true);
    let default = run_reading::<WorkflowFairness>(find(&rs, "exp1", "default")).unwrap();
    let stated = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-setup")).unwrap();
    let warm = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-warmup-2h")).unwrap();
    // Today's grid: the first workflow arrives at t = 0, before any other
    // user's task; after a warm-up, at 2 h, other users' tasks have run.
    for p in &default.repetitions {
        assert_eq!(p.no_fairness.background.queued_at_first_workflow, 0);
        assert_eq!(p.no_fairness.workflows[0].submit_s, 0.0);
    }
    for p in &warm.repetitions {
        assert_eq!(p.no_fairness.workflows[0].submit_s, 7_200.0);
        assert_eq!(p.fairness.workflows[0].submit_s, 7_200.0);
    }
    assert!(
        warm.repetitions[0].no_fairness.background.started
            > stated.repetitions[0].no_fairness.background.started,
        "the warm-up's other users' tasks ran"
    );
    assert!(warm.grid.contains("warm-up"), "{}", warm.grid);
    let pilots = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-pilots-40")).unwrap();
    assert!(pilots.grid.contains("40 pilots at start"), "{}", pilots.grid);
    let busy = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-bg-200")).unwrap();
    assert!(
        busy.grid.contains("background 200 tasks per hour"),
        "{}",
        busy.grid
    );
    // A busier grid makes other users' tasks wait longer.
    let wait = |s: &workflow::experiment::Summary| s.repetitions[0].no_fairness.background.mean_wait_s;
    assert!(
        wait(&busy) > wait(&stated),
        "{} vs {}",
        wait(&busy),
        wait(&stated)
    );
    // The FIFO baseline runs beside the paper's two.
    let fifo = run_reading::<WorkflowFairness>(find(&rs, "exp1", "fifo-baseline")).unwrap();
    assert_eq!(fifo.with.len(), 1, "{:?}", fifo.with);
    assert_eq!(fifo.repetitions[0].with.len(), 1);
    // Skipping raised tasks changes the Fairness run's raises.
    let skip = run_reading::<WorkflowFairness>(find(&rs, "exp1", "skip-raised")).unwrap();
    assert_ne!(
        skip.repetitions[0].fairness.priority_changes,
        default.repetitions[0].fairness.priority_changes
    );
    // Concurrent: one run holds both sets, each with every workflow.
    let both = run_reading::<WorkflowFairness>(find(&rs, "exp1", "concurrent")).unwrap();
    let (f, nf) = (&both.repetitions[0].fairness, &both.repetitions[0].no_fairness);
    assert_eq!((f.workflows.len(), nf.workflows.len()), (3, 3));
    assert_eq!(f.tasks_run, nf.tasks_run, "one run, one count");
    assert!(f.tasks_run > default.repetitions[0].fairness.tasks_run);
    // Each set's μ, over its own workflows.
    assert!(
        nf.mu.is_finite() && f.mu.is_finite() && nf.mu > 0.0,
        "{} {}",
        nf.mu,
        f.mu
    );
    // Replication copies slow tasks; neither the default nor the stated
    // set-up (its threshold is not stated) ever does.
    for name in ["stated-replicate-2", "stated-replicate-4"] {
        let rep = run_reading::<WorkflowFairness>(find(&rs, "exp1", name)).unwrap();
        assert!(rep.grid.contains("gets a copy"), "{name}: {}", rep.grid);
        assert!(rep.repetitions[0].fairness.replicas > 0, "{name}");
    }
    assert_eq!(default.repetitions[0].fairness.replicas, 0);
    assert_eq!(stated.repetitions[0].fairness.replicas, 0);
    // Lifts by cancel and resubmission, in both sets (the No-Fairness
    // set's mirrored lifts too); in place by default.
    for name in ["cancel-resubmit", "stated-setup", "stated-resubmit-60s"] {
        let cr = run_reading::<WorkflowFairness>(find(&rs, "exp1", name)).unwrap();
        let p = &cr.repetitions[0];
        assert!(
            p.fairness.resubmitted_lifts > 0 && p.no_fairness.resubmitted_lifts > 0,
            "{name}: {} {}",
            p.fairness.resubmitted_lifts,
            p.no_fairness.resubmitted_lifts
        );
        assert!(p.fairness.resubmitted_lifts >= p.no_fairness.resubmitted_lifts);
    }
    assert_eq!(default.repetitions[0].fairness.resubmitted_lifts, 0);
    // DIRAC-like matching: said, and it changes the run.
    let dirac = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-dirac")).unwrap();
    assert!(dirac.grid.contains("DIRAC-like"), "{}", dirac.grid);
    assert!(!stated.grid.contains("DIRAC-like"), "{}", stated.grid);
    assert_ne!(
        (
            dirac.repetitions[0].fairness.mu,
            dirac.repetitions[0].fairness.set_makespan_s
        ),
        (
            stated.repetitions[0].fairness.mu,
            stated.repetitions[0].fairness.set_makespan_s
        )
    );
    // One task queue for all the workflows' tasks: the same as a queue
    // per application when every workflow is GATE (Exp 1), not with
    // SimuBloch beside them (Exp 2).
    let key = |s: &workflow::experiment::Summary| {
        let f = &s.repetitions[0].fairness;
        (
            f.mu,
            f.set_makespan_s,
            f.tasks_run,
            s.repetitions[0].no_fairness.set_makespan_s,
        )
    };
    let one = run_reading::<WorkflowFairness>(find(&rs, "exp1", "stated-dirac-one-queue")).unwrap();
    assert!(one.grid.contains("all in one queue"), "{}", one.grid);
    assert_eq!(key(&one), key(&dirac));
    let per_app2 = run_reading::<WorkflowFairness>(find(&rs, "exp2", "stated-dirac")).unwrap();
    let one2 = run_reading::<WorkflowFairness>(find(&rs, "exp2", "stated-dirac-one-queue")).unwrap();
    assert_ne!(key(&one2), key(&per_app2));
    let every = find(&rs, "exp1", "every-180");
    assert_eq!(every.args.every, 180.0);
    assert!(!find(&rs, "exp1", "no-mirror").args.mirror);
}

#[test]
fn pffp_study_quick_runs_and_is_deterministic() {
    let mut base = pffp::experiment::Args::test(2);
    base.traces_dir = traces_dir();
    quick_study::<pffp::experiment::Pffp>(base);
}

#[test]
fn pffp_readings_change_what_they_say() {
    use pffp::experiment::{Args, Pffp};
    let mut base = Args::test(2);
    base.traces_dir = traces_dir();
    let rs = readings::<Pffp>(&base, true);
    let default = run_reading::<Pffp>(find(&rs, "test2", "default")).unwrap();
    let q = run_reading::<Pffp>(find(&rs, "test2", "q-tasks")).unwrap();
    let (jobs, tasks): (u64, u64) = q
        .instances
        .iter()
        .map(|i| (i.jobs, i.tasks))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(tasks > jobs, "q tasks: {tasks} tasks for {jobs} jobs");
    assert!(default.instances.iter().all(|i| i.jobs == i.tasks));
    assert!(q.bags_of_tasks && !default.bags_of_tasks);
    // The same weeks, at their logged utilisation.
    for (a, b) in default.instances.iter().zip(&q.instances) {
        assert_eq!(
            (a.log.as_str(), a.week.start, a.scale),
            (b.log.as_str(), b.week.start, 1.0)
        );
    }
    let means = run_reading::<Pffp>(find(&rs, "test2", "ratio-of-means")).unwrap();
    assert!(means.degradation_of_means.is_some() && default.degradation_of_means.is_none());
    // MLp replaced under its label: the paper's six columns, no seventh.
    let busy = run_reading::<Pffp>(find(&rs, "test2", "mlp-busy")).unwrap();
    assert!(busy.with.is_empty());
    assert_eq!(busy.strategies.len(), 6);
    assert!(busy.strategies.contains(&("MLp".into(), "mlp[n=load]".into())));
    // The stated set-up: MLp as printed, PFFP's queue term unfloored,
    // everything else the default's.
    let stated = run_reading::<Pffp>(find(&rs, "test2", "stated-setup")).unwrap();
    for (label, spec) in [
        ("MLp", "mlp[n=printed]"),
        ("PFFP1", "pffp1[floor=false]"),
        ("PFFP2", "pffp2[floor=false]"),
        ("MST", "mst"),
        ("Rand", "rand"),
    ] {
        assert!(
            stated.strategies.contains(&(label.into(), spec.into())),
            "{label}: {:?}",
            stated.strategies
        );
    }
    assert!(!stated.bags_of_tasks && stated.degradation_of_means.is_none());
    // The load sweep scales the same weeks to its utilisation.
    let low = run_reading::<Pffp>(find(&rs, "test2", "util-0.3")).unwrap();
    for (a, b) in stated.instances.iter().zip(&low.instances) {
        assert_eq!((a.log.as_str(), a.week.start), (b.log.as_str(), b.week.start));
        assert!((b.utilization - 0.3).abs() < 1e-9, "{}", b.utilization);
    }
    let per_log = run_reading::<Pffp>(find(&rs, "test2", "weeks-per-log")).unwrap();
    assert_eq!(per_log.weeks, "per-log");
    // Per log, the first weeks of Workload B come from different logs.
    let logs: std::collections::BTreeSet<&str> = per_log.instances.iter().map(|i| i.log.as_str()).collect();
    assert_eq!(logs.len(), per_log.instances.len(), "{logs:?}");
    assert!(find(&rs, "test2", "fitted").args.fitted);
}

#[test]
fn shapley_readings_name_their_sources() {
    let base = shapley::experiment::Args {
        traces_dir: traces_dir(),
        ..Default::default()
    };
    assert_sourced::<shapley::experiment::Shapley>(&base);
    // RICC on its nodes runs the same log under its own name (the same
    // windows as on its cores), on RICC only, on both tables.
    let rs = readings::<shapley::experiment::Shapley>(&base, false);
    let nodes: Vec<&Reading<_>> = rs.iter().filter(|r| r.name == "nodes-1024").collect();
    assert_eq!(nodes.len(), 2);
    for r in nodes {
        assert!(r.case.ends_with("-RICC"), "{}", r.case);
        assert_eq!(r.args.traces, ["RICC:1024"]);
        assert!(r.command.contains("--traces RICC:1024"), "{}", r.command);
    }
}

#[test]
fn pffp_readings_name_their_sources() {
    let mut base = pffp::experiment::Args::test(2);
    base.traces_dir = traces_dir();
    assert_sourced::<pffp::experiment::Pffp>(&base);
}

#[test]
fn shapley_study_quick_runs_and_is_deterministic() {
    let base = shapley::experiment::Args {
        traces_dir: traces_dir(),
        ..Default::default()
    };
    let v = quick_study::<shapley::experiment::Shapley>(base.clone());
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["reading"] == "uniform")
    );
    let rs = readings::<shapley::experiment::Shapley>(&base, true);
    let uniform =
        run_reading::<shapley::experiment::Shapley>(find(&rs, "table1-LPC-EGEE", "uniform")).unwrap();
    assert_eq!(uniform.ownership, "uniform");
    let two = run_reading::<shapley::experiment::Shapley>(find(&rs, "table1-LPC-EGEE", "orgs-2")).unwrap();
    assert_eq!(two.orgs, vec![2]);
}

#[test]
fn diet_study_quick_runs_and_is_deterministic() {
    let v = quick_study::<diet::experiment::DietEthic>(diet::experiment::Args::scenario("night-consecutive"));
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["case"] == "scalability"));
    // The paper's stated day-time set-up is the absolute deadline: the
    // -absolute twin, results counted as collected.
    let stated = |case: &str| {
        rows.iter()
            .find(|r| r["case"] == case && r["reading"] == "stated")
            .unwrap()["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(stated("day-regular").contains("--scenario day-regular-absolute"));
    assert!(stated("day-regular").contains("--count collected"));
    assert!(stated("scalability").contains("--setup-rate 1085"));
    assert!(stated("night-consecutive").contains("--scenario night-consecutive "));
    // Readings change what they say: timing costs requests on the
    // scalability run; absolute deadlines leave day-regular fewer; a
    // clean-up one client after another at 500/s leaves the last
    // clients' servers running past the deadline.
    let fig = |case: &str, reading: &str, name: &str| {
        rows.iter()
            .find(|r| r["case"] == case && r["reading"] == reading)
            .unwrap_or_else(|| panic!("{case}/{reading}"))["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["ours"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(fig("scalability", "default", "completed (%)"), 100.0);
    assert!(fig("scalability", "latency-20ms", "completed (%)") < 100.0);
    assert!(fig("day-regular", "stated", "completed") < fig("day-regular", "default", "completed"));
    assert!(
        fig("scalability", "cleanup-500-fifo", "unfairness")
            > fig("scalability", "cleanup-500-shared", "unfairness")
    );
    // At most the 13 800 of the deadline are collected.
    assert!(fig("scalability", "stated", "completed (%)") <= 100.0);
}

#[test]
fn diet_readings_name_their_sources() {
    assert_sourced::<diet::experiment::DietEthic>(&diet::experiment::Args::scenario("scalability"));
}

#[test]
fn a_study_names_an_unknown_reading() {
    let e = refused_quick_study::<workflow::experiment::WorkflowFairness>(
        workflow::experiment::Args::exp(1),
        &["nope"],
    );
    let m = e.to_string();
    assert!(m.contains("--reading nope") && m.contains("stated-setup"), "{m}");
    assert_eq!(
        m.matches("stated-setup,").count(),
        1,
        "each reading named once: {m}"
    );
}

/// A flag the study's readings set is refused, not ignored; a reading's
/// command carries a non-default τ_u the study used.
#[test]
fn a_study_refuses_the_flags_its_readings_set() {
    use workflow::experiment::{Args, WorkflowFairness};
    let mut base = Args::exp(1);
    base.every = 180.0;
    base.concurrent = true;
    let e = refused_quick_study::<WorkflowFairness>(base, &[]);
    assert!(matches!(e, SimError::Usage(_)), "{e}");
    let m = e.to_string();
    assert!(m.contains("--every, --concurrent"), "{m}");
    let mut base = Args::exp(1);
    base.tau = 0.3;
    let rs = readings::<WorkflowFairness>(&base, true);
    assert!(find(&rs, "exp1", "default").command.contains("--tau 0.3"));
    assert!(
        !readings::<WorkflowFairness>(&Args::exp(1), true)[0]
            .command
            .contains("--tau")
    );
}

/// The Shapley study sets the logs, tables and set-up itself: `--traces`
/// and the rest are refused, not ignored.
#[test]
fn the_shapley_study_refuses_the_logs_and_set_up_it_sets() {
    use shapley::experiment::{Args, Shapley};
    let base = Args {
        traces: vec!["RICC".into()],
        warm_start: true,
        ..Args::default()
    };
    let e = refused_quick_study::<Shapley>(base, &[]);
    let m = e.to_string();
    assert!(
        matches!(e, SimError::Usage(_)) && m.contains("--traces, --warm-start"),
        "{m}"
    );
}

/// A reading of the full study asked for with --quick is named as such,
/// not as unknown.
#[test]
fn a_quick_study_says_a_full_study_reading_is_not_in_it() {
    use shapley::experiment::{Args, Shapley};
    let m = refused_quick_study::<Shapley>(Args::default(), &["nodes-1024"]).to_string();
    assert!(
        m.contains("--reading nodes-1024") && m.contains("without --quick"),
        "{m}"
    );
    assert!(!m.contains("no such reading"), "{m}");
    // A case (`--test 4 --study`) likewise; one that no study has is
    // named with the study's cases.
    use pffp::experiment::{Args as P, Pffp};
    let case = |c: &str, quick| {
        let args = StudyArgs {
            base: P::test(2),
            quick,
            only: Vec::new(),
            case: Some(c.into()),
        };
        Study::<Pffp>::plan_readings(&args).map(|rs| {
            let mut v: Vec<String> = rs.into_iter().map(|r| r.case).collect();
            v.dedup();
            v
        })
    };
    let m = case("test4", true).map(|_| ()).unwrap_err().to_string();
    assert!(m.contains("test4") && m.contains("without --quick"), "{m}");
    let m = case("test3", false).map(|_| ()).unwrap_err().to_string();
    assert!(
        m.contains("no such case") && m.contains("test2, test4, test5"),
        "{m}"
    );
    assert_eq!(case("test5", false).unwrap(), ["test5"]);
}

/// `--exp N --study`: Experiment N's cases only; without --exp, all.
#[test]
fn the_workflow_study_runs_the_experiment_given() {
    use workflow::experiment::{Args, WorkflowFairness};
    let cases = |base: &Args, quick| {
        let mut c: Vec<String> = readings::<WorkflowFairness>(base, quick)
            .into_iter()
            .map(|r| r.case)
            .collect();
        c.dedup();
        c
    };
    assert_eq!(cases(&Args::exp(3), true), ["exp3"]);
    assert_eq!(cases(&Args::exp(2), false), ["exp2"]);
    assert_eq!(cases(&workflow_all(), false), ["exp1", "exp2", "exp3"]);
    assert_eq!(cases(&workflow_all(), true), ["exp1", "exp2"]);
}

/// Lifts by cancel and resubmission need a controller period: at every
/// status change each resubmission would be lifted again, without end.
#[test]
fn resubmitted_lifts_need_a_controller_period() {
    use workflow::experiment::{Args, WorkflowFairness};
    let mut a = Args::exp(1);
    a.repetitions = 1;
    a.resubmit_lifted = Some(0.0);
    let e = run_reading::<WorkflowFairness>(&Reading {
        case: "exp1".into(),
        name: "t".into(),
        what: String::new(),
        command: String::new(),
        source: fairsched_sim::study::Source::sensitivity("none", "a test"),
        args: a.clone(),
    })
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("needs a controller that acts periodically"),
        "{e}"
    );
    a.every = 180.0;
    let ok = run_reading::<WorkflowFairness>(&Reading {
        case: "exp1".into(),
        name: "t".into(),
        what: String::new(),
        command: String::new(),
        source: fairsched_sim::study::Source::sensitivity("none", "a test"),
        args: a,
    })
    .unwrap();
    assert!(ok.repetitions[0].fairness.resubmitted_lifts > 0);
}

/// DIRAC-like matching runs the paper's two sets on one grid: one after
/// the other, or with other systems, it is refused as a usage error.
#[test]
fn dirac_matching_needs_both_sets_on_one_grid() {
    use workflow::dirac::Matching;
    use workflow::experiment::{Args, WorkflowFairness};
    let r = Registry::builtin();
    let mut a = Args::exp(1);
    a.matching = Matching::Dirac;
    let e = WorkflowFairness::check(&a, &r, &Quiet).err().unwrap();
    assert!(
        matches!(e, SimError::Usage(_)) && e.to_string().contains("needs --concurrent"),
        "{e}"
    );
    a.concurrent = true;
    WorkflowFairness::check(&a, &r, &Quiet).unwrap();
    a.with = vec!["fifo".parse().unwrap()];
    let e = WorkflowFairness::check(&a, &r, &Quiet).err().unwrap();
    assert!(
        matches!(e, SimError::Usage(_)) && e.to_string().contains("--with"),
        "{e}"
    );
    assert_eq!("dirac".parse::<Matching>(), Ok(Matching::Dirac));
    assert_eq!("dirac-one-queue".parse::<Matching>(), Ok(Matching::DiracOneQueue));
    a.with.clear();
    a.concurrent = false;
    a.matching = Matching::DiracOneQueue;
    assert!(matches!(
        WorkflowFairness::check(&a, &r, &Quiet),
        Err(SimError::Usage(_))
    ));
    assert!("random".parse::<Matching>().unwrap_err().contains("strict"));
}

#[test]
fn a_study_runs_as_a_slurm_array_and_collects_the_local_bytes() {
    use fairsched_sim::sweep::{self, Submit};
    let r = Registry::builtin();
    let args = StudyArgs {
        base: diet::experiment::Args::scenario("night-consecutive"),
        quick: true,
        only: Vec::new(),
        case: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local");
    run_local::<Study<diet::experiment::DietEthic>>(&args, &local, false, &r, &Quiet).unwrap();
    let swept = dir.path().join("sweep");
    let how = Submit {
        partition: None,
        part_command: vec!["unused".into()],
        command: "test".into(),
    };
    let prepared =
        sweep::prepare::<Study<diet::experiment::DietEthic>>(&args, &swept, false, &how, &r, &Quiet).unwrap();
    assert!(prepared.instances > 1);
    for i in 0..prepared.instances {
        sweep::run_part(&swept, i, &r, &Quiet).unwrap();
    }
    sweep::collect(&swept, false, &r, &Quiet).unwrap();
    for f in ["study.json", "study.csv", "tables.json"] {
        assert!(
            std::fs::read(local.join(f)).unwrap() == std::fs::read(swept.join(f)).unwrap(),
            "{f} differs"
        );
    }
}
