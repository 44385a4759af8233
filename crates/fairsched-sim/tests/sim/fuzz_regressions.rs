//! The fuzz targets' checks (fuzz/src/, one module per target), replayed
//! on stable over committed inputs, so CI runs them without nightly or
//! libFuzzer:
//!
//! - `tests/fuzz-corpus/TARGET/`: a sample of each target's minimized
//!   corpus (`cargo fuzz cmin`), real log lines and edge cases included;
//! - `tests/fuzz-regressions/TARGET/`: every input a fuzz run found
//!   crashing, hanging or allocating without bound, now fixed;
//!
//! and, below, each of those findings as a named test with its clean error.
//! The tests live here because the checks span the trace crate's readers,
//! the core's registry and the simulator's platform sizing. How to fuzz:
//! fuzz/README.md.

use crate::{flags, platform, policy_spec, simulate, swf, workflow};

use std::path::{Path, PathBuf};

use fairsched_sim::{MAX_PROCS, PlatformFile, RunConfig, TraceInput};
use fairsched_trace::stats::workload_stats;
use fairsched_trace::{ownership_zipf, scan_reader};

/// Feeds every committed input of `target` to `exercise`; returns how many.
fn replay(target: &str, exercise: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["fuzz-corpus", "fuzz-regressions"] {
        let dir = root.join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        files.extend(entries.map(|e| e.expect("a readable folder").path()));
    }
    files.sort();
    for file in &files {
        let data = std::fs::read(file).expect("a readable file");
        // Shown (captured output) if the input fails.
        println!("{target}: {}", file.display());
        exercise(&data);
    }
    files.len()
}

#[test]
fn swf_reader_corpus() {
    assert!(replay("swf_reader", swf::exercise_reader) >= 50);
}

/// The two SWF targets take the same input: each corpus goes through the
/// whole pipeline.
#[test]
fn swf_corpus() {
    assert!(replay("swf", swf::exercise) + replay("swf_reader", swf::exercise) >= 100);
}

#[test]
fn simulate_corpus() {
    assert!(replay("simulate", simulate::exercise) + replay("swf_reader", simulate::exercise) >= 100);
}

#[test]
fn policy_spec_corpus() {
    assert!(replay("policy_spec", policy_spec::exercise) >= 50);
}

#[test]
fn platform_corpus() {
    assert!(replay("platform", platform::exercise) >= 20);
}

#[test]
fn flags_corpus() {
    assert!(replay("flags", flags::exercise) >= 20);
}

#[test]
fn workflow_corpus() {
    assert!(replay("workflow", workflow::exercise) >= 10);
}

/// An SWF text read from memory, as `--trace` would give it.
fn run_on(text: &'static str) -> RunConfig {
    RunConfig::new(
        TraceInput::Bytes {
            name: "hostile.swf".into(),
            data: text.as_bytes(),
        },
        "fcfs".parse().unwrap(),
    )
}

/// Found by the `swf` target on its first run (a seed with `MaxProcs:
/// 16777217`): a header's `MaxProcs` sized the platform with no bound (4294967295 processors: a 16 GiB allocation, then an abort).
#[test]
fn header_max_procs_beyond_the_limit_is_an_error() {
    for (text, want) in [
        (
            "; MaxProcs: 4294967295\n1 0 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
            "hostile.swf: header MaxProcs gives 4294967295 processors; at most 16777216",
        ),
        (
            "; MaxProcs: 16777217\n1 0 0 100 16777217 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
            "hostile.swf: header MaxProcs gives 16777217 processors",
        ),
    ] {
        let config = run_on(text);
        config.check().unwrap();
        let scan = config.trace.scan(false).unwrap();
        let err = config.platform(&scan).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
        assert!(err.contains("--procs"), "the message says what to do: {err}");
    }
    // At the limit, and with --procs overriding the header, it runs.
    let mut config = run_on("; MaxProcs: 4294967295\n1 0 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n");
    config.procs = Some(8);
    let scan = config.trace.scan(false).unwrap();
    assert_eq!(config.platform(&scan).unwrap().1.total, 8);
}

