//! The live service's files on disk (issue 27, findings 5 and 9): the
//! database, its lock and the tokens file are private to their owner; a
//! planted `fairsched.tokens.partial` is not written through; one lock per
//! database, whatever path names it.

use crate::common::{Broker, Proc, bin, run_in, wait_for};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// `admin init` and `serve` leave the database, its `-wal` and `-shm` and
/// the lock readable by their owner only, whatever the umask (it was
/// 0644: any local user read every task's command).
#[test]
fn the_database_and_its_lock_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start(dir.path(), "fifo", "30s");
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    b.api().submit(&alice, &["echo secret".into()]);
    for name in ["broker.db", "broker.db-wal", "broker.db-shm", "broker.db.lock"] {
        let p = dir.path().join(name);
        assert_eq!(mode(&p), 0o600, "{name}");
    }
}

/// A database made readable by others (an older fairsched, or by hand) is
/// made private again when a broker opens it.
#[test]
fn an_open_database_readable_by_others_is_made_private() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Broker::start(dir.path(), "fifo", "30s");
    b.kill9();
    let db = dir.path().join("broker.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    b.serve();
    assert_eq!(mode(&db), 0o600);
}

/// Starts `serve --quickstart` in `dir`; returns once ./fairsched.tokens
/// names the broker.
fn quickstart(dir: &Path) -> Proc {
    let mut cmd = bin();
    cmd.current_dir(dir)
        .args(["serve", "--quickstart", "--db", "q.db", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let p = Proc::spawn("broker", &mut cmd, Some(Duration::from_secs(5)));
    let tokens = dir.join("fairsched.tokens");
    wait_for("./fairsched.tokens", Duration::from_secs(30), || {
        std::fs::read_to_string(&tokens)
            .ok()
            .filter(|t| t.contains("broker=http://127.0.0.1:"))
    });
    p
}

/// A `fairsched.tokens.partial` already there (mode 0666, or a link to
/// another file) neither lends its mode to the tokens file nor gets the
/// tokens written through it (it gave a 0666 tokens file).
#[test]
fn a_planted_partial_tokens_file_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join("fairsched.tokens.partial");
    std::fs::write(&partial, "planted\n").unwrap();
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut p = quickstart(dir.path());
    let tokens = dir.path().join("fairsched.tokens");
    assert_eq!(mode(&tokens), 0o600);
    assert_eq!(mode(&dir.path().join("q.db")), 0o600);
    p.terminate(Duration::from_secs(10));

    // Again (same database: the tokens file is rewritten with the URL),
    // with the partial file a link to a file of someone else's.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "theirs\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    symlink(&victim, &partial).unwrap();
    let _p = quickstart(dir.path());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "theirs\n");
    assert_eq!(mode(&victim), 0o644);
    assert_eq!(mode(&tokens), 0o600);
    assert!(std::fs::read_to_string(&tokens).unwrap().contains("admin="));
}

/// Two paths to one database (a link, a `..`) are one database: a second
/// broker through either is refused while the first runs (it was let in
/// through a link, and the first broker's writes failed from then on).
#[test]
fn a_second_broker_through_another_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start(dir.path(), "fifo", "30s");
    symlink(dir.path().join("broker.db"), dir.path().join("link.db")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for path in ["link.db", "sub/../broker.db", "./broker.db"] {
        let o = run_in(dir.path(), &["serve", "--db", path, "--listen", "127.0.0.1:0"]);
        assert_eq!(o.status.code(), Some(1), "{path}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("another `fairsched serve`"), "{path}: {err}");
    }
    assert!(b.api().healthy());
    assert!(!dir.path().join("link.db.lock").exists());
}

/// Starts `fairsched ARGS` (a `serve`) in `dir`; its URL once it listens.
fn serve_with(dir: &Path, args: &[&str]) -> (Proc, String) {
    let out = dir.join("serve.out");
    let err = dir.join("serve.err");
    let mut cmd = bin();
    cmd.current_dir(dir)
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let p = Proc::spawn("broker", &mut cmd, Some(Duration::from_secs(5)));
    let url = wait_for("`listening on`", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&out).ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("listening on "))?;
        Some(line.trim().to_string())
    });
    (p, url)
}

