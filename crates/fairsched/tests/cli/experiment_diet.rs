//! `fairsched experiment diet-ethic` end to end: the real binary, its files
//! and table, every scenario, and its errors on bad input.

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

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn night_consecutive_writes_its_files_and_prints_the_papers_claim() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = run(&[
        "experiment",
        "diet-ethic",
        "--scenario",
        "night-consecutive",
        "--runs",
        "3",
        "--n-submit",
        "100,1000",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("Paper:"), "{stdout}");
    assert!(stdout.contains("Why ours differs"), "{stdout}");
    let s: Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "diet-ethic then one per n_submit");
    assert_eq!(points[0]["system"], "diet-ethic");
    assert_eq!(points[0]["unhappy"], 0.0);
    let legacy_1000 = &points[2];
    assert_eq!(legacy_1000["n_submit"], 1000);
    assert!(legacy_1000["unhappy"].as_f64().unwrap() > 0.0);
    assert!(legacy_1000["unfairness"].as_f64().unwrap() > 10.0 * points[0]["unfairness"].as_f64().unwrap());
    let svg = std::fs::read_to_string(out.join("diet.svg")).unwrap();
    assert!(svg.contains("completed requests"));
    let csv = std::fs::read_to_string(out.join("diet.csv")).unwrap();
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("100,") || l.starts_with("1000,"))
            .count(),
        2,
        "{csv}"
    );
}

#[test]
fn every_scenario_runs_and_has_no_unhappy_diet_ethic_user() {
    for sc in [
        "night-simultaneous",
        "night-consecutive",
        "day-regular",
        "day-irregular",
        "day-irregular-random",
        "scalability",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r");
        let o = run(&[
            "experiment",
            "diet-ethic",
            "--scenario",
            sc,
            "--runs",
            "1",
            "--n-submit",
            "100",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{sc}: {}", text(&o).1);
        let s: Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["scenario"], sc);
        assert_eq!(s["points"][0]["unhappy"], 0.0, "{sc}");
    }
}

#[test]
fn bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["experiment", "diet-ethic", "--scenario", "lunch-time"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("night-consecutive"), "{}", text(&o).1);

    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "servers = 4\n[[user]]\narrival = 0\ndeadline = 10\nn_min = -3\nn_max = 10\nduration = 1\n",
    )
    .unwrap();
    let o = run(&[
        "experiment",
        "diet-ethic",
        "--scenario-file",
        f.to_str().unwrap(),
        "--out",
        dir.path().join("r").to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert!(!o.status.success());
    assert!(stderr.contains("bad.toml:5"), "{stderr}");
    assert!(stderr.contains("n_min"), "{stderr}");
    assert!(!dir.path().join("r").join("summary.json").exists());
}
