//! `--out` folders: a run writes a manifest (`.fairsched-out`) first; the
//! next run into the same folder replaces exactly what it lists (and the
//! `*.partial` files a killed run left) and keeps the user's files; a
//! folder of other files is refused (exit 2) unless `--force`; a manifest
//! naming anything outside the folder is refused and nothing is deleted.
//! Real processes on the bundled KTH-SP2 log (the README's first command).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fairsched"));
    c.current_dir(repo());
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs the command, which must succeed; returns its standard error.
fn ok(args: &[&str]) -> String {
    let o = run(args);
    let (stdout, stderr) = text(&o);
    assert!(
        o.status.success(),
        "fairsched {args:?} failed:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// `fairsched simulate` on a short window of the bundled log.
fn simulate(out: &Path, policies: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["simulate", "--window", "600000,100000", "--no-progress"];
    for p in policies {
        args.extend(["--policy", p]);
    }
    args.extend(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    args.into_iter().map(String::from).collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The folder's entries, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every `*.partial` file under `dir`.
fn partials(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else { return found };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            found.extend(partials(&p));
        } else if p.to_string_lossy().ends_with(".partial") {
            found.push(p);
        }
    }
    found
}

#[test]
fn a_second_run_replaces_the_first_runs_folders_and_keeps_the_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&strs(&simulate(&out, &["fcfs", "easy"], &[])));
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "comparison.csv",
            "comparison.json",
            "easy",
            "fcfs"
        ]
    );
    let manifest = fs::read_to_string(out.join(".fairsched-out")).unwrap();
    assert!(manifest.starts_with("fairsched-out 1\n"), "{manifest}");
    assert!(
        manifest.contains(&format!("version {}\n", env!("CARGO_PKG_VERSION"))),
        "{manifest}"
    );
    assert!(
        manifest.contains("command fairsched simulate --window 600000,100000"),
        "{manifest}"
    );
    for e in ["fcfs/", "easy/", "comparison.csv", "comparison.json"] {
        assert!(manifest.contains(&format!("\nentry {e}\n")), "{e}: {manifest}");
    }

    // Between the runs: the user's notes, and what a killed run leaves.
    fs::write(out.join("notes.txt"), "mine").unwrap();
    fs::write(out.join("x.partial"), "").unwrap();
    fs::write(out.join("easy/tasks.csv.partial"), "").unwrap();

    let stderr = ok(&strs(&simulate(&out, &["first-fit", "fair-share"], &[])));
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "comparison.csv",
            "comparison.json",
            "fair-share",
            "first-fit",
            "notes.txt"
        ],
        "no stale policy folder, no partial file"
    );
    assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
    assert!(
        stderr.contains("kept 1 file not written by fairsched: notes.txt"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("kept").count(), 1, "one line: {stderr}");
    let csv = fs::read_to_string(out.join("comparison.csv")).unwrap();
    assert!(
        csv.contains("first-fit") && csv.contains("fair-share") && !csv.contains("easy"),
        "{csv}"
    );

    // From several policies to one: the run's files go in the folder itself.
    ok(&strs(&simulate(&out, &["easy"], &[])));
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "notes.txt",
            "orgs.csv",
            "runs.csv",
            "summary.json",
            "tasks.csv",
            "users.csv"
        ]
    );
}

#[test]
fn the_readme_command_runs_twice_into_its_default_out() {
    // `fairsched simulate` (its --out is `out`), twice in one folder.
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let o = Command::new(env!("CARGO_BIN_EXE_fairsched"))
            .current_dir(dir.path())
            .args(["simulate", "--window", "600000,100000", "--no-progress"])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{stdout}\n{stderr}");
        assert!(!stderr.contains("kept"), "{stderr}");
    }
    let out = dir.path().join("out");
    assert!(names(&out).contains(&"comparison.csv".to_string()));
    assert!(out.join("fair-share/summary.json").exists());
}

