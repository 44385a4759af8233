//! `http::decode_bytes` on whatever a client may send, for every request
//! body the broker decodes: it never panics (nor overflows the stack), and
//! what it refuses is a 400 with a reason.

use fairsched_broker::api::{OrgRequest, SubmitRequest, UserRequest, WorkerTokenRequest};
use fairsched_broker::http::decode_bytes;
use fairsched_broker::service::ServiceError;
use fairsched_proto::wire::{PollRequest, RegisterRequest, ReportRequest};
use proptest::prelude::*;
use serde::de::DeserializeOwned;

/// Decodes `body` as `T`; an error must be a 400 with a reason.
fn check<T: DeserializeOwned>(body: &[u8]) -> Result<T, ServiceError> {
    let r = decode_bytes::<T>(body);
    if let Err(e) = &r {
        assert_eq!(
            e.status().as_u16(),
            400,
            "{e:?} for {:?}",
            String::from_utf8_lossy(body)
        );
        assert!(e.message().starts_with("request body"), "{e:?}");
    }
    r
}

/// Every request type; which of them accepted `body`.
fn all(body: &[u8]) -> Vec<&'static str> {
    let mut ok = Vec::new();
    let mut note = |name, accepted: bool| {
        if accepted {
            ok.push(name);
        }
    };
    note("SubmitRequest", check::<SubmitRequest>(body).is_ok());
    note("OrgRequest", check::<OrgRequest>(body).is_ok());
    note("UserRequest", check::<UserRequest>(body).is_ok());
    note("WorkerTokenRequest", check::<WorkerTokenRequest>(body).is_ok());
    note("RegisterRequest", check::<RegisterRequest>(body).is_ok());
    note("PollRequest", check::<PollRequest>(body).is_ok());
    note("ReportRequest", check::<ReportRequest>(body).is_ok());
    ok
}

/// Every request body is strict: an unknown field is refused.
fn strict(body: &[u8]) -> Vec<&'static str> {
    all(body)
}

