"""`python -m fairsched run-part [--import MODULE ...] DIR INDEX`: one
array task of a sweep prepared by `fairsched.sweep`, with the Python
policies the modules register (what the batch script runs)."""

import argparse
import importlib
import os
import sys

from . import _native, FairschedError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fairsched")
    sub = p.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("run-part", help="run one instance of a sweep (an array task)")
    rp.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                    help="a module whose import registers Python policies (repeat)")
    rp.add_argument("--path", dest="paths", action="append", default=[], metavar="DIR",
                    help="a folder put first on sys.path before the imports (repeat)")
    rp.add_argument("dir")
    rp.add_argument("index", type=int, nargs="?")
    a = p.parse_args(argv)
    for d in reversed(a.paths):
        sys.path.insert(0, d)
    for m in a.imports:
        importlib.import_module(m)
    index = a.index
    if index is None:
        env = os.environ.get("SLURM_ARRAY_TASK_ID")
        if env is None:
            p.error("give INDEX, or run as a Slurm array task")
        index = int(env)
    try:
        _native.run_part(a.dir, index)
    except FairschedError as e:
        print(f"fairsched: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
