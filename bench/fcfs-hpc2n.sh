#!/usr/bin/env bash
# Replays the full HPC2N-2002 log (202,871 jobs, 240 processors) with `fcfs`,
# RUNS times (default 5), under GNU time: wall time, user+sys CPU time and peak
# RSS of each run and their medians, against the targets (≤ 0.5 s wall,
# ≤ 64 MiB peak RSS). Also writes bench/results/fcfs-hpc2n.txt.
#
#   bash bench/fcfs-hpc2n.sh          # from any directory
#   RUNS=9 bash bench/fcfs-hpc2n.sh
#
# Exit status: 0 when both targets are met (by the medians), 1 when one is
# missed or a run fails.

source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-5}
TRACE=$SWF_DIR/HPC2N-2002-2.2-cln.swf.gz
JOBS=202871
TARGET_WALL=0.5
TARGET_RSS=64
# An established Python simulator on the same run (for comparison only).
REF_CPU=280
REF_RSS=265

need_shared
[ -f "$TRACE" ] || die "$TRACE is missing"
need_gnu_time
build_release

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/fcfs-hpc2n.txt

{
    echo "fcfs replay of HPC2N-2002-2.2-cln.swf.gz ($JOBS jobs, 240 processors), $RUNS runs"
    echo "command: $BIN simulate --trace $TRACE --policy fcfs --no-progress --out \"\$tmpdir\""
    machine_line
    echo
    printf '%-6s %8s %12s %14s\n' run wall_s cpu_s peak_rss_MiB
} | tee "$out"

: > "$tmpdir/rows"
for i in $(seq 1 "$RUNS"); do
    rm -rf "$tmpdir/out"
    if ! /usr/bin/time -v -o "$tmpdir/time" \
        "$BIN" simulate --trace "$TRACE" --policy fcfs --no-progress --out "$tmpdir/out" \
        > "$tmpdir/stdout" 2> "$tmpdir/stderr"; then
        cat "$tmpdir/stderr" "$tmpdir/time" >&2
        die "run $i failed (see above)"
    fi
    jobs=$(json_field "$tmpdir/out/summary.json" jobs)
    [ "$jobs" = "$JOBS" ] || die "run $i simulated $jobs jobs, expected $JOBS"
    read -r wall cpu rss < <(time_fields "$tmpdir/time")
    echo "$wall $cpu $rss" >> "$tmpdir/rows"
    printf '%-6s %8s %12s %14s\n' "$i" "$wall" "$cpu" "$rss" | tee -a "$out"
done

med_wall=$(cut -d' ' -f1 "$tmpdir/rows" | median)
med_cpu=$(cut -d' ' -f2 "$tmpdir/rows" | median)
med_rss=$(cut -d' ' -f3 "$tmpdir/rows" | median)
mean_wait=$(json_field "$tmpdir/out/summary.json" mean_wait_s)

verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "met" : "MISSED" }'; }
wall_ok=$(verdict "$med_wall" "$TARGET_WALL")
rss_ok=$(verdict "$med_rss" "$TARGET_RSS")
{
    printf '%-6s %8s %12s %14s\n' median "$med_wall" "$med_cpu" "$med_rss"
    echo
    echo "jobs simulated: $JOBS; mean wait: $(printf '%.1f' "$mean_wait") s"
    echo "target wall ≤ $TARGET_WALL s:     $wall_ok (median $med_wall s)"
    echo "target peak RSS ≤ $TARGET_RSS MiB: $rss_ok (median $med_rss MiB)"
    awk -v c="$med_cpu" -v r="$med_rss" -v rc="$REF_CPU" -v rr="$REF_RSS" 'BEGIN {
        printf "reference (Python simulator, same run): ~%d CPU-s, %d MiB; fairsched uses %.0fx less CPU, %.0fx less memory\n",
            rc, rr, (c > 0 ? rc / c : 0), (r > 0 ? rr / r : 0)
    }'
} | tee -a "$out"
echo "wrote $out" >&2

[ "$wall_ok" = met ] && [ "$rss_ok" = met ]
