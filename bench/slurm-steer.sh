#!/usr/bin/env bash
# The steering controller's cost per cycle against the number of pending
# jobs, on a real Slurm (the single-node cluster of .ci/slurm-setup.sh with
# WITH_DBD=1 and TEST_ACCOUNTS; as root). For each size N (SIZES, default
# "1000 3000 10000"): a 16-CPU job of bob's fills the cluster, then N jobs
# wait, as job arrays of alice (physics) and carol (chemistry) in turn;
# `fairsched slurm steer --policy fair-share --cycles CYCLES` runs on them.
# Each cycle's line gives the controller's own time (outside Slurm's
# tools), the time in squeue, sprio and scontrol, the updates sent and the
# scontrol processes that sent them. Targets (issue 40): own time <= 50 ms
# per cycle at 10,000 pending; <= 1 scontrol call per 1,000 changed jobs.
#
#   bash bench/slurm-steer.sh
#   SIZES="1000 10000" CYCLES=4 bash bench/slurm-steer.sh
#
# Each array element the controller gives a factor of its own becomes a job
# record of its own, and records of ended jobs stay for MinJobAge (300 s):
# the sizes one after the other need more than Slurm's default MaxJobCount
# of 10,000 records. Set the cluster up with EXTRA_CONF="MaxJobCount=50000"
# (checked below). The largest size, 9,984 pending jobs, stays under the
# default as one run would.
# Writes bench/results/slurm-steer.txt. Exit 1 when a target is missed.

source "$(dirname "$0")/lib.sh"

SIZES=${SIZES:-"1000 3000 9984"}
CYCLES=${CYCLES:-3}
command -v sinfo > /dev/null || die "no Slurm here (sinfo is missing): bash .ci/slurm-setup.sh with WITH_DBD=1 TEST_ACCOUNTS=\"physics:alice,bob chemistry:carol,dave\""
[ "$(id -u)" = 0 ] || die "run as root (submits jobs as alice, bob and carol)"
max_jobs=$(scontrol show config | awk -F'= ' '/^MaxJobCount/ { print $2 + 0 }')
need=0
for n in $SIZES; do need=$((need + 2 * n)); done
[ "${max_jobs:-0}" -ge "$need" ] || die "MaxJobCount is ${max_jobs:-unknown}; these sizes need $need job records: set the cluster up with EXTRA_CONF=\"MaxJobCount=50000\""
build_release

tmp=$(mktemp -d)
# scancel takes one -u: each user's jobs in turn.
cancel() { for u in alice bob carol; do scancel -u "$u" >/dev/null 2>&1 || true; done; }
trap 'cancel; rm -rf "$tmp"' EXIT
cat > "$tmp/site.toml" <<'TOML'
[[org]]
name = "physics"
procs = 8
users = []

[[org]]
name = "chemistry"
procs = 8
users = []
TOML

idle() {
    for _ in $(seq 600); do
        [ -z "$(squeue -h -o %i)" ] && return 0
        sleep 0.2
    done
    die "Slurm did not empty its queue"
}

out=bench/results/slurm-steer.txt
{
    echo "# bench/slurm-steer.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD), $(sprio --version 2>/dev/null)"
    echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); fair-share, 2 accounts of 8 CPUs each"
    printf "%8s %6s %10s %10s %9s %7s %18s\n" pending cycle own_ms tools_ms updates calls calls_per_1000
} | tee "$out"
fail=0
for n in $SIZES; do
    cancel
    idle
    blocker=$(sbatch --parsable --uid=bob -A physics -n 16 -t 30 -o /dev/null --wrap "sleep 3600")
    for _ in $(seq 100); do
        [ "$(squeue -h -j "$blocker" -o %T)" = RUNNING ] && break
        sleep 0.2
    done
    left=$n
    turn=0
    while [ "$left" -gt 0 ]; do
        k=$(( left > 1000 ? 1000 : left ))
        if [ $((turn % 2)) = 0 ]; then u=alice a=physics; else u=carol a=chemistry; fi
        sbatch --parsable --uid=$u -A $a -t 5 -o /dev/null --array=1-$k --wrap "sleep 1" > /dev/null
        left=$((left - k))
        turn=$((turn + 1))
    done
    got=$(squeue -h -r -t PD -o %i | wc -l)
    [ "$got" = "$n" ] || die "$got jobs pending, expected $n"
    "$BIN" slurm steer --policy fair-share --platform "$tmp/site.toml" --db "$tmp/steer-$n.db" \
        --every 1s --cycles "$CYCLES" > "$tmp/steer-$n.out"
    awk -v n="$n" '
        /^cycle/ {
            c++
            for (i = 1; i <= NF; i++) {
                if ($i == "update" || $i == "updates") up = $(i - 1)
                if ($i == "scontrol") calls = $(i - 1)
                if ($i == "own,") own = $(i - 2)
                if ($i == "Slurm'"'"'s") tools = $(i - 3)
            }
            per = up > 0 ? calls * 1000 / up : 0
            printf "%8d %6d %10.1f %10.1f %9d %7d %18.2f\n", n, c, own, tools, up, calls, per
        }' "$tmp/steer-$n.out" | tee -a "$out"
    if [ "$n" -ge 9000 ]; then
        awk '/^cycle/ { for (i = 1; i <= NF; i++) if ($i == "own,") { if ($(i - 2) > 50) bad = 1 } } END { exit bad }' \
            "$tmp/steer-$n.out" || { echo "target missed: a cycle took over 50 ms of the controller's own time at $n pending" | tee -a "$out"; fail=1; }
    fi
    awk '/^cycle/ { for (i = 1; i <= NF; i++) { if ($i == "update" || $i == "updates") up = $(i - 1); if ($i == "scontrol") calls = $(i - 1) }
                    if (up > 0 && calls > int((up + 999) / 1000)) bad = 1 } END { exit bad }' "$tmp/steer-$n.out" \
        || { echo "target missed: more than 1 scontrol call per 1,000 updates at $n pending" | tee -a "$out"; fail=1; }
done
exit $fail
