//! `experiment workflow-fairness` as an [`Experiment`]: the paper's
//! Experiments 1–3 (or any workflows), Fairness against No-Fairness on
//! identical simulated grids, with any registered order or control policy
//! run on the same grids beside them (`with`). An instance is one
//! repetition.

use super::dirac::Matching;
use super::grid::Grid;
use super::{Pair, Protocol, RunOutcome, System, input_labels, load_sources, repetition};
use crate::SimError;
use crate::experiment::{Body, Experiment, Host, Outcome};
use crate::experiments::with_kinds;
use fairsched_core::{Kind, PolicySpec, Registry, Time};
use fairsched_report::plot::steps;
use fairsched_report::table::{TABLES_JSON, tables_json};
use fairsched_report::{Table, fixed};
use fairsched_trace::workflow::WorkflowSource;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// The arguments of the workflow-fairness experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The paper's Experiment 1, 2 or 3; or `workflows`.
    pub exp: Option<u32>,
    /// Workflows of one's own, in submission order (files or built-in
    /// profiles).
    pub workflows: Vec<String>,
    pub repetitions: u32,
    /// The controller's τ_u, in [0, 1).
    pub tau: f64,
    /// The controller's period, s (0: every status change).
    pub every: f64,
    /// Seconds between two submissions.
    pub spacing: f64,
    /// The grid (TOML; default: an EGI-like grid).
    pub grid: Option<PathBuf>,
    /// Mirror the Fairness run's raises in the No-Fairness run.
    pub mirror: bool,
    pub seed: u64,
    /// Order policies (no Control) or Control policies (on the `priority`
    /// queue) run on the same grids.
    pub with: Vec<PolicySpec>,
    /// Seconds the grid runs before the first workflow (its background
    /// queue fills); added to the grid's own warm-up. The fields below
    /// default so that older sweep files read.
    #[serde(default)]
    pub warmup: f64,
    /// The grid's pilots at start, instead of its own.
    #[serde(default)]
    pub initial_pilots: Option<u32>,
    /// The grid's background arrivals per hour, instead of its own.
    #[serde(default)]
    pub background_per_hour: Option<f64>,
    /// Algorithm 2 skipping the tasks the controller raised before
    /// (false: as printed, they may be raised again).
    #[serde(default)]
    pub skip_raised: bool,
    /// Fairness and No-Fairness at the same time on one grid, competing
    /// (the paper's set-up), instead of one after the other on identical
    /// grids.
    #[serde(default)]
    pub concurrent: bool,
    /// The engine replicates a running task once it has run this many
    /// times its activity's median (MOTEUR's task replication), instead
    /// of the grid's setting (default: never).
    #[serde(default)]
    pub replicate_after: Option<f64>,
    /// Lifts cancel the queued task and submit it again this many seconds
    /// later (DIRAC's way), instead of the grid's setting (default: in
    /// place).
    #[serde(default)]
    pub resubmit_lifted: Option<f64>,
    /// How pilots are matched to waiting tasks (default: one strict
    /// priority queue, the spec's; `dirac`: DIRAC-like task queues).
    #[serde(default)]
    pub matching: Matching,
}

impl Args {
    /// Experiment `n` as the paper ran it (4 repetitions).
    pub fn exp(n: u32) -> Args {
        Args {
            exp: Some(n),
            workflows: Vec::new(),
            repetitions: 4,
            tau: 0.2,
            every: 0.0,
            spacing: 300.0,
            grid: None,
            mirror: true,
            seed: 0,
            with: Vec::new(),
            warmup: 0.0,
            initial_pilots: None,
            background_per_hour: None,
            skip_raised: false,
            concurrent: false,
            replicate_after: None,
            resubmit_lifted: None,
            matching: Matching::Strict,
        }
    }
    fn tag(&self) -> String {
        self.exp
            .map_or_else(|| "custom".to_string(), |n| format!("exp{n}"))
    }
}

/// The planned experiment: its workflows and grid.
pub struct WorkflowFairness {
    args: Args,
    names: Vec<String>,
    sources: Vec<WorkflowSource>,
    inputs: Vec<String>,
    grid: Grid,
    protocol: Protocol,
    with: Vec<System>,
    started: Instant,
}

/// The paper's factors, as summary.json has them.
#[derive(Serialize)]
pub struct PaperOut {
    pub sigma_s_up_to: f64,
    pub mu_about: f64,
    pub sigma_m_up_to: Option<f64>,
}

/// One run of the paper's Table 3: SimuBloch's makespan, mean wait and
/// slowdown under No-Fairness and Fairness.
#[derive(Serialize)]
pub struct PaperRun {
    pub run: usize,
    pub makespan_nf_s: f64,
    pub mean_wait_nf_s: f64,
    pub slowdown_nf: f64,
    pub makespan_f_s: f64,
    pub mean_wait_f_s: f64,
    pub slowdown_f: f64,
}

