//! Snapshots of the core (`Scheduler::snapshot` / `Scheduler::restore`):
//! a scheduler restored from a snapshot taken in the middle of a busy run
//! decides exactly as the original for the rest of the run, for every
//! policy the live broker may run; snapshots are byte-stable; bad bytes
//! are refused without a panic; a snapshot does not go into a scheduler
//! built with other policies, parameters or platform.
//!
//! The workload drives the core directly (no simulator): submissions from
//! several users and organizations (some parallel, some workflow tasks,
//! some optional, some sent to a chosen machine), completions, failures,
//! kills, cancellations, driver requeues, phases, priority changes, slots
//! joining and leaving, and the Control's timers delivered at their time.

use fairsched_core::{AllocatePolicy, ControlPolicy, OrderPolicy, PolicySpec, Registry, SpecError};

fn build_allocate(spec: &PolicySpec) -> Result<AllocatePolicy, SpecError> {
    Registry::builtin().build_allocate(spec)
}
fn build_order(spec: &PolicySpec) -> Result<OrderPolicy, SpecError> {
    Registry::builtin().build_order(spec)
}
fn build_control(spec: &PolicySpec) -> Result<ControlPolicy, SpecError> {
    Registry::builtin().build_control(spec)
}
use fairsched_core::{
    Action, Event, MachineId, OrgId, Phase, Platform, Scheduler, SlotId, SnapshotError, TaskId, TaskSpec,
    Time, WorkflowId, WorkflowRef,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// SplitMix64: the workload's own random stream.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        (!v.is_empty()).then(|| v[self.below(v.len() as u64) as usize])
    }
}

/// One configuration: what the broker would build from its config file.
#[derive(Clone)]
struct Config {
    allocate: &'static str,
    order: &'static str,
    control: Option<&'static str>,
    platform: Platform,
    /// Tasks may need two slots.
    parallel: bool,
    /// Some tasks are sent to a chosen machine.
    targets: bool,
}

impl Config {
    fn build(&self, seed: u64) -> Scheduler {
        Scheduler::new(
            &self.platform,
            seed,
            build_allocate(&self.allocate.parse().unwrap()).unwrap(),
            build_order(&self.order.parse().unwrap()).unwrap(),
            self.control.map(|c| build_control(&c.parse().unwrap()).unwrap()),
        )
    }
    fn name(&self) -> String {
        format!("{} / {} / {:?}", self.allocate, self.order, self.control)
    }
}

fn cfg(
    allocate: &'static str,
    order: &'static str,
    control: Option<&'static str>,
    platform: Platform,
) -> Config {
    Config {
        allocate,
        order,
        control,
        platform,
        parallel: true,
        targets: false,
    }
}

/// Three organizations owning 2, 2 and 1 slots of one pool.
fn owned() -> Platform {
    Platform::owned_pool(&[2, 2, 1])
}

/// Every policy the live broker allows (every blind one), each with a
/// platform where its decisions matter.
fn configs() -> Vec<Config> {
    let mut v = Vec::new();
    for order in [
        "fifo",
        "fcfs",
        "easy",
        "priority",
        "round-robin",
        "fair-share",
        "workflow-fcfs",
        "direct-contr",
        "ut-fair-share",
        "curr-fair-share",
    ] {
        v.push(cfg("single-pool", order, None, owned()));
    }
    for control in [None, Some("age-boost[after=9]")] {
        // With a Control, the kills of a dispatch reach it at the next
        // step: a snapshot between the two holds them.
        v.push(Config {
            parallel: false,
            targets: true,
            ..cfg(
                "least-loaded",
                "diet-ethic",
                control,
                Platform::machines(&[1, 1, 1]),
            )
        });
    }
    // Key 4 counting runs in progress, on servers of several slots where
    // that reading matters.
    v.push(Config {
        parallel: false,
        targets: true,
        ..cfg(
            "least-loaded",
            "diet-ethic[key4=running]",
            None,
            Platform::machines(&[2, 1, 3]),
        )
    });
    for allocate in [
        "single-pool",
        "least-loaded",
        "rand",
        "mlp",
        "mst-user[missing=20]",
        "pffp",
        "pffp1",
        "pffp2[floor=false]",
    ] {
        v.push(cfg(allocate, "fcfs", None, Platform::machines(&[2, 3, 4])));
    }
    v.push(cfg("least-loaded", "priority", None, Platform::machines(&[2, 3])));
    for (order, control) in [
        ("fifo", "workflow-fairness[tau=0.05]"),
        ("priority", "workflow-fairness[tau=0.05]"),
        ("priority", "workflow-fairness[tau=0.05,every=7]"),
        ("workflow-fcfs", "workflow-fairness"),
        ("priority", "age-boost[after=9,by=2]"),
        ("easy", "age-boost[after=9]"),
    ] {
        v.push(cfg("single-pool", order, Some(control), owned()));
    }
    v
}

