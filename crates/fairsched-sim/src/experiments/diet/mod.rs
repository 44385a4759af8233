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
//!
//! Beside the scenario, a run takes [`Readings`] of what the paper leaves
//! open: a [`Timing`] model (latencies, overhead, jitter; none by default)
//! and key 4's reading of the servers' queue ([`Key4`]).

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
pub use fairsched_core::policy::diet_ethic::Key4;
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

/// The paper's scenarios. The three `-absolute` ones are the day-time
/// scenarios under the paper's text as written (every user's deadline is
/// 100 s, absolute: "d(i) = 100 s", and "all other experimental
/// parameters are kept the same"); the names without the suffix keep the
/// spec's reading (100 s after the user's own arrival, see [`scenario`]).
pub const SCENARIOS: [&str; 9] = [
    "night-simultaneous",
    "night-consecutive",
    "day-regular",
    "day-irregular",
    "day-irregular-random",
    "scalability",
    "day-regular-absolute",
    "day-irregular-absolute",
    "day-irregular-random-absolute",
];

/// The suffix of the day-time scenarios whose users share the absolute
/// deadline 100 s (the paper's text as written).
pub const ABSOLUTE: &str = "-absolute";

/// The n_submit values of the legacy system's sweep.
pub const N_SUBMIT: [u32; 9] = [3, 10, 50, 100, 150, 190, 250, 500, 1000];

/// The daily-cycle arrival rate of Calzarossa & Serazzi (1985), for t in
/// [−0.5, 0.5] (a working day): spec/diet-ethic.md.
pub fn daily_cycle(t: f64) -> f64 {
    const C: [f64; 9] = [3.1, -8.5, 24.7, 130.8, 107.7, -804.2, -2038.5, 1856.8, 4618.6];
    C.iter().rev().fold(0.0, |acc, c| acc * t + c)
}

/// Scenario `name` drawn with `seed` (only the irregular ones use it).
///
/// Deadlines: night-time users (and scalability's) share one absolute
/// deadline, 100 s ("the next morning"). Day-time users each get 100 s
/// from their own arrival, the only reading under which the paper's
/// day-regular legacy run can complete 1890 requests (10 servers × 100 s
/// hold at most 1000). `day-…-absolute` is the same scenario (the same
/// arrivals and durations for a seed) under the paper's text as written:
/// every user's deadline is 100 s, absolute. (spec/diet-ethic.md gives
/// every user, night-time ones too, `t0 + 100 s`; for the night-time
/// scenarios the code keeps the paper's "keep d(i) = 100 s": the ideal
/// n_submit is 100 either way, docs/diet-ethic.md.)
pub fn scenario(name: &str, seed: u64) -> Result<Setup, SimError> {
    let secs = |s: f64| Time::from_millis((s * 1000.0).round() as i64);
    let base = name.strip_suffix(ABSOLUTE).filter(|b| b.starts_with("day-"));
    let (given, name, absolute) = match base {
        Some(b) => (name, b, true),
        None => (name, name, false),
    };
    let relative = name.starts_with("day-") && !absolute;
    let user = |t0: f64, duration: Time| User {
        arrival: secs(t0),
        deadline: secs(if relative { t0 + 100.0 } else { 100.0 }),
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
        _ => {
            return Err(SimError::Config(format!(
                "scenario {given:?}: expected one of {}",
                SCENARIOS.join(", ")
            )));
        }
    };
    Ok(Setup { servers: 10, users })
}

/// The legacy system's right `n_submit` for `setup`: the largest n (every
/// client submitting n, clamped to its own `[n_min, n_max]`) whose
/// requests all meet their users' deadlines on FCFS servers kept busy
/// from the first arrival. A user's requests are done when its own and
/// those of every user who arrived before it (ties in setup order) are,
/// so n fits when, for every user i in arrival order,
///
/// ```text
/// Σ_{j ≤ i} n_j · T_j  ≤  servers · (d_i − t0_first),   n_j = n clamped to [n_min_j, n_max_j]
/// ```
///
/// The spec gives the values, not a formula ("the legacy system needs
/// exactly the right `n_submit` (100 in the consecutive scenario, 190 in
/// the regular day-time one …)"); this is the derivation behind them
/// (docs/diet-ethic.md). The bound is necessary whatever the scenario (no
/// server works before the first arrival). It is sufficient when the
/// servers never idle once the first user arrives and each user's
/// requests spread evenly over them (n a multiple of `servers`), as in
/// night-consecutive and day-regular; elsewhere it is an upper bound.
/// `None` when even the mandatory requests do not fit, or with no user.
pub fn legacy_right_n_submit(setup: &Setup) -> Option<u32> {
    let mut users: Vec<&User> = setup.users.iter().collect();
    users.sort_by_key(|u| u.arrival); // stable: ties keep setup order
    let first = users.first()?.arrival;
    let fits = |n: u32| {
        let mut work: i128 = 0; // request-ms of the users so far
        users.iter().all(|u| {
            work += i128::from(n.max(u.n_min).min(u.n_max)) * i128::from(u.duration.millis());
            work <= i128::from(setup.servers) * i128::from((u.deadline - first).millis())
        })
    };
    // `fits` only turns false as n grows: the largest n in [1, top] for
    // which it holds, by bisection (n past every n_max changes nothing).
    let top = users.iter().map(|u| u.n_max).max()?;
    if !fits(1) {
        return None;
    }
    let (mut lo, mut hi) = (1, top); // fits(lo); the answer is in [lo, hi]
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    Some(lo)
}

/// The timing model: how long a client's messages take, and what a
/// server spends on each request beside its work. Every value is zero by
/// default (ideal timing, the results of the model without it).
///
/// - A submission reaches its server `submit_latency` after the client
///   sent it; so does a cancellation.
/// - The client learns that a request ended `complete_latency` after it
///   ended on its server.
/// - Each request keeps its server busy `overhead` longer than its work
///   `T_i` (a run killed partway loses what it ran, overhead included).
///   The server-time counts as allocated to the user, as the spec's
///   `r_allocated` is server-time.
/// - Each message (submission, cancellation, completion notice) is
///   delayed by a further draw, uniform in [0, `jitter`] ms, from the
///   client's own stream (`derive_seed` of the run's seed and the user).
///
/// In JSON (sweep files, Python) each value is in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timing {
    /// Client → server: submissions and cancellations.
    pub submit_latency: Time,
    /// Server → client: the notice that a request ended.
    pub complete_latency: Time,
    /// Per request, on the server.
    pub overhead: Time,
    /// Upper bound of each message's extra uniform delay.
    pub jitter: Time,
}

