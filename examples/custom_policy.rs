//! Your own policies beside fairsched's, in every driver: docs/extending.md
//! walks through this file.
//!
//! ```text
//! cargo run --release --example custom_policy            # results in out-custom-policy/
//! cargo run --release --example custom_policy -- DIR     # results in DIR/
//! ```
//!
//! It registers two order policies of its own beside fairsched's:
//!
//! - `least-running-org`, blind: the organization with the fewest running
//!   tasks goes first. Its entry declares nothing more than the views, so
//!   it never sees an estimate: it counts the ones it is shown (none);
//! - `shortest-estimate-first`, declared to read the users' estimates (SWF
//!   field 9): the waiting task whose user announced the shortest run goes
//!   first.
//!
//! Then it runs them, on the bundled real log (KTH-SP2), through
//!
//! 1. a comparison with fairsched's `fcfs` (what `fairsched simulate` does);
//! 2. the Shapley paper's experiment, as extra columns beside its
//!    algorithms (`fairsched experiment shapley --with …`);
//! 3. the same experiment as a Slurm-array sweep: its folder prepared, each
//!    array task run here as Slurm would run it (this program, `run-part
//!    DIR I`), its parts collected — the same files, byte for byte;
//! 4. a live broker on 127.0.0.1 whose order policy is `least-running-org`:
//!    tasks of two organizations run on a worker (real processes), the
//!    broker snapshots its core, policy included, and a restart restores
//!    from that snapshot. The estimate reader is refused there (live
//!    tasks carry no estimate), with its name.

use fairsched_broker::api::{NewTask, OrgReply, SubmitReply, SubmitRequest, TaskOut, TokenReply, UserReply};
use fairsched_broker::http::{HttpLimits, ServeOpts, Stop, serve};
use fairsched_broker::service::Settings;
use fairsched_broker::{Config, Live};
use fairsched_client::{Client, Conn, Role};
use fairsched_core::registry::{Ctor, Registry};
use fairsched_core::{MachineId, Notice, Order, Pick, SimRng, TaskId, Time, View, snapshot_policy};
use fairsched_sim::compare::{Comparison, DEMO_LOG, DEMO_NAME};
use fairsched_sim::experiment::run_local;
use fairsched_sim::experiments::shapley::experiment::{Args as ShapleyArgs, Shapley};
use fairsched_sim::sweep::{self, Submit};
use fairsched_sim::{Quiet, RunConfig, TraceInput};
use fairsched_worker::wire::{PollReply, PollRequest, RegisterReply, RegisterRequest, Report, ReportRequest};
use fairsched_worker::{ExecConfig, ExecutorKind, KillHandle, run_assignment};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::error::Error;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

/// How many estimates the blind policy was shown (it must be none).
static BLIND_SAW: AtomicUsize = AtomicUsize::new(0);
/// How many the estimate reader was shown.
static SEF_SAW: AtomicUsize = AtomicUsize::new(0);

/// `least-running-org`: among the organizations with a waiting task, the
/// one with the fewest running tasks starts its oldest (ties: the lower
/// organization). Blind: it reads the views only.
#[derive(Clone, Default, Serialize, Deserialize)]
struct LeastRunningOrg {
    /// Waiting tasks by machine and organization, oldest first.
    waiting: BTreeMap<(u32, u32), VecDeque<TaskId>>,
    /// Running tasks by organization.
    running: BTreeMap<u32, u32>,
    /// Each live task's organization.
    org: BTreeMap<TaskId, u32>,
}

impl Order for LeastRunningOrg {
    // Snapshots (a live broker's): the struct's bytes, by this name.
    snapshot_policy!("least-running-org");

    fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                let Some(t) = view.task(task) else { return };
                // A blind policy's view holds no estimate, whatever the log says.
                if t.estimate().is_some() {
                    BLIND_SAW.fetch_add(1, Ordering::Relaxed);
                }
                if matches!(n, Notice::Requeued { .. }) {
                    *self.running.entry(t.org().0).or_default() -= 1;
                }
                self.org.insert(task, t.org().0);
                self.waiting
                    .entry((machine.0, t.org().0))
                    .or_default()
                    .push_back(task);
            }
            Notice::Started { task, machine } => {
                let org = self.org[&task];
                if let Some(q) = self.waiting.get_mut(&(machine.0, org)) {
                    q.retain(|&x| x != task);
                }
                *self.running.entry(org).or_default() += 1;
            }
            Notice::Left {
                task,
                machine,
                was_running,
                ..
            } => {
                let Some(org) = self.org.remove(&task) else { return };
                if was_running {
                    *self.running.entry(org).or_default() -= 1;
                } else if let Some(m) = machine
                    && let Some(q) = self.waiting.get_mut(&(m.0, org))
                {
                    q.retain(|&x| x != task);
                }
            }
            _ => {}
        }
    }

    fn pick(&mut self, view: &View, m: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let free = view.machine(m).free();
        self.waiting
            .range((m.0, 0)..=(m.0, u32::MAX))
            .filter_map(|(&(_, org), q)| q.front().map(|&t| (org, t)))
            .filter(|&(_, t)| view.task(t).is_some_and(|t| t.slots() <= free))
            .min_by_key(|&(org, _)| (self.running.get(&org).copied().unwrap_or(0), org))
            .map(|(_, t)| Pick::Start(t))
    }
}

/// `shortest-estimate-first`: the waiting task with the shortest user
/// estimate starts (tasks without one last, in submission order), if it
/// fits. Declared to read estimates.
#[derive(Clone, Default)]
struct ShortestEstimateFirst {
    /// (machine, estimate or the end of time, submission order, task).
    waiting: BTreeSet<(u32, Time, u64, TaskId)>,
    key: BTreeMap<TaskId, (u32, Time, u64, TaskId)>,
}

impl Order for ShortestEstimateFirst {
    fn notify(&mut self, view: &View, n: &Notice) {
        match *n {
            Notice::Queued { task, machine } | Notice::Requeued { task, machine } => {
                let Some(t) = view.task(task) else { return };
                if t.estimate().is_some() {
                    SEF_SAW.fetch_add(1, Ordering::Relaxed);
                }
                let k = (machine.0, t.estimate().unwrap_or(Time::MAX), t.seq(), task);
                self.waiting.insert(k);
                self.key.insert(task, k);
            }
            Notice::Started { task, .. } | Notice::Left { task, .. } => {
                if let Some(k) = self.key.remove(&task) {
                    self.waiting.remove(&k);
                }
            }
            _ => {}
        }
    }

    fn pick(&mut self, view: &View, m: MachineId, _rng: &mut SimRng) -> Option<Pick> {
        let (.., t) = *self
            .waiting
            .range((m.0, Time::ZERO, 0, TaskId(0))..=(m.0, Time::MAX, u64::MAX, TaskId(u64::MAX)))
            .next()?;
        let fits = view.task(t).is_some_and(|t| t.slots() <= view.machine(m).free());
        fits.then_some(Pick::Start(t))
    }
}

/// fairsched's policies and these two.
fn registry() -> Res<Registry> {
    Ok(Registry::builtin()
        .with_order(
            "least-running-org",
            "the organization with the fewest running tasks starts its oldest",
            &[],
            Ctor::order(|_| Ok(Box::new(LeastRunningOrg::default()))),
        )?
        .with_order(
            "shortest-estimate-first",
            "the waiting task with the shortest user estimate starts (SWF field 9)",
            &[],
            Ctor::order_with_estimates(|_| Ok(Box::new(ShortestEstimateFirst::default()))),
        )?)
}

fn main() -> Res<()> {
    let registry = registry()?;
    let args: Vec<String> = std::env::args().collect();
    // An array task of the sweep (step 3), as Slurm would run it.
    if args.get(1).map(String::as_str) == Some("run-part") {
        let (Some(dir), Some(i)) = (args.get(2), args.get(3)) else {
            return Err("usage: custom_policy run-part DIR INDEX".into());
        };
        sweep::run_part(Path::new(dir), i.parse()?, &registry, &Quiet)?;
        return Ok(());
    }
    let out = std::path::absolute(args.get(1).map_or("out-custom-policy", String::as_str))?;
    std::fs::create_dir_all(&out)?;
    compare(&registry, &out)?;
    let log = out.join("KTH-SP2.swf.gz");
    std::fs::write(&log, DEMO_LOG)?;
    shapley(&registry, &out, &log)?;
    shapley_sweep(&registry, &out, &log)?;
    live(&registry, &out)?;
    println!("\nall done: results in {}", out.display());
    Ok(())
}

