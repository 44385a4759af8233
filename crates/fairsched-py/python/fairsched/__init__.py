"""fairsched from Python: replay real workload logs under fair,
non-clairvoyant scheduling policies (and your own), reproduce the papers'
experiments, and step a scheduler from a reinforcement-learning loop.

    >>> import fairsched
    >>> r = fairsched.simulate(policies=["fcfs", "easy"])   # the bundled KTH-SP2 log
    >>> r.summaries["easy"]["mean_bounded_slowdown"]         # doctest: +SKIP
    >>> r.tasks.head()                                       # pandas, with fairsched[pandas]

The runs are the command line's (`fairsched simulate`, `fairsched
experiment`): the same arguments by name, the same defaults, the same
numbers for the same seed. See docs/python.md.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._native import FairschedError, PolicyError, UsageError

__version__ = _native.__version__

__all__ = [
    "simulate",
    "experiment",
    "policies",
    "register",
    "unregister",
    "order",
    "allocate",
    "control",
    "trace_span",
    "sweep",
    "collect",
    "experiment_args",
    "Result",
    "ExperimentResult",
    "FairschedError",
    "UsageError",
    "PolicyError",
    "PAPERS",
]

#: The papers whose experiments `experiment` runs.
PAPERS = ("shapley", "pffp", "diet-ethic", "workflow-fairness")

_TABLES = ("tasks", "runs", "orgs", "users", "fairness")


def _pandas():
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "DataFrames need pandas and pyarrow: pip install 'fairsched[pandas]' "
            "(or use .arrow_stream(name), which any Arrow library reads)"
        ) from e
    return pandas


def _to_frame(table):
    _pandas()
    import pyarrow as pa

    return pa.table(table).to_pandas()


def _progress_callback(progress: Optional[bool], label: str):
    """A callback(done, total, unit) drawing a tqdm bar, or None.

    progress=None: on when standard error is a terminal or in a notebook,
    and tqdm is installed; True: on (tqdm needed); False: off."""
    if progress is False:
        return None
    if progress is None:
        interactive = False
        try:
            interactive = sys.stderr.isatty()
        except (AttributeError, ValueError):
            pass
        if not interactive and "ipykernel" in sys.modules:
            interactive = True
        if not interactive:
            return None
    elif progress is not True:
        raise TypeError(f"progress: True, False or None, not {progress!r}")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install 'fairsched[pandas]'")
        return None
    state: Dict[str, Any] = {}

    def update(done: int, total: int, unit: str) -> None:
        bar = state.get("bar")
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            if total == 0:
                return
            bar = tqdm(total=total, desc=label, unit=f" {unit}" if unit else "it", leave=False)
            state["bar"] = bar
        bar.n = min(done, total)
        bar.refresh()
        if done >= total:
            bar.close()
            state.pop("bar", None)

    return update


# The command line's flags, as the Python arguments that set them: an error
# message written in the library's (the CLI's) terms names the argument.
_FLAGS = {
    "--policy": "policies", "--with": "with_", "--trace": "trace", "--traces": "traces",
    "--allocate": "allocate", "--control": "control", "--procs": "procs", "--machines": "machines",
    "--orgs": "orgs", "--ownership": "ownership", "--platform": "platform", "--window": "window",
    "--split-parallel": "split_parallel", "--seed": "seed", "--out": "out", "--force": "force",
    "--lenient": "lenient", "--drop-failed": "drop_failed", "--drop-cancelled": "drop_cancelled",
    "--procs-from": "procs_from", "--runtime-limit": "runtime_limit", "--phi": "phi",
    "--table": "table", "--figure": "figure", "--instances": "instances", "--traces-dir": "traces_dir",
    "--test": "test", "--grid": "grid", "--logs": "logs", "--utilization": "utilization",
    "--fitted": "fitted", "--scenario": "scenario", "--scenario-file": "scenario_file",
    "--runs": "runs", "--n-submit": "n_submit", "--exp": "exp", "--workflows": "workflows",
    "--repetitions": "repetitions", "--tau": "tau", "--every": "every", "--spacing": "spacing",
    "--ratio-of-means": "ratio_of_means", "--slurm-array": "sweep()",
}
_FLAG = re.compile(r"--[a-z][a-z-]*")


def _python_terms(fn):
    """Re-raises fairsched's errors with the Python arguments' names in
    place of the command line's flags."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except FairschedError as e:
            msg = str(e)
            new = _FLAG.sub(lambda m: _FLAGS.get(m.group(0), m.group(0)[2:].replace("-", "_")), msg)
            if new == msg:
                raise
            err = type(e)(new)
            err.__cause__ = e.__cause__
            raise err.with_traceback(e.__traceback__) from e.__cause__

    return wrapper


