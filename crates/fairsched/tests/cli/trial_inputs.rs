//! What a new user's trial met with unusual inputs (issue 13), end to end
//! through the binary: a negative submit time, a header `MaxProcs` that is
//! not a number, `trace stats` on a log with no job, `--split-parallel` on
//! a job wider than the platform, and `experiment pffp --instances` beyond
//! the weeks a workload has. Small hand-made logs, and the bundled real log
//! (in the repository, so nothing here is skipped).

use fairsched_trace::{JobIteratorExt, JobStream, StreamOptions};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary with `args`, killed after `limit` (a run that explodes
/// fails the test instead of hanging it).
fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Drained on threads, so that a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("fairsched {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

fn run(args: &[&str]) -> Output {
    run_within(args, Duration::from_secs(300))
}

/// stdout and stderr of a run that must succeed.
fn ok(args: &[&str]) -> (String, String) {
    let o = run(args);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(
        o.status.success(),
        "fairsched {args:?} failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// Exit code and stderr of a run that must fail.
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let o = run(args);
    assert!(
        !o.status.success(),
        "fairsched {args:?} succeeded:\n{}",
        text(&o.stdout)
    );
    (o.status.code(), text(&o.stderr))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

fn bundled() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/KTH-SP2-1996-2.1-cln.swf.gz")
}

/// A job line: number, submit, run time, processors (fields 5 and 8), user.
fn job(id: u64, submit: &str, run: i64, procs: &str, user: i64) -> String {
    format!("{id} {submit} 0 {run} {procs} -1 -1 {procs} 200 -1 1 {user} 1 -1 -1 -1 -1 -1\n")
}

/// Writes `text` as `name` in `dir`; returns its path as a string.
fn log(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn out_in(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

/// A negative submit time (field 2) used to reach the simulator's clock
/// ("agent asks to be polled at -10s"); it is a located line error now,
/// for every command that reads the log, and `--lenient` skips it.
#[test]
fn a_negative_submit_time_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "; MaxProcs: 8\n{}{}{}",
        job(1, "0", 100, "4", 7),
        job(2, "-10", 50, "2", 8),
        job(3, "5", 50, "2", 8)
    );
    let neg = log(dir.path(), "neg.swf", &text);
    let located = format!(
        "{neg}:3: field 2 (submit_time): \"-10\" is negative: SWF submit times are seconds from \
         the log's start"
    );
    let out = out_in(dir.path(), "out");
    let (code, err) = fails(&[
        "simulate",
        "--trace",
        &neg,
        "--policy",
        "fcfs",
        "--out",
        &out,
        "--no-progress",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&located), "{err}");
    assert!(!err.contains("polled"), "{err}");
    for cmd in ["info", "stats"] {
        let (code, err) = fails(&["trace", cmd, &neg]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(&located), "trace {cmd}: {err}");
    }

    // --lenient skips the line and counts it; the two other jobs run.
    let (stdout, _) = ok(&[
        "simulate",
        "--trace",
        &neg,
        "--policy",
        "fcfs",
        "--lenient",
        "--out",
        &out,
        "--no-progress",
    ]);
    assert!(stdout.contains("bad_lines_skipped 1"), "{stdout}");
    let summary = json(&Path::new(&out).join("summary.json"));
    assert_eq!(summary["jobs"], 2);
    assert_eq!(summary["filters"]["bad_lines_skipped"], 1);
}

/// `; MaxProcs: abc` or `-5` used to be dropped without a word, `trace
/// info` then saying "no MaxProcs in header". Now a warning names the file,
/// the line and the header, and says what is used instead.
#[test]
fn a_bad_max_procs_header_is_a_warning_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["abc", "-5"] {
        let text = format!(
            "; Version: 2.2\n; MaxProcs: {value}\n{}{}",
            job(1, "0", 100, "4", 7),
            job(2, "10", 50, "2", 8)
        );
        let path = log(dir.path(), "hdr.swf", &text);
        let warning = format!(
            "{path}:2: header `MaxProcs: {value}` ignored: not a whole number of processors, 1 or more"
        );

        // trace info: the warning among its lines, and where the processor
        // count comes from instead.
        let (stdout, _) = ok(&["trace", "info", &path]);
        assert!(stdout.contains(&format!("warning        {warning}")), "{stdout}");
        assert!(
            stdout.contains("processors     4 (largest processor count seen in jobs (the header's MaxProcs is not valid: ignored))"),
            "{stdout}"
        );
        assert!(!stdout.contains("no MaxProcs in header"), "{stdout}");
        let (stdout, stderr) = ok(&["trace", "info", &path, "--json"]);
        let info: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(info["warnings"][0], warning.as_str());
        assert_eq!(info["processors"], 4);
        assert!(stderr.contains(&format!("warning: {warning}")), "{stderr}");

        // simulate: the warning on stderr with the platform used.
        let out = out_in(dir.path(), "out");
        let (_, stderr) = ok(&[
            "simulate",
            "--trace",
            &path,
            "--policy",
            "fcfs",
            "--out",
            &out,
            "--no-progress",
        ]);
        assert!(
            stderr.contains(&format!(
                "warning: {warning}; the run has 4 processors (widest job)"
            )),
            "{stderr}"
        );
        let summary = json(&Path::new(&out).join("summary.json"));
        assert_eq!(summary["platform"]["total"], 4);
        assert_eq!(summary["platform"]["source"], "widest job");
        let (_, stderr) = ok(&[
            "simulate",
            "--trace",
            &path,
            "--policy",
            "fcfs",
            "--procs",
            "16",
            "--out",
            &out,
            "--no-progress",
        ]);
        assert!(
            stderr.contains(&format!(
                "warning: {warning}; the run has 16 processors (--procs)"
            )),
            "{stderr}"
        );
    }
    // A valid header says nothing.
    let good = log(
        dir.path(),
        "good.swf",
        &format!("; MaxProcs: 8\n{}", job(1, "0", 10, "2", 1)),
    );
    let (stdout, stderr) = ok(&["trace", "info", &good]);
    assert!(
        !stdout.contains("warning") && !stderr.contains("warning"),
        "{stdout}{stderr}"
    );
}

/// `trace stats` on a log with no job used to print a table of dashes
/// ("count -"). It says there is nothing to describe and why, and exits 0
/// as `simulate` does on a window without jobs.
#[test]
fn trace_stats_without_jobs_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = log(dir.path(), "empty.swf", "; MaxProcs: 8\n; only comments\n");
    let (stdout, _) = ok(&["trace", "stats", &empty, "--no-progress"]);
    assert_eq!(
        stdout.trim_end(),
        format!("{empty}: no jobs: nothing to describe (the log has no job line)")
    );
    assert!(!stdout.contains("count"), "{stdout}");

    let dropped = log(
        dir.path(),
        "dropped.swf",
        &format!("{}{}", job(1, "0", -1, "4", 7), job(2, "5", 0, "1", 7)),
    );
    let (stdout, _) = ok(&["trace", "stats", &dropped]);
    assert!(
        stdout.contains(&format!(
            "{dropped}: no jobs: nothing to describe (the cleaning filters dropped every job line: 2 of 2 \
             (runtime_unknown 1, runtime_nonpositive 1))"
        )),
        "{stdout}"
    );

    // --json stays JSON on stdout; the remark goes to stderr.
    let (stdout, stderr) = ok(&["trace", "stats", &dropped, "--json"]);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["stats"]["jobs"], 0);
    assert!(
        stderr.contains("warning: ") && stderr.contains("no jobs: nothing to describe"),
        "{stderr}"
    );

    // --out: summary.json only (no chart of nothing), and says so.
    let out = out_in(dir.path(), "stats");
    let (stdout, _) = ok(&["trace", "stats", &empty, "--out", &out]);
    assert!(stdout.contains(&format!("wrote {out}/summary.json")), "{stdout}");
    assert_eq!(json(&Path::new(&out).join("summary.json"))["stats"]["jobs"], 0);
    assert!(!Path::new(&out).join("aggregation.svg").exists());

    // A log with jobs still gets its table.
    let one = log(
        dir.path(),
        "one.swf",
        &format!("{}{}", job(1, "0", 10, "1", 1), job(2, "5", 20, "1", 1)),
    );
    let (stdout, _) = ok(&["trace", "stats", &one]);
    assert!(
        stdout.contains("count") && !stdout.contains("nothing to describe"),
        "{stdout}"
    );
}

