//! `fairsched simulate --swf-out` and `--batsim-jobs`: the simulated
//! schedule in the formats other tools read (SWF, read back by `trace
//! info`; Batsim's jobs.csv, read by evalys when $FAIRSCHED_EVALYS_PYTHON
//! names a Python that has it, as .ci/run sets up), on the bundled real
//! KTH-SP2 log and, when present, ../shared's HPC2N log.

use fairsched_trace::{SwfHeader, SwfJob, SwfReader};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "fairsched {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled real log (as a file, so that `--trace` reads it from disk).
fn kth() -> String {
    repo()
        .join("data/KTH-SP2-1996-2.1-cln.swf.gz")
        .to_str()
        .unwrap()
        .to_string()
}

/// KTH-SP2's first submit is at 599,850 s: this window holds 1,116 jobs.
const KTH_WINDOW: &str = "599850,1000000";

/// `fairsched simulate ARGS --out OUT --no-progress`.
fn simulate(out: &Path, args: &[&str]) -> String {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap(), "--no-progress"]);
    ok(&all)
}

fn read_swf(path: &Path) -> (SwfHeader, Vec<SwfJob>) {
    let mut r = SwfReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut jobs = Vec::new();
    while let Some(j) = r.next_job().unwrap() {
        jobs.push(j);
    }
    (r.header().clone(), jobs)
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// A CSV file as rows of column → value.
fn csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?}", row[col]))
}

/// `fairsched trace info FILE --json`.
fn trace_info(path: &Path) -> Value {
    serde_json::from_str(&ok(&["trace", "info", path.to_str().unwrap(), "--json"])).unwrap()
}

/// The log's records by job number.
fn log_records(path: &str) -> HashMap<i64, SwfJob> {
    read_swf(Path::new(path))
        .1
        .into_iter()
        .map(|j| (j.job_number, j))
        .collect()
}

/// `j` with the fields the simulation rewrites (2, 3, 4, 11) cleared.
fn kept_fields(j: &SwfJob) -> SwfJob {
    SwfJob {
        submit_time: 0,
        wait_time: 0,
        run_time: 0,
        status: 0,
        ..*j
    }
}

#[test]
fn swf_out_is_the_simulated_schedule_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    simulate(
        &out,
        &[
            "--trace",
            &log,
            "--policy",
            "easy",
            "--window",
            KTH_WINDOW,
            "--swf-out",
            "schedule.swf",
        ],
    );
    let path = out.join("schedule.swf");
    let summary = json(&out.join("summary.json"));
    let tasks = csv(&out.join("tasks.csv"));
    assert_eq!(summary["jobs"], 1116);
    assert_eq!(tasks.len(), 1116);

    // `trace info` reads it back: every job, all kept, on 100 processors.
    let info = trace_info(&path);
    assert_eq!(info["raw_jobs"], 1116, "{info}");
    assert_eq!(info["kept_jobs"], 1116, "{info}");
    assert_eq!(info["processors"], 100);

    let (h, jobs) = read_swf(&path);
    assert_eq!(
        (h.max_jobs, h.max_records, h.max_procs),
        (Some(1116), Some(1116), Some(100))
    );
    // The log's start (843,480,031) moved by the window's start.
    assert_eq!(h.unix_start_time, Some(843480031 + 599850));
    assert_eq!(
        h.installation.as_deref(),
        Some("Swedish Royal Institute of Technology (KTH)")
    );
    assert!(
        h.computer
            .as_deref()
            .unwrap()
            .ends_with("KTH-SP2-1996-2.1-cln.swf.gz under easy")
    );
    assert_eq!(h.get("Version").as_deref(), Some("2.2"));
    let notes: Vec<&String> = h
        .other
        .iter()
        .filter(|(k, _)| k == "Note")
        .map(|(_, v)| v)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("--swf-out schedule.swf") && n.contains("--policy easy")),
        "the command line is in the header: {notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("--window 599850,1000000")),
        "{notes:?}"
    );

    // The log's order; each record as read but for fields 2, 3, 4 and 11.
    let numbers: Vec<i64> = jobs.iter().map(|j| j.job_number).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "log order");
    let records = log_records(&log);
    let by_job: HashMap<i64, &HashMap<String, String>> =
        tasks.iter().map(|t| (t["job"].parse().unwrap(), t)).collect();
    let mut waited = 0;
    for j in &jobs {
        let rec = &records[&j.job_number];
        assert_eq!(kept_fields(j), kept_fields(rec), "job {}", j.job_number);
        let t = by_job[&j.job_number];
        assert_eq!(j.submit_time as f64, num(t, "submit"), "job {}", j.job_number);
        assert_eq!(j.submit_time, rec.submit_time - 599850);
        assert_eq!(j.wait_time as f64, num(t, "wait"), "job {}", j.job_number);
        assert_eq!(j.run_time as f64, num(t, "end") - num(t, "start"));
        // Nothing was killed: each ran its logged time, with its logged status.
        assert_eq!((j.run_time, j.status), (rec.run_time, rec.status));
        waited += usize::from(j.wait_time != rec.wait_time);
    }
    assert!(waited > 100, "EASY's waits are not the log's: {waited} differ");
    let mean_wait = jobs.iter().map(|j| j.wait_time as f64).sum::<f64>() / jobs.len() as f64;
    assert!((mean_wait - summary["mean_wait_s"].as_f64().unwrap()).abs() < 1e-9);

    // The manifest lists it (a re-run replaces it), and no partial file is left.
    let manifest = fs::read_to_string(out.join(".fairsched-out")).unwrap();
    assert!(
        manifest.lines().any(|l| l.ends_with("schedule.swf")),
        "{manifest}"
    );
    assert!(!out.join("schedule.swf.partial").exists());
}

