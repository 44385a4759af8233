#!/usr/bin/env bash
# Runs the simulator's criterion benches (crates/fairsched-sim/benches/engine.rs)
# and tabulates them per task: ns/task (median of the samples) and, for
# engine/order_cost_vs_processors, the growth from 64 to 8192 processors.
# Writes bench/results/engine.txt.
#
#   bash bench/engine.sh                  # run the benches, then the table
#   NO_RUN=1 bash bench/engine.sh         # only tabulate the last run
#   bash bench/engine.sh fair-share       # extra arguments go to criterion (a filter)

source "$(dirname "$0")/lib.sh"

if [ -z "${NO_RUN:-}" ]; then
    cargo bench -p fairsched-sim --bench engine -- --warm-up-time 1 --measurement-time 3 "$@" >&2
fi
[ -d target/criterion ] || die "no criterion results in target/criterion: run without NO_RUN"
mkdir -p bench/results
out=bench/results/engine.txt
{
    echo "cargo bench -p fairsched-sim --bench engine -- --warm-up-time 1 --measurement-time 3"
    machine_line
    echo
    python3 - << 'EOF'
import json, os

root = "target/criterion"
# Tasks per iteration of each benchmark (see benches/engine.rs).
groups = [("engine", 100_000), ("engine_order_cost_vs_processors", 50_000), ("engine_decision_vs_processors", 1), ("engine_rigid_fcfs_easy", 20_000)]

def median_ns(path):
    with open(os.path.join(path, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"]

print(f"{'benchmark':<58} {'ms/run':>8} {'ns/task':>8} {'Mtasks/s':>9}")
per = {}
for group, tasks in groups:
    g = os.path.join(root, group)
    if not os.path.isdir(g):
        continue
    found = [d for d, _, _ in os.walk(g) if os.path.isfile(os.path.join(d, "new", "estimates.json"))]
    # By policy, then processors numerically.
    def order(d):
        return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in os.path.relpath(d, g).split(os.sep)]
    for dirpath in sorted(found, key=order):
        ns = median_ns(dirpath)
        name = os.path.relpath(dirpath, root).replace("engine_", "engine/", 1)
        print(f"{name:<58} {ns / 1e6:>8.2f} {ns / tasks:>8.0f} {tasks / ns * 1e3:>9.2f}")
        parts = os.path.relpath(dirpath, g).split(os.sep)
        if group == "engine_order_cost_vs_processors" and len(parts) == 2:
            per.setdefault(parts[0], {})[int(parts[1])] = ns / tasks

if per:
    sizes = sorted({p for v in per.values() for p in v})
    print()
    print("order_cost_vs_processors, ns/task:")
    print(f"{'policy':<12}" + "".join(f"{p:>8}" for p in sizes) + f"{'8192/64':>9}")
    for policy, v in sorted(per.items()):
        ratio = f"{v[8192] / v[64]:>9.2f}" if 64 in v and 8192 in v else f"{'':>9}"
        print(f"{policy:<12}" + "".join(f"{v[p]:>8.0f}" if p in v else f"{'':>8}" for p in sizes) + ratio)
    if "fifo-light" in per and "fifo" in per and 64 in per["fifo"]:
        print(f"fifo-light/8192 vs fifo/64 (same ~58 running tasks): {per['fifo-light'][8192] / per['fifo'][64]:.2f}")
EOF
} | tee "$out"
echo "wrote $out" >&2
