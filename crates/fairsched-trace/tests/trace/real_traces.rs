//! Every Parallel Workloads Archive log in `../shared/data/traces/swf/` scans without error
//! and has the job count listed in the data README. Skipped (not failed) if the data is absent.
//!
//! `cargo test -p fairsched-trace --test real_traces -- --nocapture` prints each log's summary.

use std::collections::BTreeMap;
use std::path::Path;

use fairsched_trace::{JobIteratorExt, JobStream, StreamOptions, TraceInfo, UserOrgMap, scan};

const SWF_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/traces/swf");

/// `| file.swf.gz | 77222 | …` rows of the README table → file → job count.
fn readme_job_counts(readme: &str) -> BTreeMap<String, u64> {
    readme
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // ["", file, jobs, …]
            let file = cells.get(1)?;
            let jobs = cells.get(2)?.parse().ok()?;
            file.ends_with(".swf.gz").then(|| (file.to_string(), jobs))
        })
        .collect()
}

#[test]
fn archive_logs_scan_with_the_documented_job_counts() {
    let dir = Path::new(SWF_DIR);
    if !dir.is_dir() {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return;
    }
    let readme = std::fs::read_to_string(dir.join("../README.md")).expect("data README next to swf/");
    let expected = readme_job_counts(&readme);
    assert!(expected.len() >= 9, "README table not understood: {expected:?}");

    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().is_some_and(|s| s.ends_with(".swf.gz")))
        .collect();
    files.sort();
    assert!(!files.is_empty());

    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let s = scan(path, false).unwrap_or_else(|e| panic!("{e}"));
        let info = TraceInfo::from_scan(&s);
        println!("{info}");
        let want = expected
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in the README table"));
        assert_eq!(s.raw_jobs, *want, "{name}: raw job count");
        assert_eq!(s.counts.records, s.raw_jobs);
        assert_eq!(s.counts.records, s.counts.dropped() + s.counts.kept, "{name}");
        assert_eq!(s.counts.bad_lines_skipped, 0);
        // Informational only: some cleaned logs kept the uncleaned log's MaxRecords (CTC).
        if let Some(records) = s.header.max_records.filter(|&r| r != s.raw_jobs) {
            println!(
                "note: {name}: header MaxRecords {records} != {} job lines",
                s.raw_jobs
            );
        }
        assert!(info.processors.is_some(), "{name}");
    }
}

#[test]
fn a_real_log_streams_through_the_transforms() {
    let path = Path::new(SWF_DIR).join("KTH-SP2-1996-2.1-cln.swf.gz");
    if !path.is_file() {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return;
    }
    let s = scan(&path, false).unwrap();
    let stream = JobStream::open_with_scan(&path, StreamOptions::default(), &s).unwrap();
    assert_eq!(stream.sorted(), !s.monotone);
    let start = s.first_submit.unwrap() + 86_400 * 30;
    let map = UserOrgMap::new(5, 1).unwrap();
    let mut last = 0;
    let mut n = 0u64;
    for job in stream.window(start, 50_000).split_parallel().map_orgs(map) {
        let job = job.unwrap();
        assert!((0..50_000).contains(&job.submit) && job.submit >= last);
        assert!(job.org < 5 && job.procs == 1);
        last = job.submit;
        n += 1;
    }
    println!("KTH: {n} one-processor jobs in a 50000 s window starting at {start} s");
    assert!(n > 0);
}
