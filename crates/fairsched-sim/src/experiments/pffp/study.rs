//! The PFFP study (`fairsched experiment pffp --study`): the comparisons
//! of Tests 2, 4 and 5 under every reading of the paper's set-up
//! (docs/reproduction.md).

use super::WeekDraw;
use super::experiment::{Args, Pffp, Summary};
use crate::study::{Claim, Measured, Reading, Studied};

/// The claims, with the rule each verdict applies (on the mean
/// degradation, the paper's ranking figure).
fn claims() -> Vec<Claim> {
    vec![
        Claim {
            id: "mst_best",
            text: "MST (clairvoyant) has the lowest mean degradation",
        },
        Claim {
            id: "pffp_best",
            text: "a PFFP is the best non-clairvoyant strategy: lower mean degradation than MSTUser, MLp and Rand",
        },
        Claim {
            id: "pffp_close",
            text: "the best PFFP is within a few % of MST: mean degradation ≤ 10 % (paper 0.64–6.71 %)",
        },
        Claim {
            id: "mlp_last",
            text: "MLp far behind: the highest mean degradation of the paper's strategies (paper 208.62 %, 82.35 %, 125.75 %)",
        },
    ]
}

/// A reading: (name, what, flags, change, applies to Test 5).
type Def = (&'static str, &'static str, &'static str, fn(&mut Args), bool);

const READINGS: [Def; 8] = [
    (
        "default",
        "today's default: sequential jobs, mean of per-week ratios, MLp as tGSF's reference ((n_i+1)/m_i), one shuffled pool of weeks",
        "",
        |_| {},
        true,
    ),
    (
        "ratio-of-means",
        "degradation as the ratio of each strategy's mean ρ and t_w to the best mean, not the mean of per-week ratios",
        "--ratio-of-means",
        |a| a.ratio_of_means = true,
        true,
    ),
    (
        "mlp-printed",
        "MLp as printed: n_i/m_i",
        "--with 'mlp[n=printed]'",
        |a| a.with = vec!["mlp[n=printed]".parse().expect("registered")],
        true,
    ),
    (
        "mlp-load",
        "MLp with n_i the busy processors only, ties to the lowest index",
        "--with 'mlp[n=load]'",
        |a| a.with = vec!["mlp[n=load]".parse().expect("registered")],
        true,
    ),
    (
        "q-tasks",
        "a q-processor job as q sequential tasks (the paper's Workload B counts about the logs' tasks)",
        "--q-tasks",
        |a| a.q_tasks = true,
        false,
    ),
    (
        "weeks-per-log",
        "weeks drawn from each log in turn, not from one shuffled pool",
        "--weeks per-log",
        |a| a.weeks = WeekDraw::PerLog,
        true,
    ),
    (
        "fitted",
        "PFFP with the parameters fitted on the logs, not Table 3's",
        "--fitted",
        |a| a.fitted = true,
        true,
    ),
    (
        "q-tasks-load-means",
        "q tasks, MLp by load and the ratio of means together",
        "--q-tasks --ratio-of-means --with 'mlp[n=load]'",
        |a| {
            a.q_tasks = true;
            a.ratio_of_means = true;
            a.with = vec!["mlp[n=load]".parse().expect("registered")];
        },
        false,
    ),
];

/// The column a reading reads as the paper's MLp.
fn mlp_label(a: &Args) -> String {
    a.with
        .iter()
        .map(ToString::to_string)
        .find(|w| w.starts_with("mlp"))
        .unwrap_or_else(|| "MLp".into())
}

impl Studied for Pffp {
    const STUDY: &'static str = "pffp-study";

    fn claims() -> Vec<Claim> {
        claims()
    }

    fn readings(base: &Args, quick: bool) -> Vec<Reading<Args>> {
        let tests: &[u8] = if quick { &[2] } else { &[2, 4, 5] };
        let mut out = Vec::new();
        for &t in tests {
            for (name, what, flags, change, test5) in READINGS {
                if t == 5 && !test5 {
                    continue;
                }
                let mut a = Args::test(t);
                a.seed = base.seed;
                a.logs = base.logs.clone();
                a.traces_dir = base.traces_dir.clone();
                a.instances = if quick { Some(2) } else { base.instances };
                change(&mut a);
                let mut command = format!("fairsched experiment pffp --test {t}");
                if let Some(n) = a.instances {
                    command.push_str(&format!(" --instances {n}"));
                }
                let seed = a.seed;
                out.push(Reading::new(
                    format!("test{t}"),
                    name,
                    what,
                    command,
                    seed,
                    flags,
                    a,
                ));
            }
        }
        out
    }

    fn measure(r: &Reading<Args>, s: &Summary) -> Measured {
        let mut m = Measured::default();
        let deg = if r.args.ratio_of_means {
            s.degradation_of_means.as_ref()
        } else {
            s.degradation.as_ref()
        };
        let paper = s.paper_degradation.as_deref().unwrap_or(&[]);
        let mlp = mlp_label(&r.args);
        // The paper's strategies, each with our mean degradation (MLp:
        // the reading's).
        let ours: Vec<(&str, Option<f64>, f64)> = paper
            .iter()
            .map(|p| {
                let label = if p.strategy == "MLp" {
                    mlp.as_str()
                } else {
                    p.strategy
                };
                let v = deg
                    .and_then(|d| d.rows.iter().find(|row| row.strategy == label))
                    .map(|row| row.mean);
                (p.strategy, v, p.mean)
            })
            .collect();
        for (name, v, p) in &ours {
            m.figure(format!("{name} %"), *v, Some(*p), 2);
        }
        let value = |name: &str| ours.iter().find(|o| o.0 == name).and_then(|o| o.1);
        let all: Option<Vec<(&str, f64)>> = ours.iter().map(|(n, v, _)| v.map(|v| (*n, v))).collect();
        let Some(all) = all else {
            for c in claims() {
                m.verdict(c.id, None);
            }
            return m;
        };
        let pffp = all
            .iter()
            .filter(|(n, _)| n.starts_with("PFFP"))
            .map(|&(_, v)| v)
            .reduce(f64::min);
        let others = |except: &dyn Fn(&str) -> bool| {
            all.iter()
                .filter(|(n, _)| !except(n))
                .map(|&(_, v)| v)
                .reduce(f64::min)
        };
        let mst = value("MST");
        m.verdict("mst_best", mst.zip(others(&|n| n == "MST")).map(|(a, b)| a <= b));
        m.verdict(
            "pffp_best",
            pffp.zip(others(&|n| n == "MST" || n.starts_with("PFFP")))
                .map(|(a, b)| a < b),
        );
        m.verdict("pffp_close", pffp.map(|x| x <= 10.0));
        let mlp_v = value("MLp");
        m.verdict(
            "mlp_last",
            mlp_v.map(|x| all.iter().all(|&(n, v)| n == "MLp" || v < x)),
        );
        m
    }

    fn notes() -> Vec<String> {
        vec![
            "Figures: mean degradation (%) of each of the paper's strategies, the paper's in the header; MLp's is the reading's MLp.".into(),
            "The paper's log versions are not available here: HPC2N-2002-1.1 (527,371 jobs; ours 2.2 has 202,871) and SDSC-DS \"Batch2\"; see docs/pffp.md.".into(),
        ]
    }
}