#[test]
fn a_folder_of_other_files_is_refused_with_exit_2_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("data");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("thesis.tex"), "mine").unwrap();
    fs::write(out.join("summary.json"), "old").unwrap();
    let args = simulate(&out, &["fcfs"], &[]);
    let o = run(&strs(&args));
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--out {}: not empty and not a fairsched output folder (no .fairsched-out); \
             choose another --out, or add --force to write into it (files of the same name are replaced)",
            out.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("trace:"), "refused before any work: {stderr}");
    assert_eq!(names(&out), ["summary.json", "thesis.tex"], "nothing written");

    // --force: files of the same name are replaced, the others stay (and
    // are reported); the folder is a fairsched folder from now on.
    let stderr = ok(&strs(&simulate(&out, &["fcfs"], &["--force"])));
    assert!(
        stderr.contains("kept 1 file not written by fairsched: thesis.tex"),
        "{stderr}"
    );
    assert_ne!(fs::read_to_string(out.join("summary.json")).unwrap(), "old");
    assert_eq!(fs::read_to_string(out.join("thesis.tex")).unwrap(), "mine");
    ok(&strs(&simulate(&out, &["fcfs", "easy"], &[])));
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "comparison.csv",
            "comparison.json",
            "easy",
            "fcfs",
            "thesis.tex"
        ]
    );

    // --out a file: the command line's mistake too.
    let o = run(&strs(&simulate(&out.join("thesis.tex"), &["fcfs"], &[])));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
    assert!(text(&o).1.contains("not a folder"), "{}", text(&o).1);
}

#[test]
fn a_manifest_naming_a_file_outside_is_refused_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("evil");
    fs::write(&evil, "precious").unwrap();
    let out = dir.path().join("out");
    ok(&strs(&simulate(&out, &["fcfs", "easy"], &[])));
    let manifest = out.join(".fairsched-out");
    let mut text_m = fs::read_to_string(&manifest).unwrap();
    text_m.push_str("entry ../evil\n");
    let line = text_m.lines().count();
    fs::write(&manifest, &text_m).unwrap();
    let before = names(&out);
    let o = run(&strs(&simulate(&out, &["first-fit"], &[])));
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:{line}: entry \"../evil\" refused",
            manifest.display()
        )) && stderr.contains("nothing was deleted"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&evil).unwrap(), "precious");
    assert_eq!(names(&out), before, "nothing deleted in the folder either");
    assert!(out.join("easy/tasks.csv").exists());
}

#[test]
fn a_killed_run_leaves_partial_files_the_next_run_removes() {
    // SIGKILL cannot be caught: the killed run leaves `tasks.csv.partial`
    // files (never a half-written file under its final name), and its
    // manifest, written first, lists its folders.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = bin()
        .env("RAYON_NUM_THREADS", "1")
        .args(["simulate", "--no-progress", "--split-parallel", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let caught = wait_for_partial(&out, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    if !caught {
        eprintln!("the run ended before a partial file was seen: nothing to check");
        return;
    }
    assert!(!partials(&out).is_empty());
    assert!(out.join(".fairsched-out").exists(), "written first");
    fs::write(out.join("notes.txt"), "mine").unwrap();
    ok(&strs(&simulate(&out, &["fcfs"], &[])));
    assert_eq!(partials(&out), Vec::<PathBuf>::new());
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "notes.txt",
            "orgs.csv",
            "runs.csv",
            "summary.json",
            "tasks.csv",
            "users.csv"
        ]
    );
}

/// Waits until a run's `tasks.csv.partial` shows under `out` (not the
/// manifest's own, an instant); false if the child ended first.
fn wait_for_partial(out: &Path, child: &mut std::process::Child) -> bool {
    wait_until(out, child, first_partial)
}

fn first_partial(out: &Path) -> bool {
    partials(out).iter().any(|p| p.ends_with("tasks.csv.partial"))
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_partial_file() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    for (sig, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut child = bin()
            .env("RAYON_NUM_THREADS", "1")
            .args(["simulate", "--no-progress", "--split-parallel", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if !wait_for_partial(&out, &mut child) {
            eprintln!("the run ended before a partial file was seen: nothing to check");
            continue;
        }
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{sig}: {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert_eq!(partials(&out), Vec::<PathBuf>::new(), "{sig}");
        assert!(out.join(".fairsched-out").exists());
    }
}

#[test]
fn an_experiment_runs_twice_into_the_same_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let args = |reps: &'static str| {
        vec![
            "experiment".to_string(),
            "workflow-fairness".into(),
            "--workflows".into(),
            "gate,simubloch".into(),
            "--repetitions".into(),
            reps.into(),
            "--no-progress".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ]
    };
    ok(&strs(&args("2")));
    assert!(out.join("eta-rep2.svg").exists());
    fs::write(out.join("notes.txt"), "mine").unwrap();
    let stderr = ok(&strs(&args("1")));
    assert!(
        stderr.contains("kept 1 file not written by fairsched: notes.txt"),
        "{stderr}"
    );
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "eta-rep1.svg",
            "notes.txt",
            "sets.csv",
            "summary.json",
            "tables.json",
            "workflows.csv"
        ]
    );
    // The same for diet-ethic, run twice as it is.
    let out = dir.path().join("d");
    let diet = [
        "experiment",
        "diet-ethic",
        "--scenario",
        "night-consecutive",
        "--runs",
        "1",
        "--n-submit",
        "100",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&diet);
    ok(&diet);
    assert_eq!(
        names(&out),
        [
            ".fairsched-out",
            "diet.csv",
            "diet.svg",
            "summary.json",
            "tables.json"
        ]
    );
}

