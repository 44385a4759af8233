//! `fairsched report` on the output folders of every experiment, `trace
//! stats` and `trace tau`: the real binary runs quick variants of each
//! (seconds in all), then one report of all of them; each section has its
//! kind, the tables the run printed (as its tables.json has them), its
//! figures and no problem. A folder without tables.json (a run of an older
//! fairsched), a summary field of the wrong type and an experiment this
//! version does not know are named as problems, and the rest is still
//! shown.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the binary runs")
}

/// Runs the command, which must succeed; returns its standard error.
fn ok(args: &[&str]) -> String {
    let o = run(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success(),
        "fairsched {}:\n{}\n{stderr}",
        args.join(" "),
        String::from_utf8_lossy(&o.stdout)
    );
    stderr
}

/// False (with a note saying why) when `../shared/data` is absent.
fn have_shared() -> bool {
    let ok = repo().join("../shared/data/traces/swf").is_dir();
    if !ok {
        crate::common::skipping(
            module_path!(),
            "../shared/data/traces/swf not found: the shapley run (LPC-EGEE) is skipped",
        );
    }
    ok
}

/// The HTML of each `<section>` of a report, by its `data-source`.
fn sections(html: &str) -> Vec<(String, String)> {
    html.split("<section ")
        .skip(1)
        .map(|s| {
            let s = &s[..s.find("</section>").expect("a closed section")];
            let source = s
                .split("data-source=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .expect("a data-source")
                .to_string();
            (source, s.to_string())
        })
        .collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The section shows every table of the folder's tables.json: its title,
/// its columns and the cells of its first and last rows.
fn shows_printed_tables(dir: &Path, section: &str) -> usize {
    let doc = json(&dir.join("tables.json"));
    let tables = doc["tables"].as_array().unwrap();
    assert!(!tables.is_empty(), "{}: no table", dir.display());
    for t in tables {
        if let Some(title) = t["title"].as_str() {
            assert!(
                section.contains(&format!("<caption>{}</caption>", escape(title))),
                "{}: table {title:?} missing",
                dir.display()
            );
        }
        for c in t["columns"].as_array().unwrap() {
            let c = escape(c.as_str().unwrap());
            assert!(
                section.contains(&format!(">{c}</th>")),
                "{}: column {c}",
                dir.display()
            );
        }
        let rows = t["rows"].as_array().unwrap();
        for r in [rows.first(), rows.last()].into_iter().flatten() {
            for cell in r.as_array().unwrap() {
                let cell = escape(cell.as_str().unwrap());
                assert!(
                    section.contains(&format!(">{cell}</td>")),
                    "{}: cell {cell:?} missing",
                    dir.display()
                );
            }
        }
    }
    tables.len()
}

#[test]
fn a_report_of_every_experiment_shows_its_tables_and_figures() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).display().to_string();
    let kth = "data/KTH-SP2-1996-2.1-cln.swf.gz";
    // (folder, kind, command, figures at least)
    let mut runs: Vec<(String, &str, Vec<String>, usize)> = Vec::new();
    let mut add = |name: &str, kind: &'static str, args: &[&str], figures: usize| {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["--out".to_string(), out(name)]);
        runs.push((out(name), kind, a, figures));
    };
    // PFFP on the bundled log: a comparison (degradation bars and six
    // profiles) and a grid (ours and the paper's Table 7).
    let pffp = |test: &'static str, weeks: &'static str| {
        [
            "experiment",
            "pffp",
            "--test",
            test,
            "--logs",
            kth,
            "--instances",
            weeks,
            "--no-progress",
        ]
    };
    add("pffp2", "pffp", &pffp("2", "3"), 7);
    add("pffp3", "pffp", &pffp("3", "2"), 2);
    add(
        "diet",
        "diet-ethic",
        &[
            "experiment",
            "diet-ethic",
            "--scenario",
            "night-consecutive",
            "--runs",
            "2",
            "--no-progress",
        ],
        1,
    );
    // Experiment 2: the paper's Table 3 gives SimuBloch's bars beside ours.
    add(
        "workflow",
        "workflow-fairness",
        &[
            "experiment",
            "workflow-fairness",
            "--exp",
            "2",
            "--repetitions",
            "1",
            "--no-progress",
        ],
        2,
    );
    add("stats", "trace-stats", &["trace", "stats", kth], 1);
    add(
        "tau",
        "trace-tau",
        &[
            "trace",
            "tau",
            "gate,simubloch",
            "--repetitions",
            "3",
            "--no-progress",
        ],
        1,
    );
    if have_shared() {
        add(
            "shapley",
            "shapley",
            &[
                "experiment",
                "shapley",
                "--traces",
                "LPC-EGEE",
                "--instances",
                "3",
                "--no-progress",
            ],
            2,
        );
    }
    for (_, _, args, _) in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args);
    }
    let ran = started.elapsed();

    // Every run lists tables.json in its manifest, beside its other files.
    for (dir, _, _, _) in &runs {
        let manifest = std::fs::read_to_string(Path::new(dir).join(".fairsched-out")).unwrap();
        assert!(manifest.contains("\nentry tables.json\n"), "{dir}: {manifest}");
    }

    let html_path = out("report.html");
    let mut args = vec!["report".to_string()];
    args.extend(runs.iter().map(|r| r.0.clone()));
    args.extend(["--out".into(), html_path.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stderr = ok(&args);
    assert!(!stderr.contains("warning"), "fresh runs read whole: {stderr}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    let secs = sections(&html);
    assert_eq!(secs.len(), runs.len());
    for ((dir, kind, _, figures), (source, s)) in runs.iter().zip(&secs) {
        assert_eq!(source, &escape(dir));
        assert!(s.contains(&format!("data-kind=\"{kind}\"")), "{dir}: not {kind}");
        assert!(!s.contains("class=\"problems\""), "{dir}: problems shown");
        assert!(s.contains("<dl class=\"facts\">"), "{dir}: no facts");
        assert!(
            s.contains(&escape(env!("CARGO_PKG_VERSION"))),
            "{dir}: no version"
        );
        shows_printed_tables(Path::new(dir), s);
        let svgs = s.matches("<svg").count();
        assert!(svgs >= *figures, "{dir}: {svgs} figures, want {figures}");
        assert_eq!(
            s.matches("<figcaption>").count(),
            svgs,
            "{dir}: a figure without caption"
        );
    }
    let section = |name: &str| &secs.iter().find(|(src, _)| src.ends_with(name)).unwrap().1;
    // Charts drawn from summary.json, their cells naming their fields.
    let pffp2 = section("pffp2");
    let summary = json(&tmp.path().join("pffp2/summary.json"));
    let mlp = summary["degradation"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["strategy"] == "MLp")
        .unwrap();
    let rho = &summary["degradation"]["rows"][mlp]["rho"];
    assert!(
        pffp2.contains(&format!(
            "data-key=\"degradation.rows.{mlp}.rho\" data-value=\"{rho}\">"
        )),
        "the plotted value of MLp's ρ"
    );
    assert!(pffp2.contains(">\nTest 2: degradation against the week"));
    assert!(pffp2.contains("profile-tw-5.svg</figcaption>"));
    assert!(section("pffp3").contains("Table 7: mean ρ of PFFP (H = 0.78)"));
    let wf = section("workflow");
    assert!(
        wf.contains("paper Fairness (η_u control)"),
        "the paper's SimuBloch bars"
    );
    assert!(wf.contains("eta-rep1.svg</figcaption>"));
    assert!(section("diet").contains("unfairness (max − min satisfaction)"));
    // The run's notes are said once, in their own list.
    let diet = json(&tmp.path().join("diet/summary.json"));
    let why = diet["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .find(|n| n.starts_with("Why ours differs"))
        .unwrap();
    assert_eq!(section("diet").matches(&escape(why)).count(), 1);
    let reported = started.elapsed() - ran;

    // A run of an older fairsched: no tables.json. Said, and the facts and
    // figures are still there.
    let old = tmp.path().join("old-pffp2");
    std::fs::create_dir(&old).unwrap();
    for e in std::fs::read_dir(tmp.path().join("pffp2")).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "tables.json" {
            std::fs::copy(e.path(), old.join(e.file_name())).unwrap();
        }
    }
    // A summary field of the wrong type, and an experiment this version
    // does not know.
    let copy_diet = |name: &str, edit: &dyn Fn(&mut Value)| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        for f in ["diet.svg", "tables.json"] {
            std::fs::copy(tmp.path().join("diet").join(f), d.join(f)).unwrap();
        }
        let mut s = diet.clone();
        edit(&mut s);
        std::fs::write(d.join("summary.json"), s.to_string()).unwrap();
        d
    };
    let typo = copy_diet("typo", &|s| s["runs"] = Value::from("two"));
    let future = copy_diet("future", &|s| s["experiment"] = Value::from("diet-ethic-2"));
    let html_path = out("old.html");
    let o = run(&[
        "report",
        old.to_str().unwrap(),
        typo.to_str().unwrap(),
        future.to_str().unwrap(),
        "--out",
        &html_path,
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    let secs = sections(&html);
    let problems = |s: &str| -> String {
        let start = s.find("class=\"problems\"").expect("a problems box");
        s[start..start + s[start..].find("</div>").unwrap()].to_string()
    };
    let old_s = &secs[0].1;
    let p = problems(old_s);
    assert!(p.contains("tables.json: missing"), "{p}");
    assert_eq!(old_s.matches("<svg").count(), pffp2.matches("<svg").count());
    assert!(old_s.contains(">test</dt><dd>2</dd>"));
    let p = problems(&secs[1].1);
    assert!(
        p.contains("summary.json: field `runs`: expected a number, found a string"),
        "{p}"
    );
    assert_eq!(secs[1].1.matches("<svg").count(), 1, "the figure still shown");
    let p = problems(&secs[2].1);
    assert!(p.contains("unknown experiment `diet-ethic-2`"), "{p}");
    assert!(
        secs[2].1.contains("diet.svg</figcaption>"),
        "every SVG of the folder"
    );
    assert!(
        secs[2].1.contains("<caption>Diet-ethic vs legacy"),
        "its tables.json"
    );
    assert!(stderr.matches("warning: ").count() >= 3, "{stderr}");
    eprintln!(
        "runs {:.1} s, reports {:.1} s, in all {:.1} s",
        ran.as_secs_f64(),
        reported.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
