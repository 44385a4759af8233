//! Policies written in Python: a Python object behind the core's
//! `Order`, `Allocate` and `Control` traits, and the read-only objects
//! it is handed (the view, tasks, machines, notices).
//!
//! A Python policy sees what a blind Rust policy sees: the core builds
//! its views, and they show estimates only when the policy was
//! registered with `estimates=True`. The view handed to a call is lent
//! for that call only: it points into the simulator's state, and is
//! emptied when the call returns (a view kept and read later raises).
//! Tasks, machines and notices are copies.
//!
//! A Python exception stops the run: the adapter unwinds with
//! [`Abort::Policy`], which the caller of the run catches and raises as
//! `PolicyError` with the exception as its cause.

use fairsched_core::rand::RngExt;
use fairsched_core::{
    Allocate, Control, ControlOut, MachineId, Notice, Order, Pick, SimRng, SpecView, TaskView, Time, View,
};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::{Arc, Mutex};

/// Why a run stopped early: unwound from a policy call or an observer
/// with `std::panic::resume_unwind` (no panic message is printed), caught
/// where the run was started.
pub enum Abort {
    /// A Python policy raised: the error says which policy, call and time.
    Policy(PyErr),
    /// Ctrl-C (or another signal Python turned into an exception).
    Interrupted(PyErr),
}

pub(crate) fn abort(a: Abort) -> ! {
    std::panic::resume_unwind(Box::new(a))
}

/// Seconds, as Python sees every time.
pub(crate) fn secs(t: Time) -> f64 {
    t.millis() as f64 / 1000.0
}

/// What the view points to while it is lent.
struct Lent {
    view: View<'static>,
    rng: Option<*mut SimRng>,
}

// SAFETY: a `Lent` is only reachable through `PyView::inner`'s mutex, and
// is removed (under that mutex) before the call that lent it returns, so
// the state and the generator it points to outlive every read; nothing
// writes them while the call runs (the core waits for it).
unsafe impl Send for Lent {}

/// The platform as a policy sees it, for the duration of one call.
#[pyclass(frozen, module = "fairsched", name = "View")]
pub struct PyView {
    inner: Mutex<Option<Lent>>,
    policy: &'static str,
}

impl PyView {
    fn with<R>(&self, f: impl FnOnce(&mut Lent) -> PyResult<R>) -> PyResult<R> {
        let mut g = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("view lock poisoned"))?;
        match g.as_mut() {
            Some(l) => f(l),
            None => Err(PyRuntimeError::new_err(format!(
                "policy {}: this view was lent for one call and that call has returned; \
                 read what you need during the call",
                self.policy
            ))),
        }
    }
}

/// Lends `view` (and the run's generator) to Python for one call; the
/// view is emptied when this is dropped, whatever happens.
pub(crate) struct Lend<'py> {
    obj: Bound<'py, PyView>,
}

impl<'py> Lend<'py> {
    pub(crate) fn new(
        py: Python<'py>,
        policy: &'static str,
        view: &View<'_>,
        rng: Option<&mut SimRng>,
    ) -> PyResult<Lend<'py>> {
        // SAFETY: see `Lent`: the 'static lifetime never escapes this
        // guard, which clears it before the borrowed state can change.
        let view: View<'static> = unsafe { std::mem::transmute::<View<'_>, View<'static>>(*view) };
        let lent = Lent {
            view,
            rng: rng.map(|r| r as *mut SimRng),
        };
        let obj = Bound::new(
            py,
            PyView {
                inner: Mutex::new(Some(lent)),
                policy,
            },
        )?;
        Ok(Lend { obj })
    }
    pub(crate) fn obj(&self) -> &Bound<'py, PyView> {
        &self.obj
    }
}

impl Drop for Lend<'_> {
    fn drop(&mut self) {
        if let Ok(mut g) = self.obj.get().inner.lock() {
            *g = None;
        }
    }
}

