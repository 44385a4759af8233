//! Shapley-fair scheduling across organizations (spec/shapley.md): the
//! utility ψsp ([`psi`]), the cooperative game and exact Shapley values
//! ([`game`]), and hypothetical coalition schedules advanced in lockstep
//! ([`lockstep`]). The policies built on them live in
//! [`crate::policy::shapley`].

pub mod game;
pub mod lockstep;
pub mod psi;

pub use game::{MAX_ORGS, full_mask, members, shapley_scaled, shapley_values};
pub use lockstep::{Coalitions, SubSchedule, rank};
pub use psi::{Psi, Units, seconds};
