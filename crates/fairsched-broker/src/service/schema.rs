//! The service's tables (beside the log's and the identities'), and how a
//! database made by an older fairsched is brought up to them.

/// Tables added since schema 2 was first written (idempotent).
macro_rules! added_tables {
    () => {
        "
    CREATE TABLE IF NOT EXISTS workflows (
        id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, org INTEGER NOT NULL,
        name TEXT NOT NULL, activities TEXT NOT NULL, submit_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS task_parents (
        child INTEGER NOT NULL, parent INTEGER NOT NULL,
        PRIMARY KEY (child, parent)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS shares (
        user_id INTEGER PRIMARY KEY, allocated_ms INTEGER NOT NULL,
        deserved REAL NOT NULL, base REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS submit_keys (
        user_id INTEGER NOT NULL, key TEXT NOT NULL, digest BLOB NOT NULL,
        ids TEXT NOT NULL, workflow INTEGER, at_ms INTEGER NOT NULL,
        PRIMARY KEY (user_id, key)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS outputs (
        task INTEGER NOT NULL, attempt INTEGER NOT NULL,
        stdout TEXT NOT NULL, stderr TEXT NOT NULL,
        stdout_bytes INTEGER NOT NULL, stderr_bytes INTEGER NOT NULL,
        PRIMARY KEY (task, attempt)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS quotas (
        kind TEXT NOT NULL, id INTEGER NOT NULL, max_queued INTEGER NOT NULL,
        max_running INTEGER, PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS removed (
        kind TEXT NOT NULL, id INTEGER NOT NULL, at_ms INTEGER NOT NULL,
        PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS worker_sessions (
        worker INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS worker_slots (
        worker INTEGER NOT NULL, first_slot INTEGER NOT NULL, slots INTEGER NOT NULL,
        PRIMARY KEY (worker, first_slot)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS share_clock (
        id INTEGER PRIMARY KEY CHECK (id = 0), g REAL NOT NULL, at_ms INTEGER NOT NULL);
"
    };
}

/// The service's own tables, created with the log. Columns and tables
/// added since schema 2 was first written are added to an older database
/// when it is opened ([`ADDED_COLUMNS`], [`ADDED_TABLES`]).
pub const SCHEMA: &str = concat!(
    "
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, org INTEGER NOT NULL,
        name TEXT NOT NULL, command TEXT NOT NULL, stage_in TEXT, stage_out TEXT,
        priority INTEGER NOT NULL,
        state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        exit_code INTEGER, signal INTEGER,
        submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER,
        optional INTEGER NOT NULL DEFAULT 0, core_id INTEGER,
        workflow INTEGER, activity INTEGER, reason TEXT);
    CREATE INDEX tasks_user ON tasks (user_id, id);
    CREATE TABLE workers (
        id INTEGER PRIMARY KEY, org INTEGER NOT NULL, host TEXT NOT NULL,
        first_slot INTEGER NOT NULL, slots INTEGER NOT NULL,
        state TEXT NOT NULL, joined_ms INTEGER NOT NULL, left_ms INTEGER,
        lease_ms INTEGER NOT NULL);
",
    added_tables!()
);

/// `added_tables!`, for [`Broker::open`](super::Broker::open).
pub const ADDED_TABLES: &str = added_tables!();

/// Columns of `tasks` added since schema 2 was first written.
pub const ADDED_COLUMNS: [(&str, &str); 9] = [
    ("optional", "INTEGER NOT NULL DEFAULT 0"),
    ("core_id", "INTEGER"),
    ("workflow", "INTEGER"),
    ("activity", "INTEGER"),
    ("reason", "TEXT"),
    ("time_limit_ms", "INTEGER"),
    ("memory_bytes", "INTEGER"),
    ("caps", "TEXT"),
    // Who put a held task on hold (`user`, `admin`), if anyone did.
    ("hold", "TEXT"),
];

/// Columns of other tables added since: (table, column, type).
pub const ADDED_ELSEWHERE: [(&str, &str, &str); 2] = [
    // The local account a user's tasks run as (workers with --run-as-user).
    ("users", "run_as", "TEXT"),
    // Quotas on tasks in the scheduler (`max_queued` is -1 where a quota
    // sets only this one).
    ("quotas", "max_running", "INTEGER"),
];

/// Brings a database created by an older fairsched up to [`SCHEMA`]
/// (additive only: nothing is dropped or rewritten).
pub(crate) fn upgrade(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    for (col, ty) in ADDED_COLUMNS {
        if !has_column(conn, "tasks", col)? {
            conn.execute_batch(&format!("ALTER TABLE tasks ADD COLUMN {col} {ty}"))?;
        }
    }
    conn.execute_batch(ADDED_TABLES)?;
    for (table, col, ty) in ADDED_ELSEWHERE {
        if !has_column(conn, table, col)? {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {col} {ty}"))?;
        }
    }
    Ok(())
}

fn has_column(conn: &rusqlite::Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut q = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = q.query_map([], |r| r.get::<_, String>(1))?;
    for name in names {
        if name? == column {
            return Ok(true);
        }
    }
    Ok(false)
}