#[pymethods]
impl PyView {
    /// The simulated time, in seconds.
    #[getter]
    fn now(&self) -> PyResult<f64> {
        self.with(|l| Ok(secs(l.view.now())))
    }
    #[getter]
    fn machine_count(&self) -> PyResult<usize> {
        self.with(|l| Ok(l.view.machine_count()))
    }
    #[getter]
    fn org_count(&self) -> PyResult<usize> {
        self.with(|l| Ok(l.view.org_count()))
    }
    #[getter]
    fn total_slots(&self) -> PyResult<u32> {
        self.with(|l| Ok(l.view.total_slots()))
    }
    #[getter]
    fn busy_slots(&self) -> PyResult<u64> {
        self.with(|l| Ok(l.view.busy_slots()))
    }
    #[getter]
    fn waiting_tasks(&self) -> PyResult<u64> {
        self.with(|l| Ok(l.view.waiting_tasks()))
    }
    /// Whether this view shows the users' runtime estimates (the policy
    /// was registered with `estimates=True`).
    #[getter]
    fn shows_estimates(&self) -> PyResult<bool> {
        self.with(|l| Ok(l.view.shows_estimates()))
    }
    /// A live task (waiting or running), or None.
    fn task(&self, id: u64) -> PyResult<Option<PyTask>> {
        self.with(|l| Ok(l.view.task(fairsched_core::TaskId(id)).map(|t| PyTask::of(&t))))
    }
    /// Machine `id` (0 ≤ id < machine_count).
    fn machine(&self, id: u32) -> PyResult<PyMachine> {
        self.with(|l| {
            if id as usize >= l.view.machine_count() {
                return Err(PyIndexError::new_err(format!(
                    "machine {id}: the platform has {} machine(s)",
                    l.view.machine_count()
                )));
            }
            let m = l.view.machine(MachineId(id));
            Ok(PyMachine {
                id,
                capacity: m.capacity(),
                free: m.free(),
                waiting: m.waiting(),
                running: m.running(),
                busy: m.busy(),
            })
        })
    }
    /// Slots owned by organization `org` (0 ≤ org < org_count).
    fn org_slots(&self, org: u32) -> PyResult<u32> {
        self.with(|l| {
            if org as usize >= l.view.org_count() {
                return Err(PyIndexError::new_err(format!(
                    "organization {org}: the platform has {} organization(s)",
                    l.view.org_count()
                )));
            }
            Ok(l.view.org_slots(fairsched_core::OrgId(org)))
        })
    }
    /// A float in [0, 1) from the run's seeded generator (in `pick` and
    /// `allocate` only).
    fn random(&self) -> PyResult<f64> {
        self.with(|l| Ok(rng(l, self.policy)?.random::<f64>()))
    }
    /// An integer in [0, n) from the run's seeded generator.
    fn randrange(&self, n: u64) -> PyResult<u64> {
        if n == 0 {
            return Err(PyValueError::new_err("randrange(0): the range is empty"));
        }
        self.with(|l| Ok(rng(l, self.policy)?.random_range(0..n)))
    }
}

fn rng<'a>(l: &'a mut Lent, policy: &str) -> PyResult<&'a mut SimRng> {
    match l.rng {
        // SAFETY: see `Lent`.
        Some(p) => Ok(unsafe { &mut *p }),
        None => Err(PyRuntimeError::new_err(format!(
            "policy {policy}: the run's generator is handed to pick and allocate only"
        ))),
    }
}

/// A task as a policy sees it (a copy): no runtime, and its estimate
/// only for a policy registered with `estimates=True`.
#[pyclass(frozen, get_all, module = "fairsched", name = "Task")]
#[derive(Clone)]
pub struct PyTask {
    id: u64,
    user: i64,
    org: u32,
    slots: u32,
    priority: i64,
    /// Submission order (the FIFO key); None for a task not yet queued.
    seq: Option<u64>,
    /// Seconds; None for a task being allocated.
    submit: Option<f64>,
    machine: Option<u32>,
    running: bool,
    start: Option<f64>,
    age: f64,
    elapsed: f64,
    attempts: u32,
    estimate: Option<f64>,
    optional: bool,
}

impl PyTask {
    fn of(t: &TaskView) -> PyTask {
        PyTask {
            id: t.id().0,
            user: t.user().0,
            org: t.org().0,
            slots: t.slots(),
            priority: t.priority(),
            seq: Some(t.seq()),
            submit: Some(secs(t.submit())),
            machine: Some(t.machine().0),
            running: t.is_running(),
            start: t.start().map(secs),
            age: secs(t.age()),
            elapsed: secs(t.elapsed()),
            attempts: t.attempts(),
            estimate: t.estimate().map(secs),
            optional: t.spec().optional(),
        }
    }
    fn of_spec(s: &SpecView) -> PyTask {
        PyTask {
            id: s.id().0,
            user: s.user().0,
            org: s.org().0,
            slots: s.slots(),
            priority: s.priority(),
            seq: None,
            submit: None,
            machine: None,
            running: false,
            start: None,
            age: 0.0,
            elapsed: 0.0,
            attempts: 0,
            estimate: s.estimate().map(secs),
            optional: s.optional(),
        }
    }
}

