//! `simulate`'s pipeline as a library: one log replayed under several
//! order policies in parallel ([`Sweep`]), each run's files in its own
//! folder (or the output folder itself for one policy), then the
//! comparison table and `comparison.csv`/`.json` ([`run`]).
//!
//! The log is read once when nothing needs its scan before the runs: no
//! window (whose reading stops at its end), no progress bar (sized by the
//! log's span), a platform sized without the jobs (flags, platform file or
//! the header's `MaxProcs`). Then only the header is read first, each run's
//! stream scans the log as it goes, and the header lines are said when the
//! runs end (the same lines, in the same order). A log found out of order
//! on the way is scanned, and the runs start again on its sorted jobs.
//! Otherwise the whole log is scanned first.

use crate::experiment::{Host, begin, open_out};
use crate::{
    ProcsFrom, RunConfig, RuntimeLimit, SimError, Summary, Sweep, SweepRun, SwfOutHeader, SwfSchedule,
};
use fairsched_core::{Fanout, Kind, Observer, PolicySpec};
use fairsched_report::aggregates::OrgUtility;
use fairsched_report::files::{FOLDER_FILES, FileError, LOCK, MANIFEST, partial};
use fairsched_report::sim_files::{FairnessRow, RunsCsv, fairness_csv};
use fairsched_report::{BatsimJobs, OutDir, Table, fixed};
use fairsched_trace::{FilterOptions, TraceError, TraceInfo, TraceScan};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// The demo log embedded in the library (see data/PROVENANCE.md): what
/// `fairsched simulate` replays when no `--trace` is given.
pub const DEMO_LOG: &[u8] = include_bytes!("../../../data/KTH-SP2-1996-2.1-cln.swf.gz");
/// Its name in outputs.
pub const DEMO_NAME: &str = "KTH-SP2-1996-2.1-cln.swf.gz (bundled)";
/// Policies compared when none is given.
pub const DEMO_POLICIES: &[&str] = &["fcfs", "easy", "first-fit", "round-robin", "fair-share"];
/// Organizations in the demo when none is given, so that the
/// organization-level policies have something to share.
pub const DEMO_ORGS: u32 = 5;

/// A comparison to run.
pub struct Comparison {
    /// Everything but the order policy (`order` is overwritten by each of
    /// `policies`).
    pub base: RunConfig,
    /// The order policies, at least one; several run in parallel, each
    /// into a folder of its own.
    pub policies: Vec<PolicySpec>,
    /// The output folder; `None` writes no file: the figures are the
    /// [`Compared`]'s and the tap's (the Python package without `out`).
    pub out: Option<PathBuf>,
    /// Write into a folder of other files.
    pub force: bool,
    /// The schedule as SWF (a plain name: in each run's folder).
    pub swf_out: Option<PathBuf>,
    /// The schedule as Batsim's jobs.csv (placed as `swf_out`).
    pub batsim_jobs: Option<PathBuf>,
    /// The demo (no policy given): said, with a note on rigid jobs.
    pub demo: bool,
    /// Sees each run beside its files (a binding's tables in memory).
    pub tap: Option<std::sync::Arc<dyn Tap>>,
}

/// What sees each run of a comparison besides its files: the Python
/// package's tables, built from the same observations as the files.
pub trait Tap: Send + Sync {
    /// An observer of run `index` (in policy order) named `name`. A run
    /// started again (a log found out of order) gets a new one.
    fn run(&self, index: usize, name: &str) -> Box<dyn TapRun>;
}

/// One run's part of a [`Tap`].
pub trait TapRun: Observer + Send {
    /// The run ended well: its summary, metrics, and its organizations'
    /// processors, names and utilities (as `orgs.csv` has them).
    fn finish(self: Box<Self>, run: TapDone<'_>);
}

/// What a finished run hands its [`TapRun`].
pub struct TapDone<'a> {
    pub summary: &'a Summary,
    pub metrics: &'a fairsched_core::metrics::Metrics,
    pub per_org: &'a [u32],
    pub names: &'a [String],
    pub utility: Option<&'a [OrgUtility]>,
}

/// Progress bars of the runs of a comparison (a terminal's).
pub trait RunBars: Sync {
    /// Whether bars are shown (then the log is scanned before the runs,
    /// to size them).
    fn shown(&self) -> bool;
    /// A bar over simulated time `[from, from + span)` seconds for `label`.
    fn bar(&self, label: &str, from: i64, span: u64) -> Box<dyn RunBar>;
}

