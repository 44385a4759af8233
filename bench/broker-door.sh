#!/usr/bin/env bash
# How an authenticated client's requests fare while the broker is attacked
# as in issue 38, finding 1: connections that each send a `POST /v1/tasks`
# head declaring `Content-Length: 4194304`, then 4 MiB less 16 bytes of
# body, and hold the connection open (again as soon as the broker closes
# it). In a fresh temporary directory: `fairsched admin init`, `fairsched
# serve --listen 127.0.0.1:0`, one organization, the user `alice` (the
# client measured), the user `bob` of another organization whose `sleep`
# tasks keep one worker of SLOTS slots busy; then, per phase, SUBMITS
# one-task submissions by alice one after the other (each is a POST with a
# body: the path the attack took), timed as the client sees them:
#
#   idle        nobody else talks to the broker (but bob's worker)
#   anonymous   meanwhile FLOOD connections without a token hold their
#               partial bodies
#   tenant      meanwhile FLOOD connections with mallory's token (a third
#               user) hold theirs
#
# Per phase: p50/p99/max latency, alice's refusals (any status but 201),
# the ratio of the p50 to the idle p50 against the target (at most 2), and
# then, for the whole run, the worker's lost leases and bob's tasks that
# did not complete. Writes bench/results/broker-door.txt.
#
#   bash bench/broker-door.sh                                # from any directory
#   SUBMITS=300 FLOOD=64 SLOTS=8 bash bench/broker-door.sh
#   FAIRSCHED_BIN=/path/to/old/fairsched bash bench/broker-door.sh   # a broker before the door

source "$(dirname "$0")/lib.sh"

SUBMITS=${SUBMITS:-300}
FLOOD=${FLOOD:-64}
SLOTS=${SLOTS:-8}
PHASES=${PHASES:-idle anonymous tenant}

if [ -z "${FAIRSCHED_BIN:-}" ]; then
    echo "building: nice cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard" >&2
    nice cargo build --release -p fairsched --bin fairsched --bin fairsched-task-guard >&2
fi
[ -x "$BIN" ] || die "$BIN was not built"

with_tmpdir
mkdir -p bench/results
out=bench/results/broker-door.txt
results=$tmpdir/results
: > "$results"

dir=$tmpdir/door
start_broker "$dir" --lease 10s
"$BIN" admin org add others --broker "$url" --token "$admin" > /dev/null
bob=$("$BIN" admin user add bob --org others --broker "$url" --token "$admin")
mallory=$("$BIN" admin user add mallory --org others --broker "$url" --token "$admin")
FAIRSCHED_LOG=warn "$BIN" worker --broker "$url" --token "$wtoken" --slots "$SLOTS" \
    --workdir "$dir/wd" --host bench > /dev/null 2> "$dir/worker.err" &
pids+=($!)

# The load: `latency URL TOKEN N LABEL` (a RESULT line), `flood URL TOKEN|- N`
# (until killed), `bob URL TOKEN SLOTS` (keeps SLOTS sleep tasks queued or
# running until killed), `running URL TOKEN` (waits for a task running),
# `ended URL TOKEN` (the user's tasks failed or killed), `lost URL` (the
# broker's lost leases).
cat > "$tmpdir/load.py" << 'PY'
import http.client, json, socket, sys, threading, time, urllib.parse

def conn(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)

def call(c, method, path, token=None, body=None):
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    return r.status, r.read()

mode, url = sys.argv[1], sys.argv[2]
if mode == "latency":
    token, n, label = sys.argv[3], int(sys.argv[4]), sys.argv[5]
    c = conn(url)
    body = json.dumps({"tasks": [{"command": "true", "name": "alice"}]}).encode()
    ms, refused = [], 0
    for _ in range(n):
        t = time.perf_counter()
        try:
            status, _ = call(c, "POST", "/v1/tasks", token, body)
        except (OSError, http.client.HTTPException):
            status = 0
            c = conn(url)
        ms.append((time.perf_counter() - t) * 1000)
        refused += status != 201
    ms.sort()
    q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
    print(f"RESULT phase={label} p50_ms={q(0.5):.3f} p99_ms={q(0.99):.3f} max_ms={ms[-1]:.3f} refused={refused}")
elif mode == "flood":
    token, n = sys.argv[3], int(sys.argv[4])
    u = urllib.parse.urlparse(url)
    auth = "" if token == "-" else f"Authorization: Bearer {token}\r\n"
    head = (f"POST /v1/tasks HTTP/1.1\r\nHost: {u.hostname}\r\nContent-Type: application/json\r\n"
            f"{auth}Content-Length: {4 << 20}\r\n\r\n").encode()
    body = b" " * ((4 << 20) - 16)
    held = [0]
    def one():
        while True:
            s = None
            try:
                s = socket.create_connection((u.hostname, u.port))
                s.sendall(head)
                s.sendall(body)
                held[0] += 1
                while s.recv(4096):
                    pass
            except OSError:
                pass
            finally:
                if s is not None:
                    s.close()
            time.sleep(0.1)
    for _ in range(n):
        threading.Thread(target=one, daemon=True).start()
    while True:
        time.sleep(1)
