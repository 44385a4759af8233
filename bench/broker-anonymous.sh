#!/usr/bin/env bash
# How much anonymous readers slow the live broker's steps (issue 27, finding
# 4). In a fresh temporary directory: `fairsched admin init`, `fairsched
# serve --listen 127.0.0.1:0`, one organization, one user, no worker; then
# the load generator crates/fairsched/examples/broker_anonymous.rs queues
# PRELOAD tasks (they wait: a busy broker's queue) and, per phase, times
# SUBMITS one-task submissions made one after the other (each is one core
# step and one group commit):
#
#   idle     nobody else talks to the broker
#   polled   meanwhile POLLERS threads GET /v1/dashboard (no token) in a
#            loop, as fast as the replies come
#
# Two brokers: `nolimit` serves with --anonymous-rate 0 (every reader gets
# the snapshot: the published frame alone protects the broker's thread),
# `limited` with the default rate limit (100/s per client address: the
# readers, all on 127.0.0.1, mostly get 429).
#
#   bash bench/broker-anonymous.sh                       # from any directory
#   PRELOAD=300000 SUBMITS=500 POLLERS=8 bash bench/broker-anonymous.sh
#   CASES=nolimit bash bench/broker-anonymous.sh
#   FAIRSCHED_BIN=/path/to/old/fairsched CASES=old bash bench/broker-anonymous.sh
#                                                        # a broker without the flags
#
# Per phase: p50/p99/max of the submission latency as the client sees it,
# the readers' replies per second (200 and 429), and the broker thread's
# reads and dashboard builds during the phase (/metrics, when the broker
# has those counters). Writes bench/results/broker-anonymous.txt.

source "$(dirname "$0")/lib.sh"

PRELOAD=${PRELOAD:-300000}
SUBMITS=${SUBMITS:-500}
POLLERS=${POLLERS:-8}
CASES=${CASES:-nolimit limited}
# Where cargo builds (CARGO_TARGET_DIR, else ./target).
TARGET=${CARGO_TARGET_DIR:-target}
[ -n "${FAIRSCHED_BIN:-}" ] || BIN=$TARGET/release/fairsched
LOAD=$TARGET/release/examples/broker_anonymous

if [ -z "${FAIRSCHED_BIN:-}" ]; then
    echo "building: cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_anonymous" >&2
    cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_anonymous >&2
else
    echo "measuring $BIN (FAIRSCHED_BIN); building the load generator only" >&2
    cargo build --release -p fairsched --example broker_anonymous >&2
fi
[ -x "$BIN" ] || die "$BIN was not built"
[ -x "$LOAD" ] || die "$LOAD was not built"

# $tmpdir, and $pids (what this script starts): stopped and removed on exit.
with_tmpdir

mkdir -p bench/results
out=bench/results/broker-anonymous.txt
results=$tmpdir/results
: > "$results"

# run_case LABEL SERVE_ARGS…
run_case() {
    local label=$1
    shift
    local dir=$tmpdir/$label
    mkdir -p "$dir"
    local user url wtoken broker_pid
    start_broker "$dir" "$@"
    echo "== $label: serve $*; $PRELOAD waiting tasks, $SUBMITS submissions per phase, $POLLERS readers" >&2
    "$LOAD" --broker "$url" --token "$user" --preload "$PRELOAD" --submits "$SUBMITS" \
        --pollers "$POLLERS" --label "$label" | tee "$dir/load.out" >&2
    grep '^RESULT' "$dir/load.out" >> "$results"
    kill -TERM "$broker_pid" 2> /dev/null || true
    wait "$broker_pid" 2> /dev/null || true
    pids=()
}

for c in $CASES; do
    case $c in
        nolimit) run_case nolimit --anonymous-rate 0 ;;
        limited) run_case limited ;;
        old) run_case old ;;
        *) die "CASES: unknown case '$c' (nolimit, limited, old)" ;;
    esac
done

{
    echo "bash bench/broker-anonymous.sh (PRELOAD=$PRELOAD SUBMITS=$SUBMITS POLLERS=$POLLERS)"
    machine_line
    echo "cpu: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo
    echo "submission latency (one-task POST /v1/tasks, one after the other), ms; readers: GET /v1/dashboard replies/s"
    python3 - "$results" << 'EOF'
import sys

rows = [dict(f.split("=", 1) for f in line.split()[1:]) for line in open(sys.argv[1])]
print(f"{'case':<9}{'phase':<8}{'p50':>8}{'p99':>9}{'max':>9}{'200/s':>9}{'429/s':>9}{'reads':>8}{'builds':>8}")
for r in rows:
    print(f"{r['label']:<9}{r['phase']:<8}{float(r['p50_ms']):>8.2f}{float(r['p99_ms']):>9.2f}{float(r['max_ms']):>9.2f}"
          f"{float(r['polls_ok_per_s']):>9.0f}{float(r['polls_429_per_s']):>9.0f}{r['broker_reads']:>8}{r['dashboard_builds']:>8}")
print("reads: the broker thread's reads for HTTP requests during the phase (the submissions' token lookups are cached);")
print("builds: dashboard snapshots it built (- : a broker without these counters)")
EOF
} | tee "$out"
