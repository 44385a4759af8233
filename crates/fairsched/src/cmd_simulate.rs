//! `fairsched simulate`: replay a log under one or more policies.

use crate::output::{commit, partial, slug, write_atomic};
use crate::progress::Bars;
use anyhow::{Context, bail};
use fairsched_core::metrics::Metrics;
use fairsched_core::{CoreStats, Fanout, PolicySpec, registry};
use fairsched_report::{Table, TasksCsv, aggregates, fixed};
use fairsched_sim::{Ownership, PlatformInfo, RunConfig, TraceInput};
use fairsched_trace::{FilterCounts, FilterOptions, StreamOptions, TraceInfo, TraceScan};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The bundled demo log (see data/PROVENANCE.md).
const DEMO_NAME: &str = "KTH-SP2-1996-2.1-cln.swf.gz (bundled)";
const DEMO_LOG: &[u8] = include_bytes!("../../../data/KTH-SP2-1996-2.1-cln.swf.gz");

/// Policies compared when none is given.
const DEMO_POLICIES: &[&str] = &["fcfs", "easy", "fifo", "round-robin", "fair-share"];
/// Organizations in the demo when `--orgs` is not given, so that the
/// organization-level policies have something to share.
const DEMO_ORGS: u32 = 5;

#[derive(clap::Args)]
pub struct Args {
    /// SWF log (plain or gzip). Default: the bundled KTH-SP2 log.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Order policy, e.g. fcfs or 'age-boost[after=600]'. Repeat to compare
    /// several (they run in parallel). Default: a comparison of baselines.
    #[arg(long = "policy", value_name = "SPEC")]
    policies: Vec<PolicySpec>,
    /// Allocate policy (which machine gets a task). Default: single-pool
    /// with one machine, least-loaded with several.
    #[arg(long, value_name = "SPEC")]
    allocate: Option<PolicySpec>,
    /// Control policy (priority changes), e.g. 'age-boost[after=10m]'.
    #[arg(long, value_name = "SPEC")]
    control: Option<PolicySpec>,
    /// Total processors (default: the header's MaxProcs, else the widest job).
    #[arg(long)]
    procs: Option<u32>,
    /// Machine sizes, each machine with its own queue, e.g. 2,4,8.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    machines: Option<Vec<u32>>,
    /// Organizations; users are mapped to them uniformly at random (seeded).
    #[arg(long)]
    orgs: Option<u32>,
    /// How processors are split among organizations: uniform, zipf or zipf:S.
    #[arg(long, default_value = "zipf:1")]
    ownership: Ownership,
    /// Keep jobs submitted in [START, START+LEN) seconds, re-based to 0.
    #[arg(long, value_name = "START,LEN", value_parser = parse_window)]
    window: Option<(i64, i64)>,
    /// Split each q-processor job into q sequential tasks.
    #[arg(long)]
    split_parallel: bool,
    /// Master seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Skip malformed lines (and count them) instead of stopping.
    #[arg(long)]
    lenient: bool,
    /// Drop jobs with status 0 (failed).
    #[arg(long)]
    drop_failed: bool,
    /// Drop jobs with status 5 (cancelled).
    #[arg(long)]
    drop_cancelled: bool,
    /// Never show progress bars.
    #[arg(long)]
    no_progress: bool,
}

fn parse_window(s: &str) -> Result<(i64, i64), String> {
    let (a, b) = s.split_once(',').ok_or("expected START,LEN in seconds")?;
    let a: i64 = a
        .trim()
        .parse()
        .map_err(|_| format!("window start {a:?} is not an integer"))?;
    let b: i64 = b
        .trim()
        .parse()
        .map_err(|_| format!("window length {b:?} is not an integer"))?;
    if a < 0 || b <= 0 {
        return Err("window start must be ≥ 0 and length > 0".into());
    }
    Ok((a, b))
}

