//! Policies registered by this test, not by fairsched: they run in
//! `simulate`'s pipeline, as extra columns of an experiment (`--with`) and
//! in a sweep, like the built-in ones; a blind one is never shown an
//! estimate, whatever the log says; mistakes are named.

use fairsched_core::registry::{Ctor, Registry};
use fairsched_core::{
    Allocate, Kind, MachineId, Notice, Observer, Order, Pick, PolicySpec, Reads, SimRng, SpecView, TaskId,
    View,
};
use fairsched_sim::compare::{self, Comparison, DEMO_LOG, DEMO_NAME};
use fairsched_sim::experiment::run_local;
use fairsched_sim::experiments::shapley::experiment::{Args, Shapley};
use fairsched_sim::experiments::with_specs;
use fairsched_sim::sweep::{self, Submit};
use fairsched_sim::{Quiet, RunConfig, TraceInput};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Last in, first out, per machine: the newest waiting task that fits.
/// Counts the estimates its views show it.
#[derive(Clone)]
struct Lifo {
    waiting: Vec<(MachineId, TaskId)>,
    shown: Arc<AtomicUsize>,
}

impl Order for Lifo {
    fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                if view.task(task).and_then(|t| t.estimate()).is_some() {
                    self.shown.fetch_add(1, Ordering::Relaxed);
                }
                self.waiting.push((machine, task));
            }
            Notice::Started { task, .. } | Notice::Left { task, .. } => {
                self.waiting.retain(|&(_, t)| t != task)
            }
            _ => {}
        }
    }
    fn pick(&mut self, view: &View, m: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(m).free();
        self.waiting
            .iter()
            .rev()
            .filter(|&&(on, _)| on == m)
            .find(|&&(_, t)| view.task(t).is_some_and(|t| t.slots() <= free))
            .map(|&(_, t)| Pick::Start(t))
    }
}

/// The first machine with room; counts the estimates it is shown.
#[derive(Clone)]
struct FirstFit {
    shown: Arc<AtomicUsize>,
}

impl Allocate for FirstFit {
    fn allocate(&mut self, view: &View, task: SpecView, _rng: &mut SimRng) -> Option<MachineId> {
        if task.estimate().is_some() {
            self.shown.fetch_add(1, Ordering::Relaxed);
        }
        view.machines()
            .find(|m| m.capacity() >= task.slots())
            .map(|m| m.id())
    }
}

/// The counters of one registry's policies.
#[derive(Default)]
struct Shown {
    blind: Arc<AtomicUsize>,
    reader: Arc<AtomicUsize>,
    alloc_blind: Arc<AtomicUsize>,
    alloc_reader: Arc<AtomicUsize>,
}

/// `lifo`, declared to read estimates or not, counting into `shown`.
fn lifo(estimates: bool, shown: &Arc<AtomicUsize>) -> Ctor {
    let shown = shown.clone();
    Ctor::shared_order(estimates, move |_| {
        Ok(Box::new(Lifo {
            waiting: Vec::new(),
            shown: shown.clone(),
        }))
    })
}

/// `first-machine`, the same way.
fn first_machine(estimates: bool, shown: &Arc<AtomicUsize>) -> Ctor {
    let shown = shown.clone();
    Ctor::shared_allocate(estimates, move |_| {
        Ok(Box::new(FirstFit { shown: shown.clone() }))
    })
}

/// fairsched's policies, and the same code twice per kind: once blind,
/// once declared to read estimates.
fn registry(s: &Shown) -> Registry {
    Registry::builtin()
        .with_order("lifo", "newest first", &[], lifo(false, &s.blind))
        .unwrap()
        .with_order("lifo-reader", "newest first", &[], lifo(true, &s.reader))
        .unwrap()
        .with_allocate(
            "first-machine",
            "first machine",
            &[],
            first_machine(false, &s.alloc_blind),
        )
        .unwrap()
        .with_allocate(
            "first-machine-reader",
            "first machine",
            &[],
            first_machine(true, &s.alloc_reader),
        )
        .unwrap()
}

