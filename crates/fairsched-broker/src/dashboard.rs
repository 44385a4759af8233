//! The live dashboard (docs/protocol.md, "Dashboard"): one HTML page at
//! `/` with its script and style sheet (bundled into the binary, no other
//! origin), and the read-only snapshot it shows, `GET /v1/dashboard`,
//! pushed again at every change by `GET /v1/dashboard/events`
//! (server-sent events).
//!
//! The snapshot is built on the broker's thread from what the service
//! already keeps: the core's view (live tasks, slots), the counts of
//! `/v1/status`, the users' satisfaction, the policies' gauges (what
//! `/metrics` shows as `fairsched_policy_*`), the workers' rows and the
//! last [`RECENT_KEPT`] things that happened ([`Recent`]). It carries no
//! command, task name, token or token hash: it needs no token, like
//! `/metrics`.

use crate::api::StatusReply;
use crate::identity::Principal;
use crate::service::{Broker, ServiceError};
use fairsched_core::{SlotId, TaskId};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The page (`GET /`).
pub const PAGE: &str = include_str!("../assets/dashboard.html");
/// Its script (`GET /dashboard.js`).
pub const SCRIPT: &str = include_str!("../assets/dashboard.js");
/// Its style sheet (`GET /dashboard.css`).
pub const STYLE: &str = include_str!("../assets/dashboard.css");

/// The page's content security policy: everything from the broker itself,
/// nothing from elsewhere (the icon is an empty `data:` URL).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The version of the snapshot's shape (`schema`): bumped when a field is
/// renamed or removed (fields may be added without).
pub const SCHEMA: u32 = 1;

/// Things that happened, kept for the dashboard's recent events.
pub const RECENT_KEPT: usize = 50;

/// Waiting tasks listed per machine (in the order the `priority` policy
/// would start them); the rest are counted.
pub const QUEUE_SHOWN: usize = 100;

/// Users listed; the rest are counted.
pub const USERS_SHOWN: usize = 500;

/// One thing that happened, as the broker applied it (task ids are public
/// ids).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// A submission: `count` tasks from `first` on (ids may skip), of
    /// which `held` wait for their parents.
    Submitted {
        user: i64,
        org: u32,
        first: u64,
        count: u64,
        held: u64,
    },
    /// A held workflow task was queued: its parents completed.
    Released {
        task: u64,
        user: i64,
    },
    Started {
        task: u64,
        user: i64,
        worker: Option<u64>,
    },
    /// A run stopped and its task went back to the queue (preempted by the
    /// policy, or its worker was lost).
    Requeued {
        task: u64,
        user: i64,
    },
    Ended {
        task: u64,
        user: i64,
        outcome: &'static str,
    },
    WorkerJoined {
        worker: u64,
        org: u32,
        slots: u32,
    },
    WorkerLeft {
        worker: u64,
        org: u32,
    },
}

/// [`What`] at a time (broker clock, ms) and in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Happened {
    pub seq: u64,
    pub at_ms: i64,
    pub what: What,
}

/// The last [`RECENT_KEPT`] things that happened since this broker
/// started (kept in memory: a restart begins with none).
#[derive(Clone, Debug, Default)]
pub struct Recent {
    kept: VecDeque<Happened>,
    next: u64,
}

impl Recent {
    pub fn note(&mut self, at_ms: i64, what: What) {
        if self.kept.len() == RECENT_KEPT {
            self.kept.pop_front();
        }
        self.next += 1;
        self.kept.push_back(Happened {
            seq: self.next,
            at_ms,
            what,
        });
    }

    /// Newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Happened> {
        self.kept.iter().rev()
    }
}

