//! Submissions: idempotency keys, task limits, and the plan and
//! bookkeeping of a submitted batch of tasks.

use super::{Broker, Reply, ServiceError};
use crate::api::NewTask;
use std::time::Duration;

/// A submission's `Idempotency-Key` and the SHA-256 of its body: the
/// same key again from the same user, within [`KEYS_KEPT`], gets the
/// first reply and submits nothing; with another body, a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmitKey {
    pub key: String,
    pub digest: [u8; 32],
}

/// How long a submission's idempotency key is remembered.
pub const KEYS_KEPT: Duration = Duration::from_secs(24 * 3600);

/// A remembered submission: its body's digest and its reply.
#[derive(Clone, Debug)]
pub(super) struct Keyed {
    pub(super) digest: [u8; 32],
    pub(super) ids: Vec<u64>,
    pub(super) workflow: Option<u32>,
    /// When it was submitted (the broker's clock, ms).
    pub(super) at_ms: i64,
}

impl Broker {
    /// Each task's limits: the operator's maximum when it gives none,
    /// refused over it.
    pub(super) fn apply_limits(&self, tasks: &mut [NewTask]) -> Reply<()> {
        let max_time = self
            .settings
            .max_time_limit
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        for (i, t) in tasks.iter_mut().enumerate() {
            if t.time_limit_ms == Some(0) || t.memory_bytes == Some(0) {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}]: a limit of 0 runs nothing; leave it out for the default"
                )));
            }
            if let (Some(asked), Some(max)) = (t.time_limit_ms, max_time)
                && asked > max
            {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}].time_limit_ms: {asked}, at most {max} (serve --max-time-limit)"
                )));
            }
            if let (Some(asked), Some(max)) = (t.memory_bytes, self.settings.max_memory)
                && asked > max
            {
                return Err(ServiceError::Invalid(format!(
                    "request body: tasks[{i}].memory_bytes: {asked}, at most {max} (serve --max-memory)"
                )));
            }
            t.time_limit_ms = t.time_limit_ms.or(max_time);
            t.memory_bytes = t.memory_bytes.or(self.settings.max_memory);
        }
        Ok(())
    }
}
