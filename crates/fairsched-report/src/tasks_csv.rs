//! `tasks.csv`: one line per task, written as tasks end.
//!
//! Row order: the order in which tasks left the platform, that is by end
//! time (non-decreasing); tasks that end at the same instant in the order
//! the core ended them (the simulator's fixed event order at an instant:
//! completions first). Deterministic: the same inputs and seed give the
//! same bytes. Sort by `task` for submission order (a trace replay numbers
//! tasks 1, 2, … in submit order).
//!
//! It is on the simulator's hot path (one line per task, ~200,000 for a
//! full log). The simulator's thread only copies each task's figures (a
//! `Row`, 96 bytes) into a batch; a thread of its own formats the lines
//! and writes them, a few batches behind (on a machine with a core to
//! spare the file costs the run no wall time; if no thread can be started
//! the lines are written inline, the same bytes). A line is assembled in
//! bytes: integers with `itoa`, whole seconds without the formatting
//! machinery, and the bounded slowdown's four decimals exactly from the
//! float's bits (`fixed4`) — the same bytes as `format!("{:.4}")`,
//! without its slow exact path.

use fairsched_core::metrics::TaskMetrics;
use fairsched_core::{EndRecord, Observer, Outcome, TaskMeta, Time};
use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Column names of `tasks.csv`. Times are seconds (decimals only when the
/// clock ticked finer than a second). `outcome` is what happened in the
/// simulation; `log_status` what the workload log says happened to the
/// job (SWF field 11: 1 completed, 0 failed, 5 cancelled, 2–4 partial, -1
/// unknown; empty for a task not from a log).
pub const TASK_COLUMNS: &str =
    "task,job,user,org,machine,slot,slots,submit,start,end,wait,response,bsld,outcome,attempts,log_status";

/// Rows per batch handed to the writing thread.
const BATCH: usize = 256;
/// Batches that may wait for it (rows in flight stay ~100 KiB).
const BATCHES_BEHIND: usize = 3;

/// One line's figures, copied from the task's end record.
#[derive(Clone, Copy, Debug)]
struct Row {
    task: u64,
    job: u64,
    user: i64,
    submit: Time,
    start: Option<Time>,
    end: Time,
    bsld: Option<f64>,
    org: u32,
    slots: u32,
    machine: Option<u32>,
    slot: Option<u32>,
    starts: u32,
    outcome: Outcome,
    log_status: Option<i8>,
}

impl Row {
    fn of(r: &EndRecord, meta: &TaskMeta) -> Row {
        Row {
            task: r.spec.id.0,
            job: meta.job,
            user: r.spec.user.0,
            submit: r.submit,
            start: r.start(),
            end: r.end,
            bsld: TaskMetrics::of(r).bsld,
            org: r.spec.org.0,
            slots: r.spec.slots,
            machine: r.machine.map(|m| m.0),
            slot: r.slot().map(|x| x.0),
            starts: r.starts(),
            outcome: r.outcome,
            log_status: meta.log_status,
        }
    }
}

/// Formats rows into `out`; the first write error is kept and nothing
/// after it is written.
struct Lines<W> {
    out: W,
    line: Vec<u8>,
    error: Option<io::Error>,
}

impl<W: Write> Lines<W> {
    fn new(mut out: W) -> Lines<W> {
        let error = writeln!(out, "{TASK_COLUMNS}").err();
        Lines {
            out,
            line: Vec::with_capacity(128),
            error,
        }
    }

    fn write(&mut self, r: &Row) {
        if self.error.is_some() {
            return;
        }
        let s = &mut self.line;
        s.clear();
        int(s, r.task);
        s.push(b',');
        int(s, r.job);
        s.push(b',');
        int(s, r.user);
        s.push(b',');
        int(s, r.org);
        s.push(b',');
        opt_int(s, r.machine);
        s.push(b',');
        opt_int(s, r.slot);
        s.push(b',');
        int(s, r.slots);
        s.push(b',');
        time(s, r.submit);
        s.push(b',');
        if let Some(t) = r.start {
            time(s, t);
        }
        s.push(b',');
        time(s, r.end);
        s.push(b',');
        if let Some(t) = r.start {
            time(s, t - r.submit);
        }
        s.push(b',');
        time(s, r.end - r.submit);
        s.push(b',');
        if let Some(b) = r.bsld {
            fixed4(s, b);
        }
        s.push(b',');
        s.extend_from_slice(r.outcome.name().as_bytes());
        s.push(b',');
        int(s, r.starts);
        s.push(b',');
        opt_int(s, r.log_status);
        s.push(b'\n');
        if let Err(e) = self.out.write_all(s) {
            self.error = Some(e);
        }
    }

    fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

enum Sink<W> {
    /// Batches go to the thread that formats and writes them.
    Thread {
        send: SyncSender<Vec<Row>>,
        thread: JoinHandle<io::Result<W>>,
    },
    Inline(Lines<W>),
}

/// Writes one CSV line per ended task (on a thread of its own: see the
/// module docs). The first write error is kept and returned by
/// [`TasksCsv::finish`]; nothing after it is written.
pub struct TasksCsv<W: Write + Send + 'static> {
    sink: Sink<W>,
    batch: Vec<Row>,
    pub rows: u64,
}

impl<W: Write + Send + 'static> TasksCsv<W> {
    pub fn new(out: W) -> TasksCsv<W> {
        let (send, batches): (SyncSender<Vec<Row>>, Receiver<Vec<Row>>) = sync_channel(BATCHES_BEHIND);
        // The writer is handed over once the thread runs; kept here until then.
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Some(Lines::new(out))));
        let theirs = std::sync::Arc::clone(&lines);
        let started = std::thread::Builder::new()
            .name("tasks-csv".into())
            .spawn(move || {
                let mut lines = theirs
                    .lock()
                    .ok()
                    .and_then(|mut l| l.take())
                    .expect("the writer is handed over before the thread starts");
                for batch in batches {
                    for r in &batch {
                        lines.write(r);
                    }
                }
                lines.finish()
            });
        let sink = match started {
            Ok(thread) => Sink::Thread { send, thread },
            Err(_) => Sink::Inline(
                lines
                    .lock()
                    .ok()
                    .and_then(|mut l| l.take())
                    .expect("no thread took the writer"),
            ),
        };
        TasksCsv {
            sink,
            batch: Vec::with_capacity(BATCH),
            rows: 0,
        }
    }

    /// Writes what is left and flushes; the writer, or the first error.
    pub fn finish(mut self) -> io::Result<W> {
        let batch = std::mem::take(&mut self.batch);
        match self.sink {
            Sink::Inline(mut lines) => {
                for r in &batch {
                    lines.write(r);
                }
                lines.finish()
            }
            Sink::Thread { send, thread } => {
                // A send fails only if the thread is gone: its result says why.
                let _ = send.send(batch);
                drop(send);
                thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the tasks.csv writing thread panicked")))
            }
        }
    }
}

