//! The Diet-ethic client-side dispatcher (spec/diet-ethic.md,
//! "Client-side dispatcher") against a live broker whose order policy is
//! `diet-ethic`.
//!
//! The paper's servers are single-slot machines, each with its own queue,
//! and its client keeps one optional request on each server. The live
//! broker has one pooled machine whose slots are its workers' slots, and
//! one `diet-ethic` queue for it; so this client keeps as many optional
//! requests in flight as the pool has slots (`slots` of `GET /v1/status`,
//! read at setup and again at every poll), never submitting more than
//! [`Options::max`] requests (docs/diet-ethic.md, "Live").
//!
//! Monitoring polls `GET /v1/tasks/ID` for each request in flight: with the
//! few requests a dispatcher keeps in flight that is cheaper than
//! `GET /v1/tasks`, which lists every task the user ever submitted. Past
//! [`LIST_ABOVE`] requests in flight the pages of `GET /v1/tasks` from the
//! oldest request in flight to the newest are read instead.

use crate::{Client, ClientError};
use fairsched_proto::api::{
    MAX_TASKS_PER_SUBMIT, NewTask, StatusReply, SubmitReply, SubmitRequest, TaskOut, TasksReply,
};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Past this many requests in flight, the pages of `GET /v1/tasks` that
/// hold them replace one `GET /v1/tasks/ID` per request.
pub const LIST_ABOVE: usize = 64;

/// Gives up after this long without a successful poll.
const UNREACHABLE_FOR: Duration = Duration::from_secs(30);

/// What a dispatcher does.
#[derive(Clone, Debug)]
pub struct Options {
    /// Mandatory requests: the results needed (n_min).
    pub min: u64,
    /// Requests submitted in all, at most (n_max).
    pub max: u64,
    /// The tentative deadline, from the start.
    pub deadline: Duration,
    /// A name for the requests (`{i}`, `{kind}` replaced).
    pub name: Option<String>,
    /// How often the requests in flight are looked at.
    pub poll: Duration,
    /// Failed mandatory requests submitted again, at most, in all.
    pub resubmits: u64,
    /// The command (`{i}`: the request's index; `{kind}`: mandatory or
    /// optional).
    pub command: String,
}

impl Options {
    /// Refuses what cannot run (the caller's mistake).
    pub fn check(&self) -> Result<(), ClientError> {
        let usage = |m: String| Err(ClientError::Usage(m));
        if self.min == 0 {
            return usage("--min: at least 1 mandatory request".into());
        }
        if self.min > MAX_TASKS_PER_SUBMIT as u64 {
            return usage(format!("--min: at most {MAX_TASKS_PER_SUBMIT} (one submission)"));
        }
        if self.min > self.max {
            return usage(format!(
                "--min {} > --max {}: the mandatory requests count in the total",
                self.min, self.max
            ));
        }
        if self.deadline.is_zero() {
            return usage("--deadline: more than 0".into());
        }
        if self.poll < Duration::from_millis(10) {
            return usage("--poll: at least 10ms".into());
        }
        if self.command.trim().is_empty() {
            return usage("the command after `--` is empty".into());
        }
        Ok(())
    }
}

/// Where a dispatcher says what goes on: remarks, and the status line a
/// terminal shows.
pub trait Show {
    fn note(&self, line: &str);
    /// The status line (called at every poll when [`Show::shows_status`]).
    fn status(&self, _line: &str) {}
    fn shows_status(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Mandatory,
    Optional,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Mandatory => "mandatory",
            Kind::Optional => "optional",
        }
    }
}

/// A request this command submitted, as last seen.
struct Req {
    id: u64,
    /// `{i}`.
    index: u64,
    kind: Kind,
    /// The command's clock (ms since its start) just before the submission.
    sent_ms: i64,
    seen: bool,
    state: String,
    attempts: u32,
    exit_code: Option<i32>,
    signal: Option<i32>,
    /// Start (broker ms) of the run last seen in progress.
    run: Option<i64>,
    end_ms: Option<i64>,
    /// It ended in a run that was not killed: completed, failed, or
    /// cancelled while running.
    final_run_kept: bool,
    cancelled_by_us: bool,
}

