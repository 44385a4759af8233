//! The workflow-fairness controller (`workflow-fairness`,
//! spec/workflow-fairness.md) with many concurrent workflows of 100 tasks.
//!
//! - `workflow/run/<system>/<W>`: one full simulated run, as `experiment
//!   workflow-fairness` does it (`experiments::workflow::run`, η_u series
//!   observer included): W GATE workflows (the built-in profile: one
//!   activity of 100 independent tasks, four phases each) submitted 1 s
//!   apart on a constant pool of 2 slots per workflow (`Grid::constant`:
//!   no failure, no pilot churn, no other users), seed 0. `fairness` is
//!   `System::Fairness { tau: 0.2, every: 0 }` (the Control reacts at every
//!   status change), `no-fairness` the `workflow-fcfs` queue without it.
//!   W = 25 and 50 by default (`WORKFLOW_RUN_SIZES=25,50,100` for
//!   others): a Fairness run grows about as W² (see bench/README.md), so
//!   W = 1000 is out of a bench's reach (one run took 1 h 16 min on the
//!   2-core test machine). `WORKFLOW_RUN_ONCE=200,1000` runs both systems once per size,
//!   untimed, and prints their wall time (a `fact` line) before the bench.
//!   `no-fairness-no-series/1000`: 1,000 workflows on 2,000 slots with the
//!   same world and queue, without the η_u series observer (the experiment's
//!   run rebuilt from its public pieces): the simulator's own speed.
//!   Throughput is in core events (`RunStats::core.events`, counted by an
//!   untimed replica of the run): per task one `Submit`, four `Phase` and
//!   one `Complete`, 6 (the start is the core's decision, not an event).
//! - `workflow/control_step/<N>`: the cost of one reaction of the Control
//!   (Algorithm 1: η_u over every active activity; Algorithm 2: Δ_ij and
//!   the raises), driven through the core: one `Scheduler::step` holding
//!   one `Event::Timer` for the Control, which computes η_u and raises
//!   tasks; the core then applies the raises to its queue. N active
//!   workflows (one activity each) with 10 completed tasks (so medians
//!   exist), 2 running (in their setup, input or exec phase) and 88
//!   waiting; every slot busy, so nothing starts. The Control runs in timer
//!   mode (`every=180`): its timer reaction is the same `act` as a reaction
//!   to a status change, but it can be fired without changing any task, so
//!   every iteration sees the same state and raises the same tasks
//!   (priorities climb by one per iteration, as Algorithm 2 does in a run).
//!   Throughput is in active activities + running tasks.
//! - `workflow/control_step_completed/<variant>`: N = 100 as above
//!   (`completed-1k`, the bed of `control_step/100`), then with 10× as many
//!   completed tasks: 90 more workflows entirely completed
//!   (`completed-10k-finished`), or 100 completed tasks in each active
//!   activity instead of 10 (`completed-10k-active`: workflows of 190
//!   tasks). Every completed task of a workflow has the same phases, so the
//!   medians, η_u and the raises are the same in the three (checked): the
//!   time should be too.
//! - `workflow/eta/<N>`: `Tracker::eta_into` alone (Algorithm 1's η_u with
//!   every term; no Δ, no raise) on the state of `control_step/<N>`, fed
//!   from outside the core with the same events.
//!
//! Each case first runs once untimed and checks something that could fail:
//! every task of every workflow completed, the replica agrees with the
//! experiment's run and counts 6 core events per task; the control step
//! raises > 0 tasks, exactly Σ Δ_ij as computed from the outside tracker's
//! η_u, and as many again at the next step. These checks print one `fact`
//! line each on stderr (bench/workflow.sh keeps them). Setup is never
//! timed.
//!
//! `cargo bench -p fairsched-sim --bench workflow -- --warm-up-time 1 --measurement-time 3`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fairsched_core::policy::workflow_fairness::{Eta, Tracker, delta};
use fairsched_core::{
    Action, Event, Observer, Phase, Platform, Scheduler, TaskId, TaskSpec, Time, WorkflowId, WorkflowRef,
    derive_seed, registry,
};
use fairsched_sim::experiments::workflow::grid::Grid;
use fairsched_sim::experiments::workflow::world::{WorkflowOutcome, World, slot_speed};
use fairsched_sim::experiments::workflow::{System, instances, run};
use fairsched_sim::{RunStats, Simulation};
use fairsched_trace::workflow::WorkflowSource;

/// Tasks per workflow (GATE).
const TASKS: usize = 100;
/// τ_u.
const TAU: f64 = 0.2;

