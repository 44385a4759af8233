//! The broker's unit tests: the service's bookkeeping on a real database,
//! without HTTP.

use super::satisfaction::ShareDelta;
use super::*;
use crate::api::{NewTask, QuotaRequest, StatusReply, TaskOut, WorkflowSpec};
use crate::identity::{Principal, hash};
use crate::store::Config;
use fairsched_core::registry::Picks;
use fairsched_proto::wire::{Phase as WirePhase, PollReply, Report, ReportRequest};

fn at(u: i64, live: i64) -> (i64, i64) {
    (u, live)
}

/// Two slots; alice's task runs over [0, 20), bob's over [10, 30)
/// with a first run over [10, 12) lost (requeued). By hand:
/// deserved(alice) = 2·10/1 + 2·10/2 = 30, deserved(bob) = 2·10/2 +
/// 2·10/1 = 30; allocated(alice) = 20, allocated(bob) = 2 + 18 = 20.
#[test]
fn satisfaction_by_hand() {
    let (alice, bob) = (1, 2);
    let mut s = Satisfaction::default();
    let mut d = ShareDelta {
        slots: 2,
        ..ShareDelta::default()
    };
    let (u, n) = at(alice, 1);
    d.user(u).live += n;
    d.start(alice, 0);
    s.apply(0, &d);
    assert_eq!(s.value(alice, 0), None, "nothing deserved yet");
    assert_eq!(s.value(alice, 10), Some(10.0 / 20.0));
    let mut d = ShareDelta::default();
    d.user(bob).live += 1;
    d.start(bob, 10);
    s.apply(10, &d);
    let mut d = ShareDelta::default();
    d.stop(bob, 10, 12); // lost: requeued, then started again
    d.start(bob, 12);
    s.apply(12, &d);
    // Mid-way: alice 15 / (20 + 5), bob 3 + 0 run... 2 + 3 = 5 / 5.
    assert_eq!(s.value(alice, 15), Some(15.0 / 25.0));
    assert_eq!(s.value(bob, 15), Some(5.0 / 5.0));
    let mut d = ShareDelta::default();
    d.stop(alice, 0, 20);
    d.user(alice).live -= 1;
    s.apply(20, &d);
    assert_eq!(s.present, 1);
    let mut d = ShareDelta::default();
    d.stop(bob, 12, 30);
    d.user(bob).live -= 1;
    s.apply(30, &d);
    assert_eq!(s.present, 0);
    assert_eq!(s.parts(alice, 30), Some((20.0, 30.0)));
    assert_eq!(s.parts(bob, 30), Some((20.0, 30.0)));
    // Nobody is present: nothing more is deserved, however long.
    assert_eq!(s.value(alice, 1000), Some(20.0 / 30.0));
    assert_eq!(s.value(bob, 1000), Some(20.0 / 30.0));
    // Alone again later: everything is hers.
    let mut d = ShareDelta::default();
    d.user(bob).live += 1;
    s.apply(1000, &d);
    assert_eq!(s.parts(bob, 1010), Some((20.0, 50.0)));
}

/// A batch's net change counts: a user in and out at one instant is
/// never present.
#[test]
fn satisfaction_of_an_instant_presence_is_nothing() {
    let mut s = Satisfaction {
        slots: 4,
        ..Satisfaction::default()
    };
    let mut d = ShareDelta::default();
    d.user(1).live += 1;
    d.user(1).live -= 1;
    s.apply(5, &d);
    assert_eq!(s.present, 0);
    assert_eq!(s.value(1, 100), None);
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    user: i64,
    org: u32,
}

fn fixture(order: &str, control: Option<&str>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.db");
    let live = Live::create(
        &path,
        &Config {
            order: order.into(),
            control: control.map(Into::into),
            ..Config::default()
        },
        &Registry::builtin(),
    )
    .unwrap();
    let org = live.store().add_org("physics").unwrap();
    live.store().add_user("alice", "physics").unwrap();
    let user = live
        .store()
        .conn()
        .query_row("SELECT id FROM users WHERE name = 'alice'", [], |r| r.get(0))
        .unwrap();
    Fixture {
        _dir: dir,
        path,
        user,
        org,
    }
}

fn open(f: &Fixture) -> Broker {
    Broker::open(&f.path, Settings::default()).unwrap()
}

fn one(b: &mut Broker, w: Write) -> Written {
    b.write(vec![w]).pop().unwrap().unwrap()
}

fn new_task(name: &str, after: &[u32]) -> NewTask {
    NewTask {
        command: format!("echo {name}"),
        name: Some(name.into()),
        activity: Some(0),
        after: after.to_vec(),
        ..NewTask::default()
    }
}

/// a → b, c → d.
fn diamond(b: &mut Broker, f: &Fixture) -> [u64; 4] {
    let tasks = vec![
        new_task("a", &[]),
        new_task("b", &[0]),
        new_task("c", &[0]),
        new_task("d", &[1, 2, 1]),
    ];
    let w = one(
        b,
        Write::Submit {
            user: f.user,
            org: f.org,
            tasks,
            workflow: Some(WorkflowSpec {
                name: "diamond".into(),
                activities: vec!["work".into()],
            }),
            key: None,
            reservation: None,
        },
    );
    let Written::Submitted { ids, workflow } = w else {
        panic!("{w:?}")
    };
    assert!(workflow.is_some());
    ids.try_into().unwrap()
}

fn register(b: &mut Broker, f: &Fixture, slots: u32) -> u64 {
    match one(
        b,
        Write::Register {
            org: f.org,
            slots,
            host: "h".into(),
        },
    ) {
        Written::Registered(r) => r.worker,
        w => panic!("{w:?}"),
    }
}

fn polled(b: &mut Broker, f: &Fixture, worker: u64) -> BTreeMap<u64, u32> {
    b.poll(worker, f.org)
        .unwrap()
        .assign
        .into_iter()
        .map(|a| (a.task, a.attempt))
        .collect()
}

fn exit(task: u64, code: i32) -> Write {
    Write::Report {
        worker: 0,
        org: 0,
        body: ReportRequest {
            running: Vec::new(),
            reports: vec![Report::exit(RunKey { task, attempt: 1 }, code)],
            polled: None,
            short_of_disk: None,
        },
    }
}

fn report(b: &mut Broker, f: &Fixture, worker: u64, w: Write) {
    let Write::Report { body, .. } = w else {
        unreachable!()
    };
    one(
        b,
        Write::Report {
            worker,
            org: f.org,
            body,
        },
    );
}

fn state(b: &Broker, id: u64) -> TaskOut {
    b.task(&Principal::Admin, id).unwrap()
}

