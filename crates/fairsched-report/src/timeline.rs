//! What the report draws from a `simulate` run's per-task files:
//! reading `tasks.csv`, `runs.csv` and `fairness.csv` (line by line, a
//! malformed line named by file, line and field and skipped), the
//! platform over time (processors busy, tasks waiting) by one sweep over
//! the runs' events, its downsampling for a chart, the Gantt chart's
//! default window and the rectangles it draws.
//!
//! Times are kept as integral milliseconds of the log's clock, as the
//! files write them in seconds (at most three decimals).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;

/// Malformed lines named per file before the rest are only counted.
pub const MAX_LINE_PROBLEMS: usize = 5;

/// One line of `tasks.csv`, as far as the report needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub task: u64,
    pub user: i64,
    pub org: u32,
    pub machine: Option<u32>,
    pub slot: Option<u32>,
    pub slots: u32,
    /// ms.
    pub submit: i64,
    pub start: Option<i64>,
    pub end: i64,
    pub completed: bool,
}

/// One line of `runs.csv`: a run that was stopped and requeued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunRow {
    pub task: u64,
    pub attempt: u32,
    pub machine: u32,
    pub slot: u32,
    pub slots: u32,
    pub start: i64,
    pub stop: i64,
}

/// One line of `fairness.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct FairnessRow {
    /// ms.
    pub at: i64,
    pub org: u32,
    pub name: String,
    pub psi: f64,
    pub phi: Option<f64>,
}

/// Seconds with at most three decimals (`12`, `0.5`, `-3.25`) as
/// milliseconds; `None` if it is not such a number (or too big).
pub fn parse_ms(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (whole, frac) = body.split_once('.').unwrap_or((body, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) || (body.contains('.') && frac.is_empty())
    {
        return None;
    }
    let w: i64 = whole.parse().ok()?;
    let mut f: i64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    for _ in frac.len()..3 {
        f *= 10;
    }
    let ms = w.checked_mul(1000)?.checked_add(f)?;
    // Past 10¹² s (31,000 years) it is no time of a run: refused, so that
    // every sum and difference of times fits.
    (ms <= MAX_MS).then_some(if neg { -ms } else { ms })
}

/// The largest time read, ms.
const MAX_MS: i64 = 1_000_000_000_000_000;

/// Machines and rows per machine a Gantt chart lays out at most (more is
/// no platform: a damaged file).
const MAX_MACHINES: usize = 4096;
const MAX_ROWS: u32 = 1 << 22;

/// Milliseconds as seconds, the way the files write them.
pub fn secs(ms: i64) -> String {
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        let s = format!("{:.3}", ms as f64 / 1000.0);
        s.trim_end_matches('0').to_string()
    }
}

/// The problems met reading one file: the first [`MAX_LINE_PROBLEMS`]
/// malformed lines named, the others counted.
#[derive(Debug, Default)]
pub struct LineProblems {
    /// The file as shown in messages.
    pub file: String,
    pub messages: Vec<String>,
    pub more: usize,
}

impl LineProblems {
    pub fn new(file: &str) -> LineProblems {
        LineProblems {
            file: file.to_string(),
            ..LineProblems::default()
        }
    }
    fn line(&mut self, line: usize, field: &str, what: String) {
        if self.messages.len() < MAX_LINE_PROBLEMS {
            self.messages.push(format!(
                "{}:{line}: field `{field}`: {what}; line skipped",
                self.file
            ));
        } else {
            self.more += 1;
        }
    }
    fn whole(&mut self, what: String) {
        self.messages.push(format!("{}: {what}", self.file));
    }
    /// Every message, the count of the unnamed ones last.
    pub fn into_messages(mut self) -> Vec<String> {
        if self.more > 0 {
            self.messages.push(format!(
                "{}: {} more malformed line(s) skipped",
                self.file, self.more
            ));
        }
        self.messages
    }
}

/// The cells of a CSV line (RFC 4180 quotes, no line breaks inside).
fn cells(line: &str) -> Vec<String> {
    if !line.contains('"') {
        return line.split(',').map(str::to_string).collect();
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Lines of a file read at most (a bigger file is cut, saying so).
pub const MAX_LINES: usize = 20_000_000;

/// A CSV file read line by line: `row` gets each line's cells by the
/// column order of `wanted` and returns the malformed field's name and
/// what is wrong with it. Stops (with a problem) at a missing column, a
/// read error or [`MAX_LINES`] lines; empty lines are skipped.
fn read_csv<R: BufRead>(
    mut r: R,
    wanted: &[&str],
    p: &mut LineProblems,
    mut row: impl FnMut(&[&str]) -> Result<(), (&'static str, String)>,
) {
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let mut index: Vec<usize> = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                p.whole(format!("line {}: {e}", line_no + 1));
                return;
            }
        }
        line_no += 1;
        if line_no > MAX_LINES {
            p.whole(format!(
                "more than {MAX_LINES} lines: only the first ones are read"
            ));
            return;
        }
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            if line_no == 1 {
                p.whole("not UTF-8 text".to_string());
                return;
            }
            p.line(line_no, "-", "not UTF-8 text".to_string());
            continue;
        };
        if line_no == 1 {
            let head = cells(line);
            let missing: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|w| !head.iter().any(|h| h == w))
                .collect();
            if !missing.is_empty() {
                p.whole(format!(
                    "no column `{}` in its header line (a file of an older fairsched, or not this file?)",
                    missing.join("`, `")
                ));
                return;
            }
            index = wanted
                .iter()
                .map(|w| head.iter().position(|h| h == w).unwrap_or(0))
                .collect();
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let owned;
        let fields: Vec<&str> = if line.contains('"') {
            owned = cells(line);
            owned.iter().map(String::as_str).collect()
        } else {
            line.split(',').collect()
        };
        let mut got: Vec<&str> = Vec::with_capacity(wanted.len());
        let mut short = None;
        for (&i, w) in index.iter().zip(wanted) {
            match fields.get(i) {
                Some(f) => got.push(f),
                None => {
                    short = Some(*w);
                    break;
                }
            }
        }
        if let Some(w) = short {
            p.line(
                line_no,
                w,
                format!("missing ({} fields on the line)", fields.len()),
            );
            continue;
        }
        if let Err((field, what)) = row(&got) {
            p.line(line_no, field, what);
        }
    }
}

