//! `fairsched._native`: the Rust half of the Python package (the Python
//! half is `python/fairsched`). Runs and experiments go through the same
//! library functions as the command line (`fairsched_sim::compare::run`,
//! `fairsched_sim::experiment::run_local`), so the same arguments and
//! seed give the same files and numbers; the tables come back as Arrow
//! batches ([`arrow`]), and Python policies join the registry
//! ([`policy`]).
//!
//! A run goes on a thread of its own while the caller's thread, without
//! the GIL, waits for it: every 50 ms it takes the GIL to report progress
//! and to let Python see Ctrl-C, which stops the run at its next progress
//! point.

mod arrow;
mod policy;

use crate::arrow::{ArrowTable, Batches};
use crate::policy::{Abort, PyPolicy, abort};
use fairsched_core::{Ctor, Entry, Kind, Observer, PolicySpec, Registry, Time};
use fairsched_report::TaskColumns;
use fairsched_sim::compare::{
    CompareHost, Comparison, DEMO_LOG, DEMO_NAME, DEMO_ORGS, DEMO_POLICIES, RunBar, RunBars, Tap, TapDone,
    TapRun,
};
use fairsched_sim::experiment::{Host, Ticker, run_local};
use fairsched_sim::experiments::{diet, pffp, shapley, workflow};
use fairsched_sim::run::Tool;
use fairsched_sim::{
    Experiment, Ownership, PlatformFile, ProcsFrom, RunConfig, RuntimeLimit, SimError, TraceInput,
};
use fairsched_trace::{FilterOptions, StreamOptions};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

create_exception!(
    fairsched,
    FairschedError,
    PyException,
    "A run or an experiment failed: the message is the command line's (file, line, field)."
);
create_exception!(
    fairsched,
    UsageError,
    FairschedError,
    "Arguments refused before any work (the command line's exit status 2)."
);
create_exception!(
    fairsched,
    PolicyError,
    FairschedError,
    "A Python policy raised: the message names the policy, the call and the simulated time; \
     the exception is the cause."
);

fn sim_err(e: SimError) -> PyErr {
    let usage = match &e {
        SimError::Usage(_) | SimError::Spec(_) => true,
        SimError::Out(o) => o.is_usage(),
        _ => false,
    };
    if usage {
        UsageError::new_err(e.to_string())
    } else {
        FairschedError::new_err(e.to_string())
    }
}

// ---------------------------------------------------------------- registry

/// A policy registered from Python.
struct PyEntry {
    kind: Kind,
    name: &'static str,
    doc: &'static str,
    estimates: bool,
    factory: Arc<Py<PyAny>>,
}

static REGISTERED: Mutex<Vec<PyEntry>> = Mutex::new(Vec::new());

/// fairsched's policies and those registered from Python.
fn registry() -> PyResult<Registry> {
    let list = REGISTERED
        .lock()
        .map_err(|_| FairschedError::new_err("registry lock poisoned"))?;
    let mut r = Registry::builtin();
    for e in list.iter() {
        r = r
            .with(entry(e))
            .map_err(|err| UsageError::new_err(err.to_string()))?;
    }
    Ok(r)
}

fn entry(e: &PyEntry) -> Entry {
    let name = e.name;
    let factory = e.factory.clone();
    let build = move |kind: &'static str, required: &'static str| -> PyPolicy {
        match PyPolicy::build(name, kind, &factory, required) {
            Ok(p) => p,
            Err(msg) => abort(Abort::Policy(PolicyError::new_err(msg))),
        }
    };
    let ctor = match e.kind {
        Kind::Order => Ctor::shared_order(e.estimates, move |_| Ok(Box::new(build("order", "pick")))),
        Kind::Allocate => {
            Ctor::shared_allocate(e.estimates, move |_| Ok(Box::new(build("allocate", "allocate"))))
        }
        Kind::Control => Ctor::shared_control(e.estimates, move |_| Ok(Box::new(build("control", "react")))),
    };
    Entry::new(name, e.doc, &[], ctor)
}

