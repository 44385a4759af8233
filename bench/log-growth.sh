#!/usr/bin/env bash
# How fast the live broker's durable log grows: bytes of its SQLite database
# per task completed and per worker-hour idle, and what `fairsched admin
# compact` leaves of it.
#
#   tasks  in a fresh temporary directory: `fairsched admin init`, `fairsched
#          serve`, one organization, one user, WORKERS workers of SLOTS slots
#          with --executor noop; the load generator
#          (crates/fairsched/examples/broker_load.rs) submits TASKS tasks from
#          CLIENTS threads in requests of BATCH, and waits until all ended.
#          Growth = the database's size when every task ended minus its size
#          once the workers had registered, over TASKS. Then the broker is
#          stopped (SIGTERM: it writes a snapshot) and, when the binary has
#          it, `fairsched admin compact` runs: the size and steps left.
#   idle   a fresh broker with `--lease LEASE` (a worker heartbeats every
#          lease/3), one worker of 1 slot, no task, for IDLE_S seconds (after
#          it registered). Growth over that window, extrapolated to an hour:
#          × 3600 / IDLE_S, at that lease, and at the default 30 s lease
#          (heartbeats are 1/10 s instead of 1/(LEASE/3): × LEASE / 30 s). An
#          extrapolation, not an hour measured.
#
# Two sizes, read by a second connection while the broker runs (the WAL's
# committed pages count): `pages`, what the file needs, (page_count -
# freelist_count) × page_size, in whole 4 KiB pages; and `bytes`, what those
# pages hold, Σ (pgsize - unused) over SQLite's `dbstat` (cells and their
# headers, no slack: a few small rows show here before they fill a page). The
# steps' own share is the `bytes` of the `steps` table (`seq` is its rowid: no
# index). The files on disk may be larger still (pages freed but not given
# back, a WAL not yet checkpointed).
#
#   bash bench/log-growth.sh
#   TASKS=20000 IDLE_S=120 LEASE=1s bash bench/log-growth.sh
#   FAIRSCHED_BIN=/path/to/older/fairsched bash bench/log-growth.sh   # another build (the load generator is this checkout's)
#   KEEP_TMP=1 bash bench/log-growth.sh
#
# Appends to bench/results/log-growth.txt (one block per run, the binary named).

source "$(dirname "$0")/lib.sh"

TASKS=${TASKS:-10000}
WORKERS=${WORKERS:-4}
SLOTS=${SLOTS:-16}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-1}
IDLE_S=${IDLE_S:-60}
LEASE=${LEASE:-1s}
LOAD=${CARGO_TARGET_DIR:-target}/release/examples/broker_load

if [ -z "${FAIRSCHED_BIN:-}" ]; then
    echo "building: cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_load" >&2
    cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard --example broker_load >&2
else
    echo "measuring $BIN (FAIRSCHED_BIN), not this checkout's build" >&2
    echo "building the load generator: cargo build --release -p fairsched --example broker_load" >&2
    cargo build --release -p fairsched --example broker_load >&2
fi
[ -x "$BIN" ] || die "$BIN was not built"
[ -x "$LOAD" ] || die "$LOAD was not built"
command -v curl > /dev/null || die "curl is missing (used to read /metrics)"

# $tmpdir, and $pids (what this script starts): stopped and removed on exit.
with_tmpdir

# dbsize DB: "pages bytes steps steps_bytes" — the sizes above of DB, its
# rows in `steps`, and the bytes of the `steps` table — read-only, beside a
# running broker.
dbsize() {
    python3 - "$1" << 'EOF'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=10)
pages = c.execute("SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size").fetchone()[0]
used = c.execute("SELECT coalesce(sum(pgsize - unused), 0) FROM dbstat").fetchone()[0]
steps = c.execute("SELECT count(*) FROM steps").fetchone()[0]
sb = c.execute("SELECT coalesce(sum(pgsize - unused), 0) FROM dbstat WHERE name = 'steps'").fetchone()[0]
print(pages, used, steps, sb)
EOF
}

# wait_slots N: until the broker counts N slots (30 s at most).
wait_slots() {
    local i have=0
    for i in $(seq 300); do
        have=$(curl -fsS "$url/metrics" 2> /dev/null | awk '$1 == "fairsched_slots" { print $2 }' || true)
        [ "${have:-0}" -ge "$1" ] && return
        sleep 0.1
    done
    die "only ${have:-0} of $1 slots joined within 30 s"
}

# stop PID…: SIGTERM, then wait for each.
stop() {
    local p
    for p in "$@"; do kill -TERM "$p" 2> /dev/null || true; done
    for p in "$@"; do wait "$p" 2> /dev/null || true; done
}

report=$tmpdir/report
{
    echo "bash bench/log-growth.sh (TASKS=$TASKS WORKERS=$WORKERS SLOTS=$SLOTS CLIENTS=$CLIENTS BATCH=$BATCH IDLE_S=$IDLE_S LEASE=$LEASE)"
    machine_line
    echo "binary: $BIN ($("$BIN" --version))"
} > "$report"

# --- tasks ---------------------------------------------------------------
dir=$tmpdir/tasks
start_broker "$dir"
worker_pids=()
for i in $(seq "$WORKERS"); do
    mkdir -p "$dir/w$i"
    "$BIN" worker --broker "$url" --token "$wtoken" --slots "$SLOTS" --executor noop \
        --workdir "$dir/w$i" --host "w$i" > "$dir/w$i.log" 2>&1 &
    worker_pids+=($!)
    pids+=($!)
