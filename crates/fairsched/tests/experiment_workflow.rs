//! `fairsched experiment workflow-fairness` end to end: the real binary,
//! its files, and its errors on bad input.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn experiment_2_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--exp",
        "2",
        "--repetitions",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Paper"), "{stdout}");
    assert!(stdout.contains("SimuBloch"), "{stdout}");
    let s: Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let reps = s["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    for r in reps {
        assert_eq!(r["fairness"]["workflows"].as_array().unwrap().len(), 4);
        assert!(r["fairness"]["priority_changes"].as_u64().unwrap() > 0);
        assert_eq!(r["no_fairness"]["workflows"][3]["name"], "SimuBloch");
        assert!(!r["fairness"]["eta"].as_array().unwrap().is_empty());
    }
    for f in ["sets.csv", "workflows.csv", "eta-rep1.svg", "eta-rep2.svg"] {
        assert!(out.join(f).exists(), "{f}");
    }
    // Run again into the same folder with one repetition: the second
    // plot of the first run does not stay behind.
    assert!(out.join("table3.csv").exists());
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--workflows",
        "gate,simubloch",
        "--repetitions",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("eta-rep1.svg").exists());
    assert!(!out.join("eta-rep2.svg").exists() && !out.join("table3.csv").exists());
    assert!(out.join("notes.txt").exists(), "other files are left alone");
}

#[test]
fn bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = run(&["experiment", "workflow-fairness", "--exp", "4"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["experiment", "workflow-fairness", "--exp", "1", "--tau", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A period the millisecond clock would round to "every change".
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--exp",
        "1",
        "--every",
        "0.0001",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--every"), "{}", stderr(&o));
    for list in ["gate,,simubloch", "", "gate,"] {
        let o = run(&["experiment", "workflow-fairness", "--workflows", list]);
        assert_eq!(o.status.code(), Some(2), "{list:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("empty workflow name"), "{}", stderr(&o));
    }
    let g = dir.path().join("g.toml");
    std::fs::write(&g, "[slots]\ninitial = 10\nfailure = 2\n").unwrap();
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--exp",
        "1",
        "--grid",
        g.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("g.toml:3"), "{}", stderr(&o));
    let w = dir.path().join("w.toml");
    std::fs::write(
        &w,
        "name = \"x\"\n[[activity]]\nname = \"a\"\ntasks = 0\nexec = { dist = \"constant\", value = 1 }\n",
    )
    .unwrap();
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--workflows",
        w.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("w.toml"), "{}", stderr(&o));
    assert!(!out.join("summary.json").exists());
}