/// Registers `factory` (a class, or any callable that returns the policy
/// object) under `name`; a name registered before from Python is
/// replaced, a built-in one refused.
#[pyfunction]
#[pyo3(signature = (kind, name, factory, estimates=false, doc=""))]
fn register(kind: &str, name: &str, factory: Py<PyAny>, estimates: bool, doc: &str) -> PyResult<()> {
    let kind = match kind {
        "order" => Kind::Order,
        "allocate" => Kind::Allocate,
        "control" => Kind::Control,
        other => {
            return Err(UsageError::new_err(format!(
                "kind {other:?}: one of \"order\", \"allocate\", \"control\""
            )));
        }
    };
    let mut list = REGISTERED
        .lock()
        .map_err(|_| FairschedError::new_err("registry lock poisoned"))?;
    let new = PyEntry {
        kind,
        name: Box::leak(name.to_string().into_boxed_str()),
        doc: Box::leak(doc.to_string().into_boxed_str()),
        estimates,
        factory: Arc::new(factory),
    };
    // Checked against the built-in ones and the other Python ones.
    let mut r = Registry::builtin();
    for e in list.iter().filter(|e| e.name != name) {
        r = r
            .with(entry(e))
            .map_err(|err| UsageError::new_err(err.to_string()))?;
    }
    r.with(entry(&new))
        .map_err(|err| UsageError::new_err(err.to_string()))?;
    list.retain(|e| e.name != name);
    list.push(new);
    Ok(())
}

/// Removes a policy registered from Python; false if there was none.
#[pyfunction]
fn unregister(name: &str) -> PyResult<bool> {
    let mut list = REGISTERED
        .lock()
        .map_err(|_| FairschedError::new_err("registry lock poisoned"))?;
    let before = list.len();
    list.retain(|e| e.name != name);
    Ok(list.len() != before)
}

/// A policy: kind, name, what it reads, doc, registered from Python.
type PolicyRow = (String, String, String, String, bool);