/// What the driver knows of the platform, from the actions.
struct Driver {
    cfg: Config,
    rng: Mix,
    now: Time,
    next_id: u64,
    waiting: BTreeSet<u64>,
    running: BTreeSet<u64>,
    /// Timers asked for and not delivered yet: (at, token).
    timers: BTreeSet<(Time, u64)>,
    present: BTreeSet<u32>,
    slots_made: u32,
    machines: u32,
    orgs: u32,
    /// What happened, to check the workload is busy.
    seen: Seen,
}

#[derive(Default, Debug)]
struct Seen {
    starts: u32,
    requeues: u32,
    priorities: u32,
    timers: u32,
    ended: u32,
}

impl Driver {
    fn new(cfg: &Config, seed: u64) -> Driver {
        let slots = cfg.platform.total_slots();
        Driver {
            cfg: cfg.clone(),
            rng: Mix(seed),
            now: Time::ZERO,
            next_id: 1,
            waiting: BTreeSet::new(),
            running: BTreeSet::new(),
            timers: BTreeSet::new(),
            present: (0..slots).collect(),
            slots_made: slots,
            machines: cfg.platform.machines.len() as u32,
            orgs: cfg.platform.orgs,
            seen: Seen::default(),
        }
    }

    fn live(&self) -> Vec<u64> {
        self.waiting.iter().chain(&self.running).copied().collect()
    }

    /// The next step: due timers first (at their own instant), else a few
    /// events a little later.
    fn next_step(&mut self) -> (Time, Vec<Event>) {
        let later = self.now + Time::from_millis(self.rng.below(4) as i64 * 1500);
        if let Some(&(at, _)) = self.timers.first()
            && at <= later
        {
            let due: Vec<(Time, u64)> = self.timers.iter().take_while(|t| t.0 == at).copied().collect();
            for t in &due {
                self.timers.remove(t);
            }
            self.now = self.now.max(at);
            return (
                at,
                due.into_iter().map(|(_, token)| Event::Timer { token }).collect(),
            );
        }
        self.now = later;
        let n = 1 + self.rng.below(3);
        let mut events = Vec::new();
        for _ in 0..n {
            events.extend(self.event());
        }
        if events.is_empty() {
            events.push(self.submit());
        }
        (self.now, events)
    }

    fn submit(&mut self) -> Event {
        let id = self.next_id;
        self.next_id += 1;
        let user = self.rng.below(7) as i64;
        let org = (user as u32) % (self.orgs + 1); // one organization owns nothing
        let mut spec = TaskSpec::new(id, user, org).priority(1 + self.rng.below(3) as i64);
        if self.cfg.parallel && self.rng.chance(15) {
            spec = spec.slots(2);
        }
        if self.rng.chance(60) {
            spec = spec.estimate(Time::from_secs(1 + self.rng.below(30) as i64));
        }
        if self.rng.chance(50) {
            spec.workflow = Some(WorkflowRef {
                workflow: WorkflowId(self.rng.below(4) as u32),
                activity: self.rng.below(3) as u32,
            });
        }
        if self.rng.chance(40) {
            spec = spec.optional();
        }
        if self.cfg.targets && self.rng.chance(70) {
            spec = spec.on(MachineId(self.rng.below(u64::from(self.machines)) as u32));
        }
        Event::Submit(spec)
    }

