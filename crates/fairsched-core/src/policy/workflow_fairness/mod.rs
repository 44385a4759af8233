//! Workflow fairness (spec/workflow-fairness.md): the control loop that
//! re-prioritizes waiting workflow tasks so that concurrent workflows get
//! resources in proportion to their pending work, and its FCFS baseline.
//!
//! - [`median::UpperMedian`]: incremental upper median (the spec's median
//!   of an even count is the upper middle value).
//! - [`eta::Tracker`]: the η_u state, fed by plain calls (`queued`,
//!   `started`, `phase_started`, `requeued`, `completed`, `completed_at`,
//!   `left`) and read by [`eta::Tracker::eta`], which returns every term of
//!   the spec (T̂_ij, t_u, P_ij, w_ij, W_i, η_u). The Control, the
//!   simulator's η_u series and the τ_u tool share it. The pure terms are
//!   [`eta::estimate_total`], [`eta::p_factor`], [`eta::w_term`] and
//!   [`eta::delta`]; [`eta::end_phases`] turns an `EndRecord::phases` into
//!   what `completed` takes.
//! - `workflow-fairness[tau=0.2,every=0]` ([`control::WorkflowFairness`]),
//!   a Control: Algorithm 1 (evaluate η_u at every status change of a
//!   workflow task — queued, started, requeued, left — or, with
//!   `every > 0`, only at a timer every `every`, kept pending while a
//!   workflow is active) and Algorithm 2 (if η_u > τ, for every workflow
//!   with W_i − W_min > τ and each of its active activities with
//!   w_ij − W_min > τ, raise the Δ_ij oldest waiting tasks with priority ≤
//!   maxPriority to maxPriority + 1, maxPriority taken once per reaction
//!   over the live workflow tasks). Tasks without `spec.workflow`
//!   (background load) are ignored: never counted, never raised. Phase
//!   starts are observed (they feed t_u) but do not trigger an evaluation.
//!   A completed task's phase durations are read from the view at `Left`
//!   (delivered before the task is removed): `TaskView::phase_duration` for
//!   finished phases and `now − since` for the current one, the same values
//!   as `EndRecord::phases`.
//! - `workflow-fcfs` ([`fcfs::WorkflowFcfs`]), an Order: the `priority`
//!   queue with the workflow's submission rank as tie-break.
//!
//! Cost of a reaction: proportional to the active activities, their
//! running tasks and the tasks raised (plus O(log) per raise); never to
//! completed tasks or finished activities.

pub mod control;
pub mod eta;
pub mod fcfs;
pub mod median;

pub use control::WorkflowFairness;
pub use eta::{
    ActivityEta, ActivityKey, ActivityStats, Eta, Tracker, WorkflowEta, delta, end_phases, estimate_total,
    p_factor, w_term,
};
pub use fcfs::WorkflowFcfs;
pub use median::UpperMedian;

/// The Control's registry entry (`workflow-fairness`).
pub const ENTRY: crate::registry::Entry = control::ENTRY;
/// The Order's registry entry (`workflow-fcfs`).
pub const FCFS_ENTRY: crate::registry::Entry = fcfs::ENTRY;