def _int_args(**values) -> None:
    for name, v in values.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}: a whole number, not {v!r}")


def _say_notes(notes: Iterable[str]) -> None:
    for n in notes:
        if n.startswith("warning: "):
            warnings.warn(n[len("warning: "):], RuntimeWarning, stacklevel=4)  # the caller of simulate/experiment, past _python_terms


def _call(args: Dict[str, Any], name: str) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if v is not None and v is not False)
    return f"python: fairsched.{name}({shown})"


class Result:
    """A finished `simulate`.

    - `summary`: the first (or only) policy's summary.json, as a dict
      (without its `tool` block); `summaries`: every policy's, by spec.
    - `tasks`, `runs`, `orgs`, `users`, `fairness`: pandas DataFrames, the
      CSV files' columns with types (times in seconds); with several
      policies, one table with a leading `policy` column. `fairness` is
      None with one organization.
    - `comparison`: comparison.csv's rows (one per policy).
    - `arrow(name)`: the same as a pyarrow Table; `arrow_stream(name)`: an
      object with `__arrow_c_stream__`, for any Arrow library.
    - `text`: the comparison as `fairsched simulate` prints it (without
      `out`, it names `result.comparison` or `result.summary`, not the
      files, for every figure); `header`:
      the log's and the platform's lines; `notes`: warnings and remarks.
    """

    def __init__(self, native):
        self._n = native
        self.policies: List[str] = list(native.policies)
        self.summaries: Dict[str, dict] = {}
        for p, s in zip(native.policies, native.summaries):
            d = json.loads(s)
            d.pop("tool", None)  # summary.json's says which program wrote it
            self.summaries[p] = d
        self.text: str = native.text
        self.header: str = native.header
        self.notes: List[str] = list(native.notes)
        self.wrote: str = native.wrote
        self._frames: Dict[str, Any] = {}

    @property
    def summary(self) -> dict:
        return self.summaries[self.policies[0]]

    def arrow_stream(self, name: str, policy: Optional[str] = None):
        """Table `name` (tasks, runs, orgs, users, fairness, comparison) as
        an Arrow stream object (PyCapsule interface), or None."""
        index = None
        if policy is not None:
            if policy not in self.policies:
                raise KeyError(f"policy {policy!r}: this result has {', '.join(self.policies)}")
            index = self.policies.index(policy)
        elif len(self.policies) == 1:
            index = 0
        return self._n.table(name, index)

    def arrow(self, name: str, policy: Optional[str] = None):
        """Table `name` as a pyarrow Table (None if the run has none)."""
        import pyarrow as pa

        t = self.arrow_stream(name, policy)
        return None if t is None else pa.table(t)

    def frame(self, name: str, policy: Optional[str] = None):
        """Table `name` as a pandas DataFrame (None if the run has none)."""
        key = f"{name}/{policy}"
        if key not in self._frames:
            t = self.arrow_stream(name, policy)
            self._frames[key] = None if t is None else _to_frame(t)
        return self._frames[key]

    tasks = property(lambda self: self.frame("tasks"), doc="One row per task (tasks.csv).")
    runs = property(lambda self: self.frame("runs"), doc="Interrupted runs (runs.csv).")
    orgs = property(lambda self: self.frame("orgs"), doc="One row per organization (orgs.csv).")
    users = property(lambda self: self.frame("users"), doc="One row per user (users.csv).")
    fairness = property(
        lambda self: self.frame("fairness"),
        doc="Each organization's ψ (and φ) over time (fairness.csv); None with one organization.",
    )
    comparison = property(lambda self: self.frame("comparison"), doc="comparison.csv's rows.")

    def __repr__(self) -> str:
        return f"<fairsched.Result of {', '.join(self.policies)}>\n{self.text}"


