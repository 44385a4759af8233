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


def test_the_readmes_python_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    (cmd,) = [line for b in blocks(section, "sh") for line in b.splitlines() if line.startswith("python -c")]
    code = re.match(r'python -c "(.*)"$', cmd).group(1)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "easy" in r.stdout and "bsld" in r.stdout and "task" in r.stdout
