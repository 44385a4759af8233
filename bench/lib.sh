# Shared by the bench/*.sh scripts (sourced, not run). Puts the shell at the
# repository root and defines the helpers below.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$(pwd)
SWF_DIR=../shared/data/traces/swf
# FAIRSCHED_BIN=/path/to/fairsched measures another build (an older commit's,
# for a before/after) instead of building this checkout's.
BIN=${FAIRSCHED_BIN:-${CARGO_TARGET_DIR:-target}/release/fairsched}

die() {
    echo "error: $*" >&2
    exit 1
}

# The logs live next to the repository, in ../shared (not in git).
need_shared() {
    [ -d ../shared ] || die "../shared is missing (looked for $(dirname "$REPO_ROOT")/shared): the SWF logs live in ../shared/data/traces/swf/"
    [ -d "$SWF_DIR" ] || die "$SWF_DIR is missing (expected the SWF logs there)"
}

# GNU time (for peak RSS); installed with apt-get if missing.
need_gnu_time() {
    if [ ! -x /usr/bin/time ]; then
        echo "/usr/bin/time is missing: installing GNU time (apt-get update && apt-get install -y time)" >&2
        command -v apt-get > /dev/null || die "/usr/bin/time is missing and apt-get is not available: install GNU time"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update
        $sudo apt-get install -y time
    fi
    # Captured first: `grep -q` closing the pipe early makes `time` die of
    # SIGPIPE, which `pipefail` turns into a failure.
    local probe
    probe=$(/usr/bin/time -v true 2>&1 || true)
    case "$probe" in
        *"Maximum resident set size"*) ;;
        *) die "/usr/bin/time is not GNU time (no -v): install the 'time' package" ;;
    esac
}

build_release() {
    if [ -n "${FAIRSCHED_BIN:-}" ]; then
        [ -x "$BIN" ] || die "FAIRSCHED_BIN=$BIN is not an executable"
        echo "measuring $BIN (FAIRSCHED_BIN), not this checkout's build" >&2
        return
    fi
    echo "building: cargo build --release -p fairsched" >&2
    cargo build --release -p fairsched >&2
    [ -x "$BIN" ] || die "$BIN was not built"
}

# time_fields FILE: prints "wall_s cpu_s rss_mib" from a `/usr/bin/time -v -o FILE` report
# (wall clock, user+system CPU, maximum resident set size).
time_fields() {
    awk -F': ' '
        /Elapsed \(wall clock\) time/ {
            n = split($2, p, ":"); wall = 0
            for (i = 1; i <= n; i++) wall = wall * 60 + p[i]
        }
        /User time \(seconds\)/ { user = $2 }
        /System time \(seconds\)/ { sys = $2 }
        /Maximum resident set size \(kbytes\)/ { rss = $2 }
        END { printf "%.2f %.2f %.1f\n", wall, user + sys, rss / 1024 }
    ' "$1"
}

# json_field FILE KEY: one top-level field of a JSON file.
json_field() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# median: the median of the numbers on stdin (one a line).
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

machine_line() {
    local rev
    rev=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2> /dev/null || echo "?")
    if ! git -C "$REPO_ROOT" diff --quiet 2> /dev/null; then rev="$rev+uncommitted"; fi
    [ -n "${FAIRSCHED_BIN:-}" ] && rev="$rev (measuring FAIRSCHED_BIN=$FAIRSCHED_BIN)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg); commit: $rev"
}

# measure STDOUT CMD...: runs CMD once, its standard output to STDOUT (a
# file, or /dev/null), and prints "wall_s cpu_s peak_rss_mib": wall time on
# the monotonic clock and user+system CPU time to the microsecond (GNU
# time's are to the hundredth, too coarse for a 0.07 s zcat), peak RSS of
# the command (getrusage of the child). Exits non-zero if CMD does.
measure() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
with open(out, "wb") as f:
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=f).returncode
    wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.4f} {r.ru_utime + r.ru_stime:.4f} {r.ru_maxrss / 1024:.1f}")
sys.exit(rc)
PY
}

# quiet_line: the load average and whether a fuzzer or a build is running
# (they disturb timings: compare CPU time and RSS, re-run wall-clock ratios
# when the machine is quiet).
quiet_line() {
    local busy=""
    pgrep -f 'libfuzzer|cargo-fuzz' > /dev/null 2>&1 && busy="$busy fuzzer"
    pgrep -x rustc > /dev/null 2>&1 && busy="$busy rustc"
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg); busy:${busy:- nothing else}"
}

# A temporary directory ($tmpdir) and the pids of the processes a script
# starts in it ($pids, `pids+=($!)`): on exit, or Ctrl-C, every one is
# stopped by its pid and the directory removed (KEEP_TMP=1 keeps it).
with_tmpdir() {
    tmpdir=$(mktemp -d)
    pids=()
    trap cleanup EXIT
    trap 'exit 130' INT TERM
}

# Stops what the script started (by pid), then removes $tmpdir.
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    pids=()
    if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmpdir" >&2; else rm -rf "$tmpdir"; fi
}

# start_broker DIR [SERVE ARGS…]: `admin init` DIR/fairsched.db, `serve` it on
# a free port (its pid added to $pids), an organization `bench`, a user `alice`
# and a worker token; sets url, admin, user, wtoken, broker_pid (the broker
# benchmarks share it).
start_broker() {
    local dir=$1 i
    shift
    mkdir -p "$dir"
    admin=$("$BIN" admin init --db "$dir/fairsched.db")
    # Made here: the background shell may not have opened it when sed looks.
    : > "$dir/serve.out"
    "$BIN" serve --db "$dir/fairsched.db" --listen 127.0.0.1:0 "$@" > "$dir/serve.out" 2> "$dir/serve.err" &
    broker_pid=$!
    pids+=("$broker_pid")
    url=""
    for i in $(seq 300); do
        url=$(sed -n 's/^listening on //p' "$dir/serve.out")
        [ -n "$url" ] && break
        kill -0 "$broker_pid" 2> /dev/null || die "fairsched serve exited: $(cat "$dir/serve.err")"
        sleep 0.1
    done
    [ -n "$url" ] || die "fairsched serve did not print 'listening on' within 30 s"
    "$BIN" admin org add bench --broker "$url" --token "$admin" > /dev/null
    user=$("$BIN" admin user add alice --org bench --broker "$url" --token "$admin")
    wtoken=$("$BIN" admin worker-token --org bench --broker "$url" --token "$admin")
}
