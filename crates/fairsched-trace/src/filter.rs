//! Cleaning raw records into [`Job`]s, with a count for every reason a record is changed or
//! dropped (never a silent skip).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::job::Job;
use crate::record::SwfJob;

/// SWF status of a failed job.
pub const STATUS_FAILED: i64 = 0;
/// SWF status of a cancelled job.
pub const STATUS_CANCELLED: i64 = 5;

/// Which SWF field gives a job's processor count ([`clean_with`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcsFrom {
    /// Field 5 (allocated processors) when known (> 0), else field 8
    /// (requested processors): what the machine gave the job. The default.
    #[default]
    Allocated,
    /// Field 8 (requested processors) when known (> 0), else field 5: what
    /// the user asked for, as AccaSim reads SWF logs.
    Requested,
}

impl ProcsFrom {
    /// The accepted names, for messages.
    pub const NAMES: &'static str = "allocated, requested";

    /// `allocated` or `requested`.
    pub fn name(self) -> &'static str {
        match self {
            ProcsFrom::Allocated => "allocated",
            ProcsFrom::Requested => "requested",
        }
    }
}

impl FromStr for ProcsFrom {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "allocated" => Ok(ProcsFrom::Allocated),
            "requested" => Ok(ProcsFrom::Requested),
            _ => Err(format!("{s:?}: expected one of {}", ProcsFrom::NAMES)),
        }
    }
}

impl fmt::Display for ProcsFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Optional filters (the validity filters of [`clean`] always apply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterOptions {
    /// Drop jobs with status 0 (failed).
    pub drop_failed: bool,
    /// Drop jobs with status 5 (cancelled).
    pub drop_cancelled: bool,
}

/// What the filters did. Every field is always counted, whether or not the matching drop
/// is enabled.
///
/// A record is dropped for exactly one reason, tested in this order, so that
/// `records == submit_unknown + runtime_unknown + runtime_nonpositive + procs_unknown
/// + dropped_failed + dropped_cancelled + kept`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterCounts {
    /// Records given to [`clean`] (parsed job lines).
    pub records: u64,
    /// Submit time -1 (unknown): dropped (nothing to replay it at). The
    /// Archive's logs write a line of -1 in every field for a job they know
    /// nothing of.
    pub submit_unknown: u64,
    /// Run time -1 (unknown): dropped.
    pub runtime_unknown: u64,
    /// Run time 0 or negative other than -1: dropped.
    pub runtime_nonpositive: u64,
    /// Allocated processors unknown (≤ 0), requested processors used instead: kept.
    pub procs_from_requested: u64,
    /// Allocated and requested processors both unknown (≤ 0): dropped.
    pub procs_unknown: u64,
    /// Records with status 0 (failed), whatever else happened to them.
    pub status_failed: u64,
    /// Records with status 5 (cancelled), whatever else happened to them.
    pub status_cancelled: u64,
    /// Failed records dropped by [`FilterOptions::drop_failed`] (valid otherwise).
    pub dropped_failed: u64,
    /// Cancelled records dropped by [`FilterOptions::drop_cancelled`] (valid otherwise).
    pub dropped_cancelled: u64,
    /// Malformed lines skipped by a lenient reader (filled in by the scan/stream).
    pub bad_lines_skipped: u64,
    /// Kept jobs whose submit time is earlier than a previously kept job's
    /// (filled in by the scan/stream).
    pub non_monotone_submits: u64,
    /// Jobs kept.
    pub kept: u64,
}

impl FilterCounts {
    /// Records dropped, all reasons together.
    pub fn dropped(&self) -> u64 {
        self.submit_unknown
            + self.runtime_unknown
            + self.runtime_nonpositive
            + self.procs_unknown
            + self.dropped_failed
            + self.dropped_cancelled
    }

    /// `(name, count, what happens)` for each counter, in a fixed order, for reports.
    pub fn rows(&self) -> [(&'static str, u64, &'static str); 13] {
        [
            ("records", self.records, "parsed job lines"),
            ("submit_unknown", self.submit_unknown, "submit time -1: dropped"),
            ("runtime_unknown", self.runtime_unknown, "run time -1: dropped"),
            (
                "runtime_nonpositive",
                self.runtime_nonpositive,
                "run time <= 0 (not -1): dropped",
            ),
            (
                "procs_from_requested",
                self.procs_from_requested,
                "allocated unknown, requested used: kept",
            ),
            ("procs_unknown", self.procs_unknown, "no processor count: dropped"),
            ("status_failed", self.status_failed, "status 0 (failed): seen"),
            (
                "status_cancelled",
                self.status_cancelled,
                "status 5 (cancelled): seen",
            ),
            ("dropped_failed", self.dropped_failed, "failed, dropped by option"),
            (
                "dropped_cancelled",
                self.dropped_cancelled,
                "cancelled, dropped by option",
            ),
            (
                "bad_lines_skipped",
                self.bad_lines_skipped,
                "malformed lines skipped (lenient)",
            ),
            (
                "non_monotone_submits",
                self.non_monotone_submits,
                "kept jobs submitted out of order",
            ),
            ("kept", self.kept, "jobs kept"),
        ]
    }
}

