//! The executor on its own: real `sh` processes, reports into a channel.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use fairsched_worker::wire::{Assignment, LimitKind, Phase, Report, RunKey};
use fairsched_worker::{
    ExecConfig, ExecutorKind, KillHandle, Outcome, RESOURCE_LIMIT_EXIT, RunLimits, TASK_ENV, TIME_LIMIT_EXIT,
    WORKER_ERROR_EXIT, run_assignment,
};

const KEY: RunKey = RunKey { task: 17, attempt: 2 };

fn assignment(command: &str) -> Assignment {
    Assignment {
        task: KEY.task,
        attempt: KEY.attempt,
        name: "t".into(),
        command: command.into(),
        stage_in: None,
        stage_out: None,
        time_limit_ms: None,
        memory_bytes: None,
        run_as: None,
        caps: Default::default(),
    }
}

fn config(dir: &Path, grace: Duration) -> ExecConfig {
    ExecConfig {
        executor: ExecutorKind::Process,
        workdir: dir.to_path_buf(),
        grace,
        guard: None,
        lease_file: None,
        run_as_user: false,
        cgroups: None,
        task_user: None,
        limits: Default::default(),
        private_tmp: false,
    }
}

/// Runs to the end; returns the outcome and every report sent.
fn run(cfg: &ExecConfig, a: &Assignment) -> (Outcome, Vec<Report>) {
    let (tx, rx) = mpsc::channel();
    let outcome = run_assignment(cfg, a, &tx, &KillHandle::new());
    drop(tx);
    (outcome, rx.iter().collect())
}

fn phases(list: &[Phase]) -> Vec<Report> {
    list.iter().map(|&p| Report::phase(KEY, p)).collect()
}

fn with_end(mut reports: Vec<Report>, end: Report) -> Vec<Report> {
    reports.push(end);
    reports
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn exit_code_ends_the_run_after_the_phases_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, reports) = run(&cfg, &assignment("echo hi; echo oops >&2; exit 3"));
    assert_eq!(outcome, Outcome::Exited(3));
    let expected = phases(&[Phase::Setup, Phase::Input, Phase::Exec]);
    assert_eq!(reports, with_end(expected, Report::exit(KEY, 3)));
    let run_dir = dir.path().join("task-17-2");
    assert_eq!(run_dir, cfg.run_dir(KEY));
    assert!(read(run_dir.join("stdout")).contains("hi"));
    assert_eq!(read(run_dir.join("stderr")), "oops\n");
}

#[test]
fn all_phases_run_in_the_task_directory_with_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("cat in.txt; echo \"$FAIRSCHED_TASK/$FAIRSCHED_ATTEMPT\"");
    a.stage_in = Some("echo staged > in.txt".into());
    a.stage_out = Some("cp stdout out.txt; echo bye".into());
    let (outcome, reports) = run(&cfg, &a);
    assert_eq!(outcome, Outcome::Exited(0));
    assert_eq!(reports, with_end(phases(&Phase::ALL), Report::exit(KEY, 0)));
    let run_dir = cfg.run_dir(KEY);
    assert_eq!(read(run_dir.join("out.txt")), "staged\n17/2\n");
    // Every phase appends to the same files.
    assert_eq!(read(run_dir.join("stdout")), "staged\n17/2\nbye\n");
}

#[test]
fn failing_stage_in_skips_exec_and_stage_out() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("touch exec-ran");
    a.stage_in = Some("exit 4".into());
    a.stage_out = Some("touch output-ran".into());
    let (outcome, reports) = run(&cfg, &a);
    assert_eq!(outcome, Outcome::Exited(4));
    assert_eq!(
        reports,
        with_end(phases(&[Phase::Setup, Phase::Input]), Report::exit(KEY, 4))
    );
    assert!(!cfg.run_dir(KEY).join("exec-ran").exists());
    assert!(!cfg.run_dir(KEY).join("output-ran").exists());
}

#[test]
fn failing_stage_out_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("true");
    a.stage_out = Some("exit 9".into());
    let (outcome, reports) = run(&cfg, &a);
    assert_eq!(outcome, Outcome::Exited(9));
    assert_eq!(reports, with_end(phases(&Phase::ALL), Report::exit(KEY, 9)));
}

#[test]
fn death_by_signal_reports_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, reports) = run(&cfg, &assignment("kill -KILL $$"));
    assert_eq!(outcome, Outcome::Signaled(9));
    assert_eq!(reports.last(), Some(&Report::signal(KEY, 9)));
    let json = serde_json::to_string(reports.last().unwrap()).unwrap();
    assert_eq!(json, r#"{"task":17,"attempt":2,"exit_code":null,"signal":9}"#);
}

