//! Reproduction studies: a paper's protocol run under every reading its
//! text allows, one row per (case, reading), with the claim's figures,
//! whether each claim holds, and the paper's values beside them
//! (`fairsched experiment PAPER --study`, docs/reproduction.md).
//!
//! A study is itself an [`Experiment`] ([`Study`]): its instances are the
//! instances of every reading's own experiment, one after the other, so
//! it runs in parallel here and as a Slurm array like the experiment, and
//! each reading's part goes through the experiment's own report. A
//! reading is a value of the experiment's arguments, so a user runs it
//! alone with the flags the study prints beside it.
//!
//! What a paper's study runs is its [`Studied`] implementation: the cases
//! (an experiment, a test, a table), the readings, the claims, and how a
//! reading's summary gives the figures and the verdicts.

use crate::errors::SimError;
use crate::experiment::{Body, Experiment, Host, Outcome, Quiet};
use fairsched_core::Registry;
use fairsched_report::files::json_bytes;
use fairsched_report::plot::{ReadingPanel, reading_panels};
use fairsched_report::table::{TABLES_JSON, Table, fixed, push_csv_line, tables_json};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One reading of one case: the arguments that run it.
#[derive(Clone, Debug)]
pub struct Reading<A> {
    /// The case it belongs to ("exp1", "test2", "table1-LPC-EGEE").
    pub case: String,
    /// Its name within the study ("default", "stated-setup").
    pub name: String,
    /// What it changes, in a sentence.
    pub what: String,
    /// The command line that runs it alone.
    pub command: String,
    /// Where it comes from: the paper's words, the spec's resolution, or
    /// a sweep of what neither gives.
    pub source: Source,
    /// The experiment's arguments.
    pub args: A,
}

/// A sentence of a paper or of the spec, and where it stands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quote {
    /// Where ("§4.2", "Table 3", "spec/shapley.md, Windows").
    pub at: &'static str,
    /// The words, as written (the seeds' damage mended where the spec
    /// says so).
    pub text: &'static str,
}

/// Where a reading comes from (every reading names one): what the paper
/// says, what the spec resolved where the paper is silent or
/// contradicts itself, or a parameter neither gives, swept over a
/// stated range (never one value picked by its result).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Source {
    /// The paper's sentences this reading reads, each quoted.
    Paper { quotes: Vec<Quote> },
    /// The spec's resolution (the experiment's defaults), quoted.
    Spec { quotes: Vec<Quote> },
    /// One point of a sweep over `parameter`, which the paper does not
    /// give; `range`: the points the study runs, and why that range.
    Sensitivity {
        parameter: &'static str,
        range: &'static str,
    },
}

impl Source {
    /// The paper's words.
    pub fn paper(quotes: &[(&'static str, &'static str)]) -> Source {
        Source::Paper {
            quotes: quotes.iter().map(|&(at, text)| Quote { at, text }).collect(),
        }
    }
    /// The spec's words.
    pub fn spec(quotes: &[(&'static str, &'static str)]) -> Source {
        Source::Spec {
            quotes: quotes.iter().map(|&(at, text)| Quote { at, text }).collect(),
        }
    }
    /// A point of a sweep over what the paper does not give.
    pub fn sensitivity(parameter: &'static str, range: &'static str) -> Source {
        Source::Sensitivity { parameter, range }
    }
    /// Its kind, as the tables show it: "paper", "spec", "sensitivity".
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Paper { .. } => "paper",
            Source::Spec { .. } => "spec",
            Source::Sensitivity { .. } => "sensitivity",
        }
    }
    /// One line: the kind and the quotes, or the swept parameter.
    pub fn describe(&self) -> String {
        let quoted = |q: &[Quote]| {
            q.iter()
                .map(|q| format!("\"{}\" ({})", q.text, q.at))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match self {
            Source::Paper { quotes } => format!("the paper: {}", quoted(quotes)),
            Source::Spec { quotes } => format!("the spec: {}", quoted(quotes)),
            Source::Sensitivity { parameter, range } => {
                format!("sensitivity: {parameter}, swept over {range}")
            }
        }
    }
}

/// A claim of the paper, checked on every reading of the cases it is
/// about.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    pub id: &'static str,
    pub text: &'static str,
}