fn init(dir: &Path, db: &str) -> String {
    let o = run_in(dir, &["admin", "init", "--db", db, "--policy", "fifo"]);
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// `serve --config FILE`: the file's settings, a flag overriding one, paths
/// from the file's folder; the audit log says who did what, tokens left
/// out (issue 27, item 4: a TOML configuration; item 7: an audit log).
#[test]
fn serve_reads_its_config_file_and_keeps_an_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    let admin = init(&etc, "broker.db");
    std::fs::write(
        etc.join("fairsched.toml"),
        "db = \"broker.db\"\nlisten = \"127.0.0.1:0\"\nmax_user_priority = 5\nmax_memory = \"1G\"\naudit_log = \"audit.jsonl\"\n",
    )
    .unwrap();
    let conf = etc.join("fairsched.toml");
    let (_p, url) = serve_with(
        dir.path(),
        &[
            "serve",
            "--config",
            conf.to_str().unwrap(),
            "--max-user-priority",
            "2",
        ],
    );
    let api = crate::common::Api::new(&url);
    api.post_ok("/v1/admin/orgs", &admin, &serde_json::json!({"name": "physics"}));
    let user = api.post_ok(
        "/v1/admin/users",
        &admin,
        &serde_json::json!({"name": "alice", "org": "physics"}),
    );
    let alice = user["token"].as_str().unwrap();
    let submit = |prio: i64| {
        api.post_json(
            "/v1/tasks",
            alice,
            &serde_json::json!({"tasks": [{"command": "true", "priority": prio}]}),
        )
    };
    assert_eq!(submit(2).status, 201, "the flag's 2, not the file's 5");
    assert_eq!(submit(3).status, 403);
    let big = api.post_json(
        "/v1/tasks",
        alice,
        &serde_json::json!({"tasks": [{"command": "true", "memory_bytes": 2u64 << 30}]}),
    );
    assert_eq!(big.status, 400, "the file's max_memory: {}", big.text);
    let id = api.submit(alice, &["sleep 1".into()])[0];
    api.post_ok(&format!("/v1/tasks/{id}/cancel"), alice, &serde_json::json!({}));

    let log = etc.join("audit.jsonl");
    assert_eq!(mode(&log), 0o600);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actions: Vec<&str> = lines.iter().map(|l| l["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["org add", "user add", "submit", "submit", "cancel"]);
    assert_eq!(lines[1]["who"]["admin"], true);
    assert_eq!(lines[2]["who"]["user"], "alice");
    assert_eq!(lines[4]["detail"]["task"], id);
    // From where: the client's address.
    assert!(
        lines[4]["from"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{}",
        lines[4]
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(alice), "a token in the audit log");
}

/// A config file that does not say what serve reads is refused, naming
/// the file and the key.
#[test]
fn a_bad_config_file_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("lisen = \"127.0.0.1:0\"\n", "unknown field `lisen`"),
        ("lease = \"soon\"\n", "`lease`"),
        ("max_memory = \"12Q\"\n", "`max_memory`"),
        ("max_attempts = \"five\"\n", "max_attempts"),
    ] {
        let conf = dir.path().join("bad.toml");
        std::fs::write(&conf, text).unwrap();
        let o = run_in(dir.path(), &["serve", "--config", conf.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("bad.toml") && err.contains(says), "{text}: {err}");
    }
}

/// deploy/fairsched-broker.service's command line, with deploy/fairsched.toml
/// as its config, starts a broker (paths redirected by flags, which the
/// file's keys give way to).
#[test]
fn the_systemd_units_command_line_starts_a_broker() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let unit = std::fs::read_to_string(repo.join("deploy/fairsched-broker.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let mut words: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_eq!(words[0], "/usr/local/bin/fairsched");
    let conf = words.iter().position(|w| w == "--config").expect("--config") + 1;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo.join("deploy/fairsched.toml"),
        dir.path().join("fairsched.toml"),
    )
    .unwrap();
    words[conf] = dir.path().join("fairsched.toml").to_str().unwrap().to_string();
    let admin = init(dir.path(), "state.db");
    let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    args.extend([
        "--db",
        "state.db",
        "--listen",
        "127.0.0.1:0",
        "--audit-log",
        "audit.jsonl",
    ]);
    let (_p, url) = serve_with(dir.path(), &args);
    let api = crate::common::Api::new(&url);
    assert!(api.healthy());
    api.post_ok("/v1/admin/orgs", &admin, &serde_json::json!({"name": "physics"}));
    // The example's limits are in force.
    let user = api.post_ok(
        "/v1/admin/users",
        &admin,
        &serde_json::json!({"name": "alice", "org": "physics"}),
    );
    let r = api.post_json(
        "/v1/tasks",
        user["token"].as_str().unwrap(),
        &serde_json::json!({"tasks": [{"command": "true", "time_limit_ms": 25 * 3_600_000u64}]}),
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.error().contains("max-time-limit"), "{}", r.text);
}

/// `serve` and `worker` with their standard error a pipe nobody reads any
/// more (`2>&1 | head -1`): log lines are dropped, not a panic (it was exit
/// 101, and a broker stopped without its clean-shutdown snapshot).
#[test]
fn a_closed_stderr_does_not_stop_the_broker_or_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), "b.db");
    let spawn = |args: &[&str]| {
        let mut cmd = bin();
        cmd.current_dir(dir.path())
            .args(args)
            .env("FAIRSCHED_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        drop(child.stderr.take()); // the reader is gone
        child
    };
    let mut worker = spawn(&["worker", "--broker", "http://127.0.0.1:1", "--token", "t"]);
    let mut broker = spawn(&["serve", "--db", "b.db", "--listen", "127.0.0.1:0"]);
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        worker.try_wait().unwrap().is_none(),
        "the worker died: {:?}",
        worker.try_wait()
    );
    assert!(broker.try_wait().unwrap().is_none(), "the broker died");
    for c in [&mut worker, &mut broker] {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    }
    let st = broker.wait().unwrap();
    assert_eq!(st.code(), Some(0), "the broker's clean stop");
    let st = worker.wait().unwrap();
    assert_ne!(st.code(), Some(101), "the worker panicked");
}

/// `serve --quickstart` on a database whose tokens are not those of
/// ./fairsched.tokens is refused (it wrote the other database's tokens
/// with this one's URL: every client got 401).
#[test]
fn quickstart_refuses_another_databases_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = quickstart(dir.path());
    p.terminate(Duration::from_secs(10));
    init(dir.path(), "other.db");
    let o = run_in(
        dir.path(),
        &[
            "serve",
            "--quickstart",
            "--db",
            "other.db",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another database"),
        "{o:?}"
    );
    let o = run_in(
        dir.path(),
        &["serve", "--db", "other.db", "--max-time-limit", "0s"],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--max-time-limit"),
        "{o:?}"
    );
}
