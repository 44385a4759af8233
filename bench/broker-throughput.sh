#!/usr/bin/env bash
# The live broker's throughput, end to end over HTTP with the durable log on
# (SQLite WAL, synchronous = FULL: every acknowledged request is fsynced).
# For each case, in a fresh temporary directory: `fairsched admin init`,
# `fairsched serve --listen 127.0.0.1:0`, one organization, one user,
# WORKERS workers of SLOTS slots each (64 slots by default), then the load
# generator crates/fairsched/examples/broker_load.rs submits N tasks from
# CLIENTS client threads in requests of B tasks and polls /v1/status until
# every task has completed. Per case: tasks/s from the first submission to the
# last completion, p50/p99 of the submit latency (each POST /v1/tasks as the
# client sees it), and the broker's group commits and steps (/metrics).
#
#   noop     workers with --executor noop (report the phases and exit 0 at
#            once, no process): the broker alone            target ≥ 5,000 tasks/s
#   process  the process executor running `true` (setup, exec, directory per
#            run, a cgroup where the machine allows): the broker and the runs'
#            guards and shells on the same 2 cores      target ≥ 1,000 tasks/s
#
#   bash bench/broker-throughput.sh                  # from any directory
#   RUNS=5 BATCHES="1 10 100" CLIENTS=16 bash bench/broker-throughput.sh
#   NOOP_TASKS=50000 PROC_TASKS=5000 MODES=noop bash bench/broker-throughput.sh
#   PERF=1 bash bench/broker-throughput.sh           # also `perf record` the broker (noop cases)
#   KEEP_TMP=1 bash bench/broker-throughput.sh       # keep the databases, logs (and perf.data)
#   WORKER_ARGS="--cgroups off" bash bench/broker-throughput.sh   # more flags for each worker
#   TMPDIR=/mnt/fs bash bench/broker-throughput.sh   # databases and run directories there
#   RUN_DIRS=/mnt/fs bash bench/broker-throughput.sh # only the workers' run directories there
#
# The file system of the run directories matters: on an ext4 without a
# journal (this VM's root), each inode freed in the last minute is skipped
# one by one at every creation (`recently_deleted`), so a case run soon
# after another's files were removed is slower (bench/README.md).
#
# Writes bench/results/broker-throughput.txt (and, with PERF=1,
# bench/results/broker-perf-<case>.txt: the broker's top symbols and its
# time by call stack).
# Exit status: 0 when every case completed all its tasks and met its target
# (median over RUNS), 1 otherwise.

source "$(dirname "$0")/lib.sh"

WORKERS=${WORKERS:-4}
SLOTS=${SLOTS:-16}
CLIENTS=${CLIENTS:-8}
BATCHES=${BATCHES:-1 100}
MODES=${MODES:-noop process}
NOOP_TASKS=${NOOP_TASKS:-20000}
PROC_TASKS=${PROC_TASKS:-3000}
RUNS=${RUNS:-3}
TARGET_TPS=5000
PROC_TARGET_TPS=1000
LOAD=target/release/examples/broker_load

echo "building: cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_load" >&2
cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_load >&2
[ -x "$BIN" ] || die "$BIN was not built"
[ -x "$LOAD" ] || die "$LOAD was not built"
command -v curl > /dev/null || die "curl is missing (used to read /metrics)"
if [ -n "${PERF:-}" ]; then
    command -v perf > /dev/null || die "PERF=1 but perf is not installed"
fi

# $tmpdir, and $pids (what this script starts): stopped and removed on exit.
with_tmpdir
# The run directories made under RUN_DIRS: removed on exit too.
run_dirs=()
trap 'cleanup; [ ${#run_dirs[@]} -eq 0 ] || rm -rf "${run_dirs[@]}"' EXIT

mkdir -p bench/results
out=bench/results/broker-throughput.txt
results=$tmpdir/results
: > "$results"
failed=0

# cpu_s PID…: user + system CPU seconds of these processes and of their
# children they have waited for (a zygote's guards, and their shells).
cpu_s() {
    local p t=0 tck
    tck=$(getconf CLK_TCK)
    for p in "$@"; do
        t=$((t + $(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2> /dev/null || echo 0)))
    done
    awk -v t="$t" -v k="$tck" 'BEGIN { printf "%.2f", t / k }'
}

