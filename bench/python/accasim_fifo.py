#!/usr/bin/env python3
"""AccaSim 1.1.3's FIFO replay of one plain SWF log, timed and counted.

Used by bench/python.sh (part c, see bench/README.md, "The Python
package"), inside the AccaSim virtualenv (`pip install accasim==1.1.3`).
It reuses bench/peers/accasim_run.py's set-up (the `collections.Mapping`
aliases Python 3.10 removed, the core-only system, memory requests
dropped) and prints one JSON object:

    python accasim_fifo.py --swf LOG.swf --nodes 100 --cores 1 --out DIR [--outputs]

- wall_s: `Simulator.start_simulation()` on the monotonic clock (the
  replay: reading the log, FIFO decisions, dispatching; not the import
  nor the simulator's construction, timed apart as setup_s);
- jobs_loaded, jobs_started (`dispatched_jobs`), jobs_rejected;
- dispatch_calls: calls of the dispatcher (`FirstInFirstOut.schedule`,
  AccaSim's "decisions": one per time point with a queue);
- time_points: iterations of AccaSim's main loop (one per time point);
- jobs_started_per_s, dispatch_calls_per_s, time_points_per_s.

Without --outputs AccaSim writes no schedule and no statistics file (its
writers run in forked processes); with it, DIR/jobs.csv gets one line per
job (job,submit,start,end,procs) as in bench/peers/accasim_run.py.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))

import accasim_run  # noqa: E402  (restores the collections aliases, imports AccaSim)
from accasim.base.allocator_class import FirstFit  # noqa: E402
from accasim.base.scheduler_class import FirstInFirstOut  # noqa: E402
from accasim.base.simulator_class import Simulator  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--swf", required=True, help="plain (not gzip) SWF log")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--cores", type=int, required=True, help="cores per node")
    p.add_argument("--out", required=True, help="results folder (created)")
    p.add_argument("--outputs", action="store_true", help="write the schedule (DIR/jobs.csv) and statistics")
    a = p.parse_args()

    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    sys_config = os.path.join(out, "sys.json")
    with open(sys_config, "w") as f:
        json.dump({"groups": {"node": {"core": a.cores}}, "resources": {"node": a.nodes}}, f)

    t0 = time.perf_counter()
    dispatcher = FirstInFirstOut(FirstFit())
    sim = Simulator(
        os.path.abspath(a.swf),
        sys_config,
        dispatcher,
        tweak_function=accasim_run.CoreOnly(start_time=0),
        RESULTS_FOLDER_PATH=out,
        SCHEDULE_OUTPUT=accasim_run.SCHEDULE_OUTPUT,
        scheduling_output=a.outputs,
        statistics_output=a.outputs,
        show_statistics=False,
        LOG_LEVEL="WARNING",
    )
    # Count the main loop's iterations (one per time point).
    steps = [0]
    next_events = sim.mapper.next_events

    def counted_next_events():
        steps[0] += 1
        return next_events()

    sim.mapper.next_events = counted_next_events
    t1 = time.perf_counter()
    files = sim.start_simulation()
    t2 = time.perf_counter()

    if a.outputs:
        with open(files["sched-"]) as src, open(os.path.join(out, "jobs.csv"), "w") as dst:
            dst.write("job,submit,start,end,procs\n")
            for line in src:
                if line.strip():
                    dst.write(line)

    wall = t2 - t1
    r = {
        "tool": "accasim",
        "policy": "FirstInFirstOut+FirstFit",
        "log": os.path.basename(a.swf),
        "nodes": a.nodes,
        "cores": a.cores,
        "outputs": a.outputs,
        "setup_s": round(t1 - t0, 4),
        "wall_s": round(wall, 4),
        "jobs_loaded": sim.loaded_jobs,
        "jobs_started": sim.dispatched_jobs,
        "jobs_rejected": sim.rejected_jobs,
        "dispatch_calls": dispatcher._counter,
        "time_points": steps[0],
    }
    r["jobs_started_per_s"] = round(r["jobs_started"] / wall, 1)
    r["dispatch_calls_per_s"] = round(r["dispatch_calls"] / wall, 1)
    r["time_points_per_s"] = round(r["time_points"] / wall, 1)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
