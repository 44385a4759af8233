//! `fairsched trace tau` end to end: the real binary, its files, its
//! determinism and its errors on bad input.

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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Checks tau.json against itself: the histogram holds every non-zero
/// sample, the modes are peaks of it and the threshold lies between them.
/// Returns whether a threshold was proposed.
fn check_report(r: &Value) -> bool {
    let bin = r["bin"].as_f64().unwrap();
    let hist = r["histogram"].as_array().unwrap();
    let counts: Vec<u64> = hist.iter().map(|b| b["count"].as_u64().unwrap()).collect();
    let nonzero = r["nonzero"].as_u64().unwrap();
    assert_eq!(counts.iter().sum::<u64>(), nonzero);
    let reps = r["repetitions"].as_array().unwrap();
    assert_eq!(
        reps.iter().map(|x| x["nonzero"].as_u64().unwrap()).sum::<u64>(),
        nonzero
    );
    assert_eq!(
        reps.iter().map(|x| x["samples"].as_u64().unwrap()).sum::<u64>(),
        r["samples"].as_u64().unwrap()
    );
    assert!(r["samples"].as_u64().unwrap() >= nonzero);
    // η_u ≤ 1: the bins stop at 1; the last possible one is [lo, 1].
    for (k, b) in hist.iter().enumerate() {
        assert_eq!(b["bin"].as_u64().unwrap(), k as u64);
        let (lo, hi) = (b["lo"].as_f64().unwrap(), b["hi"].as_f64().unwrap());
        assert!((lo - k as f64 * bin).abs() < 1e-9);
        assert!(lo < 1.0 && hi <= 1.0, "bin {k}: [{lo}, {hi}]");
        assert!(hi == 1.0 || (hi - lo - bin).abs() < 1e-9, "bin {k}: [{lo}, {hi}]");
    }
    let modes = r["modes"].as_array().unwrap();
    match r["threshold"].as_f64() {
        Some(t) => {
            assert_eq!(modes.len(), 2);
            let (a, b) = (&modes[0], &modes[1]);
            assert!(
                a["hi"].as_f64().unwrap() <= t && t <= b["lo"].as_f64().unwrap(),
                "{t}"
            );
            for m in modes {
                let k = m["bin"].as_u64().unwrap() as usize;
                assert_eq!(m["count"].as_u64().unwrap(), counts[k]);
                assert!(counts[k] > 0);
            }
            true
        }
        None => {
            assert!(modes.is_empty());
            false
        }
    }
}