fn num<T: std::str::FromStr>(s: &str, field: &'static str) -> Result<T, (&'static str, String)> {
    s.parse()
        .map_err(|_| (field, format!("`{s}` is not a whole number")))
}

fn opt_num<T: std::str::FromStr>(s: &str, field: &'static str) -> Result<Option<T>, (&'static str, String)> {
    if s.is_empty() {
        Ok(None)
    } else {
        num(s, field).map(Some)
    }
}

fn time(s: &str, field: &'static str) -> Result<i64, (&'static str, String)> {
    parse_ms(s).ok_or_else(|| {
        (
            field,
            format!("`{s}` is not a time in seconds (at most 3 decimals)"),
        )
    })
}

fn float(s: &str, field: &'static str) -> Result<f64, (&'static str, String)> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err((field, format!("`{s}` is not a number"))),
    }
}

const TASK_FIELDS: [&str; 10] = [
    "task", "user", "org", "machine", "slot", "slots", "submit", "start", "end", "outcome",
];

/// The tasks of `tasks.csv`, in file order.
pub fn read_tasks<R: BufRead>(r: R, p: &mut LineProblems) -> Vec<TaskRow> {
    let mut out = Vec::new();
    read_csv(r, &TASK_FIELDS, p, |f| {
        let t = TaskRow {
            task: num(f[0], "task")?,
            user: num(f[1], "user")?,
            org: num(f[2], "org")?,
            machine: opt_num(f[3], "machine")?,
            slot: opt_num(f[4], "slot")?,
            slots: num(f[5], "slots")?,
            submit: time(f[6], "submit")?,
            start: if f[7].is_empty() {
                None
            } else {
                Some(time(f[7], "start")?)
            },
            end: time(f[8], "end")?,
            completed: f[9] == "completed",
        };
        const OUTCOMES: [&str; 5] = ["completed", "killed", "failed", "cancelled", "rejected"];
        if !OUTCOMES.contains(&f[9]) {
            return Err((
                "outcome",
                format!("`{}` is none of {}", f[9], OUTCOMES.join(", ")),
            ));
        }
        if let Some(s) = t.start {
            if t.slots == 0 {
                return Err(("slots", "0 for a task that started".to_string()));
            }
            if s < t.submit || s > t.end {
                return Err(("start", format!("{} is not between submit and end", f[7])));
            }
            if t.machine.is_none() || t.slot.is_none() {
                return Err(("slot", "empty for a task that started".to_string()));
            }
        } else if t.end < t.submit {
            return Err(("end", format!("{} is before submit", f[8])));
        }
        out.push(t);
        Ok(())
    });
    out
}

const RUN_FIELDS: [&str; 7] = ["task", "attempt", "machine", "slot", "slots", "start", "stop"];

/// The interrupted runs of `runs.csv`.
pub fn read_runs<R: BufRead>(r: R, p: &mut LineProblems) -> Vec<RunRow> {
    let mut out = Vec::new();
    read_csv(r, &RUN_FIELDS, p, |f| {
        let run = RunRow {
            task: num(f[0], "task")?,
            attempt: num(f[1], "attempt")?,
            machine: num(f[2], "machine")?,
            slot: num(f[3], "slot")?,
            slots: num(f[4], "slots")?,
            start: time(f[5], "start")?,
            stop: time(f[6], "stop")?,
        };
        if run.stop < run.start {
            return Err(("stop", format!("{} is before start", f[6])));
        }
        out.push(run);
        Ok(())
    });
    out
}

const FAIRNESS_FIELDS: [&str; 5] = ["time_s", "org", "name", "psi_s2", "phi_s2"];

/// The lines of `fairness.csv`.
pub fn read_fairness<R: BufRead>(r: R, p: &mut LineProblems) -> Vec<FairnessRow> {
    let mut out = Vec::new();
    read_csv(r, &FAIRNESS_FIELDS, p, |f| {
        out.push(FairnessRow {
            at: time(f[0], "time_s")?,
            org: num(f[1], "org")?,
            name: f[2].to_string(),
            psi: float(f[3], "psi_s2")?,
            phi: if f[4].is_empty() {
                None
            } else {
                Some(float(f[4], "phi_s2")?)
            },
        });
        Ok(())
    });
    out
}

/// The platform from one instant on (until the next step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// ms.
    pub t: i64,
    /// Processors held by runs.
    pub busy: i64,
    /// Tasks submitted and waiting to start (again, after an interrupted
    /// run).
    pub queue: i64,
}

/// Processors busy and tasks waiting over time: a step function, one step
/// per instant where either changes (the last one back to 0 and 0 when
/// every task has ended).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub steps: Vec<Step>,
}