/// The counts `status` keeps, recounted the slow way: every row, and
/// the core for live tasks.
fn recount(b: &Broker) -> StatusReply {
    let mut st = StatusReply::default();
    for t in b.tasks(&Principal::Admin).unwrap() {
        *match t.state.as_str() {
            "held" => &mut st.held,
            "waiting" => &mut st.waiting,
            "running" => &mut st.running,
            "completed" => &mut st.completed,
            "failed" => &mut st.failed,
            "cancelled" => &mut st.cancelled,
            "killed" => &mut st.killed,
            _ => &mut st.rejected,
        } += 1;
    }
    let s = b.status(&Principal::Admin).unwrap();
    st.workers = s.workers;
    st.slots = s.slots;
    st.busy_slots = s.busy_slots;
    st.workers_short_of_disk = s.workers_short_of_disk;
    st
}

fn check_counts(b: &Broker) -> StatusReply {
    let s = b.status(&Principal::Admin).unwrap();
    assert_eq!(s, recount(b));
    s
}

/// A cancelled run reaches its worker in its next poll, which the
/// cancel wakes (the generation), with the assignment of the slot it
/// freed; runs the worker ended itself are not sent back.
#[test]
fn a_stopped_run_is_killed_by_the_next_poll() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let worker = register(&mut b, &f, 1);
    let tasks = (0..3)
        .map(|i| NewTask {
            command: format!("sleep {i}"),
            ..NewTask::default()
        })
        .collect();
    let Written::Submitted { ids, .. } = one(
        &mut b,
        Write::Submit {
            user: f.user,
            org: f.org,
            tasks,
            workflow: None,
            key: None,
            reservation: None,
        },
    ) else {
        panic!()
    };
    let first = b.poll(worker, f.org).unwrap();
    assert_eq!(first.assign.len(), 1);
    assert_eq!(first.assign[0].task, ids[0]);
    assert!(first.kill.is_empty());
    // Full: nothing more, whatever the queue.
    let r = b.poll(worker, f.org).unwrap();
    assert!(r.assign.is_empty() && r.kill.is_empty(), "{r:?}");

    let generation = b.generation;
    let Written::Cancelled(t) = one(
        &mut b,
        Write::Cancel {
            who: Principal::Admin,
            task: ids[0],
        },
    ) else {
        panic!()
    };
    assert_eq!(t.state, "cancelled");
    assert!(b.generation > generation, "the cancel wakes the long polls");
    let reply = b.poll(worker, f.org).unwrap();
    assert_eq!(
        reply.kill,
        vec![RunKey {
            task: ids[0],
            attempt: 1
        }]
    );
    assert_eq!(
        reply.assign.iter().map(|a| a.task).collect::<Vec<_>>(),
        vec![ids[1]]
    );
    let r = b.poll(worker, f.org).unwrap();
    assert!(r.assign.is_empty() && r.kill.is_empty(), "{r:?}");

    // Completed by the worker: no kill for it.
    report(&mut b, &f, worker, exit(ids[1], 0));
    assert_eq!(state(&b, ids[1]).state, "completed");
    let reply = b.poll(worker, f.org).unwrap();
    assert!(reply.kill.is_empty(), "{reply:?}");
    assert_eq!(
        reply.assign.iter().map(|a| a.task).collect::<Vec<_>>(),
        vec![ids[2]]
    );
    check_counts(&b);
}

#[test]
fn a_diamond_runs_in_order_and_a_failed_parent_cancels_what_follows() {
    let f = fixture("priority", Some("workflow-fairness"));
    let mut b = open(&f);
    let worker = register(&mut b, &f, 4);
    let [a, tb, tc, d] = diamond(&mut b, &f);
    let s = check_counts(&b);
    assert_eq!((s.held, s.running, s.waiting), (3, 1, 0));
    assert_eq!(state(&b, d).state, "held");
    assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(a, 1)]));
    std::thread::sleep(Duration::from_millis(20));
    let e = b.explain(&Principal::Admin, d).unwrap();
    assert_eq!(e["state"], "held");
    assert_eq!(e["waiting_for"], serde_json::json!([tb, tc]));
    assert!(
        e["why"].as_str().unwrap().contains(&format!("task {tb} (held)")),
        "{e}"
    );
    // a completes: b and c enter the core (under core ids of their
    // own), and run under their public ids.
    report(&mut b, &f, worker, exit(a, 0));
    assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(tb, 1), (tc, 1)]));
    assert!(
        b.core_id(tb) != TaskId(tb) && b.core_id(tb).0 > d,
        "core ids are taken at release"
    );
    assert_eq!(b.public_id(b.core_id(tb)), tb);
    let s = check_counts(&b);
    assert_eq!((s.held, s.running, s.completed), (1, 2, 1));
    let t = state(&b, tb);
    assert_eq!((t.state.as_str(), t.workflow), ("running", state(&b, a).workflow));
    let e = b.explain(&Principal::Admin, d).unwrap();
    assert_eq!(e["waiting_for"], serde_json::json!([tb, tc]));
    // b completes, c fails: d is cancelled, saying why.
    report(&mut b, &f, worker, exit(tb, 0));
    assert_eq!(state(&b, d).state, "held");
    report(&mut b, &f, worker, exit(tc, 3));
    let t = state(&b, d);
    assert_eq!(t.state, "cancelled");
    assert_eq!(
        t.reason.as_deref(),
        Some(format!("parent task {tc} failed").as_str())
    );
    assert!(t.end_ms.is_some());
    let e = b.explain(&Principal::Admin, d).unwrap();
    assert!(e["why"].as_str().unwrap().contains("failed"), "{e}");
    let s = check_counts(&b);
    assert_eq!(
        (s.held, s.waiting, s.running, s.completed, s.failed, s.cancelled),
        (0, 0, 0, 2, 1, 1)
    );
    assert_eq!(state(&b, tc).exit_code, Some(3));
    // The same after a restart.
    let sat = b.sat.clone();
    // One user, 4 slots, at most 2 busy: under 1/2.
    let s_u = b.satisfaction(f.user).unwrap();
    assert!(s_u > 0.0 && s_u <= 0.5, "{s_u}");
    let e = b.explain(&Principal::Admin, a).unwrap();
    assert!(e["user_satisfaction"].as_f64().unwrap() > 0.0, "{e}");
    drop(b);
    let b = open(&f);
    assert_eq!(check_counts(&b), s);
    assert_eq!(b.sat, sat, "satisfaction survives a restart");
    assert_eq!(
        state(&b, d).reason.as_deref(),
        Some(format!("parent task {tc} failed").as_str())
    );
}

