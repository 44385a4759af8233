//! # fairsched-core
//!
//! The deterministic scheduling core of fairsched: events in, actions out.
//! No clock, no I/O, no threads. The simulator drives it with a virtual
//! clock; the live broker with the wall clock.
//!
//! - [`Scheduler::step`] applies [`Event`]s at an instant and returns
//!   [`Action`]s (start, stop, ended, timer, priority).
//! - Policies plug into three extension points ([`Allocate`], [`Order`],
//!   [`Control`]) and see only read-only [`View`]s, which expose no true
//!   runtime: non-clairvoyance is structural. Clairvoyant baselines
//!   implement [`ClairvoyantAllocate`]/[`ClairvoyantOrder`] and receive a
//!   [`RuntimeOracle`] explicitly.
//! - Policies are built by name (`name[key=value,...]`) from a
//!   [`Registry`]: a value, fairsched's own policies
//!   ([`Registry::builtin`]) plus any a program adds. Each entry declares
//!   what its policy may read ([`Reads`]): the views only, the users'
//!   estimates too, or true runtimes; the core hands each policy views
//!   that show exactly that.
//! - [`Scheduler::snapshot`] writes the whole core as bytes and
//!   [`Scheduler::restore`] reads them back into a scheduler built from
//!   the same configuration ([`snapshot`]: format and guarantees).
//!
//! The crate is `no_std` (with `alloc`) and forbids `unsafe`: no code in it,
//! policies included, can open a file, read the environment, look at a
//! clock or start a thread; the compiler refuses (`tests/discipline.rs`
//! checks it by building a copy of this crate with such code added).
//! Compile-time reads (`include_bytes!`, `env!`) are refused by clippy
//! (`clippy.toml`, checked in CI).
//!
//! ```
//! use fairsched_core::*;
//! let registry = Registry::builtin();
//! let order = registry.build_order(&"fifo".parse().unwrap()).unwrap();
//! let alloc = registry.build_allocate(&"single-pool".parse().unwrap()).unwrap();
//! let mut core = Scheduler::new(&Platform::pool(2), 42, alloc, order, None);
//! let mut out = Vec::new();
//! core.step(Time::ZERO, [Event::Submit(TaskSpec::new(1, 0, 0))], None, &mut out).unwrap();
//! assert!(matches!(out[0], Action::Start { task: TaskId(1), .. }));
//! core.step(Time::from_secs(5), [Event::Complete { task: TaskId(1) }], None, &mut out).unwrap();
//! assert!(matches!(&out[1], Action::Ended(r) if r.outcome == Outcome::Completed));
//! ```

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod event;
pub mod ids;
pub mod metrics;
pub mod model;
pub mod point;
pub mod policy;
pub mod registry;
pub mod scheduler;
pub mod shapley;
pub mod sink;
pub mod snapshot;
pub mod state;
pub mod time;

#[cfg(any(fairsched_probe, fairsched_probe_macros))]
#[allow(dead_code)]
mod probe;

/// What every module of the crate uses from `alloc` (the core has no
/// `std` prelude), and the one hash map type.
pub(crate) mod prelude {
    pub use alloc::boxed::Box;
    pub use alloc::format;
    pub use alloc::string::{String, ToString};
    pub use alloc::vec;
    pub use alloc::vec::Vec;

    /// A hash map with the Fx hasher (fast, deterministic, no random
    /// state). Only for get/insert/remove: never iterate one into an
    /// output (iteration order is not part of any contract).
    pub type FxHashMap<K, V> = hashbrown::HashMap<K, V, rustc_hash::FxBuildHasher>;
}

pub use event::{Action, Attempt, AttemptEnd, EndRecord, Event, Notice, SlotList};
pub use ids::{MachineId, OrgId, SlotId, TaskId, UserId, WorkflowId};
pub use model::{Outcome, Phase, TaskSpec, WorkflowRef};
pub use point::{
    Allocate, ClairvoyantAllocate, ClairvoyantOrder, Control, ControlOut, Gauge, Order, Pick, RuntimeOracle,
    SimRng, derive_seed,
};
pub use registry::{
    Ctor, Entry, Kind, ParamDoc, Params, PolicySpec, Reads, Registry, RegistryError, SpecError,
};
pub use scheduler::{AllocatePolicy, ControlPolicy, CoreError, CoreStats, OrderPolicy, Scheduler};
pub use sink::{Fanout, Observer, Sample, TaskMeta};
pub use snapshot::SnapshotError;
pub use state::{MachineView, Platform, SpecView, State, TaskView, View};
pub use time::Time;

/// Re-exported so downstream crates seed and draw with the same versions.
pub use rand;
pub use rand_pcg;