#[test]
fn schedule_files_are_the_same_bytes_run_after_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // The bundled log (read from the binary) and the same log from disk.
    let log = kth();
    for trace in [None, Some(log.as_str())] {
        let mut args = vec!["--policy", "fair-share", "--orgs", "3", "--window", KTH_WINDOW];
        args.extend(["--swf-out", "s.swf.gz", "--batsim-jobs", "jobs.csv"]);
        if let Some(t) = trace {
            args.extend(["--trace", t]);
        }
        simulate(&out, &args);
        let first = (
            fs::read(out.join("s.swf.gz")).unwrap(),
            fs::read(out.join("jobs.csv")).unwrap(),
        );
        simulate(&out, &args);
        let second = (
            fs::read(out.join("s.swf.gz")).unwrap(),
            fs::read(out.join("jobs.csv")).unwrap(),
        );
        assert!(first.0.starts_with(&[0x1f, 0x8b]), "gzip");
        assert!(first == second, "{trace:?}: the files differ between two runs");
        assert_eq!(read_swf(&out.join("s.swf.gz")).1.len(), 1116);
    }
}

/// Processors of an interval set (`0-3 5`).
fn processors(set: &str) -> Vec<u32> {
    set.split_whitespace()
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()
        })
        .collect()
}

/// Checks a jobs.csv against the run's tasks.csv: one row per task, the
/// same waits, as many processors as requested, none used twice at once.
fn check_batsim(path: &Path, tasks: &[HashMap<String, String>], procs: u32) -> Vec<HashMap<String, String>> {
    let header = fs::read_to_string(path)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(header, fairsched_report::BATSIM_COLUMNS);
    let rows = csv(path);
    assert_eq!(rows.len(), tasks.len());
    let mut events = Vec::new();
    for (r, t) in rows.iter().zip(tasks_in_order(tasks)) {
        assert_eq!(r["workload_name"], "w0");
        assert_eq!(r["submission_time"], t["submit"]);
        assert_eq!(r["waiting_time"], t["wait"], "{r:?}");
        assert_eq!(r["starting_time"], t["start"], "{r:?}");
        assert_eq!(r["finish_time"], t["end"], "{r:?}");
        assert_eq!(r["requested_number_of_resources"], t["slots"]);
        let p = processors(&r["allocated_resources"]);
        assert_eq!(p.len().to_string(), t["slots"], "{r:?}");
        assert!(p.iter().all(|&i| i < procs), "{r:?}");
        // tasks.csv's slot (the run's first) is one of them.
        assert!(p.contains(&t["slot"].parse().unwrap()), "{r:?}");
        events.push((num(r, "finish_time"), 0, p.clone()));
        events.push((num(r, "starting_time"), 1, p));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut busy = vec![false; procs as usize];
    for (at, start, p) in events {
        for i in p {
            assert_ne!(busy[i as usize], start == 1, "processor {i} at {at}");
            busy[i as usize] = start == 1;
        }
    }
    rows
}

/// tasks.csv's rows in task order (the file is in end order).
fn tasks_in_order(tasks: &[HashMap<String, String>]) -> Vec<&HashMap<String, String>> {
    let mut t: Vec<&HashMap<String, String>> = tasks.iter().collect();
    t.sort_by_key(|r| r["task"].parse::<u64>().unwrap());
    t
}

#[test]
fn batsim_jobs_hold_the_schedule_with_real_processor_ids() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    simulate(
        &out,
        &[
            "--trace",
            &log,
            "--policy",
            "easy",
            "--window",
            KTH_WINDOW,
            "--batsim-jobs",
            "jobs.csv",
        ],
    );
    let tasks = csv(&out.join("tasks.csv"));
    let rows = check_batsim(&out.join("jobs.csv"), &tasks, 100);
    for (r, t) in rows.iter().zip(tasks_in_order(&tasks)) {
        assert_eq!(r["job_id"], t["job"]);
        // Each ran its logged time, and ended as the log says.
        let expected = match t["log_status"].as_str() {
            "0" => ("0", "COMPLETED_FAILED"),
            _ => ("1", "COMPLETED_SUCCESSFULLY"),
        };
        assert_eq!((r["success"].as_str(), r["final_state"].as_str()), expected);
        let run = num(r, "finish_time") - num(r, "starting_time");
        assert_eq!(num(r, "execution_time"), run);
        assert_eq!(r["profile"], r["execution_time"], "the logged run time");
        let stretch = (num(r, "finish_time") - num(r, "submission_time")) / run;
        assert!((num(r, "stretch") - stretch).abs() < 1e-9);
        assert_eq!(
            (r["consumed_energy"].as_str(), r["metadata"].as_str()),
            ("-1", "")
        );
    }
    // Job 15 (the window's first, 4 processors) starts at once on 0-3.
    assert_eq!(rows[0]["job_id"], "15");
    assert_eq!(rows[0]["allocated_resources"], "0-3");
}