/// `summary.json`.
#[derive(Serialize)]
pub struct Summary {
    pub experiment: &'static str,
    pub exp: Option<u32>,
    /// The workflows as given (`--workflows`) or the experiment's profiles.
    pub workflows: Vec<String>,
    /// What the tables' `input` column says for each of them (a file's
    /// name), in the order of every run's `workflows`.
    pub inputs: Vec<String>,
    pub grid: String,
    pub tau: f64,
    pub every_s: f64,
    pub spacing_s: f64,
    pub mirror: bool,
    pub seed: u64,
    /// The systems of each repetition's `with` runs (`with`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    pub repetitions: Vec<Pair>,
    pub paper: Option<PaperOut>,
    /// `--exp 2`: the paper's Table 3 (SimuBloch, its runs 1–4).
    pub paper_table3: Option<Vec<PaperRun>>,
    pub notes: Vec<String>,
    pub wall_time_s: f64,
}

/// No-Fairness / Fairness, if both are finite and Fairness's is positive.
fn factor(nf: f64, f: f64) -> Option<f64> {
    (f > 0.0 && f.is_finite() && nf.is_finite()).then(|| nf / f)
}

/// A factor for people: "1.20×", "—" if undefined.
fn ratio(nf: f64, f: f64) -> String {
    factor(nf, f).map_or_else(|| "—".into(), |x| format!("{}×", fixed(x, 2)))
}

/// Decimals of a factor in a CSV file.
const CSV_FACTOR: usize = 3;

/// A CSV cell: the number with `d` decimals, empty if undefined (NaN,
/// infinite, no value), never text.
fn num(x: Option<f64>, d: usize) -> String {
    x.filter(|x| x.is_finite())
        .map_or_else(String::new, |x| fixed(x, d))
}

/// The arguments checked (no file read).
fn check_args(a: &Args) -> Result<Vec<String>, SimError> {
    // η_u lies in [0, 1]: with τ_u ≥ 1 the controller would never act.
    if !(0.0..1.0).contains(&a.tau) {
        return Err(SimError::usage(format!(
            "--tau {}: give a threshold in [0, 1) (0 ≤ τ_u < 1; η_u lies in [0, 1], so τ_u ≥ 1 never acts)",
            a.tau
        )));
    }
    // The core's clock counts milliseconds: a shorter period would be
    // rounded (to 0, i.e. every status change) without a word.
    if !(a.every.is_finite() && (a.every == 0.0 || (1.0..=1e7).contains(&a.every))) {
        return Err(SimError::usage(
            "--every: give 0 (react at every status change) or seconds from 1 to 10⁷",
        ));
    }
    if !(a.spacing.is_finite() && (0.0..=1e8).contains(&a.spacing)) {
        return Err(SimError::usage("--spacing: give seconds from 0 to 10⁸"));
    }
    if a.repetitions == 0 {
        return Err(SimError::usage("--repetitions 0: nothing to run"));
    }
    if !(a.warmup.is_finite() && (0.0..=1e8).contains(&a.warmup)) {
        return Err(SimError::usage("--warmup: give seconds from 0 to 10⁸"));
    }
    if let Some(r) = a.background_per_hour
        && !(r.is_finite() && (0.0..=1e6).contains(&r))
    {
        return Err(SimError::usage(format!(
            "--background-per-hour {r}: give a rate from 0 to 10⁶ tasks per hour"
        )));
    }
    if let Some(f) = a.replicate_after
        && !(f == 0.0 || (f.is_finite() && (1.0..=1000.0).contains(&f)))
    {
        return Err(SimError::usage(format!(
            "--replicate-after {f}: give 0 (never) or a factor of the activity's median from 1 to 1000"
        )));
    }
    if let Some(d) = a.resubmit_lifted
        && !(d.is_finite() && (0.0..=1e9).contains(&d))
    {
        return Err(SimError::usage(format!(
            "--resubmit-lifted {d}: give seconds from 0 to 10⁹"
        )));
    }
    if a.resubmit_lifted.is_some() && a.every == 0.0 {
        return Err(SimError::usage(RESUBMIT_NEEDS_PERIOD));
    }
    if a.matching.is_dirac() {
        if !a.concurrent {
            return Err(SimError::usage(
                "--matching dirac needs --concurrent: both sets on one grid, as the paper ran them (run one after the other, the No-Fairness run's FCFS by workflow has no DIRAC form here)",
            ));
        }
        if !a.with.is_empty() {
            return Err(SimError::usage(
                "--matching dirac runs the paper's two systems only: run it without --with",
            ));
        }
    }
    if a.initial_pilots.is_some_and(|n| n > 1_000_000) {
        return Err(SimError::usage("--initial-pilots: give 0 to 1000000"));
    }
    let names: Vec<String> = match (a.exp, a.workflows.is_empty()) {
        (Some(n), true) => super::experiment(n)
            .ok_or_else(|| SimError::usage(format!("--exp {n}: the paper has Experiments 1 to 3")))?
            .iter()
            .map(|s| s.to_string())
            .collect(),
        (None, _) => a.workflows.clone(),
        (Some(_), false) => return Err(SimError::usage("give --exp or --workflows, not both")),
    };
    if names.is_empty() {
        return Err(SimError::usage("--workflows: give at least one workflow"));
    }
    Ok(names)
}