/// The runs a task held processors in: its interrupted runs and its last
/// (`start`, `stop`, processors).
fn spans<'a>(tasks: &'a [TaskRow], runs: &'a [RunRow]) -> impl Iterator<Item = (i64, i64, i64)> + 'a {
    tasks
        .iter()
        .filter_map(|t| t.start.map(|s| (s, t.end, i64::from(t.slots))))
        .chain(runs.iter().map(|r| (r.start, r.stop, i64::from(r.slots))))
}

impl Timeline {
    /// The sweep: each task adds +1 waiting at its submit, each run −1
    /// waiting and +processors at its start and −processors at its stop,
    /// an interrupted run +1 waiting at its stop (requeued), a task that
    /// never ran (again) −1 waiting at its end. Events sorted by time
    /// (O(n log n)); values after every event of an instant.
    pub fn of(tasks: &[TaskRow], runs: &[RunRow]) -> Timeline {
        let mut ev: Vec<(i64, i64, i64)> = Vec::with_capacity(3 * tasks.len() + 2 * runs.len());
        for t in tasks {
            ev.push((t.submit, 0, 1));
            match t.start {
                Some(s) => {
                    let q = i64::from(t.slots);
                    ev.push((s, q, -1));
                    ev.push((t.end, -q, 0));
                }
                None => ev.push((t.end, 0, -1)),
            }
        }
        for r in runs {
            let q = i64::from(r.slots);
            ev.push((r.start, q, -1));
            ev.push((r.stop, -q, 1));
        }
        ev.sort_unstable_by_key(|e| e.0);
        let mut steps: Vec<Step> = Vec::new();
        let (mut busy, mut queue) = (0i64, 0i64);
        let mut i = 0;
        while i < ev.len() {
            let t = ev[i].0;
            while i < ev.len() && ev[i].0 == t {
                busy += ev[i].1;
                queue += ev[i].2;
                i += 1;
            }
            if steps.last().is_none_or(|s| s.busy != busy || s.queue != queue) {
                steps.push(Step { t, busy, queue });
            }
        }
        Timeline { steps }
    }

    /// The first instant of the longest queue (and its length).
    pub fn peak_queue(&self) -> Option<(i64, i64)> {
        self.steps.iter().fold(None, |m: Option<(i64, i64)>, s| match m {
            Some((_, q)) if q >= s.queue => m,
            _ => Some((s.t, s.queue)),
        })
    }

    /// The first instant of the most processors busy (and how many).
    pub fn peak_busy(&self) -> Option<(i64, i64)> {
        self.steps.iter().fold(None, |m: Option<(i64, i64)>, s| match m {
            Some((_, b)) if b >= s.busy => m,
            _ => Some((s.t, s.busy)),
        })
    }

    /// The first and last instants.
    pub fn span(&self) -> Option<(i64, i64)> {
        Some((self.steps.first()?.t, self.steps.last()?.t))
    }

    /// At most `n` points for a chart: the steps themselves when there
    /// are no more, else the time-weighted mean of busy processors and of
    /// waiting tasks over each of `n` equal intervals of the span (and the
    /// most tasks waiting in each).
    pub fn sampled(&self, n: usize) -> Sampled {
        let n = n.max(1);
        let Some((t0, t1)) = self.span() else {
            return Sampled::default();
        };
        if self.steps.len() <= n || t1 <= t0 {
            return Sampled {
                points: self
                    .steps
                    .iter()
                    .map(|s| SampledPoint {
                        t: s.t,
                        busy: s.busy as f64,
                        queue: s.queue as f64,
                        queue_max: s.queue,
                    })
                    .collect(),
                interval_ms: None,
            };
        }
        let w = nice_interval((t1 - t0 + n as i64 - 1) / n as i64);
        let buckets = ((t1 - t0 + w - 1) / w) as usize;
        let mut busy = vec![0i128; buckets];
        let mut queue = vec![0i128; buckets];
        let mut qmax = vec![i64::MIN; buckets];
        for (i, s) in self.steps.iter().enumerate() {
            let end = self.steps.get(i + 1).map_or(t1, |n| n.t);
            let mut t = s.t;
            // A step's value counts from its instant, an instant of its
            // bucket even when it lasts no time (the last one).
            let b0 = (((t - t0) / w) as usize).min(buckets - 1);
            qmax[b0] = qmax[b0].max(s.queue);
            while t < end {
                let b = ((t - t0) / w) as usize;
                let e = end.min(t0 + (b as i64 + 1) * w);
                busy[b] += i128::from(s.busy) * i128::from(e - t);
                queue[b] += i128::from(s.queue) * i128::from(e - t);
                qmax[b] = qmax[b].max(s.queue);
                t = e;
            }
        }
        let points = (0..buckets)
            .map(|b| {
                let from = t0 + b as i64 * w;
                let len = ((t0 + (b as i64 + 1) * w).min(t1) - from).max(1) as f64;
                SampledPoint {
                    t: from,
                    busy: busy[b] as f64 / len,
                    queue: queue[b] as f64 / len,
                    queue_max: qmax[b].max(0),
                }
            })
            .collect();
        Sampled {
            points,
            interval_ms: Some(w),
        }
    }
}

