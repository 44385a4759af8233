#!/usr/bin/env bash
# fairsched against AccaSim 1.1.3 (a Python HPC workload simulator, PyPI)
# on the same logs with matching semantics, side by side:
#
#   AccaSim FirstInFirstOut  vs  fairsched fcfs   on HPC2N-2002-2.2-cln (240 processors)
#   AccaSim EASYBackfilling  vs  fairsched easy   on KTH-SP2-1996-2.1-cln (100 processors)
#
# Both read the same decompressed log (AccaSim's reader wants a plain file).
# AccaSim runs with a core-only system (120 nodes x 2 cores, 100 x 1) and
# its FirstFit allocator; fairsched with --procs-from requested (AccaSim's
# processor field) and the default --runtime-limit ignore (AccaSim runs every
# job its logged time). Each run is timed by GNU time; makespan, mean wait
# and mean bounded slowdown come from each tool's per-job output through the
# same formulas (bench/peers/compare.py). docs/semantics.md and
# bench/README.md ("Peer simulators") explain the differences that remain.
#
#   bash bench/peers/accasim.sh                 # full logs (AccaSim needs a few minutes on HPC2N)
#   MAX_JOBS=20000 bash bench/peers/accasim.sh  # the first 20,000 job lines of each log
#   CASES=easy bash bench/peers/accasim.sh      # one case: fifo or easy
#   KEEP=1 ...                                  # keep the per-job files (the folder is printed)
#
# The virtualenv is created once in $ACCASIM_VENV (default
# ${TMPDIR:-/tmp}/fairsched-accasim-venv) with `pip install accasim==1.1.3`.
# Writes bench/results/peers-accasim.txt.

source "$(dirname "$0")/../lib.sh"

ACCASIM_VERSION=1.1.3
VENV=${ACCASIM_VENV:-${TMPDIR:-/tmp}/fairsched-accasim-venv}
MAX_JOBS=${MAX_JOBS:-}
CASES=${CASES:-fifo easy}
PEERS=bench/peers

need_shared
# GNU time, checked without a pipe (lib.sh's need_gnu_time pipes `time -v`
# into `grep -q`, which under pipefail fails now and then on SIGPIPE); when
# it is missing or not GNU time, need_gnu_time installs it or says why.
time_check=$(mktemp)
if ! { /usr/bin/time -v true > /dev/null 2> "$time_check" && grep -q "Maximum resident set size" "$time_check"; }; then
    need_gnu_time
fi
rm -f "$time_check"
command -v python3 > /dev/null || die "python3 is missing (AccaSim is a Python package)"
build_release

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('accasim') != '$ACCASIM_VERSION')" 2> /dev/null; then
    echo "creating $VENV: python3 -m venv, pip install accasim==$ACCASIM_VERSION" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "accasim==$ACCASIM_VERSION" >&2
fi
acc_python=$("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])')
acc_packages=$("$VENV/bin/python" -m pip freeze --disable-pip-version-check 2> /dev/null | tr '\n' ' ' | sed 's/ $//')

work=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then
    echo "keeping the per-job files in $work" >&2
else
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p bench/results
out=bench/results/peers-accasim.txt

# case: name, log, AccaSim policy, fairsched policy, nodes, cores per node,
# and a diagnostic fairsched policy ("-": none). AccaSim's EASYBackfilling
# lets any job that fits start at once (it never protects the head's
# reservation, see docs/semantics.md): fairsched's greedy first fit (`first-fit`)
# shows how close that is.
case_line() {
    case "$1" in
        fifo) echo "fifo HPC2N-2002-2.2-cln FirstInFirstOut fcfs 120 2 -" ;;
        easy) echo "easy KTH-SP2-1996-2.1-cln EASYBackfilling easy 100 1 first-fit" ;;
        *) die "unknown case $1 (fifo or easy)" ;;
    esac
}

{
    echo "fairsched against AccaSim $ACCASIM_VERSION (Python $acc_python), same logs, matching semantics"
    echo "accasim virtualenv: $acc_packages"
    echo "logs: ${MAX_JOBS:+the first $MAX_JOBS job lines of }$SWF_DIR/<log>.swf.gz, decompressed once, read by both"
    echo "accasim:   $VENV/bin/python $PEERS/accasim_run.py --swf <log>.swf --policy fifo|easy --nodes N --cores C --out DIR"
    echo "fairsched: $BIN simulate --trace <log>.swf --policy fcfs|easy --procs N*C --procs-from requested --no-progress --out DIR"
    echo "figures: $PEERS/compare.py on each tool's per-job output (makespan = last end - first submit;"
    echo "  bsld = mean of max(1, (end - submit) / max(end - start, 10 s)) over all jobs; same_start = jobs"
    echo "  starting at the same second in both); CPU = user + system, RSS = peak resident set (GNU time -v;"
    echo "  AccaSim's output writers run in forked processes, counted in its CPU time)"
    machine_line
    echo
    printf '%-34s %-9s %7s %11s %11s %10s %9s %10s %8s %8s %8s\n' \
        case tool jobs makespan_s mean_wait_s max_wait_s mean_bsld same_start wall_s cpu_s rss_MiB
} | tee "$out"

