//! The `simulate` target: a whole `fairsched simulate --trace` run on a
//! small hostile log (extreme submit times, run times, processor counts,
//! statuses), under a policy picked by the input.
//!
//! The input is that of the `swf` target (`src/swf.rs`); the order policy
//! is `POLICIES[text length % 6]`, on 16 processors (hostile `MaxProcs`
//! values are the `swf` target's). Bounded runs only: at most 64 job lines,
//! and `--split-parallel` only when no job is wider than 64 processors.
//! Besides never panicking: a run that ends reports each job at most once.
//! (`age-boost` is left out: its cost is one change per waiting task per
//! `after` waited, as documented, and a log whose job runs 10¹⁵ s makes
//! the others wait that long.)

use fairsched_core::metrics::Metrics;
use fairsched_sim::{RunConfig, TraceInput};
use fairsched_trace::{StreamOptions, scan};

use crate::swf::Input;
use crate::tmp::TempFile;

const POLICIES: [&str; 6] = [
    "fcfs",
    "easy",
    "first-fit",
    "fair-share",
    "round-robin",
    "priority",
];

pub fn exercise(data: &[u8]) {
    let input = Input::decode(data);
    let file = TempFile::new(".swf", input.text);
    let Ok(scanned) = scan(&file.0, input.lenient) else {
        return;
    };
    if scanned.raw_jobs > 64 || (input.split && scanned.max_job_procs.is_some_and(|p| p > 64)) {
        return;
    }
    let policy = POLICIES[input.text.len() % POLICIES.len()];
    let mut config = RunConfig::new(
        TraceInput::Path(file.0.clone()),
        policy.parse().expect("a valid spec"),
    );
    config.procs = Some(16);
    config.orgs = input.orgs.min(5);
    config.window = input.window;
    config.split_parallel = input.split;
    config.stream = StreamOptions {
        filter: input.filter,
        lenient: input.lenient,
        ..StreamOptions::default()
    };
    if config.check().is_err() {
        return;
    }
    let mut metrics = Metrics::default();
    match config.run(&scanned, &mut metrics) {
        Ok(report) => {
            let most = if input.split {
                scanned.counts.kept * 64
            } else {
                scanned.counts.kept
            };
            assert!(metrics.all.tasks <= most, "{} tasks of {most}", metrics.all.tasks);
            let _ = report;
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
