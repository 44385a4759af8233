//! Shapley-fair scheduling across organizations (spec/shapley.md): the
//! utility ψsp ([`psi`]), the cooperative game and exact Shapley values
//! ([`game`]), and hypothetical coalition schedules advanced in lockstep
//! ([`lockstep`]), and the fairness measure's parts ([`meter`]). The policies built on them live in
//! [`crate::policy::shapley`].

pub mod game;
pub mod lockstep;
pub mod meter;
pub mod psi;

pub use game::{MAX_ORGS, full_mask, members, shapley_scaled, shapley_values};
pub use lockstep::{Coalitions, SubSchedule, rank};
pub use meter::{PsiMeter, delta_psi};
pub use psi::{Psi, Units, seconds};
