//! The cost of one allocation decision of the PFFP paper's strategies
//! (`rand`, `mlp`, `mst`, `mst-user`, `pffp1`), on machines with their own
//! FCFS queues (`Platform::machines`, sizes 2, 4, 8 as in Test 3, repeated
//! for more machines). Every processor runs a long task (10 days) and Q
//! tasks wait behind them; a decision is one core step with one `Submit`:
//! the policy picks a machine, the task joins its queue, every policy is
//! notified, FCFS finds no free processor.
//!
//! - `pffp/warm_vs_queue/<policy>/<Q>`: 3 machines, Q ∈ {100, 1000,
//!   10000}, warm: nothing ended since the last decision (MST and MSTUser
//!   have an up-to-date FCFS projection of every machine).
//! - `pffp/warm_vs_machines/<policy>/<M>`: Q = 1000 on M ∈ {3, 30, 300}
//!   machines, warm.
//! - `pffp/cold_vs_queue/<policy>/<Q>`: 3 machines, the first decision
//!   after a running task completed (its machine's queue head took the
//!   freed processor, so Q stays the same). MSTUser rebuilds that
//!   machine's projection from its queue (its estimates are wrong at
//!   almost every end): O(Q/3) by design. MST trusts the true runtimes and
//!   does not rebuild after a completion; `mst-after-kill` is MST after a
//!   task is killed (an unexpected end: it rebuilds too). `(timer)` is the
//!   clock reads alone, included in every cold time.
//!
//! Timing. Setup is never timed. Warm: a prepared scheduler is cloned
//! (untimed) and Q/10 decisions are timed back to back on the clone, so Q
//! grows by at most 10% (5% on average) over a timed block; cloning once
//! per decision would make the untimed clones (up to ~ms at Q = 10000)
//! dominate the run time by thousands of times. The prepared scheduler's
//! hash tables were grown to hold a block first ([`prepare`]), so no block
//! pays a rehash. Cold: a steady state (a completion on the machine of the
//! previous decision, untimed, then one decision, timed with its own clock
//! reads), Q constant.
//!
//! Instructions per decision: `valgrind --tool=callgrind
//! --toggle-collect='*Bed*decide*' <bench binary> --bench --profile-time 1
//! 'pffp/warm_vs_queue/mst/100$'`, the collected count divided by the
//! calls of `Bed::decide` (bench/README.md, "PFFP").
//!
//! `cargo bench -p fairsched-sim --bench pffp -- --warm-up-time 1 --measurement-time 2`

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fairsched_core::{
    Action, Event, MachineId, Platform, RuntimeOracle, Scheduler, TaskId, TaskSpec, Time, registry,
};

/// The strategies measured (registry names).
const POLICIES: [&str; 5] = ["rand", "mlp", "mst", "mst-user", "pffp1"];
/// Processors of the machines, repeated (Test 3's machines).
const SIZES: [u32; 3] = [2, 4, 8];
/// Waiting tasks of the machine sweep.
const Q_FIXED: u64 = 1000;
/// A step of the clock between two events (ms).
const TICK_MS: i64 = 1000;

/// True runtimes (MST's oracle): 10 days plus up to 96 minutes, so that no
/// task would end during the preparation or the measurement.
fn runtime(id: u64) -> Time {
    Time::from_secs(864_000 + (id % 97) as i64 * 60)
}

/// The user's estimate (MSTUser): 1 to 4 times the runtime.
fn estimate(id: u64) -> Time {
    Time::from_millis(runtime(id).millis() * (1 + (id % 4) as i64))
}

struct Oracle;
impl RuntimeOracle for Oracle {
    fn runtime(&self, task: TaskId) -> Option<Time> {
        Some(runtime(task.0))
    }
}

fn spec(id: u64) -> TaskSpec {
    TaskSpec::new(id, (id % 17) as i64, 0).estimate(estimate(id))
}

/// A scheduler and what the bench needs to drive it.
#[derive(Clone)]
struct Bed {
    core: Scheduler,
    next: u64,
    now: i64,
    /// Running tasks of each machine, oldest start first.
    running: Vec<VecDeque<TaskId>>,
    /// The machine of the last decision.
    last: MachineId,
    out: Vec<Action>,
}

impl Bed {
    fn step(&mut self, events: impl IntoIterator<Item = Event>) {
        self.now += TICK_MS;
        self.out.clear();
        self.core
            .step(Time::from_millis(self.now), events, Some(&Oracle), &mut self.out)
            .expect("step");
        for a in &self.out {
            if let Action::Start { task, machine, .. } = a {
                self.running[machine.index()].push_back(*task);
            }
        }
    }

    /// One allocation decision: one task submitted.
    fn submit(&mut self) {
        let id = self.next;
        self.next += 1;
        self.step([Event::Submit(spec(id))]);
    }

    /// A timed decision. Never inlined, so that instructions can be
    /// counted per decision (`valgrind --tool=callgrind
    /// --toggle-collect='*Bed*decide*'` on the bench binary).
    #[inline(never)]
    fn decide(&mut self) {
        self.submit();
    }

    /// Remembers the machine of the last decision (not timed).
    fn settle(&mut self) {
        let id = TaskId(self.next - 1);
        self.last = self.core.view().task(id).expect("queued").machine();
    }

    /// The oldest running task of the machine of the last decision ends
    /// (completes, or is killed) and the head of its queue starts: every
    /// machine's queue keeps its length.
    fn end_one(&mut self, kill: bool) {
        let task = self.running[self.last.index()]
            .pop_front()
            .expect("a running task");
        self.step([if kill {
            Event::Kill { task }
        } else {
            Event::Complete { task }
        }]);
    }