@_python_terms
def simulate(
    trace: Optional[Union[str, os.PathLike]] = None,
    policies: Optional[Sequence[str]] = None,
    *,
    allocate: Optional[str] = None,
    control: Optional[str] = None,
    procs: Optional[int] = None,
    machines: Optional[Sequence[int]] = None,
    orgs: Optional[int] = None,
    ownership: Optional[str] = None,
    platform: Optional[Union[str, os.PathLike]] = None,
    window: Optional[Tuple[int, int]] = None,
    split_parallel: bool = False,
    seed: int = 0,
    out: Optional[Union[str, os.PathLike]] = None,
    force: bool = False,
    lenient: bool = False,
    drop_failed: bool = False,
    drop_cancelled: bool = False,
    procs_from: Optional[str] = None,
    runtime_limit: Optional[str] = None,
    phi: bool = False,
    progress: Optional[bool] = None,
) -> Result:
    """Replays a log under one or more order policies (in parallel), as
    `fairsched simulate` does: same arguments (flags by name, `-` as `_`),
    same defaults, same files in `out` (none kept when `out` is None).

    trace: an SWF log (plain or gzip); None: the bundled KTH-SP2 log.
    policies: order-policy specs ("fcfs", "easy", "fair-share",
      "age-boost[after=10m]"...) or names registered from Python; None: the
      demo comparison (fcfs, easy, first-fit, round-robin, fair-share with 5
      organizations).
    window: (start_s, length_s): the jobs submitted then, re-based to 0.
    progress: a progress bar (tqdm) on a terminal or in a notebook (None),
      always (True) or never (False).
    """
    if isinstance(policies, str):
        policies = [policies]
    _int_args(procs=procs, orgs=orgs, seed=seed)
    if machines is not None:
        for m in machines:
            _int_args(machines=m)
    for name, v in (("split_parallel", split_parallel), ("force", force), ("lenient", lenient),
                    ("drop_failed", drop_failed), ("drop_cancelled", drop_cancelled), ("phi", phi)):
        if not isinstance(v, bool):
            raise TypeError(f"{name}: True or False, not {v!r}")
    given = dict(trace=trace, policies=policies, allocate=allocate, control=control, procs=procs,
                 machines=machines, orgs=orgs, ownership=ownership, platform=platform,
                 window=window, split_parallel=split_parallel, seed=seed)
    cb = _progress_callback(progress, "simulate")
    n = _native.simulate(
        trace=None if trace is None else os.fspath(trace),
        policies=None if policies is None else list(policies),
        allocate=allocate,
        control=control,
        procs=procs,
        machines=None if machines is None else list(machines),
        orgs=orgs,
        ownership=ownership,
        platform=None if platform is None else os.fspath(platform),
        window=None if window is None else tuple(window),
        split_parallel=split_parallel,
        seed=seed,
        out=None if out is None else os.fspath(out),
        force=force,
        lenient=lenient,
        drop_failed=drop_failed,
        drop_cancelled=drop_cancelled,
        procs_from=procs_from,
        runtime_limit=runtime_limit,
        phi=phi,
        progress=cb,
        show_progress=cb is not None,
        command=_call(given, "simulate"),
    )
    _say_notes(n.notes)
    return Result(n)


