#!/usr/bin/env python3
"""The Python package's benchmarks, run by bench/python.sh (see
bench/README.md, "The Python package") in a virtualenv where the wheel
of this checkout is installed. Each part prints one JSON object on the
last line of its standard output (progress goes to standard error).

    python bench.py simulate --trace HPC2N.swf.gz --cli target/release/fairsched --rounds 5 --tmp DIR
    python bench.py policy   --rounds 3
    python bench.py env      [--queue 16]

simulate: `fairsched.simulate(LOG, policies=["fcfs"])` plus `.tasks` (the
    tasks DataFrame), timed in this process, against the CLI's
    `fairsched simulate --trace LOG --policy fcfs --out DIR --no-progress`
    (a subprocess, its wall time: start, replay, every output file).
    Rounds alternate CLI / Python after one untimed warm-up of each
    (whose times are reported as "first"); medians over the rounds.
    CPU time (user + system: getrusage of this process, of the CLI child)
    is measured too, less sensitive to other load than wall time.
    Checks that both give the same mean wait and the same number of tasks.
policy: a first-fit Order policy written in Python (waiting tasks tracked
    through notify, pick = the first in submission order that fits the
    machine's free slots) against the Rust `first-fit`, both through
    `fairsched.simulate` on the bundled KTH-SP2 log, alternated, medians
    over the rounds. Decisions = picks that return a task (counted by the
    Python policy; for the Rust one, the tasks started); decisions/s =
    decisions / wall time of `simulate` (the tasks DataFrame is built
    outside the timing). Checks that the start times of every task agree.
env: `fairsched.gym.SchedulingEnv` over the whole bundled KTH-SP2 log (one
    episode, window = the log's submit span) with a first-fit agent
    (the first valid action of `info["action_mask"]`): steps, wall time
    from `reset()` to the terminating `step()`, steps/s, tasks started/s,
    and how many tasks start at the same second as under the Rust
    `first-fit` (the agent sees the first `queue` waiting tasks only).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

import fairsched


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu(who):
    """User + system CPU seconds of this process (RUSAGE_SELF, every
    thread) or of its finished children (RUSAGE_CHILDREN)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def med(xs):
    return round(statistics.median(xs), 4)


# ---------------------------------------------------------------- simulate