// ---------------------------------------------------------------------------
// workflow/run

/// Workflows of the runs timed through `experiments::workflow::run`, unless
/// `WORKFLOW_RUN_SIZES` says otherwise.
const RUN_SIZES: [usize; 2] = [25, 50];
/// Workflows of the run without the η_u series.
const FULL: usize = 1000;
/// Slots per workflow of the constant pool (2,000 for 1,000 workflows).
const SLOTS_PER_WORKFLOW: u32 = 2;
/// Between two workflow submissions.
const SPACING: Time = Time::from_secs(1);
const SEED: u64 = 0;
/// Core events per task: `Submit`, four `Phase`, `Complete`.
const EVENTS_PER_TASK: u64 = 6;

fn fairness() -> System {
    System::Fairness {
        tau: TAU,
        every: 0.0,
        reraise: true,
    }
}

fn sources(n: usize) -> Vec<WorkflowSource> {
    let gate = WorkflowSource::builtin("gate").expect("GATE ships with the trace crate");
    vec![gate; n]
}

/// Discards every result.
struct Discard;
impl Observer for Discard {
    fn wants_steps(&self) -> bool {
        false
    }
}

/// What [`replica`] gives.
struct Replica {
    stats: RunStats,
    workflows: Vec<WorkflowOutcome>,
    /// End of the last workflow.
    end: Time,
}

/// The run of `experiments::workflow::run` rebuilt from the same public
/// pieces (core, world agent, slot speeds), without the η_u series
/// observer.
fn replica(grid: &Grid, sources: &[WorkflowSource], system: &System) -> Replica {
    let (order, control) = match system {
        System::Fairness { tau, every, .. } => (
            "priority",
            Some(
                registry::Registry::builtin()
                    .build_control(
                        &format!("workflow-fairness[tau={tau},every={every}]")
                            .parse()
                            .expect("spec"),
                    )
                    .expect("control"),
            ),
        ),
        System::NoFairness => ("workflow-fcfs", None),
        System::With { .. } => unreachable!("the benchmark runs the paper's two systems"),
    };
    let core = Scheduler::new(
        &Platform::pool(grid.initial_slots),
        derive_seed(SEED, 1),
        registry::Registry::builtin()
            .build_allocate(&"single-pool".parse().expect("spec"))
            .expect("allocate"),
        registry::Registry::builtin()
            .build_order(&order.parse().expect("spec"))
            .expect("order"),
        control,
    );
    let mut world = World::new(grid.clone(), SEED, instances(sources, SEED, SPACING));
    let stats = {
        let mut sim = Simulation::new(core);
        let g = grid.clone();
        sim.slot_speed(move |slot| slot_speed(&g, SEED, slot));
        sim.add_agent(&mut world);
        sim.run_agents(&mut Discard).expect("run")
    };
    Replica {
        stats,
        workflows: world.outcomes(),
        end: world.end(),
    }
}

/// Every workflow ran all its tasks to completion, once each.
fn check_complete(id: &str, n: usize, workflows: &[WorkflowOutcome], tasks_run: u64) {
    assert_eq!(workflows.len(), n, "{id}: workflows");
    assert_eq!(tasks_run, (n * TASKS) as u64, "{id}: tasks run");
    for (k, w) in workflows.iter().enumerate() {
        assert!(
            w.tasks == TASKS && !w.failed && w.resubmissions == 0,
            "{id}: workflow {k}: {w:?}"
        );
        assert!(
            w.makespan_s.is_finite() && w.makespan_s > 0.0,
            "{id}: workflow {k}: {w:?}"
        );
    }
}

/// The replica once, checked: (its core events, its result).
fn preflight_replica(
    id: &str,
    n: usize,
    grid: &Grid,
    sources: &[WorkflowSource],
    system: &System,
) -> (u64, Replica) {
    let r = replica(grid, sources, system);
    let s = &r.stats;
    check_complete(id, n, &r.workflows, s.submitted);
    assert_eq!(s.core.starts, s.submitted, "{id}: every task started once");
    assert_eq!(s.stranded, 0, "{id}: stranded tasks");
    assert_eq!(s.core.ignored_events, 0, "{id}: ignored events");
    assert_eq!(
        s.core.events,
        EVENTS_PER_TASK * s.submitted,
        "{id}: core events per task"
    );
    (s.core.events, r)
}

