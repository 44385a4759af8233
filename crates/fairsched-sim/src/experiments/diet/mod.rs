//! The Diet-ethic paper's experiments (spec/diet-ethic.md, "Experiments to
//! reproduce"): users with mandatory and optional requests and a deadline,
//! single-slot servers, the Diet-ethic system (server queue `diet-ethic`
//! with kills, the dispatcher client) against the legacy one (`fcfs`
//! servers, clients that guess `n_submit`).
//!
//! Clients are agents of the simulation ([`crate::agent`]): they send each
//! request to a server they chose (`TaskSpec::target`), watch completions
//! and cancel what is left when they leave. A client's servers are the
//! platform's in an order drawn from the run's seed (its "discovery"), so
//! that round-robin dispatch from many clients does not pile onto server 0.

pub mod experiment;
pub mod metrics;
pub mod scenario_file;
pub mod study;

use self::metrics::{DietMetrics, Span, UserOutcome, metrics};
use crate::agent::{Agent, AgentCtx};
use crate::engine::{Arrival, Simulation};
use crate::errors::SimError;
use fairsched_core::event::EndRecord;
use fairsched_core::model::Outcome;
use fairsched_core::sink::{Observer, TaskMeta};
use fairsched_core::{
    Action, MachineId, OrgId, Platform, PolicySpec, Registry, Scheduler, TaskId, TaskSpec, Time, UserId,
    derive_seed,
};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;

/// A user of a scenario (times absolute).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct User {
    pub arrival: Time,
    pub deadline: Time,
    pub n_min: u32,
    pub n_max: u32,
    /// T_i: every request of the user takes this long (the scheduler
    /// never sees it).
    pub duration: Time,
}

/// A platform and its users.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setup {
    pub servers: u32,
    pub users: Vec<User>,
}

/// The paper's scenarios.
pub const SCENARIOS: [&str; 6] = [
    "night-simultaneous",
    "night-consecutive",
    "day-regular",
    "day-irregular",
    "day-irregular-random",
    "scalability",
];

/// The n_submit values of the legacy system's sweep.
pub const N_SUBMIT: [u32; 9] = [3, 10, 50, 100, 150, 190, 250, 500, 1000];

/// The daily-cycle arrival rate of Calzarossa & Serazzi (1985), for t in
/// [−0.5, 0.5] (a working day): spec/diet-ethic.md.
pub fn daily_cycle(t: f64) -> f64 {
    const C: [f64; 9] = [3.1, -8.5, 24.7, 130.8, 107.7, -804.2, -2038.5, 1856.8, 4618.6];
    C.iter().rev().fold(0.0, |acc, c| acc * t + c)
}

/// Scenario `name` drawn with `seed` (only the irregular ones use it).
pub fn scenario(name: &str, seed: u64) -> Result<Setup, SimError> {
    let secs = |s: f64| Time::from_millis((s * 1000.0).round() as i64);
    // Night-time users share one absolute deadline (100 s, "the next
    // morning"); day-time users each get 100 s from their arrival, the only
    // reading under which the paper's day-regular legacy run can complete
    // 1890 requests (10 servers × 100 s holds at most 1000).
    let day = name.starts_with("day-");
    let user = |t0: f64, duration: Time| User {
        arrival: secs(t0),
        deadline: secs(if day { t0 + 100.0 } else { 100.0 }),
        n_min: 3,
        n_max: 1000,
        duration,
    };
    let one = secs(1.0);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0xD1E7));
    let users: Vec<User> = match name {
        "night-simultaneous" => (0..10).map(|_| user(0.0, one)).collect(),
        "night-consecutive" => (0..10).map(|i| user(0.1 * i as f64, one)).collect(),
        "day-regular" => (0..10).map(|i| user(10.0 * i as f64, one)).collect(),
        "day-irregular" | "day-irregular-random" => {
            let random = name == "day-irregular-random";
            // Durations from their own stream: both irregular scenarios
            // share their arrivals for a seed.
            let mut durations = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0xD1E8));
            let mut users = Vec::new();
            for t in 0..=100 {
                let p = daily_cycle(t as f64 / 100.0 - 0.5) / 10.0;
                if rng.random::<f64>() < p {
                    let d = if random {
                        secs(durations.random_range(0.75..=2.0))
                    } else {
                        one
                    };
                    users.push(user(t as f64, d));
                }
            }
            users
        }
        "scalability" => {
            return Ok(Setup {
                servers: 138,
                users: (0..100)
                    .map(|_| User {
                        n_max: 10_000,
                        ..user(0.0, one)
                    })
                    .collect(),
            });
        }
        other => {
            return Err(SimError::Config(format!(
                "scenario {other:?}: expected one of {}",
                SCENARIOS.join(", ")
            )));
        }
    };
    Ok(Setup { servers: 10, users })
}