/// The largest value of a [`Timing`] field (ten days).
pub const MAX_TIMING: Time = Time::from_secs(864_000);

impl Timing {
    /// Ideal timing: every value zero.
    pub fn is_zero(&self) -> bool {
        *self == Timing::default()
    }
    /// Each value between 0 and [`MAX_TIMING`]; a mistake names the flag.
    pub fn check(&self) -> Result<(), SimError> {
        for (flag, v) in [
            ("--submit-latency", self.submit_latency),
            ("--complete-latency", self.complete_latency),
            ("--overhead", self.overhead),
            ("--jitter", self.jitter),
        ] {
            if v < Time::ZERO || v > MAX_TIMING {
                return Err(SimError::usage(format!(
                    "{flag} {} ms: give a duration from 0 to {} s",
                    v.millis(),
                    MAX_TIMING.whole_secs()
                )));
            }
        }
        Ok(())
    }
    /// One line for the notes: the non-zero values.
    pub fn describe(&self) -> String {
        let ms = |t: Time| format!("{} ms", t.millis());
        format!(
            "submission latency {}, completion latency {}, server overhead {} per request, jitter up to {} per message",
            ms(self.submit_latency),
            ms(self.complete_latency),
            ms(self.overhead),
            ms(self.jitter)
        )
    }
}

/// The client node (readings; issue 41): the one machine every client of
/// the run runs on, as in the paper's scalability run ("on the client
/// node, nU = 100 client have been launched simultaneously"). It sends a
/// client's set-up submissions and its clean-up cancellations one at a
/// time, at a finite rate for all clients together; a rate of zero (the
/// default) is no limit, the model without a client node.
///
/// - A message leaves the node `1 / rate` after the one before it
///   (rounded up to the µs, the departure to the ms); the timing model's
///   latency and jitter then apply from its departure.
/// - Clients that queue messages at the same instant share the node
///   ([`NodeOrder::Shared`]: one message of each in turn) or take it one
///   after another ([`NodeOrder::Fifo`]: in the order they queued);
///   messages queued at a later instant wait behind those queued before.
/// - A client's monitoring starts when its set-up has left the node: a
///   completion it learns of before then is acted on then.
/// - Monitoring submissions (one optional request for each completed
///   one) do not queue: the paper's node "managed to generate enough
///   requests, so as to keep SeDs busy".
///
/// In JSON (sweep files, Python) each rate is in messages per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientNode {
    /// Set-up submissions per second, all clients together (0: no limit).
    pub setup_rate: u32,
    /// Clean-up cancellations per second, all clients together (0: no
    /// limit).
    pub cleanup_rate: u32,
    /// How clients queuing at the same instant share the node.
    pub order: NodeOrder,
}

/// How the client node serves clients that queue at the same instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeOrder {
    /// One message of each client in turn (processor sharing).
    #[default]
    Shared,
    /// One client's messages after another's.
    Fifo,
}

impl NodeOrder {
    pub const NAMES: [&'static str; 2] = ["shared", "fifo"];
    pub fn name(self) -> &'static str {
        match self {
            NodeOrder::Shared => "shared",
            NodeOrder::Fifo => "fifo",
        }
    }
}

impl core::str::FromStr for NodeOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<NodeOrder, String> {
        match s {
            "shared" => Ok(NodeOrder::Shared),
            "fifo" => Ok(NodeOrder::Fifo),
            _ => Err(format!("{s:?}: expected {}", NodeOrder::NAMES.join(" or "))),
        }
    }
}

/// The largest rate of the client node (messages per second).
pub const MAX_RATE: u32 = 1_000_000;

impl ClientNode {
    /// No client node: every rate zero (the order then does nothing).
    pub fn is_zero(&self) -> bool {
        self.setup_rate == 0 && self.cleanup_rate == 0
    }
    /// Its record in summary.json is absent at the default.
    pub fn is_default(&self) -> bool {
        *self == ClientNode::default()
    }
    /// Each rate at most [`MAX_RATE`]; a mistake names the flag.
    pub fn check(&self) -> Result<(), SimError> {
        for (flag, v) in [
            ("--setup-rate", self.setup_rate),
            ("--cleanup-rate", self.cleanup_rate),
        ] {
            if v > MAX_RATE {
                return Err(SimError::usage(format!(
                    "{flag} {v}: give messages per second from 0 (no limit) to {MAX_RATE}"
                )));
            }
        }
        if self.order != NodeOrder::Shared && self.setup_rate == 0 && self.cleanup_rate == 0 {
            return Err(SimError::usage(format!(
                "--node-order {}: the order in which the client node sends queued messages, and with no --setup-rate or --cleanup-rate nothing queues: give a rate",
                self.order.name()
            )));
        }
        Ok(())
    }
    /// One line for the notes.
    pub fn describe(&self) -> String {
        let rate = |r: u32| {
            if r == 0 {
                "no limit".to_string()
            } else {
                format!("{r} per second")
            }
        };
        format!(
            "set-up submissions {}, clean-up cancellations {}, clients queuing together served {}",
            rate(self.setup_rate),
            rate(self.cleanup_rate),
            match self.order {
                NodeOrder::Shared => "in turn, one message each (shared)",
                NodeOrder::Fifo => "one after another (fifo)",
            }
        )
    }
}

/// Which completed requests count (readings; issue 41).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Count {
    /// Every request that completed on its server (the default).
    #[default]
    Servers,
    /// Only the results a client collected: requests that completed
    /// before it entered its clean-up (the paper's client "gathers the
    /// results of all completed requests and cancels the remaining").
    /// Later ones still count as allocated server-time.
    Collected,
}

impl Count {
    pub const NAMES: [&'static str; 2] = ["servers", "collected"];
    pub fn is_default(&self) -> bool {
        *self == Count::default()
    }
}

impl core::str::FromStr for Count {
    type Err = String;
    fn from_str(s: &str) -> Result<Count, String> {
        match s {
            "servers" => Ok(Count::Servers),
            "collected" => Ok(Count::Collected),
            _ => Err(format!("{s:?}: expected {}", Count::NAMES.join(" or "))),
        }
    }
}

/// Which phase a message on the client node belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Setup,
    Cleanup,
}

/// The client node's state in a run, shared by its clients.
struct Node {
    cfg: ClientNode,
    /// When (µs) the node is done with what it was given.
    busy_until: i64,
    /// Batches queued and not yet given their departures: (user, count,
    /// phase), in the order queued.
    queued: Vec<(usize, usize, Phase)>,
    /// Departures given to each user's batch, not yet taken.
    given: FxHashMap<usize, Vec<Time>>,
}

