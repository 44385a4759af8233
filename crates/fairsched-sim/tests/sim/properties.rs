//! Properties over random platforms, workloads, policies and outside
//! events, every one of them driven through the real [`Simulation`] (one
//! event loop for the whole crate) and checked by observers as it runs.
//!
//! - `every_run_keeps_the_invariants` (all orders of the registry plus two
//!   fixture orders: `diet`, which preempts, and `lottery`, which draws
//!   tasks and slots from the seeded RNG; rigid jobs, several machines,
//!   slot joins and leaves, cancels, kills, fails, priority changes, phases,
//!   optional tasks, tasks sent to a chosen machine, the age-boost control,
//!   and agents that submit follow-ups, cancel, submit and fail tasks during
//!   the run). After every step: no slot runs two tasks, the view agrees
//!   with the actions seen so far (tasks, slots, machines, organizations),
//!   and the order's greedy rule holds. At the end: every submitted task
//!   ended exactly once, with the runs the actions showed; runs never
//!   overlap on a slot; a requeued run is followed by a later run or the
//!   task ended waiting; completed tasks ran exactly their runtime (and
//!   phases) in their final run; samples agree with the records; nothing is
//!   stranded without churn.
//! - `easy_keeps_its_reservations_and_misses_no_backfill`: with estimates
//!   no shorter than runtimes, the head starts no later than the shadow
//!   time it had when it became the head, and after every step no job that
//!   EASY's definition allows to backfill is left waiting.
//! - `round_robin_matches_the_reference_model` and
//!   `fair_share_matches_the_reference_model`: start times equal those of
//!   an independent model of spec/shapley.md (`fixtures/models.rs`).
//! - `same_outputs_whatever_the_thread_pool`: several policies run at once
//!   in pools of 1 and 2 threads produce the same `tasks.csv` and action
//!   stream as a sequential run (and a rerun).
//! - Findings of these properties, fixed, kept as examples:
//!   `agents_and_traces_never_share_an_id`,
//!   `round_robin_serves_an_undeclared_organization_that_submits_late`,
//!   `fair_share_ranks_organizations_owning_nothing_by_usage`.
//! - `every_registered_order_is_exercised`.

use crate::common::ok;
use crate::common::{build_allocate, build_control, build_order};
use crate::fixtures::agents::{Canceller, FollowUps, Log, Saboteur, Source};
use crate::fixtures::models::{self, Job, Rule};
use crate::fixtures::orders::{Diet, Lottery};
use fairsched_core::{
    Action, Attempt, AttemptEnd, EndRecord, Event, Fanout, Kind, MachineId, Observer, OrderPolicy, OrgId,
    Outcome, Platform, Registry, Sample, Scheduler, SlotId, TaskId, TaskMeta, TaskSpec, Time, UserId, View,
};
use fairsched_report::TasksCsv;
use fairsched_sim::{Agent, AgentCtx, Arrival, RunStats, SimError, Simulation};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, subsequence};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

// ---------------------------------------------------------------------------
// Random cases

/// The order policy of a case: one of the registry, or a fixture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OrderKind {
    Registry(&'static str),
    /// Preempting (`crate::fixtures::orders::Diet`).
    Diet,
    /// Random tasks on random slots (`crate::fixtures::orders::Lottery`).
    Lottery,
}

impl OrderKind {
    fn build(self) -> OrderPolicy {
        match self {
            OrderKind::Registry(name) => build_order(&name.parse().unwrap()).unwrap(),
            OrderKind::Diet => OrderPolicy::Blind(Box::<Diet>::default()),
            OrderKind::Lottery => OrderPolicy::Blind(Box::<Lottery>::default()),
        }
    }
    /// What the order promises after every step.
    fn greedy(self) -> Greedy {
        match self {
            OrderKind::Registry("first-fit" | "priority" | "workflow-fcfs")
            | OrderKind::Diet
            | OrderKind::Lottery => Greedy::NoFittingTaskWaits,
            OrderKind::Registry("fcfs" | "easy") => Greedy::HeadNeverFits,
            // Strict key order: the request at the front of the key order
            // may block smaller ones on a multi-slot machine (Diet-ethic
            // servers have one slot); an idle machine still serves.
            OrderKind::Registry("diet-ethic") => Greedy::IdleServesAFittingTask,
            OrderKind::Registry(
                "round-robin" | "fair-share" | "direct-contr" | "ut-fair-share" | "curr-fair-share",
            ) => Greedy::OrgHeadNeverFits,
            OrderKind::Registry(_) => Greedy::Nothing,
        }
    }
}

/// The greedy rule an order keeps after every step, on every machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Greedy {
    /// No waiting task fits in the free slots.
    NoFittingTaskWaits,
    /// The oldest waiting task does not fit in the free slots.
    HeadNeverFits,
    /// No organization's oldest waiting task fits in the free slots (for
    /// sequential tasks, the same as `NoFittingTaskWaits`).
    OrgHeadNeverFits,
    /// A machine with every slot free has no waiting task that fits (on a
    /// single-slot machine, the same as `NoFittingTaskWaits`).
    IdleServesAFittingTask,
    Nothing,
}

fn registry_orders() -> Vec<OrderKind> {
    Registry::builtin()
        .of_kind(Kind::Order)
        .filter(|e| !e.clairvoyant())
        .map(|e| OrderKind::Registry(e.name))
        .collect()
}

fn all_orders() -> Vec<OrderKind> {
    let mut v = registry_orders();
    v.extend([OrderKind::Diet, OrderKind::Lottery]);
    v
}

/// The agents of a case (each optional).
#[derive(Clone, Debug, Default)]
struct Agents {
    /// Trace tasks whose completion (or failure) brings a follow-up task,
    /// and how many follow-ups at most.
    follow_ups: Option<(BTreeSet<TaskId>, u32)>,
    /// Trace tasks the canceller owns, and when it wakes.
    canceller: Option<(BTreeSet<TaskId>, Vec<Time>)>,
    /// Trace tasks failed while they run.
    saboteur: Option<BTreeSet<TaskId>>,
}

/// One random run: platform, workload, policies, outside events, agents.
#[derive(Clone, Debug)]
struct Case {
    /// Per machine, the owner of each slot.
    machines: Vec<Vec<OrgId>>,
    orgs: u32,
    /// In submit order, ids 1..=n.
    arrivals: Vec<Arrival>,
    order: OrderKind,
    /// With the `age-boost` control.
    control: bool,
    /// Outside events (cancels, kills, fails, priority changes, slot joins
    /// and leaves), in time order.
    outside: Vec<(Time, Event)>,
    agents: Agents,
    seed: u64,
}

