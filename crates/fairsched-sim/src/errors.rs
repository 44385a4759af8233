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
    #[error("{0}")]
    Config(String),
}
