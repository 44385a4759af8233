//! # fairsched-proto
//!
//! The types both ends of the live service exchange, and nothing else
//! (docs/protocol.md): [`api`], the JSON bodies of the user and admin
//! endpoints, and [`wire`], the worker protocol's. The broker, the worker
//! and the client each depend on this crate, not on one another.

pub mod api;
pub mod wire;

/// A worker-protocol body that parses as JSON but breaks a rule of the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A `reports` entry that is neither a phase, an exit code nor a signal.
    #[error("report: {0}")]
    Report(&'static str),
}