#[pymethods]
impl PyTask {
    fn __repr__(&self) -> String {
        format!(
            "Task(id={}, user={}, org={}, slots={}, priority={}, running={})",
            self.id,
            self.user,
            self.org,
            self.slots,
            self.priority,
            if self.running { "True" } else { "False" }
        )
    }
}

/// A machine's counts (a copy).
#[pyclass(frozen, get_all, module = "fairsched", name = "Machine")]
pub struct PyMachine {
    id: u32,
    capacity: u32,
    free: u32,
    waiting: u32,
    running: u32,
    busy: u32,
}

#[pymethods]
impl PyMachine {
    fn __repr__(&self) -> String {
        format!(
            "Machine(id={}, capacity={}, free={}, waiting={}, running={})",
            self.id, self.capacity, self.free, self.waiting, self.running
        )
    }
}

/// A change to the platform's tasks or slots (a copy).
#[pyclass(frozen, get_all, module = "fairsched", name = "Notice")]
pub struct PyNotice {
    kind: &'static str,
    task: Option<u64>,
    machine: Option<u32>,
    outcome: Option<&'static str>,
    was_running: Option<bool>,
    old: Option<i64>,
    new: Option<i64>,
    phase: Option<&'static str>,
    slot: Option<u32>,
}

#[pymethods]
impl PyNotice {
    fn __repr__(&self) -> String {
        let mut s = format!("Notice({:?}", self.kind);
        if let Some(t) = self.task {
            s += &format!(", task={t}");
        }
        if let Some(m) = self.machine {
            s += &format!(", machine={m}");
        }
        if let Some(o) = self.outcome {
            s += &format!(", outcome={o:?}");
        }
        s + ")"
    }
}

impl PyNotice {
    fn of(n: &Notice) -> PyNotice {
        let mut p = PyNotice {
            kind: "",
            task: None,
            machine: None,
            outcome: None,
            was_running: None,
            old: None,
            new: None,
            phase: None,
            slot: None,
        };
        match *n {
            Notice::Queued { task, machine } => {
                (p.kind, p.task, p.machine) = ("queued", Some(task.0), Some(machine.0))
            }
            Notice::Started { task, machine } => {
                (p.kind, p.task, p.machine) = ("started", Some(task.0), Some(machine.0))
            }
            Notice::Requeued { task, machine } => {
                (p.kind, p.task, p.machine) = ("requeued", Some(task.0), Some(machine.0))
            }
            Notice::Left {
                task,
                machine,
                outcome,
                was_running,
            } => {
                p.kind = "left";
                p.task = Some(task.0);
                p.machine = machine.map(|m| m.0);
                p.outcome = Some(outcome.name());
                p.was_running = Some(was_running);
            }
            Notice::PriorityChanged { task, old, new } => {
                (p.kind, p.task, p.old, p.new) = ("priority_changed", Some(task.0), Some(old), Some(new))
            }
            Notice::PhaseStarted { task, phase } => {
                (p.kind, p.task, p.phase) = ("phase_started", Some(task.0), Some(phase.name()))
            }
            Notice::SlotJoined { slot, machine } => {
                (p.kind, p.slot, p.machine) = ("slot_joined", Some(slot.0), Some(machine.0))
            }
            Notice::SlotLeft { slot, machine } => {
                (p.kind, p.slot, p.machine) = ("slot_left", Some(slot.0), Some(machine.0))
            }
        }
        p
    }
}

/// The Python thread state a thread that calls policies keeps.
///
/// A thread Python did not start has no thread state; without one kept,
/// every call (`Python::attach`) would make one and destroy it on return
/// (an mmap, a munmap and a gettid each, hundreds of thousands of times a
/// run), and a policy's `threading.local()` data would be lost between
/// calls. The run's own thread keeps one for the run ([`keep_thread_state`],
/// in `run_waiting`); a thread of the parallel runs' pool, which lives as
/// long as the process, keeps the one its first call makes, with the GIL
/// released, for its life: one per pool thread.
struct KeptThreadState(std::cell::Cell<bool>);

