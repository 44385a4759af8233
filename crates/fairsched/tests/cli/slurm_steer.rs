//! `fairsched slurm steer` over the real single-node Slurm `.ci/run`
//! starts (16 CPUs; accounting; accounts physics with alice and bob,
//! chemistry with carol and dave; priority/multifactor with fair-share
//! weight 10,000 and age 1,000).
//!
//! (a) Flood and trickle, side by side on identical submissions: alice
//!     (physics) submits 48 jobs of 4 s, carol (chemistry) 4 jobs a moment
//!     later. Plain Slurm (its own fair share, usage reset before) runs
//!     carol's behind the flood; steered under fair-share, and under
//!     direct-contr with each account owning half, carol's start in the
//!     first processors that free up, and their mean wait falls by at
//!     least 2×.
//! (b) Values stick: after a cycle `sprio` shows the factor the controller
//!     wanted for every pending job; one changed behind its back is put
//!     back, and counted, the next cycle.
//! (c) Restart: killed with SIGKILL between cycles, it resumes from its
//!     log (the cycle count goes on) and, the queue unchanged, changes no
//!     factor: it decides what it had decided.
//! (d) `--dry-run` changes nothing; `--reset` leaves every factor at 0.
//! (e) Bad input: no Slurm tools, output that does not parse, a Slurm
//!     without multifactor, an account without operator rights: a clear
//!     error or a logged skip, never a crash.
//!
//! Without Slurm each test says so and returns, unless
//! FAIRSCHED_SLURM=required (as `.ci/run` sets).

use crate::common::{Proc, bin, slurm_exclusive, slurm_up, wait_for};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PLATFORM: &str = "[[org]]\nname = \"physics\"\nprocs = 8\nusers = []\n\n[[org]]\nname = \"chemistry\"\nprocs = 8\nusers = []\n";

fn tool(prog: &str, args: &[&str]) -> String {
    let out = Command::new(prog)
        .args(args)
        .env("SLURM_TIME_FORMAT", "%s")
        .output()
        .unwrap_or_else(|e| panic!("{prog}: {e}"));
    assert!(
        out.status.success(),
        "{prog} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Submits `n` jobs of `sleep secs` as `user` in `account`; their ids.
fn submit(user: &str, account: &str, n: usize, secs: u32) -> Vec<String> {
    let uid = format!("--uid={user}");
    let wrap = format!("sleep {secs}");
    (0..n)
        .map(|_| {
            tool(
                "sbatch",
                &[
                    "--parsable",
                    &uid,
                    "-A",
                    account,
                    "-t",
                    "5",
                    "-o",
                    "/dev/null",
                    "--wrap",
                    &wrap,
                ],
            )
            .trim()
            .to_owned()
        })
        .collect()
}

/// Waits until Slurm has no pending or running job.
fn wait_idle(timeout: Duration) {
    wait_for("an idle Slurm", timeout, || {
        tool("squeue", &["-h", "-o", "%i"])
            .trim()
            .is_empty()
            .then_some(())
    });
}

fn cancel_all() {
    for u in ["alice", "bob", "carol", "dave"] {
        let _ = Command::new("scancel").args(["-u", u]).status();
    }
}

/// `(submit, start)` of each job, in Unix seconds (squeue keeps finished
/// jobs for MinJobAge, 300 s by default).
fn times(ids: &[String]) -> Vec<(i64, i64)> {
    let list = ids.join(",");
    let out = tool("squeue", &["-h", "-t", "all", "-j", &list, "-o", "%i|%V|%S"]);
    let by: BTreeMap<String, (i64, i64)> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split('|').collect();
            Some((f[0].to_owned(), (f[1].parse().ok()?, f[2].parse().ok()?)))
        })
        .collect();
    ids.iter()
        .map(|id| {
            *by.get(id)
                .unwrap_or_else(|| panic!("job {id} not in squeue: {out}"))
        })
        .collect()
}

fn mean_wait(t: &[(i64, i64)]) -> f64 {
    t.iter().map(|(s, b)| (b - s) as f64).sum::<f64>() / t.len() as f64
}

