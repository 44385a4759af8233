//! The `swf` target: an SWF log as `fairsched simulate --trace` and
//! `fairsched trace info|stats` read it.
//!
//! The input is a 17-byte prefix of options, then the log's bytes:
//! - byte 0, bit 0: `--lenient`; bit 1: `--drop-failed`; bit 2:
//!   `--drop-cancelled`; bit 3: the file on disk is the log gzip-compressed
//!   (otherwise the bytes as they are, which may start with gzip's magic
//!   bytes anyway); bit 4: `--split-parallel`; bit 5: `--window`; bits 6–7:
//!   1, 2, 5 or 1000 organizations;
//! - bytes 1–8 and 9–16: the window's start and length (little-endian i64).
//!
//! A shorter input is padded with zeros. Besides never panicking, the
//! checks are that the readers agree with each other: strict and lenient
//! reads yield the same records, reading a file (plain or gzip, detected
//! from its magic bytes) gives the same scan and the same jobs as reading
//! the text from memory, and every parsed record survives a write and a
//! read back.

use std::io::Write as _;

use crate::tmp::TempFile;
use fairsched_sim::{RunConfig, TraceInput};
use fairsched_trace::stats::workload_stats;
use fairsched_trace::{
    FilterOptions, Job, JobIteratorExt, JobStream, LocalClock, ReadOptions, StreamOptions, SwfJob, SwfReader,
    SwfWriter, TraceError, TraceInfo, TraceScan, UserOrgMap, scan, scan_reader, weeks,
};

/// Bytes of options before the log text.
pub const PREFIX: usize = 17;

/// At most this many jobs are pulled through the transforms (a job of
/// 4 × 10⁹ processors split one per processor is that many tasks: lazy,
/// but not something to iterate to the end here).
const MAX_PULLED: usize = 20_000;

/// The options and the log text of one input.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub lenient: bool,
    pub filter: FilterOptions,
    pub gzip: bool,
    pub split: bool,
    pub window: Option<(i64, i64)>,
    pub orgs: u32,
    pub text: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn decode(data: &'a [u8]) -> Input<'a> {
        let (head, text) = data.split_at(data.len().min(PREFIX));
        let mut p = [0u8; PREFIX];
        p[..head.len()].copy_from_slice(head);
        let flags = p[0];
        let bit = |i: u8| flags & (1 << i) != 0;
        let i64_at = |at: usize| i64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"));
        Input {
            lenient: bit(0),
            filter: FilterOptions {
                drop_failed: bit(1),
                drop_cancelled: bit(2),
            },
            gzip: bit(3),
            split: bit(4),
            window: bit(5).then(|| (i64_at(1), i64_at(9))),
            orgs: [1, 2, 5, 1000][usize::from(flags >> 6)],
            text,
        }
    }
}

/// What one read of every record gave.
#[derive(Debug, PartialEq)]
struct Records {
    jobs: Vec<SwfJob>,
    /// Per-line errors (strict) or skipped lines (lenient).
    bad_lines: u64,
    /// The error that ended the stream, as text.
    fatal: Option<String>,
}

fn per_line(e: &TraceError) -> bool {
    matches!(e, TraceError::Parse { .. } | TraceError::FieldCount { .. })
}

fn read_records(text: &[u8], lenient: bool) -> Records {
    let mut r = SwfReader::with_options("fuzz.swf", text, ReadOptions { lenient });
    let mut out = Records {
        jobs: Vec::new(),
        bad_lines: 0,
        fatal: None,
    };
    for item in r.by_ref() {
        match item {
            Ok(job) => out.jobs.push(job),
            Err(e) if per_line(&e) => {
                assert!(!lenient, "a lenient reader returned a line error: {e}");
                assert!(e.to_string().starts_with("fuzz.swf:"), "{e}");
                out.bad_lines += 1;
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("fuzz.swf:"), "{msg}");
                out.fatal = Some(msg);
            }
        }
    }
    if lenient {
        out.bad_lines = r.bad_lines_skipped();
        assert!(r.skipped_examples().len() as u64 <= out.bad_lines);
    }
    assert_eq!(r.jobs(), out.jobs.len() as u64);
    // Once a stream error is returned, the reader stays finished.
    assert!(r.next().is_none());
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("in memory");
    enc.finish().expect("in memory")
}

