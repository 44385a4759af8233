#!/usr/bin/env bash
# The Python package (crates/fairsched-py: a wheel built with maturin)
# against the CLI, the Rust policies and AccaSim:
#
#   (a) simulate: fairsched.simulate(HPC2N-2002, policies=["fcfs"]) plus the
#       tasks DataFrame, in process, against the CLI's
#       `fairsched simulate --trace LOG --policy fcfs --out DIR --no-progress`
#       (wall time, medians of ROUNDS alternated rounds; target: Python
#       <= 1.1 x the CLI);
#   (b) policy: a first-fit Order policy written in Python against the Rust
#       `first-fit` on the bundled KTH-SP2 log: decisions per second (picks
#       that start a task), and the same schedule (every task's start);
#   (c) env: fairsched.gym.SchedulingEnv steps per second over the whole
#       KTH-SP2 log with a first-fit agent, against AccaSim 1.1.3's FIFO
#       replay of the same log (jobs started, dispatcher calls and time
#       points per second, wall time); the env once more pinned to one CPU
#       (taskset -c 0), as its two threads hand every decision over.
#
#   bash bench/python.sh
#   ROUNDS=15 POLICY_ROUNDS=9 ACCASIM_RUNS=1 bash bench/python.sh
#   PARTS='simulate policy' bash bench/python.sh     # some of: simulate policy env accasim
#   NO_BUILD=1 bash bench/python.sh                  # reuse $PY_VENV as it is (no cargo, no maturin)
#
# It builds what it needs: the CLI (cargo build --release -p fairsched, see
# lib.sh), the wheel (`maturin build --release` of pyproject.toml at the
# repository root, maturin from PyPI) installed into a fresh virtualenv
# $PY_VENV (default ${TMPDIR:-/tmp}/fairsched-py-bench-venv, made anew at
# each run, with gymnasium), and AccaSim 1.1.3 from PyPI in $ACCASIM_VENV
# (default ${TMPDIR:-/tmp}/fairsched-accasim-venv, shared with
# bench/peers/accasim.sh, created once). The decompressed log AccaSim reads
# goes to a temporary folder, removed at the end.
# Writes bench/results/python.txt (see bench/README.md, "The Python package").

source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-9}
POLICY_ROUNDS=${POLICY_ROUNDS:-5}
ACCASIM_RUNS=${ACCASIM_RUNS:-3}
PARTS=${PARTS:-simulate policy env accasim}
PYTHON=${PYTHON:-python3}
PY_VENV=${PY_VENV:-${TMPDIR:-/tmp}/fairsched-py-bench-venv}
ACCASIM_VERSION=1.1.3
ACCASIM_VENV=${ACCASIM_VENV:-${TMPDIR:-/tmp}/fairsched-accasim-venv}
HPC2N=$SWF_DIR/HPC2N-2002-2.2-cln.swf.gz
KTH=data/KTH-SP2-1996-2.1-cln.swf.gz

