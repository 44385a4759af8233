//! The papers' experiments, one file each: the protocol, the paper's
//! numbers to compare against, and the runner (parallel over instances,
//! identical results whatever the thread count). The CLI prints and
//! writes what they return.

pub mod diet;
pub mod pffp;
pub mod shapley;
pub mod workflow;
