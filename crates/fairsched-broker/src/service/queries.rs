//! Reads: tokens, tasks as their owners see them (one, all, by page),
//! counts by state, satisfaction, names.

use super::{Broker, Reply, ServiceError, St};
use crate::api::{MAX_TASKS_PAGE, StatusReply, TaskOut, TasksReply};
use crate::identity::{Principal, hash};
use rusqlite::OptionalExtension;
use std::collections::{BTreeMap, HashMap};

pub(super) fn allowed(who: &Principal, owner: i64, id: u64) -> Reply<()> {
    match who {
        Principal::Admin => Ok(()),
        Principal::User { id: me, .. } if *me == owner => Ok(()),
        Principal::User { .. } => Err(ServiceError::Forbidden(format!(
            "task {id} belongs to another user"
        ))),
        Principal::Worker { .. } | Principal::Session { .. } => {
            Err(ServiceError::Forbidden("workers have no tasks".into()))
        }
    }
}

/// The columns [`row_task`] reads, in its order.
pub(super) const TASK_COLUMNS: &str = "SELECT id, name, user_id, org, state, attempts, exit_code, signal, submit_ms, start_ms, end_ms, command, workflow, reason FROM tasks";

/// A task's row as its owner sees it; a row that does not read names
/// itself ([`crate::store::CorruptRow`]).
pub(super) fn row_task(r: &rusqlite::Row) -> rusqlite::Result<TaskOut> {
    crate::store::read_row("tasks", r, row_task_unchecked)
}

fn row_task_unchecked(r: &rusqlite::Row) -> rusqlite::Result<TaskOut> {
    Ok(TaskOut {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        user: r.get(2)?,
        org: r.get::<_, i64>(3)? as u32,
        state: r.get(4)?,
        attempts: r.get::<_, i64>(5)? as u32,
        exit_code: r.get(6)?,
        signal: r.get(7)?,
        submit_ms: r.get(8)?,
        start_ms: r.get(9)?,
        end_ms: r.get(10)?,
        command: r.get(11)?,
        workflow: r.get::<_, Option<i64>>(12)?.map(|w| w as u32),
        reason: r.get(13)?,
    })
}

impl Broker {
    /// Who holds `token`: a token of the store, or a worker's session.
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>, ServiceError> {
        if let Some(p) = self
            .live
            .store()
            .authenticate(token)
            .map_err(ServiceError::unavailable)?
        {
            return Ok(Some(p));
        }
        let h = hash(token.trim());
        Ok(self.sessions.get(&h).and_then(|&worker| {
            let w = self.workers.get(&worker)?;
            Some(Principal::Session { org: w.org, worker })
        }))
    }

    /// Organization names by id (for `/metrics`).
    pub fn org_names(&self) -> HashMap<u32, String> {
        self.names("SELECT id, name FROM orgs")
            .into_iter()
            .map(|(id, n)| (id as u32, n))
            .collect()
    }

    /// User names by id (for `/metrics`).
    pub fn user_names(&self) -> HashMap<i64, String> {
        self.names("SELECT id, name FROM users").into_iter().collect()
    }

    pub(super) fn names(&self, sql: &str) -> Vec<(i64, String)> {
        let conn = self.live.store().conn();
        let Ok(mut q) = conn.prepare_cached(sql) else {
            return Vec::new();
        };
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map(|rows| rows.filter_map(Result::ok).collect())
            .unwrap_or_default()
    }

