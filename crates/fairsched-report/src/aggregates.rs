//! Per-organization and per-user tables from run metrics.

use crate::table::{Table, fixed};
use fairsched_core::metrics::{Aggregate, Metrics};

fn row(t: &mut Table, key: String, a: &Aggregate) {
    t.row([
        key,
        a.tasks.to_string(),
        a.completed.to_string(),
        fixed(a.mean_wait(), 1),
        fixed(a.max_wait, 0),
        fixed(a.mean_response(), 1),
        fixed(a.mean_bsld(), 3),
        fixed(a.slot_seconds, 0),
    ]);
}

const COLS: [&str; 7] = [
    "tasks",
    "completed",
    "mean_wait_s",
    "max_wait_s",
    "mean_response_s",
    "mean_bsld",
    "slot_seconds",
];

/// One row per organization.
pub fn by_org(m: &Metrics) -> Table {
    let mut t = Table::new(std::iter::once("org").chain(COLS));
    for (o, a) in &m.by_org {
        row(&mut t, o.to_string(), a);
    }
    t
}

/// One row per user.
pub fn by_user(m: &Metrics) -> Table {
    let mut t = Table::new(std::iter::once("user").chain(COLS));
    for (u, a) in &m.by_user {
        row(&mut t, u.to_string(), a);
    }
    t
}
