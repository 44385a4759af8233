//! [`JobStream`]: cleaned jobs in non-decreasing submit order.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::errors::{Result, TraceError};
use crate::filter::{FilterCounts, FilterOptions, ProcsFrom, clean_with};
use crate::header::SwfHeader;
use crate::job::Job;
use crate::reader::{FileSource, ReadOptions, SwfReader};
use crate::scan::{ScanAcc, TraceScan, scan};

/// Options for [`JobStream`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Optional status filters.
    pub filter: FilterOptions,
    /// Skip (and count) malformed lines instead of failing.
    pub lenient: bool,
    /// Which field gives a job's processors (field 5 by default; see
    /// [`clean_with`]).
    pub procs_from: ProcsFrom,
}

enum Inner {
    /// The file is already in order: parse as we go (memory independent of trace length).
    Streaming {
        reader: Box<SwfReader<FileSource>>,
        last: Option<i64>,
        done: bool,
        /// Opened with a [`crate::scan_header`]: the scan gathered as the
        /// file is read, then (at its end) the scan itself.
        gather: Option<Gather>,
    },
    /// Cleaned jobs sorted in memory.
    Sorted(std::vec::IntoIter<Job>),
    /// A streaming stream iterated on a thread of its own
    /// ([`JobStream::read_ahead`]), in batches.
    Ahead {
        batches: Receiver<Batch>,
        current: std::vec::IntoIter<Result<Job>>,
        done: bool,
    },
}

/// Jobs (or errors) per message of a [`JobStream::read_ahead`] thread.
const BATCH: usize = 512;
/// Batches such a thread may hold ready.
const BATCHES_AHEAD: usize = 3;

enum Batch {
    Items(Vec<Result<Job>>),
    /// The end: the stream's final counts and gathered scan.
    End {
        counts: FilterCounts,
        differ: u64,
        scan: Option<Box<TraceScan>>,
    },
}

enum Gather {
    Reading(Box<ScanAcc>),
    Done(Box<TraceScan>),
}

/// Cleaned jobs ([`clean_with`], with the processor field of
/// [`StreamOptions::procs_from`]) in non-decreasing submit order.
///
/// If the log's submits are monotone (as in the archive's `-cln` logs) the jobs are parsed
/// as they are consumed. Otherwise (raw logs) all cleaned jobs are loaded and sorted with a
/// stable sort on submit time, so jobs with equal submits keep their file order;
/// [`JobStream::sorted`] then says so and [`JobStream::non_monotone_submits`] says how many
/// were out of order.
pub struct JobStream {
    inner: Inner,
    path: PathBuf,
    header: SwfHeader,
    filter: FilterOptions,
    procs_from: ProcsFrom,
    counts: FilterCounts,
    /// Kept jobs whose processors are not field 5's.
    differ: u64,
    sorted: bool,
    jobs: usize,
    /// Read ahead: the scan the thread's stream gathered.
    ahead_scan: Option<Box<TraceScan>>,
}

impl JobStream {
    /// Opens a file: scans it once ([`crate::scan`]), then streams or sorts.
    pub fn open(path: impl AsRef<Path>, options: StreamOptions) -> Result<Self> {
        let path = path.as_ref();
        let scanned = scan(path, options.lenient)?;
        Self::open_with_scan(path, options, &scanned)
    }

    /// Opens a file using a scan made earlier (saves one pass). If the scan says the
    /// submits are monotone the file is streamed, and a job found out of order anyway is a
    /// [`TraceError::Unsorted`] error. With a [`crate::scan_header`] (not
    /// [`complete`](TraceScan::complete)) the file is streamed and scanned at once: the
    /// whole scan is [`JobStream::gathered_scan`] once the stream is exhausted.
    pub fn open_with_scan(path: impl AsRef<Path>, options: StreamOptions, scan: &TraceScan) -> Result<Self> {
        let path = path.as_ref();
        let reader = SwfReader::open_with(
            path,
            ReadOptions {
                lenient: options.lenient,
            },
        )?;
        if scan.monotone {
            Ok(JobStream {
                inner: Inner::Streaming {
                    reader: Box::new(reader),
                    last: None,
                    done: false,
                    gather: (!scan.complete).then(|| Gather::Reading(Box::default())),
                },
                path: path.to_path_buf(),
                header: scan.header.clone(),
                filter: options.filter,
                procs_from: options.procs_from,
                counts: FilterCounts::default(),
                differ: 0,
                sorted: false,
                jobs: 0,
                ahead_scan: None,
            })
        } else {
            Self::materialize(reader, options)
        }
    }

