//! fairsched workers as pilot jobs on a real Slurm (the single-node
//! cluster `.ci/slurm-setup.sh` starts on 127.0.0.1): the broker runs
//! here, `fairsched pilot slurm` submits the workers with `sbatch`, and
//! only they run the tasks.
//!
//! (a) 500 short tasks of two users of two organizations whose pilots
//!     contribute 4 and 2 slots, under `fair-share`: every task completes
//!     exactly once, on a pilot, and while both have work waiting the
//!     organizations get 2/3 and 1/3 of the busy slot-time.
//! (b) A pilot cancelled with `fairsched pilot cancel` (scancel) while it
//!     runs tasks: nothing is lost; its tasks run again on the other
//!     pilot at once (the worker leaves on Slurm's SIGTERM), not a lease
//!     later, and none fails.
//! (c) A pilot with a short wall time drains: it stops taking tasks
//!     `--drain-before` seconds before the end, finishes its runs, leaves
//!     and exits 0 (Slurm says COMPLETED, not TIMEOUT); no run is cut.
//!
//! Without Slurm (no `sbatch`, or no node up) each test says so and
//! returns, unless FAIRSCHED_SLURM=required (as `.ci/run` sets): then it
//! fails.

use crate::common::{Broker, bin, slurm_up, wait_for};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Pilots submitted from `dir` (state file `dir/pilots.json`), cancelled
/// when dropped, so that a failing test leaves no job holding CPUs.
struct Pilots {
    dir: PathBuf,
    jobs: Vec<u64>,
}

impl Pilots {
    fn new(dir: &Path) -> Pilots {
        Pilots {
            dir: dir.to_path_buf(),
            jobs: Vec::new(),
        }
    }

    fn state(&self) -> String {
        self.dir.join("pilots.json").to_str().unwrap().to_owned()
    }

    /// `fairsched pilot slurm … --count N --slots K EXTRA…`; the new job ids.
    fn submit(&mut self, broker: &Broker, token: &str, count: u32, slots: u32, extra: &[&str]) -> Vec<u64> {
        let out = bin()
            .current_dir(&self.dir)
            .env("FAIRSCHED_LOG", "info")
            .args(["pilot", "slurm", "--broker", &broker.url, "--token", token])
            // CI's Slurm runs the pilots as root: their tasks too, as the
            // live tests' workers do (common::worker_with), not as nobody,
            // who cannot enter the test's private folder.
            .env(
                "FAIRSCHED_ALLOW_ROOT_TASKS",
                if nix::unistd::geteuid().is_root() {
                    "true"
                } else {
                    "false"
                },
            )
            .args(["--count", &count.to_string(), "--slots", &slots.to_string()])
            .args(["--dir", self.dir.join("pilots").to_str().unwrap()])
            .args(["--state", &self.state()])
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "pilot slurm: {}{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        // "submitted N pilots of K slots: Slurm jobs ID ID…"
        let ids: Vec<u64> = stdout
            .lines()
            .next()
            .and_then(|l| l.split_once("Slurm jobs "))
            .map(|(_, ids)| ids.split_whitespace().map(|i| i.parse().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(ids.len(), count as usize, "{stdout}");
        assert!(!stdout.contains(token), "the token is never printed");
        self.jobs.extend(&ids);
        ids
    }

    /// Slurm's state of a job (`squeue -t all`), e.g. RUNNING, COMPLETED.
    fn job_state(&self, job: u64) -> String {
        let o = Command::new("squeue")
            .args(["-h", "-t", "all", "-o", "%T", "-j", &job.to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// What a pilot printed (its worker's log), for failure messages.
    fn output(&self, job: u64) -> String {
        std::fs::read_to_string(self.dir.join("pilots").join(format!("pilot-{job}.out"))).unwrap_or_default()
    }
}

impl Drop for Pilots {
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            let ids: Vec<String> = self.jobs.iter().map(u64::to_string).collect();
            let _ = Command::new("scancel").args(&ids).output();
        }
    }
}

/// `n` task commands that sleep `secs`, appending `I JOB` (their index and
/// the Slurm job that runs them) to `started` before and to `done` after.
fn marked(n: usize, secs: u32, started: &Path, done: &Path) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "echo \"{i} $SLURM_JOB_ID\" >> {s}; sleep {secs}; echo \"{i} $SLURM_JOB_ID $(date +%s.%N)\" >> {d}",
                s = started.display(),
                d = done.display()
            )
        })
        .collect()
}

