#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: fuzz/seeds.py CORPUS_DIR [TRACES_DIR].

- swf, swf_reader and simulate: the header and a few hundred varied job lines of each archive log in
  TRACES_DIR (default ../shared/data/traces/swf), never whole logs; the edge
  cases of the trace crate's tests; each with several option prefixes (see
  fuzz/src/swf.rs), some gzip-compressed;
- policy_spec: every registered policy with its parameters' defaults, the
  specs of the README and of the tests, and odd values;
- platform: examples/platform.toml and the cases of platform_file.rs's tests;
- flags: typical and extreme flag values;
- workflow: the bundled TOML profiles and small WfCommons instances
  (fairsched-trace's test fixture and the smallest of TRACES_DIR/../workflows).

Deterministic: the same inputs give the same files.
"""

import gzip
import hashlib
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def put(dirname, data):
    if isinstance(data, str):
        data = data.encode()
    os.makedirs(dirname, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(dirname, name), "wb") as f:
        f.write(data)


def swf_prefix(lenient=False, drop_failed=False, drop_cancelled=False, gz=False, split=False,
               window=None, orgs_code=0):
    flags = (lenient | drop_failed << 1 | drop_cancelled << 2 | gz << 3 | split << 4
             | (window is not None) << 5 | orgs_code << 6)
    start, length = window or (0, 0)
    return bytes([flags]) + struct.pack("<qq", start, length)


def log_samples(path, rng):
    """Header + first lines, and a few hundred lines sampled across the log."""
    with gzip.open(path, "rb") as f:
        lines = f.read().split(b"\n")
    header = [l for l in lines[:200] if l.startswith(b";")]
    jobs = [l for l in lines if l and not l.startswith(b";")]
    out = [b"\n".join(header + jobs[:60]) + b"\n"]
    picks = sorted(rng.sample(range(len(jobs)), min(300, len(jobs))))
    out.append(b"\n".join(header[:8] + [jobs[i] for i in picks]) + b"\n")
    # Out of submit order (forces the in-memory sort).
    shuffled = [jobs[i] for i in picks[:80]]
    rng.shuffle(shuffled)
    out.append(b"\n".join(header[:4] + shuffled) + b"\n")
    return out


def ok(i, submit, run=100, alloc=4, req=4, status=1, user=1):
    return f"{i} {submit} 0 {run} {alloc} -1 -1 {req} 3600 -1 {status} {user} 1 -1 -1 -1 -1 -1\n"


SWF_EDGE = [
    "",
    "; only a comment\n\n",
    "; Version: 2.2\n\n" + ok(1, 0) + "; a comment between jobs\n   \n\t\n  ; indented\n" + ok(2, 10).strip(),
    "  1\t0 \t 5\t\t100  4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\t\n",
    "-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n",
    "1 0 5 12.0 4 552.21 1024.5 4 200 2.5 1 7 2 -1 1 -1 -1 -1\n",
    "; MaxProcs: 64\r\n" + ok(1, 0).strip() + "\r\n\r\n" + ok(2, 5).strip() + "\r\n",
    "; Version: 2.2\n; Computer: Linux cluster (Seth)\n; Installation: HPC2N\n; MaxJobs: 527371\n"
    "; MaxRecords: 527371\n; UnixStartTime: 1027839845\n; TimeZone: 3600\n"
    "; TimeZoneString: Europe/Stockholm\n; StartTime: Sun Jul 28 09:04:05 CEST 2002\n"
    "; EndTime: Mon Jan 16 20:31:24 CET 2006\n;              http://www.hpc2n.umu.se/\n"
    + ok(1, 0) + "; MaxProcs: 240\n; Note: late key\n",
    "; header\n" + ok(1, 0) + "1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1\n",
    "1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1 99\n",
    ok(1, 0) + "2 10 0 abc 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n",
    "1 0 5 12.5 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n",
    ok(1, 0) + "garbage\n" + ok(2, 1),
    ok(1, 0) + "1 2 3\n" + ok(2, 1) + "x 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n"
    + ok(3, 2) + "1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1 -1\n",
    "1 -9223372036854775808 0 9223372036854775807 4 1e3 -0.5 4 +7 .25 1 7 2 -1 1 -1 -1 -1\n",
    "1 9223372036854775807 0 9223372036854775807 4294967296 5. 1.2345678901234567890123 -1 -1 2.5e3 1 7 2 -1 1 -1 -1 -1\n",
    "1 0 0 10 1 nan inf 1 10 1e400 1 1 1 -1 -1 -1 -1 -1\n",
    "; MaxProcs: 4294967295\n; MaxNodes: 99999999999\n" + ok(1, 0),
    "; MaxProcs: 16777217\n" + ok(1, 0, alloc=16777217),
    ok(1, 0, alloc=4294967295, req=4294967295) + ok(2, 5, alloc=-1, req=3),
    "; UnixStartTime: -62135596800\n; TimeZoneString: Europe/Paris\n" + ok(1, 0) + ok(2, 9000000),
    "; UnixStartTime: 9223372036854775807\n; TimeZone: -9223372036854775808\n" + ok(1, 0) + ok(2, 1),
    "; TimeZoneString: Not/AZone\n; UnixStartTime: 0\n" + ok(1, 0) + ok(2, 1209600),
    ok(1, 10) + ok(2, 5, status=0) + ok(3, 5, status=5) + ok(4, -3, run=0) + ok(5, 1, run=-1),
]


def swf_seeds(out, traces):
    rng = random.Random(13)
    texts = [t.encode() for t in SWF_EDGE]
    texts.append(b"; Computer: caf\xe9\n1 0 5 \xff\xfe 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n")
    if os.path.isdir(traces):
        for name in sorted(os.listdir(traces)):
            if name.endswith(".swf.gz"):
                texts.extend(log_samples(os.path.join(traces, name), rng))
    else:
        print(f"seeds: {traces} is absent: the swf seeds have no real log lines", file=sys.stderr)
    prefixes = [
        swf_prefix(),
        swf_prefix(lenient=True),
        swf_prefix(lenient=True, drop_failed=True, drop_cancelled=True, split=True, orgs_code=2),
        swf_prefix(gz=True, window=(0, 86400)),
        swf_prefix(lenient=True, window=(-5, 9223372036854775807), orgs_code=3),
    ]
    for i, t in enumerate(texts):
        put(out, prefixes[i % len(prefixes)] + t)
        put(out, prefixes[(i + 1) % len(prefixes)] + t)
    # Bytes that are gzip themselves: whole, and cut short.
    for t in texts[:6] + texts[-3:]:
        z = gzip.compress(t, mtime=0)
        put(out, swf_prefix() + z)
        put(out, swf_prefix(lenient=True) + z[: len(z) // 2])
        put(out, swf_prefix() + z + z)


POLICIES = [
    "single-pool", "least-loaded", "rand", "mlp", "mst", "mst-user[missing=3600]",
    "pffp[phi=0.5,psi=0.5,h=0.78,beta=0.524,sm=1320,mu=5248,floor=true]",
    "pffp1", "pffp2", "fifo", "fcfs", "easy", "priority", "round-robin", "fair-share",
    "workflow-fcfs", "diet-ethic", "ref[sub=fair]", "ref[sub=fifo]", "rand[n=15]",
    "direct-contr", "ut-fair-share", "curr-fair-share", "age-boost[after=600,by=1]",
    "age-boost[after=10m,by=1]", "age-boost[after=600,by=2]", "workflow-fairness[tau=0.2,every=0]",
    " age-boost[ after = 10m , by=2 ] ", "x[a=1,b=2.5,c=zipf:1,d=-3]", "age-boost[after=1.5h]",
    "age-boost[after=250ms,by=9223372036854775807]", "age-boost[after=0,by=-9223372036854775808]",
    "rand[n=18446744073709551615]", "rand[n=0]", "mst-user[missing=1e308]", "pffp[h=nan]",
    "workflow-fairness[tau=1e-300,every=1ms]", "", "fifo[", "fifo[a]", "fifo[a=1,a=2]", "fi fo",
    "a[b=[c]]", "a[=1]", "x[file=/etc/passwd]", "x[a=b_c]", "x/y", "600", "10m", "1.5h", "250ms",
]

PLATFORMS = [
    "[[org]]\nprocs = 4\nusers = [1]\n",
    "unlisted = \"b\"\n[[org]]\nname = \"a\"\nprocs = 1\n[[org]]\nname = \"b\"\nprocs = 1\n",
    "org = [{ name = \"x\", procs = 2, users = [5] }]\n",
    "unlisted = \"random\"\n[[org]]\nprocs = 2\n[[org]]\nprocs = 1\n[[org]]\nprocs = 1\n",
    "[[org]]\nprocs = 1\nprox = 3\n",
    "[[org]]\nprocs = \"40\"\n",
    "[[org]]\nprocs = 1.5\n",
    "[[org]]\nprocs = 1\nusers = 3\n",
    "[org]\nprocs = 1\n",
    "[[org]]\nprocs = 1\n\n[[org]]\nprocs = 1\nunlisted = \"random\"\n",
    "[[org]]\nprocs = 4294967296\n",
    "[[org]]\nprocs = 99999999999999999999999\n",
    "[[org]]\nprocs = 4294967295\n[[org]]\nprocs = 1\n",
    "[[org]]\nprocs = 4294967295\n",
    "[[org]]\nprocs = 16777217\n",
    "[[org]]\nname = \"lpc\"\nprocs = 1\nusers = [1, 2]\n\n[[org]]\nname = \"cern\"\nprocs = 1\nusers = [3,\n  2]\n",
    "[[org]]\nprocs = 1\n[[org]]\nname = \"org0\"\nprocs = 1\n",
    "[[org]]\nname = \"random\"\nprocs = 1\n",
    "\nunlisted = \"cren\"\n[[org]]\nname = \"cern\"\nprocs = 1\n",
    "\norg = []\n",
    "[[org]]\nprocs = 0\n[[org]]\nprocs = 0\n",
    "[[org]]\nprocs = 4\n[[org]]\nusers = [1, 2\n",
    "[[org]\nprocs = 4\n",
    "\ufeff[[org]]\nprocs = 1\n",
    "\"\u0000\" = 1",
    "a.b.c = 1\n[[org]]\nprocs = 1",
    "[[org]]\nprocs = 1\nusers = [-9223372036854775808, 9223372036854775807]\n",
]

FLAGS = [
    "zipf\n2,4,8\n\n5\nallocated\nignore\n10m\n",
    "uniform\n\n100\n5\nrequested\nkill\n600\n",
    "zipf:1.5\n1\n\n1\n\n\n250ms\n",
    "zipf:0\n16777216\n\n16777216\n",
    "zipf:1e308\n\n4294967295\n4294967295\n",
    "zipf:-1\n0,0\n0\n0\n",
    "zipf:nan\n4294967295,4294967295\n\n2\n",
    "zipf:inf\n\n16777217\n3\nx\ny\n1e400\n",
]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    corpus = sys.argv[1]
    traces = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "data", "traces", "swf")
    # The three SWF targets (swf_reader, swf, simulate) share their input format.
    for target in ("swf_reader", "swf", "simulate"):
        swf_seeds(os.path.join(corpus, target), traces)
    for p in POLICIES:
        put(os.path.join(corpus, "policy_spec"), p)
    with open(os.path.join(ROOT, "examples", "platform.toml"), "rb") as f:
        put(os.path.join(corpus, "platform"), f.read())
    for p in PLATFORMS:
        put(os.path.join(corpus, "platform"), p)
    for f in FLAGS:
        put(os.path.join(corpus, "flags"), f)
    wf = os.path.join(corpus, "workflow")
    profiles = os.path.join(ROOT, "crates", "fairsched-trace", "profiles")
    for name in sorted(os.listdir(profiles)):
        with open(os.path.join(profiles, name), "rb") as f:
            put(wf, f.read())
    with open(os.path.join(ROOT, "crates", "fairsched-trace", "tests", "fixtures", "wfcommons-1.5-split.json"), "rb") as f:
        fixture = f.read()
    put(wf, fixture)
    put(wf, gzip.compress(fixture, mtime=0))
    pegasus = os.path.join(os.path.dirname(traces), "workflows", "pegasus")
    if os.path.isdir(pegasus):
        small = sorted((os.path.getsize(os.path.join(pegasus, n)), n) for n in os.listdir(pegasus) if n.endswith(".json.gz"))
        for _, n in small[:4]:
            with open(os.path.join(pegasus, n), "rb") as f:
                z = f.read()
            put(wf, gzip.decompress(z))
            put(wf, z)
    for name in sorted(os.listdir(corpus)):
        print(f"{name}: {len(os.listdir(os.path.join(corpus, name)))} seeds")


if __name__ == "__main__":
    main()
