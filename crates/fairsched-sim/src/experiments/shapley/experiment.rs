//! `experiment shapley` as an [`Experiment`]: the paper's Table 1 or 2
//! (Δψ/p_tot of each algorithm against REF, per trace) or its Figure 1
//! (against the number of organizations), with any registered order
//! policy added beside the paper's algorithms (`with`).

use super::{
    CONGESTED_ATTEMPTS, Config, LoadedTrace, Row, SHARED_LOGS, SharedLog, Stat, UNAVAILABLE, WINDOWS,
    WindowStat, run_window, stats, window_stats,
};
use crate::experiment::{Body, Experiment, Host, Outcome};
use crate::experiments::with_specs;
use crate::platform_file::PlatformFile;
use crate::{Ownership, SimError, TraceInput};
use fairsched_core::{Kind, PolicySpec, Registry};
use fairsched_report::plot::{BarChart, Series, bar_chart, lines};
use fairsched_report::table::{TABLES_JSON, push_csv_line, tables_json};
use fairsched_report::{Table, fixed};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The arguments of the Shapley experiment.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// 1 (windows of 5·10⁴ s) or 2 (5·10⁵ s).
    pub table: u8,
    /// Figure 1 instead: 2…10 organizations on LPC-EGEE.
    pub figure: bool,
    /// Random windows per trace.
    pub instances: u32,
    /// Organizations (default 5).
    pub orgs: Option<u32>,
    /// How processors are split (default Zipf, exponent 1).
    pub ownership: Option<Ownership>,
    /// Shared logs by name (none and no `trace_files`: all of them).
    pub traces: Vec<String>,
    /// Any log, with its processor count.
    pub trace_files: Vec<(PathBuf, u32)>,
    /// Where the shared logs are.
    pub traces_dir: PathBuf,
    /// Organizations, processors and users from a platform file.
    pub platform: Option<PathBuf>,
    pub seed: u64,
    /// Order policies run beside the paper's algorithms.
    pub with: Vec<PolicySpec>,
    /// Count only windows where REF's queue is non-empty for at least
    /// this fraction of the window, 0 < F ≤ 1 (`None`: every window).
    #[serde(default)]
    pub congested: Option<f64>,
    /// Replay one window length of the log before each window, scheduled
    /// by the same algorithm, instead of an empty platform at its start.
    #[serde(default)]
    pub warm_start: bool,
}

impl Default for Args {
    /// Table 1 as the paper ran it: 100 windows of every shared log.
    fn default() -> Args {
        Args {
            table: 1,
            figure: false,
            instances: 100,
            orgs: None,
            ownership: None,
            traces: Vec::new(),
            trace_files: Vec::new(),
            traces_dir: super::default_traces_dir(),
            platform: None,
            seed: 0,
            with: Vec::new(),
            congested: None,
            warm_start: false,
        }
    }
}

/// The experiment, planned: the logs loaded, one configuration per
/// organization count; instances are (organization count, trace, window)
/// in the order of the rows of `shapley.csv`.
pub struct Shapley {
    args: Args,
    traces: Vec<LoadedTrace>,
    cfgs: Vec<Config>,
    org_counts: Vec<u32>,
    base: Config,
}

/// Where a log of the experiment comes from.
enum Source<'a> {
    /// A shared log, on its stated processors or on the count given
    /// after its name (`RICC:1024`).
    Shared(&'static SharedLog, Option<u32>),
    File {
        name: String,
        path: &'a PathBuf,
        procs: u32,
    },
}

impl Source<'_> {
    fn name(&self) -> String {
        match self {
            Source::Shared(l, _) => l.name.to_string(),
            Source::File { name, .. } => name.clone(),
        }
    }
}