elif mode == "bob":
    token, slots = sys.argv[3], int(sys.argv[4])
    c = conn(url)
    body = json.dumps({"tasks": [{"command": "sleep 2", "name": "bob"}] * slots}).encode()
    while True:
        status, text = call(c, "GET", "/v1/status", token)
        s = json.loads(text) if status == 200 else {}
        if s.get("waiting", 1) == 0:
            call(c, "POST", "/v1/tasks", token, body)
        time.sleep(0.5)
elif mode == "running":
    token = sys.argv[3]
    c = conn(url)
    for _ in range(300):
        status, text = call(c, "GET", "/v1/status", token)
        if status == 200 and json.loads(text)["running"] > 0:
            break
        time.sleep(0.1)
    else:
        sys.exit("no task started within 30 s")
elif mode == "ended":
    token = sys.argv[3]
    _, text = call(conn(url), "GET", "/v1/status", token)
    s = json.loads(text)
    print(s["failed"] + s["killed"])
elif mode == "lost":
    c = conn(url)
    _, text = call(c, "GET", "/metrics")
    lost = [l.split()[-1] for l in text.decode().splitlines() if l.startswith("fairsched_requeued_lost_total ")]
    print(lost[0] if lost else "?")
PY

python3 "$tmpdir/load.py" bob "$url" "$bob" "$SLOTS" &
bob_pid=$!
pids+=("$bob_pid")
# bob's first tasks running.
python3 "$tmpdir/load.py" running "$url" "$bob"

for phase in $PHASES; do
    flood_pid=""
    case $phase in
        idle) ;;
        anonymous) python3 "$tmpdir/load.py" flood "$url" - "$FLOOD" & flood_pid=$! ;;
        tenant) python3 "$tmpdir/load.py" flood "$url" "$mallory" "$FLOOD" & flood_pid=$! ;;
        *) die "PHASES: unknown phase '$phase' (idle, anonymous, tenant)" ;;
    esac
    if [ -n "$flood_pid" ]; then
        pids+=("$flood_pid")
        # Every connection has sent its partial body (the broker reads them
        # at loopback speed) before the clock starts.
        sleep 3
    fi
    echo "== $phase: $SUBMITS submissions by alice" >&2
    python3 "$tmpdir/load.py" latency "$url" "$user" "$SUBMITS" "$phase" | tee -a "$results" >&2
    if [ -n "$flood_pid" ]; then
        kill -TERM "$flood_pid" 2> /dev/null || true
        wait "$flood_pid" 2> /dev/null || true
    fi
done
kill -TERM "$bob_pid" 2> /dev/null || true
wait "$bob_pid" 2> /dev/null || true
lost=$(python3 "$tmpdir/load.py" lost "$url")
bob_failed=$(python3 "$tmpdir/load.py" ended "$url" "$bob")

{
    echo "bash bench/broker-door.sh (SUBMITS=$SUBMITS FLOOD=$FLOOD SLOTS=$SLOTS)"
    machine_line
    echo "cpu: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo
    echo "alice's one-task POST /v1/tasks, one after the other, ms; flood: $FLOOD connections each holding 4 MiB less 16 bytes of a body"
    python3 - "$results" << 'EOF'
import sys

rows = [dict(f.split("=", 1) for f in line.split()[1:]) for line in open(sys.argv[1])]
idle = next((float(r["p50_ms"]) for r in rows if r["phase"] == "idle"), None)
print(f"{'phase':<11}{'p50':>8}{'p99':>9}{'max':>9}{'refused':>9}{'p50/idle':>10}  target")
for r in rows:
    p50 = float(r["p50_ms"])
    ratio = f"{p50 / idle:.2f}" if idle else "-"
    verdict = "" if r["phase"] == "idle" or not idle else ("ok (<= 2)" if p50 / idle <= 2 and r["refused"] == "0" else "MISSED (<= 2, none refused)")
    print(f"{r['phase']:<11}{p50:>8.2f}{float(r['p99_ms']):>9.2f}{float(r['max_ms']):>9.2f}{r['refused']:>9}{ratio:>10}  {verdict}")
EOF
    echo "worker leases lost (fairsched_requeued_lost_total): $lost; bob's tasks failed or killed: $bob_failed"
} | tee "$out"
