//! Client agents: the users' side of a simulated platform.
//!
//! A workflow engine releases tasks as their inputs complete and resubmits
//! failures; a Diet-ethic client submits a new optional request to a server
//! when one completes and cancels what is left at its deadline; a legacy
//! client sleeps until its deadline. None of that is a scheduling policy:
//! it is an [`Agent`] of the simulation. Agents see the core's actions as
//! they happen (starts, stops and ends, with their machine) and wake-ups
//! they asked for, and answer with submissions, cancellations, other
//! outside events and wake-ups, all in the engine's `(time, class, seq)`
//! order. Arrivals from a log are one such agent ([`Trace`]).
//!
//! An agent is part of the simulated world, not of the scheduler: it may
//! know the true runtimes of the work it creates (it hands them to the
//! engine with each [`Arrival`]); the core still sees none of them.

use crate::engine::{Arrival, Deliver, World};
use crate::errors::SimError;
use fairsched_core::{Action, Event, TaskId, Time};
use std::iter::Peekable;

/// A client of the simulated platform.
pub trait Agent {
    /// Called once before the run, at time zero: submit, or ask to wake.
    fn start(&mut self, _ctx: &mut AgentCtx) -> Result<(), SimError> {
        Ok(())
    }
    /// A wake-up this agent asked for with [`AgentCtx::wake_at`]. What it
    /// does now takes the wake-up's place in the instant's order.
    fn on_wake(&mut self, _token: u64, _ctx: &mut AgentCtx) -> Result<(), SimError> {
        Ok(())
    }
    /// An action of the core, as it happens (every task's, not only this
    /// agent's). What it does in answer reaches the core in a step of its
    /// own at the same instant.
    fn on_action(&mut self, _action: &Action, _ctx: &mut AgentCtx) -> Result<(), SimError> {
        Ok(())
    }
    /// False for agents that never look at actions (then `on_action` is
    /// not called: a trace replay pays nothing per action).
    fn watches_actions(&self) -> bool {
        true
    }
    /// For an agent that streams work (a trace): when it next wants to
    /// act, if ever. Asked after each of its calls and kept by the engine
    /// instead of a wake-up in the heap; it then acts at that instant right
    /// after the completions, before other agents' wake-ups (where arrivals
    /// always come). Must move forward: the same or an earlier instant
    /// again is an error. Agents with few, scattered wake-ups use
    /// [`AgentCtx::wake_at`] instead.
    fn next_poll(&mut self) -> Result<Option<Time>, SimError> {
        Ok(None)
    }
    /// Called at the instant [`Agent::next_poll`] gave.
    fn on_poll(&mut self, _ctx: &mut AgentCtx) -> Result<(), SimError> {
        Ok(())
    }
}

/// A borrowed agent is an agent: the caller keeps it, to read what it
/// gathered once the run is over. Every method is forwarded.
impl<A: Agent + ?Sized> Agent for &mut A {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        (**self).start(ctx)
    }
    fn on_wake(&mut self, token: u64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        (**self).on_wake(token, ctx)
    }
    fn on_action(&mut self, action: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        (**self).on_action(action, ctx)
    }
    fn watches_actions(&self) -> bool {
        (**self).watches_actions()
    }
    fn next_poll(&mut self) -> Result<Option<Time>, SimError> {
        (**self).next_poll()
    }
    fn on_poll(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        (**self).on_poll(ctx)
    }
}

/// An agent's handle on the simulation during a call. What it asks for
/// goes straight into the engine's world; the first error (a duplicate id,
/// a submission dated in the past) ends the run when the call returns.
pub struct AgentCtx<'a> {
    w: &'a mut World,
    agent: usize,
    deliver: Deliver,
    error: Option<SimError>,
}

