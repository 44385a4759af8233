//! `fairsched admin init`: the admin token alone on stdout, once per
//! database; policies the live service cannot run are refused before a
//! file is created.

use std::process::{Command, Output};

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
