//! Opening a broker: the state rebuilt from the log (the core) and from
//! the service's tables (tasks, workers, sessions, keys, shares), then
//! what a crash left unsettled settled ([`Broker::settle`]).

use super::admin;
use super::hold::{HoldBy, Room};
use super::satisfaction::{Satisfaction, Share};
use super::schema::upgrade;
use super::submit::{KEYS_KEPT, Keyed};
use super::workflows::parent_reason;
use super::{Broker, Counters, Counts, Gone, Held, LATENCY_BUCKETS_MS, Limits, Live_, Settings, St, Worker};
use crate::dashboard::Recent;
use crate::live::{Live, LiveError};
use crate::store::{read_row, stepping};
use fairsched_core::{SlotId, TaskId, WorkflowId, WorkflowRef};
use rusqlite::OptionalExtension;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// What was refused when opening.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("{0}")]
    Store(String),
}

impl Broker {
    /// Opens the database (created by `fairsched admin init`) and rebuilds
    /// the state from its log; held tasks whose parents ended while the
    /// broker was down (or before their release was committed) are
    /// released or cancelled now.
    pub fn open(path: &Path, settings: Settings) -> Result<Broker, OpenError> {
        let mut live = Live::open(path, &settings.registry)?;
        live.set_snapshot_every(settings.snapshot_every);
        if let Some(seq) = live.restored_from() {
            tracing::info!(
                "{}: restored from the snapshot after step {seq}, then {} steps of the log",
                path.display(),
                live.steps() as i64 - seq
            );
        }
        let store_err = |e: rusqlite::Error| OpenError::Store(format!("{}: {e}", path.display()));
        upgrade(live.store().conn()).map_err(store_err)?;
        // From now on, a table or column missing here was dropped.
        crate::store::record_schema(live.store().conn()).map_err(store_err)?;
        // Never behind the log: a wall clock set back while the broker
        // was down resumes from the last step.
        let opened = (
            Instant::now(),
            ((settings.wall_clock)() - live.store().epoch_ms()).max(live.now().millis()),
        );
        let mut b = Broker {
            opened,
            timers: live.pending_timers().to_vec(),
            live,
            settings,
            tasks: HashMap::new(),
            held: HashMap::new(),
            children: HashMap::new(),
            ready: BTreeSet::new(),
            doomed: Vec::new(),
            core_of: HashMap::new(),
            public_of: HashMap::new(),
            next_id: 1,
            next_workflow: 1,
            workers: HashMap::new(),
            slot_worker: HashMap::new(),
            running: HashMap::new(),
            runs_on: HashMap::new(),
            run_start: HashMap::new(),
            delivered: HashSet::new(),
            handed: HashMap::new(),
            kills: HashMap::new(),
            next_slot: 0,
            next_worker: 1,
            sessions: HashMap::new(),
            submit_keys: HashMap::new(),
            outputs_kept: Default::default(),
            reservations: HashMap::new(),
            next_reservation: 1,
            ended_on: HashMap::new(),
            ended_order: std::collections::VecDeque::new(),
            quotas: HashMap::new(),
            throttled: BTreeMap::new(),
            recheck_users: BTreeSet::new(),
            recheck_orgs: BTreeSet::new(),
            withdrawing: HashMap::new(),
            rejoin: BTreeSet::new(),
            rejoin_check: false,
            batch_room: Room::default(),
            run_as: HashMap::new(),
            removed_users: HashSet::new(),
            removed_orgs: HashSet::new(),
            batch_keys: HashSet::new(),
            keys_pruned: None,
            batch_queued: HashMap::new(),
            misses: HashMap::new(),
            polls: {
                let mut b = [0u8; 4];
                getrandom::fill(&mut b).expect("the operating system's random source");
                u64::from(u32::from_le_bytes(b)) << 32
            },
            handed_in: HashMap::new(),
            counts: Counts::default(),
            sat: Satisfaction::default(),
            counters: Counters {
                dispatch: vec![0; LATENCY_BUCKETS_MS.len()],
                ..Counters::default()
            },
            generation: 0,
            recent: Recent::default(),
        };
        b.load().map_err(store_err)?;
        b.settle();
        Ok(b)
    }