/// A figure of one reading: ours, and the paper's where it gives one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    pub ours: Option<f64>,
    pub paper: Option<f64>,
    /// Decimals shown.
    #[serde(skip)]
    pub decimals: usize,
}

impl Figure {
    pub fn new(name: impl Into<String>, ours: Option<f64>, paper: Option<f64>, decimals: usize) -> Figure {
        Figure {
            name: name.into(),
            ours: ours.filter(|x| x.is_finite()),
            paper,
            decimals,
        }
    }
}

/// Whether a claim holds on one reading (`None`: the reading does not
/// measure it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub claim: String,
    pub holds: Option<bool>,
}

/// What a reading's summary gives.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub figures: Vec<Figure>,
    pub verdicts: Vec<Verdict>,
}

impl Measured {
    pub fn figure(&mut self, name: impl Into<String>, ours: Option<f64>, paper: Option<f64>, d: usize) {
        self.figures.push(Figure::new(name, ours, paper, d));
    }
    pub fn verdict(&mut self, claim: &str, holds: Option<bool>) {
        self.verdicts.push(Verdict {
            claim: claim.into(),
            holds,
        });
    }
}

/// A paper's experiment that has a study.
pub trait Studied: Experiment {
    /// The study's name (`summary.json`'s `experiment`, a sweep's record).
    const STUDY: &'static str;
    /// The paper's claims the study checks.
    fn claims() -> Vec<Claim>;
    /// Every (case, reading) to run, from the arguments given on the
    /// command line (their seed, logs, `with`); `quick`: the size the
    /// tests use.
    fn readings(base: &Self::Args, quick: bool) -> Vec<Reading<Self::Args>>;
    /// A reading's figures and verdicts, from its summary.
    fn measure(reading: &Reading<Self::Args>, summary: &Self::Summary) -> Measured;
    /// Notes printed under the study's tables (sources, what is not
    /// available here).
    fn notes() -> Vec<String> {
        Vec::new()
    }
    /// The flags given in `base` that the study would not use (its
    /// readings set them): a study refuses them rather than ignore them.
    fn unused(_base: &Self::Args) -> Vec<&'static str> {
        Vec::new()
    }
}

/// A study's arguments: the experiment's, and the size.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound = "A: Serialize + DeserializeOwned")]
pub struct StudyArgs<A> {
    pub base: A,
    pub quick: bool,
    /// Only these readings (by name; empty: all).
    #[serde(default)]
    pub only: Vec<String>,
    /// Only this case (`test4`, `night-consecutive`; `None`: all): the
    /// experiment's own selector given with `--study`.
    #[serde(default)]
    pub case: Option<String>,
}

/// The planned study: every reading's plan.
pub struct Study<E: Studied> {
    args: StudyArgs<E::Args>,
    rows: Vec<(Reading<E::Args>, E, usize)>,
    total: usize,
}

/// One row of `study.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub case: String,
    pub reading: String,
    pub what: String,
    pub command: String,
    pub source: Source,
    pub figures: Vec<Figure>,
    pub verdicts: Vec<Verdict>,
}

/// `summary.json` (and `study.json`) of a study.
#[derive(Serialize)]
pub struct StudySummary {
    pub experiment: &'static str,
    pub quick: bool,
    pub claims: Vec<Claim>,
    pub rows: Vec<Row>,
    /// Per claim, the readings (`case/reading`) under which it holds.
    pub holds_under: Vec<(String, Vec<String>)>,
    pub notes: Vec<String>,
}