impl Case {
    fn platform(&self) -> Platform {
        Platform {
            machines: self.machines.clone(),
            orgs: self.orgs,
        }
    }
    fn allocate(&self) -> &'static str {
        if self.machines.len() == 1 {
            "single-pool"
        } else {
            "least-loaded"
        }
    }
    fn scheduler(&self) -> Scheduler {
        let control = self
            .control
            .then(|| build_control(&"age-boost[after=7]".parse().unwrap()).unwrap());
        Scheduler::new(
            &self.platform(),
            self.seed,
            build_allocate(&self.allocate().parse().unwrap()).unwrap(),
            self.order.build(),
            control,
        )
    }
    fn churn(&self) -> bool {
        self.outside
            .iter()
            .any(|(_, e)| matches!(e, Event::SlotJoin { .. } | Event::SlotLeave { .. }))
    }
    /// The simulation of this case, its agents writing to `log`.
    fn simulation<'a>(&self, log: &'a Log) -> Simulation<'a> {
        let mut sim = Simulation::new(self.scheduler());
        for (at, ev) in &self.outside {
            sim.schedule(*at, ev.clone());
        }
        let a = &self.agents;
        // The trace numbers its tasks 1..=n (outside events name them):
        // the ids agents get start above.
        sim.fresh_ids_from(self.arrivals.len() as u64 + 1);
        if let Some((own, budget)) = &a.follow_ups {
            sim.add_agent(FollowUps::new(own.clone(), *budget, true, self.seed ^ 1, log));
        }
        if let Some((own, wakes)) = &a.canceller {
            let own = own.iter().map(|&t| (t, self.arrival(t).submit)).collect();
            let org = self.orgs - 1;
            sim.add_agent(Canceller::new(own, wakes.clone(), org, self.seed ^ 2, log));
        }
        if let Some(targets) = &a.saboteur {
            sim.add_agent(Saboteur::new(targets.clone(), self.seed ^ 3));
        }
        sim
    }
    fn arrival(&self, id: TaskId) -> &Arrival {
        &self.arrivals[id.0 as usize - 1]
    }
    /// Tasks that may end otherwise than completed even without churn:
    /// targets of outside cancels, kills and fails, the canceller's tasks
    /// and the saboteur's targets. (The canceller's own submissions are
    /// told apart by their [`Source`].)
    fn exposed(&self) -> BTreeSet<TaskId> {
        let mut s: BTreeSet<TaskId> = self
            .outside
            .iter()
            .filter_map(|(_, ev)| match *ev {
                Event::Cancel { task } | Event::Kill { task } | Event::Fail { task } => Some(task),
                _ => None,
            })
            .collect();
        if let Some((own, _)) = &self.agents.canceller {
            s.extend(own);
        }
        if let Some(t) = &self.agents.saboteur {
            s.extend(t);
        }
        s
    }
}

/// What the random cases may contain.
#[derive(Clone, Copy, Debug)]
struct Features {
    /// Rigid jobs (several slots), when the order handles them.
    rigid: bool,
    /// Up to three machines.
    multi: bool,
    /// Slot joins and leaves.
    churn: bool,
    /// Kills, fails and priority changes from outside (cancels always).
    disrupt: bool,
    /// Phases, optional tasks, tasks sent to a chosen machine.
    shapes: bool,
    agents: bool,
    control: bool,
    /// Every task has an estimate at least its runtime.
    honest_estimates: bool,
}

const ALL: Features = Features {
    rigid: true,
    multi: true,
    churn: true,
    disrupt: true,
    shapes: true,
    agents: true,
    control: true,
    honest_estimates: false,
};

/// Indices (into `0..n`) as a set of task ids `1..=n`.
fn ids(which: &[Index], n: usize) -> BTreeSet<TaskId> {
    which.iter().map(|i| TaskId(i.index(n) as u64 + 1)).collect()
}

fn cases(orders: Vec<OrderKind>, f: Features) -> impl Strategy<Value = Case> {
    (1u32..=3, 1usize..=8)
        .prop_flat_map(move |(orgs, total)| {
            let task = (
                (0i64..200, 1i64..=100, 1..=total as u32, 0..orgs),
                (0i64..=3, 0u8..4, 0i64..100),
                (prop::bool::weighted(0.3), prop::bool::weighted(0.2), 0u32..4),
                prop::array::uniform4(0i64..=25),
            );
            let outside = (0i64..260, 0u8..4, any::<Index>(), 0i64..=4);
            let slot_event = (0i64..260, any::<bool>(), 0..total as u32 + 2, 0..3u32, 0..orgs);
            let churn = if f.churn {
                prop_oneof![Just(Vec::new()), vec(slot_event, 1..5)].boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            let agents = if f.agents {
                (
                    prop::option::of((vec(any::<Index>(), 1..8), 0u32..10)),
                    prop::option::of((vec(any::<Index>(), 0..5), vec(0i64..260, 1..6))),
                    prop::option::of(vec(any::<Index>(), 1..6)),
                )
                    .boxed()
            } else {
                Just((None, None, None)).boxed()
            };
            (
                (
                    Just(orgs),
                    vec(0..orgs, total),
                    vec(prop::bool::weighted(0.2), total - 1),
                ),
                vec(task, 1..=50),
                (any::<bool>(), prop::sample::select(orders.clone()), any::<bool>()),
                prop_oneof![2 => Just(Vec::new()), 3 => vec(outside, 1..6)],
                churn,
                agents,
                any::<u64>(),
            )
        })
        .prop_map(
            move |(
                (orgs, owners, cuts),
                mut tasks,
                (rigid, order, control),
                outside,
                churn,
                agents,
                seed,
            )| {
                // Slots split among organizations (Platform::owned_pool), then
                // optionally cut into at most three machines.
                let mut per_org = vec![0u32; orgs as usize];
                for o in owners {
                    per_org[o as usize] += 1;
                }
                let slots = Platform::owned_pool(&per_org).machines[0].clone();
                let mut machines = vec![Vec::new()];
                for (i, owner) in slots.into_iter().enumerate() {
                    if f.multi && i > 0 && cuts[i - 1] && machines.len() < 3 {
                        machines.push(Vec::new());
                    }
                    machines.last_mut().unwrap().push(owner);
                }
                let machine_count = machines.len() as u32;
                let rigid = rigid && f.rigid;
                tasks.sort_by_key(|t| t.0.0);
                let arrivals: Vec<Arrival> = tasks
                    .iter()
                    .enumerate()
                    .map(
                        |(
                            i,
                            &((submit, runtime, width, org), (prio, est, pct), (opt, phased, target), ph),
                        )| {
                            let id = i as u64 + 1;
                            let rt = Time::from_secs(runtime);
                            let estimate = match (f.honest_estimates, est) {
                                (true, 0) => Some(rt),
                                (true, _) => Some(Time(rt.millis() + pct * 1000 + pct)),
                                (false, 0) => None,
                                (false, 1) => Some(Time(rt.millis() * pct / 100)),
                                (false, _) => Some(Time(rt.millis() * (100 + pct) / 100)),
                            };
                            let spec = TaskSpec {
                                id: TaskId(id),
                                user: UserId(org as i64 * 10 + (id % 3) as i64),
                                org: OrgId(org),
                                slots: if rigid { width } else { 1 },
                                priority: prio,
                                estimate,
                                workflow: None,
                                optional: f.shapes && opt,
                                // Now and then a chosen machine, possibly one that
                                // does not exist.
                                target: (f.shapes && target == 0)
                                    .then_some(MachineId(id as u32 % (machine_count + 1))),
                            };
                            let submit = Time::from_secs(submit);
                            if f.shapes && phased {
                                let mut ph = ph.map(Time::from_secs);
                                ph[2] = ph[2].max(Time::from_secs(1));
                                Arrival::with_phases(spec, submit, ph)
                            } else {
                                Arrival::new(spec, submit, rt)
                            }
                        },
                    )
                    .collect();
                let n = arrivals.len();
                let mut events: Vec<(Time, Event)> = outside
                    .into_iter()
                    .map(|(at, kind, which, prio)| {
                        let task = TaskId(which.index(n) as u64 + 1);
                        let ev = match kind {
                            _ if !f.disrupt => Event::Cancel { task },
                            0 => Event::Cancel { task },
                            1 => Event::Kill { task },
                            2 => Event::Fail { task },
                            _ => Event::SetPriority { task, priority: prio },
                        };
                        (Time::from_secs(at), ev)
                    })
                    .collect();
                for (at, join, slot, machine, owner) in churn {
                    let ev = if join {
                        Event::SlotJoin {
                            machine: MachineId(machine % machine_count),
                            owner: OrgId(owner),
                        }
                    } else {
                        Event::SlotLeave { slot: SlotId(slot) }
                    };
                    events.push((Time::from_secs(at), ev));
                }
                events.sort_by_key(|e| e.0);
                let (follow_ups, canceller, saboteur) = agents;
                let agents = Agents {
                    follow_ups: follow_ups.map(|(w, budget)| (ids(&w, n), budget)),
                    canceller: canceller
                        .map(|(w, wakes)| (ids(&w, n), wakes.into_iter().map(Time::from_secs).collect())),
                    saboteur: saboteur.map(|w| ids(&w, n)),
                };
                Case {
                    machines,
                    orgs,
                    arrivals,
                    order,
                    control: control && f.control,
                    outside: events,
                    agents,
                    seed,
                }
            },
        )
}

// ---------------------------------------------------------------------------
// The checker: follows every action, checks the view after every step

#[derive(Clone, Debug, PartialEq)]
enum St {
    Waiting,
    Running {
        machine: MachineId,
        slots: Vec<SlotId>,
        start: Time,
    },
    /// Stopped (not requeued) by the last action: its end follows.
    Stopped {
        machine: MachineId,
        slots: Vec<SlotId>,
        start: Time,
    },
    Ended,
}

#[derive(Debug)]
struct Task {
    arrival: Arrival,
    source: Option<Source>,
    st: St,
    /// Runs as the actions showed them.
    runs: Vec<Attempt>,
    /// The full list of slots of each run (from its `Start`).
    run_slots: Vec<Vec<SlotId>>,
    /// The machine whose queue holds it, once seen.
    machine: Option<MachineId>,
}

/// A slot of the platform as the outside events made it.
#[derive(Clone, Copy, Debug)]
struct Slot {
    machine: MachineId,
    owner: OrgId,
    present: bool,
}

/// Checks every action, sample and step as it comes, and keeps what the
/// end-of-run checks need.
struct Checker<'a> {
    case: &'a Case,
    log: &'a Log,
    /// Log entries already read.
    logged: usize,
    /// Agents' submissions the core may not have received yet.
    pending: BTreeMap<TaskId, (Arrival, Source)>,
    /// Trace arrivals already submitted.
    next_arrival: usize,
    /// Outside events already applied (slots follow them).
    next_outside: usize,
    tasks: BTreeMap<TaskId, Task>,
    slot_task: BTreeMap<SlotId, TaskId>,
    slots: Vec<Slot>,
    ends: BTreeMap<TaskId, (EndRecord, TaskMeta)>,
    samples: Vec<Sample>,
    rule: Greedy,
    now: Time,
    steps: u64,
}

