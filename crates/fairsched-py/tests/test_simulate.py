"""fairsched.simulate gives the command line's numbers and tables."""

import json
import math

import pandas as pd
import pytest

import fairsched
from conftest import ROOT, comparable

CASES = [
    # policies, keyword arguments, the same as flags
    (["fcfs", "easy", "fair-share"], dict(orgs=4, window=(0, 3_000_000)),
     ["--orgs", "4", "--window", "0,3000000"]),
    (["round-robin"], dict(orgs=3, split_parallel=True, window=(2_000_000, 1_000_000), seed=7),
     ["--orgs", "3", "--split-parallel", "--window", "2000000,1000000", "--seed", "7"]),
]


def read_csv(path):
    return pd.read_csv(path, keep_default_na=True)


@pytest.mark.parametrize("policies,kwargs,flags", CASES)
def test_summaries_and_tables_equal_the_clis(cli, kth, tmp_path, policies, kwargs, flags):
    r = fairsched.simulate(str(kth), policies, progress=False, **kwargs)
    out = tmp_path / "cli"
    args = ["simulate", "--trace", kth, "--out", out, "--no-progress"]
    for p in policies:
        args += ["--policy", p]
    cli(*args, *flags)
    several = len(policies) > 1
    assert r.policies == policies
    for p in policies:
        folder = out / p if several else out
        want = json.loads((folder / "summary.json").read_text())
        got = r.summaries[p]
        # Field by field, so that a difference names its field.
        want, got = comparable(want), comparable(got)
        assert sorted(got) == sorted(want)
        for k in want:
            assert got[k] == want[k], f"{p}: summary field {k}"
        # Each table, cell by cell, against its CSV file.
        for name in ("tasks", "runs", "orgs", "users", "fairness"):
            csv = folder / f"{name}.csv"
            frame = r.frame(name, p)
            if not csv.exists():
                assert frame is None, f"{p}: {name} has no file but a table"
                continue
            want_t = read_csv(csv)
            assert list(frame.columns) == list(want_t.columns), f"{p}: {name} columns"
            assert len(frame) == len(want_t), f"{p}: {name} rows"
            for col in want_t.columns:
                a, b = frame[col].tolist(), want_t[col].tolist()
                for i, (x, y) in enumerate(zip(a, b)):
                    if isinstance(y, float) and math.isnan(y):
                        assert x is None or (isinstance(x, float) and math.isnan(x)), (p, name, col, i)
                    elif isinstance(y, (int, float)) and not isinstance(y, bool):
                        if col == "bsld":
                            # tasks.csv prints it with 4 decimals: the same text.
                            assert f"{x:.4f}" == f"{y:.4f}", (p, name, col, i, x, y)
                        else:
                            assert float(x) == pytest.approx(float(y), rel=1e-12), (p, name, col, i, x, y)
                    else:
                        assert str(x) == str(y), (p, name, col, i, x, y)
    if several:
        want_c = read_csv(out / "comparison.csv")
        got_c = r.comparison
        assert list(got_c["policy"]) == list(want_c["policy"])
        for col in want_c.columns:
            if col in ("policy", "wall_s"):
                continue
            assert got_c[col].astype(float).tolist() == pytest.approx(want_c[col].astype(float).tolist(),
                                                                        nan_ok=True), col


def test_several_policies_give_one_table_with_a_policy_column(kth):
    r = fairsched.simulate(str(kth), ["fcfs", "first-fit"], window=(0, 2_000_000), progress=False)
    t = r.tasks
    assert list(t.columns[:2]) == ["policy", "task"]
    assert set(t["policy"]) == {"fcfs", "first-fit"}
    assert len(t) == 2 * r.summary["jobs"]
    # One policy's own table has no policy column.
    assert "policy" not in r.frame("tasks", "fcfs").columns
    # The pyarrow table carries the types.
    a = r.arrow("tasks", "fcfs")
    assert str(a.schema.field("task").type) == "uint64"
    assert str(a.schema.field("start").type) == "double"