class ExperimentResult:
    """A finished experiment: `summary` (summary.json as a dict, without
    `tool`), `text` (what the command line prints), `tables` (title →
    pandas DataFrame, the tables printed), `arrow(title)`, `files` (what was
    written in `out`) and `notes`."""

    def __init__(self, paper: str, native):
        self.paper = paper
        self._n = native
        self.summary: dict = json.loads(native.summary)
        self.text: str = native.text
        self.files: List[str] = list(native.listed)
        self.notes: List[str] = list(native.notes)
        self.table_names: List[str] = list(native.table_names)
        self._frames: Optional[Dict[str, Any]] = None

    def arrow_stream(self, title: str):
        return self._n.table(self._index(title))

    def arrow(self, title: str):
        import pyarrow as pa

        return pa.table(self.arrow_stream(title))

    def _index(self, title: str) -> int:
        try:
            return self.table_names.index(title)
        except ValueError:
            raise KeyError(f"table {title!r}: this experiment has {self.table_names}") from None

    @property
    def tables(self) -> Dict[str, Any]:
        if self._frames is None:
            self._frames = {
                t: _to_frame(self._n.table(i)) for i, t in enumerate(self.table_names)
            }
        return self._frames

    def __repr__(self) -> str:
        return f"<fairsched.ExperimentResult {self.paper}>\n{self.text}"


@_python_terms
def experiment(
    paper: str,
    *,
    with_: Optional[Sequence[str]] = None,
    out: Optional[Union[str, os.PathLike]] = None,
    force: bool = False,
    progress: Optional[bool] = None,
    **args: Any,
) -> ExperimentResult:
    """Runs a paper's experiment, as `fairsched experiment PAPER` does.

    paper: "shapley", "pffp", "diet-ethic" or "workflow-fairness".
    with_: policies run beside the paper's algorithms (`--with`), built-in
      or registered from Python.
    args: the experiment's arguments by name, e.g. shapley: table=1,
      instances=20; pffp: test=2; diet-ethic: scenario="day-regular";
      workflow-fairness: exp=1. `experiment_args(paper)` lists them with
      their defaults; an unknown one is refused with that list.
    """
    if paper not in PAPERS:
        raise UsageError(f"experiment {paper!r}: one of {', '.join(PAPERS)}")
    if isinstance(with_, str):
        with_ = [with_]
    if with_ is not None:
        args["with"] = list(with_)
    for k, v in list(args.items()):
        if isinstance(v, os.PathLike):
            args[k] = os.fspath(v)
        elif isinstance(v, tuple):
            args[k] = list(v)
    try:
        text = json.dumps(args)
    except TypeError as e:
        raise TypeError(f"experiment {paper}: {e}") from None
    cb = _progress_callback(progress, paper)
    n = _native.experiment(
        paper,
        text,
        out=None if out is None else os.fspath(out),
        force=force,
        progress=cb,
        command=_call(dict(args), f"experiment[{paper}]"),
    )
    _say_notes(n.notes)
    return ExperimentResult(paper, n)


def experiment_args(paper: str) -> dict:
    """The arguments `experiment(paper, ...)` takes, with their defaults."""
    if paper not in PAPERS:
        raise UsageError(f"experiment {paper!r}: one of {', '.join(PAPERS)}")
    return json.loads(_native.experiment_defaults(paper))


def policies() -> List[dict]:
    """Every policy a run can use: kind (allocate, order, control), name,
    what it reads (blind, estimates, oracle), doc, and whether it was
    registered from Python."""
    return [
        dict(kind=k, name=n, reads=r, doc=d, python=p) for (k, n, r, d, p) in _native.policies()
    ]


_METHODS = {"order": "pick", "allocate": "allocate", "control": "react"}