/// The tasks of `tasks.csv` per SWF job number (column `job`).
fn tasks_per_job(out: &Path) -> std::collections::BTreeMap<u64, u64> {
    let tasks = fs::read_to_string(out.join("tasks.csv")).unwrap();
    let mut lines = tasks.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|&c| c == "job").expect("a job column");
    let mut per = std::collections::BTreeMap::new();
    for l in lines {
        let id: u64 = l.split(',').nth(col).unwrap().parse().unwrap();
        *per.entry(id).or_insert(0) += 1;
    }
    per
}

/// `--split-parallel` used to split before dropping jobs too wide for the
/// platform: a job claiming 4 × 10⁹ processors became that many tasks. The
/// width check comes first now: wider than the platform is dropped and
/// counted (`too_wide`), and no job gives more tasks than the platform has
/// processors.
#[test]
fn split_parallel_drops_too_wide_jobs_before_splitting() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "; MaxProcs: 8\n{}{}{}{}",
        job(1, "0", 100, "4", 7),
        job(2, "5", 50, "4000000000", 8),
        job(3, "6", 50, "9", 8),
        job(4, "7", 50, "8", 8)
    );
    let wide = log(dir.path(), "wide.swf", &body);
    let simulate = |extra: &[&str], name: &str| -> (Value, std::collections::BTreeMap<u64, u64>) {
        let out = dir.path().join(name);
        let mut args = vec!["simulate", "--trace", &wide, "--policy", "fcfs", "--no-progress"];
        args.extend_from_slice(extra);
        let out_s = out.to_str().unwrap().to_string();
        args.extend(["--out", &out_s]);
        let o = run_within(&args, Duration::from_secs(60));
        assert!(o.status.success(), "{}", text(&o.stderr));
        (json(&out.join("summary.json")), tasks_per_job(&out))
    };

    // One machine of 8: jobs 2 (4 × 10⁹) and 3 (9) are dropped, 1 and 4
    // give 4 + 8 tasks.
    let (summary, per_job) = simulate(&["--split-parallel"], "split");
    assert_eq!(
        (summary["jobs"].as_u64(), summary["too_wide"].as_u64()),
        (Some(12), Some(2))
    );
    assert_eq!(per_job.into_iter().collect::<Vec<_>>(), [(1, 4), (4, 8)]);

    // Machines of 4 and 4: split, a job may take the whole platform (8).
    let (summary, per_job) = simulate(&["--split-parallel", "--machines", "4,4"], "split-machines");
    assert_eq!(
        (summary["jobs"].as_u64(), summary["too_wide"].as_u64()),
        (Some(12), Some(2))
    );
    assert_eq!(per_job.into_iter().collect::<Vec<_>>(), [(1, 4), (4, 8)]);

    // Not split, a job needs one machine: only job 1 fits on a machine of 4.
    let (summary, per_job) = simulate(&["--machines", "4,4"], "whole");
    assert_eq!(
        (summary["jobs"].as_u64(), summary["too_wide"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(per_job.into_iter().collect::<Vec<_>>(), [(1, 1)]);
}

/// The bundled real log, split: with the platform sized by the header (100
/// processors, the widest job's), no job is dropped and every processor of
/// every kept job is a task, as before the change; with `--procs 64`, the
/// jobs wider than 64 are dropped and counted, the others all split.
#[test]
fn split_parallel_counts_on_the_bundled_log() {
    let log = bundled();
    let window = (0i64, 3_000_000i64);
    let jobs: Vec<_> = JobStream::open(&log, StreamOptions::default())
        .unwrap()
        .window(window.0, window.1)
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(jobs.len() > 1000, "{} jobs", jobs.len());
    let log_s = log.to_str().unwrap();
    let window_s = format!("{},{}", window.0, window.1);
    let dir = tempfile::tempdir().unwrap();
    for (procs, name) in [(None, "header"), (Some(64u32), "procs-64")] {
        let out = dir.path().join(name);
        let out_s = out.to_str().unwrap().to_string();
        let mut args = vec![
            "simulate",
            "--trace",
            log_s,
            "--policy",
            "fcfs",
            "--split-parallel",
            "--window",
            &window_s,
            "--no-progress",
            "--out",
            &out_s,
        ];
        let procs_s = procs.map(|p| p.to_string());
        if let Some(p) = &procs_s {
            args.extend(["--procs", p]);
        }
        let (_, _) = ok(&args);
        let limit = procs.unwrap_or(100);
        let kept: Vec<_> = jobs.iter().filter(|j| j.procs <= limit).collect();
        let tasks: u64 = kept.iter().map(|j| u64::from(j.procs)).sum();
        let summary = json(&out.join("summary.json"));
        assert_eq!(summary["jobs"].as_u64(), Some(tasks), "{name}");
        assert_eq!(
            summary["too_wide"].as_u64(),
            Some((jobs.len() - kept.len()) as u64),
            "{name}"
        );
        let per_job = tasks_per_job(&out);
        assert!(per_job.values().all(|&n| n <= u64::from(limit)), "{name}");
        assert_eq!(per_job.values().sum::<u64>(), tasks, "{name}");
        if procs.is_none() {
            assert_eq!(summary["too_wide"].as_u64(), Some(0));
        } else {
            assert!(
                summary["too_wide"].as_u64() > Some(0),
                "the window has jobs wider than 64"
            );
        }
    }
}

/// `experiment pffp --instances N` beyond a workload's weeks, or logs
/// with fewer weeks than the workload takes: the run is smaller than asked
/// for, and says so on stderr and in summary.json's notes.
#[test]
fn pffp_instances_beyond_the_workload_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(dir.path(), "pffp");
    let log = bundled();
    let log_s = log.to_str().unwrap();
    let (stdout, stderr) = ok(&[
        "experiment",
        "pffp",
        "--test",
        "2",
        "--instances",
        "100",
        "--logs",
        log_s,
        "--out",
        &out,
        "--no-progress",
    ]);
    let summary = json(&Path::new(&out).join("summary.json"));
    let ran = summary["instances"].as_array().unwrap().len();
    // The bundled log alone has fewer than 48 weeks: Workload B (weeks
    // 19–48 of the pool) is cut short, and 100 is beyond its 30 anyway.
    assert!(ran > 0 && ran < 30, "{ran} instances");
    let capped = "--instances 100: Workload B is the paper's 30 weeks (weeks 19–48 of the seed's shuffled \
                  pool; Workloads A, B and C take disjoint weeks), so at most 30 run";
    let short = format!("{ran} of the 30 weeks asked for ran (give more logs for all)");
    assert!(stderr.contains(&format!("warning: {capped}")), "{stderr}");
    assert!(stderr.contains(&short), "{stderr}");
    let notes: Vec<&str> = summary["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with(capped) && n.contains(&short)),
        "{notes:?}"
    );
    assert!(stdout.contains("Workload B is the paper's 30 weeks"), "{stdout}");

    // All that was asked for ran: nothing said.
    let (_, stderr) = ok(&[
        "experiment",
        "pffp",
        "--test",
        "2",
        "--instances",
        "3",
        "--logs",
        log_s,
        "--out",
        &out,
        "--no-progress",
    ]);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(
        json(&Path::new(&out).join("summary.json"))["instances"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

/// `--orgs` larger than the processors names the flag (it said "invalid
/// parameter: cannot give each of …" without saying which option).
#[test]
fn too_many_organizations_name_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bundled();
    let (code, err) = fails(&[
        "simulate",
        "--trace",
        b.to_str().unwrap(),
        "--policy",
        "fair-share",
        "--orgs",
        "1000000",
        "--no-progress",
        "--out",
        &out_in(tmp.path(), "o"),
    ]);
    // A flag error (exit 2), naming the flag and its range.
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--orgs 1000000") && err.contains("1 to 100"),
        "{err}"
    );
}

/// `experiment shapley --orgs 1` gives a table of zeros by definition:
/// it says so instead of printing it silently.
#[test]
fn shapley_with_one_organization_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let b = format!("{}:100", bundled().to_str().unwrap());
    // Two windows with `orgs` organizations, into `out`: stdout, stderr.
    let run = |orgs: &str, out: &str| {
        ok(&[
            "experiment",
            "shapley",
            "--trace",
            &b,
            "--orgs",
            orgs,
            "--instances",
            "2",
            "--no-progress",
            "--out",
            &out_in(tmp.path(), out),
        ])
    };
    let (stdout, stderr) = run("1", "s");
    assert!(stderr.contains("warning: one organization"), "{stderr}");
    assert!(stdout.contains("1 organization"), "{stdout}");
    let (_, stderr) = run("2", "s2");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A workflow set on a grid with slots to spare never waits: μ is 0 in
/// both runs, and the command says why instead of a bare row of zeros.
#[test]
fn workflows_that_never_wait_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let grid = log(
        tmp.path(),
        "idle.toml",
        "[slots]\ninitial = 500\nmax = 500\njoin_per_hour = 0\nfailure = 0\n\
         [background]\nper_hour = 1\n",
    );
    // Two repetitions of `workflows` on `grid`, into `out`: stdout.
    let run = |workflows: &str, grid: &str, out: &str| {
        ok(&[
            "experiment",
            "workflow-fairness",
            "--workflows",
            workflows,
            "--repetitions",
            "2",
            "--grid",
            grid,
            "--no-progress",
            "--out",
            &out_in(tmp.path(), out),
        ])
        .0
    };
    let stdout = run("simubloch,simubloch", &grid, "w");
    assert!(
        stdout.contains("μ = 0 in both runs of 2 of 2 repetitions"),
        "{stdout}"
    );
    // The bundled example grid is busy enough that they compete.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grid.toml");
    let stdout = run("gate,simubloch", example.to_str().unwrap(), "w2");
    assert!(!stdout.contains("μ = 0 in both runs"), "{stdout}");
}

/// A window with no job has no mean and no utilization: `null` in
/// summary.json (a bounded slowdown is at least 1, so 0 was a wrong
/// number, not an empty one), empty cells in comparison.csv, a warning on
/// stderr, and the run still succeeds.
#[test]
fn an_empty_window_has_null_means() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bundled();
    let out = out_in(tmp.path(), "e");
    let (stdout, stderr) = ok(&[
        "simulate",
        "--trace",
        b.to_str().unwrap(),
        "--window",
        "0,100",
        "--policy",
        "easy",
        "--policy",
        "fcfs",
        "--no-progress",
        "--out",
        &out,
    ]);
    let s = json(&Path::new(&out).join("easy/summary.json"));
    assert_eq!(s["jobs"], 0, "{s:#}");
    for k in [
        "mean_wait_s",
        "mean_response_s",
        "mean_bounded_slowdown",
        "utilization",
    ] {
        assert!(s[k].is_null(), "{k}: {}", s[k]);
    }
    // The warning is said on stderr, not in the middle of the table.
    assert!(stderr.contains("warning: no job in the window"), "{stderr}");
    assert!(!stdout.contains("warning"), "{stdout}");
    let csv = fs::read_to_string(Path::new(&out).join("comparison.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "mean_wait_s")
        .expect("mean_wait_s column");
    assert_eq!(row[col], "", "{csv}");
}

/// A run that fails before its first result (a missing log) leaves no
/// empty `--out` folder behind; one that was there stays.
#[test]
fn a_missing_log_leaves_no_new_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.swf");
    for (cmd, out) in [
        (vec!["simulate", "--trace", missing.to_str().unwrap()], "s"),
        (
            vec![
                "experiment",
                "pffp",
                "--test",
                "2",
                "--logs",
                missing.to_str().unwrap(),
            ],
            "p",
        ),
    ] {
        let out = out_in(tmp.path(), out);
        let mut args = cmd.clone();
        args.extend(["--no-progress", "--out", &out]);
        let (code, err) = fails(&args);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("nope.swf"), "{err}");
        assert!(!Path::new(&out).exists(), "{args:?} left {out}");
    }
    let kept = out_in(tmp.path(), "kept");
    fs::create_dir(&kept).unwrap();
    fails(&[
        "simulate",
        "--trace",
        missing.to_str().unwrap(),
        "--no-progress",
        "--out",
        &kept,
    ]);
    assert!(Path::new(&kept).is_dir());
}

