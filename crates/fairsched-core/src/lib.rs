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
//! clock or start a thread; the compiler refuses (`tests/core/discipline.rs`
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
//!
//! Your own policy is one more entry of a registry: implement the trait,
//! say what it reads with its constructor ([`Ctor::order`]: the views
//! only; [`Ctor::order_with_estimates`]: the users' estimates too), and
//! every driver that takes the registry (the simulator, the experiments,
//! the sweeps, the live broker) runs it by name. A blind policy's views
//! hold no estimate, whatever the task carries (`docs/extending.md` walks
//! through a complete example):
//!
//! ```
//! use fairsched_core::*;
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! static SAW_AN_ESTIMATE: AtomicBool = AtomicBool::new(false);
//!
//! /// Newest first.
//! #[derive(Clone, Default)]
//! struct Lifo { waiting: Vec<TaskId> }
//!
//! impl Order for Lifo {
//!     fn notify(&mut self, view: &View, n: &Notice) {
//!         match *n {
//!             Notice::Queued { task, .. } => {
//!                 if view.task(task).and_then(|t| t.estimate()).is_some() {
//!                     SAW_AN_ESTIMATE.store(true, Ordering::Relaxed);
//!                 }
//!                 self.waiting.push(task);
//!             }
//!             Notice::Started { task, .. } | Notice::Left { task, .. } => self.waiting.retain(|&t| t != task),
//!             _ => {}
//!         }
//!     }
//!     fn pick(&mut self, _: &View, _: MachineId, _: &mut SimRng) -> Option<Pick> {
//!         self.waiting.last().map(|&t| Pick::Start(t))
//!     }
//! }
//!
//! let registry = Registry::builtin()
//!     .with_order("lifo", "newest first", &[], Ctor::order(|_| Ok(Box::new(Lifo::default()))))
//!     .unwrap();
//! assert_eq!(registry.find("lifo").unwrap().reads(), Reads::Blind);
//! // A built-in name is taken: refused, naming it.
//! let again = registry.clone().with_order("fcfs", "mine", &[], Ctor::order(|_| Ok(Box::new(Lifo::default()))));
//! assert!(again.err().unwrap().to_string().contains("fcfs"));
//!
//! let order = registry.build_order(&"lifo".parse().unwrap()).unwrap();
//! let alloc = registry.build_allocate(&"single-pool".parse().unwrap()).unwrap();
//! let mut core = Scheduler::new(&Platform::pool(1), 7, alloc, order, None);
//! let mut task = |id| {
//!     let mut t = TaskSpec::new(id, 0, 0);
//!     t.estimate = Some(Time::from_secs(60)); // the user's announced run time
//!     Event::Submit(t)
//! };
//! let mut out = Vec::new();
//! core.step(Time::ZERO, [task(1), task(2), task(3)], None, &mut out).unwrap();
//! core.step(Time::from_secs(9), [Event::Complete { task: TaskId(1) }], None, &mut out).unwrap();
//! // Task 3, the newest, goes next; every task had an estimate, and
//! // the blind policy saw none.
//! assert!(matches!(out.last(), Some(Action::Start { task: TaskId(3), .. })));
//! assert!(!SAW_AN_ESTIMATE.load(Ordering::Relaxed));
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