#[test]
fn trace_stats_and_tau_run_twice_into_the_same_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stats");
    let log = repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz");
    let stats = [
        "trace",
        "stats",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&stats);
    ok(&stats);
    assert_eq!(
        names(&out),
        [".fairsched-out", "aggregation.svg", "summary.json", "tables.json"]
    );
    // A folder of other files: refused, then forced.
    let mine = dir.path().join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("a.txt"), "").unwrap();
    let mut args = vec![
        "trace",
        "stats",
        log.to_str().unwrap(),
        "--out",
        mine.to_str().unwrap(),
    ];
    assert_eq!(run(&args).status.code(), Some(2));
    args.push("--force");
    ok(&args);
    assert_eq!(
        names(&mine),
        [
            ".fairsched-out",
            "a.txt",
            "aggregation.svg",
            "summary.json",
            "tables.json"
        ]
    );

    let out = dir.path().join("tau");
    let tau = [
        "trace",
        "tau",
        "gate,simubloch",
        "--repetitions",
        "1",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&tau);
    ok(&tau);
    assert_eq!(
        names(&out),
        [".fairsched-out", "tables.json", "tau.json", "tau.svg"]
    );
}

#[test]
fn every_command_with_out_takes_force() {
    for cmd in [
        &["simulate"][..],
        &["experiment", "shapley"],
        &["experiment", "pffp"],
        &["experiment", "diet-ethic"],
        &["experiment", "workflow-fairness"],
        &["trace", "stats"],
        &["trace", "tau"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let (help, _) = text(&run(&args));
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(
                "--force Write into a non-empty --out folder that no fairsched run wrote \
                 (files of the same name are replaced)"
            ),
            "{cmd:?}:\n{help}"
        );
    }
}

#[test]
fn a_folder_of_the_users_with_a_policys_name_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&strs(&simulate(&out, &["fcfs", "easy"], &[])));
    // The user's own folder, named like a policy's.
    fs::create_dir(out.join("first-fit")).unwrap();
    fs::write(out.join("first-fit/notes.txt"), "mine").unwrap();
    let o = run(&strs(&simulate(&out, &["first-fit", "fcfs"], &[])));
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("first-fit/ is there and no fairsched run wrote it") && stderr.contains("--force"),
        "{stderr}"
    );
    // Refused before anything was deleted.
    assert!(out.join("easy/summary.json").exists() && out.join("first-fit/notes.txt").exists());
    ok(&strs(&simulate(&out, &["first-fit", "fcfs"], &["--force"])));
    assert!(!out.join("first-fit/notes.txt").exists() && out.join("first-fit/summary.json").exists());
    assert!(!out.join("easy").exists());
}

