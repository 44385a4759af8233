#!/usr/bin/env bash
# Replays the full HPC2N-2002 log (202,871 jobs, 240 processors) with `fcfs`,
# with all its outputs, RUNS times (default 5), each right after `zcat LOG >
# /dev/null` of the same log: wall time, user+sys CPU time and peak RSS of
# each, the ratio of the replay's wall time to zcat's, and their medians,
# against the targets (replay ≤ 1.5 × zcat wall time, issue 39; ≤ 0.5 s
# wall; ≤ 64 MiB peak RSS). With REF_BIN, a reference build (an older
# commit's) runs in the same rounds right after ours, and its figures and
# ratio are printed beside ours: a before/after, or a bisection step, in
# one run under the same load. Also writes bench/results/fcfs-hpc2n.txt.
#
#   bash bench/fcfs-hpc2n.sh          # from any directory
#   RUNS=9 bash bench/fcfs-hpc2n.sh
#   REF_BIN=/path/to/old/fairsched RUNS=9 bash bench/fcfs-hpc2n.sh
#
# Exit status: 0 when every target is met (by the medians), 1 when one is
# missed or a run fails. Wall times need a quiet machine (the header line
# says what else was running).

source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-5}
TRACE=$SWF_DIR/HPC2N-2002-2.2-cln.swf.gz
JOBS=202871
TARGET_RATIO=1.5
REF_BIN=${REF_BIN:-}
TARGET_WALL=0.5
TARGET_RSS=64
# An established Python simulator on the same run (for comparison only).
REF_CPU=280
REF_RSS=265

need_shared
[ -f "$TRACE" ] || die "$TRACE is missing"
command -v zcat > /dev/null || die "zcat (gzip) is missing"
command -v python3 > /dev/null || die "python3 is missing (measures the runs)"
build_release
[ -z "$REF_BIN" ] || [ -x "$REF_BIN" ] || die "REF_BIN=$REF_BIN is not an executable"

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/fcfs-hpc2n.txt

row() { printf '%-6s %8s %8s %8s %8s %13s %10s %9s %9s\n' "$@"; }
{
    echo "fcfs replay of HPC2N-2002-2.2-cln.swf.gz ($JOBS jobs, 240 processors), $RUNS runs, each after zcat of the log"
    echo "command: $BIN simulate --trace $TRACE --policy fcfs --no-progress --out \"\$tmpdir\""
    echo "against: zcat $TRACE > /dev/null"
    [ -z "$REF_BIN" ] || echo "reference: $REF_BIN, the same command, right after ours in each round"
    machine_line
    quiet_line
    echo
    row run zcat_s wall_s ratio cpu_s peak_rss_MiB ref_wall_s ref_ratio ref_cpu_s
} | tee "$out"

: > "$tmpdir/rows"
for i in $(seq 1 "$RUNS"); do
    read -r zwall _ _ < <(measure /dev/null zcat "$TRACE")
    rm -rf "$tmpdir/out"
    if ! stats=$(measure "$tmpdir/stdout" "$BIN" simulate --trace "$TRACE" --policy fcfs --no-progress --out "$tmpdir/out"); then
        die "run $i failed (see above)"
    fi
    read -r wall cpu rss <<< "$stats"
    jobs=$(json_field "$tmpdir/out/summary.json" jobs)
    [ "$jobs" = "$JOBS" ] || die "run $i simulated $jobs jobs, expected $JOBS"
    ratio=$(awk -v w="$wall" -v z="$zwall" 'BEGIN { printf "%.2f", w / z }')
    ref=(- - -)
    if [ -n "$REF_BIN" ]; then
        rm -rf "$tmpdir/ref"
        rstats=$(measure "$tmpdir/stdout" "$REF_BIN" simulate --trace "$TRACE" --policy fcfs --no-progress --out "$tmpdir/ref") ||
            die "run $i of $REF_BIN failed"
        read -r rwall rcpu _ <<< "$rstats"
        rratio=$(awk -v w="$rwall" -v z="$zwall" 'BEGIN { printf "%.2f", w / z }')
        ref=("$rwall" "$rratio" "$rcpu")
    fi
    echo "$zwall $wall $ratio $cpu $rss ${ref[*]}" >> "$tmpdir/rows"
    row "$i" "$zwall" "$wall" "$ratio" "$cpu" "$rss" "${ref[@]}" | tee -a "$out"
done

med() { cut -d' ' -f"$1" "$tmpdir/rows" | median; }
med_zcat=$(med 1)
med_wall=$(med 2)
med_ratio=$(med 3)
med_cpu=$(med 4)
med_rss=$(med 5)
ref_med=(- - -)
[ -z "$REF_BIN" ] || ref_med=("$(med 6)" "$(med 7)" "$(med 8)")
mean_wait=$(json_field "$tmpdir/out/summary.json" mean_wait_s)

verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }'; }
ratio_ok=$(verdict "$med_ratio" "$TARGET_RATIO")
wall_ok=$(verdict "$med_wall" "$TARGET_WALL")
rss_ok=$(verdict "$med_rss" "$TARGET_RSS")
{
    row median "$med_zcat" "$med_wall" "$med_ratio" "$med_cpu" "$med_rss" "${ref_med[@]}"
    echo
    echo "jobs simulated: $JOBS; mean wait: $(printf '%.1f' "$mean_wait") s"
    echo "target replay ≤ $TARGET_RATIO × zcat wall: $ratio_ok (median ratio $med_ratio; medians $med_wall s / $med_zcat s)"
    [ -z "$REF_BIN" ] || echo "reference build: median ratio ${ref_med[1]} × zcat, ${ref_med[0]} s wall, ${ref_med[2]} CPU-s (ours: $med_ratio, $med_wall s, $med_cpu CPU-s)"
    echo "target wall ≤ $TARGET_WALL s:            $wall_ok (median $med_wall s)"
    echo "target peak RSS ≤ $TARGET_RSS MiB:        $rss_ok (median $med_rss MiB)"
    awk -v c="$med_cpu" -v r="$med_rss" -v rc="$REF_CPU" -v rr="$REF_RSS" 'BEGIN {
        printf "reference (Python simulator, same run): ~%d CPU-s, %d MiB; fairsched uses %.0fx less CPU, %.0fx less memory\n",
            rc, rr, (c > 0 ? rc / c : 0), (r > 0 ? rr / r : 0)
    }'
} | tee -a "$out"
echo "wrote $out" >&2

[ "$ratio_ok" = PASS ] && [ "$wall_ok" = PASS ] && [ "$rss_ok" = PASS ]
