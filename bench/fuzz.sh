#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ one after the other and prints each one's
# executions (libFuzzer's final stats). Needs a nightly toolchain; installs
# cargo-fuzz from crates.io if it is missing. See fuzz/README.md.
#
#   bench/fuzz.sh [TARGET...]          default: every target
#
# Environment:
#   FUZZ_RUNS   executions per target (default 10000000)
#   FUZZ_TIME   at most this many seconds per target (default 3000)
#   FUZZ_SEEDS  1 (default): add the seeds of fuzz/seeds.py (real log lines
#               from ../shared/data/traces when present) to fuzz/corpus/
#   CARGO_TARGET_DIR  where to build (default fuzz/target)
#
# One process per target (libFuzzer's default, as -jobs=1), so that two
# cores shared with builds are not oversubscribed. A crash stops the target
# and leaves its input in fuzz/artifacts/TARGET/; the script goes on with the
# next target and exits 1 at the end.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo/fuzz"

ALL=(swf_reader policy_spec platform flags workflow swf simulate)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL[@]}")
runs="${FUZZ_RUNS:-10000000}"
secs="${FUZZ_TIME:-3000}"

# The longest input each target is given (a log's header and a few dozen
# lines; a spec or a flag line; a small TOML or JSON file).
max_len() {
    case "$1" in
        swf_reader) echo 2048 ;;
        swf) echo 8192 ;;
        simulate) echo 4096 ;;
        policy_spec | flags) echo 256 ;;
        platform) echo 2048 ;;
        workflow) echo 16384 ;;
        *) echo "unknown target $1" >&2; exit 2 ;;
    esac
}

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz.sh: no nightly toolchain: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
if [ "${FUZZ_SEEDS:-1}" = 1 ]; then
    python3 seeds.py corpus "$repo/../shared/data/traces/swf" >/dev/null
fi

# Release, with overflow checks and debug assertions (-a), and no sanitizer:
# the code is safe Rust, and a sanitizer halves the rate. A huge allocation
# is caught by -rss_limit_mb (libFuzzer checks the resident size each second).
build=(-O -a -s none)
cargo +nightly fuzz build "${build[@]}"

failed=0
printf '%-12s %12s %10s %8s  %s\n' target executions exec/s seconds result
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    committed="$repo/crates/fairsched-sim/tests/fuzz-corpus/$t"
    log="artifacts/$t/last-run.log"
    start=$(date +%s)
    set +e
    cargo +nightly fuzz run "${build[@]}" "$t" "corpus/$t" $([ -d "$committed" ] && echo "$committed") -- \
        -runs="$runs" -max_total_time="$secs" -max_len="$(max_len "$t")" \
        -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1
    code=$?
    set -e
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ "$code" = 0 ]; then
        result=ok
    else
        result="FAILED (see fuzz/$log)"
        failed=1
    fi
    printf '%-12s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$took" "$result"
done
exit "$failed"
