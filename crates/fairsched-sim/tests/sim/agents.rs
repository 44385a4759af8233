//! Client agents inside a run: they see the core's actions as they happen,
//! wake when they asked to, and answer with submissions (to a chosen
//! machine if they like), cancellations and other outside events, in the
//! engine's deterministic `(time, class, seq)` order.

use crate::common::{Recorder, arrive, s, scheduler, task};
use fairsched_core::{Action, Event, MachineId, Outcome, Platform, SlotId, TaskId, Time};
use fairsched_sim::{Agent, AgentCtx, Arrival, SimError, Simulation};
use std::sync::{Arc, Mutex};

/// A chain of tasks, each released when the previous one completes (a
/// workflow engine in miniature), resubmitting a failed task once.
struct Chain {
    runtimes: Vec<i64>,
    next: usize,
    mine: Vec<TaskId>,
    retried: bool,
    seen: Arc<Mutex<Vec<(Time, String)>>>,
}

impl Chain {
    fn release(&mut self, ctx: &mut AgentCtx) {
        let Some(&rt) = self.runtimes.get(self.next) else {
            return;
        };
        let a = Arrival::new(task(0), ctx.now(), s(rt)).job(100 + self.next as u64);
        let id = ctx.submit_new(a);
        self.mine.push(id);
    }
}

impl Agent for Chain {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        ctx.wake_at(s(3), 0);
        Ok(())
    }
    fn on_wake(&mut self, _token: u64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        self.release(ctx);
        Ok(())
    }
    fn on_action(&mut self, a: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let what = match a {
            Action::Start { task, machine, .. } => format!("start {task} on {machine}"),
            Action::Stop { task, machine, .. } => format!("stop {task} on {machine}"),
            Action::Ended(r) => format!("ended {} {}", r.spec.id, r.outcome),
            _ => return Ok(()),
        };
        self.seen.lock().unwrap().push((ctx.now(), what));
        if let Action::Ended(r) = a
            && self.mine.contains(&r.spec.id)
        {
            match r.outcome {
                Outcome::Completed => {
                    self.next += 1;
                    self.release(ctx);
                }
                Outcome::Failed if !self.retried => {
                    self.retried = true;
                    self.release(ctx);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[test]
fn an_agent_releases_tasks_as_their_inputs_complete() {
    // One slot shared with a trace task (id 1, 0..20). The chain wakes at 3
    // and submits its first task (id 2, 10 s): it waits for the slot until
    // 20. Its completion at 30 releases the next (id 3, 5 s) at once, at the
    // same instant, in a step of its own; id 3 fails at 33 (an outside
    // event) and is resubmitted once as id 4, which runs 33..38.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let chain = Chain {
        runtimes: vec![10, 5],
        next: 0,
        mine: vec![],
        retried: false,
        seen: seen.clone(),
    };
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(chain);
    sim.schedule(s(33), Event::Fail { task: TaskId(3) });
    let mut rec = Recorder::default();
    let stats = sim.run(vec![Ok(arrive(task(1), 0, 20))], &mut rec).unwrap();
    let spans: Vec<(u64, Option<Time>, Time, Outcome)> = (1..=4)
        .map(|i| {
            let r = rec.end(i);
            (i, r.start(), r.end, r.outcome)
        })
        .collect();
    assert_eq!(
        spans,
        vec![
            (1, Some(s(0)), s(20), Outcome::Completed),
            (2, Some(s(20)), s(30), Outcome::Completed),
            (3, Some(s(30)), s(33), Outcome::Failed),
            (4, Some(s(33)), s(38), Outcome::Completed),
        ]
    );
    assert_eq!(stats.submitted, 4);
    // Job numbers come from the agent, through the engine, to outputs.
    assert_eq!(rec.job_numbers(), vec![1, 100, 101, 101]);
    // The agent saw every start and end, with its machine, as it happened.
    let seen = seen.lock().unwrap();
    assert!(seen.contains(&(s(20), "start 2 on 0".into())), "{seen:?}");
    assert!(seen.contains(&(s(33), "ended 3 failed".into())), "{seen:?}");
    // Steps: 0, 3, 20, 30 (completion), 30 (release), 33 (fail), 33
    // (resubmit), 38.
    assert_eq!(stats.steps, 8);
}

/// Sends one task to each machine, then cancels what is left at its
/// deadline (a legacy client: it sleeps until then).
struct Legacy {
    deadline: Time,
    live: Vec<TaskId>,
}

impl Agent for Legacy {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        for m in 0..ctx.machines() {
            let spec = task(0).on(MachineId(m as u32));
            let id = ctx.submit_new(Arrival::new(spec, ctx.now(), s(10 + 10 * m as i64)));
            self.live.push(id);
        }
        ctx.wake_at(self.deadline, 7);
        Ok(())
    }
    fn on_wake(&mut self, token: u64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        assert_eq!((token, ctx.now()), (7, self.deadline));
        for &t in &self.live {
            ctx.cancel(t);
        }
        Ok(())
    }
    fn on_action(&mut self, a: &Action, _ctx: &mut AgentCtx) -> Result<(), SimError> {
        if let Action::Ended(r) = a {
            self.live.retain(|&t| t != r.spec.id);
        }
        Ok(())
    }
}

#[test]
fn an_agent_sends_to_chosen_machines_and_cancels_at_its_deadline() {
    // Three single-slot machines; the client sends one task to each (10,
    // 20, 30 s) and cancels the rest at 25: tasks on machines 0 and 1 are
    // done by then, the one on machine 2 is cancelled while running.
    let core = scheduler(&Platform::machines(&[1, 1, 1]), "least-loaded", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(Legacy {
        deadline: s(25),
        live: vec![],
    });
    let mut rec = Recorder::default();
    sim.run_agents(&mut rec).unwrap();
    let got: Vec<(u32, Outcome, Time)> = (1..=3)
        .map(|i| {
            let r = rec.end(i);
            (r.machine.unwrap().0, r.outcome, r.end)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, Outcome::Completed, s(10)),
            (1, Outcome::Completed, s(20)),
            (2, Outcome::Cancelled, s(25)),
        ]
    );
    assert_eq!(rec.end(3).busy(), s(25));
}

#[test]
fn the_same_instant_runs_completions_then_agents_then_outside_events() {
    // At t=10: task 1 completes, task 2 arrives (the trace agent), and an
    // outside cancel of task 2 is due. Completion first frees the slot,
    // then the arrival... all in one step, in that order: task 2 is
    // cancelled while waiting (the step's dispatch comes after its events).
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.schedule(s(10), Event::Cancel { task: TaskId(2) });
    let mut rec = Recorder::default();
    let arrivals = vec![Ok(arrive(task(1), 0, 10)), Ok(arrive(task(2), 10, 5))];
    sim.run(arrivals, &mut rec).unwrap();
    let r2 = rec.end(2);
    assert_eq!(
        (r2.outcome, r2.start(), r2.end),
        (Outcome::Cancelled, None, s(10))
    );
    assert_eq!(rec.end(1).outcome, Outcome::Completed);
}

struct Bad(Event);
impl Agent for Bad {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        ctx.send(self.0.clone())
    }
}

struct Twice;
impl Agent for Twice {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        ctx.submit(arrive(task(1), 0, 10));
        ctx.submit(arrive(task(1), 0, 10));
        Ok(())
    }
}

