//! One trace-driven run, fully described: which log, which platform, which
//! policies, which seed. The CLI, the tests and the benchmarks all build a
//! [`RunConfig`] and call [`RunConfig::run`].

use crate::agent::Trace;
use crate::engine::{RunStats, Simulation};
use crate::errors::SimError;
use crate::platform_file::PlatformFile;
use crate::semantics::{Limits, ProcsFrom, RuntimeLimit, Timeouts};
use crate::workload::arrivals;
use fairsched_core::{Observer, OrgId, Platform, PolicySpec, Registry, Scheduler, derive_seed};
use fairsched_trace::{
    FilterCounts, Job, JobIteratorExt, JobStream, StreamOptions, TraceError, TraceScan, UserOrgMap,
    ownership_uniform, ownership_zipf, scan, scan_header, scan_reader,
};
use serde::Serialize;
use std::cell::RefCell;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::str::FromStr;

/// Seed streams derived from the master seed.
const SEED_ORGS: u64 = 1;
const SEED_CORE: u64 = 2;

/// Where the log comes from.
#[derive(Clone, Debug)]
pub enum TraceInput {
    Path(PathBuf),
    /// A log embedded in the binary (plain or gzip).
    Bytes {
        name: String,
        data: &'static [u8],
    },
}

impl TraceInput {
    pub fn name(&self) -> String {
        match self {
            TraceInput::Path(p) => p.display().to_string(),
            TraceInput::Bytes { name, .. } => name.clone(),
        }
    }
    fn reader(data: &'static [u8]) -> Box<dyn Read + Send> {
        if data.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::MultiGzDecoder::new(data))
        } else {
            Box::new(data)
        }
    }
    /// One pass over the log: header, counts, monotonicity.
    pub fn scan(&self, lenient: bool) -> Result<TraceScan, TraceError> {
        match self {
            TraceInput::Path(p) => scan(p, lenient),
            TraceInput::Bytes { name, data } => scan_reader(name.as_str(), Self::reader(data), lenient),
        }
    }
    /// The log's header alone ([`fairsched_trace::scan_header`]): enough to
    /// start a run whose platform does not depend on the jobs
    /// ([`RunConfig::sized_by_header`]), which then scans the log as it
    /// reads it ([`RunReport::read`]). An embedded log is scanned whole.
    pub fn scan_header(&self, lenient: bool) -> Result<TraceScan, TraceError> {
        match self {
            TraceInput::Path(p) => scan_header(p, lenient),
            TraceInput::Bytes { .. } => self.scan(lenient),
        }
    }
    /// The cleaned jobs in submit order (their processors from the field
    /// `opts.procs_from` says).
    pub fn jobs(&self, opts: StreamOptions, scan: &TraceScan) -> Result<JobStream, TraceError> {
        match self {
            TraceInput::Path(p) => JobStream::open_with_scan(p, opts, scan),
            TraceInput::Bytes { name, data } => {
                JobStream::from_reader(name.as_str(), Self::reader(data), opts)
            }
        }
    }
}

/// How processors are split among organizations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub enum Ownership {
    Uniform,
    /// Zipf law with exponent `s` (organization i gets ∝ 1/i^s).
    Zipf(f64),
}

impl Ownership {
    /// The default everywhere (CLI, library, experiments): Zipf with
    /// exponent 1, as in the Shapley paper's experiments.
    pub const DEFAULT: Ownership = Ownership::Zipf(1.0);
}

impl Default for Ownership {
    fn default() -> Self {
        Ownership::DEFAULT
    }
}

impl FromStr for Ownership {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "uniform" => Ok(Ownership::Uniform),
            "zipf" => Ok(Ownership::Zipf(1.0)),
            _ => s
                .strip_prefix("zipf:")
                .and_then(|x| x.parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Ownership::Zipf)
                .ok_or_else(|| format!("ownership {s:?}: expected uniform, zipf or zipf:S with S ≥ 0")),
        }
    }
}

impl fmt::Display for Ownership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ownership::Uniform => f.write_str("uniform"),
            Ownership::Zipf(s) => write!(f, "zipf:{s}"),
        }
    }
}

/// The most processors a platform may have: every slot is simulated
/// (16.7 million; the largest machines of the logs have 10⁵).
pub const MAX_PROCS: u32 = 1 << 24;

