//! The wire types against the JSON of docs/protocol.md.

use fairsched_worker::wire::{
    Assignment, Phase, PollReply, RegisterReply, RegisterRequest, Report, ReportReply, ReportRequest, RunKey,
};
use serde_json::json;

const KEY: RunKey = RunKey { task: 17, attempt: 1 };

#[test]
fn the_report_example_of_the_protocol_round_trips() {
    let doc = json!({
        "running": [{"task": 17, "attempt": 1}],
        "reports": [
            {"task": 17, "attempt": 1, "phase": "setup"},
            {"task": 17, "attempt": 1, "phase": "input"},
            {"task": 17, "attempt": 1, "phase": "exec"},
            {"task": 17, "attempt": 1, "phase": "output"},
            {"task": 17, "attempt": 1, "exit_code": 0}
        ]
    });
    let req: ReportRequest = serde_json::from_value(doc.clone()).unwrap();
    let mut reports: Vec<Report> = Phase::ALL.iter().map(|&p| Report::phase(KEY, p)).collect();
    reports.push(Report::exit(KEY, 0));
    assert_eq!(
        req,
        ReportRequest {
            running: vec![KEY],
            reports,
            polled: None,
            short_of_disk: None,
        }
    );
    assert_eq!(serde_json::to_value(&req).unwrap(), doc);
}

#[test]
fn a_signal_death_is_a_null_exit_code_and_a_signal() {
    let report = Report::signal(KEY, 9);
    let doc = json!({"task": 17, "attempt": 1, "exit_code": null, "signal": 9});
    assert_eq!(serde_json::to_value(report).unwrap(), doc);
    assert_eq!(serde_json::from_value::<Report>(doc).unwrap(), report);
}

#[test]
fn malformed_reports_are_refused_with_the_field_named() {
    for (doc, field) in [
        (json!({"task": 1, "attempt": 1}), "phase"),
        (json!({"task": 1, "attempt": 1, "exit_code": null}), "signal"),
        (
            json!({"task": 1, "attempt": 1, "exit_code": 1, "signal": 9}),
            "signal",
        ),
        (
            json!({"task": 1, "attempt": 1, "phase": "exec", "exit_code": 0}),
            "phase",
        ),
        (json!({"task": 1, "attempt": 1, "phase": "compile"}), "compile"),
        (json!({"attempt": 1, "phase": "exec"}), "task"),
    ] {
        let err = serde_json::from_value::<Report>(doc.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{doc}: {err}");
    }
}

#[test]
fn register_and_poll_bodies() {
    let req = RegisterRequest {
        slots: 4,
        host: "n1".into(),
    };
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"slots": 4, "host": "n1"})
    );
    let reply: RegisterReply = serde_json::from_value(
        json!({"worker": 3, "session": "s3", "lease_ms": 30000, "heartbeat_ms": 5000}),
    )
    .unwrap();
    assert_eq!(
        reply,
        RegisterReply {
            worker: 3,
            session: "s3".into(),
            lease_ms: 30000,
            heartbeat_ms: 5000
        }
    );

    let poll: PollReply = serde_json::from_value(json!({"assign": [
        {"task": 17, "attempt": 1, "name": "render", "command": "make",
         "stage_in": null, "stage_out": "cp out /data"},
        {"task": 18, "attempt": 2, "name": null, "command": "true", "extra": "ignored"}
    ]}))
    .unwrap();
    assert_eq!(
        poll.assign,
        vec![
            Assignment {
                task: 17,
                attempt: 1,
                name: "render".into(),
                command: "make".into(),
                stage_in: None,
                stage_out: Some("cp out /data".into()),
                time_limit_ms: None,
                memory_bytes: None,
                run_as: None,
                caps: Default::default(),
            },
            Assignment {
                task: 18,
                attempt: 2,
                name: String::new(),
                command: "true".into(),
                stage_in: None,
                stage_out: None,
                time_limit_ms: None,
                memory_bytes: None,
                run_as: None,
                caps: Default::default(),
            },
        ]
    );
    assert_eq!(
        serde_json::from_value::<PollReply>(json!({})).unwrap().assign,
        vec![]
    );
}

#[test]
fn a_poll_reply_may_carry_kills_and_older_brokers_send_none() {
    let poll: PollReply = serde_json::from_value(json!({
        "assign": [], "kill": [{"task": 17, "attempt": 1}]
    }))
    .unwrap();
    assert_eq!((poll.assign, poll.kill), (vec![], vec![KEY]));
    // A broker without `kill` (older), or with fields newer than this worker.
    let old: PollReply = serde_json::from_value(json!({"assign": [], "later": 1})).unwrap();
    assert_eq!(old, PollReply::default());
    let sent = serde_json::to_value(PollReply::default()).unwrap();
    assert_eq!(sent, json!({"assign": [], "kill": [], "seq": 0}));
}

#[test]
fn the_kill_list() {
    let reply: ReportReply = serde_json::from_value(json!({"kill": [{"task": 17, "attempt": 1}]})).unwrap();
    assert_eq!(reply.kill, vec![KEY]);
    let empty = serde_json::to_value(ReportRequest::default()).unwrap();
    assert_eq!(empty, json!({"running": [], "reports": []}));
    assert!(serde_json::from_str::<ReportReply>("[1]").is_err());
}

#[test]
fn an_assignment_s_limits_are_optional_and_left_out_when_absent() {
    let old: Assignment = serde_json::from_value(json!(
        {"task": 17, "attempt": 1, "name": "", "command": "make"}
    ))
    .unwrap();
    assert_eq!((old.time_limit_ms, old.memory_bytes), (None, None));
    let sent = serde_json::to_value(&old).unwrap();
    assert_eq!(
        sent,
        json!({"task": 17, "attempt": 1, "name": "", "command": "make", "stage_in": null, "stage_out": null})
    );
    let limited: Assignment = serde_json::from_value(json!(
        {"task": 17, "attempt": 1, "command": "make", "time_limit_ms": 60000, "memory_bytes": 1073741824u64}
    ))
    .unwrap();
    assert_eq!(
        (limited.time_limit_ms, limited.memory_bytes),
        (Some(60_000), Some(1 << 30))
    );
    let back: Assignment = serde_json::from_value(serde_json::to_value(&limited).unwrap()).unwrap();
    assert_eq!(back, limited);
}