/// `experiments::workflow::run` once, untimed, checked against its replica
/// and printed; returns the core events of a run.
fn preflight_run(id: &str, n: usize, grid: &Grid, sources: &[WorkflowSource], system: &System) -> u64 {
    let t = Instant::now();
    let r = run(
        &registry::Registry::builtin(),
        grid,
        SEED,
        sources,
        SPACING,
        system,
        Vec::new(),
    )
    .expect("run");
    let wall = t.elapsed().as_secs_f64();
    check_complete(id, n, &r.workflows, r.tasks_run);
    let t = Instant::now();
    let (events, rep) = preflight_replica(id, n, grid, sources, system);
    let bare = t.elapsed().as_secs_f64();
    assert_eq!(rep.stats.submitted, r.tasks_run, "{id}: replica");
    assert_eq!(
        rep.stats.core.priority_changes, r.priority_changes,
        "{id}: replica"
    );
    let first = r
        .workflows
        .iter()
        .map(|w| w.submit_s)
        .fold(f64::INFINITY, f64::min);
    let span = rep.end.as_secs_f64() - first;
    assert!(
        (span - r.set_makespan_s).abs() < 1e-6,
        "{id}: the replica is another run ({span} s vs {} s)",
        r.set_makespan_s
    );
    if matches!(system, System::Fairness { .. }) {
        assert!(r.priority_changes > 0, "{id}: the Control raised nothing");
    } else {
        assert_eq!(r.priority_changes, 0, "{id}: no Control, no raise");
    }
    eprintln!(
        "fact {id} workflows={n} slots={} tasks={} events={events} steps={} priority_changes={} \
         set_makespan_s={:.0} sigma_s={:.3} mu={:.0} untimed_run_s={wall:.3} untimed_no_series_s={bare:.3}",
        grid.initial_slots,
        r.tasks_run,
        rep.stats.steps,
        r.priority_changes,
        r.set_makespan_s,
        r.sigma_s,
        r.mu,
    );
    events
}

/// Workflow counts from the environment variable `var` (comma-separated),
/// or `default`.
fn sizes(var: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(var) {
        Ok(s) => s
            .split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                x.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{var}: workflow counts, comma-separated"))
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}

/// `WORKFLOW_RUN_ONCE`: `experiments::workflow::run` once per system,
/// untimed (no replica, no criterion): for sizes too slow to sample.
fn run_once(n: usize) {
    let grid = Grid::constant(SLOTS_PER_WORKFLOW * n as u32);
    let sources = sources(n);
    for (label, system) in [("fairness", fairness()), ("no-fairness", System::NoFairness)] {
        let id = format!("workflow/run/{label}/{n}");
        let t = Instant::now();
        let r = run(
            &registry::Registry::builtin(),
            &grid,
            SEED,
            &sources,
            SPACING,
            &system,
            Vec::new(),
        )
        .expect("run");
        let wall = t.elapsed().as_secs_f64();
        check_complete(&id, n, &r.workflows, r.tasks_run);
        eprintln!(
            "fact {id} workflows={n} slots={} tasks={} events={} priority_changes={} set_makespan_s={:.0} \
             sigma_s={:.3} mu={:.0} untimed_run_s={wall:.3}",
            grid.initial_slots,
            r.tasks_run,
            EVENTS_PER_TASK * r.tasks_run,
            r.priority_changes,
            r.set_makespan_s,
            r.sigma_s,
            r.mu,
        );
    }
}

fn whole_run(c: &mut Criterion) {
    for n in sizes("WORKFLOW_RUN_ONCE", &[]) {
        run_once(n);
    }
    let mut group = c.benchmark_group("workflow/run");
    let builtin = registry::Registry::builtin();
    for n in sizes("WORKFLOW_RUN_SIZES", &RUN_SIZES) {
        let grid = Grid::constant(SLOTS_PER_WORKFLOW * n as u32);
        let sources = sources(n);
        for (label, system) in [("fairness", fairness()), ("no-fairness", System::NoFairness)] {
            let id = format!("workflow/run/{label}/{n}");
            let events = preflight_run(&id, n, &grid, &sources, &system);
            group.throughput(Throughput::Elements(events));
            group.bench_function(BenchmarkId::new(label, n), |b| {
                b.iter(|| {
                    let r = run(
                        &builtin,
                        &grid,
                        SEED,
                        black_box(&sources),
                        SPACING,
                        &system,
                        Vec::new(),
                    )
                    .expect("run");
                    assert_eq!(r.tasks_run, (n * TASKS) as u64, "{id}: deterministic");
                    r
                })
            });
        }
    }
    // The simulator alone at full size: same world and queue, no η_u series.
    let grid = Grid::constant(SLOTS_PER_WORKFLOW * FULL as u32);
    let sources = sources(FULL);
    let id = format!("workflow/run/no-fairness-no-series/{FULL}");
    let t = Instant::now();
    let (events, r) = preflight_replica(&id, FULL, &grid, &sources, &System::NoFairness);
    eprintln!(
        "fact {id} workflows={FULL} slots={} tasks={} events={events} steps={} priority_changes=0 \
         set_makespan_s={:.0} untimed_no_series_s={:.3}",
        grid.initial_slots,
        r.stats.submitted,
        r.stats.steps,
        r.end.as_secs_f64() - r.workflows[0].submit_s,
        t.elapsed().as_secs_f64()
    );
    group.throughput(Throughput::Elements(events));
    group.bench_function(BenchmarkId::new("no-fairness-no-series", FULL), |b| {
        b.iter(|| {
            let r = replica(&grid, black_box(&sources), &System::NoFairness);
            assert_eq!(r.stats.core.events, events, "{id}: deterministic");
            r.stats
        })
    });
    group.finish();
}

// ---------------------------------------------------------------------------
// workflow/control_step

/// Tasks of each active workflow in a control-step bed: running, waiting
/// (and [`Shape::completed`] completed).
const RUNNING: usize = 2;
const WAITING: usize = 88;
/// Completed tasks of each active workflow in the base bed (10 + 2 + 88 = 100).
const COMPLETED: usize = 10;
/// When the bed's raising step happens, after the running tasks started.
const LOOK_AFTER: Time = Time::from_secs(90);

#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Workflows with an active activity.
    active: usize,
    /// Completed tasks of each active workflow.
    completed: usize,
    /// Workflows whose every task completed (not active).
    finished: usize,
}

