//! What one tenant's volume costs the others, and submissions that are
//! never doubled (issue 38, findings 5 and 6), real processes on
//! 127.0.0.1: a large submission is written in steps, other requests
//! answered between them; a default queued quota binds every user; a
//! `submit` retried with its `--key` gets the tasks the first one made; a
//! `submit` whose reply was lost says how to know, with exit code 3.

use crate::common::{Broker, bin, free_port, run_in};
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;
use std::process::Stdio;

fn submit(dir: &Path, b: &Broker, token: &str, more: &[&str]) -> std::process::Output {
    submit_to(dir, &b.url, token, more)
}

/// `fairsched submit` to the broker at `url`, with `more` arguments.
fn submit_to(dir: &Path, url: &str, token: &str, more: &[&str]) -> std::process::Output {
    let mut args = vec!["submit", "--broker", url, "--token", token];
    args.extend_from_slice(more);
    run_in(dir, &args)
}

/// A bag of 20,000 tasks is written in steps (`SUBMIT_STEP`, 250): a status asked for
/// meanwhile is answered between two steps (it sees some of the tasks, not
/// none or all), and the same submit again with its key gets the same ids
/// and submits nothing.
#[test]
fn a_large_submission_is_written_in_steps_and_its_retry_submits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start(dir.path(), "fifo", "30s");
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let n = 20_000u64;
    let args = [
        "submit", "--broker", &b.url, "--token", &alice, "--count", "20000", "--key", "run-1", "--json",
        "--", "true",
    ];
    // To a file: 20,000 ids are more than a pipe holds unread.
    let ids_file = dir.path().join("ids.json");
    let mut child = bin()
        .current_dir(dir.path())
        .args(args)
        .stdout(std::fs::File::create(&ids_file).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let api = b.api();
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        if let Some(s) = api.try_status(&alice) {
            seen.push(s.waiting);
        }
    }
    assert!(child.wait().unwrap().success());
    let out = std::fs::read_to_string(&ids_file).unwrap();
    let first: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(first["ids"].as_array().unwrap().len(), n as usize);
    assert!(
        seen.iter().any(|&w| w > 0 && w < n),
        "no status was answered while the submission was being written: {seen:?}"
    );
    // Again with its key: the same ids, nothing more queued.
    let again = submit(
        dir.path(),
        &b,
        &alice,
        &["--count", "20000", "--key", "run-1", "--json", "--", "true"],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let second: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(first, second);
    assert_eq!(api.status(&alice).waiting, n);
    // The same key with another request: refused, nothing submitted.
    let other = submit(dir.path(), &b, &alice, &["--key", "run-1", "--", "false"]);
    assert_eq!(other.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("was used for another request"),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert_eq!(api.status(&alice).waiting, n);
    // A user's key is never one of the broker's keys of a request's steps.
    let small = submit(
        dir.path(),
        &b,
        &alice,
        &["--count", "5", "--key", "z#1", "--", "true"],
    );
    assert!(small.status.success());
    let large = submit(
        dir.path(),
        &b,
        &alice,
        &["--count", "600", "--key", "z", "--", "true"],
    );
    assert!(
        large.status.success(),
        "{}",
        String::from_utf8_lossy(&large.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&large.stdout).lines().count(), 600);
}

/// With `serve --default-max-queued 5`, a user with no quota of its own
/// may queue 5 tasks: the 6th is refused, the setting named; a quota of
/// the user's own replaces the default.
#[test]
fn the_default_queued_quota_binds_every_user() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--default-max-queued", "5"],
        "30s",
        "127.0.0.1:0",
    );
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let ok = submit(dir.path(), &b, &alice, &["--count", "3", "--", "true"]);
    assert!(ok.status.success());
    let past = submit(dir.path(), &b, &alice, &["--count", "3", "--", "true"]);
    let said = String::from_utf8_lossy(&past.stderr);
    assert_eq!(past.status.code(), Some(1), "{said}");
    assert!(said.contains("may have 5 (serve --default-max-queued)"), "{said}");
    b.api().post_ok(
        "/v1/admin/quotas",
        &b.admin,
        &json!({"user": "alice", "max_queued": 10}),
    );
    let ok = submit(dir.path(), &b, &alice, &["--count", "3", "--", "true"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(b.api().status(&alice).waiting, 6);
}

/// A broker that reads each request and closes the connection without a
/// reply (the reply of a committed submission lost): `submit` retries
/// with its key, then exits 3 saying the tasks may exist and how to know
/// (its key); a broker never reached is exit 1, nothing said of a key.
#[test]
fn a_submit_whose_replies_were_lost_exits_3_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let tries = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = tries.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            // The request's head and body, then no reply.
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            drop(conn);
        }
    });
    let o = submit_to(
        dir.path(),
        &url,
        "t",
        &["--retry-for", "1s", "--key", "mine-7", "--", "true"],
    );
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{said}");
    assert!(said.contains("may have taken the submission"), "{said}");
    assert!(said.contains("--key mine-7"), "{said}");
    assert!(
        tries.load(std::sync::atomic::Ordering::Relaxed) >= 2,
        "it retried"
    );
    // No key given: the one it made is said.
    let o = submit_to(dir.path(), &url, "t", &["--retry-for", "0", "--", "true"]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{said}");
    assert!(said.contains("--key "), "{said}");
    // Nothing listens: it cannot have been taken.
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let o = submit_to(dir.path(), &nobody, "t", &["--retry-for", "1s", "--", "true"]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("cannot reach the broker"), "{said}");
    assert!(!said.contains("--key"), "{said}");
    // A key the broker would refuse: said before anything is sent.
    let o = submit_to(dir.path(), &nobody, "t", &["--key", "two words", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
}