impl Node {
    fn new(cfg: ClientNode) -> Node {
        Node {
            cfg,
            busy_until: 0,
            queued: Vec::new(),
            given: FxHashMap::default(),
        }
    }
    /// Whether messages of `phase` queue (a rate is set).
    fn limits(&self, phase: Phase) -> bool {
        self.rate(phase) > 0
    }
    fn rate(&self, phase: Phase) -> u32 {
        match phase {
            Phase::Setup => self.cfg.setup_rate,
            Phase::Cleanup => self.cfg.cleanup_rate,
        }
    }
    /// Each message's time on the node, in µs (rounded up).
    fn cost(&self, phase: Phase) -> i64 {
        let r = i64::from(self.rate(phase));
        (1_000_000 + r - 1) / r
    }
    /// `user` queues `count` messages of `phase` now.
    fn queue(&mut self, user: usize, count: usize, phase: Phase) {
        self.queued.push((user, count, phase));
    }
    /// Gives every batch queued so far its departures, from `now`, and
    /// returns `user`'s.
    fn take(&mut self, user: usize, now: Time) -> Vec<Time> {
        if !self.queued.is_empty() {
            let mut t = self.busy_until.max(now.millis() * 1000);
            let queued = std::mem::take(&mut self.queued);
            let mut out: Vec<Vec<Time>> = queued.iter().map(|_| Vec::new()).collect();
            let leave = |t: &mut i64, b: usize, phase: Phase, out: &mut Vec<Vec<Time>>| {
                *t += self.cost(phase);
                out[b].push(Time::from_millis((*t + 999) / 1000));
            };
            match self.cfg.order {
                NodeOrder::Fifo => {
                    for (b, &(_, count, phase)) in queued.iter().enumerate() {
                        for _ in 0..count {
                            leave(&mut t, b, phase, &mut out);
                        }
                    }
                }
                NodeOrder::Shared => {
                    let most = queued.iter().map(|q| q.1).max().unwrap_or(0);
                    for k in 0..most {
                        for (b, &(_, count, phase)) in queued.iter().enumerate() {
                            if k < count {
                                leave(&mut t, b, phase, &mut out);
                            }
                        }
                    }
                }
            }
            self.busy_until = t;
            for ((u, _, _), deps) in queued.into_iter().zip(out) {
                self.given.entry(u).or_default().extend(deps);
            }
        }
        self.given.remove(&user).unwrap_or_default()
    }
}

/// What a run reads into the paper where it is open
/// (docs/diet-ethic.md, "Readings"). The default is the model as first
/// built: ideal timing, key 4 counting finished runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Readings {
    pub timing: Timing,
    /// Key 4 of the Diet-ethic system's servers (the `diet-ethic` queue's
    /// `key4` parameter; other systems' servers do not read it).
    pub key4: Key4,
    /// The client node's throughput (none by default).
    pub node: ClientNode,
    /// Which completed requests count (all, by default).
    pub count: Count,
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
    /// The servers' order policy (Diet-ethic's with key 4 as `key4` reads
    /// it).
    pub fn order_with(&self, key4: Key4) -> PolicySpec {
        match (self, key4) {
            (System::DietEthic, Key4::Running) => "diet-ethic[key4=running]".parse().expect("registered"),
            _ => self.order(),
        }
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
    /// When each user's client entered its clean-up.
    left: FxHashMap<usize, Time>,
}

/// The servers a client "discovers": the platform's, in a seeded order.
fn discovered(servers: u32, n_max: u32, seed: u64, user: usize) -> Vec<MachineId> {
    let mut s: Vec<MachineId> = (0..servers).map(MachineId).collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(seed, 0x5E4 + user as u64));
    s.shuffle(&mut rng);
    s.truncate(n_max.max(1) as usize);
    s
}

/// A client's message on its way (timing model), by wake-up token.
enum Message {
    /// A request on its way to `server`. `cancel_at`: when the client's
    /// cancellation reaches the server, if the client left meanwhile.
    Submit {
        server: MachineId,
        optional: bool,
        cancel_at: Option<Time>,
    },
    /// The notice that `task` ended.
    Ended { task: TaskId, completed: bool },
    /// A cancellation of `task` on its way.
    Cancel { task: TaskId },
}

/// A client: Diet-ethic's dispatcher or a legacy client.
struct Client {
    user: usize,
    spec: User,
    system: System,
    servers: Vec<MachineId>,
    book: Rc<RefCell<Book>>,
    /// Requests submitted so far (sent, whether or not they arrived).
    submitted: u32,
    /// Mandatory requests not completed yet (as far as the client knows).
    mandatory_left: FxHashSet<TaskId>,
    /// Submitted, not ended (as far as the client knows), and where.
    live: FxHashMap<TaskId, MachineId>,
    /// Optional requests live per server (Diet-ethic keeps at most one).
    optional_on: FxHashMap<TaskId, MachineId>,
    deadline_passed: bool,
    gone: bool,
    timing: Timing,
    /// The jitter's draws (drawn from only with a jitter).
    rng: rand_pcg::Pcg64Mcg,
    /// Messages on their way, by wake-up token.
    messages: FxHashMap<u64, Message>,
    /// The client node (shared by the run's clients).
    node: Rc<RefCell<Node>>,
    /// Messages queued on the client node, in the order queued.
    queued: Vec<Queued>,
    /// When the client's set-up has left the node (its monitoring starts).
    setup_done: Time,
    /// Requests that reached their server after the client left, before
    /// their cancellation left the node: by their message's token.
    landed: FxHashMap<u64, TaskId>,
    next_token: u64,
    /// Mandatory requests sent that have not reached their server.
    mandatory_in_flight: u32,
    /// When the last message sent to each server reaches it, and the last
    /// notice from each server reaches the client: messages between two
    /// ends do not overtake one another, as on one connection.
    to_server: FxHashMap<MachineId, Time>,
    from_server: FxHashMap<MachineId, Time>,
}

/// A message waiting on the client node.
enum Queued {
    Submit {
        server: MachineId,
        optional: bool,
    },
    Cancel {
        task: TaskId,
        server: MachineId,
    },
    /// The cancellation of the request on its way as message `token`.
    CancelOnTheWay {
        token: u64,
        server: MachineId,
    },
}