/// `summary.json`.
#[derive(Serialize)]
struct Summary {
    policy: String,
    allocate: String,
    control: Option<String>,
    trace: String,
    seed: u64,
    /// Tasks simulated (after filters, window and splitting).
    jobs: u64,
    outcomes: BTreeMap<&'static str, u64>,
    makespan_s: f64,
    mean_wait_s: f64,
    mean_response_s: f64,
    mean_bounded_slowdown: f64,
    utilization: f64,
    platform: PlatformInfo,
    orgs: u32,
    ownership: String,
    window: Option<(i64, i64)>,
    split_parallel: bool,
    filters: FilterCounts,
    /// What `filters` counted: the whole log, or (with a window, whose
    /// reading stops at its end) the lines up to the window's end.
    filters_scope: &'static str,
    sorted_submits: bool,
    /// Jobs dropped for needing more processors than the largest machine.
    too_wide: u64,
    stranded: u64,
    core: CoreStats,
    wall_time_s: f64,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let demo = a.policies.is_empty();
    let (trace, trace_name) = match &a.trace {
        Some(p) => (TraceInput::Path(p.clone()), p.display().to_string()),
        None => (
            TraceInput::Bytes {
                name: DEMO_NAME.into(),
                data: DEMO_LOG,
            },
            DEMO_NAME.to_string(),
        ),
    };
    let policies: Vec<PolicySpec> = if demo {
        DEMO_POLICIES
            .iter()
            .map(|p| p.parse().expect("valid demo policy"))
            .collect()
    } else {
        a.policies.clone()
    };
    // Validate every policy before reading anything.
    for p in &policies {
        registry::build_order(p).with_context(|| format!("--policy {p}"))?;
    }
    let several = a.machines.as_ref().is_some_and(|m| m.len() > 1);
    let allocate = a.allocate.clone().unwrap_or_else(|| {
        (if several { "least-loaded" } else { "single-pool" })
            .parse()
            .expect("valid")
    });
    registry::build_allocate(&allocate).with_context(|| format!("--allocate {allocate}"))?;
    if let Some(c) = &a.control {
        registry::build_control(c).with_context(|| format!("--control {c}"))?;
    }
    let orgs = a.orgs.unwrap_or(if demo { DEMO_ORGS } else { 1 });
    let stream = StreamOptions {
        filter: FilterOptions {
            drop_failed: a.drop_failed,
            drop_cancelled: a.drop_cancelled,
        },
        lenient: a.lenient,
    };

    let t0 = Instant::now();
    let scan = trace
        .scan(a.lenient)
        .with_context(|| format!("reading {trace_name}"))?;
    print_trace_line(&scan, &trace_name);

    let base = RunConfig {
        trace,
        procs: a.procs,
        machines: a.machines.clone(),
        orgs,
        ownership: a.ownership,
        window: a.window,
        split_parallel: a.split_parallel,
        seed: a.seed,
        allocate,
        order: policies[0].clone(),
        control: a.control.clone(),
        stream,
    };
    let (_, platform) = base.platform(&scan)?;
    println!(
        "platform: {} processors ({}){}, {} organization(s){}, seed {}",
        platform.total,
        platform.source,
        if platform.machines.len() > 1 {
            format!(" as machines {:?}", platform.machines)
        } else {
            String::new()
        },
        orgs,
        if orgs > 1 {
            format!(" owning {:?} ({})", platform.per_org, a.ownership)
        } else {
            String::new()
        },
        a.seed
    );
    if demo {
        println!("demo: no --policy given, comparing {}", DEMO_POLICIES.join(", "));
    }

    fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let bars = Bars::new(!a.no_progress);
    // Progress is measured in simulated time: the trace's span, or the window.
    let (from, span) = match a.window {
        Some((start, len)) => (start, len as u64),
        None => (scan.first_submit.unwrap_or(0), scan.span_seconds().max(0) as u64),
    };
    let results: Vec<anyhow::Result<Summary>> = policies
        .par_iter()
        .map(|p| {
            let dir = if policies.len() == 1 {
                a.out.clone()
            } else {
                a.out.join(slug(&p.to_string()))
            };
            let cfg = RunConfig {
                order: p.clone(),
                ..base.clone()
            };
            let bar = bars.bar(&p.to_string(), from, span);
            let r = run_one(&cfg, &scan, &dir, &trace_name, bar);
            r.with_context(|| format!("policy {p}"))
        })
        .collect();
    let mut summaries = Vec::new();
    for r in results {
        summaries.push(r?);
    }

