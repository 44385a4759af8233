//! End-to-end tests of the `fairsched` binary: real processes, real files,
//! the bundled real log, and `../shared/data` when it is present.

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "fairsched {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Runs `fairsched simulate ARGS --out TMP --no-progress`, which must
/// succeed; returns the output folder and what it printed.
fn simulate(args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend(["--out", dir.path().to_str().unwrap(), "--no-progress"]);
    let stdout = ok(&all);
    (dir, stdout)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shared_swf() -> Option<PathBuf> {
    let d = repo().join("../shared/data/traces/swf");
    if d.is_dir() {
        Some(d)
    } else {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        None
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// summary.json without its wall time and `tool` (the command line names
/// the output folder; the commit moves): the parts that may vary.
fn stable_summary(path: &Path) -> Value {
    let mut v = json(path);
    let o = v.as_object_mut().unwrap();
    o.remove("wall_time_s").expect("has wall_time_s");
    o.remove("tool").expect("has tool");
    v
}

#[test]
fn the_bundled_log_is_the_shared_one() {
    let bundled = fs::read(repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz")).unwrap();
    if let Some(d) = shared_swf() {
        assert_eq!(bundled, fs::read(d.join("KTH-SP2-1996-2.1-cln.swf.gz")).unwrap());
    }
    let sums = fs::read_to_string(repo().join("data/PROVENANCE.md")).unwrap();
    assert!(sums.contains("3e152f201fd2e96808a735bced6ea6eb0bb07fdc447689cafb0750d87b264c0b"));
}

#[test]
fn demo_runs_with_no_arguments() {
    let (dir, stdout) = simulate(&[]);
    for p in ["fcfs", "easy", "first-fit", "round-robin", "fair-share"] {
        assert!(stdout.contains(p), "{stdout}");
        let s = json(&dir.path().join(p).join("summary.json"));
        assert_eq!(s["jobs"], 28467, "{p}");
        assert_eq!(s["outcomes"]["completed"], 28467, "{p}");
        assert_eq!(s["platform"]["total"], 100);
    }
    let csv = fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6);
    // Backfilling beats strict FCFS on mean wait on this log.
    let wait = |p: &str| {
        json(&dir.path().join(p).join("summary.json"))["mean_wait_s"]
            .as_f64()
            .unwrap()
    };
    assert!(
        wait("easy") < wait("fcfs") / 10.0,
        "easy {} fcfs {}",
        wait("easy"),
        wait("fcfs")
    );
}

#[test]
fn one_policy_writes_summary_and_tasks() {
    let (dir, _) = simulate(&["--policy", "fcfs", "--window", "600000,200000"]);
    let s = json(&dir.path().join("summary.json"));
    for k in [
        "policy",
        "trace",
        "jobs",
        "makespan_s",
        "mean_wait_s",
        "mean_bounded_slowdown",
        "utilization",
        "filters",
        "seed",
        "wall_time_s",
    ] {
        assert!(s.get(k).is_some(), "summary.json lacks {k}: {s}");
    }
    let jobs = s["jobs"].as_u64().unwrap();
    assert!(jobs > 100);
    let tasks = fs::read_to_string(dir.path().join("tasks.csv")).unwrap();
    assert_eq!(tasks.lines().count() as u64, jobs + 1);
    assert!(tasks.starts_with(fairsched_report::TASK_COLUMNS));
    assert!(!dir.path().join("tasks.csv.partial").exists());
    let orgs = fs::read_to_string(dir.path().join("orgs.csv")).unwrap();
    assert_eq!(orgs.lines().count(), 2, "one organization: {orgs}");
}

#[test]
fn snapshot_of_a_short_real_trace_run() {
    let (dir, _) = simulate(&[
        "--policy",
        "easy",
        "--window",
        "600000,100000",
        "--orgs",
        "3",
        "--seed",
        "11",
        "--phi",
    ]);
    let summary = serde_json::to_string_pretty(&stable_summary(&dir.path().join("summary.json"))).unwrap();
    let tasks = fs::read_to_string(dir.path().join("tasks.csv")).unwrap();
    let head: Vec<&str> = tasks.lines().take(16).collect();
    let orgs = fs::read_to_string(dir.path().join("orgs.csv")).unwrap();
    insta::assert_snapshot!(format!("{summary}\n\n{}\n\n{orgs}", head.join("\n")));
}

/// φ (2^k − 2 coalition schedules of the whole run) only with `--phi`:
/// without it the same run reports the same ψ, empty φ cells in orgs.csv,
/// and a note saying how to get φ; every other file is the same.
#[test]
fn phi_only_on_request() {
    let args = [
        "--policy",
        "easy",
        "--window",
        "600000,100000",
        "--orgs",
        "3",
        "--seed",
        "11",
    ];
    let (plain, _) = simulate(&args);
    let (with, _) = simulate(&[&args[..], &["--phi"]].concat());
    let (a, b) = (
        stable_summary(&plain.path().join("summary.json")),
        stable_summary(&with.path().join("summary.json")),
    );
    let note = a["fairness"]["note"].as_str().unwrap();
    assert!(
        note.contains("6 coalition schedules") && note.contains("--phi"),
        "{note}"
    );
    assert_eq!(b["fairness"]["note"], Value::Null);
    for u in 0..3 {
        assert_eq!(a["fairness"]["orgs"][u]["psi"], b["fairness"]["orgs"][u]["psi"]);
        assert_eq!(a["fairness"]["orgs"][u]["phi"], Value::Null);
        assert!(b["fairness"]["orgs"][u]["phi"].as_f64().unwrap() > 0.0);
    }
    let (mut a, mut b) = (a, b);
    a.as_object_mut().unwrap().remove("fairness");
    b.as_object_mut().unwrap().remove("fairness");
    assert_eq!(a, b);
    let read = |d: &tempfile::TempDir, f: &str| fs::read_to_string(d.path().join(f)).unwrap();
    for f in ["tasks.csv", "users.csv"] {
        assert_eq!(read(&plain, f), read(&with, f), "{f}");
    }
    for (p, w) in read(&plain, "orgs.csv")
        .lines()
        .zip(read(&with, "orgs.csv").lines())
        .skip(1)
    {
        // psi_s2 then two empty cells, against psi_s2, phi_s2, phi_minus_psi_s2.
        assert!(p.ends_with(",,"), "{p}");
        assert_eq!(p.trim_end_matches(','), w.rsplitn(3, ',').nth(2).unwrap());
    }
}

#[test]
fn same_seed_same_bytes_whatever_the_thread_count() {
    let runs: Vec<tempfile::TempDir> = ["1", "2", "2"]
        .iter()
        .map(|threads| {
            let dir = tempfile::tempdir().unwrap();
            let o = bin()
                .env("RAYON_NUM_THREADS", threads)
                .args([
                    "simulate",
                    "--policy",
                    "fair-share",
                    "--policy",
                    "round-robin",
                    "--policy",
                    "easy",
                    "--split-parallel",
                    "--orgs",
                    "4",
                    "--window",
                    "600000,400000",
                    "--seed",
                    "7",
                    "--no-progress",
                    "--out",
                ])
                .arg(dir.path())
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            dir
        })
        .collect();
    for p in ["fair-share", "round-robin", "easy"] {
        let bytes = |d: &tempfile::TempDir, f: &str| fs::read(d.path().join(p).join(f)).unwrap();
        for f in ["tasks.csv", "orgs.csv", "users.csv"] {
            assert!(
                bytes(&runs[0], f) == bytes(&runs[1], f),
                "{p}/{f} differs between 1 and 2 threads"
            );
            assert!(
                bytes(&runs[1], f) == bytes(&runs[2], f),
                "{p}/{f} differs between two runs"
            );
        }
        let s = |d: &tempfile::TempDir| stable_summary(&d.path().join(p).join("summary.json"));
        assert_eq!(s(&runs[0]), s(&runs[1]));
    }
}

#[test]
fn the_same_policy_twice_gets_two_folders() {
    // It used to race two runs on one folder (a rename failed, or not,
    // depending on the thread count).
    for threads in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        let o = bin()
            .env("RAYON_NUM_THREADS", threads)
            .args(["simulate", "--window", "600000,100000", "--no-progress", "--out"])
            .arg(dir.path())
            .args(["--policy", "fifo", "--policy", "age-boost", "--policy", "fifo"])
            .args(["--control", "age-boost[after=10m]"])
            .output()
            .unwrap();
        // age-boost is a Control, not an Order: refused before anything runs.
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("--policy age-boost"));
        let o = bin()
            .env("RAYON_NUM_THREADS", threads)
            .args(["simulate", "--window", "600000,100000", "--no-progress", "--out"])
            .arg(dir.path())
            .args(["--policy", "fifo", "--policy", "priority", "--policy", "fifo"])
            .args(["--control", "age-boost[after=10m]"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // `fifo` is first-fit's former name: the runs are named first-fit.
        assert!(stdout.contains("first-fit@2"), "{stdout}");
        let tasks = |d: &str| fs::read(dir.path().join(d).join("tasks.csv")).unwrap();
        assert_eq!(tasks("first-fit"), tasks("first-fit@2"));
        assert_eq!(
            json(&dir.path().join("first-fit@2/summary.json"))["policy"],
            "first-fit"
        );
        let csv = fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
        assert_eq!(csv.lines().count(), 4, "{csv}");
    }
}

#[test]
fn the_seed_changes_the_user_to_organization_mapping() {
    let orgs = |seed: &str| {
        let (dir, _) = simulate(&[
            "--policy",
            "fair-share",
            "--orgs",
            "4",
            "--window",
            "600000,200000",
            "--seed",
            seed,
        ]);
        fs::read_to_string(dir.path().join("orgs.csv")).unwrap()
    };
    assert_ne!(orgs("1"), orgs("2"));
}

/// Runs `fairsched simulate ARGS --no-progress`, which must fail without a
/// panic; returns its exit code and what it printed on stderr.
fn simulate_fails(args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.push("--no-progress");
    let o = run(&all);
    assert!(!o.status.success(), "fairsched {all:?} should fail");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (o.status.code(), err)
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A missing file.
    let missing = dir.path().join("nope.swf");
    let (code, err) = simulate_fails(&["--trace", missing.to_str().unwrap(), "--policy", "fcfs"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("nope.swf"), "{err}");

    // A non-numeric run time on line 3: file, line and field are named.
    let bad = dir.path().join("bad.swf");
    fs::write(
        &bad,
        "; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 0 abc 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    let (code, err) = simulate_fails(&["--trace", bad, "--policy", "fcfs"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("bad.swf:3") && err.contains("run_time") && err.contains("abc"),
        "{err}"
    );

    // --lenient skips it, counts it, and the run goes on.
    let (out, stdout) = simulate(&["--trace", bad, "--policy", "fcfs", "--lenient"]);
    assert!(stdout.contains("bad_lines_skipped 1"), "{stdout}");
    assert_eq!(json(&out.path().join("summary.json"))["jobs"], 1);

    // An unknown policy names the known ones; a bad parameter names itself.
    // Both are command-line errors (exit 2).
    let (code, err) = simulate_fails(&["--policy", "fastest"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("fcfs"), "{err}");
    let (_, err) = simulate_fails(&["--policy", "priority", "--control", "age-boost[after=soon]"]);
    assert!(err.contains("soon"), "{err}");
    // A malformed window is refused by the flag parser.
    let (code, _) = simulate_fails(&["--window", "10"]);
    assert_eq!(code, Some(2));
}

#[test]
fn a_closed_pipe_stops_the_printing_not_the_run() {
    // `fairsched simulate | head`: the reader goes away early; the run must
    // still write its results and exit 0 (no broken-pipe panic).
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(["simulate", "--no-progress", "--window", "600000,100000", "--out"])
        .arg(dir.path())
        .args(["--policy", "fcfs", "--policy", "easy"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone before the first line
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for f in ["comparison.csv", "fcfs/summary.json", "easy/tasks.csv"] {
        assert!(dir.path().join(f).exists(), "{f} was not written");
    }
    for args in [
        &["policies"][..],
        &["trace", "info", "data/KTH-SP2-1996-2.1-cln.swf.gz"][..],
    ] {
        let mut child = bin()
            .current_dir(repo())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn flags_are_checked_before_the_trace_is_read() {
    // The trace does not exist: an error about the flag shows the flag was
    // checked first; each names its flag.
    for (flag, value, says) in [
        ("--procs", "0", "--procs 0"),
        ("--machines", "2,0", "machine 1 has 0 processors"),
        ("--orgs", "0", "--orgs 0"),
    ] {
        let (code, err) = simulate_fails(&["--trace", "/nonexistent/x.swf", "--policy", "fcfs", flag, value]);
        assert_eq!(code, Some(2));
        assert!(err.contains(says) && !err.contains("x.swf"), "{flag}: {err}");
    }
    // A file error says the OS error once.
    let (_, err) = simulate_fails(&["--trace", "/nonexistent/x.swf", "--policy", "fcfs"]);
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

/// Hostile numbers on every command's numeric flags: each is refused with
/// exit 2 by a message that names the flag, before anything is read or
/// contacted, and never with a panic or an overflow.
#[test]
fn numeric_flags_are_bounded_and_name_themselves() {
    let conn = ["--broker", "http://127.0.0.1:1", "--token", "x"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["simulate", "--seed", "-1"], "--seed"),
        (vec!["simulate", "--procs", "4294967295"], "--procs"),
        (vec!["simulate", "--procs", "-3"], "--procs"),
        (
            vec!["simulate", "--machines", "4294967295,4294967295"],
            "--machines",
        ),
        (vec!["simulate", "--orgs", "-1"], "--orgs"),
        (
            vec!["simulate", "--window", "9223372036854775807,9223372036854775807"],
            "--window",
        ),
        (vec!["simulate", "--window", "-5,10"], "--window"),
        (vec!["experiment", "shapley", "--instances", "-1"], "--instances"),
        (vec!["experiment", "diet-ethic", "--runs", "0"], "--runs"),
        (
            vec!["experiment", "workflow-fairness", "--exp", "1", "--tau", "-1"],
            "--tau",
        ),
        (vec!["trace", "tau", "gate", "--bin", "-1"], "--bin"),
        (vec!["serve", "--max-attempts", "-1"], "--max-attempts"),
        (vec!["admin", "init", "--seed", "-1"], "--seed"),
        (vec!["submit", "--count", "-1"], "--count"),
        (vec!["submit", "--count", "0"], "--count"),
        (
            vec!["optional", "--min", "-1", "--max", "2", "--deadline", "1s"],
            "--min",
        ),
        (vec!["worker", "--slots", "-1"], "--slots"),
        (vec!["worker", "--slots", "100000"], "--slots"),
        (vec!["simulate", "--machines", "-1,4"], "--machines"),
        (vec!["serve", "--lease", "-1s"], "--lease"),
        (
            vec!["optional", "--min", "1", "--max", "2", "--deadline", "-5m"],
            "--deadline",
        ),
        (
            vec!["experiment", "diet-ethic", "--n-submit", "-1,2"],
            "--n-submit",
        ),
    ];
    for (args, flag) in cases {
        let mut all = args.clone();
        if matches!(args[0], "submit" | "optional" | "worker") {
            all.extend_from_slice(&conn);
        }
        if matches!(args[0], "submit" | "optional") {
            all.extend_from_slice(&["--", "true"]);
        }
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("overflow"),
            "{all:?}: {err}"
        );
        assert!(err.contains(flag), "{all:?} does not name {flag}: {err}");
        assert!(!err.contains("unexpected argument"), "{all:?}: {err}");
    }
    // A negative value where one is meaningful is a value, not a flag: the
    // command goes on to contact the (absent) broker, a run error.
    let mut all = vec!["submit", "--priority", "-1"];
    all.extend_from_slice(&conn);
    all.extend_from_slice(&["--", "true"]);
    let o = run(&all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot reach the broker"), "{err}");
}

/// An organization-level policy with the default single organization is a
/// plain queue: the run says so (stderr and the table's notes), and does not
/// once there are organizations to share between.
#[test]
fn an_organization_policy_with_one_organization_warns() {
    let warn = "fair-share shares processors between organizations";
    let (_dir, stdout) = simulate(&["--policy", "fair-share", "--window", "600000,50000"]);
    assert!(stdout.contains(warn), "{stdout}");
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "simulate",
            "--no-progress",
            "--policy",
            "fair-share",
            "--window",
            "600000,50000",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains(warn));
    let (_dir, stdout) = simulate(&[
        "--policy",
        "fair-share",
        "--orgs",
        "3",
        "--window",
        "600000,50000",
    ]);
    assert!(!stdout.contains("warning"), "{stdout}");
    let (_dir, stdout) = simulate(&["--policy", "fcfs", "--window", "600000,50000"]);
    assert!(!stdout.contains("warning"), "{stdout}");
    assert!(ok(&["policies"]).contains("[between organizations"));
}

#[test]
fn too_wide_jobs_are_dropped_and_counted() {
    let (dir, stdout) = simulate(&["--policy", "fcfs", "--procs", "8", "--window", "600000,200000"]);
    let s = json(&dir.path().join("summary.json"));
    let too_wide = s["too_wide"].as_u64().unwrap();
    assert!(too_wide > 0);
    assert!(stdout.contains(&format!("{too_wide} job(s) dropped")), "{stdout}");
}

#[test]
fn trace_info_reports_header_and_counts() {
    let kth = repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz");
    let v: Value = serde_json::from_str(&ok(&["trace", "info", kth.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v["raw_jobs"], 28476);
    assert_eq!(v["processors"], 100);
    assert_eq!(v["header"]["time_zone_string"], "Europe/Stockholm");
    let text = ok(&["trace", "info", kth.to_str().unwrap()]);
    assert!(text.contains("28476"), "{text}");
}

#[test]
fn policies_lists_the_registry() {
    let text = ok(&["policies"]);
    let registry = fairsched_core::Registry::builtin();
    for e in registry.entries() {
        assert!(text.contains(e.name), "{} missing from:\n{text}", e.name);
    }
    assert!(text.contains("after=600"));
    let v: Value = serde_json::from_str(&ok(&["policies", "--json"])).unwrap();
    assert_eq!(v.as_array().unwrap().len(), registry.entries().len());
    // What each reads, as its entry declares it.
    for p in v.as_array().unwrap() {
        let kind = match p["kind"].as_str().unwrap() {
            "order" => fairsched_core::Kind::Order,
            "allocate" => fairsched_core::Kind::Allocate,
            _ => fairsched_core::Kind::Control,
        };
        let e = registry.entry(kind, p["name"].as_str().unwrap()).unwrap();
        assert_eq!(p["reads"], e.reads().name(), "{p}");
    }
}

#[test]
fn several_machines_with_least_loaded_and_aging() {
    let (dir, _) = simulate(&[
        "--machines",
        "2,4,8",
        "--policy",
        "priority",
        "--control",
        "age-boost[after=600]",
        "--split-parallel",
        "--window",
        "600000,100000",
    ]);
    let s = json(&dir.path().join("summary.json"));
    assert_eq!(s["allocate"], "least-loaded");
    assert_eq!(s["platform"]["machines"], serde_json::json!([2, 4, 8]));
    assert!(s["core"]["priority_changes"].as_u64().unwrap() > 0, "{s}");
    let tasks = fs::read_to_string(dir.path().join("tasks.csv")).unwrap();
    for m in ["0", "1", "2"] {
        assert!(
            tasks.lines().skip(1).any(|l| l.split(',').nth(4) == Some(m)),
            "no task on machine {m}"
        );
    }
}

/// Every shared log loads and simulates with every baseline order policy
/// (a 3.5-day window of each log here; bench/all-logs.sh replays them whole).
#[test]
fn every_shared_log_simulates_with_every_order_policy() {
    let Some(d) = shared_swf() else { return };
    let mut logs: Vec<PathBuf> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".swf.gz"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 9);
    for log in logs {
        let info: Value =
            serde_json::from_str(&ok(&["trace", "info", log.to_str().unwrap(), "--json"])).unwrap();
        let window = format!("{},300000", info["first_submit"].as_i64().unwrap());
        let orders: Vec<&str> = fairsched_core::Registry::builtin().names(fairsched_core::Kind::Order);
        let mut args = vec![
            "--trace",
            log.to_str().unwrap(),
            "--window",
            &window,
            "--orgs",
            "3",
        ];
        for p in &orders {
            args.extend(["--policy", p]);
        }
        let (dir, _) = simulate(&args);
        for p in &orders {
            let s = json(&dir.path().join(p).join("summary.json"));
            let jobs = s["jobs"].as_u64().unwrap();
            assert!(jobs > 0, "{}: {p}: no job in the window", log.display());
            let ended: u64 = s["outcomes"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(ended, jobs, "{}: {p}", log.display());
        }
    }
}

#[test]
fn a_platform_file_sets_the_organizations_and_who_belongs_to_them() {
    let file = repo().join("examples/platform.toml");
    let (dir, stdout) = simulate(&[
        "--platform",
        file.to_str().unwrap(),
        "--policy",
        "fair-share",
        "--window",
        "600000,200000",
    ]);
    assert!(stdout.contains("owning [40, 30, 30] (from "), "{stdout}");
    let s = json(&dir.path().join("summary.json"));
    assert_eq!(s["platform"]["per_org"], serde_json::json!([40, 30, 30]));
    assert_eq!(s["platform"]["machines"], serde_json::json!([100]));
    assert_eq!(s["platform"]["source"], "--platform");
    assert_eq!(s["orgs"], 3);
    // Every task's organization is the file's: listed users by their
    // organization, everyone else to "campus" (2).
    let org_of = |user: &str| match user {
        "6" | "3" | "14" | "84" | "67" => "0",
        "15" | "21" | "29" | "39" | "128" => "1",
        _ => "2",
    };
    let tasks = fs::read_to_string(dir.path().join("tasks.csv")).unwrap();
    let mut seen = [false; 3];
    for line in tasks.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f[3], org_of(f[2]), "{line}");
        seen[f[3].parse::<usize>().unwrap()] = true;
    }
    assert_eq!(seen, [true; 3], "every organization has jobs in this window");

    // --machines must add up to the file's 100 processors.
    let (_, stdout) = simulate(&[
        "--platform",
        file.to_str().unwrap(),
        "--policy",
        "fcfs",
        "--machines",
        "60,40",
        "--window",
        "600000,100000",
    ]);
    assert!(stdout.contains("as machines [60, 40]"), "{stdout}");
    let (code, err) = simulate_fails(&[
        "--platform",
        file.to_str().unwrap(),
        "--policy",
        "fcfs",
        "--machines",
        "60,60",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--machines gives 120 processors") && err.contains("platform.toml declares 100"),
        "{err}"
    );
    // --orgs and --ownership do not go with it.
    for flag in [["--orgs", "3"], ["--ownership", "uniform"]] {
        let (code, err) = simulate_fails(&[
            "--platform",
            file.to_str().unwrap(),
            "--policy",
            "fcfs",
            flag[0],
            flag[1],
        ]);
        assert_eq!(code, Some(2));
        assert!(err.contains("cannot be used with"), "{err}");
    }
}

#[test]
fn a_malformed_platform_file_names_the_file_the_line_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let cases = [
        (
            "[[org]]\nname = \"a\"\nprocs = -4\n",
            "bad.toml:3: key `org[0].procs`",
            "≥ 0",
        ),
        (
            "[[org]]\nprocs = 4\n\n[[org]]\nprocz = 4\n",
            "bad.toml:5: key `org[1].procz`",
            "unknown field",
        ),
        (
            "[[org]]\nprocs = 4\nusers = [1, 2\n",
            "bad.toml:3: key `org[0].users`",
            "invalid TOML",
        ),
        (
            "[[org]]\nname = \"a\"\nprocs = 4\nusers = [7]\n[[org]]\nname = \"b\"\nprocs = 4\nusers = [7]\n",
            "bad.toml:8: key `org[1].users[0]`",
            "user 7",
        ),
    ];
    for (text, at, says) in cases {
        fs::write(&bad, text).unwrap();
        // The file is read before the trace: the trace does not exist.
        let (code, err) = simulate_fails(&[
            "--trace",
            "/nonexistent/x.swf",
            "--policy",
            "fcfs",
            "--platform",
            bad.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(1));
        assert!(
            err.contains(at) && err.contains(says) && !err.contains("x.swf"),
            "{text}\n{err}"
        );
    }
    // A user of the log listed nowhere, with unlisted = "error" (the
    // default): the run stops and names the job and the user.
    fs::write(&bad, "[[org]]\nprocs = 100\nusers = [1, 2, 3]\n").unwrap();
    let (code, err) = simulate_fails(&[
        "--platform",
        bad.to_str().unwrap(),
        "--policy",
        "fcfs",
        "--window",
        "600000,100000",
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("is in no organization of")
            && err.contains("bad.toml")
            && err.contains("`unlisted` is \"error\""),
        "{err}"
    );
    assert!(err.contains("job ") && err.contains("user "), "{err}");
}

#[test]
fn trace_stats_reports_finite_statistics_of_the_bundled_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz");
    let out = dir.path().join("stats");
    let text = ok(&[
        "trace",
        "stats",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text.contains("Pareto I fit") && text.contains("Whittle"),
        "{text}"
    );
    let s = json(&out.join("summary.json"));
    let stats = &s["stats"];
    assert_eq!(stats["jobs"], 28467);
    let beta = stats["pareto"]["shape"].as_f64().unwrap();
    assert!(beta.is_finite() && beta > 0.0, "β = {beta}");
    let text = serde_json::to_string(&stats["hurst"]).unwrap();
    assert!(!text.contains("null") && !text.contains("NaN"), "{text}");
    assert!(
        std::fs::read_to_string(out.join("aggregation.svg"))
            .unwrap()
            .starts_with("<svg")
    );
    let bad = run(&["trace", "stats", "/no/such/log.swf"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/no/such/log.swf"));
}

/// `--with` names a registered policy of the kind the experiment runs
/// beside its own: a usage error (exit 2) naming it otherwise, before any
/// work.
#[test]
fn with_names_no_registered_policy_is_a_usage_error() {
    let cases: [(&[&str], &str); 5] = [
        (&["shapley", "--with", "nope"], "order policies: "),
        (&["pffp", "--test", "2", "--with", "nope"], "allocate policies: "),
        (
            &["diet-ethic", "--scenario", "night-consecutive", "--with", "nope"],
            "order policies: ",
        ),
        (
            &["workflow-fairness", "--exp", "1", "--with", "nope"],
            "order or control policies: ",
        ),
        (
            &["pffp", "--test", "2", "--with", "fcfs"],
            "\"fcfs\" is an order policy; this experiment runs allocate policies beside its own: single-pool, ",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["experiment"];
        all.extend_from_slice(args);
        all.push("--no-progress");
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(o.stdout.is_empty(), "{all:?} did work first");
    }
}