/// Everything that defines a run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub trace: TraceInput,
    /// Total processors; default: the header's `MaxProcs`, else the widest job.
    pub procs: Option<u32>,
    /// Machine sizes (several machines, each with its own queue).
    pub machines: Option<Vec<u32>>,
    /// Organizations (ignored with `platform_file`).
    pub orgs: u32,
    /// How processors are split among them (ignored with `platform_file`).
    pub ownership: Ownership,
    /// A platform set up by hand (`--platform FILE`): its organizations,
    /// their processors and which users belong to which replace `orgs`,
    /// `ownership` and the random user mapping. The run has one machine of
    /// the file's total size, or `machines`, which must add up to it.
    pub platform_file: Option<PlatformFile>,
    /// `(start, len)` in seconds of the log's submit times.
    pub window: Option<(i64, i64)>,
    /// Each job becomes one task per processor, once jobs wider than the
    /// whole platform are dropped (counted in [`RunReport::too_wide`]).
    pub split_parallel: bool,
    pub seed: u64,
    /// `None`: [`RunConfig::allocate`] decides.
    pub allocate: Option<PolicySpec>,
    pub order: PolicySpec,
    pub control: Option<PolicySpec>,
    /// How the log is read. Its `procs_from` is not read: the run's
    /// [`RunConfig::procs_from`] replaces it.
    pub stream: StreamOptions,
    /// Which SWF field gives a job's processors (default: field 5,
    /// allocated): the stream reads with it.
    pub procs_from: ProcsFrom,
    /// Whether a job running past its requested time is killed there
    /// (default: no, it runs its logged runtime).
    pub runtime_limit: RuntimeLimit,
    /// With several organizations, also compute each one's Shapley value
    /// φ at the end (2^k − 2 coalition schedules of the whole run: see
    /// [`crate::fairness`]); ψ is always computed. Default: no.
    pub phi: bool,
    /// Where the policies' names are looked up: fairsched's own
    /// ([`Registry::builtin`], the default) or a program's, with its own
    /// policies added.
    pub registry: Registry,
}

impl RunConfig {
    /// Replays `trace` with `order` with every default: the platform sized
    /// from the log, one organization (ownership [`Ownership::DEFAULT`] when
    /// there are more), the default allocation, seed 0.
    pub fn new(trace: TraceInput, order: PolicySpec) -> RunConfig {
        RunConfig {
            trace,
            procs: None,
            machines: None,
            orgs: 1,
            ownership: Ownership::DEFAULT,
            platform_file: None,
            window: None,
            split_parallel: false,
            seed: 0,
            allocate: None,
            order,
            control: None,
            stream: StreamOptions::default(),
            procs_from: ProcsFrom::default(),
            runtime_limit: RuntimeLimit::default(),
            phi: false,
            registry: Registry::builtin(),
        }
    }

    /// The allocate policy: the one given, else `single-pool` on one
    /// machine and `least-loaded` on several.
    pub fn allocate(&self) -> PolicySpec {
        self.allocate.clone().unwrap_or_else(|| {
            let several = self.machines.as_ref().is_some_and(|m| m.len() > 1);
            (if several { "least-loaded" } else { "single-pool" })
                .parse()
                .expect("a registered policy")
        })
    }

    /// Checks everything that does not need the trace (the policies, by
    /// building each once; the platform's sizes; the organizations), so a
    /// mistake is reported before any reading. The message names the flag.
    pub fn check(&self) -> Result<(), SimError> {
        self.check_platform()?;
        self.check_policies()
    }

    /// The platform's sizes and the organizations, as given by the flags
    /// (or the platform file).
    fn check_platform(&self) -> Result<(), SimError> {
        let cfg = |m: String| Err(SimError::Config(m));
        match (&self.machines, self.procs) {
            (Some(_), Some(_)) => return cfg("give --procs or --machines, not both".into()),
            (None, Some(0)) => return cfg("--procs 0: the platform needs at least one processor".into()),
            (None, Some(p)) if p > MAX_PROCS => {
                return cfg(format!(
                    "--procs {p}: at most {MAX_PROCS} processors (every slot is simulated)"
                ));
            }
            (Some(m), None) if m.iter().map(|&n| n as u64).sum::<u64>() > MAX_PROCS as u64 => {
                return cfg(format!(
                    "--machines: at most {MAX_PROCS} processors in all (every slot is simulated)"
                ));
            }
            (Some(m), None) if m.is_empty() => {
                return cfg("--machines: give at least one machine size".into());
            }
            (Some(m), None) => {
                if let Some(i) = m.iter().position(|&n| n == 0) {
                    return cfg(format!("--machines: machine {i} has 0 processors"));
                }
            }
            _ => {}
        }
        if let Some(file) = &self.platform_file {
            file.validate()?;
            let total = file.total_procs();
            if total > MAX_PROCS {
                return cfg(format!(
                    "{}: the organizations own {total} processors; at most {MAX_PROCS} (every slot is simulated)",
                    file.path.display()
                ));
            }
            let given = match (&self.machines, self.procs) {
                (Some(m), None) => Some(("--machines", m.iter().map(|&n| u64::from(n)).sum::<u64>())),
                (None, Some(p)) => Some(("--procs", u64::from(p))),
                _ => None,
            };
            if let Some((flag, n)) = given
                && n != u64::from(total)
            {
                return cfg(format!(
                    "{flag} gives {n} processors but {} declares {total} (the organizations' procs): \
                     they must agree",
                    file.path.display()
                ));
            }
            return self.check_phi(file.orgs());
        }
        if self.orgs == 0 {
            return cfg("--orgs 0: there must be at least one organization".into());
        }
        self.check_phi(self.orgs)
    }

