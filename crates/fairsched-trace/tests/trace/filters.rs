//! Filter counts on a crafted trace: every filter fires at least once.

use crate::common::line;
use fairsched_trace::{FilterCounts, FilterOptions, JobStream, StreamOptions, TraceInfo, clean, scan_reader};

/// id, submit, run, alloc, req, status, user
fn crafted() -> String {
    [
        "; MaxProcs: 16\n".to_string(),
        line(1, 0, 100, 4, 4, 1, 10),   // kept
        line(2, 1, -1, 4, 4, 1, 10),    // runtime_unknown
        line(3, 2, 0, 4, 4, 1, 11),     // runtime_nonpositive
        line(4, 3, -5, 4, 4, 0, 11),    // runtime_nonpositive (and status_failed)
        line(5, 4, 50, -1, 8, 1, 12),   // procs_from_requested, kept
        line(6, 5, 50, -1, -1, 1, 12),  // procs_unknown
        line(7, 6, 50, 0, 0, 1, 13),    // procs_unknown
        line(8, 7, 50, 2, 2, 0, 13),    // status_failed (dropped with drop_failed)
        line(9, 8, 50, 2, 2, 5, 14),    // status_cancelled (dropped with drop_cancelled)
        line(10, 9, 50, -1, 32, 5, 14), // procs_from_requested + status_cancelled
        "garbage line\n".to_string(),   // bad line (lenient)
        line(11, 3, 50, 1, 1, 1, 15),   // kept, submitted out of order
        line(12, -1, 50, 2, 2, 1, 16),  // submit_unknown (user 16 not counted in the file)
    ]
    .concat()
}

#[test]
fn clean_counts_each_filter() {
    let scan = scan_reader("crafted.swf", crafted().as_bytes(), true).unwrap();
    println!("{}", TraceInfo::from_scan(&scan));
    let expected = FilterCounts {
        records: 12,
        submit_unknown: 1,
        runtime_unknown: 1,
        runtime_nonpositive: 2,
        procs_from_requested: 2,
        procs_unknown: 2,
        status_failed: 2,
        status_cancelled: 2,
        dropped_failed: 0,
        dropped_cancelled: 0,
        bad_lines_skipped: 1,
        non_monotone_submits: 1,
        kept: 6,
    };
    assert_eq!(scan.counts, expected);
    assert_eq!(scan.raw_jobs, 12);
    assert_eq!(scan.raw_users, 6);
    assert_eq!(scan.users, 5); // user 11 only has dropped jobs
    assert_eq!((scan.first_submit, scan.last_submit), (Some(0), Some(9)));
    assert_eq!(
        (scan.max_allocated_procs, scan.max_requested_procs),
        (Some(4), Some(32))
    );
    assert_eq!(scan.max_job_procs, Some(32));
    assert!(!scan.monotone);

    let info = TraceInfo::from_scan(&scan);
    assert_eq!(info.processors, Some(16));
    assert_eq!(info.kept_jobs, 6);
    assert_eq!(info.span_seconds, 9);
}

#[test]
fn optional_status_filters() {
    let options = StreamOptions {
        filter: FilterOptions {
            drop_failed: true,
            drop_cancelled: true,
        },
        lenient: true,
        ..StreamOptions::default()
    };
    let stream = JobStream::from_reader("crafted.swf", crafted().as_bytes(), options).unwrap();
    let c = stream.counts();
    assert_eq!((c.dropped_failed, c.dropped_cancelled, c.kept), (1, 2, 3));
    assert_eq!(c.records, c.dropped() + c.kept);
    let ids: Vec<u64> = stream.map(|j| j.unwrap().id).collect();
    assert_eq!(ids, [1, 11, 5]);
}

#[test]
fn strict_stream_fails_on_the_bad_line() {
    let err =
        JobStream::from_reader("crafted.swf", crafted().as_bytes(), StreamOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "crafted.swf:12: expected 18 fields, found 2");
}

#[test]
fn cleaned_job_fields() {
    let mut counts = FilterCounts::default();
    let rec = fairsched_trace::SwfJob {
        job_number: 42,
        submit_time: 7,
        run_time: 30,
        allocated_procs: 3,
        requested_time: 60,
        user_id: 5,
        group_id: 6,
        status: 1,
        ..Default::default()
    };
    let job = clean(&rec, FilterOptions::default(), &mut counts).unwrap();
    assert_eq!(
        (
            job.id,
            job.submit,
            job.runtime,
            job.procs,
            job.requested_time,
            job.user,
            job.group,
            job.status
        ),
        (42, 7, 30, 3, Some(60), 5, 6, 1)
    );
    assert_eq!((job.org, job.part), (0, 0));
    let no_estimate = fairsched_trace::SwfJob {
        requested_time: 0,
        ..rec
    };
    assert_eq!(
        clean(&no_estimate, FilterOptions::default(), &mut counts)
            .unwrap()
            .requested_time,
        None
    );
}

#[test]
fn info_falls_back_to_processors_seen() {
    let text = [line(1, 0, 10, 3, 3, 1, 1), line(2, 1, 10, -1, 12, 1, 1)].concat();
    let info = TraceInfo::from_scan(&scan_reader("nohdr.swf", text.as_bytes(), false).unwrap());
    assert_eq!(info.processors, Some(12));
    assert_eq!(info.processors_source, fairsched_trace::PROCESSORS_FROM_JOBS);
    let shown = info.to_string();
    assert!(
        shown.contains("processors     12 (largest processor count seen"),
        "{shown}"
    );
}
