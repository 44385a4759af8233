//! Typed identifiers. Each is a small integer newtype so that a user id can
//! never be passed where an organization id is expected.

use core::fmt;
use serde::{Deserialize, Serialize};

macro_rules! id {
    ($(#[$m:meta])* $name:ident, $inner:ty) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);
        impl $name {
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id!(
    /// An organization: owns processors and submits jobs (Shapley model).
    OrgId,
    u32
);
id!(
    /// A user; belongs to exactly one organization.
    UserId,
    i64
);
id!(
    /// A machine: a group of slots with one local queue (PFFP model).
    MachineId,
    u32
);
id!(
    /// A slot (processor): runs one sequential task at a time.
    SlotId,
    u32
);
id!(
    /// A task (or a rigid parallel job): unique for the whole run.
    TaskId,
    u64
);
id!(
    /// A workflow (workflow fairness model).
    WorkflowId,
    u32
);