# children_s FILE: user + system CPU seconds of the children this shell has
# waited for (the second line of bash's `times`, run here and not in a
# subshell, whose own children would be none), from its output saved in FILE.
children_s() {
    awk 'NR == 2 {
        t = 0
        for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] }
        printf "%.3f", t
    }' "$1"
}

# busy_s: CPU seconds the whole machine has spent busy since boot (user, nice,
# system, irq, softirq, steal), to tell how much other work ran beside a case.
busy_s() {
    awk -v k="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / k }' /proc/stat
}

# perf_summary PERF_DATA: the broker's self time (top 15 symbols), then every
# sample of the broker (all its threads = 100%) put in one bucket by its call
# stack (DWARF): the copy and the drop of the scheduler that
# `Scheduler::step_atomic` makes at each step, the step itself, the log
# (`Live::commit_with` around SQLite and fsync), `/v1/status`, the rest of
# the broker thread, and the HTTP threads.
perf_summary() {
    local rep=$1.report
    perf report -i "$1" --no-children --sort symbol --stdio > "$rep" 2> /dev/null || true
    echo "self time (top 15):"
    grep -E '^ +[0-9.]+%' "$rep" | sed -E 's/ +- +- *$//; s/ +$//' | cut -c1-140 | head -15 || true
    echo "by call stack:"
    perf script -i "$1" -F ip,sym 2> /dev/null > "$rep" || true
    python3 - "$rep" << 'EOF'
import sys
from collections import Counter

samples, cur = [], []
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if not line:
        if cur:
            samples.append(cur)
        cur = []
    else:
        cur.append(line.split(" ", 1)[1] if " " in line else line)
if cur:
    samples.append(cur)
buckets = Counter()
for stack in samples:  # innermost frame first
    kind = None
    for f in stack:
        low = f.lower()
        if kind is None and "clone" in low and "clone3" not in low:
            kind = "copy of the scheduler"
        if kind is None and ("drop_in_place" in f or "Drop>::drop" in f or "free" in low):
            kind = "drop of that copy"
        if "step_atomic" in f:
            buckets["Scheduler::step_atomic: " + (kind or "the step itself")] += 1
            break
        if "commit_with" in f or "append_with" in f:
            buckets["Live::commit_with: the log (SQLite, fsync)"] += 1
            break
        if "Broker::status" in f:
            buckets["Broker::status (GET /v1/status)"] += 1
            break
        if "http::actor" in f:
            buckets["broker thread, other (plan, apply, poll, reads)"] += 1
            break
    else:
        buckets["HTTP threads (tokio, axum, hyper), kernel"] += 1
n = max(len(samples), 1)
for k, v in buckets.most_common():
    print(f"{100 * v / n:6.1f}%  {k}")
print(f"({len(samples)} samples)")
EOF
    rm -f "$rep"
}

