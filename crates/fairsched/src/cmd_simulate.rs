//! `fairsched simulate`: replay a log under one or more policies.

use crate::cmd_experiment::{ForceArg, begin_out, open_out};
use crate::progress::Bars;
use crate::term::{self, say, sayln};
use anyhow::Context;
use fairsched_core::{Fanout, Kind, Observer, PolicySpec};
use fairsched_report::aggregates::OrgUtility;
use fairsched_report::files::{FOLDER_FILES, FileError, LOCK, MANIFEST, partial};
use fairsched_report::sim_files::{FairnessRow, RunsCsv, fairness_csv};
use fairsched_report::{BatsimJobs, Table, fixed};
use fairsched_sim::{
    Ownership, PlatformFile, ProcsFrom, RunConfig, RuntimeLimit, SimError, Summary, Sweep, SweepRun,
    SwfOutHeader, SwfSchedule, TraceInput,
};
use fairsched_trace::{FilterOptions, StreamOptions, TraceError, TraceInfo, TraceScan};
use std::io::IsTerminal;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// The bundled demo log (see data/PROVENANCE.md).
const DEMO_NAME: &str = "KTH-SP2-1996-2.1-cln.swf.gz (bundled)";
const DEMO_LOG: &[u8] = include_bytes!("../../../data/KTH-SP2-1996-2.1-cln.swf.gz");

/// Policies compared when none is given.
const DEMO_POLICIES: &[&str] = &["fcfs", "easy", "first-fit", "round-robin", "fair-share"];
/// Organizations in the demo when `--orgs` is not given, so that the
/// organization-level policies have something to share.
const DEMO_ORGS: u32 = 5;

#[derive(clap::Args)]
pub struct Args {
    /// SWF log (plain or gzip). Default: the bundled KTH-SP2 log.
    #[arg(long)]
    trace: Option<PathBuf>,
    // The help of the three policy flags lists the registry's names.
    #[arg(long = "policy", value_name = "SPEC", help = policy_help(
        Kind::Order,
        "Order policy (which waiting task starts)",
        "Repeat to compare several (they run in parallel). Default: a comparison of fcfs, easy, \
         first-fit, round-robin and fair-share with 5 organizations",
    ))]
    policies: Vec<PolicySpec>,
    #[arg(long, value_name = "SPEC", help = policy_help(
        Kind::Allocate,
        "Allocate policy (which machine gets a task)",
        "Default: single-pool with one machine, least-loaded with several",
    ))]
    allocate: Option<PolicySpec>,
    #[arg(long, value_name = "SPEC", help = policy_help(
        Kind::Control,
        "Control policy (priority changes while tasks wait), e.g. 'age-boost[after=10m]'",
        "Default: none",
    ))]
    control: Option<PolicySpec>,
    /// Total processors (default: the header's MaxProcs, else the widest job).
    #[arg(long)]
    procs: Option<u32>,
    /// Machine sizes, each machine with its own queue, e.g. 2,4,8
    /// (default: one machine of --procs processors).
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
    /// Keep jobs submitted in [START, START+LEN) seconds, re-based to 0
    /// (default: the whole log).
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
    /// cleared of that run's files first; other files stay. A folder
    /// another run is writing into (it holds .fairsched.lock) is refused.
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
    /// Also write the simulated schedule as an SWF log (gzip if FILE ends
    /// in .gz), readable by `fairsched trace info` and other SWF tools.
    ///
    /// A plain name (schedule.swf) goes in the run's folder: OUT/NAME with
    /// one --policy, OUT/<policy>/NAME for each of several. A path with a
    /// folder (./schedule.swf, /tmp/s.swf) is written there, with one
    /// --policy only (exit 2 otherwise: one file cannot hold several
    /// schedules). Each simulated job's record is kept as read from the
    /// log, in the log's order, but for field 2 (submit, re-based by
    /// --window), 3 (wait), 4 (run time), 5 (processors given) and 11
    /// (status: the log's for a job the simulation completed, which ran its
    /// logged run time, failed 0 and cancelled 5 included; 0 if killed at
    /// its requested time; 5 if it never started, with wait and run time
    /// -1). Jobs not simulated are left out. With --split-parallel each
    /// task is one record of one processor, numbered 1, 2, …, after a
    /// comment line naming its job.
    /// The header says all this, with the command line.
    #[arg(long, value_name = "FILE")]
    swf_out: Option<PathBuf>,
    /// Also write the schedule as Batsim's jobs.csv (its `_jobs.csv`
    /// columns, which evalys's JobSet.from_csv reads). FILE is placed as
    /// for --swf-out.
    ///
    /// One row per task in submission order; job_id is the SWF job number
    /// (J_P for part P of a split job); allocated_resources are the
    /// processors the simulation gave it (0-based, machine after machine,
    /// as Batsim interval sets: `0-3 5`); final_state by the rule of
    /// --swf-out's status: the log's for a completed job
    /// (COMPLETED_SUCCESSFULLY, or COMPLETED_FAILED for status 0 and 4,
    /// COMPLETED_KILLED for 5), COMPLETED_WALLTIME_REACHED when killed at
    /// its requested time, REJECTED with empty times when never started;
    /// success is 1 for COMPLETED_SUCCESSFULLY only.
    #[arg(long, value_name = "FILE")]
    batsim_jobs: Option<PathBuf>,
    /// With several organizations, also compute each one's Shapley value φ
    /// (what it contributed) and φ − ψ, into orgs.csv and summary.json.
    ///
    /// φ takes 2^k − 2 schedules of the whole run, one per coalition of the
    /// k organizations (each scheduling its own jobs on its own processors):
    /// 30 with 5 organizations, computed after the run (on RICC's 447,784
    /// jobs, about 3.5 s and 12 MiB more). Without it, ψ (each
    /// organization's utility) is reported alone and the `fairness` note
    /// says φ was not computed. Up to 8 organizations, one machine.
    #[arg(long)]
    phi: bool,
    /// Never show progress bars.
    #[arg(long)]
    no_progress: bool,
}