impl Req {
    fn ended(&self) -> bool {
        !matches!(self.state.as_str(), "waiting" | "running")
    }
    fn completed(&self) -> bool {
        self.state == "completed"
    }
    /// Ended without a result, and not by this command's cleanup.
    fn lost(&self) -> bool {
        self.ended() && !self.completed() && !self.cancelled_by_us
    }
    fn how(&self) -> String {
        match (self.state.as_str(), self.exit_code, self.signal) {
            ("failed", Some(c), _) => format!("failed (exit {c})"),
            ("failed", None, Some(s)) => format!("failed (signal {s})"),
            ("killed", ..) => "was killed (its worker left too often)".into(),
            ("cancelled", ..) => "was cancelled (not by this command)".into(),
            (s, ..) => s.to_string(),
        }
    }
}

/// A running dispatcher.
pub struct Dispatcher<'a> {
    a: Options,
    client: Client,
    show: &'a dyn Show,
    start: Instant,
    reqs: Vec<Req>,
    by_id: HashMap<u64, usize>,
    in_flight: BTreeSet<u64>,
    /// The broker's clock at the command's start (an estimate from the
    /// submissions: at most their latency late).
    offset: Option<i64>,
    slots: u64,
    /// Requests submitted for the first time (resubmissions excluded): at
    /// most `--max`.
    firsts: u64,
    resubmitted: u64,
    /// Lost mandatory requests to submit again (set before the
    /// submission, cleared once it succeeded: a failed one is retried at
    /// the next poll).
    owed: u64,
    next_index: u64,
    server_ms: i64,
    optional_lost_noted: bool,
}

/// How the monitoring loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Done,
    /// Before the deadline: every request ended and `--max` were
    /// submitted, so nothing was left to do.
    NothingLeft,
    Interrupted,
}