impl<E: Studied> Study<E> {
    /// The readings `args` selects (its case, its `--reading`s), or why
    /// the selection is refused.
    pub fn plan_readings(args: &StudyArgs<E::Args>) -> Result<Vec<Reading<E::Args>>, SimError> {
        let unused = E::unused(&args.base);
        if !unused.is_empty() {
            return Err(SimError::usage(format!(
                "--study runs its own readings, which set {}: run without them (or without --study to run one reading)",
                unused.join(", ")
            )));
        }
        let mut all = E::readings(&args.base, args.quick);
        if let Some(c) = &args.case {
            let cases = |rs: &[Reading<E::Args>]| {
                let mut v: Vec<String> = rs.iter().map(|r| r.case.clone()).collect();
                v.dedup();
                v
            };
            if !all.iter().any(|r| &r.case == c) {
                let full = cases(&E::readings(&args.base, false));
                return Err(SimError::usage(if args.quick && full.contains(c) {
                    format!(
                        "{c}: {} runs it in the full study only, not with --quick: run without --quick",
                        E::STUDY
                    )
                } else {
                    format!(
                        "{c}: {} has no such case; its cases: {}",
                        E::STUDY,
                        full.join(", ")
                    )
                }));
            }
            all.retain(|r| &r.case == c);
        }
        for o in &args.only {
            if !all.iter().any(|r| &r.name == o) {
                if args.quick && E::readings(&args.base, false).iter().any(|r| &r.name == o) {
                    return Err(SimError::usage(format!(
                        "--reading {o}: {} runs it in the full study only, not with --quick: run without --quick",
                        E::STUDY
                    )));
                }
                let mut names: Vec<&str> = Vec::new();
                for r in &all {
                    if !names.contains(&r.name.as_str()) {
                        names.push(&r.name);
                    }
                }
                return Err(SimError::usage(format!(
                    "--reading {o}: {} has no such reading; its readings: {}",
                    E::STUDY,
                    names.join(", ")
                )));
            }
        }
        Ok(all
            .into_iter()
            .filter(|r| args.only.is_empty() || args.only.contains(&r.name))
            .collect())
    }
    fn locate(&self, index: usize) -> (usize, usize) {
        let k = self.rows.partition_point(|(_, _, start)| *start <= index) - 1;
        (k, index - self.rows[k].2)
    }
}

impl<E: Studied> Experiment for Study<E> {
    const NAME: &'static str = E::STUDY;
    type Args = StudyArgs<E::Args>;
    type Part = E::Part;
    type Summary = StudySummary;
    const SWEEPS: bool = E::SWEEPS;

    fn default_out(args: &Self::Args) -> PathBuf {
        PathBuf::from(format!(
            "results/{}{}",
            E::STUDY,
            if args.quick { "-quick" } else { "" }
        ))
    }

    fn check(args: &Self::Args, registry: &Registry, _host: &dyn Host) -> Result<(), SimError> {
        for r in Self::plan_readings(args)? {
            E::check(&r.args, registry, &Quiet).map_err(|e| in_reading(&r, e))?;
        }
        Ok(())
    }

    fn plan(args: &Self::Args, registry: &Registry, _host: &dyn Host) -> Result<Self, SimError> {
        let mut rows = Vec::new();
        let mut total = 0;
        for r in Self::plan_readings(args)? {
            let plan = E::plan(&r.args, registry, &Quiet).map_err(|e| in_reading(&r, e))?;
            let n = plan.instances();
            rows.push((r, plan, total));
            total += n;
        }
        Ok(Study {
            args: args.clone(),
            rows,
            total,
        })
    }

    fn instances(&self) -> usize {
        self.total
    }

    fn progress(&self) -> (String, &'static str) {
        (format!("{} ({} readings)", E::STUDY, self.rows.len()), "runs")
    }

    fn run(&self, registry: &Registry, index: usize) -> Result<E::Part, SimError> {
        let (k, i) = self.locate(index);
        let (r, plan, _) = &self.rows[k];
        plan.run(registry, i).map_err(|e| in_reading(r, e))
    }