/// Cleans one record; `None` if it is dropped. Updates `counts` either way.
///
/// The stages, in order (validity first, then the user's optional filters, so a dropped
/// record is attributed to its most basic defect):
/// 1. count status 0 / 5 (always); submit time -1 → `submit_unknown` (dropped:
///    nothing to replay the job at);
/// 2. run time: -1 → `runtime_unknown`, ≤ 0 → `runtime_nonpositive` (dropped: a job that
///    does not run cannot be simulated);
/// 3. processors: allocated if > 0, else requested if > 0 (`procs_from_requested`), else
///    dropped (`procs_unknown`); the reader refuses counts beyond `u32::MAX`
///    ([`crate::MAX_JOB_PROCS`]), and a hand-made record's saturate;
/// 4. status filters from `opts`.
pub fn clean(job: &SwfJob, opts: FilterOptions, counts: &mut FilterCounts) -> Option<Job> {
    counts.records += 1;
    let failed = job.status == STATUS_FAILED;
    let cancelled = job.status == STATUS_CANCELLED;
    counts.status_failed += u64::from(failed);
    counts.status_cancelled += u64::from(cancelled);

    if job.submit_time < 0 {
        counts.submit_unknown += 1;
        return None;
    }
    if job.run_time == -1 {
        counts.runtime_unknown += 1;
        return None;
    }
    if job.run_time <= 0 {
        counts.runtime_nonpositive += 1;
        return None;
    }

    let procs = if job.allocated_procs > 0 {
        job.allocated_procs
    } else if job.requested_procs > 0 {
        counts.procs_from_requested += 1;
        job.requested_procs
    } else {
        counts.procs_unknown += 1;
        return None;
    };

    if failed && opts.drop_failed {
        counts.dropped_failed += 1;
        return None;
    }
    if cancelled && opts.drop_cancelled {
        counts.dropped_cancelled += 1;
        return None;
    }

    counts.kept += 1;
    Some(Job {
        id: u64::try_from(job.job_number).unwrap_or(0),
        submit: job.submit_time,
        runtime: job.run_time,
        procs: u32::try_from(procs).unwrap_or(u32::MAX),
        requested_time: (job.requested_time > 0).then_some(job.requested_time),
        user: job.user_id,
        group: job.group_id,
        status: job.status,
        org: 0,
        part: 0,
    })
}

