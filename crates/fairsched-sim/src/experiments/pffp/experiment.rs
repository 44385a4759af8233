//! `experiment pffp` as an [`Experiment`]: the PFFP paper's Tests 1–5 on
//! Monday–Friday weeks of real logs — degradation tables and performance
//! profiles of the strategies (Tests 2, 4, 5), or φ×ψ grids of PFFP
//! (Tests 1, 3, 5 with `grid`) — with any registered allocate policy
//! added to a comparison (`with`).

use super::analysis::{Degradation, gamma_matrix, profile, taus};
use super::{Cell, Instance, Kind, PAPER_LOGS, Row, Test, WeekLog, paper};
use crate::experiment::{Body, Experiment, Host, Outcome};
use crate::experiments::with_specs;
use crate::{SimError, TraceInput};
use fairsched_core::{PolicySpec, Registry};
use fairsched_report::plot::{Series, heatmap, profiles};
use fairsched_report::table::{TABLES_JSON, push_csv_line, tables_json};
use fairsched_report::{Table, fixed};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The arguments of the PFFP experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Test 1 to 5 of the paper's Table 3.
    pub test: u8,
    /// Test 5: its φ×ψ grid (Table 9) instead of the comparison.
    pub grid: bool,
    /// Weeks to run (default: the workload's).
    pub instances: Option<u32>,
    /// Logs to draw the weeks from instead of the paper's seven.
    pub logs: Vec<PathBuf>,
    /// Where the paper's seven logs are.
    pub traces_dir: PathBuf,
    /// Every week's arrivals scaled to this utilisation.
    pub utilization: Option<f64>,
    /// PFFP with the workload's own fitted parameters.
    pub fitted: bool,
    pub seed: u64,
    /// Allocate policies added to the comparison (Tests 2, 4, 5).
    pub with: Vec<PolicySpec>,
    /// Comparisons: also the degradation read as each strategy's mean ρ
    /// and mean t_w against the best mean (beside the spec's mean of
    /// per-week ratios). Defaults to false so older sweep files read.
    #[serde(default)]
    pub ratio_of_means: bool,
    /// Tests 1–4: a q-processor job as q sequential tasks (as Test 5's
    /// bags), not one sequential job.
    #[serde(default)]
    pub q_tasks: bool,
    /// How the weeks are drawn from the logs.
    #[serde(default)]
    pub weeks: super::WeekDraw,
    /// Comparisons: a strategy of the paper's run as another spec, its
    /// column keeping the paper's label — ("MLp", `mlp[n=printed]`) runs
    /// the paper's six strategies with MLp read as printed, where `with`
    /// would add a seventh (and change each week's best).
    #[serde(default)]
    pub replace: Vec<(String, PolicySpec)>,
}

impl Args {
    /// Test `n` as the paper ran it.
    pub fn test(n: u8) -> Args {
        Args {
            test: n,
            grid: false,
            instances: None,
            logs: Vec::new(),
            traces_dir: crate::experiments::shapley::default_traces_dir(),
            utilization: None,
            fitted: false,
            seed: 0,
            with: Vec::new(),
            ratio_of_means: false,
            q_tasks: false,
            weeks: super::WeekDraw::Pool,
            replace: Vec::new(),
        }
    }
}

/// `LABEL=POLICY` (`--replace`): the label of one of a comparison's
/// strategies, and the spec to run under it.
pub fn parse_replace(s: &str) -> Result<(String, PolicySpec), String> {
    // The label ends at the first '=' outside a spec's brackets: a label
    // has none, so "mlp[n=printed]" alone has no label.
    let (label, spec) = s
        .split_once('=')
        .filter(|(l, _)| !l.contains('['))
        .ok_or_else(|| format!("{s:?}: expected LABEL=POLICY, e.g. MLp=mlp[n=printed]"))?;
    let label = label.trim();
    if label.is_empty() {
        return Err(format!("{s:?}: no label before '='"));
    }
    let spec: PolicySpec = spec.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    Ok((label.to_string(), spec))
}

