//! What `fairsched simulate` reports beyond the means (README, "What
//! `simulate` writes"): percentiles, Jain's indices, each organization's
//! owned and received shares, the log's failed and cancelled jobs, the
//! definitions, and the tool's version, commit and command line; and that
//! two runs write the same bytes but for the wall time.

use fairsched_trace::{FilterCounts, FilterOptions, SwfReader, clean};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Runs `fairsched simulate ARGS --out DIR/out --no-progress`; returns the
/// folder holding `out` and what it printed.
fn simulate(args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = bin()
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--no-progress")
        .output()
        .unwrap();
    let stdout = ok(o, &format!("simulate {args:?}"));
    (dir, stdout)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bundled() -> PathBuf {
    repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz")
}

fn shared_swf(name: &str) -> Option<PathBuf> {
    let p = repo().join("../shared/data/traces/swf").join(name);
    if p.is_file() {
        Some(p)
    } else {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping part of {}: {} not found\n", module_path!(), p.display()).as_bytes(),
        );
        None
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// A CSV file as rows of named cells (no quoted commas in these files).
fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{}: {l}", path.display());
            header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Five jobs on one processor (the sim crate's unit test has the same):
/// under fcfs, waits 0, 100, 140, 135, 0; responses 100, 150, 145, 155,
/// 10; bounded slowdowns 1, 3, 14.5, 7.75, 1. Job 4 failed in the log
/// (status 0), job 5 was cancelled (5).
const HAND: &str = "; MaxProcs: 1
1   0 -1 100 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2   0 -1  50 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
3  10 -1   5 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1
4  20 -1  20 1 -1 -1 1 -1 -1 0 2 1 -1 -1 -1 -1 -1
5 300 -1  10 1 -1 -1 1 -1 -1 5 3 1 -1 -1 -1 -1 -1
";

/// Users 1 and 2 in `a` (owning the processor), user 3 in `b` (none).
const HAND_PLATFORM: &str = "[[org]]\nname = \"a\"\nprocs = 1\nusers = [1, 2]\n\
                             [[org]]\nname = \"b\"\nprocs = 0\nusers = [3]\n";

#[test]
fn a_hand_made_log_gives_the_percentiles_jain_and_shares_worked_out_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hand.swf");
    let platform = dir.path().join("hand.toml");
    fs::write(&log, HAND).unwrap();
    fs::write(&platform, HAND_PLATFORM).unwrap();
    let (out, stdout) = simulate(&[
        "--trace",
        log.to_str().unwrap(),
        "--platform",
        platform.to_str().unwrap(),
        "--policy",
        "fcfs",
    ]);
    let out = out.path().join("out");
    let s = json(&out.join("summary.json"));
    let p = &s["percentiles"];
    // Nearest rank of 5 values: p50 the 3rd, p90 and p99 the 5th.
    let expect = |d: &Value, v: [f64; 4]| {
        assert_eq!(d["n"], 5, "{d}");
        for (k, x) in ["p50", "p90", "p99", "max"].iter().zip(v) {
            assert_eq!(f64_of(&d[k]), x, "{k} of {d}");
        }
    };
    expect(&p["wait_s"], [100.0, 140.0, 140.0, 140.0]);
    expect(&p["response_s"], [145.0, 155.0, 155.0, 155.0]);
    expect(&p["bounded_slowdown"], [3.0, 14.5, 14.5, 14.5]);

    // Jain over users' mean bsld (2, 11.125, 1) and over organizations'
    // (a: (1 + 3 + 14.5 + 7.75) / 4 = 6.5625; b: 1).
    let jain =
        |x: &[f64]| x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
    assert_eq!(s["jain_users_bsld"]["n"], 3);
    assert!((f64_of(&s["jain_users_bsld"]["index"]) - jain(&[2.0, 11.125, 1.0])).abs() < 1e-12);
    assert_eq!(s["jain_orgs_bsld"]["n"], 2);
    assert!((f64_of(&s["jain_orgs_bsld"]["index"]) - jain(&[6.5625, 1.0])).abs() < 1e-12);

    // Org a owns the processor and its tasks held it 175 s of 185.
    let shares = s["org_shares"].as_array().unwrap();
    assert_eq!(shares.len(), 2);
    assert_eq!(
        (
            f64_of(&shares[0]["owned_share"]),
            f64_of(&shares[1]["owned_share"])
        ),
        (1.0, 0.0)
    );
    assert!((f64_of(&shares[0]["received_share"]) - 175.0 / 185.0).abs() < 1e-15);
    assert!((f64_of(&shares[1]["received_share"]) - 10.0 / 185.0).abs() < 1e-15);

    // The log's statuses, counted and per task.
    assert_eq!(
        s["log_status"],
        serde_json::json!({"completed": 3, "failed": 1, "cancelled": 1, "other": 0})
    );
    assert_eq!(s["outcomes"], serde_json::json!({"completed": 5}));
    let tasks = csv(&out.join("tasks.csv"));
    let status: BTreeMap<&str, &str> = tasks
        .iter()
        .map(|t| (t["job"].as_str(), t["log_status"].as_str()))
        .collect();
    assert_eq!(
        status,
        BTreeMap::from([("1", "1"), ("2", "1"), ("3", "1"), ("4", "0"), ("5", "5")])
    );
    // Rows in the order the tasks ended.
    let ends: Vec<f64> = tasks.iter().map(|t| t["end"].parse().unwrap()).collect();
    assert_eq!(ends, [100.0, 150.0, 155.0, 175.0, 310.0]);

    // orgs.csv: processors and shares of both; users.csv: each user's org.
    let orgs = csv(&out.join("orgs.csv"));
    let row = |o: &BTreeMap<String, String>| {
        ["org", "procs", "owned_share", "received_share", "tasks"].map(|k| o[k].clone())
    };
    assert_eq!(row(&orgs[0])[..4], ["0", "1", "1", &format!("{}", 175.0 / 185.0)]);
    assert_eq!(row(&orgs[1])[..4], ["1", "0", "0", &format!("{}", 10.0 / 185.0)]);
    let users: Vec<(String, String)> = csv(&out.join("users.csv"))
        .into_iter()
        .map(|u| (u["user"].clone(), u["org"].clone()))
        .collect();
    let want: Vec<(String, String)> = [("1", "0"), ("2", "0"), ("3", "1")]
        .iter()
        .map(|(u, o)| (u.to_string(), o.to_string()))
        .collect();
    assert_eq!(users, want);

    // The printed table shows the p90 and p99 of wait, the p99 of bsld.
    let header = stdout.lines().find(|l| l.starts_with("policy")).unwrap();
    assert!(
        header.contains("p90_wait") && header.contains("p99_bsld"),
        "{stdout}"
    );
    let row = stdout.lines().find(|l| l.starts_with("fcfs")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["fcfs", "310", "75", "140", "140", "5.45", "14.5", "0.597"],
        "{stdout}"
    );
}

#[test]
fn the_summary_says_its_tool_commit_command_and_definitions() {
    let (dir, _) = simulate(&["--policy", "fifo", "--window", "600000,50000", "--seed", "3"]);
    let out = dir.path().join("out");
    let s = json(&out.join("summary.json"));
    let tool = &s["tool"];
    assert_eq!(tool["name"], "fairsched");
    assert_eq!(tool["version"], env!("CARGO_PKG_VERSION"));
    let command = tool["command"].as_str().unwrap();
    assert_eq!(
        command,
        format!(
            "fairsched simulate --policy fifo --window 600000,50000 --seed 3 --out {} --no-progress",
            out.display()
        )
    );
    // The manifest says the same command line.
    let manifest = fs::read_to_string(out.join(".fairsched-out")).unwrap();
    assert!(manifest.contains(&format!("\ncommand {command}\n")), "{manifest}");

    let commit = tool["commit"].as_str().unwrap();
    // `fairsched --version` names the same build.
    let version = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("fairsched {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    let in_git = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .current_dir(repo())
        .output()
        .is_ok_and(|o| o.status.success());
    if in_git {
        assert!(
            hash.len() >= 4 && hash.chars().all(|c| c.is_ascii_hexdigit()),
            "commit {commit:?}"
        );
        // A commit of this repository (HEAD may have moved since the build).
        let kind = Command::new("git")
            .args(["cat-file", "-t", hash])
            .current_dir(repo())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&kind.stdout).trim(), "commit", "{commit}");
    } else {
        assert_eq!(commit, "unknown");
    }

    assert_eq!(s["seed"], 3);
    let wall = f64_of(&s["wall_time_s"]);
    assert_eq!(wall, (wall * 1000.0).round() / 1000.0, "rounded to the ms");
    let d = s["definitions"].as_object().unwrap();
    for k in [
        "units",
        "wait",
        "response",
        "bounded_slowdown",
        "makespan",
        "utilization",
        "percentiles",
        "jain",
        "org_shares",
        "log_status",
    ] {
        assert!(
            d.get(k).and_then(Value::as_str).is_some_and(|t| t.len() > 20),
            "{k}: {d:?}"
        );
    }
    assert_eq!(s["definitions"]["bounded_slowdown_tau_s"], 10.0);
    assert!(d["percentiles"].as_str().unwrap().contains("nearest rank"));
    // One organization: it owns everything and received everything.
    let orgs = csv(&out.join("orgs.csv"));
    assert_eq!(orgs.len(), 1);
    assert_eq!(
        [
            &orgs[0]["procs"],
            &orgs[0]["owned_share"],
            &orgs[0]["received_share"]
        ],
        ["100", "1", "1"]
    );
}

/// The kept jobs' statuses (SWF field 11) of a log, counted directly,
/// for the jobs submitted in `[start, start + len)`.
fn log_statuses(path: &Path, start: i64, len: i64) -> BTreeMap<i64, u64> {
    let mut r = SwfReader::open(path).unwrap();
    let mut counts = FilterCounts::default();
    let mut by = BTreeMap::new();
    while let Some(rec) = r.next_job().unwrap() {
        if let Some(job) = clean(&rec, FilterOptions::default(), &mut counts)
            && job.submit >= start
            && job.submit < start + len
        {
            *by.entry(job.status).or_insert(0) += 1;
        }
    }
    by
}

/// Simulates a window of a real log and checks `log_status` and
/// tasks.csv's column against a direct count of field 11.
fn failed_and_cancelled_match_the_log(log: &Path, start: i64, len: i64) {
    let direct = log_statuses(log, start, len);
    let n = |s: i64| direct.get(&s).copied().unwrap_or(0);
    let window = format!("{start},{len}");
    let (dir, _) = simulate(&[
        "--trace",
        log.to_str().unwrap(),
        "--policy",
        "fifo",
        "--window",
        &window,
    ]);
    let out = dir.path().join("out");
    let s = json(&out.join("summary.json"));
    let ls = &s["log_status"];
    let total: u64 = direct.values().sum();
    assert_eq!(s["jobs"], total);
    assert_eq!(ls["failed"], n(0), "{}: {ls}", log.display());
    assert_eq!(ls["cancelled"], n(5), "{}: {ls}", log.display());
    assert_eq!(ls["completed"], n(1), "{}: {ls}", log.display());
    assert_eq!(ls["other"], total - n(0) - n(1) - n(5));
    let mut column: BTreeMap<i64, u64> = BTreeMap::new();
    for t in csv(&out.join("tasks.csv")) {
        *column.entry(t["log_status"].parse().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(column, direct, "{}", log.display());
    // Failed and cancelled jobs still run as logged in the simulation.
    assert_eq!(s["outcomes"]["completed"], total);
}

#[test]
fn failed_and_cancelled_jobs_are_counted_as_the_log_says() {
    // KTH-SP2 (bundled): 7,944 failed jobs (status 0) among 28,467 kept.
    let kth = bundled();
    let d = log_statuses(&kth, 0, i64::MAX / 2);
    assert_eq!((d[&0], d[&1]), (7944, 20523));
    failed_and_cancelled_match_the_log(&kth, 600_000, 400_000);
    // SDSC-SP2: cancelled jobs (status 5) that ran.
    if let Some(sdsc) = shared_swf("SDSC-SP2-1998-4.2-cln.swf.gz") {
        assert!(
            log_statuses(&sdsc, 0, 2_000_000)
                .get(&5)
                .is_some_and(|&c| c > 100)
        );
        failed_and_cancelled_match_the_log(&sdsc, 0, 2_000_000);
    }
}

#[test]
fn percentiles_agree_with_tasks_csv_and_shares_sum_to_one_on_a_real_log() {
    let (dir, _) = simulate(&[
        "--policy",
        "fair-share",
        "--orgs",
        "4",
        "--split-parallel",
        "--window",
        "600000,300000",
        "--seed",
        "5",
    ]);
    let out = dir.path().join("out");
    let s = json(&out.join("summary.json"));
    let tasks = csv(&out.join("tasks.csv"));
    // Nearest rank, recomputed from tasks.csv.
    let pct = |mut v: Vec<f64>, p: usize| {
        v.sort_by(f64::total_cmp);
        v[(p * v.len()).div_ceil(100) - 1]
    };
    let col = |name: &str, completed_only: bool| -> Vec<f64> {
        tasks
            .iter()
            .filter(|t| !completed_only || t["outcome"] == "completed")
            .filter(|t| !t[name].is_empty())
            .map(|t| t[name].parse().unwrap())
            .collect()
    };
    for (key, name, completed_only, tol) in [
        ("wait_s", "wait", false, 0.0),
        ("response_s", "response", true, 0.0),
        // tasks.csv rounds bsld to 4 decimals.
        ("bounded_slowdown", "bsld", true, 1e-4),
    ] {
        let v = col(name, completed_only);
        let d = &s["percentiles"][key];
        assert_eq!(d["n"], v.len(), "{key}");
        assert!(v.len() > 1000, "{key}: {}", v.len());
        for p in [50, 90, 99] {
            let got = f64_of(&d[format!("p{p}")]);
            let want = pct(v.clone(), p);
            assert!(
                (got - want).abs() <= tol * want.max(1.0),
                "{key} p{p}: {got} vs {want}"
            );
        }
        let max = v.iter().copied().fold(f64::MIN, f64::max);
        assert!((f64_of(&d["max"]) - max).abs() <= tol * max, "{key} max");
        assert!(f64_of(&d["p50"]) <= f64_of(&d["p90"]) && f64_of(&d["p99"]) <= f64_of(&d["max"]));
    }

    let shares = s["org_shares"].as_array().unwrap();
    assert_eq!(shares.len(), 4);
    let sum = |k: &str| shares.iter().map(|o| f64_of(&o[k])).sum::<f64>();
    assert!((sum("owned_share") - 1.0).abs() < 1e-12);
    assert!((sum("received_share") - 1.0).abs() < 1e-12);
    let procs: Vec<u64> = shares.iter().map(|o| o["procs"].as_u64().unwrap()).collect();
    let per_org: Vec<u64> = s["platform"]["per_org"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(procs, per_org);
    // orgs.csv has the same shares (serde_json reads floats to within an
    // ulp); Jain over its mean bsld (3 decimals).
    let orgs = csv(&out.join("orgs.csv"));
    for (o, sh) in orgs.iter().zip(shares) {
        let (a, b) = (
            o["received_share"].parse::<f64>().unwrap(),
            f64_of(&sh["received_share"]),
        );
        assert!((a - b).abs() <= 1e-15, "{a} vs {b}");
        assert_eq!(o["procs"], sh["procs"].to_string());
    }
    let x: Vec<f64> = orgs.iter().map(|o| o["mean_bsld"].parse().unwrap()).collect();
    let j = x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
    let got = f64_of(&s["jain_orgs_bsld"]["index"]);
    assert!((got - j).abs() < 1e-3, "{got} vs {j}");
    assert!(got > 0.25 && got <= 1.0);
    // users.csv: each user's organization is the one of its tasks.
    let mut org_of: BTreeMap<&str, &str> = BTreeMap::new();
    for t in &tasks {
        let org = *org_of.entry(t["user"].as_str()).or_insert(t["org"].as_str());
        assert_eq!(org, t["org"], "user {}", t["user"]);
    }
    for u in csv(&out.join("users.csv")) {
        assert_eq!(org_of[u["user"].as_str()], u["org"], "user {}", u["user"]);
    }
}

#[test]
fn the_comparison_carries_every_figure_and_its_printed_table_fits_80_columns() {
    let (dir, stdout) = simulate(&[
        "--policy",
        "fcfs",
        "--policy",
        "round-robin",
        "--orgs",
        "3",
        "--window",
        "600000,300000",
    ]);
    let out = dir.path().join("out");
    let rows = csv(&out.join("comparison.csv"));
    let json_rows = json(&out.join("comparison.json"));
    for (i, (r, p)) in rows.iter().zip(["fcfs", "round-robin"]).enumerate() {
        let s = json(&out.join(p).join("summary.json"));
        assert_eq!(r["policy"], p);
        let pc = &s["percentiles"];
        for (col, v, d) in [
            ("p50_wait_s", &pc["wait_s"]["p50"], 0),
            ("p90_wait_s", &pc["wait_s"]["p90"], 0),
            ("p99_wait_s", &pc["wait_s"]["p99"], 0),
            ("max_wait_s", &pc["wait_s"]["max"], 0),
            ("p99_response_s", &pc["response_s"]["p99"], 0),
            ("max_response_s", &pc["response_s"]["max"], 0),
            ("p50_bsld", &pc["bounded_slowdown"]["p50"], 2),
            ("p99_bsld", &pc["bounded_slowdown"]["p99"], 2),
            ("max_bsld", &pc["bounded_slowdown"]["max"], 2),
            ("jain_users_bsld", &s["jain_users_bsld"]["index"], 3),
            ("jain_orgs_bsld", &s["jain_orgs_bsld"]["index"], 3),
        ] {
            assert_eq!(r[col], format!("{:.d$}", f64_of(v)), "{p} {col}");
            assert!(json_rows[i][col].is_number(), "{p} {col}: {}", json_rows[i][col]);
        }
        assert_eq!(r["log_failed"], s["log_status"]["failed"].to_string());
        assert_eq!(r["log_cancelled"], s["log_status"]["cancelled"].to_string());
    }
    // The table: from its header to the blank line after it.
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("policy"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() >= 4, "{stdout}");
    for l in &table {
        assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
    }
}

/// Every file under `dir`, by relative path.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The bytes of a result file without what measures the host: summary's
/// `wall_time_s`, the comparison's `wall_s` column.
fn without_wall_time(name: &Path, bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let file = name.file_name().unwrap().to_str().unwrap();
    let kept: Vec<String> = match file {
        "summary.json" => text
            .lines()
            .filter(|l| !l.trim_start().starts_with("\"wall_time_s\""))
            .map(String::from)
            .collect(),
        "comparison.json" => text
            .lines()
            .filter(|l| !l.trim_start().starts_with("\"wall_s\""))
            .map(String::from)
            .collect(),
        "comparison.csv" => text
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect(),
        _ => return bytes.to_vec(),
    };
    kept.join("\n").into_bytes()
}

#[test]
fn two_runs_write_the_same_bytes_but_for_the_wall_time() {
    let args = [
        "simulate",
        "--policy",
        "fair-share",
        "--policy",
        "easy",
        "--orgs",
        "3",
        "--split-parallel",
        "--window",
        "600000,200000",
        "--seed",
        "9",
        "--no-progress",
        "--out",
        "out",
    ];
    // The same command line in two folders (the command is in the files).
    let runs: Vec<tempfile::TempDir> = (0..2)
        .map(|_| {
            let d = tempfile::tempdir().unwrap();
            ok(
                bin().args(args).current_dir(d.path()).output().unwrap(),
                "simulate",
            );
            d
        })
        .collect();
    let a = files(&runs[0].path().join("out"));
    let b = files(&runs[1].path().join("out"));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    assert!(a.len() >= 11, "{:?}", a.keys());
    for (name, bytes) in &a {
        assert!(
            without_wall_time(name, bytes) == without_wall_time(name, &b[name]),
            "{} differs between two runs",
            name.display()
        );
    }
    // Only the wall time was left out.
    let s = String::from_utf8(a[Path::new("easy/summary.json")].clone()).unwrap();
    assert_eq!(
        s.matches("wall_time_s").count(),
        2,
        "the value and its definition"
    );
}

/// The commit `fairsched --version` names.
fn built_commit() -> String {
    let o = bin().arg("--version").output().unwrap();
    let v = String::from_utf8(o.stdout).unwrap();
    let (_, rest) = v.trim().split_once("(commit ").expect("`fairsched X (commit C)`");
    rest.trim_end_matches(')').to_string()
}

/// Every command that writes a `summary.json` (or `tau.json`) puts the
/// same `tool` block first: name, version, commit and the full command
/// line; the folder's manifest names the same commit.
#[test]
fn every_summary_says_its_tool_version_commit_and_command() {
    let dir = tempfile::tempdir().unwrap();
    let kth = bundled();
    let kth = kth.to_str().unwrap();
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let kth_procs = format!("{kth}:100");
    let runs: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![
                "simulate",
                "--policy",
                "fcfs",
                "--policy",
                "easy",
                "--window",
                "600000,50000",
                "--no-progress",
                "--out",
                &out("sim"),
            ],
            vec!["fcfs/summary.json", "easy/summary.json"],
        ),
        (
            vec![
                "experiment",
                "shapley",
                "--trace",
                &kth_procs,
                "--orgs",
                "3",
                "--instances",
                "2",
                "--no-progress",
                "--out",
                &out("shapley"),
            ],
            vec!["summary.json"],
        ),
        (
            vec![
                "experiment",
                "pffp",
                "--test",
                "2",
                "--logs",
                kth,
                "--instances",
                "1",
                "--no-progress",
                "--out",
                &out("pffp"),
            ],
            vec!["summary.json"],
        ),
        (
            vec![
                "experiment",
                "diet-ethic",
                "--scenario",
                "night-consecutive",
                "--runs",
                "1",
                "--n-submit",
                "100",
                "--no-progress",
                "--out",
                &out("diet"),
            ],
            vec!["summary.json"],
        ),
        (
            vec![
                "experiment",
                "workflow-fairness",
                "--workflows",
                "gate,simubloch",
                "--repetitions",
                "1",
                "--no-progress",
                "--out",
                &out("workflow"),
            ],
            vec!["summary.json"],
        ),
        (
            vec!["trace", "stats", kth, "--out", &out("stats")],
            vec!["summary.json"],
        ),
        (
            vec![
                "trace",
                "tau",
                "gate,simubloch",
                "--repetitions",
                "1",
                "--no-progress",
                "--out",
                &out("tau"),
            ],
            vec!["tau.json"],
        ),
    ]
    .into_iter()
    .map(|(args, files)| (args.into_iter().map(String::from).collect(), files))
    .collect();
    let commit = built_commit();
    for (args, files) in &runs {
        ok(bin().args(args).output().unwrap(), &args.join(" "));
        let folder = Path::new(args.last().unwrap());
        for f in files {
            let path = folder.join(f);
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let s: Value = serde_json::from_str(&text).unwrap();
            let tool = &s["tool"];
            assert_eq!(tool["name"], "fairsched", "{}", path.display());
            assert_eq!(tool["version"], env!("CARGO_PKG_VERSION"), "{}", path.display());
            assert_eq!(tool["commit"], commit.as_str(), "{}", path.display());
            assert_eq!(
                tool["command"],
                format!("fairsched {}", args.join(" ")),
                "{}",
                path.display()
            );
            // The block comes first: a reader sees who wrote the file.
            assert!(
                text.trim_start_matches(['{', '\n', ' ']).starts_with("\"tool\""),
                "{}",
                path.display()
            );
        }
        let manifest = fs::read_to_string(folder.join(".fairsched-out")).unwrap();
        assert!(
            manifest.contains(&format!("\ncommit {commit}\n")),
            "{}: {manifest}",
            folder.display()
        );
    }
}

/// `--platform` names the organizations: orgs.csv has a `name` column
/// beside the index, and summary.json's per-organization entries carry the
/// names too (`org<i>` for one the file does not name).
#[test]
fn organizations_are_named_as_the_platform_file_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hand.swf");
    let platform = dir.path().join("named.toml");
    fs::write(&log, HAND).unwrap();
    // The second organization has no name: `org1`.
    fs::write(
        &platform,
        "[[org]]\nname = \"physics\"\nprocs = 1\nusers = [1, 2]\n\
         [[org]]\nprocs = 0\nusers = [3]\n",
    )
    .unwrap();
    let (out, _) = simulate(&[
        "--trace",
        log.to_str().unwrap(),
        "--platform",
        platform.to_str().unwrap(),
        "--policy",
        "fair-share",
    ]);
    let out = out.path().join("out");
    let orgs = csv(&out.join("orgs.csv"));
    let header = fs::read_to_string(out.join("orgs.csv")).unwrap();
    assert!(header.starts_with("org,name,tasks,"), "{header}");
    let named: Vec<(&str, &str, &str)> = orgs
        .iter()
        .map(|o| (o["org"].as_str(), o["name"].as_str(), o["tasks"].as_str()))
        .collect();
    assert_eq!(named, [("0", "physics", "4"), ("1", "org1", "1")]);
    let s = json(&out.join("summary.json"));
    let names = |list: &Value| -> Vec<(u64, String)> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["org"].as_u64().unwrap(),
                    o["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let want = vec![(0, "physics".to_string()), (1, "org1".to_string())];
    assert_eq!(names(&s["org_shares"]), want);
    assert_eq!(names(&s["fairness"]["orgs"]), want);
    // Without a platform file: org0, org1, …
    let (plain, _) = simulate(&["--policy", "fcfs", "--orgs", "3", "--window", "600000,50000"]);
    let orgs = csv(&plain.path().join("out/orgs.csv"));
    let names: Vec<&str> = orgs.iter().map(|o| o["name"].as_str()).collect();
    assert_eq!(names, ["org0", "org1", "org2"]);
}

/// The one `wrote …` line of what a run printed.
fn wrote_line(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("wrote ")).collect();
    assert_eq!(lines.len(), 1, "one line: {stdout}");
    lines[0].to_string()
}

/// The names in a list `a, b (what it is), /path/c (…)`.
fn listed(list: &str) -> Vec<String> {
    let mut v: Vec<String> = list
        .split(", ")
        .map(|f| f.split(" (").next().unwrap().trim().to_string())
        .collect();
    v.sort();
    v
}

/// The names in a folder, sorted, without the manifest.
fn folder_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".fairsched-out")
        .collect();
    v.sort();
    v
}