/// Lines `TASK JOB` a task command appended to `file` (a `done` line
/// also has the time it was written: [`done_at`]).
fn marks(file: &Path) -> Vec<(usize, u64)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.split(' ');
            let (t, j) = f.next().zip(f.next()).unwrap_or_else(|| panic!("bad line {l:?}"));
            (
                t.parse().unwrap(),
                j.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("not run by a Slurm job: {l:?}")),
            )
        })
        .collect()
}

#[test]
fn five_hundred_tasks_of_two_users_run_once_on_pilots_with_fair_share() {
    if !slurm_up() {
        return;
    }
    let _cluster = crate::common::slurm_exclusive();
    const TASKS: usize = 500;
    const TOLERANCE: f64 = 0.06;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let broker = Broker::start(dir.path(), "fair-share", "30s");
    let orgs = [("big", 4u32), ("small", 2u32)];
    let mut org_ids = Vec::new();
    let mut users = Vec::new();
    let mut pilots = Pilots::new(dir.path());
    let mut jobs = BTreeSet::new();
    for (name, slots) in orgs {
        org_ids.push(broker.add_org(name));
        users.push(broker.add_user(&format!("user-{name}"), name));
        let token = broker.worker_token(name);
        jobs.extend(pilots.submit(&broker, &token, 1, slots, &["--time", "10:00"]));
    }
    // No task before both pilots have joined: the shares hold from the
    // first task on.
    let api = broker.api();
    wait_for("both pilots to join", Duration::from_secs(60), || {
        (api.status(&broker.admin).slots == 6).then_some(())
    });
    for (u, token) in users.iter().enumerate() {
        let commands: Vec<String> = (0..TASKS / 2)
            .map(|i| {
                let id = u * TASKS / 2 + i;
                format!("echo \"{id} $SLURM_JOB_ID\" >> {}; sleep 0.2", log.display())
            })
            .collect();
        api.submit(token, &commands);
    }
    let status = broker.wait_idle(Duration::from_secs(240));
    assert_eq!(status.waiting + status.running, 0);
    let tasks = broker.tasks();
    assert_eq!(tasks.len(), TASKS);
    for t in &tasks {
        assert_eq!(
            (t.state.as_str(), t.attempts),
            ("completed", 1),
            "task {} ({:?})",
            t.id,
            t.reason
        );
    }
    // Exactly once, each on one of the pilots.
    let ran = marks(&log);
    assert_eq!(ran.len(), TASKS, "runs recorded");
    let once: BTreeSet<usize> = ran.iter().map(|&(t, _)| t).collect();
    assert_eq!(once, (0..TASKS).collect(), "every task ran once");
    let mut per_job: BTreeMap<u64, usize> = BTreeMap::new();
    for &(_, j) in &ran {
        assert!(jobs.contains(&j), "task run outside the pilots, by job {j}");
        *per_job.entry(j).or_default() += 1;
    }
    assert_eq!(per_job.len(), 2, "both pilots ran tasks: {per_job:?}");

    // The shares while both organizations had work waiting: from the
    // first submission to the last start of the organization that ran
    // out first.
    let t0 = tasks.iter().map(|t| t.submit_ms).min().unwrap();
    let t1 = org_ids
        .iter()
        .map(|&o| {
            tasks
                .iter()
                .filter(|t| t.org == o)
                .filter_map(|t| t.start_ms)
                .max()
                .unwrap()
        })
        .min()
        .unwrap();
    assert!(t1 - t0 > 3_000, "a window of {} ms only", t1 - t0);
    let busy: Vec<i64> = org_ids
        .iter()
        .map(|&o| {
            tasks
                .iter()
                .filter(|t| t.org == o)
                .filter_map(|t| {
                    let (s, e) = (t.start_ms?, t.end_ms?);
                    Some((e.min(t1) - s.max(t0)).max(0))
                })
                .sum()
        })
        .collect();
    let total: i64 = busy.iter().sum();
    let shares: Vec<f64> = busy.iter().map(|&b| b as f64 / total as f64).collect();
    println!(
        "fair-share on pilots over {} ms: busy slot-ms {busy:?}, shares {shares:.3?}, expected [0.667, 0.333]; runs per pilot {per_job:?}",
        t1 - t0
    );
    for (i, (&got, &(_, slots))) in shares.iter().zip(&orgs).enumerate() {
        let want = f64::from(slots) / 6.0;
        assert!(
            (got - want).abs() <= TOLERANCE,
            "org {}: share {got:.3}, expected {want:.3} ± {TOLERANCE} (all {shares:.3?})",
            orgs[i].0
        );
    }
}

