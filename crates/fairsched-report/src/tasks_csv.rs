//! `tasks.csv`: one line per task, written as tasks end.
//!
//! Row order: the order in which tasks left the platform, that is by end
//! time (non-decreasing); tasks that end at the same instant in the order
//! the core ended them (the simulator's fixed event order at an instant:
//! completions first). Deterministic: the same inputs and seed give the
//! same bytes. Sort by `task` for submission order (a trace replay numbers
//! tasks 1, 2, … in submit order).

use fairsched_core::metrics::TaskMetrics;
use fairsched_core::{EndRecord, Observer, TaskMeta};
use std::fmt::Write as _;
use std::io::{self, Write};

/// Column names of `tasks.csv`. Times are seconds (decimals only when the
/// clock ticked finer than a second). `outcome` is what happened in the
/// simulation; `log_status` what the workload log says happened to the
/// job (SWF field 11: 1 completed, 0 failed, 5 cancelled, 2–4 partial, -1
/// unknown; empty for a task not from a log).
pub const TASK_COLUMNS: &str =
    "task,job,user,org,machine,slot,slots,submit,start,end,wait,response,bsld,outcome,attempts,log_status";

/// Writes one CSV line per ended task. The first write error is kept and
/// returned by [`TasksCsv::finish`]; nothing after it is written.
pub struct TasksCsv<W: Write> {
    out: W,
    line: String,
    error: Option<io::Error>,
    pub rows: u64,
}

impl<W: Write> TasksCsv<W> {
    pub fn new(mut out: W) -> TasksCsv<W> {
        let error = writeln!(out, "{TASK_COLUMNS}").err();
        TasksCsv {
            out,
            line: String::with_capacity(128),
            error,
            rows: 0,
        }
    }
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn opt<T: std::fmt::Display>(s: &mut String, v: Option<T>) {
    if let Some(v) = v {
        let _ = write!(s, "{v}");
    }
}

impl<W: Write> Observer for TasksCsv<W> {
    fn on_task(&mut self, r: &EndRecord, meta: &TaskMeta) {
        if self.error.is_some() {
            return;
        }
        let m = TaskMetrics::of(r);
        let s = &mut self.line;
        s.clear();
        let _ = write!(s, "{},{},{},{},", r.spec.id, meta.job, r.spec.user, r.spec.org);
        opt(s, r.machine);
        s.push(',');
        opt(s, r.slot());
        let _ = write!(s, ",{},{},", r.spec.slots, r.submit);
        opt(s, r.start());
        let _ = write!(s, ",{},", r.end);
        opt(s, m.wait);
        let _ = write!(s, ",{},", m.response);
        opt(s, m.bsld.map(|b| crate::table::fixed(b, 4)));
        let _ = write!(s, ",{},{},", r.outcome, r.starts());
        opt(s, meta.log_status);
        s.push('\n');
        if let Err(e) = self.out.write_all(s.as_bytes()) {
            self.error = Some(e);
        }
        self.rows += 1;
    }
    fn wants_steps(&self) -> bool {
        false
    }
}
