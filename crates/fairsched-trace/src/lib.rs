//! Workload traces for fairsched: the Standard Workload Format (SWF) of the Parallel
//! Workloads Archive, read and written in a streamed way (plain or gzip), cleaned with
//! counted filters, and transformed (time windows, one job per processor, users to
//! organizations, processor ownership).
//!
//! The pipeline, stage by stage:
//!
//! 1. [`SwfReader`] turns text into raw [`SwfJob`] records (all 18 fields, `-1` = unknown;
//!    a negative submit time, a time above [`MAX_SECONDS`] or a processor count above
//!    [`MAX_JOB_PROCS`] is a line error) and collects the `; Key: value` [`SwfHeader`]
//!    (a well-known numeric key whose value is not valid, such as `; MaxProcs: abc`, is set
//!    aside with a [`HeaderWarning`] naming its line). It parses ≥ 300 MB/s of text on one
//!    core (large chunks, `memchr` for newlines, hand-written number parsing, no per-line
//!    allocation).
//! 2. [`clean`] turns a record into a [`Job`] or drops it, counting why in
//!    [`FilterCounts`] (unknown run time, no processor count, optional status filters).
//! 3. [`scan`] makes one pass to learn the header, the counts, the users and whether
//!    submit times are in order; [`JobStream`] then yields cleaned jobs in submit order
//!    (processors from field 5 or 8: [`ProcsFrom`]), streaming when the file is already
//!    sorted and sorting (stably) in memory otherwise. When only the header is needed
//!    before the jobs, [`scan_header`] reads it alone and the stream scans as it goes
//!    (one read of the file; a job out of order is then an error, and the caller scans
//!    and starts again).
//! 4. [`JobIteratorExt`] adds the transforms: [`window`](JobIteratorExt::window),
//!    [`split_parallel`](JobIteratorExt::split_parallel),
//!    [`map_orgs`](JobIteratorExt::map_orgs); [`ownership_uniform`] / [`ownership_zipf`]
//!    split the machine's processors among organizations; [`weeks`] cuts a log into
//!    local-time Monday–Friday weeks, with a [`LocalClock`] read from the header.
//! 5. [`TraceInfo`] prints (or serializes) what a scan found.
//!
//! Every failure is a [`TraceError`] naming the file, and for bad lines the line and the
//! field: `HPC2N.swf:1234: field 4 (run_time): "abc" is not a number`. Nothing here panics
//! on user input.
//!
//! # Example
//!
//! ```
//! use fairsched_trace::{JobIteratorExt, JobStream, StreamOptions, SwfReader, UserOrgMap};
//!
//! let text = "\
//! ; MaxProcs: 8
//! ; job submit wait run alloc cpu mem req_p req_t req_m status user group exe queue part prec think
//! 1   0 0 100  4 -1 -1 4 200 -1 1 7 1 -1 -1 -1 -1 -1
//! 2  40 0  -1  2 -1 -1 2 200 -1 5 8 1 -1 -1 -1 -1 -1
//! 3  30 0  50 -1 -1 -1 2  60 -1 1 8 1 -1 -1 -1 -1 -1
//! 4  20 0  10  1 -1 -1 1  60 -1 1 9 1 -1 -1 -1 -1 -1
//! ";
//! // Raw records and the header.
//! let mut reader = SwfReader::from_reader("example.swf", text.as_bytes());
//! let raw: Vec<_> = reader.by_ref().collect::<Result<_, _>>()?;
//! assert_eq!(raw.len(), 4);
//! assert_eq!(reader.header().max_procs, Some(8));
//!
//! // Cleaned jobs in submit order: job 2 (run time -1) is dropped, job 3 takes its
//! // requested processor count, and job 4 (submitted before job 3) is moved up.
//! let stream = JobStream::from_reader("example.swf", text.as_bytes(), StreamOptions::default())?;
//! assert!(stream.sorted());
//! let counts = stream.counts();
//! assert_eq!((counts.runtime_unknown, counts.procs_from_requested, counts.kept), (1, 1, 3));
//! let jobs: Vec<_> = stream
//!     .window(0, 60)
//!     .split_parallel()
//!     .map_orgs(UserOrgMap::new(2, 42)?)
//!     .collect::<Result<_, _>>()?;
//! let parts: Vec<(u64, i64, u32)> = jobs.iter().map(|j| (j.id, j.submit, j.part)).collect();
//! assert_eq!(parts, [(1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 0, 3), (4, 20, 0), (3, 30, 0), (3, 30, 1)]);
//! # Ok::<(), fairsched_trace::TraceError>(())
//! ```

#![warn(missing_docs)]

mod errors;
mod filter;
mod header;
mod info;
mod job;
mod parse;
mod reader;
mod record;
mod scan;
pub mod stats;
mod stream;
pub mod toml_key;
pub mod transform;
pub mod workflow;
mod writer;

pub use errors::{Result, TraceError};
pub use filter::{
    FilterCounts, FilterOptions, ProcsFrom, STATUS_CANCELLED, STATUS_FAILED, clean, clean_with,
};
pub use header::{HeaderWarning, SwfHeader};
pub use info::{
    PROCESSORS_FROM_HEADER, PROCESSORS_FROM_JOBS, PROCESSORS_FROM_JOBS_MAXPROCS_IGNORED, PROCESSORS_UNKNOWN,
    TraceInfo,
};
pub use job::Job;
pub use reader::{FileSource, MAX_LINE, ReadOptions, SwfReader};
pub use record::{FIELD_NAMES, MAX_JOB_PROCS, MAX_SECONDS, SwfJob};
pub use scan::{TraceScan, scan, scan_header, scan_reader, scan_swf};
pub use stream::{JobStream, StreamOptions};
pub use transform::{
    JobItem, JobIteratorExt, LocalClock, MapOrgsWith, UserOrgMap, Week, ownership_uniform, ownership_zipf,
    weeks,
};
pub use writer::SwfWriter;
