//! The `platform` target: the TOML file of `fairsched simulate --platform`
//! (`PlatformFile::parse` from a string), then what a run does with it:
//! the checks of `RunConfig::check`, the platform it sizes, and the
//! user → organization map.
//!
//! The input is the file's text (non-UTF-8 input is skipped:
//! `PlatformFile::load` refuses it before parsing). Besides never
//! panicking: every error names the file and a line, a file that parses
//! validates, the platform built from it has exactly the declared
//! processors (at most `MAX_PROCS`), and every listed user maps to the
//! organization that lists it.

use std::path::Path;

use fairsched_core::metrics::Metrics;
use fairsched_sim::platform_file::Unlisted;
use fairsched_sim::{MAX_PROCS, PlatformFile, RunConfig, TraceInput};

/// Four one-processor jobs of users 1, 2, 3 and 9 (MaxProcs 4).
const LOG: &str = "; MaxProcs: 4
1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
2 1 0 10 1 -1 -1 1 10 -1 1 2 1 -1 -1 -1 -1 -1
3 2 0 10 2 -1 -1 1 10 -1 1 3 1 -1 -1 -1 -1 -1
4 3 0 10 1 -1 -1 1 10 -1 1 9 1 -1 -1 -1 -1 -1
";

/// Runs are simulated only on platforms this small (every slot is simulated).
const RUN_PROCS: u32 = 4_096;

pub fn exercise(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = match PlatformFile::parse(Path::new("fuzz.toml"), text) {
        Ok(file) => file,
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.toml:"), "{msg}");
            return;
        }
    };
    file.validate()
        .unwrap_or_else(|e| panic!("parsed but does not validate: {e}"));
    let total = file.total_procs();
    assert!(total >= 1);
    assert_eq!(file.procs().len() as u32, file.orgs());
    let mapper = file.mapper(3);
    for (i, org) in file.orgs.iter().enumerate() {
        for &u in &org.users {
            assert_eq!(file.org_of(u), Some(i as u32));
            assert_eq!(mapper.org_of(u), Ok(i as u32));
        }
    }
    for u in [i64::MIN, -1, 0, 1, 9, i64::MAX] {
        match (file.org_of(u), mapper.org_of(u), file.unlisted) {
            (Some(o), m, _) => assert_eq!(m, Ok(o)),
            (None, Err(_), Unlisted::Error) => {}
            (None, Ok(o), Unlisted::Org(want)) => assert_eq!(o, want),
            (None, Ok(o), Unlisted::Random) => assert!(o < file.orgs()),
            other => panic!("user {u}: {other:?}"),
        }
    }

    // What `simulate --platform` does with it.
    let mut config = RunConfig::new(
        TraceInput::Bytes {
            name: "four.swf".into(),
            data: LOG.as_bytes(),
        },
        "fair-share".parse().expect("a valid spec"),
    );
    config.platform_file = Some(file);
    if config.check().is_err() {
        return;
    }
    let scan = config.trace.scan(false).expect("a valid log");
    match config.platform(&scan) {
        Ok((platform, info)) => {
            assert_eq!(info.total, total);
            assert!(info.total <= MAX_PROCS, "{} processors", info.total);
            assert_eq!(
                platform.machines.iter().map(Vec::len).sum::<usize>(),
                total as usize
            );
        }
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    }
    if total <= RUN_PROCS {
        let mut metrics = Metrics::default();
        if let Err(e) = config.run(&scan, &mut metrics) {
            let _ = e.to_string();
        }
    }
}
