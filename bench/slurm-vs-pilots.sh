#!/usr/bin/env bash
# The same TASKS one-second tasks (a) submitted to Slurm directly, as one job
# array (`sbatch --array=0-(TASKS-1) --wrap 'sleep 1'`), and (b) through
# fairsched onto pilots running on the same Slurm (`fairsched pilot slurm`,
# PILOTS jobs of CPUS/PILOTS slots, then `fairsched submit --count TASKS --
# 'sleep 1'`). Prints the completion time of both, the ideal (TASKS / CPUS
# seconds) and the ratio, plus Slurm's own rates on this machine: SUBMIT
# trivial jobs (`sbatch --wrap true`) submitted one by one, and completed.
#
# Needs root and Debian's slurm-wlm: it (re)starts the single-node cluster
# of .ci/slurm-setup.sh with CPUS virtual CPUs when the running one has
# another count (and leaves it running; .ci/slurm-teardown.sh stops it).
#
#   bash bench/slurm-vs-pilots.sh                    # from any directory
#   CPUS=32 TASKS=1000 PILOTS=2 bash bench/slurm-vs-pilots.sh
#   SUBMIT=0 bash bench/slurm-vs-pilots.sh           # skip the submission-rate part
#
# Writes bench/results/slurm-vs-pilots.txt. Exit status 0 when every task
# of both runs completed, 1 otherwise.

source "$(dirname "$0")/lib.sh"

CPUS=${CPUS:-64}
TASKS=${TASKS:-2000}
PILOTS=${PILOTS:-4}
SUBMIT=${SUBMIT:-500}
OUT=$REPO_ROOT/bench/results/slurm-vs-pilots.txt

[ "$(id -u)" -eq 0 ] || die "run as root: it starts Slurm's daemons (.ci/slurm-setup.sh)"
[ $((CPUS % PILOTS)) -eq 0 ] || die "CPUS=$CPUS is not a multiple of PILOTS=$PILOTS"
SLOTS=$((CPUS / PILOTS))
build_release
command -v python3 > /dev/null || die "python3 is missing"

# The cluster: CPUS virtual CPUs on one node.
have=$(sinfo -h -o %c 2> /dev/null | head -n 1 || true)
if [ "$have" != "$CPUS" ]; then
    echo "starting Slurm with $CPUS virtual CPUs (it had: ${have:-none})" >&2
    bash .ci/slurm-teardown.sh > /dev/null 2>&1 || true
    skip=0
    command -v slurmctld > /dev/null && command -v sbatch > /dev/null && skip=1
    SLURM_CPUS=$CPUS SKIP_APT=$skip bash .ci/slurm-setup.sh > /dev/null
fi
[ "$(sinfo -h -o %c | head -n 1)" = "$CPUS" ] || die "Slurm did not come up with $CPUS CPUs"

now() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
# Waits until none of these Slurm jobs is pending, running or completing.
wait_jobs() {
    while [ -n "$(squeue -h -t PD,R,CG,CF -j "$1" -o %i 2> /dev/null | head -n 1)" ]; do sleep 0.2; done
}

tmpdir=$(mktemp -d)
broker_pid=""
cleanup() {
    [ -f "$tmpdir/pilots.json" ] && (cd "$tmpdir" && "$REPO_ROOT/$BIN" pilot cancel --state pilots.json > /dev/null 2>&1 || true)
    [ -n "$broker_pid" ] && kill -TERM "$broker_pid" 2> /dev/null && wait "$broker_pid" 2> /dev/null
    rm -rf "$tmpdir"
}
trap cleanup EXIT

{
    echo "# Slurm alone vs fairsched on pilots: $TASKS × sleep 1 on $CPUS virtual CPUs (ideal $((TASKS / CPUS)) s)"
    machine_line
    echo "slurm: $(sbatch --version), one node, $CPUS CPUs (SlurmdParameters=config_overrides), batch_sched_delay=0"
} | tee "$OUT"

