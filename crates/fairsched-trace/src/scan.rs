//! [`scan`]: one streamed pass over a log that gathers what a run needs to know up front.

use std::io::Read;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::errors::Result;
use crate::filter::{FilterCounts, FilterOptions, clean};
use crate::header::{HeaderWarning, SwfHeader};
use crate::reader::{ReadOptions, SwfReader};
use crate::record::SwfJob;

/// Summary of one pass over a log (filters applied with default [`FilterOptions`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceScan {
    /// The file (or stream name).
    pub path: PathBuf,
    /// Every header key in the file.
    pub header: SwfHeader,
    /// Header lines whose value was not used, e.g. `; MaxProcs: abc` (see
    /// [`crate::SwfReader::header_warnings`]); for a [`scan_header`], those before the first
    /// job.
    pub header_warnings: Vec<HeaderWarning>,
    /// Physical lines (comments and blank lines included).
    pub lines: u64,
    /// Job lines parsed (the "raw job count").
    pub raw_jobs: u64,
    /// Distinct user ids among raw jobs, but those of a line whose submit
    /// time is unknown (the Archive's line of -1 for a job it knows nothing
    /// of, whose "user -1" is no user).
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
    /// False for a [`scan_header`]: only the lines before the first job were
    /// read; the counts are zero, and `monotone` is assumed, not known.
    #[serde(skip)]
    pub complete: bool,
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

/// Reads a file's header only: the comment lines before its first job
/// line (a header key that comes later is missed, and the first
/// occurrence of a key is the one kept anyway). The result is not
/// [`complete`](TraceScan::complete): nothing is counted and the submits
/// are assumed in order. [`crate::JobStream::open_with_scan`] then streams
/// the file, fails with [`crate::TraceError::Unsorted`] at the first job out
/// of order, and otherwise gathers the whole scan as it goes
/// ([`crate::JobStream::gathered_scan`]): one read of the file instead of two.
pub fn scan_header(path: impl AsRef<Path>, lenient: bool) -> Result<TraceScan> {
    let mut reader = SwfReader::open_with(path, ReadOptions { lenient })?;
    reader.read_header()?;
    Ok(TraceScan {
        path: reader.path().to_path_buf(),
        header: reader.header().clone(),
        header_warnings: reader.header_warnings().to_vec(),
        lines: 0,
        raw_jobs: 0,
        raw_users: 0,
        users: 0,
        first_submit: None,
        last_submit: None,
        max_allocated_procs: None,
        max_requested_procs: None,
        max_job_procs: None,
        counts: FilterCounts::default(),
        monotone: true,
        complete: false,
    })
}

/// Scans plain SWF text from any reader.
pub fn scan_reader(name: impl Into<PathBuf>, reader: impl Read, lenient: bool) -> Result<TraceScan> {
    scan_swf(SwfReader::with_options(name, reader, ReadOptions { lenient }))
}

/// Scans what an already-open reader has left to read.
pub fn scan_swf<R: Read>(mut reader: SwfReader<R>) -> Result<TraceScan> {
    let mut acc = ScanAcc::default();
    while let Some(rec) = reader.next_job()? {
        acc.add(&rec);
    }
    Ok(acc.finish(&reader))
}

/// What a scan gathers, record by record: shared by [`scan_swf`] and a
/// stream opened with a [`scan_header`].
#[derive(Debug, Default)]
pub(crate) struct ScanAcc {
    counts: FilterCounts,
    raw_users: FxHashSet<i64>,
    users: FxHashSet<i64>,
    first: Option<i64>,
    last: Option<i64>,
    max_alloc: Option<i64>,
    max_req: Option<i64>,
    max_job_procs: Option<u32>,
}

impl ScanAcc {
    pub(crate) fn add(&mut self, rec: &SwfJob) {
        if rec.submit_time >= 0 {
            self.raw_users.insert(rec.user_id);
        }
        if rec.allocated_procs > 0 {
            self.max_alloc = self.max_alloc.max(Some(rec.allocated_procs));
        }
        if rec.requested_procs > 0 {
            self.max_req = self.max_req.max(Some(rec.requested_procs));
        }
        let Some(job) = clean(rec, FilterOptions::default(), &mut self.counts) else {
            return;
        };
        self.users.insert(job.user);
        self.max_job_procs = self.max_job_procs.max(Some(job.procs));
        match self.last {
            Some(l) if job.submit < l => self.counts.non_monotone_submits += 1,
            _ => self.last = Some(job.submit),
        }
        self.first = Some(self.first.map_or(job.submit, |f| f.min(job.submit)));
    }

    /// The scan of everything `reader` read.
    pub(crate) fn finish<R: Read>(mut self, reader: &SwfReader<R>) -> TraceScan {
        self.counts.bad_lines_skipped = reader.bad_lines_skipped();
        TraceScan {
            path: reader.path().to_path_buf(),
            header: reader.header().clone(),
            header_warnings: reader.header_warnings().to_vec(),
            lines: reader.lines(),
            raw_jobs: reader.jobs(),
            raw_users: self.raw_users.len() as u64,
            users: self.users.len() as u64,
            first_submit: self.first,
            last_submit: self.last,
            max_allocated_procs: self.max_alloc,
            max_requested_procs: self.max_req,
            max_job_procs: self.max_job_procs,
            monotone: self.counts.non_monotone_submits == 0,
            counts: self.counts,
            complete: true,
        }
    }
}
