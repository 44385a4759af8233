//! What each fuzz target checks, one module per target. The same modules
//! are compiled into crates/fairsched-sim/tests/sim/fuzz_regressions.rs, which
//! replays the committed corpora and crashers on stable.

pub mod flags;
pub mod platform;
pub mod policy_spec;
pub mod simulate;
pub mod swf;
pub mod tmp;
pub mod workflow;
