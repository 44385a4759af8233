//! Per-organization and per-user tables from run metrics (`orgs.csv`,
//! `users.csv`).

use crate::table::{Table, fixed};
use fairsched_core::UserId;
use fairsched_core::metrics::{Aggregate, Metrics};

/// The figures of one user or organization; a mean over no task is empty.
fn cells(a: &Aggregate) -> [String; 7] {
    let started = a.started > 0;
    let completed = a.completed > 0;
    let when = |ok: bool, s: String| if ok { s } else { String::new() };
    [
        a.tasks.to_string(),
        a.completed.to_string(),
        when(started, fixed(a.mean_wait(), 1)),
        when(started, fixed(a.max_wait, 0)),
        when(completed, fixed(a.mean_response(), 1)),
        when(completed, fixed(a.mean_bsld(), 3)),
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

/// One organization's utility and contribution (spec/shapley.md), in s².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrgUtility {
    pub org: u32,
    pub psi: f64,
    pub phi: Option<f64>,
}

fn opt(x: Option<f64>) -> String {
    x.map(|x| format!("{x}")).unwrap_or_default()
}

/// The name of organization `org`: `names[org]`, else `org<org>` (the
/// default name a platform file gives an organization it does not name).
pub fn org_name(names: &[String], org: u32) -> String {
    names
        .get(org as usize)
        .cloned()
        .unwrap_or_else(|| format!("org{org}"))
}

/// One row per organization: the declared ones (`0..procs.len()`, owning
/// `procs[o]` processors) and any other that had tasks, ascending; each
/// with its index and name ([`org_name`]), its figures, its processors, the
/// share of all processors it owns and the share of the processor time its
/// tasks received; with `utility` also ψ, φ and φ − ψ (empty where φ was
/// not computed).
pub fn by_org(m: &Metrics, procs: &[u32], names: &[String], utility: Option<&[OrgUtility]>) -> Table {
    let mut cols: Vec<&str> = ["org", "name"].into_iter().chain(COLS).collect();
    cols.extend(["procs", "owned_share", "received_share"]);
    if utility.is_some() {
        cols.extend(["psi_s2", "phi_s2", "phi_minus_psi_s2"]);
    }
    let mut t = Table::new(cols);
    let none = Aggregate::default();
    // By organization once (a `find` per row was quadratic: 10⁵
    // organizations took seconds).
    let utility: Option<std::collections::BTreeMap<u32, &OrgUtility>> =
        utility.map(|us| us.iter().map(|u| (u.org, u)).collect());
    for s in m.org_shares(procs) {
        let a = m.by_org.get(&fairsched_core::OrgId(s.org)).unwrap_or(&none);
        let mut row: Vec<String> = [s.org.to_string(), org_name(names, s.org)]
            .into_iter()
            .chain(cells(a))
            .collect();
        row.extend([s.procs.to_string(), opt(s.owned_share), opt(s.received_share)]);
        if let Some(utility) = &utility {
            let u = utility.get(&s.org).copied();
            row.extend([
                opt(u.map(|u| u.psi)),
                opt(u.and_then(|u| u.phi)),
                opt(u.and_then(|u| u.phi.map(|p| p - u.psi))),
            ]);
        }
        t.row(row);
    }
    t
}

/// One row per user: its organization (several joined by `;` if its
/// tasks belonged to several) and its figures.
pub fn by_user(m: &Metrics) -> Table {
    let mut t = Table::new(["user", "org"].into_iter().chain(COLS));
    for (&u, a) in &m.by_user {
        t.row([u.to_string(), user_orgs(m, u)].into_iter().chain(cells(a)));
    }
    t
}

fn user_orgs(m: &Metrics, u: UserId) -> String {
    let orgs: Vec<String> = m.user_orgs(u).iter().map(ToString::to_string).collect();
    orgs.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_core::event::{Attempt, AttemptEnd};
    use fairsched_core::{EndRecord, MachineId, Outcome, SlotId, TaskSpec, Time};

    /// A completed task of `user` in `org` on `slots` slots, submitted at
    /// 0 and run over [start, end) seconds.
    fn done(user: i64, org: u32, slots: u32, start: i64, end: i64) -> EndRecord {
        EndRecord {
            spec: TaskSpec::new(1, user, org).slots(slots),
            submit: Time::ZERO,
            end: Time::from_secs(end),
            outcome: Outcome::Completed,
            machine: Some(MachineId(0)),
            requeued: Vec::new(),
            last: Some(Attempt {
                machine: MachineId(0),
                slot: SlotId(0),
                slots,
                start: Time::from_secs(start),
                stop: Time::from_secs(end),
                end: AttemptEnd::Completed,
            }),
            phases: [None; 4],
        }
    }

    fn csv_rows(t: &Table) -> Vec<String> {
        t.to_csv().lines().map(String::from).collect()
    }

    #[test]
    fn orgs_list_the_declared_ones_with_their_processors_and_shares() {
        let mut m = Metrics::default();
        // Org 0: 2 slots × 30 s; org 2 (declared with none): 1 × 20 s.
        m.record(&done(7, 0, 2, 10, 40));
        m.record(&done(8, 2, 1, 0, 20));
        // Org 1 owns 1 processor and had no task: a row of zeros and blanks.
        // Named as given; unnamed (org 2 is declared by neither) `org<i>`.
        let names = ["lpc".to_string(), "cern".to_string()];
        let t = by_org(&m, &[3, 1], &names, None);
        assert_eq!(
            csv_rows(&t),
            [
                "org,name,tasks,completed,mean_wait_s,max_wait_s,mean_response_s,mean_bsld,slot_seconds,procs,owned_share,received_share",
                "0,lpc,1,1,10.0,10,40.0,1.333,60,3,0.75,0.75",
                "1,cern,0,0,,,,,0,1,0.25,0",
                "2,org2,1,1,0.0,0,20.0,1.000,20,0,0,0.25",
            ]
        );
        // A name the CSV must quote.
        let odd = ["a,b \"x\"".to_string()];
        assert!(csv_rows(&by_org(&m, &[3, 1], &odd, None))[1].starts_with("0,\"a,b \"\"x\"\"\",1,"));
        let u = [OrgUtility {
            org: 0,
            psi: 5.0,
            phi: Some(7.0),
        }];
        let t = by_org(&m, &[3, 1], &[], Some(&u));
        assert!(csv_rows(&t)[0].ends_with(",received_share,psi_s2,phi_s2,phi_minus_psi_s2"));
        assert!(
            csv_rows(&t)[1].ends_with(",0.75,0.75,5,7,2"),
            "{:?}",
            csv_rows(&t)
        );
        assert!(csv_rows(&t)[2].ends_with(",0.25,0,,,"), "{:?}", csv_rows(&t));
    }

    #[test]
    fn users_carry_their_organization() {
        let mut m = Metrics::default();
        m.record(&done(7, 1, 1, 0, 10));
        m.record(&done(8, 0, 1, 0, 10));
        m.record(&done(8, 2, 1, 0, 10));
        assert_eq!(
            csv_rows(&by_user(&m)),
            [
                "user,org,tasks,completed,mean_wait_s,max_wait_s,mean_response_s,mean_bsld,slot_seconds",
                "7,1,1,1,0.0,0,10.0,1.000,10",
                "8,0;2,2,2,0.0,0,10.0,1.000,20",
            ]
        );
    }
}
