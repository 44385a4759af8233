//! A run's output, as its worker sends it once the run has ended (the
//! end of `stdout` and `stderr`), and as its owner reads it
//! (`GET /v1/tasks/ID/output`, `fairsched output`). Kept in the
//! `outputs` table, not in the log: it decides nothing.

use super::{Broker, Reply, ServiceError, allowed};
use crate::identity::Principal;
use fairsched_proto::wire::{OUTPUT_TAIL, OutputRequest, OutputsReply, RefusedOutput, RunKey};
use rusqlite::{OptionalExtension, params};

/// How many ended runs the broker remembers the worker of, for their
/// output (the oldest are forgotten first; their output is then refused).
pub(crate) const ENDED_KEPT: usize = 100_000;

/// One stream of a run's output.
pub struct Output {
    pub attempt: u32,
    /// Its last bytes (at most [`OUTPUT_TAIL`]).
    pub text: String,
    /// The whole stream's size on the worker.
    pub bytes: u64,
}

impl Broker {
    /// `worker` ended run `key`: its output may come from it.
    pub(crate) fn ended_here(&mut self, key: RunKey, worker: u64) {
        if self.ended_on.insert(key, worker).is_none() {
            self.ended_order.push_back(key);
        }
        while self.ended_order.len() > ENDED_KEPT {
            if let Some(old) = self.ended_order.pop_front() {
                self.ended_on.remove(&old);
            }
        }
    }

    /// Stores the outputs `worker` sends for runs it ended, in one
    /// transaction (one fsync); those refused say why.
    pub fn store_outputs(&mut self, worker: u64, outputs: &[OutputRequest]) -> Reply<OutputsReply> {
        let mut reply = OutputsReply::default();
        let mut keep = Vec::with_capacity(outputs.len());
        for req in outputs {
            let key = req.key();
            let refused = if req.stdout.len() > 4 * OUTPUT_TAIL || req.stderr.len() > 4 * OUTPUT_TAIL {
                Some(format!("at most the last {OUTPUT_TAIL} bytes of each stream"))
            } else if self.ended_on.get(&key) != Some(&worker) {
                Some("not a run this worker ended (lately), or sent already".to_string())
            } else {
                // Taken now: the same run twice in one batch is stored once.
                self.ended_on.remove(&key);
                None
            };
            match refused {
                Some(why) => reply.refused.push(RefusedOutput {
                    task: key.task,
                    attempt: key.attempt,
                    why,
                }),
                None => keep.push(req),
            }
        }
        if keep.is_empty() {
            return Ok(reply);
        }
        let stored = self.insert_outputs(&keep);
        if stored.is_err() {
            // Not stored: each may be sent again.
            for req in &keep {
                self.ended_here(req.key(), worker);
            }
        }
        stored?;
        reply.stored = keep.len();
        Ok(reply)
    }

    /// One transaction of `outputs`.
    fn insert_outputs(&self, outputs: &[&OutputRequest]) -> Reply<()> {
        let conn = self.live.store().conn();
        let tx = conn.unchecked_transaction().map_err(ServiceError::unavailable)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO outputs (task, attempt, stdout, stderr, stdout_bytes, stderr_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(ServiceError::unavailable)?;
            for req in outputs {
                insert
                    .execute(params![
                        req.task as i64,
                        req.attempt,
                        req.stdout,
                        req.stderr,
                        i64::try_from(req.stdout_bytes).unwrap_or(i64::MAX),
                        i64::try_from(req.stderr_bytes).unwrap_or(i64::MAX)
                    ])
                    .map_err(ServiceError::unavailable)?;
            }
        }
        tx.commit().map_err(ServiceError::unavailable)
    }

    /// A stream of task `id`'s output (`stderr` or not), of `attempt` or
    /// its latest one sent, for its owner or the admin.
    pub fn output(&self, who: &Principal, id: u64, stderr: bool, attempt: Option<u32>) -> Reply<Output> {
        let t = self.task_out(id)?;
        allowed(who, t.user, id)?;
        let stream = if stderr { "stderr" } else { "stdout" };
        let sql = format!(
            "SELECT attempt, {stream}, {stream}_bytes FROM outputs WHERE task = ?1 AND (?2 IS NULL OR attempt = ?2) ORDER BY attempt DESC LIMIT 1"
        );
        self.live
            .store()
            .conn()
            .query_row(&sql, params![id as i64, attempt], |r| {
                Ok(Output {
                    attempt: r.get(0)?,
                    text: r.get(1)?,
                    bytes: r.get::<_, i64>(2)?.max(0) as u64,
                })
            })
            .optional()
            .map_err(ServiceError::unavailable)?
            .ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "task {id}: no output{} (it has not ended, its run was cancelled or killed, or its worker did not send it)",
                    attempt.map(|a| format!(" of attempt {a}")).unwrap_or_default()
                ))
            })
    }
}