    fn report(self, parts: Vec<E::Part>, _host: &dyn Host) -> Result<Outcome<StudySummary>, SimError> {
        let mut parts = parts.into_iter();
        let mut rows = Vec::new();
        for (r, plan, _) in self.rows {
            let mine: Vec<E::Part> = parts.by_ref().take(plan.instances()).collect();
            let outcome = plan.report(mine, &Quiet).map_err(|e| in_reading(&r, e))?;
            let m = E::measure(&r, &outcome.summary);
            rows.push(Row {
                case: r.case,
                reading: r.name,
                what: r.what,
                command: r.command,
                source: r.source,
                figures: m.figures,
                verdicts: m.verdicts,
            });
        }
        let claims = E::claims();
        let holds_under = claims
            .iter()
            .map(|c| {
                let under = rows
                    .iter()
                    .filter(|r| {
                        r.verdicts
                            .iter()
                            .any(|v| v.claim == c.id && v.holds == Some(true))
                    })
                    .map(|r| format!("{}/{}", r.case, r.reading))
                    .collect();
                (c.id.to_string(), under)
            })
            .collect();
        let summary = StudySummary {
            experiment: E::STUDY,
            quick: self.args.quick,
            claims,
            rows,
            holds_under,
            notes: E::notes(),
        };
        let tables = study_tables(&summary);
        let mut text: String = tables.iter().map(|t| t.to_text() + "\n").collect();
        text.push_str(&holds_text(&summary));
        let mut files = vec![
            (
                "study.csv".to_string(),
                Body::Bytes(study_csv(&summary).into_bytes()),
            ),
            ("study.json".to_string(), Body::Bytes(json_bytes(&summary))),
            (TABLES_JSON.to_string(), Body::Bytes(tables_json(&tables))),
        ];
        for (name, svg) in study_plots(&summary)? {
            files.push((name, Body::Bytes(svg.into_bytes())));
        }
        files.push(("summary.json".to_string(), Body::Summary));
        let planned = files.iter().map(|(n, _)| n.clone()).collect();
        Ok(Outcome {
            summary,
            text,
            tables,
            files,
            planned,
        })
    }
}

/// One chart per case, `study-CASE.svg`: a row per reading, a panel per
/// figure the paper gives a value for (every figure when it gives none,
/// at most six), the paper's value as a dashed line.
pub fn study_plots(s: &StudySummary) -> Result<Vec<(String, String)>, SimError> {
    let mut cases: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    let mut out = Vec::new();
    for case in cases {
        let rows: Vec<&Row> = s.rows.iter().filter(|r| r.case == case).collect();
        let mut names: Vec<&str> = Vec::new();
        for r in &rows {
            for f in &r.figures {
                if !names.contains(&f.name.as_str()) {
                    names.push(&f.name);
                }
            }
        }
        let paper_of = |name: &str| {
            rows.iter()
                .flat_map(|r| r.figures.iter())
                .find(|f| f.name == name && f.paper.is_some())
                .and_then(|f| f.paper)
        };
        let with_paper: Vec<&str> = names.iter().copied().filter(|n| paper_of(n).is_some()).collect();
        let shown = if with_paper.is_empty() { names } else { with_paper };
        let panels: Vec<ReadingPanel> = shown
            .iter()
            .take(6)
            .map(|&name| ReadingPanel {
                name: name.to_string(),
                values: rows
                    .iter()
                    .map(|r| {
                        r.figures
                            .iter()
                            .find(|f| f.name == name)
                            .and_then(|f| f.ours)
                            .unwrap_or(f64::NAN)
                    })
                    .collect(),
                paper: paper_of(name),
            })
            .collect();
        if panels.is_empty() {
            continue;
        }
        let readings: Vec<String> = rows.iter().map(|r| r.reading.clone()).collect();
        let svg = reading_panels(
            &format!("{} — {case} (dashed: the paper)", s.experiment),
            &readings,
            &panels,
        )
        .map_err(|e| SimError::Plot(format!("study {case}: {e}")))?;
        let file: String = case
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        out.push((format!("study-{file}.svg"), svg));
    }
    Ok(out)
}

/// An error of one reading says which.
fn in_reading<A>(r: &Reading<A>, e: SimError) -> SimError {
    match e {
        SimError::Usage(m) => SimError::Usage(format!("reading {}/{}: {m}", r.case, r.name)),
        SimError::Config(m) => SimError::Config(format!("reading {}/{}: {m}", r.case, r.name)),
        other => other,
    }
}

fn cell(x: Option<f64>, d: usize) -> String {
    x.map_or_else(|| "—".into(), |x| fixed(x, d))
}

