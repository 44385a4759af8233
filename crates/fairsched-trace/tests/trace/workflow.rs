//! Workflow inputs: every WfCommons trace in `../shared/data/traces/workflows/` loads (skipped,
//! not failed, if the data is absent), the four shipped profiles match the paper's Table 2,
//! the 1.5 split-layout fixture loads, and malformed inputs are refused with located messages.
//!
//! `cargo test -p fairsched-trace --test workflow -- --nocapture` prints one line per trace.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use fairsched_core::Time;
use fairsched_trace::workflow::{
    BUILTIN_PROFILES, Dist, LoadOptions, PHASES, WfTask, Workflow, WorkflowError, WorkflowSource,
};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

const WORKFLOW_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/traces/workflows"
);
const SPLIT_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/wfcommons-1.5-split.json"
);

fn skip(why: &str) {
    // Straight to the stderr handle: libtest captures eprintln! of passing tests.
    let _ = std::io::stderr().write_all(format!("skipping {}: {why}\n", module_path!()).as_bytes());
}

fn json_gz_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_gz_files(&p, out);
        } else if p
            .to_str()
            .is_some_and(|s| s.ends_with(".json.gz") || s.ends_with(".json"))
        {
            out.push(p);
        }
    }
}

fn trace(path: &Path) -> Workflow {
    match WorkflowSource::load(path, &LoadOptions::default()) {
        Ok(WorkflowSource::Trace(w)) => w,
        Ok(WorkflowSource::Profile(_)) => panic!("{}: read as a profile", path.display()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn every_shared_trace_loads() {
    let dir = Path::new(WORKFLOW_DIR);
    if !dir.is_dir() {
        skip("../shared/data/traces/workflows not found");
        return;
    }
    let mut files = Vec::new();
    json_gz_files(dir, &mut files);
    assert!(!files.is_empty(), "no .json.gz under {}", dir.display());
    for path in &files {
        let w = trace(path);
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(!w.tasks.is_empty(), "{name}: no tasks");
        assert!(w.is_topologically_sorted(), "{name}: parents after children");
        for (i, t) in w.tasks.iter().enumerate() {
            assert!(
                t.parents.windows(2).all(|p| p[0] < p[1]),
                "{name}: task {i}: parents not deduplicated"
            );
            assert!(
                t.phases.iter().all(|&p| p >= Time::ZERO),
                "{name}: task {i}: negative phase"
            );
        }
        let (cp, work) = (w.critical_path(), w.total_work());
        assert!(cp > Time::ZERO, "{name}: critical path {cp}");
        assert!(cp <= work, "{name}: critical path {cp} > total work {work}");

        // Cross-check against the raw JSON: same task count, same categories.
        let raw: serde_json::Value = {
            let f = std::fs::File::open(path).unwrap();
            if name.ends_with(".gz") {
                serde_json::from_reader(flate2::read::MultiGzDecoder::new(f)).unwrap()
            } else {
                serde_json::from_reader(f).unwrap()
            }
        };
        let wf = &raw["workflow"];
        let tasks = [&wf["specification"]["tasks"], &wf["tasks"], &wf["jobs"]]
            .into_iter()
            .find_map(|t| t.as_array())
            .expect("a task list");
        assert_eq!(w.tasks.len(), tasks.len(), "{name}: task count");
        let mut cats: Vec<&str> = tasks.iter().filter_map(|t| t["category"].as_str()).collect();
        let all_have_category = cats.len() == tasks.len();
        cats.sort_unstable();
        cats.dedup();
        let mut acts: Vec<&str> = w.activities.iter().map(String::as_str).collect();
        acts.sort_unstable();
        if all_have_category {
            assert_eq!(acts, cats, "{name}: activities are the categories");
        }
        let edges: usize = w.tasks.iter().map(|t| t.parents.len()).sum();
        println!(
            "{name}: schema {} | {} tasks, {} activities, {edges} edges | critical path {cp} s, work {work} s",
            raw["schemaVersion"],
            w.tasks.len(),
            w.activities.len()
        );
    }
}

#[test]
fn split_layout_fixture_loads_plain_and_gzipped() {
    let plain = trace(Path::new(SPLIT_FIXTURE));
    assert_eq!(plain.name, "blast-split-layout");
    let names: Vec<&str> = plain.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["ID0000001", "ID0000002", "ID0000003", "ID0000004", "ID0000005"]
    );
    assert_eq!(plain.activities, ["split", "blastall", "cat"]);
    let acts: Vec<u32> = plain.tasks.iter().map(|t| t.activity).collect();
    assert_eq!(acts, [0, 1, 1, 1, 2]);
    // `cat` lists two parents, and the third lists `cat` among its children.
    assert_eq!(plain.tasks[4].parents, [1, 2, 3]);
    assert_eq!(plain.tasks[3].parents, [0]);
    let ms = |t: &WfTask| t.phases.map(Time::millis);
    assert_eq!(ms(&plain.tasks[0]), [0, 3000, 12500, 3000]);
    // chunk (10 MB) + db (50 MB) at 10 MB/s.
    assert_eq!(ms(&plain.tasks[3]), [0, 6000, 310000, 300]);
    assert_eq!(ms(&plain.tasks[4]), [0, 600, 20000, 50]);
    assert_eq!(plain.critical_path(), Time::from_millis(18500 + 316300 + 20650));
    assert_eq!(plain.total_work(), Time::from_millis(918_000));

    // Gzipped, under a name without extension, with other options.
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("instance");
    let mut enc =
        flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(SPLIT_FIXTURE).unwrap()).unwrap();
    enc.finish().unwrap();
    let opts = LoadOptions {
        bandwidth_bytes_per_s: 20e6,
        setup: Time::from_secs(7),
    };
    let WorkflowSource::Trace(w) = WorkflowSource::load(&gz, &opts).unwrap() else {
        panic!("not a trace")
    };
    assert_eq!(ms(&w.tasks[0]), [7000, 1500, 12500, 1500]);
    assert_eq!(
        w.tasks.iter().map(|t| &t.parents).collect::<Vec<_>>(),
        plain.tasks.iter().map(|t| &t.parents).collect::<Vec<_>>()
    );
}

#[test]
fn critical_path_of_a_diamond_trace() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("diamond.json");
    // a → {b, c} → d, listed d first; b's branch is the longer one.
    std::fs::write(
        &p,
        r#"{"name": "diamond", "schemaVersion": "1.4", "workflow": {"tasks": [
            {"name": "d", "parents": ["b", "c"], "runtimeInSeconds": 4, "files": []},
            {"name": "b", "parents": ["a"], "runtimeInSeconds": 10, "files": []},
            {"name": "c", "parents": ["a"], "runtimeInSeconds": 2,
             "files": [{"link": "input", "name": "x", "sizeInBytes": 30000000}]},
            {"name": "a", "runtimeInSeconds": 6, "files": []}
        ]}}"#,
    )
    .unwrap();
    let w = trace(&p);
    let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    assert_eq!(w.critical_path(), Time::from_secs(6 + 10 + 4));
    assert_eq!(w.total_work(), Time::from_secs(6 + 10 + 2 + 3 + 4));
    // Slower transfers make the c branch the critical one: 30 MB at 1 MB/s = 30 s.
    let WorkflowSource::Trace(slow) = WorkflowSource::load(
        &p,
        &LoadOptions {
            bandwidth_bytes_per_s: 1e6,
            ..LoadOptions::default()
        },
    )
    .unwrap() else {
        panic!("not a trace")
    };
    assert_eq!(slow.critical_path(), Time::from_secs(6 + 30 + 2 + 4));
}

