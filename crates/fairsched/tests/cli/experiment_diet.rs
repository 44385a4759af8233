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

/// The readings of issue 28, each alone from the command line: the timing
/// model, the spec's absolute day-time deadlines, key 4 with runs in
/// progress; summary.json records the first and the last.
#[test]
fn each_reading_runs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 3] = [
        (
            "day-regular",
            &[
                "--submit-latency",
                "20ms",
                "--complete-latency",
                "0.02s",
                "--overhead",
                "5ms",
                "--jitter",
                "10ms",
            ],
        ),
        ("day-regular-absolute", &[]),
        ("night-consecutive", &["--key4", "running"]),
    ];
    for (i, (sc, flags)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("r{i}"));
        let mut args = vec![
            "experiment",
            "diet-ethic",
            "--scenario",
            sc,
            "--runs",
            "1",
            "--n-submit",
            "190",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let o = run(&args);
        assert!(o.status.success(), "{sc}: {}", text(&o).1);
        let s: Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["scenario"], *sc);
        let notes = s["notes"].to_string();
        match i {
            0 => {
                let t = &s["timing"];
                assert_eq!(
                    [
                        &t["submit_latency"],
                        &t["complete_latency"],
                        &t["overhead"],
                        &t["jitter"]
                    ],
                    [20, 20, 5, 10]
                );
                assert!(s["points"][0]["kills"].as_f64().unwrap() > 0.0, "{s}");
                assert!(notes.contains("Timing model"), "{notes}");
            }
            1 => {
                assert!(s.get("timing").is_none() && s.get("key4").is_none(), "{s}");
                assert!(notes.contains("absolute deadline d = 100 s"), "{notes}");
                // 10 servers until 100 s: at most 1000 requests by then.
                assert!(s["points"][0]["completed"].as_f64().unwrap() <= 1000.0, "{s}");
            }
            _ => assert_eq!(s["key4"], "running"),
        }
    }
}

#[test]
fn bad_readings_are_named() {
    for (flag, value) in [
        ("--submit-latency", "-5ms"),
        ("--complete-latency", "soon"),
        ("--overhead", "1000000000s"),
        ("--jitter", "10 ms"),
        ("--key4", "started"),
    ] {
        let o = run(&[
            "experiment",
            "diet-ethic",
            "--scenario",
            "day-regular",
            flag,
            value,
        ]);
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
    }
}