/// Intervals of a sampled timeline: the first of 1 ms, 2, 5, 10, … 500 ms,
/// 1 s, 2, 5, 10, 15, 30 s, 1 min, 2, 5, 10, 15, 30 min, 1 h, 2, 3, 6,
/// 12 h, 1 d, 2, 5, 10, 20, 50 d, … at least `ms` long.
fn nice_interval(ms: i64) -> i64 {
    const NICE: [i64; 27] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000,
        300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
        86_400_000,
    ];
    if let Some(&w) = NICE.iter().find(|&&w| w >= ms) {
        return w;
    }
    // Whole days: 1, 2, 5 × 10^k.
    let mut day = 86_400_000i64;
    loop {
        for m in [1, 2, 5] {
            if day.saturating_mul(m) >= ms {
                return day.saturating_mul(m);
            }
        }
        day = day.saturating_mul(10);
    }
}

/// One point of [`Sampled`]: values from `t` until the next point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampledPoint {
    pub t: i64,
    pub busy: f64,
    pub queue: f64,
    pub queue_max: i64,
}

/// A timeline fit for a chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampled {
    pub points: Vec<SampledPoint>,
    /// `None`: the exact steps; else means over intervals of this length.
    pub interval_ms: Option<i64>,
}

/// A window of the Gantt chart, ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub len: i64,
    /// Why this one (for the caption), when chosen by [`default_window`].
    pub why: String,
}

/// Window lengths tried, seconds.
const LADDER: [i64; 24] = [
    60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 259200, 345600, 604800,
    1209600, 2419200, 4838400, 9676800, 15724800, 31536000, 63072000, 157680000,
];

/// A duration for people: `90 s`, `15 min`, `6 h`, `2 d`.
pub fn human(ms: i64) -> String {
    let s = ms / 1000;
    if ms % 1000 != 0 || s < 60 {
        format!("{} s", secs(ms))
    } else if s % 86400 == 0 {
        format!("{} d", s / 86400)
    } else if s % 3600 == 0 {
        format!("{} h", s / 3600)
    } else if s % 60 == 0 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// Runs (a task's last, and interrupted ones) that overlap `[a, b)`.
fn runs_in(tasks: &[TaskRow], runs: &[RunRow], a: i64, b: i64) -> usize {
    spans(tasks, runs).filter(|&(s, e, _)| s < b && e > a).count()
}

/// The Gantt chart's window when none is asked for, deterministically:
/// centred on the first instant of the longest queue (the first instant
/// of the most processors busy when no task ever waited), the longest of
/// 1 min, 2 min, 5 min, … 5 years whose window shows at most `max_runs`
/// runs (the shortest if none does; the whole span if it is shorter),
/// kept inside the span.
pub fn default_window(tl: &Timeline, tasks: &[TaskRow], runs: &[RunRow], max_runs: usize) -> Option<Window> {
    let (t0, t1) = tl.span()?;
    let (centre, why) = match tl.peak_queue() {
        Some((t, q)) if q > 0 => (
            t,
            format!(
                "the first instant of the longest queue ({q} tasks waiting, t = {} s)",
                secs(t)
            ),
        ),
        _ => {
            let (t, b) = tl.peak_busy().unwrap_or((t0, 0));
            (
                t,
                format!(
                    "the first instant with the most processors busy ({b}, t = {} s; no task ever waited)",
                    secs(t)
                ),
            )
        }
    };
    let place = |len: i64| -> i64 {
        let latest = (t1 - len).max(t0);
        (centre - len / 2).clamp(t0, latest)
    };
    let span = (t1 - t0).max(1);
    let mut chosen: Option<(i64, usize)> = None;
    for &l in &LADDER {
        let len = (l * 1000).min(span);
        let start = place(len);
        let n = runs_in(tasks, runs, start, start + len);
        if n <= max_runs || chosen.is_none() {
            chosen = Some((len, n));
        }
        if n > max_runs || len >= span {
            break;
        }
    }
    let (len, n) = chosen?;
    let start = place(len);
    let whole = len >= span;
    Some(Window {
        start,
        len,
        why: if whole {
            format!("the whole run, which shows {n} runs")
        } else if n > max_runs {
            format!(
                "{} around {why}: the shortest window tried, and it holds {n} runs",
                human(len)
            )
        } else {
            format!(
                "{} around {why}: the longest of 1 min, 2 min, 5 min, … that shows at most {max_runs} runs ({n})",
                human(len)
            )
        },
    })
}

/// Colour groups of a Gantt chart: users or organizations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    User,
    Org,
}

/// What a Gantt chart draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GanttLayout {
    pub bars: Vec<crate::plot_sim::GanttBar>,
    /// Runs overlapping the window, and those drawn (the first by start,
    /// up to the cap).
    pub runs_in_window: usize,
    pub runs_drawn: usize,
    /// Group names in legend order (the last `other` when there is one),
    /// each with its colour.
    pub legend: Vec<(String, (u8, u8, u8))>,
    /// Rows (processors) from 0 to this.
    pub rows: f64,
    /// First row and name of each machine.
    pub machines: Vec<(f64, String)>,
    /// Rows are the processors' numbers (every run drawn holds one);
    /// else rows are assigned for the drawing.
    pub exact_rows: bool,
    pub stopped: usize,
}

/// Named colour groups (the rest are `other`).
pub const GANTT_GROUPS: usize = 10;

