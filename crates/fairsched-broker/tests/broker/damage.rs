//! A damaged database is named as such (issue 38, finding 9): a dropped
//! table or column is refused at open, naming it, the file and what to
//! do; a row that does not read names its table and row and says the
//! database is corrupt; a damaged page fails SQLite's quick check at
//! open. Each on a real database made by a broker, then damaged with
//! rusqlite or by writing over its file.

use fairsched_broker::api::NewTask;
use fairsched_broker::service::{Broker, Settings, Write, Written};
use fairsched_broker::{Config, Live, Principal, Store};
use std::path::{Path, PathBuf};

struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
    /// The tasks submitted, in order: `MARKER-1-…` to `MARKER-4-…`.
    ids: Vec<u64>,
}

/// The command of task `i` (1-based), long enough to find in the file.
fn command(i: usize) -> String {
    format!("echo MARKER-{i}-{}", "x".repeat(40))
}

/// A database with one user, four tasks submitted through a broker (the
/// second one cancelled, so that opening does not read its row), closed
/// and checkpointed: every row is in the main file.
fn made() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.db");
    let live = Live::create(&path, &Config::default(), &fairsched_core::Registry::builtin()).unwrap();
    let st = live.store();
    st.add_org("physics").unwrap();
    let token = st.add_user("alice", "physics").unwrap();
    let Some(Principal::User { id: user, org, .. }) = st.authenticate(&token).unwrap() else {
        panic!("alice is a user")
    };
    drop(live);
    let mut b = Broker::open(&path, Settings::default()).unwrap();
    let tasks = (1..=4)
        .map(|i| NewTask {
            command: command(i),
            ..NewTask::default()
        })
        .collect();
    let ids = match b
        .write(vec![Write::Submit {
            user,
            org,
            tasks,
            workflow: None,
            key: None,
            reservation: None,
        }])
        .pop()
        .unwrap()
        .unwrap()
    {
        Written::Submitted { ids, .. } => ids,
        w => panic!("{w:?}"),
    };
    let cancelled = b
        .write(vec![Write::Cancel {
            who: Principal::Admin,
            task: ids[1],
        }])
        .pop()
        .unwrap()
        .unwrap();
    assert!(matches!(cancelled, Written::Cancelled(_)), "{cancelled:?}");
    drop(b);
    let c = rusqlite::Connection::open(&path).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(c);
    Db { _dir: dir, path, ids }
}

fn sql(path: &Path, statements: &str) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(statements).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

fn open_err(path: &Path) -> String {
    match Broker::open(path, Settings::default()) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e.to_string(),
    }
}

/// Offsets of `needle` in `hay`.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    (0..hay.len().saturating_sub(needle.len()))
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

/// A dropped `tokens`: before, the broker started, `/healthz` said ok and
/// every authenticated call was 503. Now the store and the broker refuse
/// to open it, naming the table, the file and what to do; `admin check`'s
/// report says the same.
#[test]
fn a_dropped_table_is_refused_at_open_naming_it() {
    let db = made();
    assert!(fairsched_broker::store::check(&db.path).unwrap().is_whole());
    sql(&db.path, "DROP TABLE tokens;");
    let shown = db.path.display().to_string();
    for err in [
        open_err(&db.path),
        Store::open(&db.path).err().unwrap().to_string(),
    ] {
        assert!(
            err.starts_with(&format!("{shown}: the database is incomplete")),
            "{err}"
        );
        assert!(err.contains("lacks table tokens"), "{err}");
        assert!(
            err.contains(&format!(
                "restore it from a backup (`fairsched admin check --db {shown}`"
            )),
            "{err}"
        );
    }
    let report = fairsched_broker::store::check(&db.path).unwrap();
    assert_eq!(report.missing, ["table tokens"]);
    assert!(report.problems.is_empty(), "{report:?}");
    // A SQLite file that is not a broker's: every table is missing.
    let other = db.path.with_file_name("other.db");
    sql(&other, "CREATE TABLE t (x INTEGER);");
    let report = fairsched_broker::store::check(&other).unwrap();
    for table in ["table meta", "table steps", "table tokens", "table tasks"] {
        assert!(report.missing.iter().any(|m| m == table), "{report:?}");
    }
}

