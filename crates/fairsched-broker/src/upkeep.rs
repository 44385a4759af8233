//! Keeping a broker's database: an online backup (`fairsched admin
//! backup`) and the log kept in bounds (`fairsched admin compact`).
//!
//! A restart restores the newest snapshot that restores, else the older
//! kept one, else the whole log (`live::load`), and replays the steps after
//! it. So the steps after the older kept snapshot are what a restart needs;
//! those up to it are needed only by a replay of the whole log (a snapshot
//! that no longer restores, `Live::open_from_log`). [`compact`] moves those
//! into the archive — a SQLite file of its own, appended to by later
//! compactions — and the database's replays read them back from there
//! ([`Store::replay_after`]).

use crate::store::{META_ARCHIVE, META_ARCHIVED_THROUGH, Store, StoreError, private};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpkeepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A broker serves the database (it holds the lock file).
    #[error(
        "{db}: a `fairsched serve` is using this database (it holds {lock}); stop it first, or compact a copy made by `fairsched admin backup`"
    )]
    Serving { db: PathBuf, lock: PathBuf },
    #[error("{0}: already exists (a backup never overwrites a file)")]
    Exists(PathBuf),
    #[error("{0}: no such database")]
    NoDatabase(PathBuf),
    /// The archive given is not the one the database records.
    #[error(
        "{db}: its steps 1 to {through} are archived in {recorded}, not {given}: a database keeps one archive"
    )]
    OtherArchive {
        db: PathBuf,
        through: i64,
        recorded: PathBuf,
        given: PathBuf,
    },
    #[error("{archive}: {reason}")]
    Archive { archive: PathBuf, reason: String },
}

/// What [`backup`] copied.
#[derive(Debug)]
pub struct BackedUp {
    /// Database pages copied (of `page_size` bytes).
    pub pages: i64,
    pub page_size: i64,
    /// Steps the copy holds, and through which one the archive holds the
    /// earlier ones (0: no archive).
    pub steps: u64,
    pub archived_through: i64,
    pub archive: Option<PathBuf>,
}

/// Copies the database at `db` to `out` with SQLite's online backup API:
/// one read transaction, so the copy is the database as of one commit,
/// while a broker goes on writing (WAL: the copy does not block it). `out`
/// is created 0600 and refused if it exists. The archive, if any, is not
/// copied: the copy records the same one.
pub fn backup(db: &Path, out: &Path) -> Result<BackedUp, UpkeepError> {
    use std::os::unix::fs::OpenOptionsExt;
    if !db.is_file() {
        return Err(UpkeepError::NoDatabase(db.to_path_buf()));
    }
    let sql = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| StoreError::Sqlite {
            path: path.clone(),
            cause,
        }
    };
    let src = Connection::open(db).map_err(sql(db))?;
    src.busy_timeout(Duration::from_secs(5)).map_err(sql(db))?;
    // A fairsched database, before any file is made.
    src.query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
        r.get::<_, String>(0)
    })
    .map_err(|_| StoreError::NotInitialized(db.to_path_buf()))?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(UpkeepError::Exists(out.to_path_buf()));
        }
        Err(e) => {
            return Err(StoreError::Io {
                path: out.to_path_buf(),
                cause: e,
            }
            .into());
        }
    }
    let copied = copy_into(&src, db, out);
    if copied.is_err() {
        // Ours, and not a database: nothing to keep.
        for ext in ["", "-wal", "-shm", "-journal"] {
            let mut p = out.as_os_str().to_owned();
            p.push(ext);
            let _ = std::fs::remove_file(p);
        }
    }
    copied
}