/// Arbitrary JSON values, nested a few levels, with extreme numbers.
fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        "[0-9]{20,400}",
        "-[0-9]{20,400}",
        "[0-9]{1,3}e[0-9]{3,5}",
        "\\PC{0,20}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("\"\\ud800\"".to_string()),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((field_name(), inner), 0..6).prop_map(|v| {
                let fields: Vec<String> = v
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// Field names of the request types, and others.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "tasks",
            "command",
            "name",
            "stage_in",
            "stage_out",
            "priority",
            "org",
            "slots",
            "host",
            "wait_ms",
            "running",
            "reports",
            "task",
            "attempt",
            "phase",
            "exit_code",
            "signal",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..4096)) {
        all(&body);
    }

    #[test]
    fn arbitrary_json(body in json_value()) {
        all(body.as_bytes());
    }

    #[test]
    fn json_prefixes(body in json_value(), cut in any::<prop::sample::Index>()) {
        // Truncated documents: never a panic, and nothing decodes a cut
        // object (an object body cut anywhere is unbalanced).
        let cut = cut.index(body.len() + 1);
        let prefix = body.as_bytes()[..cut].to_vec();
        let ok = all(&prefix);
        if body.starts_with('{') && cut < body.len() {
            prop_assert!(ok.is_empty(), "{ok:?} accepted {:?}", String::from_utf8_lossy(&prefix));
        }
    }

    #[test]
    fn huge_numbers_in_known_fields(digits in "[1-9][0-9]{20,300}", exp in 309u32..100_000) {
        for n in [digits.clone(), format!("-{digits}"), format!("1e{exp}"), format!("{digits}.5")] {
            // Each body is refused by the type the field belongs to.
            let refused = |r: bool, body: &str| {
                prop_assert!(r, "accepted {}", body);
                Ok(())
            };
            let b = format!(r#"{{"slots": {n}, "host": "h"}}"#);
            refused(check::<RegisterRequest>(b.as_bytes()).is_err(), &b)?;
            let b = format!(r#"{{"wait_ms": {n}}}"#);
            refused(check::<PollRequest>(b.as_bytes()).is_err(), &b)?;
            for b in [
                format!(r#"{{"running": [{{"task": {n}, "attempt": 1}}]}}"#),
                format!(r#"{{"reports": [{{"task": 1, "attempt": {n}, "phase": "exec"}}]}}"#),
                format!(r#"{{"reports": [{{"task": 1, "attempt": 1, "exit_code": {n}}}]}}"#),
                format!(r#"{{"reports": [{{"task": 1, "attempt": 1, "exit_code": null, "signal": {n}}}]}}"#),
            ] {
                refused(check::<ReportRequest>(b.as_bytes()).is_err(), &b)?;
                all(b.as_bytes());
            }
            let b = format!(r#"{{"tasks": [{{"command": "x", "priority": {n}}}]}}"#);
            refused(strict(b.as_bytes()).is_empty(), &b)?;
            all(b.as_bytes());
        }
    }

    #[test]
    fn unknown_fields(name in "[a-z_]{1,12}", value in json_value()) {
        let known = [
            "tasks", "command", "name", "stage_in", "stage_out", "priority", "org", "slots", "host",
            "wait_ms", "running", "reports", "optional", "activity", "after", "workflow",
        ];
        prop_assume!(!known.contains(&name.as_str()));
        let field = format!("{}: {value}", serde_json::to_string(&name).unwrap());
        // Each strict body, valid but for the extra field: a 400 naming it.
        for body in [
            format!(r#"{{"tasks": [{{"command": "x"}}], {field}}}"#),
            format!(r#"{{"tasks": [{{"command": "x", {field}}}]}}"#),
            format!(r#"{{"name": "x", {field}}}"#),
            format!(r#"{{"name": "x", "org": "y", {field}}}"#),
            format!(r#"{{"org": "y", {field}}}"#),
        ] {
            let ok = strict(body.as_bytes());
            prop_assert!(ok.is_empty(), "{ok:?} accepted {body}");
        }
        let e = decode_bytes::<SubmitRequest>(format!(r#"{{"tasks": [], {field}}}"#).as_bytes()).unwrap_err();
        prop_assert!(e.message().contains(&name), "the reason names the field: {e:?}");
        // The worker bodies too.
        for body in [
            format!(r#"{{"slots": 1, "host": "h", {field}}}"#),
            format!(r#"{{"wait_ms": 5, {field}}}"#),
            format!(r#"{{"running": [], "reports": [], {field}}}"#),
            format!(r#"{{"running": [], "reports": [{{"task": 1, "attempt": 1, "phase": "exec", {field}}}]}}"#),
        ] {
            let ok = strict(body.as_bytes());
            prop_assert!(ok.is_empty(), "{ok:?} accepted {body}");
        }
    }
}

fn nested(n: usize, open: &str, close: &str) -> String {
    format!("{}{}", open.repeat(n), close.repeat(n))
}

#[test]
fn deep_nesting_never_overflows_the_stack() {
    for n in [127, 128, 129, 1_000, 10_000, 100_000] {
        let arrays = nested(n, "[", "]");
        let objects = nested(n, r#"{"a":"#, "}");
        // Nothing takes these: the nesting is where a request expects
        // something else, or it is never closed.
        for body in [
            arrays.clone(),
            nested(n, r#"{"tasks":"#, "}"),
            format!(r#"{{"reports": {arrays}}}"#),
            format!(r#"{{"running": [{arrays}]}}"#),
            format!(r#"{{"running": [], "reports": [{arrays}]}}"#),
            nested(n, "[", ""),
            nested(n, r#"{"x":"#, ""),
        ] {
            let ok = all(body.as_bytes());
            assert!(
                ok.is_empty(),
                "{ok:?} accepted {n} levels: {}…",
                &body[..80.min(body.len())]
            );
        }
        // In a field a type does not know: the strict bodies refuse it; the
        // worker bodies may skip it (decoded or refused, never a panic).
        for body in [
            objects.clone(),
            format!(r#"{{"tasks": {arrays}}}"#),
            format!(r#"{{"tasks": [{{"command": {arrays}}}]}}"#),
            format!(r#"{{"slots": {arrays}, "host": "h"}}"#),
            format!(r#"{{"slots": 1, "host": "h", "x": {arrays}}}"#),
            format!(r#"{{"wait_ms": 1, "x": {objects}}}"#),
        ] {
            assert!(strict(body.as_bytes()).is_empty());
            all(body.as_bytes());
        }
    }
}

#[test]
fn valid_bodies_decode() {
    assert_eq!(
        strict(br#"{"tasks": [{"command": "x", "priority": -3}], "org": "o"}"#),
        vec!["SubmitRequest"]
    );
    assert_eq!(strict(br#"{"name": "x", "org": "y"}"#), vec!["UserRequest"]);
    assert!(check::<OrgRequest>(br#"{"name": "x"}"#).is_ok());
    assert!(check::<WorkerTokenRequest>(br#"{"org": "x"}"#).is_ok());
    assert_eq!(
        check::<RegisterRequest>(br#"{"slots": 4, "host": "h"}"#)
            .unwrap()
            .slots,
        4
    );
    assert_eq!(
        check::<PollRequest>(br#"{"wait_ms": 18446744073709551615}"#)
            .unwrap()
            .wait_ms,
        u64::MAX
    );
    let r = check::<ReportRequest>(
        br#"{"running": [{"task": 1, "attempt": 2}], "reports": [{"task": 1, "attempt": 2, "exit_code": null, "signal": 9}]}"#,
    )
    .unwrap();
    assert_eq!((r.running.len(), r.reports.len()), (1, 1));
    // Trailing garbage after a valid document is refused.
    let e = check::<PollRequest>(br#"{"wait_ms": 1} {"#).unwrap_err();
    assert!(e.message().contains("trailing"), "{e:?}");
}
