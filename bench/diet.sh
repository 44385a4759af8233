#!/usr/bin/env bash
# The Diet-ethic experiment's cost: runs the criterion bench
# crates/fairsched-sim/benches/diet.rs (one full simulated run per iteration)
# and tabulates it in ms per run and completed requests per second, then times
# one CLI run under GNU time (wall clock, user+sys CPU, peak RSS):
#
#   diet/scalability/diet-ethic        138 servers, 100 clients, 13,800
#                                      request-seconds, Diet-ethic     ≤ 1 s per run
#   diet/scalability/legacy-1000       the same, legacy clients with n_submit = 1000
#   diet/night-consecutive/diet-ethic  10 servers, 10 clients
#   experiment diet-ethic --scenario scalability --runs 1 --n-submit 1000
#                                      the CLI: both systems, one seed   ≤ 1 s wall
#
# The CLI run's summary.json must report Diet-ethic with 13,800 completed
# requests and 0 unhappy users. Writes bench/results/diet.txt. Needs no logs.
#
#   bash bench/diet.sh                 # from any directory
#   NO_RUN=1 bash bench/diet.sh        # tabulate the last criterion run, time the CLI only
#   bash bench/diet.sh scalability     # extra arguments go to criterion (a filter)
#
# Exit status: 0 when everything ran and met its target, 1 otherwise.

source "$(dirname "$0")/lib.sh"

TARGET_S=1

need_gnu_time
build_release

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT

bench_cmd=(cargo bench -p fairsched-sim --bench diet -- --warm-up-time 1 --measurement-time 3)
if [ -z "${NO_RUN:-}" ]; then
    # Criterion's report and the bench's untimed checks (on stderr) go to stderr.
    "${bench_cmd[@]}" "$@" >&2
fi
[ -d target/criterion/diet_scalability ] || [ -d target/criterion/diet_night-consecutive ] \
    || die "no diet results in target/criterion: run without NO_RUN"

mkdir -p bench/results
out=bench/results/diet.txt
failed=0

{
    echo "${bench_cmd[*]}"
    machine_line
    echo
} | tee "$out"

# The criterion table: medians; the throughput (completed requests per run)
# is the bench's own, from benchmark.json.
python3 - "$TARGET_S" << 'EOF' | tee -a "$out" || failed=1
import json, os, sys

target_s = float(sys.argv[1])
root = "target/criterion"
rows = []
for d, _, files in os.walk(root):
    if "benchmark.json" not in files or os.path.basename(d) != "new":
        continue
    with open(os.path.join(d, "benchmark.json")) as f:
        b = json.load(f)
    if not b["full_id"].startswith("diet/"):
        continue
    with open(os.path.join(d, "estimates.json")) as f:
        ns = json.load(f)["median"]["point_estimate"]
    rows.append((b["full_id"], ns, b["throughput"]["Elements"]))

print(f"{'benchmark':<36} {'ms/run':>9} {'requests':>9} {'requests/s':>11} {'target':>9} {'status':>6}")
failed = False
for name, ns, n in sorted(rows):
    target, status = "-", "-"
    if name == "diet/scalability/diet-ethic":
        target = f"<= {target_s:g} s"
        status = "PASS" if ns / 1e9 <= target_s else "FAIL"
        failed |= status == "FAIL"
    print(f"{name:<36} {ns / 1e6:>9.2f} {n:>9} {n / ns * 1e9:>11,.0f} {target:>9} {status:>6}")
sys.exit(1 if failed else 0)
EOF

# One CLI run: Diet-ethic and the legacy system at n_submit = 1000, one seed.
cli=(experiment diet-ethic --scenario scalability --runs 1 --n-submit 1000 --no-progress --out "$tmpdir/cli")
status=ok
if ! /usr/bin/time -v -o "$tmpdir/cli.time" "$BIN" "${cli[@]}" > "$tmpdir/cli.stdout" 2> "$tmpdir/cli.stderr"; then
    status=FAIL
    echo "error: $BIN ${cli[*]} failed:" >&2
    tail -n 20 "$tmpdir/cli.stderr" >&2
fi
if [ "$status" = ok ]; then
    # Diet-ethic's point: every request-second used, nobody unhappy.
    python3 - "$tmpdir/cli/summary.json" << 'EOF' || status=FAIL
import json, sys

s = json.load(open(sys.argv[1]))
d = next(p for p in s["points"] if p["system"] == "diet-ethic")
l = next(p for p in s["points"] if p["system"] == "legacy")
print(f"CLI points: diet-ethic completed {d['completed']:.0f}, unhappy {d['unhappy']:.0f}; "
      f"legacy n_submit={l['n_submit']} completed {l['completed']:.0f}, unhappy {l['unhappy']:.0f}", file=sys.stderr)
if (d["completed"], d["unhappy"]) != (13800, 0):
    sys.exit(f"error: diet-ethic on scalability: {d}")
EOF
fi
read -r wall cpu rss < <(time_fields "$tmpdir/cli.time")
if [ "$status" = ok ]; then
    status=$(awk -v v="$wall" -v t="$TARGET_S" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }')
fi
if [ "$status" = FAIL ]; then failed=1; fi
{
    echo
    echo "$BIN ${cli[*]/#$tmpdir/<tmp>}"
    printf '%-36s %9s %9s %9s %10s %7s\n' what wall_s cpu_s rss_MiB target status
    printf '%-36s %9s %9s %9s %10s %7s\n' "CLI scalability, --n-submit 1000" "$wall" "$cpu" "$rss" "<= $TARGET_S s" "$status"
} | tee -a "$out"

echo "wrote $out" >&2
exit "$failed"