/// Every policy: (kind, name, reads, doc, python).
#[pyfunction]
fn policies() -> PyResult<Vec<PolicyRow>> {
    let r = registry()?;
    let py_names: Vec<&'static str> = REGISTERED
        .lock()
        .map_err(|_| FairschedError::new_err("registry lock poisoned"))?
        .iter()
        .map(|e| e.name)
        .collect();
    let mut out = Vec::new();
    for kind in [Kind::Allocate, Kind::Order, Kind::Control] {
        for name in r.names(kind) {
            let e = r
                .entry(kind, name)
                .map_err(|err| FairschedError::new_err(err.to_string()))?;
            out.push((
                kind.name().to_string(),
                e.name.to_string(),
                e.reads().name().to_string(),
                e.doc.to_string(),
                py_names.contains(&e.name),
            ));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- the host

/// Progress shared between the run's thread and the waiting caller.
#[derive(Default)]
struct Progress {
    cancel: AtomicBool,
    done: AtomicU64,
    total: AtomicU64,
    unit: Mutex<String>,
}

impl Progress {
    fn check(&self) {
        if self.cancel.load(Ordering::Relaxed) {
            abort(Abort::Interrupted(PyKeyboardInterrupt::new_err("")));
        }
    }
}

/// What a Python caller sees of a run: notes kept (said as warnings),
/// the comparison's text kept, progress counted.
struct PyHost {
    notes: Mutex<Vec<String>>,
    said: Mutex<String>,
    progress: Arc<Progress>,
    show: bool,
    command: String,
}

impl Host for PyHost {
    fn tool(&self) -> Tool {
        Tool {
            name: "fairsched-py".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            commit: "unknown".into(),
            command: self.command.clone(),
        }
    }
    fn note(&self, line: &str) {
        if let Ok(mut n) = self.notes.lock() {
            n.push(line.to_string());
        }
    }
    fn progress(&self, len: u64, _prefix: &str, unit: &str) -> Box<dyn Ticker + '_> {
        self.progress.done.store(0, Ordering::Relaxed);
        self.progress.total.store(len, Ordering::Relaxed);
        if let Ok(mut u) = self.progress.unit.lock() {
            *u = unit.to_string();
        }
        Box::new(Ticks(self.progress.clone()))
    }
}

struct Ticks(Arc<Progress>);
impl Ticker for Ticks {
    fn tick(&self) {
        self.0.done.fetch_add(1, Ordering::Relaxed);
        self.0.check();
    }
}

impl CompareHost for PyHost {
    fn say(&self, text: &str) {
        if let Ok(mut s) = self.said.lock() {
            s.push_str(text);
        }
    }
    fn bars(&self, _runs: usize) -> Box<dyn RunBars + '_> {
        Box::new(Bars {
            p: self.progress.clone(),
            show: self.show,
        })
    }
}

struct Bars {
    p: Arc<Progress>,
    show: bool,
}

impl RunBars for Bars {
    fn shown(&self) -> bool {
        self.show
    }
    fn bar(&self, _label: &str, from: i64, span: u64) -> Box<dyn RunBar> {
        self.p.total.fetch_add(span, Ordering::Relaxed);
        if let Ok(mut u) = self.p.unit.lock() {
            *u = "simulated s".into();
        }
        Box::new(Bar {
            p: self.p.clone(),
            from,
            at: 0,
            span,
        })
    }
}

/// One run's progress in simulated seconds; where Ctrl-C stops it.
struct Bar {
    p: Arc<Progress>,
    from: i64,
    at: u64,
    span: u64,
}

impl Observer for Bar {
    fn on_progress(&mut self, now: Time, _submitted: u64) {
        let at = ((now.millis() / 1000) - self.from).clamp(0, self.span as i64) as u64;
        if at > self.at {
            self.p.done.fetch_add(at - self.at, Ordering::Relaxed);
            self.at = at;
        }
        self.p.check();
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

impl RunBar for Bar {
    fn finish(&self) {}
}

/// Runs `job` on a thread of its own, the caller waiting without the GIL:
/// every 50 ms it reports progress to `callback(done, total, unit)` and
/// lets Python raise Ctrl-C, which cancels the run at its next progress
/// point. A policy's exception comes back as `PolicyError`.
fn run_waiting<T: Send + 'static>(
    py: Python<'_>,
    progress: Arc<Progress>,
    callback: Option<Py<PyAny>>,
    job: impl FnOnce() -> Result<T, SimError> + Send + 'static,
) -> PyResult<T> {
    let (send, recv) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("fairsched-run".into())
        .spawn(move || {
            // One Python thread state for the run (policy::keep_thread_state).
            let r = policy::keep_thread_state(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)));
            let _ = send.send(r);
        })
        .map_err(|e| FairschedError::new_err(format!("starting the run's thread: {e}")))?;
    // Shared with the closure that waits without the GIL.
    let recv = Mutex::new(recv);
    let mut interrupted: Option<PyErr> = None;
    let result = loop {
        let got = py.detach(|| match recv.lock() {
            Ok(r) => r.recv_timeout(Duration::from_millis(50)),
            Err(_) => Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
        });
        match got {
            Ok(r) => break r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Err(
                    Box::new("the run's thread ended without a result") as Box<dyn std::any::Any + Send>
                );
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if interrupted.is_none() {
                    if let Err(e) = py.check_signals() {
                        progress.cancel.store(true, Ordering::Relaxed);
                        interrupted = Some(e);
                        continue;
                    }
                    if let Some(cb) = &callback {
                        let unit = progress.unit.lock().map(|u| u.clone()).unwrap_or_default();
                        cb.call1(
                            py,
                            (
                                progress.done.load(Ordering::Relaxed),
                                progress.total.load(Ordering::Relaxed),
                                unit,
                            ),
                        )?;
                    }
                }
            }
        }
    };
    // Without the GIL: the run's thread takes it once more to give back
    // its thread state.
    let _ = py.detach(|| spawned.join());
    if let Some(e) = interrupted {
        return Err(e);
    }
    match result {
        Ok(Ok(v)) => {
            if let Some(cb) = &callback {
                let total = progress.total.load(Ordering::Relaxed);
                let unit = progress.unit.lock().map(|u| u.clone()).unwrap_or_default();
                cb.call1(py, (total, total, unit))?;
            }
            Ok(v)
        }
        Ok(Err(e)) => Err(sim_err(e)),
        Err(payload) => match payload.downcast::<Abort>() {
            Ok(a) => match *a {
                Abort::Policy(e) | Abort::Interrupted(e) => Err(e),
            },
            Err(other) => {
                let msg = other
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| other.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into());
                Err(FairschedError::new_err(format!("internal error: {msg}")))
            }
        },
    }
}

fn new_host(show: bool, command: String) -> Arc<PyHost> {
    Arc::new(PyHost {
        notes: Mutex::new(Vec::new()),
        said: Mutex::new(String::new()),
        progress: Arc::new(Progress::default()),
        show,
        command,
    })
}

/// Where a run writes: `out`, or a temporary folder (removed when the
/// returned guard is dropped) when the caller keeps no files.
fn out_folder(out: &Option<PathBuf>) -> PyResult<(PathBuf, Option<tempfile::TempDir>)> {
    match out {
        Some(p) => Ok((p.clone(), None)),
        None => {
            let t = tempfile::Builder::new()
                .prefix("fairsched-py-")
                .tempdir()
                .map_err(|e| FairschedError::new_err(format!("a temporary folder: {e}")))?;
            Ok((t.path().join("out"), Some(t)))
        }
    }
}

// ---------------------------------------------------------------- simulate

/// One run's tables, filled by the tap.
#[derive(Default)]
struct RunTables {
    tasks: Option<Batches>,
    runs: Option<Batches>,
    orgs: Option<Batches>,
    users: Option<Batches>,
    fairness: Option<Batches>,
}

