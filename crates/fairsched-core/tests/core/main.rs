//! The integration tests of `fairsched-core`, one test binary (one link).

mod discipline;
mod snapshot;
mod workflow_fairness;