done
wait_slots $((WORKERS * SLOTS))
read -r pages0 used0 steps0 sb0 <<< "$(dbsize "$dir/fairsched.db")"
echo "== tasks: $TASKS noop tasks, $WORKERS workers x $SLOTS slots, $CLIENTS clients, batch $BATCH" >&2
"$LOAD" --broker "$url" --token "$user" --tasks "$TASKS" --clients "$CLIENTS" --batch "$BATCH" \
    --label growth > "$dir/load.out" 2> "$dir/load.err" || die "load generator: $(cat "$dir/load.err")"
read -r pages1 used1 steps1 sb1 <<< "$(dbsize "$dir/fairsched.db")"
stop "${worker_pids[@]}"
stop "$broker_pid"
pids=()
read -r pages2 used2 steps2 sb2 <<< "$(dbsize "$dir/fairsched.db")"
compacted="(this binary has no \`admin compact\`)"
if "$BIN" admin compact --help > /dev/null 2>&1; then
    "$BIN" admin compact --db "$dir/fairsched.db" > "$dir/compact.out" 2>&1 || die "admin compact: $(cat "$dir/compact.out")"
    read -r pages3 used3 steps3 sb3 <<< "$(dbsize "$dir/fairsched.db")"
    archive=$(stat -c %s "$dir/fairsched.db.archive" 2> /dev/null || echo 0)
    compacted="after \`admin compact\`: $pages3 B in pages, $used3 B used, $steps3 steps ($sb3 B) kept; the archive's file: $archive B"
fi
python3 - "$TASKS" "$pages0" "$used0" "$steps0" "$sb0" "$pages1" "$used1" "$steps1" "$sb1" "$pages2" "$used2" "$steps2" << 'EOF' >> "$report"
import sys
n, p0, u0, s0, b0, p1, u1, s1, b1, p2, u2, s2 = map(int, sys.argv[1:])
print()
print(f"tasks: {n} completed (noop)")
print(f"  pages: {p0:,} B with the workers registered -> {p1:,} B when all ended: {(p1 - p0) / n:,.0f} B per task")
print(f"  bytes: {u0:,} -> {u1:,}: {(u1 - u0) / n:,.0f} B per task")
print(f"  steps: {s0} -> {s1}: {(s1 - s0) / n:.2f} per task; the steps table: {(b1 - b0) / n:,.0f} B per task "
      f"({(b1 - b0) / max(u1 - u0, 1):.0%} of the bytes; the rest: tasks, outcomes, workers, snapshots)")
print(f"  stopped (a snapshot at shutdown): {p2:,} B in pages, {u2:,} B used, {s2} steps")
EOF
echo "  $compacted" >> "$report"

# --- idle ----------------------------------------------------------------
dir=$tmpdir/idle
start_broker "$dir" --lease "$LEASE"
mkdir -p "$dir/w"
"$BIN" worker --broker "$url" --token "$wtoken" --slots 1 --executor noop \
    --workdir "$dir/w" --host idle > "$dir/w.log" 2>&1 &
wpid=$!
pids+=("$wpid")
wait_slots 1
sleep 1
read -r pages0 used0 steps0 sb0 <<< "$(dbsize "$dir/fairsched.db")"
echo "== idle: one worker, lease $LEASE, ${IDLE_S}s" >&2
sleep "$IDLE_S"
read -r pages1 used1 steps1 sb1 <<< "$(dbsize "$dir/fairsched.db")"
alive=$(kill -0 "$wpid" 2> /dev/null && echo yes || echo no)
stop "$wpid"
stop "$broker_pid"
pids=()
python3 - "$IDLE_S" "$LEASE" "$pages0" "$used0" "$steps0" "$sb0" "$pages1" "$used1" "$steps1" "$sb1" "$alive" << 'EOF' >> "$report"
import re, sys
secs, lease = float(sys.argv[1]), sys.argv[2]
p0, u0, s0, b0, p1, u1, s1, b1 = map(int, sys.argv[3:11])
m = re.fullmatch(r"([0-9.]+)(ms|s|m)", lease)
lease_s = float(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]]
hour = 3600 / secs
print()
print(f"idle: one worker, lease {lease} (a heartbeat every {lease_s / 3:.2f} s), {secs:.0f} s measured (worker alive at the end: {sys.argv[11]})")
print(f"  pages {p0:,} -> {p1:,} B (+{p1 - p0:,}); bytes {u0:,} -> {u1:,} (+{u1 - u0:,}); steps {s0} -> {s1} (+{s1 - s0}), "
      f"the steps table +{b1 - b0:,} B")
print(f"  per worker-hour, extrapolated (x {hour:.0f}): {(u1 - u0) * hour:,.0f} B, {(s1 - s0) * hour:,.0f} steps at lease {lease}; "
      f"{(u1 - u0) * hour * lease_s / 30:,.0f} B, {(s1 - s0) * hour * lease_s / 30:,.0f} steps at the default 30 s lease")
EOF

mkdir -p bench/results
{ cat "$report"; echo; } | tee -a bench/results/log-growth.txt
