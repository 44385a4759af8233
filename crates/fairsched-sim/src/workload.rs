//! From cleaned trace jobs to simulator arrivals.

use crate::engine::Arrival;
use crate::errors::SimError;
use fairsched_core::{OrgId, TaskId, TaskSpec, Time, UserId};
use fairsched_trace::{Job, TraceError};

/// Converts jobs (in submit order) to arrivals. Task ids are 1, 2, … in
/// stream order; the arrival's `job` keeps the SWF job number (outputs show
/// it, the core never sees it). A job's processors become
/// the task's slots (1 after splitting); its requested time becomes the
/// user estimate; priorities start at 1. Its status (field 11) goes with
/// the arrival, past the core, to the outputs.
pub fn arrivals<I>(jobs: I) -> impl Iterator<Item = Result<Arrival, SimError>>
where
    I: Iterator<Item = Result<Job, TraceError>>,
{
    let mut next = 0u64;
    jobs.map(move |j| {
        let j = j?;
        next += 1;
        Ok(arrival(next, &j))
    })
}

/// One job as an arrival with task id `id`.
pub fn arrival(id: u64, j: &Job) -> Arrival {
    let spec = TaskSpec {
        id: TaskId(id),
        user: UserId(j.user),
        org: OrgId(j.org),
        slots: j.procs,
        priority: 1,
        estimate: j.requested_time.map(Time::from_secs),
        workflow: None,
        optional: false,
        target: None,
    };
    let a = Arrival::new(spec, Time::from_secs(j.submit), Time::from_secs(j.runtime)).job(j.id);
    // A status beyond i8 (the standard's are -1..=5) is not kept: outputs
    // leave it empty and count it as "other".
    match i8::try_from(j.status) {
        Ok(s) => a.log_status(s),
        Err(_) => a,
    }
}