/// The fields of a scan that do not depend on where the text came from.
fn same_scan(a: &TraceScan, b: &TraceScan) {
    assert_eq!(a.header, b.header);
    assert_eq!(
        (a.lines, a.raw_jobs, a.raw_users, a.users),
        (b.lines, b.raw_jobs, b.raw_users, b.users)
    );
    assert_eq!((a.first_submit, a.last_submit), (b.first_submit, b.last_submit));
    assert_eq!(
        (a.max_allocated_procs, a.max_requested_procs, a.max_job_procs),
        (b.max_allocated_procs, b.max_requested_procs, b.max_job_procs)
    );
    assert_eq!((a.counts, a.monotone), (b.counts, b.monotone));
}

/// Cleaned jobs through the CLI's transforms, at most [`MAX_PULLED`].
fn transformed(
    jobs: impl Iterator<Item = Result<Job, TraceError>>,
    input: &Input,
) -> Vec<Result<Job, String>> {
    let mut it: Box<dyn Iterator<Item = Result<Job, TraceError>>> = Box::new(jobs);
    if let Some((start, len)) = input.window {
        it = Box::new(it.window(start, len));
    }
    if input.split {
        it = Box::new(it.split_parallel());
    }
    if input.orgs > 1 {
        let map = UserOrgMap::new(input.orgs, 7).expect("orgs ≥ 1");
        it = Box::new(it.map_orgs(map));
    }
    it.take(MAX_PULLED)
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}

/// The `swf_reader` target: the reader and the in-memory stream alone
/// (steps 1 to 3 of [`exercise`]), fast enough for 10⁷ runs.
pub fn exercise_reader(data: &[u8]) {
    let input = Input::decode(data);
    reader_checks(&input);
    // 3. One pass, and the cleaned jobs through the transforms.
    if let Ok(scanned) = scan_reader("fuzz.swf", input.text, input.lenient) {
        let _ = TraceInfo::from_scan(&scanned).to_string();
        assert_eq!(
            scanned.counts.records,
            scanned.counts.dropped() + scanned.counts.kept
        );
    }
    let options = StreamOptions {
        filter: input.filter,
        lenient: input.lenient,
        ..StreamOptions::default()
    };
    if let Ok(stream) = JobStream::from_reader("fuzz.swf", input.text, options) {
        let counts = stream.counts();
        assert_eq!(counts.records, counts.dropped() + counts.kept);
        assert_eq!(stream.loaded_jobs() as u64, counts.kept);
        for pair in transformed(stream, &input).windows(2) {
            if let [Ok(a), Ok(b)] = pair {
                assert!(a.submit <= b.submit, "out of order: {a:?} then {b:?}");
            }
        }
    }
}

/// Steps 1 and 2: strict and lenient reads agree; records read back.
fn reader_checks(input: &Input) -> Records {
    let text = input.text;
    // 1. Every record, strict and lenient: the same records; each line
    //    error of a strict read is a line a lenient read skips.
    let strict = read_records(text, false);
    let lenient = read_records(text, true);
    assert_eq!(strict, lenient);

    // 2. Each record survives a write and a read back.
    let mut w = SwfWriter::plain("out.swf", Vec::new());
    for job in &strict.jobs {
        w.write_job(job).expect("in memory");
    }
    let written = w.finish().expect("in memory");
    let back: Vec<SwfJob> = SwfReader::from_reader("out.swf", &written[..])
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("written records do not read back: {e}"));
    assert_eq!(back, strict.jobs);
    strict
}

