//! Who may do what: organizations, users (each in one organization) and
//! tokens. A token is 256 random bits from the operating system, shown
//! once (hex) and stored only as its SHA-256 hash; a presented token is
//! hashed, looked up by hash, and the stored hash compared in constant
//! time. Kinds: the admin token (from `fairsched admin init`), user tokens
//! and worker tokens (bound to the organization whose processors the
//! worker contributes).

use crate::store::{Store, StoreError};
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A token's holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    Admin,
    /// A user: its id, name and organization (id).
    User {
        id: i64,
        name: String,
        org: u32,
    },
    /// A holder of organization `org`'s worker token: it may register
    /// workers, nothing else.
    Worker {
        org: u32,
    },
    /// One registered worker, by the session credential its registration
    /// returned: it may poll, report, drain and leave as that worker only.
    Session {
        org: u32,
        worker: u64,
    },
}

/// The tables, created with the database.
pub(crate) const SCHEMA: &str = "
    CREATE TABLE orgs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, org INTEGER NOT NULL REFERENCES orgs(id));
    CREATE TABLE tokens (hash BLOB PRIMARY KEY, kind TEXT NOT NULL, user_id INTEGER, org INTEGER);
";

/// A new random token (64 hex digits).
pub fn new_token() -> String {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).expect("the operating system's random source");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Names of organizations and users: 1 to 64 of `[A-Za-z0-9._-]`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} name `{name}`: expected 1 to 64 letters, digits, '.', '_' or '-'"
        ))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0} already exists")]
    Exists(String),
    #[error("no {0}")]
    Unknown(String),
}

impl Store {
    fn insert_token(&self, kind: &str, user: Option<i64>, org: Option<u32>) -> Result<String, StoreError> {
        let t = new_token();
        self.conn()
            .execute(
                "INSERT INTO tokens (hash, kind, user_id, org) VALUES (?1, ?2, ?3, ?4)",
                params![hash(&t).to_vec(), kind, user, org],
            )
            .map_err(|e| self.sql(e))?;
        Ok(t)
    }

