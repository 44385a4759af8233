//! The worker protocol's JSON bodies, one type per request and reply of
//! `docs/protocol.md` ("Worker protocol"), field names exactly as there.
//!
//! Both sides can use them: the worker serializes requests and parses
//! replies, the broker the reverse. Requests refuse unknown fields (the broker
//! answers 400 naming the field); replies tolerate them, so that the
//! broker can add some without breaking older workers.

use serde::{Deserialize, Deserializer, Serialize};

use crate::WireError;

/// A task's id, as the broker numbers them.
pub type TaskId = u64;
/// A worker's id, given by the broker at registration.
pub type WorkerId = u64;

/// `POST /v1/workers`: a worker joins with `slots` processors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub slots: u32,
    pub host: String,
}

/// The longest `host` a worker may give (bytes).
pub const MAX_HOST_LEN: usize = 255;

impl RegisterRequest {
    /// What the broker refuses before anything is logged.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_HOST_LEN).contains(&self.host.len()) || self.host.chars().any(char::is_control) {
            return Err(format!(
                "host: 1 to {MAX_HOST_LEN} bytes without control characters"
            ));
        }
        Ok(())
    }
}

/// Reply `201` to [`RegisterRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterReply {
    pub worker: WorkerId,
    /// This worker's own credential: every later call of the worker
    /// (poll, report, drain, leave) carries it as its bearer token. The
    /// organization's worker token only registers; it cannot act for a
    /// worker id.
    pub session: String,
    /// A worker silent for longer than this loses its slots.
    pub lease_ms: u64,
    /// How often the worker should report, even with nothing to say.
    pub heartbeat_ms: u64,
}

/// Reply `200` to `POST /v1/workers/ID/drain` (no body): the worker takes
/// no new task from now on; its free slots have left, the others leave as
/// their runs end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainReply {
    /// Its slots still present (busy ones, which leave with their runs).
    pub slots: u32,
}

/// `POST /v1/workers/ID/poll`: wait up to `wait_ms` (at most 30,000) for work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollRequest {
    pub wait_ms: u64,
    /// The worker knows it drains ([`PollReply::drain`]): the reply waits
    /// for work or kills as usual; otherwise a drain answers at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draining: bool,
}

/// Reply to [`PollRequest`]: possibly empty.
///
/// A worker stops the runs of `kill` before it starts the runs of
/// `assign` (a killed run may free the slot an assignment is for).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PollReply {
    #[serde(default)]
    pub assign: Vec<Assignment>,
    /// Runs the broker stopped since the last poll (cancelled, preempted):
    /// the worker must kill them, as for [`ReportReply::kill`]. Absent
    /// from brokers older than this field: read as empty.
    #[serde(default)]
    pub kill: Vec<RunKey>,
    /// This reply's number, to echo in [`ReportRequest::polled`] once
    /// applied (0 from brokers older than this field).
    #[serde(default)]
    pub seq: u64,
    /// The broker drains this worker (the admin asked, `admin worker
    /// drain`): it takes no new task and leaves once its runs have ended,
    /// as after its own drain. Absent from older brokers: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drain: bool,
}

/// The exit code reported for a run stopped by its time limit
/// ([`Assignment::time_limit_ms`]), as GNU `timeout` exits: the run was
/// killed like a kill by the broker (SIGTERM, SIGKILL after the grace
/// period), and a line in its `stderr` says why.
pub const TIME_LIMIT_EXIT: i32 = 124;

/// The exit code reported for a run in which its cgroup's OOM killer
/// killed a process ([`Assignment::memory_bytes`] enforced by a memory
/// cgroup): 128 + SIGKILL, as a container killed for its memory ends. A
/// line in its `stderr` says why. (Where `RLIMIT_AS` enforces the limit
/// instead, an allocation beyond it fails and the script ends as it
/// handles that.)
pub const MEMORY_LIMIT_EXIT: i32 = 137;

/// One run handed to a worker: attempt `attempt` of task `task`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub task: TaskId,
    pub attempt: u32,
    /// The task's name; empty when the user gave none.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub stage_in: Option<String>,
    #[serde(default)]
    pub stage_out: Option<String>,
    /// The run's wall-time limit: a worker kills a run still going after
    /// this long (SIGTERM, then SIGKILL after its grace period) and reports
    /// exit code 124. Absent: no limit (and from older brokers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// The run's memory limit, in bytes: the `memory.max` (or v1
    /// `memory.limit_in_bytes`) of the run's cgroup on a worker that has
    /// one, for all its processes together (the cgroup's OOM killer ends
    /// the run, exit code 137); else each of its scripts runs with this
    /// address-space limit (`RLIMIT_AS`), so an allocation beyond it fails.
    /// Absent: no limit (and from older brokers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// The local account the broker maps the task's user to: a worker
    /// started with `--run-as-user` runs the task as that account (and
    /// refuses a task without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as: Option<String>,
    /// The task's own per-run limits: the worker gives the run the lower
    /// of each and its own (absent: its own).
    #[serde(default, skip_serializing_if = "crate::api::RunCaps::is_none")]
    pub caps: crate::api::RunCaps,
}

