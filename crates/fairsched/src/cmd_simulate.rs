//! `fairsched simulate`: replay a log under one or more policies.

use crate::cmd_experiment::{ForceArg, begin_out, open_out};
use crate::progress::Bars;
use crate::term::{self, say, sayln};
use anyhow::Context;
use fairsched_core::{Fanout, PolicySpec};
use fairsched_report::aggregates::OrgUtility;
use fairsched_report::{RunDir, Table, fixed};
use fairsched_sim::{
    Ownership, PlatformFile, ProcsFrom, RunConfig, RuntimeLimit, Summary, Sweep, SweepRun, TraceInput,
};
use fairsched_trace::{FilterOptions, StreamOptions, TraceInfo, TraceScan};
use std::path::PathBuf;
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
    /// Order policy (which waiting task starts), e.g. fcfs, easy or
    /// fair-share; `fairsched policies` lists them. Repeat to compare several
    /// (they run in parallel). Default: a comparison of baselines.
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
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N,N,...",
        allow_hyphen_values = true
    )]
    machines: Option<Vec<u32>>,
    /// Organizations; users are mapped to them uniformly at random (seeded).
    /// Default: 1, or 5 in the demo comparison (no --policy).
    #[arg(long)]
    orgs: Option<u32>,
    /// How processors are split among organizations (with more than one):
    /// uniform, zipf or zipf:S.
    #[arg(long, default_value_t = Ownership::DEFAULT)]
    ownership: Ownership,
    /// Organizations set up by hand in a TOML file (each one's processors
    /// and users) instead of --orgs and --ownership; see examples/platform.toml.
    ///
    /// `[[org]]` tables in index order, each with `name` (optional), `procs`
    /// (processors it owns) and `users` (SWF user ids, field 12, whose jobs
    /// belong to it); before the first `[[org]]`, `unlisted = "error"`
    /// (default: the run stops at the first job of a user listed nowhere),
    /// `"random"` (seeded uniform mapping, as --orgs) or an organization's
    /// name. The platform is one machine of the organizations' total, or
    /// --machines adding up to it. Mistakes are reported as FILE:LINE: key.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["orgs", "ownership"])]
    platform: Option<PathBuf>,
    /// Replay a live broker's history (its database) instead of a log: what
    /// `fairsched export` writes (each task that ran, with its measured runtime,
    /// user and organization, and each organization's slots) goes to OUT/broker.swf
    /// and OUT/broker-platform.toml, then runs like --trace with --platform. Ask
    /// what last month would have looked like under another --policy.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["trace", "platform", "orgs", "ownership"])]
    broker_log: Option<PathBuf>,
    /// Keep jobs submitted in [START, START+LEN) seconds, re-based to 0.
    #[arg(long, value_name = "START,LEN", value_parser = parse_window, allow_hyphen_values = true)]
    window: Option<(i64, i64)>,
    /// Split each q-processor job into q sequential tasks.
    #[arg(long)]
    split_parallel: bool,
    /// Master seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory: comparison.csv and one folder per policy, or one run's
    /// files. A folder an earlier run wrote (it holds .fairsched-out) is
    /// cleared of that run's files first; other files stay.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    #[command(flatten)]
    force: ForceArg,
    /// Skip malformed lines (and count them) instead of stopping.
    #[arg(long)]
    lenient: bool,
    /// Drop jobs with status 0 (failed).
    #[arg(long)]
    drop_failed: bool,
    /// Drop jobs with status 5 (cancelled).
    #[arg(long)]
    drop_cancelled: bool,
    /// Which SWF field gives a job's processors: `allocated` (default:
    /// field 5, or field 8 when 5 is unknown) or `requested` (field 8 when
    /// known, i.e. > 0, else field 5: how AccaSim reads SWF). See
    /// docs/semantics.md.
    #[arg(long, value_name = "FIELD", default_value_t = ProcsFrom::Allocated)]
    procs_from: ProcsFrom,
    /// A job still running at its requested time (SWF field 9): `ignore`
    /// (default: it runs its logged runtime, field 4) or `kill` (it is
    /// killed there, outcome `killed`, as Slurm and PBS do; a job without a
    /// requested time runs to its end).
    #[arg(long, value_name = "WHAT", default_value_t = RuntimeLimit::Ignore)]
    runtime_limit: RuntimeLimit,
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
    // Simulated time is in milliseconds: the window's end must fit, with
    // room for the runs after it (10¹² s is over 31,000 years).
    const MAX_S: i64 = 1_000_000_000_000;
    if a.checked_add(b).is_none_or(|end| end > MAX_S) {
        return Err(format!("window start + length must be at most {MAX_S} s"));
    }
    Ok((a, b))
}

