#!/usr/bin/env bash
# Times the PFFP experiment's heavy commands under GNU time (wall clock, user+sys
# CPU, peak RSS), one run each, against the issue's targets:
#
#   experiment pffp --test 3   the φ×ψ grid: 121 PFFP settings × 18 weeks,
#                              3 machines of 2, 4, 8 processors     ≤ 600 s wall
#   experiment pffp --test 1   the grid + Table 4's settings on 3 machines of 1
#   experiment pffp --test 5   5 strategies × 30 weeks of bags of tasks on
#                              machines of 50, 100, 150 processors
#   trace stats RICC-2010-2    statistics of the largest log (447,784 jobs) ≤ 10 s wall
#
# Tests 1 and 5 have no target: they are timed for reference. Also writes
# bench/results/pffp.txt.
#
#   bash bench/pffp.sh                  # from any directory; ../shared beside the repository
#   ONLY='stats' bash bench/pffp.sh     # a subset: any of test3 test1 test5 stats
#
# Exit status: 0 when every command succeeded and met its target, 1 otherwise.

source "$(dirname "$0")/lib.sh"

ONLY=${ONLY:-test3 test1 test5 stats}
RICC=$SWF_DIR/RICC-2010-2.swf.gz
TARGET_GRID=600
TARGET_STATS=10

need_shared
[ -f "$RICC" ] || die "$RICC is missing"
need_gnu_time
build_release

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/pffp.txt

{
    echo "PFFP experiment and trace statistics, one run each ($BIN)"
    machine_line
    echo
    printf '%-34s %9s %9s %9s %10s %7s\n' what wall_s cpu_s rss_MiB target status
} | tee "$out"

failed=0

# timed KEY LABEL TARGET_S ARGS...: runs $BIN ARGS under GNU time and prints a
# row (TARGET_S "-" for none). A command that fails is FAIL whatever its time.
timed() {
    local key=$1 name=$2 target=$3
    shift 3
    local status
    if /usr/bin/time -v -o "$tmpdir/$key.time" "$BIN" "$@" \
        > "$tmpdir/$key.stdout" 2> "$tmpdir/$key.stderr"; then
        status=ok
    else
        status=FAIL
        echo "error: $BIN $* failed:" >&2
        tail -n 20 "$tmpdir/$key.stderr" >&2
    fi
    local wall cpu rss
    read -r wall cpu rss < <(time_fields "$tmpdir/$key.time")
    local shown="-"
    if [ "$target" != "-" ]; then
        shown="<= $target s"
        if [ "$status" = ok ]; then
            status=$(awk -v v="$wall" -v t="$target" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }')
        fi
    elif [ "$status" = ok ]; then
        status=done
    fi
    if [ "$status" = FAIL ]; then failed=1; fi
    printf '%-34s %9s %9s %9s %10s %7s\n' "$name" "$wall" "$cpu" "$rss" "$shown" "$status" | tee -a "$out"
}

for what in $ONLY; do
    case $what in
        test3) timed test3 "experiment pffp --test 3 (grid)" "$TARGET_GRID" \
            experiment pffp --test 3 --no-progress --out "$tmpdir/test3" ;;
        test1) timed test1 "experiment pffp --test 1" - \
            experiment pffp --test 1 --no-progress --out "$tmpdir/test1" ;;
        test5) timed test5 "experiment pffp --test 5" - \
            experiment pffp --test 5 --no-progress --out "$tmpdir/test5" ;;
        stats) timed stats "trace stats RICC-2010-2" "$TARGET_STATS" \
            trace stats "$RICC" --out "$tmpdir/stats" ;;
        *) die "ONLY: unknown '$what' (test3 test1 test5 stats)" ;;
    esac
done

echo "wrote $out" >&2
exit "$failed"