    /// `--phi` where φ cannot be computed is refused, not dropped: it needs
    /// one machine and at most [`MAX_SIMULATE_ORGS`] organizations.
    ///
    /// [`MAX_SIMULATE_ORGS`]: crate::fairness::MAX_SIMULATE_ORGS
    fn check_phi(&self, orgs: u32) -> Result<(), SimError> {
        use crate::fairness::MAX_SIMULATE_ORGS;
        if !self.phi {
            return Ok(());
        }
        if orgs as usize > MAX_SIMULATE_ORGS {
            return Err(SimError::Config(format!(
                "--phi: φ needs 2^k − 2 coalition schedules of the whole run and is computed for at \
                 most {MAX_SIMULATE_ORGS} organizations; this run has {orgs} (drop --phi: ψ is \
                 reported without it)"
            )));
        }
        if let Some(m) = self.machines.as_ref().filter(|m| m.len() > 1) {
            return Err(SimError::Config(format!(
                "--phi: φ is defined for one shared pool of processors; --machines gives {} \
                 (drop --phi: ψ is reported without it)",
                m.len()
            )));
        }
        Ok(())
    }

    /// Builds every policy once; the message names the flag.
    fn check_policies(&self) -> Result<(), SimError> {
        let bad = |flag: &str, spec: &PolicySpec, e: fairsched_core::SpecError| {
            SimError::Config(format!("{flag} {spec}: {e}"))
        };
        let allocate = self.allocate();
        let r = &self.registry;
        r.build_allocate(&allocate)
            .map_err(|e| bad("--allocate", &allocate, e))?;
        r.build_order(&self.order)
            .map_err(|e| bad("--policy", &self.order, e))?;
        let orgs = self.platform_file.as_ref().map_or(self.orgs, |f| f.orgs());
        fairsched_core::policy::shapley::reference::check_orgs(&self.order, orgs as usize)
            .map_err(|e| SimError::Config(format!("--policy {e}")))?;
        if let Some(c) = &self.control {
            r.build_control(c).map_err(|e| bad("--control", c, e))?;
        }
        if self.runtime_limit == RuntimeLimit::Kill {
            // A clairvoyant policy is told true runtimes by the simulator's
            // oracle, which knows the logged runtime, not the kill.
            let clairvoyant = if r.build_order(&self.order)?.is_clairvoyant() {
                Some(("--policy", &self.order))
            } else if r.build_allocate(&allocate)?.is_clairvoyant() {
                Some(("--allocate", &allocate))
            } else {
                None
            };
            if let Some((flag, spec)) = clairvoyant {
                return Err(SimError::Config(format!(
                    "--runtime-limit kill does not combine with {flag} {spec}: it reads true runtimes \
                     (clairvoyant), and would be told the logged runtime of a job that is killed earlier"
                )));
            }
        }
        Ok(())
    }
}

/// The platform a run uses, and where its size came from.
#[derive(Clone, Debug, Serialize)]
pub struct PlatformInfo {
    pub machines: Vec<u32>,
    pub total: u32,
    /// `--procs`, `--machines`, `--platform`, `header MaxProcs` or `widest job`.
    pub source: &'static str,
    /// Slots owned by each organization.
    pub per_org: Vec<u32>,
}