# run_case LABEL EXECUTOR TASKS BATCH RUN
run_case() {
    local label=$1 executor=$2 tasks=$3 batch=$4 run=$5
    local dir=$tmpdir/$label-$run
    mkdir -p "$dir"
    local user wtoken url i broker_pid
    start_broker "$dir"
    local worker_pids=()
    local runs_in=$dir
    if [ -n "${RUN_DIRS:-}" ]; then
        runs_in=$(mktemp -d "$RUN_DIRS/broker-throughput.XXXXXX")
        run_dirs+=("$runs_in")
    fi
    for i in $(seq "$WORKERS"); do
        mkdir -p "$runs_in/w$i"
        RUST_LOG=warn "$BIN" worker --broker "$url" --token "$wtoken" --slots "$SLOTS" \
            ${WORKER_ARGS:-} --executor "$executor" --workdir "$runs_in/w$i" --host "w$i" > "$dir/w$i.log" 2>&1 &
        worker_pids+=($!)
        pids+=($!)
    done
    local want=$((WORKERS * SLOTS)) have=0
    for i in $(seq 300); do
        have=$(curl -fsS "$url/metrics" 2> /dev/null | awk '$1 == "fairsched_slots" { print $2 }' || true)
        [ "${have:-0}" -ge "$want" ] && break
        sleep 0.1
    done
    [ "${have:-0}" -ge "$want" ] || die "only ${have:-0} of $want slots joined within 30 s (see $dir/w*.log)"

    local perf_pid=""
    if [ -n "${PERF:-}" ] && [ "$executor" = noop ]; then
        perf record -F 499 --call-graph dwarf -o "$dir/perf.data" -p "$broker_pid" > /dev/null 2> "$dir/perf.err" &
        perf_pid=$!
        pids+=("$perf_pid")
        sleep 0.5
    fi
    echo "== $label (run $run of $RUNS): $tasks tasks, batch $batch, $CLIENTS clients, $WORKERS workers x $SLOTS slots, executor $executor" >&2
    local broker_cpu0 workers_cpu0 broker_cpu workers_cpu client_cpu
    local busy0 others
    busy0=$(busy_s)
    broker_cpu0=$(cpu_s "$broker_pid")
    workers_cpu0=$(cpu_s "${worker_pids[@]}")
    # In the background, so that a signal stops the script (and it) at once;
    # its CPU is the change in the CPU of the shell's reaped children.
    local load_pid
    times > "$dir/times0"
    "$LOAD" --broker "$url" --token "$user" --tasks "$tasks" --clients "$CLIENTS" --batch "$batch" \
        --label "$label" > "$dir/load.out" 2> "$dir/load.err" &
    load_pid=$!
    pids+=("$load_pid")
    if ! wait "$load_pid"; then
        failed=1
        echo "FAILED: $label: $(cat "$dir/load.err")" >&2
    fi
    times > "$dir/times1"
    local keep=() p
    for p in "${pids[@]}"; do [ "$p" = "$load_pid" ] || keep+=("$p"); done
    pids=("${keep[@]}")
    client_cpu=$(awk -v a="$(children_s "$dir/times1")" -v b="$(children_s "$dir/times0")" \
        'BEGIN { printf "%.2f", a - b }')
    broker_cpu=$(awk -v a="$(cpu_s "$broker_pid")" -v b="$broker_cpu0" 'BEGIN { printf "%.2f", a - b }')
    # With their guards' zygotes (started at their first run), whose
    # reaped guards and shells the workers have not waited for.
    local zygotes=() w
    for w in "${worker_pids[@]}"; do
        while read -r p; do zygotes+=("$p"); done < <(pgrep -P "$w" || true)
    done
    workers_cpu=$(awk -v a="$(cpu_s "${worker_pids[@]}" "${zygotes[@]}")" -v b="$workers_cpu0" 'BEGIN { printf "%.2f", a - b }')
    others=$(awk -v a="$(busy_s)" -v b="$busy0" -v c="$broker_cpu" -v d="$workers_cpu" -v e="$client_cpu" \
        'BEGIN { o = a - b - c - d - e; printf "%.2f", o < 0 ? 0 : o }')
    cat "$dir/load.out" >&2
    echo "cpu (user+sys)       broker $broker_cpu s, workers $workers_cpu s, load generator $client_cpu s, the rest of the machine $others s" >&2
    if grep -q '^RESULT' "$dir/load.out"; then
        echo "$(grep '^RESULT' "$dir/load.out") broker_cpu=$broker_cpu workers_cpu=$workers_cpu client_cpu=$client_cpu others_cpu=$others" >> "$results"
    fi
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2> /dev/null || true
        wait "$perf_pid" 2> /dev/null || true
        perf_summary "$dir/perf.data" > "bench/results/broker-perf-$label.txt"
        [ -n "${KEEP_TMP:-}" ] || rm -f "$dir/perf.data"
        echo "perf of the broker -> bench/results/broker-perf-$label.txt" >&2
        cat "bench/results/broker-perf-$label.txt" >&2
    fi

    # Stop this case's processes: workers first (they leave), then the broker.
    for i in "${worker_pids[@]}"; do kill -TERM "$i" 2> /dev/null || true; done
    for i in "${worker_pids[@]}"; do wait "$i" 2> /dev/null || true; done
    kill -TERM "$broker_pid" 2> /dev/null || true
    wait "$broker_pid" 2> /dev/null || true
    pids=()
}