#[test]
fn a_kill_at_the_requested_time_is_in_run_time_status_and_final_state() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    simulate(
        &out,
        &[
            "--trace",
            &log,
            "--policy",
            "fcfs",
            "--window",
            KTH_WINDOW,
            "--runtime-limit",
            "kill",
            "--swf-out",
            "s.swf",
            "--batsim-jobs",
            "j.csv",
        ],
    );
    let tasks = csv(&out.join("tasks.csv"));
    let killed: Vec<u64> = tasks
        .iter()
        .filter(|t| t["outcome"] == "killed")
        .map(|t| t["job"].parse().unwrap())
        .collect();
    assert!(
        killed.len() >= 5,
        "KTH's users underestimate: {} killed",
        killed.len()
    );
    let records = log_records(&log);
    let (_, jobs) = read_swf(&out.join("s.swf"));
    assert_eq!(jobs.len(), tasks.len());
    for j in &jobs {
        let rec = &records[&j.job_number];
        if killed.contains(&(j.job_number as u64)) {
            assert_eq!(
                (j.run_time, j.status),
                (rec.requested_time, 0),
                "job {}",
                j.job_number
            );
            assert!(rec.run_time > rec.requested_time);
        } else {
            assert_eq!(
                (j.run_time, j.status),
                (rec.run_time, rec.status),
                "job {}",
                j.job_number
            );
        }
    }
    let rows = check_batsim(&out.join("j.csv"), &tasks, 100);
    for r in &rows {
        let was_killed = killed.contains(&r["job_id"].parse().unwrap());
        // Not killed: it ran its logged time, and ended as the log says.
        let expected = if was_killed {
            ("0", "COMPLETED_WALLTIME_REACHED")
        } else if records[&r["job_id"].parse::<i64>().unwrap()].status == 0 {
            ("0", "COMPLETED_FAILED")
        } else {
            ("1", "COMPLETED_SUCCESSFULLY")
        };
        assert_eq!(
            (r["success"].as_str(), r["final_state"].as_str()),
            expected,
            "{r:?}"
        );
        if was_killed {
            assert_eq!(r["execution_time"], r["requested_time"]);
        }
    }
}