fn mark(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

/// One table per case: a row per reading, each figure as "ours (paper)",
/// then the verdicts.
pub fn study_tables(s: &StudySummary) -> Vec<Table> {
    let mut cases: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    cases
        .into_iter()
        .map(|case| {
            let rows: Vec<&Row> = s.rows.iter().filter(|r| r.case == case).collect();
            let first = rows[0];
            let mut cols = vec!["reading".to_string(), "source".to_string()];
            cols.extend(first.figures.iter().map(|f| match f.paper {
                Some(p) => format!("{} (paper {})", f.name, fixed(p, f.decimals)),
                None => f.name.clone(),
            }));
            cols.extend(first.verdicts.iter().map(|v| format!("{} holds", v.claim)));
            let mut t = Table::new(cols).title(format!("{} — {case}", s.experiment));
            for r in rows {
                let mut row = vec![r.reading.clone(), r.source.kind().to_string()];
                row.extend(r.figures.iter().map(|f| cell(f.ours, f.decimals)));
                row.extend(r.verdicts.iter().map(|v| mark(v.holds).to_string()));
                t.row(row);
            }
            t
        })
        .collect()
}

/// Per claim: its text and the readings under which it holds.
fn holds_text(s: &StudySummary) -> String {
    let mut out = String::from("Claims:\n");
    for (c, (_, under)) in s.claims.iter().zip(&s.holds_under) {
        let measured = s.rows.iter().any(|r| r.verdicts.iter().any(|v| v.claim == c.id));
        let verdict = if !measured {
            "not measured by these readings".to_string()
        } else if under.is_empty() {
            "holds under no reading".to_string()
        } else {
            format!("holds under {}", under.join(", "))
        };
        out.push_str(&format!("  {} — {}: {verdict}\n", c.id, c.text));
    }
    out.push_str("Readings (each runs alone with):\n");
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (k, r) in s.rows.iter().enumerate() {
        if !seen.contains(&(r.case.as_str(), r.reading.as_str())) {
            seen.push((&r.case, &r.reading));
            // A reading's what and source are said at its first case.
            let first = s.rows[..k]
                .iter()
                .find(|o| o.reading == r.reading && o.what == r.what && o.source == r.source);
            match first {
                Some(o) => out.push_str(&format!(
                    "  {}/{}: as {}/{} — {}\n",
                    r.case, r.reading, o.case, o.reading, r.command
                )),
                None => out.push_str(&format!(
                    "  {}/{}: {} — {}\n    from {}\n",
                    r.case,
                    r.reading,
                    r.what,
                    r.command,
                    r.source.describe()
                )),
            }
        }
    }
    for n in &s.notes {
        out.push_str(&format!("Note: {n}\n"));
    }
    out
}

/// `study.csv`: one line per (case, reading, figure or claim).
pub fn study_csv(s: &StudySummary) -> String {
    let mut out = String::new();
    push_csv_line(
        &mut out,
        [
            "case", "reading", "source", "kind", "name", "ours", "paper", "holds", "command",
        ]
        .into_iter(),
    );
    let num = |x: Option<f64>| x.map_or_else(String::new, |x| format!("{x}"));
    for r in &s.rows {
        for f in &r.figures {
            let cells = [
                r.case.clone(),
                r.reading.clone(),
                r.source.kind().into(),
                "figure".into(),
                f.name.clone(),
                num(f.ours),
                num(f.paper),
                String::new(),
                r.command.clone(),
            ];
            push_csv_line(&mut out, cells.iter().map(String::as_str));
        }
        for v in &r.verdicts {
            let holds = v.holds.map_or_else(String::new, |h| h.to_string());
            let cells = [
                r.case.clone(),
                r.reading.clone(),
                r.source.kind().into(),
                "claim".into(),
                v.claim.clone(),
                String::new(),
                String::new(),
                holds,
                r.command.clone(),
            ];
            push_csv_line(&mut out, cells.iter().map(String::as_str));
        }
    }
    out
}

impl<A> Reading<A> {
    /// A reading of `case`, from `source`; `command` (the experiment's
    /// command with the case's own flags) is ended with `--seed` unless 0,
    /// then the reading's `flags`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        case: String,
        name: &str,
        what: &str,
        mut command: String,
        seed: u64,
        flags: &str,
        args: A,
        source: Source,
    ) -> Self {
        if seed != 0 {
            command.push_str(&format!(" --seed {seed}"));
        }
        if !flags.is_empty() {
            command.push(' ');
            command.push_str(flags);
        }
        Reading {
            case,
            name: name.into(),
            what: what.into(),
            command,
            source,
            args,
        }
    }
}

/// The mean of the finite values of `xs` (`None` if there are none).
pub fn mean(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of the finite values of `xs` (`None` if there are none).
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite());
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(xs[n / 2]),
        _ => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// The largest finite value of `xs`.
pub fn max(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    xs.into_iter().filter(|x| x.is_finite()).reduce(f64::max)
}

