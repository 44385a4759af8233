//! The integration tests of `fairsched-sim`, one test binary (one link).

// The fuzz targets' checks (fuzz/src/, one module per target) at the
// root, where they find one another as `crate::…`: `fuzz_regressions`
// replays them on stable.
#[path = "../../../../fuzz/src/flags.rs"]
mod flags;
#[path = "../../../../fuzz/src/platform.rs"]
mod platform;
#[path = "../../../../fuzz/src/policy_spec.rs"]
mod policy_spec;
#[path = "../../../../fuzz/src/simulate.rs"]
mod simulate;
#[path = "../../../../fuzz/src/swf.rs"]
mod swf;
#[path = "../../../../fuzz/src/tmp.rs"]
mod tmp;
#[path = "../../../../fuzz/src/workflow.rs"]
mod workflow;

mod age_boost_model;
mod agents;
mod common;
mod diet_experiment;
mod engine_features;
mod fixtures;
mod fuzz_regressions;
mod non_clairvoyance;
mod out_of_tree;
mod pffp_experiment;
mod properties;
mod real_trace;
mod shapley;
mod shapley_experiment;
mod side_channels;
mod study;
mod workflow_experiment;