/// The logs to run, checked (before any is read).
fn sources(a: &Args) -> Result<Vec<Source<'_>>, SimError> {
    let names: Vec<String> = if a.figure {
        if !a.traces.is_empty() || !a.trace_files.is_empty() {
            return Err(SimError::usage(
                "--figure 1 runs on LPC-EGEE (as in the paper): leave out --traces and --trace",
            ));
        }
        vec!["LPC-EGEE".into()]
    } else if a.traces.is_empty() && a.trace_files.is_empty() {
        SHARED_LOGS.iter().map(|l| l.name.to_string()).collect()
    } else {
        a.traces.clone()
    };
    let mut wanted = Vec::new();
    for given in &names {
        let (n, procs) = match given.split_once(':') {
            Some((n, p)) => match p.trim().parse::<u32>() {
                Ok(p) if p > 0 && p <= crate::MAX_PROCS => (n.trim(), Some(p)),
                _ => {
                    return Err(SimError::usage(format!(
                        "--traces {given}: after the log's name, PROCS must be a processor count between 1 and {}",
                        crate::MAX_PROCS
                    )));
                }
            },
            None => (given.as_str(), None),
        };
        let Some(log) = SharedLog::named(n) else {
            let known: Vec<&str> = SHARED_LOGS.iter().map(|l| l.name).collect();
            let hint = if UNAVAILABLE.iter().any(|u| u.eq_ignore_ascii_case(n)) {
                " (the paper's log, not available here)"
            } else {
                ""
            };
            return Err(SimError::usage(format!(
                "--traces: unknown log {n:?}{hint}; known: {}",
                known.join(", ")
            )));
        };
        wanted.push(Source::Shared(log, procs));
    }
    for (file, procs) in &a.trace_files {
        if *procs == 0 || *procs > crate::MAX_PROCS {
            return Err(SimError::usage(format!(
                "--trace {}:{procs}: PROCS must be between 1 and {}",
                file.display(),
                crate::MAX_PROCS
            )));
        }
        let name = file
            .file_name()
            .map(|f| {
                f.to_string_lossy()
                    .trim_end_matches(".gz")
                    .trim_end_matches(".swf")
                    .to_string()
            })
            .unwrap_or_else(|| file.display().to_string());
        wanted.push(Source::File {
            name,
            path: file,
            procs: *procs,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in &wanted {
        if !seen.insert(s.name()) {
            return Err(SimError::usage(format!(
                "--traces/--trace: the log {:?} is given twice (names must differ: a log's name seeds its windows)",
                s.name()
            )));
        }
    }
    Ok(wanted)
}

/// The run's configuration for `a` (the platform file read).
fn config(a: &Args, registry: &Registry) -> Result<Config, SimError> {
    if !(1..=2).contains(&a.table) {
        return Err(SimError::usage(format!(
            "--table {}: the paper has Tables 1 and 2",
            a.table
        )));
    }
    let window = WINDOWS[(a.table - 1) as usize];
    let mut cfg = Config::paper(window);
    cfg.instances = a.instances;
    cfg.seed = a.seed;
    cfg.congested = a.congested;
    cfg.warm_start = a.warm_start;
    if let Some(p) = &a.platform {
        if a.orgs.is_some() || a.ownership.is_some() {
            return Err(SimError::usage(
                "--platform gives the organizations and their processors: leave out --orgs and --ownership",
            ));
        }
        cfg.platform = Some(PlatformFile::load(p)?);
    }
    if let Some(k) = a.orgs {
        cfg.orgs = k;
    }
    if let Some(o) = a.ownership {
        cfg.ownership = o;
    }
    for spec in with_specs(registry, Kind::Order, &a.with)? {
        cfg.algorithms.push((spec.to_string(), spec));
    }
    cfg.registry = registry.clone();
    cfg.check().map_err(|e| SimError::usage(e.to_string()))?;
    Ok(cfg)
}

fn cell(mean: f64, std: f64) -> String {
    if mean.is_nan() {
        return "—".into();
    }
    let d = if mean.abs() >= 100.0 {
        0
    } else if mean.abs() >= 1.0 {
        1
    } else {
        3
    };
    format!("{} ({})", fixed(mean, d), fixed(std, d))
}

#[derive(Serialize)]
pub struct TraceMeta {
    pub name: String,
    pub path: String,
    pub procs: u32,
    pub jobs: usize,
    pub filters: fairsched_trace::FilterCounts,
}

/// `summary.json`.
#[derive(Serialize)]
pub struct Summary {
    pub experiment: &'static str,
    pub table: Option<u8>,
    pub figure: Option<u8>,
    pub window_s: i64,
    pub instances: u32,
    pub orgs: Vec<u32>,
    pub ownership: String,
    pub platform: Option<String>,
    pub seed: u64,
    pub reference: String,
    pub traces: Vec<TraceMeta>,
    pub unavailable: &'static [&'static str],
    /// The readings (docs/shapley.md): only windows whose REF queue is
    /// non-empty for this fraction of them, with at most
    /// `congested_attempts` candidates per instance; a warm-up replayed
    /// before each window.
    pub congested: Option<f64>,
    pub congested_attempts: Option<u32>,
    pub warm_start: bool,
    /// Per trace: candidates drawn and rejected, REF's queue fraction,
    /// the platform at the windows' start.
    pub windows: Vec<WindowStat>,
    /// The policies added to the paper's algorithms (`with`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    pub stats: Vec<Stat>,
    pub notes: Vec<String>,
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::new();
    let header = [
        "trace",
        "orgs",
        "instance",
        "window_start",
        "jobs",
        "tasks",
        "algorithm",
        "policy",
        "delta_psi_s2",
        "p_tot_s",
        "ratio_s",
        "psi_s2",
        "psi_ref_s2",
        "ref_queue_fraction",
        "attempt",
        "candidates",
        "counted",
        "warmup_s",
        "warmup_tasks",
        "ref_running_at_start",
        "ref_queued_at_start",
    ];
    push_csv_line(&mut out, header.iter().copied());
    let join = |v: &[f64]| v.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(";");
    for r in rows {
        let cells = [
            r.trace.clone(),
            r.orgs.to_string(),
            r.instance.to_string(),
            r.window_start.to_string(),
            r.jobs.to_string(),
            r.tasks.to_string(),
            r.algorithm.clone(),
            r.policy.clone(),
            format!("{}", r.delta_psi),
            format!("{}", r.p_tot),
            r.ratio.map(|x| format!("{x}")).unwrap_or_default(),
            join(&r.psi),
            join(&r.psi_ref),
            format!("{}", r.queue_fraction),
            r.attempt.to_string(),
            r.candidates.to_string(),
            r.counted.to_string(),
            r.warmup_s.to_string(),
            r.warmup_tasks.to_string(),
            r.running_at_start.to_string(),
            r.queued_at_start.to_string(),
        ];
        push_csv_line(&mut out, cells.iter().map(String::as_str));
    }
    out
}

/// Rank (1 = closest to REF) of each value, by mean.
fn ranks(means: &[f64]) -> Vec<usize> {
    means
        .iter()
        .map(|&m| 1 + means.iter().filter(|&&o| o < m).count())
        .collect()
}

impl Experiment for Shapley {
    const NAME: &'static str = "shapley";
    type Args = Args;
    type Part = Vec<Row>;
    type Summary = Summary;

    fn default_out(a: &Args) -> PathBuf {
        PathBuf::from(if a.figure {
            "results/shapley-figure1".to_string()
        } else {
            format!("results/shapley-table{}", a.table)
        })
    }

    fn check(a: &Args, registry: &Registry, host: &dyn Host) -> Result<(), SimError> {
        let base = config(a, registry)?;
        if a.figure && (a.platform.is_some() || a.orgs.is_some()) {
            return Err(SimError::usage(
                "--figure 1 sweeps 2…10 organizations: leave out --orgs and --platform",
            ));
        }
        if !a.figure && base.orgs() == 1 {
            host.note(
                "warning: one organization: every algorithm gives it the whole platform, so its \
                 utility equals its Shapley value and every unfairness in the table is 0 \
                 (give --orgs 2 or more, or a --platform with several organizations)",
            );
        }
        sources(a).map(drop)
    }

    fn plan(a: &Args, registry: &Registry, _host: &dyn Host) -> Result<Shapley, SimError> {
        let base = config(a, registry)?;
        let traces: Vec<LoadedTrace> = sources(a)?
            .par_iter()
            .map(|s| match s {
                Source::Shared(log, procs) => log.load(&a.traces_dir, *procs),
                Source::File { name, path, procs } => {
                    LoadedTrace::load(name, &TraceInput::Path((*path).clone()), *procs)
                }
            })
            .collect::<Result<_, _>>()?;
        let org_counts: Vec<u32> = if a.figure {
            (2..=10).collect()
        } else {
            vec![base.orgs()]
        };
        let mut cfgs = Vec::new();
        for &k in &org_counts {
            let mut cfg = base.clone();
            if a.figure {
                cfg.orgs = k;
                cfg.check().map_err(|e| SimError::usage(e.to_string()))?;
            }
            cfgs.push(cfg);
        }
        // What `run` checks, before any instance runs.
        for cfg in &cfgs {
            cfg.check()?;
            if cfg.platform.is_none() {
                for t in &traces {
                    if t.procs < cfg.orgs {
                        return Err(SimError::Config(format!(
                            "{}: {} processors cannot give each of {} organizations one (lower --orgs)",
                            t.name, t.procs, cfg.orgs
                        )));
                    }
                }
            }
        }
        Ok(Shapley {
            args: a.clone(),
            traces,
            cfgs,
            org_counts,
            base,
        })
    }

    fn instances(&self) -> usize {
        self.cfgs.len() * self.traces.len() * self.args.instances as usize
    }

    fn progress(&self) -> (String, &'static str) {
        let prefix = if self.args.figure {
            "figure 1".to_string()
        } else {
            format!("table {}", self.args.table)
        };
        (prefix, "instances")
    }

    fn run(&self, _registry: &Registry, index: usize) -> Result<Vec<Row>, SimError> {
        let n = self.args.instances as usize;
        let per_cfg = self.traces.len() * n;
        let cfg = &self.cfgs[index / per_cfg];
        let t = index % per_cfg / n;
        let i = (index % n) as u32;
        run_window(&self.traces[t], cfg, i)
    }

    fn report(self, parts: Vec<Vec<Row>>, _host: &dyn Host) -> Result<Outcome<Summary>, SimError> {
        let Shapley {
            args: a,
            traces,
            org_counts,
            base,
            ..
        } = self;
        let figure = a.figure;
        let t = (a.table - 1) as usize;
        let window = WINDOWS[t];
        let rows: Vec<Row> = parts.into_iter().flatten().collect();
        let stats = stats(&rows, (!figure).then_some(t));
        let mut notes = vec![format!(
            "Δψ/p_tot in seconds: the average unjustified delay (or speed-up) of a unit of work against REF; mean (sample std) over {} random windows of {} s per trace; \"Δψ=0\": windows where the algorithm gave every organization exactly REF's utility (often: no queue formed).",
            a.instances, window
        )];
        // Said when the shared logs run (not for logs of the user's only).
        let shared_logs = a.trace_files.is_empty() || !a.traces.is_empty();
        if !figure && shared_logs {
            notes.push(format!(
                "The paper's {} logs are not available here (not among the shared logs, ../shared/data/traces/README.md): not run. \
                 What that may change: they are half of the paper's evidence. PIK-IPLEX gave its smallest values (RAND 0.014 s, DIRECTCONTR 0.02 s in Table 1) and SHARCNET-Whale its only short-window cell where UTFAIRSHARE differs from FAIRSHARE (38 against 13) and CURRFAIRSHARE ties ROUNDROBIN (145); \
                 its remark that fairness depends on the workload (RICC against PIK-IPLEX) and its orderings on those two logs cannot be checked here, and our seven other logs are not the paper's.",
                UNAVAILABLE.join(" and ")
            ));
        }
        let wstats = window_stats(&rows);
        if let Some(f) = a.congested {
            notes.push(format!(
                "Congested windows (--congested {f}): a window counts only if REF's schedule had a job released and waiting for at least {:.0}% of it; each instance drew candidate windows (candidate a of instance i from a seed of the seed, the log, i and a) until one counted, at most {CONGESTED_ATTEMPTS}.",
                f * 100.0
            ));
        }
        for w in &wstats {
            let orgs = if figure {
                format!(", {} organizations", w.orgs)
            } else {
                String::new()
            };
            if a.congested.is_some() {
                let mut n = format!(
                    "{}{orgs}: {} candidate windows for {} instances, {} rejected (REF's queue non-empty for less than the fraction asked)",
                    w.trace, w.candidates, w.instances, w.rejected
                );
                if w.uncounted > 0 {
                    n.push_str(&format!(
                        "; {} instance(s) found no congested window in {CONGESTED_ATTEMPTS} candidates: their most congested candidate ran, left out of the means (counted = false in shapley.csv)",
                        w.uncounted
                    ));
                }
                n.push_str(&format!(
                    "; REF's queue fraction over the counted windows: mean {:.2}, min {:.2}.",
                    w.queue_fraction_mean, w.queue_fraction_min
                ));
                notes.push(n);
            } else {
                notes.push(format!(
                    "{}{orgs}: REF's queue was non-empty for {:.0}% of a window on average; {} of {} windows had no queue at all.",
                    w.trace,
                    w.queue_fraction_mean * 100.0,
                    w.no_queue,
                    w.instances
                ));
            }
        }
        if a.warm_start {
            notes.push(format!(
                "Warm start (--warm-start): before each window the {window} s of the log before it (from the log's first submit if later) were replayed, scheduled by the same algorithm; Δψ and p_tot count only the jobs submitted in the window."
            ));
            for w in &wstats {
                notes.push(format!(
                    "{}: at the windows' start REF's schedule had on average {:.1} warm-up tasks running and {:.1} waiting.",
                    w.trace, w.running_at_start_mean, w.queued_at_start_mean
                ));
            }
        }
        if stats.iter().any(|s| s.paper.is_some()) {
            notes.push("Exact numbers differ from the paper's (its seeds, Zipf exponent and log versions are unknown; see docs/shapley.md): compare the orderings (rank columns).".into());
        }
        for t in &traces {
            if let Some(l) = SHARED_LOGS
                .iter()
                .find(|l| l.name == t.name && l.procs != t.procs)
            {
                notes.push(format!(
                    "{}: run on {} processors (--traces {}:{}), not the {} the paper states; the same windows.",
                    t.name, t.procs, t.name, t.procs, l.procs
                ));
            }
            if t.span() < window {
                notes.push(format!(
                    "{}: the log's submits span {} s, less than the window: every instance uses the whole log (only the organizations' draw differs).",
                    t.name,
                    t.span()
                ));
            }
        }
        if let Some(p) = &base.platform {
            notes.push(format!(
                "Organizations, processors ({} in all) and users from {}: the logs' own processor counts are not used.",
                p.total_procs(),
                p.path.display()
            ));
        }
        if !a.with.is_empty() {
            notes.push(format!(
                "Added to the paper's algorithms (--with), under the same protocol: {}; \"rank paper\" ranks the paper's algorithms only.",
                a.with.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ));
        }
        let empty: u32 = stats
            .iter()
            .filter(|s| s.algorithm == "REF")
            .map(|s| s.empty)
            .sum();
        if empty > 0 {
            notes.push(format!(
                "{empty} window(s) had no work (p_tot = 0) and are left out of the means."
            ));
        }
        let readings = {
            let mut r = String::new();
            if let Some(f) = a.congested {
                r.push_str(&format!(", congested ≥ {f}"));
            }
            if a.warm_start {
                r.push_str(", warm start");
            }
            r
        };

        // The table printed on standard output (and kept in tables.json).
        let title = if figure {
            format!("Figure 1 — Δψ/p_tot vs organizations on LPC-EGEE, windows of {window} s{readings}")
        } else {
            format!(
                "Table {} — Δψ/p_tot (s), windows of {window} s, {} organization{}, ownership {}{readings}",
                a.table,
                base.orgs(),
                if base.orgs() == 1 { "" } else { "s" },
                if base.platform.is_some() {
                    "from --platform".to_string()
                } else {
                    base.ownership.to_string()
                }
            )
        };
        let mut table = Table::new([
            "trace",
            "orgs",
            "algorithm",
            "ours mean (std)",
            "paper mean (std)",
            "rank ours",
            "rank paper",
            "n",
            "Δψ=0",
        ])
        .title(title);
        for tr in &traces {
            for &k in &org_counts {
                let sel: Vec<&Stat> = stats
                    .iter()
                    .filter(|s| s.trace == tr.name && s.orgs == k && s.algorithm != "REF")
                    .collect();
                let ours = ranks(&sel.iter().map(|s| s.mean).collect::<Vec<_>>());
                // The paper's ranks, among the algorithms it has (every
                // one of its own, or none on a log it did not run).
                let with_paper: Vec<&&Stat> = sel.iter().filter(|s| s.paper.is_some()).collect();
                let theirs =
                    (!with_paper.is_empty() && with_paper.len() + a.with.len() == sel.len()).then(|| {
                        ranks(
                            &with_paper
                                .iter()
                                .map(|s| s.paper.map_or(0.0, |p| p.0))
                                .collect::<Vec<_>>(),
                        )
                    });
                let mut paper_i = 0;
                for (i, s) in sel.iter().enumerate() {
                    let their = match (&theirs, s.paper) {
                        (Some(r), Some(_)) => {
                            paper_i += 1;
                            r[paper_i - 1].to_string()
                        }
                        _ => "—".into(),
                    };
                    table.row([
                        s.trace.clone(),
                        s.orgs.to_string(),
                        s.algorithm.clone(),
                        cell(s.mean, s.std),
                        s.paper.map(|p| cell(p.0, p.1)).unwrap_or_else(|| "—".into()),
                        ours[i].to_string(),
                        their,
                        s.instances.to_string(),
                        s.zero.to_string(),
                    ]);
                }
            }
        }
        for n in &notes {
            table.note(n.clone());
        }
        let labels: Vec<String> = base.algorithms.iter().map(|a| a.0.clone()).collect();
        let svg =
            chart(&stats, &traces, &labels, &org_counts, figure, a.table, window).map_err(SimError::Plot)?;
        let summary = Summary {
            experiment: "shapley",
            table: (!figure).then_some(a.table),
            figure: figure.then_some(1),
            window_s: window,
            instances: a.instances,
            orgs: org_counts.clone(),
            ownership: match &base.platform {
                Some(p) => format!("platform file {}", p.path.display()),
                None => base.ownership.to_string(),
            },
            platform: a.platform.as_ref().map(|p| p.display().to_string()),
            seed: a.seed,
            reference: base.reference.to_string(),
            traces: traces
                .iter()
                .map(|t| TraceMeta {
                    name: t.name.clone(),
                    path: t.path.clone(),
                    procs: base.platform.as_ref().map_or(t.procs, |p| p.total_procs()),
                    jobs: t.jobs.len(),
                    filters: t.filters,
                })
                .collect(),
            unavailable: &UNAVAILABLE,
            congested: a.congested,
            congested_attempts: a.congested.map(|_| CONGESTED_ATTEMPTS),
            warm_start: a.warm_start,
            windows: wstats,
            with: a.with.iter().map(ToString::to_string).collect(),
            stats,
            notes,
        };
        let files = vec![
            ("summary.json".to_string(), Body::Summary),
            ("shapley.csv".to_string(), Body::Bytes(csv(&rows).into_bytes())),
            ("shapley.svg".to_string(), Body::Bytes(svg.into_bytes())),
            (TABLES_JSON.to_string(), Body::Bytes(tables_json([&table]))),
        ];
        Ok(Outcome {
            summary,
            text: format!("{}\n", table.to_text()),
            tables: vec![table],
            files,
            planned: ["summary.json", "shapley.csv", "shapley.svg", TABLES_JSON]
                .map(String::from)
                .to_vec(),
        })
    }
}

fn chart(
    stats: &[Stat],
    traces: &[LoadedTrace],
    algos: &[String],
    orgs: &[u32],
    figure: bool,
    table: u8,
    window: i64,
) -> Result<String, String> {
    if figure {
        let xs: Vec<f64> = orgs.iter().map(|&k| k as f64).collect();
        let series: Vec<Series> = algos
            .iter()
            .map(|al| Series {
                name: al.to_string(),
                values: orgs
                    .iter()
                    .map(|&k| {
                        stats
                            .iter()
                            .find(|s| s.orgs == k && &s.algorithm == al)
                            .map_or(f64::NAN, |s| s.mean)
                    })
                    .collect(),
            })
            .collect();
        lines(
            &format!("Δψ/p_tot vs organizations, LPC-EGEE, windows of {window} s"),
            "organizations",
            "Δψ/p_tot (s)",
            &xs,
            &series,
        )
    } else {
        let groups: Vec<String> = traces.iter().map(|t| t.name.clone()).collect();
        let series: Vec<Series> = algos
            .iter()
            .map(|al| Series {
                name: al.to_string(),
                values: traces
                    .iter()
                    .map(|t| {
                        stats
                            .iter()
                            .find(|s| s.trace == t.name && &s.algorithm == al)
                            .map_or(f64::NAN, |s| s.mean)
                    })
                    .collect(),
            })
            .collect();
        bar_chart(&BarChart {
            title: &format!("Table {table}: Δψ/p_tot by algorithm (log scale), windows of {window} s"),
            x_label: "log",
            y_label: "Δψ/p_tot (s), mean over windows",
            groups: &groups,
            series: &series,
            log_y: true,
            paired: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_count_the_strictly_better() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 0.5]), vec![3, 2, 3, 1]);
    }

    #[test]
    fn the_arguments_read_back_from_json() {
        let a = Args {
            with: vec!["fcfs".parse().unwrap()],
            ownership: Some(Ownership::Zipf(1.5)),
            trace_files: vec![("x.swf".into(), 12)],
            ..Args::default()
        };
        let back: Args = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(format!("{back:?}"), format!("{a:?}"));
        let a = Args {
            congested: Some(0.5),
            warm_start: true,
            ..Args::default()
        };
        let back: Args = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(format!("{back:?}"), format!("{a:?}"));
    }

    #[test]
    fn arguments_written_before_the_readings_still_read() {
        let mut v = serde_json::to_value(Args::default()).unwrap();
        let o = v.as_object_mut().unwrap();
        assert!(o.remove("congested").is_some() && o.remove("warm_start").is_some());
        let back: Args = serde_json::from_value(v).unwrap();
        assert_eq!((back.congested, back.warm_start), (None, false));
    }

    #[test]
    fn a_congested_fraction_outside_0_1_names_the_flag() {
        for f in [0.0, -0.5, 1.5, f64::NAN] {
            let a = Args {
                congested: Some(f),
                ..Args::default()
            };
            let e = config(&a, &Registry::builtin()).unwrap_err();
            assert!(matches!(e, SimError::Usage(_)), "{e:?}");
            assert!(e.to_string().contains("--congested"), "{e}");
        }
        let a = Args {
            congested: Some(1.0),
            ..Args::default()
        };
        assert!(config(&a, &Registry::builtin()).is_ok());
    }
}
