//! `experiment diet-ethic` as an [`Experiment`]: the paper's scenarios,
//! Diet-ethic against the legacy system over the legacy clients'
//! n_submit (medians over runs), with any registered order policy run on
//! the servers beside them, under Diet-ethic's clients (`with`). An
//! instance is one run of one system.

use super::{
    ABSOLUTE, ClientNode, Count, Key4, N_SUBMIT, Point, Readings, RunResult, SCENARIOS, Setup, System,
    Timing, points, run_one, scenario, systems,
};
use crate::SimError;
use crate::experiment::{Body, Experiment, Host, Outcome};
use crate::experiments::with_specs;
use fairsched_core::{Kind, PolicySpec, Registry};
use fairsched_report::plot::{Panel, Series, panels};
use fairsched_report::table::{TABLES_JSON, tables_json};
use fairsched_report::{Table, fixed};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// The arguments of the Diet-ethic experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// One of [`SCENARIOS`]; or `scenario_file`.
    pub scenario: Option<String>,
    /// A set-up of one's own (TOML).
    pub scenario_file: Option<PathBuf>,
    /// Runs (seeds) per point.
    pub runs: u32,
    /// The legacy clients' n_submit values.
    pub n_submit: Vec<u32>,
    pub seed: u64,
    /// Order policies run on the servers with Diet-ethic's clients.
    pub with: Vec<PolicySpec>,
    /// The timing model (every value zero: ideal timing).
    #[serde(default)]
    pub timing: Timing,
    /// Key 4's reading on the Diet-ethic system's servers.
    #[serde(default)]
    pub key4: Key4,
    /// The client node's throughput (every rate zero: no limit).
    #[serde(default)]
    pub node: ClientNode,
    /// Which completed requests count.
    #[serde(default)]
    pub count: Count,
}

impl Args {
    /// Scenario `name` as the paper ran it: 10 runs per point, every
    /// n_submit of the paper.
    pub fn scenario(name: &str) -> Args {
        Args {
            scenario: Some(name.into()),
            scenario_file: None,
            runs: 10,
            n_submit: N_SUBMIT.to_vec(),
            seed: 0,
            with: Vec::new(),
            timing: Timing::default(),
            key4: Key4::default(),
            node: ClientNode::default(),
            count: Count::default(),
        }
    }
    fn name(&self) -> String {
        self.scenario.clone().unwrap_or_else(|| "custom".into())
    }
    /// The readings a run takes.
    pub fn readings(&self) -> Readings {
        Readings {
            timing: self.timing,
            key4: self.key4,
            node: self.node,
            count: self.count,
        }
    }
}

/// The planned sweep: every (system, run).
pub struct DietEthic {
    args: Args,
    name: String,
    custom: Option<Setup>,
    systems: Vec<System>,
    started: Instant,
}

/// What the paper reports per scenario (spec/diet-ethic.md); a
/// `-absolute` scenario is the paper's day-time one.
fn paper_says(scenario: &str) -> &'static str {
    match scenario.strip_suffix(ABSOLUTE).unwrap_or(scenario) {
        "night-consecutive" => {
            "Paper: Diet-ethic has 0 unhappy users and near-ideal unfairness without guessing n_submit; the legacy system needs exactly n_submit = 100 here; unfairness up to 150× lower."
        }
        "day-regular" => {
            "Paper: Diet-ethic has 0 unhappy users; the legacy system needs exactly n_submit = 190, where it completes 1890 requests against Diet-ethic's 1842 (≈ −2.5 %)."
        }
        "scalability" => {
            "Paper: 0 unhappy users, unfairness 0.70, 13 605 of 13 800 possible requests completed (98.6 %); server CPU overhead negligible."
        }
        "custom" => "",
        _ => {
            "Paper: Diet-ethic reaches 0 unhappy users and near-ideal unfairness in every scenario without guessing n_submit; unfairness up to 150× lower than the legacy system."
        }
    }
}