impl<'a> Checker<'a> {
    fn new(case: &'a Case, log: &'a Log) -> Self {
        let slots = case
            .machines
            .iter()
            .enumerate()
            .flat_map(|(m, owners)| {
                owners.iter().map(move |&owner| Slot {
                    machine: MachineId(m as u32),
                    owner,
                    present: true,
                })
            })
            .collect();
        Checker {
            case,
            log,
            logged: 0,
            pending: BTreeMap::new(),
            next_arrival: 0,
            next_outside: 0,
            tasks: BTreeMap::new(),
            slot_task: BTreeMap::new(),
            slots,
            ends: BTreeMap::new(),
            samples: Vec::new(),
            rule: case.order.greedy(),
            now: Time::ZERO,
            steps: 0,
        }
    }

    /// Catches up with what happened by `now`: trace arrivals (all
    /// submitted in the first step at their time), slot joins and leaves
    /// (applied in the first step at their time), agents' submissions.
    fn sync(&mut self, now: Time) {
        assert!(now >= self.now, "time goes back: {:?} after {:?}", now, self.now);
        self.now = now;
        let arrivals = &self.case.arrivals;
        while let Some(a) = arrivals.get(self.next_arrival).filter(|a| a.submit <= now) {
            self.next_arrival += 1;
            self.add(a.clone(), None);
        }
        let outside = &self.case.outside;
        while let Some((_, ev)) = outside.get(self.next_outside).filter(|e| e.0 <= now) {
            self.next_outside += 1;
            match *ev {
                Event::SlotJoin { machine, owner } => self.slots.push(Slot {
                    machine,
                    owner,
                    present: true,
                }),
                Event::SlotLeave { slot } => {
                    if let Some(s) = self.slots.get_mut(slot.index()) {
                        s.present = false;
                    }
                }
                _ => {}
            }
        }
        let log = self.log.borrow();
        for (a, src) in &log[self.logged..] {
            assert_eq!(a.submit, now, "an agent submitted {a:?} at {now:?}");
            assert!(
                !self.tasks.contains_key(&a.spec.id) && !self.pending.contains_key(&a.spec.id),
                "an agent reused id {}",
                a.spec.id
            );
            self.pending.insert(a.spec.id, (a.clone(), *src));
        }
        self.logged = log.len();
    }

    fn add(&mut self, arrival: Arrival, source: Option<Source>) {
        let id = arrival.spec.id;
        let task = Task {
            arrival,
            source,
            st: St::Waiting,
            runs: Vec::new(),
            run_slots: Vec::new(),
            machine: None,
        };
        assert!(self.tasks.insert(id, task).is_none(), "task {id} submitted twice");
    }

    /// A task an action names: known, or an agent's submission the core
    /// has just received.
    fn task(&mut self, id: TaskId) -> &mut Task {
        if let Some((a, src)) = self.pending.remove(&id) {
            self.add(a, Some(src));
        }
        self.tasks
            .get_mut(&id)
            .unwrap_or_else(|| panic!("an action names task {id}, which was never submitted"))
    }

    fn release(&mut self, task: TaskId, slots: &[SlotId]) {
        for s in slots {
            assert_eq!(
                self.slot_task.remove(s),
                Some(task),
                "slot {s} did not hold task {task}"
            );
        }
    }

    fn capacity(&self, m: MachineId) -> u32 {
        self.slots.iter().filter(|s| s.present && s.machine == m).count() as u32
    }