fn spec(s: &str) -> PolicySpec {
    s.parse().unwrap()
}

/// The bundled KTH-SP2 log (every job has a user estimate), 3 organizations.
fn kth(registry: &Registry, order: &str) -> RunConfig {
    let trace = TraceInput::Bytes {
        name: DEMO_NAME.into(),
        data: DEMO_LOG,
    };
    let mut c = RunConfig::new(trace, spec(order));
    c.orgs = 3;
    c.window = Some((0, 2_000_000));
    c.registry = registry.clone();
    c
}

struct Nothing;
impl Observer for Nothing {}

#[test]
fn a_blind_policy_is_shown_no_estimate() {
    let s = Shown::default();
    let r = registry(&s);
    assert_eq!(r.find("lifo").unwrap().reads(), Reads::Blind);
    assert_eq!(r.find("first-machine-reader").unwrap().reads(), Reads::Estimates);
    for (order, allocate) in [("lifo", "first-machine"), ("lifo-reader", "first-machine-reader")] {
        let mut c = kth(&r, order);
        c.machines = Some(vec![50, 50]);
        c.allocate = Some(spec(allocate));
        let report = c.run(&c.trace.scan(false).unwrap(), &mut Nothing).unwrap();
        assert!(report.stats.submitted > 100, "{:?}", report.stats);
    }
    // The same code, the same log: only the entry's declaration differs.
    let n = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    assert!(n(&s.reader) > 100, "the reader saw {} estimates", n(&s.reader));
    assert!(n(&s.alloc_reader) > 100, "{}", n(&s.alloc_reader));
    assert_eq!(n(&s.blind), 0, "a blind order policy was shown estimates");
    assert_eq!(
        n(&s.alloc_blind),
        0,
        "a blind allocate policy was shown estimates"
    );
}

#[test]
fn an_out_of_tree_policy_runs_in_simulate_beside_fcfs() {
    let s = Shown::default();
    let r = registry(&s);
    let out = tempfile::tempdir().unwrap();
    let c = Comparison {
        base: kth(&r, "fcfs"),
        policies: vec![spec("fcfs"), spec("lifo")],
        out: Some(out.path().join("compare")),
        force: false,
        swf_out: None,
        batsim_jobs: None,
        demo: false,
        tap: None,
    };
    let done = compare::run(&c, None, &Quiet).unwrap();
    let names: Vec<&str> = done.summaries.iter().map(|s| s.policy.as_str()).collect();
    assert_eq!(names, ["fcfs", "lifo"]);
    let (fcfs, lifo) = (&done.summaries[0], &done.summaries[1]);
    assert_eq!(fcfs.jobs, lifo.jobs);
    // It ran its own order: not fcfs's schedule.
    assert_ne!(fcfs.mean_wait_s, lifo.mean_wait_s);
    assert!(done.shown.to_text().contains("lifo"));
    assert!(out.path().join("compare/lifo/summary.json").is_file());

    // Without a folder (the Python package without `out`): the same
    // figures, the same table, and no file written anywhere (the working
    // directory is this process's: the check is the temporary folder
    // left empty and nothing said as written).
    let none = Comparison { out: None, ..c };
    let mem = compare::run(&none, None, &Quiet).unwrap();
    let json = |s: &fairsched_sim::Summary| {
        let mut s = s.clone();
        s.tool = None;
        s.wall_time_s = 0.0;
        serde_json::to_string(&s).unwrap()
    };
    for (a, b) in done.summaries.iter().zip(&mem.summaries) {
        assert_eq!(json(a), json(b));
    }
    // The same rows but their wall_s, the last column.
    let figures = |csv: String| -> Vec<String> {
        csv.lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect()
    };
    assert_eq!(figures(done.table.to_csv()), figures(mem.table.to_csv()));
    assert_eq!(mem.wrote, "");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1, "only compare/");
    // And the schedule files, which go in the folder, need one.
    let swf = Comparison {
        swf_out: Some("schedule.swf".into()),
        ..none
    };
    let e = compare::run(&swf, None, &Quiet)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("--swf-out"), "{e}");
}

