//! SWF reader edge cases on small inline texts.

use crate::common::{gzip, line, ok_line, temp_file};
use fairsched_trace::{ReadOptions, SwfJob, SwfReader, TraceError};

fn read_all(text: &str) -> Result<Vec<SwfJob>, TraceError> {
    SwfReader::from_reader("test.swf", text.as_bytes()).collect()
}

#[test]
fn comments_anywhere_and_blank_lines() {
    let text = format!(
        "; Version: 2.2\n\n{}; a comment between jobs\n   \n\t\n  ; indented comment\n{}\n; trailing comment",
        ok_line(1, 0),
        ok_line(2, 10).trim_end()
    );
    let mut r = SwfReader::from_reader("test.swf", text.as_bytes());
    let jobs: Vec<SwfJob> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(jobs.iter().map(|j| j.job_number).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(r.jobs(), 2);
    assert_eq!(r.lines(), 9);
    assert_eq!(r.bad_lines_skipped(), 0);
}

#[test]
fn last_line_without_newline() {
    let jobs = read_all(ok_line(7, 3).trim_end()).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].job_number, 7);
}

#[test]
fn empty_input() {
    assert!(read_all("").unwrap().is_empty());
    assert!(read_all("; only a comment\n\n").unwrap().is_empty());
}

#[test]
fn tabs_and_runs_of_spaces() {
    let text = "  1\t0 \t 5\t\t100  4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\t\n";
    let j = read_all(text).unwrap()[0];
    assert_eq!(
        (j.job_number, j.wait_time, j.run_time, j.user_id, j.group_id),
        (1, 5, 100, 7, 2)
    );
}

#[test]
fn unknown_fields_are_kept_as_minus_one() {
    let j = read_all("-1 0 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n").unwrap()[0];
    assert_eq!(
        j,
        SwfJob {
            submit_time: 0,
            ..SwfJob::UNKNOWN
        }
    );
}

/// SWF counts submit times from the log's start (0 = its first job), -1
/// meaning unknown: a field 2 below -1 is a located line error, which a
/// lenient reader skips and counts like any other.
#[test]
fn negative_submit_time_is_a_located_line_error() {
    let text = format!(
        "; MaxProcs: 8\n{}2 -10 0 50 2 -1 -1 2 200 -1 1 8 1 -1 -1 -1 -1 -1\n{}",
        ok_line(1, 0),
        ok_line(3, 5)
    );
    let err = read_all(&text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.swf:3: field 2 (submit_time): \"-10\" is negative: SWF submit times are seconds \
         from the log's start (0 or more, or -1 for unknown)"
    );
    assert!(err.is_line_error());
    let mut r = SwfReader::with_options("test.swf", text.as_bytes(), ReadOptions::LENIENT);
    let jobs: Vec<i64> = r.by_ref().map(|j| j.unwrap().job_number).collect();
    assert_eq!(jobs, [1, 3]);
    assert_eq!(r.bad_lines_skipped(), 1);
    assert!(
        r.skipped_examples()[0]
            .to_string()
            .starts_with("test.swf:3: field 2 (submit_time): \"-10\"")
    );
    // -1 is unknown, as in every field: the line reads (the filters drop
    // it); -2 breaks the format.
    let unknown = read_all("\t7   -1 0 50 2 -1 -1 2 200 -1 1 8 1 -1 -1 -1 -1 -1\n").unwrap();
    assert_eq!(unknown[0].submit_time, -1);
    let below = read_all("\t7   -2 0 50 2 -1 -1 2 200 -1 1 8 1 -1 -1 -1 -1 -1\n").unwrap_err();
    assert!(
        below
            .to_string()
            .starts_with("test.swf:1: field 2 (submit_time): \"-2\" is negative"),
        "{below}"
    );
    // A stream (what `simulate` reads) stops at the same line.
    let stream = fairsched_trace::JobStream::from_reader("test.swf", text.as_bytes(), Default::default());
    assert!(
        stream
            .unwrap_err()
            .to_string()
            .starts_with("test.swf:3: field 2 (submit_time)")
    );
}

