//! Replay semantics on which trace-driven simulators differ, as options of
//! a run (`docs/semantics.md` sets them against AccaSim's and Batsim's):
//!
//! - [`ProcsFrom`]: which SWF field gives a job's processors, field 5
//!   (allocated, the default) or field 8 (requested, AccaSim's rule);
//! - [`RuntimeLimit`]: whether a job still running at its requested time
//!   (field 9) goes on to its logged runtime (the default) or is killed
//!   there, as Slurm and PBS do.
//!
//! Both live in the driver: the records are read here ([`RecordJobs`]),
//! and the kills come from an agent of the simulated world ([`Timeouts`])
//! that knows which tasks will overrun because it sees their true runtimes
//! at submission. The core is only told `Event::Kill` at the limit, as it
//! would be by a resource manager; no policy ever sees a runtime.

use crate::agent::{Agent, AgentCtx};
use crate::engine::Arrival;
use crate::errors::SimError;
use fairsched_core::{Action, Event, TaskId, Time};
use fairsched_trace::{
    FileSource, FilterCounts, FilterOptions, Job, ReadOptions, SwfJob, SwfReader, TraceError, clean,
};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;
use std::str::FromStr;

/// Which SWF field gives a job's processor count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcsFrom {
    /// Field 5 (allocated processors) when known (> 0), else field 8
    /// (requested processors): what the machine gave the job. The default.
    #[default]
    Allocated,
    /// Field 8 (requested processors) when known (> 0), else field 5: what
    /// the user asked for, as AccaSim reads SWF logs.
    Requested,
}

impl ProcsFrom {
    pub const NAMES: &'static str = "allocated, requested";

    pub fn name(self) -> &'static str {
        match self {
            ProcsFrom::Allocated => "allocated",
            ProcsFrom::Requested => "requested",
        }
    }
}

impl FromStr for ProcsFrom {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "allocated" => Ok(ProcsFrom::Allocated),
            "requested" => Ok(ProcsFrom::Requested),
            _ => Err(format!("{s:?}: expected one of {}", ProcsFrom::NAMES)),
        }
    }
}

impl fmt::Display for ProcsFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens to a job still running when its requested time (SWF field
/// 9, the user's estimate) has passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeLimit {
    /// It runs its logged runtime (field 4) whatever it requested. The
    /// default.
    #[default]
    Ignore,
    /// It is killed at `start + requested time` (outcome `killed`), as
    /// Slurm and PBS do. Jobs without a requested time are never killed.
    Kill,
}

impl RuntimeLimit {
    pub const NAMES: &'static str = "ignore, kill";

    pub fn name(self) -> &'static str {
        match self {
            RuntimeLimit::Ignore => "ignore",
            RuntimeLimit::Kill => "kill",
        }
    }
}

impl FromStr for RuntimeLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ignore" => Ok(RuntimeLimit::Ignore),
            "kill" => Ok(RuntimeLimit::Kill),
            _ => Err(format!("{s:?}: expected one of {}", RuntimeLimit::NAMES)),
        }
    }
}

impl fmt::Display for RuntimeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Cleans one record with its processors taken by `from`. Under
/// [`ProcsFrom::Allocated`] this is [`fairsched_trace::clean`]. Under
/// [`ProcsFrom::Requested`] field 8 replaces field 5 when it is known, so
/// the same records are kept or dropped for the same reasons (a record is
/// dropped only when both fields are unknown), and `counts` means the same
/// thing: `procs_from_requested` still counts the records whose field 5 was
/// unknown. `differ` counts the kept jobs whose processors are not field 5.
pub fn clean_with(
    rec: &SwfJob,
    from: ProcsFrom,
    filter: FilterOptions,
    counts: &mut FilterCounts,
    differ: &mut u64,
) -> Option<Job> {
    if from == ProcsFrom::Allocated || rec.requested_procs <= 0 {
        return clean(rec, filter, counts);
    }
    let allocated_known = rec.allocated_procs > 0;
    // `clean` reaches its processor stage only for a positive run time;
    // there it would have counted a fallback to field 8.
    if rec.run_time > 0 && !allocated_known {
        counts.procs_from_requested += 1;
    }
    let job = clean(
        &SwfJob {
            allocated_procs: rec.requested_procs,
            ..*rec
        },
        filter,
        counts,
    )?;
    if allocated_known && u32::try_from(rec.allocated_procs).unwrap_or(u32::MAX) != job.procs {
        *differ += 1;
    }
    Some(job)
}

