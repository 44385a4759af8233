//! `fairsched experiment pffp`: the PFFP paper's Tests 1–5, our numbers
//! beside the paper's.

use crate::cmd_experiment::ForceArg;
use crate::sweep::{Mode, Plan, SlurmArgs, Stage};
use crate::term::sayln;
use fairsched_report::plot::{Series, heatmap, profiles};
use fairsched_report::table::{TABLES_JSON, push_csv_line, tables_json};
use fairsched_report::{Table, fixed};
use fairsched_sim::TraceInput;
use fairsched_sim::experiments::pffp::analysis::{Degradation, RunMetrics, gamma_matrix, profile, taus};
use fairsched_sim::experiments::pffp::{
    self as exp, Cell, Instance, Kind, PAPER_LOGS, Row, Test, WeekLog, paper,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct PffpArgs {
    /// Which test of the paper's Table 3: 1 and 3 tune PFFP over the φ×ψ
    /// grid (Workload A; 3 machines of 1, or of 2, 4, 8 processors); 2 and
    /// 4 compare MST, PFFP1, PFFP2, MSTUser, MLp and Rand on the same
    /// machines (Workload B); 5 compares on machines of 50, 100, 150 with
    /// bags of tasks (Workload C).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
    test: u8,
    /// Test 5 only: run the φ×ψ grid (the paper's Table 9) instead of the
    /// comparison.
    #[arg(long)]
    grid: bool,
    /// Weeks to run (the first N of the workload; default all: A 18,
    /// B 30, C 30). A larger N, or logs with too few weeks, runs fewer:
    /// a warning and summary.json's notes say how many.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    instances: Option<u32>,
    /// SWF logs to draw the weeks from, instead of the paper's seven
    /// (KTH-SP2, CTC-SP2, HPC2N, LANL-CM5, SDSC-BLUE, SDSC-DS, SDSC-SP2).
    #[arg(long, value_delimiter = ',', value_name = "FILE,...")]
    logs: Vec<PathBuf>,
    /// Where the paper's seven logs are.
    #[arg(long, default_value = "../shared/data/traces/swf", value_name = "DIR")]
    traces_dir: PathBuf,
    /// Scale every week's arrivals to this utilisation (0 < U ≤ 1)
    /// [default: as logged; Test 5: drawn per week in 0.2–0.9].
    #[arg(long, value_name = "U", allow_negative_numbers = true)]
    utilization: Option<f64>,
    /// PFFP with the workload's own parameters instead of the paper's
    /// Table 3 (H = 0.78, β = 0.524, S_m = 1320, μ = 5248): Pareto fit,
    /// mean and median Hurst estimate of Workload A's run times.
    #[arg(long)]
    fitted: bool,
    /// Master seed (the weeks drawn, Rand's choices, Test 5's utilisations).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    seed: u64,
    /// Output directory [default: results/pffp-test<N>]. A folder an earlier
    /// run wrote (it holds .fairsched-out) is cleared of that run's files
    /// first; other files stay. With --slurm-array, the sweep's folder
    /// (sweep.json, sweep.sbatch, parts/), where `experiment collect`
    /// writes the results.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    force: ForceArg,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    pub(crate) slurm: SlurmArgs,
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

fn load_logs(a: &PffpArgs) -> anyhow::Result<Vec<WeekLog>> {
    if a.logs.is_empty() {
        PAPER_LOGS
            .par_iter()
            .map(|n| Ok(WeekLog::shared(n, &a.traces_dir)?))
            .collect()
    } else {
        let mut seen = std::collections::BTreeSet::new();
        for p in &a.logs {
            if !seen.insert(log_name(p)) {
                return Err(crate::term::usage(format!(
                    "--logs: {} is given twice",
                    p.display()
                )));
            }
        }
        a.logs
            .par_iter()
            .map(|p| Ok(WeekLog::load(&log_name(p), &TraceInput::Path(p.clone()))?))
            .collect()
    }
}

#[derive(Serialize)]
struct LogMeta<'a> {
    name: &'a str,
    path: &'a str,
    clock: &'a str,
    clock_note: Option<&'a str>,
    jobs: usize,
    weeks: usize,
    median_estimate_s: Option<i64>,
    filters: fairsched_trace::FilterCounts,
}

#[derive(Serialize)]
struct Summary<'a> {
    experiment: &'static str,
    test: u8,
    workload: &'static str,
    machines: &'a [u32],
    bags_of_tasks: bool,
    seed: u64,
    strategies: Vec<(String, String)>,
    logs: Vec<LogMeta<'a>>,
    instances: &'a [Instance],
    /// Comparisons: degradation (%) per strategy, with the paper's.
    degradation: Option<&'a Degradation>,
    paper_degradation: Option<Vec<PaperRow>>,
    /// Grids: mean ρ and t_w per setting, with the paper's ρ.
    grid: Option<&'a [Cell]>,
    missing_estimates: u64,
    fitted: Option<&'a exp::Fitted>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct PaperRow {
    strategy: &'static str,
    rho: f64,
    wait: f64,
    mean: f64,
    rank: u32,
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

/// ρ and t_w of a run, as a sweep's part holds them.
#[derive(Serialize, Deserialize)]
#[serde(remote = "RunMetrics")]
struct MetricsDef {
    jobs: u64,
    makespan: f64,
    lower_bound: f64,
    rho: f64,
    mean_wait: f64,
}

/// A row of `pffp.csv` as a sweep's part holds it (every field; the
/// metrics nested, as `Row` flattens them beside its own `jobs`).
#[derive(Serialize, Deserialize)]
#[serde(remote = "Row")]
struct RowDef {
    test: u8,
    instance: u32,
    log: String,
    week_start: i64,
    jobs: u64,
    tasks: u64,
    utilization: f64,
    strategy: String,
    policy: String,
    #[serde(with = "MetricsDef")]
    metrics: RunMetrics,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct PffpRow(#[serde(with = "RowDef")] Row);

/// The instances (weeks) of a test; each runs every strategy.
struct PffpPlan {
    insts: Vec<Instance>,
    test: Test,
    seed: u64,
}

impl Plan for PffpPlan {
    type Part = Vec<PffpRow>;

    fn count(&self) -> usize {
        self.insts.len()
    }

    fn run(&self, index: usize) -> anyhow::Result<Self::Part> {
        // The strategies of one week, in parallel: rows in strategy order.
        let rows = exp::run(&self.insts[index..=index], &self.test, self.seed, &|| {})?;
        Ok(rows.into_iter().map(PffpRow).collect())
    }
}

fn opt(x: Option<f64>, d: usize) -> String {
    x.map_or_else(|| "—".into(), |x| fixed(x, d))
}

pub fn pffp(a: PffpArgs, mode: Mode) -> anyhow::Result<()> {
    let started = Instant::now();
    if a.grid && a.test != 5 {
        return Err(crate::term::usage(
            "--grid is for Test 5 (Tests 1 and 3 are grids already; 2 and 4 compare strategies)",
        ));
    }
    if let Some(u) = a.utilization
        && !(u > 0.0 && u <= 1.0)
    {
        return Err(crate::term::usage(format!(
            "--utilization {u}: expected a fraction in (0, 1]"
        )));
    }
    let mut test = Test::paper(a.test, a.grid)?;
    if a.utilization.is_some() {
        test.utilization = a.utilization;
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "results/pffp-test{}{}",
            a.test,
            if a.grid { "-grid" } else { "" }
        ))
    });
    let stage = Stage::open(mode, &out, a.force)?;
    exp::check(&test)?;
    let logs = load_logs(&a)?;
    if a.fitted {
        test = test.with_fitted(exp::Fitted::on(&logs, a.seed)?);
    }
    let grid_h = match &test.kind {
        Kind::Grid { grid_h, .. } => grid_h.first().copied().unwrap_or(0.78),
        Kind::Compare(_) => 0.78,
    };
    let plan = PffpPlan {
        insts: exp::instances(&logs, &test, a.instances, a.seed)?,
        test,
        seed: a.seed,
    };
    let Some((parts, mut output)) = stage.run(&plan, format!("test {}", a.test), "weeks", !a.no_progress)?
    else {
        return Ok(());
    };
    let PffpPlan { insts, test, .. } = plan;
    let strategies = test.strategies();
    let rows: Vec<Row> = parts.into_iter().flatten().map(|r| r.0).collect();

    let mut notes = test.notes.clone();
    let pool_len = exp::pool(&logs, a.seed).len();
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
    // Fewer weeks than asked for (--instances beyond the workload's size,
    // or a pool too short for it): said now, and among the notes.
    if let Some(n) = exp::shortfall(pool_len, test.workload, a.instances) {
        crate::term::note(format_args!("warning: {n}"));
        notes.push(format!("{n}."));
    }
    for l in &logs {
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
    for l in &logs {
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
        Kind::Compare(_) => (Some(exp::degradations(&rows, &test)), None),
        Kind::Grid { .. } => (None, Some(exp::cells(&rows, &test))),
    };
    // The tables printed (and kept in tables.json).
    let printed: Vec<Table> = match (&deg, &cells) {
        (Some(d), _) => {
            let mut t = degradation_table(d, a.test, &head);
            for n in &notes {
                t.note(n.clone());
            }
            vec![t]
        }
        (None, Some(c)) => grid_tables(c, a.test, grid_h, &head, &notes),
        (None, None) => Vec::new(),
    };
    // Files first, then the tables; what an earlier run (of another test)
    // wrote in the same folder goes, so the folder describes this run only.
    output.begin(&["summary.json", "pffp.csv", TABLES_JSON])?;
    let mut files: Vec<(String, Vec<u8>)> = vec![("pffp.csv".into(), rows_csv(&rows).into_bytes())];
    if deg.is_some() {
        files.push(("degradation.csv".into(), printed[0].to_csv().into_bytes()));
        for (f, svg) in profile_charts(&rows, &test)? {
            files.push((f, svg.into_bytes()));
        }
    }
    if let Some(c) = &cells {
        files.push(("grid.csv".into(), grid_csv(c).into_bytes()));
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
            .map_err(anyhow::Error::msg)?;
            files.push(("grid.svg".into(), svg.into_bytes()));
        }
    }
    files.push((TABLES_JSON.into(), tables_json(&printed)));
    let summary = Summary {
        experiment: "pffp",
        test: a.test,
        workload: test.workload.name(),
        machines: &test.machines,
        bags_of_tasks: test.bags,
        seed: a.seed,
        strategies: strategies.clone(),
        logs: logs
            .iter()
            .map(|l| LogMeta {
                name: &l.name,
                path: &l.path,
                clock: &l.clock,
                clock_note: l.clock_note.as_deref(),
                jobs: l.jobs.len(),
                weeks: l.weeks.len(),
                median_estimate_s: l.median_estimate,
                filters: l.filters,
            })
            .collect(),
        instances: &insts,
        degradation: deg.as_ref(),
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
        grid: cells.as_deref(),
        missing_estimates: missing,
        fitted: test.fitted.as_ref(),
        notes: &notes,
    };
    files.push(("summary.json".into(), output.summary_json(&summary)));
    // Together (the summary renamed last): never one without the others.
    let set: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    let written = output.dir.write_set(&set)?;
    let folder = output.shown.clone();
    output.finish()?;

    match (&deg, &cells) {
        (Some(_), _) => sayln!("{}", printed[0].to_text()),
        (None, Some(_)) => sayln!("{}", grid_text(&printed, &notes)),
        (None, None) => {}
    }
    // The summary first, as the other experiments say it; the profiles
    // as one item: there are six.
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
    sayln!(
        "wrote {} ({}) in {:.1} s",
        folder.display(),
        shown.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
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
fn profile_charts(rows: &[Row], test: &Test) -> anyhow::Result<Vec<(String, String)>> {
    let labels: Vec<String> = test.strategies().into_iter().map(|s| s.0).collect();
    let values = exp::values(rows, labels.len());
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
            .map_err(anyhow::Error::msg)?;
            out.push((format!("profile-{name}-{hi}.svg"), svg));
        }
    }
    Ok(out)
}
