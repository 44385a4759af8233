//! `simulate --batsim-jobs`: the schedule as Batsim's `_jobs.csv`, the file
//! the Batsim community's tools (evalys's `JobSet.from_csv`) read.
//!
//! One row per task, in task order (the order of submission), with the
//! columns of [`BATSIM_COLUMNS`]. Times are seconds of the simulated clock
//! (re-based by `--window`). Each row's `allocated_resources` is the set of
//! processors the core gave the task's last run, as Batsim writes interval
//! sets (`0-3 5`): processor ids are the core's slot ids, 0-based and
//! numbered machine after machine (machine 0's slots first), so they are
//! real assignments, never two tasks on one processor at once.
//!
//! Choices where the simulation and Batsim differ:
//! - `job_id` is the SWF job number; with `--split-parallel`, `J_P` for
//!   part P (0-based, in task order) of job J;
//! - `workload_name` is `w0` (Batsim's name for its first workload) and
//!   `profile` the job's logged run time in seconds (the delay profile
//!   Batsim's SWF converters make of it);
//! - `final_state` and `success` ([`final_state`]) say how the task ended,
//!   by the same rule as `--swf-out`'s status (field 11), so that the two
//!   files agree job by job. A task the simulation completed ran its
//!   logged run time, and ended as its log says (SWF field 11): status 1,
//!   2, 3, -1 or none `COMPLETED_SUCCESSFULLY` (`success` 1, the only
//!   state with 1, as Batsim writes it: "completed before reaching its
//!   walltime and returned 0"); 0 (failed) or 4 (last part failed)
//!   `COMPLETED_FAILED`; 5 (cancelled) `COMPLETED_KILLED`. A task the
//!   simulation stopped: `COMPLETED_WALLTIME_REACHED` when killed once it
//!   had run its requested time (`--runtime-limit kill`; SWF status 0),
//!   `COMPLETED_FAILED` when it failed (0), `COMPLETED_KILLED` for any
//!   other kill or a cancel while running (5), and `REJECTED` when it never
//!   started (rejected, or cancelled while waiting; 5): its time columns
//!   and `allocated_resources` are then empty, so that means over a column
//!   skip it;
//! - `requested_time` is `-1` when the log gives none, `consumed_energy` is
//!   `-1` (no energy model) and `metadata` is empty;
//! - a task stopped and requeued by its policy shows its last run only.

use crate::files::{FileError, partial};
use fairsched_core::{Action, EndRecord, Observer, Outcome, SlotId, SlotList, TaskId, TaskMeta, Time, View};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The columns of Batsim's `_jobs.csv`, in its order.
pub const BATSIM_COLUMNS: &str = "job_id,workload_name,profile,submission_time,requested_number_of_resources,\
requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,\
stretch,allocated_resources,consumed_energy,metadata";

/// One ended task.
#[derive(Clone, Debug)]
struct Row {
    task: u64,
    job: u64,
    slots: u32,
    submit: Time,
    start: Option<Time>,
    end: Time,
    estimate: Option<Time>,
    runtime: Option<Time>,
    outcome: Outcome,
    /// The log's status of its job (SWF field 11).
    log_status: Option<i8>,
    /// The last run's processors as an interval set; empty if none.
    allocated: Box<str>,
}

/// Collects every task's row (an [`Observer`]: it watches the starts for
/// their processors); [`BatsimJobs::write`] writes the file.
#[derive(Debug, Default)]
pub struct BatsimJobs {
    split: bool,
    running: HashMap<TaskId, SlotList>,
    rows: Vec<Row>,
}

/// Processors as Batsim writes an interval set: sorted, runs of
/// consecutive ids as `a-b`, separated by spaces (`0-3 5`).
pub fn interval_set(slots: &[SlotId]) -> String {
    let mut ids: Vec<u32> = slots.iter().map(|s| s.0).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if i == j {
            let _ = write!(out, "{}", ids[i]);
        } else {
            let _ = write!(out, "{}-{}", ids[i], ids[j]);
        }
        i = j + 1;
    }
    out
}

impl BatsimJobs {
    /// `split`: the run split parallel jobs into tasks (job ids become
    /// `J_P`).
    pub fn new(split: bool) -> BatsimJobs {
        BatsimJobs {
            split,
            ..BatsimJobs::default()
        }
    }

    /// Rows collected so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the CSV to `out`, rows in task order.
    pub fn write_to<W: Write>(mut self, mut out: W) -> io::Result<W> {
        self.rows.sort_unstable_by_key(|r| r.task);
        writeln!(out, "{BATSIM_COLUMNS}")?;
        let mut line = String::with_capacity(160);
        let (mut previous, mut part) = (None, 0u64);
        for r in &self.rows {
            part = if previous == Some(r.job) { part + 1 } else { 0 };
            previous = Some(r.job);
            line.clear();
            if self.split {
                let _ = write!(line, "{}_{part},", r.job);
            } else {
                let _ = write!(line, "{},", r.job);
            }
            line.push_str("w0,");
            match r.runtime {
                Some(t) => {
                    let _ = write!(line, "{t},");
                }
                None => line.push_str("delay,"),
            }
            let _ = write!(line, "{},{},", r.submit, r.slots);
            match r.estimate {
                Some(t) => {
                    let _ = write!(line, "{t},");
                }
                None => line.push_str("-1,"),
            }
            let state = final_state(r.outcome, r.start, r.end, r.estimate, r.log_status);
            let success = u8::from(state == "COMPLETED_SUCCESSFULLY");
            let _ = write!(line, "{success},{state},");
            match r.start {
                Some(s) => {
                    let run = r.end - s;
                    let turnaround = r.end - r.submit;
                    let _ = write!(line, "{s},{run},{},{},{turnaround},", r.end, s - r.submit);
                    if run > Time::ZERO {
                        let _ = write!(line, "{}", turnaround.millis() as f64 / run.millis() as f64);
                    }
                    line.push(',');
                }
                None => line.push_str(",,,,,,"),
            }
            let _ = writeln!(line, "{},-1,", r.allocated);
            out.write_all(line.as_bytes())?;
        }
        out.flush()?;
        Ok(out)
    }