for run in $(seq "$RUNS"); do
    for mode in $MODES; do
        for b in $BATCHES; do
            case $mode in
                noop) run_case "noop-b$b" noop "$NOOP_TASKS" "$b" "$run" ;;
                process) run_case "process-b$b" process "$PROC_TASKS" "$b" "$run" ;;
                *) die "MODES: unknown mode '$mode' (noop, process)" ;;
            esac
        done
    done
done

{
    echo "bash bench/broker-throughput.sh (WORKERS=$WORKERS SLOTS=$SLOTS CLIENTS=$CLIENTS)"
    machine_line
    echo "cpu: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo
    python3 - "$TARGET_TPS" "$results" "$RUNS" "$PROC_TARGET_TPS" << 'EOF'
import statistics, sys

target, runs, proc_target = float(sys.argv[1]), int(sys.argv[3]), float(sys.argv[4])
rows = [dict(f.split("=", 1) for f in line.split()[1:]) for line in open(sys.argv[2])]
cols = [("tasks", 7, "{}"), ("batch", 6, "{}"), ("requests", 9, "{}"), ("secs", 7, "{:.2f}"),
        ("tps", 9, "{:,.0f}"), ("p50_ms", 9, "{:.2f}"), ("p99_ms", 9, "{:.2f}"),
        ("commits", 8, "{}"), ("steps", 7, "{}"), ("steps_per_commit", 7, "{:.1f}"),
        ("broker_cpu", 8, "{:.2f}"), ("workers_cpu", 8, "{:.2f}"), ("client_cpu", 7, "{:.2f}"),
        ("others_cpu", 7, "{:.2f}")]
print("tasks/s: first submission to last completion; submit p50/p99: each POST /v1/tasks, ms;")
print("commits, steps: the broker's group commits and core steps (/metrics); cpu: user+sys s during the run")
print("(others: CPU s the rest of the machine used meanwhile: other work disturbs a run when it is not ~0)")
head = ["tasks", "batch", "requests", "secs", "tasks/s", "p50 ms", "p99 ms", "commits", "steps",
        "st/com", "cpu:brk", "workers", "client", "others"]
print(f"{'case':<20}" + "".join(f"{h:>{w}}" for h, (_, w, _) in zip(head, cols)))
labels = list(dict.fromkeys(r["label"] for r in rows))
medians = {}
for label in labels:
    mine = [r for r in rows if r["label"] == label]
    for r in mine:
        r["steps_per_commit"] = int(r["steps"]) / max(int(r["commits"]), 1)
    for i, r in enumerate(mine, 1):
        name = f"{label} #{i}" if len(mine) > 1 else label
        print(f"{name:<20}" + "".join(f"{fmt.format(float(r[k]) if '.' in fmt else r[k]):>{w}}"
                                    for k, w, fmt in cols))
    if len(mine) > 1:
        med = {k: statistics.median(float(r[k]) for r in mine) for k, _, _ in cols}
        print(f"{label + ' median':<20}" + "".join(
            f"{(fmt.format(med[k]) if '.' in fmt else format(round(med[k]))):>{w}}" for k, w, fmt in cols))
        medians[label] = med["tps"]
    else:
        medians[label] = float(mine[0]["tps"])
print()
for label in labels:
    goal = target if label.startswith("noop") else proc_target
    tps = medians[label]
    verdict = "met" if tps >= goal else f"MISSED ({tps / goal:.0%} of the target)"
    what = "median tasks/s" if runs > 1 else "tasks/s"
    kind = label.split("-")[0]
    print(f"target ({kind}, 64 slots): >= {goal:,.0f} tasks/s; {label}: {tps:,.0f} {what} - {verdict}")
print("for scale: a single-node Slurm does ~10-40 trivial jobs/s; DIRAC's next matcher targets 200-1,000 matches/s")
EOF
} | tee "$out"

# The verdict: every case completed all its tasks, and none missed its target.
grep -q 'MISSED' "$out" && failed=1
exit "$failed"