impl Shape {
    fn base(active: usize) -> Shape {
        Shape {
            active,
            completed: COMPLETED,
            finished: 0,
        }
    }
    /// What the reaction's cost should be linear in.
    fn units(&self) -> u64 {
        (self.active * (1 + RUNNING)) as u64
    }
    fn completed_tasks(&self) -> usize {
        self.active * self.completed + self.finished * TASKS
    }
}

/// Phases of every task of workflow `k` (setup, input, exec, output): exec
/// from 2 to 51 minutes, so the workflows' T̂ (and W) differ.
fn phases(k: usize) -> [Time; 4] {
    [20, 10, 120 + 60 * (k % 50) as i64, 5].map(Time::from_secs)
}

/// A core holding a `workflow-fairness[every=180]` Control, and a
/// [`Tracker`] fed with the same events, in a given state.
struct Bed {
    shape: Shape,
    core: Scheduler,
    tracker: Tracker,
    /// The instant of the raising steps.
    now: Time,
    /// The Control's timer token (from the timer it asked for).
    token: u64,
}

/// Drives the core through the bed's history with its own event list.
struct Driver {
    core: Scheduler,
    tracker: Tracker,
    /// Workflow of each task (index: id − 1).
    wf: Vec<usize>,
    /// Events to hand the core, by instant (ms).
    pending: BTreeMap<i64, Vec<Event>>,
    /// Started tasks run to completion (true), or are left running (false).
    complete: bool,
    /// Tasks started while `complete` was false.
    left_running: Vec<TaskId>,
    token: Option<u64>,
    now: Time,
}

impl Driver {
    fn submit(&mut self, k: usize) -> Event {
        self.wf.push(k);
        let spec = TaskSpec::new(self.wf.len() as u64, k as i64, 0);
        Event::Submit(TaskSpec {
            workflow: Some(WorkflowRef {
                workflow: WorkflowId(k as u32),
                activity: 0,
            }),
            ..spec
        })
    }

    fn later(&mut self, at: Time, ev: Event) {
        self.pending.entry(at.millis()).or_default().push(ev);
    }

    fn step(&mut self, now: Time, events: Vec<Event>) {
        for e in &events {
            match *e {
                Event::Submit(ref spec) => {
                    let w = spec.workflow.expect("workflow task");
                    self.tracker.queued(spec.id, w.workflow, w.activity);
                }
                Event::Phase { task, phase } => self.tracker.phase_started(task, phase, now),
                Event::Complete { task } => self.tracker.completed_at(task, now),
                _ => {}
            }
        }
        let mut out = Vec::new();
        self.core.step(now, events, None, &mut out).expect("step");
        self.now = now;
        for a in out {
            match a {
                Action::Start { task, .. } => {
                    self.tracker.started(task, now);
                    if self.complete {
                        let [s, i, e, o] = phases(self.wf[task.0 as usize - 1]);
                        let mut at = now;
                        for (phase, d) in Phase::ALL.into_iter().zip([s, i, e, o]) {
                            self.later(at, Event::Phase { task, phase });
                            at += d;
                        }
                        self.later(at, Event::Complete { task });
                    } else {
                        self.left_running.push(task);
                    }
                }
                Action::Timer { token, .. } => self.token = Some(token),
                Action::Priority { .. } => panic!("the timer-mode Control raised a task before its timer"),
                _ => {}
            }
        }
    }