/// `WHAT: one of NAMES (parameters: `fairsched policies`). DEFAULT.`
fn policy_help(kind: Kind, what: &str, default: &str) -> String {
    let names: Vec<&str> = fairsched_core::REGISTRY
        .iter()
        .filter(|e| e.kind() == kind)
        .map(|e| e.name)
        .collect();
    format!(
        "{what}: one of {}; NAME[key=value,...] sets parameters (`fairsched policies`). {default}.",
        names.join(", ")
    )
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
            procs_from: a.procs_from,
        },
        procs_from: a.procs_from,
        runtime_limit: a.runtime_limit,
        phi: a.phi,
    };
    // A policy that decides between organizations, run with one, is a
    // plain queue: say so before the run, not after a puzzling table.
    let one_org_warnings: Vec<String> = if orgs == 1 {
        policies
            .iter()
            .filter(|p| fairsched_core::registry::entry(Kind::Order, &p.name).is_ok_and(|e| e.orgs))
            .map(|p| {
                format!(
                    "warning: {} shares processors between organizations, and this run has one{}: \
                     every job is in the same queue.{}",
                    p.name,
                    if a.platform.is_some() {
                        ""
                    } else {
                        " (--orgs defaults to 1)"
                    },
                    if a.platform.is_some() {
                        ""
                    } else {
                        " Give --orgs K or --platform FILE."
                    }
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    for w in &one_org_warnings {
        eprintln!("{w}");
    }
    let sweep = Sweep::over_orders(&base, &policies);
    // Every policy and flag is checked before anything is read; a value
    // refused here is a command-line error (exit 2), as clap's are.
    for r in &sweep.runs {
        r.config.check().map_err(term::usage)?;
    }
    let schedule_files = ScheduleFiles::check(&a, sweep.runs.len())?;
    let mut out = match early_out {
        Some(out) => out,
        None => open_out(&a.out, a.force)?,
    };

    let t0 = Instant::now();
    // The log is read once when nothing needs its scan before the run: no
    // window (whose reading stops at its end), no progress bar (sized by
    // the log's span), a platform sized without the jobs (flags, platform
    // file or the header's MaxProcs). Then only the header is read first,
    // the run's stream scans the log as it goes, and the lines below are
    // printed when the runs end (the same lines, in the same order). A log
    // found out of order on the way is scanned, and the runs start again
    // on its sorted jobs. Otherwise the whole log is scanned first.
    // The trace's errors name the file (and line, and field).
    let bars_shown = !a.no_progress && std::io::stderr().is_terminal();
    let mut scan = if a.window.is_none() && !bars_shown {
        let head = base.trace.scan_header(a.lenient)?;
        if base.sized_by_header(&head) {
            head
        } else {
            base.trace.scan(a.lenient)?
        }
    } else {
        base.trace.scan(a.lenient)?
    };
    let (_, platform) = base.platform(&scan)?;
    let header = |scan: &TraceScan| -> anyhow::Result<()> {
        print_trace_line(scan, &trace_name, base.stream.filter)?;
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
                Some(p) => format!(" owning {} (from {})", brief(&platform.per_org), p.display()),
                None if orgs > 1 => format!(" owning {} ({})", brief(&platform.per_org), a.ownership),
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
        // Header lines the trace crate could not use (`; MaxProcs: abc`),
        // with what the run uses instead.
        for w in &scan.header_warnings {
            let instead = if w.is_max_procs() {
                format!(
                    "; the run has {} processors ({})",
                    platform.total, platform.source
                )
            } else {
                String::new()
            };
            crate::term::note(format_args!("warning: {w}{instead}"));
        }
        Ok(())
    };
    if scan.complete {
        header(&scan)?;
    }

    let several = sweep.runs.len() > 1;
    // The manifest lists every entry before the first is written.
    let planned: Vec<String> = if several {
        let mut p: Vec<String> = sweep.runs.iter().map(|r| format!("{}/", r.name)).collect();
        p.extend(["comparison.csv".into(), "comparison.json".into()]);
        // The schedule files in each run's folder: the next run clears them.
        for name in schedule_files.in_run_folder() {
            out.inside(&name)?;
        }
        p
    } else {
        let mut p: Vec<String> = FOLDER_FILES.iter().map(|f| f.to_string()).collect();
        p.extend(schedule_files.in_run_folder());
        p
    };
    begin_out(&mut out, &planned.iter().map(String::as_str).collect::<Vec<_>>())?;
    let bars = Bars::new(!a.no_progress, sweep.runs.len());
    // Progress is measured in simulated time: the trace's span, or the window.
    let (from, span) = match a.window {
        Some((start, len)) => (start, len as u64),
        None => (scan.first_submit.unwrap_or(0), scan.span_seconds().max(0) as u64),
    };
    // A run's files appear together when it is done (its commit, summary
    // last): a run stopped by an error or a signal leaves none of them.
    let run_one = |r: &SweepRun, scan: &TraceScan| -> Result<RunDone, RunError> {
        let run_dir = if several {
            out.run_dir(&r.name)?
        } else {
            out.here()?
        };
        let mut csv = run_dir.tasks_csv()?;
        let mut runs_csv = RunsCsv::default();
        let mut bar = bars.bar(&r.name, from, span);
        let mut schedule = schedule_files.recorders(r.config.split_parallel);
        let done = {
            let mut observers: Vec<&mut dyn Observer> = vec![&mut csv, &mut runs_csv, &mut bar];
            schedule.add_to(&mut observers);
            r.config.execute(scan, &mut Fanout(observers))
        };
        bar.finish();
        let done = match done {
            Err(SimError::Trace(TraceError::Unsorted { .. })) if !scan.complete => {
                return Err(RunError::Unsorted);
            }
            // The log's fault, whatever the policy: said as the scan says it.
            Err(SimError::Trace(e)) => return Err(RunError::Log(e)),
            d => d.with_context(|| format!("policy {}", r.config.order))?,
        };
        run_dir.finish_tasks_csv(csv)?;
        run_dir.stage(&run_dir.path().join("runs.csv"), &runs_csv.into_bytes())?;
        // The whole header, read by now either way.
        let read = done.read.as_ref().unwrap_or(scan);
        schedule_files.write(schedule, &run_dir, &r.config, &done.summary, read)?;
        let mut summary = done.summary;
        summary.tool = Some(term::tool());
        let utility: Option<Vec<OrgUtility>> = summary.fairness.as_ref().map(|f| {
            f.orgs
                .iter()
                .map(|o| OrgUtility {
                    org: o.org,
                    psi: o.psi,
                    phi: o.phi,
                })
                .collect()
        });
        let names: Vec<String> = summary.org_shares.iter().map(|o| o.name.clone()).collect();
        // With several organizations, ψ (and φ) over time.
        if let Some(fair) = &summary.fairness {
            let name = |o: u32| fair.orgs.get(o as usize).map_or("", |l| l.name.as_str());
            let text = fairness_csv(fair.over_time.iter().map(|p| FairnessRow {
                at: p.at,
                org: p.org,
                name: name(p.org),
                psi: p.psi,
                phi: p.phi,
            }));
            run_dir.stage(&run_dir.path().join("fairness.csv"), text.as_bytes())?;
        }
        run_dir.write_results(
            &done.metrics,
            &summary.platform.per_org,
            &names,
            utility.as_deref(),
            &summary,
        )?;
        let files = run_dir.commit()?;
        Ok(RunDone {
            summary,
            read: done.read,
            files,
        })
    };
    let mut results = sweep.run(|r| run_one(r, &scan));
    if results.iter().any(|r| matches!(r, Err(RunError::Unsorted))) {
        // Out of order: scan the log, whose jobs are then sorted, and run again.
        scan = base.trace.scan(a.lenient)?;
        header(&scan)?;
        results = sweep.run(|r| run_one(r, &scan));
    }
    let mut summaries: Vec<Summary> = Vec::new();
    let mut read = None;
    let mut run_files: Vec<PathBuf> = Vec::new();
    for r in results {
        if let Err(RunError::Log(_)) = &r
            && !scan.complete
            && !out.had_manifest()
        {
            // A malformed log found while read once: as when it is scanned
            // first, the new folder keeps no manifest of files never written.
            out.cleaner().clean();
            let _ = std::fs::remove_file(out.join(fairsched_report::files::MANIFEST));
            if several {
                for run in &sweep.runs {
                    let _ = std::fs::remove_dir(out.join(&run.name)); // if empty
                }
            }
        }
        let done = r.map_err(RunError::into_anyhow)?;
        summaries.push(done.summary);
        read = read.or(done.read);
        if run_files.is_empty() {
            // Every run writes the same names: the first one's say them.
            run_files = done.files;
        }
    }
    if !scan.complete {
        // Every run read the whole log: the first one's scan is the log's.
        scan = match read {
            Some(s) => s,
            None => base.trace.scan(a.lenient)?,
        };
        header(&scan)?;
    }
    let renamed: Vec<&SweepRun> = sweep
        .runs
        .iter()
        .filter(|r| r.name != r.config.order.slug())
        .collect();

    let mut t = Table::new(COMPARISON);
    let mut shown = Table::new(PRINTED);
    for (s, r) in summaries.iter().zip(&sweep.runs) {
        // A spec given twice: the row says which folder it is.
        let label = if r.name == r.config.order.slug() {
            s.policy.clone()
        } else {
            format!("{} ({})", s.policy, r.name)
        };
        t.row(comparison_row(label.clone(), s));
        shown.row(printed_row(label, s));
    }
    for w in &one_org_warnings {
        t.note(w.clone());
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
                "{} job(s) dropped: wider than {}",
                s.too_wide,
                if a.split_parallel {
                    "the platform (before --split-parallel)"
                } else {
                    "the largest machine"
                }
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
        crate::term::note(format_args!(
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
        t.note(
            "round-robin and fair-share serve each organization's jobs in order: with rigid parallel jobs \
             a wide head waits while other organizations' narrow jobs fill the machine. Their papers \
             split jobs into sequential tasks: try `fairsched simulate --split-parallel`.",
        );
    }
    // Every result file is written before the table is printed.
    let top = if several {
        out.write_set(&[
            ("comparison.csv", t.to_csv().as_bytes()),
            (
                "comparison.json",
                &fairsched_report::files::json_bytes(&t.to_json()),
            ),
        ])?
    } else {
        Vec::new()
    };
    out.finish()?;
    sayln!();
    shown.notes = std::mem::take(&mut t.notes);
    shown.note("wait_s, bsld: mean wait (s) and mean bounded slowdown; p90_, p99_: their");
    shown.note(format!(
        "percentiles (nearest rank); util: utilization. Every figure: {}.",
        if several { "comparison.csv" } else { "summary.json" }
    ));
    say!("{}", shown.to_text());
    // What was written, from the lists of files put in place.
    let out_path = a.out.as_path();
    let base = if several {
        run_files.first().and_then(|f| f.parent()).unwrap_or(out_path)
    } else {
        out_path
    };
    let mut each: Vec<String> = run_files.iter().map(|f| schedule_files.label(f, base)).collect();
    // In the order the README lists them; schedule files last.
    each.sort_by_key(|f| {
        FOLDER_FILES
            .iter()
            .position(|n| n == f)
            .unwrap_or(FOLDER_FILES.len())
    });
    let folders: Vec<&str> = sweep.runs.iter().map(|r| r.name.as_str()).collect();
    sayln!(
        "\nwrote {} in {:.2} s: {}",
        a.out.display(),
        t0.elapsed().as_secs_f64(),
        if several {
            format!(
                "{}, and in each policy's folder ({}/): {}",
                top.join(", "),
                folders.join("/, "),
                each.join(", ")
            )
        } else {
            each.join(", ")
        }
    );
    Ok(())
}

/// One run's result: its summary, the log's scan if it read the log, and
/// the files it put in place.
struct RunDone {
    summary: Summary,
    read: Option<TraceScan>,
    files: Vec<PathBuf>,
}

/// Why one run of the sweep stopped.
enum RunError {
    /// Its header-only read found the log out of order: scan, and run again.
    Unsorted,
    /// The log could not be read (a malformed line, an I/O error).
    Log(TraceError),
    Other(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for RunError {
    fn from(e: E) -> RunError {
        RunError::Other(e.into())
    }
}

impl RunError {
    fn into_anyhow(self) -> anyhow::Error {
        match self {
            RunError::Other(e) => e,
            RunError::Log(e) => e.into(),
            // Never left after the second attempt, which has a full scan.
            RunError::Unsorted => anyhow::anyhow!("the log's submits are out of order"),
        }
    }
}

/// The columns of comparison.csv and comparison.json: times in seconds,
/// percentiles nearest-rank (see `definitions` in summary.json).
const COMPARISON: [&str; 24] = [
    "policy",
    "tasks",
    "makespan_s",
    "utilization",
    "mean_wait_s",
    "p50_wait_s",
    "p90_wait_s",
    "p99_wait_s",
    "max_wait_s",
    "mean_response_s",
    "p50_response_s",
    "p90_response_s",
    "p99_response_s",
    "max_response_s",
    "mean_bsld",
    "p50_bsld",
    "p90_bsld",
    "p99_bsld",
    "max_bsld",
    "jain_users_bsld",
    "jain_orgs_bsld",
    "log_failed",
    "log_cancelled",
    "wall_s",
];

/// One run's row of the comparison (an undefined figure is empty).
fn comparison_row(label: String, s: &Summary) -> Vec<String> {
    let f = |x: Option<f64>, d: usize| x.map(|x| fixed(x, d)).unwrap_or_default();
    let dist = |d: &fairsched_core::metrics::Distribution, digits: usize| {
        [d.p50, d.p90, d.p99, d.max].map(|x| f(x, digits))
    };
    let p = &s.percentiles;
    let mut row = vec![
        label,
        s.jobs.to_string(),
        fixed(s.makespan_s, 0),
        f(s.utilization, 3),
        f(s.mean_wait_s, 1),
    ];
    row.extend(dist(&p.wait_s, 0));
    row.push(f(s.mean_response_s, 1));
    row.extend(dist(&p.response_s, 0));
    row.push(f(s.mean_bounded_slowdown, 2));
    row.extend(dist(&p.bounded_slowdown, 2));
    row.extend([
        f(s.jain_users_bsld.index, 3),
        f(s.jain_orgs_bsld.index, 3),
        s.log_status.failed.to_string(),
        s.log_status.cancelled.to_string(),
        fixed(s.wall_time_s, 3),
    ]);
    row
}

/// The comparison as printed: the columns that fit 80 (the demo's runs
/// of the whole bundled log take 78), the rest being in comparison.csv
/// (several policies) or summary.json.
const PRINTED: [&str; 8] = [
    "policy",
    "makespan_s",
    "wait_s",
    "p90_wait",
    "p99_wait",
    "bsld",
    "p99_bsld",
    "util",
];

/// One run's printed row: figures rounded to fit.
fn printed_row(label: String, s: &Summary) -> [String; 8] {
    let f = |x: Option<f64>, d: usize| x.map(|x| fixed(x, d)).unwrap_or_default();
    let p = &s.percentiles;
    [
        label,
        fixed(s.makespan_s, 0),
        f(s.mean_wait_s, 0),
        f(p.wait_s.p90, 0),
        f(p.wait_s.p99, 0),
        f(s.mean_bounded_slowdown, 2),
        f(p.bounded_slowdown.p99, 1),
        f(s.utilization, 3),
    ]
}

fn print_trace_line(scan: &TraceScan, name: &str, drops: FilterOptions) -> anyhow::Result<()> {
    let info = TraceInfo::from_scan(scan);
    let c = &scan.counts;
    // The scan reads every record without the status filters: the jobs
    // simulated after them are `jobs` in summary.json.
    let before = match (drops.drop_failed, drops.drop_cancelled) {
        (false, false) => "",
        (true, false) => " before --drop-failed",
        (false, true) => " before --drop-cancelled",
        (true, true) => " before --drop-failed and --drop-cancelled",
    };
    sayln!(
        "trace: {name}: {} jobs, {} kept{before}, {} users, span {} s",
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

/// `--swf-out` and `--batsim-jobs`: where the schedule files go, checked
/// (exit 2) before anything is read.
struct ScheduleFiles {
    swf: Option<Target>,
    batsim: Option<Target>,
}

/// A schedule file: a plain name, written in each run's folder, or a path
/// with a folder, written there (one run only).
enum Target {
    Name(String),
    Path(PathBuf),
}

impl Target {
    fn resolve(&self, run_dir: &Path) -> PathBuf {
        match self {
            Target::Name(n) => run_dir.join(n),
            Target::Path(p) => p.clone(),
        }
    }
}

/// Names a run writes in its folder (or the out folder), besides
/// [`FOLDER_FILES`], which a schedule file may not take.
const RUN_FILES: &[&str] = &[
    "comparison.csv",
    "comparison.json",
    "broker.swf",
    "broker-platform.toml",
    MANIFEST,
    LOCK,
];

/// The observers that collect a run's schedule for its files.
struct ScheduleRecorders {
    swf: Option<SwfSchedule>,
    batsim: Option<BatsimJobs>,
}

impl ScheduleRecorders {
    fn add_to<'a>(&'a mut self, observers: &mut Vec<&'a mut dyn Observer>) {
        if let Some(s) = &mut self.swf {
            observers.push(s);
        }
        if let Some(b) = &mut self.batsim {
            observers.push(b);
        }
    }
}

impl ScheduleFiles {
    fn check(a: &Args, runs: usize) -> anyhow::Result<ScheduleFiles> {
        let target = |flag: &str, given: &Option<PathBuf>| -> anyhow::Result<Option<Target>> {
            let Some(p) = given else { return Ok(None) };
            let mut parts = p.components();
            let plain = match (parts.next(), parts.next()) {
                (Some(Component::Normal(n)), None) => n.to_str().map(String::from),
                _ => None,
            };
            if let Some(n) = plain {
                if FOLDER_FILES.contains(&n.as_str())
                    || RUN_FILES.contains(&n.as_str())
                    || n.ends_with(".partial")
                {
                    return Err(term::usage(format!(
                        "--{flag} {n}: the run writes a file of that name in its folder; choose another"
                    )));
                }
                return Ok(Some(Target::Name(n)));
            }
            if p.file_name().is_none() {
                return Err(term::usage(format!("--{flag} {}: not a file name", p.display())));
            }
            if runs > 1 {
                return Err(term::usage(format!(
                    "--{flag} {}: {runs} policies run and one file cannot hold several schedules; \
                     give a plain file name, written in each policy's folder ({}/<policy>/NAME)",
                    p.display(),
                    a.out.display()
                )));
            }
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                return Err(term::usage(format!(
                    "--{flag} {}: folder {} does not exist",
                    p.display(),
                    dir.display()
                )));
            }
            Ok(Some(Target::Path(p.clone())))
        };
        if let (Some(s), Some(b)) = (&a.swf_out, &a.batsim_jobs)
            && s == b
        {
            return Err(term::usage(format!(
                "--swf-out and --batsim-jobs both name {}",
                s.display()
            )));
        }
        Ok(ScheduleFiles {
            swf: target("swf-out", &a.swf_out)?,
            batsim: target("batsim-jobs", &a.batsim_jobs)?,
        })
    }

    /// The plain names, which go in the run's folder (and its manifest).
    fn in_run_folder(&self) -> Vec<String> {
        [&self.swf, &self.batsim]
            .into_iter()
            .filter_map(|t| match t {
                Some(Target::Name(n)) => Some(n.clone()),
                _ => None,
            })
            .collect()
    }

    fn recorders(&self, split: bool) -> ScheduleRecorders {
        ScheduleRecorders {
            swf: self.swf.as_ref().map(|_| SwfSchedule::default()),
            batsim: self.batsim.as_ref().map(|_| BatsimJobs::new(split)),
        }
    }

    /// Stages one run's schedule files in `run_dir` (renamed into place
    /// with the run's other files).
    fn write(
        &self,
        rec: ScheduleRecorders,
        run_dir: &fairsched_report::RunDir,
        config: &RunConfig,
        summary: &Summary,
        scan: &TraceScan,
    ) -> anyhow::Result<()> {
        if let (Some(t), Some(s)) = (&self.swf, rec.swf) {
            let path = t.resolve(run_dir.path());
            let t = term::tool();
            let who = SwfOutHeader {
                generator: format!("{} {} (commit {})", t.name, t.version, t.commit),
                command: t.command,
            };
            run_dir.stage_with(&path, |f| -> anyhow::Result<()> {
                s.write_into(f, &path, config, &summary.platform, &scan.header, &who)
                    .with_context(|| format!("--swf-out {}", path.display()))?;
                Ok(())
            })?;
        }
        if let (Some(t), Some(b)) = (&self.batsim, rec.batsim) {
            let path = t.resolve(run_dir.path());
            run_dir.stage_with(&path, |f| {
                b.write_to(std::io::BufWriter::with_capacity(256 * 1024, f))
                    .map(drop)
                    .map_err(|source| FileError {
                        op: "writing",
                        path: partial(&path),
                        source,
                    })
            })?;
        }
        Ok(())
    }

    /// A file a run wrote, as the `wrote` line names it: its name in
    /// `folder`, else its path; a schedule file says its format.
    fn label(&self, file: &Path, folder: &Path) -> String {
        let shown = match file.strip_prefix(folder) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => file.display().to_string(),
        };
        let is = |t: &Option<Target>| t.as_ref().is_some_and(|t| t.resolve(folder) == file);
        if is(&self.swf) {
            format!("{shown} (the schedule as SWF)")
        } else if is(&self.batsim) {
            format!("{shown} (as Batsim's jobs.csv)")
        } else {
            shown
        }
    }
}

/// A list of numbers as `[a, b, …]`, the first 12 only when there are more
/// (`orgs.csv` has them all): a line, not megabytes.
fn brief(xs: &[u32]) -> String {
    const SHOWN: usize = 12;
    let mut s = format!("{:?}", &xs[..xs.len().min(SHOWN)]);
    if xs.len() > SHOWN {
        s.insert_str(
            s.len() - 1,
            &format!(", … {} more, see orgs.csv", xs.len() - SHOWN),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::brief;

    #[test]
    fn a_long_list_of_shares_is_cut_on_the_platform_line() {
        assert_eq!(brief(&[3, 1]), "[3, 1]");
        let many: Vec<u32> = (0..100_000).collect();
        let b = brief(&many);
        assert!(
            b.starts_with("[0, 1, 2,") && b.ends_with(", … 99988 more, see orgs.csv]"),
            "{b}"
        );
        assert!(b.len() < 120, "{b}");
    }
}
