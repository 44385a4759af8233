//! The crate's typed errors; `run` wraps them in `anyhow` with context.

pub use fairsched_proto::WireError;

/// A duration such as `500ms`, `10s` or `2m` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseDurationError {
    #[error("empty duration")]
    Empty,
    #[error("duration {input:?} has no number (write e.g. 500ms, 10s, 2m)")]
    NoNumber { input: String },
    #[error("duration {input:?} has no unit (write e.g. {input}ms or {input}s)")]
    NoUnit { input: String },
    #[error("duration {input:?} has unit {unit:?}: use ms, s, m, h or d")]
    BadUnit { input: String, unit: String },
    #[error("duration {input:?} is too long")]
    Overflow { input: String },
}

/// `worker --cgroups required` on a machine without a cgroup it can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    #[error(
        "--cgroups required: no usable cgroup: {why} (a cgroup2 or cgroup v1 memory hierarchy this worker may create cgroups in: root, or a systemd unit with Delegate=yes; or use --cgroups auto)"
    )]
    Unusable { why: String },
}
