//! The `policy_spec` target: the text of `--policy`, `--allocate` and
//! `--control` (`name` or `name[key=value,...]`), parsed by
//! `PolicySpec: FromStr` and built through the registry, which parses the
//! parameters (numbers, durations, choices).
//!
//! The input is the text (non-UTF-8 input is skipped: a command line hands
//! the parser a `&str`). Besides never panicking: a spec that parses prints
//! and parses back to itself, its slug is a file name (no `/`), a spec
//! built as one kind is a registry entry of that kind (by its name or a
//! former one), and a spec that
//! builds runs a six-job log to the end on the simulator.

use fairsched_core::metrics::Metrics;
use fairsched_core::registry::{self, Kind, Registry, parse_duration};
use fairsched_core::{PolicySpec, Time};
use fairsched_sim::{RunConfig, TraceInput};

/// Six jobs of three users on 4 processors, some parallel, one too wide.
const LOG: &str = "; MaxProcs: 4
1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1
2 1 0 30 2 -1 -1 2 20 -1 1 2 1 -1 -1 -1 -1 -1
3 1 0 5 4 -1 -1 4 10 -1 0 3 1 -1 -1 -1 -1 -1
4 3 0 100 1 -1 -1 1 -1 -1 5 1 1 -1 -1 -1 -1 -1
5 7 0 1 3 -1 -1 3 1 -1 1 2 1 -1 -1 -1 -1 -1
6 7 0 2 9 -1 -1 9 60 -1 1 3 1 -1 -1 -1 -1 -1
";

pub fn exercise(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    // A duration as the registry reads it (`after=10m`): non-negative.
    if let Some(t) = parse_duration(text) {
        assert!(t >= Time::ZERO, "{text:?} → {t:?}");
    }

    let spec: PolicySpec = match text.parse() {
        Ok(spec) => spec,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let printed = spec.to_string();
    let again: PolicySpec = printed
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(again, spec, "{text:?} printed as {printed:?}");
    let slug = spec.slug();
    assert!(!slug.contains('/') && !slug.is_empty(), "{slug:?}");

    let builtin = Registry::builtin();
    for kind in [Kind::Allocate, Kind::Order, Kind::Control] {
        let entry = match builtin.check(kind, &spec) {
            Ok(entry) => entry,
            Err(e) => {
                let _ = e.to_string();
                continue;
            }
        };
        assert_eq!(
            (entry.kind(), entry.name),
            (kind, registry::canonical(&spec.name))
        );
        run(kind, &spec);
    }
}

/// Runs the six-job log with `spec` as its `kind` of policy, on one
/// machine and on two, with three organizations.
fn run(kind: Kind, spec: &PolicySpec) {
    for machines in [None, Some(vec![1, 3])] {
        let mut config = RunConfig::new(
            TraceInput::Bytes {
                name: "six.swf".into(),
                data: LOG.as_bytes(),
            },
            "fcfs".parse().expect("a valid spec"),
        );
        config.orgs = 3;
        config.machines = machines;
        match kind {
            Kind::Allocate => config.allocate = Some(spec.clone()),
            Kind::Order => config.order = spec.clone(),
            Kind::Control => config.control = Some(spec.clone()),
        }
        if config.check().is_err() {
            continue;
        }
        let scan = config.trace.scan(false).expect("a valid log");
        let mut metrics = Metrics::default();
        if let Err(e) = config.run(&scan, &mut metrics) {
            let _ = e.to_string();
        }
    }
}
