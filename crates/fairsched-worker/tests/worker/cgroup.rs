//! Runs in cgroups of their own (`ExecConfig::cgroups`), without a task
//! guard: the cgroup alone finds what left the run's process group, and
//! enforces the memory limit for the whole run.
//!
//! They need a cgroup this process may create cgroups in (root here and
//! in CI); without one each says SKIPPED and why, unless
//! `FAIRSCHED_CGROUPS=required` (as `.ci/run` sets): then it fails.

use std::path::PathBuf;
use std::sync::{OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use fairsched_worker::wire::{Assignment, RunKey};
use fairsched_worker::{
    CgroupMode, Cgroups, ExecConfig, ExecutorKind, KillHandle, MEMORY_LIMIT_EXIT, Outcome, cgroups_of,
    run_assignment,
};

/// Each test's own run (the tests share this process's cgroups).
const KILLED: RunKey = RunKey { task: 23, attempt: 1 };
const GREEDY: RunKey = RunKey { task: 24, attempt: 1 };
const FITS: RunKey = RunKey { task: 25, attempt: 1 };

/// This test process's cgroups (one set for every test), or why there are none.
fn cgroups(test: &str) -> Option<Cgroups> {
    static CGROUPS: OnceLock<Result<Cgroups, String>> = OnceLock::new();
    let found = CGROUPS.get_or_init(|| match Cgroups::setup(CgroupMode::Required) {
        Ok(Some(cg)) => Ok(cg),
        Ok(None) => Err("no cgroup".into()),
        Err(e) => Err(e.to_string()),
    });
    match found {
        Ok(cg) => Some(cg.clone()),
        Err(why) => {
            skip(test, why);
            None
        }
    }
}

/// Says why `test` does not run, or fails it under `FAIRSCHED_CGROUPS=required`.
fn skip(test: &str, why: &str) {
    assert!(
        std::env::var("FAIRSCHED_CGROUPS").as_deref() != Ok("required"),
        "FAIRSCHED_CGROUPS=required, but {why}"
    );
    eprintln!("SKIPPED {test}: {why}");
}

fn config(dir: &std::path::Path, cgroups: Cgroups) -> ExecConfig {
    ExecConfig {
        executor: ExecutorKind::Process,
        workdir: dir.to_path_buf(),
        grace: Duration::from_millis(500),
        guard: None,
        lease_file: None,
        run_as_user: false,
        cgroups: Some(cgroups),
        task_user: None,
        limits: Default::default(),
        private_tmp: false,
    }
}

fn assignment(key: RunKey, command: &str) -> Assignment {
    Assignment {
        task: key.task,
        attempt: key.attempt,
        name: String::new(),
        command: command.into(),
        stage_in: None,
        stage_out: None,
        time_limit_ms: None,
        memory_bytes: None,
        run_as: None,
        caps: Default::default(),
    }
}

/// Whether process `pid` runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
        .unwrap_or(false)
}

