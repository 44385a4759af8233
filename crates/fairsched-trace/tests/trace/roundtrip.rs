//! Write → read round trips (plain, gzip, property-based).

use crate::common::temp_file;
use fairsched_trace::{MAX_JOB_PROCS, MAX_SECONDS, SwfHeader, SwfJob, SwfReader, SwfWriter};
use proptest::prelude::*;

fn write_to_vec(header: &SwfHeader, jobs: &[SwfJob]) -> Vec<u8> {
    let mut w = SwfWriter::plain("mem.swf", Vec::new());
    w.write_header(header).unwrap();
    for j in jobs {
        w.write_job(j).unwrap();
    }
    assert_eq!(w.jobs(), jobs.len() as u64);
    w.finish().unwrap()
}

fn read_back(bytes: &[u8]) -> (SwfHeader, Vec<SwfJob>) {
    let mut r = SwfReader::from_reader("mem.swf", bytes);
    let jobs = r.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    (r.header().clone(), jobs)
}

fn sample_header() -> SwfHeader {
    SwfHeader {
        max_procs: Some(240),
        max_nodes: Some(120),
        max_jobs: Some(10),
        max_records: Some(2),
        unix_start_time: Some(1_027_839_845),
        time_zone: Some(-3600),
        time_zone_string: Some("Europe/Stockholm".into()),
        start_time: Some("Sun Jul 28 09:04:05 CEST 2002".into()),
        end_time: Some("Mon Jan 16 20:31:24 CET 2006".into()),
        installation: Some("HPC2N".into()),
        computer: Some("Linux cluster".into()),
        other: vec![
            ("Version".into(), "2.2".into()),
            ("Note".into(), "a: b".into()),
            ("Note".into(), "".into()),
        ],
    }
}

fn sample_jobs() -> Vec<SwfJob> {
    vec![
        SwfJob {
            job_number: 1,
            submit_time: 0,
            run_time: 100,
            allocated_procs: 4,
            avg_cpu_time: 552.21,
            used_memory: 1e20,
            requested_memory: 0.1,
            ..SwfJob::UNKNOWN
        },
        // Every field unknown but the submit time, which a reader refuses
        // negative.
        SwfJob {
            submit_time: 0,
            ..SwfJob::UNKNOWN
        },
    ]
}

#[test]
fn plain_round_trip() {
    let bytes = write_to_vec(&sample_header(), &sample_jobs());
    let (header, jobs) = read_back(&bytes);
    assert_eq!(header, sample_header());
    assert_eq!(jobs, sample_jobs());
}

#[test]
fn gzip_file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.swf.gz");
    let mut w = SwfWriter::create(&path).unwrap();
    w.write_header(&sample_header()).unwrap();
    for j in &sample_jobs() {
        w.write_job(j).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(&std::fs::read(&path).unwrap()[..2], &[0x1f, 0x8b]);
    let mut r = SwfReader::open(&path).unwrap();
    let jobs = r.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(jobs, sample_jobs());
    assert_eq!(r.header(), &sample_header());
}

#[test]
fn real_style_text_round_trips_through_canonical_form() {
    let text = "; Version: 2.2\n; MaxProcs: 338\n; MaxNodes: 338 (batch partition; 512 total)\n\
                    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1\n";
    let (_dir, path) = temp_file("ctc.swf", text.as_bytes());
    let mut r = SwfReader::open(&path).unwrap();
    let jobs = r.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    let header = r.header().clone();
    let (header2, jobs2) = read_back(&write_to_vec(&header, &jobs));
    assert_eq!((header2, jobs2), (header, jobs));
}

fn field_int() -> impl Strategy<Value = i64> {
    prop_oneof![Just(-1i64), 0i64..1_000_000, any::<i64>()]
}

/// A time field or a processor count: at most `max` (the reader refuses more).
fn field_bounded(max: i64) -> impl Strategy<Value = i64> {
    prop_oneof![Just(-1i64), 0i64..1_000_000, Just(max), i64::MIN..=max]
}

/// The average CPU time (a float time field): at most `MAX_SECONDS`.
fn field_float_time() -> impl Strategy<Value = f64> {
    field_float().prop_map(|x| x.min(MAX_SECONDS as f64))
}

fn field_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(-1.0),
        (0i64..10_000_000).prop_map(|x| x as f64),
        (0i64..100_000_000, 0u32..4).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
    ]
}

prop_compose! {
    fn arb_job()(ints in proptest::collection::vec(field_int(), 15),
                 times in proptest::collection::vec(field_bounded(MAX_SECONDS), 4),
                 procs in proptest::collection::vec(field_bounded(MAX_JOB_PROCS), 2),
                 cpu in field_float_time(),
                 floats in proptest::collection::vec(field_float(), 2),
                 submit in prop_oneof![Just(0i64), 0i64..1_000_000, 0..=MAX_SECONDS]) -> SwfJob {
        SwfJob {
            job_number: ints[0], submit_time: submit, wait_time: times[0], run_time: times[1],
            allocated_procs: procs[0], avg_cpu_time: cpu, used_memory: floats[0],
            requested_procs: procs[1], requested_time: times[2], requested_memory: floats[1],
            status: ints[7], user_id: ints[8], group_id: ints[9], executable: ints[10],
            queue: ints[11], partition: ints[12], preceding_job: ints[13], think_time: times[3],
        }
    }
}

prop_compose! {
    fn arb_header()(procs in proptest::option::of(1u32..100_000),
                    start in proptest::option::of(any::<i64>()),
                    installation in proptest::option::of("[A-Za-z0-9 ()-]{0,30}"),
                    other in proptest::collection::vec(("[A-Z][A-Za-z0-9_]{0,12}", "[ -~]{0,40}"), 0..5))
                    -> SwfHeader {
        let mut h = SwfHeader {
            max_procs: procs,
            unix_start_time: start,
            installation: installation.map(|s| s.trim().to_string()),
            ..SwfHeader::default()
        };
        for (k, v) in other {
            h.set(&k, &v);
        }
        h
    }
}

proptest! {
    #[test]
    fn write_then_read_gives_the_same_jobs(jobs in proptest::collection::vec(arb_job(), 0..50),
                                           header in arb_header()) {
        let (h2, jobs2) = read_back(&write_to_vec(&header, &jobs));
        prop_assert_eq!(jobs2, jobs);
        prop_assert_eq!(h2, header);
    }
}