const WAKE_ARRIVE: u64 = 1;
const WAKE_DEADLINE: u64 = 2;
/// The client's messages queued on the client node get their departures.
const WAKE_NODE: u64 = 3;
/// The first token of a message on its way.
const WAKE_MESSAGE: u64 = 4;

impl Client {
    // One argument per thing a client is given by its run; a struct for
    // them would be built at the one call below and taken apart here.
    #[allow(clippy::too_many_arguments)]
    fn new(
        user: usize,
        spec: User,
        system: System,
        servers: Vec<MachineId>,
        book: Rc<RefCell<Book>>,
        timing: Timing,
        node: Rc<RefCell<Node>>,
        seed: u64,
    ) -> Client {
        Client {
            user,
            spec,
            system,
            servers,
            book,
            submitted: 0,
            mandatory_left: FxHashSet::default(),
            live: FxHashMap::default(),
            optional_on: FxHashMap::default(),
            deadline_passed: false,
            gone: false,
            timing,
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(derive_seed(seed, 0x71_4E), user as u64)),
            messages: FxHashMap::default(),
            node,
            queued: Vec::new(),
            setup_done: Time::ZERO,
            landed: FxHashMap::default(),
            next_token: WAKE_MESSAGE,
            mandatory_in_flight: 0,
            to_server: FxHashMap::default(),
            from_server: FxHashMap::default(),
        }
    }

    /// When a message sent now to `server` (`to_server`) or from it
    /// reaches the other end: `base` later plus the jitter's draw, and not
    /// before the previous message between the two.
    fn arrival(&mut self, now: Time, server: MachineId, to_server: bool) -> Time {
        self.arrival_from(now, server, to_server)
    }

    /// [`Client::arrival`] of a message that leaves the client at `now`.
    fn arrival_from(&mut self, now: Time, server: MachineId, to_server: bool) -> Time {
        let base = if to_server {
            self.timing.submit_latency
        } else {
            self.timing.complete_latency
        };
        let mut at = now + base;
        if self.timing.jitter > Time::ZERO {
            at += Time::from_millis(self.rng.random_range(0..=self.timing.jitter.millis()));
        }
        let channel = if to_server {
            &mut self.to_server
        } else {
            &mut self.from_server
        };
        let last = channel.entry(server).or_insert(at);
        *last = at.max(*last);
        *last
    }

    /// `m` reaches its end at `at`.
    fn post(&mut self, ctx: &mut AgentCtx, at: Time, m: Message) {
        let token = self.next_token;
        self.next_token += 1;
        self.messages.insert(token, m);
        ctx.wake_at(at, token);
    }

    /// Sends a request to `server`: it reaches it after the submission
    /// latency.
    fn send(&mut self, ctx: &mut AgentCtx, server: MachineId, optional: bool) {
        self.submitted += 1;
        if self.in_setup() {
            // It waits on the client node: in flight already.
            if !optional {
                self.mandatory_in_flight += 1;
            }
            self.queued.push(Queued::Submit { server, optional });
            return;
        }
        let at = self.arrival(ctx.now(), server, true);
        if at == ctx.now() {
            self.submit(ctx, server, optional);
            return;
        }
        if !optional {
            self.mandatory_in_flight += 1;
        }
        self.post(
            ctx,
            at,
            Message::Submit {
                server,
                optional,
                cancel_at: None,
            },
        );
    }

    /// Whether set-up submissions queue on the client node (only while
    /// [`Client::setup`] runs: `setup_done` is then unset).
    fn in_setup(&self) -> bool {
        self.setup_done == Time::MIN && self.node.borrow().limits(Phase::Setup)
    }

    /// Hands what the client queued on the node to it, in one batch: the
    /// departures come at [`WAKE_NODE`], later this instant, once every
    /// client queuing now has queued.
    /// The requests still on their way to a server, `(token, server)`,
    /// in token order: each gets a cancellation that follows it.
    fn on_the_way(&self) -> Vec<(u64, MachineId)> {
        let mut v: Vec<(u64, MachineId)> = self
            .messages
            .iter()
            .filter_map(|(&k, m)| match m {
                Message::Submit { server, .. } => Some((k, *server)),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v
    }

    fn queue_on_node(&mut self, ctx: &mut AgentCtx, phase: Phase) {
        if self.queued.is_empty() {
            return;
        }
        self.node.borrow_mut().queue(self.user, self.queued.len(), phase);
        ctx.wake_at(ctx.now(), WAKE_NODE);
    }

    /// The node gives the queued messages their departures: each then
    /// travels as any other.
    fn leave_node(&mut self, ctx: &mut AgentCtx) {
        let departures = self.node.borrow_mut().take(self.user, ctx.now());
        let queued = std::mem::take(&mut self.queued);
        debug_assert_eq!(departures.len(), queued.len());
        for (q, at) in queued.into_iter().zip(departures) {
            match q {
                Queued::Submit { server, optional } => {
                    self.setup_done = self.setup_done.max(at);
                    let at = self.arrival_from(at, server, true);
                    self.post(
                        ctx,
                        at,
                        Message::Submit {
                            server,
                            optional,
                            cancel_at: None,
                        },
                    );
                }
                Queued::Cancel { task, server } => {
                    let at = self.arrival_from(at, server, true);
                    self.post(ctx, at, Message::Cancel { task });
                }
                Queued::CancelOnTheWay { token, server } => {
                    let at = self.arrival_from(at, server, true);
                    if let Some(Message::Submit { cancel_at, .. }) = self.messages.get_mut(&token) {
                        *cancel_at = Some(at);
                    } else if let Some(task) = self.landed.remove(&token) {
                        self.post(ctx, at, Message::Cancel { task });
                    }
                }
            }
        }
    }

    /// A request reaches `server` now.
    fn submit(&mut self, ctx: &mut AgentCtx, server: MachineId, optional: bool) -> TaskId {
        let mut spec = TaskSpec::new(0, self.user as i64, 0).on(server);
        spec.org = OrgId(0);
        spec.user = UserId(self.user as i64);
        if optional {
            spec = spec.optional();
        }
        let service = self.spec.duration + self.timing.overhead;
        let id = ctx.submit_new(Arrival::new(spec, ctx.now(), service));
        self.book.borrow_mut().owner.insert(id, self.user);
        self.live.insert(id, server);
        if optional {
            self.optional_on.insert(id, server);
        } else {
            self.mandatory_left.insert(id);
        }
        id
    }

    /// Cancels `task`, on `server`: the cancellation reaches it after the
    /// submission latency (a server ignores one for a request that ended).
    fn cancel(&mut self, ctx: &mut AgentCtx, task: TaskId, server: MachineId) {
        let at = self.arrival(ctx.now(), server, true);
        if at == ctx.now() {
            ctx.cancel(task);
        } else {
            self.post(ctx, at, Message::Cancel { task });
        }
    }

    /// Leaves once every mandatory request completed and the deadline
    /// passed: cancels what is left, requests on their way included.
    fn maybe_leave(&mut self, ctx: &mut AgentCtx) {
        if self.gone
            || !self.deadline_passed
            || !self.mandatory_left.is_empty()
            || self.mandatory_in_flight > 0
        {
            return;
        }
        self.gone = true;
        self.book.borrow_mut().left.insert(self.user, ctx.now());
        let mut left: Vec<(TaskId, MachineId)> = self.live.iter().map(|(&t, &m)| (t, m)).collect();
        left.sort_unstable();
        let on_node = self.node.borrow().limits(Phase::Cleanup);
        if on_node {
            self.queued.extend(
                left.into_iter()
                    .map(|(task, server)| Queued::Cancel { task, server }),
            );
            self.queued.extend(
                self.on_the_way()
                    .into_iter()
                    .map(|(token, server)| Queued::CancelOnTheWay { token, server }),
            );
            self.queue_on_node(ctx, Phase::Cleanup);
            return;
        }
        for (t, m) in left {
            self.cancel(ctx, t, m);
        }
        // Requests on their way: each cancellation follows its request.
        for (k, server) in self.on_the_way() {
            let at = self.arrival(ctx.now(), server, true);
            if let Some(Message::Submit { cancel_at, .. }) = self.messages.get_mut(&k) {
                *cancel_at = Some(at);
            }
        }
    }

    fn setup(&mut self, ctx: &mut AgentCtx) {
        if self.node.borrow().limits(Phase::Setup) {
            // Unset until the set-up has left the node.
            self.setup_done = Time::MIN;
        }
        self.send_setup(ctx);
        if self.setup_done == Time::MIN {
            self.setup_done = ctx.now();
            self.queue_on_node(ctx, Phase::Setup);
        }
    }

    fn send_setup(&mut self, ctx: &mut AgentCtx) {
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

    /// The client learns that `task` ended.
    fn ended(&mut self, ctx: &mut AgentCtx, task: TaskId, completed: bool) {
        if self.live.remove(&task).is_none() {
            return;
        }
        self.mandatory_left.remove(&task);
        let server = self.optional_on.remove(&task);
        if let (true, Some(server), true, false) = (self.system.dispatches(), server, completed, self.gone)
            && self.submitted < self.spec.n_max
        {
            self.send(ctx, server, true);
        }
        self.maybe_leave(ctx);
    }

    /// A message of the client's reaches its end.
    fn arrived(&mut self, ctx: &mut AgentCtx, token: u64, m: Message) {
        match m {
            Message::Submit {
                server,
                optional,
                cancel_at,
            } => {
                if !optional {
                    self.mandatory_in_flight -= 1;
                }
                match cancel_at {
                    // The client left, and its cancellation waits on the
                    // client node: it will follow the request.
                    None if self.gone => {
                        let id = self.submit(ctx, server, optional);
                        self.landed.insert(token, id);
                    }
                    None => {
                        self.submit(ctx, server, optional);
                    }
                    // The client left while the request was on its way:
                    // its cancellation follows it (at the same instant,
                    // the request is dropped).
                    Some(at) if at > ctx.now() => {
                        let id = self.submit(ctx, server, optional);
                        self.post(ctx, at, Message::Cancel { task: id });
                    }
                    Some(_) => {}
                }
                self.maybe_leave(ctx);
            }
            Message::Ended { task, completed } => self.ended(ctx, task, completed),
            Message::Cancel { task } => ctx.cancel(task),
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
            WAKE_NODE => self.leave_node(ctx),
            WAKE_DEADLINE => {
                self.deadline_passed = true;
                self.maybe_leave(ctx);
            }
            _ => {
                if let Some(m) = self.messages.remove(&token) {
                    self.arrived(ctx, token, m);
                }
            }
        }
        Ok(())
    }

    fn on_action(&mut self, a: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        let Action::Ended(r) = a else { return Ok(()) };
        let Some(&server) = self.live.get(&r.spec.id) else {
            return Ok(());
        };
        let (task, completed) = (r.spec.id, r.outcome == Outcome::Completed);
        // A client that left does nothing with what it learns; one in its
        // set-up on the client node acts once the set-up has left it.
        let at = if self.gone {
            ctx.now()
        } else {
            self.arrival(ctx.now(), server, false).max(self.setup_done)
        };
        if at == ctx.now() {
            self.ended(ctx, task, completed);
        } else {
            self.post(ctx, at, Message::Ended { task, completed });
        }
        Ok(())
    }
}

/// Collects each user's allocated time and completions.
struct Collect {
    book: Rc<RefCell<Book>>,
    count: Count,
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
        // Past its client's clean-up, a result is not collected.
        let collected = self.count == Count::Servers
            || self
                .book
                .borrow()
                .left
                .get(&u)
                .is_none_or(|&left| rec.end <= left);
        let o = &mut self.out[u];
        for run in rec.requeued.iter().chain(rec.last.iter()) {
            o.allocated += (run.stop - run.start).as_secs_f64();
        }
        if rec.outcome == Outcome::Completed && collected {
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
    run_with(registry, setup, system, seed, &Readings::default(), extra)
}

/// [`run_observed`] under `readings` (the timing model, key 4).
pub fn run_with(
    registry: &Registry,
    setup: &Setup,
    system: &System,
    seed: u64,
    readings: &Readings,
    extra: &mut dyn Observer,
) -> Result<RunResult, SimError> {
    readings.timing.check()?;
    readings.node.check()?;
    let core = Scheduler::new(
        &Platform::machines(&vec![1; setup.servers as usize]),
        derive_seed(seed, 1),
        registry.build_allocate(&"least-loaded".parse().expect("registered"))?,
        registry.build_order(&system.order_with(readings.key4))?,
        None,
    );
    let book = Rc::new(RefCell::new(Book::default()));
    let node = Rc::new(RefCell::new(Node::new(readings.node)));
    let mut sim = Simulation::new(core);
    for (i, u) in setup.users.iter().enumerate() {
        sim.add_agent(Client::new(
            i,
            u.clone(),
            system.clone(),
            discovered(setup.servers, u.n_max, seed, i),
            book.clone(),
            readings.timing,
            node.clone(),
            seed,
        ));
    }
    let n = setup.users.len();
    let mut c = Collect {
        book: book.clone(),
        count: readings.count,
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

/// Run `r` of `system` under `readings` (seed r of a run:
/// `derive_seed(seed, r)`; scenario draws, clients' discovery and the
/// timing model's jitter use it).
pub fn run_one(
    registry: &Registry,
    scenario_name: &str,
    custom: Option<&Setup>,
    system: &System,
    r: u32,
    seed: u64,
    readings: &Readings,
) -> Result<RunResult, SimError> {
    let run_seed = derive_seed(seed, r as u64);
    let setup = match custom {
        Some(c) => c.clone(),
        None => scenario(scenario_name, run_seed)?,
    };
    run_with(registry, &setup, system, run_seed, readings, &mut Quiet)
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
            let res = run_one(
                registry,
                scenario_name,
                custom,
                &systems[s],
                r,
                seed,
                &Readings::default(),
            );
            tick();
            res
        })
        .collect();
    let results: Vec<RunResult> = results.into_iter().collect::<Result<_, _>>()?;
    Ok(points(&systems, &results, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: i64) -> Time {
        Time::from_millis(t)
    }

    /// Every task's end record, in end order.
    #[derive(Default)]
    struct Ends(Vec<EndRecord>);
    impl Observer for Ends {
        fn on_task(&mut self, rec: &EndRecord, _m: &TaskMeta) {
            self.0.push(rec.clone());
        }
        fn wants_steps(&self) -> bool {
            false
        }
    }

    /// One server and one Diet-ethic user from 0 with requests of 1 s.
    fn alone(n_max: u32, deadline: Time) -> Setup {
        Setup {
            servers: 1,
            users: vec![User {
                arrival: Time::ZERO,
                deadline,
                n_min: 1,
                n_max,
                duration: Time::from_secs(1),
            }],
        }
    }

    fn timing(submit: i64, complete: i64, overhead: i64, jitter: i64) -> Readings {
        Readings {
            timing: Timing {
                submit_latency: ms(submit),
                complete_latency: ms(complete),
                overhead: ms(overhead),
                jitter: ms(jitter),
            },
            key4: Key4::Finished,
            ..Readings::default()
        }
    }

    /// (submit, start, end) in ms and whether it completed, per request in
    /// submission order.
    fn requests(setup: &Setup, r: &Readings, seed: u64) -> (RunResult, Vec<(i64, i64, i64, bool)>) {
        let mut e = Ends::default();
        let res = run_with(&Registry::builtin(), setup, &System::DietEthic, seed, r, &mut e).unwrap();
        let mut v: Vec<_> =
            e.0.iter()
                .map(|x| {
                    (
                        x.spec.id,
                        x.submit.millis(),
                        x.start().map_or(-1, |t| t.millis()),
                        x.end.millis(),
                        x.outcome == Outcome::Completed,
                    )
                })
                .collect();
        v.sort();
        (res, v.into_iter().map(|(_, a, b, c, d)| (a, b, c, d)).collect())
    }

    /// [`legacy_right_n_submit`] on hand-made setups. Two users on one
    /// server, 1 s requests, both from 0, deadlines 10 s and 7 s: the
    /// first is done after its own n (n ≤ 10), the second after both
    /// users' (2n ≤ 7), so n = 3. A cap of 2 on the first leaves the
    /// second room (2 + n ≤ 7: 5); 2 s requests for the first count twice
    /// (2n + n ≤ 7: 2); two servers double the room (2n ≤ 14: 7). Users
    /// wait in arrival order, not setup order; mandatory requests that
    /// miss a deadline leave no right n.
    #[test]
    fn the_right_n_submit_is_the_largest_that_meets_every_deadline() {
        let user = |arrival: i64, deadline: i64, n_min: u32, n_max: u32, t: i64| User {
            arrival: Time::from_secs(arrival),
            deadline: Time::from_secs(deadline),
            n_min,
            n_max,
            duration: Time::from_secs(t),
        };
        let setup = |servers: u32, users: Vec<User>| Setup { servers, users };
        let right = |s: Setup| legacy_right_n_submit(&s);
        assert_eq!(
            right(setup(1, vec![user(0, 10, 1, 100, 1), user(0, 7, 1, 100, 1)])),
            Some(3)
        );
        assert_eq!(
            right(setup(1, vec![user(0, 10, 1, 2, 1), user(0, 7, 1, 100, 1)])),
            Some(5)
        );
        assert_eq!(
            right(setup(1, vec![user(0, 10, 1, 100, 2), user(0, 7, 1, 100, 1)])),
            Some(2)
        );
        assert_eq!(
            right(setup(2, vec![user(0, 10, 1, 100, 1), user(0, 7, 1, 100, 1)])),
            Some(7)
        );
        // The cap binds first: n_max, not the servers' capacity.
        assert_eq!(right(setup(1, vec![user(0, 100, 1, 40, 1)])), Some(40));
        // Arrival order, not setup order: the later arrival waits behind.
        assert_eq!(
            right(setup(1, vec![user(5, 11, 1, 100, 1), user(1, 7, 1, 100, 1)])),
            Some(5)
        );
        assert_eq!(
            right(setup(1, vec![user(0, 5, 3, 100, 1), user(0, 5, 3, 100, 1)])),
            None
        );
        assert_eq!(right(setup(1, vec![])), None);
    }

    #[test]
    fn absolute_day_deadlines_are_100_s_relative_ones_arrival_plus_100() {
        for day in ["day-regular", "day-irregular", "day-irregular-random"] {
            let absolute = format!("{day}{ABSOLUTE}");
            assert!(SCENARIOS.contains(&absolute.as_str()));
            for seed in 0..4 {
                let rel = scenario(day, seed).unwrap();
                let abs = scenario(&absolute, seed).unwrap();
                assert!(!rel.users.is_empty());
                assert_eq!(rel.servers, abs.servers);
                assert_eq!(rel.users.len(), abs.users.len(), "{day}, seed {seed}");
                for (r, a) in rel.users.iter().zip(&abs.users) {
                    assert_eq!(r.deadline, r.arrival + Time::from_secs(100), "{day}");
                    assert_eq!(a.deadline, Time::from_secs(100), "{absolute}");
                    // The same users otherwise: arrivals, durations, n.
                    assert_eq!(
                        User {
                            deadline: r.deadline,
                            ..a.clone()
                        },
                        *r
                    );
                }
            }
        }
        // Only day-time scenarios have an absolute version.
        assert!(scenario("night-consecutive-absolute", 0).is_err());
        let e = scenario("day-lunch-absolute", 0).unwrap_err().to_string();
        assert!(e.contains("day-lunch-absolute"), "{e}");
    }

    /// Latencies: a request reaches its server `submit` after it is sent,
    /// and the client learns of an end `complete` after it: the next
    /// optional request arrives `complete + submit` after the previous one
    /// ended, and the server idles meanwhile.
    #[test]
    fn latencies_delay_arrivals_and_resubmissions() {
        let setup = alone(3, Time::from_secs(10));
        let (_, ideal) = requests(&setup, &Readings::default(), 0);
        assert_eq!(
            ideal,
            vec![
                (0, 0, 1000, true),
                (0, 1000, 2000, true),
                (2000, 2000, 3000, true)
            ]
        );
        let (r, late) = requests(&setup, &timing(100, 200, 0, 0), 0);
        assert_eq!(
            late,
            vec![
                (100, 100, 1100, true),
                (100, 1100, 2100, true),
                (2100 + 200 + 100, 2400, 3400, true)
            ]
        );
        assert_eq!(r.metrics.completed, 3);
    }

    /// Overhead keeps the server busy longer than the request's work; the
    /// server-time counts as allocated.
    #[test]
    fn overhead_lengthens_each_run() {
        let setup = alone(3, Time::from_secs(10));
        let (r, v) = requests(&setup, &timing(0, 0, 50, 0), 0);
        assert_eq!(
            v,
            vec![
                (0, 0, 1050, true),
                (0, 1050, 2100, true),
                (2100, 2100, 3150, true)
            ]
        );
        // Deserved: 1 server × 10 s; allocated 3.15 s.
        let s = r.metrics.satisfaction[0].unwrap();
        assert!((s - 0.315).abs() < 1e-12, "{s}");
    }

    /// A client leaves at its deadline with a request on its way: the
    /// request reaches the server, runs until the cancellation that
    /// follows it arrives, and does not complete.
    #[test]
    fn a_cancellation_follows_its_request_and_the_run_is_lost() {
        let setup = alone(100, Time::from_secs(5));
        let (ideal, _) = requests(&setup, &Readings::default(), 0);
        assert_eq!(ideal.metrics.completed, 5);
        let (r, v) = requests(&setup, &timing(300, 0, 0, 0), 0);
        // Runs: 300–1300 (mandatory), 1300–2300, 2600–3600, 3900–4900;
        // the next is sent at 4900 and arrives at 5200; the client leaves
        // at 5000, its cancellation arrives at 5300.
        assert_eq!(
            v,
            vec![
                (300, 300, 1300, true),
                (300, 1300, 2300, true),
                (2600, 2600, 3600, true),
                (3900, 3900, 4900, true),
                (5200, 5200, 5300, false)
            ]
        );
        assert_eq!(r.metrics.completed, 4);
        assert_eq!(r.metrics.unhappy, 0);
    }

    /// Jitter: each message is late by a draw in [0, jitter], seeded by
    /// the run's seed; messages to one server keep their order.
    #[test]
    fn jitter_is_bounded_seeded_and_keeps_a_channels_order() {
        let setup = Setup {
            servers: 3,
            ..alone(60, Time::from_secs(20))
        };
        let r = timing(100, 0, 0, 40);
        let (a, va) = requests(&setup, &r, 5);
        let (b, vb) = requests(&setup, &r, 5);
        assert_eq!((&va, a.metrics), (&vb, b.metrics));
        let (_, vc) = requests(&setup, &r, 6);
        assert_ne!(va, vc);
        // Setup: everything is sent at 0 and arrives within [100, 140].
        let first: Vec<i64> = va.iter().take(4).map(|x| x.0).collect();
        assert!(first.iter().all(|t| (100..=140).contains(t)), "{va:?}");
        assert!(first.iter().any(|&t| t != first[0]), "{va:?}");
        // Per server, requests arrive in the order they were sent (ids).
        for seed in 0..20 {
            let mut e = Ends::default();
            run_with(&Registry::builtin(), &setup, &System::DietEthic, seed, &r, &mut e).unwrap();
            let mut sent: Vec<(u32, TaskId, Time)> =
                e.0.iter()
                    .map(|x| (x.spec.target.unwrap().0, x.spec.id, x.submit))
                    .collect();
            sent.sort();
            for w in sent.windows(2) {
                if w[0].0 == w[1].0 {
                    assert!(w[0].2 <= w[1].2, "seed {seed}: {w:?}");
                }
            }
        }
    }

    /// With latencies, overhead and jitter, arrivals no longer fall
    /// between two requests: day-regular's newcomers kill running
    /// optional requests and lose their work; scalability loses requests
    /// and its users no longer get identical shares.
    #[test]
    fn a_real_platforms_timing_costs_requests_and_fairness() {
        let registry = Registry::builtin();
        let real = timing(20, 20, 5, 10);
        let day =
            |r: &Readings| run_one(&registry, "day-regular", None, &System::DietEthic, 0, 0, r).unwrap();
        let (ideal, noisy) = (day(&Readings::default()), day(&real));
        assert_eq!((ideal.kills, ideal.metrics.completed), (0, 1900));
        assert!(noisy.kills > 0, "{noisy:?}");
        assert!(noisy.metrics.completed < 1900, "{noisy:?}");
        assert_eq!(noisy.metrics.unhappy, 0);
        let scal = run_one(&registry, "scalability", None, &System::DietEthic, 0, 0, &real).unwrap();
        assert!(scal.metrics.completed < 13_800, "{:?}", scal.metrics.completed);
        assert!(scal.metrics.unfairness > 0.0);
        assert_eq!(scal.metrics.unhappy, 0);
    }

    /// On single-slot servers key 4's readings decide alike (a start is
    /// decided only on an idle server).
    #[test]
    fn key4_readings_agree_on_the_papers_servers() {
        let registry = Registry::builtin();
        for name in [
            "night-consecutive",
            "day-irregular-random",
            "day-regular-absolute",
        ] {
            for (t, r) in [(Timing::default(), 0), (timing(20, 20, 5, 10).timing, 1)] {
                let run = |key4| {
                    let x = Readings {
                        timing: t,
                        key4,
                        ..Readings::default()
                    };
                    run_one(&registry, name, None, &System::DietEthic, r, 3, &x).unwrap()
                };
                let (f, g) = (run(Key4::Finished), run(Key4::Running));
                assert_eq!((f.metrics, f.kills), (g.metrics, g.kills), "{name}");
            }
        }
    }

    fn node(setup_rate: u32, cleanup_rate: u32, order: NodeOrder, count: Count) -> Readings {
        Readings {
            node: ClientNode {
                setup_rate,
                cleanup_rate,
                order,
            },
            count,
            ..Readings::default()
        }
    }

    /// One user, one server, deadline 10 s, requests of 1 s. A client node
    /// sending 2 set-up submissions a second puts the mandatory request
    /// on the server at 0.5 s and the optional one at 1 s: the server
    /// idles the first half second, then runs without a break (each
    /// optional request is replaced as it completes). The one running at
    /// the deadline (9.5–10.5 s) is cancelled by a message that leaves
    /// the node 1 s after the client entered its clean-up (1 per second):
    /// it completes at 10.5 s first. Counted on the servers, 10 requests
    /// complete (as without a node: 0–1 s, …, 9–10 s); collected before
    /// clean-up, 9. The user is allocated 0.5–10.5 s: satisfaction 1.
    #[test]
    fn a_client_node_delays_the_setup_and_keeps_servers_after_the_deadline() {
        let setup = alone(100, Time::from_secs(10));
        let (ideal, v0) = requests(&setup, &Readings::default(), 0);
        assert_eq!(ideal.metrics.completed, 10);
        assert_eq!(v0[9], (9000, 9000, 10_000, true));
        let servers = node(2, 1, NodeOrder::Shared, Count::Servers);
        let (r, v) = requests(&setup, &servers, 0);
        let mut want = vec![(500, 500, 1500, true), (1000, 1500, 2500, true)];
        want.extend((2..10).map(|k| (k * 1000 + 500, k * 1000 + 500, k * 1000 + 1500, true)));
        assert_eq!(v, want);
        assert_eq!(r.metrics.completed, 10);
        let s = r.metrics.satisfaction[0].unwrap();
        assert!((s - 1.0).abs() < 1e-12, "{s}");
        let (c, vc) = requests(&setup, &node(2, 1, NodeOrder::Shared, Count::Collected), 0);
        assert_eq!(vc, want, "counting changes nothing on the servers");
        assert_eq!(c.metrics.completed, 9);
        assert_eq!(c.metrics.satisfaction, r.metrics.satisfaction);
        // Without a clean-up rate the running request is cancelled at
        // 10 s: 9 complete, counted either way.
        let (q, vq) = requests(&setup, &node(2, 0, NodeOrder::Shared, Count::Servers), 0);
        assert_eq!(q.metrics.completed, 9);
        assert_eq!(vq.last(), Some(&(9500, 9500, 10_000, false)));
    }

    /// Two users at 0 on one server, each sending a mandatory and an
    /// optional request through a node of 2 submissions a second: shared,
    /// the users take turns (0.5 s, 1 s, 1.5 s, 2 s: user 0, 1, 0, 1);
    /// fifo, user 0's two go first.
    #[test]
    fn the_node_serves_clients_in_turn_or_one_after_another() {
        let setup = Setup {
            servers: 1,
            users: vec![alone(2, Time::from_secs(10)).users[0].clone(); 2],
        };
        let arrivals = |order| {
            let mut e = Ends::default();
            let r = node(2, 0, order, Count::Servers);
            run_with(&Registry::builtin(), &setup, &System::DietEthic, 0, &r, &mut e).unwrap();
            let mut v: Vec<(i64, i64)> = e.0.iter().map(|x| (x.submit.millis(), x.spec.user.0)).collect();
            v.sort();
            v
        };
        assert_eq!(
            arrivals(NodeOrder::Shared),
            vec![(500, 0), (1000, 1), (1500, 0), (2000, 1)]
        );
        assert_eq!(
            arrivals(NodeOrder::Fifo),
            vec![(500, 0), (1000, 0), (1500, 1), (2000, 1)]
        );
    }

    /// Clean-up at a finite rate keeps the last users' servers: one
    /// server, requests of 3 s, deadline 9 s for both users; user 0 has
    /// one mandatory request (0–3 s), user 1 two (3–9 s), and each an
    /// optional one waiting. At 9 s both leave; user 0 has the least
    /// server-time, so its optional request runs until its cancellation
    /// leaves the node (1 per second: 10 s), then user 1's until 11 s.
    /// Allocated: 3 + 1 and 6 + 1 s against 3 and 6 without a node; each
    /// deserved 4.5 s.
    #[test]
    fn a_slow_clean_up_counts_the_time_past_the_deadline_as_allocated() {
        let user = |n_min| User {
            arrival: Time::ZERO,
            deadline: Time::from_secs(9),
            n_min,
            n_max: n_min + 1,
            duration: Time::from_secs(3),
        };
        let setup = Setup {
            servers: 1,
            users: vec![user(1), user(2)],
        };
        let sat = |r: &Readings| {
            let (res, _) = requests(&setup, r, 0);
            assert_eq!((res.metrics.unhappy, res.metrics.completed), (0, 3));
            res.metrics
                .satisfaction
                .iter()
                .map(|s| (s.unwrap() * 4.5 * 1000.0).round() / 1000.0)
                .collect::<Vec<f64>>()
        };
        assert_eq!(sat(&Readings::default()), vec![3.0, 6.0]);
        for order in [NodeOrder::Shared, NodeOrder::Fifo] {
            assert_eq!(sat(&node(0, 1, order, Count::Collected)), vec![4.0, 7.0]);
        }
        let e = ClientNode {
            cleanup_rate: MAX_RATE + 1,
            ..ClientNode::default()
        }
        .check()
        .unwrap_err()
        .to_string();
        assert!(e.contains("--cleanup-rate"), "{e}");
        let fifo = ClientNode {
            order: NodeOrder::Fifo,
            ..ClientNode::default()
        };
        let e = fifo.check().unwrap_err().to_string();
        assert!(
            e.contains("--node-order fifo") && e.contains("give a rate"),
            "{e}"
        );
        assert!(
            ClientNode {
                setup_rate: 5,
                ..fifo
            }
            .check()
            .is_ok()
        );
    }

    #[test]
    fn timing_values_are_checked_by_flag() {
        let mut t = Timing::default();
        assert!(t.check().is_ok() && t.is_zero());
        t.jitter = ms(-1);
        let e = t.check().unwrap_err().to_string();
        assert!(e.contains("--jitter"), "{e}");
        t.jitter = MAX_TIMING;
        assert!(t.check().is_ok());
        t.overhead = MAX_TIMING + ms(1);
        let e = t.check().unwrap_err().to_string();
        assert!(e.contains("--overhead"), "{e}");
    }
}