impl Assignment {
    /// The run this assignment starts.
    pub fn key(&self) -> RunKey {
        RunKey {
            task: self.task,
            attempt: self.attempt,
        }
    }
}

/// One run: attempt `attempt` of task `task` (entries of `running` and `kill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunKey {
    pub task: TaskId,
    pub attempt: u32,
}

/// The phases of a run, in order. A phase report says the run *entered* it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The worker creates `WORKDIR/task-ID-ATTEMPT/`.
    Setup,
    /// `sh -c STAGE_IN` (reported even when there is none).
    Input,
    /// `sh -c COMMAND`.
    Exec,
    /// `sh -c STAGE_OUT` (reported even when there is none).
    Output,
}

impl Phase {
    /// All phases, in the order a run goes through them.
    pub const ALL: [Phase; 4] = [Phase::Setup, Phase::Input, Phase::Exec, Phase::Output];
}

/// What a [`Report`] says about its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportEvent {
    /// `"phase": …`: the run entered this phase.
    Phase(Phase),
    /// `"exit_code": N`: the run ended; 0 completes the task, anything else fails it.
    Exit(i32),
    /// `"exit_code": null, "signal": N`: the run died by a signal (a failure).
    Signal(i32),
}

/// One entry of `reports` in [`ReportRequest`].
///
/// On the wire it is `{"task", "attempt", "phase"}`, `{"task", "attempt",
/// "exit_code": N}` or `{"task", "attempt", "exit_code": null, "signal": N}`;
/// anything else is refused when parsing, with a reason naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "RawReport", try_from = "RawReport")]
pub struct Report {
    pub task: TaskId,
    pub attempt: u32,
    pub event: ReportEvent,
    /// With an exit: the limit of the worker's (`fairsched worker
    /// --max-…`) at which it killed the run; `"limit"` on the wire,
    /// absent when none (and from older workers).
    pub limit: Option<LimitKind>,
}

/// A worker's per-run limit that ended a run ([`Report::limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Its processes (`--max-processes`: `pids.max`, or `RLIMIT_NPROC`).
    Processes,
    /// The bytes in its directory (`--max-disk`).
    Disk,
    /// The bytes of its `stdout` and `stderr` (`--max-output`).
    Output,
    /// The open files of one of its processes (`--max-open-files`,
    /// `RLIMIT_NOFILE`): not killed, it failed saying "Too many open files".
    OpenFiles,
}

impl LimitKind {
    /// The words of a failure reason, after "exit N: ".
    pub fn describe(self) -> &'static str {
        match self {
            LimitKind::Processes => {
                "killed at its process limit (its own, submit --max-processes, or its worker's, fairsched worker --max-processes)"
            }
            LimitKind::Disk => {
                "killed at its disk limit in its run directory (its own, submit --max-disk, or its worker's, fairsched worker --max-disk)"
            }
            LimitKind::Output => {
                "killed at its output size limit (its own, submit --max-output, or its worker's, fairsched worker --max-output)"
            }
            LimitKind::OpenFiles => {
                "a process of it reached its open-file limit (its own, submit --max-open-files, or its worker's, fairsched worker --max-open-files)"
            }
        }
    }
}

impl Report {
    pub fn phase(key: RunKey, phase: Phase) -> Report {
        Report {
            task: key.task,
            attempt: key.attempt,
            event: ReportEvent::Phase(phase),
            limit: None,
        }
    }

    pub fn exit(key: RunKey, code: i32) -> Report {
        Report {
            task: key.task,
            attempt: key.attempt,
            event: ReportEvent::Exit(code),
            limit: None,
        }
    }

    pub fn signal(key: RunKey, signal: i32) -> Report {
        Report {
            task: key.task,
            attempt: key.attempt,
            event: ReportEvent::Signal(signal),
            limit: None,
        }
    }

    /// This report, naming the limit that ended the run.
    pub fn with_limit(self, limit: Option<LimitKind>) -> Report {
        Report { limit, ..self }
    }

    pub fn key(&self) -> RunKey {
        RunKey {
            task: self.task,
            attempt: self.attempt,
        }
    }

    /// Whether this report ends its run (an exit code or a signal).
    pub fn is_end(&self) -> bool {
        !matches!(self.event, ReportEvent::Phase(_))
    }
}

