"""Shared fixtures of the Python package's tests (run by .ci/run after the
wheel is installed into a fresh virtualenv).

The command line they compare against is FAIRSCHED_BIN, else the debug or
release build under the workspace's target folder (CARGO_TARGET_DIR)."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared"
TRACES = SHARED / "data" / "traces" / "swf"


def _cli():
    env = os.environ.get("FAIRSCHED_BIN")
    if env:
        return pathlib.Path(env)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for p in ("debug", "release"):
        exe = target / p / "fairsched"
        if exe.exists():
            return exe
    return None


@pytest.fixture(scope="session")
def cli():
    exe = _cli()
    if exe is None or not exe.exists():
        pytest.fail("the fairsched CLI is not built: set FAIRSCHED_BIN or run `cargo build -p fairsched`")

    def run(*args, cwd=None):
        r = subprocess.run([str(exe), *map(str, args)], cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"fairsched {' '.join(map(str, args))} failed:\n{r.stderr}")
        return r

    return run


@pytest.fixture(scope="session")
def traces():
    if not TRACES.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{TRACES} is missing: CI has ../shared beside the clone")
        pytest.skip(f"{TRACES} is missing (../shared beside the clone)")
    return TRACES


@pytest.fixture(scope="session")
def kth():
    return ROOT / "data" / "KTH-SP2-1996-2.1-cln.swf.gz"


def comparable(summary: dict) -> dict:
    """A summary without what differs between two runs of the same thing:
    which program wrote it and how long it took."""
    s = dict(summary)
    for k in ("tool", "wall_time_s"):
        s.pop(k, None)
    return s
