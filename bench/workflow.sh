#!/usr/bin/env bash
# The workflow-fairness controller at scale: runs the criterion bench
# crates/fairsched-sim/benches/workflow.rs and tabulates, from
# target/criterion and the bench's untimed checks ("fact" lines on stderr):
#
#   workflow/run/<system>/<W>        one full simulated run of W GATE workflows
#                                    (100 tasks each, 2 slots per workflow):
#                                    ms per run, core events per second
#   workflow/control_step/<N>        one reaction of the Control (η_u over N
#                                    active workflows, Δ_ij, the raises): µs per
#                                    step, ns per active activity + running task,
#                                    tasks raised, and workflow/eta/<N> (η_u alone)
#   workflow/control_step_completed  N = 100 with 1k and 10k completed tasks
#
# Writes bench/results/workflow.txt (and bench/results/workflow.facts, the
# fact lines of the last run). Needs no logs. No targets: it reports.
#
#   bash bench/workflow.sh                 # from any directory (~2-3 min)
#   NO_RUN=1 bash bench/workflow.sh        # only tabulate the last run
#   bash bench/workflow.sh control_step    # extra arguments go to criterion (a filter)
#   WORKFLOW_RUN_SIZES=25,50,100 bash bench/workflow.sh   # other run sizes (W)
#   WORKFLOW_RUN_ONCE=200,1000 bash bench/workflow.sh     # plus one untimed run per size
#                                    (fairness at W = 1000: most of an hour)

source "$(dirname "$0")/lib.sh"

bench_cmd=(cargo bench -p fairsched-sim --bench workflow -- --warm-up-time 1 --measurement-time 3)
mkdir -p bench/results
out=bench/results/workflow.txt
facts=bench/results/workflow.facts

if [ -z "${NO_RUN:-}" ]; then
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    # Criterion's report and the bench's checks go to stderr; the fact lines
    # are kept for the table.
    "${bench_cmd[@]}" "$@" 2>&1 | tee "$tmp" >&2
    grep '^fact ' "$tmp" > "$facts" || die "the bench printed no fact line"
fi
[ -d target/criterion ] || die "no criterion results in target/criterion: run without NO_RUN"

{
    echo "${WORKFLOW_RUN_SIZES+WORKFLOW_RUN_SIZES=$WORKFLOW_RUN_SIZES }${WORKFLOW_RUN_ONCE:+WORKFLOW_RUN_ONCE=$WORKFLOW_RUN_ONCE }${bench_cmd[*]}"
    machine_line
    echo
    python3 - "$facts" << 'EOF'
import json, os, sys

root = "target/criterion"
facts = {}
if os.path.isfile(sys.argv[1]):
    for line in open(sys.argv[1]):
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "fact":
            facts[parts[1]] = dict(p.split("=", 1) for p in parts[2:] if "=" in p)

rows = {}
for d, _, files in os.walk(root):
    if "benchmark.json" not in files or os.path.basename(d) != "new":
        continue
    with open(os.path.join(d, "benchmark.json")) as f:
        b = json.load(f)
    if not b["full_id"].startswith("workflow/"):
        continue
    with open(os.path.join(d, "estimates.json")) as f:
        ns = json.load(f)["median"]["point_estimate"]
    rows[b["full_id"]] = (ns, (b.get("throughput") or {}).get("Elements"))

if not rows:
    sys.exit("error: no workflow/ results in target/criterion")

def key(name):
    return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in name.split("/")]

def fact(name, k, default="-"):
    return facts.get(name, {}).get(k, default)

# Whole runs.
runs = sorted((n for n in rows if n.startswith("workflow/run/")), key=key)
if runs:
    print("Whole runs (median of 10; events = core events: Submit + 4 Phase + Complete per task)")
    print(f"{'benchmark':<44} {'events':>8} {'ms/run':>10} {'events/s':>11} {'ns/event':>9} {'raises':>12}")
    for n in runs:
        ns, ev = rows[n]
        print(f"{n:<44} {ev:>8} {ns / 1e6:>10.2f} {ev / ns * 1e9:>11,.0f} {ns / ev:>9,.0f} {fact(n, 'priority_changes'):>12}")
    print()
untimed = sorted((n for n in facts if n.startswith("workflow/run/") and n not in rows), key=key)
if untimed:
    print("Whole runs measured once, untimed (WORKFLOW_RUN_ONCE)")
    print(f"{'benchmark':<44} {'events':>8} {'ms/run':>10} {'events/s':>11} {'ns/event':>9} {'raises':>12}")
    for n in untimed:
        ev, s = int(fact(n, "events")), float(fact(n, "untimed_run_s"))
        print(f"{n:<44} {ev:>8} {s * 1e3:>10.2f} {ev / s:>11,.0f} {s * 1e9 / ev:>9,.0f} {fact(n, 'priority_changes'):>12}")
    print()

# Control steps and η_u alone.
steps = sorted((n for n in rows if n.startswith("workflow/control_step/")), key=key)
if steps:
    print("One control step (η_u + Δ + raises, through Scheduler::step) and workflow/eta (η_u alone)")
    print(f"{'N':>6} {'act+run':>8} {'raised':>7} {'us/step':>9} {'ns/unit':>8} {'eta us':>8} {'eta ns/unit':>11} {'ns/raise':>9}")
    for n in steps:
        ns, units = rows[n]
        N = n.rsplit("/", 1)[1]
        raised = fact(n, "raised")
        eta = rows.get(f"workflow/eta/{N}")
        eta_us = f"{eta[0] / 1e3:>8.1f}" if eta else f"{'-':>8}"
        eta_unit = f"{eta[0] / units:>11.1f}" if eta else f"{'-':>11}"
        per_raise = f"{(ns - eta[0]) / int(raised):>9.0f}" if eta and raised.isdigit() else f"{'-':>9}"
        print(f"{N:>6} {units:>8} {raised:>7} {ns / 1e3:>9.1f} {ns / units:>8.0f} {eta_us} {eta_unit} {per_raise}")
    print("  ns/unit: per active activity + running task; ns/raise: (step - eta) / raised tasks")
    print()

# Completed tasks at fixed N.
comp = sorted((n for n in rows if n.startswith("workflow/control_step_completed/")), key=key)
if comp:
    base = rows.get("workflow/control_step_completed/completed-1k")
    print("Control step at N = 100 against completed tasks")
    print(f"{'variant':<26} {'completed':>9} {'raised':>7} {'us/step':>9} {'vs 1k':>6}")
    for n in comp:
        ns, _ = rows[n]
        v = n.rsplit("/", 1)[1]
        ratio = f"{ns / base[0]:>6.2f}" if base else f"{'-':>6}"
        print(f"{v:<26} {fact(n, 'completed'):>9} {fact(n, 'raised'):>7} {ns / 1e3:>9.1f} {ratio}")
EOF
} | tee "$out"
echo "wrote $out" >&2