/// Cleaned jobs in non-decreasing submit order, cleaned by [`clean_with`]:
/// [`fairsched_trace::JobStream`]'s contract (streamed when the scan found
/// the submits in order, loaded and stably sorted otherwise) with the
/// processor field chosen.
pub struct RecordJobs {
    inner: Inner,
    path: PathBuf,
    from: ProcsFrom,
    counts: FilterCounts,
    differ: u64,
    sorted: bool,
    loaded: usize,
}

enum Inner {
    Streaming {
        reader: Box<SwfReader<FileSource>>,
        filter: FilterOptions,
        last: Option<i64>,
        done: bool,
    },
    Sorted(std::vec::IntoIter<Job>),
}

impl RecordJobs {
    /// Reads `reader` (whose scan said whether the submits are `monotone`).
    pub fn new(
        reader: SwfReader<FileSource>,
        from: ProcsFrom,
        filter: FilterOptions,
        monotone: bool,
    ) -> Result<RecordJobs, TraceError> {
        let mut s = RecordJobs {
            path: reader.path().to_path_buf(),
            inner: Inner::Sorted(Vec::new().into_iter()),
            from,
            counts: FilterCounts::default(),
            differ: 0,
            sorted: false,
            loaded: 0,
        };
        if monotone {
            s.inner = Inner::Streaming {
                reader: Box::new(reader),
                filter,
                last: None,
                done: false,
            };
            return Ok(s);
        }
        let mut reader = reader;
        let mut jobs = Vec::new();
        let mut last: Option<i64> = None;
        while let Some(rec) = reader.next_job()? {
            if let Some(job) = clean_with(&rec, from, filter, &mut s.counts, &mut s.differ) {
                match last {
                    Some(l) if job.submit < l => s.counts.non_monotone_submits += 1,
                    _ => last = Some(job.submit),
                }
                jobs.push(job);
            }
        }
        s.counts.bad_lines_skipped = reader.bad_lines_skipped();
        s.sorted = s.counts.non_monotone_submits > 0;
        if s.sorted {
            jobs.sort_by_key(|j| j.submit); // stable
        }
        s.loaded = jobs.len();
        s.inner = Inner::Sorted(jobs.into_iter());
        Ok(s)
    }

    /// A file, opened with the reading options of the run.
    pub fn open(
        path: &std::path::Path,
        from: ProcsFrom,
        filter: FilterOptions,
        lenient: bool,
        monotone: bool,
    ) -> Result<RecordJobs, TraceError> {
        let reader = SwfReader::open_with(path, ReadOptions { lenient })?;
        RecordJobs::new(reader, from, filter, monotone)
    }

    /// The processor rule it reads with.
    pub fn procs_from(&self) -> ProcsFrom {
        self.from
    }
    /// Whether the jobs were loaded and sorted because submits were out of order.
    pub fn sorted(&self) -> bool {
        self.sorted
    }
    /// Jobs held in memory (0 when streaming).
    pub fn loaded_jobs(&self) -> usize {
        self.loaded
    }
    /// Filter counts so far (final once the iterator is exhausted, or at
    /// once when sorted in memory).
    pub fn counts(&self) -> FilterCounts {
        let mut c = self.counts;
        if let Inner::Streaming { reader, .. } = &self.inner {
            c.bad_lines_skipped = reader.bad_lines_skipped();
        }
        c
    }
    /// Kept jobs whose processors are not field 5 (so far).
    pub fn procs_differ(&self) -> u64 {
        self.differ
    }
}

impl Iterator for RecordJobs {
    type Item = Result<Job, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Sorted(jobs) => jobs.next().map(Ok),
            Inner::Streaming {
                reader,
                filter,
                last,
                done,
            } => {
                if *done {
                    return None;
                }
                loop {
                    let rec = match reader.next_job() {
                        Ok(Some(rec)) => rec,
                        Ok(None) => {
                            *done = true;
                            return None;
                        }
                        Err(e) => {
                            *done = true;
                            return Some(Err(e));
                        }
                    };
                    let Some(job) = clean_with(&rec, self.from, *filter, &mut self.counts, &mut self.differ)
                    else {
                        continue;
                    };
                    if let Some(previous) = *last
                        && job.submit < previous
                    {
                        *done = true;
                        return Some(Err(TraceError::Unsorted {
                            path: self.path.clone(),
                            job: job.id,
                            submit: job.submit,
                            previous,
                        }));
                    }
                    *last = Some(job.submit);
                    return Some(Ok(job));
                }
            }
        }
    }
}