/// Step 1: a comparison on the bundled log, as `fairsched simulate` runs
/// one.
fn compare(registry: &Registry, out: &Path) -> Res<()> {
    let trace = TraceInput::Bytes {
        name: DEMO_NAME.into(),
        data: DEMO_LOG,
    };
    let mut base = RunConfig::new(trace, "fcfs".parse()?);
    base.orgs = 3;
    base.registry = registry.clone();
    let c = Comparison {
        base,
        policies: vec![
            "fcfs".parse()?,
            "least-running-org".parse()?,
            "shortest-estimate-first".parse()?,
        ],
        out: Some(out.join("compare")),
        force: false,
        swf_out: None,
        batsim_jobs: None,
        demo: false,
        tap: None,
    };
    let done = fairsched_sim::compare::run(&c, None, &Quiet)?;
    println!(
        "1. simulate, the bundled KTH-SP2 log, 3 organizations:\n{}",
        done.text(None)
    );
    let (blind, sef) = (BLIND_SAW.load(Ordering::Relaxed), SEF_SAW.load(Ordering::Relaxed));
    println!("   estimates shown: least-running-org (blind) {blind}, shortest-estimate-first {sef}");
    if blind != 0 || sef == 0 {
        return Err("a blind policy was shown an estimate, or the estimate reader none".into());
    }
    Ok(())
}

/// The Shapley experiment's arguments: 3 windows of the bundled log.
fn shapley_args(log: &Path) -> ShapleyArgs {
    ShapleyArgs {
        instances: 3,
        trace_files: vec![(log.to_path_buf(), 100)],
        with: vec!["least-running-org".parse().expect("a spec")],
        ..ShapleyArgs::default()
    }
}

/// Step 2: the Shapley paper's Table 1 protocol, `least-running-org` as
/// one more column.
fn shapley(registry: &Registry, out: &Path, log: &Path) -> Res<()> {
    let done = run_local::<Shapley>(&shapley_args(log), &out.join("shapley"), false, registry, &Quiet)?;
    println!("2. experiment shapley --with least-running-org:\n{}", done.text);
    Ok(())
}

/// Step 3: the same as a Slurm-array sweep, each array task run here (on
/// a cluster: `sweep::submit` with this program as `part_command`).
fn shapley_sweep(registry: &Registry, out: &Path, log: &Path) -> Res<()> {
    let dir = out.join("shapley-sweep");
    let how = Submit {
        partition: None,
        part_command: vec![
            std::env::current_exe()?.to_string_lossy().into_owned(),
            "run-part".into(),
        ],
        command: "custom_policy shapley".into(),
    };
    let prepared = sweep::prepare::<Shapley>(&shapley_args(log), &dir, false, &how, registry, &Quiet)?;
    for i in 0..prepared.instances {
        // What each array task runs: this program, `run-part DIR I`.
        let status = std::process::Command::new(&how.part_command[0])
            .args(["run-part", &dir.to_string_lossy(), &i.to_string()])
            .status()?;
        if !status.success() {
            return Err(format!("array task {i}: {status}").into());
        }
    }
    sweep::collect(&dir, false, registry, &Quiet)?;
    for f in ["shapley.csv", "tables.json", "shapley.svg"] {
        if std::fs::read(dir.join(f))? != std::fs::read(out.join("shapley").join(f))? {
            return Err(format!("the sweep's {f} differs from the local run's").into());
        }
    }
    println!(
        "3. the sweep's {} parts collected: shapley.csv, tables.json and shapley.svg are the local run's bytes\n",
        prepared.instances
    );
    Ok(())
}