    fn total_slots(&self) -> u64 {
        self.slots.iter().filter(|s| s.present).count() as u64
    }
}

impl Checker<'_> {
    fn action(&mut self, now: Time, a: &Action) {
        self.sync(now);
        match a {
            Action::Start { task, machine, slots } => {
                let (task, machine) = (*task, *machine);
                let t = self.task(task);
                assert_eq!(
                    t.st,
                    St::Waiting,
                    "at {now:?} task {task} started while not waiting"
                );
                assert_eq!(
                    slots.len() as u32,
                    t.arrival.spec.slots,
                    "task {task} got {slots:?}"
                );
                if let Some(target) = t.arrival.spec.target {
                    assert_eq!(machine, target, "task {task} was sent to machine {target}");
                }
                assert_eq!(
                    *t.machine.get_or_insert(machine),
                    machine,
                    "task {task} changed machines"
                );
                t.st = St::Running {
                    machine,
                    slots: slots.to_vec(),
                    start: now,
                };
                for &s in slots {
                    let slot = self
                        .slots
                        .get(s.index())
                        .unwrap_or_else(|| panic!("unknown slot {s}"));
                    assert!(
                        slot.present,
                        "at {now:?} task {task} started on slot {s}, which left"
                    );
                    assert_eq!(slot.machine, machine, "slot {s} is not on machine {machine}");
                    if let Some(other) = self.slot_task.insert(s, task) {
                        panic!("at {now:?} slot {s} runs task {task} while task {other} still runs on it");
                    }
                }
            }
            Action::Stop {
                task,
                machine,
                requeued,
            } => {
                let (task, machine) = (*task, *machine);
                let t = self.task(task);
                let St::Running {
                    machine: m,
                    slots,
                    start,
                } = t.st.clone()
                else {
                    panic!("at {now:?} task {task} stopped while {:?}", t.st);
                };
                assert_eq!(m, machine, "task {task} stopped on the wrong machine");
                if *requeued {
                    t.runs.push(Attempt {
                        machine,
                        slot: slots[0],
                        slots: slots.len() as u32,
                        start,
                        stop: now,
                        end: AttemptEnd::Requeued,
                    });
                    t.run_slots.push(slots.clone());
                    t.st = St::Waiting;
                } else {
                    t.st = St::Stopped {
                        machine,
                        slots: slots.clone(),
                        start,
                    };
                }
                self.release(task, &slots);
            }
            Action::Ended(r) => {
                let id = r.spec.id;
                let t = self.task(id);
                let (st, how) = match (&t.st, r.outcome) {
                    (St::Waiting, Outcome::Cancelled | Outcome::Rejected) => (None, None),
                    (
                        St::Running {
                            machine,
                            slots,
                            start,
                        },
                        Outcome::Completed | Outcome::Failed,
                    ) => {
                        let how = if r.outcome == Outcome::Completed {
                            AttemptEnd::Completed
                        } else {
                            AttemptEnd::Failed
                        };
                        (Some((*machine, slots.clone(), *start)), Some(how))
                    }
                    (
                        St::Stopped {
                            machine,
                            slots,
                            start,
                        },
                        Outcome::Killed | Outcome::Cancelled,
                    ) => {
                        let how = if r.outcome == Outcome::Killed {
                            AttemptEnd::Killed
                        } else {
                            AttemptEnd::Cancelled
                        };
                        (Some((*machine, slots.clone(), *start)), Some(how))
                    }
                    (st, outcome) => panic!("at {now:?} task {id} ended {outcome} while {st:?}"),
                };
                let mut released = None;
                if let (Some((machine, slots, start)), Some(end)) = (st, how) {
                    t.runs.push(Attempt {
                        machine,
                        slot: slots[0],
                        slots: slots.len() as u32,
                        start,
                        stop: now,
                        end,
                    });
                    t.run_slots.push(slots.clone());
                    if end != AttemptEnd::Killed && end != AttemptEnd::Cancelled {
                        released = Some(slots);
                    }
                }
                t.st = St::Ended;
                assert_eq!(r.end, now, "{r:?}");
                assert_eq!(r.submit, t.arrival.submit, "{r:?}");
                assert_eq!(r.spec.slots, t.arrival.spec.slots);
                assert_eq!(
                    r.runs().copied().collect::<Vec<_>>(),
                    t.runs,
                    "task {id}: the record's runs are not the ones the actions showed"
                );
                if r.outcome == Outcome::Rejected {
                    assert_eq!((r.machine, r.starts(), r.end), (None, 0, r.submit), "{r:?}");
                } else {
                    assert!(r.machine.is_some(), "{r:?}");
                    if let Some(m) = t.machine {
                        assert_eq!(r.machine, Some(m), "{r:?}");
                    }
                }
                if let Some(slots) = released {
                    self.release(id, &slots);
                }
            }
            Action::Priority { task, .. } => {
                let t = self.task(*task);
                assert!(
                    t.st != St::Ended,
                    "at {now:?} the priority of ended task {task} changed"
                );
            }
            Action::Timer { at, .. } => assert!(*at >= now, "a timer set in the past: {at:?} at {now:?}"),
        }
    }
}