#[test]
fn a_release_lost_to_a_crash_is_done_on_open() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let worker = register(&mut b, &f, 2);
    let [a, tb, tc, d] = diamond(&mut b, &f);
    assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(a, 1)]));
    // a's completion is committed, the release is not: the broker
    // dies in between.
    let r = b.write_unsettled(vec![Write::Report {
        worker,
        org: f.org,
        body: ReportRequest {
            running: Vec::new(),
            reports: vec![Report::exit(RunKey { task: a, attempt: 1 }, 0)],
            polled: None,
            short_of_disk: None,
        },
    }]);
    assert!(r[0].is_ok());
    assert!(b.unsettled());
    drop(b);
    let mut b = open(&f);
    assert!(!b.unsettled());
    for t in [tb, tc] {
        assert_eq!(state(&b, t).state, "running", "released on open");
    }
    assert_eq!(state(&b, d).state, "held");
    assert_eq!(polled(&mut b, &f, worker), BTreeMap::from([(tb, 1), (tc, 1)]));
    check_counts(&b);
    // A failure whose cancellations are lost the same way.
    report(&mut b, &f, worker, exit(tb, 0));
    let r = b.write_unsettled(vec![Write::Report {
        worker,
        org: f.org,
        body: ReportRequest {
            running: Vec::new(),
            reports: vec![Report::exit(RunKey { task: tc, attempt: 1 }, 1)],
            polled: None,
            short_of_disk: None,
        },
    }]);
    assert!(r[0].is_ok());
    drop(b);
    let b = open(&f);
    assert_eq!(state(&b, d).state, "cancelled");
    let s = check_counts(&b);
    assert_eq!((s.completed, s.failed, s.cancelled, s.held), (2, 1, 1, 0));
}

#[test]
fn cancelling_a_held_task_cancels_its_descendants_only() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let [a, tb, tc, d] = diamond(&mut b, &f);
    let w = one(
        &mut b,
        Write::Cancel {
            who: Principal::Admin,
            task: tb,
        },
    );
    let Written::Cancelled(t) = w else { panic!("{w:?}") };
    assert_eq!((t.id, t.state.as_str(), t.reason), (tb, "cancelled", None));
    assert_eq!(state(&b, d).state, "cancelled");
    assert_eq!(
        state(&b, d).reason.as_deref(),
        Some(format!("parent task {tb} was cancelled").as_str())
    );
    assert_eq!(state(&b, tc).state, "held");
    assert_eq!(state(&b, a).state, "waiting");
    let s = check_counts(&b);
    assert_eq!((s.held, s.waiting, s.cancelled), (1, 1, 2));
    // Cancelling it again: it has ended.
    let e = b
        .write(vec![Write::Cancel {
            who: Principal::Admin,
            task: tb,
        }])
        .pop()
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ServiceError::Conflict(_)));
    // The waiting root cancelled: c goes too.
    one(
        &mut b,
        Write::Cancel {
            who: Principal::Admin,
            task: a,
        },
    );
    assert_eq!(state(&b, tc).state, "cancelled");
    let s = check_counts(&b);
    assert_eq!((s.held, s.waiting, s.cancelled), (0, 0, 4));
    drop(b);
    assert_eq!(check_counts(&open(&f)), s);
}

#[test]
fn workflow_requests_are_checked() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let wf = || {
        Some(WorkflowSpec {
            name: "w".into(),
            activities: vec!["x".into()],
        })
    };
    let cases: Vec<(Vec<NewTask>, Option<WorkflowSpec>, &str)> = vec![
        (vec![new_task("a", &[0])], wf(), "tasks[0].after: 0"),
        (
            vec![new_task("a", &[]), new_task("b", &[2])],
            wf(),
            "tasks[1].after: 2",
        ),
        (
            vec![NewTask {
                activity: Some(1),
                ..new_task("a", &[])
            }],
            wf(),
            "tasks[0].activity: 1",
        ),
        (vec![new_task("a", &[])], None, "tasks[0].activity: only"),
        (
            vec![
                NewTask {
                    activity: None,
                    ..new_task("a", &[])
                },
                NewTask {
                    activity: None,
                    ..new_task("b", &[0])
                },
            ],
            None,
            "tasks[1].after: only",
        ),
    ];
    for (tasks, workflow, why) in cases {
        let e = b
            .write(vec![Write::Submit {
                user: f.user,
                org: f.org,
                tasks,
                workflow,
                key: None,
                reservation: None,
            }])
            .pop()
            .unwrap()
            .unwrap_err();
        assert!(matches!(e, ServiceError::Invalid(_)));
        assert!(e.message().contains(why), "{e:?} should say {why}");
    }
    // Workflow ids are never reused, across restarts too.
    let Written::Submitted { workflow: w1, .. } = one(
        &mut b,
        Write::Submit {
            user: f.user,
            org: f.org,
            tasks: vec![new_task("a", &[])],
            workflow: wf(),
            key: None,
            reservation: None,
        },
    ) else {
        panic!()
    };
    drop(b);
    let mut b = open(&f);
    let Written::Submitted { workflow: w2, .. } = one(
        &mut b,
        Write::Submit {
            user: f.user,
            org: f.org,
            tasks: vec![new_task("a", &[])],
            workflow: wf(),
            key: None,
            reservation: None,
        },
    ) else {
        panic!()
    };
    assert!(w2 > w1, "{w1:?} then {w2:?}");
}

/// Submits `n` tasks of `user` in `org`; their ids.
fn submit_n(b: &mut Broker, user: i64, org: u32, n: usize, command: &str) -> Vec<u64> {
    let tasks = (0..n)
        .map(|_| NewTask {
            command: command.into(),
            ..NewTask::default()
        })
        .collect();
    match one(
        b,
        Write::Submit {
            user,
            org,
            tasks,
            workflow: None,
            key: None,
            reservation: None,
        },
    ) {
        Written::Submitted { ids, .. } => ids,
        w => panic!("{w:?}"),
    }
}

fn heartbeat(worker: u64, org: u32, running: Vec<RunKey>, polled: Option<u64>) -> Write {
    Write::Report {
        worker,
        org,
        body: ReportRequest {
            running,
            reports: Vec::new(),
            polled,
            short_of_disk: None,
        },
    }
}

/// A run whose assignment never reached its worker (the poll reply
/// was lost) goes back to the queue once [`MISSED_REPORTS`] reports in
/// a row, each written after a later poll reply was applied, leave it
/// out; it is handed again as a new attempt. A report written before
/// the reply that handed it was applied, or that lists the run, keeps
/// it (issue 27, finding 2: it stayed `running` forever).
#[test]
fn a_run_its_worker_never_lists_goes_back_to_the_queue() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let w = register(&mut b, &f, 1);
    let ids = submit_n(&mut b, f.user, f.org, 1, "true");
    let f_org = f.org;
    let beat = |b: &mut Broker, running: Vec<RunKey>, polled: Option<u64>| {
        one(b, heartbeat(w, f_org, running, polled));
    };
    // Handed by this reply, which never arrives.
    let lost = b.poll(w, f.org).unwrap();
    assert_eq!(lost.assign.len(), 1);
    // Reports written before that reply could be applied (or by a
    // worker that does not say) prove nothing.
    for _ in 0..3 * MISSED_REPORTS {
        beat(&mut b, Vec::new(), None);
        beat(&mut b, Vec::new(), Some(lost.seq - 1));
    }
    assert_eq!(state(&b, ids[0]).attempts, 1);
    // A later reply was applied, and the run is still not listed.
    let next = b.poll(w, f.org).unwrap().seq;
    for _ in 1..MISSED_REPORTS {
        beat(&mut b, Vec::new(), Some(next));
        assert_eq!(state(&b, ids[0]).attempts, 1);
    }
    beat(&mut b, Vec::new(), Some(next));
    let again = b.poll(w, f.org).unwrap();
    let handed: Vec<(u64, u32)> = again.assign.iter().map(|a| (a.task, a.attempt)).collect();
    assert_eq!(handed, vec![(ids[0], 2)], "handed again");
    let listed = vec![RunKey {
        task: ids[0],
        attempt: 2,
    }];
    for _ in 0..3 * MISSED_REPORTS {
        beat(&mut b, listed.clone(), Some(again.seq));
    }
    let t = state(&b, ids[0]);
    assert_eq!((t.state.as_str(), t.attempts), ("running", 2));
    // Misses must be in a row: a listed report starts the count again.
    beat(&mut b, Vec::new(), Some(again.seq));
    beat(&mut b, listed.clone(), Some(again.seq));
    beat(&mut b, Vec::new(), Some(again.seq));
    assert_eq!(state(&b, ids[0]).attempts, 2);
    // A `polled` of another broker process (before a restart) is not
    // this one's.
    beat(&mut b, Vec::new(), Some(again.seq ^ (1 << 40)));
    assert_eq!(state(&b, ids[0]).attempts, 2);
    check_counts(&b);
}

