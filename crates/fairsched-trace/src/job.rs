//! [`Job`]: a cleaned job, what the simulator consumes.

use serde::{Deserialize, Serialize};

/// A cleaned job (see [`crate::clean`]): known positive run time and processor count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Job {
    /// SWF job number (field 1); 0 if the log had a negative number there.
    pub id: u64,
    /// Submit time in seconds (field 2; re-based by [`crate::JobIteratorExt::window`]).
    pub submit: i64,
    /// Run time in seconds, > 0 (field 4).
    pub runtime: i64,
    /// Processors, ≥ 1 (field 5, or field 8 when field 5 is unknown).
    pub procs: u32,
    /// The user's runtime estimate (field 9); `None` if unknown (-1) or ≤ 0.
    pub requested_time: Option<i64>,
    /// User id (field 12, may be -1).
    pub user: i64,
    /// Group id (field 13, may be -1).
    pub group: i64,
    /// Status (field 11): 1 completed, 0 failed, 5 cancelled, -1 unknown.
    pub status: i64,
    /// Organization; 0 until set by [`crate::JobIteratorExt::map_orgs`].
    pub org: u32,
    /// Part index after [`crate::JobIteratorExt::split_parallel`] (0..procs of the original), else 0.
    pub part: u32,
}