    /// Reads plain SWF text from any reader. The cleaned jobs are loaded in memory (the
    /// reader cannot be read twice) and sorted if needed.
    pub fn from_reader(name: impl Into<PathBuf>, reader: impl Read, options: StreamOptions) -> Result<Self> {
        Self::materialize(
            SwfReader::with_options(
                name,
                reader,
                ReadOptions {
                    lenient: options.lenient,
                },
            ),
            options,
        )
    }

    fn materialize<R: Read>(mut reader: SwfReader<R>, options: StreamOptions) -> Result<Self> {
        let mut counts = FilterCounts::default();
        let mut differ = 0;
        let mut jobs = Vec::new();
        let mut last: Option<i64> = None;
        while let Some(rec) = reader.next_job()? {
            if let Some(job) = clean_with(&rec, options.procs_from, options.filter, &mut counts, &mut differ)
            {
                match last {
                    Some(l) if job.submit < l => counts.non_monotone_submits += 1,
                    _ => last = Some(job.submit),
                }
                jobs.push(job);
            }
        }
        counts.bad_lines_skipped = reader.bad_lines_skipped();
        let sorted = counts.non_monotone_submits > 0;
        if sorted {
            jobs.sort_by_key(|j| j.submit); // stable
        }
        Ok(JobStream {
            path: reader.path().to_path_buf(),
            header: reader.header().clone(),
            filter: options.filter,
            procs_from: options.procs_from,
            sorted,
            jobs: jobs.len(),
            inner: Inner::Sorted(jobs.into_iter()),
            counts,
            differ,
            ahead_scan: None,
        })
    }

    /// The same stream, read on a thread of its own a few batches of jobs
    /// ahead of the caller (parsing and cleaning then cost the caller no
    /// wall time on a machine with a core to spare; the jobs, errors and
    /// counts are the same). For a stream that will be read to its end:
    /// until then [`JobStream::counts`] and [`JobStream::procs_differ`] are
    /// zero (they arrive with the last batch), and a caller that stops
    /// early never learns what was read. A stream sorted in memory, or a
    /// thread that cannot be started, is returned as it is.
    pub fn read_ahead(self) -> JobStream {
        if !matches!(self.inner, Inner::Streaming { .. }) {
            return self;
        }
        let shell = JobStream {
            inner: Inner::Sorted(Vec::new().into_iter()),
            path: self.path.clone(),
            header: self.header.clone(),
            filter: self.filter,
            procs_from: self.procs_from,
            counts: FilterCounts::default(),
            differ: 0,
            sorted: false,
            jobs: 0,
            ahead_scan: None,
        };
        let (send, batches) = sync_channel(BATCHES_AHEAD);
        let stream = Arc::new(Mutex::new(Some(self)));
        let theirs = Arc::clone(&stream);
        let started = std::thread::Builder::new()
            .name("swf-parse".into())
            .spawn(move || {
                let Some(mut s) = theirs.lock().ok().and_then(|mut s| s.take()) else {
                    return;
                };
                loop {
                    let items: Vec<Result<Job>> = s.by_ref().take(BATCH).collect();
                    if items.is_empty() {
                        let end = Batch::End {
                            counts: s.counts(),
                            differ: s.differ,
                            scan: s.gathered_scan().cloned().map(Box::new),
                        };
                        let _ = send.send(end);
                        return;
                    }
                    if send.send(Batch::Items(items)).is_err() {
                        return; // the caller is gone
                    }
                }
            });
        match started {
            Ok(_) => JobStream {
                inner: Inner::Ahead {
                    batches,
                    current: Vec::new().into_iter(),
                    done: false,
                },
                ..shell
            },
            Err(_) => stream.lock().ok().and_then(|mut s| s.take()).unwrap_or(shell),
        }
    }