#[test]
fn noop_reports_every_phase_and_success_without_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ExecConfig {
        executor: ExecutorKind::Noop,
        ..config(dir.path(), Duration::from_secs(1))
    };
    let (outcome, reports) = run(&cfg, &assignment("exit 1"));
    assert_eq!(outcome, Outcome::Exited(0));
    assert_eq!(reports, with_end(phases(&Phase::ALL), Report::exit(KEY, 0)));
    assert!(!cfg.run_dir(KEY).exists());
}

#[test]
fn an_unusable_work_directory_fails_the_run_with_the_worker_error_code() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let cfg = config(&file, Duration::from_secs(1));
    let (outcome, reports) = run(&cfg, &assignment("true"));
    assert_eq!(outcome, Outcome::Exited(WORKER_ERROR_EXIT));
    assert_eq!(
        reports,
        with_end(phases(&[Phase::Setup]), Report::exit(KEY, WORKER_ERROR_EXIT))
    );
}

#[test]
fn a_run_killed_before_it_starts_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let kill = KillHandle::new();
    kill.kill();
    let (tx, rx) = mpsc::channel();
    assert_eq!(
        run_assignment(&cfg, &assignment("touch ran"), &tx, &kill),
        Outcome::Killed
    );
    drop(tx);
    assert_eq!(rx.iter().count(), 0);
    assert!(!cfg.run_dir(KEY).join("ran").exists());
}

/// Whether a process is gone (a zombie counts: it runs nothing; orphans
/// may stay zombies here when PID 1 does not reap them).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // "PID (COMM) STATE …": the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} never appeared",
            path.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `command` on a thread, waits until it wrote its pids, kills it;
/// returns the time the kill took and the pids of the group's processes.
fn kill_running(command: &str, grace: Duration) -> (Duration, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), grace);
    let kill = KillHandle::new();
    let (tx, rx) = mpsc::channel();
    let worker = {
        let (cfg, a, kill) = (cfg.clone(), assignment(command), kill.clone());
        thread::spawn(move || run_assignment(&cfg, &a, &tx, &kill))
    };
    let pids = wait_for_file(&cfg.run_dir(KEY).join("pids"));
    let pids: Vec<u32> = pids.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    assert!(
        pids.iter().all(|&p| !is_dead(p)),
        "the processes should be running"
    );
    let reports_before: Vec<Report> = rx.try_iter().collect();
    assert_eq!(reports_before, phases(&[Phase::Setup, Phase::Input, Phase::Exec]));

    let start = Instant::now();
    kill.kill();
    let outcome = worker.join().unwrap();
    let took = start.elapsed();
    assert_eq!(outcome, Outcome::Killed);
    assert_eq!(rx.try_iter().count(), 0, "a killed run sends no further reports");
    // The group's leftovers may take a moment to be reported dead by /proc.
    let deadline = Instant::now() + Duration::from_secs(1);
    while !pids.iter().all(|&p| is_dead(p)) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    for &pid in &pids {
        assert!(is_dead(pid), "process {pid} of the killed group is still alive");
    }
    (took, pids)
}

#[test]
fn kill_terminates_the_whole_process_group() {
    // sh starts a background sleep (same group), then waits on a foreground one.
    let grace = Duration::from_secs(3);
    let (took, _) = kill_running(
        "sleep 100 & echo $$ $! > pids.tmp; mv pids.tmp pids; sleep 100",
        grace,
    );
    // Both obey SIGTERM: no need to wait for the grace period.
    assert!(took < Duration::from_secs(1), "kill took {took:?}");
}

#[test]
fn kill_escalates_to_sigkill_after_the_grace_period() {
    // SIGTERM is ignored by sh and, inherited, by both sleeps.
    let grace = Duration::from_millis(500);
    let (took, _) = kill_running(
        "trap '' TERM; sleep 100 & echo $$ $! > pids.tmp; mv pids.tmp pids; sleep 100",
        grace,
    );
    assert!(took >= grace, "SIGKILL came before the grace period: {took:?}");
    assert!(took < grace + Duration::from_secs(1), "kill took {took:?}");
}