/// The same through the widest job, when the header has no `MaxProcs`.
/// A job wider than u32::MAX (issue 38, finding 10: 999999999999
/// processors saturated to 4294967295 and failed here, naming no line)
/// is now refused by the reader, with its line and field.
#[test]
fn widest_job_beyond_the_limit_is_an_error() {
    let config = run_on("1 0 0 100 4294967295 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n");
    let scan = config.trace.scan(false).unwrap();
    let err = config.platform(&scan).unwrap_err().to_string();
    assert!(
        err.starts_with("hostile.swf: widest job gives 4294967295 processors; at most"),
        "{err}"
    );
    let config = run_on(
        "1 0 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 0 100 999999999999 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
    );
    let err = config.trace.scan(false).unwrap_err().to_string();
    assert_eq!(
        err,
        "hostile.swf:2: field 5 (allocated_procs): \"999999999999\" is more than 4294967295 processors, \
         the most a job can have"
    );
    let config = run_on("1 0 0 100 16777216 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n");
    let scan = config.trace.scan(false).unwrap();
    let (platform, info) = config.platform(&scan).unwrap();
    assert_eq!(
        (info.total, platform.machines[0].len()),
        (MAX_PROCS, MAX_PROCS as usize)
    );
}

/// Found by the `platform` target's seed `procs = 4294967295`: a
/// `--platform` file's organizations
/// owning more than `MAX_PROCS` processors passed the checks and sized the
/// platform (4294967295 slots). Now a command-line error naming the file.
#[test]
fn platform_file_beyond_the_limit_is_an_error() {
    let file = PlatformFile::parse(Path::new("big.toml"), "[[org]]\nprocs = 4294967295\n").unwrap();
    let mut config = run_on("1 0 0 100 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n");
    config.platform_file = Some(file);
    let err = config.check().unwrap_err().to_string();
    assert!(
        err.contains("big.toml: the organizations own 4294967295 processors; at most 16777216"),
        "{err}"
    );
}

/// The ownership split before the fix: a scan for the donor of each
/// organization left with 0 processors (quadratic).
fn zipf_reference(total: u32, k: u32, s: f64) -> Vec<u32> {
    let weights: Vec<f64> = (1..=k).map(|i| f64::from(i).powf(-s)).collect();
    let sum: f64 = weights.iter().sum();
    let quotas: Vec<f64> = weights.iter().map(|w| f64::from(total) * w / sum).collect();
    let mut shares: Vec<u32> = quotas.iter().map(|q| q.floor() as u32).collect();
    let mut order: Vec<usize> = (0..k as usize).collect();
    order.sort_by(|&a, &b| {
        let ra = quotas[a] - quotas[a].floor();
        let rb = quotas[b] - quotas[b].floor();
        rb.total_cmp(&ra)
    });
    let assigned: u64 = shares.iter().map(|&x| u64::from(x)).sum();
    if assigned < u64::from(total) {
        for &i in order.iter().cycle().take((u64::from(total) - assigned) as usize) {
            shares[i] += 1;
        }
    } else {
        let mut excess = assigned - u64::from(total);
        for &i in order.iter().rev().cycle() {
            if excess == 0 {
                break;
            }
            if shares[i] > 0 {
                shares[i] -= 1;
                excess -= 1;
            }
        }
    }
    for i in 0..shares.len() {
        if shares[i] == 0 {
            let max = *shares.iter().max().unwrap();
            let donor = shares.iter().rposition(|&x| x == max).unwrap();
            shares[donor] -= 1;
            shares[i] = 1;
        }
    }
    shares
}