/// One run's progress: an observer of its simulated time.
pub trait RunBar: Observer {
    fn finish(&self);
}

struct NoBars;
impl RunBars for NoBars {
    fn shown(&self) -> bool {
        false
    }
    fn bar(&self, _: &str, _: i64, _: u64) -> Box<dyn RunBar> {
        Box::new(NoBar)
    }
}
struct NoBar;
impl Observer for NoBar {
    fn wants_steps(&self) -> bool {
        false
    }
}
impl RunBar for NoBar {
    fn finish(&self) {}
}

/// What a program shows of a comparison: [`Host`]'s, standard output as
/// it goes, and the runs' bars.
pub trait CompareHost: Host {
    /// Text for standard output, said as the run goes (the log's lines).
    fn say(&self, _text: &str) {}
    /// Bars for `runs` runs.
    fn bars(&self, _runs: usize) -> Box<dyn RunBars + '_> {
        Box::new(NoBars)
    }
}

impl CompareHost for crate::experiment::Quiet {}

/// What a comparison gives.
pub struct Compared {
    /// Each run's summary, in policy order.
    pub summaries: Vec<Summary>,
    /// The comparison as comparison.csv has it.
    pub table: Table,
    /// The comparison as printed (the columns that fit 80).
    pub shown: Table,
    /// Its fairness figures, printed under it: Jain's indices and each
    /// organization's received against owned share.
    pub fairness: Table,
    /// The last line: what was written, and where.
    pub wrote: String,
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
    Other(SimError),
}

impl<E: Into<SimError>> From<E> for RunError {
    fn from(e: E) -> RunError {
        RunError::Other(e.into())
    }
}

impl RunError {
    fn into_sim(self) -> SimError {
        match self {
            RunError::Other(e) => e,
            RunError::Log(e) => e.into(),
            // Never left after the second attempt, which has a full scan.
            RunError::Unsorted => SimError::Internal("the log's submits are out of order".into()),
        }
    }
}