/// Polls `f` every 10 ms for up to `bound`.
fn within<T>(what: &str, bound: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + bound;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < until, "{what}: not after {bound:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// A run without a memory limit of its own gets an empty cgroup of the
/// pool (`run-N`); killed, everything in it dies, including what left its
/// process group, and the emptied cgroup serves the next such run.
#[test]
fn a_killed_run_s_setsid_daemon_is_found_in_its_cgroup_and_the_cgroup_emptied_for_the_next_run() {
    let test = "a_killed_run_s_setsid_daemon_is_found_in_its_cgroup_and_the_cgroup_emptied_for_the_next_run";
    let Some(cg) = cgroups(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), cg);
    // Out of the run's process group: without a guard, only the cgroup finds it.
    let a = assignment(
        KILLED,
        "setsid sleep 1000 & echo $! > pid.tmp && mv pid.tmp pid; sleep 1000",
    );
    let kill = KillHandle::new();
    let (tx, _rx) = mpsc::channel();
    let run = {
        let (cfg, kill) = (cfg.clone(), kill.clone());
        thread::spawn(move || run_assignment(&cfg, &a, &tx, &kill))
    };
    let pid_file = cfg.run_dir(KILLED).join("pid");
    let daemon: u32 = within("the daemon's pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    let of_worker = |d: &PathBuf| {
        d.parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n.to_string_lossy().starts_with("fairsched-worker-"))
    };
    let run_cgroup: PathBuf = cgroups_of(daemon)
        .unwrap()
        .into_iter()
        .find(|d| {
            of_worker(d)
                && d.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("run-"))
        })
        .expect("the daemon is in a run cgroup of the worker");
    kill.kill();
    assert_eq!(run.join().unwrap(), Outcome::Killed);
    assert!(
        !running(daemon),
        "the setsid daemon {daemon} outlived its killed run"
    );
    let procs = std::fs::read_to_string(run_cgroup.join("cgroup.procs")).unwrap();
    assert_eq!(procs, "", "{} is not empty", run_cgroup.display());
    // The next run without a memory limit is in the same cgroup (the
    // pool's last one back; the other tests' runs have memory limits, and
    // cgroups of their own, where cgroups enforce them).
    let next = RunKey { task: 26, attempt: 1 };
    let a = assignment(next, "cat /proc/self/cgroup");
    let (tx, _rx) = mpsc::channel();
    assert_eq!(
        run_assignment(&cfg, &a, &tx, &KillHandle::new()),
        Outcome::Exited(0)
    );
    let out = std::fs::read_to_string(cfg.run_dir(next).join("stdout")).unwrap();
    let name = run_cgroup.file_name().unwrap().to_string_lossy().into_owned();
    if cfg.cgroups.as_ref().is_some_and(Cgroups::limits_memory) {
        assert!(
            out.lines().any(|l| l.ends_with(&format!("/{name}"))),
            "the next run is not in {name}: {out}"
        );
    }
}

#[test]
fn a_run_beyond_its_memory_limit_is_stopped_by_its_cgroup_and_says_so() {
    let test = "a_run_beyond_its_memory_limit_is_stopped_by_its_cgroup_and_says_so";
    let Some(cg) = cgroups(test) else { return };
    if !cg.limits_memory() {
        skip(test, "no memory cgroup here (the memory limit is RLIMIT_AS)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), cg);
    // 200 MB touched (read from /dev/zero) under 32 MiB: RLIMIT_AS would
    // have failed the allocation (dd exits 1); the cgroup kills it.
    let mut a = assignment(GREEDY, "dd if=/dev/zero of=/dev/null bs=200M count=1; echo after");
    a.memory_bytes = Some(32 << 20);
    a.stage_out = Some("touch output-ran".into());
    let (tx, rx) = mpsc::channel();
    let outcome = run_assignment(&cfg, &a, &tx, &KillHandle::new());
    drop(tx);
    assert_eq!(outcome, Outcome::Exited(MEMORY_LIMIT_EXIT));
    assert_eq!(
        rx.iter().last(),
        Some(fairsched_worker::wire::Report::exit(GREEDY, 137))
    );
    let run = cfg.run_dir(GREEDY);
    let stderr = std::fs::read_to_string(run.join("stderr")).unwrap();
    assert!(
        stderr.contains("memory limit of 33554432 bytes reached"),
        "{stderr}"
    );
    assert!(!run.join("output-ran").exists(), "the run went on");
}

#[test]
fn a_run_within_its_memory_limit_completes_in_its_cgroup() {
    let Some(cg) = cgroups("a_run_within_its_memory_limit_completes_in_its_cgroup") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), cg);
    // Its own cgroup: how many lines of /proc/self/cgroup name it.
    let mut a = assignment(
        FITS,
        "dd if=/dev/zero of=/dev/null bs=1M count=4 2>/dev/null; grep -c task-25-1 /proc/self/cgroup",
    );
    a.memory_bytes = Some(64 << 20);
    let (tx, _rx) = mpsc::channel();
    assert_eq!(
        run_assignment(&cfg, &a, &tx, &KillHandle::new()),
        Outcome::Exited(0)
    );
    let out = std::fs::read_to_string(cfg.run_dir(FITS).join("stdout")).unwrap();
    assert_ne!(out.trim(), "0", "the script ran outside its cgroup");
}
