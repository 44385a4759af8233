//! # fairsched-sim
//!
//! Drives the [`fairsched_core::Scheduler`] with a virtual clock: a heap of
//! events keyed on `(time, class, sequence)`, client [`Agent`]s that submit
//! and cancel work as the run unfolds (arrivals streamed from a trace are
//! one: memory grows with live tasks, not with the log), true runtimes kept
//! here and shown to the core only through a
//! [`fairsched_core::RuntimeOracle`], and results pushed into
//! [`fairsched_core::Observer`]s. Every test harness drives this same loop
//! ([`harness`]).
//!
//! ```
//! use fairsched_core::{metrics::Metrics, Platform, Registry, Scheduler, TaskSpec, Time};
//! use fairsched_sim::{Arrival, Simulation};
//! let registry = Registry::builtin();
//! let core = Scheduler::new(
//!     &Platform::pool(1),
//!     1,
//!     registry.build_allocate(&"single-pool".parse().unwrap()).unwrap(),
//!     registry.build_order(&"fifo".parse().unwrap()).unwrap(),
//!     None,
//! );
//! let tasks = (1..=3).map(|i| Ok(Arrival::new(TaskSpec::new(i, 0, 0), Time::ZERO, Time::from_secs(10))));
//! let mut metrics = Metrics::default();
//! Simulation::new(core).run(tasks, &mut metrics).unwrap();
//! assert_eq!(metrics.makespan(), Time::from_secs(30));
//! assert_eq!(metrics.all.mean_wait(), 10.0);
//! ```
//!
//! Around that loop, everything the `fairsched` program runs is a library
//! call taking a [`fairsched_core::Registry`], so a policy you register
//! runs wherever fairsched's do (`docs/extending.md`):
//!
//! - [`RunConfig`]: one replay of a log (platform, organizations, window,
//!   filters, policies by name) with its [`Summary`]; [`compare`]: several
//!   order policies on one log, into a folder of results (`fairsched
//!   simulate`);
//! - [`Experiment`] ([`experiment`]): a paper's protocol as arguments →
//!   instances → parts → typed summary and tables; [`experiments`] holds the
//!   four papers', each taking extra policies (`with`) to run beside the
//!   paper's algorithms; [`experiment::run_local`] runs one here,
//!   [`sweep`] as a Slurm array whose collected files are the same bytes;
//! - [`trace_stats`]: a log's statistics (`fairsched trace stats`).
//!
//! A program tells the library how to show progress and remarks through a
//! [`Host`]; [`Quiet`] shows nothing:
//!
//! ```
//! use fairsched_core::Registry;
//! use fairsched_sim::compare::DEMO_LOG;
//! use fairsched_sim::experiment::run_local;
//! use fairsched_sim::experiments::shapley::experiment::{Args, Shapley};
//! use fairsched_sim::Quiet;
//!
//! // The Shapley paper's Table 1 protocol on 2 windows of the bundled log,
//! // fair-share (any registered order policy) beside the paper's algorithms.
//! let dir = tempfile::tempdir().unwrap();
//! let log = dir.path().join("KTH-SP2.swf.gz");
//! std::fs::write(&log, DEMO_LOG).unwrap();
//! let args = Args {
//!     instances: 2,
//!     trace_files: vec![(log, 100)],
//!     with: vec!["fair-share".parse().unwrap()],
//!     ..Args::default()
//! };
//! let out = dir.path().join("shapley");
//! let done = run_local::<Shapley>(&args, &out, false, &Registry::builtin(), &Quiet).unwrap();
//! assert!(done.summary.stats.iter().any(|s| s.policy == "fair-share"));
//! assert!(out.join("shapley.csv").is_file());
//! print!("{}", done.text);
//! ```

pub mod agent;
pub mod compare;
pub mod config;
pub mod engine;
pub mod errors;
pub mod experiment;
pub mod experiments;
pub mod fairness;
pub mod harness;
pub mod platform_file;
pub mod policies;
pub mod run;
pub mod semantics;
pub mod study;
pub mod sweep;
pub mod swf_out;
pub mod trace_stats;
pub mod workload;

pub use agent::{Agent, AgentCtx, Trace};
pub use config::{MAX_PROCS, Ownership, PlatformInfo, RunConfig, RunReport, TraceInput};
pub use engine::{Arrival, RunStats, Simulation};
pub use errors::SimError;
pub use experiment::{Done, Experiment, Host, Outcome, Quiet};
pub use platform_file::PlatformFile;
pub use run::{RunOutcome, Summary, Sweep, SweepRun};
pub use semantics::{ProcsFrom, RuntimeLimit};
pub use swf_out::{SwfOutHeader, SwfOutStats, SwfSchedule};
