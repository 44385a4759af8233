//! `fairsched admin init`: the admin token alone on stdout, once per
//! database; policies the live service cannot run are refused before a
//! file is created. `fairsched admin check`: a damaged database named.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fairsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn init_prints_the_admin_token_alone_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let db = db.to_str().unwrap();
    let o = fairsched(&["admin", "init", "--db", db, "--policy", "fair-share"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let token = out.strip_suffix('\n').unwrap();
    assert_eq!(token.len(), 64, "{out:?}");
    assert!(token.bytes().all(|c| c.is_ascii_hexdigit()));
    let again = fairsched(&["admin", "init", "--db", db]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already initialized"));
    assert!(again.stdout.is_empty());
}

#[test]
fn clairvoyant_or_unknown_policies_are_refused_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    for args in [
        ["--policy", "ref"],
        ["--policy", "rand"],
        ["--allocate", "mst"],
        ["--policy", "nope"],
        ["--control", "workflow-fairness[tau=x]"],
    ] {
        let mut a = vec!["admin", "init", "--db", db.to_str().unwrap()];
        a.extend(args);
        let o = fairsched(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[1].split('[').next().unwrap()),
            "{args:?}: {err}"
        );
        assert!(!db.exists(), "{args:?}");
    }
}

/// `easy` and `mst-user` read requested run times, which live tasks never
/// give (their registry entries say so); a policy of another kind named
/// where an order policy goes says which flag takes it (and that `mst` is
/// clairvoyant anyway).
#[test]
fn easy_and_misplaced_policies_are_refused_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    for (args, says) in [
        (
            &["--policy", "easy"][..],
            "`easy` reads the users' runtime estimates",
        ),
        (
            &["--allocate", "mst-user"][..],
            "`mst-user` reads the users' runtime estimates",
        ),
        (
            &["--policy", "mst"][..],
            "`mst` is an allocate policy (--allocate), and it is clairvoyant: refused",
        ),
        (
            &["--policy", "least-loaded"][..],
            "`least-loaded` is an allocate policy (--allocate): give it with --allocate, not --policy",
        ),
        (
            &["--allocate", "fair-share"][..],
            "`fair-share` is an order policy (--policy): give it with --policy, not --allocate",
        ),
        (
            &["--control", "fifo"][..],
            "`first-fit` is an order policy (--policy): give it with --policy, not --control",
        ),
    ] {
        let mut a = vec!["admin", "init", "--db", db.to_str().unwrap()];
        a.extend(args);
        let o = fairsched(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!db.exists(), "{args:?}");
    }
    // What is not refused.
    for args in [["--policy", "fcfs"], ["--allocate", "least-loaded"]] {
        let db = dir.path().join(format!("{}.db", args[1]));
        let mut a = vec!["admin", "init", "--db", db.to_str().unwrap()];
        a.extend(args);
        let o = fairsched(&a);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `serve` that cannot start (no database, not a database, its address
/// taken) says why, exits 1, does not log that the broker stopped, and
/// leaves no lock file.
#[test]
fn serve_that_does_not_start_leaves_nothing_and_does_not_say_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let serve = |db: &str, listen: &str| {
        Command::new(env!("CARGO_BIN_EXE_fairsched"))
            .current_dir(dir.path())
            .env("FAIRSCHED_LOG", "info")
            .args(["serve", "--db", db, "--listen", listen])
            .output()
            .unwrap()
    };
    std::fs::write(dir.path().join("text.db"), "not a database\n").unwrap();
    let o = fairsched(&[
        "admin",
        "init",
        "--db",
        dir.path().join("ok.db").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    // An address in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (db, listen, says) in [
        ("missing.db", "127.0.0.1:0", "no fairsched database here"),
        ("text.db", "127.0.0.1:0", "not a database"),
        ("ok.db", taken.as_str(), "--listen"),
        ("ok.db", "nowhere", "--listen nowhere"),
    ] {
        let o = serve(db, listen);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{db} {listen}: {err}");
        assert!(err.contains(says), "{db} {listen}: {err}");
        assert!(!err.contains("broker stopped"), "{db} {listen}: {err}");
        let lock = dir.path().join(format!("{db}.lock"));
        assert!(!lock.exists(), "{db} {listen}: {} left behind", lock.display());
    }
    assert!(!dir.path().join("missing.db").exists());
}

/// Issue 38, finding 9: a database whose `tokens` table was dropped let
/// `serve` start, `/healthz` say ok and every authenticated call answer
/// 503. Now `serve` refuses it, naming the table, the file and what to
/// do; `admin check` lists what is missing, and a damaged page, and
/// exits 1.
#[test]
fn a_damaged_database_is_named_by_check_and_refused_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.db");
    let db = path.to_str().unwrap();
    assert!(fairsched(&["admin", "init", "--db", db]).status.success());
    let o = fairsched(&["admin", "check", "--db", db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{db}: ok (integrity check passed; every table and column is there)\n")
    );

    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("DROP TABLE tokens").unwrap();
    drop(c);
    let o = fairsched(&["admin", "check", "--db", db]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{db}: missing: table tokens\n")
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("restore it from a backup"));

    // `serve` stops at once (bounded wait: a serve that starts is the bug).
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(["serve", "--db", db, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("serve started on a database without its tokens table");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(
        err.contains(&format!(
            "{db}: the database is incomplete, its schema lacks table tokens"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("`fairsched admin check --db {db}`")),
        "{err}"
    );

    // Garbage over a page: `check` lists SQLite's findings.
    let path = dir.path().join("g.db");
    let db = path.to_str().unwrap();
    assert!(fairsched(&["admin", "init", "--db", db]).status.success());
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() >= 3 * 4096, "{} bytes", bytes.len());
    for (i, b) in bytes[2 * 4096..3 * 4096].iter_mut().enumerate() {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let o = fairsched(&["admin", "check", "--db", db]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with(&format!("{db}: corrupt: ")), "{out}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("the database is damaged"));
}