impl Observer for Checker<'_> {
    fn on_task(&mut self, r: &EndRecord, meta: &TaskMeta) {
        let id = r.spec.id;
        let t = &self.tasks[&id];
        assert_eq!(t.st, St::Ended);
        assert!(
            self.ends.insert(id, (r.clone(), *meta)).is_none(),
            "task {id} ended twice"
        );
        assert_eq!(
            meta.runtime,
            Some(t.arrival.runtime),
            "task {id}: the observer gets the true runtime"
        );
        assert_eq!(meta.job, t.arrival.job);
        if r.outcome == Outcome::Completed {
            let run = r.final_run().expect("a completed task ended running");
            assert_eq!(
                run.duration(),
                t.arrival.runtime,
                "task {id} did not run its runtime: {r:?}"
            );
            assert_eq!(
                r.phases,
                t.arrival.phases.map_or([None; 4], |p| p.map(Some)),
                "{r:?}"
            );
        }
    }

    fn on_sample(&mut self, s: &Sample) {
        self.sync(s.time);
        assert_eq!(s.total_slots, self.total_slots(), "{s:?}");
        assert!(s.busy_slots <= s.total_slots, "{s:?}");
        assert!(s.running_tasks <= s.busy_slots, "{s:?}");
        if let Some(last) = self.samples.last() {
            assert!(
                last.time <= s.time,
                "samples go back in time: {last:?} then {s:?}"
            );
        }
        self.samples.push(*s);
    }

    fn on_step(&mut self, now: Time, actions: &[Action], view: &View) {
        for a in actions {
            self.action(now, a);
        }
        self.sync(now);
        self.steps += 1;
        assert_eq!(view.now(), now);
        // Agents' submissions the core now holds (those that started or
        // ended already came with an action).
        let arrived: Vec<TaskId> = self
            .pending
            .keys()
            .copied()
            .filter(|&t| view.task(t).is_some())
            .collect();
        for t in arrived {
            self.task(t);
        }
        // The platform: slots, machines, organizations.
        for (i, s) in self.slots.iter().enumerate() {
            let id = SlotId(i as u32);
            assert_eq!(view.slot_present(id), s.present, "at {now:?} slot {id}");
            assert_eq!(view.slot_machine(id), Some(s.machine), "slot {id}");
            assert_eq!(view.slot_owner(id), Some(s.owner), "slot {id}");
            assert_eq!(
                view.slot_task(id),
                self.slot_task.get(&id).copied(),
                "at {now:?} slot {id}"
            );
            if self.slot_task.contains_key(&id) {
                assert!(s.present, "at {now:?} task on slot {id}, which left");
            }
        }
        assert_eq!(
            view.slot_machine(SlotId(self.slots.len() as u32)),
            None,
            "more slots than joined"
        );
        assert_eq!(view.total_slots() as u64, self.total_slots());
        for o in 0..view.org_count() {
            let org = OrgId(o as u32);
            let owned = self.slots.iter().filter(|s| s.present && s.owner == org).count() as u32;
            assert_eq!(view.org_slots(org), owned, "at {now:?} slots of organization {o}");
        }
        // Tasks.
        let mut waiting: BTreeMap<MachineId, Vec<(u64, u32, OrgId, TaskId)>> = BTreeMap::new();
        let mut running: BTreeMap<MachineId, u32> = BTreeMap::new();
        let mut busy: BTreeMap<MachineId, u32> = BTreeMap::new();
        let mut live = 0;
        for (&id, t) in &mut self.tasks {
            let v = view.task(id);
            match &t.st {
                St::Ended => {
                    assert!(v.is_none(), "at {now:?} ended task {id} is still in the view");
                    continue;
                }
                St::Stopped { .. } => panic!("at {now:?} task {id} was stopped and never ended"),
                _ => {}
            }
            live += 1;
            let v = v.unwrap_or_else(|| panic!("at {now:?} live task {id} is not in the view"));
            let m = *t.machine.get_or_insert(v.machine());
            assert_eq!(v.machine(), m, "task {id} changed machines");
            match &t.st {
                St::Waiting => {
                    assert!(!v.is_running(), "at {now:?} task {id} runs in the view");
                    waiting
                        .entry(m)
                        .or_default()
                        .push((v.seq(), v.slots(), v.org(), id));
                }
                St::Running { slots, start, .. } => {
                    assert_eq!(
                        (v.held_slots(), v.start()),
                        (&slots[..], Some(*start)),
                        "task {id}"
                    );
                    *running.entry(m).or_default() += 1;
                    *busy.entry(m).or_default() += slots.len() as u32;
                }
                St::Stopped { .. } | St::Ended => unreachable!(),
            }
            assert_eq!(
                v.attempts() as usize,
                t.runs.len() + usize::from(v.is_running()),
                "task {id}"
            );
        }
        let waiting_count: usize = waiting.values().map(Vec::len).sum();
        assert_eq!(view.waiting_tasks(), waiting_count as u64, "at {now:?}");
        assert_eq!(view.busy_slots(), self.slot_task.len() as u64, "at {now:?}");
        assert!(live >= waiting_count);
        let order = self.case.order;
        for mv in view.machines() {
            let m = mv.id();
            let q = waiting.get(&m).map_or(&[][..], Vec::as_slice);
            let used = busy.get(&m).copied().unwrap_or(0);
            let cap = self.capacity(m);
            assert_eq!(mv.capacity(), cap, "at {now:?} machine {m}");
            assert!(used <= cap, "at {now:?} machine {m} runs {used} slots of {cap}");
            assert_eq!(mv.busy(), used, "at {now:?} machine {m}");
            assert_eq!(mv.running(), running.get(&m).copied().unwrap_or(0), "machine {m}");
            assert_eq!(mv.waiting() as usize, q.len(), "machine {m}");
            assert_eq!(
                mv.waiting_slots(),
                q.iter().map(|w| w.1 as u64).sum::<u64>(),
                "machine {m}"
            );
            let free = mv.free();
            assert_eq!(
                free + used,
                cap,
                "at {now:?} machine {m}: free + busy != capacity"
            );
            let free_slots: BTreeSet<SlotId> = mv.free_slots().collect();
            assert_eq!(free_slots.len() as u32, free, "machine {m}: a free slot twice");
            for s in free_slots {
                let slot = self.slots[s.index()];
                assert!(
                    slot.present && slot.machine == m && !self.slot_task.contains_key(&s),
                    "free slot {s}"
                );
            }
            let fail = |(_, w, _, id): &(u64, u32, OrgId, TaskId), what: &str| {
                panic!(
                    "at {now:?} {order:?}: machine {m} has {free} free slots while {what} {id} ({w} slots) waits"
                )
            };
            match self.rule {
                Greedy::NoFittingTaskWaits => {
                    if let Some(w) = q.iter().find(|w| w.1 <= free) {
                        fail(w, "task");
                    }
                }
                Greedy::IdleServesAFittingTask => {
                    if let Some(w) = q.iter().find(|w| used == 0 && w.1 <= free) {
                        fail(w, "task");
                    }
                }
                Greedy::HeadNeverFits => {
                    if let Some(w) = q.iter().min().filter(|w| w.1 <= free) {
                        fail(w, "head");
                    }
                }
                Greedy::OrgHeadNeverFits => {
                    let mut heads: BTreeMap<OrgId, &(u64, u32, OrgId, TaskId)> = BTreeMap::new();
                    for w in q {
                        let h = heads.entry(w.2).or_insert(w);
                        if w.0 < h.0 {
                            *h = w;
                        }
                    }
                    if let Some(w) = heads.values().find(|w| w.1 <= free) {
                        fail(w, "the head of its organization,");
                    }
                }
                Greedy::Nothing => {}
            }
        }
    }
}

/// Occupancy at `t` (on `[t, next change)`) rebuilt from the records:
/// (busy slots, running tasks, waiting tasks).
fn occupancy(ends: &BTreeMap<TaskId, (EndRecord, TaskMeta)>, t: Time) -> (u64, u64, u64) {
    let (mut busy, mut running, mut waiting) = (0, 0, 0);
    for (r, _) in ends.values() {
        if r.outcome == Outcome::Rejected || !(r.submit <= t && t < r.end) {
            continue;
        }
        match r.runs().find(|a| a.start <= t && t < a.stop) {
            Some(a) => {
                busy += a.slots as u64;
                running += 1;
            }
            None => waiting += 1,
        }
    }
    (busy, running, waiting)
}

/// Runs a case under the checker (and `extra`, another observer), then
/// checks the whole run.
fn check_case(case: &Case, extra: &mut dyn Observer) -> RunStats {
    let log = Log::default();
    let mut checker = Checker::new(case, &log);
    let stats = {
        let mut obs = Fanout(vec![&mut checker, extra]);
        case.simulation(&log)
            .run(ok(case.arrivals.clone()), &mut obs)
            .unwrap_or_else(|e| panic!("the run failed: {e}"))
    };
    check_run(case, &stats, &checker);
    stats
}

