//! The Diet-ethic study (`fairsched experiment diet-ethic --study`): the
//! paper's scenarios under every reading of its set-up
//! (docs/reproduction.md).

use super::experiment::{Args, DietEthic, Summary};
use crate::study::{Claim, Measured, Reading, Studied};

/// Requests the scalability run can complete: 138 servers × 100 s of
/// 1-s requests (the paper's 13 800).
const SCALABILITY_MAX: f64 = 13_800.0;

fn claims() -> Vec<Claim> {
    vec![
        Claim {
            id: "no_unhappy",
            text: "Diet-ethic leaves 0 users unhappy",
        },
        Claim {
            id: "fairer",
            text: "Diet-ethic is fairer than the legacy system at every n_submit (lower unfairness)",
        },
        Claim {
            id: "platform",
            text: "scalability as measured on the paper's platform: completed within 1 point of 98.6 % and unfairness within 0.5–2× of 0.70",
        },
    ]
}

/// A reading: (name, what, flags, change).
type Def = (&'static str, &'static str, &'static str, fn(&mut Args));

const READINGS: [Def; 1] = [(
    "default",
    "today's default: no timing noise, day-time deadlines t0 + 100 s, key 4 counting every run",
    "",
    |_| {},
)];

impl Studied for DietEthic {
    const STUDY: &'static str = "diet-ethic-study";

    fn claims() -> Vec<Claim> {
        claims()
    }

    fn readings(base: &Args, quick: bool) -> Vec<Reading<Args>> {
        let scenarios: &[&str] = if quick {
            &["night-consecutive", "scalability"]
        } else {
            &["night-consecutive", "day-regular", "day-irregular", "scalability"]
        };
        let mut out = Vec::new();
        for &sc in scenarios {
            for (name, what, flags, change) in READINGS {
                let mut a = Args::scenario(sc);
                a.seed = base.seed;
                if quick {
                    a.runs = 1;
                    a.n_submit = vec![10, 100, 190];
                } else {
                    a.runs = base.runs;
                }
                change(&mut a);
                let mut command = format!(
                    "fairsched experiment diet-ethic --scenario {sc} --runs {}",
                    a.runs
                );
                if quick {
                    command.push_str(" --n-submit 10,100,190");
                }
                if a.seed != 0 {
                    command.push_str(&format!(" --seed {}", a.seed));
                }
                if !flags.is_empty() {
                    command.push(' ');
                    command.push_str(flags);
                }
                out.push(Reading {
                    case: sc.into(),
                    name: name.into(),
                    what: what.into(),
                    command,
                    args: a,
                });
            }
        }
        out
    }

    fn measure(r: &Reading<Args>, s: &Summary) -> Measured {
        let mut m = Measured::default();
        let diet = s.points.iter().find(|p| p.system == "diet-ethic");
        let legacy: Vec<f64> = s
            .points
            .iter()
            .filter(|p| p.system == "legacy")
            .map(|p| p.unfairness)
            .collect();
        let scal = r.case == "scalability";
        m.figure("unhappy", diet.map(|d| d.unhappy), Some(0.0), 1);
        m.figure("unfairness", diet.map(|d| d.unfairness), scal.then_some(0.70), 3);
        m.figure(
            "legacy unfairness, min",
            legacy.iter().copied().reduce(f64::min),
            None,
            3,
        );
        m.figure(
            "legacy unfairness, max",
            legacy.iter().copied().reduce(f64::max),
            None,
            3,
        );
        if scal {
            m.figure(
                "completed (%)",
                diet.map(|d| 100.0 * d.completed / SCALABILITY_MAX),
                Some(98.6),
                1,
            );
        } else {
            m.figure("completed", diet.map(|d| d.completed), None, 0);
        }
        m.figure("kills", diet.map(|d| d.kills), None, 0);
        m.verdict("no_unhappy", diet.map(|d| d.unhappy == 0.0));
        m.verdict(
            "fairer",
            diet.filter(|_| !legacy.is_empty())
                .map(|d| legacy.iter().all(|&l| d.unfairness < l)),
        );
        m.verdict(
            "platform",
            scal.then(|| {
                diet.is_some_and(|d| {
                    let pct = 100.0 * d.completed / SCALABILITY_MAX;
                    (pct - 98.6).abs() <= 1.0 && (0.35..=1.4).contains(&d.unfairness)
                })
            }),
        );
        m
    }

    fn notes() -> Vec<String> {
        vec!["Figures are medians over the runs (seeds); legacy: over the n_submit swept.".into()]
    }
}
