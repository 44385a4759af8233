//! Per-organization and per-user tables from run metrics.

use crate::table::{Table, fixed};
use fairsched_core::metrics::{Aggregate, Metrics};

fn row(t: &mut Table, key: String, a: &Aggregate) {
    t.row(std::iter::once(key).chain(cells(a)));
}

fn cells(a: &Aggregate) -> [String; 7] {
    [
        a.tasks.to_string(),
        a.completed.to_string(),
        fixed(a.mean_wait(), 1),
        fixed(a.max_wait, 0),
        fixed(a.mean_response(), 1),
        fixed(a.mean_bsld(), 3),
        fixed(a.slot_seconds, 0),
    ]
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

/// One organization's utility and contribution (spec/shapley.md), in s².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrgUtility {
    pub org: u32,
    pub procs: u32,
    pub psi: f64,
    pub phi: Option<f64>,
}

/// [`by_org`] with each organization's processors, ψ, φ and φ − ψ (empty
/// cells where φ was not computed).
pub fn by_org_with_utility(m: &Metrics, utility: &[OrgUtility]) -> Table {
    let mut t = Table::new(std::iter::once("org").chain(COLS).chain([
        "procs",
        "psi_s2",
        "phi_s2",
        "phi_minus_psi_s2",
    ]));
    for (o, a) in &m.by_org {
        let u = utility.iter().find(|u| u.org == o.0);
        let extra = [
            u.map(|u| u.procs.to_string()),
            u.map(|u| format!("{}", u.psi)),
            u.and_then(|u| u.phi).map(|p| format!("{p}")),
            u.and_then(|u| u.phi.map(|p| format!("{}", p - u.psi))),
        ];
        t.row(
            std::iter::once(o.to_string())
                .chain(cells(a))
                .chain(extra.into_iter().map(Option::unwrap_or_default)),
        );
    }
    t
}