/// What a run reports besides the observers' records.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub stats: RunStats,
    pub filters: FilterCounts,
    /// The log's submits were out of order and were sorted in memory.
    pub sorted: bool,
    /// `filters` counted every line of the log (false when a window
    /// stopped a streamed read at its end).
    pub filters_complete: bool,
    /// Jobs dropped because they need more processors than the largest
    /// machine has, or, with `split_parallel`, than the platform has
    /// (checked before the split).
    pub too_wide: u64,
    pub platform: PlatformInfo,
    /// Kept jobs whose processors are not field 5's (with
    /// [`ProcsFrom::Requested`]).
    pub procs_differ: u64,
    /// Run from a header-only scan ([`TraceInput::scan_header`]): the
    /// scan of the whole log, gathered while it was read (`None` when the
    /// run had a full scan, or stopped reading early).
    pub read: Option<TraceScan>,
    /// Tasks killed at their requested time (with [`RuntimeLimit::Kill`]).
    pub killed_at_limit: u64,
}

impl RunConfig {
    /// Whether the platform's size is known from the flags, the platform
    /// file or `scan`'s header alone (not from the widest job), so that a
    /// header-only scan can start the run.
    pub fn sized_by_header(&self, scan: &TraceScan) -> bool {
        self.machines.is_some()
            || self.procs.is_some()
            || self.platform_file.is_some()
            || scan.header.max_procs.is_some_and(|p| p > 0)
    }

    /// Sizes the platform from the flags, the platform file, the header or
    /// the jobs, and splits slots among organizations.
    pub fn platform(&self, scan: &TraceScan) -> Result<(Platform, PlatformInfo), SimError> {
        self.check_platform()?;
        let cfg = |m: String| SimError::Config(m);
        let (machines, source) = match (&self.machines, self.procs, &self.platform_file) {
            (Some(_), Some(_), _) => unreachable!("checked"),
            (Some(m), None, _) => (m.clone(), "--machines"),
            (None, Some(p), _) => (vec![p], "--procs"),
            (None, None, Some(file)) => (vec![file.total_procs()], "--platform"),
            (None, None, None) => match (scan.header.max_procs, self.widest_job(scan)) {
                (Some(p), _) if p > 0 => (vec![p], "header MaxProcs"),
                (_, Some(p)) => (vec![p], "widest job"),
                _ => {
                    return Err(cfg(format!(
                        "{}: no processor count in the header and no job; pass --procs",
                        self.trace.name()
                    )));
                }
            },
        };
        // The header and the jobs are the log's word, not a flag's: bounded
        // here, before a slot is allocated for each processor.
        let total = machines.iter().map(|&n| u64::from(n)).sum::<u64>();
        if total > u64::from(MAX_PROCS) {
            return Err(cfg(format!(
                "{}: {source} gives {total} processors; at most {MAX_PROCS} are simulated (every slot \
                 is): pass --procs or --machines",
                self.trace.name()
            )));
        }
        let total = total as u32;
        let (orgs, per_org) = match &self.platform_file {
            // The sizes were checked to add up to the file's total.
            Some(file) => (file.orgs(), file.procs()),
            // Each organization owns at least one processor: the flag's
            // range is known once the platform is sized.
            None if self.orgs > total => {
                return Err(SimError::usage(format!(
                    "--orgs {}: at most one organization per processor, so 1 to {total} here \
                     (the platform's {total} processors, from {source})",
                    self.orgs
                )));
            }
            None => (
                self.orgs,
                match self.ownership {
                    Ownership::Uniform => ownership_uniform(total, self.orgs)?,
                    Ownership::Zipf(s) => ownership_zipf(total, self.orgs, s)?,
                },
            ),
        };
        let mut owners = per_org
            .iter()
            .enumerate()
            .flat_map(|(o, &n)| std::iter::repeat_n(OrgId(o as u32), n as usize));
        let platform = Platform {
            machines: machines
                .iter()
                .map(|&n| owners.by_ref().take(n as usize).collect())
                .collect(),
            orgs,
        };
        Ok((
            platform,
            PlatformInfo {
                machines,
                total,
                source,
                per_org,
            },
        ))
    }

    /// The widest job of the log: of the kept jobs (field 5, or 8 when 5
    /// is unknown), or with [`ProcsFrom::Requested`] also the largest field 8
    /// of any record (the scan reads field 5).
    fn widest_job(&self, scan: &TraceScan) -> Option<u32> {
        match self.procs_from {
            ProcsFrom::Allocated => scan.max_job_procs,
            ProcsFrom::Requested => {
                let requested = scan
                    .max_requested_procs
                    .map(|p| u32::try_from(p).unwrap_or(u32::MAX));
                scan.max_job_procs.max(requested)
            }
        }
    }