fn check_run(case: &Case, stats: &RunStats, c: &Checker) {
    let n = case.arrivals.len();
    // Every task ended exactly once (on_task checked "at most once").
    assert_eq!(c.next_arrival, n, "trace tasks never submitted");
    assert!(
        c.pending.is_empty(),
        "agents' tasks never seen: {:?}",
        c.pending.keys()
    );
    assert_eq!(c.logged, c.log.borrow().len());
    assert_eq!(stats.submitted, c.tasks.len() as u64);
    assert_eq!(c.ends.len(), c.tasks.len(), "tasks that never ended");
    assert!(c.slot_task.is_empty());
    let churn = case.churn();
    if !churn {
        assert_eq!(stats.stranded, 0, "tasks were left waiting forever");
    }
    // Outcomes.
    let exposed = case.exposed();
    let largest = case.machines.iter().map(Vec::len).max().unwrap_or(0) as u32;
    for (id, (r, _)) in &c.ends {
        let t = &c.tasks[id];
        if churn {
            continue;
        }
        let room = match r.spec.target {
            Some(m) => case.machines.get(m.index()).map_or(0, |s| s.len() as u32),
            None => largest,
        };
        assert_eq!(r.outcome == Outcome::Rejected, r.spec.slots > room, "{r:?}");
        if r.spec.slots <= room && !exposed.contains(id) && t.source != Some(Source::Canceller) {
            assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        }
    }
    // Runs.
    let runs: Vec<&Attempt> = c.ends.values().flat_map(|(r, _)| r.runs()).collect();
    assert_eq!(runs.len() as u64, stats.core.starts);
    let requeues = runs.iter().filter(|a| a.end == AttemptEnd::Requeued).count();
    assert_eq!(requeues as u64, stats.core.requeues);
    let mut per_slot: BTreeMap<SlotId, Vec<(Time, Time, TaskId)>> = BTreeMap::new();
    for (r, _) in c.ends.values() {
        let a: Vec<&Attempt> = r.runs().collect();
        let lists = &c.tasks[&r.spec.id].run_slots;
        assert_eq!(lists.len(), a.len());
        let mut at = r.submit;
        for (i, run) in a.iter().enumerate() {
            assert!(
                at <= run.start && run.start <= run.stop && run.stop <= r.end,
                "{r:?}"
            );
            at = run.stop;
            let last = i + 1 == a.len();
            if !last {
                assert_eq!(
                    run.end,
                    AttemptEnd::Requeued,
                    "only the last run ends otherwise: {r:?}"
                );
            }
            assert_eq!((run.slot, run.slots as usize), (lists[i][0], lists[i].len()));
            for &s in &lists[i] {
                per_slot
                    .entry(s)
                    .or_default()
                    .push((run.start, run.stop, r.spec.id));
            }
        }
        match a.last() {
            // Requeued, then ended waiting.
            Some(run) if run.end == AttemptEnd::Requeued => {
                assert_eq!(r.outcome, Outcome::Cancelled, "{r:?}");
                assert_eq!(r.start(), None);
            }
            Some(run) => assert_eq!((run.stop, r.start()), (r.end, Some(run.start)), "{r:?}"),
            None => assert!(
                matches!(r.outcome, Outcome::Cancelled | Outcome::Rejected),
                "{r:?}"
            ),
        }
        let busy = a.iter().fold(Time::ZERO, |b, run| b + (run.stop - run.start));
        assert_eq!(r.busy(), busy);
    }
    for (s, mut v) in per_slot {
        v.sort();
        for w in v.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "slot {s} runs two tasks at once: {:?} and {:?}",
                w[0],
                w[1]
            );
        }
    }

    // The samples tell the same story as the records: at every instant
    // where something happened, the latest sample matches the rebuilt
    // occupancy; and the busy slot-time they add up to is the records'.
    let mut times: BTreeSet<Time> = c.samples.iter().map(|s| s.time).collect();
    for (r, _) in c.ends.values() {
        times.insert(r.submit);
        times.insert(r.end);
        for a in r.runs() {
            times.insert(a.start);
            times.insert(a.stop);
        }
    }
    for t in times {
        let Some(s) = c.samples.iter().rev().find(|s| s.time <= t) else {
            continue;
        };
        let expect = occupancy(&c.ends, t);
        assert_eq!(
            (s.busy_slots, s.running_tasks, s.waiting_tasks),
            expect,
            "at {t:?}: sample {s:?}"
        );
    }
    let last = c.samples.last().expect("at least one sample");
    assert_eq!(
        (last.busy_slots, last.running_tasks, last.waiting_tasks),
        (0, 0, 0)
    );
    let sampled: i128 = c
        .samples
        .windows(2)
        .map(|w| w[0].busy_slots as i128 * (w[1].time - w[0].time).millis() as i128)
        .sum();
    let recorded: i128 = runs
        .iter()
        .map(|a| a.slots as i128 * a.duration().millis() as i128)
        .sum();
    assert_eq!(sampled, recorded, "busy slot-time");
    assert_eq!(c.steps, stats.steps, "the observer saw every step");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn every_run_keeps_the_invariants(case in cases(all_orders(), ALL)) {
        check_case(&case, &mut Quiet);
    }
}

/// An observer that looks at nothing.
struct Quiet;

impl Observer for Quiet {}

// ---------------------------------------------------------------------------
// EASY: reservations are kept, and no allowed backfill is missed

/// Checks EASY's two promises after every step, on cases where every job
/// has an estimate no shorter than its runtime, and nothing but cancels
/// disturbs the run.
#[derive(Default)]
struct EasyCheck<'a> {
    arrivals: &'a [Arrival],
    next: usize,
    waiting: BTreeSet<TaskId>,
    /// Running jobs: machine, expected end (start + estimate), width.
    running: BTreeMap<TaskId, (MachineId, Time, u32)>,
    /// The head of each machine's queue at the last step.
    heads: BTreeMap<MachineId, TaskId>,
    /// The shadow time each head had when it became the head.
    promised: BTreeMap<TaskId, Time>,
}

impl<'a> EasyCheck<'a> {
    fn new(arrivals: &'a [Arrival]) -> Self {
        EasyCheck {
            arrivals,
            ..EasyCheck::default()
        }
    }
    fn sync(&mut self, now: Time) {
        while let Some(a) = self.arrivals.get(self.next).filter(|a| a.submit <= now) {
            self.waiting.insert(a.spec.id);
            self.next += 1;
        }
    }
    fn estimate(&self, t: TaskId) -> Time {
        self.arrivals[t.0 as usize - 1]
            .spec
            .estimate
            .expect("every job has an estimate")
    }
}

/// EASY's reservation for a head needing `need` slots with `free` free:
/// the shadow time (the earliest expected end at which enough slots are
/// free) and the extra slots (every slot free at the shadow time, minus
/// the head's).
fn reservation(mut ends: Vec<(Time, u32)>, free: u32, need: u32) -> (Time, u32) {
    ends.sort();
    let mut avail = free;
    let mut shadow = None;
    for (end, q) in ends {
        if shadow.is_some_and(|s| end > s) {
            break;
        }
        avail += q;
        if shadow.is_none() && avail >= need {
            shadow = Some(end);
        }
    }
    let shadow = shadow.expect("without churn the head fits its machine once everything ends");
    (shadow, avail - need)
}