/// Why our numbers differ from the paper's (docs/diet-ethic.md), with
/// ideal timing (`ideal`) or not.
fn differs(scenario: &str, ideal: bool) -> Option<&'static str> {
    if !ideal && ["night-simultaneous", "night-consecutive", "scalability"].contains(&scenario) {
        // What is said there is about ideal timing.
        return None;
    }
    if scenario.ends_with(ABSOLUTE) {
        return Some(
            "Why ours differs: under the paper's text as written (\"d(i) = 100 s\", \"all other experimental parameters are kept the same\") every day-time user's deadline is 100 s, absolute, so the 10 servers hold at most 1000 requests up to the deadlines and a user arriving late has little time (one arriving at 100 s has none and is left out of the unfairness); the paper's legacy run completing 1890 requests at n_submit = 190 cannot happen under this reading. See docs/diet-ethic.md.",
        );
    }
    Some(match scenario {
        "night-simultaneous" => {
            "Why ours differs: identical users arriving together get the servers in equal shares to the request and no request is killed, so unfairness is 0; the paper's real platform had timing noise. See docs/diet-ethic.md."
        }
        "scalability" => {
            "Why ours differs: identical users arriving together get the servers in equal shares to the request, so unfairness is 0 and every server-second completes a request; the paper's 0.70 and 13 605 of 13 800 come from a real platform's timing noise and overheads. See docs/diet-ethic.md."
        }
        "day-regular" => {
            "Why ours differs: key 4 (least server-time on this server first) lets each newcomer catch up with what earlier users already had there, so latecomers end above their deserved share and Diet-ethic's unfairness is not near 0 (ideal timing: ≈ 0.97 by hand); the legacy system with exactly n_submit = 190 splits work evenly and does better. See docs/diet-ethic.md."
        }
        "day-irregular" | "day-irregular-random" => {
            "Why ours differs: key 4 (least server-time on this server first) lets each newcomer catch up with what earlier users already had there, so Diet-ethic's unfairness is not near 0 in day-time scenarios; legacy settings that leave servers idle (small n_submit) can be fairer. See docs/diet-ethic.md."
        }
        "night-consecutive" => {
            "Why ours differs: our servers have no middleware latency or timing noise, so Diet-ethic's unfairness is lower than on the paper's real platform and the ratio to the legacy system's worst case is higher than its 150×. See docs/diet-ethic.md."
        }
        _ => return None,
    })
}

/// `summary.json`.
#[derive(Serialize)]
pub struct Summary {
    pub experiment: &'static str,
    pub scenario: String,
    pub scenario_file: Option<String>,
    pub runs: u32,
    pub seed: u64,
    pub points: Vec<Point>,
    pub paper: &'static str,
    /// The policies run on the servers beside Diet-ethic (`with`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    /// The timing model, in ms (absent: ideal timing, every value zero).
    #[serde(skip_serializing_if = "Timing::is_zero")]
    pub timing: Timing,
    /// Key 4's reading on Diet-ethic's servers (absent: `finished`).
    #[serde(skip_serializing_if = "Key4::is_default")]
    pub key4: Key4,
    /// The client node (absent: none, every rate zero).
    #[serde(skip_serializing_if = "ClientNode::is_default")]
    pub node: ClientNode,
    /// Which completed requests count (absent: `servers`, all).
    #[serde(skip_serializing_if = "Count::is_default")]
    pub count: Count,
    pub notes: Vec<String>,
    pub wall_time_s: f64,
    /// Every run's result, per point (in the points' order): what a study
    /// judges over subsets of runs. Not written: summary.json keeps the
    /// medians.
    #[serde(skip)]
    pub per_run: Vec<Vec<RunResult>>,
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        fixed(x, 0)
    } else {
        fixed(x, 3)
    }
}