/// The Shapley experiment on 2 windows of the bundled log, `lifo` beside
/// the paper's algorithms.
fn shapley_args(log: &Path) -> Args {
    Args {
        instances: 2,
        trace_files: vec![(log.to_path_buf(), 100)],
        with: vec![spec("lifo")],
        ..Args::default()
    }
}

#[test]
fn an_out_of_tree_policy_is_a_column_of_an_experiment_and_of_its_sweep() {
    let s = Shown::default();
    let r = registry(&s);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("KTH-SP2.swf.gz");
    std::fs::write(&log, DEMO_LOG).unwrap();
    let args = shapley_args(&log);
    let local = dir.path().join("local");
    let done = run_local::<Shapley>(&args, &local, false, &r, &Quiet).unwrap();
    assert_eq!(done.summary.with, ["lifo"]);
    let stat = done
        .summary
        .stats
        .iter()
        .find(|s| s.policy == "lifo")
        .expect("a row for lifo");
    assert_eq!(stat.instances + stat.empty, 2);
    assert!(done.text.contains("lifo"), "{}", done.text);
    let csv = std::fs::read_to_string(local.join("shapley.csv")).unwrap();
    assert_eq!(csv.lines().filter(|l| l.contains(",lifo,")).count(), 2, "{csv}");

    // The same as a sweep: prepared, each part run (here, in-process, as
    // an array task would), collected: the local run's bytes.
    let swept = dir.path().join("sweep");
    let how = Submit {
        partition: None,
        part_command: vec!["unused".into()],
        command: "test".into(),
    };
    let prepared = sweep::prepare::<Shapley>(&args, &swept, false, &how, &r, &Quiet).unwrap();
    assert_eq!(prepared.instances, 2);
    for i in 0..prepared.instances {
        sweep::run_part(&swept, i, &r, &Quiet).unwrap();
    }
    // A part needs the policy's registry: without it, the policy is named.
    let err = sweep::run_part(&swept, 0, &Registry::builtin(), &Quiet).unwrap_err();
    assert!(err.to_string().contains("lifo"), "{err}");
    sweep::collect(&swept, false, &r, &Quiet).unwrap();
    for f in ["shapley.csv", "tables.json", "shapley.svg"] {
        let (a, b) = (local.join(f), swept.join(f));
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{f} differs"
        );
    }
}

#[test]
fn with_names_a_registered_policy_of_the_experiments_kind_once() {
    let r = registry(&Shown::default());
    let err = |specs: &[&str]| {
        let specs: Vec<PolicySpec> = specs.iter().map(|s| spec(s)).collect();
        with_specs(&r, Kind::Order, &specs).unwrap_err().to_string()
    };
    let e = err(&["nope"]);
    assert!(e.contains("\"nope\"") && e.contains("lifo"), "{e}");
    let e = err(&["first-machine"]);
    assert!(e.contains("\"first-machine\" is an allocate policy"), "{e}");
    assert!(e.contains("beside its own: ") && e.contains("lifo-reader"), "{e}");
    let e = err(&["lifo", "lifo"]);
    assert!(e.contains("given twice"), "{e}");
    let e = err(&["lifo[x=1]"]);
    assert!(e.contains("lifo"), "{e}");
    assert_eq!(
        with_specs(&r, Kind::Order, &[spec("lifo")]).unwrap(),
        [spec("lifo")]
    );
}

#[test]
fn an_out_of_tree_entry_cannot_reuse_a_name() {
    let s = Shown::default();
    for name in ["fcfs", "rand", "mst", "lifo"] {
        let e = registry(&s)
            .with_order(name, "again", &[], lifo(false, &s.blind))
            .err()
            .unwrap_or_else(|| panic!("{name} registered twice"));
        assert!(e.to_string().contains(name), "{e}");
    }
}
