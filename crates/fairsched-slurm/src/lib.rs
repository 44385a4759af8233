//! # fairsched-slurm
//!
//! Slurm reached through its command-line tools, as processes ([`tools`]:
//! `sbatch`, `squeue`, `scancel`): fairsched never links to Slurm, so any
//! Slurm whose tools are on the `PATH` (or named by `$FAIRSCHED_SBATCH`
//! and friends) will do. Experiments submit their instances as job arrays
//! with them (`fairsched_sim::sweep`), and the live service its workers as
//! pilot jobs ([`pilot`]). A site's accounting becomes a workload log
//! ([`history`]: `sacct` → SWF and a platform file), and a window of a log
//! a real queue again ([`replay`]: time-compressed `sbatch` submissions).

pub mod history;
pub mod pilot;
pub mod replay;
#[cfg(feature = "steer")]
pub mod steer;
pub mod tools;

pub use tools::{parse_job_id, run, sbatch, sbatch_env, shell_quote, write_script};

/// Why a Slurm tool, or what fairsched asked of it, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SlurmError {
    /// The caller's mistake (a value an `#SBATCH` line cannot hold).
    #[error("{0}")]
    Usage(String),
    /// A tool missing, failing, or answering what it should not.
    #[error("{0}")]
    Failed(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl SlurmError {
    /// Whether it is the caller's mistake.
    pub fn is_usage(&self) -> bool {
        matches!(self, SlurmError::Usage(_))
    }
}
