//! The integration tests of `fairsched-worker`, one test binary (one link).

mod cgroup;
mod duration;
mod executor;
mod opts;
mod wire;
