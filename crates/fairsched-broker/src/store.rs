//! The durable log: one SQLite file (WAL, `synchronous = FULL`) holding
//! the configuration the core is built from and every step the core
//! accepted, in order — its `now` and its batch of events, exactly as
//! applied. Steps are only ever appended; a group of steps is one
//! transaction (one fsync). Replaying the steps into a core built from
//! the same configuration gives the same state and the same decisions.
//!
//! Beside the log, [`Snapshot`]s: the core's whole state after a given
//! step, so that opening replays only the steps after it. A snapshot is a
//! shortcut, never the truth — the log alone rebuilds everything, and a
//! snapshot that does not restore is skipped.
//!
//! `fairsched admin compact` ([`crate::upkeep::compact`]) moves the steps
//! up to the older kept snapshot into an archive, a SQLite file of its own;
//! the database then records which steps are there (`meta.archived_through`)
//! and where (`meta.archive`). A replay that starts before that step reads
//! the archive first, then the database: the log is whole again.

use fairsched_core::{Event, Time};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod check;
pub use check::{CheckReport, CorruptRow, QUICK_CHECK_MAX_BYTES, check};
pub(crate) use check::{read_row, record as record_schema, stepping};

/// Bumped when the tables change; a database of another version is
/// refused with both numbers.
pub const SCHEMA_VERSION: i64 = 2;

/// What the core is built from. Fixed when the database is created: the
/// same log under another policy would decide differently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// `Allocate` spec (registry syntax).
    pub allocate: String,
    /// `Order` spec.
    pub order: String,
    /// `Control` spec, if any.
    pub control: Option<String>,
    /// The core's seed.
    pub seed: u64,
    /// A steering controller's core ([`fairsched_core::Scheduler::steered`]):
    /// another resource manager starts the tasks; their time limits are
    /// the users' estimates. Absent (false) in a broker's database.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steered: bool,
}

impl Default for Config {
    /// `single-pool`, `first-fit`, no control, seed 0.
    fn default() -> Config {
        Config {
            allocate: "single-pool".into(),
            order: "first-fit".into(),
            control: None,
            seed: 0,
            steered: false,
        }
    }
}

/// The core's state after step `seq` (and everything the live driver
/// keeps beside it), so a restart replays only the steps after `seq`.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The last step it includes.
    pub seq: i64,
    /// The core's time then.
    pub now: Time,
    /// The largest task id submitted by then.
    pub high_id: u64,
    /// Timers asked for and not fired by then: `(at, token)`.
    pub timers: Vec<(Time, u64)>,
    /// [`fairsched_core::Scheduler::snapshot`].
    pub core: Vec<u8>,
}

/// Snapshots kept: the newest, and one before it in case the newest does
/// not restore.
const SNAPSHOTS_KEPT: i64 = 2;

/// The snapshot table (additive: a database of schema 2 without it gets it
/// when opened).
const SNAPSHOT_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS snapshots (
        seq INTEGER PRIMARY KEY, now_ms INTEGER NOT NULL, high_id INTEGER NOT NULL,
        timers TEXT NOT NULL, core BLOB NOT NULL, written_ms INTEGER NOT NULL);";

/// Creates every table of a new database (schema 2 as this fairsched
/// writes it; `Broker::open` adds the columns since).
fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE steps (seq INTEGER PRIMARY KEY, now_ms INTEGER NOT NULL, events TEXT NOT NULL);",
    )?;
    conn.execute_batch(SNAPSHOT_SCHEMA)?;
    conn.execute_batch(crate::identity::SCHEMA)?;
    conn.execute_batch(crate::service::SCHEMA)
}