pub fn run(mut a: Args) -> anyhow::Result<()> {
    // A folder of other files is refused (exit 2) before anything is read.
    let mut early_out = None;
    if let Some(db) = a.broker_log.take() {
        let mut out = open_out(&a.out, a.force)?;
        begin_out(&mut out, &["broker.swf", "broker-platform.toml"])?;
        early_out = Some(out);
        let swf = a.out.join("broker.swf");
        let platform = a.out.join("broker-platform.toml");
        let e = crate::cmd_live::export(&db, &swf, Some(&platform))?;
        if e.jobs == 0 {
            anyhow::bail!(
                "{}: no task of this broker has run yet: nothing to replay",
                db.display()
            );
        }
        sayln!(
            "broker history {}: {} tasks that ran → {} and {}",
            db.display(),
            e.jobs,
            swf.display(),
            platform.display()
        );
        a.trace = Some(swf);
        a.platform = Some(platform);
    }
    let demo = a.policies.is_empty();
    let trace = match &a.trace {
        Some(p) => TraceInput::Path(p.clone()),
        None => TraceInput::Bytes {
            name: DEMO_NAME.into(),
            data: DEMO_LOG,
        },
    };
    let trace_name = trace.name();
    let policies: Vec<PolicySpec> = if demo {
        DEMO_POLICIES
            .iter()
            .map(|p| p.parse().expect("valid demo policy"))
            .collect()
    } else {
        a.policies.clone()
    };
    // Read and checked before anything else; its errors name the file, the
    // line and the key.
    let platform_file = a.platform.as_deref().map(PlatformFile::load).transpose()?;
    let orgs = match &platform_file {
        Some(f) => f.orgs(),
        None => a.orgs.unwrap_or(if demo { DEMO_ORGS } else { 1 }),
    };
    let base = RunConfig {
        trace,
        procs: a.procs,
        machines: a.machines.clone(),
        orgs,
        ownership: a.ownership,
        platform_file,
        window: a.window,
        split_parallel: a.split_parallel,
        seed: a.seed,
        allocate: a.allocate.clone(),
        order: policies[0].clone(),
        control: a.control.clone(),
        stream: StreamOptions {
            filter: FilterOptions {
                drop_failed: a.drop_failed,
                drop_cancelled: a.drop_cancelled,
            },
            lenient: a.lenient,
        },
        procs_from: a.procs_from,
        runtime_limit: a.runtime_limit,
    };
    let sweep = Sweep::over_orders(&base, &policies);
    // Every policy and flag is checked before anything is read; a value
    // refused here is a command-line error (exit 2), as clap's are.
    for r in &sweep.runs {
        r.config.check().map_err(term::usage)?;
    }
    let mut out = match early_out {
        Some(out) => out,
        None => open_out(&a.out, a.force)?,
    };

    let t0 = Instant::now();
    // The trace's errors name the file (and line, and field).
    let scan = base.trace.scan(a.lenient)?;
    print_trace_line(&scan, &trace_name)?;
    let (_, platform) = base.platform(&scan)?;
    sayln!(
        "platform: {} processors ({}){}, {} organization(s){}, seed {}",
        platform.total,
        platform.source,
        if platform.machines.len() > 1 {
            format!(" as machines {:?}", platform.machines)
        } else {
            String::new()
        },
        orgs,
        match &a.platform {
            Some(p) => format!(" owning {:?} (from {})", platform.per_org, p.display()),
            None if orgs > 1 => format!(" owning {:?} ({})", platform.per_org, a.ownership),
            None => String::new(),
        },
        a.seed
    );
    if a.procs_from != ProcsFrom::default() || a.runtime_limit != RuntimeLimit::default() {
        sayln!(
            "semantics: processors from {} (field {}), runtime limit {} (docs/semantics.md)",
            a.procs_from,
            match a.procs_from {
                ProcsFrom::Allocated => "5, else 8",
                ProcsFrom::Requested => "8, else 5",
            },
            a.runtime_limit
        );
    }
    if demo {
        sayln!("demo: no --policy given, comparing {}", DEMO_POLICIES.join(", "));
    }

    let several = sweep.runs.len() > 1;
    // The manifest lists every entry before the first is written.
    let planned: Vec<String> = if several {
        let mut p: Vec<String> = sweep.runs.iter().map(|r| format!("{}/", r.name)).collect();
        p.extend(["comparison.csv".into(), "comparison.json".into()]);
        p
    } else {
        ["summary.json", "tasks.csv", "orgs.csv", "users.csv"]
            .map(String::from)
            .to_vec()
    };
    begin_out(&mut out, &planned.iter().map(String::as_str).collect::<Vec<_>>())?;
    let bars = Bars::new(!a.no_progress);
    // Progress is measured in simulated time: the trace's span, or the window.
    let (from, span) = match a.window {
        Some((start, len)) => (start, len as u64),
        None => (scan.first_submit.unwrap_or(0), scan.span_seconds().max(0) as u64),
    };
    let results = sweep.run(|r: &SweepRun| {
        let run_dir = if several {
            out.run_dir(&r.name)?
        } else {
            RunDir::create(out.path())?
        };
        let mut csv = run_dir.tasks_csv()?;
        let mut bar = bars.bar(&r.name, from, span);
        let done = r.config.execute(&scan, &mut Fanout(vec![&mut csv, &mut bar]));
        bar.finish();
        let done = done.with_context(|| format!("policy {}", r.config.order))?;
        run_dir.finish_tasks_csv(csv)?;
        let utility: Option<Vec<OrgUtility>> = done.summary.fairness.as_ref().map(|f| {
            f.orgs
                .iter()
                .map(|o| OrgUtility {
                    org: o.org,
                    procs: o.procs,
                    psi: o.psi,
                    phi: o.phi,
                })
                .collect()
        });
        run_dir.write_results(&done.metrics, utility.as_deref(), &done.summary)?;
        anyhow::Ok(done.summary)
    });
    let mut summaries: Vec<Summary> = Vec::new();
    for r in results {
        summaries.push(r?);
    }
    let renamed: Vec<&SweepRun> = sweep
        .runs
        .iter()
        .filter(|r| r.name != r.config.order.slug())
        .collect();

    let mut t = Table::new([
        "policy",
        "tasks",
        "makespan_s",
        "mean_wait_s",
        "mean_bsld",
        "utilization",
        "wall_s",
    ]);
    for (s, r) in summaries.iter().zip(&sweep.runs) {
        // A spec given twice: the row says which folder it is.
        let label = if r.name == r.config.order.slug() {
            s.policy.clone()
        } else {
            format!("{} ({})", s.policy, r.name)
        };
        t.row([
            label,
            s.jobs.to_string(),
            fixed(s.makespan_s, 0),
            fixed(s.mean_wait_s, 1),
            fixed(s.mean_bounded_slowdown, 2),
            fixed(s.utilization, 3),
            fixed(s.wall_time_s, 3),
        ]);
    }
    for r in &renamed {
        t.note(format!(
            "{} was given more than once: this run is in {}",
            r.config.order,
            a.out.join(&r.name).display()
        ));
    }
    if let Some(s) = summaries.first() {
        if s.too_wide > 0 {
            t.note(format!(
                "{} job(s) dropped: wider than the largest machine",
                s.too_wide
            ));
        }
        if s.procs_differ > 0 {
            t.note(format!(
                "{} job(s) read with their requested processors (field 8), not their allocated ones (field 5)",
                s.procs_differ
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
            ("killed at their requested time", s.killed_at_limit),
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
    // Every result file is written before the table is printed.
    if several {
        out.write("comparison.csv", t.to_csv().as_bytes())?;
        out.write(
            "comparison.json",
            &fairsched_report::files::json_bytes(&t.to_json()),
        )?;
    }
    out.finish()?;
    sayln!();
    say!("{}", t.to_text());
    sayln!(
        "\nwrote {}/{} ({:.2} s)",
        a.out.display(),
        if several {
            "comparison.csv and one folder per policy"
        } else {
            "summary.json and tasks.csv"
        },
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn print_trace_line(scan: &TraceScan, name: &str) -> anyhow::Result<()> {
    let info = TraceInfo::from_scan(scan);
    let c = &scan.counts;
    sayln!(
        "trace: {name}: {} jobs, {} kept, {} users, span {} s",
        info.raw_jobs,
        c.kept,
        info.users,
        info.span_seconds
    );
    let filters: Vec<String> = c
        .rows()
        .iter()
        .filter(|(k, n, _)| *n > 0 && !matches!(*k, "records" | "kept"))
        .map(|(k, n, what)| format!("{k} {n} ({what})"))
        .collect();
    if !filters.is_empty() {
        sayln!("filters: {}", filters.join("; "));
    }
    Ok(())
}
