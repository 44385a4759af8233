//! Tasks held back from the scheduler besides workflow tasks waiting for
//! their parents: tasks *on hold* (their user's or the admin's), and tasks
//! past a *running quota*.
//!
//! Both reuse what workflow tasks have: a held task is a row in `tasks`
//! (state `held`) that the core does not know, and it enters the core when
//! it is released ([`Broker::settle`]), under a new core id.
//!
//! - **Hold.** A waiting task put on hold leaves the core: the hold is a
//!   step that cancels it there, and the service keeps it as held (its
//!   row stays `held`, `hold` says who; the core's end of it is not the
//!   task's end). Only a waiting task is put on hold (the admin requeues a
//!   running one first); a workflow task waiting for its parents may be
//!   put on hold too, and then stays held when they complete. A user's
//!   hold is released by the user or the admin, the admin's by the admin
//!   only (as in Slurm). Its runs before the hold are not counted again.
//! - **Running quota.** At most `max_running` tasks of a user (of an
//!   organization's users together) are in the core at once, waiting or
//!   running, so at most that many run. A task past it is held (a
//!   *throttled* task) and enters the core, oldest first, when one of
//!   them ends or the quota is raised. Lowering a quota takes no task out
//!   of the core. The policies see only the tasks in the core: a fairness
//!   policy that weighs queued work sees a throttled user's work in the
//!   core only.

use super::admin::QuotaOf;
use super::{Broker, Plan, PlanKind, Reply, ServiceError, St, allowed};
use crate::identity::Principal;
use fairsched_core::{EndRecord, Event, TaskId};
use std::collections::HashMap;

/// Who put a task on hold: who may release it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HoldBy {
    /// Its user (or the admin for it): either releases it.
    User,
    /// The admin: only the admin releases it.
    Admin,
}

impl HoldBy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            HoldBy::User => "user",
            HoldBy::Admin => "admin",
        }
    }

    pub(crate) fn of(s: &str) -> Option<HoldBy> {
        match s {
            "user" => Some(HoldBy::User),
            "admin" => Some(HoldBy::Admin),
            _ => None,
        }
    }

    fn who(self) -> &'static str {
        match self {
            HoldBy::User => "its user",
            HoldBy::Admin => "the admin",
        }
    }
}

/// Tasks counted into the core but not applied yet (planned in a batch,
/// or picked for release in a round of [`Broker::settle`]), per user and
/// per organization, with each organization's count in the core when
/// first needed.
#[derive(Default)]
pub(crate) struct Room {
    users: HashMap<i64, u64>,
    orgs: HashMap<u32, u64>,
    org_base: HashMap<u32, u64>,
}

impl Broker {
    /// Tasks of `user` in the core (waiting or running).
    fn in_core(&self, user: i64) -> u64 {
        self.counts
            .users
            .get(&user)
            .map_or(0, |c| c.get(St::Waiting) + c.get(St::Running))
    }

    /// Tasks of organization `org`'s users in the core; `u64::MAX` if its
    /// users cannot be read (nothing more enters then).
    fn org_in_core(&self, org: u32) -> u64 {
        self.members(org)
            .map(|m| m.into_iter().map(|u| self.in_core(u)).sum())
            .unwrap_or(u64::MAX)
    }

    fn max_running(&self, of: QuotaOf) -> Option<u64> {
        self.quotas.get(&of).and_then(|l| l.running)
    }

    /// Whether one more task of `user` (of `org`) may enter the core under
    /// the running quotas, counting those `room` has taken already; if so,
    /// `room` takes it.
    pub(super) fn take_room(&self, room: &mut Room, user: i64, org: u32) -> bool {
        let by_user = self.max_running(QuotaOf::User(user));
        let by_org = self.max_running(QuotaOf::Org(org));
        if by_user.is_none() && by_org.is_none() {
            return true;
        }
        if let Some(max) = by_user {
            let has = self.in_core(user) + room.users.get(&user).copied().unwrap_or(0);
            if has >= max {
                return false;
            }
        }
        if let Some(max) = by_org {
            let base = *room.org_base.entry(org).or_insert_with(|| self.org_in_core(org));
            let has = base.saturating_add(room.orgs.get(&org).copied().unwrap_or(0));
            if has >= max {
                return false;
            }
        }
        *room.users.entry(user).or_default() += 1;
        *room.orgs.entry(org).or_default() += 1;
        true
    }

