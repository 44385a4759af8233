//! Organizations, users and tokens: random, stored only as hashes, each
//! bound to its holder.

use fairsched_broker::{Config, IdentityError, Live, Principal};

#[test]
fn tokens_authenticate_their_holder_and_are_stored_only_as_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("id.db");
    let live = Live::create(&path, &Config::default(), &fairsched_core::Registry::builtin()).unwrap();
    let st = live.store();
    let admin = st.admin_token().unwrap();
    assert!(matches!(st.admin_token(), Err(IdentityError::Exists(_))), "once");
    assert_eq!(st.add_org("lab").unwrap(), 0);
    assert_eq!(st.add_org("clinic").unwrap(), 1);
    let alice = st.add_user("alice", "clinic").unwrap();
    let bob = st.add_user("bob", "lab").unwrap();
    let worker = st.worker_token("clinic").unwrap();
    for t in [&admin, &alice, &bob, &worker] {
        assert_eq!(t.len(), 64);
        assert!(t.bytes().all(|c| c.is_ascii_hexdigit()));
    }
    let all = [&admin, &alice, &bob, &worker];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(st.authenticate(&admin).unwrap(), Some(Principal::Admin));
    match st.authenticate(&alice).unwrap() {
        Some(Principal::User { name, org, .. }) => assert_eq!((name.as_str(), org), ("alice", 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        st.authenticate(&worker).unwrap(),
        Some(Principal::Worker { org: 1 })
    );
    // A wrong token, a token with one digit changed, an empty one.
    let mut near = alice.clone().into_bytes();
    near[10] = if near[10] == b'0' { b'1' } else { b'0' };
    for t in [String::from_utf8(near).unwrap(), "x".repeat(64), String::new()] {
        assert_eq!(st.authenticate(&t).unwrap(), None, "{t}");
    }
    drop(live);
    // The file holds no token in clear (WAL included).
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for t in &all {
            assert!(!text.contains(t.as_str()));
        }
    }
    // They still work after a restart.
    let live = Live::open(&path, &fairsched_core::Registry::builtin()).unwrap();
    assert_eq!(
        live.store()
            .authenticate(&bob)
            .unwrap()
            .map(|p| matches!(p, Principal::User { org: 0, .. })),
        Some(true)
    );
}

#[test]
fn names_are_checked_and_unique() {
    let dir = tempfile::tempdir().unwrap();
    let live = Live::create(
        &dir.path().join("id.db"),
        &Config::default(),
        &fairsched_core::Registry::builtin(),
    )
    .unwrap();
    let st = live.store();
    st.add_org("lab").unwrap();
    assert!(matches!(st.add_org("lab"), Err(IdentityError::Exists(_))));
    for bad in ["", "a b", "é", "x/y", &"n".repeat(65)] {
        assert!(
            matches!(st.add_org(bad), Err(IdentityError::Invalid(_))),
            "{bad:?}"
        );
    }
    st.add_user("alice", "lab").unwrap();
    assert!(matches!(
        st.add_user("alice", "lab"),
        Err(IdentityError::Exists(_))
    ));
    match st.add_user("carol", "nowhere") {
        Err(IdentityError::Unknown(m)) => assert!(m.contains("nowhere")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        st.worker_token("nowhere"),
        Err(IdentityError::Unknown(_))
    ));
}