    fn event(&mut self) -> Option<Event> {
        let running: Vec<u64> = self.running.iter().copied().collect();
        let live = self.live();
        let task = |t: u64| TaskId(t);
        // Keep a queue: what the order policy decides only matters then.
        let submit = if self.waiting.len() < 12 { 45 } else { 20 };
        if self.rng.below(100) < submit {
            return Some(self.submit());
        }
        Some(match self.rng.below(100) {
            0..=44 => Event::Complete {
                task: task(self.rng.pick(&running)?),
            },
            45..=49 => Event::Fail {
                task: task(self.rng.pick(&running)?),
            },
            50..=52 => Event::Kill {
                task: task(self.rng.pick(&running)?),
            },
            53..=59 => Event::Cancel {
                task: task(self.rng.pick(&live)?),
            },
            60..=64 => Event::Requeue {
                task: task(self.rng.pick(&running)?),
            },
            65..=78 => Event::Phase {
                task: task(self.rng.pick(&running)?),
                phase: Phase::ALL[self.rng.below(4) as usize],
            },
            79..=85 => Event::SetPriority {
                task: task(self.rng.pick(&live)?),
                priority: self.rng.below(5) as i64,
            },
            86..=88 => {
                self.present.insert(self.slots_made);
                self.slots_made += 1;
                Event::SlotJoin {
                    machine: MachineId(self.rng.below(u64::from(self.machines)) as u32),
                    owner: OrgId(self.rng.below(u64::from(self.orgs)) as u32),
                }
            }
            89..=91 if self.present.len() > 4 => {
                let present: Vec<u32> = self.present.iter().copied().collect();
                let slot = self.rng.pick(&present)?;
                self.present.remove(&slot);
                Event::SlotLeave { slot: SlotId(slot) }
            }
            // A duplicate or stale event (ignored by the core).
            _ => Event::Complete {
                task: task(self.rng.below(self.next_id + 3)),
            },
        })
    }

    fn observe(&mut self, actions: &[Action]) {
        for a in actions {
            match a {
                Action::Start { task, .. } => {
                    self.waiting.remove(&task.0);
                    self.running.insert(task.0);
                    self.seen.starts += 1;
                }
                Action::Stop {
                    task, requeued: true, ..
                } => {
                    self.running.remove(&task.0);
                    self.waiting.insert(task.0);
                    self.seen.requeues += 1;
                }
                Action::Stop { .. } => {}
                Action::Ended(r) => {
                    self.waiting.remove(&r.spec.id.0);
                    self.running.remove(&r.spec.id.0);
                    self.seen.ended += 1;
                }
                Action::Timer { at, token } => {
                    self.timers.insert((*at, *token));
                    self.seen.timers += 1;
                }
                Action::Priority { .. } => self.seen.priorities += 1,
            }
        }
    }

    fn note_submissions(&mut self, events: &[Event]) {
        for e in events {
            if let Event::Submit(s) = e {
                self.waiting.insert(s.id.0);
            }
        }
    }
}

const STEPS: usize = 400;
const SNAPSHOT_AT: [usize; 4] = [40, 150, 260, 399];

