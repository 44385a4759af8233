//! Is the database whole? Three checks, from the cheapest:
//!
//! 1. at open, SQLite's `PRAGMA quick_check` (pages, b-trees, row
//!    counts) on a file up to [`QUICK_CHECK_MAX_BYTES`];
//! 2. at open, the schema: every table and column this fairsched reads
//!    is there ([`missing`]), but those `Broker::open` adds to a database
//!    of an older fairsched, unless this database had them once (the
//!    `meta.schema_items` it recorded: then a missing one was dropped);
//! 3. on every row read, an error that only a damaged file gives (text
//!    that is not UTF-8, a value of the wrong type, `SQLITE_CORRUPT`) is
//!    said as a [`CorruptRow`] naming the table and the row.
//!
//! `fairsched admin check` ([`check`]) runs the full `PRAGMA
//! integrity_check` and the schema check, on any size of file.

use super::{SNAPSHOT_SCHEMA, StoreError, create_tables};
use rusqlite::types::Type;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

/// The largest file [`quick`] checks at every open: SQLite's
/// `quick_check` reads every page, about 50 ms for 64 MiB in the page
/// cache. A larger database is checked by `fairsched admin check`.
pub const QUICK_CHECK_MAX_BYTES: u64 = 64 << 20;

/// What to do about a damaged database, said by every error of this module.
pub(crate) const WHAT_TO_DO: &str =
    "restore it from a backup (`fairsched admin check --db FILE` lists what is damaged)";

/// The `meta` key recording the tables and columns a database has had
/// (`table` and `table.column`, space-separated).
const META_SCHEMA_ITEMS: &str = "schema_items";

/// Tables and their columns.
type Schema = BTreeMap<String, BTreeSet<String>>;

/// The tables and columns of `conn`'s main database (SQLite's own tables
/// aside).
fn schema_of(conn: &Connection) -> rusqlite::Result<Schema> {
    let mut q =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?;
    let names: Vec<String> = q.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    let mut out = Schema::new();
    for name in names {
        let mut q = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let cols = q.query_map([&name], |r| r.get(0))?.collect::<Result<_, _>>()?;
        out.insert(name, cols);
    }
    Ok(out)
}

/// What this fairsched reads: the tables [`super::Store::create`] makes,
/// brought up to date as `Broker::open` does; and which of them (tables,
/// columns) an older database may lack, since `Broker::open` adds them.
struct Reference {
    full: Schema,
    added_tables: BTreeSet<String>,
}

fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let make = || -> rusqlite::Result<Reference> {
            let full = Connection::open_in_memory()?;
            create_tables(&full)?;
            crate::service::upgrade(&full)?;
            let added = Connection::open_in_memory()?;
            added.execute_batch(SNAPSHOT_SCHEMA)?;
            added.execute_batch(crate::service::ADDED_TABLES)?;
            Ok(Reference {
                full: schema_of(&full)?,
                added_tables: schema_of(&added)?.into_keys().collect(),
            })
        };
        make().expect("the schema builds in memory")
    })
}

/// Whether `Broker::open` adds `table.column` to a database that lacks it.
fn added_column(table: &str, column: &str) -> bool {
    (table == "tasks" && crate::service::ADDED_COLUMNS.iter().any(|(c, _)| *c == column))
        || crate::service::ADDED_ELSEWHERE
            .iter()
            .any(|(t, c, _)| *t == table && *c == column)
}