/// The Gantt chart of `[start, start + len)`: every run overlapping it
/// (a task's last run, and its interrupted runs from `runs.csv`, drawn as
/// stopped work with the runs of tasks that did not complete), the first
/// `max_bars` by start (then task, attempt). `machines`: each machine's
/// processors (the platform's, from `summary.json`), else guessed from
/// the slots seen.
///
/// Rows: `tasks.csv` records a run's first processor and how many it
/// held, and the core hands out free processors from a stack, so a wide
/// run's processors are rarely consecutive. When every run drawn holds
/// one processor, its row is its processor's number (exact); otherwise
/// each machine's rows are assigned for the drawing, run by run in start
/// order, the lowest block of free rows that fits (or the lowest free
/// rows, in as many blocks as needed), which never overlaps two runs.
pub fn gantt_layout(
    tasks: &[TaskRow],
    runs: &[RunRow],
    window: (i64, i64),
    group_by: GroupBy,
    org_names: &[String],
    machines: Option<&[u32]>,
    max_bars: usize,
) -> GanttLayout {
    let (a, b) = (window.0, window.0 + window.1.max(1));
    // (start, stop, machine, first slot, slots, group key, stopped, task, attempt)
    struct R {
        start: i64,
        stop: i64,
        machine: u32,
        slot: u32,
        slots: u32,
        key: i64,
        stopped: bool,
        task: u64,
        attempt: u32,
    }
    let key = |user: i64, org: u32| match group_by {
        GroupBy::User => user,
        GroupBy::Org => i64::from(org),
    };
    let mut rs: Vec<R> = tasks
        .iter()
        .filter(|t| t.start.is_some_and(|s| s < b) && t.end > a)
        .filter_map(|t| {
            Some(R {
                start: t.start?,
                stop: t.end,
                machine: t.machine?,
                slot: t.slot?,
                slots: t.slots,
                key: key(t.user, t.org),
                stopped: !t.completed,
                task: t.task,
                attempt: u32::MAX,
            })
        })
        .collect();
    let cut: Vec<&RunRow> = runs.iter().filter(|r| r.start < b && r.stop > a).collect();
    if !cut.is_empty() {
        let ids: HashSet<u64> = cut.iter().map(|r| r.task).collect();
        let owner: HashMap<u64, (i64, u32)> = tasks
            .iter()
            .filter(|t| ids.contains(&t.task))
            .map(|t| (t.task, (t.user, t.org)))
            .collect();
        for r in cut {
            let (user, org) = owner.get(&r.task).copied().unwrap_or((-1, 0));
            rs.push(R {
                start: r.start,
                stop: r.stop,
                machine: r.machine,
                slot: r.slot,
                slots: r.slots,
                key: key(user, org),
                stopped: true,
                task: r.task,
                attempt: r.attempt,
            });
        }
    }
    rs.sort_by_key(|r| (r.start, r.task, r.attempt));
    let runs_in_window = rs.len();

    // Colours: the groups holding the most processor-time in the window.
    let mut held: BTreeMap<i64, i128> = BTreeMap::new();
    for r in &rs {
        *held.entry(r.key).or_default() += i128::from(r.slots) * i128::from(r.stop.min(b) - r.start.max(a));
    }
    let mut ranked: Vec<(i64, i128)> = held.into_iter().collect();
    ranked.sort_by_key(|&(k, h)| (std::cmp::Reverse(h), k));
    let mut named: Vec<i64> = ranked.iter().take(GANTT_GROUPS).map(|g| g.0).collect();
    // Organizations keep their index's colour (as on the page's ψ and φ
    // charts) when every one shown has a colour of its own.
    let by_index = group_by == GroupBy::Org
        && named
            .iter()
            .all(|&k| usize::try_from(k).is_ok_and(|k| k < crate::plot_sim::PALETTE.len()));
    if by_index {
        named.sort_unstable();
    }
    let mut legend: Vec<(String, (u8, u8, u8))> = named
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let i = if by_index { k as usize } else { i };
            let name = match group_by {
                GroupBy::User => format!("user {k}"),
                GroupBy::Org => org_names
                    .get(k as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("org{k}")),
            };
            (name, crate::plot_sim::PALETTE[i])
        })
        .collect();
    if ranked.len() > GANTT_GROUPS {
        legend.push((
            format!("other ({} more)", ranked.len() - GANTT_GROUPS),
            crate::plot_sim::OTHER,
        ));
    }
    // The legend's index: a named group's, else "other" (last).
    let group = |k: i64| named.iter().position(|&n| n == k).unwrap_or(named.len());

    // Machines: sizes and first rows.
    let sizes: Vec<u32> = match machines {
        Some(m) if !m.is_empty() => m.iter().take(MAX_MACHINES).map(|&s| s.min(MAX_ROWS)).collect(),
        _ => {
            let mut top: BTreeMap<u32, u32> = BTreeMap::new();
            for t in tasks {
                if let (Some(m), Some(s)) = (t.machine, t.slot) {
                    let e = top.entry(m).or_default();
                    *e = (*e).max(s + t.slots.max(1));
                }
            }
            let n = top
                .keys()
                .next_back()
                .map_or(1, |m| (*m as usize + 1).min(MAX_MACHINES));
            let mut sizes = vec![0u32; n];
            // Slots are numbered across machines: a machine's size is
            // its highest slot seen past the previous one's.
            let mut prev = 0;
            for (m, size) in sizes.iter_mut().enumerate() {
                let top = top.get(&(m as u32)).copied().unwrap_or(prev);
                *size = top.saturating_sub(prev).clamp(1, MAX_ROWS);
                prev = prev.max(top);
            }
            sizes
        }
    };
    let mut firsts = Vec::with_capacity(sizes.len());
    let mut acc = 0u64;
    for &s in &sizes {
        firsts.push(acc);
        acc += u64::from(s);
    }
    let total = acc.max(1) as f64;

    let drawn = rs.len().min(max_bars);
    let rs = &rs[..drawn];
    let exact_rows = rs.iter().all(|r| r.slots <= 1);
    let mut bars = Vec::new();
    let mut stopped = 0;
    let clip = |r: &R| ((r.start.max(a)) as f64 / 1000.0, (r.stop.min(b)) as f64 / 1000.0);
    if exact_rows {
        for r in rs {
            let (x0, x1) = clip(r);
            let y = f64::from(r.slot);
            stopped += usize::from(r.stopped);
            bars.push(crate::plot_sim::GanttBar {
                x0,
                x1,
                y0: y,
                y1: y + 1.0,
                group: group(r.key),
                stopped: r.stopped,
            });
        }
    } else {
        // Per machine, each row's time it is free from.
        let mut free_from: Vec<Vec<i64>> = sizes.iter().map(|&s| vec![i64::MIN; s as usize]).collect();
        for r in rs {
            let m = r.machine as usize;
            if m >= MAX_MACHINES {
                continue;
            }
            if m >= free_from.len() {
                free_from.resize(m + 1, Vec::new());
            }
            let rows = &mut free_from[m];
            let q = r.slots.clamp(1, MAX_ROWS) as usize;
            // The lowest block of q consecutive free rows, else the lowest
            // free rows; rows past the machine's when it has too few. One
            // scan from the bottom, stopped at the first block.
            let mut lowest: Vec<usize> = Vec::with_capacity(q.min(rows.len()));
            let (mut run_from, mut run_len) = (0usize, 0usize);
            let mut block = None;
            for (i, &f) in rows.iter().enumerate() {
                if f <= r.start {
                    if lowest.len() < q {
                        lowest.push(i);
                    }
                    if run_len == 0 {
                        run_from = i;
                    }
                    run_len += 1;
                    if run_len == q {
                        block = Some(run_from);
                        break;
                    }
                } else {
                    run_len = 0;
                }
            }
            let mut pick: Vec<usize> = match block {
                Some(b) => (b..b + q).collect(),
                None => lowest,
            };
            while pick.len() < q && rows.len() < MAX_ROWS as usize {
                pick.push(rows.len());
                rows.push(i64::MIN);
            }
            for &i in &pick {
                rows[i] = r.stop;
            }
            let first = firsts.get(m).copied().unwrap_or(acc) as f64;
            let (x0, x1) = clip(r);
            stopped += usize::from(r.stopped);
            // Consecutive rows as one rectangle.
            let mut i = 0;
            while i < pick.len() {
                let mut j = i + 1;
                while j < pick.len() && pick[j] == pick[j - 1] + 1 {
                    j += 1;
                }
                bars.push(crate::plot_sim::GanttBar {
                    x0,
                    x1,
                    y0: first + pick[i] as f64,
                    y1: first + pick[j - 1] as f64 + 1.0,
                    group: group(r.key),
                    stopped: r.stopped,
                });
                i = j;
            }
        }
    }
    // Rows added past a machine's (inconsistent input) are shown above.
    let rows = bars.iter().map(|b| b.y1).fold(total, f64::max);
    GanttLayout {
        bars,
        runs_in_window,
        runs_drawn: drawn,
        legend,
        rows,
        machines: firsts
            .iter()
            .enumerate()
            .map(|(m, &f)| (f as f64, format!("machine {m}")))
            .collect(),
        exact_rows,
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(task: u64, user: i64, submit: i64, start: Option<i64>, end: i64, slots: u32) -> TaskRow {
        TaskRow {
            task,
            user,
            org: (user % 2) as u32,
            machine: start.map(|_| 0),
            slot: start.map(|_| (task % 4) as u32),
            slots,
            submit: submit * 1000,
            start: start.map(|s| s * 1000),
            end: end * 1000,
            completed: start.is_some(),
        }
    }

    /// Four processors: task 1 (2 procs) runs 0–10, task 2 (2) waits
    /// 0–5 and runs 5–20, task 3 (4) waits 2–20 and runs 20–30, task 4 is
    /// cancelled while waiting 3–8; task 2 had a run 1–4 on 1 processor,
    /// interrupted (so it waited 0–1 and 4–5).
    fn hand_made() -> (Vec<TaskRow>, Vec<RunRow>) {
        let tasks = vec![
            task(1, 1, 0, Some(0), 10, 2),
            task(2, 2, 0, Some(5), 20, 2),
            task(3, 3, 2, Some(20), 30, 4),
            task(4, 4, 3, None, 8, 1),
        ];
        let runs = vec![RunRow {
            task: 2,
            attempt: 1,
            machine: 0,
            slot: 3,
            slots: 1,
            start: 1000,
            stop: 4000,
        }];
        (tasks, runs)
    }

    #[test]
    fn the_sweep_gives_busy_processors_and_waiting_tasks_exactly() {
        let (tasks, runs) = hand_made();
        let tl = Timeline::of(&tasks, &runs);
        let got: Vec<(i64, i64, i64)> = tl.steps.iter().map(|s| (s.t / 1000, s.busy, s.queue)).collect();
        assert_eq!(
            got,
            [
                (0, 2, 1),  // 1 runs, 2 waits
                (1, 3, 0),  // 2's first run
                (2, 3, 1),  // 3 submitted
                (3, 3, 2),  // 4 submitted
                (4, 2, 3),  // 2 requeued
                (5, 4, 2),  // 2 runs again
                (8, 4, 1),  // 4 cancelled
                (10, 2, 1), // 1 ends
                (20, 4, 0), // 2 ends, 3 starts
                (30, 0, 0),
            ]
        );
        assert_eq!(tl.peak_queue(), Some((4000, 3)));
        assert_eq!(tl.peak_busy(), Some((5000, 4)));
        // Without runs.csv: task 2 waits 0–5.
        let tl = Timeline::of(&tasks, &[]);
        assert_eq!(
            tl.steps[1],
            Step {
                t: 2000,
                busy: 2,
                queue: 2
            }
        );
    }

    #[test]
    fn downsampling_averages_over_equal_intervals() {
        let (tasks, runs) = hand_made();
        let tl = Timeline::of(&tasks, &runs);
        // Few steps: kept as they are.
        let s = tl.sampled(100);
        assert_eq!(s.interval_ms, None);
        assert_eq!(s.points.len(), tl.steps.len());
        // Three intervals of 10 s: busy 2,3,3,3,2,4,4,4,4,4 (per second)
        // then 2×10, then 4×10; waiting 1,0,1,2,3,2,2,2,1,1 then 1, then 0.
        let s = tl.sampled(3);
        assert_eq!(s.interval_ms, Some(10_000));
        let busy: Vec<f64> = s.points.iter().map(|p| p.busy).collect();
        let queue: Vec<f64> = s.points.iter().map(|p| p.queue).collect();
        let qmax: Vec<i64> = s.points.iter().map(|p| p.queue_max).collect();
        assert_eq!(busy, [3.3, 2.0, 4.0]);
        assert_eq!(queue, [1.5, 1.0, 0.0]);
        assert_eq!(qmax, [3, 1, 0]);
        assert_eq!(
            s.points.iter().map(|p| p.t).collect::<Vec<_>>(),
            [0, 10_000, 20_000]
        );
    }

    #[test]
    fn the_default_window_is_around_the_longest_queue_and_fits_the_cap() {
        // 2,000 one-processor tasks, one a minute, each running 90 s on
        // one of 2 processors: a queue builds up until the last submit.
        let tasks: Vec<TaskRow> = (0..2000u64)
            .map(|i| {
                let submit = i as i64 * 60;
                let start = submit + (i as i64) * 30; // waits longer and longer
                TaskRow {
                    task: i + 1,
                    user: (i % 13) as i64,
                    org: 0,
                    machine: Some(0),
                    slot: Some((i % 2) as u32),
                    slots: 1,
                    submit: submit * 1000,
                    start: Some(start * 1000),
                    end: (start + 90) * 1000,
                    completed: true,
                }
            })
            .collect();
        let tl = Timeline::of(&tasks, &[]);
        let (peak, q) = tl.peak_queue().unwrap();
        assert!(q > 100, "{q}");
        let w = default_window(&tl, &tasks, &[], 200).unwrap();
        let n = runs_in(&tasks, &[], w.start, w.start + w.len);
        assert!(n <= 200 && n > 50, "{n} runs in {w:?}");
        assert!(w.start <= peak && peak <= w.start + w.len, "{w:?} around {peak}");
        assert!(LADDER.contains(&(w.len / 1000)), "{w:?}");
        assert!(
            w.why.contains("longest queue") && w.why.contains("at most 200 runs"),
            "{}",
            w.why
        );
        // The same inputs, the same window.
        assert_eq!(default_window(&tl, &tasks, &[], 200), Some(w));
        // A tiny run: the whole of it.
        let (tasks, runs) = hand_made();
        let w = default_window(&Timeline::of(&tasks, &runs), &tasks, &runs, 200).unwrap();
        assert_eq!((w.start, w.len), (0, 30_000));
        assert!(w.why.starts_with("the whole run"), "{}", w.why);
    }

    #[test]
    fn a_gantt_has_a_rectangle_per_run_and_never_overlaps_two() {
        let (tasks, runs) = hand_made();
        let l = gantt_layout(&tasks, &runs, (0, 30_000), GroupBy::User, &[], Some(&[4]), 100);
        // Runs: 1 (2 procs), 2's interrupted run (1), 2 (2), 3 (4).
        assert_eq!((l.runs_in_window, l.runs_drawn), (4, 4));
        assert!(!l.exact_rows);
        assert_eq!(l.bars.len(), 4, "{:?}", l.bars);
        assert_eq!(l.stopped, 1);
        assert_eq!(l.rows, 4.0);
        for (i, x) in l.bars.iter().enumerate() {
            assert!(x.y1 <= 4.0);
            for y in &l.bars[i + 1..] {
                let time = x.x0 < y.x1 && y.x0 < x.x1;
                let rows = x.y0 < y.y1 && y.y0 < x.y1;
                assert!(!(time && rows), "{x:?} overlaps {y:?}");
            }
        }
        // Users ranked by processor-time: 3 (40), 2 (30 + 3), 1 (20).
        let names: Vec<&str> = l.legend.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(names, ["user 3", "user 2", "user 1"]);
        // A window cuts: 8–12 s holds 1 and 2; capped at one bar.
        let l = gantt_layout(
            &tasks,
            &runs,
            (8000, 4000),
            GroupBy::Org,
            &["a".into(), "b".into()],
            Some(&[4]),
            1,
        );
        assert_eq!((l.runs_in_window, l.runs_drawn, l.bars.len()), (2, 1, 1));
        assert_eq!((l.bars[0].x0, l.bars[0].x1), (8.0, 10.0));
        // Organizations ranked over every run in the window: a (task 2, 8
        // processor-seconds), then b (task 1, 4); the bar drawn is b's.
        let names: Vec<&str> = l.legend.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(l.bars[0].group, 1);
        // One-processor runs are drawn on their own processor's row.
        let solo: Vec<TaskRow> = (0..6).map(|i| task(i + 1, 0, 0, Some(i as i64), 10, 1)).collect();
        let l = gantt_layout(&solo, &[], (0, 10_000), GroupBy::User, &[], None, 100);
        assert!(l.exact_rows);
        assert_eq!(
            l.bars.iter().map(|b| b.y0).collect::<Vec<_>>(),
            [1.0, 2.0, 3.0, 0.0, 1.0, 2.0]
        );
        // Twelve users: ten named, two in "other".
        let many: Vec<TaskRow> = (0..12)
            .map(|i| task(i + 1, i as i64, 0, Some(0), 10 + i as i64, 1))
            .collect();
        let l = gantt_layout(&many, &[], (0, 30_000), GroupBy::User, &[], None, 100);
        assert_eq!(l.legend.len(), 11);
        assert_eq!(l.legend[10].0, "other (2 more)");
        assert_eq!(l.bars.iter().filter(|b| b.group == 10).count(), 2);
    }

    #[test]
    fn malformed_lines_are_named_and_skipped() {
        let csv = "task,job,user,org,machine,slot,slots,submit,start,end,wait,response,bsld,outcome,attempts,log_status\n\
                   1,1,5,0,0,0,2,0,1.5,10,1.5,10,1.0,completed,1,1\n\
                   2,1,5,0,0,0,2,0,x,10,,,,completed,1,1\n\
                   3,1,5,0,,,1,4,,4,,0,,rejected,0,\n\
                   4,1,5\n";
        let mut p = LineProblems::new("run/tasks.csv");
        let t = read_tasks(csv.as_bytes(), &mut p);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].start, Some(1500));
        assert_eq!(t[1].start, None);
        let m = p.into_messages();
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].starts_with("run/tasks.csv:3: field `start`: `x`"), "{m:?}");
        assert!(m[1].starts_with("run/tasks.csv:5: field `org`: missing"), "{m:?}");
        // An outcome of no known kind, a started task on no processor.
        let csv = "task,job,user,org,machine,slot,slots,submit,start,end,wait,response,bsld,outcome,attempts,log_status\n\
                   1,1,5,0,0,0,2,0,1,10,1,10,1.0,maybe,1,1\n\
                   2,1,5,0,0,0,0,0,1,10,1,10,1.0,completed,1,1\n";
        let mut p = LineProblems::new("t.csv");
        assert!(read_tasks(csv.as_bytes(), &mut p).is_empty());
        let m = p.into_messages();
        assert!(
            m[0].starts_with("t.csv:2: field `outcome`: `maybe` is none of completed"),
            "{m:?}"
        );
        assert!(
            m[1].starts_with("t.csv:3: field `slots`: 0 for a task that started"),
            "{m:?}"
        );
        // More than the cap: counted.
        let mut bad = String::from("task,attempt,machine,slot,slots,start,stop\n");
        for _ in 0..9 {
            bad.push_str("1,1,0,0,1,5,x\n");
        }
        let mut p = LineProblems::new("runs.csv");
        assert!(read_runs(bad.as_bytes(), &mut p).is_empty());
        let m = p.into_messages();
        assert_eq!(m.len(), MAX_LINE_PROBLEMS + 1);
        assert_eq!(m[MAX_LINE_PROBLEMS], "runs.csv: 4 more malformed line(s) skipped");
        // A header without a needed column.
        let mut p = LineProblems::new("f.csv");
        assert!(read_fairness("time_s,org\n1,0\n".as_bytes(), &mut p).is_empty());
        assert!(p.into_messages()[0].contains("no column `name`, `psi_s2`, `phi_s2`"));
        let mut p = LineProblems::new("f.csv");
        let f = read_fairness(
            "time_s,org,name,psi_s2,phi_s2,phi_minus_psi_s2\n2.5,1,\"a,b\",1e3,,\n".as_bytes(),
            &mut p,
        );
        assert_eq!(
            f,
            [FairnessRow {
                at: 2500,
                org: 1,
                name: "a,b".into(),
                psi: 1000.0,
                phi: None
            }]
        );
    }

    #[test]
    fn times_read_as_the_files_write_them() {
        assert_eq!(parse_ms("12"), Some(12_000));
        assert_eq!(parse_ms("0.5"), Some(500));
        assert_eq!(parse_ms("-3.25"), Some(-3250));
        assert_eq!(parse_ms("1.001"), Some(1001));
        assert_eq!(parse_ms("1000000000000"), Some(MAX_MS));
        for bad in [
            "1000000000000.001",
            "",
            "1.",
            ".5",
            "1.0001",
            "1e3",
            "x",
            "--1",
            "99999999999999999999",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
        assert_eq!(secs(1500), "1.5");
        assert_eq!(secs(-3250), "-3.25");
        assert_eq!(secs(42_000), "42");
        assert_eq!(human(21_600_000), "6 h");
        assert_eq!(human(900_000), "15 min");
        assert_eq!(human(172_800_000), "2 d");
    }
}