/// When task `t` wrote its `done` line (seconds since the epoch).
fn done_at(file: &Path, t: usize) -> f64 {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.first()?.parse::<usize>().ok()? == t).then(|| f.get(2)?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no time in the done line of task {t}"))
}

#[test]
fn a_pilot_cancelled_with_scancel_mid_task_loses_nothing() {
    if !slurm_up() {
        return;
    }
    let _cluster = crate::common::slurm_exclusive();
    const TASKS: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let (started, done) = (dir.path().join("started"), dir.path().join("done"));
    // A lease far longer than the test waits: a requeue that comes fast
    // comes from the pilot's leave, not from its lease running out.
    let broker = Broker::start(dir.path(), "fifo", "60s");
    broker.add_org("lab");
    let user = broker.add_user("alice", "lab");
    let token = broker.worker_token("lab");
    let mut pilots = Pilots::new(dir.path());
    let ids = pilots.submit(&broker, &token, 2, 2, &["--time", "10:00"]);
    broker.wait_slots(4);
    let commands = marked(TASKS, 3, &started, &done);
    let api = broker.api();
    api.submit(&user, &commands);
    // Cancel the first pilot once it runs two tasks (mid-task: they sleep 3 s).
    let victim = ids[0];
    wait_for("the pilot to run two tasks", Duration::from_secs(60), || {
        (marks(&started).iter().filter(|&&(_, j)| j == victim).count() >= 2).then_some(())
    });
    let cut: BTreeSet<usize> = marks(&started)
        .iter()
        .filter(|&&(_, j)| j == victim)
        .map(|&(t, _)| t)
        .collect();
    let cancelled_at = Instant::now();
    let out = bin()
        .current_dir(dir.path())
        .args(["pilot", "cancel", "--state", &pilots.state(), &victim.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Its slots leave at once (the worker leaves on SIGTERM).
    wait_for(
        "the cancelled pilot's slots to leave",
        Duration::from_secs(20),
        || (api.status(&broker.admin).slots == 2).then_some(()),
    );
    let left_after = cancelled_at.elapsed();
    let left_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let status = broker.wait_idle(Duration::from_secs(120));
    assert_eq!(status.waiting + status.running, 0);
    let tasks = broker.tasks();
    for t in &tasks {
        assert_eq!(
            t.state,
            "completed",
            "task {} {:?}; pilot output:\n{}",
            t.id,
            t.reason,
            pilots.output(victim)
        );
    }
    // Every task completed once; those cut by the scancel ran again.
    let finished = marks(&done);
    let finished_set: BTreeSet<usize> = finished.iter().map(|&(t, _)| t).collect();
    assert_eq!(
        finished.len(),
        TASKS,
        "each task finished exactly once: {finished:?}"
    );
    assert_eq!(finished_set, (0..TASKS).collect());
    // Those it ran when cancelled either ended before its worker left
    // (on a busy machine the cancel takes its time: a task may end
    // meanwhile) or ran again elsewhere; none ended there after.
    for &(t, j) in &finished {
        if cut.contains(&t) && j == victim {
            let at = done_at(&done, t);
            assert!(
                at < left_at,
                "task {t} finished on the cancelled pilot {:.2} s after its worker left",
                at - left_at
            );
        }
    }
    let attempts: BTreeMap<u64, u32> = tasks.iter().map(|t| (t.id, t.attempts)).collect();
    println!(
        "pilot {victim} cancelled while running tasks {cut:?}: its slots left {left_after:?} later; attempts {attempts:?}"
    );
    assert_eq!(
        tasks.iter().filter(|t| t.attempts == 2).count(),
        cut.len(),
        "the cut tasks, and only they, ran twice"
    );
    assert!(
        left_after < Duration::from_secs(20),
        "the pilot left {left_after:?} after scancel"
    );
    wait_for("Slurm to end the cancelled job", Duration::from_secs(60), || {
        (pilots.job_state(victim) == "CANCELLED").then_some(())
    });
    // `pilot status` says so too, and the other pilot runs.
    let out = bin()
        .current_dir(dir.path())
        .args(["pilot", "status", "--state", &pilots.state()])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state_of = |job: u64| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(job.to_string().as_str()))
            .and_then(|l| l.split_whitespace().nth(2))
            .map(str::to_owned)
    };
    assert_eq!(state_of(victim).as_deref(), Some("CANCELLED"), "{table}");
    assert_eq!(state_of(ids[1]).as_deref(), Some("RUNNING"), "{table}");
    assert!(table.contains("2 pilots, 1 running (2 slots)"), "{table}");
}

