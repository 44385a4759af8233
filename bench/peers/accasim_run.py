#!/usr/bin/env python3
"""Runs AccaSim 1.1.3 (https://pypi.org/project/accasim/1.1.3/) on one plain
SWF log and writes one CSV line per job: job,submit,start,end,procs.

Used by bench/peers/accasim.sh (see bench/README.md, "Peer simulators"),
inside a virtualenv where `pip install accasim==1.1.3` was done.

    python accasim_run.py --swf LOG.swf --policy fifo|easy \
        --nodes N --cores C --out DIR

The system is core-only: one resource type, "core", on N identical nodes of
C cores (N x C = the log's processors). AccaSim turns a job of p processors
into p requests of one core each, which may share a node, so the machine
behaves as one pool of N x C cores, as fairsched's. Its default reader takes
the processors from SWF field 8 when it is not -1, else field 5; memory
requests (fields 10 and 7) are dropped (see CoreOnly).

--policy fifo is AccaSim's FirstInFirstOut, easy its EASYBackfilling, both
with the FirstFit allocator and the default job check (a job wider than
the machine is rejected). DIR gets sys.json (the system config), AccaSim's
own files (sched-*, stats-*) and jobs.csv.
"""

import argparse
import collections
import collections.abc
import json
import os
import sys

# AccaSim 1.1.3 imports ABCs from `collections` (`from collections import
# Mapping`), which Python 3.10 removed; put them back before importing it.
for _name in (
    "Callable",
    "Container",
    "Hashable",
    "Iterable",
    "Iterator",
    "Mapping",
    "MutableMapping",
    "MutableSequence",
    "MutableSet",
    "Sequence",
    "Set",
    "Sized",
):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

from accasim.base.allocator_class import FirstFit  # noqa: E402
from accasim.base.scheduler_class import EASYBackfilling, FirstInFirstOut  # noqa: E402
from accasim.base.simulator_class import Simulator  # noqa: E402
from accasim.utils.reader_class import DefaultTweaker  # noqa: E402


class CoreOnly(DefaultTweaker):
    """AccaSim's default SWF tweak, without memory.

    The default reader turns SWF field 10 (or 7) into a per-core "mem"
    request. Which resources a job may request is checked on the first job
    only: on a log whose first job has no memory field (HPC2N) a later job
    asking for memory then fails (KeyError: 'mem'). The system here has
    cores only, so memory requests are dropped, as fairsched ignores them.
    """

    def tweak_function(self, job):
        job = DefaultTweaker.tweak_function(self, job)
        job.pop("mem", None)
        job["requested_resources"].pop("mem", None)
        return job


# One line per finished job, with plain integers (AccaSim's default format
# prints dates). Attributes are read from AccaSim's job objects.
SCHEDULE_OUTPUT = {
    "format": "{job_id},{submit},{start},{end},{procs}",
    "attributes": {
        "job_id": ("id", "str"),
        "submit": ("queued_time", "int"),
        "start": ("start_time", "int"),
        "end": ("end_time", "int"),
        "procs": ("core", "int"),
    },
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--swf", required=True, help="plain (not gzip) SWF log")
    p.add_argument("--policy", required=True, choices=["fifo", "easy"])
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--cores", type=int, required=True, help="cores per node")
    p.add_argument("--out", required=True, help="results folder (created)")
    a = p.parse_args()

    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    sys_config = os.path.join(out, "sys.json")
    with open(sys_config, "w") as f:
        json.dump({"groups": {"node": {"core": a.cores}}, "resources": {"node": a.nodes}}, f)

    allocator = FirstFit()
    dispatcher = FirstInFirstOut(allocator) if a.policy == "fifo" else EASYBackfilling(allocator)
    sim = Simulator(
        os.path.abspath(a.swf),
        sys_config,
        dispatcher,
        tweak_function=CoreOnly(start_time=0),
        RESULTS_FOLDER_PATH=out,
        SCHEDULE_OUTPUT=SCHEDULE_OUTPUT,
        scheduling_output=True,
        statistics_output=True,
        show_statistics=False,
        LOG_LEVEL="WARNING",
    )
    files = sim.start_simulation()

    name = os.path.basename(a.swf)
    with open(files["sched-"]) as src, open(os.path.join(out, "jobs.csv"), "w") as dst:
        dst.write("job,submit,start,end,procs\n")
        for line in src:
            if line.strip():
                dst.write(line)
    print(f"accasim {a.policy}: {name}: wrote {os.path.join(out, 'jobs.csv')}", file=sys.stderr)


if __name__ == "__main__":
    main()
