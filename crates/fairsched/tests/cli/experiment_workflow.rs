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

/// A CSV file of the experiment (no quoted cells in these): its header and
/// rows.
fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let header = lines.next().unwrap();
    let rows: Vec<Vec<String>> = lines.collect();
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{}: {r:?}", path.display());
    }
    (header, rows)
}

/// The cells of `column` in `path`.
fn column(path: &Path, column: &str) -> Vec<String> {
    let (header, rows) = csv(path);
    let k = header
        .iter()
        .position(|c| c == column)
        .unwrap_or_else(|| panic!("{}: no {column} in {header:?}", path.display()));
    rows.into_iter().map(|mut r| r.swap_remove(k)).collect()
}

/// Every cell of `path` but those of `text_columns` is a plain number (or
/// empty: undefined); column names are snake_case.
fn assert_numeric_csv(path: &Path, text_columns: &[&str]) {
    let (header, rows) = csv(path);
    for c in &header {
        assert!(
            c.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_'),
            "{}: column {c:?}",
            path.display()
        );
    }
    assert!(!rows.is_empty(), "{}", path.display());
    for r in &rows {
        for (c, v) in header.iter().zip(r) {
            if text_columns.contains(&c.as_str()) || v.is_empty() {
                continue;
            }
            let x: f64 = v
                .parse()
                .unwrap_or_else(|_| panic!("{}: {c} = {v:?} is not a number", path.display()));
            assert!(x.is_finite(), "{}: {c} = {v:?}", path.display());
        }
    }
}

/// Strings in summary.json only where text belongs; every figure a number.
fn assert_numbers_are_numbers(v: &Value, key: &str) {
    match v {
        Value::String(s) => assert!(
            // The `tool` block's too: name, version, commit, command.
            [
                "experiment",
                "workflows",
                "inputs",
                "grid",
                "notes",
                "name",
                "version",
                "commit",
                "command"
            ]
            .contains(&key),
            "summary.json: {key} = {s:?} is text"
        ),
        Value::Array(a) => a.iter().for_each(|x| assert_numbers_are_numbers(x, key)),
        Value::Object(m) => m.iter().for_each(|(k, x)| assert_numbers_are_numbers(x, k)),
        _ => {}
    }
}

/// A TOML profile named `name`: five tasks of `secs` seconds.
fn profile(path: &Path, name: &str, secs: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "name = \"{name}\"\n[[activity]]\nname = \"a\"\ntasks = 5\nexec = {{ dist = \"constant\", value = {secs} }}\n"
        ),
    )
    .unwrap();
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
    assert_numbers_are_numbers(&s, "");
    assert!(s["tau"].is_f64() && s["spacing_s"].is_f64() && s["wall_time_s"].is_f64());
    assert!(s["paper"]["sigma_s_up_to"].is_f64());
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
    // Factors: "1.20×" for people, plain numbers in the CSV files.
    assert!(stdout.contains('×'), "{stdout}");
    for f in ["sets.csv", "workflows.csv", "table3.csv"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains('×') && !text.contains('—'), "{f}: {text}");
    }
    assert_numeric_csv(&out.join("sets.csv"), &[]);
    assert_numeric_csv(&out.join("table3.csv"), &[]);
    assert_numeric_csv(
        &out.join("workflows.csv"),
        &["input", "workflow", "gave_up_nf", "gave_up_f"],
    );
    let sets = out.join("sets.csv");
    for c in ["sigma_slowdown_factor", "sigma_makespan_factor", "mu_factor"] {
        assert_eq!(column(&sets, c).len(), 2, "{c}");
    }
    // Paper run 1: 27854 s → 9531 s, 18983 s → 4313 s, 196.15 → 38.43.
    let t3 = out.join("table3.csv");
    assert_eq!(column(&t3, "paper_makespan_factor")[0], "2.922");
    assert_eq!(column(&t3, "paper_mean_wait_factor")[0], "4.401");
    assert_eq!(column(&t3, "paper_slowdown_factor")[0], "5.104");
    let m: Vec<f64> = ["makespan_nf_s", "makespan_f_s", "makespan_factor"]
        .iter()
        .map(|c| column(&t3, c)[0].parse().unwrap())
        .collect();
    assert!((m[0] / m[1] - m[2]).abs() < 1e-3, "{m:?}");
    assert_eq!(
        column(&out.join("workflows.csv"), "input"),
        [
            "gate",
            "gate",
            "gate",
            "simubloch",
            "gate",
            "gate",
            "gate",
            "simubloch"
        ]
    );
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
    // η_u lies in [0, 1]: τ_u ≥ 1 would never act.
    for tau in ["-1", "-0.1", "1", "1.5", "NaN", "inf"] {
        let o = run(&["experiment", "workflow-fairness", "--exp", "1", "--tau", tau]);
        assert_eq!(o.status.code(), Some(2), "--tau {tau}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--tau") && stderr(&o).contains("[0, 1)"),
            "{}",
            stderr(&o)
        );
    }
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

#[test]
fn rows_name_their_input_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    // Four workflows named "x": two files called a.toml in different
    // folders, one b.toml, and a TOML beside a built-in.
    let (a1, a2, b) = (
        dir.path().join("d1/a.toml"),
        dir.path().join("d2/a.toml"),
        dir.path().join("b.toml"),
    );
    profile(&a1, "x", 60);
    profile(&a2, "x", 30);
    profile(&b, "x", 45);
    let list = [&a1, &b, &a2]
        .iter()
        .map(|p| p.to_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(",")
        + ",simubloch";
    let o = run(&[
        "experiment",
        "workflow-fairness",
        "--workflows",
        &list,
        "--repetitions",
        "2",
        "--tau",
        "0",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Distinct names alone; a name two files share: the paths as given.
    let one = vec![
        a1.to_str().unwrap().to_string(),
        "b.toml".into(),
        a2.to_str().unwrap().to_string(),
        "simubloch".into(),
    ];
    let w = out.join("workflows.csv");
    assert_eq!(column(&w, "input"), [one.clone(), one.clone()].concat());
    assert_eq!(column(&w, "workflow"), ["x", "x", "x", "SimuBloch"].repeat(2));
    assert_numeric_csv(&w, &["input", "workflow", "gave_up_nf", "gave_up_f"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let header = stdout
        .lines()
        .find(|l| l.starts_with("rep ") && l.contains("workflow"))
        .unwrap();
    assert!(header.contains("input"), "{stdout}");
    for i in &one {
        assert!(
            stdout.lines().any(|l| l.contains(i.as_str()) && l.contains(" x ")
                || l.contains(i.as_str()) && l.contains("SimuBloch")),
            "{i}: {stdout}"
        );
    }
    let s: Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_numbers_are_numbers(&s, "");
    assert_eq!(s["inputs"], serde_json::json!(one));
    assert_eq!(s["tau"].as_f64(), Some(0.0));
}
