//! What a task can reach, and what outlives it: real processes on
//! 127.0.0.1. A task sees none of its worker's environment beyond an
//! allowlist (no token); no process it starts outlives its run, even one
//! that left the run's process group (`setsid`), whether the script ends,
//! the run is killed or its worker is SIGKILLed; the command shows in no
//! command line; and a worker stopped (SIGSTOP) past its lease has its run
//! killed by the run's guard before another worker may get the task.
//!
//! The first tests run one assignment under the task guard of the
//! `fairsched` binary, without a broker (`run_assignment`, as the worker
//! does), with no cgroup: the guard finds the run's processes in `/proc`.
//! The last ones run a worker with `--cgroups required`: a cancelled
//! task's processes are killed through its cgroup, which is then removed,
//! and a task beyond its memory is stopped by its cgroup. They need a
//! cgroup the worker may create cgroups in (root here and in CI); without
//! one each says SKIPPED and why, unless `FAIRSCHED_CGROUPS=required` (as
//! `.ci/run` sets): then it fails.

use crate::common::{Broker, bin, wait_for};
use fairsched_worker::wire::{Assignment, RunKey};
use fairsched_worker::{ExecConfig, ExecutorKind, Guards, KillHandle, Outcome, run_assignment};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a kill may take on a noisy machine.
const KILL_BOUND: Duration = Duration::from_secs(2);

const KEY: RunKey = RunKey { task: 5, attempt: 1 };

/// Starts a daemon in a session of its own (out of the run's process
/// group) and writes its PID to `pid`.
const DAEMON: &str = "setsid sleep 1000 & echo $! > pid.tmp && mv pid.tmp pid";

/// Whether a process numbered `pid` still runs (a zombie does not).
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    state != Some("Z")
}

