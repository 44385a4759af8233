//! Replay semantics on which trace-driven simulators differ, as options of
//! a run (`docs/semantics.md` sets them against AccaSim's and Batsim's):
//!
//! - [`ProcsFrom`]: which SWF field gives a job's processors, field 5
//!   (allocated, the default) or field 8 (requested, AccaSim's rule): an
//!   option of the trace crate's stream ([`fairsched_trace::StreamOptions`]),
//!   re-exported here;
//! - [`RuntimeLimit`]: whether a job still running at its requested time
//!   (field 9) goes on to its logged runtime (the default) or is killed
//!   there, as Slurm and PBS do.
//!
//! Both live in the driver: the records are read by the trace crate's
//! [`fairsched_trace::JobStream`], and the kills come from an agent of the
//! simulated world ([`Timeouts`])
//! that knows which tasks will overrun because it sees their true runtimes
//! at submission. The core is only told `Event::Kill` at the limit, as it
//! would be by a resource manager; no policy ever sees a runtime.

use crate::agent::{Agent, AgentCtx};
use crate::engine::Arrival;
use crate::errors::SimError;
use fairsched_core::{Action, Event, TaskId, Time};
pub use fairsched_trace::{ProcsFrom, clean_with};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::rc::Rc;
use std::str::FromStr;

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

    #[test]
    fn names_parse_and_print() {
        for r in [RuntimeLimit::Ignore, RuntimeLimit::Kill] {
            assert_eq!(r.to_string().parse::<RuntimeLimit>(), Ok(r));
        }
        assert!(
            "cut"
                .parse::<RuntimeLimit>()
                .unwrap_err()
                .contains("ignore, kill")
        );
        assert_eq!(ProcsFrom::default(), ProcsFrom::Allocated);
        assert_eq!(RuntimeLimit::default(), RuntimeLimit::Ignore);
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