impl<'a> Dispatcher<'a> {
    /// A dispatcher of `a` through `client`; nothing is submitted yet.
    pub fn new(a: Options, client: Client, show: &'a dyn Show) -> Dispatcher<'a> {
        Dispatcher {
            a,
            client,
            show,
            start: Instant::now(),
            reqs: Vec::new(),
            by_id: HashMap::new(),
            in_flight: BTreeSet::new(),
            offset: None,
            slots: 0,
            firsts: 0,
            resubmitted: 0,
            owed: 0,
            next_index: 0,
            server_ms: 0,
            optional_lost_noted: false,
        }
    }

    /// Whether any request was submitted.
    pub fn submitted_any(&self) -> bool {
        !self.reqs.is_empty()
    }

    /// Milliseconds since the command's start.
    fn local_ms(&self) -> i64 {
        self.start.elapsed().as_millis() as i64
    }

    /// The broker's clock now (estimated).
    fn broker_now(&self) -> i64 {
        self.offset.unwrap_or(0) + self.local_ms()
    }

    fn note(&self, msg: impl AsRef<str>) {
        self.show.note(msg.as_ref());
    }

    /// Submits requests of these kinds, in this order.
    fn submit(&mut self, kinds: &[Kind]) -> Result<(), ClientError> {
        for chunk in kinds.chunks(MAX_TASKS_PER_SUBMIT) {
            let first = self.next_index;
            let tasks: Vec<NewTask> = chunk
                .iter()
                .enumerate()
                .map(|(k, &kind)| {
                    let i = (first + k as u64).to_string();
                    let sub = |s: &str| s.replace("{i}", &i).replace("{kind}", kind.name());
                    NewTask {
                        command: sub(&self.a.command),
                        name: self.a.name.as_deref().map(sub),
                        optional: kind == Kind::Optional,
                        ..NewTask::default()
                    }
                })
                .collect();
            let sent_ms = self.local_ms();
            let r: SubmitReply = self.client.submit(&SubmitRequest {
                tasks,
                ..SubmitRequest::default()
            })?;
            if r.ids.len() != chunk.len() {
                return Err(ClientError::Malformed {
                    method: "POST".into(),
                    path: "/v1/tasks".into(),
                    why: format!("{} ids for {} tasks", r.ids.len(), chunk.len()),
                });
            }
            for (k, (&kind, id)) in chunk.iter().zip(r.ids).enumerate() {
                self.by_id.insert(id, self.reqs.len());
                self.in_flight.insert(id);
                self.reqs.push(Req {
                    id,
                    index: first + k as u64,
                    kind,
                    sent_ms,
                    seen: false,
                    state: "waiting".into(),
                    attempts: 0,
                    exit_code: None,
                    signal: None,
                    run: None,
                    end_ms: None,
                    final_run_kept: false,
                    cancelled_by_us: false,
                });
            }
            self.next_index += chunk.len() as u64;
        }
        Ok(())
    }

    fn refresh_slots(&mut self) -> Result<(), ClientError> {
        let s: StatusReply = self.client.call("GET", "/v1/status", None::<&()>)?;
        self.slots = s.slots;
        Ok(())
    }

    fn count(&self, kind: Kind, f: impl Fn(&Req) -> bool) -> u64 {
        self.reqs.iter().filter(|r| r.kind == kind && f(r)).count() as u64
    }

    fn in_flight_of(&self, kind: Kind) -> u64 {
        self.count(kind, |r| !r.ended())
    }

    /// Optional requests to submit now: up to one per slot in flight,
    /// while fewer than `--max` requests have been submitted.
    fn optional_wanted(&self) -> usize {
        let room = self.slots.saturating_sub(self.in_flight_of(Kind::Optional));
        room.min(self.a.max - self.firsts) as usize
    }

    fn top_up(&mut self) -> Result<(), ClientError> {
        let n = self.optional_wanted();
        if n > 0 {
            self.submit(&vec![Kind::Optional; n])?;
            self.firsts += n as u64;
        }
        Ok(())
    }

    /// Setup, then monitoring until the mandatory requests are done and the
    /// deadline has passed, or `stop` is set (a signal).
    pub fn run(&mut self, stop: &AtomicBool) -> Result<Ending, ClientError> {
        self.refresh_slots()?;
        let min = self.a.min;
        self.submit(&vec![Kind::Mandatory; min as usize])?;
        self.firsts = min;
        self.check_policy();
        if stop.load(Ordering::SeqCst) {
            return Ok(Ending::Interrupted);
        }
        self.top_up()?;
        let deadline = self.start + self.a.deadline;
        let mut last_ok = Instant::now();
        let mut failing = false;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(Ending::Interrupted);
            }
            let polled_at = Instant::now();
            match self.step() {
                Ok(()) => {
                    if failing {
                        self.note("fairsched optional: the broker answers again");
                    }
                    failing = false;
                    last_ok = polled_at;
                }
                Err(e) => {
                    if polled_at.duration_since(last_ok) > UNREACHABLE_FOR {
                        return Err(ClientError::File(format!(
                            "no answer from the broker for {} s: {e}",
                            UNREACHABLE_FOR.as_secs()
                        )));
                    }
                    if !failing {
                        self.note(format!("fairsched optional: {e} (trying again every poll)"));
                    }
                    failing = true;
                }
            }
            self.show_progress();
            let completed = self.count(Kind::Mandatory, Req::completed);
            let alive = self.in_flight_of(Kind::Mandatory) + self.owed;
            let settled = completed >= min || completed + alive < min;
            let now = Instant::now();
            if settled && now >= deadline {
                return Ok(Ending::Done);
            }
            if self.nothing_left() {
                // Waiting for the deadline would change nothing.
                return Ok(Ending::NothingLeft);
            }
            let mut wake = polled_at + self.a.poll;
            if settled && deadline > now {
                wake = wake.min(deadline);
            }
            while !stop.load(Ordering::SeqCst) {
                let now = Instant::now();
                if now >= wake {
                    break;
                }
                std::thread::sleep((wake - now).min(Duration::from_millis(50)));
            }
        }
    }

    /// Nothing is in flight or owed and no request may be submitted any
    /// more (`--max` reached): the outcome is settled, whatever the time.
    fn nothing_left(&self) -> bool {
        self.in_flight.is_empty() && self.owed == 0 && self.firsts >= self.a.max
    }

    /// Warns when the broker does not run the `diet-ethic` order.
    fn check_policy(&self) {
        let Some(first) = self.reqs.first() else { return };
        if let Some(order) = self.client.not_diet_ethic(first.id) {
            self.note(format!(
                "fairsched optional: warning: the broker's order policy is `{order}`, not `diet-ethic`: \
                 it does not run mandatory requests first"
            ));
        }
    }

    /// One poll: the states of the requests in flight, what ended, the
    /// pool's slots, and the requests to submit.
    fn step(&mut self) -> Result<(), ClientError> {
        let ids: Vec<u64> = self.in_flight.iter().copied().collect();
        let got: Vec<TaskOut> = if ids.len() <= LIST_ABOVE {
            ids.iter()
                .map(|id| self.client.call("GET", &format!("/v1/tasks/{id}"), None::<&()>))
                .collect::<Result<_, ClientError>>()?
        } else {
            // The pages from the oldest request in flight to the newest.
            let (from, to) = (ids[0], ids[ids.len() - 1]);
            let r: TasksReply = self.client.tasks_between(from, to)?;
            r.tasks
                .into_iter()
                .filter(|t| self.in_flight.contains(&t.id))
                .collect()
        };
        let mut ended = Vec::new();
        for t in got {
            if let Some(k) = self.observe(t) {
                ended.push(k);
            }
        }
        // Lost mandatory requests are submitted again (before any optional one).
        let owed_before = self.owed;
        let mut again = 0;
        for k in ended {
            let r = &self.reqs[k];
            if !r.lost() {
                continue;
            }
            let what = format!(
                "{} request {} (task {}) {}",
                r.kind.name(),
                r.index,
                r.id,
                r.how()
            );
            match r.kind {
                Kind::Mandatory if self.resubmitted + owed_before + again < self.a.resubmits => {
                    again += 1;
                    self.note(format!(
                        "fairsched optional: {what}: submitting it again as request {}",
                        self.next_index + owed_before + again - 1
                    ));
                }
                Kind::Mandatory => self.note(format!(
                    "fairsched optional: {what}: not submitted again (--resubmits {} used up)",
                    self.a.resubmits
                )),
                Kind::Optional if !self.optional_lost_noted => {
                    self.optional_lost_noted = true;
                    self.note(format!(
                        "fairsched optional: {what} (further lost optional requests are only counted)"
                    ));
                }
                Kind::Optional => {}
            }
        }
        self.owed += again;
        if self.owed > 0 {
            self.submit(&vec![Kind::Mandatory; self.owed as usize])?;
            self.resubmitted += self.owed;
            self.owed = 0;
        }
        self.refresh_slots()?;
        self.top_up()
    }

    /// Records what the broker says of a request; its index in `reqs` if
    /// it has just ended.
    fn observe(&mut self, t: TaskOut) -> Option<usize> {
        let now_b = self.broker_now();
        let &k = self.by_id.get(&t.id)?;
        let r = &mut self.reqs[k];
        if r.ended() {
            return None;
        }
        if !r.seen {
            r.seen = true;
            let off = t.submit_ms - r.sent_ms;
            self.offset = Some(self.offset.map_or(off, |o| o.min(off)));
        }
        // A run seen in progress that is no longer the task's run was killed
        // (the queue requeued it): counted up to its restart or now.
        if let Some(s0) = r.run
            && t.start_ms != Some(s0)
        {
            let until = t.start_ms.map_or(now_b, |s| s.min(now_b));
            self.server_ms += (until - s0).max(0);
            r.run = None;
        }
        let ended = !matches!(t.state.as_str(), "waiting" | "running");
        match t.state.as_str() {
            "running" => r.run = t.start_ms,
            "waiting" => r.run = None,
            state => {
                // The run it ended in, if it ended running.
                if let (Some(s), Some(e)) = (t.start_ms, t.end_ms) {
                    let in_run = match state {
                        "completed" | "failed" => true,
                        _ => r.run == Some(s) || t.attempts > r.attempts,
                    };
                    if in_run {
                        self.server_ms += (e - s).max(0);
                    }
                    r.final_run_kept = in_run && state != "killed";
                }
                r.run = None;
                r.end_ms = t.end_ms;
                self.in_flight.remove(&t.id);
            }
        }
        r.attempts = t.attempts;
        r.exit_code = t.exit_code;
        r.signal = t.signal;
        r.state = t.state;
        ended.then_some(k)
    }

    /// Cancels every request not ended; the ids that could not be.
    pub fn cleanup(&mut self) -> Vec<u64> {
        let mut left = Vec::new();
        let ids: Vec<u64> = self.in_flight.iter().copied().collect();
        for id in ids {
            let path = format!("/v1/tasks/{id}/cancel");
            match self.client.call::<TaskOut>("POST", &path, None::<&()>) {
                Ok(t) => {
                    let ours = t.state == "cancelled";
                    if let Some(k) = self.observe(t)
                        && ours
                    {
                        self.reqs[k].cancelled_by_us = true;
                    }
                }
                Err(e) => {
                    // Most likely it has just ended (409): its final state.
                    match self
                        .client
                        .call::<TaskOut>("GET", &format!("/v1/tasks/{id}"), None::<&()>)
                    {
                        Ok(t) if !matches!(t.state.as_str(), "waiting" | "running") => {
                            self.observe(t);
                        }
                        _ => {
                            self.note(format!("fairsched optional: cannot cancel task {id}: {e}"));
                            left.push(id);
                        }
                    }
                }
            }
        }
        left
    }

    fn show_progress(&self) {
        if !self.show.shows_status() {
            return;
        }
        let opt_running = self.count(Kind::Optional, |r| r.state == "running");
        self.show.status(&format!(
            "{:.1}/{}s  mandatory {}/{}  optional {} done, {} running, {} waiting  {}/{} submitted",
            self.start.elapsed().as_secs_f64(),
            self.a.deadline.as_secs_f64(),
            self.count(Kind::Mandatory, Req::completed),
            self.a.min,
            self.count(Kind::Optional, Req::completed),
            opt_running,
            self.in_flight_of(Kind::Optional) - opt_running,
            self.firsts,
            self.a.max,
        ));
    }

    /// What it did; `interrupted` and `early` as [`Ending`] says.
    pub fn summary(&self, interrupted: bool, early: bool) -> Summary {
        let secs = |ms: i64| ms as f64 / 1000.0;
        let completed = self.count(Kind::Mandatory, Req::completed);
        let last = (completed >= self.a.min)
            .then(|| {
                self.reqs
                    .iter()
                    .filter(|r| r.kind == Kind::Mandatory && r.completed())
                    .filter_map(|r| r.end_ms)
                    .max()
            })
            .flatten()
            .zip(self.offset)
            .map(|(e, o)| e - o);
        let deadline_ms = self.a.deadline.as_millis() as i64;
        Summary {
            happy: last.is_some_and(|l| l <= deadline_ms),
            deadline_s: secs(deadline_ms),
            elapsed_s: secs(self.local_ms()),
            interrupted,
            ended_before_deadline: early,
            mandatory: MandatorySummary {
                wanted: self.a.min,
                submitted: self.count(Kind::Mandatory, |_| true),
                completed,
                last_completed_s: last.map(secs),
                lost: self.count(Kind::Mandatory, Req::lost),
                resubmitted: self.resubmitted,
            },
            optional: OptionalSummary {
                submitted: self.count(Kind::Optional, |_| true),
                completed: self.count(Kind::Optional, Req::completed),
                lost: self.count(Kind::Optional, Req::lost),
            },
            max: self.a.max,
            cancelled: self.reqs.iter().filter(|r| r.cancelled_by_us).count() as u64,
            killed_runs: self
                .reqs
                .iter()
                .map(|r| u64::from(r.attempts).saturating_sub(u64::from(r.final_run_kept)))
                .sum(),
            server_time_s: secs(self.server_ms),
            slots: self.slots,
        }
    }
}

