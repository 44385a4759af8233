//! The binary's edge: a standard output that goes away or fails never costs
//! a result file nor panics; an error says its file and its cause once; the
//! exit status is 0 (done), 1 (the run failed) or 2 (the command line is
//! wrong).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
}

fn bundled() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/KTH-SP2-1996-2.1-cln.swf.gz")
        .to_string_lossy()
        .into_owned()
}

/// `fairsched simulate --policy fifo --policy fcfs` into `out` (`fifo`: first-fit's former name, so its folder is `first-fit/`).
fn two_policies(out: &Path) -> Command {
    let mut c = bin();
    c.args([
        "simulate",
        "--policy",
        "fifo",
        "--policy",
        "fcfs",
        "--no-progress",
        "--out",
    ])
    .arg(out);
    c
}

#[test]
fn a_reader_gone_after_the_first_line_costs_no_result() {
    // `fairsched simulate --policy fifo --policy fcfs | head -1`.
    let dir = tempfile::tempdir().unwrap();
    let mut child = two_policies(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: every later line meets a closed pipe.
    assert!(first.starts_with("trace: "), "{first}");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(o.status.code(), Some(101), "{err}");
    assert!(o.status.success(), "{err}");
    for f in [
        "comparison.csv",
        "comparison.json",
        "first-fit/summary.json",
        "fcfs/tasks.csv",
    ] {
        assert!(dir.path().join(f).exists(), "{f} was not written");
    }
}

#[test]
fn a_failing_stdout_costs_no_result_and_is_reported() {
    // `> /dev/full`: every write fails with "no space left on device".
    let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") else {
        crate::common::skipping(module_path!(), "no /dev/full on this system");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = two_policies(dir.path())
        .args(["--window", "600000,100000"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        err.matches("error: writing to standard output").count(),
        1,
        "{err}"
    );
    for f in [
        "comparison.csv",
        "comparison.json",
        "first-fit/summary.json",
        "fcfs/tasks.csv",
    ] {
        assert!(dir.path().join(f).exists(), "{f} was not written");
    }
}

#[test]
fn a_closed_stderr_is_not_a_panic() {
    // The error cannot be said; the exit status still says what happened.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = bin()
        .args(["simulate", "--trace", "/nonexistent/x.swf", "--policy", "fcfs"])
        .stdout(Stdio::null())
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}

/// Runs `fairsched ARGS`, which must fail without a panic.
fn fails(args: &[&str]) -> (Option<i32>, String, Output) {
    let o = bin().args(args).output().unwrap();
    assert!(!o.status.success(), "fairsched {args:?} should fail");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (o.status.code(), err, o)
}

#[test]
fn a_missing_file_is_named_once_with_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.swf");
    let missing = missing.to_str().unwrap();
    for args in [
        &[
            "simulate",
            "--trace",
            missing,
            "--policy",
            "fcfs",
            "--no-progress",
        ][..],
        &["trace", "info", missing][..],
        &["trace", "stats", missing][..],
    ] {
        let (code, err, _) = fails(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert_eq!(err.matches(missing).count(), 1, "{args:?}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
    }
    // An output folder that cannot be made: the folder, then its cause, once.
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    let out = file.join("out");
    let (code, err, _) = fails(&[
        "simulate",
        "--policy",
        "fcfs",
        "--window",
        "600000,100000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    assert!(err.contains(out.to_str().unwrap()), "{err}");
}

#[test]
fn the_command_line_is_exit_2_the_run_exit_1() {
    let kth = bundled();
    // Refused by the flag parser, or checked before anything is read: 2.
    for args in [
        &["simulate", "--bogus"][..],
        &["simulate", "--window", "10"][..],
        &["simulate", "--procs", "0", "--policy", "fcfs"][..],
        &["simulate", "--machines", "2,0", "--policy", "fcfs"][..],
        &["simulate", "--policy", "fastest"][..],
        &[
            "simulate",
            "--policy",
            "priority",
            "--control",
            "age-boost[after=soon]",
        ][..],
        &["simulate", "--policy", "age-boost"][..],
        &["trace", "info"][..],
        &["trace", "info", &kth, "--bogus"][..],
        &["policies", "--bogus"][..],
        &["nonsense"][..],
    ] {
        let (code, err, o) = fails(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains("--help"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // A run that fails (its data): 1.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.swf");
    fs::write(&bad, "1 0 0 abc 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n").unwrap();
    for args in [
        &[
            "simulate",
            "--trace",
            bad.to_str().unwrap(),
            "--policy",
            "fcfs",
            "--no-progress",
        ][..],
        &["trace", "info", bad.to_str().unwrap()][..],
    ] {
        let (code, err, _) = fails(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("bad.swf:1"), "{args:?}: {err}");
        assert!(!err.contains("--help"), "{args:?}: {err}");
    }
}
