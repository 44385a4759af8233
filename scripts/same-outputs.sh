#!/usr/bin/env bash
# Usage: scripts/same-outputs.sh OLD_BIN NEW_BIN [KEEP_DIR]
#
# Runs the same 34 commands (simulate in several set-ups on six shared logs,
# the four papers' experiments, trace info/stats/tau, policies --json) with
# two fairsched binaries and compares every byte they print and write, after
# masking what differs from run to run (wall times, the commit, the command
# line, the version). Prints the files that differ and their diff; exits 1
# if any does. For a refactoring that must not change results: build the
# old commit in a worktree (git worktree add /tmp/old COMMIT && cargo build
# --release --manifest-path /tmp/old/Cargo.toml), then run this from the
# repository root. Needs ../shared/data. About 3 min on 2 cores.
set -euo pipefail
set -f  # the commands hold [ ] (policy specs): words, not globs
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
OLD=$(readlink -f "$1"); NEW=$(readlink -f "$2")
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=${3:-$(mktemp -d)}
S=../shared/data/traces/swf
[ -d "$S" ] || { echo "no $S: the shared logs are needed" >&2; exit 2; }

commands() {
  cat <<'CMDS'
o simulate --no-progress
o simulate --trace $S/HPC2N-2002-2.2-cln.swf.gz --policy easy --policy fair-share --policy fcfs --orgs 3 --window 5000000,400000 --phi --swf-out s.swf --batsim-jobs jobs.csv --no-progress
o simulate --machines 20,30,50 --allocate least-loaded --policy priority --control age-boost[after=10m,by=1] --split-parallel --no-progress
o simulate --platform examples/platform.toml --policy fair-share --split-parallel --no-progress
o simulate --trace $S/LPC-EGEE-2004-1.2-cln.swf.gz --procs 70 --split-parallel --orgs 5 --ownership zipf:1 --window 21000000,50000 --policy round-robin --policy fair-share --policy direct-contr --policy ut-fair-share --no-progress
o simulate --trace $S/SDSC-SP2-1998-4.2-cln.swf.gz --machines 32,64,32 --allocate mst-user --policy fcfs --window 0,300000 --no-progress
o experiment shapley --table 1 --instances 4 --traces KTH-SP2,LPC-EGEE --no-progress
o experiment shapley --figure 1 --instances 2 --no-progress
o experiment pffp --test 2 --instances 3 --no-progress
o experiment pffp --test 1 --instances 2 --no-progress
o experiment pffp --test 5 --instances 2 --no-progress
o experiment diet-ethic --scenario night-consecutive --runs 2 --no-progress
o experiment diet-ethic --scenario day-regular --runs 2 --n-submit 50,190 --no-progress
o experiment workflow-fairness --exp 1 --repetitions 2 --no-progress
o experiment workflow-fairness --exp 2 --repetitions 1 --no-progress
o trace stats $S/KTH-SP2-1996-2.1-cln.swf.gz
- trace info $S/HPC2N-2002-2.2-cln.swf.gz
- trace info --json $S/RICC-2010-2.swf.gz
o trace tau gate simubloch --repetitions 2
- policies --json
o simulate --trace $S/CTC-SP2-1996-3.1-cln.swf.gz --policy easy --policy fcfs --runtime-limit kill --procs-from requested --window 0,2000000 --no-progress
o simulate --trace $S/RICC-2010-2.swf.gz --procs 8192 --orgs 4 --policy fair-share --policy curr-fair-share --window 1000000,200000 --split-parallel --no-progress
o simulate --trace $S/KTH-SP2-1996-2.1-cln.swf.gz --machines 50,50 --allocate pffp --policy fcfs --no-progress
o simulate --trace $S/KTH-SP2-1996-2.1-cln.swf.gz --orgs 3 --policy ref --policy rand --split-parallel --window 0,20000 --no-progress
o experiment shapley --table 1 --instances 10 --no-progress
o experiment shapley --table 2 --instances 2 --traces LPC-EGEE,KTH-SP2 --no-progress
o experiment pffp --test 3 --instances 2 --no-progress
o experiment pffp --test 4 --instances 3 --no-progress
o experiment pffp --test 5 --grid --instances 1 --no-progress
o experiment pffp --test 2 --instances 3 --fitted --utilization 0.7 --no-progress
o experiment diet-ethic --scenario day-irregular-random --runs 3 --no-progress
o experiment diet-ethic --scenario-file examples/diet.toml --runs 2 --no-progress
o experiment workflow-fairness --exp 3 --repetitions 2 --every 180 --no-progress
o experiment workflow-fairness --workflows gate,simubloch --grid examples/grid.toml --repetitions 2 --no-mirror --no-progress
CMDS
}

run_all() { # BIN DIR
  local bin=$1 dir=$2 n=0
  rm -rf "$dir"; mkdir -p "$dir"
  while read -r mode line; do
    n=$((n + 1))
    local d="$dir/c$n"; mkdir -p "$d"
    line=${line//\$S/$S}
    echo "$line" > "$d/cmd"
    # shellcheck disable=SC2086 # the command's words
    if [ "$mode" = o ]; then
      "$bin" $line --out "$d/out" > "$d/stdout" 2> "$d/stderr" || echo "exit $?" > "$d/rc"
    else
      "$bin" $line > "$d/stdout" 2> "$d/stderr" || echo "exit $?" > "$d/rc"
    fi
  done < <(commands)
}

echo "old: $OLD"; run_all "$OLD" "$WORK/old"
echo "new: $NEW"; run_all "$NEW" "$WORK/new"
python3 - "$WORK" <<'PY'
import os, re, sys, subprocess
work = sys.argv[1]
pats = [
    (rb'"wall_time_s": ?[0-9.e+-]+', b'"wall_time_s": X'),
    (rb'"wall_s": ?[0-9.e+-]+', b'"wall_s": X'),
    (rb'"commit": ?"[^"]*"', b'"commit": "X"'),
    (rb'"command": ?"(?:[^"\\]|\\.)*"', b'"command": "X"'),
    (rb'"version": ?"[^"]*"', b'"version": "X"'),
    (rb' in [0-9.]+ s', b' in X s'),
    (rb'(?m)^commit .*$', b'commit X'),
    (rb'(?m)^command .*$', b'command X'),
    (rb'\(commit [0-9a-f]+(-dirty)?\)', b'(commit X)'),
    (re.escape(work.encode()) + rb'/(old|new)/', b'WORK/'),
    (rb'(?m),[0-9.]+$', b',X'),  # comparison.csv's last column: wall seconds
]
pats = [(re.compile(p), r) for p, r in pats]
for side in ("old", "new"):
    for root, _, files in os.walk(os.path.join(work, side)):
        for f in files:
            p = os.path.join(root, f)
            b = open(p, "rb").read()
            for pat, rep in pats:
                if f != "comparison.csv" and pat.pattern == rb'(?m),[0-9.]+$':
                    continue
                b = pat.sub(rep, b)
            open(p, "wb").write(b)
PY
if diff -r "$WORK/old" "$WORK/new" > "$WORK/diff.txt"; then
  echo "same outputs: every file of the 34 commands (in $WORK)"
else
  grep -E '^(diff|Only)' "$WORK/diff.txt" | sed "s|$WORK/||g"
  echo "differences: $WORK/diff.txt"
  exit 1
fi
