//! `fairsched experiment pffp` end to end: the real binary on the shared
//! logs, its files and table, and its errors on bad input.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("the binary runs")
}

fn shared(file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/swf")
        .join(file)
        .display()
        .to_string()
}

/// False (with a note) when `../shared/data` is absent.
fn have_shared() -> bool {
    let ok = Path::new(&shared("")).exists();
    if !ok {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
    }
    ok
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn test_2_prints_the_degradation_beside_the_papers_and_writes_its_files() {
    if !have_shared() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = run(&[
        "experiment",
        "pffp",
        "--test",
        "2",
        "--instances",
        "3",
        "--out",
        out,
        "--no-progress",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    for s in [
        "paper ρ %",
        "MSTUser",
        "191.72",
        "Workload B: 3 Monday–Friday weeks",
    ] {
        assert!(stdout.contains(s), "{s:?} missing in:\n{stdout}");
    }
    let summary: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    let rows = summary["degradation"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert_eq!(summary["instances"].as_array().unwrap().len(), 3);
    assert_eq!(summary["logs"].as_array().unwrap().len(), 7);
    // The printed table shows summary.json's numbers.
    for r in rows {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(r["strategy"].as_str().unwrap()))
            .unwrap();
        let printed = format!("{:.2}", r["rho"].as_f64().unwrap());
        assert!(line.contains(&printed), "{line} vs {printed}");
    }
    let csv = std::fs::read_to_string(dir.path().join("pffp.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 6);
    for f in [
        "degradation.csv",
        "profile-rho-2.svg",
        "profile-tw-5.svg",
        "profile-mean-2.svg",
    ] {
        let body = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(!body.is_empty(), "{f}");
    }
}

#[test]
fn a_grid_on_a_users_own_log_is_laid_out_like_the_papers() {
    if !have_shared() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kth = shared("KTH-SP2-1996-2.1-cln.swf.gz");
    let o = run(&[
        "experiment",
        "pffp",
        "--test",
        "3",
        "--logs",
        &kth,
        "--instances",
        "2",
        "--out",
        dir.path().to_str().unwrap(),
        "--no-progress",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("φ \\ ψ") && stdout.contains("The paper's Table 7"),
        "{stdout}"
    );
    assert!(stdout.contains("KTH-SP2-1996-2.1-cln 2"), "{stdout}");
    let grid = std::fs::read_to_string(dir.path().join("grid.csv")).unwrap();
    assert_eq!(grid.lines().count(), 1 + 121);
    assert!(
        std::fs::read_to_string(dir.path().join("grid.svg"))
            .unwrap()
            .contains("<svg")
    );
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    // Not `dir` itself: the log below is written there, and --out refuses a
    // folder of other files.
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--test", "6"], "6"),
        (&["--test", "2", "--grid"], "--grid"),
        (&["--test", "2", "--utilization", "1.5"], "--utilization"),
        (&["--test", "2", "--instances", "0"], "--instances"),
        (
            &["--test", "2", "--logs", "/nonexistent/log.swf"],
            "/nonexistent/log.swf",
        ),
        (&["--test", "2", "--traces-dir", "/nonexistent"], "/nonexistent"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["experiment", "pffp", "--out", out, "--no-progress"];
        all.extend_from_slice(args);
        let o = run(&all);
        let (_, stderr) = text(&o);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // The command line's mistakes exit 2 (as clap's own), a missing file 1.
        let want = if needle.starts_with('/') { 1 } else { 2 };
        assert_eq!(o.status.code(), Some(want), "{args:?}: {stderr}");
    }
    // A log of three weeks cannot give Workload B's weeks 19–48; it runs
    // Test 1 on the three weeks it has (Workload A is truncated).
    let log = dir.path().join("short.swf");
    let lines: String = (0..30)
        .map(|d| {
            format!(
                "{} {} 0 600 1 -1 -1 1 900 -1 1 1 1 -1 1 -1 -1 -1\n",
                d + 1,
                d * 86_400 + 3600
            )
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let log = log.to_str().unwrap();
    let o = run(&[
        "experiment",
        "pffp",
        "--test",
        "2",
        "--logs",
        log,
        "--out",
        out,
        "--no-progress",
    ]);
    let (_, stderr) = text(&o);
    assert!(!o.status.success());
    assert!(
        stderr.contains("3 weeks with jobs") && stderr.contains("Workload B"),
        "{stderr}"
    );
    let o = run(&[
        "experiment",
        "pffp",
        "--test",
        "1",
        "--logs",
        log,
        "--out",
        out,
        "--no-progress",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("Workload A: 3 Monday–Friday weeks"), "{stdout}");
    assert!(
        stdout.contains("no UnixStartTime"),
        "the clock's assumption is said: {stdout}"
    );
}