#[test]
fn agents_cannot_fake_what_only_the_engine_knows() {
    for ev in [
        Event::Complete { task: TaskId(1) },
        Event::Timer { token: 1 },
        Event::Submit(task(1)),
    ] {
        let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
        let mut sim = Simulation::new(core);
        sim.add_agent(Bad(ev.clone()));
        let err = sim.run_agents(&mut Recorder::default()).unwrap_err();
        assert!(err.to_string().contains("may not send"), "{ev:?}: {err}");
    }
    // Allowed outside events go through.
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(Bad(Event::SlotLeave { slot: SlotId(0) }));
    sim.run_agents(&mut Recorder::default()).unwrap();
    assert_eq!(sim.core().view().total_slots(), 0);

    // A duplicate live id is an error naming the task.
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(Twice);
    let err = sim.run_agents(&mut Recorder::default()).unwrap_err();
    assert!(
        matches!(err, SimError::DuplicateTask { task: TaskId(1), .. }),
        "{err}"
    );
}

#[test]
fn a_trace_out_of_order_is_an_error_naming_the_task() {
    let core = scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let arrivals = vec![Ok(arrive(task(1), 10, 1)), Ok(arrive(task(2), 5, 1))];
    let err = Simulation::new(core)
        .run(arrivals, &mut Recorder::default())
        .unwrap_err();
    assert!(matches!(err, SimError::Unsorted { task: TaskId(2), .. }), "{err}");
}