/// A poll reply holds at most [`MAX_POLL_SCRIPT_BYTES`] of scripts and
/// [`MAX_ASSIGN_PER_POLL`] assignments; the next polls take the rest,
/// each run once (issue 27, finding 2: 17 tasks of 3.9 MB made a reply
/// over the worker's 64 MiB limit, which a restart sent again).
#[test]
fn poll_replies_are_bounded_and_the_rest_follow() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let w = register(&mut b, &f, 1500);
    let big = format!("# {}", "x".repeat(fairsched_proto::api::MAX_SCRIPT_LEN - 2));
    let mut ids = submit_n(&mut b, f.user, f.org, 100, &big);
    ids.extend(submit_n(&mut b, f.user, f.org, 1400, "true"));
    let mut seen = BTreeMap::new();
    let mut polls = 0;
    loop {
        let r = b.poll(w, f.org).unwrap();
        if r.assign.is_empty() {
            break;
        }
        polls += 1;
        let bytes: usize = r.assign.iter().map(|a| a.command.len()).sum();
        assert!(bytes <= MAX_POLL_SCRIPT_BYTES, "{bytes}");
        assert!(r.assign.len() <= MAX_ASSIGN_PER_POLL);
        for a in r.assign {
            assert_eq!(seen.insert(a.task, a.attempt), None, "task {} twice", a.task);
        }
    }
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), ids);
    assert!(polls >= 3, "{polls} polls");
}

/// A submission retried with its idempotency key (its 201 was lost)
/// gets the first reply and submits nothing, in the same batch, later,
/// and after a restart; the same key with another body is a 409; the
/// key is the user's own (issue 27: a lost 201 could not be retried
/// without duplicates).
#[test]
fn a_retried_submission_is_submitted_once() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let submit = |command: &str, key: &str, user: i64| Write::Submit {
        user,
        org: f.org,
        tasks: vec![NewTask {
            command: command.into(),
            ..NewTask::default()
        }],
        workflow: None,
        key: Some(SubmitKey {
            key: key.into(),
            digest: hash(command),
        }),
        reservation: None,
    };
    let ids = |r: Reply<Written>| match r {
        Ok(Written::Submitted { ids, .. }) => ids,
        other => panic!("{other:?}"),
    };
    // Twice in one batch: the twin is told to retry (what the first
    // gets is not known before the commit); then again.
    let mut replies = b.write(vec![submit("true", "k1", f.user), submit("true", "k1", f.user)]);
    assert!(matches!(
        replies.pop().unwrap().unwrap_err(),
        ServiceError::Conflict(_)
    ));
    let first = ids(replies.pop().unwrap());
    assert_eq!(
        ids(b.write(vec![submit("true", "k1", f.user)]).pop().unwrap()),
        first
    );
    let other = b.write(vec![submit("false", "k1", f.user)]).pop().unwrap();
    assert!(matches!(other.unwrap_err(), ServiceError::Conflict(_)));
    let k2 = ids(b.write(vec![submit("true", "k2", f.user)]).pop().unwrap());
    assert_ne!(k2, first);
    // Another user's key is another key.
    let bob = {
        b.live().store().add_user("bob", "physics").unwrap();
        b.live()
            .store()
            .conn()
            .query_row("SELECT id FROM users WHERE name = 'bob'", [], |r| r.get(0))
            .unwrap()
    };
    let theirs = ids(b.write(vec![submit("true", "k1", bob)]).pop().unwrap());
    assert_ne!(theirs, first);
    assert_eq!(b.tasks(&Principal::Admin).unwrap().len(), 3);
    drop(b);
    let mut b = open(&f);
    assert_eq!(
        ids(b.write(vec![submit("true", "k1", f.user)]).pop().unwrap()),
        first
    );
    assert_eq!(b.tasks(&Principal::Admin).unwrap().len(), 3);
    check_counts(&b);
}

/// The wall clock set back an hour while the broker runs does not
/// stop its clock (issue 27, finding 11: timers, deadlines and
/// satisfaction froze until the wall clock caught up).
#[test]
fn a_wall_clock_set_back_does_not_stop_the_brokers() {
    use std::sync::atomic::{AtomicI64, Ordering};
    static SHIFT: AtomicI64 = AtomicI64::new(0);
    fn wall() -> i64 {
        unix_ms() + SHIFT.load(Ordering::Relaxed)
    }
    let f = fixture("fifo", None);
    let mut b = Broker::open(
        &f.path,
        Settings {
            wall_clock: wall,
            ..Settings::default()
        },
    )
    .unwrap();
    submit_n(&mut b, f.user, f.org, 1, "true");
    let before = b.clock();
    SHIFT.store(-3_600_000, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.clock() <= before {
        assert!(Instant::now() < deadline, "the clock stood still");
        std::thread::sleep(Duration::from_millis(5));
    }
    // And a broker opened meanwhile starts from its log, not an hour back.
    submit_n(&mut b, f.user, f.org, 1, "true");
    let logged = b.live().now();
    drop(b);
    let b = Broker::open(
        &f.path,
        Settings {
            wall_clock: wall,
            ..Settings::default()
        },
    )
    .unwrap();
    assert!(b.clock() >= logged);
}

/// A report with nothing to say (a heartbeat) is not a step of the
/// log; a report that ends a run is (issue 27, finding 8: 8,640
/// fsynced steps a day per idle worker).
#[test]
fn heartbeats_do_not_grow_the_log() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let w = register(&mut b, &f, 1);
    let ids = submit_n(&mut b, f.user, f.org, 1, "true");
    polled(&mut b, &f, w);
    let steps = |b: &Broker| -> i64 {
        b.live()
            .store()
            .conn()
            .query_row("SELECT count(*) FROM steps", [], |r| r.get(0))
            .unwrap()
    };
    let before = steps(&b);
    let running = vec![RunKey {
        task: ids[0],
        attempt: 1,
    }];
    for _ in 0..50 {
        one(&mut b, heartbeat(w, f.org, running.clone(), None));
    }
    assert_eq!(steps(&b), before);
    report(&mut b, &f, w, exit(ids[0], 0));
    assert_eq!(steps(&b), before + 1);
    assert_eq!(state(&b, ids[0]).state, "completed");
}

