//! Submissions: idempotency keys, task limits, and the plan and
//! bookkeeping of a submitted batch of tasks.

use super::commands::Written;
use super::{Broker, Held, Limits, Live_, Plan, PlanKind, Reply, ServiceError, St};
use crate::api::{NewTask, WorkflowSpec, check_tasks};
use crate::dashboard::What;
use fairsched_core::{Event, TaskId, TaskSpec, Time, WorkflowId, WorkflowRef};
use rusqlite::params;
use std::collections::HashMap;
use std::time::Duration;

/// A submission's `Idempotency-Key` and the SHA-256 of its body: the
/// same key again from the same user, within [`KEYS_KEPT`], gets the
/// first reply and submits nothing; with another body, a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitKey {
    pub key: String,
    pub digest: [u8; 32],
}

/// The most tasks of a submission written in one step of the broker's
/// thread: a larger bag of tasks is written in steps of this many (about
/// 4 ms each on this machine), and other requests are answered between.
pub const SUBMIT_STEP: usize = 250;

/// How long a submission's idempotency key is remembered.
pub const KEYS_KEPT: Duration = Duration::from_secs(24 * 3600);

/// A remembered submission: its body's digest and its reply.
#[derive(Clone, Debug)]
pub(super) struct Keyed {
    pub(super) digest: [u8; 32],
    pub(super) ids: Vec<u64>,
    pub(super) workflow: Option<u32>,
    /// When it was submitted (the broker's clock, ms).
    pub(super) at_ms: i64,
}

impl Broker {
    /// The reply a submission keyed `k` got already (a replay), if the same
    /// user used that key lately with the same body; a conflict if with
    /// another.
    pub fn keyed(&self, user: i64, k: &SubmitKey) -> Reply<Option<(Vec<u64>, Option<u32>)>> {
        match self.submit_keys.get(&(user, k.key.clone())) {
            None => Ok(None),
            Some(done) if done.digest == k.digest => Ok(Some((done.ids.clone(), done.workflow))),
            Some(_) => Err(ServiceError::Conflict(format!(
                "Idempotency-Key `{}` was used for another request: a retry sends the same body, a new request a new key",
                k.key
            ))),
        }
    }

    /// Remembers `ids` as the reply of a submission written in steps
    /// (each step keyed on its own), under its whole key: a retry of it
    /// is answered at once, and the key cannot be used for another
    /// request. Not in the steps' transactions: should it fail, a retry
    /// replays the steps one by one.
    pub fn remember_key(&mut self, user: i64, k: &SubmitKey, ids: &[u64]) -> Reply<()> {
        let at_ms = self.clock().millis();
        write_key(self.live.store().conn(), user, k, ids, None, at_ms).map_err(ServiceError::unavailable)?;
        self.submit_keys.insert(
            (user, k.key.clone()),
            Keyed {
                digest: k.digest,
                ids: ids.to_vec(),
                workflow: None,
                at_ms,
            },
        );
        Ok(())
    }

    /// Each task's limits: the operator's maximum when it gives none,
    /// refused over it.
    pub(super) fn apply_limits(&self, tasks: &mut [NewTask]) -> Reply<()> {
        let max_time = self
            .settings
            .max_time_limit
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        for (i, t) in tasks.iter_mut().enumerate() {
            if let Some((name, v, min)) = t.caps.too_low() {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}].caps.{name}: {v}, at least {min} (a run cannot start with less); leave it out for the worker's"
                )));
            }
            if t.time_limit_ms == Some(0) || t.memory_bytes == Some(0) {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}]: a limit of 0 runs nothing; leave it out for the default"
                )));
            }
            if let (Some(asked), Some(max)) = (t.time_limit_ms, max_time)
                && asked > max
            {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}].time_limit_ms: {asked}, at most {max} (serve --max-time-limit)"
                )));
            }
            if let (Some(asked), Some(max)) = (t.memory_bytes, self.settings.max_memory)
                && asked > max
            {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}].memory_bytes: {asked}, at most {max} (serve --max-memory)"
                )));
            }
            t.time_limit_ms = t.time_limit_ms.or(max_time);
            t.memory_bytes = t.memory_bytes.or(self.settings.max_memory);
        }
        Ok(())
    }
}

