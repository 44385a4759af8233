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
    #[error("internal: {0}")]
    Internal(String),
}
