//! The live fairsched service (ARCHITECTURE.md, "Determinism and
//! recovery"): the same core the simulator drives, fed by the wall clock,
//! with every accepted step in a durable SQLite log.
//!
//! - [`store`]: the log — configuration and accepted steps, appended in
//!   group commits, replayed on open.
//! - [`identity`]: organizations, users, hashed tokens.
//! - [`live`]: the driver — apply, log, commit, then act; refuse a
//!   clairvoyant policy at configuration and a reused task id at
//!   submission.
//! - [`dashboard`]: the live page at `/` and the snapshot it shows.
//! - [`upkeep`]: an online backup, and the log kept in bounds (steps no
//!   restart needs moved to an archive).
//! - [`http`]: the HTTP API in front of the broker's one thread;
//!   [`server`] its accept loop and timeouts, [`tls`] its certificate
//!   (`serve --tls-cert`), [`frames`] what the routes
//!   without a token serve (built at most every 250 ms), [`limit`] their
//!   per-client rate limit.

/// The API's bodies (they live in `fairsched-proto`).
pub use fairsched_proto::{api, wire};
pub mod dashboard;
pub mod export;
pub mod frames;
pub mod http;
pub mod identity;
pub mod limit;
pub mod live;
pub mod server;
pub mod service;
pub mod store;
pub mod tls;
pub mod upkeep;

pub use identity::{IdentityError, Principal};
pub use live::{DEFAULT_SNAPSHOT_EVERY, Live, LiveError, build_core};
pub use service::{DEFAULT_MAX_QUEUED, OUTPUT_KEEP_BYTES, OUTPUT_KEEP_FOR};
pub use store::{Config, SCHEMA_VERSION, Snapshot, Step, Store, StoreError};

/// docs/extending.md, whose Rust blocks compile here as doc-tests
/// (`cargo test -p fairsched-broker --doc`): the page's snippets use the
/// broker, the simulator and the core as an out-of-tree crate does. The
/// outlines it marks `ignore` are listed, with why, in tests/broker/docs.rs.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/extending.md")]
pub struct ExtendingGuide;