/// The Batsim `final_state` an SWF record of the same task implies (the
/// rule both files follow, docs/semantics.md): never started (wait -1)
/// `REJECTED`; status 0 `COMPLETED_WALLTIME_REACHED` if the simulation
/// killed it at its requested time, else `COMPLETED_FAILED`; 4
/// `COMPLETED_FAILED`; 5 `COMPLETED_KILLED`; else `COMPLETED_SUCCESSFULLY`.
fn state_of_swf(j: &SwfJob, killed: bool) -> &'static str {
    match j.status {
        _ if j.wait_time == -1 => "REJECTED",
        0 if killed => "COMPLETED_WALLTIME_REACHED",
        0 | 4 => "COMPLETED_FAILED",
        5 => "COMPLETED_KILLED",
        _ => "COMPLETED_SUCCESSFULLY",
    }
}

/// Runs `log` (in `window`) with `--swf-out` and `--batsim-jobs` and
/// checks, job by job, that both carry the log's status for a job that ran
/// its logged time and the simulation's for one it killed, by the same
/// rule; returns the Batsim rows by final state.
fn statuses_agree(log: &str, window: &str, kill: bool) -> BTreeMap<String, usize> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = vec![
        "--trace",
        log,
        "--policy",
        "easy",
        "--window",
        window,
        "--swf-out",
        "s.swf",
        "--batsim-jobs",
        "j.csv",
    ];
    if kill {
        args.extend(["--runtime-limit", "kill"]);
    }
    simulate(&out, &args);
    let summary = json(&out.join("summary.json"));
    let tasks = csv(&out.join("tasks.csv"));
    let outcome: HashMap<&str, &str> = tasks
        .iter()
        .map(|t| (t["job"].as_str(), t["outcome"].as_str()))
        .collect();
    let records = log_records(log);
    let (_, jobs) = read_swf(&out.join("s.swf"));
    let swf: HashMap<String, &SwfJob> = jobs.iter().map(|j| (j.job_number.to_string(), j)).collect();
    let rows = csv(&out.join("j.csv"));
    assert_eq!(rows.len(), jobs.len());
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        let id = r["job_id"].as_str();
        let j = swf[id];
        let logged = records[&j.job_number].status;
        let killed = outcome[id] == "killed";
        // SWF: the log's status, or 0 for a kill at the requested time.
        assert_eq!(j.status, if killed { 0 } else { logged }, "job {id}");
        // Batsim: the same, in its words; success 1 only for a success.
        let state = r["final_state"].as_str();
        assert_eq!(
            state,
            state_of_swf(j, killed),
            "job {id}: SWF status {}",
            j.status
        );
        assert_eq!(
            r["success"],
            if state == "COMPLETED_SUCCESSFULLY" {
                "1"
            } else {
                "0"
            },
            "job {id}"
        );
        *states.entry(state.to_string()).or_insert(0) += 1;
    }
    // As many failed and cancelled as summary.json counts from the log
    // (less those killed first).
    let killed_failed = rows
        .iter()
        .filter(|r| r["final_state"] == "COMPLETED_WALLTIME_REACHED")
        .filter(|r| records[&r["job_id"].parse::<i64>().unwrap()].status == 0)
        .count();
    let n = |k: &str| states.get(k).copied().unwrap_or(0) as u64;
    assert_eq!(
        n("COMPLETED_FAILED") + killed_failed as u64,
        summary["log_status"]["failed"].as_u64().unwrap()
    );
    if !kill {
        assert_eq!(
            n("COMPLETED_KILLED"),
            summary["log_status"]["cancelled"].as_u64().unwrap()
        );
    }
    states
}

#[test]
fn swf_and_batsim_agree_on_failed_cancelled_and_killed_jobs() {
    // KTH-SP2 (bundled): jobs the log marks failed (status 0).
    let log = kth();
    let states = statuses_agree(&log, KTH_WINDOW, false);
    assert!(states["COMPLETED_FAILED"] > 100, "{states:?}");
    assert!(states["COMPLETED_SUCCESSFULLY"] > 500, "{states:?}");
    // With kills at the requested time: those are WALLTIME_REACHED and 0
    // in both files, whatever the log said.
    let states = statuses_agree(&log, KTH_WINDOW, true);
    assert!(states["COMPLETED_WALLTIME_REACHED"] >= 5, "{states:?}");
    // SDSC-SP2: cancelled jobs (status 5) that ran.
    let sdsc = repo().join("../shared/data/traces/swf/SDSC-SP2-1998-4.2-cln.swf.gz");
    if sdsc.is_file() {
        let states = statuses_agree(sdsc.to_str().unwrap(), "0,2000000", false);
        assert!(states["COMPLETED_KILLED"] > 100, "{states:?}");
    } else {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "skipping part of {}: {} not found\n",
                module_path!(),
                sdsc.display()
            )
            .as_bytes(),
        );
    }
}

