//! A run's output, as its worker sends it once the run has ended (the
//! end of `stdout` and `stderr`), and as its owner reads it
//! (`GET /v1/tasks/ID/output`, `fairsched output`). Kept in the
//! `outputs` table, not in the log: it decides nothing.

use super::{Broker, Reply, ServiceError, allowed};
use crate::identity::Principal;
use fairsched_proto::wire::{OUTPUT_TAIL, OutputRequest, OutputsReply, RefusedOutput, RunKey};
use rusqlite::{OptionalExtension, params};
use std::time::{Duration, Instant};

/// How many ended runs the broker remembers the worker of, for their
/// output (the oldest are forgotten first; their output is then refused).
pub(crate) const ENDED_KEPT: usize = 100_000;

/// One stream of a run's output.
#[derive(Debug)]
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
    fn insert_outputs(&mut self, outputs: &[&OutputRequest]) -> Reply<()> {
        let conn = self.live.store().conn();
        let tx = conn.unchecked_transaction().map_err(ServiceError::unavailable)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO outputs (task, attempt, stdout, stderr, stdout_bytes, stderr_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(ServiceError::unavailable)?;
            for req in outputs {
                self.outputs_kept.bytes_added(req.stdout.len() + req.stderr.len());
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
                    "task {id}: no output{} (it has not ended, its run was cancelled or killed, its worker did not send it, or it was removed: serve --output-keep-for, --output-keep-bytes)",
                    attempt.map(|a| format!(" of attempt {a}")).unwrap_or_default()
                ))
            })
    }
}

/// The outputs' retention ([`Settings::output_keep_for`](super::Settings::output_keep_for),
/// [`Settings::output_keep_bytes`](super::Settings::output_keep_bytes)): what
/// [`Broker::prune_outputs`] knows between two passes.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The bytes the `outputs` rows hold (their streams' stored text),
    /// counted at the first pass and kept up to date since.
    bytes: Option<u64>,
    /// Where the pass for age goes on from: the last (task, attempt) it
    /// looked at; `None`: from the first.
    cursor: Option<(i64, i64)>,
    /// When the last pass ran.
    last: Option<Instant>,
    /// Whether the last pass stopped at its bound with more to remove.
    more: bool,
}

impl Kept {
    fn bytes_added(&mut self, n: usize) {
        if let Some(b) = &mut self.bytes {
            *b += n as u64;
        }
    }
}

/// Rows a pass of [`Broker::prune_outputs`] looks at, at most: a pass
/// holds the broker's thread a few milliseconds.
const PRUNE_ROWS: i64 = 2_000;

/// How often the outputs' retention is applied (more often while a pass
/// finds more to remove than its bound).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

impl Broker {
    /// Applies the outputs' retention, a bounded pass at a time, when one
    /// is due: first the oldest (by task id) while all outputs take more
    /// than `output_keep_bytes`, then those of tasks that ended more than
    /// `output_keep_for` ago. The runs' bookkeeping is not touched: an
    /// output removed reads as one never sent (404, saying so). How many
    /// rows it removed.
    pub fn prune_outputs(&mut self) -> Reply<u64> {
        let now = Instant::now();
        let due = self.outputs_kept.more
            || self
                .outputs_kept
                .last
                .is_none_or(|t| now.duration_since(t) >= PRUNE_EVERY);
        if !due || (self.settings.output_keep_bytes.is_none() && self.settings.output_keep_for.is_none()) {
            return Ok(0);
        }
        self.outputs_kept.last = Some(now);
        let cutoff = self
            .settings
            .output_keep_for
            .map(|d| self.clock().millis() - i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2));
        let budget = self.settings.output_keep_bytes;
        let conn = self.live.store().conn();
        let bad = |e: rusqlite::Error| {
            ServiceError::unavailable(format!("{}: outputs: {e}", self.live.store().path().display()))
        };
        if self.outputs_kept.bytes.is_none() && budget.is_some() {
            let n: i64 = conn
                .query_row(
                    "SELECT coalesce(sum(octet_length(stdout) + octet_length(stderr)), 0) FROM outputs",
                    [],
                    |r| r.get(0),
                )
                .map_err(bad)?;
            self.outputs_kept.bytes = Some(n.max(0) as u64);
        }
        let mut gone: Vec<(i64, i64, u64)> = Vec::new();
        let mut more = false;
        // Over the byte budget: the oldest go.
        if let (Some(max), Some(has)) = (budget, self.outputs_kept.bytes)
            && has > max
        {
            let mut q = conn
                .prepare_cached(
                    "SELECT task, attempt, octet_length(stdout) + octet_length(stderr) FROM outputs ORDER BY task, attempt LIMIT ?1",
                )
                .map_err(bad)?;
            let rows = q
                .query_map([PRUNE_ROWS], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?.max(0) as u64))
                })
                .map_err(bad)?;
            let mut left = has;
            for row in rows {
                let row = row.map_err(bad)?;
                if left <= max {
                    break;
                }
                left -= row.2.min(left);
                gone.push(row);
            }
            more |= left > max;
        }
        // Past their age: a bounded walk from where the last one stopped.
        if let Some(cutoff) = cutoff {
            let (t, a) = self.outputs_kept.cursor.unwrap_or((i64::MIN, i64::MIN));
            let mut q = conn
                .prepare_cached(
                    "SELECT o.task, o.attempt, octet_length(o.stdout) + octet_length(o.stderr), t.end_ms
                     FROM outputs o LEFT JOIN tasks t ON t.id = o.task
                     WHERE (o.task, o.attempt) > (?1, ?2) ORDER BY o.task, o.attempt LIMIT ?3",
                )
                .map_err(bad)?;
            let rows = q
                .query_map(params![t, a, PRUNE_ROWS], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?.max(0) as u64,
                        r.get::<_, Option<i64>>(3)?,
                    ))
                })
                .map_err(bad)?;
            let mut seen = 0;
            let mut last = None;
            for row in rows {
                let (task, attempt, bytes, end) = row.map_err(bad)?;
                seen += 1;
                last = Some((task, attempt));
                // A task no longer in the table (it cannot be read) goes too.
                if end.is_none_or(|e| e < cutoff) && !gone.iter().any(|g| (g.0, g.1) == (task, attempt)) {
                    gone.push((task, attempt, bytes));
                }
            }
            // At the end of the table: the next walk starts again.
            self.outputs_kept.cursor = if seen < PRUNE_ROWS { None } else { last };
            more |= seen == PRUNE_ROWS;
        }
        if !gone.is_empty() {
            let tx = conn.unchecked_transaction().map_err(bad)?;
            {
                let mut del = tx
                    .prepare_cached("DELETE FROM outputs WHERE task = ?1 AND attempt = ?2")
                    .map_err(bad)?;
                for (task, attempt, _) in &gone {
                    del.execute(params![task, attempt]).map_err(bad)?;
                }
            }
            tx.commit().map_err(bad)?;
            let freed: u64 = gone.iter().map(|g| g.2).sum();
            if let Some(b) = &mut self.outputs_kept.bytes {
                *b = b.saturating_sub(freed);
            }
        }
        self.outputs_kept.more = more;
        Ok(gone.len() as u64)
    }
}