/// Which system runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum System {
    /// `diet-ethic` servers and the dispatcher.
    DietEthic,
    /// `fcfs` servers and clients submitting `n_submit` requests.
    Legacy { n_submit: u32 },
    /// Another order policy on the servers, with Diet-ethic's clients
    /// (the dispatcher): a server-side policy under the paper's protocol.
    Dispatcher { order: PolicySpec },
}

impl System {
    /// Whether its clients are Diet-ethic's dispatcher.
    fn dispatches(&self) -> bool {
        !matches!(self, System::Legacy { .. })
    }
    /// The servers' order policy.
    pub fn order(&self) -> PolicySpec {
        match self {
            System::DietEthic => "diet-ethic".parse().expect("registered"),
            System::Legacy { .. } => "fcfs".parse().expect("registered"),
            System::Dispatcher { order } => order.clone(),
        }
    }
    /// Its name in the results: `diet-ethic`, `legacy`, or the policy.
    pub fn name(&self) -> String {
        match self {
            System::DietEthic => "diet-ethic".into(),
            System::Legacy { .. } => "legacy".into(),
            System::Dispatcher { order } => order.to_string(),
        }
    }
}

/// What every client records, shared by the run.
#[derive(Default)]
struct Book {
    /// Task → user.
    owner: FxHashMap<TaskId, usize>,
}

/// The servers a client "discovers": the platform's, in a seeded order.
fn discovered(servers: u32, n_max: u32, seed: u64, user: usize) -> Vec<MachineId> {
    let mut s: Vec<MachineId> = (0..servers).map(MachineId).collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0x5E4 + user as u64));
    s.shuffle(&mut rng);
    s.truncate(n_max.max(1) as usize);
    s
}

/// A client: Diet-ethic's dispatcher or a legacy client.
struct Client {
    user: usize,
    spec: User,
    system: System,
    servers: Vec<MachineId>,
    book: Rc<RefCell<Book>>,
    /// Requests submitted so far.
    submitted: u32,
    /// Mandatory requests not completed yet.
    mandatory_left: FxHashSet<TaskId>,
    /// Submitted, not ended.
    live: FxHashSet<TaskId>,
    /// Optional requests live per server (Diet-ethic keeps at most one).
    optional_on: FxHashMap<TaskId, MachineId>,
    deadline_passed: bool,
    gone: bool,
}

const WAKE_ARRIVE: u64 = 1;
const WAKE_DEADLINE: u64 = 2;

impl Client {
    fn send(&mut self, ctx: &mut AgentCtx, server: MachineId, optional: bool) -> TaskId {
        let mut spec = TaskSpec::new(0, self.user as i64, 0).on(server);
        spec.org = OrgId(0);
        spec.user = UserId(self.user as i64);
        if optional {
            spec = spec.optional();
        }
        let id = ctx.submit_new(Arrival::new(spec, ctx.now(), self.spec.duration));
        self.book.borrow_mut().owner.insert(id, self.user);
        self.submitted += 1;
        self.live.insert(id);
        if optional {
            self.optional_on.insert(id, server);
        } else {
            self.mandatory_left.insert(id);
        }
        id
    }

    /// Leaves once every mandatory request completed and the deadline
    /// passed: cancels what is left.
    fn maybe_leave(&mut self, ctx: &mut AgentCtx) {
        if self.gone || !self.deadline_passed || !self.mandatory_left.is_empty() {
            return;
        }
        self.gone = true;
        let mut left: Vec<TaskId> = self.live.iter().copied().collect();
        left.sort_unstable();
        for t in left {
            ctx.cancel(t);
        }
    }