need_shared
[ -f "$HPC2N" ] || die "$HPC2N is missing"
[ -f "$KTH" ] || die "$KTH is missing (the bundled log)"
command -v "$PYTHON" > /dev/null || die "$PYTHON is missing (PYTHON=... names another interpreter)"
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "${NO_BUILD:-}" ]; then
    build_release
    [ -f pyproject.toml ] || die "pyproject.toml is missing at the repository root"
    echo "fresh virtualenv $PY_VENV ($PYTHON), maturin from PyPI" >&2
    rm -rf "$PY_VENV"
    "$PYTHON" -m venv "$PY_VENV"
    "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check --upgrade pip >&2
    "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.9,<2' >&2
    echo "building the wheel: maturin build --release" >&2
    "$PY_VENV/bin/maturin" build --release --interpreter "$PY_VENV/bin/python" --out "$work/wheels" >&2
    wheel=$(ls "$work"/wheels/*.whl | head -1)
    [ -n "$wheel" ] || die "maturin built no wheel"
    echo "installing $(basename "$wheel")[pandas,gym]" >&2
    "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check "$wheel[pandas,gym]" >&2
else
    [ -x "$BIN" ] || die "NO_BUILD=1 but $BIN is not built"
    [ -x "$PY_VENV/bin/python" ] || die "NO_BUILD=1 but $PY_VENV has no python"
    echo "NO_BUILD=1: measuring $BIN and the package installed in $PY_VENV as they are" >&2
fi
PY=$PY_VENV/bin/python
py_version=$("$PY" -c 'import sys; print(sys.version.split()[0])')
py_packages=$("$PY" -m pip freeze --disable-pip-version-check 2> /dev/null | grep -iE '^(fairsched|numpy|pandas|pyarrow|gymnasium)[=@ ]' | tr '\n' ' ' | sed 's/ $//')

if has_part accasim; then
    if ! "$ACCASIM_VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('accasim') != '$ACCASIM_VERSION')" 2> /dev/null; then
        echo "creating $ACCASIM_VENV: python3 -m venv, pip install accasim==$ACCASIM_VERSION" >&2
        python3 -m venv "$ACCASIM_VENV"
        "$ACCASIM_VENV/bin/pip" install --quiet --disable-pip-version-check "accasim==$ACCASIM_VERSION" >&2
    fi
    acc_python=$("$ACCASIM_VENV/bin/python" -c 'import sys; print(sys.version.split()[0])')
fi

mkdir -p bench/results
out=bench/results/python.txt
{
    echo "bash bench/python.sh (PARTS='$PARTS' ROUNDS=$ROUNDS POLICY_ROUNDS=$POLICY_ROUNDS ACCASIM_RUNS=$ACCASIM_RUNS)"
    machine_line
    echo "cpu: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "python: $PY_VENV (Python $py_version): $py_packages"
    echo "cli: $BIN ($("$BIN" --version 2> /dev/null || echo '?'))"
    echo "before: $(quiet_line)"
    echo
} | tee "$out"

# run_part NAME ARGS...: bench/python/bench.py NAME, its JSON kept in
# $work/NAME$SUFFIX.json; $PREFIX (e.g. "taskset -c 0") runs before it.
run_part() {
    local name=$1
    shift
    ${PREFIX:-} "$PY" bench/python/bench.py "$name" "$@" > "$work/$name${SUFFIX:-}.out" || {
        cat "$work/$name${SUFFIX:-}.out" >&2
        die "bench/python/bench.py $name failed"
    }
    tail -1 "$work/$name${SUFFIX:-}.out" > "$work/$name${SUFFIX:-}.json"
}
jq_py() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

if has_part simulate; then
    echo "(a) simulate: HPC2N-2002 fcfs, $ROUNDS rounds (CLI then Python) after one untimed warm-up of each" >&2
    run_part simulate --trace "$HPC2N" --cli "$BIN" --rounds "$ROUNDS" --tmp "$work"
    f=$work/simulate.json
    {
        echo "(a) $(basename "$HPC2N") (202,871 jobs, 240 processors), fcfs, $ROUNDS rounds alternated (each first in every other round), wall time"
        echo "  cli:    $BIN simulate --trace $HPC2N --policy fcfs --out DIR --no-progress  (a subprocess: start, replay, 5 output files)"
        echo "  python: r = fairsched.simulate(LOG, policies=[\"fcfs\"], progress=False); r.tasks  (in process, no file written)"
        jq_py "$f" '"  cli     median %.3f s  runs %s  (first, untimed round: %.3f s)" % (d["cli_median_s"], " ".join("%.3f" % x for x in d["cli_wall_s"]), d["cli_first_s"])'
        jq_py "$f" '"  python  median %.3f s  runs %s  (first: %.3f s); simulate %.3f s + tasks DataFrame %.3f s (medians)" % (d["py_median_s"], " ".join("%.3f" % x for x in d["py_wall_s"]), d["py_first_s"], d["py_simulate_median_s"], d["py_tasks_median_s"])'
        jq_py "$f" '"  cpu     cli median %.3f CPU-s (%s), python %.3f CPU-s (%s): python / cli = %.2f" % (d["cli_cpu_median_s"], " ".join("%.3f" % x for x in d["cli_cpu_s"]), d["py_cpu_median_s"], " ".join("%.3f" % x for x in d["py_cpu_s"]), d["cpu_ratio"])'
        jq_py "$f" '"  python / cli = %.2f in wall time (target <= %.1f): %s; same result (mean wait %.1f s, makespan, %d tasks): %s" % (d["ratio"], d["target"], "PASS" if d["pass"] else "FAIL", d["mean_wait_s"], d["tasks"], "yes" if d["same_result"] else "NO")'
        echo
    } | tee -a "$out"
fi

if has_part policy; then
    echo "(b) policy: Python first-fit against Rust first-fit on the bundled KTH-SP2, $POLICY_ROUNDS rounds" >&2
    run_part policy --rounds "$POLICY_ROUNDS"
    f=$work/policy.json
    {
        echo "(b) bundled KTH-SP2-1996-2.1-cln (28,467 tasks kept, 100 processors): first-fit in Python (bench/python/bench.py, PyFirstFit) vs Rust first-fit, $POLICY_ROUNDS rounds alternated"
        echo "  both: fairsched.simulate(None, policies=[NAME], progress=False), wall time; decisions = picks that start a task"
        jq_py "$f" '"  rust    median %.3f s  runs %s  %d decisions  %.0f decisions/s" % (d["rust_median_s"], " ".join("%.3f" % x for x in d["rust_wall_s"]), d["rust_decisions"], d["rust_decisions_per_s"])'
        jq_py "$f" '"  python  median %.3f s  runs %s  %d decisions  %.0f decisions/s  (%d pick calls, %.0f/s)" % (d["py_median_s"], " ".join("%.3f" % x for x in d["py_wall_s"]), d["py_decisions"], d["py_decisions_per_s"], d["py_pick_calls"], d["py_pick_calls_per_s"])'
        jq_py "$f" '"  python / rust = %.1f x the time; same schedule: %s (%d of %d tasks start at the same time; mean wait %.1f s vs %.1f s)" % (d["slowdown"], "yes" if d["same_schedule"] else "NO", d["same_start"], d["tasks"], d["py_mean_wait_s"], d["rust_mean_wait_s"])'
        echo
    } | tee -a "$out"
fi

if has_part env; then
    echo "(c) env: SchedulingEnv over the whole bundled KTH-SP2, first-fit agent" >&2
    run_part env --queue 16
    # The episode's two threads (the simulation's and the agent's) hand
    # each decision over; pinned to one CPU, no wake-up crosses CPUs.
    pinned=""
    if command -v taskset > /dev/null; then
        echo "(c) env again, pinned to CPU 0 (taskset -c 0)" >&2
        PREFIX="taskset -c 0" SUFFIX=-pinned run_part env --queue 16
        pinned=$work/env-pinned.json
    fi
    f=$work/env.json
    {
        echo "(c) SchedulingEnv(window=<the log's submit span>, queue=16) over the whole bundled KTH-SP2, one episode, agent = first valid action of info[\"action_mask\"]"
        if [ -n "$pinned" ]; then
            jq_py "$pinned" '"  env pinned to one CPU (taskset -c 0): %d steps in %.2f s: %.0f steps/s, %.0f started/s" % (d["steps"], d["wall_s"], d["steps_per_s"], d["started_per_s"])'
        fi
        jq_py "$f" '"  env      %d steps (%d waits) in %.2f s (reset %.3f s): %.0f steps/s, %d tasks started, %.0f started/s; forced starts %d; mean bsld %.2f (Rust first-fit, same window: %.2f); %d of %d tasks start at the same time as under it" % (d["steps"], d["wait_actions"], d["wall_s"], d["reset_s"], d["steps_per_s"], d["tasks_started"], d["started_per_s"], d["forced_starts"], d["mean_bsld"], d["rust_first_fit_mean_bsld"], d["same_start_as_rust_first_fit"], d["rust_first_fit_tasks"])'
    } | tee -a "$out"
fi

if has_part accasim; then
    echo "(c) AccaSim $ACCASIM_VERSION FirstInFirstOut on KTH-SP2, $ACCASIM_RUNS run(s)" >&2
    zcat "$KTH" > "$work/KTH-SP2-1996-2.1-cln.swf"
    for i in $(seq "$ACCASIM_RUNS"); do
        "$ACCASIM_VENV/bin/python" bench/python/accasim_fifo.py --swf "$work/KTH-SP2-1996-2.1-cln.swf" \
            --nodes 100 --cores 1 --out "$work/accasim-$i" > "$work/accasim-$i.out" 2> "$work/accasim-$i.err" || {
            cat "$work/accasim-$i.err" >&2
            die "AccaSim failed"
        }
        tail -1 "$work/accasim-$i.out" > "$work/accasim-$i.json"
        echo "  run $i: $(jq_py "$work/accasim-$i.json" '"%.2f s" % d["wall_s"]')" >&2
    done
    python3 - "$work" "$ACCASIM_RUNS" "$ACCASIM_VERSION" "$acc_python" "$(has_part env && echo "$work/env.json")" "$(has_part env && echo "${pinned:-}")" << 'PY' | tee -a "$out"
import json, statistics, sys
work, runs, version, pyv, env, pinned = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rs = [json.load(open(f"{work}/accasim-{i}.json")) for i in range(1, runs + 1)]
walls = [r["wall_s"] for r in rs]
w = statistics.median(walls)
r = rs[0]
print(f"  accasim  {version} (Python {pyv}) FirstInFirstOut + FirstFit, 100 nodes x 1 core, no output files: "
      f"median {w:.2f} s of {runs} run(s) ({' '.join(f'{x:.2f}' for x in walls)})")
print(f"           {r['jobs_started']} jobs started ({r['jobs_loaded']} loaded, {r['jobs_rejected']} rejected): {r['jobs_started'] / w:.0f} started/s; "
      f"{r['dispatch_calls']} dispatcher calls: {r['dispatch_calls'] / w:.0f}/s; {r['time_points']} time points: {r['time_points'] / w:.0f}/s")
if env:
    e = json.load(open(env))
    print(f"  env / accasim: {e['steps_per_s'] / (r['dispatch_calls'] / w):.1f} x the decisions per second "
          f"(env steps vs dispatcher calls), {e['started_per_s'] / (r['jobs_started'] / w):.1f} x the jobs started per second, "
          f"wall {e['wall_s']:.2f} s vs {w:.2f} s")
if pinned:
    e = json.load(open(pinned))
    print(f"  env pinned / accasim: {e['steps_per_s'] / (r['dispatch_calls'] / w):.1f} x the decisions per second, "
          f"{e['started_per_s'] / (r['jobs_started'] / w):.1f} x the jobs started per second, wall {e['wall_s']:.2f} s vs {w:.2f} s")
PY
fi
echo "after: $(quiet_line)" | tee -a "$out"
echo "wrote $out" >&2