    /// Builds the scheduler for this run.
    pub fn scheduler(&self, platform: &Platform) -> Result<Scheduler, SimError> {
        let r = &self.registry;
        let allocate = r.build_allocate(&self.allocate())?;
        let order = r.build_order(&self.order)?;
        let control = self.control.as_ref().map(|c| r.build_control(c)).transpose()?;
        Ok(Scheduler::new(
            platform,
            derive_seed(self.seed, SEED_CORE),
            allocate,
            order,
            control,
        ))
    }

    /// Runs to the end, pushing every record into `obs`. `scan` comes from
    /// [`TraceInput::scan`] (the caller may show it, or size a progress bar).
    pub fn run(&self, scan: &TraceScan, obs: &mut dyn Observer) -> Result<RunReport, SimError> {
        let (platform, info) = self.platform(scan)?;
        let core = self.scheduler(&platform)?;
        let opts = StreamOptions {
            procs_from: self.procs_from,
            ..self.stream
        };
        let mut stream = self.trace.jobs(opts, scan)?;
        // Read to its end (no window): parsed on a thread of its own.
        if self.window.is_none() {
            stream = stream.read_ahead();
        }
        let sorted = stream.sorted();
        let mut too_wide = 0u64;
        // A job the platform file maps to no organization: the message (the
        // stream ends there with an error, replaced by this message).
        let refused: RefCell<Option<String>> = RefCell::new(None);
        let mut killed = None;
        let stats = {
            let mut jobs: Box<dyn Iterator<Item = Result<Job, TraceError>> + '_> = Box::new(stream.by_ref());
            if let Some((start, len)) = self.window {
                jobs = Box::new(jobs.window(start, len));
            }
            // Jobs too wide for the platform go before the split, which
            // would otherwise make a task of each processor a job claims
            // (4 × 10⁹ for a hostile log): a job needs one machine's
            // processors, or, split, no more tasks than the platform has
            // processors.
            let widest = info.machines.iter().copied().max().unwrap_or(0);
            let limit = if self.split_parallel { info.total } else { widest };
            let too_wide = &mut too_wide;
            jobs = Box::new(jobs.filter(move |j| match j {
                Ok(j) if j.procs > limit => {
                    *too_wide += 1;
                    false
                }
                _ => true,
            }));
            if self.split_parallel {
                jobs = Box::new(jobs.split_parallel());
            }
            if let Some(file) = &self.platform_file {
                let mapper = file.mapper(derive_seed(self.seed, SEED_ORGS));
                let trace = self.trace.name();
                let refused = &refused;
                jobs = Box::new(jobs.map_orgs_with(move |j: &Job| {
                    mapper.org_of(j.user).inspect_err(|e| {
                        *refused.borrow_mut() = Some(format!("{trace}: job {}: {e}", j.id));
                    })
                }));
            } else if self.orgs > 1 {
                jobs =
                    Box::new(jobs.map_orgs(UserOrgMap::new(self.orgs, derive_seed(self.seed, SEED_ORGS))?));
            }
            let mut sim = Simulation::new(core);
            match self.runtime_limit {
                // Fresh ids: 1, 2, … in stream order, and never another agent's.
                RuntimeLimit::Ignore => {
                    sim.add_agent(Trace::with_fresh_ids(arrivals(jobs)));
                }
                // The arrivals keep their ids (1, 2, … in stream order, the
                // same), under which the tasks that will overrun are
                // registered. The limit's agent comes first: at an instant,
                // its kills reach the core before the arrivals.
                RuntimeLimit::Kill => {
                    let limits = Limits::default();
                    let timeouts = Timeouts::new(limits.clone());
                    killed = Some(timeouts.killed());
                    sim.add_agent(timeouts);
                    sim.add_agent(Trace::new(arrivals(jobs).inspect(move |a| {
                        if let Ok(a) = a {
                            limits.register(a);
                        }
                    })));
                }
            }
            sim.run_agents(obs)
        };
        let stats = match (stats, refused.into_inner()) {
            (Ok(stats), _) => stats,
            (Err(_), Some(msg)) => return Err(SimError::Config(msg)),
            (Err(e), None) => return Err(e),
        };
        // A materialized stream (sorted, or from an in-memory log) read
        // everything; a streamed one read up to where the window stopped.
        let filters_complete = self.window.is_none() || stream.loaded_jobs() > 0;
        Ok(RunReport {
            stats,
            filters: stream.counts(),
            filters_complete,
            sorted,
            too_wide,
            platform: info,
            procs_differ: stream.procs_differ(),
            read: stream.gathered_scan().cloned(),
            killed_at_limit: killed.map_or(0, |k| k.get()),
        })
    }
}