fn builtin(name: &str) -> fairsched_trace::workflow::Profile {
    match WorkflowSource::builtin(name) {
        Some(WorkflowSource::Profile(p)) => p,
        _ => panic!("builtin {name} missing"),
    }
}

#[test]
fn builtins_have_the_papers_task_counts() {
    let want: BTreeMap<&str, (usize, &str)> = [
        ("gate", (100, "GATE")),
        ("simubloch", (25, "SimuBloch")),
        ("field2", (122, "FIELD-II")),
        ("pet-sorteo", (164, "PET-Sorteo")),
    ]
    .into();
    for name in BUILTIN_PROFILES {
        let src = WorkflowSource::builtin(name).unwrap();
        let (n, display) = want[name];
        assert_eq!(src.task_count(), n, "{name}");
        assert_eq!(src.name(), display);
        let w = src.instantiate(&mut Pcg64Mcg::seed_from_u64(1));
        assert_eq!(w.tasks.len(), n);
        assert!(w.is_topologically_sorted());
        assert!(w.critical_path() > Time::ZERO && w.critical_path() <= w.total_work());
    }
    assert!(WorkflowSource::builtin("GATE").is_some());
    assert!(WorkflowSource::builtin("field-ii").is_some());
    assert!(WorkflowSource::builtin("montage").is_none());
    // Single-activity workflows are bags of tasks.
    for name in ["gate", "simubloch", "field2"] {
        let w = WorkflowSource::builtin(name)
            .unwrap()
            .instantiate(&mut Pcg64Mcg::seed_from_u64(2));
        assert_eq!(w.activities.len(), 1);
        assert!(w.tasks.iter().all(|t| t.parents.is_empty()));
    }
}