fn copy_into(src: &Connection, db: &Path, out: &Path) -> Result<BackedUp, UpkeepError> {
    let sql = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| StoreError::Sqlite {
            path: path.clone(),
            cause,
        }
    };
    let mut dst = Connection::open(out).map_err(sql(out))?;
    {
        let b = rusqlite::backup::Backup::new(src, &mut dst).map_err(sql(out))?;
        // All pages in one step: one read transaction on the source, so
        // the copy is one commit's database (in steps, a write by the
        // broker between two of them would restart the copy). A busy
        // source (a checkpoint starting) is tried again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match b.step(-1).map_err(sql(out))? {
                rusqlite::backup::StepResult::Done => break,
                _ if Instant::now() > deadline => {
                    return Err(UpkeepError::Archive {
                        archive: db.to_path_buf(),
                        reason: "busy for 30 s: no backup".into(),
                    });
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
    let pages: i64 = dst
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .map_err(sql(out))?;
    let page_size: i64 = dst
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .map_err(sql(out))?;
    drop(dst);
    // The copy opens as a broker would open it.
    let (copy, _) = Store::open(out)?;
    Ok(BackedUp {
        pages,
        page_size,
        steps: copy.len(),
        archived_through: copy.archived_through(),
        archive: copy.archive().map(Path::to_path_buf),
    })
}

/// The lock file of the database at `db`: beside the file the path resolves
/// to, so that two paths to one database (a link, `..`) take one lock.
pub fn lock_path(db: &Path) -> PathBuf {
    let real = db.canonicalize().unwrap_or_else(|_| db.to_path_buf());
    let mut p = real.into_os_string();
    p.push(".lock");
    PathBuf::from(p)
}

/// Takes the lock `fairsched serve` takes: no broker starts on the
/// database while it is held, and none may be serving it now. Released
/// when the file is dropped (the file stays, as a served database's does).
fn lock(db: &Path) -> Result<std::fs::File, UpkeepError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = lock_path(db);
    let io = |e| StoreError::Io {
        path: path.clone(),
        cause: e,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(UpkeepError::Serving {
            db: db.to_path_buf(),
            lock: path,
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e).into()),
    }
}

/// What [`compact`] did.
#[derive(Debug)]
pub struct Compacted {
    pub archive: PathBuf,
    /// Steps moved by this compaction.
    pub moved: u64,
    /// Steps 1 to this one are in the archive now (0: none).
    pub archived_through: i64,
    /// The log's last step.
    pub last: i64,
    /// The older kept snapshot (`None`: there is none, nothing was moved).
    pub oldest_snapshot: Option<i64>,
}

/// Moves the steps of the database at `db` up to its older kept snapshot
/// into `archive` (default: `DB.archive`; the one the database records,
/// once it has one), which is created 0600 if missing and appended to
/// otherwise. Refused while a broker serves the database; a broker cannot
/// start meanwhile (the lock `fairsched serve` takes is held).
///
/// Two transactions, in this order: the archive gets the steps (durable
/// when it commits), then the database drops them and records
/// `archived_through` in one. A crash between the two leaves the steps in
/// both; the database still reads its own (it records the old bound), and
/// the next compaction finds them in the archive, checks they are the same
/// and goes on. A crash in either leaves that file as it was.
pub fn compact(db: &Path, archive: Option<&Path>) -> Result<Compacted, UpkeepError> {
    if !db.is_file() {
        return Err(UpkeepError::NoDatabase(db.to_path_buf()));
    }
    let _lock = lock(db)?;
    let (mut store, _) = Store::open(db)?;
    let through = store.archived_through();
    let last = store.len() as i64;
    let oldest: Option<i64> = store
        .conn()
        .query_row("SELECT min(seq) FROM snapshots", [], |r| r.get(0))
        .map_err(|e| store.sql(e))?;
    let recorded = store.archive().map(Path::to_path_buf);
    let given = archive.map(absolute).transpose()?;
    let archive = match (given, recorded) {
        (Some(g), Some(r)) if g != r => {
            return Err(UpkeepError::OtherArchive {
                db: db.to_path_buf(),
                through,
                recorded: r,
                given: g,
            });
        }
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => {
            let mut p = absolute(db)?.into_os_string();
            p.push(".archive");
            PathBuf::from(p)
        }
    };
    let Some(upto) = oldest.filter(|&s| s > through) else {
        // Nothing new to move.
        return Ok(Compacted {
            archive,
            moved: 0,
            archived_through: through,
            last,
            oldest_snapshot: oldest,
        });
    };
    if through > 0 && !archive.exists() {
        // Not made again empty: the steps already moved are gone with it.
        return Err(UpkeepError::Archive {
            archive,
            reason: format!(
                "is missing, and {} moved steps 1 to {through} there",
                db.display()
            ),
        });
    }
    let mut arch = open_archive(&archive, &store)?;
    let sql = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| StoreError::Sqlite {
            path: path.clone(),
            cause,
        }
    };
    let has: i64 = arch
        .query_row("SELECT coalesce(max(seq), 0) FROM steps", [], |r| r.get(0))
        .map_err(sql(&archive))?;
    if has < through {
        return Err(UpkeepError::Archive {
            archive,
            reason: format!(
                "ends at step {has}, but {} moved steps 1 to {through} there",
                db.display()
            ),
        });
    }
    // 1. The archive gets the steps. One already there (a compaction that
    // stopped between its two transactions) must be the same step.
    let moved = {
        let tx = arch.transaction().map_err(sql(&archive))?;
        let mut n = 0u64;
        {
            let mut read = store
                .conn()
                .prepare("SELECT seq, now_ms, events FROM steps WHERE seq > ?1 AND seq <= ?2 ORDER BY seq")
                .map_err(sql(db))?;
            let mut rows = read.query([through, upto]).map_err(sql(db))?;
            let mut ins = tx
                .prepare("INSERT OR IGNORE INTO steps (seq, now_ms, events) VALUES (?1, ?2, ?3)")
                .map_err(sql(&archive))?;
            let mut same = tx
                .prepare("SELECT now_ms, events FROM steps WHERE seq = ?1")
                .map_err(sql(&archive))?;
            while let Some(row) = rows.next().map_err(sql(db))? {
                let (seq, now, events): (i64, i64, String) = (
                    row.get(0).map_err(sql(db))?,
                    row.get(1).map_err(sql(db))?,
                    row.get(2).map_err(sql(db))?,
                );
                if seq != through + 1 + n as i64 {
                    return Err(StoreError::Corrupt {
                        path: db.to_path_buf(),
                        seq: through + 1 + n as i64,
                        reason: "missing: nothing was archived".into(),
                    }
                    .into());
                }
                if ins.execute(params![seq, now, events]).map_err(sql(&archive))? == 0 {
                    let there: (i64, String) = same
                        .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map_err(sql(&archive))?;
                    if there != (now, events) {
                        return Err(UpkeepError::Archive {
                            archive,
                            reason: format!(
                                "holds another step {seq} than {} (the archive of a copy that went its own way?): nothing was archived",
                                db.display()
                            ),
                        });
                    }
                }
                n += 1;
            }
        }
        if n != (upto - through) as u64 {
            return Err(StoreError::Corrupt {
                path: db.to_path_buf(),
                seq: through + 1 + n as i64,
                reason: "missing: nothing was archived".into(),
            }
            .into());
        }
        tx.commit().map_err(sql(&archive))?;
        n
    };
    // 2. The database drops them and says where they are.
    store.transact(|tx| {
        tx.execute("DELETE FROM steps WHERE seq <= ?1", [upto])?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2), (?3, ?4)",
            params![
                META_ARCHIVED_THROUGH,
                upto.to_string(),
                META_ARCHIVE,
                archive.to_string_lossy()
            ],
        )?;
        Ok(())
    })?;
    Ok(Compacted {
        archive,
        moved,
        archived_through: upto,
        last,
        oldest_snapshot: oldest,
    })
}