#[test]
fn builtin_profiles_give_a_histogram_a_threshold_and_the_same_bytes_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let args = |out: &Path| {
        vec![
            "trace".to_string(),
            "tau".into(),
            "gate,gate,gate".into(),
            "simubloch".into(),
            "--repetitions".into(),
            "1".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let o = run(&args(&a).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("GATE, GATE, GATE, SimuBloch"), "{text}");
    assert!(text.contains("[0.00, 0.05)"), "{text}");
    // η_u = 1 (a workflow just submitted beside one all running) is in
    // [0.95, 1.00], not in a bin past 1.
    assert!(text.contains("[0.95, 1.00]"), "{text}");
    assert!(!text.contains("[1.00, 1.05)"), "{text}");
    assert!(text.contains("(paper: 0.2)"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    // tau.json without its `tool` block (whose command line names --out).
    let result = |path: &Path| -> Value {
        let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let tool = v.as_object_mut().unwrap().remove("tool").expect("a tool block");
        assert_eq!(tool["name"], "fairsched");
        v
    };
    let r = result(&a.join("tau.json"));
    assert_eq!(r["inputs"].as_array().unwrap().len(), 4);
    assert_eq!(r["repetitions"].as_array().unwrap().len(), 1);
    assert!(r["nonzero"].as_u64().unwrap() > 0);
    // Seed 0 has two modes today (η_u near 0 and η_u = 1); the printed
    // marks follow the JSON either way.
    if check_report(&r) {
        let t = r["threshold"].as_f64().unwrap();
        assert!(
            text.contains(&format!("proposed τ_u = {t:.3} (paper: 0.2)")),
            "{text}"
        );
        assert_eq!(text.matches("< mode").count(), 2, "{text}");
        assert_eq!(text.matches("< τ_u").count(), 1, "{text}");
    } else {
        assert!(text.contains("no threshold proposed"), "{text}");
    }
    let svg = std::fs::read_to_string(a.join("tau.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    // Deterministic: the same files again.
    let o = run(&args(&b).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(result(&b.join("tau.json")), r);
    assert_eq!(std::fs::read_to_string(b.join("tau.svg")).unwrap(), svg);
    // --json prints what tau.json holds.
    let o = run(&[
        "trace",
        "tau",
        "gate,gate,gate,simubloch",
        "--repetitions",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(printed, r);
}

#[test]
fn wfcommons_files_and_fewer_than_two_modes() {
    let p = "../shared/data/traces/workflows/pegasus";
    let (x, y) = (
        format!("{p}/seismology-chameleon-100p-001.json.gz"),
        format!("{p}/montage-chameleon-dss-05d-001.json.gz"),
    );
    let o = run(&[
        "trace",
        "tau",
        &x,
        &y,
        "--repetitions",
        "2",
        "--spacing",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["spacing_s"].as_f64(), Some(0.0));
    check_report(&r);
    // One workflow is never beside another: no sample to histogram, said
    // plainly, exit 0.
    let o = run(&["trace", "tau", &x, "--repetitions", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no threshold proposed (paper: 0.2)"),
        "{}",
        stdout(&o)
    );
    let o = run(&["trace", "tau", &x, "--repetitions", "1", "--json"]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["nonzero"], 0);
    assert!(r["threshold"].is_null());
    assert!(!check_report(&r));
}

#[test]
fn wide_bins_stop_at_1() {
    for (bin, last) in [
        ("0.5", "[0.50, 1.00]"),
        ("0.3", "[0.90, 1.00]"),
        ("1", "[0.00, 1.00]"),
    ] {
        let o = run(&[
            "trace",
            "tau",
            "gate,gate,gate,simubloch",
            "--repetitions",
            "1",
            "--bin",
            bin,
            "--no-progress",
        ]);
        assert!(o.status.success(), "--bin {bin}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains(last), "--bin {bin}: {text}");
        for past in ["1.50", "1.20", "2.00", "1.00)"] {
            assert!(!text.contains(past), "--bin {bin}: {text}");
        }
        let o = run(&[
            "trace",
            "tau",
            "gate,gate,gate,simubloch",
            "--repetitions",
            "1",
            "--bin",
            bin,
            "--json",
        ]);
        assert!(o.status.success(), "--bin {bin}: {}", stderr(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        check_report(&r);
        let hist = r["histogram"].as_array().unwrap();
        assert_eq!(hist.last().unwrap()["hi"].as_f64(), Some(1.0), "--bin {bin}");
    }
}

#[test]
fn bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let missing = dir.path().join("missing-workflow.json");
    let o = run(&[
        "trace",
        "tau",
        "gate",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing-workflow.json"), "{}", stderr(&o));
    assert!(!out.join("tau.json").exists());
    for bin in ["0", "-0.05", "1.5", "1.0001", "NaN", "inf"] {
        let o = run(&["trace", "tau", "gate", "--bin", bin]);
        assert_eq!(o.status.code(), Some(2), "--bin {bin}: {}", stderr(&o));
        assert!(stderr(&o).contains("--bin"), "{}", stderr(&o));
    }
    for spacing in ["-1", "inf"] {
        let o = run(&["trace", "tau", "gate", "--spacing", spacing]);
        assert_eq!(o.status.code(), Some(2), "--spacing {spacing}: {}", stderr(&o));
        assert!(stderr(&o).contains("--spacing"), "{}", stderr(&o));
    }
    let o = run(&["trace", "tau", "gate", "--repetitions", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["trace", "tau"]);
    assert_eq!(o.status.code(), Some(2));
}
