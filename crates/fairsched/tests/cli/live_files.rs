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
