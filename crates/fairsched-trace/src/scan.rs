//! [`scan`]: one streamed pass over a log that gathers what a run needs to know up front.

use std::io::Read;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::errors::Result;
use crate::filter::{FilterCounts, FilterOptions, clean};
use crate::header::SwfHeader;
use crate::reader::{ReadOptions, SwfReader};

/// Summary of one pass over a log (filters applied with default [`FilterOptions`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceScan {
    /// The file (or stream name).
    pub path: PathBuf,
    /// Every header key in the file.
    pub header: SwfHeader,
    /// Physical lines (comments and blank lines included).
    pub lines: u64,
    /// Job lines parsed (the "raw job count").
    pub raw_jobs: u64,
    /// Distinct user ids among raw jobs.
    pub raw_users: u64,
    /// Distinct user ids among kept jobs.
    pub users: u64,
    /// Earliest submit time among kept jobs.
    pub first_submit: Option<i64>,
    /// Latest submit time among kept jobs.
    pub last_submit: Option<i64>,
    /// Largest allocated processor count (field 5) among raw jobs, if any is positive.
    pub max_allocated_procs: Option<i64>,
    /// Largest requested processor count (field 8) among raw jobs, if any is positive.
    pub max_requested_procs: Option<i64>,
    /// Largest processor count of a kept job.
    pub max_job_procs: Option<u32>,
    /// Filter counts with default options (including `bad_lines_skipped` and
    /// `non_monotone_submits`).
    pub counts: FilterCounts,
    /// Whether kept jobs appear in non-decreasing submit order (then [`crate::JobStream`]
    /// streams; otherwise it sorts in memory).
    pub monotone: bool,
}

impl TraceScan {
    /// Seconds between the first and last kept submit (0 for an empty trace).
    pub fn span_seconds(&self) -> i64 {
        match (self.first_submit, self.last_submit) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        }
    }

    /// Kept jobs submitted earlier than a previously kept one.
    pub fn non_monotone_submits(&self) -> u64 {
        self.counts.non_monotone_submits
    }
}

/// Scans a file (plain or gzip). `lenient` skips and counts malformed lines.
pub fn scan(path: impl AsRef<Path>, lenient: bool) -> Result<TraceScan> {
    let reader = SwfReader::open_with(path, ReadOptions { lenient })?;
    scan_swf(reader)
}

/// Scans plain SWF text from any reader.
pub fn scan_reader(name: impl Into<PathBuf>, reader: impl Read, lenient: bool) -> Result<TraceScan> {
    scan_swf(SwfReader::with_options(name, reader, ReadOptions { lenient }))
}

/// Scans what an already-open reader has left to read.
pub fn scan_swf<R: Read>(mut reader: SwfReader<R>) -> Result<TraceScan> {
    let mut counts = FilterCounts::default();
    let mut raw_users = FxHashSet::default();
    let mut users = FxHashSet::default();
    let mut first: Option<i64> = None;
    let mut last: Option<i64> = None;
    let mut max_alloc: Option<i64> = None;
    let mut max_req: Option<i64> = None;
    let mut max_job_procs: Option<u32> = None;
    let opts = FilterOptions::default();

    while let Some(rec) = reader.next_job()? {
        raw_users.insert(rec.user_id);
        if rec.allocated_procs > 0 {
            max_alloc = max_alloc.max(Some(rec.allocated_procs));
        }
        if rec.requested_procs > 0 {
            max_req = max_req.max(Some(rec.requested_procs));
        }
        let Some(job) = clean(&rec, opts, &mut counts) else {
            continue;
        };
        users.insert(job.user);
        max_job_procs = max_job_procs.max(Some(job.procs));
        match last {
            Some(l) if job.submit < l => counts.non_monotone_submits += 1,
            _ => last = Some(job.submit),
        }
        first = Some(first.map_or(job.submit, |f| f.min(job.submit)));
    }
    counts.bad_lines_skipped = reader.bad_lines_skipped();

    Ok(TraceScan {
        path: reader.path().to_path_buf(),
        header: reader.header().clone(),
        lines: reader.lines(),
        raw_jobs: reader.jobs(),
        raw_users: raw_users.len() as u64,
        users: users.len() as u64,
        first_submit: first,
        last_submit: last,
        max_allocated_procs: max_alloc,
        max_requested_procs: max_req,
        max_job_procs,
        monotone: counts.non_monotone_submits == 0,
        counts,
    })
}
