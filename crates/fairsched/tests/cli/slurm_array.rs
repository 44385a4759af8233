//! `fairsched experiment … --slurm-array` and `fairsched experiment
//! collect DIR`: a sweep's result files are the local run's, byte for
//! byte. Without Slurm, `$FAIRSCHED_SBATCH` names a fake `sbatch` and the
//! test runs each array task of the submitted script itself; with the real
//! Slurm (`sbatch` on the PATH; `FAIRSCHED_SLURM=required` makes it a
//! failure not to have one), the array runs on the cluster.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The bundled log (in the repository: no skipping).
fn kth() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/KTH-SP2-1996-2.1-cln.swf.gz")
        .display()
        .to_string()
}

fn fairsched(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fairsched"));
    c.args(args).current_dir(cwd).env_remove("FAIRSCHED_SBATCH");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(o: &Output, what: &str) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "{what}: {:?}\n{out}\n{err}", o.status);
    out
}

/// A fake `sbatch`: keeps the script it is given (`DIR/sbatch.script`)
/// and its arguments, and answers job 4242 as `sbatch --parsable` would.
fn fake_sbatch(dir: &Path) -> PathBuf {
    let path = dir.join("sbatch");
    fs::write(
        &path,
        "#!/bin/sh\ncat > \"$0.script\"\nprintf '%s\\n' \"$@\" > \"$0.args\"\necho 4242\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// The result files of a folder: every top-level file but fairsched's
/// manifest and lock and the sweep's own (`sweep.json`, `sweep.sbatch`,
/// `parts/`).
fn results(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let sweep = [".fairsched-out", ".fairsched.lock", "sweep.json", "sweep.sbatch"];
        if e.file_type().unwrap().is_file() && !sweep.contains(&name.as_str()) {
            out.insert(name, fs::read(e.path()).unwrap());
        }
    }
    out
}

/// The two folders hold the same result files, byte for byte.
fn same_results(local: &Path, sweep: &Path, expected: &[&str]) {
    let a = results(local);
    let b = results(sweep);
    for f in expected {
        assert!(a.contains_key(*f), "the local run wrote no {f}: {:?}", a.keys());
    }
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "not the same files"
    );
    for (name, bytes) in &a {
        assert!(
            *bytes == b[name],
            "{name} differs between the local run and the sweep:\n--- local\n{}\n--- sweep\n{}",
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&b[name])
        );
    }
    let summary: serde_json::Value = serde_json::from_slice(&b["summary.json"]).unwrap();
    let command = summary["tool"]["command"].as_str().unwrap();
    assert!(
        command.starts_with("fairsched experiment ") && !command.contains("--slurm-array"),
        "{command}"
    );
}

/// Standard output without its last line (`wrote DIR (…) in T s`).
fn table(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.last().is_some_and(|l| l.starts_with("wrote ")), "{stdout}");
    lines[..lines.len() - 1].join("\n")
}