/// The tables (`tokens`) and columns (`tasks.command`) this fairsched
/// reads that `conn` lacks and that no opening would add back.
pub(crate) fn missing(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let reference = reference();
    let have = schema_of(conn)?;
    // (No `meta`: `admin check` on a file that is not a broker's; every
    // table is missing.)
    let recorded: BTreeSet<String> = if have.contains_key("meta") {
        conn.query_row(
            "SELECT value FROM meta WHERE key = ?1",
            [META_SCHEMA_ITEMS],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .map(|v| v.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
    } else {
        BTreeSet::new()
    };
    let mut out = Vec::new();
    for (table, columns) in &reference.full {
        let Some(has) = have.get(table) else {
            if recorded.contains(table) || !reference.added_tables.contains(table) {
                out.push(format!("table {table}"));
            }
            continue;
        };
        for column in columns {
            let item = format!("{table}.{column}");
            if !has.contains(column)
                && (recorded.contains(&item)
                    || !(reference.added_tables.contains(table) || added_column(table, column)))
            {
                out.push(format!("column {item}"));
            }
        }
    }
    Ok(out)
}

/// Records the tables and columns `conn` has now, of those this
/// fairsched reads (after `Broker::open` brought it up to date): from
/// then on, one of them missing is damage, not age. Written only when it
/// changed.
pub(crate) fn record(conn: &Connection) -> rusqlite::Result<()> {
    let have = schema_of(conn)?;
    let mut items = Vec::new();
    for (table, columns) in &reference().full {
        let Some(has) = have.get(table) else { continue };
        items.push(table.clone());
        items.extend(
            columns
                .iter()
                .filter(|c| has.contains(*c))
                .map(|c| format!("{table}.{c}")),
        );
    }
    let items = items.join(" ");
    let old: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = ?1",
            [META_SCHEMA_ITEMS],
            |r| r.get(0),
        )
        .optional()?;
    if old.as_deref() != Some(items.as_str()) {
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            [META_SCHEMA_ITEMS, &items],
        )?;
    }
    Ok(())
}

/// The schema check of an open: [`StoreError::Incomplete`] naming what is
/// missing.
pub(crate) fn schema(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let missing = missing(conn).map_err(|e| damaged_or_sql(path, e))?;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StoreError::Incomplete {
            path: path.to_path_buf(),
            missing,
        })
    }
}

/// `PRAGMA quick_check` (`full`: `integrity_check`, which also checks
/// indexes against their tables): the problems SQLite lists (at most
/// 20), empty when the file is whole.
pub(crate) fn problems(conn: &Connection, full: bool) -> rusqlite::Result<Vec<String>> {
    let pragma = if full { "integrity_check" } else { "quick_check" };
    let mut q = conn.prepare(&format!("PRAGMA {pragma}(20)"))?;
    let rows: Vec<String> = q.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(rows.into_iter().filter(|r| r != "ok").collect())
}

/// The quick check of an open, on a file up to [`QUICK_CHECK_MAX_BYTES`].
pub(crate) fn quick(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > QUICK_CHECK_MAX_BYTES {
        tracing::info!(
            "{}: {size} bytes, not checked at open (`fairsched admin check --db` checks it)",
            path.display()
        );
        return Ok(());
    }
    let problems = problems(conn, false).map_err(|e| damaged_or_sql(path, e))?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(StoreError::Damaged {
            path: path.to_path_buf(),
            problems,
        })
    }
}

/// What `fairsched admin check` prints: the integrity check's problems
/// and the schema's missing parts (both empty: the database is whole).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// `PRAGMA integrity_check`'s findings (at most 20).
    pub problems: Vec<String>,
    /// Tables and columns missing (see [`StoreError::Incomplete`]).
    pub missing: Vec<String>,
}

impl CheckReport {
    /// Nothing found.
    pub fn is_whole(&self) -> bool {
        self.problems.is_empty() && self.missing.is_empty()
    }
}

/// Checks the database at `path` without opening it as a broker would
/// (read-only, whatever its size): `PRAGMA integrity_check`, then the
/// schema. An error only when it cannot be read at all.
pub fn check(path: &Path) -> Result<CheckReport, StoreError> {
    if !path.exists() {
        return Err(StoreError::NotInitialized(path.to_path_buf()));
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| damaged_or_sql(path, e))?;
    let problems = match problems(&conn, true) {
        Ok(p) => p,
        Err(e) if is_corrupt(&e) => vec![e.to_string()],
        Err(e) => return Err(damaged_or_sql(path, e)),
    };
    let missing = match missing(&conn) {
        Ok(m) => m,
        Err(e) if is_corrupt(&e) => vec![format!("the schema does not read ({e})")],
        Err(e) => return Err(damaged_or_sql(path, e)),
    };
    Ok(CheckReport { problems, missing })
}

