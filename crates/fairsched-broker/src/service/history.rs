//! A broker's history, read from its database (the broker may be running):
//! what `fairsched export` writes and `simulate --broker-log` replays.

use std::collections::HashMap;
use std::path::Path;

/// One ended task of a broker's history, as `fairsched export` writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryTask {
    pub id: u64,
    pub user: i64,
    pub org: u32,
    pub state: String,
    pub submit_ms: i64,
    pub start_ms: Option<i64>,
    pub end_ms: i64,
}

/// What `fairsched export` needs: every ended task (in id order), the
/// organizations (id, name, the most slots its workers held at once) and
/// which users belong to which organization.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub epoch_ms: i64,
    pub tasks: Vec<HistoryTask>,
    pub orgs: Vec<(u32, String, u32)>,
    pub users: Vec<(i64, String, u32)>,
}

/// Reads the history of the database at `path` (read-only: a running
/// broker may keep writing).
pub fn history(path: &Path) -> Result<History, String> {
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    if !path.exists() {
        return Err(format!("{}: no such database", path.display()));
    }
    if path.is_dir() {
        return Err(format!(
            "{}: a directory, not a broker database (give the file made by `fairsched admin init`)",
            path.display()
        ));
    }
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(err)?;
    let epoch_ms: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'epoch_ms'", [], |r| {
            r.get::<_, String>(0)
        })
        .map_err(|e| format!("{}: not a fairsched database ({e})", path.display()))?
        .parse()
        .map_err(|_| format!("{}: meta.epoch_ms is not a number", path.display()))?;
    let mut h = History {
        epoch_ms,
        ..History::default()
    };
    let mut q = conn
        .prepare(
            "SELECT id, user_id, org, state, submit_ms, start_ms, end_ms FROM tasks WHERE state NOT IN ('live', 'held') ORDER BY id",
        )
        .map_err(err)?;
    for row in q
        .query_map([], |r| {
            Ok(HistoryTask {
                id: r.get::<_, i64>(0)? as u64,
                user: r.get(1)?,
                org: r.get::<_, i64>(2)? as u32,
                state: r.get(3)?,
                submit_ms: r.get(4)?,
                start_ms: r.get(5)?,
                end_ms: r.get(6)?,
            })
        })
        .map_err(err)?
    {
        h.tasks.push(row.map_err(err)?);
    }
    // Slots per organization: the most its workers held at once.
    let mut spans: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
    let mut q = conn
        .prepare("SELECT org, slots, joined_ms, left_ms FROM workers")
        .map_err(err)?;
    for row in q
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)? as u32,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(err)?
    {
        let (org, slots, joined, left) = row.map_err(err)?;
        let e = spans.entry(org).or_default();
        e.push((joined, slots));
        e.push((left.unwrap_or(i64::MAX), -slots));
    }
    let mut q = conn
        .prepare("SELECT id, name FROM orgs ORDER BY id")
        .map_err(err)?;
    for row in q
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u32, r.get::<_, String>(1)?)))
        .map_err(err)?
    {
        let (id, name) = row.map_err(err)?;
        let mut ev = spans.remove(&id).unwrap_or_default();
        // Leaves before joins at the same instant.
        ev.sort_by_key(|&(t, d)| (t, d));
        let (mut cur, mut most) = (0i64, 0i64);
        for (_, d) in ev {
            cur += d;
            most = most.max(cur);
        }
        h.orgs.push((id, name, most as u32));
    }
    let mut q = conn
        .prepare("SELECT id, name, org FROM users ORDER BY id")
        .map_err(err)?;
    for row in q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32)))
        .map_err(err)?
    {
        h.users.push(row.map_err(err)?);
    }
    Ok(h)
}