/// Cleans one record with its processors taken by `from`. Under
/// [`ProcsFrom::Allocated`] this is [`clean`]. Under [`ProcsFrom::Requested`]
/// field 8 replaces field 5 when it is known, so the same records are kept
/// or dropped for the same reasons (a record is dropped only when both
/// fields are unknown), and `counts` means the same thing:
/// `procs_from_requested` still counts the records whose field 5 was
/// unknown. `differ` counts the kept jobs whose processors are not field 5.
pub fn clean_with(
    rec: &SwfJob,
    from: ProcsFrom,
    filter: FilterOptions,
    counts: &mut FilterCounts,
    differ: &mut u64,
) -> Option<Job> {
    if from == ProcsFrom::Allocated || rec.requested_procs <= 0 {
        return clean(rec, filter, counts);
    }
    let allocated_known = rec.allocated_procs > 0;
    // `clean` reaches its processor stage only for a known submit time and
    // a positive run time; there it would have counted a fallback to field 8.
    if rec.submit_time >= 0 && rec.run_time > 0 && !allocated_known {
        counts.procs_from_requested += 1;
    }
    let job = clean(
        &SwfJob {
            allocated_procs: rec.requested_procs,
            ..*rec
        },
        filter,
        counts,
    )?;
    if allocated_known && u32::try_from(rec.allocated_procs).unwrap_or(u32::MAX) != job.procs {
        *differ += 1;
    }
    Some(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(run: i64, alloc: i64, req: i64, status: i64) -> SwfJob {
        SwfJob {
            job_number: 1,
            submit_time: 10,
            run_time: run,
            allocated_procs: alloc,
            requested_procs: req,
            status,
            requested_time: -1,
            ..SwfJob::UNKNOWN
        }
    }

    #[test]
    fn each_stage() {
        let opts = FilterOptions {
            drop_failed: true,
            drop_cancelled: true,
        };
        let mut c = FilterCounts::default();
        assert!(clean(&rec(-1, 1, 1, 1), opts, &mut c).is_none());
        assert!(clean(&rec(0, 1, 1, 1), opts, &mut c).is_none());
        assert!(clean(&rec(-7, 1, 1, 0), opts, &mut c).is_none());
        assert_eq!(clean(&rec(5, -1, 3, 1), opts, &mut c).unwrap().procs, 3);
        assert!(clean(&rec(5, -1, -1, 1), opts, &mut c).is_none());
        assert!(clean(&rec(5, 0, 0, 1), opts, &mut c).is_none());
        assert!(clean(&rec(5, 2, 2, 0), opts, &mut c).is_none());
        assert!(clean(&rec(5, 2, 2, 5), opts, &mut c).is_none());
        let j = clean(&rec(5, 2, 2, 1), opts, &mut c).unwrap();
        assert_eq!((j.runtime, j.procs, j.requested_time), (5, 2, None));
        // A job line of -1 everywhere (the Archive's unknown job), and one
        // whose submit time alone is unknown: dropped for that first.
        for r in [
            SwfJob::UNKNOWN,
            SwfJob {
                submit_time: -1,
                ..rec(5, -1, 3, 0)
            },
        ] {
            assert!(clean(&r, opts, &mut c).is_none());
            let mut differ = 0;
            let before = c;
            assert!(clean_with(&r, ProcsFrom::Requested, opts, &mut c, &mut differ).is_none());
            assert_eq!(c.procs_from_requested, before.procs_from_requested);
        }
        let expected = FilterCounts {
            records: 13,
            submit_unknown: 4,
            runtime_unknown: 1,
            runtime_nonpositive: 2,
            procs_from_requested: 1,
            procs_unknown: 2,
            status_failed: 4,
            status_cancelled: 1,
            dropped_failed: 1,
            dropped_cancelled: 1,
            kept: 2,
            ..FilterCounts::default()
        };
        assert_eq!(c, expected);
        assert_eq!(c.records, c.dropped() + c.kept);
    }

    #[test]
    fn procs_from_names_parse_and_print() {
        for p in [ProcsFrom::Allocated, ProcsFrom::Requested] {
            assert_eq!(p.to_string().parse::<ProcsFrom>(), Ok(p));
        }
        assert!(
            "alloc"
                .parse::<ProcsFrom>()
                .unwrap_err()
                .contains("allocated, requested")
        );
        assert_eq!(ProcsFrom::default(), ProcsFrom::Allocated);
    }

    fn line(text: &str) -> SwfJob {
        let mut r = crate::SwfReader::from_reader("line.swf", text.as_bytes());
        r.next_job().unwrap().unwrap()
    }

    /// Real HPC2N-2002 lines: job 338116 was given 2 processors (field 5)
    /// for a request of 1 (field 8); KTH-SP2 job 27313 has neither.
    #[test]
    fn requested_reads_field_8_and_falls_back_to_field_5() {
        let hpc2n = line(
            "338116 63019254 329080  20952    2   7839 409600    1  21600 409600  1  17   1  -1 -1  1 -1 -1",
        );
        let kth_none = line(
            "27313 27845375    480      1   -1     -1    -1   -1    600    -1  1  48 225  -1 -1 -1 -1 -1",
        );
        let (opts, mut c, mut differ) = (FilterOptions::default(), FilterCounts::default(), 0);
        let a = clean_with(&hpc2n, ProcsFrom::Allocated, opts, &mut c, &mut differ).unwrap();
        let r = clean_with(&hpc2n, ProcsFrom::Requested, opts, &mut c, &mut differ).unwrap();
        assert_eq!((a.procs, r.procs, differ), (2, 1, 1));
        assert!(clean_with(&kth_none, ProcsFrom::Requested, opts, &mut c, &mut differ).is_none());
        // Field 8 unknown: field 5 is used, and nothing differs.
        let mut no_request = hpc2n;
        no_request.requested_procs = -1;
        let r = clean_with(&no_request, ProcsFrom::Requested, opts, &mut c, &mut differ).unwrap();
        assert_eq!((r.procs, differ), (2, 1));
        // Field 5 unknown: field 8 under both rules, counted as a fallback
        // under both.
        let mut no_alloc = hpc2n;
        no_alloc.allocated_procs = -1;
        let mut ca = FilterCounts::default();
        let mut cr = FilterCounts::default();
        let a = clean_with(&no_alloc, ProcsFrom::Allocated, opts, &mut ca, &mut differ).unwrap();
        let r = clean_with(&no_alloc, ProcsFrom::Requested, opts, &mut cr, &mut differ).unwrap();
        assert_eq!((a.procs, r.procs), (1, 1));
        assert_eq!(ca, cr);
        assert_eq!(ca.procs_from_requested, 1);
    }

    #[test]
    fn status_kept_by_default() {
        let mut c = FilterCounts::default();
        assert!(clean(&rec(5, 2, 2, 0), FilterOptions::default(), &mut c).is_some());
        assert!(clean(&rec(5, 2, 2, 5), FilterOptions::default(), &mut c).is_some());
        assert_eq!((c.status_failed, c.status_cancelled, c.kept), (1, 1, 2));
        assert_eq!((c.dropped_failed, c.dropped_cancelled), (0, 0));
    }
}
