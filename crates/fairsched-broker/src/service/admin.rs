//! An operator's controls over a running broker: revoking and rotating
//! tokens, removing users and organizations, quotas on queued and running
//! tasks (the running ones are enforced in [`super::hold`]). Token
//! changes are in the identity tables (not steps of the log: they decide
//! nothing the core sees); what they imply for tasks and workers
//! (cancelling a removed user's tasks, evicting an organization's workers)
//! goes through the log as the writes the HTTP layer then sends.

use super::{Broker, Reply, ServiceError, St};
use crate::identity::IdentityError;
use fairsched_proto::api::{
    OrgReply, Quota, QuotaRequest, QuotasReply, RevokeReply, RevokedReply, RunAsReply, TokenReply, UserReply,
};
use rusqlite::{OptionalExtension, params};
use std::collections::HashMap;

/// Whose quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum QuotaOf {
    User(i64),
    Org(u32),
}

impl QuotaOf {
    fn kind(self) -> (&'static str, i64) {
        match self {
            QuotaOf::User(u) => ("user", u),
            QuotaOf::Org(o) => ("org", i64::from(o)),
        }
    }
}

/// A quota: the most tasks queued (waiting or held), and in the scheduler
/// (waiting or running); `None`: no limit of that kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limit {
    pub queued: Option<u64>,
    pub running: Option<u64>,
}

/// The quotas in force, read when the broker opens.
pub(crate) fn load_quotas(conn: &rusqlite::Connection) -> rusqlite::Result<HashMap<QuotaOf, Limit>> {
    let mut q = conn.prepare("SELECT kind, id, max_queued, max_running FROM quotas")?;
    let rows = q.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<i64>>(3)?,
        ))
    })?;
    let mut out = HashMap::new();
    for row in rows {
        let (kind, id, queued, running) = row?;
        let of = match kind.as_str() {
            "user" => QuotaOf::User(id),
            _ => QuotaOf::Org(id as u32),
        };
        let limit = Limit {
            queued: (queued >= 0).then_some(queued as u64),
            running: running.map(|r| r.max(0) as u64),
        };
        out.insert(of, limit);
    }
    Ok(out)
}

impl Broker {
    /// Revokes one leaked token.
    pub fn revoke_token(&self, token: &str) -> Reply<RevokeReply> {
        let revoked = self.live.store().revoke_token(token)?;
        Ok(RevokeReply { revoked })
    }

    /// A new token for user `name`; its old ones stop working.
    pub fn rotate_user(&self, name: &str) -> Reply<UserReply> {
        let (id, org) = self.live.store().user(name)?;
        if self.removed_users.contains(&id) || self.removed_orgs.contains(&org) {
            return Err(ServiceError::Conflict(format!(
                "user `{name}` (or its organization) was removed"
            )));
        }
        let (id, org, token) = self.live.store().rotate_user(name, true)?;
        let org = self.org_names().remove(&org).unwrap_or_default();
        Ok(UserReply {
            id,
            name: name.into(),
            org,
            token: token.unwrap_or_default(),
        })
    }

    /// Revokes every worker token of organization `org`.
    pub fn revoke_worker_tokens(&self, org: &str) -> Reply<RevokedReply> {
        let n = self.live.store().revoke_worker_tokens(org)?;
        Ok(RevokedReply {
            org: org.into(),
            revoked: n as u64,
        })
    }

    /// Revokes every token of user `name`, marks it removed; its tasks
    /// not ended yet (to cancel: the caller sends the cancels).
    pub fn remove_user(&mut self, name: &str) -> Reply<(i64, Vec<u64>)> {
        let (id, _, _) = self.live.store().rotate_user(name, false)?;
        self.mark_removed("user", id)?;
        self.removed_users.insert(id);
        Ok((id, self.unended_of("user_id", id)?))
    }