/// What a dispatcher did (`fairsched optional --json`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// All mandatory requests completed by the deadline.
    pub happy: bool,
    pub deadline_s: f64,
    pub elapsed_s: f64,
    pub interrupted: bool,
    /// It stopped before the deadline had passed: every request had ended
    /// and `--max` were submitted (nothing was left to run).
    pub ended_before_deadline: bool,
    pub mandatory: MandatorySummary,
    pub optional: OptionalSummary,
    pub max: u64,
    /// Requests this command cancelled at the end (or on a signal).
    pub cancelled: u64,
    /// Runs killed: by the queue for a mandatory request (they run again),
    /// or with their worker.
    pub killed_runs: u64,
    pub server_time_s: f64,
    /// The pool's slots at the last look.
    pub slots: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MandatorySummary {
    pub wanted: u64,
    pub submitted: u64,
    pub completed: u64,
    /// When the last of the `wanted` completed, from the command's start.
    pub last_completed_s: Option<f64>,
    /// Failed or killed (not by this command).
    pub lost: u64,
    pub resubmitted: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct OptionalSummary {
    pub submitted: u64,
    pub completed: u64,
    pub lost: u64,
}

impl Summary {
    /// The summary as the command line prints it.
    pub fn text(&self) -> String {
        let s = self;
        let mut out = String::new();
        let mut sayln = |l: String| {
            out.push_str(&l);
            out.push('\n');
        };
        let m = &s.mandatory;
        let verdict = match m.last_completed_s {
            Some(l) if s.happy => format!(
                "the last at {l:.2} s, by the deadline ({} s): happy",
                s.deadline_s
            ),
            Some(l) => format!(
                "the last at {l:.2} s, after the deadline ({} s): not happy",
                s.deadline_s
            ),
            None => format!(
                "{} never completed: not happy",
                m.wanted - m.completed.min(m.wanted)
            ),
        };
        sayln(format!(
            "mandatory    {}/{} completed, {verdict}",
            m.completed, m.wanted
        ));
        if m.lost > 0 {
            sayln(format!(
                "             {} failed or killed, {} submitted again",
                m.lost, m.resubmitted
            ));
        }
        let o = &s.optional;
        sayln(format!(
            "optional     {} completed of {} submitted{}",
            o.completed,
            o.submitted,
            if o.lost > 0 {
                format!(" ({} failed or killed)", o.lost)
            } else {
                String::new()
            }
        ));
        let again = if m.resubmitted > 0 {
            format!(", and {} resubmitted", m.resubmitted)
        } else {
            String::new()
        };
        sayln(format!(
            "requests     {} submitted ({} of --max {}{again}), {} cancelled at the end, {} run(s) killed",
            m.submitted + o.submitted,
            m.submitted + o.submitted - m.resubmitted,
            s.max,
            s.cancelled,
            s.killed_runs
        ));
        sayln(format!(
            "server time  {:.2} s (every run, killed and cancelled ones included); {} slots; {:.2} s elapsed{}",
            s.server_time_s,
            s.slots,
            s.elapsed_s,
            if s.interrupted { " (interrupted)" } else { "" }
        ));
        if s.ended_before_deadline {
            sayln(format!(
                "ended        before the deadline ({} s had not passed): every request had ended and --max {} were submitted, so nothing was left to run",
                s.deadline_s, s.max
            ));
        }
        out
    }
}
