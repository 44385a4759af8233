//! The three extension points. Each paper's algorithm plugs into exactly
//! one; the platform's mechanics (start, finish, kill, requeue) stay in
//! [`crate::Scheduler`].
//!
//! | point | question |
//! |---|---|
//! | [`Allocate`] | which machine's queue gets an arriving task? |
//! | [`Order`] | a slot of this machine is free: which waiting task starts (or which running one is stopped)? |
//! | [`Control`] | after events or a timer, which priorities change? |
//!
//! Blind policies implement [`Allocate`] / [`Order`] / [`Control`] and get
//! only views, without the users' estimates; the same traits, registered
//! as reading estimates ([`crate::registry::Reads::Estimates`]), get views
//! that show them. Clairvoyant baselines implement [`ClairvoyantAllocate`]
//! / [`ClairvoyantOrder`], whose methods also receive a [`RuntimeOracle`];
//! the scheduler refuses to run them without one (the live broker has none).
//!
//! Every policy is `Clone` (through [`DynClone`]): a driver that must be
//! able to undo a step the core rejects keeps a copy of the whole
//! [`crate::Scheduler`] ([`crate::Scheduler::step_atomic`]). A policy that
//! can be snapshotted ([`crate::Scheduler::snapshot`]) also implements
//! `policy_name`, `save` and `load`; the defaults refuse.

use crate::event::Notice;
use crate::ids::{MachineId, SlotId, TaskId};
use crate::prelude::*;
use crate::snapshot::SnapshotError;
use crate::state::{SpecView, View};
use crate::time::Time;
use dyn_clone::DynClone;

/// The seeded portable generator every random choice draws from.
pub type SimRng = rand_pcg::Pcg64Mcg;

/// The only way to read true runtimes. Implemented by the simulator; given
/// explicitly to clairvoyant baselines and to nothing else.
pub trait RuntimeOracle {
    /// True processing time of `task` (whether or not it has started).
    fn runtime(&self, task: TaskId) -> Option<Time>;
}

/// Which machine's queue gets an arriving task.
pub trait Allocate: Send + DynClone {
    /// Return `None` when no machine can ever hold the task (it is rejected).
    fn allocate(&mut self, view: &View, task: SpecView, rng: &mut SimRng) -> Option<MachineId>;
    /// State changes, delivered as they are applied.
    fn notify(&mut self, _view: &View, _notice: &Notice) {}

    /// The name the policy is registered under (the registry's), recorded
    /// in snapshots and named in their errors. The default is the type's
    /// name.
    fn policy_name(&self) -> &'static str {
        crate::snapshot::short_type_name::<Self>()
    }
    /// The policy's whole state as bytes, for [`crate::Scheduler::snapshot`].
    /// The default: [`SnapshotError::Unsupported`]. Policies implement this
    /// and [`Allocate::load`] with [`crate::snapshot_policy!`]. The same state must give the same bytes,
    /// however it was reached (hash maps written in key order).
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
    /// Replaces the policy's state with `bytes` from [`Allocate::save`] of a
    /// policy built from the same spec. On error, `self` is unchanged.
    fn load(&mut self, _bytes: &[u8]) -> Result<(), SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
}

/// Clairvoyant variant of [`Allocate`] (e.g. MST): simulation only.
pub trait ClairvoyantAllocate: Send + DynClone {
    fn allocate(
        &mut self,
        view: &View,
        task: SpecView,
        oracle: &dyn RuntimeOracle,
        rng: &mut SimRng,
    ) -> Option<MachineId>;
    fn notify(&mut self, _view: &View, _notice: &Notice) {}

    /// The name the policy is registered under (the registry's), recorded
    /// in snapshots and named in their errors. The default is the type's
    /// name.
    fn policy_name(&self) -> &'static str {
        crate::snapshot::short_type_name::<Self>()
    }
    /// The policy's whole state as bytes, for [`crate::Scheduler::snapshot`].
    /// The default: [`SnapshotError::Unsupported`]. Policies implement this
    /// and [`ClairvoyantAllocate::load`] with [`crate::snapshot_policy!`]. The same state must give the same bytes,
    /// however it was reached (hash maps written in key order).
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
    /// Replaces the policy's state with `bytes` from [`ClairvoyantAllocate::save`] of a
    /// policy built from the same spec. On error, `self` is unchanged.
    fn load(&mut self, _bytes: &[u8]) -> Result<(), SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
}

/// What an [`Order`] policy decides for a machine with free slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Start a waiting task of this machine; the core picks its free slots.
    Start(TaskId),
    /// Start a waiting task on exactly these free slots of this machine
    /// (slot ownership matters to Shapley-fair policies).
    StartOn(TaskId, Vec<SlotId>),
    /// Stop a running task of this machine and put it back in the queue;
    /// its work is lost (Diet-ethic kills).
    Requeue(TaskId),
}

/// Which waiting task of a machine starts next.
///
/// The core calls [`Order::pick`] while the machine has a free slot and a
/// waiting task, applying each pick before asking again; `None` leaves the
/// remaining slots idle until the next event. Policies keep their own
/// indexes up to date from [`Order::notify`], which the core calls for
/// every change to the machine's tasks before the next `pick`.
pub trait Order: Send + DynClone {
    fn notify(&mut self, view: &View, notice: &Notice);
    fn pick(&mut self, view: &View, machine: MachineId, rng: &mut SimRng) -> Option<Pick>;
    /// The policy's fairness state, for operators (`fairsched explain`,
    /// `/metrics`). Reading it changes nothing.
    fn gauges(&self, _view: &View, _out: &mut Vec<Gauge>) {}
    /// True for policies that may stop a running task for a waiting one
    /// ([`Pick::Requeue`]): the core then also asks while no slot is free.
    fn preempts(&self) -> bool {
        false
    }