/// Runs `args` (an experiment, `--out res`) here in `root/local`, then as
/// a sweep in `root/sweep` with the fake sbatch, each array task run by
/// hand from another folder, and compares.
fn sweep_matches_local(args: &[&str], n: usize, expected: &[&str]) {
    let root = tempfile::tempdir().unwrap();
    let (local, sweep) = (root.path().join("local"), root.path().join("sweep"));
    fs::create_dir_all(&local).unwrap();
    fs::create_dir_all(&sweep).unwrap();
    let started = Instant::now();
    let local_out = ok(&fairsched(&local, args, &[]), "the local run");
    let local_s = started.elapsed();

    let sbatch = fake_sbatch(root.path());
    let mut submit_args = args.to_vec();
    submit_args.push("--slurm-array");
    let o = fairsched(&sweep, &submit_args, &[("FAIRSCHED_SBATCH", &sbatch)]);
    let out = ok(&o, "the submission");
    let dir = sweep.join("res");
    assert!(out.contains("Slurm job 4242"), "{out}");
    assert!(
        out.contains(&format!("fairsched experiment collect {}", dir.display())),
        "{out}"
    );
    // What was submitted is the script kept in the folder: one array task
    // per instance, each running this binary's `run-part`.
    let script = fs::read_to_string(dir.join("sweep.sbatch")).unwrap();
    assert_eq!(
        fs::read_to_string(root.path().join("sbatch.script")).unwrap(),
        script
    );
    for line in [
        format!("#SBATCH --array=0-{}", n - 1),
        format!("#SBATCH --output={}/parts/slurm-%A_%a.out", dir.display()),
        format!("#SBATCH --chdir={}", sweep.display()),
    ] {
        assert!(script.contains(&line), "{line:?} missing in:\n{script}");
    }
    assert!(script.contains(" experiment run-part "), "{script}");
    let record: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(record["instances"], n);
    assert_eq!(record["job_id"], 4242);
    assert!(!dir.join("summary.json").exists());

    // Nothing ran yet: collect names every missing instance (exit 1).
    let o = fairsched(root.path(), &["experiment", "collect", "sweep/res"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{n} of {n} parts missing, instances 0–{}", n - 1))
            && err.contains("slurm-4242_*.out"),
        "{err}"
    );

    // The array tasks, as Slurm would start them (but from elsewhere: the
    // script's own --chdir is Slurm's); the last one after a collect.
    let task = |i: usize| {
        let o = Command::new("sh")
            .arg(dir.join("sweep.sbatch"))
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .current_dir(root.path())
            .output()
            .unwrap();
        ok(&o, &format!("array task {i}"));
    };
    for i in 0..n - 1 {
        task(i);
    }
    let o = fairsched(root.path(), &["experiment", "collect", "sweep/res"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("1 of {n} parts missing, instance {}:", n - 1)),
        "{err}"
    );
    assert!(!dir.join("summary.json").exists());
    task(n - 1);

    let started = Instant::now();
    let o = fairsched(root.path(), &["experiment", "collect", "sweep/res"], &[]);
    let collect_out = ok(&o, "collect");
    eprintln!(
        "{}: local {:.2} s, collect {:.2} s",
        args[1],
        local_s.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(table(&collect_out), table(&local_out));
    assert!(
        collect_out
            .lines()
            .last()
            .unwrap()
            .starts_with("wrote sweep/res ("),
        "{collect_out}"
    );
    same_results(&local.join("res"), &dir, expected);
    // The sweep's own files stay: collect again gives the same.
    assert_eq!(fs::read_to_string(dir.join("sweep.sbatch")).unwrap(), script);
    ok(
        &fairsched(&sweep, &["experiment", "collect", "res"], &[]),
        "collect again",
    );
    same_results(&local.join("res"), &dir, expected);

    // A local run into the sweep's folder takes it over, parts and all.
    ok(
        &fairsched(&sweep, args, &[]),
        "a local run into the sweep's folder",
    );
    assert!(!dir.join("sweep.json").exists() && !dir.join("parts").exists());
    same_results(&local.join("res"), &dir, expected);
}

#[test]
fn a_shapley_sweep_writes_the_local_runs_files() {
    let trace = format!("{}:100", kth());
    let args = [
        "experiment",
        "shapley",
        "--trace",
        &trace,
        "--instances",
        "3",
        "--orgs",
        "3",
        "--seed",
        "5",
        "--out",
        "res",
        "--no-progress",
    ];
    sweep_matches_local(
        &args,
        3,
        &["summary.json", "shapley.csv", "shapley.svg", "tables.json"],
    );
}

#[test]
fn a_shapley_figure_sweep_counts_every_organization_count() {
    // Figure 1 runs on LPC-EGEE, a shared log.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/traces/swf");
    if !dir.join("LPC-EGEE-2004-1.2-cln.swf.gz").exists() {
        crate::common::skipping(
            module_path!(),
            "../shared/data/traces/swf/LPC-EGEE-2004-1.2-cln.swf.gz not found",
        );
        return;
    }
    let dir = dir.display().to_string();
    let args = [
        "experiment",
        "shapley",
        "--figure",
        "1",
        "--instances",
        "1",
        "--traces-dir",
        &dir,
        "--out",
        "res",
        "--no-progress",
    ];
    // 2…10 organizations, one window each: nine instances.
    sweep_matches_local(&args, 9, &["summary.json", "shapley.csv", "shapley.svg"]);
}

#[test]
fn a_pffp_sweep_writes_the_local_runs_files() {
    let log = kth();
    let args = [
        "experiment",
        "pffp",
        "--test",
        "2",
        "--logs",
        &log,
        "--instances",
        "3",
        "--out",
        "res",
        "--no-progress",
    ];
    sweep_matches_local(
        &args,
        3,
        &[
            "summary.json",
            "pffp.csv",
            "degradation.csv",
            "tables.json",
            "profile-rho-2.svg",
        ],
    );
}

#[test]
fn bad_sweeps_and_bad_parts_are_named() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let sbatch = fake_sbatch(r);
    let env = [("FAIRSCHED_SBATCH", sbatch.as_path())];
    let exit = |o: &Output| o.status.code();

    // Experiments that do not run as sweeps, and a partition that is not a
    // name, are the command line's mistakes.
    let o = fairsched(
        r,
        &[
            "experiment",
            "workflow-fairness",
            "--exp",
            "1",
            "--slurm-array",
            "--out",
            "d",
        ],
        &env,
    );
    assert_eq!(exit(&o), Some(2));
    assert!(
        text(&o).1.contains(
            "workflow-fairness does not run as a Slurm sweep (these do: shapley, pffp, diet-ethic, shapley-study, pffp-study, diet-ethic-study)"
        ),
        "{}",
        text(&o).1
    );
    let trace = format!("{}:100", kth());
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "experiment",
            "shapley",
            "--trace",
            &trace,
            "--instances",
            "2",
            "--out",
            "s",
        ];
        a.extend_from_slice(extra);
        fairsched(r, &a, &env)
    };
    let o = sweep(&["--slurm-array", "--partition", "a;b"]);
    assert_eq!(exit(&o), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("not a partition name"));
    let o = sweep(&["--partition", "batch"]);
    assert_eq!(exit(&o), Some(2), "--partition without --slurm-array");
    assert!(!r.join("s").exists());

    // A folder that is no sweep's.
    fs::create_dir_all(r.join("plain")).unwrap();
    let o = fairsched(r, &["experiment", "collect", "plain"], &[]);
    assert_eq!(exit(&o), Some(1));
    assert!(text(&o).1.contains("plain: no sweep.json"), "{:?}", text(&o));

    // A sweep of two, --partition in its script; its tasks run.
    ok(&sweep(&["--slurm-array", "--partition", "batch"]), "submission");
    let script = fs::read_to_string(r.join("s/sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --partition=batch\n"), "{script}");
    let part = |i: usize| {
        Command::new(env!("CARGO_BIN_EXE_fairsched"))
            .args(["experiment", "run-part", "s", &i.to_string()])
            .current_dir(r)
            .output()
            .unwrap()
    };
    ok(&part(0), "part 0");
    ok(&part(1), "part 1");
    let o = part(2);
    assert_eq!(exit(&o), Some(1));
    assert!(
        text(&o).1.contains("instance 2: the sweep has 2 (0 to 1)"),
        "{:?}",
        text(&o)
    );

    // A part that does not parse is named with its path.
    let p1 = r.join("s/parts/instance-1.json");
    let good = fs::read(&p1).unwrap();
    fs::write(&p1, &good[..good.len() / 2]).unwrap();
    let o = fairsched(r, &["experiment", "collect", "s"], &[]);
    assert_eq!(exit(&o), Some(1));
    let err = text(&o).1;
    assert!(
        err.contains("instance-1.json: not a part of this sweep: EOF while parsing"),
        "{err}"
    );
    // One of another sweep (here: another instance's) too.
    fs::copy(r.join("s/parts/instance-0.json"), &p1).unwrap();
    let o = fairsched(r, &["experiment", "collect", "s"], &[]);
    assert_eq!(exit(&o), Some(1));
    let err = text(&o).1;
    assert!(
        err.contains("instance-1.json: written for another sweep (instance 0"),
        "{err}"
    );
    assert!(!r.join("s/summary.json").exists());
    fs::write(&p1, &good).unwrap();
    ok(&fairsched(r, &["experiment", "collect", "s"], &[]), "collect");
    assert!(r.join("s/summary.json").exists());
}