/// The Parallel Workloads Archive writes a job line of -1 in every field,
/// submit time included, for a job it knows nothing of (one official
/// cleaned log has 1,190 of them from its line 325 on). Every command that
/// reads a log drops them and counts them (`submit_unknown`), as it does a
/// job of unknown run time, and its results are those of the log without
/// them: here the bundled real log (KTH-SP2), as published and with 1,190
/// such lines after its 324th job.
#[test]
fn job_lines_of_unknown_submit_time_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut published = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(fs::File::open(bundled()).unwrap()),
        &mut published,
    )
    .unwrap();
    let unknown = vec!["-1"; 18].join(" ") + "\n";
    let mut with_unknown = String::new();
    let mut jobs = 0;
    for line in published.split_inclusive('\n') {
        with_unknown.push_str(line);
        if !line.starts_with(';') && !line.trim().is_empty() {
            jobs += 1;
            if jobs == 324 {
                with_unknown.push_str(&unknown.repeat(1190));
            }
        }
    }
    // The same file name in two folders: the experiments draw their
    // windows from the log's name.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for (d, t) in [(&a, &published), (&b, &with_unknown)] {
        fs::create_dir(d).unwrap();
        fs::write(d.join("kth.swf"), t).unwrap();
    }
    let log = |d: &Path| d.join("kth.swf").to_str().unwrap().to_string();
    let (la, lb) = (log(&a), log(&b));

    let info = |l: &str| {
        let (stdout, _) = ok(&["trace", "info", l, "--json"]);
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let (ia, ib) = (info(&la), info(&lb));
    assert_eq!(ib["filters"]["submit_unknown"], 1190, "{ib}");
    assert_eq!(ia["filters"]["submit_unknown"], 0);
    assert_eq!(ib["filters"]["kept"], ia["filters"]["kept"]);
    assert_eq!(
        ib["raw_users"], ia["raw_users"],
        "user -1 of an unknown job is no user"
    );
    ok(&["trace", "stats", &lb, "--out", &out_in(dir.path(), "stats")]);

    // simulate, and the two experiments that read any log: the same
    // results, the dropped lines counted.
    let outs = |name: &str| (out_in(&a, name), out_in(&b, name));
    let (sa, sb) = outs("sim");
    for (l, o) in [(&la, &sa), (&lb, &sb)] {
        let (stdout, _) = ok(&[
            "simulate",
            "--trace",
            l,
            "--policy",
            "fcfs",
            "--orgs",
            "3",
            "--window",
            "0,3000000",
            "--out",
            o,
            "--no-progress",
        ]);
        if l == &lb {
            assert!(stdout.contains("submit_unknown 1190"), "{stdout}");
        }
    }
    let sim = |o: &str, f: &str| fs::read(Path::new(o).join(f)).unwrap();
    assert!(
        sim(&sa, "tasks.csv") == sim(&sb, "tasks.csv"),
        "the schedules differ"
    );
    let (ja, jb) = (
        json(&Path::new(&sa).join("summary.json")),
        json(&Path::new(&sb).join("summary.json")),
    );
    assert_eq!(jb["filters"]["submit_unknown"], 1190);
    assert_eq!(
        (&ja["jobs"], &ja["mean_wait_s"]),
        (&jb["jobs"], &jb["mean_wait_s"])
    );

    let (ea, eb) = outs("shapley");
    for (l, o) in [(&la, &ea), (&lb, &eb)] {
        let t = format!("{l}:100");
        ok(&[
            "experiment",
            "shapley",
            "--trace",
            &t,
            "--instances",
            "2",
            "--out",
            o,
            "--no-progress",
        ]);
    }
    let file = |o: &str, f: &str| fs::read(Path::new(o).join(f)).unwrap();
    assert!(file(&ea, "shapley.csv") == file(&eb, "shapley.csv"));
    let (pa, pb) = outs("pffp");
    for (l, o) in [(&la, &pa), (&lb, &pb)] {
        ok(&[
            "experiment",
            "pffp",
            "--test",
            "2",
            "--logs",
            l,
            "--instances",
            "2",
            "--out",
            o,
            "--no-progress",
        ]);
    }
    assert!(file(&pa, "pffp.csv") == file(&pb, "pffp.csv"));
}
