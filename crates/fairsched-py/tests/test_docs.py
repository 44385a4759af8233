"""docs/python.md and the README's Python example run as written."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT, TRACES


def blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_the_walk_through_runs_and_prints_what_it_says(tmp_path, monkeypatch, capsys, traces):
    pytest.importorskip("matplotlib")
    pytest.importorskip("gymnasium")
    doc = (ROOT / "docs" / "python.md").read_text()
    code = blocks(doc, "python")
    assert len(code) >= 5
    monkeypatch.chdir(tmp_path)
    ns = {}
    try:
        for b in code:
            exec(compile(b.replace("../shared/data/traces/swf", str(TRACES)), "docs/python.md", "exec"), ns)
    finally:
        import fairsched

        fairsched.unregister("smallest-first")
    out = capsys.readouterr().out
    assert "fcfs" in out and "fair-share" in out and "smallest-first" in out
    assert "DIRECTCONTR" in out
    assert re.search(r"\d+ decisions, return -\d", out), out
    assert (tmp_path / "waits.png").stat().st_size > 1000


# What each module a block imports (or uses, for DataFrames) needs from
# PyPI. A module this map does not know fails the test below: say here
# which distribution it comes from.
NEEDS = {
    "fairsched": [],
    "fairsched.gym": ["gymnasium", "numpy"],
    "matplotlib": ["matplotlib"],
    "pandas": ["pandas", "pyarrow"],
}


def test_the_first_install_line_installs_what_the_walk_through_imports():
    """docs/python.md's first `pip install` line names extras of
    pyproject.toml that hold every distribution its blocks import (before,
    the page plotted with matplotlib, which only the `test` extra had)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    doc = (ROOT / "docs" / "python.md").read_text()
    first = next(line for b in blocks(doc, "sh") for line in b.splitlines() if line.startswith("pip install"))
    extras = re.match(r"pip install '\.\[([\w,]+)\]'", first).group(1).split(",")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = project["optional-dependencies"]
    assert all(e in groups for e in extras), (extras, sorted(groups))
    installed = {re.match(r"[\w-]+", d).group(0).lower() for e in extras for d in groups[e]}
    code = "\n".join(blocks(doc, "python"))
    # The tables are DataFrames (r.tasks…): pandas and pyarrow.
    used = {"pandas"} | {m for m in re.findall(r"^\s*(?:import|from)\s+([\w.]+)", code, re.M)}
    unknown = sorted(used - set(NEEDS))
    assert not unknown, f"docs/python.md imports {unknown}: add them to NEEDS"
    missing = sorted({d for m in used for d in NEEDS[m]} - installed)
    assert not missing, f"{first!r} does not install {missing} (extras {extras})"


def test_the_readmes_python_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    (cmd,) = [line for b in blocks(section, "sh") for line in b.splitlines() if line.startswith("python -c")]
    code = re.match(r'python -c "(.*)"$', cmd).group(1)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "easy" in r.stdout and "bsld" in r.stdout and "task" in r.stdout