/// The user's files inside a run's folder survive the next run: only what
/// fairsched writes there (and the schedule files an earlier run named) is
/// replaced; a folder the new run does not write stays with them.
#[test]
fn a_rerun_keeps_the_users_files_inside_run_folders() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    ok(&strs(&simulate(
        &out,
        &["easy", "first-fit"],
        &["--swf-out", "schedule.swf"],
    )));
    assert!(out.join("easy/schedule.swf").is_file());
    fs::write(out.join("easy/analysis.ipynb"), "{}").unwrap();
    fs::create_dir(out.join("first-fit/plots")).unwrap();
    fs::write(out.join("first-fit/plots/fig.pdf"), "%PDF").unwrap();
    let stderr = ok(&strs(&simulate(&out, &["easy", "fcfs"], &[])));
    assert_eq!(fs::read_to_string(out.join("easy/analysis.ipynb")).unwrap(), "{}");
    assert_eq!(
        fs::read_to_string(out.join("first-fit/plots/fig.pdf")).unwrap(),
        "%PDF"
    );
    assert!(
        stderr.contains("easy/analysis.ipynb") && stderr.contains("first-fit/plots"),
        "{stderr}"
    );
    // This run's files are there; the earlier run's are not.
    assert!(out.join("easy/summary.json").is_file() && out.join("fcfs/summary.json").is_file());
    assert!(
        !out.join("easy/schedule.swf").exists(),
        "an earlier run's schedule file stayed"
    );
    assert!(!out.join("first-fit/summary.json").exists() && !out.join("first-fit/tasks.csv").exists());
}

/// Result files that a run writes in its folder: present together with
/// its summary, or not at all.
const RUN_FILES: [&str; 6] = [
    "summary.json",
    "tasks.csv",
    "runs.csv",
    "orgs.csv",
    "users.csv",
    "s.swf",
];

/// Every folder under `out` that holds one of a run's files holds its
/// `summary.json` (and every other of them): no result shows under its
/// final name before the run's summary does. Returns the folders that do.
fn complete_runs(out: &Path) -> Vec<String> {
    let mut complete = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        let present: Vec<&str> = RUN_FILES
            .iter()
            .copied()
            .filter(|f| d.join(f).is_file())
            .collect();
        if !present.is_empty() {
            assert_eq!(
                present,
                RUN_FILES,
                "{}: {present:?} without the rest of the run's files",
                d.display()
            );
            complete.push(d.strip_prefix(out).unwrap().display().to_string());
        }
        for e in rd.flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    complete.sort();
    complete
}

/// A policy that fails half-way (its schedule file cannot be written:
/// a folder of that name is in the way) leaves no file under its final
/// name; the policy that succeeded has all of its own, the comparison
/// (of both) is not written.
#[test]
fn a_run_that_fails_midway_leaves_no_result_without_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&strs(&simulate(&out, &["fcfs", "easy"], &[])));
    fs::create_dir(out.join("easy/s.swf.partial")).unwrap();
    let o = run(&strs(&simulate(&out, &["fcfs", "easy"], &["--swf-out", "s.swf"])));
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("s.swf.partial"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // easy's tasks.csv was finished before its schedule failed: not shown.
    assert_eq!(complete_runs(&out), ["fcfs"]);
    assert!(!out.join("easy/tasks.csv").exists());
    assert!(!out.join("comparison.csv").exists());
    assert_eq!(partials(&out), Vec::<PathBuf>::new());
    assert!(out.join("easy/s.swf.partial").is_dir(), "the user's folder stays");

    // One policy, its schedule file elsewhere failing the same way.
    let sched = dir.path().join("sched");
    fs::create_dir_all(sched.join("s.swf.partial")).unwrap();
    let one = dir.path().join("one");
    let o = run(&strs(&simulate(
        &one,
        &["fcfs"],
        &["--swf-out", sched.join("s.swf").to_str().unwrap()],
    )));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
    assert_eq!(names(&one), [".fairsched-out"], "nothing but the manifest");
}

/// Whether a file of a run shows under its final name in a folder of `out`.
fn any_result(out: &Path) -> bool {
    let Ok(rd) = fs::read_dir(out) else { return false };
    rd.flatten()
        .any(|e| RUN_FILES.iter().any(|f| e.path().join(f).exists()))
}

