#!/usr/bin/env bash
# What one tenant's large submission costs the others (issue 38, finding
# 5): alice submits TASKS tasks in one `fairsched submit --count` while bob
# asks for his status one request after the other; bob's latency (p50,
# p99, max) during alice's submission, against bob's latency idle. Before
# the broker wrote a large bag of tasks in steps of 1,000 (commit f4030f0),
# one 100,000-task submission held its thread, and every other request,
# for about 1.8 s. Writes bench/results/broker-big-submit.txt.
#
#   bash bench/broker-big-submit.sh                    # 100,000 tasks
#   TASKS=50000 bash bench/broker-big-submit.sh
#   FAIRSCHED_BIN=/path/to/other/fairsched bash bench/broker-big-submit.sh

source "$(dirname "$0")/lib.sh"

TASKS=${TASKS:-100000}

build_release

with_tmpdir
mkdir -p bench/results
out=bench/results/broker-big-submit.txt
dir=$tmpdir/big
start_broker "$dir" --default-max-queued 0
"$BIN" admin org add others --broker "$url" --token "$admin" > /dev/null
bob=$("$BIN" admin user add bob --org others --broker "$url" --token "$admin")

# `status URL TOKEN SECONDS LABEL`: GET /v1/status one after the other for
# SECONDS, or until the file STOP exists; a RESULT line.
cat > "$tmpdir/status.py" << 'PY'
import http.client, os, sys, time, urllib.parse
url, token, seconds, label, stop = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
ms, end = [], time.monotonic() + seconds
while time.monotonic() < end and not os.path.exists(stop):
    t = time.perf_counter()
    c.request("GET", "/v1/status", headers={"Authorization": "Bearer " + token})
    c.getresponse().read()
    ms.append((time.perf_counter() - t) * 1000)
ms.sort()
q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
print(f"RESULT phase={label} requests={len(ms)} p50_ms={q(0.5):.3f} p99_ms={q(0.99):.3f} max_ms={ms[-1]:.3f}")
PY

results=$tmpdir/results
python3 "$tmpdir/status.py" "$url" "$bob" 3 idle "$tmpdir/none" >> "$results"
stop=$tmpdir/stop
python3 "$tmpdir/status.py" "$url" "$bob" 600 during "$stop" >> "$results" &
poller=$!
start=$(date +%s.%N)
"$BIN" submit --broker "$url" --token "$user" --count "$TASKS" -- true > "$tmpdir/ids"
end=$(date +%s.%N)
touch "$stop"
wait "$poller"
[ "$(wc -l < "$tmpdir/ids")" -eq "$TASKS" ] || die "alice's submission gave $(wc -l < "$tmpdir/ids") ids, not $TASKS"

{
    echo "bash bench/broker-big-submit.sh (TASKS=$TASKS)"
    machine_line
    echo
    printf "alice submits %d tasks in one fairsched submit: %.2f s\n" "$TASKS" "$(echo "$end - $start" | bc)"
    echo "bob's GET /v1/status, one after the other, ms:"
    printf "%-8s %9s %8s %8s %8s\n" phase requests p50 p99 max
    sed 's/^RESULT //' "$results" | while read -r phase requests p50 p99 max; do
        printf "%-8s %9s %8s %8s %8s\n" "${phase#phase=}" "${requests#requests=}" "${p50#p50_ms=}" "${p99#p99_ms=}" "${max#max_ms=}"
    done
} | tee "$out"