/// The arguments checked; the n_submit values sorted, each once.
fn checked(a: &Args, registry: &Registry) -> Result<(Args, Option<Setup>), SimError> {
    if a.n_submit.is_empty() || a.n_submit.contains(&0) {
        return Err(SimError::usage("--n-submit: give values ≥ 1"));
    }
    if a.runs == 0 {
        return Err(SimError::usage("--runs 0: nothing to run"));
    }
    let custom = match (&a.scenario, &a.scenario_file) {
        (Some(s), None) => {
            if !SCENARIOS.contains(&s.as_str()) {
                return Err(SimError::usage(format!(
                    "--scenario {s:?}: the paper's scenarios are {}",
                    SCENARIOS.join(", ")
                )));
            }
            None
        }
        (None, Some(p)) => Some(super::scenario_file::load(p)?),
        _ => {
            return Err(SimError::usage(
                "give a --scenario or a --scenario-file (one of them)",
            ));
        }
    };
    a.timing.check()?;
    a.node.check()?;
    let mut a = a.clone();
    a.n_submit.sort_unstable();
    a.n_submit.dedup();
    a.with = with_specs(registry, Kind::Order, &a.with)?;
    Ok((a, custom))
}

impl Experiment for DietEthic {
    const NAME: &'static str = "diet-ethic";
    type Args = Args;
    type Part = RunResult;
    type Summary = Summary;

    fn default_out(a: &Args) -> PathBuf {
        PathBuf::from(format!("results/diet-{}", a.name()))
    }