/// `GET /v1/dashboard`.
#[derive(Clone, Debug, Serialize)]
pub struct Dashboard {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The broker's clock (ms since the database was created).
    pub now_ms: i64,
    /// Unix milliseconds of the clock's zero (`now_ms + epoch_ms` is the
    /// wall clock).
    pub epoch_ms: i64,
    /// The broker's clock when this broker process started.
    pub started_ms: i64,
    /// Group commits since this broker process started: it changes when
    /// the state does (the times in it change anyway).
    pub commits: u64,
    pub policy: PolicyOut,
    /// As `GET /v1/status` for the admin.
    pub counts: StatusReply,
    pub queue: QueueOut,
    pub workers: Vec<WorkerOut>,
    pub orgs: Vec<OrgOut>,
    pub users: Vec<UserOut>,
    /// Users not listed in `users` (beyond [`USERS_SHOWN`]).
    pub users_hidden: u64,
    /// Workflows with an active activity at the controller's last
    /// evaluation (`workflow-fairness` only).
    pub workflows: Vec<WorkflowOut>,
    /// Newest first.
    pub events: Vec<EventOut>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PolicyOut {
    pub order: String,
    pub allocate: String,
    pub control: Option<String>,
    /// Which quantities the configured policies define (a quantity they do
    /// not define is `null` wherever it appears).
    pub defines: Defines,
    /// η_u = W_max − W_min at the controller's last evaluation.
    pub eta_u: Option<f64>,
    /// The controller's threshold τ_u.
    pub tau_u: Option<f64>,
    /// Priorities the controller raised so far.
    pub priority_changes: Option<f64>,
    /// Every gauge about no one in particular, by name (as `/metrics`'s
    /// `fairsched_policy_NAME`).
    pub gauges: BTreeMap<&'static str, f64>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Defines {
    /// Per-user satisfaction (the broker's own: always).
    pub satisfaction: bool,
    /// DIRECTCONTR's φ and ψ per organization (`direct-contr`).
    pub phi_psi: bool,
    /// Fair-share's slot-seconds used per organization (`fair-share`).
    pub usage: bool,
    /// η_u and W_i (the `workflow-fairness` control).
    pub eta_u: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueueOut {
    /// Waiting tasks (all machines).
    pub waiting: u64,
    pub machines: Vec<MachineOut>,
    /// Waiting tasks, machine by machine, each machine's by priority
    /// (highest first) then submission; at most [`QUEUE_SHOWN`] per machine.
    pub tasks: Vec<QueuedOut>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MachineOut {
    pub machine: u32,
    pub slots: u32,
    pub free: u32,
    pub waiting: u32,
    pub running: u32,
    /// Waiting tasks of this machine not in `queue.tasks`.
    pub hidden: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueuedOut {
    pub task: u64,
    pub user: String,
    pub org: String,
    pub machine: u32,
    pub priority: i64,
    /// When it was queued (a released workflow task: at its release).
    pub queued_ms: i64,
    pub wait_ms: i64,
    /// Runs so far (a requeued task has had some).
    pub attempts: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkerOut {
    pub worker: u64,
    pub host: String,
    pub org: String,
    pub slots: u32,
    pub busy: u32,
    pub joined_ms: i64,
    /// The bytes free in its work directory when below its
    /// `--min-free-disk` (it starts no run until there is more).
    pub short_of_disk: Option<u64>,
    /// Its runs, oldest first.
    pub tasks: Vec<RunOut>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunOut {
    pub task: u64,
    pub user: String,
    pub org: String,
    /// When this run started.
    pub since_ms: i64,
    /// This run's number (1 for the first).
    pub attempt: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct OrgOut {
    pub org: u32,
    pub name: String,
    /// Slots its workers contribute now.
    pub slots: u32,
    pub running: u64,
    pub waiting: u64,
    pub held: u64,
    /// Slot-time its users' runs got over the slot-time they deserved,
    /// summed over its users; `null` while nothing was deserved.
    pub satisfaction: Option<f64>,
    /// DIRECTCONTR's φ, ψ and φ − ψ (slot·s²).
    pub phi: Option<f64>,
    pub psi: Option<f64>,
    pub phi_minus_psi: Option<f64>,
    /// Fair-share's slot-seconds used.
    pub usage_slot_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct UserOut {
    pub user: i64,
    pub name: String,
    pub org: String,
    pub held: u64,
    pub waiting: u64,
    pub running: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub killed: u64,
    /// As `/metrics`'s `fairsched_user_satisfaction`; `null` while nothing
    /// was deserved.
    pub satisfaction: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkflowOut {
    pub workflow: u32,
    pub name: String,
    pub user: String,
    pub org: String,
    /// W_i at the controller's last evaluation.
    pub w: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EventOut {
    pub seq: u64,
    pub t_ms: i64,
    /// `submit`, `release`, `start`, `requeue`, `end`, `worker-join`,
    /// `worker-leave`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
    /// `submit`: how many tasks (ids from `task` on), and how many of them
    /// are held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<u64>,
    /// `end`: `completed`, `failed`, `cancelled`, `killed`, `rejected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
}

/// A policy spec's registered name (`fair-share[x=1]` → `fair-share`).
fn policy_name(spec: &str) -> &str {
    fairsched_core::registry::canonical(spec.split('[').next().unwrap_or(spec).trim())
}

/// An active worker's row of the `workers` table.
struct WorkerRow {
    id: u64,
    org: u32,
    host: String,
    slots: u32,
    joined_ms: i64,
}

/// The snapshot now. `started_ms`: the broker's clock when this process
/// started.
pub fn snapshot(b: &Broker, started_ms: i64) -> Result<Dashboard, ServiceError> {
    let store = b.live().store();
    let sql = |e: rusqlite::Error| ServiceError::Unavailable(format!("{}: {e}", store.path().display()));
    let now = b.clock().millis();
    let orgs = b.org_names();
    let org_name = |o: u32| orgs.get(&o).cloned().unwrap_or_else(|| o.to_string());
    let mut users: Vec<(i64, String, u32)> = Vec::new();
    {
        let mut q = store
            .conn()
            .prepare_cached("SELECT id, name, org FROM users ORDER BY id")
            .map_err(sql)?;
        let rows = q
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32)))
            .map_err(sql)?;
        for r in rows {
            users.push(r.map_err(sql)?);
        }
    }
    let user_of: HashMap<i64, (&str, u32)> = users.iter().map(|(id, n, o)| (*id, (n.as_str(), *o))).collect();
    let user_name = |u: i64| user_of.get(&u).map_or_else(|| u.to_string(), |x| x.0.to_string());
    let mut workers: Vec<WorkerRow> = Vec::new();
    {
        let mut q = store
            .conn()
            .prepare_cached(
                "SELECT id, org, host, slots, joined_ms FROM workers WHERE state IN ('active', 'draining', 'held') ORDER BY id",
            )
            .map_err(sql)?;
        let rows = q
            .query_map([], |r| {
                Ok(WorkerRow {
                    id: r.get::<_, i64>(0)? as u64,
                    org: r.get::<_, i64>(1)? as u32,
                    host: r.get(2)?,
                    slots: r.get::<_, i64>(3)? as u32,
                    joined_ms: r.get(4)?,
                })
            })
            .map_err(sql)?;
        for r in rows {
            workers.push(r.map_err(sql)?);
        }
    }
    // Slot → worker (index into `workers`), as the broker maps them (a
    // released worker's slots are not all in its first range).
    let index: HashMap<u64, usize> = workers.iter().enumerate().map(|(i, w)| (w.id, i)).collect();
    let worker_of = |s: SlotId| -> Option<usize> { b.worker_of_slot(s).and_then(|w| index.get(&w).copied()) };

    // Live tasks: the queue, the runs, and counts by user and organization.
    let view = b.live().core().view();
    let mut runs: Vec<Vec<RunOut>> = vec![Vec::new(); workers.len()];
    let mut org_live: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut waiting: Vec<(u32, Reverse<i64>, u64, TaskId)> = Vec::new();
    for id in b.live().core().live_task_ids() {
        let Some(t) = view.task(id) else { continue };
        let org = t.org().0;
        let e = org_live.entry(org).or_default();
        if let Some(start) = t.start() {
            e.0 += 1;
            if let Some(w) = t.held_slots().first().and_then(|&s| worker_of(s)) {
                runs[w].push(RunOut {
                    task: b.public_id(id),
                    user: user_name(t.spec().user().0),
                    org: org_name(org),
                    since_ms: start.millis(),
                    attempt: t.attempts(),
                });
            }
        } else {
            e.1 += 1;
            waiting.push((t.machine().0, Reverse(t.priority()), t.seq(), id));
        }
    }
    // Each machine's first QUEUE_SHOWN, without sorting the whole queue.
    waiting.sort_unstable_by_key(|w| w.0);
    let mut machines: Vec<MachineOut> = view
        .machines()
        .map(|m| MachineOut {
            machine: m.id().0,
            slots: m.capacity(),
            free: m.free(),
            waiting: m.waiting(),
            running: m.running(),
            hidden: 0,
        })
        .collect();
    let mut queued = Vec::new();
    for chunk in waiting.chunk_by_mut(|a, b| a.0 == b.0) {
        let n = chunk.len();
        if n > QUEUE_SHOWN {
            chunk.select_nth_unstable(QUEUE_SHOWN - 1);
        }
        let shown = &mut chunk[..n.min(QUEUE_SHOWN)];
        shown.sort_unstable();
        if let Some(m) = machines.iter_mut().find(|m| m.machine == shown[0].0) {
            m.hidden = (n - shown.len()) as u64;
        }
        for &(machine, _, _, id) in shown.iter() {
            let Some(t) = view.task(id) else { continue };
            queued.push(QueuedOut {
                task: b.public_id(id),
                user: user_name(t.spec().user().0),
                org: org_name(t.org().0),
                machine,
                priority: t.priority(),
                queued_ms: t.submit().millis(),
                wait_ms: (now - t.submit().millis()).max(0),
                attempts: t.attempts(),
            });
        }
    }
    machines.retain(|m| m.slots > 0 || m.waiting > 0 || m.running > 0);

    let workers_out: Vec<WorkerOut> = workers
        .iter()
        .zip(runs)
        .map(|(w, mut tasks)| {
            tasks.sort_by_key(|r| (r.since_ms, r.task));
            WorkerOut {
                worker: w.id,
                host: w.host.clone(),
                org: org_name(w.org),
                slots: w.slots,
                busy: tasks.len() as u32,
                joined_ms: w.joined_ms,
                short_of_disk: b.short_of_disk(w.id),
                tasks,
            }
        })
        .collect();

    // The policies' gauges.
    let cfg = store.config();
    let order = policy_name(&cfg.order);
    let control = cfg.control.as_deref().map(policy_name);
    let mut global: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut by_org: HashMap<(&'static str, u32), f64> = HashMap::new();
    let mut families: Vec<&'static str> = Vec::new();
    let mut wf_w: Vec<(u32, f64)> = Vec::new();
    for g in b.live().core().gauges() {
        match g.key {
            None => {
                global.insert(g.name, g.value);
            }
            Some(("org", o)) => {
                by_org.insert((g.name, o as u32), g.value);
                if !families.contains(&g.name) {
                    families.push(g.name);
                }
            }
            Some(("workflow", w)) if g.name == "workflow_w" => wf_w.push((w as u32, g.value)),
            Some(_) => {}
        }
    }
    let defines = Defines {
        satisfaction: true,
        phi_psi: order == "direct-contr" || families.contains(&"org_phi_slot_s2"),
        usage: order == "fair-share" || families.contains(&"org_usage_slot_seconds"),
        eta_u: control == Some("workflow-fairness") || global.contains_key("eta_u"),
    };
    // An organization a policy has recorded nothing for yet counts 0, as
    // the policies count it (as `explain` says).
    let org_gauge = |defined: bool, name: &'static str, o: u32| -> Option<f64> {
        defined.then(|| by_org.get(&(name, o)).copied().unwrap_or(0.0))
    };

    // Satisfaction by organization: its users' parts summed.
    let mut org_sat: HashMap<u32, (f64, f64)> = HashMap::new();
    for (u, allocated, deserved) in b.satisfaction_parts() {
        if let Some(&(_, o)) = user_of.get(&u) {
            let e = org_sat.entry(o).or_default();
            e.0 += allocated;
            e.1 += deserved;
        }
    }
    let mut org_ids: Vec<u32> = orgs.keys().copied().collect();
    org_ids.sort_unstable();
    let mut org_held: HashMap<u32, u64> = HashMap::new();
    let counts_of = |id: i64, org: u32| {
        b.status(&Principal::User {
            id,
            name: String::new(),
            org,
        })
    };
    let sats: HashMap<i64, f64> = b.satisfactions().into_iter().collect();
    let mut users_out = Vec::new();
    for (id, name, org) in &users {
        let c = counts_of(*id, *org)?;
        *org_held.entry(*org).or_default() += c.held;
        if users_out.len() < USERS_SHOWN {
            users_out.push(UserOut {
                user: *id,
                name: name.clone(),
                org: org_name(*org),
                held: c.held,
                waiting: c.waiting,
                running: c.running,
                completed: c.completed,
                failed: c.failed,
                cancelled: c.cancelled,
                killed: c.killed,
                satisfaction: sats.get(id).copied(),
            });
        }
    }
    let users_hidden = (users.len() - users_out.len()) as u64;
    let orgs_out: Vec<OrgOut> = org_ids
        .iter()
        .map(|&o| {
            let (running, waiting) = org_live.get(&o).copied().unwrap_or_default();
            let (phi, psi) = (
                org_gauge(defines.phi_psi, "org_phi_slot_s2", o),
                org_gauge(defines.phi_psi, "org_psi_slot_s2", o),
            );
            OrgOut {
                org: o,
                name: org_name(o),
                slots: if (o as usize) < view.org_count() {
                    view.org_slots(fairsched_core::OrgId(o))
                } else {
                    0
                },
                running,
                waiting,
                held: org_held.get(&o).copied().unwrap_or(0),
                satisfaction: org_sat.get(&o).and_then(|&(a, d)| (d > 0.0).then(|| a / d)),
                phi,
                psi,
                phi_minus_psi: phi.zip(psi).map(|(f, p)| f - p),
                usage_slot_s: org_gauge(defines.usage, "org_usage_slot_seconds", o),
            }
        })
        .collect();

    let mut workflows = Vec::new();
    if !wf_w.is_empty() {
        let mut q = store
            .conn()
            .prepare_cached("SELECT name, user_id, org FROM workflows WHERE id = ?1")
            .map_err(sql)?;
        wf_w.sort_by_key(|w| w.0);
        for (id, w) in wf_w {
            let row: Option<(String, i64, i64)> = rusqlite::OptionalExtension::optional(
                q.query_row([id as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))),
            )
            .map_err(sql)?;
            let (name, user, org) = row.unwrap_or_default();
            workflows.push(WorkflowOut {
                workflow: id,
                name,
                user: user_name(user),
                org: org_name(org as u32),
                w,
            });
        }
    }

    let events = b
        .recent
        .newest_first()
        .map(|h| {
            let mut e = EventOut {
                seq: h.seq,
                t_ms: h.at_ms,
                kind: "",
                task: None,
                count: None,
                held: None,
                user: None,
                org: None,
                worker: None,
                outcome: None,
                slots: None,
            };
            let of_user = |u: i64| (Some(user_name(u)), user_of.get(&u).map(|x| org_name(x.1)));
            match h.what {
                What::Submitted {
                    user,
                    org,
                    first,
                    count,
                    held,
                } => {
                    e.kind = "submit";
                    e.task = Some(first);
                    e.count = Some(count);
                    e.held = Some(held);
                    e.user = Some(user_name(user));
                    e.org = Some(org_name(org));
                }
                What::Released { task, user } => {
                    e.kind = "release";
                    e.task = Some(task);
                    (e.user, e.org) = of_user(user);
                }
                What::Started { task, user, worker } => {
                    e.kind = "start";
                    e.task = Some(task);
                    e.worker = worker;
                    (e.user, e.org) = of_user(user);
                }
                What::Requeued { task, user } => {
                    e.kind = "requeue";
                    e.task = Some(task);
                    (e.user, e.org) = of_user(user);
                }
                What::Ended { task, user, outcome } => {
                    e.kind = "end";
                    e.task = Some(task);
                    e.outcome = Some(outcome);
                    (e.user, e.org) = of_user(user);
                }
                What::WorkerJoined { worker, org, slots } => {
                    e.kind = "worker-join";
                    e.worker = Some(worker);
                    e.org = Some(org_name(org));
                    e.slots = Some(slots);
                }
                What::WorkerLeft { worker, org } => {
                    e.kind = "worker-leave";
                    e.worker = Some(worker);
                    e.org = Some(org_name(org));
                }
            }
            e
        })
        .collect();

    Ok(Dashboard {
        schema: SCHEMA,
        now_ms: now,
        epoch_ms: store.epoch_ms(),
        started_ms,
        commits: b.counters.commits,
        policy: PolicyOut {
            order: cfg.order.clone(),
            allocate: cfg.allocate.clone(),
            control: cfg.control.clone(),
            defines,
            eta_u: global.get("eta_u").copied().filter(|_| defines.eta_u),
            tau_u: global.get("tau_u").copied(),
            priority_changes: global.get("priority_changes").copied(),
            gauges: global,
        },
        counts: b.status(&Principal::Admin)?,
        queue: QueueOut {
            waiting: view.waiting_tasks(),
            machines,
            tasks: queued,
        },
        workers: workers_out,
        orgs: orgs_out,
        users: users_out,
        users_hidden,
        workflows,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_keeps_the_last_ones_newest_first() {
        let mut r = Recent::default();
        for i in 0..(RECENT_KEPT as u64 + 7) {
            r.note(i as i64, What::Released { task: i, user: 1 });
        }
        let seen: Vec<u64> = r.newest_first().map(|h| h.seq).collect();
        assert_eq!(seen.len(), RECENT_KEPT);
        assert_eq!(seen[0], RECENT_KEPT as u64 + 7);
        assert_eq!(*seen.last().unwrap(), 8);
        assert!(seen.windows(2).all(|w| w[0] == w[1] + 1));
    }

    #[test]
    fn policy_names_drop_their_parameters() {
        assert_eq!(policy_name("fair-share[x=1]"), "fair-share");
        assert_eq!(policy_name("fifo"), "first-fit");
        assert_eq!(policy_name(" workflow-fairness "), "workflow-fairness");
    }

    /// The page and its files name no other origin.
    #[test]
    fn assets_are_same_origin() {
        for (name, text) in [("page", PAGE), ("script", SCRIPT), ("style", STYLE)] {
            for bad in ["http://", "https://", "//cdn", "@import", "url(http", "fonts.g"] {
                assert!(!text.contains(bad), "the {name} contains `{bad}`");
            }
        }
        assert!(PAGE.contains("src=\"dashboard.js\""));
        assert!(PAGE.contains("href=\"dashboard.css\""));
    }
}