/// The controller, running every second.
fn controller(dir: &Path, policy: &str, extra: &[&str]) -> Proc {
    let platform = dir.join("site.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    let mut cmd = bin();
    cmd.args([
        "slurm",
        "steer",
        "--policy",
        policy,
        "--every",
        "1s",
        "--platform",
    ])
    .arg(&platform)
    .arg("--db")
    .arg(dir.join("steer.db"))
    .arg("--metrics")
    .arg(dir.join("steer.prom"))
    .args(extra)
    .stdout(Stdio::from(std::fs::File::create(dir.join("steer.out")).unwrap()))
    .stderr(Stdio::from(std::fs::File::create(dir.join("steer.err")).unwrap()));
    let p = Proc::spawn("fairsched slurm steer", &mut cmd, Some(Duration::from_secs(5)));
    wait_for("the controller's first cycle", Duration::from_secs(30), || {
        dir.join("steer.prom").exists().then_some(())
    });
    p
}

fn steer_once(dir: &Path, args: &[&str]) -> Output {
    let platform = dir.join("site.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    bin()
        .args(["slurm", "steer", "--policy", "fcfs", "--platform"])
        .arg(&platform)
        .arg("--db")
        .arg(dir.join("steer.db"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The physics account's raw usage in Slurm's fair share (sshare).
fn physics_usage() -> f64 {
    tool(
        "sshare",
        &["-n", "-P", "-A", "physics", "-o", "Account,User,RawUsage"],
    )
    .lines()
    .filter_map(|l| {
        let f: Vec<&str> = l.split('|').collect();
        (f.len() == 3 && f[1].is_empty()).then(|| f[2].trim().parse::<f64>().ok())?
    })
    .next()
    .unwrap_or(0.0)
}

struct Run {
    /// When it began, as sacct's --since takes it.
    since: String,
    flood: Vec<(i64, i64)>,
    trickle: Vec<(i64, i64)>,
    /// Slurm recalculated its fair share (a PriorityCalcPeriod tick)
    /// before the first processors freed up.
    early_tick: bool,
}

/// alice floods, carol trickles, on an idle cluster whose fair-share
/// usage was reset; `steer` runs the controller meanwhile.
fn flood_and_trickle(steer: Option<&str>) -> Run {
    wait_idle(Duration::from_secs(120));
    for a in ["physics", "chemistry"] {
        tool("sacctmgr", &["-i", "modify", "account", a, "set", "RawUsage=0"]);
    }
    // The reset zeroes the raw usage; the effective usage that Slurm's fair
    // share ranks by follows at its next recalculation (PriorityCalcPeriod,
    // a minute here). Until then a user who ran jobs before (another
    // test's) would still rank below carol. Steered runs need not wait:
    // the site factor outweighs every factor of Slurm's own.
    if steer.is_none() {
        wait_for(
            "Slurm's fair share to fold in the reset",
            Duration::from_secs(90),
            || {
                tool("sshare", &["-n", "-P", "-a", "-o", "Account,User,EffectvUsage"])
                    .lines()
                    .filter(|l| l.contains("physics") || l.contains("chemistry"))
                    .all(|l| l.rsplit('|').next().and_then(|u| u.trim().parse::<f64>().ok()) == Some(0.0))
                    .then_some(())
            },
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let ctl = steer.map(|p| controller(dir.path(), p, &[]));
    // sacct's --since is to the second and takes the jobs that ended in
    // that second too: the previous run's last jobs, which ended just
    // before wait_idle returned, must end in an earlier second.
    std::thread::sleep(Duration::from_millis(1100));
    let since = tool("date", &["+%Y-%m-%dT%H:%M:%S"]).trim().to_owned();
    let t0 = Instant::now();
    let flood = submit("alice", "physics", 48, 4);
    std::thread::sleep(Duration::from_millis(1500));
    let trickle = submit("carol", "chemistry", 4, 4);
    // Whether Slurm folded the flood's usage into its fair share before
    // carol's first job started (then plain Slurm, too, would favour
    // her). Watched until that start, however long the first wave takes
    // on a loaded machine (a fixed 5 s once missed a tick at 5.5 s); a
    // tick in the same look as the start counts as early.
    let mut early_tick = false;
    while t0.elapsed() < Duration::from_secs(60) {
        early_tick |= physics_usage() > 0.0;
        let pending = tool("squeue", &["-h", "-t", "PD", "-u", "carol", "-o", "%i"]);
        if pending.lines().count() < trickle.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    wait_idle(Duration::from_secs(120));
    drop(ctl);
    Run {
        since,
        flood: times(&flood),
        trickle: times(&trickle),
        early_tick,
    }
}

#[test]
fn under_steering_the_trickle_passes_the_flood() {
    if !slurm_up() {
        return;
    }
    let _cluster = slurm_exclusive();
    cancel_all();
    // Plain Slurm: if its fair-share recalculation happened to fall before
    // carol's first job started, the run shows a trickle arriving just
    // after one; the test is about one arriving between two
    // (PriorityCalcPeriod is a minute here, the run 15 s): it runs again,
    // right after a recalculation (the wait for the usage reset ends at
    // one), up to twice.
    let mut plain = flood_and_trickle(None);
    for _ in 0..2 {
        if !plain.early_tick {
            break;
        }
        eprintln!("plain Slurm recalculated its fair share before carol's first job started: run again");
        plain = flood_and_trickle(None);
    }
    assert!(
        !plain.early_tick,
        "plain Slurm recalculated its fair share early in three runs in a row"
    );
    let plain_wait = mean_wait(&plain.trickle);
    for policy in ["fair-share", "direct-contr"] {
        let steered = flood_and_trickle(Some(policy));
        let wait = mean_wait(&steered.trickle);
        eprintln!(
            "flood and trickle: carol's mean wait {plain_wait:.1} s under plain Slurm, {wait:.1} s steered by {policy} \
             ({:.1}x); alice's {:.1} s and {:.1} s",
            plain_wait / wait.max(0.5),
            mean_wait(&plain.flood),
            mean_wait(&steered.flood)
        );
        // Carol's jobs start next: in the first wave of processors that
        // free up after they are submitted (16 of alice's jobs were
        // running then; at most 12 more of alice's may start before them).
        let submitted = steered.trickle.iter().map(|t| t.0).max().unwrap();
        let last = steered.trickle.iter().map(|t| t.1).max().unwrap();
        let before = steered
            .flood
            .iter()
            .filter(|(_, start)| *start > submitted && *start < last)
            .count();
        assert!(
            before <= 12,
            "{policy}: {before} of alice's jobs started between carol's submission and her last start"
        );
        assert!(
            wait * 2.0 <= plain_wait,
            "{policy}: carol waited {wait:.1} s steered, {plain_wait:.1} s under plain Slurm"
        );
        if policy == "fair-share" {
            history_replays(&steered);
        }
    }
}

/// A workflow as a site submits one: a first job (`split`, 2 s), then
/// `width` jobs (`align`, `secs` s each) that wait for it (`afterok`).
/// Its job ids, the first job's first.
fn submit_workflow(user: &str, account: &str, width: usize, secs: u32) -> Vec<String> {
    let uid = format!("--uid={user}");
    let sbatch = |extra: &[&str], wrap: &str| {
        let mut args = vec!["--parsable", &uid, "-A", account, "-t", "5", "-o", "/dev/null"];
        args.extend_from_slice(extra);
        args.extend(["--wrap", wrap]);
        tool("sbatch", &args).trim().to_owned()
    };
    let root = sbatch(&["-J", "split"], "sleep 2");
    let after = format!("--dependency=afterok:{root}");
    let wrap = format!("sleep {secs}");
    let mut ids = vec![root.clone()];
    ids.extend((0..width).map(|_| sbatch(&["-J", "align", &after], &wrap)));
    ids
}

/// Two workflows of alice: the first wide (80 jobs after its first, 5
/// waves of the 16 CPUs), the second (8 after its first) submitted once
/// the first's jobs run. When the first's last job started, and the
/// second's first.
fn two_workflows(control: Option<&str>) -> (i64, i64) {
    wait_idle(Duration::from_secs(120));
    let dir = tempfile::tempdir().unwrap();
    let ctl = control.map(|c| controller(dir.path(), "workflow-fcfs", &["--control", c]));
    let first = submit_workflow("alice", "physics", 80, 3);
    wait_for("the first workflow's first wave", Duration::from_secs(60), || {
        (tool("squeue", &["-h", "-t", "R", "-u", "alice", "-o", "%i"])
            .lines()
            .count()
            >= 16)
            .then_some(())
    });
    let second = submit_workflow("alice", "physics", 8, 3);
    if ctl.is_some() {
        // The first's last job still waits: explain names its workflow
        // (by the first job's number) and its activity (the job's name).
        std::thread::sleep(Duration::from_secs(2));
        let last = first.last().unwrap();
        let o = bin()
            .args(["slurm", "explain", last, "--db"])
            .arg(dir.path().join("steer.db"))
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(
            out.contains(&format!("workflow of job {} ", first[0]))
                && out.contains("activity \"align\"")
                && out.contains("eta_u"),
            "{out}"
        );
    }
    wait_idle(Duration::from_secs(180));
    drop(ctl);
    let last = times(&first).iter().map(|t| t.1).max().unwrap();
    (last, times(&second[..1])[0].1)
}

/// The workflow-fairness Control over Slurm dependency chains: plain
/// Slurm starts a workflow submitted second behind every job of the
/// first (equal priorities, lower job numbers first); steered by
/// `workflow-fcfs` with the Control, the second's first job is raised
/// (all of its workflow's work is pending) and starts while jobs of the
/// first still wait.
#[test]
fn dependency_chains_are_steered_as_workflows() {
    if !slurm_up() {
        return;
    }
    let _cluster = slurm_exclusive();
    cancel_all();
    let (plain_last, plain_second) = two_workflows(None);
    let (last, second) = two_workflows(Some("workflow-fairness[tau=0.05]"));
    eprintln!(
        "two workflows: the second's first job started {} s after the first's last under plain Slurm, {} s before it steered",
        plain_second - plain_last,
        last - second
    );
    assert!(
        plain_second >= plain_last,
        "plain Slurm: {plain_second} against {plain_last}"
    );
    assert!(
        second < last,
        "steered: the second's first job started at {second}, the first's last at {last}"
    );
}

/// `slurm history` of a run's jobs: an SWF log that `trace info` reads,
/// with sacct's users, accounts, sizes and times, and that `simulate`
/// replays with the platform file it wrote.
fn history_replays(run: &Run) {
    let dir = tempfile::tempdir().unwrap();
    let (swf, platform) = (dir.path().join("site.swf"), dir.path().join("site.toml"));
    std::thread::sleep(Duration::from_secs(1)); // sacct's last records
    let o = bin()
        .args(["slurm", "history", "--since", &run.since, "--swf"])
        .arg(&swf)
        .arg("--platform")
        .arg(&platform)
        .output()
        .unwrap();
    ok(&o);
    let info = ok(&bin().args(["trace", "info"]).arg(&swf).output().unwrap());
    assert!(info.contains("jobs           52 kept of 52"), "{info}");
    assert!(info.contains("users          2 "), "{info}");
    let text = std::fs::read_to_string(&swf).unwrap();
    let jobs: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|f| f.parse().unwrap()).collect())
        .collect();
    // Each job's wait as squeue gave it (start - submit), its size 1, its
    // limit 5 minutes, and alice's 48 jobs under one account, carol's 4
    // under the other.
    let waits: BTreeMap<i64, i64> = run
        .flood
        .iter()
        .chain(&run.trickle)
        .map(|(s, b)| b - s)
        .enumerate()
        .map(|(i, w)| (i as i64, w))
        .collect();
    assert_eq!(jobs.len(), waits.len());
    let mut by_group: BTreeMap<i64, usize> = BTreeMap::new();
    for j in &jobs {
        assert_eq!((j[4], j[7], j[8]), (1, 1, 300), "{j:?}");
        assert!((3..=6).contains(&j[3]), "run time {j:?}");
        *by_group.entry(j[12]).or_default() += 1;
    }
    assert_eq!(
        by_group.values().copied().collect::<Vec<_>>(),
        vec![48, 4],
        "{by_group:?}"
    );
    let mut swf_waits: Vec<i64> = jobs.iter().map(|j| j[2]).collect();
    let mut ours: Vec<i64> = waits.values().copied().collect();
    swf_waits.sort_unstable();
    ours.sort_unstable();
    assert_eq!(swf_waits, ours);
    let out = tempfile::tempdir().unwrap();
    let sim = bin()
        .args(["simulate", "--no-progress", "--policy", "fair-share", "--trace"])
        .arg(&swf)
        .arg("--platform")
        .arg(&platform)
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    ok(&sim);
    let tasks = std::fs::read_to_string(out.path().join("tasks.csv")).unwrap();
    assert_eq!(tasks.lines().count(), 1 + 52);
    // And how fair the recorded schedule was.
    let score = score(&swf, &platform);
    assert!(
        score.contains("52 jobs scored") && score.contains("Jain's index"),
        "{score}"
    );
}

/// The controller's wanted factor of each pending job, from its database.
fn wanted(db: &Path) -> BTreeMap<String, i64> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut q = c
        .prepare("SELECT record, wanted FROM steer_jobs WHERE running = 0 AND wanted IS NOT NULL")
        .unwrap();
    q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn sprio() -> BTreeMap<String, i64> {
    tool("sprio", &["-h", "-o", "%i|%S"])
        .lines()
        .filter_map(|l| {
            let (a, b) = l.trim().split_once('|')?;
            Some((a.to_owned(), b.trim().parse().ok()?))
        })
        .collect()
}

/// A full cluster: bob's 16-CPU job runs, alice's and carol's wait.
fn full_cluster() -> Vec<String> {
    let mut ids = Vec::new();
    ids.extend(
        tool(
            "sbatch",
            &[
                "--parsable",
                "--uid=bob",
                "-A",
                "physics",
                "-n",
                "16",
                "-t",
                "5",
                "-o",
                "/dev/null",
                "--wrap",
                "sleep 120",
            ],
        )
        .lines()
        .map(|l| l.trim().to_owned()),
    );
    wait_for("bob's job to run", Duration::from_secs(30), || {
        tool("squeue", &["-h", "-t", "R", "-u", "bob", "-o", "%i"])
            .contains(&ids[0])
            .then_some(())
    });
    ids.extend(submit("alice", "physics", 6, 1));
    ids.extend(submit("carol", "chemistry", 3, 1));
    ids
}

#[test]
fn factors_stick_survive_a_kill_and_a_dry_run_and_reset_change_what_they_say() {
    if !slurm_up() {
        return;
    }
    let _cluster = slurm_exclusive();
    cancel_all();
    wait_idle(Duration::from_secs(120));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("steer.db");
    let _jobs = full_cluster();
    // (d) A dry run changes nothing, and writes no database.
    let before = sprio();
    let dry = ok(&steer_once(dir.path(), &["--dry-run"]));
    assert!(dry.contains("9 site factors would change"), "{dry}");
    assert!(
        dry.contains("(alice, physics, rank ") && dry.contains("(carol, chemistry, rank "),
        "each job with its user, account and rank: {dry}"
    );
    assert!(
        dry.lines().filter(|l| l.starts_with("job ")).count() == 9,
        "{dry}"
    );
    assert_eq!(sprio(), before, "a dry run changed site factors");
    assert!(!db.exists(), "a dry run wrote {}", db.display());

    // (b) One cycle: sprio shows every factor wanted.
    let out = ok(&steer_once(dir.path(), &["--cycles", "1"]));
    assert!(out.contains("cycle 1: 9 pending, 1 running"), "{out}");
    let want = wanted(&db);
    assert_eq!(want.len(), 9);
    let seen = sprio();
    for (job, w) in &want {
        assert_eq!(
            seen.get(job),
            Some(w),
            "job {job}: sprio {seen:?}, wanted {want:?}"
        );
    }
    // Changed behind its back: put back, and counted, next cycle.
    let (victim, good) = want.iter().nth(4).map(|(j, w)| (j.clone(), *w)).unwrap();
    tool(
        "scontrol",
        &["update", &format!("JobId={victim}"), "SiteFactor=5"],
    );
    let out = ok(&steer_once(dir.path(), &["--cycles", "1"]));
    assert!(out.contains("1 update in 1 scontrol call, 1 not stuck"), "{out}");
    assert_eq!(sprio().get(&victim), Some(&good));

    // (c) Killed with SIGKILL while it runs: restarted, it goes on from its
    // log and, the queue unchanged, changes nothing.
    let mut ctl = controller(dir.path(), "fcfs", &[]);
    wait_for("two cycles", Duration::from_secs(30), || {
        std::fs::read_to_string(dir.path().join("steer.out"))
            .ok()
            .filter(|s| s.lines().filter(|l| l.starts_with("cycle")).count() >= 2)
    });
    ctl.kill9();
    let cycles = std::fs::read_to_string(dir.path().join("steer.out"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cycle"))
        .count();
    let out = ok(&steer_once(dir.path(), &["--cycles", "1"]));
    let n = 3 + cycles;
    assert!(
        out.contains(&format!(
            "cycle {n}: 9 pending, 1 running; 0 submitted, 0 started, 0 ended; 0 updates"
        )),
        "after {cycles} cycles and a kill: {out}"
    );
    assert_eq!(wanted(&db), want);

    // Explain: the job's rank, its factor, whether it stuck.
    let first = want.keys().next().unwrap().clone();
    let job = squeue_id(&first);
    let out = ok(&bin()
        .args(["slurm", "explain", &job, "--db"])
        .arg(&db)
        .output()
        .unwrap());
    assert!(out.contains(&format!("job {job} of user")), "{out}");
    assert!(
        out.contains("rank at the last cycle:") && out.contains("it stuck"),
        "{out}"
    );

    // (d) Reset: every factor back to 0.
    let out = ok(&steer_once(dir.path(), &["--reset"]));
    assert!(out.contains("reset"), "{out}");
    assert!(sprio().values().all(|&v| v == 0), "{:?}", sprio());
    cancel_all();
}

/// A script standing in for one Slurm tool.
fn fake_tool(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn bad_slurms_get_clear_errors_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |env: &[(&str, &Path)], args: &[&str]| -> Output {
        let mut c = bin();
        c.args(["slurm", "steer", "--db"])
            .arg(d.join("bad.db"))
            .args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let text = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    // No Slurm tools.
    let o = run(
        &[("FAIRSCHED_SCONTROL", Path::new("/nonexistent/scontrol"))],
        &["--cycles", "1"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("not found") && text(&o).contains("FAIRSCHED_SCONTROL"),
        "{}",
        text(&o)
    );
    // A Slurm without multifactor.
    let basic = fake_tool(d, "scontrol", "echo 'PriorityType = priority/basic'");
    let o = run(&[("FAIRSCHED_SCONTROL", &basic)], &["--cycles", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("priority/multifactor"), "{}", text(&o));
    assert!(!d.join("bad.db").exists());
    // A policy the controller cannot run.
    let o = run(&[], &["--policy", "ref", "--cycles", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("clairvoyant"), "{}", text(&o));
    // No controller database to explain or reset; not a job id.
    let refused = |args: &[&str], says: &str| {
        let o = bin()
            .args(args)
            .arg("--db")
            .arg(d.join("none.db"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    };
    refused(&["slurm", "explain", "42"], "no such controller database");
    refused(&["slurm", "steer", "--reset"], "nothing to reset");
    refused(&["slurm", "explain", "4x2"], "not a Slurm job id");

    if !slurm_up() {
        return;
    }
    let _cluster = slurm_exclusive();
    // squeue printing what does not parse: the cycle is skipped, logged,
    // with its line and field; nothing is applied.
    let garbage = fake_tool(
        d,
        "squeue",
        "echo '12|12|alice|physics|x|5:00|PENDING|Priority|(null)|wrap'",
    );
    let o = run(
        &[("FAIRSCHED_SQUEUE", &garbage)],
        &["--cycles", "1", "--platform", &write_platform(d)],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("cycle skipped") && text(&o).contains("field 5"),
        "{}",
        text(&o)
    );
    // An account without operator rights: alice may not set factors.
    cancel_all();
    wait_idle(Duration::from_secs(120));
    let _jobs = full_cluster();
    // A folder alice owns, for her database and platform file.
    let mine = std::env::temp_dir().join(format!("fairsched-steer-alice-{}", std::process::id()));
    std::fs::create_dir_all(&mine).unwrap();
    assert!(
        Command::new("chown")
            .arg("alice")
            .arg(&mine)
            .status()
            .unwrap()
            .success()
    );
    let platform = write_platform(&mine);
    let o = Command::new("runuser")
        .args(["-u", "alice", "--"])
        .arg(env!("CARGO_BIN_EXE_fairsched"))
        .args([
            "slurm",
            "steer",
            "--policy",
            "fcfs",
            "--cycles",
            "1",
            "--platform",
            &platform,
            "--db",
        ])
        .arg(mine.join("steer.db"))
        .env("FAIRSCHED_LOG", "warn")
        .current_dir(&mine)
        .output()
        .unwrap();
    let err = text(&o);
    let _ = std::fs::remove_dir_all(&mine);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("operator rights"), "{err}");
    cancel_all();
}

fn write_platform(d: &Path) -> String {
    let p = d.join("site.toml");
    std::fs::write(&p, PLATFORM).unwrap();
    p.display().to_string()
}

/// `slurm score` of a schedule written by hand: two organizations of 2
/// processors each; the first got 3/4 of the processor time.
#[test]
fn score_measures_a_recorded_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let swf = dir.path().join("s.swf");
    // job submit wait run procs ... user(12)
    let line = |n: u32, submit: u32, wait: u32, run: u32, user: u32| {
        format!("{n} {submit} {wait} {run} 1 -1 -1 1 -1 -1 1 {user} -1 -1 -1 -1 -1 -1\n")
    };
    let text = format!(
        "; MaxProcs: 4\n{}{}{}{}",
        line(1, 0, 0, 300, 1),
        line(2, 0, 0, 300, 1),
        line(3, 0, 0, 300, 1),
        line(4, 0, 0, 100, 2)
    );
    std::fs::write(&swf, text).unwrap();
    let platform = dir.path().join("p.toml");
    std::fs::write(
        &platform,
        "[[org]]\nname = \"a\"\nprocs = 2\nusers = [1]\n\n[[org]]\nname = \"b\"\nprocs = 2\nusers = [2]\n",
    )
    .unwrap();
    let out = score(&swf, &platform);
    assert!(out.contains("4 jobs scored"), "{out}");
    assert!(out.contains("90.0%") && out.contains("10.0%"), "{out}");
    // Ratios 1.8 and 0.2: J = 4 / (2 * 3.28) = 0.6098.
    assert!(out.contains("organizations: 0.6098"), "{out}");
    assert!(out.contains("sum |phi - psi| / p_tot"), "{out}");
    // A user no organization lists: named.
    std::fs::write(&platform, "[[org]]\nname = \"a\"\nprocs = 4\nusers = [1]\n").unwrap();
    let o = bin()
        .args(["slurm", "score"])
        .arg(&swf)
        .arg("--platform")
        .arg(&platform)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("user 2"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `fairsched slurm score LOG --platform FILE --phi`'s output.
fn score(swf: &Path, platform: &Path) -> String {
    ok(&bin()
        .args(["slurm", "score"])
        .arg(swf)
        .arg("--platform")
        .arg(platform)
        .arg("--phi")
        .output()
        .unwrap())
}

/// The job id squeue shows for a job record (the same for plain jobs).
fn squeue_id(record: &str) -> String {
    tool("squeue", &["-h", "-j", record, "-o", "%i"])
        .trim()
        .to_owned()
}

/// `slurm replay --dry-run` of a real log's window: one sbatch line per
/// job the window holds, nothing submitted (no Slurm needed).
#[test]
fn a_replay_dry_run_prints_what_the_window_holds() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/KTH-SP2-1996-2.1-cln.swf.gz");
    let out_dir = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["slurm", "replay"])
        .arg(&log)
        .args(["--window", "599850,7200", "--speedup", "60", "--dry-run", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let out = ok(&o);
    // The jobs of the log submitted in [599850, 607050).
    let text = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&log).unwrap())
            .read_to_string(&mut s)
            .unwrap();
        s
    };
    let expected = text
        .lines()
        .filter(|l| !l.starts_with(';'))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<i64>().ok())
        .filter(|s| (599_850..607_050).contains(s))
        .count();
    assert!(expected > 3, "{expected}");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("sbatch ")).collect();
    assert_eq!(lines.len(), expected, "{out}");
    assert!(lines.iter().all(|l| l.contains("--wrap 'sleep ")), "{out}");
}
