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
use std::process::{Command, Output};

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

/// A stand-in for one of Slurm's tools: a shell script at `dir/NAME`.
fn tool(dir: &Path, name: &str, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    fs::write(&p, format!("#!/bin/sh\n{script}")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
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

/// `pilot cancel` after some recorded pilots have left Slurm: only those
/// still in its queue go to `scancel` (which, as Slurm's, refuses a job
/// that has ended: "Invalid job id specified"), it exits 0 and says which
/// were cancelled and which had already left. With none left to cancel it
/// says so, calls no `scancel`, and exits 0. (Stand-ins for `squeue` and
/// `scancel` through `$FAIRSCHED_SQUEUE` and `$FAIRSCHED_SCANCEL`, as
/// Slurm answers: the real one is in slurm_pilots.rs.)
#[test]
fn pilot_cancel_cancels_the_pilots_still_queued_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Job 11 runs, 12 has completed (squeue -t all still shows it), 13 is
    // forgotten (squeue refuses it alone, leaves it out of a list).
    let squeue = tool(
        d,
        "squeue",
        r#"for a; do ids=$a; done
case "$ids" in 13) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;; esac
case ",$ids," in *,11,*) echo "11|fairsched-pilot|RUNNING|0:05|9:55|node1";; esac
case ",$ids," in *,12,*) echo "12|fairsched-pilot|COMPLETED|1:00|0:00|node1";; esac
"#,
    );
    let log = d.join("scancel.log");
    let scancel = tool(
        d,
        "scancel",
        &format!(
            r#"echo "$@" >> {log}
for a; do case "$a" in 12|13) echo "scancel: error: Kill job error on job id $a: Invalid job id specified" >&2; exit 1;; esac; done
"#,
            log = log.display()
        ),
    );
    let state = |jobs: &[u64]| {
        let p = d.join("pilots.json");
        let pilots: Vec<Value> = jobs
            .iter()
            .map(
                |j| serde_json::json!({"job": j, "broker": "http://127.0.0.1:1", "slots": 2, "script": "/x"}),
            )
            .collect();
        fs::write(&p, serde_json::json!({ "pilots": pilots }).to_string()).unwrap();
        p
    };
    let cancel = |state: &Path| {
        bin()
            .args(["pilot", "cancel", "--state", state.to_str().unwrap()])
            .env("FAIRSCHED_SQUEUE", &squeue)
            .env("FAIRSCHED_SCANCEL", &scancel)
            .output()
            .unwrap()
    };
    let o = cancel(&state(&[11, 12, 13]));
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        "--name=fairsched-pilot 11\n",
        "only the running pilot goes to scancel"
    );
    assert!(
        stdout.contains("asked Slurm to cancel 1 pilot: 11")
            && stdout.contains("2 pilots had already left Slurm's queue: 12 13"),
        "{stdout}"
    );

    fs::remove_file(&log).unwrap();
    let o = cancel(&state(&[12, 13]));
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!log.exists(), "scancel was called with nothing to cancel");
    assert!(
        stdout.contains("nothing to cancel: none of the 2 pilots is still in Slurm's queue (12 13)"),
        "{stdout}"
    );
}

/// The tests that need Chromium or a real Slurm, run where neither is (an
/// empty PATH, and not required as `.ci/run` requires them), pass, and
/// each says on the terminal that it skipped and why: libtest drops what
/// a passing test prints with `eprintln!`, so this runs this very test
/// binary on them and reads its standard error.
#[test]
fn tests_that_skip_for_want_of_chromium_or_slurm_say_so() {
    let tests = [
        "browser::a_report_page_renders_its_plots_and_the_summary_values",
        "slurm_pilots::a_pilot_drains_before_its_wall_time_and_exits_cleanly",
        "slurm_array::a_sweep_on_the_real_slurm_writes_the_local_runs_files",
    ];
    let empty = tempfile::tempdir().unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.arg("--exact").args(tests).env("PATH", empty.path());
    for v in [
        "FAIRSCHED_BROWSER",
        "FAIRSCHED_SLURM",
        "FAIRSCHED_CHROMIUM",
        "FAIRSCHED_CHROMEDRIVER",
        "RUST_TEST_NOCAPTURE",
    ] {
        c.env_remove(v);
    }
    let o = c.output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("3 passed"), "{stdout}");
    for (test, why) in [
        (tests[0], "chromium and chromedriver not found"),
        (tests[1], "no Slurm cluster here"),
        (tests[2], "no real Slurm: `sbatch` cannot run"),
    ] {
        let name = test.rsplit("::").next().unwrap();
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("skipping ") && l.contains(name) && l.contains(why)),
            "no \"skipping …{name}: {why}\" in:\n{stderr}"
        );
    }
}

/// The printed comparison has summary.json's fairness figures, per
/// policy: Jain's index over users and over organizations, and each
/// organization's received/owned share in %; the output ends by naming
/// `fairsched report OUT` as the next step.
#[test]
fn the_first_table_shows_fairness_and_points_to_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = simulate(
        &out,
        &[
            "--policy",
            "fcfs",
            "--policy",
            "fair-share",
            "--orgs",
            "3",
            "--window",
            "600000,100000",
        ],
    );
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("policy") && l.contains("jain_users"))
        .unwrap_or_else(|| panic!("no fairness table in:\n{stdout}"));
    assert!(
        lines[head].contains("jain_orgs") && lines[head].contains("received/owned % by organization"),
        "{}",
        lines[head]
    );
    for (i, policy) in ["fcfs", "fair-share"].iter().enumerate() {
        let row: Vec<&str> = lines[head + 2 + i].split_whitespace().collect();
        let s = json(&out.join(policy).join("summary.json"));
        let jain = |k: &str| format!("{:.3}", s[k]["index"].as_f64().unwrap());
        let pct = |x: &Value| format!("{:.0}", 100.0 * x.as_f64().unwrap());
        let shares: Vec<String> = s["org_shares"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| format!("{}/{}", pct(&o["received_share"]), pct(&o["owned_share"])))
            .collect();
        let mut want = vec![
            policy.to_string(),
            jain("jain_users_bsld"),
            jain("jain_orgs_bsld"),
        ];
        want.extend(shares);
        assert_eq!(row, want, "{stdout}");
    }
    // The tables and their notes fit 80 columns (the file list after them
    // is as long as it is).
    assert!(
        stdout
            .lines()
            .skip_while(|l| !l.starts_with("policy "))
            .take_while(|l| !l.starts_with("wrote "))
            .all(|l| l.chars().count() <= 80),
        "{stdout}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.starts_with(&format!("next: `fairsched report {}`", out.display())),
        "{last}"
    );
}