/// The PID written to `file` (whole, with a rename).
fn pid_in(file: &Path, timeout: Duration) -> i32 {
    wait_for(&format!("{}", file.display()), timeout, || {
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
}

/// Waits up to `bound` for `pid` to die; SIGKILLs it if it did not (not
/// to leave it behind) and fails.
fn assert_dies(what: &str, pid: i32, bound: Duration) -> Duration {
    let since = Instant::now();
    while running(pid) && since.elapsed() < bound {
        std::thread::sleep(Duration::from_millis(10));
    }
    if running(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        panic!("{what}: process {pid} still runs after {bound:?}");
    }
    since.elapsed()
}

fn assignment(command: &str) -> Assignment {
    Assignment {
        task: KEY.task,
        attempt: KEY.attempt,
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

/// Runs use the `fairsched` binary as their guard.
fn guarded(dir: &Path) -> ExecConfig {
    ExecConfig {
        executor: ExecutorKind::Process,
        workdir: dir.to_path_buf(),
        grace: Duration::from_millis(500),
        guard: Some(Guards::new(env!("CARGO_BIN_EXE_fairsched-task-guard"))),
        lease_file: None,
        run_as_user: false,
        cgroups: None,
        task_user: None,
        limits: Default::default(),
        private_tmp: false,
    }
}

/// Starts `command` under a guard on a thread; its kill handle and the thread.
fn start(cfg: &ExecConfig, command: &str) -> (KillHandle, std::thread::JoinHandle<Outcome>) {
    let kill = KillHandle::new();
    let (cfg, a, k) = (cfg.clone(), assignment(command), kill.clone());
    let (tx, _rx) = mpsc::channel();
    let run = std::thread::spawn(move || run_assignment(&cfg, &a, &tx, &k));
    (kill, run)
}

#[test]
fn a_setsid_daemon_dies_when_its_script_ends() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = guarded(dir.path());
    let (_, run) = start(&cfg, &format!("{DAEMON}; exit 0"));
    assert_eq!(run.join().unwrap(), Outcome::Exited(0));
    let pid = pid_in(&cfg.run_dir(KEY).join("pid"), Duration::from_secs(1));
    // The guard stops it before it ends: it is gone once the run ended.
    assert_dies("the daemon of an ended run", pid, Duration::ZERO);
}

#[test]
fn a_setsid_daemon_dies_when_its_run_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = guarded(dir.path());
    let (kill, run) = start(&cfg, &format!("{DAEMON}; sleep 1000"));
    let pid = pid_in(&cfg.run_dir(KEY).join("pid"), Duration::from_secs(10));
    assert!(running(pid));
    kill.kill();
    assert_eq!(run.join().unwrap(), Outcome::Killed);
    assert_dies("the daemon of a killed run", pid, Duration::from_millis(200));
}

/// The parent of process `pid` (0 if gone).
fn parent_of(pid: i32) -> i32 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The guards' zygote killed (by a task of the worker's own user, say):
/// the runs it had end as the worker's failure (125, the reason in their
/// stderr), their processes die with their guards, and the next run gets
/// a zygote started again.
#[test]
fn a_killed_zygote_fails_its_runs_and_the_next_run_has_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = guarded(dir.path());
    let (_kill, run) = start(&cfg, "echo $$ > pid.tmp && mv pid.tmp pid; sleep 1000");
    let sh = pid_in(&cfg.run_dir(KEY).join("pid"), Duration::from_secs(10));
    let guard = parent_of(sh);
    let zygote = parent_of(guard);
    assert_ne!(
        zygote,
        std::process::id() as i32,
        "the guard is the zygote's child"
    );
    // What a stop sends to every process of a worker (systemd, Slurm's
    // scancel) does not end it: the worker stops its runs itself.
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        kill(Pid::from_raw(zygote), sig).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        running(zygote) && running(guard) && running(sh),
        "a signal ended the zygote or the run"
    );
    kill(Pid::from_raw(zygote), Signal::SIGKILL).unwrap();
    assert_eq!(run.join().unwrap(), Outcome::Exited(125));
    assert_dies("the shell of a run whose zygote died", sh, KILL_BOUND);
    let stderr = std::fs::read_to_string(cfg.run_dir(KEY).join("stderr")).unwrap();
    assert!(stderr.contains("zygote ended"), "{stderr}");
    // The next run: a new zygote.
    let dir2 = tempfile::tempdir().unwrap();
    let cfg2 = ExecConfig {
        workdir: dir2.path().to_path_buf(),
        ..cfg.clone()
    };
    let (_kill, run) = start(&cfg2, "echo ok");
    assert_eq!(run.join().unwrap(), Outcome::Exited(0));
    let out = std::fs::read_to_string(cfg2.run_dir(KEY).join("stdout")).unwrap();
    assert_eq!(out, "ok\n");
}

#[test]
fn the_guard_s_command_line_shows_no_command() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = guarded(dir.path());
    let (kill, run) = start(
        &cfg,
        "echo $$ > pid.tmp && mv pid.tmp pid; sleep 1000 # secret-marker-9051",
    );
    let sh = pid_in(&cfg.run_dir(KEY).join("pid"), Duration::from_secs(10));
    // The guard leads the run's process group: the group's number is its PID.
    let stat = std::fs::read_to_string(format!("/proc/{sh}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let (guard, group): (i32, i32) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    assert_eq!(
        guard, group,
        "the shell's parent is the guard, which leads its group"
    );
    let cmdline = |pid: i32| {
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap()).into_owned()
    };
    let (of_guard, of_sh) = (cmdline(guard), cmdline(sh));
    // Nor its environment: the worker's (this test's) is not passed on.
    let environ =
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{guard}/environ")).unwrap()).into_owned();
    kill.kill();
    assert_eq!(run.join().unwrap(), Outcome::Killed);
    assert!(of_guard.contains("__fairsched-task-guard"), "{of_guard:?}");
    assert!(!of_guard.contains("secret-marker"), "{of_guard:?}");
    assert!(!of_sh.contains("secret-marker"), "{of_sh:?}");
    assert!(!environ.contains("CARGO_"), "{environ:?}");
}