    fn setup(&mut self, ctx: &mut AgentCtx) {
        let n = self.servers.len().max(1);
        match self.system {
            System::DietEthic | System::Dispatcher { .. } => {
                for k in 0..self.spec.n_min {
                    self.send(ctx, self.servers[k as usize % n], false);
                }
                for k in 0..n {
                    if self.submitted >= self.spec.n_max {
                        break;
                    }
                    self.send(ctx, self.servers[k], true);
                }
            }
            System::Legacy { n_submit } => {
                let total = n_submit.clamp(self.spec.n_min, self.spec.n_max);
                for k in 0..total {
                    self.send(ctx, self.servers[k as usize % n], k >= self.spec.n_min);
                }
            }
        }
    }
}

impl Agent for Client {
    fn start(&mut self, ctx: &mut AgentCtx) -> Result<(), SimError> {
        ctx.wake_at(self.spec.arrival, WAKE_ARRIVE);
        ctx.wake_at(self.spec.deadline, WAKE_DEADLINE);
        Ok(())
    }

    fn on_wake(&mut self, token: u64, ctx: &mut AgentCtx) -> Result<(), SimError> {
        match token {
            WAKE_ARRIVE => self.setup(ctx),
            _ => {
                self.deadline_passed = true;
                self.maybe_leave(ctx);
            }
        }
        Ok(())
    }

    fn on_action(&mut self, a: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let Action::Ended(r) = a else { return Ok(()) };
        if !self.live.remove(&r.spec.id) {
            return Ok(());
        }
        let completed = r.outcome == Outcome::Completed;
        self.mandatory_left.remove(&r.spec.id);
        let server = self.optional_on.remove(&r.spec.id);
        if let (true, Some(server), true, false) = (self.system.dispatches(), server, completed, self.gone)
            && self.submitted < self.spec.n_max
        {
            self.send(ctx, server, true);
        }
        self.maybe_leave(ctx);
        Ok(())
    }
}

/// Collects each user's allocated time and completions.
struct Collect {
    book: Rc<RefCell<Book>>,
    users: Vec<User>,
    out: Vec<UserOutcome>,
    /// Mandatory requests completed after the deadline, per user.
    late: Vec<u32>,
    mandatory_done: Vec<u32>,
}

impl Observer for Collect {
    fn on_task(&mut self, rec: &EndRecord, _meta: &TaskMeta) {
        let Some(&u) = self.book.borrow().owner.get(&rec.spec.id) else {
            return;
        };
        let o = &mut self.out[u];
        for run in rec.requeued.iter().chain(rec.last.iter()) {
            o.allocated += (run.stop - run.start).as_secs_f64();
        }
        if rec.outcome == Outcome::Completed {
            o.completed += 1;
            if !rec.spec.optional {
                if rec.end <= self.users[u].deadline {
                    self.mandatory_done[u] += 1;
                } else {
                    self.late[u] += 1;
                }
            }
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

/// One run's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub metrics: DietMetrics,
    /// Requests killed by servers (runs stopped and requeued).
    pub kills: u64,
    pub users: usize,
}

/// Runs `system` on `setup` with `seed`.
pub fn run(registry: &Registry, setup: &Setup, system: &System, seed: u64) -> Result<RunResult, SimError> {
    run_observed(registry, setup, system, seed, &mut Quiet)
}

/// An observer that keeps nothing.
struct Quiet;
impl Observer for Quiet {
    fn wants_steps(&self) -> bool {
        false
    }
}

/// [`run`], with every result also pushed into `extra` (tests, Gantt
/// charts).
pub fn run_observed(
    registry: &Registry,
    setup: &Setup,
    system: &System,
    seed: u64,
    extra: &mut dyn Observer,
) -> Result<RunResult, SimError> {
    let core = Scheduler::new(
        &Platform::machines(&vec![1; setup.servers as usize]),
        derive_seed(seed, 1),
        registry.build_allocate(&"least-loaded".parse().expect("registered"))?,
        registry.build_order(&system.order())?,
        None,
    );
    let book = Rc::new(RefCell::new(Book::default()));
    let mut sim = Simulation::new(core);
    for (i, u) in setup.users.iter().enumerate() {
        sim.add_agent(Client {
            user: i,
            spec: u.clone(),
            system: system.clone(),
            servers: discovered(setup.servers, u.n_max, seed, i),
            book: book.clone(),
            submitted: 0,
            mandatory_left: FxHashSet::default(),
            live: FxHashSet::default(),
            optional_on: FxHashMap::default(),
            deadline_passed: false,
            gone: false,
        });
    }
    let n = setup.users.len();
    let mut c = Collect {
        book: book.clone(),
        users: setup.users.clone(),
        out: vec![UserOutcome::default(); n],
        late: vec![0; n],
        mandatory_done: vec![0; n],
    };
    let stats = sim.run_agents(&mut fairsched_core::sink::Fanout(vec![&mut c, extra]))?;
    for (i, u) in setup.users.iter().enumerate() {
        c.out[i].happy = c.mandatory_done[i] >= u.n_min;
    }
    let spans: Vec<Span> = setup
        .users
        .iter()
        .map(|u| Span {
            arrival: u.arrival.as_secs_f64(),
            deadline: u.deadline.as_secs_f64(),
        })
        .collect();
    Ok(RunResult {
        metrics: metrics(&spans, &c.out, setup.servers),
        kills: stats.core.requeues,
        users: n,
    })
}

/// Medians over runs of one point of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub system: String,
    /// The legacy clients' n_submit (Diet-ethic: none, it does not guess).
    pub n_submit: Option<u32>,
    pub unhappy: f64,
    pub unfairness: f64,
    pub completed: f64,
    pub kills: f64,
    pub users: f64,
    pub runs: u32,
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    match x.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => x[n / 2],
        n => (x[n / 2 - 1] + x[n / 2]) / 2.0,
    }
}