    /// The task as its owner sees it.
    pub(super) fn task_out(&self, id: u64) -> Reply<TaskOut> {
        if let Some(h) = self.held.get(&id) {
            return Ok(TaskOut {
                id,
                name: h.name.clone(),
                user: h.user,
                org: h.org,
                state: "held".into(),
                attempts: 0,
                exit_code: None,
                signal: None,
                submit_ms: h.submit_ms,
                start_ms: None,
                end_ms: None,
                command: h.command.clone(),
                workflow: h.workflow.map(|w| w.workflow.0),
                reason: self.held_reason(id),
            });
        }
        if let Some((core, d)) = self.live_task(id) {
            let view = self.live.core().view();
            let t = view.task(core);
            let spec = t.map(|t| t.spec());
            return Ok(TaskOut {
                id,
                name: d.name.clone(),
                user: d.user,
                org: spec.as_ref().map(|s| s.org().0).unwrap_or(0),
                state: if t.is_some_and(|t| t.is_running()) {
                    "running".into()
                } else {
                    "waiting".into()
                },
                attempts: t.map(|t| t.attempts()).unwrap_or(0),
                exit_code: None,
                signal: None,
                submit_ms: d.submit_ms,
                start_ms: t.and_then(|t| t.last_start()).map(|s| s.millis()),
                end_ms: None,
                command: d.command.clone(),
                workflow: spec.and_then(|s| s.workflow()).map(|w| w.workflow.0),
                reason: None,
            });
        }
        self.live
            .store()
            .conn()
            .query_row(&format!("{TASK_COLUMNS} WHERE id = ?1"), [id as i64], row_task)
            .optional()
            .map_err(ServiceError::unavailable)?
            .ok_or_else(|| ServiceError::NotFound(format!("no task {id}")))
    }

    /// Task `id`, if `who` may see it.
    pub fn task(&self, who: &Principal, id: u64) -> Reply<TaskOut> {
        let t = self.task_out(id)?;
        allowed(who, t.user, id)?;
        Ok(t)
    }