/// One accepted step: the instant the core was given and its events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub now: Time,
    pub events: Vec<Event>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// (The SQLite error is in the message, not a `source()`: its own
    /// source repeats it.)
    #[error("{path}: {cause}")]
    Sqlite { path: PathBuf, cause: rusqlite::Error },
    #[error("{0}: no fairsched database here (run `fairsched admin init --db {0}` first)")]
    NotInitialized(PathBuf),
    #[error("{0}: already initialized")]
    AlreadyInitialized(PathBuf),
    #[error("{0}: not a database (not an SQLite file), left as it is")]
    NotSqlite(PathBuf),
    #[error("{path}: schema version {found}, this fairsched reads version {SCHEMA_VERSION}")]
    Schema { path: PathBuf, found: i64 },
    #[error("{path}: step {seq}: {reason}")]
    Corrupt { path: PathBuf, seq: i64, reason: String },
    /// Tables or columns this fairsched reads are missing (dropped, or
    /// the file was edited by hand): refused rather than served, since
    /// every request that needs them would fail.
    #[error(
        "{path}: the database is incomplete, its schema lacks {}: it was damaged or edited; {}",
        missing.join(", "),
        check::WHAT_TO_DO.replace("FILE", &path.display().to_string())
    )]
    Incomplete { path: PathBuf, missing: Vec<String> },
    /// SQLite finds the file damaged (`PRAGMA quick_check`, or
    /// `SQLITE_CORRUPT` on the way).
    #[error(
        "{path}: the database is corrupt ({}); {}",
        problems.join("; "),
        check::WHAT_TO_DO.replace("FILE", &path.display().to_string())
    )]
    Damaged { path: PathBuf, problems: Vec<String> },
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    /// A replay needs steps the database moved to its archive, and the
    /// archive cannot give them.
    #[error("{path}: steps 1 to {through} are archived in {archive}, which {reason}")]
    Archive {
        path: PathBuf,
        archive: PathBuf,
        through: i64,
        reason: String,
    },
}

/// The database's `meta` keys written by a compaction: the last step moved
/// to the archive, and the archive's absolute path.
pub(crate) const META_ARCHIVED_THROUGH: &str = "archived_through";
pub(crate) const META_ARCHIVE: &str = "archive";

/// The open database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Sequence number of the next step.
    next_seq: i64,
    config: Config,
    /// When the database was created (Unix milliseconds): the core's time
    /// zero.
    epoch_ms: i64,
    /// Steps 1 to this one are in the archive, not here (0: none).
    archived_through: i64,
    /// Where they are.
    archive: Option<PathBuf>,
}

/// The wall clock, in Unix milliseconds.
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Makes the database private to its owner before SQLite opens it: it
/// holds every task's command and the token hashes. `create`: made 0600
/// when missing. An existing one readable by others (made by an older
/// fairsched, or by hand) is set to 0600, and said; when that is not
/// allowed (not ours), said only. SQLite gives its `-wal` and `-shm`
/// files the database's mode; those already there are set too.
pub(crate) fn private(path: &Path, create: bool) -> Result<(), StoreError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if create {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| StoreError::Io {
                path: path.to_path_buf(),
                cause: e,
            })?;
    }
    for ext in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(ext);
        let p = PathBuf::from(p);
        let Ok(meta) = std::fs::metadata(&p) else { continue };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            match std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)) {
                Ok(()) => tracing::warn!("{}: was mode {mode:o}, readable by others; now 600", p.display()),
                Err(e) => tracing::warn!("{}: mode {mode:o} lets others read it ({e})", p.display()),
            }
        }
    }
    Ok(())
}

