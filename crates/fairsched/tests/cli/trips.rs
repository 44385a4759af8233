//! Where a newcomer following the README and the docs tripped (issue 39,
//! point 6), each as the command line answers now: the first command's
//! table shows fairness and says what to run next; a flag out of range is
//! refused as a flag (exit 2) before any work; `report` writes nothing when
//! its inputs are wrong; `pilot cancel` cancels what is still in Slurm and
//! exits 0 for what has already left; a test that skips says so on the
//! terminal.

use crate::common::bin;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Output;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn simulate(out: &Path, args: &[&str]) -> Output {
    bin()
        .arg("simulate")
        .args(args)
        .args(["--out", out.to_str().unwrap(), "--no-progress"])
        .output()
        .unwrap()
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// `--orgs` beyond the processors (each organization owns at least one)
/// is a flag error: exit 2, naming the flag and its range, no result.
#[test]
fn orgs_beyond_the_processors_is_a_flag_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = simulate(&out, &["--policy", "fcfs", "--orgs", "1000"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--orgs 1000") && err.contains("1 to 100"), "{err}");
    assert!(!out.join("summary.json").exists());
}

/// `--phi` where φ cannot be computed (more than 8 organizations, several
/// machines) is refused before any work, not dropped into a note.
#[test]
fn phi_where_it_cannot_be_computed_is_refused() {
    for (args, says) in [
        (&["--orgs", "9"][..], "at most 8 organizations; this run has 9"),
        (&["--orgs", "2", "--machines", "50,50"][..], "--machines gives 2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let o = simulate(&out, &[&["--policy", "fcfs", "--phi"][..], args].concat());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--phi") && err.contains(says), "{args:?}: {err}");
        assert!(!out.join("summary.json").exists());
    }
    // Eight organizations still get φ.
    let dir = tempfile::tempdir().unwrap();
    let o = simulate(
        dir.path(),
        &[
            "--policy",
            "fcfs",
            "--phi",
            "--orgs",
            "8",
            "--window",
            "600000,20000",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let s = json(&dir.path().join("summary.json"));
    assert!(s["fairness"]["orgs"][0]["phi"].is_number(), "{}", s["fairness"]);
}

/// `report` checks its inputs before it writes: a DIR that is no folder is
/// refused (exit 2), folders none of which is a run's output fail (exit
/// 1), and neither leaves a page behind.
#[test]
fn report_writes_nothing_when_its_inputs_are_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let o = bin()
        .args(["report", "/nonexistent/run", "--out", page.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/run: no such folder"), "{err}");
    assert!(!page.exists(), "{err}");

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let o = bin()
        .args(["report", empty.to_str().unwrap(), "--out", page.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("none of the folders could be read"), "{err}");
    assert!(!page.exists(), "{err}");
}
