//! [`JobStream`]: cleaned jobs in non-decreasing submit order.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::errors::{Result, TraceError};
use crate::filter::{FilterCounts, FilterOptions, clean};
use crate::header::SwfHeader;
use crate::job::Job;
use crate::reader::{FileSource, ReadOptions, SwfReader};
use crate::scan::{TraceScan, scan};

/// Options for [`JobStream`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Optional status filters.
    pub filter: FilterOptions,
    /// Skip (and count) malformed lines instead of failing.
    pub lenient: bool,
}

enum Inner {
    /// The file is already in order: parse as we go (memory independent of trace length).
    Streaming {
        reader: Box<SwfReader<FileSource>>,
        filter: FilterOptions,
        last: Option<i64>,
        done: bool,
    },
    /// Cleaned jobs sorted in memory.
    Sorted(std::vec::IntoIter<Job>),
}

/// Cleaned jobs ([`crate::clean`]) in non-decreasing submit order.
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
    counts: FilterCounts,
    sorted: bool,
    jobs: usize,
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
    /// [`TraceError::Unsorted`] error.
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
                    filter: options.filter,
                    last: None,
                    done: false,
                },
                path: path.to_path_buf(),
                header: scan.header.clone(),
                counts: FilterCounts::default(),
                sorted: false,
                jobs: 0,
            })
        } else {
            Self::materialize(reader, options.filter)
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
            options.filter,
        )
    }

    fn materialize<R: Read>(mut reader: SwfReader<R>, filter: FilterOptions) -> Result<Self> {
        let mut counts = FilterCounts::default();
        let mut jobs = Vec::new();
        let mut last: Option<i64> = None;
        while let Some(rec) = reader.next_job()? {
            if let Some(job) = clean(&rec, filter, &mut counts) {
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
            sorted,
            jobs: jobs.len(),
            inner: Inner::Sorted(jobs.into_iter()),
            counts,
        })
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
            Inner::Streaming {
                reader,
                filter,
                last,
                done,
            } => {
                if *done {
                    return None;
                }
                loop {
                    let rec = match reader.next_job() {
                        Ok(Some(rec)) => rec,
                        Ok(None) => {
                            *done = true;
                            return None;
                        }
                        Err(e) => return Some(Err(e)),
                    };
                    let Some(job) = clean(&rec, *filter, &mut self.counts) else {
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
            Inner::Streaming { .. } => (0, None),
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
