//! The `flags` target: the values of `simulate`'s platform flags as the
//! library reads them, and the platform a run sizes from them.
//!
//! The input is text, one flag value a line: `--ownership` (`uniform`,
//! `zipf`, `zipf:S`), `--machines` (`N,N,...`, each a u32 as the command
//! line parses it), `--procs`, `--orgs`, `--procs-from`, `--runtime-limit`,
//! and a duration (as a policy parameter such as `after=10m` reads it). A
//! missing or unparsable line leaves the flag unset. Besides never
//! panicking: `RunConfig::check` refuses or the platform is built with
//! exactly the processors asked (at most `MAX_PROCS`), split among the
//! organizations with a share for each.

use std::str::FromStr;

use fairsched_core::registry::parse_duration;
use fairsched_sim::{MAX_PROCS, Ownership, ProcsFrom, RunConfig, RuntimeLimit, TraceInput};
use fairsched_trace::{ownership_uniform, ownership_zipf};

/// Three jobs, the widest of 3 processors, and no MaxProcs.
const LOG: &str = "1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
2 1 0 10 3 -1 -1 3 10 -1 1 2 1 -1 -1 -1 -1 -1
3 2 0 10 2 -1 -1 2 10 -1 1 3 1 -1 -1 -1 -1 -1
";

pub fn exercise(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let mut next = || lines.next().unwrap_or("");

    let ownership = next();
    let ownership = match Ownership::from_str(ownership) {
        Ok(o) => {
            // What --help prints as the value parses back to it.
            assert_eq!(Ownership::from_str(&o.to_string()), Ok(o), "{ownership:?}");
            if let Ownership::Zipf(s) = o {
                assert!(s.is_finite() && s >= 0.0);
            }
            o
        }
        Err(e) => {
            assert!(e.contains("ownership"), "{e}");
            Ownership::DEFAULT
        }
    };
    let machines: Option<Vec<u32>> = {
        let line = next();
        line.split(',')
            .map(|n| n.parse::<u32>())
            .collect::<Result<_, _>>()
            .ok()
    };
    let procs = next().parse::<u32>().ok();
    let orgs = next().parse::<u32>().ok();
    let procs_from = ProcsFrom::from_str(next()).unwrap_or_default();
    let runtime_limit = RuntimeLimit::from_str(next()).unwrap_or_default();
    if let Some(t) = parse_duration(next()) {
        assert!(t.0 >= 0);
    }

    // The ownership split on its own, as the run calls it.
    if let (Some(total), Some(k)) = (procs, orgs)
        && total <= 1 << 12
    {
        let shares = match ownership {
            Ownership::Uniform => ownership_uniform(total, k),
            Ownership::Zipf(s) => ownership_zipf(total, k, s),
        };
        if let Ok(shares) = shares {
            assert_eq!(shares.len() as u32, k);
            assert_eq!(
                shares.iter().map(|&s| u64::from(s)).sum::<u64>(),
                u64::from(total)
            );
            assert!(shares.iter().all(|&s| s >= 1), "{shares:?}");
        }
    }

    let mut config = RunConfig::new(
        TraceInput::Bytes {
            name: "three.swf".into(),
            data: LOG.as_bytes(),
        },
        "fcfs".parse().expect("a valid spec"),
    );
    config.ownership = ownership;
    config.machines = machines;
    config.procs = procs;
    config.orgs = orgs.unwrap_or(1);
    config.procs_from = procs_from;
    config.runtime_limit = runtime_limit;
    if let Err(e) = config.check() {
        let _ = e.to_string();
        return;
    }
    // Past the checks, the platform costs a slot per processor and a share
    // per organization (2^24 of them take seconds under the fuzzer's
    // instrumentation): sized here up to 2^12 processors (the regression
    // tests split among 2^22 organizations natively).
    let asked = config
        .machines
        .as_ref()
        .map_or(u64::from(procs.unwrap_or(3)), |m| {
            m.iter().map(|&n| u64::from(n)).sum()
        });
    if asked > 1 << 12 {
        return;
    }
    let scan = config.trace.scan(false).expect("a valid log");
    if let Ok((platform, info)) = config.platform(&scan) {
        assert!(info.total <= MAX_PROCS);
        assert_eq!(
            platform.machines.iter().map(Vec::len).sum::<usize>(),
            info.total as usize
        );
        assert_eq!(info.per_org.len() as u32, config.orgs);
        assert_eq!(
            info.per_org.iter().map(|&s| u64::from(s)).sum::<u64>(),
            u64::from(info.total)
        );
        if let Some(m) = &config.machines {
            assert_eq!(&info.machines, m);
        }
    }
}
