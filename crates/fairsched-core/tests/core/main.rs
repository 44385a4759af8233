//! The integration tests of `fairsched-core`, one test binary (one link).

mod discipline;
mod snapshot;
mod steered;
mod workflow_fairness;