/// `p` made absolute (its folder resolved, so the database can record it).
fn absolute(p: &Path) -> Result<PathBuf, UpkeepError> {
    let io = |e| StoreError::Io {
        path: p.to_path_buf(),
        cause: e,
    };
    let abs = std::path::absolute(p).map_err(io)?;
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => Ok(dir.canonicalize().map_err(io)?.join(name)),
        _ => Ok(abs),
    }
}

/// The archive at `path` for `store`, created 0600 if missing; one of
/// another database is refused.
fn open_archive(path: &Path, store: &Store) -> Result<Connection, UpkeepError> {
    private(path, true)?;
    let sql = |cause| StoreError::Sqlite {
        path: path.to_path_buf(),
        cause,
    };
    let conn = Connection::open(path).map_err(sql)?;
    // One file (no -wal beside it), and a commit is on disk when it
    // returns: the database drops its steps only after.
    conn.pragma_update(None, "journal_mode", "DELETE").map_err(sql)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS steps (seq INTEGER PRIMARY KEY, now_ms INTEGER NOT NULL, events TEXT NOT NULL);",
    )
    .map_err(sql)?;
    let of: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'archive_of'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?;
    let ours = store.epoch_ms().to_string();
    match of {
        Some(of) if of != ours => Err(UpkeepError::Archive {
            archive: path.to_path_buf(),
            reason: format!(
                "the archive of another database (created at {of}, {} at {ours})",
                store.path().display()
            ),
        }),
        Some(_) => Ok(conn),
        None => {
            let config = serde_json::to_string(store.config()).expect("config serializes");
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('archive_of', ?1), ('config', ?2), ('schema', ?3)",
                params![ours, config, crate::store::SCHEMA_VERSION.to_string()],
            )
            .map_err(sql)?;
            Ok(conn)
        }
    }
}