/// A failed run says how, and in which phase when the worker reported
/// phases (in the same report or an earlier one); a task whose worker
/// is lost on its last allowed run says so; one lost earlier goes back
/// to the queue with no reason.
#[test]
fn a_failed_task_says_why() {
    let f = fixture("fifo", None);
    let mut b = Broker::open(
        &f.path,
        Settings {
            max_attempts: 2,
            ..Settings::default()
        },
    )
    .unwrap();
    let worker = register(&mut b, &f, 3);
    let ids = submit_n(&mut b, f.user, f.org, 3, "false");
    assert_eq!(polled(&mut b, &f, worker).len(), 3);
    let key = |task| RunKey { task, attempt: 1 };
    // Phases in an earlier report, then the exit.
    report(
        &mut b,
        &f,
        worker,
        Write::Report {
            worker,
            org: f.org,
            body: ReportRequest {
                running: vec![key(ids[0]), key(ids[1]), key(ids[2])],
                reports: vec![
                    Report::phase(key(ids[0]), WirePhase::Setup),
                    Report::phase(key(ids[0]), WirePhase::Input),
                ],
                polled: None,
                short_of_disk: None,
            },
        },
    );
    let body = ReportRequest {
        running: vec![key(ids[2])],
        reports: vec![
            Report::exit(key(ids[0]), 3),
            // Phases and a signal in one report.
            Report::phase(key(ids[1]), WirePhase::Setup),
            Report::phase(key(ids[1]), WirePhase::Input),
            Report::phase(key(ids[1]), WirePhase::Exec),
            Report::phase(key(ids[1]), WirePhase::Output),
            Report::signal(key(ids[1]), 9),
        ],
        polled: None,
        short_of_disk: None,
    };
    report(
        &mut b,
        &f,
        worker,
        Write::Report {
            worker,
            org: f.org,
            body,
        },
    );
    assert_eq!(state(&b, ids[0]).state, "failed");
    assert_eq!(
        state(&b, ids[0]).reason.as_deref(),
        Some("the input phase failed (exit 3)")
    );
    assert_eq!(
        state(&b, ids[1]).reason.as_deref(),
        Some("the output phase failed (signal 9)")
    );
    // The third one loses its worker: back to the queue (run 1 of 2).
    one(
        &mut b,
        Write::Leave {
            worker,
            org: f.org,
            why: Gone::Lapsed,
        },
    );
    let t = state(&b, ids[2]);
    assert_eq!((t.state.as_str(), t.reason.as_deref()), ("waiting", None));
    // Its next call is told why it is gone.
    match b.poll(worker, f.org) {
        Err(ServiceError::Gone(why)) => assert!(why.contains("lost its lease"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Run 2 of 2 loses its worker too: failed, saying why.
    let w2 = register(&mut b, &f, 1);
    assert_eq!(polled(&mut b, &f, w2).get(&ids[2]), Some(&2));
    one(
        &mut b,
        Write::Leave {
            worker: w2,
            org: f.org,
            why: Gone::Evicted,
        },
    );
    match b.poll(w2, f.org) {
        Err(ServiceError::Gone(why)) => assert!(why.contains("evicted by the admin"), "{why}"),
        other => panic!("{other:?}"),
    }
    let t = state(&b, ids[2]);
    assert_eq!(t.state, "failed");
    assert_eq!(
        t.reason.as_deref(),
        Some("its worker was lost during its run 2, and serve --max-attempts 2 allows no more runs")
    );
    // A run without phase reports: no phase named.
    let w3 = register(&mut b, &f, 1);
    let more = submit_n(&mut b, f.user, f.org, 1, "false");
    assert_eq!(polled(&mut b, &f, w3).len(), 1);
    report(&mut b, &f, w3, exit(more[0], 1));
    assert_eq!(
        state(&b, more[0]).reason.as_deref(),
        Some("its run failed (exit 1)")
    );
    // Completed: no reason. The reasons survive a restart (they are rows).
    check_counts(&b);
    drop(b);
    let b = open(&f);
    assert_eq!(
        state(&b, ids[1]).reason.as_deref(),
        Some("the output phase failed (signal 9)")
    );
    assert!(
        b.explain(&Principal::Admin, ids[2]).unwrap()["why"]
            .as_str()
            .unwrap()
            .contains("its worker was lost")
    );
}

/// Explain under fair-share shows the policy's usage for the task's
/// organization (0 before any of its tasks started) and every
/// organization's, and says the policy weighs organizations; under
/// fifo it counts the tasks submitted before it and has no such
/// caveat.
#[test]
fn explain_shows_the_organizations_fairness_state_and_the_policys_caveat() {
    for order in ["fair-share", "fifo", "priority"] {
        let f = fixture(order, None);
        let mut b = open(&f);
        let chem = b.add_org("chem").unwrap().id;
        let carol = b.add_user("carol", "chem").unwrap().id;
        let worker = register(&mut b, &f, 1);
        let mine = submit_n(&mut b, f.user, f.org, 2, "sleep 9");
        assert_eq!(polled(&mut b, &f, worker).len(), 1);
        let theirs = submit_n(&mut b, carol, chem, 1, "sleep 9");
        let e = b.explain(&Principal::Admin, theirs[0]).unwrap();
        assert_eq!(e["state"], "waiting", "{e}");
        assert_eq!(e["org_name"], "chem", "{e}");
        assert_eq!(e["ahead_in_submission_order"], 1, "{e}");
        let why = e["why"].as_str().unwrap();
        let fairness = e["fairness"].as_object().unwrap();
        if order == "fair-share" {
            assert!(why.contains("may pick differently"), "{why}");
            assert_eq!(fairness["its_org_usage_slot_seconds"], 0.0, "{e}");
            let all = fairness["org_usage_slot_seconds_by_org"].as_object().unwrap();
            assert_eq!(all.len(), 2, "{e}");
            assert_eq!(all["chem"], 0.0, "{e}");
            assert!(all["physics"].as_f64().unwrap() >= 0.0, "{e}");
            // The running task's organization: its own usage.
            let r = b.explain(&Principal::Admin, mine[0]).unwrap();
            assert_eq!(r["state"], "running", "{r}");
            assert!(r["fairness"]["its_org_usage_slot_seconds"].is_number(), "{r}");
        } else {
            assert!(!why.contains("may pick differently"), "{order}: {why}");
            assert!(!why.contains("weighs"), "{order}: {why}");
            assert!(fairness.is_empty(), "{order}: {e}");
        }
        if order == "fifo" {
            assert!(
                why.contains("1 waiting task(s) were submitted before it"),
                "{why}"
            );
        }
        if order == "priority" {
            assert!(
                why.contains("ahead of it by priority then submission order"),
                "{why}"
            );
        }
        // Ended: no fairness.
        one(
            &mut b,
            Write::Cancel {
                who: Principal::Admin,
                task: mine[1],
            },
        );
        let c = b.explain(&Principal::Admin, mine[1]).unwrap();
        assert!(c.get("fairness").is_none(), "{c}");
    }
}

/// `explain`'s words come from each order policy's registry entry:
/// by name, former names and parameters included.
#[test]
fn explain_knows_how_each_order_policy_picks_from_its_entry() {
    let f = fixture("fifo", None);
    let b = open(&f);
    assert_eq!(b.picks("fifo"), Picks::Submission);
    assert_eq!(b.picks("fcfs"), Picks::Submission);
    assert_eq!(b.picks("priority"), Picks::Priority);
    assert!(matches!(b.picks("fair-share"), Picks::Weighs(_)));
    assert!(matches!(b.picks("diet-ethic[seed=3]"), Picks::Weighs(_)));
    assert_eq!(b.picks("no-such-policy"), Picks::Priority);
}

/// Ids stay unique when held tasks reserve public ids above every core
/// id and a restart comes before their release.
#[test]
fn ids_are_never_given_twice_across_restarts() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let [_, tb, tc, d] = diamond(&mut b, &f);
    drop(b);
    let mut b = open(&f);
    let Written::Submitted { ids, .. } = one(
        &mut b,
        Write::Submit {
            user: f.user,
            org: f.org,
            tasks: vec![NewTask {
                command: "true".into(),
                ..NewTask::default()
            }],
            workflow: None,
            key: None,
            reservation: None,
        },
    ) else {
        panic!()
    };
    assert!(ids[0] > d, "{ids:?} after {tb}, {tc}, {d}");
}

fn hold(b: &mut Broker, who: Principal, task: u64) -> Reply<Written> {
    b.write(vec![Write::Hold { who, task }]).pop().unwrap()
}

fn unhold(b: &mut Broker, who: Principal, task: u64) -> Reply<Written> {
    b.write(vec![Write::Unhold { who, task }]).pop().unwrap()
}

fn alice(f: &Fixture) -> Principal {
    Principal::User {
        id: f.user,
        name: "alice".into(),
        org: f.org,
    }
}

fn tasks_of(r: &PollReply) -> Vec<u64> {
    r.assign.iter().map(|a| a.task).collect()
}

/// A waiting task put on hold leaves the queue until released, across
/// a restart; a running one is refused; a workflow task on hold stays
/// held when its parents complete (issue 27, "hold, release").
#[test]
fn a_task_on_hold_waits_until_released_even_across_a_restart() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let worker = register(&mut b, &f, 1);
    let ids = submit_n(&mut b, f.user, f.org, 3, "true");
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[0]]);
    let e = hold(&mut b, alice(&f), ids[0]).unwrap_err();
    assert!(matches!(e, ServiceError::Conflict(_)), "{e:?}");
    assert!(e.message().contains("is running"), "{e:?}");
    let Written::Cancelled(t) = hold(&mut b, alice(&f), ids[1]).unwrap() else {
        panic!()
    };
    assert_eq!(t.state, "held");
    assert!(
        t.reason.as_deref().unwrap().contains("on hold (by its user)"),
        "{t:?}"
    );
    let e = hold(&mut b, alice(&f), ids[1]).unwrap_err();
    assert!(matches!(e, ServiceError::Conflict(_)), "already on hold: {e:?}");
    check_counts(&b);
    // Its end in the core is not its end.
    let row: (String, Option<String>) = b
        .live()
        .store()
        .conn()
        .query_row(
            "SELECT state, hold FROM tasks WHERE id = ?1",
            [ids[1] as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(row, ("held".to_string(), Some("user".to_string())));
    report(&mut b, &f, worker, exit(ids[0], 0));
    assert_eq!(
        tasks_of(&b.poll(worker, f.org).unwrap()),
        vec![ids[2]],
        "the held one is skipped"
    );
    drop(b);
    let mut b = open(&f);
    assert_eq!(state(&b, ids[1]).state, "held", "still on hold after a restart");
    check_counts(&b);
    // After a restart, what runs is handed again.
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[2]]);
    let Written::Cancelled(t) = unhold(&mut b, alice(&f), ids[1]).unwrap() else {
        panic!()
    };
    assert_eq!(t.state, "waiting", "{t:?}");
    let e = unhold(&mut b, alice(&f), ids[1]).unwrap_err();
    assert!(
        matches!(e, ServiceError::Conflict(_)),
        "not on hold any more: {e:?}"
    );
    report(&mut b, &f, worker, exit(ids[2], 0));
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[1]]);
    report(&mut b, &f, worker, exit(ids[1], 0));
    assert_eq!(state(&b, ids[1]).state, "completed");
    check_counts(&b);

    // A workflow task waiting for its parents, put on hold: their end
    // does not release it; its release does.
    let [a, b1, c, d] = diamond(&mut b, &f);
    hold(&mut b, alice(&f), d).unwrap();
    for t in [a, b1, c] {
        let mut ran = false;
        for _ in 0..3 {
            if tasks_of(&b.poll(worker, f.org).unwrap()).contains(&t) {
                ran = true;
                break;
            }
        }
        assert!(ran, "task {t} runs");
        report(&mut b, &f, worker, exit(t, 0));
    }
    assert_eq!(state(&b, d).state, "held");
    assert!(tasks_of(&b.poll(worker, f.org).unwrap()).is_empty());
    unhold(&mut b, Principal::Admin, d).unwrap();
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![d]);
    check_counts(&b);
}