    /// Hands the core every pending event, instant by instant.
    fn drain(&mut self) {
        while let Some((at, events)) = self.pending.pop_first() {
            self.step(Time::from_millis(at), events);
        }
    }
}

fn bed(shape: Shape) -> Bed {
    let slots = (shape.active * RUNNING) as u32;
    let control = registry::Registry::builtin()
        .build_control(
            &format!("workflow-fairness[tau={TAU},every=180]")
                .parse()
                .expect("spec"),
        )
        .expect("control");
    let core = Scheduler::new(
        &Platform::pool(slots),
        0,
        registry::Registry::builtin()
            .build_allocate(&"single-pool".parse().expect("spec"))
            .expect("allocate"),
        registry::Registry::builtin()
            .build_order(&"priority".parse().expect("spec"))
            .expect("order"),
        Some(control),
    );
    let mut d = Driver {
        core,
        tracker: Tracker::new(),
        wf: Vec::new(),
        pending: BTreeMap::new(),
        complete: true,
        left_running: Vec::new(),
        token: None,
        now: Time::ZERO,
    };
    // History: the completed tasks of the active workflows and every task
    // of the finished ones run to completion on the pool.
    let mut history = Vec::new();
    for k in 0..shape.active + shape.finished {
        let n = if k < shape.active { shape.completed } else { TASKS };
        for _ in 0..n {
            history.push(d.submit(k));
        }
    }
    d.step(Time::ZERO, history);
    d.drain();
    assert_eq!(d.core.live_tasks(), 0, "the history completed");
    // The active workflows' other tasks, round by round: the first RUNNING
    // rounds (FIFO within priority 1) take every slot, the others wait.
    d.complete = false;
    let t0 = d.now + Time::from_secs(1);
    let mut rest = Vec::new();
    for _ in 0..RUNNING + WAITING {
        for k in 0..shape.active {
            rest.push(d.submit(k));
        }
    }
    d.step(t0, rest);
    assert_eq!(d.left_running.len(), slots as usize, "every slot busy");
    // Running tasks in their setup, input or exec phase.
    let mut at = t0;
    for (i, phase) in [Phase::Setup, Phase::Input, Phase::Exec].into_iter().enumerate() {
        let events = d
            .left_running
            .iter()
            .filter(|t| t.0 as usize % 3 >= i)
            .map(|&task| Event::Phase { task, phase })
            .collect();
        d.step(at, events);
        at += phases(0)[i];
    }
    let view = d.core.view();
    assert_eq!(view.busy_slots(), u64::from(slots));
    assert_eq!(view.waiting_tasks(), (shape.active * WAITING) as u64);
    Bed {
        shape,
        now: t0 + LOOK_AFTER,
        token: d.token.expect("the timer-mode Control asked for a timer"),
        core: d.core,
        tracker: d.tracker,
    }
}

impl Bed {
    /// One reaction: the Control's timer fires.
    fn react(&mut self, out: &mut Vec<Action>) {
        out.clear();
        self.core
            .step(self.now, [Event::Timer { token: self.token }], None, out)
            .expect("step");
    }
}

/// Σ Δ_ij over the activities Algorithm 2 selects, from `eta`.
fn expected_raises(eta: &Eta) -> usize {
    let mut sum = 0;
    for (i, wf) in eta.workflows.iter().enumerate() {
        if wf.w - eta.w_min <= TAU {
            continue;
        }
        for a in eta.activities_of(i) {
            if a.w - eta.w_min > TAU {
                sum += delta(a.q, a.r, a.p, a.t_hat, TAU, eta.w_min) as usize;
            }
        }
    }
    sum
}

