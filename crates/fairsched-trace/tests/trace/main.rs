//! The integration tests of `fairsched-trace`, one test binary (one link).

mod common;
mod filters;
mod one_pass;
mod ordering;
mod real_traces;
mod roundtrip;
mod stats;
mod swf_edge_cases;
mod weeks;
mod workflow;