/// The admin's hold is the admin's to release; another user may neither
/// hold nor release a task.
#[test]
fn only_the_admin_releases_the_admins_hold() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let bob = b.add_user("bob", "physics").unwrap();
    let bob = Principal::User {
        id: bob.id,
        name: "bob".into(),
        org: f.org,
    };
    let ids = submit_n(&mut b, f.user, f.org, 1, "true");
    assert!(matches!(
        hold(&mut b, bob.clone(), ids[0]).unwrap_err(),
        ServiceError::Forbidden(_)
    ));
    hold(&mut b, Principal::Admin, ids[0]).unwrap();
    let e = unhold(&mut b, alice(&f), ids[0]).unwrap_err();
    assert!(matches!(e, ServiceError::Forbidden(_)), "{e:?}");
    assert!(e.message().contains("only the admin"), "{e:?}");
    assert!(matches!(
        unhold(&mut b, bob, ids[0]).unwrap_err(),
        ServiceError::Forbidden(_)
    ));
    let t = state(&b, ids[0]);
    assert!(
        t.reason.as_deref().unwrap().contains("admin task release"),
        "{t:?}"
    );
    unhold(&mut b, Principal::Admin, ids[0]).unwrap();
    assert_eq!(state(&b, ids[0]).state, "waiting");
    // The admin makes its user's hold its own.
    hold(&mut b, alice(&f), ids[0]).unwrap();
    hold(&mut b, Principal::Admin, ids[0]).unwrap();
    assert!(matches!(
        unhold(&mut b, alice(&f), ids[0]),
        Err(ServiceError::Forbidden(_))
    ));
    // Cancelling a task on hold ends it.
    one(
        &mut b,
        Write::Cancel {
            who: alice(&f),
            task: ids[0],
        },
    );
    assert_eq!(state(&b, ids[0]).state, "cancelled");
    check_counts(&b);
}