#[test]
fn a_task_sees_no_token_of_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("lab");
    let user = broker.add_user("ann", "lab");
    let wtoken = broker.worker_token("lab");
    let spawn = |name: &str, token_arg: &[&str], env_token: Option<&str>| {
        let wd = dir.path().join(name);
        let err = std::fs::File::create(dir.path().join(format!("{name}.stderr"))).unwrap();
        let mut cmd = bin();
        cmd.current_dir(dir.path())
            .args(["worker", "--broker", &broker.url, "--slots", "1"])
            .args(token_arg)
            .args(["--workdir", wd.to_str().unwrap(), "--grace", "1s", "--host", name])
            .stdout(Stdio::null())
            .stderr(err);
        if let Some(t) = env_token {
            cmd.env("FAIRSCHED_TOKEN", t);
        }
        crate::common::Proc::spawn(name, &mut cmd, Some(Duration::from_secs(5)))
    };
    let check = |wd: &str| {
        let id = broker
            .api()
            .submit(&user, &["env > env.txt; echo \"[$FAIRSCHED_TOKEN]\"".into()])[0];
        let t = wait_for("the task to complete", Duration::from_secs(30), || {
            let t = broker.api().get_ok(&format!("/v1/tasks/{id}"), &user);
            (t["state"] != "waiting" && t["state"] != "running").then_some(t)
        });
        assert_eq!(t["state"], "completed", "{t}");
        let run = dir.path().join(wd).join(format!("task-{id}-1"));
        assert_eq!(std::fs::read_to_string(run.join("stdout")).unwrap(), "[]\n");
        let env = std::fs::read_to_string(run.join("env.txt")).unwrap();
        assert!(!env.contains(&wtoken), "the token reached the task:\n{env}");
        assert!(!env.contains("FAIRSCHED_LOG"), "{env}");
        assert!(env.contains(&format!("FAIRSCHED_TASK={id}\n")), "{env}");
    };

    // The token in the worker's environment.
    let mut w = spawn("env-worker", &[], Some(&wtoken));
    broker.wait_slots(1);
    check("env-worker");
    w.terminate(Duration::from_secs(5));
    broker.wait_slots(0);

    // The token in a file.
    let file = dir.path().join("worker.token");
    std::fs::write(&file, format!("{wtoken}\n")).unwrap();
    let mut w = spawn("file-worker", &["--token-file", file.to_str().unwrap()], None);
    broker.wait_slots(1);
    check("file-worker");
    w.terminate(Duration::from_secs(5));
    let log = std::fs::read_to_string(dir.path().join("file-worker.stderr")).unwrap();
    // As root (CI), the worker runs its tasks as nobody (issue 38).
    let says = if nix::unistd::geteuid().is_root() {
        "every task runs as `nobody`"
    } else {
        "tasks run under this worker's user"
    };
    assert!(log.contains(says), "{log}");
}

/// A broker (FIFO) with organization `lab`, its user `ann` and a worker
/// token; the workers' runs go to `wd`.
struct Lab {
    broker: Broker,
    user: String,
    wtoken: String,
    wd: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn lab(lease: &str) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fifo", lease);
    broker.add_org("lab");
    Lab {
        user: broker.add_user("ann", "lab"),
        wtoken: broker.worker_token("lab"),
        wd: dir.path().join("wd"),
        broker,
        _dir: dir,
    }
}

#[test]
fn a_setsid_daemon_dies_with_its_sigkilled_worker() {
    let lab = lab("30s");
    let (broker, user, wtoken, wd) = (&lab.broker, &lab.user, &lab.wtoken, &lab.wd);
    let mut worker = broker.worker("w", wtoken, 1, wd, "process");
    broker.wait_slots(1);
    let id = broker.api().submit(user, &[format!("{DAEMON}; sleep 1000")])[0];
    let pid = pid_in(&wd.join(format!("task-{id}-1/pid")), Duration::from_secs(30));
    assert!(running(pid));
    worker.kill9();
    let took = assert_dies("the daemon of a SIGKILLed worker's run", pid, KILL_BOUND);
    println!("worker SIGKILLed → the setsid daemon gone: {took:?}");
}