/// `tasks.csv`'s rows as typed columns in memory, in the file's row order
/// (what the Python package hands to Arrow, with no text in between).
/// Times are seconds; `None` where the file has an empty cell; `bsld` is
/// the unrounded value the file prints with four decimals.
#[derive(Debug, Default)]
pub struct TaskColumns {
    pub task: Vec<u64>,
    pub job: Vec<u64>,
    pub user: Vec<i64>,
    pub org: Vec<u32>,
    pub machine: Vec<Option<u32>>,
    pub slot: Vec<Option<u32>>,
    pub slots: Vec<u32>,
    pub submit: Vec<f64>,
    pub start: Vec<Option<f64>>,
    pub end: Vec<f64>,
    pub wait: Vec<Option<f64>>,
    pub response: Vec<f64>,
    pub bsld: Vec<Option<f64>>,
    pub outcome: Vec<&'static str>,
    pub attempts: Vec<u32>,
    pub log_status: Vec<Option<i8>>,
}

impl TaskColumns {
    /// Rows collected.
    pub fn len(&self) -> usize {
        self.task.len()
    }
    pub fn is_empty(&self) -> bool {
        self.task.is_empty()
    }
    fn push(&mut self, r: &Row) {
        let s = |t: Time| t.millis() as f64 / 1000.0;
        self.task.push(r.task);
        self.job.push(r.job);
        self.user.push(r.user);
        self.org.push(r.org);
        self.machine.push(r.machine);
        self.slot.push(r.slot);
        self.slots.push(r.slots);
        self.submit.push(s(r.submit));
        self.start.push(r.start.map(s));
        self.end.push(s(r.end));
        self.wait.push(r.start.map(|t| s(t - r.submit)));
        self.response.push(s(r.end - r.submit));
        self.bsld.push(r.bsld);
        self.outcome.push(r.outcome.name());
        self.attempts.push(r.starts);
        self.log_status.push(r.log_status);
    }
}