#[test]
fn pet_sorteo_is_the_papers_chain() {
    let p = builtin("pet-sorteo");
    let sizes: Vec<u32> = p.activities.iter().map(|a| a.tasks).collect();
    assert_eq!(sizes, [1, 80, 1, 80, 1, 1]);
    for (i, a) in p.activities.iter().enumerate() {
        let want: Vec<usize> = if i == 0 { vec![] } else { vec![i - 1] };
        assert_eq!(a.after, want, "activity {i} ({})", a.name);
    }
    let w = WorkflowSource::Profile(p).instantiate(&mut Pcg64Mcg::seed_from_u64(3));
    assert_eq!(w.activity_sizes(), [1, 80, 1, 80, 1, 1]);
    // Every task of activity k waits for every task of activity k − 1.
    let mut first = vec![0u32];
    for s in w.activity_sizes() {
        first.push(first.last().unwrap() + s as u32);
    }
    for t in &w.tasks {
        let a = t.activity as usize;
        let want: Vec<u32> = if a == 0 {
            vec![]
        } else {
            (first[a - 1]..first[a]).collect()
        };
        assert_eq!(t.parents, want, "task {}", t.name);
    }
    // Six ~10-minute steps in a row: the critical path is six tasks long.
    let cp = w.critical_path();
    assert!(
        cp >= Time::from_secs(6 * 300) && cp <= Time::from_secs(6 * (1500 + 120 + 30 + 60)),
        "{cp}"
    );
}

#[test]
fn instances_are_deterministic_and_within_bounds() {
    for name in BUILTIN_PROFILES {
        let src = WorkflowSource::builtin(name).unwrap();
        let a = src.instantiate(&mut Pcg64Mcg::seed_from_u64(42));
        let b = src.instantiate(&mut Pcg64Mcg::seed_from_u64(42));
        let c = src.instantiate(&mut Pcg64Mcg::seed_from_u64(43));
        assert_eq!(a, b, "{name}: same seed, same instance");
        assert_ne!(a, c, "{name}: another seed, other durations");
        let WorkflowSource::Profile(p) = &src else {
            panic!()
        };
        for t in &a.tasks {
            let act = &p.activities[t.activity as usize];
            for (k, d) in act.phases.iter().enumerate() {
                let (lo, hi) = d.range();
                let ms = t.phases[k].millis() as f64;
                assert!(
                    ms >= (lo * 1000.0).round() && ms <= (hi * 1000.0).round(),
                    "{name}: {} {}: {ms} ms outside [{lo}, {hi}] s",
                    t.name,
                    PHASES[k]
                );
            }
        }
        // Clamped log-normals really are clamped: every lognormal in the shipped files has
        // both bounds.
        for act in &p.activities {
            for d in &act.phases {
                if let Dist::LogNormal { min, max, .. } = d {
                    assert!(min.is_some() && max.is_some(), "{name}: unbounded lognormal");
                }
            }
        }
    }
}

#[test]
fn profile_files_load_from_disk_like_the_builtins() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    for name in BUILTIN_PROFILES {
        let path = dir.join(format!("{name}.toml"));
        let from_disk = WorkflowSource::load(&path, &LoadOptions::default()).unwrap();
        assert_eq!(Some(from_disk), WorkflowSource::builtin(name), "{name}");
    }
}

/// Writes `text` as `file` in a fresh directory, loads it, and returns the error text.
fn load_error(file: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(file);
    std::fs::write(&p, text).unwrap();
    let e: WorkflowError = match WorkflowSource::load(&p, &LoadOptions::default()) {
        Ok(_) => panic!("{file} loaded"),
        Err(e) => e,
    };
    assert_eq!(e.path(), Some(p.as_path()));
    let s = e.to_string();
    assert!(s.contains(file), "{s}");
    s
}

const ONE_ACTIVITY: &str = "name = \"w\"\n\n[[activity]]\nname = \"a\"\ntasks = 2\n";