#[test]
fn a_stopped_worker_s_run_dies_before_its_lease_runs_out() {
    let lab = lab("1s");
    let (broker, user, wtoken, wd) = (&lab.broker, &lab.user, &lab.wtoken, &lab.wd);
    let mut worker = broker.worker("w", wtoken, 1, wd, "process");
    broker.wait_slots(1);
    let id = broker.api().submit(
        user,
        &["echo $$ > pid.tmp && mv pid.tmp pid; sleep 2; echo done > marker".into()],
    )[0];
    let sh = pid_in(&wd.join(format!("task-{id}-1/pid")), Duration::from_secs(30));
    // Its guard is the small program beside `fairsched`, not `fairsched`.
    let stat = std::fs::read_to_string(format!("/proc/{sh}/stat")).unwrap();
    let guard = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let exe = std::fs::read_link(format!("/proc/{guard}/exe")).unwrap();
    assert!(exe.ends_with("fairsched-task-guard"), "{exe:?}");
    let worker_pid = Pid::from_raw(worker.pid() as i32);
    kill(worker_pid, Signal::SIGSTOP).unwrap();
    let stopped = Instant::now();
    // While the worker is stopped its guard ends the run: the lease is
    // 1 s, the guard acts at 1 s − max(heartbeat, 10%) = ⅔ s after the
    // worker's last answered call, and SIGKILLs at most ⅙ s later.
    let died = wait_for("the stopped worker's run to die", Duration::from_secs(5), || {
        (!running(sh)).then(|| stopped.elapsed())
    });
    std::thread::sleep(Duration::from_millis(1500).saturating_sub(stopped.elapsed()));
    kill(worker_pid, Signal::SIGCONT).unwrap();
    println!("worker stopped → its run gone: {died:?}");
    let t = wait_for("the task to complete", Duration::from_secs(30), || {
        let t = broker.api().get_ok(&format!("/v1/tasks/{id}"), user);
        (t["state"] != "waiting" && t["state"] != "running").then_some(t)
    });
    assert_eq!(t["state"], "completed", "{t}");
    assert_eq!(t["attempts"], 2, "{t}");
    // The first run did not finish; the second did: done once.
    assert!(
        !wd.join(format!("task-{id}-1/marker")).exists(),
        "the first run finished"
    );
    assert!(wd.join(format!("task-{id}-2/marker")).exists(), "{t}");
    assert!(
        died < Duration::from_secs(1),
        "the run died {died:?} after the stop"
    );
    assert!(worker.alive(), "the worker goes on after its lost lease");
    worker.terminate(Duration::from_secs(5));
}

/// A worker with `--cgroups required`, registered; `None` (after a
/// SKIPPED line with the worker's reason, or a failure under
/// `FAIRSCHED_CGROUPS=required`) when it refuses to start: no cgroup it
/// can use here.
fn cgroup_worker(broker: &Broker, token: &str, wd: &Path, test: &str) -> Option<crate::common::Proc> {
    let name = "cgroup-worker";
    let mut w = broker.worker_with(name, token, 1, wd, "process", &["--cgroups", "required"]);
    let api = broker.api();
    let up = wait_for(
        "the worker to register or refuse",
        Duration::from_secs(30),
        || {
            if !w.alive() {
                return Some(false);
            }
            (api.status(&broker.admin).slots == 1).then_some(true)
        },
    );
    if up {
        return Some(w);
    }
    let log = std::fs::read_to_string(broker.dir.join(format!("{name}.stderr"))).unwrap_or_default();
    skip(test, &format!("no cgroup this worker can use here:\n{log}"));
    None
}