    fn waiting(&self) -> u64 {
        self.core.view().waiting_tasks()
    }
}

/// `machines` machines, every processor busy with a long task, `q` tasks
/// waiting; warm (the last step was a decision).
fn prepare(policy: &str, machines: usize, q: u64) -> Bed {
    let sizes: Vec<u32> = (0..machines).map(|i| SIZES[i % SIZES.len()]).collect();
    let procs: u32 = sizes.iter().sum();
    let core = Scheduler::new(
        &Platform::machines(&sizes),
        1,
        registry::Registry::builtin()
            .build_allocate(&policy.parse().expect("spec"))
            .expect("allocate policy"),
        registry::Registry::builtin()
            .build_order(&"fcfs".parse().expect("spec"))
            .expect("order policy"),
        None,
    );
    let mut bed = Bed {
        core,
        next: 1,
        now: 0,
        running: vec![VecDeque::new(); machines],
        last: MachineId(0),
        out: Vec::new(),
    };
    // One task per processor through the policy, one step each (so MST and
    // MSTUser learn their durations)…
    for _ in 0..procs {
        bed.submit();
    }
    // …then a processor the policy left idle gets a task sent there.
    for (i, &size) in sizes.iter().enumerate() {
        let m = MachineId(i as u32);
        let free = bed.core.view().machine(m).free();
        assert!(free <= size);
        for _ in 0..free {
            let mut s = spec(bed.next);
            s.target = Some(m);
            bed.next += 1;
            bed.step([Event::Submit(s)]);
        }
    }
    // Then tasks queue until q - 1 wait, and `extra` more that are then
    // cancelled: the hash tables of the core and of the policies grow to
    // hold a timed block of warm decisions and do not shrink, so no block
    // pays a rehash of the whole table (a one-off that real runs amortize
    // over every insertion; here every block would start just below the
    // same threshold or not). The last step is a decision: q wait.
    while bed.waiting() < q - 1 {
        bed.submit();
    }
    let extra = block(q) + 1;
    let first = bed.next;
    for _ in 0..extra {
        bed.submit();
    }
    bed.step((first..first + extra).map(|id| Event::Cancel { task: TaskId(id) }));
    bed.submit();
    assert_eq!(
        bed.running.iter().map(VecDeque::len).sum::<usize>(),
        procs as usize,
        "{policy}: every processor busy"
    );
    assert_eq!(bed.waiting(), q, "{policy}: {q} tasks waiting");
    for m in bed.core.view().machines() {
        assert_eq!(m.free(), 0, "{policy}: machine {} is full", m.id().0);
    }
    bed.settle();
    bed
}

/// Queue lengths per machine (for the log).
fn queues(bed: &Bed) -> String {
    let v = bed.core.view();
    let q: Vec<String> = v.machines().map(|m| m.waiting().to_string()).collect();
    if q.len() <= 3 {
        q.join("/")
    } else {
        let w: Vec<u32> = v.machines().map(|m| m.waiting()).collect();
        format!("min {} max {}", w.iter().min().unwrap(), w.iter().max().unwrap())
    }
}

/// Times `iters` warm decisions: blocks of `block` on clones of `prepared`.
fn warm(prepared: &Bed, iters: u64, block: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(block);
        let mut bed = prepared.clone();
        let t = Instant::now();
        for _ in 0..n {
            bed.decide();
        }
        total += t.elapsed();
        black_box(&bed.out);
        drop(bed);
        left -= n;
    }
    total
}

/// Warm decisions per clone: Q grows by at most 10% in a timed block.
fn block(q: u64) -> u64 {
    (q / 10).max(1)
}

fn warm_vs_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("pffp/warm_vs_queue");
    g.throughput(Throughput::Elements(1));
    for policy in POLICIES {
        for q in [100u64, 1000, 10_000] {
            let bed = prepare(policy, 3, q);
            eprintln!("{policy}, Q = {q}: queues {}", queues(&bed));
            g.bench_function(BenchmarkId::new(policy, q), |b| {
                b.iter_custom(|iters| warm(&bed, iters, block(q)))
            });
        }
    }
    g.finish();
}

fn warm_vs_machines(c: &mut Criterion) {
    let mut g = c.benchmark_group("pffp/warm_vs_machines");
    g.throughput(Throughput::Elements(1));
    for policy in POLICIES {
        for m in [3usize, 30, 300] {
            let bed = prepare(policy, m, Q_FIXED);
            eprintln!("{policy}, M = {m}: queues {}", queues(&bed));
            g.bench_function(BenchmarkId::new(policy, m), |b| {
                b.iter_custom(|iters| warm(&bed, iters, block(Q_FIXED)))
            });
        }
    }
    g.finish();
}

fn cold_vs_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("pffp/cold_vs_queue");
    g.throughput(Throughput::Elements(1));
    let cases = POLICIES
        .iter()
        .map(|&p| (p, p, false))
        .chain([("mst-after-kill", "mst", true)]);
    for (label, policy, kill) in cases {
        for q in [100u64, 1000, 10_000] {
            let mut bed = prepare(policy, 3, q);
            g.bench_function(BenchmarkId::new(label, q), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        bed.end_one(kill);
                        let t = Instant::now();
                        bed.decide();
                        total += t.elapsed();
                        bed.settle();
                    }
                    total
                })
            });
            assert_eq!(bed.waiting(), q, "{label}: one ends, one arrives");
        }
    }
    // The clock reads alone.
    g.bench_function(BenchmarkId::new("(timer)", 0), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                total += black_box(t).elapsed();
            }
            total
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = warm_vs_queue, warm_vs_machines, cold_vs_queue
}
criterion_main!(benches);