    /// Whether a new task of `user` (of `org`) goes to the core now: not
    /// while older ones of the user wait for the quota.
    pub(super) fn enters_now(&self, room: &mut Room, user: i64, org: u32) -> bool {
        !self.throttled.contains_key(&user) && self.take_room(room, user, org)
    }

    /// Task `id` (held, eligible) waits for its running quota.
    pub(super) fn throttle(&mut self, id: u64, user: i64, org: u32) {
        self.ready.remove(&id);
        self.throttled
            .entry(user)
            .or_insert_with(|| (org, Default::default()))
            .1
            .insert(id);
    }

    /// Task `id` no longer waits for its quota (released, cancelled, on hold).
    pub(super) fn unthrottle(&mut self, id: u64, user: i64) {
        if let Some((_, set)) = self.throttled.get_mut(&user) {
            set.remove(&id);
            if set.is_empty() {
                self.throttled.remove(&user);
            }
        }
    }

    /// A task of `user` (of `org`) left the core: tasks waiting for the
    /// room it had are looked at in the next round of [`Broker::settle`].
    pub(super) fn freed(&mut self, user: i64, org: u32) {
        if self.throttled.is_empty() {
            return;
        }
        if self.throttled.contains_key(&user) {
            self.recheck_users.insert(user);
        }
        if self.max_running(QuotaOf::Org(org)).is_some() {
            self.recheck_orgs.insert(org);
        }
    }

    /// A quota changed: its tasks waiting for room are looked at again.
    pub(crate) fn recheck_quota(&mut self, of: QuotaOf) {
        match of {
            QuotaOf::User(u) if self.throttled.contains_key(&u) => {
                self.recheck_users.insert(u);
            }
            QuotaOf::Org(o) => {
                self.recheck_orgs.insert(o);
            }
            QuotaOf::User(_) => {}
        }
    }

    /// Moves the throttled tasks that may fit now to `ready` (at most as
    /// many per user as there is room: the round picks among them, oldest
    /// first).
    pub(super) fn promote_throttled(&mut self) {
        if self.recheck_users.is_empty() && self.recheck_orgs.is_empty() {
            return;
        }
        let mut users: Vec<i64> = std::mem::take(&mut self.recheck_users).into_iter().collect();
        let orgs = std::mem::take(&mut self.recheck_orgs);
        if !orgs.is_empty() {
            users.extend(
                self.throttled
                    .iter()
                    .filter(|(_, (org, _))| orgs.contains(org))
                    .map(|(&u, _)| u),
            );
        }
        users.sort_unstable();
        users.dedup();
        for user in users {
            let Some((org, set)) = self.throttled.get(&user) else {
                continue;
            };
            let org = *org;
            let room = |max: Option<u64>, has: u64| max.map_or(u64::MAX, |m| m.saturating_sub(has));
            let n = room(self.max_running(QuotaOf::User(user)), self.in_core(user)).min(room(
                self.max_running(QuotaOf::Org(org)),
                if self.max_running(QuotaOf::Org(org)).is_some() {
                    self.org_in_core(org)
                } else {
                    0
                },
            ));
            let ids: Vec<u64> = set
                .iter()
                .copied()
                .take(usize::try_from(n).unwrap_or(usize::MAX))
                .collect();
            for id in ids {
                self.unthrottle(id, user);
                self.ready.insert(id);
            }
        }
    }

    /// The plan of putting task `task` on hold.
    pub(super) fn plan_hold(&self, who: &Principal, task: u64) -> Reply<Plan> {
        let by = match who {
            Principal::Admin => HoldBy::Admin,
            Principal::User { .. } => HoldBy::User,
            _ => return Err(ServiceError::Forbidden("workers have no tasks".into())),
        };
        if let Some(h) = self.held.get(&task) {
            allowed(who, h.user, task)?;
            // The admin may make its user's hold its own.
            if let Some(b) = h.hold.filter(|&b| b == by || b == HoldBy::Admin) {
                return Err(ServiceError::Conflict(format!(
                    "task {task} is already on hold (by {})",
                    b.who()
                )));
            }
            return Ok(Plan {
                events: Vec::new(),
                kind: PlanKind::Hold { task, by, core: None },
            });
        }
        let t = self.task_out(task)?;
        allowed(who, t.user, task)?;
        let Some((core, _)) = self.live_task(task) else {
            return Err(ServiceError::Conflict(format!(
                "task {task} has already ended ({})",
                t.state
            )));
        };
        if self.live.core().view().task(core).is_some_and(|t| t.is_running()) {
            return Err(ServiceError::Conflict(format!(
                "task {task} is running: only a waiting task is put on hold (the admin may requeue it first: `fairsched admin task requeue {task}`)"
            )));
        }
        Ok(Plan {
            events: vec![Event::Cancel { task: core }],
            kind: PlanKind::Hold {
                task,
                by,
                core: Some(core),
            },
        })
    }