/// Issue 38, finding 10: a submit and a run time of i64::MAX were read
/// (the run time then became 0 in the simulator) and 999999999999
/// processors saturated to u32::MAX, named by no line. Now a time field
/// above 10^12 s and a processor count above u32::MAX are line errors
/// naming the file, line and field, in file order; strict reading stops
/// there, lenient reading skips and counts them, and -1 (unknown) and the
/// bounds themselves still read.
#[test]
fn absurd_times_and_processor_counts_are_located_line_errors() {
    let text = "; MaxProcs: 8\n\
                1 0 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                2 9223372036854775807 0 9223372036854775807 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                3 10 9223372036854775807 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                ; a comment\n\
                4 10 0 1000000000001 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                5 10 0 100 999999999999 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                6 10 0 100 -1 -1 -1 4294967296 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                7 10 0 100 4 2e12 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                8 10 0 100 4 -1 -1 4 1e15 -1 1 1 1 -1 -1 -1 -1 -1\n\
                9 10 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 99999999999999\n\
                10 1000000000000 -1 1000000000000 4294967295 -1 -1 4294967295 1000000000000 -1 1 1 1 -1 -1 -1 -1 1000000000000\n\
                11 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n";
    let time = "is more than 1000000000000 seconds (over 31,000 years): not a time an SWF log holds";
    let procs = "is more than 4294967295 processors, the most a job can have";
    let want = [
        format!("abs.swf:3: field 2 (submit_time): \"9223372036854775807\" {time}"),
        format!("abs.swf:4: field 3 (wait_time): \"9223372036854775807\" {time}"),
        format!("abs.swf:6: field 4 (run_time): \"1000000000001\" {time}"),
        format!("abs.swf:7: field 5 (allocated_procs): \"999999999999\" {procs}"),
        format!("abs.swf:8: field 8 (requested_procs): \"4294967296\" {procs}"),
        format!("abs.swf:9: field 6 (avg_cpu_time): \"2e12\" {time}"),
        format!("abs.swf:10: field 9 (requested_time): \"1e15\" {time}"),
        format!("abs.swf:11: field 18 (think_time): \"99999999999999\" {time}"),
    ];
    let mut errors = Vec::new();
    let mut read = Vec::new();
    for item in SwfReader::from_reader("abs.swf", text.as_bytes()) {
        match item {
            Ok(job) => read.push(job.job_number),
            Err(e) => {
                assert!(e.is_line_error(), "{e}");
                errors.push(e.to_string());
            }
        }
    }
    assert_eq!(errors, want);
    assert_eq!(read, [1, 10, 11]);
    let mut r = SwfReader::with_options("abs.swf", text.as_bytes(), ReadOptions::LENIENT);
    assert_eq!(
        r.by_ref().map(|j| j.unwrap().job_number).collect::<Vec<_>>(),
        [1, 10, 11]
    );
    assert_eq!(r.bad_lines_skipped(), 8);
    // What `simulate` and `trace info` read (a scan, then the stream) stop at the
    // first, from a file too.
    let (_dir, path) = temp_file("abs.swf", text.as_bytes());
    let err = fairsched_trace::scan(&path, false).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}{}", path.display(), want[0].strip_prefix("abs.swf").unwrap())
    );
    let stream = fairsched_trace::JobStream::from_reader("abs.swf", text.as_bytes(), Default::default());
    assert_eq!(stream.unwrap_err().to_string(), want[0]);
    // At the bounds, a job is kept as written.
    let kept: Vec<_> = fairsched_trace::JobStream::from_reader(
        "abs.swf",
        text.as_bytes(),
        fairsched_trace::StreamOptions {
            lenient: true,
            ..Default::default()
        },
    )
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    assert_eq!(
        kept.iter()
            .map(|j| (j.id, j.submit, j.runtime, j.procs))
            .collect::<Vec<_>>(),
        [
            (1, 0, 100, 4),
            (10, 1_000_000_000_000, 1_000_000_000_000, u32::MAX)
        ]
    );
}

