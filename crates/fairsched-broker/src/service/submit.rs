//! Submissions: idempotency keys, task limits, and the plan and
//! bookkeeping of a submitted batch of tasks.

use super::{Broker, Plan, PlanKind, Reply, ServiceError};
use crate::api::{NewTask, WorkflowSpec, check_tasks};
use fairsched_core::{Event, TaskSpec, WorkflowId, WorkflowRef};
use std::time::Duration;

/// A submission's `Idempotency-Key` and the SHA-256 of its body: the
/// same key again from the same user, within [`KEYS_KEPT`], gets the
/// first reply and submits nothing; with another body, a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitKey {
    pub key: String,
    pub digest: [u8; 32],
}

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
    /// Each task's limits: the operator's maximum when it gives none,
    /// refused over it.
    pub(super) fn apply_limits(&self, tasks: &mut [NewTask]) -> Reply<()> {
        let max_time = self
            .settings
            .max_time_limit
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        for (i, t) in tasks.iter_mut().enumerate() {
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
            && let Some(done) = self.submit_keys.get(&(user, k.key.clone()))
        {
            if done.digest != k.digest {
                return Err(ServiceError::Conflict(format!(
                    "Idempotency-Key `{}` was used for another request: a retry sends the same body, a new request a new key",
                    k.key
                )));
            }
            return Ok(Plan {
                events: Vec::new(),
                kind: PlanKind::Replayed {
                    ids: done.ids.clone(),
                    workflow: done.workflow,
                },
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
        self.check_quota(user, org, n, &self.batch_queued)?;
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
            kind: PlanKind::Submit {
                user,
                org,
                tasks,
                ids,
                parents,
                to_core,
                workflow,
                key,
            },
        })
    }
}
