//! The Diet-ethic study (`fairsched experiment diet-ethic --study`): the
//! paper's scenarios under every reading of its set-up
//! (docs/reproduction.md).

use super::experiment::{Args, DietEthic, Summary};
use super::{Key4, Timing};
use crate::study::{Claim, Measured, Reading, Studied};
use fairsched_core::Time;

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
            text: "Diet-ethic is fairer than the legacy system unless its clients guess n_submit right: unfairness below the legacy's median over the n_submit swept",
        },
        Claim {
            id: "150x",
            text: "night-consecutive: unfairness up to 150× lower than the legacy system's: its worst / Diet-ethic's ≥ 75",
        },
        Claim {
            id: "platform",
            text: "scalability as measured on the paper's platform: completed within 1 point of 98.6 % and unfairness within 0.5–2× of 0.70",
        },
    ]
}

/// A reading: (name, what, flags, change, whether it applies to a
/// scenario).
type Def = (
    &'static str,
    &'static str,
    &'static str,
    fn(&mut Args),
    fn(&str) -> bool,
);

fn every(_: &str) -> bool {
    true
}

fn day(sc: &str) -> bool {
    sc.starts_with("day-")
}

fn timing(a: &mut Args, latency: i64, overhead: i64, jitter: i64) {
    a.timing = Timing {
        submit_latency: Time::from_millis(latency),
        complete_latency: Time::from_millis(latency),
        overhead: Time::from_millis(overhead),
        jitter: Time::from_millis(jitter),
    };
}

const READINGS: [Def; 6] = [
    (
        "default",
        "today's default: no timing noise, day-time deadlines t0 + 100 s, key 4 counting finished runs",
        "",
        |_| {},
        every,
    ),
    (
        "timing-lan",
        "a LAN platform: 20 ms latencies each way, 5 ms per request on the server, 10 ms jitter",
        "--submit-latency 20ms --complete-latency 20ms --overhead 5ms --jitter 10ms",
        |a| timing(a, 20, 5, 10),
        every,
    ),
    (
        "timing-wan",
        "a slower middleware: 100 ms latencies each way, 20 ms per request, 50 ms jitter",
        "--submit-latency 100ms --complete-latency 100ms --overhead 20ms --jitter 50ms",
        |a| timing(a, 100, 20, 50),
        every,
    ),
    (
        "absolute",
        "day-time deadlines absolute at 100 s (the spec's reading), not t0 + 100 s",
        "(the scenario's -absolute twin)",
        |a| {
            a.scenario = a.scenario.as_ref().map(|s| format!("{s}-absolute"));
        },
        day,
    ),
    (
        "absolute-timing-lan",
        "absolute day-time deadlines on the LAN platform",
        "(the scenario's -absolute twin) --submit-latency 20ms --complete-latency 20ms --overhead 5ms --jitter 10ms",
        |a| {
            a.scenario = a.scenario.as_ref().map(|s| format!("{s}-absolute"));
            timing(a, 20, 5, 10);
        },
        day,
    ),
    (
        "key4-running",
        "key 4 counts running requests too, not only finished ones",
        "--key4 running",
        |a| a.key4 = Key4::Running,
        every,
    ),
];

impl Studied for DietEthic {
    const STUDY: &'static str = "diet-ethic-study";

    fn claims() -> Vec<Claim> {
        claims()
    }

    fn readings(base: &Args, quick: bool) -> Vec<Reading<Args>> {
        let scenarios: &[&str] = if quick {
            &["night-consecutive", "day-regular", "scalability"]
        } else {
            &["night-consecutive", "day-regular", "day-irregular", "scalability"]
        };
        let mut out = Vec::new();
        for &sc in scenarios {
            for (name, what, flags, change, applies) in READINGS {
                if !applies(sc) {
                    continue;
                }
                let mut a = Args::scenario(sc);
                a.seed = base.seed;
                if quick {
                    a.runs = 1;
                    a.n_submit = vec![10, 100, 190];
                } else {
                    a.runs = base.runs;
                }
                change(&mut a);
                // The -absolute readings run the scenario's twin.
                let shown = a.scenario.clone().unwrap_or_default();
                let flags = flags.replace("(the scenario's -absolute twin)", "");
                let flags = flags.trim();
                let mut command = format!(
                    "fairsched experiment diet-ethic --scenario {shown} --runs {}",
                    a.runs
                );
                if quick {
                    command.push_str(" --n-submit 10,100,190");
                }
                let seed = a.seed;
                out.push(Reading::new(sc.into(), name, what, command, seed, flags, a));
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
        let worst = legacy.iter().copied().reduce(f64::max);
        let ratio = diet
            .zip(worst)
            .and_then(|(d, w)| (d.unfairness > 0.0).then(|| w / d.unfairness));
        m.figure(
            "legacy worst / Diet-ethic",
            ratio,
            (r.case == "night-consecutive").then_some(150.0),
            0,
        );
        let median = crate::study::median(legacy.clone());
        m.verdict("fairer", diet.zip(median).map(|(d, md)| d.unfairness < md));
        m.verdict(
            "150x",
            (r.case == "night-consecutive").then(|| {
                // Diet-ethic at 0 against a fair legacy: infinitely lower.
                diet.zip(worst).is_some_and(|(d, w)| {
                    (d.unfairness == 0.0 && w > 0.0) || ratio.is_some_and(|x| x >= 75.0)
                })
            }),
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