struct Tables {
    runs: Mutex<Vec<RunTables>>,
}

struct TablesRun {
    index: usize,
    tasks: TaskColumns,
    /// runs.csv's rows: task, attempt, machine, slot, slots, start, stop.
    runs: Vec<[String; 7]>,
    to: Option<Arc<Tables>>,
}

impl Observer for TablesRun {
    fn on_task(&mut self, r: &fairsched_core::EndRecord, meta: &fairsched_core::TaskMeta) {
        self.tasks.on_task(r, meta);
        for (i, a) in r.requeued.iter().enumerate() {
            self.runs.push([
                r.spec.id.0.to_string(),
                (i + 1).to_string(),
                a.machine.0.to_string(),
                a.slot.0.to_string(),
                a.slots.to_string(),
                a.start.to_string(),
                a.stop.to_string(),
            ]);
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

impl TapRun for TablesRun {
    fn finish(self: Box<Self>, d: TapDone<'_>) {
        let TablesRun {
            index,
            tasks,
            runs,
            to,
        } = *self;
        let Some(to) = to else { return };
        let mut rt = fairsched_report::Table::new(fairsched_report::sim_files::RUNS_COLUMNS.split(','));
        for r in runs {
            rt.row(r);
        }
        let orgs = fairsched_report::aggregates::by_org(d.metrics, d.per_org, d.names, d.utility);
        let users = fairsched_report::aggregates::by_user(d.metrics);
        let fairness = d.summary.fairness.as_ref().map(|f| {
            let mut t =
                fairsched_report::Table::new(fairsched_report::sim_files::FAIRNESS_COLUMNS.split(','));
            for p in &f.over_time {
                let name = f.orgs.get(p.org as usize).map_or("", |l| l.name.as_str());
                t.row([
                    p.at.to_string(),
                    p.org.to_string(),
                    name.to_string(),
                    format!("{}", p.psi),
                    p.phi.map(|x| format!("{x}")).unwrap_or_default(),
                    p.phi.map(|x| format!("{}", x - p.psi)).unwrap_or_default(),
                ]);
            }
            t
        });
        let tables = RunTables {
            tasks: Some(Batches::from_tasks(tasks)),
            runs: Some(Batches::from_table(&rt)),
            orgs: Some(Batches::from_table(&orgs)),
            users: Some(Batches::from_table(&users)),
            fairness: fairness.as_ref().map(Batches::from_table),
        };
        if let Ok(mut all) = to.runs.lock() {
            if all.len() <= index {
                all.resize_with(index + 1, RunTables::default);
            }
            all[index] = tables;
        }
    }
}

/// Hands each run a `TablesRun` that puts its tables in the shared list.
struct SharedTap(Arc<Tables>);
impl Tap for SharedTap {
    fn run(&self, index: usize, _name: &str) -> Box<dyn TapRun> {
        Box::new(TablesRun {
            index,
            tasks: TaskColumns::default(),
            runs: Vec::new(),
            to: Some(self.0.clone()),
        })
    }
}

/// A finished `simulate`: summaries (JSON text), tables, text.
#[pyclass(frozen, module = "fairsched._native", name = "Simulated")]
struct Simulated {
    #[pyo3(get)]
    policies: Vec<String>,
    /// Each run's summary.json (without its `tool` block), as JSON text.
    #[pyo3(get)]
    summaries: Vec<String>,
    /// The comparison as printed.
    #[pyo3(get)]
    text: String,
    /// Lines said before the table (the log's and the platform's).
    #[pyo3(get)]
    header: String,
    /// Warnings and remarks.
    #[pyo3(get)]
    notes: Vec<String>,
    /// What was written where.
    #[pyo3(get)]
    wrote: String,
    comparison: Batches,
    tables: Vec<(String, RunTables)>,
}

#[pymethods]
impl Simulated {
    /// `name`'s table for run `index` (or every run's, with a `policy`
    /// column, when index is None): tasks, runs, orgs, users, fairness,
    /// comparison. None if the run has no such table (fairness with one
    /// organization).
    #[pyo3(signature = (name, index=None))]
    fn table(&self, name: &str, index: Option<usize>) -> PyResult<Option<ArrowTable>> {
        if name == "comparison" {
            return Ok(Some(ArrowTable {
                inner: self.comparison.clone(),
            }));
        }
        let pick = |t: &RunTables| -> PyResult<Option<Batches>> {
            Ok(match name {
                "tasks" => t.tasks.clone(),
                "runs" => t.runs.clone(),
                "orgs" => t.orgs.clone(),
                "users" => t.users.clone(),
                "fairness" => t.fairness.clone(),
                other => {
                    return Err(UsageError::new_err(format!(
                        "table {other:?}: one of tasks, runs, orgs, users, fairness, comparison"
                    )));
                }
            })
        };
        match index {
            Some(i) => {
                let (_, t) = self.tables.get(i).ok_or_else(|| {
                    pyo3::exceptions::PyIndexError::new_err(format!(
                        "run {i}: there are {} runs",
                        self.tables.len()
                    ))
                })?;
                Ok(pick(t)?.map(|inner| ArrowTable { inner }))
            }
            None => {
                let mut parts = Vec::new();
                for (p, t) in &self.tables {
                    if let Some(b) = pick(t)? {
                        parts.push((p.clone(), b));
                    }
                }
                if parts.is_empty() {
                    return Ok(None);
                }
                let inner = Batches::concat(parts).map_err(|e| FairschedError::new_err(e.to_string()))?;
                Ok(Some(ArrowTable { inner }))
            }
        }
    }
}

/// `fairsched simulate`, from Python: the same arguments (by name), the
/// same defaults, the same files in `out` (a temporary folder, removed
/// after, when None).
#[pyfunction]
#[pyo3(signature = (trace=None, policies=None, allocate=None, control=None, procs=None,
    machines=None, orgs=None, ownership=None, platform=None, window=None, split_parallel=false,
    seed=0, out=None, force=false, lenient=false, drop_failed=false, drop_cancelled=false,
    procs_from=None, runtime_limit=None, phi=false, progress=None, show_progress=false,
    command=String::new()))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    trace: Option<PathBuf>,
    policies: Option<Vec<String>>,
    allocate: Option<String>,
    control: Option<String>,
    procs: Option<u32>,
    machines: Option<Vec<u32>>,
    orgs: Option<u32>,
    ownership: Option<String>,
    platform: Option<PathBuf>,
    window: Option<(i64, i64)>,
    split_parallel: bool,
    seed: u64,
    out: Option<PathBuf>,
    force: bool,
    lenient: bool,
    drop_failed: bool,
    drop_cancelled: bool,
    procs_from: Option<String>,
    runtime_limit: Option<String>,
    phi: bool,
    progress: Option<Py<PyAny>>,
    show_progress: bool,
    command: String,
) -> PyResult<Simulated> {
    let usage = |m: String| UsageError::new_err(m);
    let spec = |what: &str, s: &str| -> PyResult<PolicySpec> {
        s.parse::<PolicySpec>()
            .map_err(|e| usage(format!("{what} {s:?}: {e}")))
    };
    let demo = policies.as_ref().is_none_or(|p| p.is_empty());
    let policies: Vec<PolicySpec> = if demo {
        DEMO_POLICIES
            .iter()
            .map(|p| spec("policy", p))
            .collect::<PyResult<_>>()?
    } else {
        policies
            .unwrap_or_default()
            .iter()
            .map(|p| spec("policy", p))
            .collect::<PyResult<_>>()?
    };
    let allocate = allocate.map(|a| spec("allocate", &a)).transpose()?;
    let control = control.map(|c| spec("control", &c)).transpose()?;
    let ownership: Ownership = match ownership {
        Some(o) => o.parse::<Ownership>().map_err(|e| usage(e.to_string()))?,
        None => Ownership::DEFAULT,
    };
    let procs_from: ProcsFrom = match procs_from {
        Some(p) => p.parse().map_err(|e| usage(format!("procs_from {p:?}: {e}")))?,
        None => ProcsFrom::default(),
    };
    let runtime_limit: RuntimeLimit = match runtime_limit {
        Some(p) => p
            .parse()
            .map_err(|e| usage(format!("runtime_limit {p:?}: {e}")))?,
        None => RuntimeLimit::default(),
    };
    if let Some((a, b)) = window {
        const MAX_S: i64 = 1_000_000_000_000;
        if a < 0 || b <= 0 {
            return Err(usage(format!(
                "window ({a}, {b}): the start must be ≥ 0 and the length > 0"
            )));
        }
        if a.checked_add(b).is_none_or(|end| end > MAX_S) {
            return Err(usage(format!(
                "window ({a}, {b}): start + length must be at most {MAX_S} s"
            )));
        }
    }
    let platform_file = platform
        .as_deref()
        .map(PlatformFile::load)
        .transpose()
        .map_err(sim_err)?;
    if platform_file.is_some() && (orgs.is_some()) {
        return Err(usage("give orgs or platform, not both".into()));
    }
    let orgs = match &platform_file {
        Some(f) => f.orgs(),
        None => orgs.unwrap_or(if demo { DEMO_ORGS } else { 1 }),
    };
    let trace = match trace {
        Some(p) => TraceInput::Path(p),
        None => TraceInput::Bytes {
            name: DEMO_NAME.into(),
            data: DEMO_LOG,
        },
    };
    let registry = registry()?;
    let base = RunConfig {
        trace,
        procs,
        machines,
        orgs,
        ownership,
        platform_file,
        window,
        split_parallel,
        seed,
        allocate,
        order: policies[0].clone(),
        control,
        stream: StreamOptions {
            filter: FilterOptions {
                drop_failed,
                drop_cancelled,
            },
            lenient,
            procs_from,
        },
        procs_from,
        runtime_limit,
        phi,
        registry,
    };
    let tables = Arc::new(Tables {
        runs: Mutex::new(Vec::new()),
    });
    let names: Vec<String> = policies.iter().map(|p| p.to_string()).collect();
    let c = Comparison {
        base,
        policies,
        // Without `out`, no file: the tables come from the tap.
        out: out.clone(),
        force,
        swf_out: None,
        batsim_jobs: None,
        demo,
        tap: Some(Arc::new(SharedTap(tables.clone()))),
    };
    let host = new_host(show_progress, command);
    let h = host.clone();
    let done = run_waiting(py, host.progress.clone(), progress, move || {
        fairsched_sim::compare::run(&c, None, &*h)
    })?;
    let summaries = done
        .summaries
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.tool = None;
            serde_json::to_string(&s).map_err(|e| FairschedError::new_err(e.to_string()))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut runs = std::mem::take(
        &mut *tables
            .runs
            .lock()
            .map_err(|_| FairschedError::new_err("tables lock"))?,
    );
    runs.resize_with(names.len(), RunTables::default);
    let notes = host.notes.lock().map(|n| n.clone()).unwrap_or_default();
    let header = host.said.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(Simulated {
        policies: names.clone(),
        summaries,
        // Without `out` no file is kept: the figures are the result's.
        text: done.text(match (&out, names.len()) {
            (Some(_), _) => None,
            (None, 1) => Some("result.summary"),
            (None, _) => Some("result.comparison"),
        }),
        header,
        notes,
        wrote: if out.is_some() { done.wrote } else { String::new() },
        comparison: Batches::from_table(&done.table),
        tables: names.into_iter().zip(runs).collect(),
    })
}