impl KeptThreadState {
    fn ensure(&self) {
        if self.0.get() {
            return;
        }
        // SAFETY: only on a thread that has no thread state, so it holds
        // no GIL and no `attach` is on its stack: Ensure makes one and
        // takes the GIL, SaveThread releases the GIL and keeps the state.
        unsafe {
            if pyo3::ffi::PyGILState_GetThisThreadState().is_null() {
                let _ = pyo3::ffi::PyGILState_Ensure();
                let _ = pyo3::ffi::PyEval_SaveThread();
            }
        }
        self.0.set(true);
    }
}

thread_local! {
    static KEPT: KeptThreadState = const { KeptThreadState(std::cell::Cell::new(false)) };
}

/// `Python::attach` on this thread's kept thread state.
fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    KEPT.with(KeptThreadState::ensure);
    Python::attach(f)
}

/// Runs `f` on this thread (one Python did not start) with one Python
/// thread state kept from start to end, without the GIL: the policies
/// `f` calls only take the GIL on it.
pub(crate) fn keep_thread_state<R>(f: impl FnOnce() -> R + Send) -> R
where
    R: Send,
{
    Python::attach(|py| py.detach(f))
}

/// A registered Python policy's object and what is known of it.
#[derive(Clone)]
pub(crate) struct PyPolicy {
    pub name: &'static str,
    pub obj: Arc<Py<PyAny>>,
    /// Whether it has a `notify` method (asked once).
    pub notify: bool,
}

impl PyPolicy {
    /// Builds the policy object by calling `factory()`, checking it has
    /// the methods of its kind.
    pub(crate) fn build(
        name: &'static str,
        kind: &str,
        factory: &Py<PyAny>,
        required: &str,
    ) -> Result<PyPolicy, String> {
        Python::attach(|py| {
            let obj = factory
                .bind(py)
                .call0()
                .map_err(|e| format!("{kind} policy {name}: building it raised {}", describe(py, &e)))?;
            if !obj.hasattr(required).unwrap_or(false) {
                return Err(format!(
                    "{kind} policy {name}: the object has no {required}() method"
                ));
            }
            let notify = obj.hasattr("notify").unwrap_or(false);
            Ok(PyPolicy {
                name,
                obj: Arc::new(obj.unbind()),
                notify,
            })
        })
    }

    /// Stops the run: `call` of this policy at `now` raised `e`.
    fn fail(&self, py: Python<'_>, call: &str, now: Time, e: PyErr) -> ! {
        if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
            abort(Abort::Interrupted(e));
        }
        let err = crate::PolicyError::new_err(format!(
            "policy {}: {call} at t={} s raised {}",
            self.name,
            now,
            describe(py, &e)
        ));
        err.set_cause(py, Some(e));
        abort(Abort::Policy(err))
    }

    fn notify_py(&self, view: &View, n: &Notice) {
        if !self.notify {
            return;
        }
        attach(|py| {
            let r = (|| -> PyResult<()> {
                let lend = Lend::new(py, self.name, view, None)?;
                self.obj
                    .bind(py)
                    .call_method1("notify", (lend.obj(), PyNotice::of(n)))?;
                Ok(())
            })();
            if let Err(e) = r {
                self.fail(py, "notify", view.now(), e);
            }
        })
    }
}

