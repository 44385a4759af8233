//! Every policy, one file each, registered in [`crate::Registry::builtin`].
//!
//! Baselines: `single-pool` and `least-loaded` (Allocate); `fifo`, `fcfs`,
//! `easy`, `priority`, `round-robin`, `fair-share` (Order); `age-boost`
//! (Control). Papers' policies are grouped by paper in sub-modules:
//! [`shapley`] (REF, RAND, DIRECTCONTR, UTFAIRSHARE, CURRFAIRSHARE) and
//! [`pffp`] (Rand, MLp, MST, MSTUser, PFFP); Diet-ethic's server queue is
//! one file, [`diet_ethic`]; workflow fairness's Control
//! (`workflow-fairness`) and its FCFS baseline (`workflow-fcfs`, an Order)
//! are [`workflow_fairness`].

pub mod age_boost;
pub mod diet_ethic;
pub mod easy;
pub mod fair_share;
pub mod fcfs;
pub mod fifo;
pub mod least_loaded;
pub mod pffp;
pub mod priority;
pub mod queue;
pub mod round_robin;
pub mod shapley;
pub mod single_pool;
pub mod workflow_fairness;