def register(kind: str, name: str, factory: Callable[[], Any], *, estimates: bool = False,
             doc: str = "") -> None:
    """Registers a Python policy under `name`, usable wherever a policy
    name is (simulate, experiment's with_, sweeps).

    kind: "order" (`pick(view, machine) -> task id | None`), "allocate"
      (`allocate(view, task) -> machine id | None`) or "control"
      (`react(view, notices, timers) -> {task: priority} | None`); each may
      also have `notify(view, notice)`.
    factory: a class (or any callable) called once per run for a new object.
    estimates: whether it reads the users' runtime estimates; a blind
      policy (the default) sees none, and never a runtime.
    """
    if kind not in _METHODS:
        raise UsageError(f"kind {kind!r}: one of order, allocate, control")
    if not callable(factory):
        raise TypeError(f"policy {name}: give a class or a callable that builds the policy")
    if isinstance(factory, type) and not hasattr(factory, _METHODS[kind]):
        raise TypeError(f"{kind} policy {name}: {factory.__name__} has no {_METHODS[kind]}() method")
    if not isinstance(estimates, bool):
        raise TypeError(f"estimates: True or False, not {estimates!r}")
    _native.register(kind, name, factory, estimates, doc or (factory.__doc__ or "").strip().split("\n")[0])


def unregister(name: str) -> bool:
    """Removes a policy registered from Python."""
    return _native.unregister(name)


def _decorator(kind: str):
    def deco(name: str, *, estimates: bool = False, doc: str = ""):
        def wrap(cls):
            register(kind, name, cls, estimates=estimates, doc=doc)
            return cls

        return wrap

    deco.__name__ = kind
    deco.__doc__ = f"Class decorator: registers the class as the {kind} policy `name` (see register)."
    return deco


order = _decorator("order")
allocate = _decorator("allocate")
control = _decorator("control")


def trace_span(trace: Optional[Union[str, os.PathLike]] = None, *, lenient: bool = False) -> dict:
    """A log's first and last submit times (s), its jobs, its header's
    MaxProcs and its widest job; None: the bundled KTH-SP2 log."""
    return _native.trace_span(None if trace is None else os.fspath(trace), lenient)


@_python_terms
def sweep(
    paper: str,
    out: Union[str, os.PathLike],
    *,
    imports: Sequence[str] = (),
    with_: Optional[Sequence[str]] = None,
    partition: Optional[str] = None,
    submit: bool = True,
    force: bool = False,
    **args: Any,
) -> dict:
    """Prepares `paper`'s experiment as a Slurm array in `out`, one array
    task per instance, and submits it (`submit=False`: prepare only; run
    each instance with `python -m fairsched run-part OUT I`). Each task
    runs `python -m fairsched run-part`, importing `imports` (modules
    whose import registers your Python policies, found from the current
    folder) first. When the tasks are done, `collect(out)` writes the
    results: the same files as `experiment(..., out=...)`.

    Returns dict(dir=..., instances=N, job=JOBID or None)."""
    if paper not in PAPERS:
        raise UsageError(f"experiment {paper!r}: one of {', '.join(PAPERS)}")
    if isinstance(imports, str):
        imports = [imports]
    if with_ is not None:
        args["with"] = [with_] if isinstance(with_, str) else list(with_)
    for k, v in list(args.items()):
        if isinstance(v, os.PathLike):
            args[k] = os.fspath(v)
        elif isinstance(v, tuple):
            args[k] = list(v)
    part = [sys.executable, "-m", "fairsched", "run-part", "--path", os.getcwd()]
    for m in imports:
        part += ["--import", m]
    d, n, job = _native.sweep_prepare(
        paper,
        json.dumps(args),
        os.fspath(out),
        part,
        force=force,
        partition=partition,
        submit=submit,
        command=_call(dict(args), f"experiment[{paper}]"),
    )
    return dict(dir=d, instances=n, job=job)


def collect(dir: Union[str, os.PathLike], *, force: bool = False) -> dict:
    """Writes a finished sweep's results into its folder; returns
    dict(summary=..., text=..., files=[...])."""
    summary, text, files = _native.collect(os.fspath(dir), force)
    return dict(summary=json.loads(summary), text=text, files=list(files))