/// Found by the `flags` target: `--machines 16777216 --orgs 16777216` never
/// finished (the Zipf split gave each organization left with 0 processors
/// one from the largest share, found by a scan: 2^48 steps). The split is
/// now O(k log k), with the same shares as before.
#[test]
fn zipf_split_among_millions_of_organizations_finishes() {
    let k = 1 << 22;
    let shares = ownership_zipf(k, k, 1.0).unwrap();
    assert!(shares.iter().all(|&s| s == 1));
    let shares = ownership_zipf(3 * k, k, 1.0).unwrap();
    assert_eq!(
        shares.iter().map(|&s| u64::from(s)).sum::<u64>(),
        3 * u64::from(k)
    );
    assert!(shares.windows(2).all(|w| w[0] >= w[1]) && shares[shares.len() - 1] == 1);
    // The same shares as the quadratic version, wherever it can finish.
    for total in [1u32, 7, 64, 100, 1000, 4096] {
        for k in [1u32, 2, 3, 10, 33, 64, 500, 1000, 4096] {
            if k > total {
                continue;
            }
            for s in [0.0, 0.5, 1.0, 2.0, 3.0, 8.0] {
                assert_eq!(
                    ownership_zipf(total, k, s).unwrap(),
                    zipf_reference(total, k, s),
                    "total {total}, k {k}, s {s}"
                );
            }
        }
    }
}

/// The scan of the hostile logs above: their counts stay exact. (A
/// negative submit time is a line error since SWF submit times count from
/// the log's start: the widest span starts at 0.) Since issue 38, finding
/// 10, times of i64::MAX and counts beyond u32::MAX are line errors too
/// (they ran with a run time of 0, or saturated): the widest log that
/// reads spans 10^12 s, with jobs of u32::MAX processors.
#[test]
fn hostile_numbers_scan_cleanly() {
    let text = "; MaxProcs: 4294967295\n\
                1 0 0 1000000000000 4294967295 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n\
                2 1000000000000 0 1 4294967295 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n";
    let scan = scan_reader("hostile.swf", text.as_bytes(), false).unwrap();
    assert_eq!((scan.raw_jobs, scan.counts.kept), (2, 2));
    assert_eq!(scan.max_job_procs, Some(u32::MAX));
    assert_eq!(scan.span_seconds(), fairsched_trace::MAX_SECONDS);
    for (line, want) in [
        (
            "1 0 0 9223372036854775807 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
            "hostile.swf:1: field 4 (run_time): \"9223372036854775807\" is more than",
        ),
        (
            "2 9223372036854775807 0 1 4 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
            "hostile.swf:1: field 2 (submit_time): \"9223372036854775807\" is more than",
        ),
        (
            "1 0 0 10 4294967296 -1 -1 4 3600 -1 1 1 1 -1 -1 -1 -1 -1\n",
            "hostile.swf:1: field 5 (allocated_procs): \"4294967296\" is more than",
        ),
    ] {
        let err = scan_reader("hostile.swf", line.as_bytes(), false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{err}");
        // Lenient reading skips the line, and the simulator never sees it.
        let scan = scan_reader("hostile.swf", line.as_bytes(), true).unwrap();
        assert_eq!((scan.raw_jobs, scan.counts.bad_lines_skipped), (0, 1));
    }
}

/// Found by the `swf` target after 3.4 × 10⁶ runs: `trace stats` took the
/// inter-arrival times as `submit[i+1] - submit[i]` in i64, which overflows
/// (a panic in debug builds, a wrong sign in release) for submits at both
/// ends of i64. Now computed in i128. (The reader now refuses negative
/// submit times, so the statistics get the two submits directly.)
#[test]
fn interarrival_times_of_extreme_submits_do_not_overflow() {
    let submits = [-9_223_372_036_854_775_807, 9_223_372_036_854_775_807];
    let stats = workload_stats(&[10.0, 10.0], &submits);
    let gap = stats.interarrival.unwrap().mean;
    assert_eq!(gap, 2.0 * 9_223_372_036_854_775_807.0);
    assert!(gap > 0.0);
}