/// A dropped column, and a table that `Broker::open` adds to an older
/// database (`outputs`) dropped from one that had it: both refused. The
/// same table missing from a database that never had it (an older
/// fairsched's, which recorded nothing) is added, as before.
#[test]
fn a_dropped_column_or_added_table_is_refused_but_an_old_database_is_upgraded() {
    let db = made();
    sql(&db.path, "ALTER TABLE tasks DROP COLUMN stage_out;");
    let err = open_err(&db.path);
    assert!(err.contains("lacks column tasks.stage_out"), "{err}");

    let db = made();
    sql(
        &db.path,
        "DROP TABLE outputs; ALTER TABLE tasks DROP COLUMN hold;",
    );
    let err = open_err(&db.path);
    assert!(err.contains("lacks table outputs, column tasks.hold"), "{err}");

    let db = made();
    sql(
        &db.path,
        "DROP TABLE outputs; ALTER TABLE tasks DROP COLUMN hold; DELETE FROM meta WHERE key = 'schema_items';",
    );
    let b = Broker::open(&db.path, Settings::default()).unwrap();
    drop(b);
    let report = fairsched_broker::store::check(&db.path).unwrap();
    assert!(report.is_whole(), "{report:?}");
}

/// Random bytes over a task's command: before, "invalid utf-8 sequence
/// … at index 2", naming no table or row. Now the row's read names the
/// table, the row and the column and says the database is corrupt, both
/// at open (a live task's row is read then) and when a query reads an
/// ended task's row.
#[test]
fn a_row_that_does_not_read_names_its_table_and_row() {
    for (task, at_open) in [(2, false), (3, true)] {
        let db = made();
        let id = db.ids[task - 1];
        let mut bytes = std::fs::read(&db.path).unwrap();
        let marker = format!("MARKER-{task}-");
        // The row, and what an update left of it in free space.
        let at = find_all(&bytes, marker.as_bytes());
        assert!(!at.is_empty());
        for at in at {
            bytes[at + 2] = 0xff;
            bytes[at + 3] = 0xfe;
        }
        std::fs::write(&db.path, &bytes).unwrap();
        let err = if at_open {
            open_err(&db.path)
        } else {
            let b = Broker::open(&db.path, Settings::default()).unwrap();
            // The other tasks still read.
            b.task(&Principal::Admin, db.ids[0]).unwrap();
            b.task(&Principal::Admin, id).unwrap_err().to_string()
        };
        let want = format!("table tasks, row id {id}: column command: invalid utf-8 sequence");
        assert!(err.contains(&want), "{err}");
        assert!(
            err.contains("the database is corrupt; restore it from a backup"),
            "{err}"
        );
        if at_open {
            assert!(err.starts_with(&format!("{}: ", db.path.display())), "{err}");
        }
    }
}

/// Garbage over a whole page of task rows: SQLite's quick check at open
/// finds it, and the error says the file is corrupt.
#[test]
fn a_damaged_page_fails_the_check_at_open() {
    let db = made();
    let mut bytes = std::fs::read(&db.path).unwrap();
    let page = 4096;
    let at = find_all(&bytes, b"MARKER-3-")[0];
    let start = at / page * page;
    assert!(start > 0, "not the header page");
    let mut x: u32 = 0x9e37_79b9;
    for b in &mut bytes[start..start + page] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    std::fs::write(&db.path, &bytes).unwrap();
    let shown = db.path.display().to_string();
    for err in [
        open_err(&db.path),
        Store::open(&db.path).err().unwrap().to_string(),
    ] {
        assert!(
            err.starts_with(&format!("{shown}: the database is corrupt (")),
            "{err}"
        );
        assert!(err.contains("restore it from a backup"), "{err}");
    }
    let report = fairsched_broker::store::check(&db.path).unwrap();
    assert!(!report.problems.is_empty() && !report.is_whole(), "{report:?}");
}