    /// The name the policy is registered under (the registry's), recorded
    /// in snapshots and named in their errors. The default is the type's
    /// name.
    fn policy_name(&self) -> &'static str {
        crate::snapshot::short_type_name::<Self>()
    }
    /// The policy's whole state as bytes, for [`crate::Scheduler::snapshot`].
    /// The default: [`SnapshotError::Unsupported`]. Policies implement this
    /// and [`Order::load`] with [`crate::snapshot_policy!`]. The same state must give the same bytes,
    /// however it was reached (hash maps written in key order).
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
    /// Replaces the policy's state with `bytes` from [`Order::save`] of a
    /// policy built from the same spec. On error, `self` is unchanged.
    fn load(&mut self, _bytes: &[u8]) -> Result<(), SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
}

/// Clairvoyant variant of [`Order`] (REF/RAND sub-coalition schedules).
pub trait ClairvoyantOrder: Send + DynClone {
    fn notify(&mut self, view: &View, notice: &Notice);
    fn pick(
        &mut self,
        view: &View,
        machine: MachineId,
        oracle: &dyn RuntimeOracle,
        rng: &mut SimRng,
    ) -> Option<Pick>;
    /// See [`Order::preempts`].
    fn preempts(&self) -> bool {
        false
    }

    /// The name the policy is registered under (the registry's), recorded
    /// in snapshots and named in their errors. The default is the type's
    /// name.
    fn policy_name(&self) -> &'static str {
        crate::snapshot::short_type_name::<Self>()
    }
    /// The policy's whole state as bytes, for [`crate::Scheduler::snapshot`].
    /// The default: [`SnapshotError::Unsupported`]. Policies implement this
    /// and [`ClairvoyantOrder::load`] with [`crate::snapshot_policy!`]. The same state must give the same bytes,
    /// however it was reached (hash maps written in key order).
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
    /// Replaces the policy's state with `bytes` from [`ClairvoyantOrder::save`] of a
    /// policy built from the same spec. On error, `self` is unchanged.
    fn load(&mut self, _bytes: &[u8]) -> Result<(), SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
}

/// Priority changes and timer requests produced by a [`Control`] policy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlOut {
    pub priorities: Vec<(TaskId, i64)>,
    /// `(at, token)`: deliver [`crate::Event::Timer`] at `at`.
    pub timers: Vec<(Time, u64)>,
}

/// After events (and timers), which priorities change.
///
/// [`Control::notify`] receives every notice synchronously, with the view
/// as of that change (a task that leaves is still visible). [`Control::react`]
/// is called once per [`crate::Scheduler::step`] that had notices or fired
/// timers, after the step's events were applied and before tasks are
/// dispatched, with every notice since the previous call (so starts made by
/// the previous dispatch are seen here) and the tokens of the timers that
/// fired. Steps happen only at instants where a driver reported something,
/// so a Control never runs at a time it could not have observed.
///
/// A Control is never told of its own priority changes (neither in
/// `notify` nor in `react`): it knows them already. It is told of changes
/// made from outside ([`crate::Event::SetPriority`]).
pub trait Control: Send + DynClone {
    fn notify(&mut self, _view: &View, _notice: &Notice) {}
    fn react(&mut self, view: &View, notices: &[Notice], timers: &[u64], out: &mut ControlOut);
    /// See [`Order::gauges`].
    fn gauges(&self, _view: &View, _out: &mut Vec<Gauge>) {}

    /// The name the policy is registered under (the registry's), recorded
    /// in snapshots and named in their errors. The default is the type's
    /// name.
    fn policy_name(&self) -> &'static str {
        crate::snapshot::short_type_name::<Self>()
    }
    /// The policy's whole state as bytes, for [`crate::Scheduler::snapshot`].
    /// The default: [`SnapshotError::Unsupported`]. Policies implement this
    /// and [`Control::load`] with [`crate::snapshot_policy!`]. The same state must give the same bytes,
    /// however it was reached (hash maps written in key order).
    fn save(&self) -> Result<Vec<u8>, SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
    /// Replaces the policy's state with `bytes` from [`Control::save`] of a
    /// policy built from the same spec. On error, `self` is unchanged.
    fn load(&mut self, _bytes: &[u8]) -> Result<(), SnapshotError> {
        Err(SnapshotError::Unsupported(self.policy_name()))
    }
}

/// One number of a policy's fairness state (for operators; never read by
/// a decision).
#[derive(Clone, Debug, PartialEq)]
pub struct Gauge {
    /// A metric name: lower case and `_`, e.g. `org_phi_slot_s2`.
    pub name: &'static str,
    pub help: &'static str,
    /// What it is about: `("org", 2)`, `("workflow", 7)`, or nothing.
    pub key: Option<(&'static str, i64)>,
    pub value: f64,
}

/// Derives an independent seed for one use (`stream`) of a master seed
/// (SplitMix64 finalizer), so a run's user→organization mapping, its
/// scheduler and its replicates never share a random stream.
pub fn derive_seed(master: u64, stream: u64) -> u64 {
    let mut z = master ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// `Box<dyn Allocate>` and the others are `Clone`.
dyn_clone::clone_trait_object!(Allocate);
dyn_clone::clone_trait_object!(ClairvoyantAllocate);
dyn_clone::clone_trait_object!(Order);
dyn_clone::clone_trait_object!(ClairvoyantOrder);
dyn_clone::clone_trait_object!(Control);