// ---------------------------------------------------------------- experiments

/// A finished experiment: its summary.json (JSON text, without `tool`),
/// printed text, tables and files.
#[pyclass(frozen, module = "fairsched._native", name = "Experimented")]
struct Experimented {
    #[pyo3(get)]
    summary: String,
    #[pyo3(get)]
    text: String,
    #[pyo3(get)]
    listed: Vec<String>,
    #[pyo3(get)]
    notes: Vec<String>,
    titles: Vec<String>,
    tables: Vec<Batches>,
}

#[pymethods]
impl Experimented {
    /// The tables' titles (or `table-N` without one), in order.
    #[getter]
    fn table_names(&self) -> Vec<String> {
        self.titles.clone()
    }
    fn table(&self, i: usize) -> PyResult<ArrowTable> {
        self.tables
            .get(i)
            .cloned()
            .map(|inner| ArrowTable { inner })
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("table {i}")))
    }
}

/// The arguments every paper's experiment takes by name, with their
/// defaults (the command line's), as JSON.
fn defaults(paper: &str) -> PyResult<serde_json::Value> {
    let v = match paper {
        "shapley" => serde_json::to_value(shapley::experiment::Args::default()),
        "pffp" => serde_json::to_value(pffp::experiment::Args::test(1)),
        "diet-ethic" => {
            let mut a = diet::experiment::Args::scenario("");
            a.scenario = None;
            serde_json::to_value(a)
        }
        "workflow-fairness" => {
            let mut a = workflow::experiment::Args::exp(1);
            a.exp = None;
            serde_json::to_value(a)
        }
        other => {
            return Err(UsageError::new_err(format!(
                "experiment {other:?}: one of shapley, pffp, diet-ethic, workflow-fairness"
            )));
        }
    };
    v.map_err(|e| FairschedError::new_err(e.to_string()))
}