/// Runs `cfg` for [`STEPS`] steps; at each of [`SNAPSHOT_AT`] (and after
/// the first steps that requeued a task or set a timer), snapshots
/// the original and restores it into a freshly built scheduler (another
/// seed: the generator's state comes from the snapshot), which from then
/// on gets the same steps. Every restored scheduler must emit the same
/// actions as the original at every step, and snapshot to the same bytes
/// at the end. Returns the driver (what happened) and the final snapshot.
fn run_with_restores(cfg: &Config, seed: u64) -> (Seen, Vec<u8>) {
    let mut original = cfg.build(seed);
    let mut driver = Driver::new(cfg, seed ^ 0x5EED);
    let mut restored: Vec<(usize, Scheduler)> = Vec::new();
    let (mut special_requeues, mut special_timers) = (0, 0);
    for step in 0..STEPS {
        let (now, events) = driver.next_step();
        driver.note_submissions(&events);
        let mut out = Vec::new();
        original
            .step(now, events.clone(), None, &mut out)
            .unwrap_or_else(|e| panic!("{}: step {step}: {e}", cfg.name()));
        for (from, r) in &mut restored {
            let mut theirs = Vec::new();
            r.step(now, events.clone(), None, &mut theirs).unwrap();
            assert_eq!(
                theirs,
                out,
                "{}: restored at step {from}, diverged at step {step}",
                cfg.name()
            );
        }
        driver.observe(&out);
        // Also right after the first steps that requeued a task or asked
        // for a timer: state is pending for the next step then.
        let requeued = out
            .iter()
            .any(|a| matches!(a, Action::Stop { requeued: true, .. }));
        let timer = out.iter().any(|a| matches!(a, Action::Timer { .. }));
        let special = (requeued && special_requeues < 3) || (timer && special_timers < 2);
        special_requeues += u32::from(requeued);
        special_timers += u32::from(timer);
        if SNAPSHOT_AT.contains(&step) || special {
            let bytes = original
                .snapshot()
                .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
            let mut fresh = cfg.build(seed.wrapping_add(1000));
            fresh
                .restore(&bytes)
                .unwrap_or_else(|e| panic!("{}: restore at step {step}: {e}", cfg.name()));
            // snapshot(restore(snapshot(x))) == snapshot(x)
            assert!(
                fresh.snapshot().unwrap() == bytes,
                "{}: a restored scheduler snapshots to other bytes (step {step})",
                cfg.name()
            );
            assert_eq!(fresh.live_task_ids(), original.live_task_ids());
            assert_eq!(fresh.stats(), original.stats());
            assert_eq!(fresh.now(), original.now());
            restored.push((step, fresh));
        }
    }
    let end = original.snapshot().unwrap();
    for (from, r) in &restored {
        assert!(
            r.snapshot().unwrap() == end,
            "{}: restored at step {from}, snapshots to other bytes at the end",
            cfg.name()
        );
    }
    (driver.seen, end)
}

#[test]
fn a_restored_scheduler_decides_as_the_original_for_every_live_policy() {
    for cfg in configs() {
        for seed in [1, 2] {
            let (seen, _) = run_with_restores(&cfg, seed);
            // The workload is busy: many starts and ends, some requeues.
            assert!(seen.starts > 60 && seen.ended > 50, "{}: {seen:?}", cfg.name());
            assert!(seen.requeues > 0, "{}: {seen:?}", cfg.name());
            if cfg.control.is_some() && cfg.control != Some("workflow-fairness") {
                assert!(seen.priorities > 0, "{}: {seen:?}", cfg.name());
            }
            if cfg
                .control
                .is_some_and(|c| c.contains("every") || c.contains("age-boost"))
            {
                assert!(seen.timers > 0, "{}: {seen:?}", cfg.name());
            }
        }
    }
}

#[test]
fn the_same_run_gives_the_same_bytes_and_another_run_other_bytes() {
    let cfg = cfg("single-pool", "direct-contr", None, owned());
    let (_, a) = run_with_restores(&cfg, 3);
    let (_, b) = run_with_restores(&cfg, 3);
    let (_, c) = run_with_restores(&cfg, 4);
    assert!(a == b);
    assert!(a != c);
}

#[test]
fn the_format_starts_with_its_magic_and_version() {
    let core = cfg("single-pool", "fifo", None, owned()).build(1);
    let bytes = core.snapshot().unwrap();
    assert_eq!(&bytes[..8], b"FSCHSNAP");
    assert_eq!(
        u16::from_le_bytes([bytes[8], bytes[9]]),
        fairsched_core::snapshot::FORMAT_VERSION
    );
    // Another version is refused as a mismatch, naming both versions.
    let mut other = bytes.clone();
    other[8] = other[8].wrapping_add(1);
    let e = cfg("single-pool", "fifo", None, owned())
        .build(1)
        .restore(&other)
        .unwrap_err();
    assert!(matches!(e, SnapshotError::Mismatch(_)), "{e}");
    assert!(e.to_string().contains("version"), "{e}");
}

