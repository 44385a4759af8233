#!/usr/bin/env bash
# Cost per event against the machine's size (issue 39): one log replayed
# with `easy` and all its outputs at 1×, 10× and 100× its processor count
# (every job's width and the platform multiplied by the same factor, so the
# schedule is the same one, scaled), RUNS rounds (default 3) alternated.
# Prints the median wall and CPU time of each scale, CPU per job, and the
# ratio of each scale's wall time to 1×'s against the target (≤ 1.5: the
# cost of an event stays flat in the processors, a wide job does not cost
# its width), and the log's replay at 1× against `zcat` of the log.
# Writes bench/results/replay-slope.txt.
#
#   bash bench/replay-slope.sh
#   LOG=SDSC-BLUE-2000-4.2-cln SCALES='1 10 100' POLICY=easy RUNS=5 bash bench/replay-slope.sh
#   FAIRSCHED_BIN=/path/to/old/fairsched bash bench/replay-slope.sh   # another build
#
# The scaled logs are written (uncompressed) into a temporary folder by
# awk: fields 5 and 8 (allocated and requested processors) multiplied when
# positive; the platform is `--procs` = the log's processors × the factor.
#
# Exit status: 0 when every scale's ratio meets the target, 1 otherwise.

source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-3}
LOG=${LOG:-RICC-2010-2}
SCALES=${SCALES:-1 10 100}
POLICY=${POLICY:-easy}
TARGET_SLOPE=1.5
TRACE=$SWF_DIR/$LOG.swf.gz

need_shared
[ -f "$TRACE" ] || die "$TRACE is missing"
command -v zcat > /dev/null || die "zcat (gzip) is missing"
command -v python3 > /dev/null || die "python3 is missing (measures the runs)"
build_release

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/replay-slope.txt

# The log's processors: its MaxProcs header, else its widest job (RICC has
# no header), as `simulate` sizes the platform.
procs=$(zcat "$TRACE" | awk '
    /^;/ { if (match($0, /MaxProcs:[ \t]*[0-9]+/)) { s = substr($0, RSTART, RLENGTH); sub(/MaxProcs:[ \t]*/, "", s); if (s + 0 > 0) hdr = s + 0 } next }
    { p = ($5 > 0) ? $5 : $8; if (p > w) w = p }
    END { print (hdr > 0) ? hdr : w }')
[ "${procs:-0}" -gt 0 ] || die "could not tell the processors of $TRACE"
jobs_expected=""

for k in $SCALES; do
    zcat "$TRACE" | awk -v k="$k" '
        /^;/ { next }
        NF >= 18 { if ($5 > 0) $5 *= k; if ($8 > 0) $8 *= k }
        { print }' > "$tmpdir/x$k.swf"
done

row() { printf '%-7s %7s %9s %9s %9s %11s %8s\n' "$@"; }
{
    echo "$LOG under $POLICY with all outputs at ${SCALES// /×, }× its $procs processors (widths scaled alike), $RUNS rounds alternated"
    for k in $SCALES; do
        echo "command: $BIN simulate --trace x$k.swf --procs $((procs * k)) --policy $POLICY --no-progress --out DIR"
    done
    echo "against: zcat $TRACE > /dev/null"
    machine_line
    quiet_line
    echo
    row round scale procs wall_s cpu_s cpu_us/job rss_MiB
} | tee "$out"

for i in $(seq 1 "$RUNS"); do
    read -r zwall _ _ < <(measure /dev/null zcat "$TRACE")
    echo "$zwall" >> "$tmpdir/zcat"
    for k in $SCALES; do
        rm -rf "$tmpdir/out"
        stats=$(measure "$tmpdir/stdout" "$BIN" simulate --trace "$tmpdir/x$k.swf" --procs $((procs * k)) \
            --policy "$POLICY" --no-progress --out "$tmpdir/out") ||
            die "scale $k failed (see above)"
        read -r wall cpu rss <<< "$stats"
        jobs=$(json_field "$tmpdir/out/summary.json" jobs)
        [ -z "$jobs_expected" ] && jobs_expected=$jobs
        [ "$jobs" = "$jobs_expected" ] || die "scale $k simulated $jobs jobs, 1× simulated $jobs_expected"
        wait_s=$(json_field "$tmpdir/out/summary.json" mean_wait_s)
        echo "$wait_s" >> "$tmpdir/wait$k"
        echo "$wall $cpu $rss" >> "$tmpdir/s$k"
        row "$i" "${k}x" $((procs * k)) "$wall" "$cpu" \
            "$(awk -v c="$cpu" -v n="$jobs" 'BEGIN { printf "%.3f", c / n * 1e6 }')" "$rss" | tee -a "$out"
    done
done

verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }'; }
zcat_m=$(median < "$tmpdir/zcat")
first=${SCALES%% *}
base_wall=$(cut -d' ' -f1 "$tmpdir/s$first" | median)
ok=1
{
    echo
    echo "jobs simulated: $jobs_expected at every scale; zcat of the log: $zcat_m s (median)"
    row median scale procs wall_s cpu_s cpu_us/job rss_MiB
    for k in $SCALES; do
        w=$(cut -d' ' -f1 "$tmpdir/s$k" | median)
        c=$(cut -d' ' -f2 "$tmpdir/s$k" | median)
        r=$(cut -d' ' -f3 "$tmpdir/s$k" | median)
        row "" "${k}x" $((procs * k)) "$w" "$c" \
            "$(awk -v c="$c" -v n="$jobs_expected" 'BEGIN { printf "%.3f", c / n * 1e6 }')" "$r"
    done
    echo
    for k in $SCALES; do
        w=$(cut -d' ' -f1 "$tmpdir/s$k" | median)
        slope=$(awk -v a="$w" -v b="$base_wall" 'BEGIN { printf "%.2f", a / b }')
        ratio=$(awk -v a="$w" -v z="$zcat_m" 'BEGIN { printf "%.2f", a / z }')
        v=$(verdict "$slope" "$TARGET_SLOPE")
        [ "$v" = PASS ] || ok=0
        # The schedule is the same at every scale: so is the mean wait.
        same=$(sort -u "$tmpdir/wait$k" "$tmpdir/wait$first" | wc -l)
        echo "${k}x: wall ${slope} × the ${first}x run's (target ≤ $TARGET_SLOPE: $v); ${ratio} × zcat; mean wait $(head -1 "$tmpdir/wait$k") s$([ "$same" = 1 ] || echo ' (DIFFERS from 1x)')"
    done
} | tee -a "$out"
echo "wrote $out" >&2
[ "$ok" = 1 ]