/// The comparison's strategies with `replace` applied: each label must be
/// one of them, once, and each spec an allocate policy.
fn replaced(
    strategies: &mut [(String, String)],
    replace: &[(String, PolicySpec)],
    registry: &Registry,
    test: u8,
) -> Result<(), SimError> {
    for (k, (label, spec)) in replace.iter().enumerate() {
        if replace[..k].iter().any(|(l, _)| l == label) {
            return Err(SimError::usage(format!("--replace: {label} is given twice")));
        }
        registry
            .build_allocate(spec)
            .map_err(|e| SimError::usage(format!("--replace {label}={spec}: {e}")))?;
        let Some(slot) = strategies.iter_mut().find(|(l, _)| l == label) else {
            return Err(SimError::usage(format!(
                "--replace {label}={spec}: Test {test} has no strategy {label}; its strategies: {}",
                strategies
                    .iter()
                    .map(|(l, _)| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        slot.1 = spec.to_string();
    }
    Ok(())
}

/// The planned test: its weeks, each running every strategy.
pub struct Pffp {
    args: Args,
    logs: Arc<Vec<WeekLog>>,
    insts: Vec<Instance>,
    test: Test,
}

fn log_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|f| {
            let f = f.to_string_lossy();
            let f = f.trim_end_matches(".gz").trim_end_matches(".swf");
            f.to_string()
        })
        .unwrap_or_else(|| p.display().to_string())
}

fn read_logs(a: &Args) -> Result<Vec<WeekLog>, SimError> {
    if a.logs.is_empty() {
        PAPER_LOGS
            .par_iter()
            .map(|n| WeekLog::shared(n, &a.traces_dir))
            .collect()
    } else {
        a.logs
            .par_iter()
            .map(|p| WeekLog::load(&log_name(p), &TraceInput::Path(p.clone())))
            .collect()
    }
}

/// The logs of `a`, read once while any plan holds them: a study plans
/// every reading of the same logs before it runs any, and each would
/// otherwise hold its own copy of the seven logs (weak references: the
/// logs go when the last plan does).
fn load_logs(a: &Args) -> Result<Arc<Vec<WeekLog>>, SimError> {
    type Cache = Mutex<Vec<((PathBuf, Vec<PathBuf>), Weak<Vec<WeekLog>>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (
        if a.logs.is_empty() {
            a.traces_dir.clone()
        } else {
            PathBuf::new()
        },
        a.logs.clone(),
    );
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    // Held while reading, so that two plans of the same logs read once.
    let mut held = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    held.retain(|(_, w)| w.strong_count() > 0);
    if let Some(logs) = held
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(logs);
    }
    let logs = Arc::new(read_logs(a)?);
    held.push((key, Arc::downgrade(&logs)));
    Ok(logs)
}

/// The test as the arguments set it up (no file read).
fn test_of(a: &Args, registry: &Registry) -> Result<Test, SimError> {
    if a.grid && a.test != 5 {
        return Err(SimError::usage(
            "--grid is for Test 5 (Tests 1 and 3 are grids already; 2 and 4 compare strategies)",
        ));
    }
    if let Some(u) = a.utilization
        && !(u > 0.0 && u <= 1.0)
    {
        return Err(SimError::usage(format!(
            "--utilization {u}: expected a fraction in (0, 1]"
        )));
    }
    let mut test = Test::paper(a.test, a.grid).map_err(|e| SimError::usage(e.to_string()))?;
    if a.utilization.is_some() {
        test.utilization = a.utilization;
    }
    if a.q_tasks {
        if test.bags {
            return Err(SimError::usage(format!(
                "--q-tasks: Test {} runs bags of tasks already",
                a.test
            )));
        }
        test.bags = true;
        test.notes.push(
            "--q-tasks: each q-processor job runs as q sequential tasks of its run time, instead of one sequential \
             job (the paper's Workload B counts 512,606 jobs in 30 weeks: between our 30 weeks' jobs, about \
             31,000, and their tasks, about 1.1 M)."
                .into(),
        );
    }
    test.weeks = a.weeks;
    if a.weeks == super::WeekDraw::PerLog {
        test.notes.push(
            "--weeks per-log: each log's weeks shuffled apart and taken from the logs in turn, so every log \
             contributes about equally to each workload (default: one shuffled pool of every log's weeks)."
                .into(),
        );
    }
    let with = with_specs(registry, fairsched_core::Kind::Allocate, &a.with)?;
    match &mut test.kind {
        Kind::Compare(s) => {
            replaced(s, &a.replace, registry, a.test)?;
            if !a.replace.is_empty() {
                test.notes.push(format!(
                    "--replace: {} (the paper's label kept; every other strategy as the spec sets it).",
                    a.replace
                        .iter()
                        .map(|(l, p)| format!("{l} runs {p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            s.extend(with.iter().map(|p| (p.to_string(), p.to_string())))
        }
        Kind::Grid { .. } if !a.replace.is_empty() => {
            return Err(SimError::usage(format!(
                "--replace: Test {}{} tunes PFFP over its φ×ψ grid; strategies are replaced in the comparisons (Tests 2, 4 and 5)",
                a.test,
                if a.grid { " --grid" } else { "" }
            )));
        }
        Kind::Grid { .. } if !with.is_empty() => {
            return Err(SimError::usage(format!(
                "--with: Test {}{} tunes PFFP over its φ×ψ grid; strategies are compared in Tests 2, 4 and 5",
                a.test,
                if a.grid { " --grid" } else { "" }
            )));
        }
        Kind::Grid { .. } => {}
    }
    Ok(test)
}

#[derive(Serialize)]
pub struct LogMeta {
    pub name: String,
    /// The version the paper's Table 2 ran, and its jobs (None for a log
    /// the paper does not name).
    pub paper_version: Option<(&'static str, u64)>,
    pub path: String,
    pub clock: String,
    pub clock_note: Option<String>,
    pub jobs: usize,
    pub weeks: usize,
    pub median_estimate_s: Option<i64>,
    pub filters: fairsched_trace::FilterCounts,
}

/// `summary.json`.
#[derive(Serialize)]
pub struct Summary {
    pub experiment: &'static str,
    pub test: u8,
    pub workload: &'static str,
    pub machines: Vec<u32>,
    pub bags_of_tasks: bool,
    /// How the weeks were drawn ("pool", "per-log").
    pub weeks: &'static str,
    pub seed: u64,
    pub strategies: Vec<(String, String)>,
    pub logs: Vec<LogMeta>,
    pub instances: Vec<Instance>,
    /// Comparisons: degradation (%) per strategy, with the paper's.
    pub degradation: Option<Degradation>,
    /// `ratio_of_means`: the degradation of the mean metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degradation_of_means: Option<Degradation>,
    pub paper_degradation: Option<Vec<PaperRow>>,
    /// Grids: mean ρ and t_w per setting, with the paper's ρ.
    pub grid: Option<Vec<Cell>>,
    pub missing_estimates: u64,
    pub fitted: Option<super::Fitted>,
    /// The strategies added to the paper's (`with`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct PaperRow {
    pub strategy: &'static str,
    pub rho: f64,
    pub wait: f64,
    pub mean: f64,
    pub rank: u32,
}

fn paper_rows(test: u8) -> Option<&'static [paper::PaperRow]> {
    match test {
        2 => Some(&paper::TABLE6),
        4 => Some(&paper::TABLE8),
        5 => Some(&paper::TABLE10),
        _ => None,
    }
}

fn rows_csv(rows: &[Row]) -> String {
    let mut out = String::new();
    let header = [
        "test",
        "instance",
        "log",
        "week_start",
        "jobs",
        "tasks",
        "utilization",
        "strategy",
        "policy",
        "makespan_s",
        "lower_bound_s",
        "rho",
        "mean_wait_s",
    ];
    push_csv_line(&mut out, header.iter().copied());
    for r in rows {
        let cells = [
            r.test.to_string(),
            r.instance.to_string(),
            r.log.clone(),
            r.week_start.to_string(),
            r.jobs.to_string(),
            r.tasks.to_string(),
            format!("{}", r.utilization),
            r.strategy.clone(),
            r.policy.clone(),
            format!("{}", r.metrics.makespan),
            format!("{}", r.metrics.lower_bound),
            format!("{}", r.metrics.rho),
            format!("{}", r.metrics.mean_wait),
        ];
        push_csv_line(&mut out, cells.iter().map(String::as_str));
    }
    out
}

fn opt(x: Option<f64>, d: usize) -> String {
    x.map_or_else(|| "—".into(), |x| fixed(x, d))
}

impl Experiment for Pffp {
    const NAME: &'static str = "pffp";
    type Args = Args;
    type Part = Vec<Row>;
    type Summary = Summary;

    fn default_out(a: &Args) -> PathBuf {
        PathBuf::from(format!(
            "results/pffp-test{}{}",
            a.test,
            if a.grid { "-grid" } else { "" }
        ))
    }

    fn check(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<(), SimError> {
        let test = test_of(a, registry)?;
        let mut seen = std::collections::BTreeSet::new();
        for p in &a.logs {
            if !seen.insert(log_name(p)) {
                return Err(SimError::usage(format!("--logs: {} is given twice", p.display())));
            }
        }
        super::check(registry, &test)
    }

    fn plan(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<Pffp, SimError> {
        let mut test = test_of(a, registry)?;
        super::check(registry, &test)?;
        let logs = load_logs(a)?;
        if a.fitted {
            test = test.with_fitted(super::Fitted::on(&logs, a.seed)?);
        }
        let insts = super::instances(&logs, &test, a.instances, a.seed)?;
        Ok(Pffp {
            args: a.clone(),
            logs,
            insts,
            test,
        })
    }

    fn instances(&self) -> usize {
        self.insts.len()
    }

    fn progress(&self) -> (String, &'static str) {
        (format!("test {}", self.args.test), "weeks")
    }

    fn run(&self, registry: &Registry, index: usize) -> Result<Vec<Row>, SimError> {
        // The strategies of one week, in parallel: rows in strategy order
        // (checked once, by `check` and `plan`).
        super::run_checked(
            registry,
            &self.insts[index..=index],
            &self.test,
            self.args.seed,
            &|| {},
        )
    }

    fn report(self, parts: Vec<Vec<Row>>, host: &dyn Host) -> Result<Outcome<Summary>, SimError> {
        let Pffp {
            args: a,
            logs,
            insts,
            test,
        } = self;
        let grid_h = match &test.kind {
            Kind::Grid { grid_h, .. } => grid_h.first().copied().unwrap_or(0.78),
            Kind::Compare(_) => 0.78,
        };
        let strategies = test.strategies();
        let rows: Vec<Row> = parts.into_iter().flatten().collect();

        let mut notes = test.notes.clone();
        let pool_len = super::pool(&logs, a.seed).len();
        let jobs: u64 = insts.iter().map(|i| i.jobs).sum();
        let tasks: u64 = insts.iter().map(|i| i.tasks).sum();
        let missing: u64 = insts.iter().map(|i| i.missing_estimates).sum();
        let mut per_log: Vec<(String, usize)> = Vec::new();
        for i in &insts {
            match per_log.iter_mut().find(|p| p.0 == i.log) {
                Some(p) => p.1 += 1,
                None => per_log.push((i.log.clone(), 1)),
            }
        }
        notes.push(format!(
            "Workload {}: {} Monday–Friday weeks (drawn with seed {} from {} weeks with jobs): {}; {} jobs{}.",
            test.workload.name(),
            insts.len(),
            a.seed,
            pool_len,
            per_log
                .iter()
                .map(|(l, n)| format!("{l} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            jobs,
            if test.bags {
                format!(", {tasks} tasks")
            } else {
                String::new()
            }
        ));
        if !test.bags {
            notes.push(
                "Every job is one sequential job of its run time, whatever its processor count (the paper's model; Test 5 uses bags of tasks).".into(),
            );
        }
        if missing > 0 && strategies.iter().any(|s| s.1.starts_with("mst-user")) {
            notes.push(format!(
                "{missing} job(s) have no user estimate: MSTUser counts the log's median estimate for them."
            ));
        }
        if let Some(u) = a.utilization {
            notes.push(format!(
                "--utilization {u}: every week's arrival times are scaled so that its work fills {}% of the processors over the week.",
                u * 100.0
            ));
        }
        // Fewer weeks than asked for (--instances beyond the workload's
        // size, or a pool too short for it): said now, and among the notes.
        if let Some(n) = super::shortfall(pool_len, test.workload, a.instances) {
            host.note(&format!("warning: {n}"));
            notes.push(format!("{n}."));
        }
        for l in logs.iter() {
            if l.jobs.is_empty() || l.weeks.is_empty() {
                notes.push(format!(
                    "{}: no complete Monday–Friday week with jobs ({} jobs after cleaning); it adds no instance.",
                    l.path,
                    l.jobs.len()
                ));
            }
        }
        if let Some(f) = &test.fitted {
            notes.push(format!(
                "PFFP parameters fitted on Workload A's {} run times: β = {}, S_m = {} s, μ = {} s (sample mean), H = {} (median of the nine estimators); the paper's Table 3 has 0.524, 1320, 5248, 0.78, so the paper's numbers are not comparable one by one.",
                f.jobs, f.beta, f.sm, f.mu, f.h
            ));
        }
        if !a.with.is_empty() {
            notes.push(format!(
                "Added to the paper's strategies (--with), on the same weeks and machines with FCFS queues: {}.",
                a.with.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ));
        }
        let versions: Vec<(String, String, usize)> = logs
            .iter()
            .map(|l| {
                (
                    l.name.clone(),
                    log_name(std::path::Path::new(&l.path)),
                    l.jobs.len(),
                )
            })
            .collect();
        let versions: Vec<(&str, &str, usize)> = versions
            .iter()
            .map(|(n, v, j)| (n.as_str(), v.as_str(), *j))
            .collect();
        if let Some(n) = paper::log_versions_note(&versions) {
            notes.push(n);
        }
        for l in logs.iter() {
            if let Some(n) = &l.clock_note {
                notes.push(format!("{}: {n}", l.name));
            }
        }
        let machines = test
            .machines
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let head = format!(
            "Test {} — Workload {} ({} weeks), machines of {machines} processors, FCFS queues",
            a.test,
            test.workload.name(),
            insts.len()
        );

        let (deg, cells) = match &test.kind {
            Kind::Compare(_) => (Some(super::degradations(&rows, &test)), None),
            Kind::Grid { .. } => (None, Some(super::cells(&rows, &test))),
        };
        let of_means = match &test.kind {
            Kind::Compare(_) if a.ratio_of_means => Some(super::degradations_of_means(&rows, &test)),
            _ => None,
        };
        // The tables printed (and kept in tables.json).
        let printed: Vec<Table> = match (&deg, &cells) {
            (Some(d), _) => {
                let mut t = degradation_table(d, a.test, &head);
                for n in &notes {
                    t.note(n.clone());
                }
                let mut out = vec![t];
                if let Some(m) = &of_means {
                    let mut t = degradation_table(m, a.test, &head)
                        .title(format!("{head}: degradation of the mean ρ and mean t_w over the weeks against the best strategy's (--ratio-of-means)"));
                    t.notes.clear();
                    t.note(
                        "Each strategy's ρ and t_w averaged over the weeks first, then divided by the best \
                         strategy's average; the table above (the spec's reading) averages per-week ratios."
                            .to_string(),
                    );
                    out.push(t);
                }
                out
            }
            (None, Some(c)) => grid_tables(c, a.test, grid_h, &head, &notes),
            (None, None) => Vec::new(),
        };
        let mut files: Vec<(String, Body)> =
            vec![("pffp.csv".into(), Body::Bytes(rows_csv(&rows).into_bytes()))];
        if deg.is_some() {
            files.push((
                "degradation.csv".into(),
                Body::Bytes(printed[0].to_csv().into_bytes()),
            ));
            for (f, svg) in profile_charts(&rows, &test)? {
                files.push((f, Body::Bytes(svg.into_bytes())));
            }
        }
        if let Some(c) = &cells {
            files.push(("grid.csv".into(), Body::Bytes(grid_csv(c).into_bytes())));
            let (rows_l, cols_l, vals) = layout(c, grid_h);
            if !vals.is_empty() {
                let svg = heatmap(
                    &format!("Test {}: mean ρ of PFFP (H = {grid_h})", a.test),
                    "φ (queue)",
                    "ψ (residual runtime)",
                    &rows_l,
                    &cols_l,
                    &vals,
                )
                .map_err(SimError::Plot)?;
                files.push(("grid.svg".into(), Body::Bytes(svg.into_bytes())));
            }
        }
        files.push((TABLES_JSON.into(), Body::Bytes(tables_json(&printed))));
        files.push(("summary.json".into(), Body::Summary));
        let text = match (&deg, &cells) {
            (Some(_), _) => printed
                .iter()
                .map(|t| format!("{}\n", t.to_text()))
                .collect::<Vec<_>>()
                .join("\n"),
            (None, Some(_)) => format!("{}\n", grid_text(&printed, &notes)),
            (None, None) => String::new(),
        };
        let summary = Summary {
            experiment: "pffp",
            test: a.test,
            workload: test.workload.name(),
            machines: test.machines.clone(),
            bags_of_tasks: test.bags,
            weeks: test.weeks.name(),
            seed: a.seed,
            strategies: strategies.clone(),
            logs: logs
                .iter()
                .map(|l| LogMeta {
                    paper_version: paper::TABLE2_LOGS
                        .iter()
                        .find(|p| p.0.eq_ignore_ascii_case(&l.name))
                        .map(|p| (p.1, p.2)),
                    name: l.name.clone(),
                    path: l.path.clone(),
                    clock: l.clock.clone(),
                    clock_note: l.clock_note.clone(),
                    jobs: l.jobs.len(),
                    weeks: l.weeks.len(),
                    median_estimate_s: l.median_estimate,
                    filters: l.filters,
                })
                .collect(),
            instances: insts,
            paper_degradation: paper_rows(a.test).filter(|_| deg.is_some()).map(|r| {
                r.iter()
                    .map(|&(strategy, rho, wait, mean, rank)| PaperRow {
                        strategy,
                        rho,
                        wait,
                        mean,
                        rank,
                    })
                    .collect()
            }),
            degradation: deg,
            degradation_of_means: of_means,
            grid: cells,
            missing_estimates: missing,
            fitted: test.fitted.clone(),
            with: a.with.iter().map(ToString::to_string).collect(),
            notes,
        };
        Ok(Outcome {
            summary,
            text,
            tables: printed,
            files,
            planned: ["summary.json", "pffp.csv", TABLES_JSON]
                .map(String::from)
                .to_vec(),
        })
    }

    /// The summary first, as the other experiments say it; the profiles
    /// as one item: there are six.
    fn listed(written: &[String]) -> Vec<String> {
        let mut shown: Vec<String> = vec!["summary.json".to_string()];
        shown.extend(
            written
                .iter()
                .filter(|n| !n.starts_with("profile-") && n.as_str() != "summary.json")
                .cloned(),
        );
        if written.iter().any(|n| n.starts_with("profile-")) {
            shown.push("profile-*.svg".into());
        }
        shown
    }
}

fn degradation_table(d: &Degradation, test: u8, head: &str) -> Table {
    let paper = paper_rows(test).unwrap_or(&[]);
    let mut t = Table::new([
        "strategy",
        "ρ %",
        "paper ρ %",
        "t_w %",
        "paper t_w %",
        "mean %",
        "paper mean %",
        "rank",
        "paper rank",
    ])
    .title(format!("{head}: degradation against the best strategy per week"));
    for r in &d.rows {
        let p = paper.iter().find(|p| p.0 == r.strategy);
        t.row([
            r.strategy.clone(),
            fixed(r.rho, 2),
            opt(p.map(|p| p.1), 2),
            fixed(r.wait, 2),
            opt(p.map(|p| p.2), 2),
            fixed(r.mean, 2),
            opt(p.map(|p| p.3), 2),
            r.rank.to_string(),
            p.map_or_else(|| "—".into(), |p| p.4.to_string()),
        ]);
    }
    t.note(format!(
        "Medians over weeks of the degradation (ρ %, t_w %): {} — a few weeks whose best t_w is near 0 s can dominate the means.",
        d.rows
            .iter()
            .map(|r| format!("{} {}, {}", r.strategy, fixed(r.rho_median, 2), fixed(r.wait_median, 2)))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    if d.left_out.iter().any(|&n| n > 0) {
        t.note(format!(
            "Weeks left out because the best value was 0 while another strategy's was not (γ infinite): ρ {}, t_w {}.",
            d.left_out[0], d.left_out[1]
        ));
    }
    t
}

/// Rows φ, columns ψ of the cells at `h`, in grid order.
fn layout(cells: &[Cell], h: f64) -> (Vec<String>, Vec<String>, Vec<Vec<f64>>) {
    let g = paper::grid_values();
    let labels: Vec<String> = g.iter().map(|x| format!("{x}")).collect();
    let mut vals = Vec::new();
    for &phi in &g {
        let row: Vec<f64> = g
            .iter()
            .filter_map(|&psi| {
                cells
                    .iter()
                    .find(|c| c.h == h && c.phi == phi && c.psi == psi)
                    .map(|c| c.rho)
            })
            .collect();
        if row.len() == g.len() {
            vals.push(row);
        }
    }
    (labels.clone(), labels, vals)
}

fn grid_csv(cells: &[Cell]) -> String {
    let mut out = String::new();
    push_csv_line(
        &mut out,
        [
            "h",
            "phi",
            "psi",
            "rho",
            "mean_wait_s",
            "paper_rho",
            "table4_exp",
            "table4_paper_rho",
        ]
        .into_iter(),
    );
    for c in cells {
        let row = [
            format!("{}", c.h),
            format!("{}", c.phi),
            format!("{}", c.psi),
            format!("{}", c.rho),
            format!("{}", c.mean_wait),
            c.paper.map(|x| format!("{x}")).unwrap_or_default(),
            c.table4.map(|t| t.0.to_string()).unwrap_or_default(),
            c.table4.map(|t| format!("{}", t.1)).unwrap_or_default(),
        ];
        push_csv_line(&mut out, row.iter().map(String::as_str));
    }
    out
}

/// The φ×ψ grid as the paper lays it out (ours, then the paper's, whose
/// notes say where each has its best cell), and for Test 1 the paper's
/// Table 4; the run's `notes` under the last table.
fn grid_tables(cells: &[Cell], test: u8, h: f64, head: &str, notes: &[String]) -> Vec<Table> {
    let (rows_l, cols_l, vals) = layout(cells, h);
    let mut out = Vec::new();
    let grid = |title: String, vals: &[Vec<f64>], d: usize| {
        let mut t =
            Table::new(std::iter::once("φ \\ ψ".to_string()).chain(cols_l.iter().cloned())).title(title);
        for (i, row) in vals.iter().enumerate() {
            t.row(std::iter::once(rows_l[i].clone()).chain(row.iter().map(|&x| fixed(x, d))));
        }
        t
    };
    let argmin = |vals: &[Vec<f64>]| {
        let mut best = (0, 0, f64::INFINITY);
        for (i, r) in vals.iter().enumerate() {
            for (j, &x) in r.iter().enumerate() {
                if x < best.2 {
                    best = (i, j, x);
                }
            }
        }
        best
    };
    let paper_table = match test {
        1 => Some(&paper::TABLE5),
        3 => Some(&paper::TABLE7),
        5 => Some(&paper::TABLE9),
        _ => None,
    };
    if !vals.is_empty() {
        out.push(grid(
            format!("{head}: mean competitive factor ρ of PFFP, H = {h} (rows φ, columns ψ)"),
            &vals,
            3,
        ));
        if let Some(p) = paper_table {
            let pv: Vec<Vec<f64>> = p.iter().map(|r| r.to_vec()).collect();
            let table_no = match test {
                1 => 5,
                3 => 7,
                _ => 9,
            };
            let mut t = grid(format!("The paper's Table {table_no}"), &pv, 3);
            let (oi, oj, ov) = argmin(&vals);
            let (pi, pj, pv) = argmin(&pv);
            t.note(format!(
                "best: ours φ = {}, ψ = {} (ρ = {}); the paper's φ = {}, ψ = {} (ρ = {}); the paper's best cell has ρ = {} in ours",
                rows_l[oi],
                cols_l[oj],
                fixed(ov, 3),
                rows_l[pi],
                cols_l[pj],
                fixed(pv, 3),
                fixed(vals[pi][pj], 3)
            ));
            out.push(t);
        }
    }
    if test == 1 {
        let mut t = Table::new(["exp.", "H", "φ", "ψ", "ρ ours", "ρ paper"])
            .title("Test 1 — the paper's Table 4: competitive factor of eight (H, φ, ψ) settings");
        for (k, e) in paper::TABLE4.iter().enumerate() {
            let ours = cells
                .iter()
                .find(|c| (c.h, c.phi, c.psi) == (e.0, e.1, e.2))
                .map(|c| c.rho);
            t.row([
                (k + 1).to_string(),
                format!("{}", e.0),
                format!("{}", e.1),
                format!("{}", e.2),
                opt(ours, 3),
                fixed(e.3, 2),
            ]);
        }
        out.push(t);
    }
    if let Some(last) = out.last_mut() {
        last.notes.extend(notes.iter().cloned());
    }
    out
}

/// The grid's tables as printed: each table, a blank line between them;
/// the paper's grid's note (the best cells) after a blank line, and the
/// run's notes unwrapped at the end (as they were before the tables kept
/// them).
fn grid_text(tables: &[Table], notes: &[String]) -> String {
    let mut s = String::new();
    for (i, t) in tables.iter().enumerate() {
        let mut shown = t.clone();
        shown.notes.retain(|n| !notes.contains(n));
        let best = std::mem::take(&mut shown.notes);
        if i > 0 {
            s += "\n";
        }
        s += &shown.to_text();
        for b in best {
            s += "\n";
            s += &b;
            s += "\n";
        }
    }
    s += "\n";
    for n in notes {
        s += n;
        s += "\n";
    }
    s
}

/// Performance profiles of ρ, t_w and their mean, over τ ∈ [1, 2] and
/// [1, 5]: (file name, SVG).
fn profile_charts(rows: &[Row], test: &Test) -> Result<Vec<(String, String)>, SimError> {
    let labels: Vec<String> = test.strategies().into_iter().map(|s| s.0).collect();
    let values = super::values(rows, labels.len());
    let per_metric: Vec<Vec<Option<Vec<f64>>>> = (0..2).map(|m| gamma_matrix(&values, m)).collect();
    // The mean of the two γ, on weeks where both are defined.
    let mean: Vec<Option<Vec<f64>>> = per_metric[0]
        .iter()
        .zip(&per_metric[1])
        .map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => Some(a.iter().zip(b).map(|(x, y)| (x + y) / 2.0).collect()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (name, title, g) in [
        ("rho", "ρ", &per_metric[0]),
        ("tw", "t_w", &per_metric[1]),
        ("mean", "mean of ρ and t_w", &mean),
    ] {
        for hi in [2.0, 5.0] {
            let ts = taus(1.0, hi, 200);
            let series: Vec<Series> = labels
                .iter()
                .enumerate()
                .map(|(s, l)| Series {
                    name: l.clone(),
                    values: profile(&g.iter().flatten().map(|v| v[s]).collect::<Vec<_>>(), &ts),
                })
                .collect();
            let svg = profiles(
                &format!(
                    "Test {}: performance profile of {title}, τ ∈ [1, {hi}]",
                    test.number
                ),
                "τ (ratio to the week's best)",
                &ts,
                &series,
            )
            .map_err(SimError::Plot)?;
            out.push((format!("profile-{name}-{hi}.svg"), svg));
        }
    }
    Ok(out)
}
