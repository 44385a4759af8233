"""Loads a `fairsched simulate --batsim-jobs` file with evalys (the Batsim
community's analysis library) and checks it against the run's summary.json.

Usage: python evalys_check.py JOBS_CSV SUMMARY_JSON

Run by crates/fairsched/tests/formats_out.rs with $FAIRSCHED_EVALYS_PYTHON
(a virtualenv that .ci/run makes). Exits non-zero, saying why, on the first
check that fails; prints one line of figures otherwise.
"""

import json
import math
import sys

import matplotlib

matplotlib.use("Agg")  # no display: the Gantt chart is drawn off-screen

from evalys.jobset import JobSet  # noqa: E402
from procset import ProcSet  # noqa: E402

COLUMNS = (
    "job_id,workload_name,profile,submission_time,requested_number_of_resources,"
    "requested_time,success,final_state,starting_time,execution_time,finish_time,"
    "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata"
).split(",")


def check(ok, what):
    if not ok:
        sys.exit(f"evalys check failed: {what}")


def close(a, b, what):
    check(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), f"{what}: evalys {a!r}, fairsched {b!r}")


def main(jobs_csv, summary_json):
    with open(summary_json) as f:
        summary = json.load(f)
    with open(jobs_csv) as f:
        header = f.readline().strip().split(",")
    check(header == COLUMNS, f"columns {header}")

    js = JobSet.from_csv(jobs_csv)
    df = js.df
    procs = summary["platform"]["total"]
    check(len(df) == summary["jobs"], f"{len(df)} rows for {summary['jobs']} tasks")
    # evalys renames job_id to jobID and adds proc_alloc.
    for col in ["jobID", "proc_alloc"] + COLUMNS[1:]:
        check(col in df.columns, f"no column {col}")

    # success is 1 for COMPLETED_SUCCESSFULLY only, as Batsim writes it;
    # the log's failed jobs are COMPLETED_FAILED (summary.json counts them).
    check(
        ((df.success == 1) == (df.final_state == "COMPLETED_SUCCESSFULLY")).all(),
        "success is 1 exactly for COMPLETED_SUCCESSFULLY",
    )
    check(
        (df.final_state == "COMPLETED_FAILED").sum() == summary["log_status"]["failed"],
        "COMPLETED_FAILED rows are the log's failed jobs",
    )

    started = df[df.starting_time.notna()]
    check(
        len(started) == len(df) - summary["outcomes"].get("rejected", 0) - summary["stranded"],
        "rows with a start",
    )
    check(
        (started.proc_alloc == started.requested_number_of_resources).all(),
        "allocated_resources hold as many processors as requested",
    )
    check(int(started.allocated_resources.apply(lambda p: p.max).max()) < procs, "processor ids < MaxProcs")

    # Same mean wait (pandas skips the empty cells of tasks that never ran).
    close(df.waiting_time.mean(), summary["mean_wait_s"], "mean waiting time")
    # Same makespan and utilization: evalys's load curve integrates the
    # processors in use over time.
    first, last = df.submission_time.min(), df.finish_time.max()
    close(last - first, summary["makespan_s"], "makespan")
    busy = js.utilisation["area"].sum()
    close(busy / (procs * (last - first)), summary["utilization"], "utilization")

    # No processor runs two tasks at once: replay the intervals (ends
    # before starts at the same instant).
    events = sorted(
        [(r.finish_time, 0, r.allocated_resources) for r in started.itertuples()]
        + [(r.starting_time, 1, r.allocated_resources) for r in started.itertuples()],
        key=lambda e: (e[0], e[1]),
    )
    busy_now = ProcSet()
    for _, is_start, alloc in events:
        if is_start:
            check(not (busy_now & alloc), f"processors {busy_now & alloc} given twice")
            busy_now |= alloc
        else:
            busy_now -= alloc
    # evalys's own free-interval replay and Gantt chart.
    check(js.detailed_utilisation().total.max() <= procs, "detailed utilisation beyond MaxProcs")
    js.gantt()

    print(
        f"evalys: {len(df)} jobs, mean wait {df.waiting_time.mean():.3f} s, "
        f"utilisation {busy / (procs * (last - first)):.6f}, processors {js.res_bounds}"
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