    /// Every task of `who` (all of them for the admin), in one list.
    pub fn tasks(&self, who: &Principal) -> Reply<Vec<TaskOut>> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = self.tasks_page(who, after, MAX_TASKS_PAGE)?;
            out.extend(page);
            match next {
                Some(n) => after = Some(n),
                None => return Ok(out),
            }
        }
    }

    /// The tasks of `who` (all of them for the admin) with ids over `after`,
    /// by id, at most `limit` of them; and the id to pass as `after` for the
    /// next page (`None`: this page is the last).
    pub fn tasks_page(
        &self,
        who: &Principal,
        after: Option<u64>,
        limit: u32,
    ) -> Reply<(Vec<TaskOut>, Option<u64>)> {
        let user = match who {
            Principal::Admin => None,
            Principal::User { id, .. } => Some(*id),
            Principal::Worker { .. } | Principal::Session { .. } => {
                return Err(ServiceError::Forbidden("workers have no tasks".into()));
            }
        };
        // One row more than the page: whether another page follows.
        let (after, take) = (
            after.map_or(-1, |a| a.min(i64::MAX as u64) as i64),
            i64::from(limit) + 1,
        );
        let conn = self.live.store().conn();
        // Two statements, not `?1 IS NULL OR user_id = ?1`: each walks its
        // own index (the rowid; `tasks_user`) from `after` on.
        let mut q = match user {
            None => conn.prepare_cached(&format!("{TASK_COLUMNS} WHERE id > ?1 ORDER BY id LIMIT ?2")),
            Some(_) => conn.prepare_cached(&format!(
                "{TASK_COLUMNS} WHERE user_id = ?3 AND id > ?1 ORDER BY id LIMIT ?2"
            )),
        }
        .map_err(ServiceError::unavailable)?;
        let rows = match user {
            None => q.query_map(rusqlite::params![after, take], row_task),
            Some(u) => q.query_map(rusqlite::params![after, take, u], row_task),
        }
        .map_err(ServiceError::unavailable)?;
        let mut out = Vec::new();
        for r in rows {
            let t = r.map_err(ServiceError::unavailable)?;
            if t.state == "live" || t.state == "held" {
                out.push(self.task_out(t.id)?);
            } else {
                out.push(t);
            }
        }
        let next = if out.len() > limit as usize {
            out.truncate(limit as usize);
            out.last().map(|t| t.id)
        } else {
            None
        };
        Ok((out, next))
    }

    /// `GET /v1/tasks?after=ID&limit=N`: [`Broker::tasks_page`], with the
    /// users' names for the admin.
    pub fn task_list(&self, who: &Principal, after: Option<u64>, limit: u32) -> Reply<TasksReply> {
        let (tasks, next) = self.tasks_page(who, after, limit)?;
        let mut users = BTreeMap::new();
        if matches!(who, Principal::Admin) {
            let names = self.user_names();
            for t in &tasks {
                if let Some(n) = names.get(&t.user) {
                    users.entry(t.user).or_insert_with(|| n.clone());
                }
            }
        }
        Ok(TasksReply { tasks, users, next })
    }

    /// Counts by state for `who`: kept as tasks change state, so O(1)
    /// (plus the workers).
    pub fn status(&self, who: &Principal) -> Reply<StatusReply> {
        let c = match who {
            Principal::Admin => self.counts.all,
            Principal::User { id, .. } => self.counts.users.get(id).copied().unwrap_or_default(),
            Principal::Worker { .. } | Principal::Session { .. } => {
                return Err(ServiceError::Forbidden("workers have no tasks".into()));
            }
        };
        let view = self.live.core().view();
        Ok(StatusReply {
            held: c.get(St::Held),
            waiting: c.get(St::Waiting),
            running: c.get(St::Running),
            completed: c.get(St::Completed),
            failed: c.get(St::Failed),
            cancelled: c.get(St::Cancelled),
            killed: c.get(St::Killed),
            rejected: c.get(St::Rejected),
            workers: self.worker_count() as u64,
            slots: view.total_slots() as u64,
            busy_slots: view.busy_slots(),
            workers_short_of_disk: self
                .workers
                .values()
                .filter(|w| !w.lost && w.short_of_disk.is_some())
                .count() as u64,
        })
    }

    /// The bytes free in worker `id`'s work directory, if its last report
    /// said it was short of space.
    pub fn short_of_disk(&self, id: u64) -> Option<u64> {
        self.workers.get(&id).and_then(|w| w.short_of_disk)
    }

    /// The state of task `id` in a word (`held`, `waiting`, `running`, or
    /// how it ended).
    pub(super) fn state_of(&self, id: u64) -> String {
        if self.held.contains_key(&id) {
            return "held".into();
        }
        if let Some((core, _)) = self.live_task(id) {
            let running = self.live.core().view().task(core).is_some_and(|t| t.is_running());
            return if running { "running" } else { "waiting" }.into();
        }
        self.live
            .store()
            .conn()
            .query_row("SELECT state FROM tasks WHERE id = ?1", [id as i64], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .ok()
            .flatten()
            .unwrap_or_else(|| "unknown".into())
    }

    /// `user`'s satisfaction now (see `Satisfaction`); `None` while
    /// nothing is deserved yet.
    pub fn satisfaction(&self, user: i64) -> Option<f64> {
        self.sat.value(user, self.clock().millis())
    }

    /// Every user's satisfaction now, by user id (users to whom nothing is
    /// deserved yet are left out).
    pub fn satisfactions(&self) -> Vec<(i64, f64)> {
        let now = self.clock().millis();
        let mut v: Vec<(i64, f64)> = self
            .sat
            .users
            .keys()
            .filter_map(|&u| self.sat.value(u, now).map(|s| (u, s)))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// Every user's satisfaction terms now: (user id, allocated, deserved),
    /// slot-milliseconds, by user id (to sum them by organization).
    pub fn satisfaction_parts(&self) -> Vec<(i64, f64, f64)> {
        let now = self.clock().millis();
        let mut v: Vec<(i64, f64, f64)> = self
            .sat
            .users
            .keys()
            .filter_map(|&u| self.sat.parts(u, now).map(|(a, d)| (u, a, d)))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// Live tasks by state: (waiting, running).
    pub fn live_counts(&self) -> (u64, u64) {
        let view = self.live.core().view();
        let running = view.busy_slots();
        (view.waiting_tasks(), running)
    }

    /// Held workflow tasks (all users).
    pub fn held_count(&self) -> u64 {
        self.counts.all.get(St::Held)
    }
}