/// A well-known numeric header key with a value that is not valid for it
/// is left in `other` and reported once per key, naming the line, whether
/// it comes before the jobs or among them; the scan and `trace info` carry
/// the warnings and say where the processor count comes from instead.
#[test]
fn bad_numeric_header_values_are_reported_with_their_line() {
    let text = format!(
        "; Version: 2.2\n; MaxProcs: abc\n; MaxNodes: -5\n{}; MaxProcs: also bad\n; UnixStartTime: soon\n{}",
        ok_line(1, 0),
        ok_line(2, 5)
    );
    let mut r = SwfReader::from_reader("hdr.swf", text.as_bytes());
    assert_eq!(r.by_ref().count(), 2);
    let said: Vec<String> = r.header_warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        said,
        [
            "hdr.swf:2: header `MaxProcs: abc` ignored: not a whole number of processors, 1 or more",
            "hdr.swf:3: header `MaxNodes: -5` ignored: not a whole number of nodes, 1 or more",
            "hdr.swf:6: header `UnixStartTime: soon` ignored: not a whole number of seconds",
        ]
    );
    assert_eq!(r.header().max_procs, None);
    assert!(r.header_warnings()[0].is_max_procs());

    let scan = fairsched_trace::scan_reader("hdr.swf", text.as_bytes(), false).unwrap();
    assert_eq!(scan.header_warnings, r.header_warnings());
    let info = fairsched_trace::TraceInfo::from_scan(&scan);
    assert_eq!(info.processors, Some(4));
    assert_eq!(
        info.processors_source,
        fairsched_trace::PROCESSORS_FROM_JOBS_MAXPROCS_IGNORED
    );
    assert_eq!(info.warnings, said);
    let shown = info.to_string();
    assert!(
        shown.contains("warning        hdr.swf:2: header `MaxProcs: abc` ignored"),
        "{shown}"
    );

    // A valid value after a bad one is used, and the bad one still said.
    let text = format!("; MaxProcs: -5\n; MaxProcs: 16\n{}", ok_line(1, 0));
    let scan = fairsched_trace::scan_reader("hdr.swf", text.as_bytes(), false).unwrap();
    assert_eq!(scan.header.max_procs, Some(16));
    assert_eq!(scan.header_warnings.len(), 1);
    assert_eq!(
        fairsched_trace::TraceInfo::from_scan(&scan).processors_source,
        fairsched_trace::PROCESSORS_FROM_HEADER
    );
    // A header-only scan holds the warnings of the lines before the first job.
    let (_dir, path) = temp_file(
        "hdr.swf",
        b"; MaxProcs: 0\n1 0 0 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n",
    );
    let head = fairsched_trace::scan_header(&path, false).unwrap();
    assert_eq!(head.header_warnings.len(), 1);
    assert_eq!(head.header_warnings[0].line, 1);
}

#[test]
fn decimals_in_float_fields_and_integer_valued_decimals_elsewhere() {
    let text = "1 0 5 12.0 4 552.21 1024.5 4 200 2.5 1 7 2 -1 1 -1 -1 -1\n";
    let j = read_all(text).unwrap()[0];
    assert_eq!(j.run_time, 12);
    assert_eq!(
        (j.avg_cpu_time, j.used_memory, j.requested_memory),
        (552.21, 1024.5, 2.5)
    );
}

#[test]
fn crlf_line_ends() {
    let text = format!(
        "; MaxProcs: 64\r\n{}\r\n\r\n{}\r\n",
        ok_line(1, 0).trim_end(),
        ok_line(2, 5).trim_end()
    );
    let mut r = SwfReader::from_reader("crlf.swf", text.as_bytes());
    let jobs: Vec<SwfJob> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[1].think_time, -1);
    assert_eq!(r.header().max_procs, Some(64));
}

#[test]
fn header_keys_parsed() {
    let text = format!(
        "; Version: 2.2\n; Computer: Linux cluster (Seth)\n; Installation: HPC2N\n; MaxJobs: 527371\n\
         ; MaxRecords: 202871\n; UnixStartTime: 1027839845\n; TimeZone: 3600\n\
         ; TimeZoneString: Europe/Stockholm\n; StartTime: Sun Jul 28 09:04:05 CEST 2002\n\
         ; EndTime:   Mon Jan 16 20:31:24 CET 2006\n; MaxNodes: 240\n;\n\
         ;              http://www.hpc2n.umu.se/\n{}; MaxProcs: 240\n; Note: late key\n",
        ok_line(1, 0)
    );
    let mut r = SwfReader::from_reader("HPC2N.swf", text.as_bytes());
    assert_eq!(r.by_ref().count(), 1);
    let h = r.header();
    assert_eq!(h.max_procs, Some(240));
    assert_eq!(h.max_nodes, Some(240));
    assert_eq!(h.max_jobs, Some(527_371));
    assert_eq!(h.max_records, Some(202_871));
    assert_eq!(h.unix_start_time, Some(1_027_839_845));
    assert_eq!(h.time_zone, Some(3600));
    assert_eq!(h.time_zone_string.as_deref(), Some("Europe/Stockholm"));
    assert_eq!(h.start_time.as_deref(), Some("Sun Jul 28 09:04:05 CEST 2002"));
    assert_eq!(h.end_time.as_deref(), Some("Mon Jan 16 20:31:24 CET 2006"));
    assert_eq!(h.installation.as_deref(), Some("HPC2N"));
    assert_eq!(h.computer.as_deref(), Some("Linux cluster (Seth)"));
    assert_eq!(
        h.other,
        [
            ("Version".into(), "2.2".into()),
            ("Note".into(), "late key".into())
        ]
    );
}