impl Store {
    fn connect(path: &Path) -> Result<Connection, StoreError> {
        let sql = |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            cause: source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        // WAL: readers do not block the writer; FULL: a commit is on disk
        // when it returns (the acknowledgement promises it).
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql)?;
        Ok(conn)
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn sql(&self, source: rusqlite::Error) -> StoreError {
        self.err(source)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            cause: source,
        }
    }

    /// Creates the tables and stores `config`; refuses a database that is
    /// already initialized.
    pub fn create(path: &Path, config: &Config) -> Result<Store, StoreError> {
        private(path, true)?;
        let conn = Store::connect(path)?;
        let mut s = Store {
            conn,
            path: path.to_path_buf(),
            next_seq: 1,
            config: config.clone(),
            epoch_ms: unix_ms(),
            archived_through: 0,
            archive: None,
        };
        let has_meta: bool = s
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|e| s.err(e))?
            > 0;
        if has_meta {
            return Err(StoreError::AlreadyInitialized(path.to_path_buf()));
        }
        let cfg = serde_json::to_string(config).expect("config serializes");
        let tx = s.conn.transaction().map_err(|e| StoreError::Sqlite {
            path: path.to_path_buf(),
            cause: e,
        })?;
        create_tables(&tx)
            .and_then(|_| {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema', ?1), ('config', ?2), ('epoch_ms', ?3)",
                    params![SCHEMA_VERSION.to_string(), cfg, unix_ms().to_string()],
                )
            })
            .and_then(|_| check::record(&tx))
            .and_then(|_| tx.commit())
            .map_err(|e| StoreError::Sqlite {
                path: path.to_path_buf(),
                cause: e,
            })?;
        Ok(s)
    }

    /// Opens an initialized database and reads its configuration.
    pub fn open(path: &Path) -> Result<(Store, Config), StoreError> {
        if !path.exists() {
            return Err(StoreError::NotInitialized(path.to_path_buf()));
        }
        // Not an SQLite file at all: said before its mode is touched.
        let mut head = [0u8; 16];
        let read = std::fs::File::open(path).and_then(|mut f| {
            use std::io::Read;
            f.read(&mut head)
        });
        if read.is_ok_and(|n| n < head.len() || &head != b"SQLite format 3\0") {
            return Err(StoreError::NotSqlite(path.to_path_buf()));
        }
        private(path, false)?;
        let conn = Store::connect(path)?;
        // A damaged file is said as such before anything is read from it.
        check::quick(&conn, path)?;
        let mut s = Store {
            conn,
            path: path.to_path_buf(),
            next_seq: 1,
            config: Config::default(),
            epoch_ms: unix_ms(),
            archived_through: 0,
            archive: None,
        };
        let get = |s: &Store, key: &str| -> Result<Option<String>, StoreError> {
            s.conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .or_else(|e| match e {
                    rusqlite::Error::SqliteFailure(..) if e.to_string().contains("no such table") => Ok(None),
                    e => Err(s.err(e)),
                })
        };
        let Some(schema) = get(&s, "schema")? else {
            return Err(StoreError::NotInitialized(path.to_path_buf()));
        };
        let found: i64 = schema.parse().unwrap_or(-1);
        if found != SCHEMA_VERSION {
            return Err(StoreError::Schema {
                path: path.to_path_buf(),
                found,
            });
        }
        // Every table and column the broker reads is there (or is one an
        // opening adds to an older database): a dropped `tokens` would
        // otherwise let it start and refuse every request.
        check::schema(&s.conn, path)?;
        let cfg = get(&s, "config")?.unwrap_or_default();
        let config: Config = serde_json::from_str(&cfg).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            seq: 0,
            reason: format!("configuration: {e}"),
        })?;
        s.config = config.clone();
        s.epoch_ms =
            get(&s, "epoch_ms")?
                .and_then(|e| e.parse().ok())
                .ok_or_else(|| StoreError::Corrupt {
                    path: path.to_path_buf(),
                    seq: 0,
                    reason: "no creation time (meta.epoch_ms)".into(),
                })?;
        s.archived_through = get(&s, META_ARCHIVED_THROUGH)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        s.archive = get(&s, META_ARCHIVE)?.map(PathBuf::from);
        let last: Option<i64> = s
            .conn
            .query_row("SELECT max(seq) FROM steps", [], |r| r.get(0))
            .map_err(|e| s.err(e))?;
        // A compaction may have moved every step (when the only snapshot is
        // of the last one): the archive's last step counts.
        s.next_seq = last.unwrap_or(0).max(s.archived_through) + 1;
        s.conn.execute_batch(SNAPSHOT_SCHEMA).map_err(|e| s.err(e))?;
        Ok((s, config))
    }

    /// How long a commit waits for another connection's lock before it
    /// fails (5 s by default).
    pub fn set_busy_timeout(&self, d: std::time::Duration) -> Result<(), StoreError> {
        self.conn.busy_timeout(d).map_err(|e| self.err(e))
    }

    /// When the database was created (Unix milliseconds): the core's time
    /// zero.
    pub fn epoch_ms(&self) -> i64 {
        self.epoch_ms
    }

    /// What the core is built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Steps logged so far.
    pub fn len(&self) -> u64 {
        (self.next_seq - 1) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.next_seq == 1
    }

    /// Steps 1 to this one were moved to the archive (0: none).
    pub fn archived_through(&self) -> i64 {
        self.archived_through
    }

    /// The archive those steps are in, if a compaction made one.
    pub fn archive(&self) -> Option<&Path> {
        self.archive.as_deref()
    }

    /// Appends `steps` in one transaction: all of them are durable when
    /// this returns `Ok`, none of them otherwise.
    pub fn append(&mut self, steps: &[Step]) -> Result<(), StoreError> {
        self.append_with(steps, |_| Ok(()))
    }

    /// [`Store::append`], with `extra` writing the service's own tables
    /// (task descriptions, workers, outcomes) in the same transaction: the
    /// steps and what the service derived from them are durable together
    /// or not at all.
    pub fn append_with(
        &mut self,
        steps: &[Step],
        extra: impl FnOnce(&rusqlite::Transaction) -> rusqlite::Result<()>,
    ) -> Result<(), StoreError> {
        if steps.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            cause: source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        {
            let mut ins = tx
                .prepare_cached("INSERT INTO steps (seq, now_ms, events) VALUES (?1, ?2, ?3)")
                .map_err(sql)?;
            for (i, st) in steps.iter().enumerate() {
                let events = serde_json::to_string(&st.events).expect("events serialize");
                ins.execute(params![self.next_seq + i as i64, st.now.millis(), events])
                    .map_err(sql)?;
            }
        }
        extra(&tx).map_err(sql)?;
        tx.commit().map_err(sql)?;
        self.next_seq += steps.len() as i64;
        Ok(())
    }

    /// Runs `f` in one transaction of the database (committed if it
    /// returns `Ok`).
    pub fn transact(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction) -> rusqlite::Result<()>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            cause: source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        f(&tx).map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// Writes `snap` (one transaction) and drops all but the newest
    /// `SNAPSHOTS_KEPT`. A snapshot of a step not logged is refused.
    pub fn write_snapshot(&mut self, snap: &Snapshot) -> Result<(), StoreError> {
        if snap.seq < 0 || snap.seq >= self.next_seq {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                seq: snap.seq,
                reason: format!(
                    "a snapshot after step {} of a log of {}",
                    snap.seq,
                    self.next_seq - 1
                ),
            });
        }
        let timers = serde_json::to_string(
            &snap
                .timers
                .iter()
                .map(|&(at, token)| (at.millis(), token))
                .collect::<Vec<_>>(),
        )
        .expect("timers serialize");
        let path = self.path.clone();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            cause: source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            "INSERT OR REPLACE INTO snapshots (seq, now_ms, high_id, timers, core, written_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                snap.seq,
                snap.now.millis(),
                snap.high_id as i64,
                timers,
                snap.core,
                unix_ms()
            ],
        )
        .map_err(sql)?;
        tx.execute(
            "DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?1)",
            [SNAPSHOTS_KEPT],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// The snapshots kept, newest first. One whose row does not decode is
    /// returned as an error in its place (the caller skips it).
    pub fn snapshots(&self) -> Result<Vec<Result<Snapshot, StoreError>>, StoreError> {
        let mut q = self
            .conn
            .prepare("SELECT seq, now_ms, high_id, timers, core FROM snapshots ORDER BY seq DESC")
            .map_err(|e| self.err(e))?;
        let rows = q
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Vec<u8>>(4)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, now, high_id, timers, core) = row.map_err(|e| self.err(e))?;
            let timers: Result<Vec<(i64, u64)>, _> = serde_json::from_str(&timers);
            out.push(match timers {
                Ok(t) if seq < self.next_seq => Ok(Snapshot {
                    seq,
                    now: Time::from_millis(now),
                    high_id: high_id.max(0) as u64,
                    timers: t.into_iter().map(|(at, k)| (Time::from_millis(at), k)).collect(),
                    core,
                }),
                Ok(_) => Err(StoreError::Corrupt {
                    path: self.path.clone(),
                    seq,
                    reason: format!(
                        "a snapshot after step {seq}, but the log ends at {}",
                        self.next_seq - 1
                    ),
                }),
                Err(e) => Err(StoreError::Corrupt {
                    path: self.path.clone(),
                    seq,
                    reason: format!("snapshot timers: {e}"),
                }),
            });
        }
        Ok(out)
    }

    /// Every logged step, in order, handed to `f`; stops at `f`'s first
    /// error.
    pub fn replay<E>(&self, f: impl FnMut(i64, Step) -> Result<(), E>) -> Result<(), ReplayError<E>> {
        self.replay_after(0, f)
    }

    /// [`Store::replay`] of the steps after `seq` only. Steps the database
    /// moved to its archive come from there, then the rest from here, in
    /// order; a step missing on the way is an error, never skipped.
    pub fn replay_after<E>(
        &self,
        seq: i64,
        mut f: impl FnMut(i64, Step) -> Result<(), E>,
    ) -> Result<(), ReplayError<E>> {
        let mut next = seq + 1;
        if seq < self.archived_through {
            let archive = self.open_archive().map_err(ReplayError::Store)?;
            let path = self.archive.clone().unwrap_or_default();
            steps_of(
                &archive,
                &path,
                "SELECT seq, now_ms, events FROM steps WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
                [seq, self.archived_through],
                &mut next,
                &mut f,
            )?;
            if next != self.archived_through + 1 {
                return Err(ReplayError::Store(self.archive_err(format!(
                    "ends at step {} (it lacks steps of this database)",
                    next - 1
                ))));
            }
        }
        steps_of(
            &self.conn,
            &self.path,
            // Up to the last step counted at the open (a broker may be
            // appending to the file meanwhile).
            "SELECT seq, now_ms, events FROM steps WHERE seq > ?1 AND seq < ?2 ORDER BY seq",
            [next - 1, self.next_seq],
            &mut next,
            &mut f,
        )?;
        if next != self.next_seq {
            return Err(ReplayError::Store(StoreError::Corrupt {
                path: self.path.clone(),
                seq: next,
                reason: format!("missing (the log ends at {})", self.next_seq - 1),
            }));
        }
        Ok(())
    }

    fn archive_err(&self, reason: String) -> StoreError {
        StoreError::Archive {
            path: self.path.clone(),
            archive: self.archive.clone().unwrap_or_default(),
            through: self.archived_through,
            reason,
        }
    }

    /// The archive, to read, checked to be this database's.
    fn open_archive(&self) -> Result<Connection, StoreError> {
        let Some(path) = &self.archive else {
            return Err(self.archive_err("is not recorded (meta.archive)".into()));
        };
        if !path.exists() {
            return Err(self.archive_err("is missing".into()));
        }
        // Read-write, never created: a compaction cut short in its archive
        // transaction left a journal that SQLite rolls back on the first read.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| self.archive_err(format!("does not open: {e}")))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| self.archive_err(e.to_string()))?;
        let of: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'archive_of'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.archive_err(format!("is not an archive ({e})")))?;
        if of.as_deref() != Some(self.epoch_ms.to_string().as_str()) {
            return Err(self.archive_err(format!(
                "is the archive of another database (created at {}, this one at {})",
                of.as_deref().unwrap_or("?"),
                self.epoch_ms
            )));
        }
        Ok(conn)
    }
}