#[test]
fn malformed_profiles_are_refused_with_file_line_and_field() {
    let e = load_error(
        "unknown-key.toml",
        &format!("{ONE_ACTIVITY}exec = {{ dist = \"constant\", value = 1 }}\ncolour = \"blue\"\n"),
    );
    assert!(e.ends_with("unknown-key.toml:7: activity[0].colour: unknown field `colour`, expected one of `name`, `tasks`, `after`, `setup`, `input`, `exec`, `output`"), "{e}");

    let e = load_error(
        "unknown-param.toml",
        &format!("{ONE_ACTIVITY}exec = {{ dist = \"uniform\", low = 1, hi = 3 }}\n"),
    );
    assert!(
        e.contains("unknown-param.toml:6: activity[0].exec.hi: unknown field `hi`"),
        "{e}"
    );

    let e = load_error(
        "bad-param.toml",
        &format!("{ONE_ACTIVITY}exec = {{ dist = \"lognormal\", median = 10, sigma = -0.5 }}\n"),
    );
    assert!(
        e.ends_with("bad-param.toml:6: activity[0].exec.sigma: must be ≥ 0, not -0.5"),
        "{e}"
    );

    let e = load_error(
        "bad-median.toml",
        &format!(
            "{ONE_ACTIVITY}\ninput = {{ dist = \"lognormal\", median = 0, sigma = 1 }}\nexec = {{ dist = \"constant\", value = 1 }}\n"
        ),
    );
    assert!(
        e.ends_with("bad-median.toml:7: activity[0].input.median: must be > 0"),
        "{e}"
    );

    let e = load_error(
        "unknown-upstream.toml",
        &format!("{ONE_ACTIVITY}after = [\"a\", \"prepare\"]\nexec = {{ dist = \"constant\", value = 1 }}\n"),
    );
    assert!(
        e.ends_with(
            "unknown-upstream.toml:6: activity[0].after[1]: \"prepare\" is not the name of an activity"
        ),
        "{e}"
    );

    let e = load_error(
        "cycle.toml",
        "[[activity]]\nname = \"a\"\ntasks = 1\nafter = [\"c\"]\nexec = { dist = \"constant\", value = 1 }\n\n\
         [[activity]]\nname = \"b\"\ntasks = 1\nafter = [\"a\"]\nexec = { dist = \"constant\", value = 1 }\n\n\
         [[activity]]\nname = \"c\"\ntasks = 1\nafter = [\"b\"]\nexec = { dist = \"constant\", value = 1 }\n",
    );
    assert!(e.contains("cycle.toml:"), "{e}");
    assert!(
        e.contains(": activity[") && e.contains("].after[0]: dependency cycle: "),
        "{e}"
    );
    for edge in ["\"a\" -> \"b\"", "\"b\" -> \"c\"", "\"c\" -> \"a\""] {
        assert!(e.contains(edge), "{e}");
    }

    let e = load_error(
        "zero.toml",
        "[[activity]]\nname = \"a\"\ntasks = 0\nexec = { dist = \"constant\", value = 1 }\n",
    );
    assert!(
        e.ends_with("zero.toml:3: activity[0].tasks: must be between 1 and 1000000, not 0"),
        "{e}"
    );

    let e = load_error("syntax.toml", "name = \"w\"\n[[activity]\n");
    assert!(e.contains("syntax.toml:2: invalid TOML"), "{e}");

    let e = load_error(
        "neg-tasks.toml",
        "[[activity]]\nname = \"a\"\ntasks = -3\nexec = { dist = \"constant\", value = 1 }\n",
    );
    assert!(
        e.ends_with("neg-tasks.toml:3: activity[0].tasks: must be between 1 and 1000000, not -3"),
        "{e}"
    );
}