def part_simulate(a):
    trace = a.trace
    cli_out = os.path.join(a.tmp, "cli-out")

    def cli():
        shutil.rmtree(cli_out, ignore_errors=True)
        cmd = [a.cli, "simulate", "--trace", trace, "--policy", "fcfs", "--out", cli_out, "--no-progress"]
        c0 = cpu(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t, cpu(resource.RUSAGE_CHILDREN) - c0

    def py():
        c0 = cpu(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        r = fairsched.simulate(trace, policies=["fcfs"], progress=False)
        t1 = time.perf_counter()
        tasks = r.tasks
        t2 = time.perf_counter()
        return t2 - t0, t1 - t0, t2 - t1, r, tasks, cpu(resource.RUSAGE_SELF) - c0

    log("simulate: warm-up (CLI, then Python)")
    first_cli, _ = cli()
    first_py, _, _, r, tasks, _ = py()
    cli_w, cli_c, py_w, py_c, py_sim, py_tasks = [], [], [], [], [], []
    for i in range(a.rounds):
        # ABBA: each goes first in every other round, so that neither
        # always runs right after the other (the CLI's files are still
        # being written back when it exits).
        if i % 2 == 0:
            c, cc = cli()
            p, s, t, r, tasks, pc = py()
        else:
            p, s, t, r, tasks, pc = py()
            c, cc = cli()
        cli_w.append(c)
        cli_c.append(cc)
        py_w.append(p)
        py_c.append(pc)
        py_sim.append(s)
        py_tasks.append(t)
        log(
            f"simulate: round {i + 1}/{a.rounds}: CLI {c:.3f} s ({cc:.3f} CPU-s), "
            f"Python {p:.3f} s ({pc:.3f} CPU-s; simulate {s:.3f} + tasks {t:.3f})"
        )

    with open(os.path.join(cli_out, "summary.json")) as f:
        cli_summary = json.load(f)
    with open(os.path.join(cli_out, "tasks.csv")) as f:
        cli_rows = sum(1 for _ in f) - 1
    same = (
        abs(cli_summary["mean_wait_s"] - r.summary["mean_wait_s"]) < 1e-6
        and cli_rows == len(tasks)
        and cli_summary["makespan_s"] == r.summary["makespan_s"]
    )
    ratio = statistics.median(py_w) / statistics.median(cli_w)
    return {
        "part": "simulate",
        "trace": os.path.basename(trace),
        "rounds": a.rounds,
        "tasks": len(tasks),
        "tasks_columns": list(tasks.columns),
        "cli_wall_s": [round(x, 4) for x in cli_w],
        "py_wall_s": [round(x, 4) for x in py_w],
        "cli_median_s": med(cli_w),
        "py_median_s": med(py_w),
        "py_simulate_median_s": med(py_sim),
        "py_tasks_median_s": med(py_tasks),
        "cli_cpu_s": [round(x, 4) for x in cli_c],
        "py_cpu_s": [round(x, 4) for x in py_c],
        "cli_cpu_median_s": med(cli_c),
        "py_cpu_median_s": med(py_c),
        "cpu_ratio": round(statistics.median(py_c) / statistics.median(cli_c), 3),
        "cli_first_s": round(first_cli, 4),
        "py_first_s": round(first_py, 4),
        "ratio": round(ratio, 3),
        "target": 1.1,
        "pass": ratio <= 1.1,
        "same_result": same,
        "mean_wait_s": r.summary["mean_wait_s"],
        "cli_mean_wait_s": cli_summary["mean_wait_s"],
    }


# ------------------------------------------------------------------ policy

_instances = []


@fairsched.order("py-first-fit")
class PyFirstFit:
    """First fit in Python: the waiting tasks of each machine, in
    submission order (seq), tracked through notify; pick starts the first
    that fits the machine's free slots."""

    def __init__(self):
        self.waiting = {}  # machine -> {task: slots}, in seq order
        self.seqs = {}  # task -> seq (to restore the order on a requeue)
        self.picks = 0
        self.decisions = 0
        _instances.append(self)

    def notify(self, view, n):
        kind = n.kind
        if kind == "queued" or kind == "requeued":
            t = view.task(n.task)
            m = n.machine
            q = self.waiting.setdefault(m, {})
            q[n.task] = t.slots
            self.seqs[n.task] = t.seq
            # Queued notices come in submission order; a requeued task
            # (or any out-of-order one) goes back to its place.
            if kind == "requeued" or (len(q) > 1 and self._out_of_order(q, n.task)):
                self.waiting[m] = dict(sorted(q.items(), key=lambda kv: self.seqs[kv[0]]))
        elif kind == "started" or kind == "left":
            m = n.machine
            if m is not None:
                q = self.waiting.get(m)
                if q is not None:
                    q.pop(n.task, None)
            if kind == "left":
                self.seqs.pop(n.task, None)

    def _out_of_order(self, q, task):
        # task was just appended last: is its seq below its predecessor's?
        it = reversed(q)
        next(it)
        prev = next(it)
        return self.seqs[task] < self.seqs[prev]

    def pick(self, view, machine):
        self.picks += 1
        q = self.waiting.get(machine)
        if not q:
            return None
        free = view.machine(machine).free
        for task, slots in q.items():
            if slots <= free:
                self.decisions += 1
                return task
        return None


def starts_compare(a_tasks, b_tasks):
    """(tasks, same start) over the tasks of both DataFrames."""
    m = a_tasks[["task", "start"]].merge(b_tasks[["task", "start"]], on="task", how="outer", suffixes=("_a", "_b"))
    sa, sb = m["start_a"].to_numpy(dtype=float), m["start_b"].to_numpy(dtype=float)
    same = (sa == sb) | (np.isnan(sa) & np.isnan(sb))
    return len(m), int(same.sum())


def part_policy(a):
    def run(name):
        t = time.perf_counter()
        r = fairsched.simulate(None, policies=[name], progress=False)
        return time.perf_counter() - t, r

    log("policy: warm-up (Rust first-fit, then Python)")
    run("first-fit")
    run("py-first-fit")
    rust_w, py_w = [], []
    for i in range(a.rounds):
        w, rr = run("first-fit")
        rust_w.append(w)
        _instances.clear()
        w2, rp = run("py-first-fit")
        py_w.append(w2)
        log(f"policy: round {i + 1}/{a.rounds}: Rust first-fit {w:.3f} s, Python first-fit {w2:.3f} s")
    pol = _instances[-1]
    rust_tasks, py_tasks = rr.tasks, rp.tasks
    rust_decisions = int(rust_tasks["attempts"].fillna(0).sum())
    rust_started = int(rust_tasks["start"].notna().sum())
    n, same = starts_compare(rust_tasks, py_tasks)
    rust_med, py_med = statistics.median(rust_w), statistics.median(py_w)
    return {
        "part": "policy",
        "trace": "bundled KTH-SP2-1996-2.1-cln",
        "rounds": a.rounds,
        "tasks": n,
        "py_decisions": pol.decisions,
        "py_pick_calls": pol.picks,
        "rust_started": rust_started,
        "rust_decisions": rust_decisions,
        "rust_wall_s": [round(x, 4) for x in rust_w],
        "py_wall_s": [round(x, 4) for x in py_w],
        "rust_median_s": round(rust_med, 4),
        "py_median_s": round(py_med, 4),
        "rust_decisions_per_s": round(rust_decisions / rust_med, 1),
        "py_decisions_per_s": round(pol.decisions / py_med, 1),
        "py_pick_calls_per_s": round(pol.picks / py_med, 1),
        "slowdown": round(py_med / rust_med, 2),
        "same_start": same,
        "same_schedule": same == n and pol.decisions == rust_decisions,
        "rust_mean_wait_s": rr.summary["mean_wait_s"],
        "py_mean_wait_s": rp.summary["mean_wait_s"],
    }


# --------------------------------------------------------------------- env


def part_env(a):
    import fairsched.gym

    span = fairsched.trace_span(None)
    first, last = int(span["first_submit"]), int(span["last_submit"])
    window = last - first + 1
    env = fairsched.gym.SchedulingEnv(window=window, queue=a.queue)
    log(f"env: one episode over the whole bundled log (window {first}, {window} s, queue {a.queue})")
    t0 = time.perf_counter()
    obs, info = env.reset(seed=0, options={"start": first})
    t1 = time.perf_counter()
    steps = 0
    waits = 0
    ret = 0.0
    while True:
        mask = info["action_mask"]
        action = int(mask.nonzero()[0][0])  # first valid: first-fit among the visible
        waits += action == a.queue
        obs, reward, terminated, truncated, info = env.step(action)
        ret += reward
        steps += 1
        if terminated or truncated:
            break
    t2 = time.perf_counter()
    result = env.result
    tasks = result.tasks
    started = int(tasks["start"].notna().sum())
    # The same window (times re-based to its start) under the Rust first-fit.
    rust = fairsched.simulate(policies=["first-fit"], progress=False, **env.sim_kwargs)
    env.close()
    n, same = starts_compare(rust.tasks, tasks)
    wall = t2 - t0
    return {
        "part": "env",
        "trace": "bundled KTH-SP2-1996-2.1-cln",
        "window": [first, window],
        "queue": a.queue,
        "steps": steps,
        "wait_actions": waits,
        "forced_starts": info["forced_starts"],
        "tasks": len(tasks),
        "tasks_started": started,
        "reset_s": round(t1 - t0, 4),
        "wall_s": round(wall, 4),
        "steps_per_s": round(steps / wall, 1),
        "started_per_s": round(started / wall, 1),
        "return": ret,
        "mean_bsld": result.summary["mean_bounded_slowdown"],
        "rust_first_fit_mean_bsld": rust.summary["mean_bounded_slowdown"],
        "same_start_as_rust_first_fit": same,
        "rust_first_fit_tasks": n,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="part", required=True)
    s = sub.add_parser("simulate")
    s.add_argument("--trace", required=True)
    s.add_argument("--cli", required=True)
    s.add_argument("--rounds", type=int, default=5)
    s.add_argument("--tmp", required=True)
    s = sub.add_parser("policy")
    s.add_argument("--rounds", type=int, default=3)
    s = sub.add_parser("env")
    s.add_argument("--queue", type=int, default=16)
    a = p.parse_args()
    r = {"simulate": part_simulate, "policy": part_policy, "env": part_env}[a.part](a)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