    /// The plan of releasing task `task` from its hold.
    pub(super) fn plan_unhold(&self, who: &Principal, task: u64) -> Reply<Plan> {
        let Some(h) = self.held.get(&task) else {
            let t = self.task_out(task)?;
            allowed(who, t.user, task)?;
            return Err(ServiceError::Conflict(format!(
                "task {task} is not on hold ({})",
                t.state
            )));
        };
        allowed(who, h.user, task)?;
        match h.hold {
            None => Err(ServiceError::Conflict(format!(
                "task {task} is not on hold: {}",
                self.held_reason(task)
                    .unwrap_or_else(|| "it waits for its parents".into())
            ))),
            Some(HoldBy::Admin) if !matches!(who, Principal::Admin) => Err(ServiceError::Forbidden(format!(
                "task {task} was put on hold by the admin: only the admin releases it"
            ))),
            Some(_) => Ok(Plan {
                events: Vec::new(),
                kind: PlanKind::Unhold(task),
            }),
        }
    }

    /// Applies a committed hold (a live task's: its end in the core,
    /// which follows, is not the task's end: see [`Broker::withdrawn`]).
    pub(super) fn apply_hold(&mut self, task: u64, by: HoldBy, core: Option<TaskId>) {
        match core {
            Some(core) => {
                self.withdrawing.insert(core, by);
            }
            None => {
                let Some(h) = self.held.get_mut(&task) else {
                    return;
                };
                h.hold = Some(by);
                let user = h.user;
                self.ready.remove(&task);
                self.unthrottle(task, user);
            }
        }
    }

    /// Applies a committed release from hold: the task is released (or
    /// throttled) at the next round of [`Broker::settle`] unless it waits
    /// for parents.
    pub(super) fn apply_unhold(&mut self, task: u64) {
        if let Some(h) = self.held.get_mut(&task) {
            h.hold = None;
            if h.pending == 0 {
                self.ready.insert(task);
            }
        }
    }

    /// A live task put on hold left the core (its end there, `r`): it is
    /// held now.
    pub(super) fn withdrawn(&mut self, r: &EndRecord, by: HoldBy) {
        let core = r.spec.id;
        let public = self.public_id(core);
        self.core_of.remove(&public);
        self.public_of.remove(&core);
        self.handed.remove(&core);
        self.misses.remove(&core);
        self.handed_in.remove(&core);
        self.unrun(core);
        self.run_start.remove(&core);
        let Some(d) = self.tasks.remove(&core) else {
            return;
        };
        let (user, org) = (r.spec.user.0, r.spec.org.0);
        self.counts.shift(user, St::Waiting, St::Held);
        self.held.insert(
            public,
            super::Held {
                user,
                org,
                name: d.name,
                command: d.command,
                stage_in: d.stage_in,
                stage_out: d.stage_out,
                priority: r.spec.priority,
                optional: r.spec.optional,
                submit_ms: d.submit_ms,
                limits: d.limits,
                workflow: r.spec.workflow,
                parents: Vec::new(),
                pending: 0,
                hold: Some(by),
            },
        );
        self.freed(user, org);
    }

    /// Why held task `id` is held, unless it waits for its parents (the
    /// explanation lists them).
    pub(super) fn held_reason(&self, id: u64) -> Option<String> {
        let h = self.held.get(&id)?;
        if let Some(b) = h.hold {
            let how = match b {
                HoldBy::User => format!("`fairsched release {id}`"),
                HoldBy::Admin => format!("`fairsched admin task release {id}`"),
            };
            return Some(format!("on hold (by {}): {how} lets it run", b.who()));
        }
        if h.pending > 0 {
            return None;
        }
        let quota = |of: QuotaOf, whose: &str| {
            self.max_running(of)
                .map(|m| format!("{whose} may have at most {m} in the queue or running"))
        };
        let why = [
            quota(QuotaOf::User(h.user), "its user"),
            quota(QuotaOf::Org(h.org), "its organization's users together"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
        Some(if why.is_empty() {
            "about to enter the queue".to_string()
        } else {
            format!(
                "held by a running quota ({}): it enters the queue as others end",
                why.join("; ")
            )
        })
    }
}