/// Cancel-and-resubmit with a controller reacting to every status change
/// would never end: each resubmission is a change, to which it reacts by
/// lifting the task again.
const RESUBMIT_NEEDS_PERIOD: &str = "--resubmit-lifted needs a controller that acts periodically (--every S, S ≥ 1; the paper's deployment used 180): reacting at every status change, the controller would lift each resubmitted task again at once, without end";

/// "min–max×" of the defined factors, or `None`.
fn range(xs: impl Iterator<Item = Option<f64>>) -> Option<(f64, f64, usize, usize)> {
    let v: Vec<f64> = xs.flatten().collect();
    let lo = v.iter().copied().reduce(f64::min)?;
    let hi = v.iter().copied().reduce(f64::max)?;
    let below = v.iter().filter(|&&x| x < 1.0).count();
    Some((lo, hi, below, v.len()))
}

/// The "why ours differs" notes, from what this run measured: each says
/// what it explains only when the run shows it.
/// How the paper's runs differed from this one, among the conditions its
/// text states that this run did not set.
fn open_differences(a: &Args, grid: &Grid) -> String {
    let mut d = Vec::new();
    if a.warmup == 0.0 && grid.warmup_s == 0.0 {
        d.push("its workflows met a grid in use (its Table 3 has SimuBloch's tasks waiting 3.8–13.2 h on average under No-Fairness; this grid starts empty)");
    }
    if !a.concurrent {
        d.push("Fairness and No-Fairness ran at the same time on one grid");
    }
    if grid.replicate_after == 0.0 {
        d.push("MOTEUR replicated slow tasks");
    }
    if grid.resubmit_lifted_s.is_none() {
        d.push("DIRAC lifted by cancel and resubmission");
    }
    if d.is_empty() {
        "This run sets every condition the paper's text states; what remains open is what it does not state (the grid's size and load).".into()
    } else {
        format!(
            "Its runs differ from this one in ways its text states: {}.",
            d.join("; ")
        )
    }
}

fn differs_notes(exp: Option<u32>, pairs: &[Pair], open: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let see = "See docs/workflow-fairness.md and docs/reproduction.md (the readings: `fairsched experiment workflow-fairness --study`).";
    let show = |(lo, hi, _, _): (f64, f64, usize, usize)| format!("{}–{}×", fixed(lo, 2), fixed(hi, 2));
    if exp == Some(1) {
        let mu = range(pairs.iter().map(|p| factor(p.no_fairness.mu, p.fairness.mu)));
        if let Some(r) = mu.filter(|r| r.0 < 1.5) {
            notes.push(format!(
                "Why ours differs: the paper reports μ about 2× lower under Fairness; here its factor is {}. {open} Each is a reading of the study, which says under which of them each claim holds. {see}",
                show(r)
            ));
        }
        let sm = range(
            pairs
                .iter()
                .map(|p| factor(p.no_fairness.sigma_m, p.fairness.sigma_m)),
        );
        if let Some(r) = sm.filter(|r| r.2 > 0) {
            notes.push(format!(
                "σ_m: the paper reports it up to 15× lower under Fairness; here its factor is {}, below 1 (Fairness spreads the GATE makespans more) in {} of {} repetitions: raising the later GATE's tasks lengthens the first one's makespan. {see}",
                show(r),
                r.2,
                r.3
            ));
        }
    }
    if exp == Some(2) || exp == Some(3) {
        let sb = range(pairs.iter().map(|p| {
            let find = |r: &RunOutcome| {
                r.workflows
                    .iter()
                    .find(|w| w.name.to_lowercase().contains("simubloch"))
                    .map(|w| w.slowdown)
            };
            match (find(&p.no_fairness), find(&p.fairness)) {
                (Some(nf), Some(f)) => factor(nf, f),
                _ => None,
            }
        }));
        match sb {
            Some(r) if r.2 > 0 => notes.push(format!(
                "Why ours differs: SimuBloch's slowdown factor is {} here (below 1 in {} of {} repetitions), where the paper has it reduced. A new SimuBloch has W = 1 and the controller lifts most of its tasks (its mean wait drops); but once two of them completed, T̂ = t̃/max t̃ ≈ 0.03 (seconds against GATE's minutes), so its W is the minimum and every later reaction lifts the other workflows above its remaining tasks and resubmissions, which then finish late. {see}",
                show(r),
                r.2,
                r.3
            )),
            Some(r) => notes.push(format!(
                "SimuBloch's slowdown is lower under Fairness in every repetition here (factor {}), as in the paper.",
                show(r)
            )),
            None => {}
        }
    }
    notes
}