/// Each paper's argument names and defaults, as JSON text.
#[pyfunction]
fn experiment_defaults(paper: &str) -> PyResult<String> {
    Ok(defaults(paper)?.to_string())
}

/// `paper`'s arguments: its defaults with those given (JSON text, by
/// name) put in; an unknown name is refused with the list of known ones.
fn given_args(paper: &str, args: &str) -> PyResult<serde_json::Value> {
    let mut v = defaults(paper)?;
    let given: serde_json::Value =
        serde_json::from_str(args).map_err(|e| UsageError::new_err(format!("arguments: {e}")))?;
    let serde_json::Value::Object(given) = given else {
        return Err(UsageError::new_err("arguments: give them by name"));
    };
    let known: Vec<String> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    if paper == "pffp" && !given.contains_key("test") {
        return Err(UsageError::new_err(
            "experiment pffp: give test (1 to 5: the paper's Tests 1–5)",
        ));
    }
    for (k, val) in given {
        let Some(slot) = v.get_mut(&k) else {
            return Err(UsageError::new_err(format!(
                "experiment {paper}: unknown argument {k:?}; it takes: {}",
                known.join(", ")
            )));
        };
        *slot = val;
    }
    match paper {
        "diet-ethic" if v["scenario"].is_null() && v["scenario_file"].is_null() => {
            return Err(UsageError::new_err(format!(
                "experiment diet-ethic: give scenario (one of {}) or scenario_file",
                diet::SCENARIOS.join(", ")
            )));
        }
        "workflow-fairness"
            if v["exp"].is_null() && v["workflows"].as_array().is_none_or(|a| a.is_empty()) =>
        {
            return Err(UsageError::new_err(
                "experiment workflow-fairness: give exp (1, 2 or 3) or workflows",
            ));
        }
        _ => {}
    }
    Ok(v)
}

