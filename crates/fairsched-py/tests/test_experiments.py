"""fairsched.experiment gives the command line's summary.json, for each
paper, with a Python policy as an extra column too."""

import json

import pytest

import fairsched
from conftest import comparable

# paper, Python arguments, the same as flags
CASES = [
    ("shapley", dict(table=1, instances=2, traces=["LPC-EGEE"]),
     ["--table", "1", "--instances", "2", "--traces", "LPC-EGEE"]),
    ("pffp", dict(test=2, instances=1), ["--test", "2", "--instances", "1"]),
    ("diet-ethic", dict(scenario="day-regular", runs=1, n_submit=[10, 50]),
     ["--scenario", "day-regular", "--runs", "1", "--n-submit", "10,50"]),
    ("workflow-fairness", dict(exp=1, repetitions=1), ["--exp", "1", "--repetitions", "1"]),
]


def traces_args(paper, traces):
    return ({"traces_dir": str(traces)}, ["--traces-dir", traces]) if paper in ("shapley", "pffp") else ({}, [])


@pytest.mark.parametrize("paper,kwargs,flags", CASES)
def test_each_papers_summary_equals_the_clis(cli, traces, tmp_path, paper, kwargs, flags):
    extra, extra_flags = traces_args(paper, traces)
    r = fairsched.experiment(paper, progress=False, **kwargs, **extra)
    cli("experiment", paper, *flags, *extra_flags, "--out", tmp_path / "cli", "--no-progress")
    want = json.loads((tmp_path / "cli" / "summary.json").read_text())
    got = r.summary
    want, got = comparable(want), comparable(got)
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k] == want[k], f"{paper}: summary field {k}"
    assert r.table_names and all(len(t) > 0 for t in r.tables.values())
    assert r.text.strip()


def test_a_python_policy_runs_beside_the_papers_algorithms(traces):
    @fairsched.order("py-oldest")
    class Oldest:
        """The oldest waiting task of the machine that fits."""

        def __init__(self):
            self.waiting = {}

        def notify(self, view, n):
            if n.kind in ("queued", "requeued"):
                t = view.task(n.task)
                self.waiting[n.task] = (t.seq, t.slots, n.machine)
            elif n.kind in ("started", "left"):
                self.waiting.pop(n.task, None)

        def pick(self, view, machine):
            free = view.machine(machine).free
            fits = [(s, t) for t, (s, q, m) in self.waiting.items() if m == machine and q <= free]
            return min(fits)[1] if fits else None

    try:
        r = fairsched.experiment("shapley", table=1, instances=2, traces=["LPC-EGEE"],
                                 traces_dir=str(traces), with_=["py-oldest", "first-fit"], progress=False)
        assert "py-oldest" in r.text
        assert "py-oldest" in r.summary["with"]
        # Its row is the Rust first-fit's: the same schedule in every window.
        (t,) = r.tables.values()
        mine = t[t["algorithm"] == "py-oldest"].drop(columns=["algorithm", "rank ours"])
        theirs = t[t["algorithm"] == "first-fit"].drop(columns=["algorithm", "rank ours"])
        assert len(mine) == len(theirs) == 1
        assert mine.to_dict("records") == theirs.to_dict("records")
    finally:
        fairsched.unregister("py-oldest")


def test_arguments_are_checked_by_name():
    with pytest.raises(fairsched.UsageError) as e:
        fairsched.experiment("shapley", tables=1, progress=False)
    assert "unknown argument \"tables\"" in str(e.value) and "instances" in str(e.value)
    with pytest.raises(fairsched.UsageError, match="argument instances"):
        fairsched.experiment("shapley", instances="many", progress=False)
    with pytest.raises(fairsched.UsageError, match="give test"):
        fairsched.experiment("pffp", progress=False)
    with pytest.raises(fairsched.UsageError, match="one of shapley"):
        fairsched.experiment("nope")
    assert fairsched.experiment_args("shapley")["instances"] == 100


def test_a_sweep_prepared_from_python_collects_the_local_runs_bytes(traces, tmp_path, monkeypatch):
    """Without Slurm: the sweep's parts are run as its array tasks would
    run them (`python -m fairsched run-part`), a Python policy imported."""
    import subprocess
    import sys

    mod = tmp_path / "mypolicies.py"
    mod.write_text(
        "import fairsched\n"
        "@fairsched.order('py-lifo')\n"
        "class Lifo:\n"
        "    def __init__(self):\n"
        "        self.w = {}\n"
        "    def notify(self, view, n):\n"
        "        if n.kind in ('queued', 'requeued'):\n"
        "            t = view.task(n.task); self.w[n.task] = (t.seq, t.slots)\n"
        "        elif n.kind in ('started', 'left'):\n"
        "            self.w.pop(n.task, None)\n"
        "    def pick(self, view, machine):\n"
        "        free = view.machine(machine).free\n"
        "        fits = [(s, t) for t, (s, q) in self.w.items() if q <= free]\n"
        "        return max(fits)[1] if fits else None\n"
    )
    monkeypatch.chdir(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import mypolicies  # noqa: F401  (registers py-lifo here too)

        args = dict(table=1, instances=2, traces=["LPC-EGEE"], traces_dir=str(traces), with_=["py-lifo"])
        s = fairsched.sweep("shapley", tmp_path / "sweep", imports=["mypolicies"], submit=False, **args)
        assert s["instances"] == 2 and s["job"] is None
        script = (tmp_path / "sweep" / "sweep.sbatch").read_text()
        assert "run-part" in script and "mypolicies" in script
        for i in range(s["instances"]):
            subprocess.run([sys.executable, "-m", "fairsched", "run-part", "--import", "mypolicies",
                            str(tmp_path / "sweep"), str(i)], check=True, cwd=tmp_path)
        c = fairsched.collect(tmp_path / "sweep")
        local = fairsched.experiment("shapley", out=tmp_path / "local", progress=False, **args)
        assert "py-lifo" in c["text"]
        for f in ("tables.json",):
            if (tmp_path / "local" / f).exists():
                assert (tmp_path / "sweep" / f).read_bytes() == (tmp_path / "local" / f).read_bytes()
        assert comparable(c["summary"]) == comparable(local.summary)
    finally:
        sys.path.remove(str(tmp_path))
        fairsched.unregister("py-lifo")