impl Broker {
    /// A submission's plan: its tasks checked (rights, idempotency key,
    /// priorities, limits, quotas), given ids, and sent to the core or held.
    pub(super) fn plan_submit(
        &mut self,
        user: i64,
        org: u32,
        tasks: Vec<NewTask>,
        workflow: Option<WorkflowSpec>,
        key: Option<SubmitKey>,
        reservation: Option<u64>,
    ) -> Reply<Plan> {
        if self.removed_users.contains(&user) || self.removed_orgs.contains(&org) {
            return Err(ServiceError::Forbidden(
                "this user (or its organization) was removed".into(),
            ));
        }
        if let Some(k) = &key
            && !self.batch_keys.insert((user, k.key.clone()))
        {
            // Its twin in this batch is not committed yet: what it
            // gets is not known. The client's retry gets it.
            return Err(ServiceError::Conflict(format!(
                "Idempotency-Key `{}`: the same request is being applied; retry",
                k.key
            )));
        }
        if let Some(k) = &key
            && let Some((ids, workflow)) = self.keyed(user, k)?
        {
            return Ok(Plan {
                events: Vec::new(),
                kind: PlanKind::Replayed { ids, workflow },
            });
        }
        check_tasks(&tasks, workflow.as_ref())
            .map_err(|m| ServiceError::Invalid(format!("request body: {m}")))?;
        let max = self.settings.max_user_priority;
        if let Some((i, p)) = tasks
            .iter()
            .enumerate()
            .find_map(|(i, t)| t.priority.filter(|&p| p > max).map(|p| (i, p)))
        {
            return Err(ServiceError::Forbidden(format!(
                "tasks[{i}].priority: {p}; users may give at most {max} (serve --max-user-priority): lower your own tasks, not raise them over others'"
            )));
        }
        let mut tasks = tasks;
        self.apply_limits(&mut tasks)?;
        let n = tasks.len() as u64;
        // A step of a request whose quota was checked whole when it was
        // reserved: taken out of the reservation once committed.
        let reservation = reservation.filter(|r| self.reservations.contains_key(r));
        if reservation.is_none() {
            self.check_quota(user, org, n, &self.batch_queued)?;
        }
        *self.batch_queued.entry(user).or_default() += n;
        let workflow = workflow.map(|w| {
            let id = self.next_workflow;
            self.next_workflow += 1;
            (id, w)
        });
        let mut events = Vec::with_capacity(tasks.len());
        let mut ids: Vec<u64> = Vec::with_capacity(tasks.len());
        let mut parents: Vec<Vec<u64>> = Vec::with_capacity(tasks.len());
        let mut to_core: Vec<bool> = Vec::with_capacity(tasks.len());
        let mut room = std::mem::take(&mut self.batch_room);
        for t in &tasks {
            let id = self.take_id();
            let mut ps: Vec<u64> = t.after.iter().map(|&i| ids[i as usize]).collect();
            ps.sort_unstable();
            ps.dedup();
            ids.push(id);
            let now = ps.is_empty() && self.enters_now(&mut room, user, org);
            to_core.push(now);
            if now {
                let mut spec = TaskSpec::new(id, user, org);
                spec.priority = t.priority.unwrap_or(1);
                spec.optional = t.optional;
                spec.workflow = workflow.as_ref().map(|(w, _)| WorkflowRef {
                    workflow: WorkflowId(*w),
                    activity: t.activity.unwrap_or(0),
                });
                events.push(Event::Submit(spec));
            }
            parents.push(ps);
        }
        self.batch_room = room;
        if let Some(k) = &key {
            // Now, not when committed: a retry in the same batch
            // is a replay too. Forgotten again if the commit fails.
            let at_ms = self.clock().millis();
            self.submit_keys.insert(
                (user, k.key.clone()),
                Keyed {
                    digest: k.digest,
                    ids: ids.clone(),
                    workflow: workflow.as_ref().map(|(w, _)| *w),
                    at_ms,
                },
            );
        }
        Ok(Plan {
            events,
            kind: PlanKind::Submit(Submission {
                user,
                org,
                tasks,
                ids,
                parents,
                to_core,
                workflow,
                key,
                reservation,
            }),
        })
    }

    /// Reserves room for `n` queued tasks of `user` (of `org`) under the
    /// queued quotas, for a request written in steps: refused whole if the
    /// request would pass a quota; its steps then take their tasks out of
    /// it, and no other request can take the room meanwhile. Its id, for
    /// the steps and for [`Broker::release`].
    pub fn reserve(&mut self, user: i64, org: u32, n: u64) -> Reply<u64> {
        self.check_quota(user, org, n, &HashMap::new())?;
        let id = self.next_reservation;
        self.next_reservation += 1;
        self.reservations.insert(id, (user, n));
        Ok(id)
    }

    /// The room reservation `id` still holds is given back (its request
    /// ended, done or not).
    pub fn release(&mut self, id: u64) {
        self.reservations.remove(&id);
    }

    /// Tasks reserved for `user`'s requests being written in steps.
    pub(super) fn reserved(&self, user: i64) -> u64 {
        self.reservations
            .values()
            .filter(|(u, _)| *u == user)
            .map(|(_, n)| n)
            .sum()
    }
}

/// The row of a submission's key `k`: its reply (`ids`, `workflow`), made
/// at `at_ms`.
fn write_key(
    conn: &rusqlite::Connection,
    user: i64,
    k: &SubmitKey,
    ids: &[u64],
    workflow: Option<u32>,
    at_ms: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO submit_keys (user_id, key, digest, ids, workflow, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        user,
        k.key,
        k.digest.to_vec(),
        serde_json::to_string(ids).expect("ids serialize"),
        workflow,
        at_ms
    ])
}