/// Waits until `seen(out)`; false if the child ended first.
fn wait_until(out: &Path, child: &mut std::process::Child, seen: fn(&Path) -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(120) {
        if seen(out) {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("nothing seen after 120 s");
}

/// SIGTERM while a run of several policies writes (as its first partial
/// file shows), and the moment a first result file shows under its final
/// name: every policy folder then holds all of its files with its summary
/// (the interrupt waits for a folder's files being renamed into place), or
/// none. One thread: the policies run one after the other.
#[cfg(unix)]
#[test]
fn an_interrupted_run_shows_no_result_without_its_summary() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let first_partial: fn(&Path) -> bool = first_partial;
    for (when, seen) in [("writing", first_partial), ("a first result shows", any_result)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut child = bin()
            .env("RAYON_NUM_THREADS", "1")
            .args([
                "simulate",
                "--no-progress",
                "--split-parallel",
                "--swf-out",
                "s.swf",
            ])
            .args([
                "--policy",
                "fcfs",
                "--policy",
                "fair-share",
                "--orgs",
                "3",
                "--out",
            ])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if !wait_until(&out, &mut child, seen) {
            eprintln!("{when}: the run ended first: nothing to check");
            continue;
        }
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        // Checked whether the signal came in time or not.
        let complete = complete_runs(&out);
        if o.status.code() == Some(143) {
            assert_eq!(partials(&out), Vec::<PathBuf>::new(), "{when}");
            assert!(!out.join("comparison.csv").exists(), "{when}");
            assert!(
                !out.join(".fairsched.lock").exists(),
                "{when}: the lock goes with the run"
            );
        }
        eprintln!(
            "{when}: exit {:?}, complete folders {complete:?}",
            o.status.code()
        );
    }
}

/// A second run into a folder another one is writing into stops at once,
/// naming the folder, and touches nothing; the lock is a file in the
/// folder, held (here by the test) for the run.
#[test]
fn a_second_run_into_the_same_out_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&strs(&simulate(&out, &["fcfs"], &[])));
    assert!(!out.join(".fairsched.lock").exists(), "removed at the end");
    let before = names(&out);
    let lock = fs::File::options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(out.join(".fairsched.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    for (args, what) in [
        (simulate(&out, &["easy"], &[]), "simulate"),
        (
            [
                "experiment",
                "diet-ethic",
                "--scenario",
                "night-consecutive",
                "--runs",
                "1",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain(["--n-submit", "100", "--no-progress", "--out"].map(String::from))
            .chain([out.to_str().unwrap().to_string()])
            .collect(),
            "diet-ethic",
        ),
    ] {
        let t0 = std::time::Instant::now();
        let o = run(&strs(&args));
        let (stdout, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--out {}: another fairsched run is writing into this folder (it holds .fairsched.lock there)",
                out.display()
            )),
            "{what}: {stderr}"
        );
        assert!(stdout.is_empty(), "{what}: stopped before any work: {stdout}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "at once");
        let mut now = names(&out);
        now.retain(|n| n != ".fairsched.lock");
        assert_eq!(now, before, "{what}: nothing touched");
    }
    drop(lock);
    // Released: the next run goes, and removes the lock file.
    ok(&strs(&simulate(&out, &["easy"], &[])));
    assert!(!out.join(".fairsched.lock").exists());

    // Two real runs at once: the second stops while the first goes on.
    let mut first = bin()
        .env("RAYON_NUM_THREADS", "1")
        .args(["simulate", "--no-progress", "--split-parallel", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    if wait_for_partial(&out, &mut first) {
        let o = run(&strs(&simulate(&out, &["fcfs"], &[])));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
        assert!(text(&o).1.contains("another fairsched run"), "{}", text(&o).1);
    } else {
        eprintln!("the first run ended before a partial file was seen: not run at once");
    }
    assert!(first.wait().unwrap().success(), "the first run is not disturbed");
    assert!(out.join("comparison.csv").exists() && out.join("fair-share/summary.json").exists());
}
