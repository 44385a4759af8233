//! `fairsched simulate`: replay a log under one or more policies.

use crate::cmd_experiment::ForceArg;
use crate::host::Cli;
use crate::term::{say, sayln};
use fairsched_core::{Kind, PolicySpec, Registry};
use fairsched_sim::compare::{Comparison, DEMO_LOG, DEMO_NAME, DEMO_ORGS, DEMO_POLICIES};
use fairsched_sim::experiment::{begin, open_out};
use fairsched_sim::{Ownership, PlatformFile, ProcsFrom, RunConfig, RuntimeLimit, TraceInput};
use fairsched_trace::{FilterOptions, StreamOptions};
use std::path::PathBuf;

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
    /// Default: 1, or 5 in the demo comparison (no --policy). From 1 to the
    /// platform's processors (each owns at least one; more is exit 2).
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
    /// one --policy, `OUT/<policy>/NAME` for each of several. A path with a
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
    /// says φ was not computed. Up to 8 organizations, one machine: with
    /// more organizations or several machines --phi is refused (exit 2).
    #[arg(long)]
    phi: bool,
    /// Never show progress bars.
    #[arg(long)]
    no_progress: bool,
}

/// `WHAT: one of NAMES (parameters: `fairsched policies`). DEFAULT.`
fn policy_help(kind: Kind, what: &str, default: &str) -> String {
    let names = Registry::builtin().names(kind);
    format!(
        "{what}: one of {}; NAME[key=value,...] sets parameters (`fairsched policies`). {default}.",
        names.join(", ")
    )
}

pub(crate) fn parse_window(s: &str) -> Result<(i64, i64), String> {
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

pub fn run(mut a: Args, registry: &Registry) -> anyhow::Result<()> {
    let host = Cli::new(!a.no_progress);
    // A folder of other files is refused (exit 2) before anything is read.
    let mut early_out = None;
    if let Some(db) = a.broker_log.take() {
        let mut out = open_out(&a.out, a.force.force, &host)?;
        begin(&mut out, &["broker.swf", "broker-platform.toml"], &host)?;
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
        registry: registry.clone(),
    };
    let c = Comparison {
        base,
        policies,
        out: Some(a.out.clone()),
        force: a.force.force,
        swf_out: a.swf_out.clone(),
        batsim_jobs: a.batsim_jobs.clone(),
        demo,
        tap: None,
    };
    let done = fairsched_sim::compare::run(&c, early_out, &host)?;
    sayln!();
    say!("{}", done.text(None));
    sayln!("\n{}", done.wrote);
    sayln!(
        "next: `fairsched report {}` draws these runs in report.html",
        shell_word(&a.out)
    );
    Ok(())
}

/// A path as one word of a shell command line (quoted when it must be).
fn shell_word(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+=:,@%".contains(c));
    if plain {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