/// `Type: message`, as a traceback's last line says it.
pub(crate) fn describe(py: Python<'_>, e: &PyErr) -> String {
    let ty = e
        .get_type(py)
        .qualname()
        .map(|q| q.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if msg.is_empty() {
        ty
    } else {
        format!("{ty}: {msg}")
    }
}

impl Order for PyPolicy {
    fn notify(&mut self, view: &View, notice: &Notice) {
        self.notify_py(view, notice)
    }
    fn pick(&mut self, view: &View, machine: MachineId, rng: &mut SimRng) -> Option<Pick> {
        attach(|py| {
            let r = (|| -> PyResult<Option<u64>> {
                let lend = Lend::new(py, self.name, view, Some(rng))?;
                let out = self.obj.bind(py).call_method1("pick", (lend.obj(), machine.0))?;
                drop(lend);
                if out.is_none() {
                    return Ok(None);
                }
                // bool is an int in Python: refused, it is surely a mistake.
                if out.is_instance_of::<pyo3::types::PyBool>() {
                    return Err(PyTypeError::new_err(
                        "pick returned a bool; return a task id (int) or None",
                    ));
                }
                out.extract::<u64>().map(Some).map_err(|_| {
                    PyTypeError::new_err(format!(
                        "pick returned {}; return a task id (int) or None",
                        out.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })
            })();
            match r {
                Ok(t) => t.map(|t| Pick::Start(fairsched_core::TaskId(t))),
                Err(e) => self.fail(py, "pick", view.now(), e),
            }
        })
    }
    fn policy_name(&self) -> &'static str {
        self.name
    }
}

impl Allocate for PyPolicy {
    fn allocate(&mut self, view: &View, task: SpecView, rng: &mut SimRng) -> Option<MachineId> {
        attach(|py| {
            let r = (|| -> PyResult<Option<u32>> {
                let lend = Lend::new(py, self.name, view, Some(rng))?;
                let out = self
                    .obj
                    .bind(py)
                    .call_method1("allocate", (lend.obj(), PyTask::of_spec(&task)))?;
                drop(lend);
                if out.is_none() {
                    return Ok(None);
                }
                if out.is_instance_of::<pyo3::types::PyBool>() {
                    return Err(PyTypeError::new_err(
                        "allocate returned a bool; return a machine id (int) or None",
                    ));
                }
                let m: u32 = out.extract().map_err(|_| {
                    PyTypeError::new_err("allocate returned something else than a machine id (int) or None")
                })?;
                if m as usize >= view.machine_count() {
                    return Err(PyValueError::new_err(format!(
                        "allocate returned machine {m}; the platform has {} machine(s)",
                        view.machine_count()
                    )));
                }
                Ok(Some(m))
            })();
            match r {
                Ok(m) => m.map(MachineId),
                Err(e) => self.fail(py, "allocate", view.now(), e),
            }
        })
    }
    fn notify(&mut self, view: &View, notice: &Notice) {
        self.notify_py(view, notice)
    }
    fn policy_name(&self) -> &'static str {
        self.name
    }
}

impl Control for PyPolicy {
    fn notify(&mut self, view: &View, notice: &Notice) {
        self.notify_py(view, notice)
    }
    /// `react(view, notices, timers)` returns None, `{task: priority}`,
    /// or `({task: priority}, [(at_s, token), ...])`.
    fn react(&mut self, view: &View, notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        attach(|py| {
            let r = (|| -> PyResult<()> {
                let lend = Lend::new(py, self.name, view, None)?;
                let ns = PyList::empty(py);
                for n in notices {
                    ns.append(PyNotice::of(n))?;
                }
                let back = self
                    .obj
                    .bind(py)
                    .call_method1("react", (lend.obj(), ns, timers.to_vec()))?;
                drop(lend);
                if back.is_none() {
                    return Ok(());
                }
                let (prios, tms) = if let Ok(t) = back.cast::<PyTuple>() {
                    if t.len() != 2 {
                        return Err(PyTypeError::new_err(
                            "react returned a tuple; give (priorities, timers)",
                        ));
                    }
                    (t.get_item(0)?, Some(t.get_item(1)?))
                } else {
                    (back.clone(), None)
                };
                if !prios.is_none() {
                    let d = prios.cast::<PyDict>().map_err(|_| {
                        PyTypeError::new_err("react: priorities are a dict {task id: priority}")
                    })?;
                    for (k, v) in d.iter() {
                        let t: u64 = k.extract()?;
                        let p: i64 = v.extract()?;
                        out.priorities.push((fairsched_core::TaskId(t), p));
                    }
                }
                if let Some(tms) = tms.filter(|t| !t.is_none()) {
                    for item in tms.try_iter()? {
                        let (at, token): (f64, u64) = item?.extract().map_err(|_| {
                            PyTypeError::new_err("react: timers are a list of (at_seconds, token)")
                        })?;
                        if !at.is_finite() || at < secs(view.now()) {
                            return Err(PyValueError::new_err(format!(
                                "react: timer at {at} s is not at or after now ({} s)",
                                secs(view.now())
                            )));
                        }
                        out.timers
                            .push((Time::from_millis((at * 1000.0).round() as i64), token));
                    }
                }
                Ok(())
            })();
            if let Err(e) = r {
                self.fail(py, "react", view.now(), e);
            }
        })
    }
    fn policy_name(&self) -> &'static str {
        self.name
    }
}
