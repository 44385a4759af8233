#!/usr/bin/env bash
# Cold builds (issue 39): the README's first command's build and,
# optionally, the tests' build, each into a fresh, empty CARGO_TARGET_DIR,
# under GNU time: CPU seconds (user + system, every rustc, cc and linker
# process cargo starts), wall time and peak RSS, beside the targets.
#
#   bash bench/cold-build.sh               # the release build of the CLI
#   PARTS='release test' bash bench/cold-build.sh
#   TIMINGS=1 bash bench/cold-build.sh     # also keeps cargo's --timings page
#
#   release: cargo build --release --locked -p fairsched --bin fairsched,
#            what `cargo run --release -- simulate` compiles (the run itself
#            is not counted); target <= 400 CPU-s.
#   test:    cargo test --workspace --locked --no-run, the build half of
#            the README's second command; target <= 900 CPU-s.
#
# The crates are downloaded first (cargo fetch), not timed. CPU seconds are
# the figure to compare on a shared machine: the wall time depends on what
# else runs (the header line says); on a quiet machine with N free cores it
# is about CPU seconds / N for most of a build, longer where one crate is
# compiled alone. The target folders are temporary (COLD_DIR, default
# ${TMPDIR:-/tmp}, needs about 3 GB each), removed after each part
# (KEEP_TARGET=1 keeps them). TIMINGS=1 copies each part's
# cargo-timings page to bench/results/cold-build-PART.html.
# Writes bench/results/cold-build.txt. Exit status: 0 when every part met
# its target in CPU seconds, 1 otherwise.

source "$(dirname "$0")/lib.sh"

PARTS=${PARTS:-release}
COLD_DIR=${COLD_DIR:-${TMPDIR:-/tmp}}
TARGET_RELEASE=400
TARGET_TEST=900

need_gnu_time
command -v cargo > /dev/null || die "cargo is missing"
mkdir -p bench/results "$COLD_DIR"
out=bench/results/cold-build.txt

echo "fetching the crates (not timed): cargo fetch --locked" >&2
cargo fetch --locked >&2

row() { printf '%-8s %9s %9s %9s %8s  %s\n' "$@"; }
{
    echo "cold builds, each into a fresh CARGO_TARGET_DIR (GNU time: CPU = user + sys of every process)"
    machine_line
    quiet_line
    echo "$(rustc --version); $(cargo --version)"
    echo
    row part cpu_s wall_s rss_MiB target verdict
} | tee "$out"

status=0
for part in $PARTS; do
    case "$part" in
        release)
            cmd=(cargo build --release --locked -p fairsched --bin fairsched)
            target=$TARGET_RELEASE
            ;;
        test)
            cmd=(cargo test --workspace --locked --no-run)
            target=$TARGET_TEST
            ;;
        *) die "unknown part '$part' (PARTS: release test)" ;;
    esac
    [ -n "${TIMINGS:-}" ] && cmd+=(--timings)
    dir=$(mktemp -d "$COLD_DIR/fairsched-cold-$part.XXXXXX")
    echo "$part: CARGO_TARGET_DIR=$dir ${cmd[*]}" >&2
    if ! CARGO_TARGET_DIR=$dir /usr/bin/time -v -o "$dir.time" "${cmd[@]}" >&2; then
        rm -rf "$dir" "$dir.time"
        die "$part: ${cmd[*]} failed"
    fi
    read -r wall cpu rss < <(time_fields "$dir.time")
    if [ -n "${TIMINGS:-}" ]; then
        cp "$(ls -t "$dir"/cargo-timings/cargo-timing-*.html | head -1)" "bench/results/cold-build-$part.html"
    fi
    verdict=$(awk -v c="$cpu" -v t="$target" 'BEGIN { print (c <= t) ? "PASS" : "FAIL" }')
    [ "$verdict" = PASS ] || status=1
    row "$part" "$cpu" "$wall" "$rss" "<= $target" "$verdict (${cmd[*]})" | tee -a "$out"
    rm -f "$dir.time"
    if [ -n "${KEEP_TARGET:-}" ]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi
done
quiet_line | sed 's/^/after: /' | tee -a "$out"
echo "wrote $out" >&2
exit "$status"