#[test]
fn a_pilot_drains_before_its_wall_time_and_exits_cleanly() {
    if !slurm_up() {
        return;
    }
    let _cluster = crate::common::slurm_exclusive();
    const TASKS: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    let (started, done) = (dir.path().join("started"), dir.path().join("done"));
    let broker = Broker::start(dir.path(), "fifo", "30s");
    broker.add_org("lab");
    let user = broker.add_user("bob", "lab");
    let token = broker.worker_token("lab");
    let mut pilots = Pilots::new(dir.path());
    // A minute of wall time, draining 50 s before its end: after ~10 s.
    let short = pilots.submit(&broker, &token, 1, 2, &["--time", "1:00", "--drain-before", "50"])[0];
    let long = pilots.submit(&broker, &token, 1, 2, &["--time", "10:00"])[0];
    broker.wait_slots(4);
    let commands = marked(TASKS, 2, &started, &done);
    let api = broker.api();
    api.submit(&user, &commands);
    wait_for(
        "the short pilot to drain and leave",
        Duration::from_secs(55),
        || (api.status(&broker.admin).slots == 2).then_some(()),
    );
    wait_for(
        "Slurm to see the short pilot end",
        Duration::from_secs(30),
        || {
            let s = pilots.job_state(short);
            (!s.is_empty() && s != "RUNNING" && s != "COMPLETING").then_some(s)
        },
    );
    assert_eq!(
        pilots.job_state(short),
        "COMPLETED",
        "the drained pilot exits 0 before its time limit; its output:\n{}",
        pilots.output(short)
    );
    broker.wait_idle(Duration::from_secs(120));
    let tasks = broker.tasks();
    for t in &tasks {
        assert_eq!((t.state.as_str(), t.attempts), ("completed", 1), "task {}", t.id);
    }
    // No run was cut: everything the short pilot started, it finished.
    let on_short = |f: &Path| -> BTreeSet<usize> {
        marks(f)
            .iter()
            .filter(|&&(_, j)| j == short)
            .map(|&(t, _)| t)
            .collect()
    };
    let (s, d) = (on_short(&started), on_short(&done));
    assert!(!s.is_empty(), "the short pilot ran tasks before draining");
    assert_eq!(s, d, "the short pilot finished every run it started");
    assert!(marks(&done).iter().any(|&(_, j)| j == long));
    assert_eq!(marks(&done).len(), TASKS);
    println!(
        "pilot {short} ran {} tasks, drained and exited; pilot {long} ran {}",
        s.len(),
        TASKS - s.len()
    );
    let log = pilots.output(short);
    assert!(
        log.contains("draining"),
        "the pilot's log says it drained:\n{log}"
    );
}
