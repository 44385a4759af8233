//! One read instead of two: a stream opened with a header-only scan
//! ([`scan_header`]) gives the jobs of the full scan's stream and, at its
//! end, the full scan itself; a log out of order is an error there (the
//! caller scans and starts again).

use crate::common::{gzip, line, ok_line, temp_file};
use fairsched_trace::{
    FilterOptions, JobStream, ProcsFrom, StreamOptions, TraceError, TraceScan, scan, scan_header,
};
use std::path::Path;

/// Both ways of reading `path`: the jobs (ids and processors), the counts
/// and the scan, which must agree.
fn both_ways(path: &Path, options: StreamOptions) -> TraceScan {
    let full = scan(path, options.lenient).unwrap();
    assert!(full.complete);
    let head = scan_header(path, options.lenient).unwrap();
    assert!(!head.complete && head.monotone && head.raw_jobs == 0);
    assert_eq!(head.header.max_procs, full.header.max_procs);

    let mut two = JobStream::open_with_scan(path, options, &full).unwrap();
    let mut one = JobStream::open_with_scan(path, options, &head).unwrap();
    assert!(one.gathered_scan().is_none(), "not read yet");
    let jobs = |s: &mut JobStream| -> Vec<(u64, i64, u32)> {
        s.by_ref()
            .map(|j| j.map(|j| (j.id, j.submit, j.procs)))
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(jobs(&mut one), jobs(&mut two));
    assert_eq!(one.counts(), two.counts());
    assert_eq!(one.procs_differ(), two.procs_differ());
    assert!(
        two.gathered_scan().is_none(),
        "only a header-only stream gathers a scan"
    );
    let gathered = one.gathered_scan().expect("read to the end").clone();
    assert_eq!(gathered, full);
    // Read ahead on a thread: the same jobs, counts and scan.
    let mut ahead = JobStream::open_with_scan(path, options, &head)
        .unwrap()
        .read_ahead();
    assert_eq!(
        jobs(&mut ahead),
        jobs(&mut JobStream::open_with_scan(path, options, &full).unwrap())
    );
    assert_eq!(ahead.counts(), two.counts());
    assert_eq!(ahead.procs_differ(), two.procs_differ());
    assert_eq!(ahead.gathered_scan(), Some(&full));
    gathered
}

/// A stream read ahead passes its errors in order (a strict stream goes
/// on after a bad line; an unsorted one stops), and may be dropped before
/// its end.
#[test]
fn reading_ahead_keeps_errors_in_place() {
    let text: String = [
        ok_line(1, 1),
        "2 x\n".to_string(),
        ok_line(3, 3),
        ok_line(4, 2),
        ok_line(5, 9),
    ]
    .concat();
    let (_d, path) = temp_file("bad.swf", text.as_bytes());
    let head = scan_header(&path, false).unwrap();
    let kinds = |s: JobStream| -> Vec<String> {
        s.map(|j| match j {
            Ok(j) => j.id.to_string(),
            Err(TraceError::Unsorted { job, .. }) => format!("unsorted {job}"),
            Err(e) if e.is_line_error() => "bad".to_string(),
            Err(e) => format!("{e}"),
        })
        .collect()
    };
    let inline = kinds(JobStream::open_with_scan(&path, StreamOptions::default(), &head).unwrap());
    assert_eq!(inline, ["1", "bad", "3", "unsorted 4"]);
    let ahead = kinds(
        JobStream::open_with_scan(&path, StreamOptions::default(), &head)
            .unwrap()
            .read_ahead(),
    );
    assert_eq!(ahead, inline);
    // Many jobs, dropped after a few: the thread ends on its own.
    let many: String = (1..=5000).map(|i| ok_line(i, i)).collect();
    let (_d, path) = temp_file("many.swf", many.as_bytes());
    let mut s = JobStream::open(&path, StreamOptions::default())
        .unwrap()
        .read_ahead();
    assert_eq!(s.next().unwrap().unwrap().id, 1);
    drop(s);
}

#[test]
fn a_header_only_stream_gathers_the_full_scan() {
    // Comments before, between and after the jobs; a blank line; a job
    // dropped (run time -1), one with field 5 unknown, one whose fields 5
    // and 8 differ, a failed and a cancelled one, equal submits.
    let text = [
        "; Version: 2.2\n; MaxProcs: 64\n\n; Note: first\n".to_string(),
        line(1, 0, 100, 4, 4, 1, 7),
        line(2, 0, -1, 4, 4, 1, 8),
        "; Note: between\n".to_string(),
        line(3, 5, 50, -1, 2, 0, 7),
        line(4, 5, 20, 8, 3, 5, 9),
        line(5, 9, 20, 1, 1, 1, 9),
        "; MaxProcs: 99\n".to_string(),
    ]
    .concat();
    let (_d, path) = temp_file("log.swf.gz", &gzip(text.as_bytes()));
    let s = both_ways(&path, StreamOptions::default());
    // The first MaxProcs is the header's, as the full scan reads it.
    assert_eq!(s.header.max_procs, Some(64));
    assert_eq!((s.raw_jobs, s.users, s.counts.kept, s.lines), (5, 2, 4, 11));
    let options = StreamOptions {
        filter: FilterOptions {
            drop_failed: true,
            drop_cancelled: true,
        },
        procs_from: ProcsFrom::Requested,
        ..StreamOptions::default()
    };
    let s = both_ways(&path, options);
    // The scan counts with default filters, whatever the stream's.
    assert_eq!((s.counts.dropped_failed, s.counts.kept), (0, 4));
}

#[test]
fn the_header_scan_leaves_the_first_job_to_the_stream() {
    let text: String = ["; MaxProcs: 4\n".to_string(), ok_line(1, 3), ok_line(2, 4)].concat();
    let (_d, path) = temp_file("log.swf", text.as_bytes());
    let s = both_ways(&path, StreamOptions::default());
    assert_eq!((s.raw_jobs, s.first_submit, s.last_submit), (2, Some(3), Some(4)));
    // No header at all, and no job at all.
    let (_d, path) = temp_file("bare.swf", ok_line(1, 3).as_bytes());
    assert_eq!(scan_header(&path, false).unwrap().header.max_procs, None);
    both_ways(&path, StreamOptions::default());
    let (_d, path) = temp_file("empty.swf", b"; MaxProcs: 4\n");
    assert_eq!(both_ways(&path, StreamOptions::default()).raw_jobs, 0);
}

#[test]
fn a_log_out_of_order_is_an_error_in_one_read() {
    let text: String = [ok_line(1, 10), ok_line(2, 12), ok_line(3, 11)].concat();
    let (_d, path) = temp_file("raw.swf", text.as_bytes());
    let head = scan_header(&path, false).unwrap();
    let items: Vec<_> = JobStream::open_with_scan(&path, StreamOptions::default(), &head)
        .unwrap()
        .collect();
    assert!(matches!(
        items.last().unwrap(),
        Err(TraceError::Unsorted {
            job: 3,
            submit: 11,
            previous: 12,
            ..
        })
    ));
}

/// The real logs, when `../shared/data` is there.
#[test]
fn real_logs_read_once_give_what_two_reads_give() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/swf"
    ));
    if !dir.is_dir() {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return;
    }
    for name in ["KTH-SP2-1996-2.1-cln.swf.gz", "HPC2N-2002-2.2-cln.swf.gz"] {
        let s = both_ways(&dir.join(name), StreamOptions::default());
        assert!(s.raw_jobs > 28_000, "{name}");
    }
}