    let mut t = Table::new([
        "policy",
        "tasks",
        "makespan_s",
        "mean_wait_s",
        "mean_bsld",
        "utilization",
        "wall_s",
    ]);
    for s in &summaries {
        t.row([
            s.policy.clone(),
            s.jobs.to_string(),
            fixed(s.makespan_s, 0),
            fixed(s.mean_wait_s, 1),
            fixed(s.mean_bounded_slowdown, 2),
            fixed(s.utilization, 3),
            fixed(s.wall_time_s, 3),
        ]);
    }
    if let Some(s) = summaries.first() {
        if s.too_wide > 0 {
            t.note(format!(
                "{} job(s) dropped: wider than the largest machine",
                s.too_wide
            ));
        }
        if s.sorted_submits {
            t.note(format!(
                "submit times were out of order ({} jobs): sorted (stable)",
                s.filters.non_monotone_submits
            ));
        }
    }
    if let (Some((start, len)), Some(s)) = (a.window, summaries.first())
        && s.jobs == 0
    {
        t.note(format!(
            "warning: no job in the window [{start}, {}) s; this log's submits span {} .. {} s",
            start + len,
            scan.first_submit.unwrap_or(0),
            scan.last_submit.unwrap_or(0)
        ));
    }
    for s in &summaries {
        for (what, n) in [
            ("rejected", s.outcomes.get("rejected").copied().unwrap_or(0)),
            ("stranded", s.stranded),
        ] {
            if n > 0 {
                t.note(format!("{}: {n} task(s) {what}", s.policy));
            }
        }
    }
    if demo && !a.split_parallel {
        t.note("round-robin and fair-share serve each organization's jobs in order: with rigid parallel jobs a wide");
        t.note("head waits while other organizations' narrow jobs fill the machine. Their papers split jobs into");
        t.note("sequential tasks: try `fairsched simulate --split-parallel`.");
    }
    println!();
    print!("{}", t.to_text());
    if summaries.len() > 1 {
        write_atomic(&a.out.join("comparison.csv"), t.to_csv().as_bytes())?;
        write_atomic(
            &a.out.join("comparison.json"),
            serde_json::to_string_pretty(&t.to_json())?.as_bytes(),
        )?;
    }
    println!(
        "\nwrote {}/{} ({:.2} s)",
        a.out.display(),
        if summaries.len() > 1 {
            "comparison.csv and one folder per policy"
        } else {
            "summary.json and tasks.csv"
        },
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn print_trace_line(scan: &TraceScan, name: &str) {
    let info = TraceInfo::from_scan(scan);
    let c = &scan.counts;
    println!(
        "trace: {name}: {} jobs, {} kept, {} users, span {} s",
        info.raw_jobs, c.kept, info.users, info.span_seconds
    );
    let filters: Vec<String> = c
        .rows()
        .iter()
        .filter(|(k, n, _)| *n > 0 && !matches!(*k, "records" | "kept"))
        .map(|(k, n, what)| format!("{k} {n} ({what})"))
        .collect();
    if !filters.is_empty() {
        println!("filters: {}", filters.join("; "));
    }
}

fn run_one(
    cfg: &RunConfig,
    scan: &TraceScan,
    dir: &Path,
    trace_name: &str,
    mut bar: crate::progress::Progress,
) -> anyhow::Result<Summary> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tasks_path = dir.join("tasks.csv");
    let file = fs::File::create(partial(&tasks_path))
        .with_context(|| format!("creating {}", partial(&tasks_path).display()))?;
    let mut csv = TasksCsv::new(BufWriter::with_capacity(1 << 16, file));
    let mut metrics = Metrics::default();
    let started = Instant::now();
    let report = cfg.run(scan, &mut Fanout(vec![&mut metrics, &mut csv, &mut bar]))?;
    let wall = started.elapsed().as_secs_f64();
    bar.finish();
    let file = csv
        .finish()
        .with_context(|| format!("writing {}", tasks_path.display()))?;
    file.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .with_context(|| format!("writing {}", tasks_path.display()))?;
    commit(&tasks_path)?;
    if metrics.all.tasks != report.stats.submitted {
        bail!(
            "internal: {} tasks submitted but {} ended",
            report.stats.submitted,
            metrics.all.tasks
        );
    }
    write_atomic(
        &dir.join("orgs.csv"),
        aggregates::by_org(&metrics).to_csv().as_bytes(),
    )?;
    write_atomic(
        &dir.join("users.csv"),
        aggregates::by_user(&metrics).to_csv().as_bytes(),
    )?;
    let s = Summary {
        policy: cfg.order.to_string(),
        allocate: cfg.allocate.to_string(),
        control: cfg.control.as_ref().map(|c| c.to_string()),
        trace: trace_name.to_string(),
        seed: cfg.seed,
        jobs: metrics.all.tasks,
        outcomes: metrics.outcomes.clone(),
        makespan_s: metrics.makespan().as_secs_f64(),
        mean_wait_s: metrics.all.mean_wait(),
        mean_response_s: metrics.all.mean_response(),
        mean_bounded_slowdown: metrics.all.mean_bsld(),
        utilization: metrics.utilization(),
        platform: report.platform,
        orgs: cfg.orgs,
        ownership: cfg.ownership.to_string(),
        window: cfg.window,
        split_parallel: cfg.split_parallel,
        filters: report.filters,
        filters_scope: if report.filters_complete {
            "whole log"
        } else {
            "lines read up to the window's end"
        },
        sorted_submits: report.sorted,
        too_wide: report.too_wide,
        stranded: report.stats.stranded,
        core: report.stats.core,
        wall_time_s: wall,
    };
    let mut json = serde_json::to_string_pretty(&s)?;
    json.push('\n');
    write_atomic(&dir.join("summary.json"), json.as_bytes())?;
    Ok(s)
}
