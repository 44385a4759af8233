//! `fairsched optional`, the Diet-ethic client, against a live broker
//! running the `diet-ethic` policy, real processes on 127.0.0.1: two users
//! sharing one 2-slot worker both get their mandatory requests by the
//! deadline and fair shares of the optional ones, and leave nothing behind;
//! a signal still cancels what is in flight; wrong command lines exit 2.

use crate::common::{Broker, bin, free_port, run_in, wait_for};
use fairsched_broker::api::TaskOut;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// `fairsched optional ARGS -- CMD` as `token`, started (not waited for).
fn optional(broker: &Broker, token: &str, args: &[&str], cmd: &[&str]) -> Child {
    bin()
        .current_dir(&broker.dir)
        .args(["optional", "--broker", &broker.url, "--token", token, "--json"])
        .args(args)
        .arg("--")
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fairsched optional starts")
}

fn summary(who: &str, o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{who}: no JSON summary ({e}); stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The most requests of `tasks` submitted and not yet ended at any one
/// instant (an end and a submission at the same millisecond: the end first,
/// since the client submits a replacement only after it saw the end).
fn most_in_flight(tasks: &[&TaskOut]) -> usize {
    let mut events: Vec<(i64, i32)> = Vec::new();
    for t in tasks {
        events.push((t.submit_ms, 1));
        events.push((t.end_ms.expect("ended"), -1));
    }
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn two_users_both_end_happy_with_fair_optional_shares() {
    const SLOTS: u64 = 2;
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "diet-ethic", "30s");
    broker.add_org("lab");
    let names = ["ann", "bob"];
    let tokens: Vec<String> = names.iter().map(|n| broker.add_user(n, "lab")).collect();
    let wtoken = broker.worker_token("lab");
    let _worker = broker.worker("w", &wtoken, SLOTS as u32, &dir.path().join("wd"), "process");
    broker.wait_slots(SLOTS);

    let started = Instant::now();
    let children: Vec<Child> = tokens
        .iter()
        .map(|t| {
            optional(
                &broker,
                t,
                &[
                    "--min",
                    "2",
                    "--max",
                    "20",
                    "--deadline",
                    "4s",
                    "--name",
                    "{kind}-{i}",
                ],
                &["sleep", "0.3"],
            )
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let took = started.elapsed();

    let api = broker.api();
    let all = broker.tasks();
    let mut optional_done = Vec::new();
    for ((name, token), o) in names.iter().zip(&tokens).zip(&outs) {
        assert!(
            o.status.success(),
            "{name}: {:?}; stderr {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        let s = summary(name, o);
        println!("{name}: {s}");
        // Happy: both mandatory requests completed by the deadline.
        assert_eq!(s["happy"], true, "{name}: {s}");
        assert_eq!(s["mandatory"]["completed"], 2, "{name}: {s}");
        assert!(
            s["mandatory"]["last_completed_s"].as_f64().unwrap() <= 4.0,
            "{name}: {s}"
        );
        assert!(
            s["elapsed_s"].as_f64().unwrap() >= 4.0,
            "{name} left before its deadline: {s}"
        );
        assert_eq!(s["slots"], SLOTS, "{name}: {s}");
        let done = s["optional"]["completed"].as_u64().unwrap();
        assert!(done >= 2, "{name} completed {done} optional requests: {s}");
        optional_done.push(done);

        // Nothing of theirs is left waiting or running.
        let st = api.status(token);
        assert_eq!((st.waiting, st.running), (0, 0), "{name}: {st:?}");

        // The broker agrees with the summary; the client kept to its bounds.
        let user = api.tasks(token)[0].user;
        let mine: Vec<&TaskOut> = all.iter().filter(|t| t.user == user).collect();
        assert!(
            mine.len() <= 20,
            "{name} submitted {} requests (--max 20)",
            mine.len()
        );
        let kind = |k: &str| -> Vec<&TaskOut> {
            mine.iter()
                .copied()
                .filter(|t| t.name.starts_with(&format!("{k}-")))
                .collect()
        };
        let (mand, opt) = (kind("mandatory"), kind("optional"));
        assert_eq!(mand.len() + opt.len(), mine.len(), "names: {mine:?}");
        assert_eq!(mand.len(), 2, "{name}: {mand:?}");
        assert!(mand.iter().all(|t| t.state == "completed"), "{name}: {mand:?}");
        let opt_completed = opt.iter().filter(|t| t.state == "completed").count() as u64;
        assert_eq!(
            opt_completed, done,
            "{name}: the broker's count of completed optional requests"
        );
        assert_eq!(
            s["cancelled"].as_u64().unwrap(),
            opt.iter().filter(|t| t.state == "cancelled").count() as u64,
            "{name}: {s}"
        );
        // One optional request per slot of the pool at most, as the
        // paper's one per server.
        let most = most_in_flight(&opt);
        assert!(
            most <= SLOTS as usize,
            "{name} had {most} optional requests in flight at once"
        );
        // Its `{i}`: 0 and 1 mandatory, then the optional ones in order.
        let mut idx: Vec<u64> = mine
            .iter()
            .map(|t| t.name.rsplit('-').next().unwrap().parse().unwrap())
            .collect();
        idx.sort();
        assert_eq!(idx, (0..mine.len() as u64).collect::<Vec<_>>(), "{name}");
    }

    // Fairness. The pool's queue runs the optional request of the user
    // with the least server time allocated so far, so while both users have
    // one waiting their allocated time stays within about one request per
    // slot (SLOTS × 0.3 s) of each other; identical requests make that at
    // most SLOTS completed requests apart. Each client also ends with up to
    // SLOTS requests in flight that are cancelled, and the two clients poll
    // unsynchronised (each sees completions up to a poll later): at most
    // SLOTS more. So the counts may differ by 2 × SLOTS = 4 at most; a queue
    // or a client that favoured one user (fifo order with one client
    // submitting first, a client keeping more than one optional request
    // per slot) drifts past that within the 4 s.
    let (a, b) = (optional_done[0], optional_done[1]);
    assert!(
        a.abs_diff(b) <= 2 * SLOTS,
        "optional requests completed: {a} and {b}, more than {} apart",
        2 * SLOTS
    );
    println!("optional completed {a} and {b}; both clients done in {took:?}");
}

#[test]
fn a_signal_cancels_what_is_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "diet-ethic", "30s");
    broker.add_org("lab");
    let token = broker.add_user("ann", "lab");
    let wtoken = broker.worker_token("lab");
    let _worker = broker.worker("w", &wtoken, 1, &dir.path().join("wd"), "process");
    broker.wait_slots(1);
    let api = broker.api();

    let child = optional(
        &broker,
        &token,
        &["--min", "1", "--max", "5", "--deadline", "60s", "--poll", "100ms"],
        &["sleep", "30"],
    );
    // The mandatory request runs; the optional one waits behind it.
    wait_for("the mandatory request to run", Duration::from_secs(20), || {
        let st = api.status(&token);
        (st.running == 1 && st.waiting == 1).then_some(())
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "stderr {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("interrupted"),
        "stderr {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary("ann", &o);
    assert_eq!(s["interrupted"], true, "{s}");
    assert_eq!(s["happy"], false, "{s}");
    assert_eq!(s["cancelled"], 2, "{s}");
    let st = api.status(&token);
    assert_eq!((st.waiting, st.running, st.cancelled), (0, 0, 2), "{st:?}");
}

#[test]
fn wrong_command_lines_exit_2_and_an_absent_broker_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    let run = |args: &[&str]| {
        let mut all = vec!["optional", "--broker", &url, "--token", "t"];
        all.extend_from_slice(args);
        run_in(dir.path(), &all)
    };
    for (args, says) in [
        (
            &["--min", "3", "--max", "2", "--deadline", "4s", "--", "true"][..],
            "--min 3 > --max 2",
        ),
        (
            &["--min", "0", "--max", "2", "--deadline", "4s", "--", "true"][..],
            "--min",
        ),
        (
            &["--min", "1", "--max", "2", "--deadline", "0s", "--", "true"][..],
            "--deadline",
        ),
        (
            &["--min", "1", "--max", "2", "--deadline", "4s", "--", " "][..],
            "empty",
        ),
    ] {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let o = run(&["--min", "1", "--max", "2", "--deadline", "4s", "--", "true"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot reach the broker at {url}")),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// When nothing is left to do — every request ended and `--max` were
/// submitted — the client stops at once instead of idling until the
/// deadline: with failing requests (their resubmissions used up: exit 1,
/// as documented) and with completed ones (exit 0), the summary saying
/// the deadline had not passed.
#[test]
fn it_stops_before_the_deadline_when_nothing_is_left_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "diet-ethic", "30s");
    broker.add_org("lab");
    let token = broker.add_user("ann", "lab");
    let wtoken = broker.worker_token("lab");
    let _worker = broker.worker("w", &wtoken, 1, &dir.path().join("wd"), "process");
    broker.wait_slots(1);
    let api = broker.api();
    let deadline = 120.0;

    // `false`: the mandatory request fails, is submitted again once, fails
    // again; the optional one (--max 2) fails too.
    let started = Instant::now();
    let child = optional(
        &broker,
        &token,
        &[
            "--min",
            "1",
            "--max",
            "2",
            "--deadline",
            "120s",
            "--poll",
            "100ms",
            "--resubmits",
            "1",
        ],
        &["false"],
    );
    let o = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr {err}");
    assert!(
        err.contains("1 of the 1 mandatory requests never completed"),
        "{err}"
    );
    assert!(took < Duration::from_secs(60), "it waited {took:?}");
    let s = summary("ann", &o);
    assert_eq!(s["ended_before_deadline"], true, "{s}");
    assert_eq!(s["happy"], false, "{s}");
    assert!(s["elapsed_s"].as_f64().unwrap() < deadline, "{s}");
    assert_eq!(s["mandatory"]["completed"], 0, "{s}");
    assert_eq!(s["mandatory"]["resubmitted"], 1, "{s}");
    assert_eq!(s["mandatory"]["lost"], 2, "{s}");
    assert_eq!(s["optional"]["submitted"], 1, "{s}");
    assert_eq!(s["cancelled"], 0, "nothing was left to cancel: {s}");
    let st = api.status(&token);
    assert_eq!((st.waiting, st.running, st.failed), (0, 0, 3), "{st:?}");

    // `true`, as text: everything completes and --max is reached.
    let started = Instant::now();
    let o = bin()
        .current_dir(&broker.dir)
        .args(["optional", "--broker", &broker.url, "--token", &token])
        .args([
            "--min",
            "1",
            "--max",
            "3",
            "--deadline",
            "120s",
            "--poll",
            "100ms",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "stdout {out}\nstderr {err}");
    assert!(took < Duration::from_secs(60), "it waited {took:?}");
    assert!(out.contains("mandatory    1/1 completed"), "{out}");
    assert!(out.contains("by the deadline"), "{out}");
    assert!(
        out.contains("before the deadline (120 s had not passed)") && out.contains("--max 3"),
        "{out}"
    );
    let st = api.status(&token);
    assert_eq!((st.waiting, st.running, st.completed), (0, 0, 3), "{st:?}");

    // `submit --optional` warns only when the policy is not diet-ethic.
    let o = run_in(
        &broker.dir,
        &[
            "submit",
            "--broker",
            &broker.url,
            "--token",
            &token,
            "--optional",
            "--",
            "true",
        ],
    );
    assert!(o.status.success());
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}