    /// Removes organization `name`: its users (as [`Broker::remove_user`]),
    /// its worker tokens; its tasks not ended and its live workers (to
    /// cancel and evict: the caller does).
    pub fn remove_org(&mut self, name: &str) -> Reply<(Vec<u64>, Vec<u64>)> {
        let Some(org) = self
            .live
            .store()
            .org_id(name)
            .map_err(ServiceError::unavailable)?
        else {
            return Err(IdentityError::Unknown(format!("organization `{name}`")).into());
        };
        let users: Vec<String> = {
            let conn = self.live.store().conn();
            let mut q = conn
                .prepare("SELECT name FROM users WHERE org = ?1")
                .map_err(ServiceError::unavailable)?;
            q.query_map([org], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(ServiceError::unavailable)?
        };
        for u in &users {
            self.remove_user(u)?;
        }
        self.live.store().revoke_worker_tokens(name)?;
        self.mark_removed("org", i64::from(org))?;
        self.removed_orgs.insert(org);
        let tasks = self.unended_of("org", i64::from(org))?;
        let mut workers: Vec<u64> = self
            .workers
            .iter()
            .filter(|(_, w)| w.org == org && !w.lost)
            .map(|(&id, _)| id)
            .collect();
        workers.sort_unstable();
        Ok((tasks, workers))
    }

    /// Whether a user or organization (by id) was removed.
    pub fn removed(&self, kind: &str, id: i64) -> Reply<bool> {
        self.live
            .store()
            .conn()
            .query_row(
                "SELECT 1 FROM removed WHERE kind = ?1 AND id = ?2",
                params![kind, id],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(ServiceError::unavailable)
    }

    fn mark_removed(&self, kind: &str, id: i64) -> Reply<()> {
        let now = self.clock().millis();
        self.live
            .store()
            .conn()
            .execute(
                "INSERT OR IGNORE INTO removed (kind, id, at_ms) VALUES (?1, ?2, ?3)",
                params![kind, id, now],
            )
            .map(drop)
            .map_err(ServiceError::unavailable)
    }

    /// Public ids of the tasks of a user (`user_id`) or an organization
    /// (`org`) that have not ended, newest first (children before their
    /// parents: cancelling a parent first would cancel them with another
    /// reason).
    fn unended_of(&self, column: &str, id: i64) -> Reply<Vec<u64>> {
        let conn = self.live.store().conn();
        let mut q = conn
            .prepare(&format!(
                "SELECT id FROM tasks WHERE {column} = ?1 AND state IN ('live', 'held') ORDER BY id DESC"
            ))
            .map_err(ServiceError::unavailable)?;
        q.query_map([id], |r| r.get::<_, i64>(0).map(|i| i as u64))
            .and_then(|rows| rows.collect())
            .map_err(ServiceError::unavailable)
    }

    /// The organization of a live worker, for the admin's drain and evict.
    pub fn worker_org_of(&self, worker: u64) -> Reply<u32> {
        self.live_worker(worker).map(|w| w.org)
    }

    /// Sets (or with `None`, unsets) the local account user `name`'s tasks
    /// run as on workers with `--run-as-user`.
    pub fn set_run_as(&mut self, name: &str, account: Option<&str>) -> Reply<RunAsReply> {
        if let Some(a) = account {
            let ok = (1..=32).contains(&a.len())
                && a.bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase() || c == b'_')
                && a.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_.-".contains(&c));
            if !ok {
                return Err(ServiceError::Invalid(format!(
                    "account `{a}`: a POSIX user name (1 to 32 of a-z, 0-9, '_', '.', '-', not starting with a digit, '.' or '-')"
                )));
            }
            if a == "root" {
                return Err(ServiceError::Invalid(
                    "account `root`: no task runs as root".into(),
                ));
            }
        }
        let (id, _) = self.live.store().user(name)?;
        self.live
            .store()
            .conn()
            .execute("UPDATE users SET run_as = ?2 WHERE id = ?1", params![id, account])
            .map_err(ServiceError::unavailable)?;
        match account {
            Some(a) => self.run_as.insert(id, a.to_string()),
            None => self.run_as.remove(&id),
        };
        Ok(RunAsReply {
            name: name.to_string(),
            account: account.map(str::to_string),
        })
    }

    /// Sets or lifts a quota.
    pub fn set_quota(&mut self, req: &QuotaRequest) -> Reply<QuotasReply> {
        let of = match (&req.user, &req.org) {
            (Some(u), None) => QuotaOf::User(self.live.store().user(u)?.0),
            (None, Some(o)) => match self.live.store().org_id(o).map_err(ServiceError::unavailable)? {
                Some(id) => QuotaOf::Org(id),
                None => return Err(IdentityError::Unknown(format!("organization `{o}`")).into()),
            },
            _ => {
                return Err(ServiceError::Invalid(
                    "request body: give `user` or `org`, one of them".into(),
                ));
            }
        };
        let (kind, id) = of.kind();
        let limit = Limit {
            queued: req.max_queued,
            running: req.max_running,
        };
        let conn = self.live.store().conn();
        let as_sql = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let done =
            if limit == Limit::default() {
                conn.execute(
                    "DELETE FROM quotas WHERE kind = ?1 AND id = ?2",
                    params![kind, id],
                )
            } else {
                conn.execute(
                "INSERT OR REPLACE INTO quotas (kind, id, max_queued, max_running) VALUES (?1, ?2, ?3, ?4)",
                params![kind, id, limit.queued.map_or(-1, as_sql), limit.running.map(as_sql)],
            )
            };
        done.map_err(ServiceError::unavailable)?;
        if limit == Limit::default() {
            self.quotas.remove(&of);
        } else {
            self.quotas.insert(of, limit);
        }
        // Tasks held for a running quota may fit now.
        self.recheck_quota(of);
        Ok(self.quotas())
    }

    /// The quotas in force, users' then organizations', by name.
    pub fn quotas(&self) -> QuotasReply {
        let (users, orgs) = (self.user_names(), self.org_names());
        let mut quotas: Vec<Quota> = self
            .quotas
            .iter()
            .map(|(&of, l)| match of {
                QuotaOf::User(u) => Quota {
                    user: Some(users.get(&u).cloned().unwrap_or_else(|| u.to_string())),
                    org: None,
                    max_queued: l.queued,
                    max_running: l.running,
                },
                QuotaOf::Org(o) => Quota {
                    user: None,
                    org: Some(orgs.get(&o).cloned().unwrap_or_else(|| o.to_string())),
                    max_queued: l.queued,
                    max_running: l.running,
                },
            })
            .collect();
        quotas.sort_by(|a, b| (a.org.is_some(), &a.user, &a.org).cmp(&(b.org.is_some(), &b.user, &b.org)));
        QuotasReply { quotas }
    }

    /// The users of organization `org`.
    pub(crate) fn members(&self, org: u32) -> Reply<Vec<i64>> {
        let conn = self.live.store().conn();
        conn.prepare_cached("SELECT id FROM users WHERE org = ?1")
            .and_then(|mut q| q.query_map([org], |r| r.get(0))?.collect())
            .map_err(ServiceError::unavailable)
    }

    /// Tasks a user has queued (waiting or held).
    fn queued(&self, user: i64) -> u64 {
        self.counts
            .users
            .get(&user)
            .map_or(0, |c| c.get(St::Waiting) + c.get(St::Held))
    }

    /// Refuses `n` more queued tasks of `user` (of `org`) past a quota;
    /// `batch` counts those planned in this batch and not applied yet.
    pub(crate) fn check_quota(&self, user: i64, org: u32, n: u64, batch: &HashMap<i64, u64>) -> Reply<()> {
        // Queued, planned in this batch, or reserved for a request being
        // written in steps.
        let pending = |u: i64| self.queued(u) + batch.get(&u).copied().unwrap_or(0) + self.reserved(u);
        // The user's own queued quota, else the default of every user (a
        // user the admin lets queue more gets a larger quota of its own).
        let own = self.quotas.get(&QuotaOf::User(user)).and_then(|l| l.queued);
        let (max, whose) = match own {
            Some(q) => (Some(q), ""),
            None => (self.settings.default_max_queued, " (serve --default-max-queued)"),
        };
        if let Some(max) = max {
            let has = pending(user);
            if has + n > max {
                return Err(ServiceError::Quota(format!(
                    "quota: you have {has} tasks queued (waiting or held) and may have {max}{whose}; these {n} would pass it (wait for some to start, or ask the operator)"
                )));
            }
        }
        if let Some(max) = self.quotas.get(&QuotaOf::Org(org)).and_then(|l| l.queued) {
            let has: u64 = self.members(org)?.into_iter().map(pending).sum();
            if has + n > max {
                return Err(ServiceError::Quota(format!(
                    "quota: your organization has {has} tasks queued (waiting or held) and may have {max}; these {n} would pass it"
                )));
            }
        }
        Ok(())
    }
}

impl Broker {
    pub fn add_org(&self, name: &str) -> Reply<OrgReply> {
        let id = self.live.store().add_org(name)?;
        Ok(OrgReply {
            id,
            name: name.to_string(),
        })
    }

    pub fn add_user(&self, name: &str, org: &str) -> Reply<UserReply> {
        self.not_removed_org(org)?;
        let token = self.live.store().add_user(name, org)?;
        let id = self
            .live
            .store()
            .conn()
            .query_row("SELECT id FROM users WHERE name = ?1", [name], |r| r.get(0))
            .map_err(ServiceError::unavailable)?;
        Ok(UserReply {
            id,
            name: name.into(),
            org: org.into(),
            token,
        })
    }

    pub fn worker_token(&self, org: &str) -> Reply<TokenReply> {
        self.not_removed_org(org)?;
        let token = self.live.store().worker_token(org)?;
        Ok(TokenReply {
            org: org.into(),
            token,
        })
    }

    /// Refuses an organization the operator removed.
    pub(super) fn not_removed_org(&self, org: &str) -> Reply<()> {
        if let Some(id) = self.live.store().org_id(org).map_err(ServiceError::unavailable)?
            && self.removed("org", i64::from(id))?
        {
            return Err(ServiceError::Conflict(format!(
                "organization `{org}` was removed"
            )));
        }
        Ok(())
    }
}