/// Says why `test` does not run, or fails it under `FAIRSCHED_CGROUPS=required`.
fn skip(test: &str, why: &str) {
    assert!(
        std::env::var("FAIRSCHED_CGROUPS").as_deref() != Ok("required"),
        "FAIRSCHED_CGROUPS=required, but {why}"
    );
    crate::common::skipping(test, why);
}

/// A guarded run in a cgroup: its shell is born in the run's cgroup (the
/// guard enters it only to start the shell, and goes back), with no
/// signal blocked (the guard waits for its signals with them blocked).
#[test]
fn a_guarded_shell_is_in_its_run_s_cgroup_its_guard_is_not_and_no_signal_is_blocked() {
    let test = "a_guarded_shell_is_in_its_run_s_cgroup_its_guard_is_not_and_no_signal_is_blocked";
    // Every signal at its default action in the shell, none blocked (the
    // guard blocks some; Rust ignores SIGPIPE): a shell that sends itself
    // one dies of it, whether it was spawned or forked (a memory rlimit
    // takes the fork).
    let signals = |cfg: &ExecConfig| {
        for (sig, n) in [("TERM", 15), ("PIPE", 13), ("HUP", 1), ("INT", 2)] {
            for memory in [None, Some(1u64 << 40)] {
                let mut a = assignment(&format!("kill -{sig} $$; echo survived"));
                a.memory_bytes = memory;
                let (tx, _rx) = mpsc::channel();
                let outcome = run_assignment(cfg, &a, &tx, &KillHandle::new());
                let out = std::fs::read_to_string(cfg.run_dir(KEY).join("stdout")).unwrap();
                assert_eq!(
                    (outcome, out.as_str()),
                    (Outcome::Signaled(n), ""),
                    "SIG{sig}, memory limit {memory:?}, cgroups {}",
                    cfg.cgroups.is_some()
                );
                std::fs::remove_dir_all(cfg.run_dir(KEY)).unwrap();
            }
        }
    };
    let dir = tempfile::tempdir().unwrap();
    signals(&guarded(dir.path()));
    let cgroups = match fairsched_worker::Cgroups::setup(fairsched_worker::CgroupMode::Auto) {
        Ok(Some(cg)) => cg,
        Ok(None) => return skip(test, "no cgroup usable here"),
        Err(e) => return skip(test, &e.to_string()),
    };
    let mut cfg = guarded(dir.path());
    cfg.cgroups = Some(cgroups);
    signals(&cfg);
    let (kill, run) = start(&cfg, "echo $$ > pid.tmp && mv pid.tmp pid; sleep 1000");
    let sh = pid_in(&cfg.run_dir(KEY).join("pid"), Duration::from_secs(10));
    let guard = parent_of(sh);
    let of = |pid: i32| fairsched_worker::cgroups_of(pid as u32).unwrap();
    let (sh_cgroups, guard_cgroups) = (of(sh), of(guard));
    kill.kill();
    assert_eq!(run.join().unwrap(), Outcome::Killed);
    // A run's cgroup: `run-N` of the pool, or `task-ID-ATTEMPT`.
    let run_cgroup = |d: &std::path::PathBuf| {
        d.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("run-") || n.starts_with("task-")
        })
    };
    assert!(
        sh_cgroups.iter().any(run_cgroup),
        "the shell is in {sh_cgroups:?}"
    );
    assert!(
        !guard_cgroups.iter().any(run_cgroup),
        "the guard is in {guard_cgroups:?}"
    );
}