impl EasyCheck<'_> {
    fn action(&mut self, now: Time, a: &Action) {
        self.sync(now);
        match a {
            Action::Start { task, machine, slots } => {
                assert!(self.waiting.remove(task));
                if let Some(&p) = self.promised.get(task) {
                    assert!(
                        now <= p,
                        "head {task} starts at {now:?}, after its reservation at {p:?}"
                    );
                }
                let end = now + self.estimate(*task);
                self.running.insert(*task, (*machine, end, slots.len() as u32));
            }
            Action::Stop { task, .. } => {
                self.running.remove(task);
            }
            Action::Ended(r) => {
                self.waiting.remove(&r.spec.id);
                self.running.remove(&r.spec.id);
            }
            Action::Timer { .. } | Action::Priority { .. } => {}
        }
    }
}

impl Observer for EasyCheck<'_> {
    fn on_step(&mut self, now: Time, actions: &[Action], view: &View) {
        for a in actions {
            self.action(now, a);
        }
        self.sync(now);
        let mut queues: BTreeMap<MachineId, Vec<(u64, TaskId, u32, Time)>> = BTreeMap::new();
        for &t in &self.waiting {
            let v = view.task(t).expect("waiting");
            queues
                .entry(v.machine())
                .or_default()
                .push((v.seq(), t, v.slots(), self.estimate(t)));
        }
        let mut heads = BTreeMap::new();
        for (m, mut q) in queues {
            q.sort();
            let free = view.machine(m).free();
            let (_, head, need, _) = q[0];
            assert!(
                need > free,
                "at {now:?} head {head} ({need} slots) fits in {free} free slots of machine {m}"
            );
            let ends: Vec<(Time, u32)> = self
                .running
                .iter()
                .filter(|r| r.1.0 == m)
                .map(|(t, &(_, end, q))| {
                    // Estimates are no shorter than runtimes and completions
                    // come before dispatch: no job runs past its estimate.
                    assert!(end > now, "at {now:?} job {t} runs past its expected end {end:?}");
                    (end, q)
                })
                .collect();
            let (shadow, extra) = reservation(ends, free, need);
            if self.heads.get(&m) != Some(&head) {
                self.promised.entry(head).or_insert(shadow);
            }
            heads.insert(m, head);
            for &(_, t, q, est) in &q[1..] {
                let allowed = q <= free && (now + est <= shadow || q <= extra);
                assert!(
                    !allowed,
                    "at {now:?} job {t} ({q} slots, estimate {est:?}) could backfill on machine {m} \
                     ({free} free, head {head} needs {need}, shadow {shadow:?}, {extra} extra)"
                );
            }
        }
        self.heads = heads;
    }
}

const EASY: Features = Features {
    rigid: true,
    multi: true,
    churn: false,
    disrupt: false,
    shapes: false,
    agents: false,
    control: false,
    honest_estimates: true,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn easy_keeps_its_reservations_and_misses_no_backfill(
        case in cases(vec![OrderKind::Registry("easy")], EASY)
    ) {
        let mut easy = EasyCheck::new(&case.arrivals);
        check_case(&case, &mut easy);
    }
}

// ---------------------------------------------------------------------------
// Reference models of round-robin and fair-share

/// One machine whose slots organizations own, sequential tasks.
#[derive(Clone, Debug)]
struct OrgCase {
    /// Slots owned by each of the platform's organizations.
    owned: Vec<u32>,
    /// Whether the platform declares every submitting organization (else
    /// only the owners; the others become known when they submit).
    declare_all: bool,
    jobs: Vec<Job>,
}

impl OrgCase {
    fn org_count(&self) -> usize {
        let submitters = self.jobs.iter().map(|j| j.org + 1).max().unwrap_or(0);
        self.owned.len().max(submitters)
    }
    fn platform(&self) -> Platform {
        let mut p = Platform::owned_pool(&self.owned);
        if self.declare_all {
            p.orgs = self.org_count() as u32;
        }
        p
    }
}

fn org_cases() -> impl Strategy<Value = OrgCase> {
    (1usize..=4)
        .prop_flat_map(|k| {
            (
                vec(0u32..=3, k),
                any::<bool>(),
                vec((0i64..80, 1i64..=40, 0..=k), 1..=30),
            )
        })
        .prop_map(|(mut owned, declare_all, mut jobs)| {
            if owned.iter().all(|&o| o == 0) {
                owned[0] = 1;
            }
            jobs.sort_by_key(|j| j.0);
            let jobs = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (submit, runtime, org))| Job {
                    id: TaskId(i as u64 + 1),
                    org,
                    submit: Time::from_secs(submit),
                    runtime: Time::from_secs(runtime),
                })
                .collect();
            OrgCase {
                owned,
                declare_all,
                jobs,
            }
        })
}

/// Start times in the engine, with the greedy checks of the checker on.
fn engine_starts(c: &OrgCase, order: &'static str) -> BTreeMap<TaskId, Time> {
    let arrivals: Vec<Arrival> = c
        .jobs
        .iter()
        .map(|j| {
            let spec = TaskSpec::new(j.id.0, j.org as i64, j.org as u32);
            Arrival::new(spec, j.submit, j.runtime)
        })
        .collect();
    let p = c.platform();
    let case = Case {
        machines: p.machines,
        orgs: p.orgs,
        arrivals,
        order: OrderKind::Registry(order),
        control: false,
        outside: Vec::new(),
        agents: Agents::default(),
        seed: 1,
    };
    let mut rec = crate::common::Recorder::default();
    check_case(&case, &mut rec);
    rec.ends
        .iter()
        .map(|(r, _)| (r.spec.id, r.start().expect("every task runs")))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn round_robin_matches_the_reference_model(c in org_cases()) {
        let model = models::start_times(Rule::RoundRobin, &c.owned, c.org_count(), &c.jobs);
        prop_assert_eq!(engine_starts(&c, "round-robin"), model);
    }

    #[test]
    fn fair_share_matches_the_reference_model(c in org_cases()) {
        let model = models::start_times(Rule::FairShare, &c.owned, c.org_count(), &c.jobs);
        prop_assert_eq!(engine_starts(&c, "fair-share"), model);
    }
}

/// The jobs `(org, submit, runtime)` (whole seconds, ids 1, 2, … in this
/// order) on one machine owned as `owned` says: the order in which the
/// engine starts them, and the one the model does.
fn engine_and_model(rule: Rule, owned: &[u32], jobs: &[(usize, i64, i64)]) -> (Vec<u64>, Vec<u64>) {
    let jobs: Vec<Job> = jobs
        .iter()
        .enumerate()
        .map(|(i, &(org, submit, runtime))| Job {
            id: TaskId(i as u64 + 1),
            org,
            submit: Time::from_secs(submit),
            runtime: Time::from_secs(runtime),
        })
        .collect();
    let c = OrgCase {
        owned: owned.to_vec(),
        declare_all: false,
        jobs,
    };
    let order = |starts: BTreeMap<TaskId, Time>| {
        let mut v: Vec<(Time, u64)> = starts.into_iter().map(|(t, s)| (s, t.0)).collect();
        v.sort();
        v.into_iter().map(|(_, t)| t).collect()
    };
    let name = if rule == Rule::RoundRobin {
        "round-robin"
    } else {
        "fair-share"
    };
    let model = models::start_times(rule, &c.owned, c.org_count(), &c.jobs);
    (order(engine_starts(&c, name)), order(model))
}