/// The line printed after `simulate` lists every file the run wrote: the
/// same list that put them in place.
#[test]
fn the_wrote_line_lists_every_file_written() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("jobs.csv");
    let (out, stdout) = simulate(&[
        "--policy",
        "easy",
        "--window",
        "600000,50000",
        "--swf-out",
        "schedule.swf",
        "--batsim-jobs",
        elsewhere.to_str().unwrap(),
    ]);
    let out = out.path().join("out");
    let line = wrote_line(&stdout);
    let prefix = format!("wrote {} in ", out.display());
    assert!(line.starts_with(&prefix), "{line}");
    let (_, files) = line.split_once(" s: ").expect("`wrote OUT in T s: FILES`");
    let mut want = folder_names(&out);
    want.push(elsewhere.display().to_string());
    want.sort();
    assert_eq!(listed(files), want, "{line}");
    for f in [
        "orgs.csv",
        "users.csv",
        "summary.json",
        "tasks.csv",
        "schedule.swf",
    ] {
        assert!(want.contains(&f.to_string()), "{f}: {want:?}");
    }
    assert!(line.contains("schedule.swf (the schedule as SWF)"), "{line}");

    // Several policies: the top-level files, then each folder's.
    let (out, stdout) = simulate(&[
        "--policy",
        "fcfs",
        "--policy",
        "easy",
        "--window",
        "600000,50000",
        "--swf-out",
        "s.swf",
    ]);
    let out = out.path().join("out");
    let line = wrote_line(&stdout);
    let (_, rest) = line.split_once(" s: ").unwrap();
    let (top, each) = rest
        .split_once(", and in each policy's folder (fcfs/, easy/): ")
        .unwrap_or_else(|| panic!("{line}"));
    let mut top_want: Vec<String> = folder_names(&out)
        .into_iter()
        .filter(|n| !out.join(n).is_dir())
        .collect();
    top_want.sort();
    assert_eq!(listed(top), top_want, "{line}");
    for p in ["fcfs", "easy"] {
        assert_eq!(listed(each), folder_names(&out.join(p)), "{p}: {line}");
    }
}
