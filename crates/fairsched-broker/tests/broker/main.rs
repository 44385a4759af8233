//! The integration tests of `fairsched-broker`, one test binary (one link).

mod damage;
mod dashboard;
mod decode;
mod docs;
mod identity;
mod log;
mod out_of_tree;