#[test]
fn split_parallel_writes_one_record_per_task_under_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    simulate(
        &out,
        &[
            "--trace",
            &log,
            "--policy",
            "fcfs",
            "--window",
            "599850,200000",
            "--split-parallel",
            "--swf-out",
            "s.swf",
            "--batsim-jobs",
            "j.csv",
        ],
    );
    let path = out.join("s.swf");
    let tasks = csv(&out.join("tasks.csv"));
    assert_eq!(
        trace_info(&path)["raw_jobs"].as_u64().unwrap() as usize,
        tasks.len()
    );
    let (h, jobs) = read_swf(&path);
    assert_eq!(h.max_records, Some(tasks.len() as u64));
    let numbers: Vec<i64> = jobs.iter().map(|j| j.job_number).collect();
    assert_eq!(numbers, (1..=tasks.len() as i64).collect::<Vec<_>>());
    assert!(
        jobs.iter()
            .all(|j| j.allocated_procs == 1 && j.requested_procs == 1)
    );

    // "; job J (Q processors): records A-B" before each job's tasks.
    let text = fs::read_to_string(&path).unwrap();
    let mut groups = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("; job ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let job: i64 = words[2].parse().unwrap();
        let q: usize = words[3].trim_start_matches('(').parse().unwrap();
        let (a, b) = words[6].split_once('-').unwrap_or((words[6], words[6]));
        let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
        assert_eq!(b + 1 - a, q, "{line}");
        groups.push((job, a, b));
    }
    assert!(groups.iter().any(|g| g.2 > g.1), "some job was split");
    assert_eq!(groups.last().unwrap().2, jobs.len());
    let records = log_records(&log);
    // Each task's record: its job's, with the task's wait (tasks.csv, in task order).
    let mut by_job: BTreeMap<i64, Vec<&HashMap<String, String>>> = BTreeMap::new();
    for t in tasks_in_order(&tasks) {
        by_job.entry(t["job"].parse().unwrap()).or_default().push(t);
    }
    for (job, a, b) in groups {
        let rec = &records[&job];
        assert_eq!(by_job[&job].len(), b + 1 - a);
        for (j, t) in jobs[a - 1..b].iter().zip(&by_job[&job]) {
            assert_eq!(
                (j.user_id, j.requested_time, j.avg_cpu_time),
                (rec.user_id, rec.requested_time, rec.avg_cpu_time)
            );
            assert_eq!(j.wait_time as f64, num(t, "wait"));
            assert_eq!(j.run_time, rec.run_time);
        }
    }
    // Batsim: J_P ids, unique.
    let rows = check_batsim(&out.join("j.csv"), &tasks, 100);
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r["job_id"].as_str()).collect();
    assert_eq!(ids.len(), rows.len());
    assert!(
        ids.contains("15_3") && !ids.contains("15_4"),
        "job 15 has 4 processors"
    );
}