    /// Writes the CSV to `path` (as `PATH.partial`, renamed into place at
    /// the end; removed on an error). Returns the rows written.
    pub fn write(self, path: &Path) -> Result<u64, FileError> {
        let rows = self.rows.len() as u64;
        let tmp = partial(path);
        let err = |op, p: &Path| {
            let p = p.to_path_buf();
            move |source| FileError { op, path: p, source }
        };
        let written = File::create(&tmp)
            .map_err(err("creating", &tmp))
            .and_then(|f| {
                self.write_to(BufWriter::with_capacity(256 * 1024, f))
                    .map_err(err("writing", path))
            })
            .and_then(|_| std::fs::rename(&tmp, path).map_err(err("renaming", path)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map(|()| rows)
    }
}

/// Batsim's `final_state` of a task that ended with `outcome`, started at
/// `start` (if it did), ended at `end`, with the requested time `estimate`
/// and the log's status `log_status` (see the module's documentation;
/// `success` is 1 for `COMPLETED_SUCCESSFULLY` only).
pub fn final_state(
    outcome: Outcome,
    start: Option<Time>,
    end: Time,
    estimate: Option<Time>,
    log_status: Option<i8>,
) -> &'static str {
    let Some(s) = start else { return "REJECTED" };
    match outcome {
        Outcome::Completed => match log_status {
            Some(0 | 4) => "COMPLETED_FAILED",
            Some(5) => "COMPLETED_KILLED",
            _ => "COMPLETED_SUCCESSFULLY",
        },
        Outcome::Failed => "COMPLETED_FAILED",
        Outcome::Killed if estimate.is_some_and(|e| end - s >= e) => "COMPLETED_WALLTIME_REACHED",
        Outcome::Killed | Outcome::Cancelled | Outcome::Rejected => "COMPLETED_KILLED",
    }
}

impl Observer for BatsimJobs {
    fn on_step(&mut self, _now: Time, actions: &[Action], _view: &View) {
        for a in actions {
            if let Action::Start { task, slots, .. } = a {
                self.running.insert(*task, slots.clone());
            }
        }
    }
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        let slots = self.running.remove(&rec.spec.id);
        let allocated = match (rec.last.is_some(), slots) {
            (true, Some(s)) => interval_set(&s).into_boxed_str(),
            _ => Box::default(),
        };
        self.rows.push(Row {
            task: rec.spec.id.0,
            job: meta.job,
            slots: rec.spec.slots,
            submit: rec.submit,
            start: rec.start(),
            end: rec.end,
            estimate: rec.spec.estimate,
            runtime: meta.runtime,
            outcome: rec.outcome,
            log_status: meta.log_status,
            allocated,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_sets_are_written_as_batsim_does() {
        let s = |v: &[u32]| interval_set(&v.iter().map(|&i| SlotId(i)).collect::<Vec<_>>());
        assert_eq!(s(&[]), "");
        assert_eq!(s(&[5]), "5");
        assert_eq!(s(&[3, 1, 2, 0, 5]), "0-3 5");
        assert_eq!(s(&[9, 7, 8, 2, 4]), "2 4 7-9");
    }

    #[test]
    fn the_final_state_carries_the_logs_status_and_the_simulations_stops() {
        let t = Time::from_secs;
        let done = |log| final_state(Outcome::Completed, Some(t(0)), t(10), Some(t(60)), log);
        // Ran its logged run time: ended as the log says.
        assert_eq!(done(Some(1)), "COMPLETED_SUCCESSFULLY");
        assert_eq!(done(None), "COMPLETED_SUCCESSFULLY");
        assert_eq!(done(Some(-1)), "COMPLETED_SUCCESSFULLY");
        assert_eq!(done(Some(3)), "COMPLETED_SUCCESSFULLY");
        assert_eq!(done(Some(0)), "COMPLETED_FAILED");
        assert_eq!(done(Some(4)), "COMPLETED_FAILED");
        assert_eq!(done(Some(5)), "COMPLETED_KILLED");
        // Stopped by the simulation: whatever the log says.
        let killed = |end| final_state(Outcome::Killed, Some(t(0)), t(end), Some(t(60)), Some(1));
        assert_eq!(killed(60), "COMPLETED_WALLTIME_REACHED");
        assert_eq!(killed(30), "COMPLETED_KILLED");
        assert_eq!(
            final_state(Outcome::Failed, Some(t(0)), t(5), None, Some(1)),
            "COMPLETED_FAILED"
        );
        assert_eq!(
            final_state(Outcome::Cancelled, Some(t(0)), t(5), None, Some(1)),
            "COMPLETED_KILLED"
        );
        for o in [Outcome::Cancelled, Outcome::Rejected, Outcome::Completed] {
            assert_eq!(final_state(o, None, t(5), None, Some(1)), "REJECTED");
        }
    }
}