/// [`Report`] as it is on the wire. `exit_code` is `None` when absent and
/// `Some(None)` when `null`: the two mean different things.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReport {
    task: TaskId,
    attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<Phase>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    exit_code: Option<Option<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<LimitKind>,
}

impl From<Report> for RawReport {
    fn from(r: Report) -> RawReport {
        let (phase, exit_code, signal) = match r.event {
            ReportEvent::Phase(p) => (Some(p), None, None),
            ReportEvent::Exit(code) => (None, Some(Some(code)), None),
            ReportEvent::Signal(sig) => (None, Some(None), Some(sig)),
        };
        RawReport {
            task: r.task,
            attempt: r.attempt,
            phase,
            exit_code,
            signal,
            limit: r.limit,
        }
    }
}

impl TryFrom<RawReport> for Report {
    type Error = WireError;

    fn try_from(raw: RawReport) -> Result<Report, WireError> {
        let event = match (raw.phase, raw.exit_code, raw.signal) {
            (Some(p), None, None) => ReportEvent::Phase(p),
            (None, Some(Some(code)), None) => ReportEvent::Exit(code),
            (None, Some(None), Some(sig)) => ReportEvent::Signal(sig),
            (Some(_), _, _) => {
                return Err(WireError::Report(
                    "`phase` cannot come with `exit_code` or `signal`",
                ));
            }
            (None, None, _) => return Err(WireError::Report("needs `phase` or `exit_code`")),
            (None, Some(Some(_)), Some(_)) => {
                return Err(WireError::Report("`signal` needs `\"exit_code\": null`"));
            }
            (None, Some(None), None) => {
                return Err(WireError::Report("`\"exit_code\": null` needs `signal`"));
            }
        };
        if raw.limit.is_some() && !matches!(event, ReportEvent::Exit(_)) {
            return Err(WireError::Report("`limit` comes with an `exit_code` only"));
        }
        Ok(Report {
            task: raw.task,
            attempt: raw.attempt,
            event,
            limit: raw.limit,
        })
    }
}

/// `POST /v1/workers/ID/report`: what happened since the last report, and
/// every run the worker still runs after these reports.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportRequest {
    /// Every run the worker holds after these reports: started, waiting
    /// for a slot, or ended with its end not sent yet.
    #[serde(default)]
    pub running: Vec<RunKey>,
    #[serde(default)]
    pub reports: Vec<Report>,
    /// The `seq` of the last poll reply the worker applied before it
    /// wrote `running`. A run handed by that reply or an earlier one and
    /// missing from `running` never reached the worker (a lost reply):
    /// the broker requeues it. Without it, the broker cannot tell and
    /// requeues nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polled: Option<u64>,
    /// The bytes free in the worker's work directory, when below its
    /// `--min-free-disk`: it starts no run until there is more (those it
    /// holds wait). Shown in the broker's status and dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_of_disk: Option<u64>,
}

/// Reply to [`ReportRequest`]: runs the worker must stop.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReportReply {
    #[serde(default)]
    pub kill: Vec<RunKey>,
}

/// The body of every error reply (4xx, 5xx).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    pub error: String,
}

/// A field that may be `null`: `null` reads as the type's default.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// With `#[serde(default)]`: absent → `None`, `null` → `Some(None)`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The most of each output stream a worker sends (its last bytes).
pub const OUTPUT_TAIL: usize = 256 * 1024;

/// One run's output in `POST /v1/workers/ID/outputs`: the end of its `stdout` and `stderr`
/// (their last [`OUTPUT_TAIL`] bytes, as UTF-8 with invalid bytes
/// replaced), sent once its end was acknowledged. `*_bytes`: each file's
/// whole size.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputRequest {
    pub task: TaskId,
    pub attempt: u32,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub stdout_bytes: u64,
    #[serde(default)]
    pub stderr_bytes: u64,
}

impl OutputRequest {
    pub fn key(&self) -> RunKey {
        RunKey {
            task: self.task,
            attempt: self.attempt,
        }
    }
}

/// `POST /v1/workers/ID/outputs`: the outputs of runs whose end the broker
/// has acknowledged, several in one request (stored in one transaction).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsRequest {
    pub outputs: Vec<OutputRequest>,
}

/// The reply to `POST /v1/workers/ID/outputs`: how many were stored, and
/// those refused (each with why; the others are stored all the same).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputsReply {
    pub stored: usize,
    #[serde(default)]
    pub refused: Vec<RefusedOutput>,
}

/// An output the broker did not store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedOutput {
    pub task: TaskId,
    pub attempt: u32,
    pub why: String,
}