impl Observer for TaskColumns {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        self.push(&Row::of(rec, meta));
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

fn int(s: &mut Vec<u8>, v: impl itoa::Integer) {
    s.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn opt_int(s: &mut Vec<u8>, v: Option<impl itoa::Integer>) {
    if let Some(v) = v {
        int(s, v);
    }
}

/// A time in seconds as [`Time`]'s `Display` writes it.
fn time(s: &mut Vec<u8>, t: Time) {
    let ms = t.millis();
    if ms % 1000 == 0 {
        int(s, ms / 1000);
    } else {
        let _ = write!(s, "{t}");
    }
}

/// `x` with four decimals, the bytes of `format!("{x:.4}")` (the exact
/// binary value rounded half to even), computed from the float's bits for
/// 0 ≤ x < 2⁵³; other values go through `format!`.
pub(crate) fn fixed4(s: &mut Vec<u8>, x: f64) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    if x.is_sign_negative() || exp == 0x7ff || x >= 9_007_199_254_740_992.0 {
        let _ = write!(s, "{}", crate::table::fixed(x, 4));
        return;
    }
    // x = m · 2^e exactly.
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    };
    // x · 10⁴ = n · 2^e, n < 2⁶⁷.
    let n = u128::from(m) * 10_000;
    let q = if e >= 0 {
        // An integer (x < 2⁵³ keeps e ≤ 0 here; kept for completeness).
        n << e
    } else if -e >= 100 {
        // n < 2⁶⁷ is below half of 2^-e: rounds to 0.
        0
    } else {
        let sh = (-e) as u32;
        let (q, r) = (n >> sh, n & ((1u128 << sh) - 1));
        let half = 1u128 << (sh - 1);
        if r > half || (r == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    int(s, q / 10_000);
    s.push(b'.');
    let f = (q % 10_000) as u32;
    s.extend_from_slice(&[
        b'0' + (f / 1000) as u8,
        b'0' + (f / 100 % 10) as u8,
        b'0' + (f / 10 % 10) as u8,
        b'0' + (f % 10) as u8,
    ]);
}

impl<W: Write + Send + 'static> Observer for TasksCsv<W> {
    fn on_task(&mut self, r: &EndRecord, meta: &TaskMeta) {
        self.batch.push(Row::of(r, meta));
        self.rows += 1;
        if self.batch.len() == BATCH {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            match &mut self.sink {
                // If the thread is gone (it panicked), `finish` says so.
                Sink::Thread { send, .. } => {
                    let _ = send.send(batch);
                }
                Sink::Inline(lines) => {
                    for r in &batch {
                        lines.write(r);
                    }
                }
            }
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_core::{Attempt, AttemptEnd, MachineId, Outcome, SlotId, TaskSpec};

    fn via_fixed4(x: f64) -> String {
        let mut s = Vec::new();
        fixed4(&mut s, x);
        String::from_utf8(s).unwrap()
    }

    /// The fast path writes what `format!("{:.4}")` writes: exact ties
    /// (half to even), values just either side of a tie, the bounded
    /// slowdowns of millisecond times (response / max(run, 10 s)), tiny,
    /// huge and special values.
    #[test]
    fn four_decimals_as_format_writes_them() {
        let mut xs = vec![
            0.0,
            1.0,
            1.03125,
            1.09375,
            2.00005,
            1.00005,
            1.00015,
            0.00005,
            0.00015,
            0.5,
            2.5,
            9.99995,
            99999.99995,
            1e-300,
            5e-324,
            1e15,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -0.0,
            -1.23456,
        ];
        for x in [1.03125f64, 1.00005, 7.65625] {
            xs.push(f64::from_bits(x.to_bits() + 1));
            xs.push(f64::from_bits(x.to_bits() - 1));
        }
        // Bounded slowdowns as TaskMetrics computes them, in milliseconds.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let run = (state % 5_000_000).max(10_000) as f64;
            let response = (state >> 23) % 500_000_000;
            xs.push((response as f64 / run).max(1.0));
            xs.push(f64::from_bits(state >> 2));
        }
        for x in xs {
            assert_eq!(
                via_fixed4(x),
                crate::table::fixed(x, 4),
                "{x:e} ({:#x})",
                x.to_bits()
            );
        }
    }

    #[test]
    fn a_line_is_what_display_writes() {
        let secs = Time::from_secs;
        let rec = |end: Time, ms: i64| EndRecord {
            spec: TaskSpec::new(12, -1, 3).slots(2),
            submit: secs(100),
            end,
            outcome: Outcome::Completed,
            machine: Some(MachineId(1)),
            requeued: Vec::new(),
            last: Some(Attempt {
                machine: MachineId(1),
                slot: SlotId(7),
                slots: 2,
                start: Time::from_millis(130_000 + ms),
                stop: end,
                end: AttemptEnd::Completed,
            }),
            phases: [None; 4],
        };
        let meta = TaskMeta {
            job: 5,
            runtime: None,
            log_status: Some(-1),
        };
        let mut csv = TasksCsv::new(Vec::new());
        csv.on_task(&rec(secs(163), 0), &meta);
        csv.on_task(
            &rec(Time::from_millis(163_250), 500),
            &TaskMeta {
                log_status: None,
                ..meta
            },
        );
        let out = String::from_utf8(csv.finish().unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], TASK_COLUMNS);
        // bsld = 63 / max(33, 10) = 1.9090…
        assert_eq!(
            lines[1],
            "12,5,-1,3,1,7,2,100,130,163,30,63,1.9091,completed,1,-1"
        );
        // bsld = 63.25 / 32.75.
        assert_eq!(
            lines[2],
            "12,5,-1,3,1,7,2,100,130.5,163.25,30.5,63.25,1.9313,completed,1,"
        );
    }

    /// A writer that fails after `left` bytes.
    #[derive(Debug)]
    struct Full {
        left: usize,
        calls_after: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                self.calls_after += 1;
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The first write error comes back from `finish` (after batches went
    /// through the thread), and nothing is written after it.
    #[test]
    fn the_first_write_error_is_returned_and_writing_stops() {
        let secs = Time::from_secs;
        let r = EndRecord {
            spec: TaskSpec::new(1, 1, 0),
            submit: secs(0),
            end: secs(5),
            outcome: Outcome::Cancelled,
            machine: None,
            requeued: Vec::new(),
            last: None,
            phases: [None; 4],
        };
        let meta = TaskMeta {
            job: 1,
            runtime: None,
            log_status: None,
        };
        for rows in [0, 10, 5 * BATCH + 3] {
            let mut csv = TasksCsv::new(Full {
                left: 4000,
                calls_after: 0,
            });
            for _ in 0..rows {
                csv.on_task(&r, &meta);
            }
            assert_eq!(csv.rows, rows as u64);
            let got = csv.finish();
            if rows < 100 {
                assert!(got.is_ok(), "{rows}");
            } else {
                assert_eq!(got.unwrap_err().kind(), io::ErrorKind::StorageFull);
            }
        }
        // Nothing after the error: one failed call, not one per line.
        let mut csv = TasksCsv::new(Full {
            left: 0,
            calls_after: 0,
        });
        for _ in 0..3 * BATCH {
            csv.on_task(&r, &meta);
        }
        assert!(csv.finish().is_err());
        let mut lines = Lines::new(Full {
            left: 0,
            calls_after: 0,
        });
        for _ in 0..50 {
            lines.write(&Row::of(&r, &meta));
        }
        assert_eq!(lines.out.calls_after, 1);
    }

    /// The line as the `write!`-based writer this one replaced wrote it.
    fn reference_line(r: &EndRecord, meta: &TaskMeta) -> String {
        use std::fmt::Write as _;
        fn opt<T: std::fmt::Display>(s: &mut String, v: Option<T>) {
            if let Some(v) = v {
                let _ = write!(s, "{v}");
            }
        }
        let m = TaskMetrics::of(r);
        let mut s = String::new();
        let _ = write!(s, "{},{},{},{},", r.spec.id, meta.job, r.spec.user, r.spec.org);
        opt(&mut s, r.machine);
        s.push(',');
        opt(&mut s, r.slot());
        let _ = write!(s, ",{},{},", r.spec.slots, r.submit);
        opt(&mut s, r.start());
        let _ = write!(s, ",{},", r.end);
        opt(&mut s, m.wait);
        let _ = write!(s, ",{},", m.response);
        opt(&mut s, m.bsld.map(|b| crate::table::fixed(b, 4)));
        let _ = write!(s, ",{},{},", r.outcome, r.starts());
        opt(&mut s, meta.log_status);
        s.push('\n');
        s
    }

    /// Same bytes as the reference for every kind of record: times in
    /// whole seconds, milliseconds and negative, rejected (no machine, no
    /// start), killed, requeued, any user id and status.
    #[test]
    fn every_kind_of_record_gives_the_reference_bytes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut csv = TasksCsv::new(Vec::new());
        let mut want = format!("{TASK_COLUMNS}\n");
        for i in 0..20_000u64 {
            let ms = |x: u64| {
                if x.is_multiple_of(3) {
                    (x % 1_000_000) as i64 * 1000
                } else {
                    (x % 1_000_000_000) as i64 - 1000
                }
            };
            let submit = Time::from_millis(ms(next()));
            let start = submit + Time::from_millis(ms(next()).abs());
            let end = start + Time::from_millis(ms(next()).abs() % 100_000_000);
            let outcome = [
                Outcome::Completed,
                Outcome::Killed,
                Outcome::Cancelled,
                Outcome::Rejected,
            ][i as usize % 4];
            let slot = SlotId((next() % 9000) as u32);
            let run = |s: Time, e: Time, how| Attempt {
                machine: MachineId((i % 3) as u32),
                slot,
                slots: 1 + (i % 7) as u32,
                start: s,
                stop: e,
                end: how,
            };
            let started = outcome != Outcome::Rejected && i % 5 != 1;
            let user = next() as i64 >> 40;
            let job = next() >> (i % 64);
            let r = EndRecord {
                spec: TaskSpec::new(i + 1, user, (i % 6) as u32).slots(1 + (i % 7) as u32),
                submit,
                end,
                outcome,
                machine: (outcome != Outcome::Rejected).then_some(MachineId((i % 3) as u32)),
                requeued: if i % 11 == 0 {
                    vec![run(submit, start, AttemptEnd::Requeued)]
                } else {
                    Vec::new()
                },
                last: started.then(|| run(start, end, AttemptEnd::Completed)),
                phases: [None; 4],
            };
            let meta = TaskMeta {
                job,
                runtime: None,
                log_status: [None, Some(1), Some(0), Some(5), Some(-1)][i as usize % 5],
            };
            csv.on_task(&r, &meta);
            want.push_str(&reference_line(&r, &meta));
        }
        assert_eq!(String::from_utf8(csv.finish().unwrap()).unwrap(), want);
    }
}