    /// Rebuilds the service's state from its tables and the core.
    pub(super) fn load(&mut self) -> rusqlite::Result<()> {
        let conn = self.live.store().conn();
        {
            let mut q =
                conn.prepare("SELECT id, org, first_slot, slots, state, lease_ms FROM workers ORDER BY id")?;
            let rows = q.query_map([], |r| {
                read_row("workers", r, |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                })
            })?;
            // Slots that joined for released workers ([`Write::ReleaseWorker`]).
            let mut more: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
            let mut q2 =
                conn.prepare("SELECT worker, first_slot, slots FROM worker_slots ORDER BY first_slot")?;
            for row in q2.query_map([], |r| {
                read_row("worker_slots", r, |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                })
            })? {
                let (w, first, n) = row.map_err(stepping("worker_slots", None))?;
                more.entry(w).or_default().push((first, n));
            }
            let now = Instant::now();
            let mut after = None;
            for row in rows {
                let (id, org, first, n, state, lease_ms) = row.map_err(stepping("workers", after))?;
                after = Some(id);
                let mut slots: Vec<SlotId> = Vec::new();
                for &(first, n) in std::iter::once(&(first, n)).chain(more.get(&id).into_iter().flatten()) {
                    slots.extend((first..first + n).map(|s| SlotId(s as u32)));
                    self.next_slot = self.next_slot.max((first + n) as u32);
                }
                self.next_worker = self.next_worker.max(id as u64 + 1);
                let lost = !matches!(state.as_str(), "active" | "draining" | "held");
                let draining = state == "draining";
                let held = state == "held";
                if state == "active" {
                    // A released worker whose slots had not all come back.
                    self.rejoin.insert(id as u64);
                    self.rejoin_check = true;
                }
                if !lost {
                    for &s in &slots {
                        self.slot_worker.insert(s, id as u64);
                    }
                }
                // A worker that was active gets a fresh lease from now.
                self.workers.insert(
                    id as u64,
                    Worker {
                        org: org as u32,
                        lease: Duration::from_millis(lease_ms.max(0) as u64),
                        slots,
                        last_seen: now,
                        lost,
                        gone: Gone::BeforeRestart,
                        draining,
                        held,
                        capacity: n as u32,
                        short_of_disk: None,
                    },
                );
            }
        }
        {
            // `at_ms` is the broker's clock, as every `_ms` of the tables.
            let since = self.clock().millis() - KEYS_KEPT.as_millis() as i64;
            conn.execute("DELETE FROM submit_keys WHERE at_ms < ?1", [since])?;
            let mut q = conn.prepare("SELECT user_id, key, digest, ids, workflow, at_ms FROM submit_keys")?;
            let rows = q.query_map([], |r| {
                read_row("submit_keys", r, |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<u32>>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                })
            })?;
            for row in rows {
                let (user, key, digest, ids, workflow, at_ms) = row.map_err(stepping("submit_keys", None))?;
                if let (Ok(digest), Ok(ids)) = (
                    <[u8; 32]>::try_from(digest.as_slice()),
                    serde_json::from_str(&ids),
                ) {
                    self.submit_keys.insert(
                        (user, key),
                        Keyed {
                            digest,
                            ids,
                            workflow,
                            at_ms,
                        },
                    );
                }
            }
        }
        self.quotas = admin::load_quotas(conn)?;
        {
            let mut q = conn.prepare("SELECT kind, id FROM removed")?;
            for row in q.query_map([], |r| {
                read_row("removed", r, |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
            })? {
                match row.map_err(stepping("removed", None))? {
                    (k, id) if k == "user" => self.removed_users.insert(id),
                    (_, id) => self.removed_orgs.insert(id as u32),
                };
            }
        }
        {
            let mut q = conn.prepare("SELECT id, run_as FROM users WHERE run_as IS NOT NULL")?;
            for row in q.query_map([], |r| {
                read_row("users", r, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            })? {
                let (user, account) = row.map_err(stepping("users", None))?;
                self.run_as.insert(user, account);
            }
        }
        {
            let mut q = conn.prepare("SELECT worker, hash FROM worker_sessions")?;
            let rows = q.query_map([], |r| {
                read_row("worker_sessions", r, |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                })
            })?;
            for row in rows {
                let (worker, h) = row.map_err(stepping("worker_sessions", None))?;
                if let Ok(h) = <[u8; 32]>::try_from(h.as_slice()) {
                    self.sessions.insert(h, worker as u64);
                }
            }
        }
        {
            let mut q = conn.prepare(
                "SELECT id, user_id, org, name, command, stage_in, stage_out, submit_ms, core_id, state,
                        priority, optional, workflow, activity, time_limit_ms, memory_bytes, hold, caps
                 FROM tasks WHERE state IN ('live', 'held')",
            )?;
            let mut rows = q.query([])?;
            let mut after = None;
            while let Some(r) = rows.next().map_err(stepping("tasks", after))? {
                let id = r.get::<_, i64>(0)? as u64;
                after = Some(id as i64);
                // Every column read first (a row that does not read names
                // itself), then kept.
                let row = read_row("tasks", r, |r| {
                    Ok(TaskRow {
                        limits: Limits {
                            time_limit_ms: r.get::<_, Option<i64>>(14)?.map(|v| v.max(0) as u64),
                            memory_bytes: r.get::<_, Option<i64>>(15)?.map(|v| v.max(0) as u64),
                            caps: match r.get::<_, Option<String>>(17)? {
                                None => Default::default(),
                                Some(text) => serde_json::from_str(&text).map_err(|e| {
                                    rusqlite::Error::FromSqlConversionFailure(
                                        17,
                                        rusqlite::types::Type::Text,
                                        Box::new(e),
                                    )
                                })?,
                            },
                        },
                        user: r.get(1)?,
                        org: r.get::<_, i64>(2)? as u32,
                        name: r.get(3)?,
                        command: r.get(4)?,
                        stage_in: r.get(5)?,
                        stage_out: r.get(6)?,
                        submit_ms: r.get(7)?,
                        core_id: r.get(8)?,
                        live: r.get::<_, String>(9)? == "live",
                        priority: r.get(10)?,
                        optional: r.get::<_, i64>(11)? != 0,
                        workflow: r.get(12)?,
                        activity: r.get::<_, Option<i64>>(13).ok().flatten(),
                        hold: r.get(16)?,
                    })
                })?;
                let TaskRow {
                    limits,
                    user,
                    name,
                    command,
                    stage_in,
                    stage_out,
                    submit_ms,
                    ..
                } = row;
                if row.live {
                    let core = TaskId(row.core_id.map_or(id, |c| c as u64));
                    if core.0 != id {
                        self.core_of.insert(id, core);
                        self.public_of.insert(core, id);
                    }
                    self.tasks.insert(
                        core,
                        Live_ {
                            public: id,
                            user,
                            name,
                            command,
                            stage_in,
                            stage_out,
                            submit_ms,
                            limits,
                        },
                    );
                } else {
                    self.held.insert(
                        id,
                        Held {
                            user,
                            org: row.org,
                            name,
                            command,
                            stage_in,
                            stage_out,
                            priority: row.priority,
                            optional: row.optional,
                            submit_ms,
                            limits,
                            workflow: row.workflow.map(|w| WorkflowRef {
                                workflow: WorkflowId(w as u32),
                                activity: row.activity.unwrap_or(0) as u32,
                            }),
                            parents: Vec::new(),
                            pending: 0,
                            hold: row.hold.as_deref().and_then(HoldBy::of),
                        },
                    );
                }
            }
        }
        self.next_id = conn.query_row("SELECT coalesce(max(id), 0) FROM tasks", [], |r| {
            r.get::<_, i64>(0)
        })? as u64
            + 1;
        self.next_workflow = conn.query_row("SELECT coalesce(max(id), 0) FROM workflows", [], |r| {
            r.get::<_, i64>(0)
        })? as u32
            + 1;
        // Held tasks against their parents' rows: what was not settled
        // before a crash is settled now.
        {
            let mut q = conn.prepare_cached(
                "SELECT p.parent, t.state FROM task_parents p LEFT JOIN tasks t ON t.id = p.parent
                 WHERE p.child = ?1 ORDER BY p.parent",
            )?;
            let mut ids: Vec<u64> = self.held.keys().copied().collect();
            ids.sort_unstable();
            for child in ids {
                let mut parents = Vec::new();
                let mut pending = 0;
                let mut rows = q.query([child as i64])?;
                while let Some(r) = rows.next().map_err(stepping("task_parents", None))? {
                    let (parent, state) = read_row("task_parents", r, |r| {
                        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Option<String>>(1)?))
                    })?;
                    parents.push(parent);
                    match state.as_deref() {
                        Some("completed") => {}
                        Some("held" | "live") => {
                            pending += 1;
                            self.children.entry(parent).or_default().push(child);
                        }
                        Some(s) => self.doomed.push((child, parent_reason(parent, s))),
                        None => self
                            .doomed
                            .push((child, format!("parent task {parent} is unknown"))),
                    }
                }
                let h = self.held.get_mut(&child).expect("loaded above");
                h.parents = parents;
                h.pending = pending;
                if pending == 0 && h.hold.is_none() {
                    self.ready.insert(child);
                }
            }
        }
        // Counts of ended and held tasks; live ones come from the core.
        {
            let mut q = conn.prepare("SELECT user_id, state, count(*) FROM tasks GROUP BY user_id, state")?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next().map_err(stepping("tasks", None))? {
                let (user, state, n) = read_row("tasks", r, |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
                })?;
                if let Some(st) = St::of_row(&state) {
                    self.counts.add(user, st, n as u64);
                }
            }
        }
        // Satisfaction: its integrals from the tables, the rest from the core.
        let clock: Option<(f64, i64)> = conn
            .query_row("SELECT g, at_ms FROM share_clock WHERE id = 0", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let (g, at) = clock.unwrap_or((0.0, self.live.now().millis()));
        self.sat = Satisfaction {
            g,
            at,
            ..Satisfaction::default()
        };
        {
            let mut q = conn.prepare("SELECT user_id, allocated_ms, deserved, base FROM shares")?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next().map_err(stepping("shares", None))? {
                let (user, share) = read_row("shares", r, |r| {
                    Ok((
                        r.get(0)?,
                        Share {
                            allocated: r.get(1)?,
                            deserved: r.get(2)?,
                            base: r.get(3)?,
                            ..Share::default()
                        },
                    ))
                })?;
                self.sat.users.insert(user, share);
            }
        }
        // Which worker runs what, and since when: from the core's state.
        let view = self.live.core().view();
        self.sat.slots = view.total_slots() as i64;
        for id in self.live.core().live_task_ids() {
            let Some(t) = view.task(id) else { continue };
            let user = t.spec().user().0;
            let share = self.sat.users.entry(user).or_insert_with(|| Share {
                base: g,
                ..Share::default()
            });
            share.live += 1;
            match t.start() {
                Some(start) => {
                    share.running += 1;
                    share.start_sum += start.millis();
                    self.run_start.insert(id, (user, start.millis()));
                    self.counts.add(user, St::Running, 1);
                }
                None => self.counts.add(user, St::Waiting, 1),
            }
            if let Some(&s) = t.held_slots().first()
                && let Some(&w) = self.slot_worker.get(&s)
            {
                self.running.entry(w).or_default().insert(id);
                self.runs_on.insert(id, w);
                // Handed before the restart, most likely: a stop kills it.
                self.handed.insert(id, (w, t.attempts()));
            }
        }
        self.sat.present = self.sat.users.values().filter(|s| s.live > 0).count() as u64;
        Ok(())
    }
}

/// A live or held task's row, as [`Broker::load`] reads it.
struct TaskRow {
    limits: Limits,
    user: i64,
    org: u32,
    name: String,
    command: String,
    stage_in: Option<String>,
    stage_out: Option<String>,
    submit_ms: i64,
    core_id: Option<i64>,
    live: bool,
    priority: i64,
    optional: bool,
    workflow: Option<i64>,
    activity: Option<i64>,
    hold: Option<String>,
}