/// Whether the real Slurm is here: `Err(reason)` when not.
fn slurm_here() -> Result<(), String> {
    let works = |tool: &str, args: &[&str]| {
        Command::new(tool)
            .args(args)
            .output()
            .map_err(|e| format!("`{tool}` cannot run: {e}"))
            .and_then(|o| {
                if o.status.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "`{tool} {}` failed: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&o.stderr).trim()
                    ))
                }
            })
    };
    works("sbatch", &["--version"])?;
    works("sinfo", &["-h"])
}

#[test]
fn a_sweep_on_the_real_slurm_writes_the_local_runs_files() {
    let required = std::env::var("FAIRSCHED_SLURM").is_ok_and(|v| v == "required");
    if let Err(why) = slurm_here() {
        assert!(!required, "FAIRSCHED_SLURM=required, but {why}");
        crate::common::skipping(module_path!(), format!("no real Slurm: {why}"));
        return;
    }
    let _cluster = crate::common::slurm_exclusive();
    let root = tempfile::tempdir().unwrap();
    let (local, sweep) = (root.path().join("local"), root.path().join("sweep"));
    fs::create_dir_all(&local).unwrap();
    fs::create_dir_all(&sweep).unwrap();
    let trace = format!("{}:100", kth());
    let args = [
        "experiment",
        "shapley",
        "--trace",
        &trace,
        "--instances",
        "4",
        "--seed",
        "11",
        "--out",
        "res",
        "--no-progress",
    ];
    let local_out = ok(&fairsched(&local, &args, &[]), "the local run");
    // The default partition, named (`debug*` → `debug`).
    let partition = Command::new("sinfo").args(["-h", "-o", "%P"]).output().unwrap();
    let partition = String::from_utf8_lossy(&partition.stdout)
        .lines()
        .find(|l| l.ends_with('*'))
        .map(|l| l.trim_end_matches('*').to_string());
    let mut submit = args.to_vec();
    submit.push("--slurm-array");
    if let Some(p) = &partition {
        submit.extend(["--partition", p]);
    }
    let started = Instant::now();
    ok(&fairsched(&sweep, &submit, &[]), "the submission");
    let dir = sweep.join("res");
    let record: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("sweep.json")).unwrap()).unwrap();
    let job = record["job_id"].as_u64().expect("a job id");

    // Until no task of the array is waiting or running (finished jobs
    // stay in `squeue -t all` for a few minutes).
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let o = Command::new("squeue")
            .args(["-h", "-t", "all", "-j", &job.to_string(), "-o", "%T"])
            .output()
            .unwrap();
        let states = String::from_utf8_lossy(&o.stdout).into_owned();
        let busy = states
            .lines()
            .any(|s| ["PENDING", "RUNNING", "CONFIGURING", "COMPLETING"].contains(&s.trim()));
        if !busy {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} still busy after 240 s: {states}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let ran = started.elapsed();
    let o = fairsched(&sweep, &["experiment", "collect", "res"], &[]);
    if !o.status.success() {
        let mut logs = String::new();
        for e in fs::read_dir(dir.join("parts")).unwrap().flatten() {
            if e.file_name().to_string_lossy().ends_with(".out") {
                logs += &format!(
                    "--- {}\n{}\n",
                    e.path().display(),
                    fs::read_to_string(e.path()).unwrap_or_default()
                );
            }
        }
        panic!("collect failed: {:?}\n{logs}", text(&o));
    }
    eprintln!(
        "the real Slurm: job {job}, 4 array tasks done in {:.1} s",
        ran.as_secs_f64()
    );
    assert_eq!(table(&text(&o).0), table(&local_out));
    for i in 0..4 {
        assert!(
            dir.join(format!("parts/slurm-{job}_{i}.out")).exists(),
            "task {i}'s log"
        );
    }
    same_results(
        &local.join("res"),
        &dir,
        &["summary.json", "shapley.csv", "shapley.svg", "tables.json"],
    );
}
