//! [`SwfJob`]: one raw job line of a Standard Workload Format log, all 18 fields.

use serde::{Deserialize, Serialize};

/// Names of the 18 SWF fields, in file order (index 0 is field 1).
///
/// These are the names used in [`crate::TraceError::Parse`] messages.
pub const FIELD_NAMES: [&str; 18] = [
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
];

/// The largest value [`crate::SwfReader`] reads in a time field (submit, wait, run,
/// average CPU, requested and think times: fields 2, 3, 4, 6, 9 and 18): 10^12 seconds,
/// over 31,000 years. Real logs span a few years; a larger value is a corrupt or hostile
/// line, refused with its line and field ([`crate::TraceError::Parse`]) rather than
/// saturating later (a submit plus a run time near `i64::MAX` overflows).
pub const MAX_SECONDS: i64 = 1_000_000_000_000;

/// The largest processor count [`crate::SwfReader`] reads (fields 5 and 8): `u32::MAX`,
/// what a [`crate::Job`] holds. A larger count is refused with its line and field instead
/// of being saturated to `u32::MAX`.
pub const MAX_JOB_PROCS: i64 = u32::MAX as i64;

/// One job record of an SWF log, exactly as written (no cleaning).
///
/// `-1` means "unknown" in every field and is kept as `-1` (`-1.0` for the float fields).
/// A submit time below `-1` breaks the format: [`crate::SwfReader`] refuses it (a
/// [`crate::TraceError::Parse`] naming the line; `--lenient` skips it), since SWF counts
/// submit times from the log's start. A job submitted at an unknown time (`-1`, as the
/// Archive's logs write a job line they know nothing of) is read, then dropped and
/// counted by [`crate::clean`] (`submit_unknown`): it cannot be replayed. Time fields above
/// [`MAX_SECONDS`] and processor counts above [`MAX_JOB_PROCS`] are refused the same way.
/// Fields 6, 7 and 10 are `f64` because some logs write decimals there; every other field is an integer (an integer-valued decimal such as `12.0` is accepted on input).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SwfJob {
    /// 1. Job number (a counter starting at 1 in most logs).
    pub job_number: i64,
    /// 2. Submit time, seconds since the log's start (`UnixStartTime`); `-1`
    ///    (unknown) is the only negative value read.
    pub submit_time: i64,
    /// 3. Wait time in the queue, seconds.
    pub wait_time: i64,
    /// 4. Run time (wall clock), seconds.
    pub run_time: i64,
    /// 5. Number of allocated processors.
    pub allocated_procs: i64,
    /// 6. Average CPU time used per processor, seconds.
    pub avg_cpu_time: f64,
    /// 7. Used memory per processor, kilobytes.
    pub used_memory: f64,
    /// 8. Requested number of processors.
    pub requested_procs: i64,
    /// 9. Requested time (the user's runtime estimate), seconds.
    pub requested_time: i64,
    /// 10. Requested memory per processor, kilobytes.
    pub requested_memory: f64,
    /// 11. Status: 1 completed, 0 failed, 5 cancelled (and 2/3/4 for checkpoint records).
    pub status: i64,
    /// 12. User id.
    pub user_id: i64,
    /// 13. Group id.
    pub group_id: i64,
    /// 14. Executable (application) number.
    pub executable: i64,
    /// 15. Queue number.
    pub queue: i64,
    /// 16. Partition number.
    pub partition: i64,
    /// 17. Preceding job number (dependency), or -1.
    pub preceding_job: i64,
    /// 18. Think time from the preceding job, seconds.
    pub think_time: i64,
}

impl SwfJob {
    /// A record with every field unknown (`-1`).
    pub const UNKNOWN: SwfJob = SwfJob {
        job_number: -1,
        submit_time: -1,
        wait_time: -1,
        run_time: -1,
        allocated_procs: -1,
        avg_cpu_time: -1.0,
        used_memory: -1.0,
        requested_procs: -1,
        requested_time: -1,
        requested_memory: -1.0,
        status: -1,
        user_id: -1,
        group_id: -1,
        executable: -1,
        queue: -1,
        partition: -1,
        preceding_job: -1,
        think_time: -1,
    };
}

impl Default for SwfJob {
    /// Same as [`SwfJob::UNKNOWN`].
    fn default() -> Self {
        SwfJob::UNKNOWN
    }
}