# 0. Slurm's own rates: SUBMIT trivial jobs, one sbatch each.
if [ "$SUBMIT" -gt 0 ]; then
    t0=$(now)
    ids=()
    for _ in $(seq "$SUBMIT"); do ids+=("$(sbatch --parsable -o /dev/null --wrap true)"); done
    t1=$(now)
    list=$(IFS=,; echo "${ids[*]}")
    wait_jobs "$list"
    t2=$(now)
    python3 - "$SUBMIT" "$t0" "$t1" "$t2" <<'PY' | tee -a "$OUT"
import sys
n, t0, t1, t2 = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"slurm, {n} trivial jobs (sbatch --wrap true, one by one): submitted at {n / (t1 - t0):.1f} jobs/s, "
      f"all completed {t2 - t0:.1f} s after the first submission ({n / (t2 - t0):.1f} jobs/s)")
PY
fi

# (a) Slurm alone: one job array of TASKS × sleep 1.
t0=$(now)
job=$(sbatch --parsable -o /dev/null --array=0-$((TASKS - 1)) --wrap 'sleep 1')
wait_jobs "$job"
t1=$(now)
slurm_s=$(elapsed "$t0" "$t1")
echo "(a) slurm job array: $TASKS × sleep 1 completed in $slurm_s s" | tee -a "$OUT"

# (b) fairsched: a broker here, PILOTS pilots of SLOTS slots on Slurm.
cd "$tmpdir"
admin=$("$REPO_ROOT/$BIN" admin init --db fs.db --policy first-fit)
"$REPO_ROOT/$BIN" serve --db fs.db --listen 127.0.0.1:0 --lease 30s > serve.out 2> serve.err &
broker_pid=$!
for _ in $(seq 150); do grep -q '^listening on ' serve.out 2> /dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' serve.out | head -n 1)
[ -n "$url" ] || die "the broker did not start: $(cat serve.err)"
export FAIRSCHED_BROKER=$url
FAIRSCHED_TOKEN=$admin "$REPO_ROOT/$BIN" admin org add bench > /dev/null
user=$(FAIRSCHED_TOKEN=$admin "$REPO_ROOT/$BIN" admin user add bench --org bench)
worker=$(FAIRSCHED_TOKEN=$admin "$REPO_ROOT/$BIN" admin worker-token --org bench)
status() { FAIRSCHED_TOKEN=$admin "$REPO_ROOT/$BIN" status --json | python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
tp=$(now)
FAIRSCHED_TOKEN=$worker "$REPO_ROOT/$BIN" pilot slurm --count "$PILOTS" --slots "$SLOTS" --time 30:00 \
    --dir pilots --state pilots.json > /dev/null
until [ "$(status slots)" = "$CPUS" ]; do sleep 0.2; done
tj=$(now)
FAIRSCHED_TOKEN=$user "$REPO_ROOT/$BIN" submit --count "$TASKS" -- 'sleep 1' > /dev/null
until [ "$(status completed)" = "$TASKS" ]; do
    [ "$(status failed)" = 0 ] || die "tasks failed on the pilots"
    sleep 0.2
done
t1=$(now)
pilots_s=$(elapsed "$tj" "$t1")
join_s=$(elapsed "$tp" "$tj")
echo "(b) fairsched on $PILOTS pilots × $SLOTS slots: $TASKS × sleep 1 completed in $pilots_s s after submission (pilots took $join_s s to start and join, before)" | tee -a "$OUT"
cd "$REPO_ROOT"

python3 - "$TASKS" "$CPUS" "$slurm_s" "$pilots_s" "$join_s" <<'PY' | tee -a "$OUT"
import sys
tasks, cpus = int(sys.argv[1]), int(sys.argv[2])
slurm, pilots, join = map(float, sys.argv[3:])
ideal = tasks / cpus
print(f"ideal {ideal:.1f} s; slurm alone {slurm:.1f} s ({slurm / ideal:.2f}× ideal), "
      f"pilots {pilots:.1f} s ({pilots / ideal:.2f}× ideal), {pilots + join:.1f} s counting the pilots' start; "
      f"slurm / pilots = {slurm / pilots:.2f}")
PY
echo "$(quiet_line)" | tee -a "$OUT"
