#!/usr/bin/env bash
# The three replay-cost targets of issue 13, measured side by side in one
# script run, RUNS rounds (default 5) of:
#
#   zcat HPC2N > /dev/null, then fairsched fcfs on HPC2N-2002 (all outputs)
#   fairsched fcfs on RICC-2010-2
#   fairsched fair-share with --orgs 5 on RICC-2010-2 (the default outputs)
#
# and prints, from the medians, against each target:
#
#   1. HPC2N fcfs replay wall time ≤ 2.5 × zcat's (median of the per-round ratios)
#   2. RICC fair-share --orgs 5 peak RSS ≤ 64 MiB
#   3. per-job cost (CPU time / jobs) of RICC fcfs ≤ 1.5 × HPC2N fcfs's
#      (wall time per job printed too)
#
# with PASS/FAIL. Writes bench/results/replay-cost.txt.
#
#   bash bench/replay-cost.sh
#   RUNS=9 bash bench/replay-cost.sh
#
# Exit status: 0 when the three targets pass, 1 otherwise. Wall times need a
# quiet machine; the header line says what else was running.

source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-5}
HPC2N=$SWF_DIR/HPC2N-2002-2.2-cln.swf.gz
RICC=$SWF_DIR/RICC-2010-2.swf.gz
HPC2N_JOBS=202871
RICC_JOBS=447784

need_shared
for f in "$HPC2N" "$RICC"; do [ -f "$f" ] || die "$f is missing"; done
command -v zcat > /dev/null || die "zcat (gzip) is missing"
command -v python3 > /dev/null || die "python3 is missing (measures the runs)"
build_release

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/replay-cost.txt

# run NAME JOBS ARGS...: one fairsched simulate, checked; appends
# "wall cpu rss" to $tmpdir/NAME.
run() {
    local name=$1 jobs=$2
    shift 2
    rm -rf "$tmpdir/out"
    local stats
    stats=$(measure "$tmpdir/stdout" "$BIN" simulate "$@" --no-progress --out "$tmpdir/out") ||
        die "$name failed: $BIN simulate $*"
    local got
    got=$(json_field "$tmpdir/out/summary.json" jobs)
    [ "$got" = "$jobs" ] || die "$name simulated $got jobs, expected $jobs"
    echo "$stats" >> "$tmpdir/$name"
    echo "$stats"
}

row() { printf '%-6s %9s %9s %9s %9s %9s %9s %9s %9s\n' "$@"; }
{
    echo "replay cost: HPC2N-2002 fcfs against zcat, RICC-2010-2 fcfs, RICC-2010-2 fair-share --orgs 5; $RUNS rounds"
    echo "commands: zcat $HPC2N > /dev/null"
    echo "          $BIN simulate --trace $HPC2N --policy fcfs --no-progress --out DIR"
    echo "          $BIN simulate --trace $RICC --policy fcfs --no-progress --out DIR"
    echo "          $BIN simulate --trace $RICC --policy fair-share --orgs 5 --no-progress --out DIR"
    machine_line
    quiet_line
    echo
    echo "        --- HPC2N fcfs ---------------  --- RICC fcfs ------  --- RICC fair-share 5 ---"
    row round zcat_s wall_s cpu_s ratio wall_s cpu_s wall_s rss_MiB
} | tee "$out"

for i in $(seq 1 "$RUNS"); do
    read -r zwall _ _ < <(measure /dev/null zcat "$HPC2N")
    echo "$zwall" >> "$tmpdir/zcat"
    read -r hw hc _ < <(run hpc2n "$HPC2N_JOBS" --trace "$HPC2N" --policy fcfs)
    awk -v w="$hw" -v z="$zwall" 'BEGIN { printf "%.3f\n", w / z }' >> "$tmpdir/ratio"
    read -r rw rc _ < <(run ricc "$RICC_JOBS" --trace "$RICC" --policy fcfs)
    read -r fw _ frss < <(run ricc-fs "$RICC_JOBS" --trace "$RICC" --policy fair-share --orgs 5)
    row "$i" "$zwall" "$hw" "$hc" "$(tail -1 "$tmpdir/ratio")" "$rw" "$rc" "$fw" "$frss" | tee -a "$out"
done

med() { cut -d' ' -f"$2" "$tmpdir/$1" | median; }
zcat_m=$(median < "$tmpdir/zcat")
ratio_m=$(median < "$tmpdir/ratio")
hw=$(med hpc2n 1)
hc=$(med hpc2n 2)
rw=$(med ricc 1)
rc=$(med ricc 2)
fw=$(med ricc-fs 1)
frss=$(med ricc-fs 3)
row median "$zcat_m" "$hw" "$hc" "$ratio_m" "$rw" "$rc" "$fw" "$frss" | tee -a "$out"

verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }'; }
per_job() { awk -v t="$1" -v n="$2" 'BEGIN { printf "%.3f", t / n * 1e6 }'; }
hc_job=$(per_job "$hc" "$HPC2N_JOBS")
rc_job=$(per_job "$rc" "$RICC_JOBS")
hw_job=$(per_job "$hw" "$HPC2N_JOBS")
rw_job=$(per_job "$rw" "$RICC_JOBS")
cost_ratio=$(awk -v a="$rc_job" -v b="$hc_job" 'BEGIN { printf "%.2f", a / b }')
wall_cost_ratio=$(awk -v a="$rw_job" -v b="$hw_job" 'BEGIN { printf "%.2f", a / b }')
t1=$(verdict "$ratio_m" 2.5)
t2=$(verdict "$frss" 64)
t3=$(verdict "$cost_ratio" 1.5)
{
    echo
    echo "1. HPC2N fcfs ≤ 2.5 × zcat wall:            $t1 (median ratio $ratio_m; medians $hw s / $zcat_m s)"
    echo "2. RICC fair-share --orgs 5 ≤ 64 MiB:       $t2 (median peak RSS $frss MiB)"
    echo "3. RICC fcfs per job ≤ 1.5 × HPC2N fcfs:    $t3 (CPU $rc_job µs/job vs $hc_job µs/job: $cost_ratio; wall $rw_job vs $hw_job µs/job: $wall_cost_ratio)"
} | tee -a "$out"
echo "wrote $out" >&2

[ "$t1" = PASS ] && [ "$t2" = PASS ] && [ "$t3" = PASS ]