/// The columns of comparison.csv and comparison.json: times in seconds,
/// percentiles nearest-rank (see `definitions` in summary.json).
pub const COMPARISON: [&str; 24] = [
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

/// The fairness figures printed under the comparison: summary.json's
/// Jain indices and `org_shares`.
const PRINTED_FAIRNESS: [&str; 4] = [
    "policy",
    "jain_users",
    "jain_orgs",
    "received/owned % by organization",
];

/// Organizations listed one by one in the printed fairness table; past
/// that, the two furthest from their share.
const PRINTED_ORGS: usize = 6;

/// One run's printed fairness row.
fn printed_fairness_row(label: String, s: &Summary) -> [String; 4] {
    let f = |x: Option<f64>| x.map(|x| fixed(x, 3)).unwrap_or_else(|| "-".into());
    let pct = |x: Option<f64>| x.map(|x| fixed(100.0 * x, 0)).unwrap_or_else(|| "-".into());
    let pair = |o: &crate::run::OrgShareLine| format!("{}/{}", pct(o.received_share), pct(o.owned_share));
    let shares = if s.org_shares.len() <= PRINTED_ORGS {
        s.org_shares.iter().map(pair).collect::<Vec<_>>().join(" ")
    } else {
        // The least and the most served against their share.
        let ratio = |o: &&crate::run::OrgShareLine| match (o.received_share, o.owned_share) {
            (Some(r), Some(w)) if w > 0.0 => r / w,
            _ => f64::NAN,
        };
        let known: Vec<&crate::run::OrgShareLine> =
            s.org_shares.iter().filter(|o| !ratio(o).is_nan()).collect();
        let by =
            |a: &&&crate::run::OrgShareLine, b: &&&crate::run::OrgShareLine| ratio(a).total_cmp(&ratio(b));
        match (known.iter().min_by(by), known.iter().max_by(by)) {
            (Some(lo), Some(hi)) => format!(
                "min {} {} … max {} {} ({} orgs)",
                lo.name,
                pair(lo),
                hi.name,
                pair(hi),
                s.org_shares.len()
            ),
            _ => "-".into(),
        }
    };
    [
        label,
        f(s.jain_users_bsld.index),
        f(s.jain_orgs_bsld.index),
        shares,
    ]
}

impl Compared {
    /// What `fairsched simulate` prints: the comparison, its fairness
    /// figures, the notes, and where every figure is (`figures`; default:
    /// comparison.csv, or summary.json for one policy).
    pub fn text(&self, figures: Option<&str>) -> String {
        let mut main = self.shown.clone();
        let mut fair = self.fairness.clone();
        fair.notes = std::mem::take(&mut main.notes);
        fair.notes.extend(self.fairness.notes.iter().cloned());
        let several = self.summaries.len() > 1;
        let figures = figures.unwrap_or(if several { "comparison.csv" } else { "summary.json" });
        fair.notes.push(format!("Every figure: {figures}."));
        format!("{}\n{}", main.to_text(), fair.to_text())
    }
}

/// The log's line: its jobs, users, span, and what the filters took out.
fn trace_lines(scan: &TraceScan, name: &str, drops: FilterOptions) -> String {
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
    let mut s = format!(
        "trace: {name}: {} jobs, {} kept{before}, {} users, span {} s\n",
        info.raw_jobs, c.kept, info.users, info.span_seconds
    );
    let filters: Vec<String> = c
        .rows()
        .iter()
        .filter(|(k, n, _)| *n > 0 && !matches!(*k, "records" | "kept"))
        .map(|(k, n, what)| format!("{k} {n} ({what})"))
        .collect();
    if !filters.is_empty() {
        s += &format!("filters: {}\n", filters.join("; "));
    }
    s
}

/// `--swf-out` and `--batsim-jobs`: where the schedule files go, checked
/// before anything is read.
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
    fn check(c: &Comparison, runs: usize) -> Result<ScheduleFiles, SimError> {
        let target = |flag: &str, given: &Option<PathBuf>| -> Result<Option<Target>, SimError> {
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
                    return Err(SimError::usage(format!(
                        "--{flag} {n}: the run writes a file of that name in its folder; choose another"
                    )));
                }
                return Ok(Some(Target::Name(n)));
            }
            if p.file_name().is_none() {
                return Err(SimError::usage(format!(
                    "--{flag} {}: not a file name",
                    p.display()
                )));
            }
            if runs > 1 {
                return Err(SimError::usage(format!(
                    "--{flag} {}: {runs} policies run and one file cannot hold several schedules; \
                     give a plain file name, written in each policy's folder ({}/<policy>/NAME)",
                    p.display(),
                    c.out.as_deref().unwrap_or(Path::new("OUT")).display()
                )));
            }
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                return Err(SimError::usage(format!(
                    "--{flag} {}: folder {} does not exist",
                    p.display(),
                    dir.display()
                )));
            }
            Ok(Some(Target::Path(p.clone())))
        };
        if let (Some(s), Some(b)) = (&c.swf_out, &c.batsim_jobs)
            && s == b
        {
            return Err(SimError::usage(format!(
                "--swf-out and --batsim-jobs both name {}",
                s.display()
            )));
        }
        Ok(ScheduleFiles {
            swf: target("swf-out", &c.swf_out)?,
            batsim: target("batsim-jobs", &c.batsim_jobs)?,
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
        host: &dyn Host,
    ) -> Result<(), SimError> {
        if let (Some(t), Some(s)) = (&self.swf, rec.swf) {
            let path = t.resolve(run_dir.path());
            let t = host.tool();
            let who = SwfOutHeader {
                generator: format!("{} {} (commit {})", t.name, t.version, t.commit),
                command: t.command,
            };
            run_dir.stage_with(&path, |f| -> Result<(), SimError> {
                s.write_into(f, &path, config, &summary.platform, &scan.header, &who)
                    .map_err(|e| SimError::Io {
                        what: format!("--swf-out {}", path.display()),
                        source: std::io::Error::other(e.to_string()),
                    })?;
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

/// Warnings said before a comparison runs: an order policy that decides
/// between organizations, run with one, is a plain queue.
pub fn one_org_warnings(c: &Comparison) -> Vec<String> {
    let orgs = c.base.platform_file.as_ref().map_or(c.base.orgs, |f| f.orgs());
    if orgs != 1 {
        return Vec::new();
    }
    let file = c.base.platform_file.is_some();
    c.policies
        .iter()
        .filter(|p| c.base.registry.entry(Kind::Order, &p.name).is_ok_and(|e| e.orgs))
        .map(|p| {
            format!(
                "warning: {} shares processors between organizations, and this run has one{}: \
                 every job is in the same queue.{}",
                p.name,
                if file { "" } else { " (--orgs defaults to 1)" },
                if file {
                    ""
                } else {
                    " Give --orgs K or --platform FILE."
                }
            )
        })
        .collect()
}

/// Checks a comparison before anything is read: every policy and flag
/// (the message names the flag; a refusal is [`SimError::Usage`]).
pub fn check(c: &Comparison) -> Result<Sweep, SimError> {
    checked(c).map(|(sweep, _)| sweep)
}

/// [`check`], with where the schedule files go.
fn checked(c: &Comparison) -> Result<(Sweep, ScheduleFiles), SimError> {
    if c.policies.is_empty() {
        return Err(SimError::usage("give at least one --policy"));
    }
    let sweep = Sweep::over_orders(&c.base, &c.policies);
    for r in &sweep.runs {
        r.config.check().map_err(|e| SimError::usage(e.to_string()))?;
    }
    if c.out.is_none() && (c.swf_out.is_some() || c.batsim_jobs.is_some()) {
        return Err(SimError::usage(
            "--swf-out and --batsim-jobs write into the output folder: give one",
        ));
    }
    let files = ScheduleFiles::check(c, sweep.runs.len())?;
    Ok((sweep, files))
}

/// Runs the comparison: checks it, opens the output folder (or uses
/// `out`, opened by the caller: a replay of a broker's history writes its
/// log there first), runs every policy and writes every file (none
/// without a folder: `c.out` and `out` both `None`); the table and the
/// last line are the caller's to print.
pub fn run(c: &Comparison, out: Option<OutDir>, host: &dyn CompareHost) -> Result<Compared, SimError> {
    let warnings = one_org_warnings(c);
    for w in &warnings {
        host.note(w);
    }
    let (sweep, schedule_files) = checked(c)?;
    let mut out = match (out, &c.out) {
        (Some(out), _) => Some(out),
        (None, Some(path)) => Some(open_out(path, c.force, host)?),
        (None, None) => None,
    };
    let base = &c.base;
    let lenient = base.stream.lenient;
    let trace_name = base.trace.name();
    let orgs = base.platform_file.as_ref().map_or(base.orgs, |f| f.orgs());

    let t0 = Instant::now();
    let bars = host.bars(sweep.runs.len());
    let mut scan = if base.window.is_none() && !bars.shown() {
        let head = base.trace.scan_header(lenient)?;
        if base.sized_by_header(&head) {
            head
        } else {
            base.trace.scan(lenient)?
        }
    } else {
        base.trace.scan(lenient)?
    };
    let (_, platform) = base.platform(&scan)?;
    let header = |scan: &TraceScan| {
        let mut s = trace_lines(scan, &trace_name, base.stream.filter);
        s += &format!(
            "platform: {} processors ({}){}, {} organization(s){}, seed {}\n",
            platform.total,
            platform.source,
            if platform.machines.len() > 1 {
                format!(" as machines {:?}", platform.machines)
            } else {
                String::new()
            },
            orgs,
            match &base.platform_file {
                Some(p) => format!(" owning {} (from {})", brief(&platform.per_org), p.path.display()),
                None if orgs > 1 => format!(" owning {} ({})", brief(&platform.per_org), base.ownership),
                None => String::new(),
            },
            base.seed
        );
        if base.procs_from != ProcsFrom::default() || base.runtime_limit != RuntimeLimit::default() {
            s += &format!(
                "semantics: processors from {} (field {}), runtime limit {} (docs/semantics.md)\n",
                base.procs_from,
                match base.procs_from {
                    ProcsFrom::Allocated => "5, else 8",
                    ProcsFrom::Requested => "8, else 5",
                },
                base.runtime_limit
            );
        }
        if c.demo {
            s += &format!(
                "demo: no --policy given, comparing {}\n",
                DEMO_POLICIES.join(", ")
            );
        }
        host.say(&s);
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
            host.note(&format!("warning: {w}{instead}"));
        }
    };
    if scan.complete {
        header(&scan);
    }

    let several = sweep.runs.len() > 1;
    // The manifest lists every entry before the first is written.
    let planned: Vec<String> = if several {
        let mut p: Vec<String> = sweep.runs.iter().map(|r| format!("{}/", r.name)).collect();
        p.extend(["comparison.csv".into(), "comparison.json".into()]);
        // The schedule files in each run's folder: the next run clears them.
        if let Some(out) = out.as_mut() {
            for name in schedule_files.in_run_folder() {
                out.inside(&name)?;
            }
        }
        p
    } else {
        let mut p: Vec<String> = FOLDER_FILES.iter().map(|f| f.to_string()).collect();
        p.extend(schedule_files.in_run_folder());
        p
    };
    if let Some(out) = out.as_mut() {
        begin(out, &planned.iter().map(String::as_str).collect::<Vec<_>>(), host)?;
    }
    // Progress is measured in simulated time: the trace's span, or the window.
    let (from, span) = match base.window {
        Some((start, len)) => (start, len as u64),
        None => (scan.first_submit.unwrap_or(0), scan.span_seconds().max(0) as u64),
    };
    // A run's files appear together when it is done (its commit, summary
    // last): a run stopped by an error or a signal leaves none of them.
    let run_one = |r: &SweepRun, scan: &TraceScan| -> Result<RunDone, RunError> {
        let run_dir = match &out {
            Some(out) if several => Some(out.run_dir(&r.name)?),
            Some(out) => Some(out.here()?),
            None => None,
        };
        // tasks.csv and runs.csv as the run goes, with a folder to go in.
        let mut tables = match &run_dir {
            Some(d) => Some((d.tasks_csv()?, RunsCsv::default())),
            None => None,
        };
        let mut bar = bars.bar(&r.name, from, span);
        let mut schedule = schedule_files.recorders(r.config.split_parallel);
        let mut tap = c.tap.as_ref().map(|t| {
            let index = sweep.runs.iter().position(|x| std::ptr::eq(x, r)).unwrap_or(0);
            t.run(index, &r.name)
        });
        let done = {
            let mut observers: Vec<&mut dyn Observer> = Vec::with_capacity(4);
            if let Some((csv, runs_csv)) = tables.as_mut() {
                observers.push(csv);
                observers.push(runs_csv);
            }
            observers.push(bar.as_mut());
            schedule.add_to(&mut observers);
            if let Some(t) = tap.as_mut() {
                observers.push(t.as_mut());
            }
            r.config.execute(scan, &mut Fanout(observers))
        };
        bar.finish();
        let done = match done {
            Err(SimError::Trace(TraceError::Unsorted { .. })) if !scan.complete => {
                return Err(RunError::Unsorted);
            }
            // The log's fault, whatever the policy: said as the scan says it.
            Err(SimError::Trace(e)) => return Err(RunError::Log(e)),
            Err(e) => {
                return Err(RunError::Other(SimError::Config(format!(
                    "policy {}: {e}",
                    r.config.order
                ))));
            }
            Ok(d) => d,
        };
        if let (Some(run_dir), Some((csv, runs_csv))) = (&run_dir, tables) {
            run_dir.finish_tasks_csv(csv)?;
            run_dir.stage(&run_dir.path().join("runs.csv"), &runs_csv.into_bytes())?;
            // The whole header, read by now either way.
            let read = done.read.as_ref().unwrap_or(scan);
            schedule_files.write(schedule, run_dir, &r.config, &done.summary, read, host)?;
        }
        let mut summary = done.summary;
        summary.tool = Some(host.tool());
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
        if let (Some(run_dir), Some(fair)) = (&run_dir, &summary.fairness) {
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
        if let Some(run_dir) = &run_dir {
            run_dir.write_results(
                &done.metrics,
                &summary.platform.per_org,
                &names,
                utility.as_deref(),
                &summary,
            )?;
        }
        if let Some(t) = tap {
            t.finish(TapDone {
                summary: &summary,
                metrics: &done.metrics,
                per_org: &summary.platform.per_org,
                names: &names,
                utility: utility.as_deref(),
            });
        }
        let files = match run_dir {
            Some(run_dir) => run_dir.commit()?,
            None => Vec::new(),
        };
        Ok(RunDone {
            summary,
            read: done.read,
            files,
        })
    };
    let mut results = sweep.run(|r| run_one(r, &scan));
    if results.iter().any(|r| matches!(r, Err(RunError::Unsorted))) {
        // Out of order: scan the log, whose jobs are then sorted, and run again.
        scan = base.trace.scan(lenient)?;
        header(&scan);
        results = sweep.run(|r| run_one(r, &scan));
    }
    let mut summaries: Vec<Summary> = Vec::new();
    let mut read = None;
    let mut run_files: Vec<PathBuf> = Vec::new();
    for r in results {
        if let (Err(RunError::Log(_)), Some(out)) = (&r, &out)
            && !scan.complete
            && !out.had_manifest()
        {
            // A malformed log found while read once: as when it is scanned
            // first, the new folder keeps no manifest of files never written.
            out.cleaner().clean();
            let _ = std::fs::remove_file(out.join(MANIFEST));
            if several {
                for run in &sweep.runs {
                    let _ = std::fs::remove_dir(out.join(&run.name)); // if empty
                }
            }
        }
        let done = r.map_err(RunError::into_sim)?;
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
            None => base.trace.scan(lenient)?,
        };
        header(&scan);
    }
    let renamed: Vec<&SweepRun> = sweep
        .runs
        .iter()
        .filter(|r| r.name != r.config.order.slug())
        .collect();

    let mut t = Table::new(COMPARISON);
    let mut shown = Table::new(PRINTED);
    let mut fairness = Table::new(PRINTED_FAIRNESS);
    for (s, r) in summaries.iter().zip(&sweep.runs) {
        // A spec given twice: the row says which folder it is.
        let label = if r.name == r.config.order.slug() {
            s.policy.clone()
        } else {
            format!("{} ({})", s.policy, r.name)
        };
        t.row(comparison_row(label.clone(), s));
        shown.row(printed_row(label.clone(), s));
        fairness.row(printed_fairness_row(label, s));
    }
    for w in &warnings {
        t.note(w.clone());
    }
    for r in &renamed {
        t.note(match &c.out {
            Some(out) => format!(
                "{} was given more than once: this run is in {}",
                r.config.order,
                out.join(&r.name).display()
            ),
            None => format!(
                "{} was given more than once: this run is {}",
                r.config.order, r.name
            ),
        });
    }
    if let Some(s) = summaries.first() {
        if s.too_wide > 0 {
            t.note(format!(
                "{} job(s) dropped: wider than {}",
                s.too_wide,
                if base.split_parallel {
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
    if let (Some((start, len)), Some(s)) = (base.window, summaries.first())
        && s.jobs == 0
    {
        host.note(&format!(
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
    if c.demo && !base.split_parallel {
        t.note(
            "round-robin and fair-share serve each organization's jobs in order: with rigid parallel jobs \
             a wide head waits while other organizations' narrow jobs fill the machine. Their papers \
             split jobs into sequential tasks: try `fairsched simulate --split-parallel`.",
        );
    }
    // Every result file is written before the table is printed.
    let top = match out.as_mut() {
        Some(out) if several => out.write_set(&[
            ("comparison.csv", t.to_csv().as_bytes()),
            (
                "comparison.json",
                &fairsched_report::files::json_bytes(&t.to_json()),
            ),
        ])?,
        _ => Vec::new(),
    };
    // The folder's path, as given (or as the caller opened it).
    let folder_path = match out {
        Some(out) => {
            let path = c.out.clone().unwrap_or_else(|| out.path().to_path_buf());
            out.finish()?;
            Some(path)
        }
        None => None,
    };
    shown.notes = t.notes.clone();
    shown.note(
        "wait_s, bsld: mean wait (s) and mean bounded slowdown; p90_, p99_: their percentiles \
         (nearest rank); util: utilization.",
    );
    fairness.note(
        "jain_users, jain_orgs: Jain's index of the users' and of the organizations' mean bounded \
         slowdowns (1 when all are equal, down to 1/n); received/owned: each organization's share \
         of the processor time its tasks held against its share of the processors, in %. When \
         every task ran to its end, received shares are the workload's whatever the policy: they \
         compare the organizations' demand with what they own; the waits and Jain's indices \
         compare the policies.",
    );
    let Some(out_path) = folder_path else {
        return Ok(Compared {
            summaries,
            table: t,
            shown,
            fairness,
            wrote: String::new(),
        });
    };
    // What was written, from the lists of files put in place.
    let out_path = out_path.as_path();
    let folder = if several {
        run_files.first().and_then(|f| f.parent()).unwrap_or(out_path)
    } else {
        out_path
    };
    let mut each: Vec<String> = run_files
        .iter()
        .map(|f| schedule_files.label(f, folder))
        .collect();
    // In the order the README lists them; schedule files last.
    each.sort_by_key(|f| {
        FOLDER_FILES
            .iter()
            .position(|n| n == f)
            .unwrap_or(FOLDER_FILES.len())
    });
    let folders: Vec<&str> = sweep.runs.iter().map(|r| r.name.as_str()).collect();
    let wrote = format!(
        "wrote {} in {:.2} s: {}",
        out_path.display(),
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
    Ok(Compared {
        summaries,
        table: t,
        shown,
        fairness,
        wrote,
    })
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