#[test]
fn several_policies_write_one_schedule_per_folder_and_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    let base = [
        "--trace",
        log.as_str(),
        "--policy",
        "fcfs",
        "--policy",
        "easy",
        "--window",
        KTH_WINDOW,
    ];
    let mut args = base.to_vec();
    args.extend(["--swf-out", "s.swf", "--batsim-jobs", "j.csv"]);
    let stdout = simulate(&out, &args);
    assert!(
        stdout.contains("in each policy's folder (fcfs/, easy/): ")
            && stdout.contains("s.swf (the schedule as SWF), j.csv (as Batsim's jobs.csv)"),
        "{stdout}"
    );
    let fcfs = fs::read(out.join("fcfs/s.swf")).unwrap();
    let easy = fs::read(out.join("easy/s.swf")).unwrap();
    assert_ne!(fcfs, easy);
    for policy in ["fcfs", "easy"] {
        let (h, jobs) = read_swf(&out.join(policy).join("s.swf"));
        assert!(h.computer.unwrap().ends_with(&format!("under {policy}")));
        assert_eq!(jobs.len(), 1116);
        let tasks = csv(&out.join(policy).join("tasks.csv"));
        check_batsim(&out.join(policy).join("j.csv"), &tasks, 100);
    }

    // One file cannot hold two schedules; names the run writes are refused;
    // so is one file for both flags. Exit 2, before anything is written.
    let refused = dir.path().join("refused");
    for (flags, says) in [
        (
            vec!["--swf-out", "./s.swf"],
            "one file cannot hold several schedules",
        ),
        (
            vec!["--batsim-jobs", "/tmp/j.csv"],
            "one file cannot hold several schedules",
        ),
        (
            vec!["--swf-out", "tasks.csv"],
            "the run writes a file of that name",
        ),
        (vec!["--swf-out", "x", "--batsim-jobs", "x"], "both name x"),
    ] {
        let mut all = vec!["simulate"];
        all.extend_from_slice(&base);
        all.extend(flags.iter().copied());
        all.extend(["--out", refused.to_str().unwrap(), "--no-progress"]);
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(!refused.exists(), "{flags:?}");
    }

    // With one policy, a path with a folder is written there.
    let elsewhere = dir.path().join("elsewhere/sched.swf.gz");
    fs::create_dir(dir.path().join("elsewhere")).unwrap();
    let one = dir.path().join("one");
    simulate(
        &one,
        &[
            "--trace",
            &log,
            "--policy",
            "easy",
            "--window",
            KTH_WINDOW,
            "--swf-out",
            elsewhere.to_str().unwrap(),
        ],
    );
    assert_eq!(read_swf(&elsewhere).1.len(), 1116);
    assert_eq!(fs::read(&elsewhere).unwrap()[..2], [0x1f, 0x8b]);
    let missing = dir.path().join("missing/s.swf");
    let o = run(&[
        "simulate",
        "--trace",
        &log,
        "--policy",
        "easy",
        "--swf-out",
        missing.to_str().unwrap(),
        "--out",
        refused.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));
}

/// ../shared's HPC2N log under --procs-from requested: field 5 holds the
/// processors the simulation gave, not the log's (from 63,000,000 s on, HPC2N
/// gave some jobs 2 processors for a request of 1).
#[test]
fn field_5_holds_the_processors_the_simulation_gave() {
    let log = repo().join("../shared/data/traces/swf/HPC2N-2002-2.2-cln.swf.gz");
    if !log.is_file() {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return;
    }
    let log = log.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    simulate(
        &out,
        &[
            "--trace",
            log,
            "--policy",
            "easy",
            "--window",
            "63000000,300000",
            "--procs-from",
            "requested",
            "--swf-out",
            "s.swf",
        ],
    );
    let tasks = csv(&out.join("tasks.csv"));
    let slots: HashMap<i64, String> = tasks
        .iter()
        .map(|t| (t["job"].parse().unwrap(), t["slots"].clone()))
        .collect();
    let records = log_records(log);
    let (_, jobs) = read_swf(&out.join("s.swf"));
    assert_eq!(jobs.len(), tasks.len());
    let mut differ = 0;
    for j in &jobs {
        assert_eq!(j.allocated_procs.to_string(), slots[&j.job_number]);
        assert_eq!(j.requested_procs, records[&j.job_number].requested_procs);
        differ += usize::from(j.allocated_procs != records[&j.job_number].allocated_procs);
    }
    let summary = json(&out.join("summary.json"));
    assert!(
        differ > 0,
        "HPC2N gives some jobs more processors than they asked for"
    );
    assert!(summary["procs_differ"].as_u64().unwrap() >= differ as u64);
}

/// evalys (the Batsim community's analysis library) loads the jobs.csv
/// and finds our job count, mean wait, makespan and utilization, and no
/// processor used twice at once (tests/evalys_check.py).
#[test]
fn evalys_reads_the_batsim_jobs() {
    let Some(python) = std::env::var_os("FAIRSCHED_EVALYS_PYTHON") else {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "skipping {}: FAIRSCHED_EVALYS_PYTHON is not set (.ci/run sets it to a virtualenv with evalys)\n",
                module_path!()
            )
            .as_bytes(),
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let log = kth();
    simulate(
        &out,
        &[
            "--trace",
            &log,
            "--policy",
            "easy",
            "--window",
            KTH_WINDOW,
            "--batsim-jobs",
            "jobs.csv",
        ],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evalys_check.py");
    let o = Command::new(&python)
        .arg(&script)
        .arg(out.join("jobs.csv"))
        .arg(out.join("summary.json"))
        .env("MPLBACKEND", "Agg")
        .env("MPLCONFIGDIR", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&python).display()));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}:\n{stdout}\n{}",
        script.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("evalys: 1116 jobs"), "{stdout}");
    eprintln!("{}", stdout.trim());
}
