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
pub mod run;
pub mod semantics;
pub mod slurm;
pub mod sweep;
pub mod swf_out;
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