    fn check(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<(), SimError> {
        checked(a, registry).map(drop)
    }

    fn plan(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<DietEthic, SimError> {
        let (a, custom) = checked(a, registry)?;
        Ok(DietEthic {
            name: a.name(),
            systems: systems(&a.n_submit, &a.with),
            custom,
            args: a,
            started: Instant::now(),
        })
    }

    fn instances(&self) -> usize {
        self.systems.len() * self.args.runs as usize
    }

    fn progress(&self) -> (String, &'static str) {
        (self.name.clone(), "runs")
    }

    fn run(&self, registry: &Registry, index: usize) -> Result<RunResult, SimError> {
        let runs = self.args.runs as usize;
        run_one(
            registry,
            &self.name,
            self.custom.as_ref(),
            &self.systems[index / runs],
            (index % runs) as u32,
            self.args.seed,
            &self.args.readings(),
        )
    }

    fn report(self, parts: Vec<RunResult>, _host: &dyn Host) -> Result<Outcome<Summary>, SimError> {
        let DietEthic {
            args: a,
            name,
            custom,
            systems,
            started,
        } = self;
        let points = points(&systems, &parts, a.runs);
        let per_run: Vec<Vec<RunResult>> = parts.chunks(a.runs as usize).map(<[RunResult]>::to_vec).collect();
        let diet = &points[0];
        let legacy: Vec<&Point> = points.iter().filter(|p| p.n_submit.is_some()).collect();
        let others: Vec<&Point> = points[1 + legacy.len()..].iter().collect();
        let mut notes = vec![
            format!(
                "Medians over {} runs (seeds derived from {}). Allocated server-time counts every run of a request, those killed by a server and those cancelled included.",
                a.runs, a.seed
            ),
            "Each client discovers the servers in an order drawn from the run's seed and dispatches round-robin in that order.".to_string(),
            "A legacy client submits n_submit requests clamped to its own [n_min, n_max].".to_string(),
        ];
        if a.scenario_file.is_none()
            && let Some(d) = differs(&name, a.timing.is_zero() && a.node == ClientNode::default())
        {
            notes.push(d.into());
        }
        if name.starts_with("day-") && name.ends_with(ABSOLUTE) {
            notes.push(
                "Day-time users share the absolute deadline d = 100 s (the paper's text as written; spec/diet-ethic.md and the scenario without -absolute give each user 100 s from its own arrival).".into(),
            );
        } else if name.starts_with("day-") {
            notes.push(
                "Day-time users each have a deadline 100 s after their own arrival (night-time ones share d = 100 s): with one absolute deadline at 100 s the paper's 1890 completed requests would not fit on 10 servers.".into(),
            );
        }
        if name.starts_with("day-irregular") {
            notes.push(
                "Irregular arrivals: each second t of [0, 100] s a client arrives with probability λ(t/100 − 0.5)/10, λ the daily cycle of Calzarossa & Serazzi (1985): 3.1 − 8.5t + 24.7t² + 130.8t³ + 107.7t⁴ − 804.2t⁵ − 2038.5t⁶ + 1856.8t⁷ + 4618.6t⁸ (the paper does not print its polynomial)."
                    .into(),
            );
        }
        if !a.timing.is_zero() {
            notes.push(format!(
                "Timing model: {}. A client's submissions and cancellations reach the server after the submission latency, it learns of an ended request after the completion latency, and a server is busy T + overhead per request (server-time allocated to the user).{}",
                a.timing.describe(),
                if a.count == Count::Servers {
                    " Completed requests are counted on the servers."
                } else {
                    ""
                }
            ));
        }
        if !a.node.is_zero() {
            notes.push(format!(
                "Client node: {}. Every client runs on one node, which sends their set-up submissions and clean-up cancellations one at a time at these rates (all clients together); monitoring submissions do not wait on it, and a client acts on what it learns only once its set-up has left the node.",
                a.node.describe()
            ));
        }
        if a.count == Count::Collected {
            notes.push(
                "Completed requests (count=collected): the results a client collected, those that completed before it entered its clean-up; a request that completes later still counts as allocated server-time.".into(),
            );
        }
        if a.key4 == Key4::Running {
            notes.push(
                "Key 4 (key4=running): a user's time allocated on a server counts its runs in progress there too, not only its finished runs; on single-slot servers both readings make the same decisions.".into(),
            );
        }
        let best_legacy = legacy
            .iter()
            .filter(|p| p.unhappy == 0.0)
            // Most completed, then the fairer of equals (max_by keeps the last).
            .max_by(|x, y| {
                x.completed
                    .total_cmp(&y.completed)
                    .then(y.unfairness.total_cmp(&x.unfairness))
            });
        if let Some(b) = best_legacy {
            notes.push(format!(
                "Best legacy setting with 0 unhappy users: n_submit = {}, {} requests completed, unfairness {} (Diet-ethic: {}, {}).",
                b.n_submit.unwrap_or(0),
                num(b.completed),
                fixed(b.unfairness, 3),
                num(diet.completed),
                fixed(diet.unfairness, 3)
            ));
        }
        let worst = legacy.iter().map(|p| p.unfairness).fold(0.0f64, f64::max);
        if diet.unfairness > 0.0 && worst > diet.unfairness {
            notes.push(format!(
                "Legacy unfairness is up to {}× Diet-ethic's.",
                fixed(worst / diet.unfairness, 1)
            ));
        }
        if !others.is_empty() {
            notes.push(format!(
                "Added (--with), each on the servers with Diet-ethic's clients (mandatory requests first, then one optional request per server at a time): {}.",
                others.iter().map(|p| p.system.clone()).collect::<Vec<_>>().join(", ")
            ));
        }

        let mut columns: Vec<String> = [
            "n_submit",
            "legacy unhappy",
            "legacy unfairness",
            "legacy completed",
            "diet-ethic unhappy",
            "diet-ethic unfairness",
            "diet-ethic completed",
        ]
        .map(String::from)
        .to_vec();
        for o in &others {
            for m in ["unhappy", "unfairness", "completed"] {
                columns.push(format!("{} {m}", o.system));
            }
        }
        let mut t = Table::new(columns).title(format!(
            "Diet-ethic vs legacy — {name}: {} users (median) on {} servers",
            num(diet.users),
            custom.as_ref().map_or_else(
                || scenario(&name, 0).map(|s| s.servers).unwrap_or(0),
                |c| c.servers
            )
        ));
        let cells = |p: &Point| [num(p.unhappy), fixed(p.unfairness, 3), num(p.completed)];
        for p in &legacy {
            let mut row = vec![p.n_submit.unwrap_or(0).to_string()];
            row.extend(cells(p));
            row.extend(cells(diet));
            for o in &others {
                row.extend(cells(o));
            }
            t.row(row);
        }
        if !paper_says(&name).is_empty() {
            t.note(paper_says(&name));
        }
        for n in &notes {
            t.note(n.clone());
        }
        let xs: Vec<f64> = legacy.iter().map(|p| p.n_submit.unwrap_or(0) as f64).collect();
        let series = |f: &dyn Fn(&Point) -> f64| {
            let mut v = vec![
                Series {
                    name: "legacy".into(),
                    values: legacy.iter().map(|p| f(p)).collect(),
                },
                Series {
                    name: "diet-ethic".into(),
                    values: vec![f(diet); legacy.len()],
                },
            ];
            v.extend(others.iter().map(|o| Series {
                name: o.system.clone(),
                values: vec![f(o); legacy.len()],
            }));
            v
        };
        let svg = panels(
            &format!("Diet-ethic vs legacy: {name} (median of {} runs)", a.runs),
            "n_submit (legacy clients)",
            &xs,
            &[
                Panel {
                    y_label: "unhappy users".into(),
                    series: series(&|p| p.unhappy),
                },
                Panel {
                    y_label: "unfairness (max − min satisfaction)".into(),
                    series: series(&|p| p.unfairness),
                },
                Panel {
                    y_label: "completed requests".into(),
                    series: series(&|p| p.completed),
                },
            ],
        )
        .map_err(SimError::Plot)?;
        let summary = Summary {
            experiment: "diet-ethic",
            scenario: name.clone(),
            scenario_file: a.scenario_file.as_ref().map(|p| p.display().to_string()),
            runs: a.runs,
            seed: a.seed,
            paper: paper_says(&name),
            with: a.with.iter().map(ToString::to_string).collect(),
            timing: a.timing,
            key4: a.key4,
            node: a.node,
            count: a.count,
            notes,
            wall_time_s: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            points,
            per_run,
        };
        let files = vec![
            ("summary.json".to_string(), Body::Summary),
            ("diet.csv".to_string(), Body::Bytes(t.to_csv().into_bytes())),
            ("diet.svg".to_string(), Body::Bytes(svg.into_bytes())),
            (TABLES_JSON.to_string(), Body::Bytes(tables_json([&t]))),
        ];
        Ok(Outcome {
            summary,
            text: format!("{}\n", t.to_text()),
            tables: vec![t],
            files,
            planned: ["summary.json", "diet.csv", "diet.svg", TABLES_JSON]
                .map(String::from)
                .to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Quiet, run_local};
    use fairsched_core::Time;
    use std::path::Path;

    /// The configurations whose result files were stored before the
    /// readings (timing model, absolute day-time deadlines, key 4) were
    /// added: `tests/data/diet-before-readings/NAME/`.
    fn fixture_configs() -> Vec<(&'static str, Args)> {
        let small = |name: &str, runs: u32, n_submit: &[u32], with: &[&str]| {
            let mut a = Args::scenario(name);
            a.runs = runs;
            a.n_submit = n_submit.to_vec();
            a.with = with.iter().map(|w| w.parse().unwrap()).collect();
            a
        };
        vec![
            ("day-regular", small("day-regular", 2, &[10, 190], &[])),
            (
                "night-consecutive",
                small("night-consecutive", 2, &[100, 1000], &["fcfs"]),
            ),
            (
                "day-irregular-random",
                small("day-irregular-random", 2, &[50], &[]),
            ),
            ("scalability", small("scalability", 1, &[100], &[])),
        ]
    }

    /// A result file as stored: summary.json with what changes from run
    /// to run (the `tool` block, the wall time) replaced by a constant,
    /// the SVG (tens of kB) by its FNV-1a 64-bit hash.
    fn stable(name: &str, bytes: Vec<u8>) -> (String, Vec<u8>) {
        match name {
            "summary.json" => {
                let text = String::from_utf8(bytes).unwrap();
                let mut out = String::new();
                let mut in_tool = false;
                for line in text.lines() {
                    if line.starts_with("  \"tool\": {") {
                        in_tool = true;
                        out.push_str("  \"tool\": \"(removed)\",\n");
                        continue;
                    }
                    if in_tool {
                        in_tool = !line.starts_with("  }");
                        continue;
                    }
                    if line.starts_with("  \"wall_time_s\":") {
                        let comma = if line.ends_with(',') { "," } else { "" };
                        out.push_str(&format!("  \"wall_time_s\": 0{comma}\n"));
                        continue;
                    }
                    out.push_str(line);
                    out.push('\n');
                }
                (name.into(), out.into_bytes())
            }
            "diet.svg" => {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for &b in &bytes {
                    h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
                }
                (format!("{name}.fnv1a64"), format!("{h:016x}\n").into_bytes())
            }
            _ => (name.into(), bytes),
        }
    }

    const FILES: [&str; 4] = ["summary.json", "diet.csv", "diet.svg", TABLES_JSON];

    fn outputs(a: &Args) -> Vec<(String, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        run_local::<DietEthic>(a, &out, false, &Registry::builtin(), &Quiet).unwrap();
        FILES
            .iter()
            .map(|f| stable(f, std::fs::read(out.join(f)).unwrap()))
            .collect()
    }

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/diet-before-readings")
    }

    /// With every reading at its default (timing zero, the relative
    /// day-time deadlines of the existing scenario names, key 4 counting
    /// finished runs), the result files are those written before the
    /// readings existed, byte for byte. `FAIRSCHED_BLESS=1` rewrites them.
    #[test]
    fn defaults_give_the_files_written_before_the_readings() {
        let bless = std::env::var_os("FAIRSCHED_BLESS").is_some();
        for (name, args) in fixture_configs() {
            let dir = fixtures().join(name);
            for (file, bytes) in outputs(&args) {
                let path = dir.join(&file);
                if bless {
                    std::fs::create_dir_all(&dir).unwrap();
                    std::fs::write(&path, &bytes).unwrap();
                    continue;
                }
                let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert!(
                    want == bytes,
                    "{name}/{file} differs from {}:\n{}",
                    path.display(),
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    /// Arguments written before the readings existed (a sweep's record)
    /// still read, with every reading at its default.
    #[test]
    fn arguments_without_the_readings_still_read() {
        let old = r#"{"scenario": "day-regular", "scenario_file": null, "runs": 2,
                      "n_submit": [10, 190], "seed": 0, "with": []}"#;
        let a: Args = serde_json::from_str(old).unwrap();
        assert_eq!((a.timing, a.key4), (Timing::default(), Key4::Finished));
        let new = r#"{"scenario": "day-regular", "scenario_file": null, "runs": 2,
                      "n_submit": [10], "seed": 0, "with": [], "key4": "running",
                      "timing": {"submit_latency": 20, "jitter": 10}}"#;
        let a: Args = serde_json::from_str(new).unwrap();
        assert_eq!(a.key4, Key4::Running);
        assert_eq!(
            (
                a.timing.submit_latency.millis(),
                a.timing.complete_latency.millis(),
                a.timing.jitter.millis()
            ),
            (20, 0, 10)
        );
        let bad = r#"{"scenario": "day-regular", "scenario_file": null, "runs": 2,
                      "n_submit": [10], "seed": 0, "with": [], "key4": "started"}"#;
        assert!(serde_json::from_str::<Args>(bad).is_err());
    }

    /// summary.json records the readings that are not the defaults, and
    /// a bad timing value is refused naming its flag.
    #[test]
    fn the_summary_records_the_readings() {
        let mut a = Args::scenario("day-regular-absolute");
        a.runs = 1;
        a.n_submit = vec![10];
        a.key4 = Key4::Running;
        a.timing.submit_latency = Time::from_millis(20);
        a.timing.overhead = Time::from_millis(5);
        let files = outputs(&a);
        let summary = String::from_utf8(files[0].1.clone()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(v["key4"], "running");
        assert_eq!(v["timing"]["submit_latency"], 20);
        assert_eq!(v["timing"]["overhead"], 5);
        assert_eq!(v["timing"]["jitter"], 0);
        assert_eq!(v["scenario"], "day-regular-absolute");
        let notes = v["notes"].to_string();
        assert!(
            notes.contains("Timing model: submission latency 20 ms"),
            "{notes}"
        );
        assert!(notes.contains("key4=running"), "{notes}");
        assert!(notes.contains("absolute deadline d = 100 s"), "{notes}");
        a.timing.complete_latency = Time::from_millis(-3);
        let e = DietEthic::check(&a, &Registry::builtin(), &Quiet)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--complete-latency"), "{e}");
    }
}
