//! The Diet-ethic paper's metrics (spec/diet-ethic.md, "Metrics"):
//! unhappy users, satisfaction from deserved shares, unfairness and
//! completed requests.
//!
//! Allocated server-time counts every run of a user's requests: those that
//! completed, those killed by a server (their work was lost, the time was
//! spent) and those cancelled while running.

use serde::{Deserialize, Serialize};

/// What the metrics need to know of a user (seconds, absolute).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// Arrival t0_i.
    pub arrival: f64,
    /// Tentative deadline d_i.
    pub deadline: f64,
}

/// r_deserved_i: time is cut into slots [S_j, E_j) at every arrival and
/// deadline; in a slot, the users with t0_i ≤ S_j and E_j ≤ d_i share the
/// `servers` equally.
pub fn deserved(users: &[Span], servers: u32) -> Vec<f64> {
    let mut cuts: Vec<f64> = users.iter().flat_map(|u| [u.arrival, u.deadline]).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let mut out = vec![0.0; users.len()];
    for w in cuts.windows(2) {
        let (s, e) = (w[0], w[1]);
        let present: Vec<usize> = (0..users.len())
            .filter(|&i| users[i].arrival <= s && e <= users[i].deadline)
            .collect();
        if present.is_empty() {
            continue;
        }
        let share = servers as f64 * (e - s) / present.len() as f64;
        for i in present {
            out[i] += share;
        }
    }
    out
}

/// One user's outcome of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct UserOutcome {
    /// Server-time spent on the user's requests (s), killed and cancelled
    /// runs included.
    pub allocated: f64,
    /// All mandatory requests completed by the tentative deadline.
    pub happy: bool,
    /// Requests completed (mandatory and optional).
    pub completed: u64,
}

/// The metrics of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DietMetrics {
    pub unhappy: u32,
    /// max_i s_i − min_i s_i.
    pub unfairness: f64,
    pub completed: u64,
    /// s_i = allocated / deserved per user (users with no deserved time
    /// are left out of the unfairness: their ratio is undefined).
    pub satisfaction: Vec<Option<f64>>,
}

pub fn metrics(users: &[Span], outcomes: &[UserOutcome], servers: u32) -> DietMetrics {
    let d = deserved(users, servers);
    let satisfaction: Vec<Option<f64>> = outcomes
        .iter()
        .zip(&d)
        .map(|(o, &d)| (d > 0.0).then(|| o.allocated / d))
        .collect();
    let s: Vec<f64> = satisfaction.iter().flatten().copied().collect();
    let (lo, hi) = s.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
        (a.min(x), b.max(x))
    });
    DietMetrics {
        unhappy: outcomes.iter().filter(|o| !o.happy).count() as u32,
        unfairness: if s.is_empty() { 0.0 } else { hi - lo },
        completed: outcomes.iter().map(|o| o.completed).sum(),
        satisfaction,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three users on 2 servers, by hand. A: [0, 10), B: [2, 10),
    /// C: [4, 6). Cuts 0, 2, 4, 6, 10:
    /// - [0, 2): A alone → A 4;
    /// - [2, 4): A, B → 2 each;
    /// - [4, 6): A, B, C → 4/3 each;
    /// - [6, 10): A, B → 4 each.
    ///
    /// Deserved: A 4 + 2 + 4/3 + 4 = 11.33…, B 2 + 4/3 + 4 = 7.33…,
    /// C 4/3. Allocated A 11⅓, B 5.5, C 2 → s = 1, 0.75, 1.5; unfairness
    /// 0.75.
    #[test]
    fn deserved_shares_and_satisfaction_by_hand() {
        let users = [
            Span {
                arrival: 0.0,
                deadline: 10.0,
            },
            Span {
                arrival: 2.0,
                deadline: 10.0,
            },
            Span {
                arrival: 4.0,
                deadline: 6.0,
            },
        ];
        let d = deserved(&users, 2);
        let want = [34.0 / 3.0, 22.0 / 3.0, 4.0 / 3.0];
        for (a, b) in d.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{d:?}");
        }
        let o = [
            UserOutcome {
                allocated: 34.0 / 3.0,
                happy: true,
                completed: 11,
            },
            UserOutcome {
                allocated: 5.5,
                happy: false,
                completed: 5,
            },
            UserOutcome {
                allocated: 2.0,
                happy: true,
                completed: 2,
            },
        ];
        let m = metrics(&users, &o, 2);
        assert_eq!((m.unhappy, m.completed), (1, 18));
        let s: Vec<f64> = m.satisfaction.iter().map(|x| x.unwrap()).collect();
        for (a, b) in s.iter().zip([1.0, 0.75, 1.5]) {
            assert!((a - b).abs() < 1e-12, "{s:?}");
        }
        assert!((m.unfairness - 0.75).abs() < 1e-12);
    }

    /// Every slot's server-time goes to someone while a user is present:
    /// the deserved shares add up to n_R × the covered time.
    #[test]
    fn deserved_shares_add_up_to_the_platform() {
        let users = [
            Span {
                arrival: 0.0,
                deadline: 100.0,
            },
            Span {
                arrival: 10.0,
                deadline: 100.0,
            },
            Span {
                arrival: 50.0,
                deadline: 100.0,
            },
        ];
        let total: f64 = deserved(&users, 10).iter().sum();
        assert!((total - 1000.0).abs() < 1e-9);
        // A user arriving at its deadline deserves nothing and is left out.
        let m = metrics(
            &[
                Span {
                    arrival: 5.0,
                    deadline: 5.0,
                },
                users[0],
            ],
            &[
                UserOutcome::default(),
                UserOutcome {
                    allocated: 1000.0,
                    happy: true,
                    completed: 1,
                },
            ],
            10,
        );
        assert_eq!(m.satisfaction, vec![None, Some(1.0)]);
        assert_eq!(m.unfairness, 0.0);
    }
}
