//! Workload transforms: streaming, seeded adapters over iterators of jobs, and processor
//! ownership splits.
//!
//! The adapters work on iterators of [`Job`] and of `Result<Job, E>` alike (see
//! [`JobItem`]): errors pass through untouched, so a [`crate::JobStream`] can be piped
//! straight into them.
//!
//! ```
//! use fairsched_trace::{Job, JobIteratorExt, UserOrgMap};
//!
//! let job = |id, submit, procs, user| Job {
//!     id, submit, runtime: 10, procs, requested_time: None,
//!     user, group: -1, status: 1, org: 0, part: 0,
//! };
//! let jobs = vec![job(1, 5, 2, 7), job(2, 100, 1, 8), job(3, 200, 1, 7)];
//! let out: Vec<Job> = jobs
//!     .into_iter()
//!     .window(0, 150)              // jobs 1 and 2
//!     .split_parallel()            // job 1 becomes two 1-processor parts
//!     .map_orgs(UserOrgMap::new(4, 42).unwrap())
//!     .collect();
//! assert_eq!(out.len(), 3);
//! assert_eq!((out[0].part, out[1].part), (0, 1));
//! assert_eq!(out[0].org, out[1].org); // same user, same organization
//! ```

mod orgs;
mod ownership;
mod split;
mod weeks;
mod window;

pub use orgs::{MapOrgs, MapOrgsWith, UserOrgMap};
pub use ownership::{ownership_uniform, ownership_zipf};
pub use split::SplitParallel;
pub use weeks::{LocalClock, Week, weeks};
pub use window::Window;

use crate::job::Job;

/// An iterator item carrying a job: a [`Job`] or a `Result<Job, E>` (errors pass through).
pub trait JobItem: Sized {
    /// The job, unless this item is an error.
    fn job(&self) -> Option<&Job>;
    /// The job, mutably, unless this item is an error.
    fn job_mut(&mut self) -> Option<&mut Job>;
    /// Wraps a job.
    fn from_job(job: Job) -> Self;
}

impl JobItem for Job {
    fn job(&self) -> Option<&Job> {
        Some(self)
    }
    fn job_mut(&mut self) -> Option<&mut Job> {
        Some(self)
    }
    fn from_job(job: Job) -> Self {
        job
    }
}

impl<E> JobItem for Result<Job, E> {
    fn job(&self) -> Option<&Job> {
        self.as_ref().ok()
    }
    fn job_mut(&mut self) -> Option<&mut Job> {
        self.as_mut().ok()
    }
    fn from_job(job: Job) -> Self {
        Ok(job)
    }
}

/// Transform adapters for any iterator of jobs.
pub trait JobIteratorExt: Iterator + Sized
where
    Self::Item: JobItem,
{
    /// Keeps jobs submitted in `[start, start + len)` and re-bases their submit times to
    /// `submit - start` (so the window starts at 0). The input must be in submit order
    /// (as [`crate::JobStream`] guarantees): reading stops at the first job past the end.
    fn window(self, start: i64, len: i64) -> Window<Self> {
        Window::new(self, start, len)
    }

    /// Splits each q-processor job into q one-processor jobs with the same id, submit and
    /// runtime, and `part` = 0..q.
    ///
    /// Lazy, but q items for every job whatever q: drop the jobs wider than the platform
    /// before (as `fairsched simulate --split-parallel` does), since a log may claim
    /// 4 × 10⁹ processors for a job.
    fn split_parallel(self) -> SplitParallel<Self> {
        SplitParallel::new(self)
    }

    /// Sets `org` from the job's user with `map` (same user, same organization, whatever
    /// the window or order).
    fn map_orgs(self, map: UserOrgMap) -> MapOrgs<Self> {
        MapOrgs::new(self, map)
    }

    /// Sets `org` with `f`, which may refuse a job (e.g. a user no organization lists):
    /// the refused job becomes an error item, `TraceError::Config("job N: <message>")`,
    /// and the stream ends there. For streams of `Result<Job, E>` with
    /// `E: From<TraceError>` (such as [`crate::JobStream`]).
    ///
    /// ```
    /// use fairsched_trace::{Job, JobIteratorExt, TraceError};
    ///
    /// let job = |id, user| Job {
    ///     id, submit: 0, runtime: 10, procs: 1, requested_time: None,
    ///     user, group: -1, status: 1, org: 0, part: 0,
    /// };
    /// let jobs = vec![Ok::<Job, TraceError>(job(1, 12)), Ok(job(2, 7))];
    /// let out: Vec<_> = jobs
    ///     .into_iter()
    ///     .map_orgs_with(|j: &Job| match j.user {
    ///         12 => Ok(1),
    ///         u => Err(format!("user {u} is in no organization")),
    ///     })
    ///     .collect();
    /// assert_eq!(out[0].as_ref().unwrap().org, 1);
    /// assert_eq!(out[1].as_ref().unwrap_err().to_string(),
    ///            "invalid parameter: job 2: user 7 is in no organization");
    /// ```
    fn map_orgs_with<F, E>(self, f: F) -> MapOrgsWith<Self, F>
    where
        Self: Iterator<Item = std::result::Result<Job, E>>,
        E: From<crate::TraceError>,
        F: FnMut(&Job) -> std::result::Result<u32, String>,
    {
        MapOrgsWith::new(self, f)
    }
}

impl<I> JobIteratorExt for I
where
    I: Iterator,
    I::Item: JobItem,
{
}

#[cfg(test)]
pub(crate) fn test_job(id: u64, submit: i64, procs: u32, user: i64) -> Job {
    Job {
        id,
        submit,
        runtime: 10,
        procs,
        requested_time: None,
        user,
        group: -1,
        status: 1,
        org: 0,
        part: 0,
    }
}