def test_the_arrow_stream_is_read_without_pandas(kth):
    import pyarrow as pa

    r = fairsched.simulate(str(kth), ["fcfs"], window=(600_000, 1_000_000), progress=False)
    s = r.arrow_stream("tasks")
    assert hasattr(s, "__arrow_c_stream__")
    reader = pa.RecordBatchReader.from_stream(s)
    n = sum(b.num_rows for b in reader)
    assert n == r.summary["jobs"] == len(s)


def test_same_seed_same_numbers_whatever_the_thread_count(kth):
    a = fairsched.simulate(str(kth), ["fcfs", "fair-share", "round-robin"], orgs=3, seed=3,
                           window=(0, 2_000_000), progress=False)
    b = fairsched.simulate(str(kth), ["round-robin"], orgs=3, seed=3, window=(0, 2_000_000), progress=False)
    assert comparable(a.summaries["round-robin"]) == comparable(b.summary)
    assert a.frame("tasks", "round-robin").equals(b.tasks)


def test_a_bad_log_line_is_named(tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n2 5 0 x 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(fairsched.FairschedError) as e:
        fairsched.simulate(str(bad), ["fcfs"], progress=False)
    msg = str(e.value)
    assert "bad.swf:3" in msg and "run_time" in msg, msg


def test_usage_mistakes_are_usage_errors(kth):
    with pytest.raises(fairsched.UsageError, match="unknown order policy"):
        fairsched.simulate(str(kth), ["fcfss"], progress=False)
    with pytest.raises(fairsched.UsageError, match="window"):
        fairsched.simulate(str(kth), ["fcfs"], window=(-1, 10), progress=False)
    with pytest.raises(TypeError):
        fairsched.simulate(str(kth), ["fcfs"], procs="16", progress=False)
    # Messages name the Python arguments, not the command line's flags.
    with pytest.raises(fairsched.UsageError) as e:
        fairsched.simulate(str(kth), ["nope"], progress=False)
    assert "policies nope" in str(e.value) and "--" not in str(e.value), str(e.value)
    with pytest.raises(fairsched.UsageError) as e:
        fairsched.simulate(str(kth), ["fcfs"], machines=[0], progress=False)
    assert str(e.value).startswith("machines:"), str(e.value)
    with pytest.raises(fairsched.UsageError) as e:
        fairsched.experiment("pffp", test=9, progress=False)
    assert str(e.value).startswith("test 9"), str(e.value)
    with pytest.raises(TypeError, match="procs"):
        fairsched.simulate(str(kth), ["fcfs"], procs="16", progress=False)
    with pytest.raises(TypeError, match="split_parallel"):
        fairsched.simulate(str(kth), ["fcfs"], split_parallel=1, progress=False)
    with pytest.raises(fairsched.FairschedError, match="No such file"):
        fairsched.simulate(str(ROOT / "no-such.swf"), ["fcfs"], progress=False)


def test_out_keeps_the_clis_files(kth, tmp_path):
    r = fairsched.simulate(str(kth), ["fcfs"], window=(600_000, 1_000_000), out=tmp_path / "o", progress=False)
    for f in ("summary.json", "tasks.csv", "orgs.csv", "users.csv", "runs.csv"):
        assert (tmp_path / "o" / f).exists(), f
    assert "wrote" in r.wrote


def test_the_text_names_no_file_when_none_was_written(kth, tmp_path):
    """Without `out` the run keeps no file: its text points to the result's
    tables, not to comparison.csv or summary.json; with `out` to the files."""
    w = dict(window=(600_000, 100_000), progress=False)
    r = fairsched.simulate(str(kth), ["fcfs", "easy"], **w)
    assert "comparison.csv" not in r.text and "Every figure: result.comparison." in r.text, r.text
    r = fairsched.simulate(str(kth), ["fcfs"], **w)
    assert "summary.json" not in r.text and "Every figure: result.summary." in r.text, r.text
    r = fairsched.simulate(str(kth), ["fcfs", "easy"], out=tmp_path / "o", **w)
    assert "Every figure: comparison.csv." in r.text, r.text
    assert (tmp_path / "o" / "comparison.csv").exists()
