//! [`TraceInfo`]: a printable, serializable summary of a scanned trace.

use std::fmt;

use serde::Serialize;

use crate::filter::FilterCounts;
use crate::header::SwfHeader;
use crate::scan::TraceScan;

/// Where [`TraceInfo::processors`] comes from.
pub const PROCESSORS_FROM_HEADER: &str = "header MaxProcs";
/// [`TraceInfo::processors_source`] when the header has no `MaxProcs`.
pub const PROCESSORS_FROM_JOBS: &str = "largest processor count seen in jobs (no MaxProcs in header)";
/// [`TraceInfo::processors_source`] when the header's `MaxProcs` is not a valid processor
/// count (a [`crate::HeaderWarning`] says which line).
pub const PROCESSORS_FROM_JOBS_MAXPROCS_IGNORED: &str =
    "largest processor count seen in jobs (the header's MaxProcs is not valid: ignored)";
/// [`TraceInfo::processors_source`] when nothing is known.
pub const PROCESSORS_UNKNOWN: &str = "unknown";

/// Summary of a trace for `fairsched trace info` and for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInfo {
    /// File name as given.
    pub path: String,
    /// Header keys.
    pub header: SwfHeader,
    /// Job lines in the file.
    pub raw_jobs: u64,
    /// Jobs kept by the default filters.
    pub kept_jobs: u64,
    /// Distinct users among kept jobs.
    pub users: u64,
    /// Distinct users among the job lines with a known submit time.
    pub raw_users: u64,
    /// First kept submit time (s).
    pub first_submit: Option<i64>,
    /// Last kept submit time (s).
    pub last_submit: Option<i64>,
    /// `last_submit - first_submit` (s).
    pub span_seconds: i64,
    /// Machine size: header `MaxProcs`, else the largest processor count seen.
    pub processors: Option<u32>,
    /// Where `processors` comes from (one of the `PROCESSORS_*` constants).
    pub processors_source: String,
    /// Largest processor count of a kept job.
    pub max_job_procs: Option<u32>,
    /// Every filter count (default options).
    pub filters: FilterCounts,
    /// Kept jobs submitted out of order.
    pub non_monotone_submits: u64,
    /// Header lines whose value was not used, as
    /// ``FILE:LINE: header `MaxProcs: abc` ignored: …`` (see [`crate::HeaderWarning`]).
    pub warnings: Vec<String>,
}

impl TraceInfo {
    /// Builds the summary from a scan.
    pub fn from_scan(scan: &TraceScan) -> Self {
        let seen = scan.max_allocated_procs.max(scan.max_requested_procs);
        let from_jobs = if scan.header_warnings.iter().any(|w| w.is_max_procs()) {
            PROCESSORS_FROM_JOBS_MAXPROCS_IGNORED
        } else {
            PROCESSORS_FROM_JOBS
        };
        let (processors, source) = match (scan.header.max_procs, seen) {
            (Some(p), _) => (Some(p), PROCESSORS_FROM_HEADER),
            (None, Some(p)) => (Some(u32::try_from(p).unwrap_or(u32::MAX)), from_jobs),
            (None, None) => (None, PROCESSORS_UNKNOWN),
        };
        TraceInfo {
            path: scan.path.display().to_string(),
            header: scan.header.clone(),
            raw_jobs: scan.raw_jobs,
            kept_jobs: scan.counts.kept,
            users: scan.users,
            raw_users: scan.raw_users,
            first_submit: scan.first_submit,
            last_submit: scan.last_submit,
            span_seconds: scan.span_seconds(),
            processors,
            processors_source: source.to_string(),
            max_job_procs: scan.max_job_procs,
            filters: scan.counts,
            non_monotone_submits: scan.counts.non_monotone_submits,
            warnings: scan.header_warnings.iter().map(ToString::to_string).collect(),
        }
    }
}

impl From<&TraceScan> for TraceInfo {
    fn from(scan: &TraceScan) -> Self {
        TraceInfo::from_scan(scan)
    }
}

fn opt<T: fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), T::to_string)
}

impl fmt::Display for TraceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.header;
        writeln!(f, "trace          {}", self.path)?;
        if let Some(c) = &h.computer {
            writeln!(f, "computer       {c}")?;
        }
        if let Some(i) = &h.installation {
            writeln!(f, "installation   {i}")?;
        }
        if h.start_time.is_some() || h.end_time.is_some() {
            writeln!(f, "period         {} .. {}", opt(&h.start_time), opt(&h.end_time))?;
        }
        if let Some(t) = h.unix_start_time {
            let tz = h.time_zone_string.as_deref().unwrap_or("time zone unknown");
            writeln!(f, "unix start     {t} ({tz})")?;
        }
        writeln!(
            f,
            "processors     {} ({})",
            opt(&self.processors),
            self.processors_source
        )?;
        for w in &self.warnings {
            writeln!(f, "warning        {w}")?;
        }
        writeln!(f, "largest job    {} processors", opt(&self.max_job_procs))?;
        writeln!(
            f,
            "jobs           {} kept of {} in file ({} dropped)",
            self.kept_jobs,
            self.raw_jobs,
            self.filters.dropped()
        )?;
        writeln!(
            f,
            "users          {} with kept jobs ({} in file)",
            self.users, self.raw_users
        )?;
        let days = self.span_seconds as f64 / 86_400.0;
        writeln!(
            f,
            "submits        {} .. {} s (span {} s = {days:.1} days)",
            opt(&self.first_submit),
            opt(&self.last_submit),
            self.span_seconds
        )?;
        if self.non_monotone_submits == 0 {
            writeln!(f, "order          submit times non-decreasing (streamed)")?;
        } else {
            writeln!(
                f,
                "order          {} jobs out of submit order (sorted in memory, stable)",
                self.non_monotone_submits
            )?;
        }
        writeln!(f, "filters (default options)")?;
        for (name, count, what) in self.filters.rows() {
            writeln!(f, "  {name:<22}{count:>9}  {what}")?;
        }
        Ok(())
    }
}