/// Step 4: a live broker whose order policy is `least-running-org`.
fn live(registry: &Registry, out: &Path) -> Res<()> {
    let db = out.join("live.db");
    for ext in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    // Refused: it reads estimates, and live tasks have none.
    let config = |order: &str| Config {
        order: order.into(),
        ..Config::default()
    };
    match Live::create(
        &out.join("refused.db"),
        &config("shortest-estimate-first"),
        registry,
    ) {
        Err(e) => println!("4. the broker refuses shortest-estimate-first: {e}"),
        Ok(_) => return Err("the broker took a policy that reads estimates".into()),
    }
    let live = Live::create(&db, &config("least-running-org"), registry)?;
    let admin = live.store().admin_token()?;
    drop(live);
    let settings = Settings {
        snapshot_every: 5,
        registry: registry.clone(),
        ..Settings::default()
    };
    let stop = Stop::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = ServeOpts {
        db: db.clone(),
        listen: "127.0.0.1:0".into(),
        audit: None,
        settings,
        stop: Some(stop.clone()),
        limits: HttpLimits::default(),
        tls: None,
    };
    let server = std::thread::spawn(move || serve(opts, |addr| tx.send(addr).expect("main waits")));
    let addr = rx.recv_timeout(Duration::from_secs(30))?;
    let base = format!("http://{addr}");
    let as_ = |token: &str| {
        Client::new(
            &Conn {
                broker: Some(base.clone()),
                token: Some(token.into()),
                ca_cert: None,
            },
            Role::User,
        )
    };
    let adm = as_(&admin)?;
    let mut users = Vec::new();
    for org in ["physics", "biology"] {
        let _: OrgReply = adm.call(
            "POST",
            "/v1/admin/orgs",
            Some(&serde_json::json!({ "name": org })),
        )?;
        let u: UserReply = adm.call(
            "POST",
            "/v1/admin/users",
            Some(&serde_json::json!({ "name": format!("{org}-user"), "org": org })),
        )?;
        users.push(as_(&u.token)?);
    }
    let wt: TokenReply = adm.call(
        "POST",
        "/v1/admin/worker-tokens",
        Some(&serde_json::json!({ "org": "physics" })),
    )?;
    // Physics submits 8 tasks first, then biology 4: least-running-org
    // alternates between them as slots free up.
    let mut ids = Vec::new();
    for (u, n) in users.iter().zip([8, 4]) {
        let tasks = (0..n)
            .map(|i| NewTask {
                command: format!("echo {i}"),
                ..NewTask::default()
            })
            .collect();
        let r: SubmitReply = u.call(
            "POST",
            "/v1/tasks",
            Some(&SubmitRequest {
                tasks,
                ..SubmitRequest::default()
            }),
        )?;
        ids.push(r.ids);
    }
    // A worker of 2 slots: each task it is handed runs as a real process.
    let worker = as_(&wt.token)?;
    let reg: RegisterReply = worker.call(
        "POST",
        "/v1/workers",
        Some(&RegisterRequest {
            slots: 2,
            host: "example".into(),
        }),
    )?;
    let w = reg.worker;
    // Its calls carry the session credential the registration returned.
    let worker = as_(&reg.session)?;
    let cfg = ExecConfig {
        executor: ExecutorKind::Process,
        workdir: out.join("runs"),
        grace: Duration::from_secs(1),
        guard: None,
        lease_file: None,
        run_as_user: false,
        cgroups: None,
        task_user: None,
        limits: Default::default(),
        private_tmp: false,
    };
    let mut order = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while order.len() < 12 && Instant::now() < deadline {
        let poll: PollReply = worker.call(
            "POST",
            &format!("/v1/workers/{w}/poll"),
            Some(&PollRequest {
                wait_ms: 1000,
                draining: false,
            }),
        )?;
        let mut reports: Vec<Report> = Vec::new();
        for a in &poll.assign {
            order.push(a.task);
            let (rtx, rrx) = std::sync::mpsc::channel();
            run_assignment(&cfg, a, &rtx, &KillHandle::new());
            drop(rtx);
            reports.extend(rrx);
        }
        if !reports.is_empty() {
            let _: serde_json::Value = worker.call(
                "POST",
                &format!("/v1/workers/{w}/report"),
                Some(&ReportRequest {
                    running: Vec::new(),
                    reports,
                    polled: None,
                    short_of_disk: None,
                }),
            )?;
        }
    }
    let org_of = |t: &u64| if ids[0].contains(t) { "physics" } else { "biology" };
    let done: Vec<&str> = order.iter().map(org_of).collect();
    println!("   the worker ran, in order: {}", done.join(" "));
    for (u, mine) in users.iter().zip(&ids) {
        for id in mine {
            let t: TaskOut = u.call("GET", &format!("/v1/tasks/{id}"), None::<&()>)?;
            if t.state != "completed" {
                return Err(format!("task {id}: {}", t.state).into());
            }
        }
    }
    stop.stop();
    server.join().map_err(|_| "the broker's thread panicked")??;
    // Restarted: the core comes back from the newest snapshot, the
    // out-of-tree policy's state included, then the steps after it.
    let again = Live::open(&db, registry)?;
    let Some(from) = again.restored_from() else {
        return Err("no snapshot restored".into());
    };
    println!(
        "   restarted from the snapshot after step {from} of {} (least-running-org's state restored from its own bytes)",
        again.steps()
    );
    Ok(())
}