#[test]
fn a_task_gets_only_the_allowlisted_environment() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, _) = run(&cfg, &assignment("env > env.txt"));
    assert_eq!(outcome, Outcome::Exited(0));
    let env = read(cfg.run_dir(KEY).join("env.txt"));
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    // What the shell itself may export besides what it was given.
    let shell = ["PWD", "OLDPWD", "SHLVL", "_"];
    for name in &names {
        assert!(
            TASK_ENV.contains(name)
                || name.starts_with("LC_")
                || shell.contains(name)
                || ["FAIRSCHED_TASK", "FAIRSCHED_ATTEMPT", "TMPDIR"].contains(name),
            "{name} reached the task:\n{env}"
        );
    }
    assert!(env.contains("FAIRSCHED_TASK=17\n"), "{env}");
    assert!(env.contains("FAIRSCHED_ATTEMPT=2\n"), "{env}");
    assert!(names.contains(&"PATH"), "{env}");
}

#[test]
fn the_run_directory_and_its_files_are_the_worker_user_s_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, _) = run(&cfg, &assignment("echo hi; echo oops >&2"));
    assert_eq!(outcome, Outcome::Exited(0));
    let mode = |p: PathBuf| std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    let run_dir = cfg.run_dir(KEY);
    assert_eq!(mode(run_dir.clone()), 0o700);
    assert_eq!(mode(run_dir.join("stdout")), 0o600);
    assert_eq!(mode(run_dir.join("stderr")), 0o600);
    assert_eq!(mode(run_dir.join("tmp")), 0o700);
    // The script's file is gone once the run ended (issue 38, finding 8):
    // the output and the run's own temporary directory are left.
    let mut left: Vec<_> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["stderr", "stdout", "tmp"]);
}

#[test]
fn every_phase_s_script_file_is_removed_when_the_run_ends_even_a_failed_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let a = Assignment {
        stage_in: Some("true".into()),
        stage_out: Some("exit 3".into()),
        ..assignment("ls -a > during")
    };
    let (outcome, _) = run(&cfg, &a);
    assert_eq!(outcome, Outcome::Exited(3));
    let run_dir = cfg.run_dir(KEY);
    // It was there while its script ran, and the input's was gone.
    assert_eq!(
        read(run_dir.join("during")),
        ".\n..\n.fairsched-exec.sh\nduring\nstderr\nstdout\ntmp\n"
    );
    for f in [
        ".fairsched-input.sh",
        ".fairsched-exec.sh",
        ".fairsched-output.sh",
    ] {
        assert!(!run_dir.join(f).exists(), "{f} left");
    }
}

#[test]
fn a_task_s_files_are_its_own_and_its_tmpdir_is_in_its_directory() {
    // Issue 38, finding 7: with the worker's umask (often 022), a file a
    // task wrote in a shared /tmp was readable by every other task.
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, _) = run(
        &cfg,
        &assignment(
            r#"echo x > f; mkdir d; echo y > "$TMPDIR/t"; stat -c %a f d "$TMPDIR/t" > modes; echo "$TMPDIR" > where"#,
        ),
    );
    assert_eq!(outcome, Outcome::Exited(0));
    let run_dir = cfg.run_dir(KEY);
    assert_eq!(read(run_dir.join("modes")), "600\n700\n600\n");
    assert_eq!(
        read(run_dir.join("where")).trim_end(),
        run_dir.join("tmp").to_str().unwrap()
    );
    assert_eq!(read(run_dir.join("tmp/t")), "y\n");
}

/// Whether a test that needs root runs: it does as root; otherwise it is
/// skipped with a reason, unless FAIRSCHED_CGROUPS=required (CI, as root),
/// where it fails.
fn as_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert_ne!(
        std::env::var("FAIRSCHED_CGROUPS").as_deref(),
        Ok("required"),
        "{test} needs root (FAIRSCHED_CGROUPS=required)"
    );
    eprintln!("skipping {test}: RLIMIT_NPROC counts all of this user's processes; it needs root");
    false
}

fn limited(dir: &Path, limits: RunLimits) -> ExecConfig {
    ExecConfig {
        limits,
        ..config(dir, Duration::from_millis(200))
    }
}

#[test]
fn a_run_with_too_many_processes_is_killed_at_its_process_limit() {
    if !as_root("a_run_with_too_many_processes_is_killed_at_its_process_limit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = limited(
        dir.path(),
        RunLimits {
            processes: Some(16),
            ..Default::default()
        },
    );
    let started = Instant::now();
    let (outcome, reports) = run(&cfg, &assignment("for i in $(seq 40); do sleep 30 & done; wait"));
    assert_eq!(outcome, Outcome::Exited(RESOURCE_LIMIT_EXIT));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        reports.last(),
        Some(&Report::exit(KEY, RESOURCE_LIMIT_EXIT).with_limit(Some(LimitKind::Processes)))
    );
    let err = read(cfg.run_dir(KEY).join("stderr"));
    assert!(err.contains("process limit of 16 reached"), "{err}");
}