/// The systems of a sweep, in the order of its points: Diet-ethic, the
/// legacy system at every `n_submit`, then each `with` order policy with
/// Diet-ethic's clients.
pub fn systems(n_submit: &[u32], with: &[PolicySpec]) -> Vec<System> {
    std::iter::once(System::DietEthic)
        .chain(n_submit.iter().map(|&n| System::Legacy { n_submit: n }))
        .chain(with.iter().map(|o| System::Dispatcher { order: o.clone() }))
        .collect()
}

/// Run `r` of `system` (seed r of a run: `derive_seed(seed, r)`; scenario
/// draws and clients' discovery use it).
pub fn run_one(
    registry: &Registry,
    scenario_name: &str,
    custom: Option<&Setup>,
    system: &System,
    r: u32,
    seed: u64,
) -> Result<RunResult, SimError> {
    let run_seed = derive_seed(seed, r as u64);
    let setup = match custom {
        Some(c) => c.clone(),
        None => scenario(scenario_name, run_seed)?,
    };
    run(registry, &setup, system, run_seed)
}

/// The medians of each system's `runs` results (`results` in (system,
/// run) order).
pub fn points(systems: &[System], results: &[RunResult], runs: u32) -> Vec<Point> {
    systems
        .iter()
        .enumerate()
        .map(|(s, sys)| {
            let mine = &results[s * runs as usize..(s + 1) * runs as usize];
            let m = |f: &dyn Fn(&RunResult) -> f64| median(mine.iter().map(f).collect());
            Point {
                system: sys.name(),
                n_submit: match sys {
                    System::Legacy { n_submit } => Some(*n_submit),
                    _ => None,
                },
                unhappy: m(&|r| r.metrics.unhappy as f64),
                unfairness: m(&|r| r.metrics.unfairness),
                completed: m(&|r| r.metrics.completed as f64),
                kills: m(&|r| r.kills as f64),
                users: m(&|r| r.users as f64),
                runs,
            }
        })
        .collect()
}

/// Diet-ethic and the legacy system at every `n_submit`, `runs` seeds
/// each (see [`run_one`]), in parallel; identical whatever the thread
/// count. The first point is Diet-ethic's.
pub fn sweep(
    registry: &Registry,
    scenario_name: &str,
    custom: Option<&Setup>,
    n_submit: &[u32],
    runs: u32,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Point>, SimError> {
    if runs == 0 {
        return Err(SimError::Config("--runs 0: nothing to run".into()));
    }
    let systems = systems(n_submit, &[]);
    let work: Vec<(usize, u32)> = (0..systems.len())
        .flat_map(|s| (0..runs).map(move |r| (s, r)))
        .collect();
    let results: Vec<Result<RunResult, SimError>> = work
        .par_iter()
        .map(|&(s, r)| {
            let res = run_one(registry, scenario_name, custom, &systems[s], r, seed);
            tick();
            res
        })
        .collect();
    let results: Vec<RunResult> = results.into_iter().collect::<Result<_, _>>()?;
    Ok(points(&systems, &results, runs))
}