/// Reads `v` as experiment `E`'s arguments; a wrong type names its field.
fn typed_args<E: Experiment>(paper: &str, v: serde_json::Value) -> PyResult<E::Args> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        UsageError::new_err(format!("experiment {paper}: argument {path}: {}", e.into_inner()))
    })
}

/// Prepares `paper`'s experiment as a Slurm array in `out` (sweep.json,
/// the batch script; each array task runs `part_command DIR INDEX`), and
/// submits it with sbatch when `submit`. Returns (folder, instances, job).
#[pyfunction]
#[pyo3(signature = (paper, args, out, part_command, force=false, partition=None, submit=true, command=String::new()))]
#[allow(clippy::too_many_arguments)]
fn sweep_prepare(
    py: Python<'_>,
    paper: &str,
    args: &str,
    out: PathBuf,
    part_command: Vec<String>,
    force: bool,
    partition: Option<String>,
    submit: bool,
    command: String,
) -> PyResult<(String, usize, Option<u64>)> {
    let v = given_args(paper, args)?;
    let registry = registry()?;
    let host = new_host(false, command.clone());
    let how = fairsched_sim::sweep::Submit {
        partition,
        part_command,
        command,
    };
    #[allow(clippy::too_many_arguments)]
    fn go<E: Experiment>(
        py: Python<'_>,
        paper: &str,
        v: serde_json::Value,
        out: PathBuf,
        force: bool,
        how: fairsched_sim::sweep::Submit,
        submit: bool,
        registry: Registry,
        host: Arc<PyHost>,
    ) -> PyResult<(String, usize, Option<u64>)> {
        let args = typed_args::<E>(paper, v)?;
        py.detach(move || {
            let p = fairsched_sim::sweep::prepare::<E>(&args, &out, force, &how, &registry, &*host)?;
            let dir = p.dir.display().to_string();
            let n = p.instances;
            if submit {
                let s = p.sbatch()?;
                Ok((dir, n, Some(s.job)))
            } else {
                Ok((dir, n, None))
            }
        })
        .map_err(sim_err)
    }
    match paper {
        "shapley" => {
            go::<shapley::experiment::Shapley>(py, paper, v, out, force, how, submit, registry, host)
        }
        "pffp" => go::<pffp::experiment::Pffp>(py, paper, v, out, force, how, submit, registry, host),
        "diet-ethic" => {
            go::<diet::experiment::DietEthic>(py, paper, v, out, force, how, submit, registry, host)
        }
        _ => go::<workflow::experiment::WorkflowFairness>(
            py, paper, v, out, force, how, submit, registry, host,
        ),
    }
}

/// One array task of a sweep: instance `index` of the sweep in `dir`,
/// with the policies registered from Python.
#[pyfunction]
fn run_part(py: Python<'_>, dir: PathBuf, index: usize) -> PyResult<()> {
    let registry = registry()?;
    let host = new_host(false, String::new());
    let p = host.progress.clone();
    run_waiting(py, p, None, move || {
        fairsched_sim::sweep::run_part(&dir, index, &registry, &*host)
    })
}

