#!/usr/bin/env bash
# The kill test at full size: the broker SIGKILLed 20 times (and restarted
# on the same database and port) while workers are stopped (SIGSTOP) and
# continued at random and a client submits 10,000 tasks, retrying until
# acknowledged. It is crates/fairsched/tests/cli/live_crash.rs, which CI
# runs with 6 kills and a few hundred tasks; here with
# FAIRSCHED_CRASH_KILLS and FAIRSCHED_CRASH_TASKS. It checks 0 lost, 0 run
# twice, 0 stuck, and the final state equal to a replay of the log.
#
#   bash bench/kill-test.sh                          # 20 kills, 10,000 tasks
#   KILLS=50 TASKS=20000 SEED=7 bash bench/kill-test.sh
#
# Writes bench/results/kill-test.txt (the test's own report: seed, kills,
# stalls, tasks acknowledged and in the log, retries, wall time).

source "$(dirname "$0")/lib.sh"

KILLS=${KILLS:-20}
TASKS=${TASKS:-10000}
SEED=${SEED:-20241122}
out=bench/results/kill-test.txt
mkdir -p bench/results
start=$(date +%s)
FAIRSCHED_CRASH_KILLS=$KILLS FAIRSCHED_CRASH_TASKS=$TASKS FAIRSCHED_CRASH_SEED=$SEED \
    cargo test --release -p fairsched --test cli live_crash -- --nocapture --test-threads=1 2>&1 \
    | grep -E '^(seed|killed at|[0-9]+ (tasks|worker|of)|test |test result)' | tee "$out"
end=$(date +%s)
echo "wall time: $((end - start)) s (build included)" | tee -a "$out"
grep -q 'test result: ok' "$out"