    /// The admin token; only once per database.
    pub fn admin_token(&self) -> Result<String, IdentityError> {
        let n: i64 = self
            .conn()
            .query_row("SELECT count(*) FROM tokens WHERE kind = 'admin'", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))?;
        if n > 0 {
            return Err(IdentityError::Exists("an admin token".into()));
        }
        Ok(self.insert_token("admin", None, None)?)
    }

    /// A new organization; its id is the core's `OrgId`.
    pub fn add_org(&self, name: &str) -> Result<u32, IdentityError> {
        check_name("organization", name).map_err(IdentityError::Invalid)?;
        if self.org_id(name)?.is_some() {
            return Err(IdentityError::Exists(format!("organization `{name}`")));
        }
        // Ids from 0, in creation order.
        let id: i64 = self
            .conn()
            .query_row("SELECT coalesce(max(id) + 1, 0) FROM orgs", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        self.conn()
            .execute("INSERT INTO orgs (id, name) VALUES (?1, ?2)", params![id, name])
            .map_err(|e| self.sql(e))?;
        Ok(id as u32)
    }

    /// The id of organization `name`.
    pub fn org_id(&self, name: &str) -> Result<Option<u32>, StoreError> {
        self.conn()
            .query_row("SELECT id FROM orgs WHERE name = ?1", [name], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map(|o| o.map(|i| i as u32))
            .map_err(|e| self.sql(e))
    }

    /// A new user of organization `org`, and its token.
    pub fn add_user(&self, name: &str, org: &str) -> Result<String, IdentityError> {
        check_name("user", name).map_err(IdentityError::Invalid)?;
        let Some(o) = self.org_id(org)? else {
            return Err(IdentityError::Unknown(format!("organization `{org}`")));
        };
        let exists: i64 = self
            .conn()
            .query_row("SELECT count(*) FROM users WHERE name = ?1", [name], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        if exists > 0 {
            return Err(IdentityError::Exists(format!("user `{name}`")));
        }
        self.conn()
            .execute("INSERT INTO users (name, org) VALUES (?1, ?2)", params![name, o])
            .map_err(|e| self.sql(e))?;
        let id = self.conn().last_insert_rowid();
        Ok(self.insert_token("user", Some(id), Some(o))?)
    }

    /// A new worker token for organization `org`.
    pub fn worker_token(&self, org: &str) -> Result<String, IdentityError> {
        let Some(o) = self.org_id(org)? else {
            return Err(IdentityError::Unknown(format!("organization `{org}`")));
        };
        Ok(self.insert_token("worker", None, Some(o))?)
    }

    /// Revokes one token (a user's, or an organization's worker token);
    /// what it was. The admin token is not revoked this way.
    pub fn revoke_token(&self, token: &str) -> Result<String, IdentityError> {
        let what = match self.authenticate(token)? {
            None => return Err(IdentityError::Unknown("such token (already revoked?)".into())),
            Some(Principal::Admin) => {
                return Err(IdentityError::Invalid(
                    "that is the admin token: it is not revoked this way".into(),
                ));
            }
            Some(Principal::User { name, .. }) => format!("a token of user `{name}`"),
            Some(Principal::Worker { org }) => {
                format!("a worker token of organization {}", self.org_name(org)?)
            }
            Some(Principal::Session { .. }) => unreachable!("sessions are not in the store"),
        };
        self.conn()
            .execute(
                "DELETE FROM tokens WHERE hash = ?1",
                [hash(token.trim()).to_vec()],
            )
            .map_err(|e| self.sql(e))?;
        Ok(what)
    }

    /// The name of organization `id` (its number if it has none).
    fn org_name(&self, id: u32) -> Result<String, StoreError> {
        Ok(self
            .conn()
            .query_row("SELECT name FROM orgs WHERE id = ?1", [id], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?
            .map_or_else(|| format!("#{id}"), |n| format!("`{n}`")))
    }

    /// The id and organization of user `name`.
    pub fn user(&self, name: &str) -> Result<(i64, u32), IdentityError> {
        self.conn()
            .query_row("SELECT id, org FROM users WHERE name = ?1", [name], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u32))
            })
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| IdentityError::Unknown(format!("user `{name}`")))
    }

    /// Revokes every token of user `name`; with `reissue`, gives it a new
    /// one (returned).
    pub fn rotate_user(
        &self,
        name: &str,
        reissue: bool,
    ) -> Result<(i64, u32, Option<String>), IdentityError> {
        let (id, org) = self.user(name)?;
        self.conn()
            .execute("DELETE FROM tokens WHERE kind = 'user' AND user_id = ?1", [id])
            .map_err(|e| self.sql(e))?;
        let token = if reissue {
            Some(self.insert_token("user", Some(id), Some(org))?)
        } else {
            None
        };
        Ok((id, org, token))
    }

    /// Revokes every worker token of organization `org`; how many.
    pub fn revoke_worker_tokens(&self, org: &str) -> Result<usize, IdentityError> {
        let Some(o) = self.org_id(org)? else {
            return Err(IdentityError::Unknown(format!("organization `{org}`")));
        };
        self.conn()
            .execute("DELETE FROM tokens WHERE kind = 'worker' AND org = ?1", [o])
            .map_err(|e| self.sql(e))
            .map_err(IdentityError::from)
    }

    /// Who holds `token`, if anyone (a token of the store; not a worker's
    /// session).
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>, StoreError> {
        token_holder(self.conn(), token).map_err(|e| self.sql(e))
    }
}

/// Who holds `token` in the database `conn` reads, a token of the store.
/// Also used off the broker's thread, on a read-only connection of its own
/// (`fairsched serve`).
pub fn token_holder(conn: &rusqlite::Connection, token: &str) -> rusqlite::Result<Option<Principal>> {
    let h = hash(token.trim());
    let row = conn
            .query_row(
                "SELECT t.hash, t.kind, t.user_id, t.org, u.name FROM tokens t LEFT JOIN users u ON u.id = t.user_id WHERE t.hash = ?1",
                [h.to_vec()],
                |r| {
                    crate::store::read_row("tokens", r, |r| {
                        Ok((
                            r.get::<_, Vec<u8>>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                            r.get::<_, Option<i64>>(3)?,
                            r.get::<_, Option<String>>(4)?,
                        ))
                    })
                },
            )
            .optional()
            ?;
    let Some((stored, kind, user, org, name)) = row else {
        return Ok(None);
    };
    if !bool::from(stored.as_slice().ct_eq(&h)) {
        return Ok(None);
    }
    Ok(match (kind.as_str(), user, org, name) {
        ("admin", ..) => Some(Principal::Admin),
        ("user", Some(id), Some(org), Some(name)) => Some(Principal::User {
            id,
            name,
            org: org as u32,
        }),
        ("worker", _, Some(org), _) => Some(Principal::Worker { org: org as u32 }),
        _ => None,
    })
}

/// A worker's session, by its credential: the worker and its organization.
pub fn session_holder(conn: &rusqlite::Connection, token: &str) -> rusqlite::Result<Option<Principal>> {
    let h = hash(token.trim());
    conn.prepare_cached(
        "SELECT s.worker, w.org FROM worker_sessions s JOIN workers w ON w.id = s.worker WHERE s.hash = ?1",
    )?
    .query_row([h.to_vec()], |r| {
        Ok(Principal::Session {
            worker: r.get::<_, i64>(0)? as u64,
            org: r.get::<_, i64>(1)? as u32,
        })
    })
    .optional()
}