impl<'a> AgentCtx<'a> {
    pub(crate) fn new(w: &'a mut World, agent: usize, deliver: Deliver) -> Self {
        AgentCtx {
            w,
            agent,
            deliver,
            error: None,
        }
    }
    /// The first error of the call, if any.
    pub(crate) fn finish(self) -> Result<(), SimError> {
        self.error.map_or(Ok(()), Err)
    }
    fn keep(&mut self, r: Result<(), SimError>) {
        if let Err(e) = r
            && self.error.is_none()
        {
            self.error = Some(e);
        }
    }
    /// The current instant.
    pub fn now(&self) -> Time {
        self.w.clock
    }
    /// Machines of the platform (`MachineId(0..machines)`): where a task
    /// may be sent with [`fairsched_core::TaskSpec::on`].
    pub fn machines(&self) -> usize {
        self.w.machines
    }
    /// Submits a task now under a new id, which it returns: never used
    /// before in the run, whatever other agents do (`a.spec.id` is
    /// ignored; `a.submit` must be [`AgentCtx::now`]). Agents that create
    /// work use this.
    pub fn submit_new(&mut self, mut a: Arrival) -> TaskId {
        a.spec.id = self.w.fresh_id();
        let id = a.spec.id;
        let r = self.w.submit(a, true, self.deliver);
        self.keep(r);
        id
    }
    /// Submits a task now under the id it carries (a replay that numbers
    /// its own tasks). The id must not be live, nor one the engine handed
    /// out ([`crate::Simulation::fresh_ids_from`] sets where those start):
    /// otherwise the run fails with [`SimError::DuplicateTask`].
    pub fn submit(&mut self, a: Arrival) {
        let r = self.w.submit(a, false, self.deliver);
        self.keep(r);
    }
    /// Withdraws a waiting or running task.
    pub fn cancel(&mut self, task: TaskId) {
        self.w.deliver(Event::Cancel { task }, self.deliver);
    }
    /// Reports an outside event: `Cancel`, `Kill`, `Requeue`, `Fail`, `SetPriority`,
    /// `SlotJoin`, `SlotLeave` or `SlotDrain`. (Submissions go through
    /// [`AgentCtx::submit_new`]; completions, phases and timers are the
    /// engine's and the Control's, and are refused.)
    pub fn send(&mut self, ev: Event) -> Result<(), SimError> {
        match ev {
            Event::Cancel { .. }
            | Event::Kill { .. }
            | Event::Requeue { .. }
            | Event::Fail { .. }
            | Event::SetPriority { .. }
            | Event::SlotJoin { .. }
            | Event::SlotLeave { .. }
            | Event::SlotDrain { .. } => {
                self.w.deliver(ev, self.deliver);
                Ok(())
            }
            other => Err(SimError::Agent(format!("an agent may not send {other:?}"))),
        }
    }
    /// Wake this agent at `at` (now, if `at` is past) with `token`.
    pub fn wake_at(&mut self, at: Time, token: u64) {
        self.w.wake(self.agent, at, token);
    }
}

/// Arrivals in non-decreasing submit order (a workload log, a generated
/// workload), streamed: polled ([`Agent::next_poll`]), memory independent
/// of the length of the log.
pub struct Trace<I: Iterator<Item = Result<Arrival, SimError>>> {
    arrivals: Peekable<I>,
    fresh: bool,
    /// The last instant it submitted at.
    last: Option<Time>,
}

impl<I: Iterator<Item = Result<Arrival, SimError>>> Trace<I> {
    /// Submits every arrival under its own id.
    pub fn new(arrivals: impl IntoIterator<IntoIter = I>) -> Self {
        Trace {
            arrivals: arrivals.into_iter().peekable(),
            fresh: false,
            last: None,
        }
    }
    /// Submits every arrival under a new id ([`AgentCtx::submit_new`]):
    /// 1, 2, … in stream order when the trace is alone, and never an id
    /// another agent has, whatever they submit meanwhile.
    pub fn with_fresh_ids(arrivals: impl IntoIterator<IntoIter = I>) -> Self {
        Trace {
            fresh: true,
            ..Trace::new(arrivals)
        }
    }
}

impl<I: Iterator<Item = Result<Arrival, SimError>>> Agent for Trace<I> {
    fn watches_actions(&self) -> bool {
        false
    }
    fn next_poll(&mut self) -> Result<Option<Time>, SimError> {
        match self.arrivals.peek() {
            None => Ok(None),
            Some(Ok(a)) => match self.last {
                Some(last) if a.submit <= last => Err(SimError::Unsorted {
                    task: a.spec.id,
                    submit: a.submit,
                    now: last,
                }),
                _ => Ok(Some(a.submit)),
            },
            Some(Err(_)) => Err(self
                .arrivals
                .next()
                .and_then(Result::err)
                .expect("peeked an error")),
        }
    }
    fn on_poll(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let now = ctx.now();
        self.last = Some(now);
        while let Some(Ok(a)) = self.arrivals.peek() {
            if a.submit != now {
                break;
            }
            let Some(Ok(a)) = self.arrivals.next() else {
                unreachable!("peeked an arrival")
            };
            if self.fresh {
                ctx.submit_new(a);
            } else {
                ctx.submit(a);
            }
        }
        Ok(())
    }
}