#[test]
fn a_cancelled_task_s_setsid_daemon_dies_through_its_cgroup() {
    let lab = lab("30s");
    let (broker, user, wtoken, wd) = (&lab.broker, &lab.user, &lab.wtoken, &lab.wd);
    let Some(worker) = cgroup_worker(
        broker,
        wtoken,
        wd,
        "a_cancelled_task_s_setsid_daemon_dies_through_its_cgroup",
    ) else {
        return;
    };
    let api = broker.api();
    let id = api.submit(user, &[format!("{DAEMON}; sleep 1000")])[0];
    let pid = pid_in(&wd.join(format!("task-{id}-1/pid")), Duration::from_secs(30));
    // The daemon left the run's process group, not its cgroup (a run
    // cgroup of its worker, named by its pid and start time).
    let worker_dir = format!("fairsched-worker-{}-", worker.pid());
    let run_cgroups: Vec<std::path::PathBuf> = fairsched_worker::cgroups_of(pid as u32)
        .unwrap()
        .into_iter()
        .filter(|d| {
            d.parent()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with(&worker_dir))
        })
        .collect();
    assert!(
        !run_cgroups.is_empty(),
        "the daemon {pid} is in no cgroup of its worker's runs"
    );
    let t = api.post_ok(&format!("/v1/tasks/{id}/cancel"), user, &json!({}));
    assert_eq!(t["state"], "cancelled", "{t}");
    let took = assert_dies("the daemon of a cancelled task", pid, KILL_BOUND);
    println!("task cancelled → its setsid daemon gone: {took:?}");
    // Every process of the run gone: its cgroup is empty (kept for the
    // next run without a memory limit), or removed.
    for d in &run_cgroups {
        wait_for(&format!("{} emptied", d.display()), KILL_BOUND, || {
            std::fs::read_to_string(d.join("cgroup.procs"))
                .map_or(true, |p| p.is_empty())
                .then_some(())
        });
    }
}

#[test]
fn a_task_beyond_its_memory_is_stopped_by_its_cgroup_and_says_so() {
    let test = "a_task_beyond_its_memory_is_stopped_by_its_cgroup_and_says_so";
    let lab = lab("30s");
    let (broker, user, wtoken, wd) = (&lab.broker, &lab.user, &lab.wtoken, &lab.wd);
    let Some(_worker) = cgroup_worker(broker, wtoken, wd, test) else {
        return;
    };
    // Said at start (a warning: the tests' workers log warnings only).
    let log = std::fs::read_to_string(broker.dir.join("cgroup-worker.stderr")).unwrap();
    if log.contains("memory limit: RLIMIT_AS") {
        skip(test, &format!("the worker has no memory cgroup here:\n{log}"));
        return;
    }
    let api = broker.api();
    // 200 MB touched under 64 MiB. Two processes of 40 MB each would
    // each fit an address-space limit; not the run's.
    let body = json!({"tasks": [
        {"command": "dd if=/dev/zero of=/dev/null bs=200M count=1; echo after", "memory_bytes": 64 << 20},
        {"command": "dd if=/dev/zero bs=40M count=1 | (sleep 0.5; dd bs=40M count=1 iflag=fullblock of=/dev/null)",
         "memory_bytes": 64 << 20},
        {"command": "dd if=/dev/zero of=/dev/null bs=8M count=1", "memory_bytes": 64 << 20},
    ]});
    let ids: Vec<u64> = api.post_ok("/v1/tasks", user, &body)["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    broker.wait_idle(Duration::from_secs(60));
    let end = |id: u64| {
        let t = api.get_ok(&format!("/v1/tasks/{id}"), user);
        (t["state"].as_str().unwrap().to_owned(), t["exit_code"].as_i64())
    };
    assert_eq!(end(ids[2]), ("completed".to_owned(), Some(0)));
    for &id in &ids[..2] {
        assert_eq!(end(id), ("failed".to_owned(), Some(137)), "task {id}");
        let stderr = wait_for("the output", Duration::from_secs(20), || {
            let r = api.get(&format!("/v1/tasks/{id}/output?stream=stderr"), Some(user));
            (r.status == 200).then_some(r.text)
        });
        assert!(
            stderr.contains("memory limit of 67108864 bytes reached"),
            "task {id}: {stderr}"
        );
    }
}
