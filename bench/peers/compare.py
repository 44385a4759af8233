#!/usr/bin/env python3
"""Per-job outputs of two simulators, reduced with one set of formulas.

    python3 compare.py --accasim DIR/jobs.csv --ours DIR/tasks.csv

Prints one line per tool, whitespace-separated:

    tool jobs makespan_s mean_wait_s max_wait_s mean_bsld same_start

computed the same way for both, from each job's submit, start and end
(seconds, as each tool wrote them):

- jobs: jobs that ran (rows of the file);
- makespan: last end - first submit;
- mean wait: mean of start - submit; max wait: its largest value;
- mean bsld: mean bounded slowdown, max(1, (end - submit) / max(end - start, 10)),
  tau = 10 s, over every job (a zero-length run counts as 10 s);
- same_start: jobs (by SWF job number) that start at the same second in both
  (on the fairsched line; "-" on AccaSim's).

Standard library only (runs under the system python3).
"""

import argparse
import csv

TAU = 10.0


def load(path, job, submit, start, end):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r[start] == "":
                continue  # never started (rejected, stranded)
            rows[int(r[job])] = (float(r[submit]), float(r[start]), float(r[end]))
    return rows


def figures(rows):
    n = len(rows)
    if n == 0:
        return 0, 0.0, 0.0, 0.0, 0.0
    first = min(s for s, _, _ in rows.values())
    last = max(e for _, _, e in rows.values())
    waits = [b - s for s, b, _ in rows.values()]
    bsld = sum(max(1.0, (e - s) / max(e - b, TAU)) for s, b, e in rows.values()) / n
    return n, last - first, sum(waits) / n, max(waits), bsld


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--accasim", required=True, help="jobs.csv of bench/peers/accasim_run.py")
    p.add_argument("--ours", required=True, help="tasks.csv of fairsched simulate")
    a = p.parse_args()
    acc = load(a.accasim, "job", "submit", "start", "end")
    ours = load(a.ours, "job", "submit", "start", "end")
    same = sum(1 for j, (_, b, _) in acc.items() if j in ours and ours[j][1] == b)
    for tool, rows, agree in (("accasim", acc, "-"), ("fairsched", ours, same)):
        n, makespan, wait, max_wait, bsld = figures(rows)
        print(f"{tool} {n} {makespan:.0f} {wait:.1f} {max_wait:.0f} {bsld:.2f} {agree}")


if __name__ == "__main__":
    main()