/// The `swf` target: everything `simulate --trace` and `trace info|stats`
/// do with a log, from a file.
pub fn exercise(data: &[u8]) {
    let input = Input::decode(data);
    let text = input.text;
    reader_checks(&input);

    // 3. One pass from memory (the `--lenient` of the input), and the same
    //    from a file, which detects gzip from its magic bytes.
    let mem_scan = scan_reader("fuzz.swf", text, input.lenient);
    let on_disk = if input.gzip { gzip(text) } else { text.to_vec() };
    let file = TempFile::new(".swf", &on_disk);
    let file_scan = scan(&file.0, input.lenient);
    // Plain bytes that begin with gzip's magic bytes are read as gzip from a file.
    let comparable = input.gzip || !text.starts_with(&[0x1f, 0x8b]);
    let scanned = match (&mem_scan, &file_scan) {
        (Ok(m), Ok(f)) => {
            if comparable {
                same_scan(m, f);
            }
            f
        }
        (Err(m), Err(f)) => {
            if comparable {
                // The same message after the name (a field's value may
                // hold anything, the name too).
                let (m, f) = (m.to_string(), f.to_string());
                let name = file.0.display().to_string();
                let m = m.strip_prefix("fuzz.swf").expect("names the stream");
                let f = f.strip_prefix(name.as_str()).expect("names the file");
                assert_eq!(m, f);
            }
            return;
        }
        (m, f) => {
            assert!(!comparable, "memory {m:?} vs file {f:?}");
            return;
        }
    };
    let info = TraceInfo::from_scan(scanned);
    let _ = info.to_string();
    let _ = serde_json::to_string(&info).expect("serializable");
    assert_eq!(
        scanned.counts.records,
        scanned.counts.dropped() + scanned.counts.kept
    );

    // 4. Cleaned jobs: streamed from the file after its scan (or sorted in
    //    memory), and loaded from memory; the same jobs in the same order.
    let options = StreamOptions {
        filter: input.filter,
        lenient: input.lenient,
        ..StreamOptions::default()
    };
    let from_file = JobStream::open_with_scan(&file.0, options, scanned);
    let from_mem = JobStream::from_reader("fuzz.swf", text, options);
    let (from_file, from_mem) = match (from_file, from_mem) {
        (Ok(f), Ok(m)) => (f, m),
        (f, m) => {
            assert!(!comparable, "stream from file {f:?} vs memory {m:?}");
            return;
        }
    };
    let file_jobs = transformed(from_file, &input);
    let mem_jobs = transformed(from_mem, &input);
    if comparable {
        assert_eq!(file_jobs, mem_jobs);
    }
    for pair in file_jobs.windows(2) {
        if let [Ok(a), Ok(b)] = pair {
            assert!(a.submit <= b.submit, "out of order: {a:?} then {b:?}");
        }
    }

    // 5. `trace stats` on the cleaned jobs (all of them, if few).
    if file_jobs.len() <= 2_000 && input.window.is_none() && !input.split {
        let ok: Vec<&Job> = file_jobs.iter().filter_map(|j| j.as_ref().ok()).collect();
        let runtimes: Vec<f64> = ok.iter().map(|j| j.runtime as f64).collect();
        let submits: Vec<i64> = ok.iter().map(|j| j.submit).collect();
        let stats = workload_stats(&runtimes, &submits);
        let _ = serde_json::to_string(&stats);
    }

    // 6. The header's clock and the log's weeks (`fairsched pffp`), over a
    //    bounded span: `weeks` is linear in it.
    let (clock, _note) = LocalClock::from_header(&scanned.header);
    let _ = clock.describe();
    if let (Some(first), Some(last)) = (scanned.first_submit, scanned.last_submit)
        && last
            .checked_sub(first)
            .is_some_and(|span| span <= 20 * 365 * 86_400)
    {
        let _ = weeks(&clock, first, last);
    }

    // 7. The platform `simulate` sizes from the scan (header MaxProcs or
    //    the widest job) with no --procs: refused or built, never an
    //    allocation the size of a hostile number.
    let mut config = RunConfig::new(
        TraceInput::Path(file.0.clone()),
        "fcfs".parse().expect("a valid spec"),
    );
    config.orgs = input.orgs;
    config.window = input.window;
    config.split_parallel = input.split;
    config.stream = options;
    if let Ok((platform, info)) = config.platform(scanned) {
        assert!(
            info.total <= fairsched_sim::MAX_PROCS,
            "{} processors",
            info.total
        );
        assert_eq!(
            platform.machines.iter().map(|m| m.len() as u64).sum::<u64>(),
            u64::from(info.total)
        );
    }
}