/// `SQLITE_CORRUPT` or `SQLITE_NOTADB`: the file is damaged.
fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// `e` as [`StoreError::Damaged`] if it says the file is damaged, else as
/// it is.
pub(crate) fn damaged_or_sql(path: &Path, e: rusqlite::Error) -> StoreError {
    if is_corrupt(&e) {
        StoreError::Damaged {
            path: path.to_path_buf(),
            problems: vec![e.to_string()],
        }
    } else {
        StoreError::Sqlite {
            path: path.to_path_buf(),
            cause: e,
        }
    }
}

/// A row that does not read back as it was written: the database is
/// corrupt. Carried in a `rusqlite::Error` (a conversion failure of no
/// column, which displays as this), so that the readers' signatures stay.
#[derive(Debug)]
pub struct CorruptRow {
    /// The table.
    pub table: &'static str,
    /// The row's key: its first column read (`id`) and its value, if that
    /// much reads.
    pub key: Option<(String, i64)>,
    /// The row after which stepping failed, when no row was read.
    pub after: Option<i64>,
    /// What does not read (`column command: invalid utf-8 …`).
    pub cause: String,
}

impl fmt::Display for CorruptRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {}", self.table)?;
        match (&self.key, self.after) {
            (Some((name, v)), _) => write!(f, ", row {name} {v}")?,
            (None, Some(v)) => write!(f, ", after row {v}")?,
            (None, None) => {}
        }
        // `admin check` finds damaged pages and missing tables, not a bad
        // value in a sound row such as this one: not pointed to.
        write!(
            f,
            ": {}: the database is corrupt; restore it from a backup (or repair that row by hand)",
            self.cause
        )
    }
}

impl std::error::Error for CorruptRow {}

fn wrap(row: CorruptRow) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(usize::MAX, Type::Null, Box::new(row))
}

fn is_wrapped(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::FromSqlConversionFailure(_, _, inner) if inner.is::<CorruptRow>())
}

/// Reads row `r` of `table` with `f`; an error only a damaged file gives
/// becomes a [`CorruptRow`] naming the table, the row (its first column,
/// `id` in most tables) and the column.
pub(crate) fn read_row<T>(
    table: &'static str,
    r: &Row,
    f: impl FnOnce(&Row) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    f(r).map_err(|e| {
        use rusqlite::Error as E;
        let (column, cause) = match &e {
            _ if is_wrapped(&e) => return e,
            E::Utf8Error(i, u) => (Some(*i), u.to_string()),
            E::FromSqlConversionFailure(i, _, inner) => (Some(*i), inner.to_string()),
            E::InvalidColumnType(i, _, t) => (Some(*i), format!("a value of type {t}")),
            E::IntegralValueOutOfRange(i, v) => (Some(*i), format!("{v} is out of range")),
            _ if is_corrupt(&e) => (None, e.to_string()),
            _ => return e,
        };
        let stmt = r.as_ref();
        let key = stmt
            .column_name(0)
            .ok()
            .map(str::to_owned)
            .zip(r.get::<_, i64>(0).ok());
        let cause = match column.and_then(|i| stmt.column_name(i).ok()) {
            Some(name) => format!("column {name}: {cause}"),
            None => cause,
        };
        wrap(CorruptRow {
            table,
            key,
            after: None,
            cause,
        })
    })
}

/// For the errors of stepping through `table`'s rows (past the row
/// `after`, if one was read): `SQLITE_CORRUPT` becomes a [`CorruptRow`];
/// other errors, and those [`read_row`] made, stay as they are.
pub(crate) fn stepping(
    table: &'static str,
    after: Option<i64>,
) -> impl Fn(rusqlite::Error) -> rusqlite::Error {
    move |e| {
        if is_wrapped(&e) || !is_corrupt(&e) {
            return e;
        }
        wrap(CorruptRow {
            table,
            key: None,
            after,
            cause: e.to_string(),
        })
    }
}