/// A scheduler of `cfg` after 120 steps of the workload.
fn busy(cfg: &Config) -> Scheduler {
    let mut core = cfg.build(9);
    let mut driver = Driver::new(cfg, 9);
    for _ in 0..120 {
        let (now, events) = driver.next_step();
        driver.note_submissions(&events);
        let mut out = Vec::new();
        core.step(now, events, None, &mut out).unwrap();
        driver.observe(&out);
    }
    core
}

#[test]
fn a_snapshot_does_not_go_into_a_scheduler_built_otherwise() {
    let base = cfg("single-pool", "fifo", Some("age-boost[after=9]"), owned());
    let bytes = busy(&base).snapshot().unwrap();
    let refused = |other: Config| {
        let mut core = other.build(9);
        let before = core.snapshot().unwrap();
        let e = core.restore(&bytes).unwrap_err();
        assert!(
            core.snapshot().unwrap() == before,
            "a refused restore changed the scheduler"
        );
        assert!(matches!(e, SnapshotError::Mismatch(_)), "{e}");
        e.to_string()
    };
    // Another order: both names are given.
    let e = refused(cfg(
        "single-pool",
        "priority",
        Some("age-boost[after=9]"),
        owned(),
    ));
    assert!(
        e.contains("`first-fit`") && e.contains("`priority`") && e.contains("order"),
        "{e}"
    );
    // Another allocate, another control, no control.
    let e = refused(cfg("least-loaded", "fifo", Some("age-boost[after=9]"), owned()));
    assert!(e.contains("`single-pool`") && e.contains("`least-loaded`"), "{e}");
    let e = refused(cfg("single-pool", "fifo", Some("workflow-fairness"), owned()));
    assert!(
        e.contains("`age-boost`") && e.contains("`workflow-fairness`"),
        "{e}"
    );
    let e = refused(cfg("single-pool", "fifo", None, owned()));
    assert!(e.contains("`age-boost`") && e.contains("none"), "{e}");
    // Same policy, other parameters.
    let e = refused(cfg("single-pool", "fifo", Some("age-boost[after=10]"), owned()));
    assert!(
        e.contains("after") && e.contains("9s") && e.contains("10s"),
        "{e}"
    );
    // Another platform.
    let e = refused(cfg(
        "single-pool",
        "fifo",
        Some("age-boost[after=9]"),
        Platform::pool(5),
    ));
    assert!(e.contains("slot"), "{e}");
    let e = refused(cfg(
        "single-pool",
        "fifo",
        Some("age-boost[after=9]"),
        Platform::machines(&[2, 3]),
    ));
    assert!(e.contains("machines"), "{e}");
    // PFFP presets share a type: their parameters tell them apart.
    let pffp1 = cfg("pffp1", "fcfs", None, Platform::machines(&[2, 3]));
    let bytes1 = busy(&pffp1).snapshot().unwrap();
    let mut pffp2 = cfg("pffp2", "fcfs", None, Platform::machines(&[2, 3])).build(1);
    let e = pffp2.restore(&bytes1).unwrap_err();
    assert!(
        matches!(e, SnapshotError::Mismatch(_)) && e.to_string().contains("predict"),
        "{e}"
    );
    let mut pffp = cfg("pffp", "fcfs", None, Platform::machines(&[2, 3])).build(1);
    pffp.restore(&bytes1).expect("pffp's defaults are pffp1's");
}

#[test]
fn clairvoyant_policies_cannot_be_snapshotted() {
    for (allocate, order, name) in [
        ("single-pool", "ref", "ref"),
        ("single-pool", "rand", "rand"),
        ("mst", "fcfs", "mst"),
    ] {
        let core = cfg(allocate, order, None, owned()).build(1);
        assert_eq!(core.snapshot().unwrap_err(), SnapshotError::Unsupported(name));
    }
    let e = SnapshotError::Unsupported("ref");
    assert!(
        e.to_string().contains("`ref`") && e.to_string().contains("replays the whole log"),
        "{e}"
    );
}