/// Subsets enumerated at most; beyond, this many are drawn (seeded).
const MAX_SUBSETS: usize = 20_000;

/// A claim judged as the paper measured it, over `k` repetitions (the
/// paper's count): the share of the subsets of `k` of the values `xs` in
/// which `holds` is true. Every subset when there are at most 20,000
/// (16 repetitions, k = 4: 1,820), else 20,000 drawn with a fixed seed (the
/// same share at every run). `None` with fewer than `k` finite values; all
/// of them, once, when `k` is 0 or `xs` has exactly `k`.
pub fn share_of_subsets(xs: &[f64], k: usize, holds: impl Fn(&[f64]) -> bool) -> Option<f64> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < k || n == 0 {
        return None;
    }
    if k == 0 || k == n {
        return Some(if holds(&v) { 1.0 } else { 0.0 });
    }
    let mut pick = vec![0.0; k];
    let (mut yes, mut all) = (0usize, 0usize);
    if combinations(n, k).is_some_and(|c| c <= MAX_SUBSETS as u128) {
        // Every subset, in lexicographic order of indices.
        let mut idx: Vec<usize> = (0..k).collect();
        loop {
            for (p, &i) in pick.iter_mut().zip(&idx) {
                *p = v[i];
            }
            all += 1;
            yes += usize::from(holds(&pick));
            // The next combination: the rightmost index that can move.
            let Some(j) = (0..k).rev().find(|&j| idx[j] < n - k + j) else {
                break;
            };
            idx[j] += 1;
            for m in j + 1..k {
                idx[m] = idx[m - 1] + 1;
            }
        }
    } else {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5AB5E7);
        // A partial Fisher–Yates shuffle per draw: its first k a uniform
        // subset, whatever order the previous draw left.
        let mut order: Vec<usize> = (0..n).collect();
        for _ in 0..MAX_SUBSETS {
            for j in 0..k {
                order.swap(j, rng.random_range(j..n));
                pick[j] = v[order[j]];
            }
            all += 1;
            yes += usize::from(holds(&pick));
        }
    }
    Some(yes as f64 / all as f64)
}

/// C(n, k), or `None` past u128.
fn combinations(n: usize, k: usize) -> Option<u128> {
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        c = c.checked_mul((n - i) as u128)? / (i as u128 + 1);
    }
    Some(c)
}

#[cfg(test)]
mod subset_tests {
    use super::*;

    #[test]
    fn every_subset_is_counted_once() {
        // 16 values, 4 of them large: a subset of 4 holds "max ≥ 10" unless
        // it draws only from the 12 small ones: 1 − C(12,4)/C(16,4).
        let mut xs = vec![1.0; 12];
        xs.extend([20.0; 4]);
        let share = share_of_subsets(&xs, 4, |s| s.iter().any(|&x| x >= 10.0)).unwrap();
        assert!((share - (1.0 - 495.0 / 1820.0)).abs() < 1e-12, "{share}");
        // "In every one of the 4": only the single subset of the 4 large.
        let all = share_of_subsets(&xs, 4, |s| s.iter().all(|&x| x >= 10.0)).unwrap();
        assert!((all - 1.0 / 1820.0).abs() < 1e-12, "{all}");
    }

    #[test]
    fn edges_and_draws() {
        assert_eq!(share_of_subsets(&[1.0, 2.0], 4, |_| true), None);
        assert_eq!(
            share_of_subsets(&[1.0, f64::NAN, 2.0], 2, |s| s.len() == 2),
            Some(1.0)
        );
        assert_eq!(combinations(16, 4), Some(1820));
        // C(40, 10) is past the bound: drawn, the same share every time,
        // near the exact one (a subset of 10 of 20 ones and 20 zeros has
        // at least one 1 unless all 10 are zeros: 1 − C(20,10)/C(40,10)).
        let xs: Vec<f64> = (0..40).map(|i| f64::from(u8::from(i % 2 == 0))).collect();
        let a = share_of_subsets(&xs, 10, |s| s.contains(&1.0)).unwrap();
        let b = share_of_subsets(&xs, 10, |s| s.contains(&1.0)).unwrap();
        assert_eq!(a, b);
        let exact = 1.0 - 184_756.0 / 847_660_528.0;
        assert!((a - exact).abs() < 0.01, "{a} vs {exact}");
    }
}