fn quota(b: &mut Broker, user: Option<&str>, org: Option<&str>, max_running: Option<u64>) {
    b.set_quota(&QuotaRequest {
        user: user.map(Into::into),
        org: org.map(Into::into),
        max_queued: None,
        max_running,
    })
    .unwrap();
    // As the broker's loop does when `unsettled`.
    b.write(Vec::new());
}

/// Running quotas: at most `max_running` of a user's (an organization's)
/// tasks are in the scheduler, so at most that many run; the others wait
/// held, say why, and enter oldest first as others end, across a restart;
/// lifting the quota lets them all in (issue 27, "quotas on running
/// tasks").
#[test]
fn a_running_quota_holds_the_tasks_past_it_until_others_end() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let worker = register(&mut b, &f, 8);
    quota(&mut b, Some("alice"), None, Some(2));
    let ids = submit_n(&mut b, f.user, f.org, 5, "true");
    let states: Vec<String> = ids.iter().map(|&i| state(&b, i).state).collect();
    assert_eq!(states, ["running", "running", "held", "held", "held"]);
    let t = state(&b, ids[2]);
    assert!(
        t.reason
            .as_deref()
            .unwrap()
            .contains("its user may have at most 2 in the queue or running"),
        "{t:?}"
    );
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[0], ids[1]]);
    check_counts(&b);
    // One ends: the oldest held one enters, and only it.
    report(&mut b, &f, worker, exit(ids[0], 0));
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[2]]);
    assert_eq!(state(&b, ids[3]).state, "held");
    check_counts(&b);
    // A restart keeps who is in and who waits.
    drop(b);
    let mut b = open(&f);
    check_counts(&b);
    let running = |b: &Broker| ids.iter().filter(|&&i| state(b, i).state == "running").count();
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[1], ids[2]]);
    assert_eq!(running(&b), 2);
    assert_eq!(state(&b, ids[3]).state, "held");
    report(&mut b, &f, worker, exit(ids[1], 0));
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[3]]);
    // A new task queues behind the held ones.
    let late = submit_n(&mut b, f.user, f.org, 1, "true")[0];
    assert_eq!(state(&b, late).state, "held");
    // The organization's quota binds the users together.
    let bob = b.add_user("bob", "physics").unwrap().id;
    quota(&mut b, None, Some("physics"), Some(3));
    let bobs = submit_n(&mut b, bob, f.org, 2, "true");
    assert_eq!(state(&b, bobs[0]).state, "running", "alice 2 + bob 1 = 3");
    assert_eq!(state(&b, bobs[1]).state, "held");
    check_counts(&b);
    // Lifted: everything enters.
    quota(&mut b, Some("alice"), None, None);
    quota(&mut b, None, Some("physics"), None);
    for &i in ids.iter().chain([&late]).chain(&bobs) {
        assert_ne!(state(&b, i).state, "held", "task {i}");
    }
    check_counts(&b);
}

fn hold_worker(b: &mut Broker, worker: u64, hold: bool) -> Reply<Written> {
    let w = if hold {
        Write::HoldWorker { worker }
    } else {
        Write::ReleaseWorker { worker }
    };
    b.write(vec![w]).pop().unwrap()
}

/// A held worker takes no new task while its runs go on; released, it
/// gets its slots back, one for each run from before as that run ends, so
/// it never has more than it registered with; across a restart too
/// (issue 27, item 4: "drain, evict or hold a worker").
#[test]
fn a_held_worker_takes_no_new_task_until_released() {
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let worker = register(&mut b, &f, 2);
    let ids = submit_n(&mut b, f.user, f.org, 4, "sleep 100");
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[0], ids[1]]);
    let Written::WorkerHeld { held: true, slots: 2 } = hold_worker(&mut b, worker, true).unwrap() else {
        panic!()
    };
    assert!(matches!(
        hold_worker(&mut b, worker, true),
        Err(ServiceError::Conflict(_))
    ));
    report(&mut b, &f, worker, exit(ids[0], 0));
    assert!(
        tasks_of(&b.poll(worker, f.org).unwrap()).is_empty(),
        "held: nothing new"
    );
    assert_eq!(check_counts(&b).slots, 1, "the freed slot left");
    hold_worker(&mut b, worker, false).unwrap();
    assert!(matches!(
        hold_worker(&mut b, worker, false),
        Err(ServiceError::Conflict(_))
    ));
    // One slot back (the other still runs ids[1]): one new task.
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[2]]);
    let s = check_counts(&b);
    assert_eq!((s.slots, s.running), (2, 2), "{s:?}");
    report(&mut b, &f, worker, exit(ids[1], 0));
    assert_eq!(tasks_of(&b.poll(worker, f.org).unwrap()), vec![ids[3]]);
    assert_eq!(check_counts(&b).slots, 2, "never more than it registered with");
    drop(b);
    let mut b = open(&f);
    let s = check_counts(&b);
    assert_eq!((s.slots, s.running), (2, 2), "{s:?}");
    report(&mut b, &f, worker, exit(ids[2], 0));
    let more = submit_n(&mut b, f.user, f.org, 1, "true");
    let got = tasks_of(&b.poll(worker, f.org).unwrap());
    assert!(got.contains(&more[0]), "{got:?}");
    // Held across a restart.
    hold_worker(&mut b, worker, true).unwrap();
    drop(b);
    let mut b = open(&f);
    let late = submit_n(&mut b, f.user, f.org, 1, "true");
    report(&mut b, &f, worker, exit(ids[3], 0));
    assert!(!tasks_of(&b.poll(worker, f.org).unwrap()).contains(&late[0]));
    hold_worker(&mut b, worker, false).unwrap();
    assert!(tasks_of(&b.poll(worker, f.org).unwrap()).contains(&late[0]));
    check_counts(&b);
}

