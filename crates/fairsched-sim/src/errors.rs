//! Simulation errors.

use fairsched_core::{CoreError, SpecError, TaskId, Time};
use fairsched_trace::TraceError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("arrivals out of order: task {task} submitted at {submit}s after the clock reached {now}s")]
    Unsorted { task: TaskId, submit: Time, now: Time },
    #[error(
        "task {task} submitted at {at}s under an id already used in this run (a live task's, or one the \
         engine handed out: see Simulation::fresh_ids_from)"
    )]
    DuplicateTask { task: TaskId, at: Time },
    #[error("agent: {0}")]
    Agent(String),
    #[error("{0}")]
    Config(String),
    /// Arguments refused before any work (the command line's mistake:
    /// `fairsched` exits with status 2).
    #[error("{0}")]
    Usage(String),
    /// An output folder refused or not writable.
    #[error(transparent)]
    Out(#[from] fairsched_report::OutError),
    #[error(transparent)]
    File(#[from] fairsched_report::FileError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error("plotting: {0}")]
    Plot(String),
    /// Slurm's tools failed or answered what they should not.
    #[error(transparent)]
    Slurm(#[from] fairsched_slurm::SlurmError),
    /// A sweep's folder, record or parts.
    #[error("{0}")]
    Sweep(String),
    #[error("internal: {0}")]
    Internal(String),
}

impl SimError {
    /// A mistake in what the user asked ([`SimError::Usage`]).
    pub fn usage(m: impl Into<String>) -> SimError {
        SimError::Usage(m.into())
    }
    /// Whether it is the caller's mistake in the arguments (exit status 2
    /// on the command line): [`SimError::Usage`], or an output folder
    /// refused ([`fairsched_report::OutError::is_usage`]).
    pub fn is_usage(&self) -> bool {
        match self {
            SimError::Usage(_) => true,
            SimError::Out(e) => e.is_usage(),
            SimError::Slurm(e) => e.is_usage(),
            _ => false,
        }
    }
}