    /// The file (or stream name).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The log's header (complete: it comes from the scan or the full read).
    pub fn header(&self) -> &SwfHeader {
        &self.header
    }

    /// True if the jobs were loaded and sorted in memory because submits were out of order.
    pub fn sorted(&self) -> bool {
        self.sorted
    }

    /// Kept jobs that were out of submit order in the file (0 when streaming).
    pub fn non_monotone_submits(&self) -> u64 {
        self.counts.non_monotone_submits
    }

    /// Number of jobs held in memory (0 when streaming).
    pub fn loaded_jobs(&self) -> usize {
        self.jobs
    }

    /// The scan gathered by a stream opened with a [`crate::scan_header`],
    /// once it was read to its end (`None` before, and for every other
    /// stream).
    pub fn gathered_scan(&self) -> Option<&TraceScan> {
        match &self.inner {
            Inner::Streaming { gather, .. } => match gather {
                Some(Gather::Done(scan)) => Some(scan),
                _ => None,
            },
            Inner::Sorted(_) => None,
            Inner::Ahead { .. } => self.ahead_scan.as_deref(),
        }
    }

    /// The processor rule it reads with.
    pub fn procs_from(&self) -> ProcsFrom {
        self.procs_from
    }

    /// Kept jobs whose processors are not field 5's (so far, as
    /// [`JobStream::counts`]): 0 with [`ProcsFrom::Allocated`].
    pub fn procs_differ(&self) -> u64 {
        self.differ
    }

    /// Filter counts: final when sorted in memory; when streaming, counts so far (final
    /// once the iterator is exhausted).
    pub fn counts(&self) -> FilterCounts {
        let mut counts = self.counts;
        if let Inner::Streaming { reader, .. } = &self.inner {
            counts.bad_lines_skipped = reader.bad_lines_skipped();
        }
        counts
    }
}

impl Iterator for JobStream {
    type Item = Result<Job>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Sorted(jobs) => jobs.next().map(Ok),
            Inner::Ahead {
                batches,
                current,
                done,
            } => loop {
                if let Some(item) = current.next() {
                    return Some(item);
                }
                if *done {
                    return None;
                }
                *done = true;
                match batches.recv() {
                    Ok(Batch::Items(items)) => {
                        *current = items.into_iter();
                        *done = false;
                    }
                    Ok(Batch::End { counts, differ, scan }) => {
                        self.counts = counts;
                        self.differ = differ;
                        self.ahead_scan = scan;
                        return None;
                    }
                    // The thread stopped without its last batch.
                    Err(_) => {
                        return Some(Err(TraceError::Io {
                            path: self.path.clone(),
                            source: std::io::Error::other("the thread reading ahead stopped"),
                        }));
                    }
                }
            },
            Inner::Streaming {
                reader,
                last,
                done,
                gather,
            } => {
                if *done {
                    return None;
                }
                loop {
                    let rec = match reader.next_job() {
                        Ok(Some(rec)) => rec,
                        Ok(None) => {
                            *done = true;
                            if let Some(Gather::Reading(acc)) = gather.take() {
                                *gather = Some(Gather::Done(Box::new(acc.finish(reader))));
                            }
                            return None;
                        }
                        Err(e) => return Some(Err(e)),
                    };
                    if let Some(Gather::Reading(acc)) = gather {
                        acc.add(&rec);
                    }
                    let Some(job) = clean_with(
                        &rec,
                        self.procs_from,
                        self.filter,
                        &mut self.counts,
                        &mut self.differ,
                    ) else {
                        continue;
                    };
                    if let Some(previous) = *last
                        && job.submit < previous
                    {
                        *done = true;
                        return Some(Err(TraceError::Unsorted {
                            path: self.path.clone(),
                            job: job.id,
                            submit: job.submit,
                            previous,
                        }));
                    }
                    *last = Some(job.submit);
                    return Some(Ok(job));
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            Inner::Sorted(jobs) => jobs.size_hint(),
            Inner::Streaming { .. } | Inner::Ahead { .. } => (0, None),
        }
    }
}

impl std::fmt::Debug for JobStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStream")
            .field("path", &self.path)
            .field("sorted", &self.sorted)
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}