#[test]
fn a_run_that_fills_its_directory_is_killed_at_its_disk_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = limited(
        dir.path(),
        RunLimits {
            disk_bytes: Some(4 << 20),
            ..Default::default()
        },
    );
    let (outcome, reports) = run(&cfg, &assignment("head -c 9M /dev/zero > big; sleep 30"));
    assert_eq!(outcome, Outcome::Exited(RESOURCE_LIMIT_EXIT));
    assert_eq!(reports.last().and_then(|r| r.limit), Some(LimitKind::Disk));
    let err = read(cfg.run_dir(KEY).join("stderr"));
    assert!(err.contains("disk limit of 4194304 bytes"), "{err}");
}

#[test]
fn a_run_that_writes_too_much_output_is_killed_at_its_output_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = limited(
        dir.path(),
        RunLimits {
            output_bytes: Some(1 << 20),
            ..Default::default()
        },
    );
    let (outcome, reports) = run(&cfg, &assignment("head -c 3M /dev/zero; sleep 30"));
    assert_eq!(outcome, Outcome::Exited(RESOURCE_LIMIT_EXIT));
    assert_eq!(reports.last().and_then(|r| r.limit), Some(LimitKind::Output));
}

#[test]
fn a_run_has_its_open_file_limit_and_runs_within_its_limits_complete() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = limited(
        dir.path(),
        RunLimits {
            processes: Some(64),
            open_files: Some(48),
            disk_bytes: Some(64 << 20),
            output_bytes: Some(1 << 20),
        },
    );
    let (outcome, reports) = run(
        &cfg,
        &assignment("ulimit -n; head -c 1M /dev/zero > f; sleep 0.5"),
    );
    assert_eq!(outcome, Outcome::Exited(0));
    assert_eq!(reports.last(), Some(&Report::exit(KEY, 0)));
    assert_eq!(read(cfg.run_dir(KEY).join("stdout")), "48\n");
}

#[test]
fn the_command_is_in_no_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let kill = KillHandle::new();
    let (tx, _rx) = mpsc::channel();
    let command = "echo $$ > pids.tmp; mv pids.tmp pids; sleep 100 # secret-marker-4417";
    let worker = {
        let (cfg, a, kill) = (cfg.clone(), assignment(command), kill.clone());
        thread::spawn(move || run_assignment(&cfg, &a, &tx, &kill))
    };
    let pid: u32 = wait_for_file(&cfg.run_dir(KEY).join("pids"))
        .trim()
        .parse()
        .unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline);
    kill.kill();
    assert_eq!(worker.join().unwrap(), Outcome::Killed);
    assert!(!cmdline.contains("secret-marker"), "{cmdline:?}");
}

#[test]
fn what_a_script_leaves_in_its_group_is_stopped_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let (outcome, _) = run(&cfg, &assignment("sleep 100 & echo $! > pid"));
    assert_eq!(outcome, Outcome::Exited(0));
    let pid: u32 = read(cfg.run_dir(KEY).join("pid")).trim().parse().unwrap();
    assert!(is_dead(pid), "the background sleep {pid} outlived its run");
}

#[test]
fn a_time_limit_kills_the_run_and_reports_exit_124() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("sleep 100; touch ran");
    a.time_limit_ms = Some(300);
    a.stage_out = Some("touch output-ran".into());
    let start = Instant::now();
    let (outcome, reports) = run(&cfg, &a);
    let took = start.elapsed();
    assert_eq!(outcome, Outcome::Exited(TIME_LIMIT_EXIT));
    assert_eq!(TIME_LIMIT_EXIT, 124);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(
        reports,
        with_end(
            phases(&[Phase::Setup, Phase::Input, Phase::Exec]),
            Report::exit(KEY, TIME_LIMIT_EXIT)
        )
    );
    assert!(!cfg.run_dir(KEY).join("ran").exists());
    assert!(!cfg.run_dir(KEY).join("output-ran").exists());
    assert!(read(cfg.run_dir(KEY).join("stderr")).contains("time limit of 300 ms reached"));
}

#[test]
fn a_run_within_its_time_limit_completes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("true");
    a.time_limit_ms = Some(10_000);
    assert_eq!(run(&cfg, &a).0, Outcome::Exited(0));
}

#[test]
fn a_memory_limit_bounds_the_scripts_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), Duration::from_secs(1));
    let mut a = assignment("ulimit -v");
    a.memory_bytes = Some(256 << 20);
    assert_eq!(run(&cfg, &a).0, Outcome::Exited(0));
    assert_eq!(read(cfg.run_dir(KEY).join("stdout")), "262144\n");
}