/// The tasks that will run past their limit, shared by the arrival stream
/// (which registers them: it sees true runtimes) and [`Timeouts`].
#[derive(Clone, Default)]
pub struct Limits(Rc<RefCell<FxHashMap<TaskId, Limit>>>);

#[derive(Clone, Copy, Debug)]
struct Limit {
    limit: Time,
    /// Start of its current run, if running.
    started: Option<Time>,
}

impl Limits {
    /// Registers `a` if it will run past its requested time (its estimate):
    /// a runtime longer than a known estimate.
    pub fn register(&self, a: &Arrival) {
        if let Some(limit) = a.spec.estimate
            && limit > Time::ZERO
            && a.runtime > limit
        {
            self.0
                .borrow_mut()
                .insert(a.spec.id, Limit { limit, started: None });
        }
    }
    /// Tasks registered and not ended yet.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The resource manager's wall-clock limit: kills each registered task at
/// `start + limit` of its run. It acts as a streaming agent polled at the
/// kill instants, so a kill reaches the core right after the completions of
/// its instant and before the arrivals (when it is added before the trace):
/// for every policy, a kill at T frees its slots exactly as a completion at
/// T would. It watches starts (to set the instant), stops and ends (to
/// forget a run that ended otherwise).
pub struct Timeouts {
    limits: Limits,
    /// `(kill instant, task, start of the run it ends)`, earliest first;
    /// entries of runs that ended otherwise are skipped when due.
    due: BinaryHeap<Reverse<(Time, TaskId, Time)>>,
    killed: Rc<Cell<u64>>,
}

impl Timeouts {
    pub fn new(limits: Limits) -> Timeouts {
        Timeouts {
            limits,
            due: BinaryHeap::new(),
            killed: Rc::default(),
        }
    }
    /// A counter of the kills sent, readable after the run.
    pub fn killed(&self) -> Rc<Cell<u64>> {
        self.killed.clone()
    }
}

impl Agent for Timeouts {
    fn on_action(&mut self, action: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let mut limits = self.limits.0.borrow_mut();
        match action {
            Action::Start { task, .. } => {
                if let Some(l) = limits.get_mut(task) {
                    let now = ctx.now();
                    l.started = Some(now);
                    self.due.push(Reverse((now + l.limit, *task, now)));
                }
            }
            Action::Stop { task, .. } => {
                if let Some(l) = limits.get_mut(task) {
                    l.started = None;
                }
            }
            Action::Ended(rec) => {
                limits.remove(&rec.spec.id);
            }
            _ => {}
        }
        Ok(())
    }
    fn next_poll(&mut self) -> Result<Option<Time>, SimError> {
        Ok(self.due.peek().map(|Reverse((at, _, _))| *at))
    }
    fn on_poll(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let now = ctx.now();
        while let Some(&Reverse((at, task, started))) = self.due.peek() {
            if at > now {
                break;
            }
            self.due.pop();
            let current = self.limits.0.borrow().get(&task).and_then(|l| l.started);
            if current == Some(started) {
                ctx.send(Event::Kill { task })?;
                self.killed.set(self.killed.get() + 1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(line: &str) -> SwfJob {
        let mut r = SwfReader::from_reader("line.swf", line.as_bytes());
        r.next_job().unwrap().unwrap()
    }

    #[test]
    fn names_parse_and_print() {
        for p in [ProcsFrom::Allocated, ProcsFrom::Requested] {
            assert_eq!(p.to_string().parse::<ProcsFrom>(), Ok(p));
        }
        for r in [RuntimeLimit::Ignore, RuntimeLimit::Kill] {
            assert_eq!(r.to_string().parse::<RuntimeLimit>(), Ok(r));
        }
        assert!(
            "alloc"
                .parse::<ProcsFrom>()
                .unwrap_err()
                .contains("allocated, requested")
        );
        assert!(
            "cut"
                .parse::<RuntimeLimit>()
                .unwrap_err()
                .contains("ignore, kill")
        );
        assert_eq!(ProcsFrom::default(), ProcsFrom::Allocated);
        assert_eq!(RuntimeLimit::default(), RuntimeLimit::Ignore);
    }

    /// Real HPC2N-2002 lines: job 338116 was given 2 processors (field 5)
    /// for a request of 1 (field 8); KTH-SP2 job 27313 has neither.
    #[test]
    fn requested_reads_field_8_and_falls_back_to_field_5() {
        let hpc2n = rec(
            "338116 63019254 329080  20952    2   7839 409600    1  21600 409600  1  17   1  -1 -1  1 -1 -1",
        );
        let kth_none = rec(
            "27313 27845375    480      1   -1     -1    -1   -1    600    -1  1  48 225  -1 -1 -1 -1 -1",
        );
        let (opts, mut c, mut differ) = (FilterOptions::default(), FilterCounts::default(), 0);
        let a = clean_with(&hpc2n, ProcsFrom::Allocated, opts, &mut c, &mut differ).unwrap();
        let r = clean_with(&hpc2n, ProcsFrom::Requested, opts, &mut c, &mut differ).unwrap();
        assert_eq!((a.procs, r.procs, differ), (2, 1, 1));
        assert!(clean_with(&kth_none, ProcsFrom::Requested, opts, &mut c, &mut differ).is_none());
        // Field 8 unknown: field 5 is used, and nothing differs.
        let mut no_request = hpc2n;
        no_request.requested_procs = -1;
        let r = clean_with(&no_request, ProcsFrom::Requested, opts, &mut c, &mut differ).unwrap();
        assert_eq!((r.procs, differ), (2, 1));
        // Field 5 unknown: field 8 under both rules, counted as a fallback
        // under both.
        let mut no_alloc = hpc2n;
        no_alloc.allocated_procs = -1;
        let mut ca = FilterCounts::default();
        let mut cr = FilterCounts::default();
        let a = clean_with(&no_alloc, ProcsFrom::Allocated, opts, &mut ca, &mut differ).unwrap();
        let r = clean_with(&no_alloc, ProcsFrom::Requested, opts, &mut cr, &mut differ).unwrap();
        assert_eq!((a.procs, r.procs), (1, 1));
        assert_eq!(ca, cr);
        assert_eq!(ca.procs_from_requested, 1);
    }

    use crate::config::{RunConfig, TraceInput};
    use fairsched_core::{EndRecord, Observer, Outcome, TaskMeta};

    /// Two real HPC2N-2002-2.2 lines (jobs 338116 and 338117): each was
    /// given 2 processors (field 5) for a request of 1 (field 8).
    const HPC2N_REQUESTED_1: &[u8] = b"; MaxProcs: 2
338116 63019254 329080  20952    2   7839 409600    1  21600 409600  1  17   1  -1 -1  1 -1 -1
338117 63019314 329031  20941    2   7839 409600    1  21600 409600  1  17   1  -1 -1  1 -1 -1
";

    /// The first two real HPC2N-2002-2.2 lines (jobs 11 and 12): job 11 ran
    /// 43,306 s on 32 processors for a request of 43,200 s; job 12 (40
    /// processors, 553 s of 43,200) waits for it on 40 processors.
    const HPC2N_OVERRUN: &[u8] = b"; MaxProcs: 40
   11   342072     32  43306   32  43307    -1   32  43200    -1  1   4   1  -1 -1  1 -1 -1
   12   342343      5    553   40 552.21    -1   40  43200    -1  1   4   1  -1 -1  1 -1 -1
";

    /// A task's end: (SWF job, start, end, outcome), seconds.
    type End = (u64, Option<i64>, i64, Outcome);

    #[derive(Default)]
    struct Ends(Vec<End>);

    impl Observer for Ends {
        fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
            let secs = |t: Time| t.millis() / 1000;
            self.0
                .push((meta.job, rec.start().map(secs), secs(rec.end), rec.outcome));
        }
        fn wants_steps(&self) -> bool {
            false
        }
    }

    fn run(
        log: &'static [u8],
        policy: &str,
        from: ProcsFrom,
        limit: RuntimeLimit,
    ) -> (Vec<End>, crate::run::Summary) {
        let mut c = RunConfig::new(
            TraceInput::Bytes {
                name: "hpc2n-lines.swf".into(),
                data: log,
            },
            policy.parse().unwrap(),
        );
        c.procs_from = from;
        c.runtime_limit = limit;
        c.check().unwrap();
        let scan = c.trace.scan(false).unwrap();
        let mut ends = Ends::default();
        let done = c.execute(&scan, &mut ends).unwrap();
        ends.0.sort_by_key(|e| e.0);
        (ends.0, done.summary)
    }

    #[test]
    fn requested_processors_let_the_two_jobs_share_the_machine() {
        for policy in ["fcfs", "easy"] {
            let (ends, s) = run(
                HPC2N_REQUESTED_1,
                policy,
                ProcsFrom::Allocated,
                RuntimeLimit::Ignore,
            );
            assert_eq!(
                ends,
                [
                    (338116, Some(63019254), 63040206, Outcome::Completed),
                    (338117, Some(63040206), 63061147, Outcome::Completed),
                ],
                "{policy}"
            );
            assert_eq!((s.procs_from, s.procs_differ), (ProcsFrom::Allocated, 0));
            let (ends, s) = run(
                HPC2N_REQUESTED_1,
                policy,
                ProcsFrom::Requested,
                RuntimeLimit::Ignore,
            );
            assert_eq!(
                ends,
                [
                    (338116, Some(63019254), 63040206, Outcome::Completed),
                    (338117, Some(63019314), 63040255, Outcome::Completed),
                ],
                "{policy}"
            );
            assert_eq!((s.procs_from, s.procs_differ), (ProcsFrom::Requested, 2));
            assert_eq!(s.filters.kept, 2);
        }
    }

    #[test]
    fn kill_ends_an_overrunning_job_at_its_requested_time() {
        for policy in ["fcfs", "easy", "fifo"] {
            let (ends, s) = run(HPC2N_OVERRUN, policy, ProcsFrom::Allocated, RuntimeLimit::Ignore);
            assert_eq!(
                ends,
                [
                    (11, Some(342072), 342072 + 43306, Outcome::Completed),
                    (12, Some(342072 + 43306), 342072 + 43306 + 553, Outcome::Completed),
                ],
                "{policy}"
            );
            assert_eq!((s.runtime_limit, s.killed_at_limit), (RuntimeLimit::Ignore, 0));
            // Killed at 342,072 + 43,200; job 12 starts at that instant, as
            // after a completion, and (553 s < 43,200 s) completes.
            let (ends, s) = run(HPC2N_OVERRUN, policy, ProcsFrom::Allocated, RuntimeLimit::Kill);
            assert_eq!(
                ends,
                [
                    (11, Some(342072), 342072 + 43200, Outcome::Killed),
                    (12, Some(342072 + 43200), 342072 + 43200 + 553, Outcome::Completed),
                ],
                "{policy}"
            );
            assert_eq!((s.runtime_limit, s.killed_at_limit), (RuntimeLimit::Kill, 1));
            assert_eq!(s.outcomes.get("killed"), Some(&1));
            assert_eq!(s.makespan_s, (342072 + 43200 + 553 - 342072) as f64);
        }
    }

    #[test]
    fn kill_refuses_clairvoyant_policies() {
        let mut c = RunConfig::new(
            TraceInput::Bytes {
                name: "hpc2n-lines.swf".into(),
                data: HPC2N_OVERRUN,
            },
            "rand".parse().unwrap(),
        );
        c.orgs = 2;
        c.check().unwrap();
        c.runtime_limit = RuntimeLimit::Kill;
        let e = c.check().unwrap_err().to_string();
        assert!(
            e.contains("--runtime-limit kill") && e.contains("--policy rand"),
            "{e}"
        );
    }

    /// Job 12's line again, submitted at the instant job 11 is killed.
    const HPC2N_ARRIVAL_AT_KILL: &[u8] = b"; MaxProcs: 40
   11   342072     32  43306   32  43307    -1   32  43200    -1  1   4   1  -1 -1  1 -1 -1
   12   385272      5    553   40 552.21    -1   40  43200    -1  1   4   1  -1 -1  1 -1 -1
";

    #[derive(Default)]
    struct Batches(Vec<(i64, Vec<&'static str>)>);

    impl Observer for Batches {
        fn on_events(&mut self, now: Time, events: &[Event]) {
            let kinds = events
                .iter()
                .map(|e| match e {
                    Event::Submit(_) => "submit",
                    Event::Complete { .. } => "complete",
                    Event::Kill { .. } => "kill",
                    _ => "other",
                })
                .collect();
            self.0.push((now.millis() / 1000, kinds));
        }
        fn wants_events(&self) -> bool {
            true
        }
        fn wants_steps(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_kill_reaches_the_core_before_the_arrivals_of_its_instant() {
        let mut c = RunConfig::new(
            TraceInput::Bytes {
                name: "hpc2n-lines.swf".into(),
                data: HPC2N_ARRIVAL_AT_KILL,
            },
            "fcfs".parse().unwrap(),
        );
        c.runtime_limit = RuntimeLimit::Kill;
        let scan = c.trace.scan(false).unwrap();
        let mut b = Batches::default();
        c.run(&scan, &mut b).unwrap();
        assert_eq!(
            b.0,
            [
                (342072, vec!["submit"]),
                (385272, vec!["kill", "submit"]),
                (385272 + 553, vec!["complete"]),
            ]
        );
    }
}