/// What the other users' tasks met, in the No-Fairness runs.
fn background_note(pairs: &[Pair]) -> Option<String> {
    let runs: Vec<&RunOutcome> = pairs.iter().map(|p| &p.no_fairness).collect();
    let started: u64 = runs.iter().map(|r| r.background.started).sum();
    if started == 0 {
        return None;
    }
    let wait = runs
        .iter()
        .map(|r| r.background.mean_wait_s * r.background.started as f64)
        .sum::<f64>()
        / started as f64;
    let queued: Vec<String> = runs
        .iter()
        .map(|r| r.background.queued_at_first_workflow.to_string())
        .collect();
    Some(format!(
        "Other users' tasks waited {} min on average (No-Fairness runs; the paper gives no such figure for its experiments: its \"about 36 min\" is the 2011–2012 traces' from which τ_u was chosen); the first workflow met {} of them waiting (per repetition).",
        fixed(wait / 60.0, 1),
        queued.join(", ")
    ))
}

/// The grid of `a`: its file or the default, with the arguments'
/// overrides (pilots at start, background rate, warm-up).
pub fn grid_of(a: &Args) -> Result<Grid, SimError> {
    let mut grid = match &a.grid {
        Some(p) => Grid::load(p)?,
        None => Grid::default(),
    };
    if let Some(n) = a.initial_pilots {
        grid.initial_slots = n;
        grid.max_slots = grid.max_slots.max(n);
        if n == 0 && grid.join_per_hour == 0.0 {
            return Err(SimError::usage(
                "--initial-pilots 0: no pilot joins this grid later (slots.join_per_hour = 0), so no task would ever run",
            ));
        }
    }
    if let Some(r) = a.background_per_hour {
        grid.background_per_hour = r;
    }
    grid.warmup_s += a.warmup;
    if let Some(f) = a.replicate_after {
        grid.replicate_after = f;
    }
    if a.resubmit_lifted.is_some() {
        grid.resubmit_lifted_s = a.resubmit_lifted;
    }
    grid.matching = a.matching;
    Ok(grid)
}

/// The `with` systems: an order policy alone, or a Control on the
/// `priority` queue.
fn with_systems(registry: &Registry, with: &[PolicySpec]) -> Result<Vec<System>, SimError> {
    Ok(with_kinds(registry, &[Kind::Order, Kind::Control], with)?
        .into_iter()
        .map(|(kind, spec)| match kind {
            Kind::Control => System::With {
                order: "priority".parse().expect("registered"),
                control: Some(spec),
            },
            _ => System::With {
                order: spec,
                control: None,
            },
        })
        .collect())
}

impl Experiment for WorkflowFairness {
    const NAME: &'static str = "workflow-fairness";
    type Args = Args;
    type Part = Pair;
    type Summary = Summary;
    /// Its runs' outcomes hold numbers JSON cannot (a slowdown of a
    /// workflow with no measured work is not a number): local only.
    const SWEEPS: bool = false;

    fn default_out(a: &Args) -> PathBuf {
        PathBuf::from(format!("results/workflow-{}", a.tag()))
    }