for c in $CASES; do
    read -r name log acc_policy our_policy nodes cores diagnostic < <(case_line "$c")
    gz=$SWF_DIR/$log.swf.gz
    [ -f "$gz" ] || die "$gz is missing"
    swf=$work/$log.swf
    if [ -n "$MAX_JOBS" ]; then
        zcat "$gz" | awk -v n="$MAX_JOBS" '/^[[:space:]]*;/ || NF == 0 { print; next } ++k <= n' > "$swf"
    else
        zcat "$gz" > "$swf"
    fi
    procs=$((nodes * cores))

    echo "[$c] AccaSim $acc_policy on $log ($nodes nodes x $cores cores)..." >&2
    if ! /usr/bin/time -v -o "$work/$c.accasim.time" \
        "$VENV/bin/python" "$PEERS/accasim_run.py" --swf "$swf" --policy "$c" \
        --nodes "$nodes" --cores "$cores" --out "$work/$c-accasim" \
        > "$work/$c.accasim.out" 2>&1; then
        cat "$work/$c.accasim.out" "$work/$c.accasim.time" >&2
        die "AccaSim failed on $log"
    fi
    echo "[$c] fairsched $our_policy on $log ($procs processors)..." >&2
    if ! /usr/bin/time -v -o "$work/$c.ours.time" \
        "$BIN" simulate --trace "$swf" --policy "$our_policy" --procs "$procs" \
        --procs-from requested --no-progress --out "$work/$c-ours" \
        > "$work/$c.ours.out" 2>&1; then
        cat "$work/$c.ours.out" "$work/$c.ours.time" >&2
        die "fairsched failed on $log"
    fi

    read -r acc_wall acc_cpu acc_rss < <(time_fields "$work/$c.accasim.time")
    read -r our_wall our_cpu our_rss < <(time_fields "$work/$c.ours.time")
    python3 "$PEERS/compare.py" --accasim "$work/$c-accasim/jobs.csv" --ours "$work/$c-ours/tasks.csv" \
        > "$work/$c.figures"
    row() {
        printf '%-34s %-9s %7s %11s %11s %10s %9s %10s %8s %8s %8s\n' "$@" | tee -a "$out"
    }
    while read -r tool jobs makespan wait max_wait bsld same; do
        if [ "$tool" = accasim ]; then
            row "$name: $log" "$tool" "$jobs" "$makespan" "$wait" "$max_wait" "$bsld" "$same" "$acc_wall" "$acc_cpu" "$acc_rss"
        else
            row "$name: $log" "$tool" "$jobs" "$makespan" "$wait" "$max_wait" "$bsld" "$same" "$our_wall" "$our_cpu" "$our_rss"
        fi
    done < "$work/$c.figures"
    if [ "$diagnostic" != - ]; then
        /usr/bin/time -v -o "$work/$c.diag.time" \
            "$BIN" simulate --trace "$swf" --policy "$diagnostic" --procs "$procs" \
            --procs-from requested --no-progress --out "$work/$c-diag" > /dev/null 2>&1 \
            || die "fairsched $diagnostic failed on $log"
        read -r wall cpu rss < <(time_fields "$work/$c.diag.time")
        python3 "$PEERS/compare.py" --accasim "$work/$c-accasim/jobs.csv" --ours "$work/$c-diag/tasks.csv" \
            | tail -1 | {
            read -r _ jobs makespan wait max_wait bsld same
            row "  (diagnostic: fairsched $diagnostic)" fairsched "$jobs" "$makespan" "$wait" "$max_wait" "$bsld" "$same" "$wall" "$cpu" "$rss"
        }
    fi
    {
        echo "  AccaSim's own statistics ($acc_policy): $(grep -E 'Total jobs|Makespan|Avg' "$work/$c-accasim"/stats-* | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
        notes=$(grep -E '^filters:|job\(s\)|task\(s\)' "$work/$c.ours.out" | tr '\n' ' ' | sed 's/ $//' || true)
        echo "  fairsched notes: ${notes:-none}"
    } | tee -a "$out"
done
echo "wrote $out" >&2
