//! Where a newcomer following the README and the docs tripped (issue 39,
//! point 6), each as the command line answers now: the first command's
//! table shows fairness and says what to run next; a flag out of range is
//! refused as a flag (exit 2) before any work; `report` writes nothing when
//! its inputs are wrong; `pilot cancel` cancels what is still in Slurm and
//! exits 0 for what has already left; a test that skips says so on the
//! terminal.

use crate::common::bin;
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