/// A snapshot of a busy run, built once.
fn sample() -> &'static (Config, Vec<u8>) {
    static SAMPLE: std::sync::OnceLock<(Config, Vec<u8>)> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| {
        let c = cfg(
            "single-pool",
            "priority",
            Some("workflow-fairness[tau=0.05]"),
            owned(),
        );
        let bytes = busy(&c).snapshot().unwrap();
        (c, bytes)
    })
}

/// Restoring `bytes` must fail, without a panic, leaving the scheduler as
/// it was.
fn refused(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (c, _) = sample();
    let mut core = c.build(1);
    let before = core.snapshot().unwrap();
    prop_assert!(core.restore(bytes).is_err());
    prop_assert!(core.snapshot().unwrap() == before);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        refused(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes_behind_the_magic_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut v = b"FSCHSNAP".to_vec();
        v.extend_from_slice(&bytes);
        refused(&v)?;
    }

    #[test]
    fn truncated_snapshots_are_refused(cut in any::<prop::sample::Index>()) {
        let (_, bytes) = sample();
        refused(&bytes[..cut.index(bytes.len())])?;
    }

    #[test]
    fn altered_snapshots_are_refused(
        changes in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let (_, bytes) = sample();
        let mut v = bytes.clone();
        for (at, x) in changes {
            let i = at.index(v.len());
            v[i] ^= x;
        }
        prop_assume!(&v != bytes);
        refused(&v)?;
    }

    #[test]
    fn extended_snapshots_are_refused(extra in proptest::collection::vec(any::<u8>(), 1..16)) {
        let (_, bytes) = sample();
        let mut v = bytes.clone();
        v.extend_from_slice(&extra);
        refused(&v)?;
    }
}

#[test]
fn snapshot_size_with_ten_thousand_live_tasks() {
    // 10,000 sequential tasks from 50 users of 5 organizations on a pool
    // of 1,000 slots: 1,000 running, 9,000 waiting. Printed for the record
    // (`cargo test -- --nocapture`); bounded to catch a blow-up.
    for (order, control) in [
        ("fifo", None),
        ("fair-share", None),
        ("direct-contr", None),
        ("priority", Some("workflow-fairness")),
    ] {
        let platform = Platform::owned_pool(&[200; 5]);
        let mut core = Scheduler::new(
            &platform,
            1,
            build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            build_order(&order.parse().unwrap()).unwrap(),
            control.map(|c| build_control(&c.parse().unwrap()).unwrap()),
        );
        let mut out = Vec::new();
        for batch in 0..100u64 {
            let events = (0..100u64).map(|i| {
                let id = batch * 100 + i + 1;
                let mut s = TaskSpec::new(id, (id % 50) as i64, (id % 5) as u32);
                s.workflow = Some(WorkflowRef {
                    workflow: WorkflowId((id % 10) as u32),
                    activity: 0,
                });
                Event::Submit(s)
            });
            core.step(Time::from_secs(batch as i64), events, None, &mut out)
                .unwrap();
        }
        assert_eq!(core.live_tasks(), 10_000);
        let started = std::time::Instant::now();
        let bytes = core.snapshot().unwrap();
        let took = started.elapsed();
        let mut fresh = Scheduler::new(
            &platform,
            1,
            build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            build_order(&order.parse().unwrap()).unwrap(),
            control.map(|c| build_control(&c.parse().unwrap()).unwrap()),
        );
        let started = std::time::Instant::now();
        fresh.restore(&bytes).unwrap();
        let restore = started.elapsed();
        println!(
            "snapshot with 10,000 live tasks, {order} {control:?}: {} bytes ({:.1} per task), \
             written in {took:?}, restored in {restore:?}",
            bytes.len(),
            bytes.len() as f64 / 10_000.0
        );
        assert!(bytes.len() < 2_000_000, "{}", bytes.len());
    }
}