#[test]
fn malformed_traces_are_refused_with_file_line_and_field() {
    let e = load_error(
        "no-runtime.json",
        "{\"workflow\": {\"tasks\": [\n  {\"name\": \"a\", \"runtimeInSeconds\": 1},\n  {\"name\": \"b\", \"parents\": [\"a\"]}\n]}}\n",
    );
    // Noticed at the end of b's object (line 3), reported there or at the next token.
    assert!(
        e.contains("no-runtime.json:3:") || e.contains("no-runtime.json:4:"),
        "{e}"
    );
    assert!(e.contains("task \"b\": runtimeInSeconds: missing"), "{e}");

    let e = load_error(
        "unknown-parent.json",
        r#"{"workflow": {"tasks": [{"name": "mDiff_ID01", "parents": ["foo"], "runtimeInSeconds": 1}]}}"#,
    );
    assert!(
        e.ends_with("unknown-parent.json: task \"mDiff_ID01\": parent \"foo\" is not a task of the workflow"),
        "{e}"
    );

    let e = load_error(
        "unknown-child.json",
        r#"{"workflow": {"tasks": [{"name": "a", "children": ["zz"], "runtimeInSeconds": 1}]}}"#,
    );
    assert!(
        e.ends_with("unknown-child.json: task \"a\": child \"zz\" is not a task of the workflow"),
        "{e}"
    );

    let e = load_error(
        "cycle.json",
        r#"{"workflow": {"tasks": [
            {"name": "a", "runtimeInSeconds": 1},
            {"name": "b", "parents": ["a", "c"], "runtimeInSeconds": 1},
            {"name": "c", "parents": ["b"], "runtimeInSeconds": 1}]}}"#,
    );
    assert!(e.contains("cycle.json: task \""), "{e}");
    assert!(
        e.contains("dependency cycle: ") && e.contains("\"b\" -> \"c\"") && e.contains("\"c\" -> \"b\""),
        "{e}"
    );

    let e = load_error(
        "negative.json",
        "{\"workflow\": {\"tasks\": [\n{\"name\": \"a\", \"runtimeInSeconds\": -2}\n]}}",
    );
    assert!(
        (e.contains("negative.json:2:") || e.contains("negative.json:3:"))
            && e.contains("task \"a\": runtimeInSeconds: must be a finite number ≥ 0, not -2"),
        "{e}"
    );

    let e = load_error(
        "dup.json",
        r#"{"workflow": {"tasks": [{"name": "a", "runtime": 1}, {"name": "a", "runtime": 2}]}}"#,
    );
    assert!(
        e.ends_with("dup.json: task \"a\": name: two tasks have this name"),
        "{e}"
    );

    let e = load_error(
        "syntax.json",
        "{\"workflow\": {\"tasks\": [\n  {\"name\": \"a\",, }]}}",
    );
    assert!(e.contains("syntax.json:2:"), "{e}");

    let e = load_error(
        "type.json",
        "{\"workflow\": {\"tasks\": [\n  {\"name\": \"a\", \"runtime\": \"fast\"}]}}",
    );
    assert!(
        e.contains("type.json:2:") && e.contains("invalid type: string \"fast\""),
        "{e}"
    );

    // Truncated gzip: an I/O error naming the file, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(SPLIT_FIXTURE).unwrap()).unwrap();
    let bytes = enc.finish().unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let e = WorkflowSource::load(&p, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut.json.gz"), "{e}");

    let e = WorkflowSource::load(Path::new("/nonexistent/w.json"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/nonexistent/w.json: "), "{e}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("junk");
    let samples: [&[u8]; 8] = [
        b"",
        b"{",
        b"\x1f\x8b\x08\x00junk",
        b"\xff\xfe\x00",
        b"[[activity]]\nname = 1\n",
        b"{\"workflow\": {\"specification\": {\"tasks\": [{\"id\": \"a\", \"parents\": [\"a\"]}]}, \"execution\": {\"tasks\": [{\"id\": \"a\", \"runtimeInSeconds\": 1}]}}}",
        b"{\"workflow\": {\"tasks\": [{\"name\": \"a\", \"runtime\": 1e308, \"files\": [{\"link\": \"input\", \"sizeInBytes\": 1e308}]}]}}",
        b"activity = 3\n",
    ];
    for s in samples {
        std::fs::write(&p, s).unwrap();
        let _ = WorkflowSource::load(&p, &LoadOptions::default());
    }
}

#[test]
fn kind_is_told_by_extension_then_content() {
    let dir = tempfile::tempdir().unwrap();
    // A profile with a byte-order mark and no extension.
    let p = dir.path().join("profile-without-extension");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/simubloch.toml"))
        .unwrap();
    std::fs::write(&p, format!("\u{feff}{text}")).unwrap();
    let src = WorkflowSource::load(&p, &LoadOptions::default()).unwrap();
    assert!(matches!(&src, WorkflowSource::Profile(pr) if pr.name == "SimuBloch"));
    // A JSON trace with a byte-order mark and no extension.
    let p = dir.path().join("trace-without-extension");
    std::fs::write(
        &p,
        format!("\u{feff}{}", std::fs::read_to_string(SPLIT_FIXTURE).unwrap()),
    )
    .unwrap();
    assert!(matches!(
        WorkflowSource::load(&p, &LoadOptions::default()),
        Ok(WorkflowSource::Trace(_))
    ));
    // A `.json` name is JSON whatever it holds.
    let e = load_error("profile.json", &text);
    assert!(e.contains("profile.json:"), "{e}");
    assert!(e.contains("expected value"), "{e}");
}