/// A worker sends the outputs of its ended runs in one request, stored in
/// one transaction; one it may not send (a run still running, a run of
/// another worker, one sent already) is refused with why, and the others
/// are stored all the same.
#[test]
fn outputs_come_in_batches_and_each_is_checked() {
    use fairsched_proto::wire::OutputRequest;
    let f = fixture("fifo", None);
    let mut b = open(&f);
    let ids = submit_n(&mut b, f.user, f.org, 3, "true");
    let (w1, w2) = (register(&mut b, &f, 2), register(&mut b, &f, 1));
    let mut on: BTreeMap<u64, u64> = BTreeMap::new();
    for w in [w1, w2] {
        for t in polled(&mut b, &f, w).into_keys() {
            on.insert(t, w);
        }
    }
    assert_eq!(on.len(), 3, "{on:?}");
    // w1 ends its two runs; w2's goes on.
    let (ended, running): (Vec<u64>, Vec<u64>) = ids.iter().partition(|t| on[t] == w1);
    for &t in &ended {
        report(&mut b, &f, w1, exit(t, 0));
    }
    let out = |task: u64, text: &str| OutputRequest {
        task,
        attempt: 1,
        stdout: text.into(),
        stdout_bytes: text.len() as u64,
        ..OutputRequest::default()
    };
    let batch = vec![
        out(ended[0], "first"),
        out(running[0], "not ended"),
        out(ended[1], "second"),
        out(ended[0], "twice in one batch"),
    ];
    let reply = b.store_outputs(w1, &batch).unwrap();
    assert_eq!(reply.stored, 2, "{reply:?}");
    assert_eq!(reply.refused.len(), 2, "{reply:?}");
    assert_eq!(reply.refused[0].task, running[0]);
    assert_eq!(reply.refused[1].task, ended[0]);
    assert!(
        reply.refused[0].why.contains("not a run this worker ended"),
        "{reply:?}"
    );
    for (t, text) in [(ended[0], "first"), (ended[1], "second")] {
        let o = b.output(&Principal::Admin, t, false, None).unwrap();
        assert_eq!(
            (o.attempt, o.text.as_str(), o.bytes),
            (1, text, text.len() as u64)
        );
    }
    // Sent again: refused, the first one stays.
    let again = b.store_outputs(w1, &[out(ended[0], "forged")]).unwrap();
    assert_eq!((again.stored, again.refused.len()), (0, 1));
    assert_eq!(
        b.output(&Principal::Admin, ended[0], false, None).unwrap().text,
        "first"
    );
    // Nor may another worker send one for w1's runs.
    let other = b.store_outputs(w2, &[out(ended[1], "forged")]).unwrap();
    assert_eq!((other.stored, other.refused.len()), (0, 1));
}

/// The default queued quota (issue 38, finding 5): a user with no quota
/// of its own may have `default_max_queued` tasks queued; past it, a
/// refusal that names the setting; a quota of the user's own replaces it,
/// larger or smaller. A request written in steps reserves room for all its
/// tasks first (refused whole), its steps take their tasks out of the
/// reservation, and no other request takes that room meanwhile.
#[test]
fn the_default_queued_quota_binds_users_without_their_own() {
    let f = fixture("fifo", None);
    let mut b = Broker::open(
        &f.path,
        Settings {
            default_max_queued: Some(5),
            ..Settings::default()
        },
    )
    .unwrap();
    assert_eq!(submit_n(&mut b, f.user, f.org, 3, "true").len(), 3);
    let task = || NewTask {
        command: "true".into(),
        ..NewTask::default()
    };
    let more = |b: &mut Broker, n: usize, reservation: Option<u64>| {
        b.write(vec![Write::Submit {
            user: f.user,
            org: f.org,
            tasks: (0..n).map(|_| task()).collect(),
            workflow: None,
            key: None,
            reservation,
        }])
        .pop()
        .unwrap()
    };
    let e = more(&mut b, 3, None).unwrap_err();
    assert!(
        matches!(&e, ServiceError::Quota(m) if m.contains("may have 5 (serve --default-max-queued)")),
        "{e:?}"
    );
    // Room for 3 more is refused whole; for 2, reserved.
    assert!(matches!(b.reserve(f.user, f.org, 3), Err(ServiceError::Quota(_))));
    let r = b.reserve(f.user, f.org, 2).unwrap();
    // The reserved room is no other request's...
    assert!(matches!(more(&mut b, 1, None), Err(ServiceError::Quota(_))));
    // ...but its steps': one, then the other.
    assert!(more(&mut b, 1, Some(r)).is_ok());
    assert!(more(&mut b, 1, Some(r)).is_ok());
    assert_eq!(b.reserved(f.user), 0);
    b.release(r);
    assert!(matches!(more(&mut b, 1, None), Err(ServiceError::Quota(_))));
    // Released unused, the room is free again.
    quota_queued(&mut b, 7);
    let r = b.reserve(f.user, f.org, 2).unwrap();
    assert!(matches!(more(&mut b, 1, None), Err(ServiceError::Quota(_))));
    b.release(r);
    assert!(more(&mut b, 2, None).is_ok(), "the user's own quota of 7");
    let e = more(&mut b, 1, None).unwrap_err();
    assert!(
        matches!(&e, ServiceError::Quota(m) if m.contains("may have 7;")),
        "{e:?}"
    );
}

fn quota_queued(b: &mut Broker, max_queued: u64) {
    b.set_quota(&QuotaRequest {
        user: Some("alice".into()),
        org: None,
        max_queued: Some(max_queued),
        max_running: None,
    })
    .unwrap();
}

/// The outputs' retention (issue 38, finding 5): past `output_keep_bytes`
/// the oldest tasks' outputs go first until the rest fit; past
/// `output_keep_for` after its task ended, an output goes; what is left
/// reads as before, what went reads as an output never sent.
#[test]
fn outputs_are_kept_within_their_bytes_and_their_age() {
    use fairsched_proto::wire::OutputRequest;
    let f = fixture("fifo", None);
    let mut b = Broker::open(
        &f.path,
        Settings {
            output_keep_bytes: Some(2_500),
            output_keep_for: None,
            ..Settings::default()
        },
    )
    .unwrap();
    let ids = submit_n(&mut b, f.user, f.org, 4, "true");
    let w = register(&mut b, &f, 4);
    assert_eq!(polled(&mut b, &f, w).len(), 4);
    for &t in &ids {
        report(&mut b, &f, w, exit(t, 0));
    }
    let out = |task: u64| OutputRequest {
        task,
        attempt: 1,
        stdout: "o".repeat(1_000),
        stderr: "e".into(),
        stdout_bytes: 1_000,
        stderr_bytes: 1,
    };
    // 4 × 1,001 bytes: the two oldest go, 2,002 are left.
    let reply = b
        .store_outputs(w, &ids.iter().map(|&t| out(t)).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(reply.stored, 4);
    assert_eq!(b.prune_outputs().unwrap(), 2);
    let has = |b: &Broker, t: u64| b.output(&Principal::Admin, t, false, None).is_ok();
    assert_eq!(
        ids.iter().map(|&t| has(&b, t)).collect::<Vec<_>>(),
        [false, false, true, true]
    );
    let e = b.output(&Principal::Admin, ids[0], false, None).unwrap_err();
    assert!(
        matches!(&e, ServiceError::NotFound(m) if m.contains("no output")),
        "{e:?}"
    );
    // Not due again before its minute.
    assert_eq!(b.prune_outputs().unwrap(), 0);
    // Within the bytes, but older than the age: they go too.
    b.settings.output_keep_bytes = None;
    b.settings.output_keep_for = Some(Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(5));
    b.outputs_kept = Default::default();
    assert_eq!(b.prune_outputs().unwrap(), 2);
    assert!(ids.iter().all(|&t| !has(&b, t)));
}