/// A sweep's results, once every part is written: (summary JSON, text,
/// files written).
#[pyfunction]
#[pyo3(signature = (dir, force=false))]
fn collect(py: Python<'_>, dir: PathBuf, force: bool) -> PyResult<(String, String, Vec<String>)> {
    let registry = registry()?;
    let host = new_host(false, String::new());
    let p = host.progress.clone();
    let c = run_waiting(py, p, None, move || {
        fairsched_sim::sweep::collect(&dir, force, &registry, &*host)
    })?;
    Ok((c.summary.to_string(), c.text, c.listed))
}

/// Runs `paper`'s experiment with `args` (JSON text of the arguments
/// given, by name: the rest take their defaults) into `out`.
#[pyfunction]
#[pyo3(signature = (paper, args, out=None, force=false, progress=None, command=String::new()))]
fn experiment(
    py: Python<'_>,
    paper: &str,
    args: &str,
    out: Option<PathBuf>,
    force: bool,
    progress: Option<Py<PyAny>>,
    command: String,
) -> PyResult<Experimented> {
    let v = given_args(paper, args)?;
    let registry = registry()?;
    let host = new_host(false, command);
    let progress_state = host.progress.clone();
    #[allow(clippy::too_many_arguments)]
    fn go<E: Experiment + 'static>(
        py: Python<'_>,
        v: serde_json::Value,
        paper: &str,
        out: Option<PathBuf>,
        force: bool,
        registry: Registry,
        host: Arc<PyHost>,
        progress_state: Arc<Progress>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Experimented>
    where
        E::Summary: Send + 'static,
    {
        let args = typed_args::<E>(paper, v)?;
        let (dir, temp) = out_folder(&out)?;
        let h = host.clone();
        let done = run_waiting(py, progress_state, progress, move || {
            run_local::<E>(&args, &dir, force, &registry, &*h)
        })?;
        drop(temp);
        let summary =
            serde_json::to_string(&done.summary).map_err(|e| FairschedError::new_err(e.to_string()))?;
        let titles = done
            .tables
            .iter()
            .enumerate()
            .map(|(i, t)| t.title.clone().unwrap_or_else(|| format!("table-{}", i + 1)))
            .collect();
        Ok(Experimented {
            summary,
            text: done.text,
            listed: if out.is_some() { done.listed } else { Vec::new() },
            notes: host.notes.lock().map(|n| n.clone()).unwrap_or_default(),
            titles,
            tables: done.tables.iter().map(Batches::from_table).collect(),
        })
    }
    match paper {
        "shapley" => go::<shapley::experiment::Shapley>(
            py,
            v,
            paper,
            out,
            force,
            registry,
            host,
            progress_state,
            progress,
        ),
        "pffp" => {
            go::<pffp::experiment::Pffp>(py, v, paper, out, force, registry, host, progress_state, progress)
        }
        "diet-ethic" => go::<diet::experiment::DietEthic>(
            py,
            v,
            paper,
            out,
            force,
            registry,
            host,
            progress_state,
            progress,
        ),
        _ => go::<workflow::experiment::WorkflowFairness>(
            py,
            v,
            paper,
            out,
            force,
            registry,
            host,
            progress_state,
            progress,
        ),
    }
}

// ---------------------------------------------------------------- traces

/// A log's first and last submit (s), its jobs and its `MaxProcs`.
#[pyfunction]
#[pyo3(signature = (trace=None, lenient=false))]
fn trace_span(py: Python<'_>, trace: Option<PathBuf>, lenient: bool) -> PyResult<Py<PyDict>> {
    let input = match trace {
        Some(p) => TraceInput::Path(p),
        None => TraceInput::Bytes {
            name: DEMO_NAME.into(),
            data: DEMO_LOG,
        },
    };
    let scan = py.detach(|| input.scan(lenient)).map_err(|e| sim_err(e.into()))?;
    let d = PyDict::new(py);
    d.set_item("first_submit", scan.first_submit)?;
    d.set_item("last_submit", scan.last_submit)?;
    d.set_item("jobs", scan.counts.kept)?;
    d.set_item("max_procs", scan.header.max_procs)?;
    d.set_item("widest_job", scan.max_job_procs)?;
    Ok(d.unbind())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FairschedError", py.get_type::<FairschedError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Simulated>()?;
    m.add_class::<Experimented>()?;
    m.add_class::<ArrowTable>()?;
    m.add_class::<policy::PyView>()?;
    m.add_class::<policy::PyTask>()?;
    m.add_class::<policy::PyMachine>()?;
    m.add_class::<policy::PyNotice>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(register, m)?)?;
    m.add_function(wrap_pyfunction!(unregister, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(trace_span, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(run_part, m)?)?;
    m.add_function(wrap_pyfunction!(collect, m)?)?;
    Ok(())
}