// Found by `round_robin_matches_the_reference_model`: the pointer was kept
// modulo the organizations known *so far*; one the platform does not declare
// (it owns no slot) becomes known when it first submits, and was wrapped
// past. One slot owned by organization 0 (the only one declared). Org 0
// submits tasks 1 (28 s) and 2 at 0; org 1 submits task 3 at 1. Org 0 was
// served last, so at 28 it is org 1's turn: 1, 3, 2.
#[test]
fn round_robin_serves_an_undeclared_organization_that_submits_late() {
    let (engine, model) = engine_and_model(Rule::RoundRobin, &[1], &[(0, 0, 28), (0, 0, 1), (1, 1, 1)]);
    assert_eq!(model, vec![1, 3, 2]);
    assert_eq!(engine, model, "round-robin start order");
}

// Found by `fair_share_matches_the_reference_model`: fair_share.rs said an
// organization owning nothing has "an infinite key" (ties to the lowest
// index) while its code ranked such organizations by usage. The usage rule
// is kept (it shares fairly what is left to them) and is now what the
// policy's docs and the model say. One slot owned by org 0; org 1 submits
// tasks 1 (10 s) at 0 and 2 at 1; org 2 submits task 3 at 2. At 10 org 2
// has used nothing and org 1 10 s: 1, 3, 2.
#[test]
fn fair_share_ranks_organizations_owning_nothing_by_usage() {
    let (engine, model) = engine_and_model(Rule::FairShare, &[1], &[(1, 0, 10), (1, 1, 10), (2, 2, 10)]);
    assert_eq!(model, vec![1, 3, 2]);
    assert_eq!(engine, model, "fair-share start order");
}

// ---------------------------------------------------------------------------
// Determinism

/// Every action with its instant.
#[derive(Default)]
struct Actions(Vec<(Time, Action)>);

impl Observer for Actions {
    fn on_step(&mut self, now: Time, actions: &[Action], _view: &View) {
        self.0.extend(actions.iter().map(|a| (now, a.clone())));
    }
}

/// `tasks.csv` and the action stream of a run.
fn outputs(case: &Case) -> (Vec<u8>, Vec<(Time, Action)>) {
    let log = Log::default();
    let mut csv = TasksCsv::new(Vec::new());
    let mut actions = Actions::default();
    case.simulation(&log)
        .run(
            ok(case.arrivals.clone()),
            &mut Fanout(vec![&mut csv, &mut actions]),
        )
        .unwrap();
    (csv.finish().unwrap(), actions.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn same_outputs_whatever_the_thread_pool(
        case in cases(all_orders(), ALL),
        orders in subsequence(all_orders(), 3..=5),
    ) {
        // The same case under several policies, each twice: the pools run
        // different policies, and identical runs, at once.
        let jobs: Vec<Case> = orders
            .iter()
            .flat_map(|&order| {
                let c = Case { order, ..case.clone() };
                [c.clone(), c]
            })
            .collect();
        let sequential: Vec<_> = jobs.iter().map(outputs).collect();
        for (i, (csv, _)) in sequential.iter().enumerate() {
            let rows = csv.iter().filter(|&&b| b == b'\n').count();
            prop_assert!(rows > case.arrivals.len(), "job {}: {} rows", i, rows);
            prop_assert!(sequential[i ^ 1] == sequential[i], "two sequential runs of the same case differ");
        }
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let parallel: Vec<_> = pool.install(|| jobs.par_iter().map(outputs).collect());
            prop_assert!(parallel == sequential, "{} threads: outputs differ", threads);
        }
    }
}

// ---------------------------------------------------------------------------
// Findings and housekeeping

/// Submits one follow-up task, with a fresh id, when task 1 completes.
struct OneFollowUp;

impl Agent for OneFollowUp {
    fn on_action(&mut self, a: &Action, ctx: &mut AgentCtx) -> Result<(), SimError> {
        if matches!(a, Action::Ended(r) if r.spec.id == TaskId(1)) {
            ctx.submit_new(Arrival::new(
                TaskSpec::new(0, 0, 0),
                ctx.now(),
                Time::from_secs(1),
            ));
        }
        Ok(())
    }
}

/// Agents' ids never collide with a trace's. A trace with fresh ids
/// interleaves with an agent that submits when task 1 ends: every task has
/// its own id. A trace that numbers its own tasks collides with the id the
/// engine gave the agent: the run fails, naming the task, rather than
/// ending two tasks with one id.
#[test]
fn agents_and_traces_never_share_an_id() {
    let trace = || {
        vec![
            crate::common::arrive(crate::common::task(1), 0, 10),
            crate::common::arrive(crate::common::task(2), 20, 10),
        ]
    };
    let core = crate::common::scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(OneFollowUp);
    sim.add_agent(fairsched_sim::Trace::with_fresh_ids(ok(trace())));
    let mut rec = crate::common::Recorder::default();
    sim.run_agents(&mut rec).unwrap();
    let ids: Vec<u64> = rec.ends.iter().map(|(r, _)| r.spec.id.0).collect();
    assert_eq!(
        ids,
        vec![1, 2, 3],
        "task 1, the follow-up at 10, the trace's second at 20"
    );

    let core = crate::common::scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(OneFollowUp);
    let err = sim
        .run(ok(trace()), &mut crate::common::Recorder::default())
        .unwrap_err();
    assert!(
        matches!(err, SimError::DuplicateTask { task: TaskId(2), .. }),
        "{err}"
    );

    // With the engine's ids set above the trace's, both go through.
    let core = crate::common::scheduler(&Platform::pool(1), "single-pool", "fifo", None);
    let mut sim = Simulation::new(core);
    sim.add_agent(OneFollowUp);
    sim.fresh_ids_from(100);
    let mut rec = crate::common::Recorder::default();
    sim.run(ok(trace()), &mut rec).unwrap();
    let mut ids: Vec<u64> = rec.ends.iter().map(|(r, _)| r.spec.id.0).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2, 100]);
}

#[test]
fn every_registered_order_is_exercised() {
    // The properties draw policies from the registry; make sure the ones
    // with a greedy rule are all still there, and every non-clairvoyant
    // order has one.
    let names: Vec<OrderKind> = registry_orders();
    for n in [
        "first-fit",
        "priority",
        "round-robin",
        "fair-share",
        "fcfs",
        "easy",
    ] {
        assert!(
            names.contains(&OrderKind::Registry(n)),
            "{n} is no longer an order policy"
        );
    }
    for o in names {
        assert_ne!(
            o.greedy(),
            Greedy::Nothing,
            "{o:?} has no greedy rule in this file"
        );
    }
}