/// An accepted submission, as planned: its tasks and where each goes.
pub(super) struct Submission {
    pub(super) user: i64,
    pub(super) org: u32,
    pub(super) tasks: Vec<NewTask>,
    pub(super) ids: Vec<u64>,
    /// Each task's parents (public ids).
    pub(super) parents: Vec<Vec<u64>>,
    /// Whether each task goes to the core now (no parents, room under
    /// the running quotas); if not, it is held.
    pub(super) to_core: Vec<bool>,
    pub(super) workflow: Option<(u32, WorkflowSpec)>,
    pub(super) key: Option<SubmitKey>,
    /// The reservation its tasks come out of, if it is a step.
    pub(super) reservation: Option<u64>,
}

impl Submission {
    /// Its rows: the tasks, their parents, its workflow and its key.
    pub(super) fn persist(&self, tx: &rusqlite::Transaction, now_ms: i64) -> rusqlite::Result<()> {
        let Submission {
            user,
            org,
            tasks,
            ids,
            parents,
            to_core,
            workflow,
            key,
            ..
        } = self;
        if let Some(k) = key {
            write_key(tx, *user, k, ids, workflow.as_ref().map(|(w, _)| *w), now_ms)?;
        }
        if let Some((id, w)) = workflow {
            tx.execute(
                "INSERT INTO workflows (id, user_id, org, name, activities, submit_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    user,
                    org,
                    w.name,
                    serde_json::to_string(&w.activities).expect("strings serialize"),
                    now_ms
                ],
            )?;
        }
        let mut ins = tx.prepare_cached(
            "INSERT INTO tasks (id, user_id, org, name, command, stage_in, stage_out, priority, state, submit_ms, optional, core_id, workflow, activity, time_limit_ms, memory_bytes, caps)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )?;
        let mut edge =
            tx.prepare_cached("INSERT OR IGNORE INTO task_parents (child, parent) VALUES (?1, ?2)")?;
        for (((t, id), ps), &live) in tasks.iter().zip(ids).zip(parents).zip(to_core) {
            ins.execute(params![
                *id as i64,
                user,
                org,
                t.name.as_deref().unwrap_or(""),
                t.command,
                t.stage_in,
                t.stage_out,
                t.priority.unwrap_or(1),
                if live { "live" } else { "held" },
                now_ms,
                t.optional,
                live.then_some(*id as i64),
                workflow.as_ref().map(|w| w.0),
                workflow.as_ref().map(|_| t.activity.unwrap_or(0)),
                t.time_limit_ms.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                t.memory_bytes.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                (!t.caps.is_none()).then(|| serde_json::to_string(&t.caps).expect("caps serialize")),
            ])?;
            for &p in ps {
                edge.execute(params![*id as i64, p as i64])?;
            }
        }
        Ok(())
    }
}

impl Broker {
    /// Applies a committed submission: its tasks are live or held.
    pub(super) fn apply_submission(&mut self, s: Submission, now: Time) -> Written {
        let Submission {
            user,
            org,
            tasks,
            ids,
            parents,
            to_core,
            workflow,
            reservation,
            ..
        } = s;
        if let Some(r) = reservation
            && let Some((_, left)) = self.reservations.get_mut(&r)
        {
            *left = left.saturating_sub(ids.len() as u64);
        }
        let held_before = self.held.len() as u64;
        for (((t, &id), ps), now_in) in tasks.into_iter().zip(&ids).zip(parents).zip(to_core) {
            if now_in {
                self.tasks.insert(
                    TaskId(id),
                    Live_ {
                        public: id,
                        user,
                        name: t.name.unwrap_or_default(),
                        command: t.command,
                        stage_in: t.stage_in,
                        stage_out: t.stage_out,
                        submit_ms: now.millis(),
                        limits: Limits {
                            time_limit_ms: t.time_limit_ms,
                            memory_bytes: t.memory_bytes,
                            caps: t.caps,
                        },
                    },
                );
                self.counts.add(user, St::Waiting, 1);
                continue;
            }
            for &parent in &ps {
                self.children.entry(parent).or_default().push(id);
            }
            self.held.insert(
                id,
                Held {
                    user,
                    org,
                    name: t.name.unwrap_or_default(),
                    command: t.command,
                    stage_in: t.stage_in,
                    stage_out: t.stage_out,
                    priority: t.priority.unwrap_or(1),
                    optional: t.optional,
                    submit_ms: now.millis(),
                    limits: Limits {
                        time_limit_ms: t.time_limit_ms,
                        memory_bytes: t.memory_bytes,
                        caps: t.caps,
                    },
                    workflow: workflow.as_ref().map(|w| WorkflowRef {
                        workflow: WorkflowId(w.0),
                        activity: t.activity.unwrap_or(0),
                    }),
                    pending: ps.len() as u32,
                    hold: None,
                    parents: ps,
                },
            );
            self.counts.add(user, St::Held, 1);
            if self.held[&id].pending == 0 {
                // Past the running quota.
                self.throttle(id, user, org);
            }
        }
        if let Some(&first) = ids.first() {
            let held = self.held.len() as u64 - held_before;
            self.recent.note(
                now.millis(),
                What::Submitted {
                    user,
                    org,
                    first,
                    count: ids.len() as u64,
                    held,
                },
            );
        }
        Written::Submitted {
            ids,
            workflow: workflow.map(|w| w.0),
        }
    }
}