/// Hands the steps `sql` selects (with `args`) to `f`, each checked to be
/// step `*next`, which then moves on.
fn steps_of<E>(
    conn: &Connection,
    path: &Path,
    sql: &str,
    args: [i64; 2],
    next: &mut i64,
    f: &mut impl FnMut(i64, Step) -> Result<(), E>,
) -> Result<(), ReplayError<E>> {
    let err = |e| {
        ReplayError::Store(StoreError::Sqlite {
            path: path.to_path_buf(),
            cause: e,
        })
    };
    let mut q = conn.prepare(sql).map_err(err)?;
    let mut rows = q.query(args).map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        let read =
            || -> Result<(i64, i64, String), rusqlite::Error> { Ok((row.get(0)?, row.get(1)?, row.get(2)?)) };
        let (seq, now, events) = read().map_err(err)?;
        if seq != *next {
            return Err(ReplayError::Store(StoreError::Corrupt {
                path: path.to_path_buf(),
                seq: *next,
                reason: format!("missing (the next step here is {seq})"),
            }));
        }
        let events: Vec<Event> = serde_json::from_str(&events).map_err(|e| {
            ReplayError::Store(StoreError::Corrupt {
                path: path.to_path_buf(),
                seq,
                reason: format!("events: {e}"),
            })
        })?;
        f(
            seq,
            Step {
                now: Time::from_millis(now),
                events,
            },
        )
        .map_err(|e| ReplayError::Step(seq, e))?;
        *next += 1;
    }
    Ok(())
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError<E> {
    #[error(transparent)]
    Store(StoreError),
    #[error("step {0}: {1}")]
    Step(i64, E),
}