/// Builds the bed, checks its η_u and two reactions, prints them; returns
/// the bed, the actions of a reaction and the tasks it raises.
fn preflight_step(id: &str, shape: Shape) -> (Bed, usize, usize) {
    let t = Instant::now();
    let mut bed = bed(shape);
    let setup = t.elapsed().as_secs_f64();
    let eta = bed.tracker.eta(bed.now);
    let s = bed.shape;
    assert_eq!(
        (eta.m, eta.activities.len()),
        (s.active, s.active),
        "{id}: active"
    );
    assert_eq!(
        eta.activities.iter().map(|a| a.r as usize).sum::<usize>(),
        s.active * RUNNING,
        "{id}: running"
    );
    assert_eq!(
        eta.activities.iter().map(|a| a.q as usize).sum::<usize>(),
        s.active * WAITING,
        "{id}: waiting"
    );
    assert!(
        eta.activities.iter().all(|a| a.t_tilde.is_some()),
        "{id}: medians"
    );
    assert!(eta.eta_u > TAU, "{id}: η_u = {} ≤ τ", eta.eta_u);
    let expected = expected_raises(&eta);
    let raised = |out: &[Action]| {
        out.iter()
            .filter(|a| matches!(a, Action::Priority { .. }))
            .count()
    };
    let mut out = Vec::new();
    bed.react(&mut out);
    let first = raised(&out);
    assert!(first > 0, "{id}: the control step raised nothing");
    assert_eq!(first, expected, "{id}: raised tasks vs Σ Δ_ij");
    bed.react(&mut out);
    assert_eq!(raised(&out), first, "{id}: the next step raises as many");
    let selected = eta.workflows.iter().filter(|w| w.w - eta.w_min > TAU).count();
    eprintln!(
        "fact {id} active={} running={} waiting={} completed={} units={} eta_u={:.3} w_min={:.3} \
         selected_workflows={selected} raised={first} actions={} setup_s={setup:.3}",
        s.active,
        s.active * RUNNING,
        s.active * WAITING,
        s.completed_tasks(),
        s.units(),
        eta.eta_u,
        eta.w_min,
        out.len(),
    );
    (bed, out.len(), first)
}

fn time_steps(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    bed: &mut Bed,
    actions: usize,
) {
    let mut out = Vec::with_capacity(actions);
    group.throughput(Throughput::Elements(bed.shape.units()));
    group.bench_function(name, |b| {
        b.iter(|| {
            bed.react(&mut out);
            assert_eq!(out.len(), actions, "the same raises at every step");
            black_box(out.len())
        })
    });
}

fn control_step(c: &mut Criterion) {
    let mut beds = Vec::new();
    let mut group = c.benchmark_group("workflow/control_step");
    for n in [10, 100, 1000] {
        let id = format!("workflow/control_step/{n}");
        let (mut bed, actions, _) = preflight_step(&id, Shape::base(n));
        time_steps(&mut group, &n.to_string(), &mut bed, actions);
        beds.push(bed);
    }
    group.finish();

    // Algorithm 1 alone on the same states (the beds' trackers).
    let mut group = c.benchmark_group("workflow/eta");
    for bed in &beds {
        let n = bed.shape.active;
        let mut eta = Eta::default();
        bed.tracker.eta_into(bed.now, &mut eta);
        assert_eq!(eta.m, n);
        eprintln!(
            "fact workflow/eta/{n} active={n} running={} units={} eta_u={:.3}",
            n * RUNNING,
            bed.shape.units(),
            eta.eta_u
        );
        group.throughput(Throughput::Elements(bed.shape.units()));
        group.bench_function(n.to_string(), |b| {
            b.iter(|| {
                bed.tracker.eta_into(black_box(bed.now), &mut eta);
                black_box(eta.eta_u)
            })
        });
    }
    group.finish();
}

fn control_step_completed(c: &mut Criterion) {
    const N: usize = 100;
    let variants = [
        ("completed-1k", Shape::base(N)),
        (
            "completed-10k-finished",
            Shape {
                finished: 90,
                ..Shape::base(N)
            },
        ),
        (
            "completed-10k-active",
            Shape {
                completed: 100,
                ..Shape::base(N)
            },
        ),
    ];
    let mut group = c.benchmark_group("workflow/control_step_completed");
    let mut base = None;
    for (name, shape) in variants {
        let id = format!("workflow/control_step_completed/{name}");
        let (mut bed, actions, raised) = preflight_step(&id, shape);
        // Same medians, same η_u: the same raises.
        assert_eq!(
            *base.get_or_insert(raised),
            raised,
            "{id}: raises differ from completed-1k"
        );
        time_steps(&mut group, name, &mut bed, actions);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = control_step, control_step_completed, whole_run
}
criterion_main!(benches);
