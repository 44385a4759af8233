#!/usr/bin/env bash
# Replays every ../shared/data/traces/swf/*.swf.gz in full with every baseline
# Order policy (rigid jobs, single pool), one run each under GNU time and
# `timeout $TIMEOUT` (default 600 s): jobs, wall time, peak RSS, mean wait (from
# the run's summary.json) and OK / FAIL / TIMEOUT. Writes
# bench/results/all-logs.txt; the stderr of failed runs goes to
# bench/results/all-logs-failures.log.
#
#   bash bench/all-logs.sh                       # every log, every policy
#   LOGS='KTH*' POLICIES='fcfs easy' bash bench/all-logs.sh
#
# round-robin and fair-share run with --orgs 5 (users mapped to organizations,
# Zipf ownership: the CLI default); the others with one organization.
# LPC-EGEE runs on 70 processors (--procs 70): its header says 140, the
# reference setup uses 70.

source "$(dirname "$0")/lib.sh"

TIMEOUT=${TIMEOUT:-600}
POLICIES=${POLICIES:-fcfs easy first-fit priority round-robin fair-share}
LOGS=${LOGS:-*.swf.gz}

need_shared
need_gnu_time
build_release
command -v timeout > /dev/null || die "timeout (coreutils) is missing"
command -v python3 > /dev/null || die "python3 is missing (reads summary.json)"

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
mkdir -p bench/results
out=bench/results/all-logs.txt
failures=bench/results/all-logs-failures.log
: > "$failures"

shopt -s nullglob
# shellcheck disable=SC2206 # LOGS is a glob on purpose
logs=($SWF_DIR/$LOGS)
[ ${#logs[@]} -gt 0 ] || die "no log matches $SWF_DIR/$LOGS"

row() { printf '%-30s %-12s %6s %8s %9s %8s %12s  %s\n' "$@"; }
{
    echo "every SWF log x every baseline order policy, full replays, timeout ${TIMEOUT} s each"
    machine_line
    echo
    row log policy procs jobs wall_s rss_MiB mean_wait_s status
} | tee "$out"

n_ok=0
n_bad=0
for log in "${logs[@]}"; do
    name=$(basename "$log" .swf.gz)
    for policy in $POLICIES; do
        extra=()
        case "$policy" in round-robin | fair-share) extra+=(--orgs 5) ;; esac
        case "$name" in LPC-EGEE*) extra+=(--procs 70) ;; esac
        rm -rf "$tmpdir/out"
        rc=0
        /usr/bin/time -v -o "$tmpdir/time" timeout "$TIMEOUT" \
            "$BIN" simulate --trace "$log" --policy "$policy" --no-progress --out "$tmpdir/out" "${extra[@]}" \
            > "$tmpdir/stdout" 2> "$tmpdir/stderr" || rc=$?
        read -r wall _cpu rss < <(time_fields "$tmpdir/time")
        jobs=- procs=- wait=-
        if [ -f "$tmpdir/out/summary.json" ]; then
            jobs=$(json_field "$tmpdir/out/summary.json" jobs)
            procs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["platform"]["total"])' "$tmpdir/out/summary.json")
            wait=$(printf '%.1f' "$(json_field "$tmpdir/out/summary.json" mean_wait_s)")
        fi
        if [ "$rc" -eq 0 ] && [ "$jobs" != - ]; then
            status=OK
            n_ok=$((n_ok + 1))
        else
            [ "$rc" -eq 124 ] && status=TIMEOUT || status="FAIL(rc=$rc)"
            n_bad=$((n_bad + 1))
            {
                echo "=== $name $policy ${extra[*]}: $status"
                tail -n 20 "$tmpdir/stderr"
            } >> "$failures"
        fi
        row "$name" "$policy" "$procs" "$jobs" "$wall" "$rss" "$wait" "$status" | tee -a "$out"
    done
done

{
    echo
    if [ "$n_bad" -eq 0 ]; then
        echo "$n_ok OK"
    else
        echo "$n_ok OK, $n_bad not OK (stderr of failed runs: $failures)"
    fi
} | tee -a "$out"
[ -s "$failures" ] || rm -f "$failures"
[ "$n_bad" -eq 0 ]