#[test]
fn seventeen_fields_names_file_line_and_count() {
    let text = format!(
        "; header\n{}1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1\n",
        ok_line(1, 0)
    );
    let err = read_all(&text).unwrap_err();
    match &err {
        TraceError::FieldCount { path, line, found } => {
            assert_eq!(path.to_str(), Some("test.swf"));
            assert_eq!((*line, *found), (3, 17));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.to_string(), "test.swf:3: expected 18 fields, found 17");
}

#[test]
fn nineteen_fields_is_an_error() {
    let text = "1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1 99\n";
    assert!(matches!(
        read_all(text),
        Err(TraceError::FieldCount {
            line: 1,
            found: 19,
            ..
        })
    ));
}

#[test]
fn non_numeric_field_message_names_file_line_and_field() {
    let text = format!(
        "{}{}2 10 0 abc 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n",
        "; c\n".repeat(1232),
        ok_line(1, 0)
    );
    let err = read_all(&text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.swf:1234: field 4 (run_time): \"abc\" is not a number"
    );
    assert!(err.is_line_error());
    let TraceError::Parse {
        field, index, value, ..
    } = err
    else {
        panic!()
    };
    assert_eq!((field, index, value.as_str()), ("run_time", 4, "abc"));
}

#[test]
fn fractional_value_in_integer_field() {
    let err = read_all("1 0 5 12.5 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.swf:1: field 4 (run_time): \"12.5\" is not an integer"
    );
}

#[test]
fn strict_reader_continues_after_a_bad_line() {
    let text = format!("{}garbage\n{}", ok_line(1, 0), ok_line(2, 1));
    let items: Vec<_> = SwfReader::from_reader("t.swf", text.as_bytes()).collect();
    assert_eq!(items.len(), 3);
    assert!(items[0].is_ok() && items[1].is_err() && items[2].is_ok());
}

#[test]
fn lenient_mode_skips_and_counts() {
    let text = format!(
        "{}1 2 3\n{}x 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n{}1 0 5 100 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1 -1\n",
        ok_line(1, 0),
        ok_line(2, 1),
        ok_line(3, 2)
    );
    let mut r = SwfReader::with_options("bad.swf", text.as_bytes(), ReadOptions::LENIENT);
    let jobs: Vec<SwfJob> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(jobs.iter().map(|j| j.job_number).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!((r.jobs(), r.bad_lines_skipped(), r.lines()), (3, 3, 6));
    let examples: Vec<String> = r.skipped_examples().iter().map(ToString::to_string).collect();
    assert_eq!(
        examples,
        [
            "bad.swf:2: expected 18 fields, found 3",
            "bad.swf:4: field 1 (job_number): \"x\" is not a number",
            "bad.swf:6: expected 18 fields, found 19",
        ]
    );
}

#[test]
fn gzip_file_is_detected_by_magic() {
    let text = format!("; MaxProcs: 8\n{}{}", ok_line(1, 0), ok_line(2, 3));
    // Deliberately no .gz suffix: detection is by content.
    let (_dir, path) = temp_file("trace.swf", &gzip(text.as_bytes()));
    let mut r = SwfReader::open(&path).unwrap();
    assert_eq!(r.by_ref().collect::<Result<Vec<_>, _>>().unwrap().len(), 2);
    assert_eq!(r.header().max_procs, Some(8));
}

/// A file named .gz that is not gzip is refused as such, not read as
/// text and reported as a line of the wrong field count.
#[test]
fn a_gz_name_without_gzip_is_named() {
    let (_dir, path) = temp_file("page.swf.gz", b"<html><body>Not Found</body></html>\n");
    let e = SwfReader::open(&path)
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("page.swf.gz") && e.contains("not gzip-compressed") && e.contains("<html><body>Not Found"),
        "{e}"
    );
    assert!(!e.contains("fields"), "{e}");
}

#[test]
fn concatenated_gzip_members() {
    let mut bytes = gzip(ok_line(1, 0).as_bytes());
    bytes.extend(gzip(ok_line(2, 1).as_bytes()));
    let (_dir, path) = temp_file("multi.swf.gz", &bytes);
    assert_eq!(SwfReader::open(&path).unwrap().count(), 2);
}

#[test]
fn truncated_gzip_names_the_file() {
    let text: String = (1..=5000).map(|i| ok_line(i, i)).collect();
    let full = gzip(text.as_bytes());
    let cut = &full[..full.len() * 2 / 3];
    let (_dir, path) = temp_file("cut.swf.gz", cut);
    let mut r = SwfReader::open(&path).unwrap();
    let mut ok = 0u64;
    let err = loop {
        match r.next() {
            Some(Ok(_)) => ok += 1,
            Some(Err(e)) => break e,
            None => panic!("truncated stream read to the end without error"),
        }
    };
    let TraceError::Truncated { path: p, line } = &err else {
        panic!("unexpected {err:?}")
    };
    assert_eq!(p, &path);
    assert_eq!(*line, ok);
    assert!(ok > 0 && ok < 5000);
    let msg = err.to_string();
    assert!(
        msg.contains("cut.swf.gz") && msg.contains(&format!("after line {ok}")),
        "{msg}"
    );
    // The stream is over after a stream error.
    assert!(r.next().is_none());
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let err = SwfReader::open("/nonexistent/dir/x.swf").unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/dir/x.swf: "), "{err}");
}

#[test]
fn non_utf8_bytes_do_not_panic() {
    let mut text = b"; Computer: caf\xe9\n".to_vec();
    text.extend_from_slice(b"1 0 5 \xff\xfe 4 -1 -1 4 200 -1 1 7 2 -1 1 -1 -1 -1\n");
    let mut r = SwfReader::from_reader("latin1.swf", &text[..]);
    let err = r.next().unwrap().unwrap_err();
    assert!(
        err.to_string().starts_with("latin1.swf:2: field 4 (run_time): "),
        "{err}"
    );
    assert_eq!(r.header().computer.as_deref(), Some("caf\u{fffd}"));
}

#[test]
fn long_lines_span_buffer_refills() {
    // A comment longer than the reader's chunk, then a job.
    let text = format!("; {}\n{}", "x".repeat(600_000), line(1, 0, 5, 1, 1, 1, 1));
    let jobs = read_all(&text).unwrap();
    assert_eq!(jobs.len(), 1);
}

#[test]
fn readers_and_streams_are_send() {
    fn send<T: Send>() {}
    send::<SwfReader<fairsched_trace::FileSource>>();
    send::<fairsched_trace::JobStream>();
    send::<TraceError>();
}

mod arbitrary_input {
    use super::*;
    use proptest::prelude::*;

    /// Lines built from SWF-ish tokens and junk, so that many lines get deep into the parser.
    fn swf_like() -> impl Strategy<Value = Vec<u8>> {
        let token = prop_oneof![
            Just("-1".to_string()),
            "[0-9]{1,20}",
            "-?[0-9]{0,6}\\.[0-9]{0,25}",
            "[-+.eE0-9a-z]{1,6}",
            Just(";".to_string()),
            Just(": ".to_string()),
        ];
        let sep = prop_oneof![Just(" "), Just("\t"), Just("  "), Just("\r\n"), Just("\n")];
        proptest::collection::vec((token, sep), 0..80).prop_map(|v| {
            v.into_iter()
                .flat_map(|(t, s)| [t, s.to_string()])
                .collect::<String>()
                .into_bytes()
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            for lenient in [false, true] {
                let r = SwfReader::with_options("fuzz.swf", &bytes[..], ReadOptions { lenient });
                for item in r.take(1000) {
                    let _ = item.map_err(|e| e.to_string());
                }
            }
        }

        #[test]
        fn never_panics_on_swf_like_text(bytes in swf_like()) {
            let mut r = SwfReader::with_options("fuzz.swf", &bytes[..], ReadOptions::LENIENT);
            let n = r.by_ref().filter(Result::is_ok).count() as u64;
            prop_assert_eq!(n, r.jobs());
            let _ = fairsched_trace::JobStream::from_reader("fuzz.swf", &bytes[..], Default::default());
        }
    }
}
