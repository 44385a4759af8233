//! `fairsched report` on `simulate` folders: the real binary simulates
//! windows of the bundled KTH-SP2 log (three organizations, with and
//! without φ, one policy and a comparison of two), then reports them.
//! Checked: the sections and their figures, every value cell against the
//! file it names (`data-key`, `data-value`), `fairness.csv` ending at the
//! summary's figures, no problem on fresh runs, and what an older or
//! damaged folder still shows (tasks.csv deleted, a malformed line).

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fairsched(args: &[&str]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .output()
        .expect("the binary runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "fairsched {args:?} failed:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    (stdout, stderr)
}

fn bundled() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/KTH-SP2-1996-2.1-cln.swf.gz")
        .to_str()
        .unwrap()
        .to_string()
}

/// `simulate` of a window of the bundled log into `out`.
fn simulate(out: &Path, extra: &[&str]) {
    let trace = bundled();
    let mut args = vec![
        "simulate",
        "--trace",
        &trace,
        "--orgs",
        "3",
        "--window",
        "600000,100000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    fairsched(&args);
}

fn report(dirs: &[&Path], html: &Path, extra: &[&str]) -> (String, String) {
    let mut args: Vec<&str> = vec!["report"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", html.to_str().unwrap()]);
    args.extend(extra);
    let (stdout, stderr) = fairsched(&args);
    (fs::read_to_string(html).unwrap(), format!("{stdout}{stderr}"))
}

/// One `<section>` of the page: its kind, its folder and its HTML.
struct Section {
    kind: String,
    source: String,
    html: String,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[at..].find('"')? + at;
    Some(unescape(&tag[at..end]))
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn sections(html: &str) -> Vec<Section> {
    html.split("<section ")
        .skip(1)
        .map(|s| {
            let tag = &s[..s.find('>').unwrap()];
            Section {
                kind: attr(tag, "data-kind").unwrap(),
                source: attr(tag, "data-source").unwrap(),
                html: s[..s.find("</section>").unwrap()].to_string(),
            }
        })
        .collect()
}

/// Every `(data-key, data-value)` of a section's cells.
fn cells(html: &str) -> Vec<(String, String)> {
    html.split("<td")
        .skip(1)
        .filter_map(|c| {
            let tag = &c[..c.find('>')?];
            Some((attr(tag, "data-key")?, attr(tag, "data-value")?))
        })
        .collect()
}

fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, k| match v {
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        Value::Object(m) => m.get(k),
        _ => None,
    })
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Every value cell of a section shows the value at its key: a run's
/// section keys its `summary.json`, a comparison's `FILE#PATH` under its
/// folder. Returns how many cells were checked.
fn check_cells(s: &Section) -> usize {
    let dir = PathBuf::from(&s.source);
    let cells = cells(&s.html);
    for (key, value) in &cells {
        let (file, path) = match (s.kind.as_str(), key.split_once('#')) {
            ("simulate", None) => ("summary.json".to_string(), key.as_str()),
            ("comparison", Some((file, path))) => (file.to_string(), path),
            _ => panic!("{}: key `{key}` does not follow the scheme", s.kind),
        };
        let doc = json(&dir.join(&file));
        let want = lookup(&doc, path).unwrap_or_else(|| panic!("{file} has no `{path}`"));
        let got: Value = serde_json::from_str(value).unwrap();
        assert_eq!(&got, want, "{file}#{path}");
    }
    cells.len()
}

/// The CSV's lines as cells (no quoted commas in these files).
fn csv(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn simulate_folders_become_sections_whose_cells_are_the_files() {
    let root = tempfile::tempdir().unwrap();
    let (one, phi, two) = (
        root.path().join("one"),
        root.path().join("phi"),
        root.path().join("two"),
    );
    simulate(&one, &["--policy", "easy"]);
    simulate(&phi, &["--policy", "fair-share", "--phi"]);
    simulate(&two, &["--policy", "fcfs", "--policy", "easy"]);

    // The new files: runs.csv (no interrupted run under these policies:
    // its header), fairness.csv ending at summary.json's fairness.
    for d in [&one, &phi, &two.join("fcfs"), &two.join("easy")] {
        assert_eq!(
            fs::read_to_string(d.join("runs.csv")).unwrap(),
            "task,attempt,machine,slot,slots,start,stop\n"
        );
        let summary = json(&d.join("summary.json"));
        let f = &summary["fairness"];
        let rows = csv(&d.join("fairness.csv"));
        assert_eq!(
            rows[0],
            ["time_s", "org", "name", "psi_s2", "phi_s2", "phi_minus_psi_s2"]
        );
        // The first submit, up to 50 instants after it, the end.
        assert_eq!((rows.len() - 1) % 3, 0);
        assert!(
            (30..=52).contains(&((rows.len() - 1) / 3)),
            "{}: {} lines",
            d.display(),
            rows.len()
        );
        let last = &rows[rows.len() - 3..];
        for (r, o) in last.iter().zip(f["orgs"].as_array().unwrap()) {
            assert_eq!(r[0].parse::<f64>().unwrap(), f["at_s"].as_f64().unwrap());
            assert_eq!(r[2], o["name"].as_str().unwrap());
            assert_eq!(
                r[3].parse::<f64>().unwrap(),
                o["psi"].as_f64().unwrap(),
                "ψ to the bit"
            );
            match o["phi"].as_f64() {
                Some(p) => assert_eq!(r[4].parse::<f64>().unwrap(), p, "φ to the bit"),
                None => assert_eq!(r[4], ""),
            }
        }
        let first: f64 = rows[1][0].parse().unwrap();
        assert!(first < f["at_s"].as_f64().unwrap());
    }

    let html_path = root.path().join("report.html");
    let (html, said) = report(&[&one, &phi, &two], &html_path, &[]);
    assert!(
        said.contains("3 sections") && !said.contains("incomplete"),
        "{said}"
    );
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    let s = sections(&html);
    let kinds: Vec<&str> = s.iter().map(|s| s.kind.as_str()).collect();
    assert_eq!(kinds, ["simulate", "simulate", "comparison"]);
    for s in &s {
        assert!(
            !s.html.contains("class=\"problems\""),
            "fresh runs have no problem: {}",
            s.source
        );
        for caption in [
            "Runs in [",
            "Processors held by runs",
            "Tasks submitted and not yet started",
            "From fairness.csv",
        ] {
            assert!(s.html.contains(caption), "{}: no figure “{caption}”", s.source);
        }
        for svg_text in [
            "Gantt chart",
            "time (s, the run",
            "Utilization",
            "Queue length",
            "Utility ψ",
        ] {
            assert!(
                s.html.contains(svg_text) || s.html.contains(&unescape(svg_text)),
                "{}: {svg_text}",
                s.source
            );
        }
        let n = check_cells(s);
        assert!(n >= 30, "{}: only {n} value cells", s.source);
    }
    // The summary's figures are there, keyed as the module says.
    for key in [
        "data-key=\"mean_wait_s\"",
        "data-key=\"percentiles.wait_s.p90\"",
        "data-key=\"jain_orgs_bsld.index\"",
        "data-key=\"fairness.orgs.2.psi\"",
        "data-key=\"org_shares.1.received_share\"",
    ] {
        assert!(s[0].html.contains(key), "{key}");
    }
    // With φ: φ over time, dashed, and the bars of φ − ψ.
    assert!(s[1].html.contains("Shapley value φ (dashed)"));
    assert!(s[1].html.contains("Contribution minus utility"));
    assert!(!s[0].html.contains("Contribution minus utility"), "no φ, no bars");
    // The comparison: its table keyed in comparison.json, each policy's
    // part keyed in its folder's summary.json.
    assert!(s[2].html.contains("data-key=\"comparison.json#1.mean_wait_s\""));
    assert!(
        s[2].html
            .contains("data-key=\"easy/summary.json#percentiles.wait_s.p99\"")
    );
    assert!(s[2].html.contains("Policy fcfs (fcfs/)") && s[2].html.contains("Tasks waiting, every policy"));

    // Same inputs, same bytes (but for the page's own command line).
    let again = root.path().join("again.html");
    let (html2, _) = report(&[&one, &phi, &two], &again, &[]);
    let strip = |h: &str| h.split_once("</header>").unwrap().1.to_string();
    assert_eq!(strip(&html), strip(&html2));

    // A window and colours asked for.
    let (html, _) = report(
        &[&one],
        &root.path().join("w.html"),
        &["--gantt-window", "20000,2h", "--color-by", "org"],
    );
    assert!(
        html.contains("Runs in [20000, 27200) s: asked for with --gantt-window"),
        "the window asked for"
    );
    assert!(html.contains("coloured by organization"));
}

#[test]
fn an_older_or_damaged_folder_still_shows_what_it_can() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    simulate(&run, &["--policy", "easy"]);
    // A malformed line in tasks.csv: named, skipped, the rest drawn.
    let tasks = fs::read_to_string(run.join("tasks.csv")).unwrap();
    let mut lines: Vec<String> = tasks.lines().map(str::to_string).collect();
    let mut cells: Vec<&str> = lines[3].split(',').collect();
    cells[7] = "abc";
    lines[3] = cells.join(",");
    fs::write(run.join("tasks.csv"), lines.join("\n") + "\n").unwrap();
    fs::remove_file(run.join("runs.csv")).unwrap();
    let html_path = root.path().join("r.html");
    let (html, said) = report(&[&run], &html_path, &[]);
    assert!(said.contains("incomplete"), "{said}");
    let shown = run.join("tasks.csv").display().to_string();
    assert!(
        html.contains(&format!("{shown}:4: field `submit`: `abc` is not a time")),
        "the line is named"
    );
    assert!(html.contains("runs.csv: missing"), "runs.csv is named");
    assert!(
        html.contains("Gantt chart") && html.contains("Queue length"),
        "the rest is drawn"
    );

    // No tasks.csv: the summary's tables still, a problem naming it.
    fs::remove_file(run.join("tasks.csv")).unwrap();
    let (html, _) = report(&[&run], &html_path, &[]);
    let s = sections(&html);
    assert_eq!(s[0].kind, "simulate");
    assert!(
        s[0].html.contains(&format!("{shown}: missing")),
        "tasks.csv is named"
    );
    assert!(!s[0].html.contains("Runs in [") && !s[0].html.contains("<h3>Schedule</h3>"));
    assert!(
        s[0].html.contains("data-key=\"mean_wait_s\""),
        "the summary table stays"
    );
    assert!(check_cells(&s[0]) >= 30);
    // No fairness.csv either: named; the bars from summary.json need φ.
    fs::remove_file(run.join("fairness.csv")).unwrap();
    let (html, _) = report(&[&run], &html_path, &[]);
    assert!(html.contains("fairness.csv: missing"), "fairness.csv is named");
}