    fn check(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<(), SimError> {
        check_args(a)?;
        with_systems(registry, &a.with).map(drop)
    }

    fn plan(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<WorkflowFairness, SimError> {
        let started = Instant::now();
        let names = check_args(a)?;
        let with = with_systems(registry, &a.with)?;
        let sources = load_sources(&names, a.exp.is_some())?;
        let inputs = input_labels(&names, a.exp.is_some());
        let grid = grid_of(a)?;
        if grid.resubmit_lifted_s.is_some() {
            if a.every == 0.0 {
                return Err(SimError::usage(format!(
                    "{} (the grid file sets engine.resubmit_lifted)",
                    RESUBMIT_NEEDS_PERIOD
                )));
            }
            if with
                .iter()
                .any(|s| matches!(s, System::With { control: Some(_), .. }))
            {
                return Err(SimError::usage(
                    "--with: a Control policy cannot run with lifts by cancel and resubmission (--resubmit-lifted or engine.resubmit_lifted): only the workflow-fairness controller's period bounds them",
                ));
            }
        }
        let protocol = Protocol {
            spacing: Time::from_millis((a.spacing * 1000.0).round() as i64),
            tau: a.tau,
            every: a.every,
            mirror: a.mirror,
            reraise: !a.skip_raised,
            concurrent: a.concurrent,
        };
        Ok(WorkflowFairness {
            args: a.clone(),
            names,
            sources,
            inputs,
            grid,
            protocol,
            with,
            started,
        })
    }

    fn instances(&self) -> usize {
        self.args.repetitions as usize
    }

    fn progress(&self) -> (String, &'static str) {
        (self.args.tag(), "repetitions")
    }

    fn run(&self, registry: &Registry, index: usize) -> Result<Pair, SimError> {
        repetition(
            registry,
            &self.grid,
            self.args.seed,
            &self.sources,
            &self.protocol,
            &self.with,
            index as u32,
        )
    }

    fn report(self, pairs: Vec<Pair>, _host: &dyn Host) -> Result<Outcome<Summary>, SimError> {
        let open = open_differences(&self.args, &self.grid);
        let WorkflowFairness {
            args: a,
            names,
            inputs,
            grid,
            started,
            ..
        } = self;
        let tag = a.tag();
        let mut notes = vec![
            format!(
                "Fairness: priority queue + workflow-fairness[tau={},every={}]; No-Fairness: workflow-fcfs (earlier workflows first). Same grid per repetition (seed), {} s between submissions.",
                a.tau, a.every, a.spacing
            ),
            format!("Grid: {}.", grid.describe()),
            if a.concurrent {
                format!(
                    "Concurrent: Fairness and No-Fairness ran at the same time on one grid, competing for its pilots (No-Fairness tasks on the same priority queue, unseen by the controller){}; each set's η_u and μ are measured over its own workflows.",
                    if a.mirror { ", each first lift of a Fairness task matched at once by lifting the oldest waiting No-Fairness task to the same priority" } else { "" }
                )
            } else if !a.mirror {
                "Raises not mirrored: Fairness tasks also overtake other users' tasks, No-Fairness ones do not.".into()
            } else {
                "As in the paper, each task the controller lifts in the Fairness run is matched by lifting the oldest waiting task of the No-Fairness run at that instant, so both race equally against other users.".into()
            },
            "σ: population standard deviations; μ: area under η_u (η·s) until the set's makespan; factor = No-Fairness / Fairness (> 1: Fairness better).".into(),
        ];
        let idle = pairs
            .iter()
            .filter(|p| p.fairness.mu == 0.0 && p.no_fairness.mu == 0.0)
            .count();
        if idle > 0 {
            notes.push(format!(
                "μ = 0 in both runs of {idle} of {} repetitions: no task of these workflows waited while another workflow had pending work (η_u stayed 0), so the controller had nothing to correct; a busier --grid (fewer pilots, more background load) makes them compete.",
                pairs.len()
            ));
        }
        notes.extend(differs_notes(a.exp, &pairs, &open));
        if let Some(bg) = background_note(&pairs) {
            notes.push(bg);
        }
        if !a.with.is_empty() {
            notes.push(format!(
                "Added (--with), each on the same grid per repetition, its raises not mirrored: {} (an order policy alone; a control policy on the priority queue); factor = No-Fairness / it.",
                a.with.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ));
        }

        // Each table twice: for people (factors as "1.20×") and as CSV
        // (plain numbers, units in the column names, empty cells for
        // undefined ones).
        let mut csv_cols: Vec<String> = [
            "rep",
            "sigma_slowdown_nf",
            "sigma_slowdown_f",
            "sigma_slowdown_factor",
            "sigma_makespan_nf_s",
            "sigma_makespan_f_s",
            "sigma_makespan_factor",
            "mu_nf_eta_s",
            "mu_f_eta_s",
            "mu_factor",
            "raises",
        ]
        .map(String::from)
        .to_vec();
        let mut cols: Vec<String> = [
            "rep",
            "σ_s NF",
            "σ_s F",
            "σ_s factor",
            "σ_m NF",
            "σ_m F",
            "σ_m factor",
            "μ NF",
            "μ F",
            "μ factor",
            "raises",
        ]
        .map(String::from)
        .to_vec();
        for w in &a.with {
            cols.extend([
                format!("σ_s {w}"),
                format!("σ_s factor {w}"),
                format!("μ {w}"),
                format!("μ factor {w}"),
            ]);
            csv_cols.extend([
                format!("sigma_slowdown {w}"),
                format!("sigma_slowdown_factor {w}"),
                format!("mu_eta_s {w}"),
                format!("mu_factor {w}"),
            ]);
        }
        let mut t_csv = Table::new(csv_cols);
        let mut t = Table::new(cols).title(format!(
            "Workflow fairness — {} ({}), {} repetitions",
            tag,
            names.join(", "),
            a.repetitions
        ));
        for p in &pairs {
            let (f, nf) = (&p.fairness, &p.no_fairness);
            let mut row = vec![
                p.repetition.to_string(),
                fixed(nf.sigma_s, 3),
                fixed(f.sigma_s, 3),
                ratio(nf.sigma_s, f.sigma_s),
                fixed(nf.sigma_m, 0),
                fixed(f.sigma_m, 0),
                ratio(nf.sigma_m, f.sigma_m),
                fixed(nf.mu, 1),
                fixed(f.mu, 1),
                ratio(nf.mu, f.mu),
                f.priority_changes.to_string(),
            ];
            let mut csv_row = vec![
                p.repetition.to_string(),
                num(Some(nf.sigma_s), 3),
                num(Some(f.sigma_s), 3),
                num(factor(nf.sigma_s, f.sigma_s), CSV_FACTOR),
                num(Some(nf.sigma_m), 0),
                num(Some(f.sigma_m), 0),
                num(factor(nf.sigma_m, f.sigma_m), CSV_FACTOR),
                num(Some(nf.mu), 1),
                num(Some(f.mu), 1),
                num(factor(nf.mu, f.mu), CSV_FACTOR),
                f.priority_changes.to_string(),
            ];
            for o in &p.with {
                row.extend([
                    fixed(o.sigma_s, 3),
                    ratio(nf.sigma_s, o.sigma_s),
                    fixed(o.mu, 1),
                    ratio(nf.mu, o.mu),
                ]);
                csv_row.extend([
                    num(Some(o.sigma_s), 3),
                    num(factor(nf.sigma_s, o.sigma_s), CSV_FACTOR),
                    num(Some(o.mu), 1),
                    num(factor(nf.mu, o.mu), CSV_FACTOR),
                ]);
            }
            t.row(row);
            t_csv.row(csv_row);
        }
        let paper = a.exp.and_then(super::paper).map(|p| PaperOut {
            sigma_s_up_to: p.sigma_s,
            mu_about: p.mu,
            sigma_m_up_to: p.sigma_m,
        });
        if let Some(p) = &paper {
            t.note(format!(
                "Paper (production grid, 4 repetitions): σ_s reduced up to {}×, μ by about {}×{}.",
                p.sigma_s_up_to,
                p.mu_about,
                p.sigma_m_up_to
                    .map_or(String::new(), |m| format!(", σ_m up to {m}×"))
            ));
        }
        if a.exp == Some(2) {
            t.note("Paper, SimuBloch in Exp. 2: makespan up to 2.9× shorter, mean wait 4.4×, slowdown \"up to 5.9×\" in its text, at most 5.10× in its Table 3 (run 1: 27854 s → 9531 s, slowdown 196.15 → 38.43).");
        }
        for n in &notes {
            t.note(n.clone());
        }

        let (w, w_csv) = per_workflow(&pairs, &inputs, &a.with);
        let table3 = (a.exp == Some(2)).then(|| simubloch_table(&pairs));
        let summary = Summary {
            experiment: "workflow-fairness",
            exp: a.exp,
            workflows: names.clone(),
            inputs,
            grid: grid.describe(),
            tau: a.tau,
            every_s: a.every,
            spacing_s: a.spacing,
            mirror: a.mirror,
            seed: a.seed,
            with: a.with.iter().map(ToString::to_string).collect(),
            paper,
            paper_table3: (a.exp == Some(2)).then(|| {
                PAPER_TABLE3
                    .iter()
                    .enumerate()
                    .map(|(i, r)| PaperRun {
                        run: i + 1,
                        makespan_nf_s: r[0],
                        mean_wait_nf_s: r[1],
                        slowdown_nf: r[2],
                        makespan_f_s: r[3],
                        mean_wait_f_s: r[4],
                        slowdown_f: r[5],
                    })
                    .collect()
            }),
            notes,
            wall_time_s: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            repetitions: pairs,
        };
        let plots: Vec<String> = summary
            .repetitions
            .iter()
            .map(|p| format!("eta-rep{}.svg", p.repetition))
            .collect();
        let mut planned: Vec<String> = ["summary.json", "sets.csv", "workflows.csv", TABLES_JSON]
            .map(String::from)
            .to_vec();
        if table3.is_some() {
            planned.push("table3.csv".into());
        }
        planned.extend(plots.iter().cloned());
        // Together (the summary renamed last): never one without the others.
        let mut files: Vec<(String, Body)> = vec![
            ("summary.json".into(), Body::Summary),
            ("sets.csv".into(), Body::Bytes(t_csv.to_csv().into_bytes())),
            ("workflows.csv".into(), Body::Bytes(w_csv.to_csv().into_bytes())),
        ];
        if let Some((_, t3_csv)) = &table3 {
            files.push(("table3.csv".into(), Body::Bytes(t3_csv.to_csv().into_bytes())));
        }
        // The tables printed, in their order.
        let mut printed = vec![t, w];
        if let Some((t3, _)) = table3 {
            printed.push(t3);
        }
        files.push((TABLES_JSON.into(), Body::Bytes(tables_json(&printed))));
        for (p, name) in summary.repetitions.iter().zip(&plots) {
            let mut series = vec![
                ("No-Fairness".to_string(), p.no_fairness.eta.clone()),
                ("Fairness".to_string(), p.fairness.eta.clone()),
            ];
            series.extend(
                a.with
                    .iter()
                    .zip(&p.with)
                    .map(|(w, o)| (w.to_string(), o.eta.clone())),
            );
            let svg = steps(
                &format!("η_u over time — {tag}, repetition {}", p.repetition),
                "time (s)",
                "η_u",
                &series,
            )
            .map_err(|e| SimError::Plot(format!("η_u: {e}")))?;
            files.push((name.clone(), Body::Bytes(svg.into_bytes())));
        }
        let text = printed.iter().map(|t| format!("{}\n", t.to_text())).collect();
        Ok(Outcome {
            summary,
            text,
            tables: printed,
            files,
            planned,
        })
    }

    /// The plots as one item: there is one per repetition.
    fn listed(written: &[String]) -> Vec<String> {
        let plot = |n: &String| n.starts_with("eta-rep") && n.ends_with(".svg");
        let n = written.iter().filter(|n| plot(n)).count();
        let mut shown: Vec<String> = written.iter().filter(|n| !plot(n)).cloned().collect();
        if n > 0 {
            shown.push(format!("{n} eta-rep*.svg"));
        }
        shown
    }
}

/// The per-workflow table, for people and as CSV.
fn per_workflow(pairs: &[Pair], inputs: &[String], with: &[PolicySpec]) -> (Table, Table) {
    let mut csv_cols: Vec<String> = [
        "rep",
        "input",
        "workflow",
        "gave_up_nf",
        "gave_up_f",
        "makespan_nf_s",
        "makespan_f_s",
        "slowdown_nf",
        "slowdown_f",
        "mean_wait_nf_s",
        "mean_wait_f_s",
        "m_own_nf_s",
        "m_own_f_s",
    ]
    .map(String::from)
    .to_vec();
    let mut cols: Vec<String> = [
        "rep",
        "input",
        "workflow",
        "makespan NF s",
        "makespan F s",
        "slowdown NF",
        "slowdown F",
        "mean wait NF s",
        "mean wait F s",
        "M_own NF s",
        "M_own F s",
    ]
    .map(String::from)
    .to_vec();
    for w in with {
        cols.extend([format!("makespan {w} s"), format!("slowdown {w}")]);
        csv_cols.extend([format!("makespan_s {w}"), format!("slowdown {w}")]);
    }
    let mut w_csv = Table::new(csv_cols);
    let mut w = Table::new(cols).title("Per workflow");
    for p in pairs {
        for (k, ((nf, f), input)) in p
            .no_fairness
            .workflows
            .iter()
            .zip(&p.fairness.workflows)
            .zip(inputs)
            .enumerate()
        {
            let mut row = vec![
                p.repetition.to_string(),
                input.clone(),
                format!(
                    "{}{}",
                    f.name,
                    if f.failed || nf.failed { " (gave up)" } else { "" }
                ),
                fixed(nf.makespan_s, 0),
                fixed(f.makespan_s, 0),
                fixed(nf.slowdown, 2),
                fixed(f.slowdown, 2),
                fixed(nf.mean_wait_s, 0),
                fixed(f.mean_wait_s, 0),
                fixed(nf.m_own_s, 0),
                fixed(f.m_own_s, 0),
            ];
            let mut csv_row = vec![
                p.repetition.to_string(),
                input.clone(),
                f.name.clone(),
                nf.failed.to_string(),
                f.failed.to_string(),
                num(Some(nf.makespan_s), 0),
                num(Some(f.makespan_s), 0),
                num(Some(nf.slowdown), 2),
                num(Some(f.slowdown), 2),
                num(Some(nf.mean_wait_s), 0),
                num(Some(f.mean_wait_s), 0),
                num(Some(nf.m_own_s), 0),
                num(Some(f.m_own_s), 0),
            ];
            for o in &p.with {
                let x = o.workflows.get(k);
                row.extend([
                    x.map_or_else(|| "—".into(), |x| fixed(x.makespan_s, 0)),
                    x.map_or_else(|| "—".into(), |x| fixed(x.slowdown, 2)),
                ]);
                csv_row.extend([num(x.map(|x| x.makespan_s), 0), num(x.map(|x| x.slowdown), 2)]);
            }
            w.row(row);
            w_csv.row(csv_row);
        }
    }
    (w, w_csv)
}

fn simubloch(r: &RunOutcome) -> Option<&super::world::WorkflowOutcome> {
    r.workflows.iter().find(|w| w.name == "SimuBloch")
}

/// The paper's Table 3 (Experiment 2, SimuBloch): makespan m, mean wait
/// w̄ and slowdown s per run, No-Fairness then Fairness.
const PAPER_TABLE3: [[f64; 6]; 4] = [
    [27854.0, 18983.0, 196.15, 9531.0, 4313.0, 38.43],
    [27784.0, 19105.0, 210.48, 13761.0, 10538.0, 94.25],
    [14432.0, 13579.0, 182.68, 9902.0, 8145.0, 122.25],
    [51664.0, 47591.0, 445.38, 38630.0, 27795.0, 165.79],
];

/// Table 3 of the paper beside ours: SimuBloch's makespan, mean wait and
/// slowdown under both systems and their factors (No-Fairness /
/// Fairness), per repetition; the paper's run k on the row of our
/// repetition k (the runs are not paired otherwise). For people, then as
/// CSV (plain numbers).
fn simubloch_table(pairs: &[Pair]) -> (Table, Table) {
    let mut csv = Table::new([
        "rep",
        "makespan_nf_s",
        "makespan_f_s",
        "makespan_factor",
        "mean_wait_nf_s",
        "mean_wait_f_s",
        "mean_wait_factor",
        "slowdown_nf",
        "slowdown_f",
        "slowdown_factor",
        "paper_makespan_factor",
        "paper_mean_wait_factor",
        "paper_slowdown_factor",
    ]);
    let mut t = Table::new([
        "rep",
        "m NF s",
        "m F s",
        "m factor",
        "w̄ NF s",
        "w̄ F s",
        "w̄ factor",
        "s NF",
        "s F",
        "s factor",
        "paper m / w̄ / s factors",
    ])
    .title("SimuBloch in Experiment 2 (paper Table 3)");
    for p in pairs {
        let (Some(nf), Some(f)) = (simubloch(&p.no_fairness), simubloch(&p.fairness)) else {
            continue;
        };
        let row = PAPER_TABLE3.get(p.repetition as usize - 1);
        let paper = row.map_or("—".to_string(), |r| {
            format!(
                "{} / {} / {}",
                ratio(r[0], r[3]),
                ratio(r[1], r[4]),
                ratio(r[2], r[5])
            )
        });
        t.row([
            p.repetition.to_string(),
            fixed(nf.makespan_s, 0),
            fixed(f.makespan_s, 0),
            ratio(nf.makespan_s, f.makespan_s),
            fixed(nf.mean_wait_s, 0),
            fixed(f.mean_wait_s, 0),
            ratio(nf.mean_wait_s, f.mean_wait_s),
            fixed(nf.slowdown, 2),
            fixed(f.slowdown, 2),
            ratio(nf.slowdown, f.slowdown),
            paper,
        ]);
        let paper = |i: usize| num(row.and_then(|r| factor(r[i], r[i + 3])), CSV_FACTOR);
        csv.row([
            p.repetition.to_string(),
            num(Some(nf.makespan_s), 0),
            num(Some(f.makespan_s), 0),
            num(factor(nf.makespan_s, f.makespan_s), CSV_FACTOR),
            num(Some(nf.mean_wait_s), 0),
            num(Some(f.mean_wait_s), 0),
            num(factor(nf.mean_wait_s, f.mean_wait_s), CSV_FACTOR),
            num(Some(nf.slowdown), 2),
            num(Some(f.slowdown), 2),
            num(factor(nf.slowdown, f.slowdown), CSV_FACTOR),
            paper(0),
            paper(1),
            paper(2),
        ]);
    }
    t.note("Paper, production grid: SimuBloch waited 3.8–13 h under No-Fairness (its tasks queued behind all 300 GATE tasks); ours waits about half an hour on the default grid.");
    t.note("Factors > 1: Fairness better. See docs/workflow-fairness.md, \"SimuBloch in Experiment 2\", for why the slowdown factor stays near or below 1 here.");
    (t, csv)
}
