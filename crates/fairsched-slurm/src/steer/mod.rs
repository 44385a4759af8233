//! The steering controller: fairsched's policies over a Slurm queue that
//! Slurm keeps running. It never starts, holds or cancels a job; each
//! cycle it
//!
//! 1. reads the pending and running jobs (`squeue`) and the site factor
//!    each pending job has (`sprio`);
//! 2. turns what changed since the last cycle into core events (a job
//!    submitted, started by Slurm, requeued, ended) and steps a
//!    [`Scheduler::steered`] core with them, logged and committed as the
//!    broker logs its steps ([`fairsched_broker::Live`]);
//! 3. reads the `Order` policy's ranking of the pending jobs
//!    ([`Scheduler::rank`]) and maps it to site factors ([`factors`]);
//! 4. sends the factors that differ from what `sprio` showed, batched
//!    (one `scontrol` process per [`UPDATES_PER_CALL`] updates, its
//!    commands on standard input), and counts the ones that had been
//!    changed behind its back (last cycle's value did not stick).
//!
//! The core sees what a live policy sees: users, accounts, processors, and
//! (only for estimate-reading policies) the time limit as the user's
//! estimate; never a run time. A restart reopens the log (the newest
//! snapshot, then the steps after it) and the controller's own tables,
//! and decides what an uninterrupted controller would have.

pub mod factors;
pub mod queue;

use crate::SlurmError;
use fairsched_broker::{Config, Live, LiveError};
use fairsched_core::{
    Event, MachineId, OrgId, Registry, Scheduler, TaskId, TaskSpec, Time, WorkflowId, WorkflowRef,
};
use queue::{JobState, SlurmJob};
use rusqlite::{OptionalExtension, params};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Updates sent to one `scontrol` process (its commands on stdin).
pub const UPDATES_PER_CALL: usize = 1000;

/// The one machine of the steered core: the cluster (or the partition).
const POOL: MachineId = MachineId(0);

/// What a controller is created with (kept in its database; a reopen
/// with other settings is refused).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    /// The `Order` policy (registry syntax).
    pub policy: String,
    /// A `Control` policy, if any.
    pub control: Option<String>,
    pub seed: u64,
    /// Steer only this partition's jobs (its processors are the pool's).
    pub partition: Option<String>,
    /// The organizations (Slurm accounts) and the processors each
    /// contributes, in index order. Empty: every account with users
    /// (`sacctmgr`), sharing the processors evenly.
    pub orgs: Vec<(String, u32)>,
    /// Site factors are this far apart; `None`: one more than the sum of
    /// Slurm's own priority weights, so the site factor decides alone.
    pub step: Option<i64>,
}

/// Slurm, as the controller reaches it ([`Tools`]: its command-line
/// tools; tests script one).
pub trait Cluster {
    /// `squeue -h -r -t` [`queue::SQUEUE_STATES`] `-o` [`queue::SQUEUE_FORMAT`].
    fn squeue(&mut self) -> Result<String, SlurmError>;
    /// `sprio -h -o` [`queue::SPRIO_FORMAT`].
    fn sprio(&mut self) -> Result<String, SlurmError>;
    /// `sinfo -h -o %C`.
    fn sinfo_cpus(&mut self) -> Result<String, SlurmError>;
    /// `scontrol show config`.
    fn config(&mut self) -> Result<String, SlurmError>;
    /// Accounts that have users: `sacctmgr -n -P list assoc format=account,user`.
    fn accounts(&mut self) -> Result<String, SlurmError>;
    /// Sets these site factors; the jobs Slurm refused, with why.
    fn set_site_factors(&mut self, updates: &[(String, i64)]) -> Result<Sent, SlurmError>;
}

/// What one batch of updates did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// `scontrol` processes run.
    pub calls: u32,
    /// Jobs Slurm refused, and its message (a job gone since `squeue`).
    pub refused: Vec<(String, String)>,
}

/// Slurm through its tools on the `PATH` ([`crate::tools::program`]).
pub struct Tools {
    pub partition: Option<String>,
}

impl Tools {
    fn part(&self, args: &mut Vec<String>) {
        if let Some(p) = &self.partition {
            args.push("-p".into());
            args.push(p.clone());
        }
    }
}

fn strs(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

impl Cluster for Tools {
    fn squeue(&mut self) -> Result<String, SlurmError> {
        let mut a = strs(&["-h", "-r", "-t", queue::SQUEUE_STATES, "-o", queue::SQUEUE_FORMAT]);
        self.part(&mut a);
        crate::tools::run("squeue", &a, None)
    }
    fn sprio(&mut self) -> Result<String, SlurmError> {
        let mut a = strs(&["-h", "-o", queue::SPRIO_FORMAT]);
        self.part(&mut a);
        match crate::tools::run("sprio", &a, None) {
            // sprio exits 1 when no job is pending.
            Err(SlurmError::Failed(m))
                if m.contains("No pending jobs") || m.contains("Unable to find jobs") =>
            {
                Ok(String::new())
            }
            r => r,
        }
    }
    fn sinfo_cpus(&mut self) -> Result<String, SlurmError> {
        let mut a = strs(&["-h", "-o", "%C"]);
        self.part(&mut a);
        crate::tools::run("sinfo", &a, None)
    }
    fn config(&mut self) -> Result<String, SlurmError> {
        crate::tools::run("scontrol", &strs(&["show", "config"]), None)
    }
    fn accounts(&mut self) -> Result<String, SlurmError> {
        crate::tools::run(
            "sacctmgr",
            &strs(&["-n", "-P", "list", "assoc", "format=account,user"]),
            None,
        )
    }
    fn set_site_factors(&mut self, updates: &[(String, i64)]) -> Result<Sent, SlurmError> {
        let mut sent = Sent::default();
        for chunk in updates.chunks(UPDATES_PER_CALL) {
            let mut input = String::with_capacity(chunk.len() * 40);
            for (job, v) in chunk {
                input.push_str(&format!("update JobId={job} SiteFactor={v}\n"));
            }
            input.push_str("quit\n");
            sent.calls += 1;
            // scontrol reads its commands from stdin, goes on after a
            // refused one and exits 1 if any was refused, printing why
            // on stderr ("Invalid job id specified for job 42").
            match crate::tools::run("scontrol", &[], Some(&input)) {
                Ok(_) => {}
                // Slurm 22.05 answers a user who may not change a site
                // factor "Access/permission denied" for their own jobs and
                // "Invalid user id" for other users' jobs.
                Err(SlurmError::Failed(msg)) if msg.lines().any(no_rights) => {
                    return Err(SlurmError::Usage(format!(
                        "Slurm refused to change a site factor ({}): the controller needs operator rights \
                         (as root or SlurmUser, or `sacctmgr modify user NAME set AdminLevel=Operator`)",
                        msg.lines().find(|l| no_rights(l)).unwrap_or("").trim()
                    )));
                }
                Err(SlurmError::Failed(msg)) => {
                    let mut any = false;
                    for (job, _) in chunk {
                        if let Some(line) = msg.lines().find(|l| mentions_job(l, job)) {
                            sent.refused.push((job.clone(), line.trim().to_owned()));
                            any = true;
                        }
                    }
                    if !any {
                        return Err(SlurmError::Failed(msg));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(sent)
    }
}

/// Whether an `scontrol` error line says the caller lacks the rights.
fn no_rights(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.contains("permission denied") || l.contains("invalid user id")
}

/// Whether an `scontrol` error line is about `job` ("… for job 42", "…
/// JobId=42 …", "42: …").
fn mentions_job(line: &str, job: &str) -> bool {
    line.split(|c: char| !(c.is_ascii_digit() || c == '_'))
        .any(|w| w == job)
}

/// One pending or running job the controller follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracked {
    pub task: TaskId,
    pub record: String,
    pub user: String,
    pub account: String,
    pub running: bool,
    /// The factor the last cycle wanted (pending jobs).
    pub wanted: Option<i64>,
    /// The factor `sprio` showed at the last cycle's start.
    pub seen: Option<i64>,
    /// Its place in the policy's order at the last cycle (0: next).
    pub rank: Option<u64>,
}

/// Counters since the controller's database was created.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Totals {
    pub cycles: u64,
    pub updates: u64,
    pub calls: u64,
    /// Factors found changed since the controller set them (re-asserted).
    pub not_stuck: u64,
    /// Updates Slurm refused (the job had gone).
    pub refused: u64,
    /// Cycles skipped: a tool failed or printed what does not parse.
    pub skipped: u64,
    /// Starts Slurm made that the core could not mirror (too few free
    /// processors in its pool: the cluster grew, or oversubscribes).
    pub unmirrored: u64,
}

/// What one cycle did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Cycle {
    pub pending: usize,
    pub running: usize,
    pub submitted: usize,
    pub started: usize,
    pub ended: usize,
    /// Pending jobs waiting on a dependency: not given to the core until
    /// it is satisfied.
    pub waiting: usize,
    /// The updates wanted: `(job, from, to)`.
    pub changes: Vec<(String, i64, i64)>,
    /// Jobs whose last value did not stick: `(job, set, found)`, the
    /// factor this controller sent and the one `sprio` showed after.
    pub not_stuck: Vec<(String, i64, i64)>,
    pub calls: u32,
    pub refused: Vec<(String, String)>,
    /// A dry run's changed jobs: user, account, rank (0: starts next).
    pub who: BTreeMap<String, (String, String, u64)>,
    /// The controller's own time (outside Slurm's tools), in seconds.
    pub own_secs: f64,
    /// Time in Slurm's tools, in seconds.
    pub tools_secs: f64,
}

/// Why a cycle did not run.
#[derive(Debug, thiserror::Error)]
pub enum SteerError {
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("{path}: {cause}")]
    Db { path: PathBuf, cause: rusqlite::Error },
    #[error("{0}")]
    Config(String),
}

/// The controller: the core with its log, and the jobs it follows.
pub struct Controller {
    live: Live,
    path: PathBuf,
    settings: Settings,
    jobs: BTreeMap<String, Tracked>,
    users: BTreeMap<String, i64>,
    /// Workflow and activity ids by name (see [`workflows`]).
    workflow_ids: BTreeMap<String, i64>,
    activity_ids: BTreeMap<String, i64>,
    /// The workflow of each job number (`13` for `13_2`) known to belong
    /// to one, while the workflow has a job in the queue.
    workflow_of: BTreeMap<String, i64>,
    /// The last cycle's ranking of the pending jobs (first: starts next).
    ranking: Vec<String>,
    /// The organizations and the processors each contributes.
    contributed: Vec<(String, u32)>,
    orgs: BTreeMap<String, u32>,
    step: i64,
    totals: Totals,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS steer_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steer_jobs (job TEXT PRIMARY KEY, task INTEGER NOT NULL UNIQUE, record TEXT NOT NULL,
  user TEXT NOT NULL, account TEXT NOT NULL, running INTEGER NOT NULL, wanted INTEGER, seen INTEGER);
CREATE TABLE IF NOT EXISTS steer_names (kind TEXT NOT NULL, name TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (kind, name));
CREATE TABLE IF NOT EXISTS steer_workflows (head TEXT PRIMARY KEY, workflow INTEGER NOT NULL);";

impl Controller {
    /// Opens the controller's database at `path`, or creates it for
    /// `settings` (asking `cluster` for its processors, priority weights
    /// and, without organizations, its accounts). A database created with
    /// other settings is refused, naming both.
    pub fn open_or_create(
        path: &Path,
        settings: &Settings,
        registry: &Registry,
        cluster: &mut dyn Cluster,
    ) -> Result<Controller, SteerError> {
        if path.exists() {
            let c = Controller::open(path, registry)?;
            if &c.settings != settings {
                // Only what differs, side by side.
                let (was, now) = (describe(&c.settings), describe(settings));
                let (was_parts, now_parts) = (split_described(&was), split_described(&now));
                let only = |a: &[String], b: &[String]| {
                    let d: Vec<&str> = a.iter().filter(|p| !b.contains(p)).map(String::as_str).collect();
                    if d.is_empty() {
                        "(the defaults)".to_owned()
                    } else {
                        d.join(" ")
                    }
                };
                return Err(SteerError::Config(format!(
                    "{}: created for {}, not {} (use another --db, or the same options)",
                    path.display(),
                    only(&was_parts, &now_parts),
                    only(&now_parts, &was_parts)
                )));
            }
            return Ok(c);
        }
        Controller::create(path, settings, registry, cluster)
    }

    fn create(
        path: &Path,
        settings: &Settings,
        registry: &Registry,
        cluster: &mut dyn Cluster,
    ) -> Result<Controller, SteerError> {
        let core_config = Config {
            allocate: "single-pool".into(),
            order: settings.policy.clone(),
            control: settings.control.clone(),
            seed: settings.seed,
            steered: true,
        };
        // The policies first: a spec that cannot steer is refused before
        // Slurm is asked anything.
        fairsched_broker::build_core(&core_config, registry)?;
        let config = queue::parse_config(&cluster.config()?);
        if config.priority_type != "priority/multifactor" {
            return Err(SteerError::Config(format!(
                "this Slurm's PriorityType is {:?}: site factors count only under priority/multifactor (slurm.conf: PriorityType=priority/multifactor)",
                config.priority_type
            )));
        }
        if let Some(p) = &config.site_factor_plugin {
            return Err(SteerError::Config(format!(
                "this Slurm has a site factor plugin ({p}): it overwrites every job's site factor each PriorityCalcPeriod, \
                 so the controller's would not stick (remove PrioritySiteFactorPlugin from slurm.conf)"
            )));
        }
        let cpus = queue::parse_sinfo_cpus(&cluster.sinfo_cpus()?)?;
        let orgs = if settings.orgs.is_empty() {
            even_split(&accounts_with_users(&cluster.accounts()?)?, cpus)?
        } else {
            // Names that do not match Slurm's accounts are allowed (an
            // account may get users later) but said.
            if let Ok(accounts) = cluster.accounts().and_then(|t| accounts_with_users(&t)) {
                for (name, _) in &settings.orgs {
                    if !accounts.contains(name) {
                        tracing::warn!(
                            "organization {name:?} is no Slurm account with users (sacctmgr): no job will be in it"
                        );
                    }
                }
                for account in &accounts {
                    if !settings.orgs.iter().any(|(n, _)| n == account) {
                        tracing::warn!(
                            "Slurm account {account:?} is in no organization of the platform file: its jobs rank as an organization that contributes no processors"
                        );
                    }
                }
            }
            settings.orgs.clone()
        };
        let contributed: u64 = orgs.iter().map(|(_, p)| u64::from(*p)).sum();
        if contributed != u64::from(cpus) {
            tracing::warn!(
                "the organizations contribute {contributed} processors; Slurm has {cpus}: the core's pool has the organizations' {contributed}"
            );
        }
        let step = settings.step.unwrap_or_else(|| config.weight_sum() + 1).max(1);
        let live = Live::create(path, &core_config, registry)?;
        let mut c = Controller {
            live,
            path: path.to_owned(),
            settings: settings.clone(),
            jobs: BTreeMap::new(),
            users: BTreeMap::new(),
            workflow_ids: BTreeMap::new(),
            activity_ids: BTreeMap::new(),
            workflow_of: BTreeMap::new(),
            ranking: Vec::new(),
            contributed: orgs.clone(),
            orgs: BTreeMap::new(),
            step,
            totals: Totals::default(),
        };
        let mut join = Vec::new();
        for (i, (account, procs)) in orgs.iter().enumerate() {
            c.orgs.insert(account.clone(), i as u32);
            for _ in 0..*procs {
                join.push(Event::SlotJoin {
                    machine: POOL,
                    owner: OrgId(i as u32),
                });
            }
        }
        let settings_json = serde_json::to_string(settings).expect("settings serialize");
        let orgs_json = serde_json::to_string(&orgs).expect("orgs serialize");
        let names: Vec<(String, u32)> = c.orgs.iter().map(|(k, v)| (k.clone(), *v)).collect();
        let db = c.path.clone();
        let results = c.live.commit_with(vec![(Time::ZERO, join)], |tx, _, _| {
            tx.execute_batch(SCHEMA)?;
            tx.execute(
                "INSERT INTO steer_meta (key, value) VALUES ('settings', ?1), ('orgs', ?2), ('step', ?3), ('totals', '{}')",
                params![settings_json, orgs_json, step.to_string()],
            )?;
            for (name, id) in &names {
                tx.execute(
                    "INSERT INTO steer_names (kind, name, id) VALUES ('org', ?1, ?2)",
                    params![name, id],
                )?;
            }
            Ok(())
        });
        for r in results {
            r?;
        }
        let _ = db;
        Ok(c)
    }

    /// Reopens the controller's database (the core from its log).
    pub fn open(path: &Path, registry: &Registry) -> Result<Controller, SteerError> {
        if !path.is_file() {
            return Err(SteerError::Config(format!(
                "{}: not a controller's database (not a file)",
                path.display()
            )));
        }
        let live = Live::open(path, registry)?;
        if !live.store().config().steered {
            return Err(SteerError::Config(format!(
                "{}: not a steering controller's database (a broker's: `fairsched serve` uses it)",
                path.display()
            )));
        }
        let db = |cause| SteerError::Db {
            path: path.to_owned(),
            cause,
        };
        let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(db)?;
        let meta = |k: &str| -> Result<String, SteerError> {
            conn.query_row("SELECT value FROM steer_meta WHERE key = ?1", [k], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map_err(db)?
            .ok_or_else(|| {
                SteerError::Config(format!(
                    "{}: not a steering controller's database (no {k}; a broker's database, say)",
                    path.display()
                ))
            })
        };
        let corrupt = |what: &str, e: serde_json::Error| {
            SteerError::Config(format!("{}: steer_meta {what}: {e}", path.display()))
        };
        let settings: Settings =
            serde_json::from_str(&meta("settings")?).map_err(|e| corrupt("settings", e))?;
        let totals: Totals = serde_json::from_str(&meta("totals")?).map_err(|e| corrupt("totals", e))?;
        let contributed: Vec<(String, u32)> =
            serde_json::from_str(&meta("orgs")?).map_err(|e| corrupt("orgs", e))?;
        let step: i64 = meta("step")?.parse().map_err(|_| {
            SteerError::Config(format!("{}: steer_meta step is not a number", path.display()))
        })?;
        let mut users = BTreeMap::new();
        let mut orgs = BTreeMap::new();
        let (mut workflow_ids, mut activity_ids) = (BTreeMap::new(), BTreeMap::new());
        {
            let mut q = conn
                .prepare("SELECT kind, name, id FROM steer_names")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(db)?;
            for row in rows {
                let (kind, name, id) = row.map_err(db)?;
                match kind.as_str() {
                    "org" => {
                        orgs.insert(name, id as u32);
                    }
                    "workflow" => {
                        workflow_ids.insert(name, id);
                    }
                    "activity" => {
                        activity_ids.insert(name, id);
                    }
                    _ => {
                        users.insert(name, id);
                    }
                }
            }
        }
        let mut jobs = BTreeMap::new();
        {
            let mut q = conn
                .prepare("SELECT job, task, record, user, account, running, wanted, seen FROM steer_jobs")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        Tracked {
                            task: TaskId(r.get::<_, i64>(1)? as u64),
                            record: r.get(2)?,
                            user: r.get(3)?,
                            account: r.get(4)?,
                            running: r.get::<_, i64>(5)? != 0,
                            wanted: r.get(6)?,
                            seen: r.get(7)?,
                            rank: None,
                        },
                    ))
                })
                .map_err(db)?;
            for row in rows {
                let (job, t) = row.map_err(db)?;
                jobs.insert(job, t);
            }
        }
        // A database of a controller from before workflows has no table.
        let mut workflow_of = BTreeMap::new();
        let has_workflows: bool = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'steer_workflows'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(db)?
            > 0;
        if has_workflows {
            let mut q = conn
                .prepare("SELECT head, workflow FROM steer_workflows")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .map_err(db)?;
            for row in rows {
                let (head, w) = row.map_err(db)?;
                workflow_of.insert(head, w);
            }
        }
        // The last cycle's ranking.
        let ranking: Vec<String> = conn
            .query_row("SELECT value FROM steer_meta WHERE key = 'ranking'", [], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map_err(db)?
            .map(|r| serde_json::from_str(&r).map_err(|e| corrupt("ranking", e)))
            .transpose()?
            .unwrap_or_default();
        for (i, id) in ranking.iter().enumerate() {
            if let Some(t) = jobs.get_mut(id) {
                t.rank = Some(i as u64);
            }
        }
        let mut live = live;
        if !has_workflows {
            live.transact(|tx, _| tx.execute_batch(SCHEMA))?;
        }
        Ok(Controller {
            live,
            path: path.to_owned(),
            settings,
            jobs,
            users,
            workflow_ids,
            activity_ids,
            workflow_of,
            ranking,
            contributed,
            orgs,
            step,
            totals,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    pub fn totals(&self) -> &Totals {
        &self.totals
    }
    /// The site factors' spacing.
    pub fn step(&self) -> i64 {
        self.step
    }
    /// The jobs it follows, by Slurm job id.
    pub fn jobs(&self) -> &BTreeMap<String, Tracked> {
        &self.jobs
    }
    pub fn live(&self) -> &Live {
        &self.live
    }
    /// The organizations: Slurm accounts and their ids.
    pub fn orgs(&self) -> &BTreeMap<String, u32> {
        &self.orgs
    }
    /// Workflow ids by name (the number of a workflow's first job).
    pub fn workflow_ids(&self) -> &BTreeMap<String, i64> {
        &self.workflow_ids
    }
    /// Activity ids by name (`WORKFLOW/JOB NAME`).
    pub fn activity_ids(&self) -> &BTreeMap<String, i64> {
        &self.activity_ids
    }
    /// The organizations it was created with, and the processors each
    /// contributes.
    pub fn contributed(&self) -> &[(String, u32)] {
        &self.contributed
    }
    /// The organization an account is (`None`: never seen).
    pub fn org_of(&self, account: &str) -> Option<u32> {
        self.orgs.get(account).copied()
    }
    pub fn user_of(&self, user: &str) -> Option<i64> {
        self.users.get(user).copied()
    }

    /// Runs one cycle at wall-clock time `now_ms` (Unix ms). With
    /// `dry_run`, nothing is sent to Slurm and nothing is written: the
    /// cycle's changes are returned, and the controller is left as it was
    /// (reopen it to go on).
    pub fn cycle(
        &mut self,
        cluster: &mut dyn Cluster,
        now_ms: i64,
        dry_run: bool,
    ) -> Result<Cycle, SteerError> {
        let t0 = Instant::now();
        let mut tools = std::time::Duration::ZERO;
        let timed = |tools: &mut std::time::Duration, f: &mut dyn FnMut() -> Result<String, SlurmError>| {
            let t = Instant::now();
            let r = f();
            *tools += t.elapsed();
            r
        };
        let squeue = timed(&mut tools, &mut || cluster.squeue());
        let sprio = squeue
            .as_ref()
            .ok()
            .map(|_| timed(&mut tools, &mut || cluster.sprio()));
        let parsed = squeue
            .and_then(|q| queue::parse_squeue(&q))
            .and_then(|q| Ok((q, queue::parse_sprio(&sprio.expect("after squeue")?)?)));
        let (queue, sprio) = match parsed {
            Ok(x) => x,
            Err(e) => {
                if !dry_run {
                    self.totals.skipped += 1;
                    self.save_totals()?;
                }
                return Err(e.into());
            }
        };
        let now = Time::from_millis((now_ms - self.live.store().epoch_ms()).max(0));

        // 1. What changed, as core events: ends first (they free
        // processors), then requeues, submissions, starts.
        let mut c = Cycle::default();
        let seen: BTreeSet<&str> = queue.iter().map(|j| j.id.as_str()).collect();
        let slurm_pending: HashSet<&str> = queue
            .iter()
            .filter(|j| j.state == JobState::Pending)
            .map(|j| j.id.as_str())
            .collect();
        let mut events = Vec::new();
        let mut gone = Vec::new();
        for (id, t) in &self.jobs {
            if !seen.contains(id.as_str()) {
                events.push(if t.running {
                    Event::Complete { task: t.task }
                } else {
                    Event::Cancel { task: t.task }
                });
                gone.push(id.clone());
            }
        }
        c.ended = gone.len();
        let mut order: Vec<&SlurmJob> = queue.iter().collect();
        order.sort_by_cached_key(|j| j.sort_key());
        let mut new_jobs: Vec<(String, Tracked)> = Vec::new();
        let mut new_names: Vec<(&'static str, String, i64)> = Vec::new();
        let new_workflows = workflows(
            &order,
            &self.jobs,
            &self.workflow_of,
            &self.workflow_ids,
            &mut new_names,
        );
        let workflow_of = |head: &str| {
            self.workflow_of
                .get(head)
                .or_else(|| new_workflows.get(head))
                .copied()
        };
        // Timers the policies asked for that are due.
        for &(at, token) in self.live.pending_timers() {
            if at <= now {
                events.push(Event::Timer { token });
            }
        }
        let mut starts = Vec::new();
        let mut running_changes: Vec<(String, bool)> = Vec::new();
        let mut records: Vec<(String, String)> = Vec::new();
        for j in &order {
            let running = j.state == JobState::Running;
            match self.jobs.get(&j.id) {
                Some(t) => {
                    if t.record != j.record {
                        // A pending array element given a factor of its
                        // own became a job record of its own.
                        records.push((j.id.clone(), j.record.clone()));
                    }
                    if running && !t.running {
                        starts.push((j.id.clone(), t.task, j.cpus));
                    } else if !running && t.running {
                        events.push(Event::Requeue { task: t.task });
                        running_changes.push((j.id.clone(), false));
                    }
                }
                None if j.waits_on_dependency() => c.waiting += 1,
                None => {
                    let user = name_id(&self.users, &mut new_names, "user", &j.user);
                    let org = name_id(&self.orgs, &mut new_names, "org", &j.account);
                    let task = self.live.fresh_id();
                    let mut spec = TaskSpec::new(task.0, user, org as u32).slots(j.cpus);
                    spec.estimate = j.limit.map(Time::from_secs);
                    if let Some(w) = workflow_of(j.head()) {
                        let activity = name_id(
                            &self.activity_ids,
                            &mut new_names,
                            "activity",
                            &format!("{w}/{}", j.name),
                        );
                        spec.workflow = Some(WorkflowRef {
                            workflow: WorkflowId(w as u32),
                            activity: activity as u32,
                        });
                    }
                    events.push(Event::Submit(spec));
                    if running {
                        starts.push((j.id.clone(), task, j.cpus));
                    }
                    c.submitted += 1;
                    new_jobs.push((
                        j.id.clone(),
                        Tracked {
                            task,
                            record: j.record.clone(),
                            user: j.user.clone(),
                            account: j.account.clone(),
                            running: false,
                            wanted: None,
                            seen: None,
                            rank: None,
                        },
                    ));
                }
            }
        }
        // Starts the core's pool can hold, in job order; the others are
        // counted (and tried again next cycle).
        let free_after_ends = {
            let view = self.live.core().view();
            let m = view.machine(POOL);
            let freed: u32 = gone
                .iter()
                .filter_map(|id| self.jobs.get(id))
                .filter(|t| t.running)
                .filter_map(|t| view.task(t.task).map(|v| v.slots()))
                .sum();
            let requeued: u32 = running_changes
                .iter()
                .filter_map(|(id, _)| self.jobs.get(id))
                .filter_map(|t| view.task(t.task).map(|v| v.slots()))
                .sum();
            if view.machine_count() == 0 {
                0
            } else {
                m.free() + freed + requeued
            }
        };
        let mut free = free_after_ends;
        let mut unmirrored = 0u64;
        for (id, task, cpus) in starts {
            if cpus <= free {
                free -= cpus;
                events.push(Event::Start { task });
                running_changes.push((id, true));
                c.started += 1;
            } else {
                unmirrored += 1;
            }
        }

        if dry_run {
            // Decide on a copy; leave everything as it was.
            let mut core = self.live.core().clone();
            let mut out = Vec::new();
            core.step(now.max(self.live.now()), events, None, &mut out)
                .map_err(|e| SteerError::Config(format!("the core refused the cycle: {e}")))?;
            let mut jobs = self.jobs.clone();
            for id in &gone {
                jobs.remove(id);
            }
            for (id, t) in new_jobs {
                jobs.insert(id, t);
            }
            for (id, r) in &running_changes {
                if let Some(t) = jobs.get_mut(id) {
                    t.running = *r;
                }
            }
            for (id, r) in &records {
                if let Some(t) = jobs.get_mut(id) {
                    t.record = r.clone();
                }
            }
            let ranked = core
                .rank(POOL, now)
                .map_err(|e| SteerError::Config(format!("ranking: {e}")))?;
            let plan = plan(&jobs, &ranked, &slurm_pending, &sprio, self.step);
            let changed: HashSet<&str> = plan.changes.iter().map(|(j, _, _)| j.as_str()).collect();
            c.who = plan
                .per_job
                .iter()
                .enumerate()
                .filter(|(_, (id, _, _))| changed.contains(id.as_str()))
                .filter_map(|(rank, (id, _, _))| {
                    let t = jobs.get(id)?;
                    Some((id.clone(), (t.user.clone(), t.account.clone(), rank as u64)))
                })
                .collect();
            c.changes = plan.changes;
            c.not_stuck = plan.not_stuck;
            c.pending = plan.pending;
            c.running = jobs.values().filter(|t| t.running).count();
            c.own_secs = (t0.elapsed() - tools).as_secs_f64();
            c.tools_secs = tools.as_secs_f64();
            return Ok(c);
        }

        // 2. The step, logged with the controller's tables.
        for id in &gone {
            self.jobs.remove(id);
        }
        for (id, t) in &new_jobs {
            self.jobs.insert(id.clone(), t.clone());
        }
        for (id, r) in &running_changes {
            if let Some(t) = self.jobs.get_mut(id) {
                t.running = *r;
            }
        }
        for (kind, name, id) in &new_names {
            if *kind == "org" {
                tracing::warn!(
                    "Slurm account {name:?} is in no organization of the controller: its jobs rank as an organization that contributes no processors"
                );
            }
            let map = match *kind {
                "user" => &mut self.users,
                "workflow" => &mut self.workflow_ids,
                "activity" => &mut self.activity_ids,
                _ => {
                    self.orgs.insert(name.clone(), *id as u32);
                    continue;
                }
            };
            map.insert(name.clone(), *id);
        }
        // Workflows are followed while they have a job in the queue.
        self.workflow_of
            .extend(new_workflows.iter().map(|(h, w)| (h.clone(), *w)));
        // (Nothing to look up, per job, on a queue without workflows.)
        let live_workflows: BTreeSet<i64> = if self.workflow_of.is_empty() {
            BTreeSet::new()
        } else {
            queue
                .iter()
                .filter_map(|j| self.workflow_of.get(j.head()).copied())
                .collect()
        };
        let ended_workflows: Vec<String> = self
            .workflow_of
            .iter()
            .filter(|(_, w)| !live_workflows.contains(w))
            .map(|(h, _)| h.clone())
            .collect();
        for h in &ended_workflows {
            self.workflow_of.remove(h);
        }
        for (id, r) in &records {
            if let Some(t) = self.jobs.get_mut(id) {
                t.record = r.clone();
            }
        }
        // 3. The policy's order, as site factors: decided on the core once
        // stepped, and written in the step's transaction (one commit per
        // cycle). Recorded before it is sent: a crash in between is
        // re-asserted by the next cycle's read-back.
        let mut totals = self.totals.clone();
        totals.cycles += 1;
        totals.unmirrored += unmirrored;
        let writes = Writes {
            gone: &gone,
            new_jobs: &new_jobs,
            running_changes: &running_changes,
            new_names: &new_names,
            new_workflows: &new_workflows,
            ended_workflows: &ended_workflows,
            records: &records,
        };
        let jobs = &self.jobs;
        let last_ranking = &self.ranking;
        let step = self.step;
        let mut decided: Option<Result<Decided, String>> = None;
        let mut decide_and_write =
            |tx: &rusqlite::Transaction<'_>, core: &Scheduler| -> rusqlite::Result<()> {
                let d = match core.rank(POOL, now) {
                    Ok(ranked) => Decided::new(
                        plan(jobs, &ranked, &slurm_pending, &sprio, step),
                        &mut totals,
                        last_ranking,
                    ),
                    Err(e) => {
                        decided = Some(Err(format!("ranking: {e}")));
                        return Err(rusqlite::Error::InvalidQuery);
                    }
                };
                let r = writes.write(tx, jobs, &d, &totals);
                decided = Some(Ok(d));
                r
            };
        if events.is_empty() {
            let r = self.live.transact(&mut decide_and_write);
            if let Some(Err(e)) = decided {
                return Err(SteerError::Config(e));
            }
            r?;
        } else {
            let r = self
                .live
                .commit_with(vec![(now, events)], |tx, _, core| decide_and_write(tx, core));
            if let Some(Err(e)) = decided {
                return Err(SteerError::Config(e));
            }
            if let Some(Err(e)) = r.into_iter().next() {
                // Nothing was applied: the next cycle reopens and retries.
                return Err(e.into());
            }
        }
        let Some(Ok(d)) = decided else {
            return Err(SteerError::Config("the core refused the cycle's step".into()));
        };
        for (rank, (id, seen, wanted)) in d.plan.per_job.iter().enumerate() {
            if let Some(t) = self.jobs.get_mut(id) {
                t.rank = Some(rank as u64);
                t.seen = *seen;
                t.wanted = Some(*wanted);
            }
        }
        if d.ranking_changed {
            self.ranking = d.plan.per_job.iter().map(|(id, _, _)| id.clone()).collect();
        }
        self.totals = totals;
        c.pending = d.plan.pending;
        c.running = self.jobs.values().filter(|t| t.running).count();
        c.changes = d.plan.changes;
        c.not_stuck = d.plan.not_stuck;

        // 4. Sent, batched.
        if !c.changes.is_empty() {
            let updates: Vec<(String, i64)> = c.changes.iter().map(|(j, _, to)| (j.clone(), *to)).collect();
            let t = Instant::now();
            let sent = cluster.set_site_factors(&updates);
            tools += t.elapsed();
            match sent {
                Ok(sent) => {
                    c.calls = sent.calls;
                    // Written with the next cycle's rows.
                    self.totals.refused += sent.refused.len() as u64;
                    c.refused = sent.refused;
                }
                Err(e) => {
                    self.save_totals()?;
                    return Err(e.into());
                }
            }
        }
        c.own_secs = (t0.elapsed() - tools).as_secs_f64();
        c.tools_secs = tools.as_secs_f64();
        Ok(c)
    }

    fn save_totals(&mut self) -> Result<(), SteerError> {
        let totals = serde_json::to_string(&self.totals).expect("totals serialize");
        self.live
            .transact(|tx, _| {
                tx.execute("UPDATE steer_meta SET value = ?1 WHERE key = 'totals'", [totals])?;
                Ok(())
            })
            .map_err(SteerError::from)
    }

    /// Sets back to 0 the site factor of every pending job it set one on;
    /// the jobs reset.
    /// Returns how many it set back, and what sending did.
    pub fn reset(&mut self, cluster: &mut dyn Cluster) -> Result<(usize, Sent), SteerError> {
        let sprio = queue::parse_sprio(&cluster.sprio()?)?;
        let queue = queue::parse_squeue(&cluster.squeue()?)?;
        let mut updates: Vec<(String, i64)> = Vec::new();
        for j in queue.iter().filter(|j| j.state == JobState::Pending) {
            let ours = self.jobs.get(&j.id).is_some_and(|t| t.wanted.is_some());
            let nonzero = sprio.get(&j.record).is_some_and(|&v| v != 0);
            if ours && (nonzero || !sprio.contains_key(&j.record)) {
                updates.push((j.id.clone(), 0));
            }
        }
        let sent = cluster.set_site_factors(&updates)?;
        let reset: Vec<&String> = updates.iter().map(|(j, _)| j).collect();
        self.live.transact(|tx, _| {
            for j in &reset {
                tx.execute("UPDATE steer_jobs SET wanted = NULL WHERE job = ?1", [j])?;
            }
            Ok(())
        })?;
        for j in reset {
            if let Some(t) = self.jobs.get_mut(j) {
                t.wanted = None;
            }
        }
        Ok((
            updates.len(),
            Sent {
                calls: sent.calls,
                refused: sent.refused,
            },
        ))
    }
}

/// A cycle's decisions: for each pending job (by Slurm id) in the
/// policy's order, the factor `sprio` showed and the one wanted.
struct Plan {
    pending: usize,
    changes: Vec<(String, i64, i64)>,
    not_stuck: Vec<(String, i64, i64)>,
    per_job: Vec<(String, Option<i64>, i64)>,
}

/// Ranks `ranked` (the core's order) of the jobs Slurm has pending.
fn plan(
    jobs: &BTreeMap<String, Tracked>,
    ranked: &[TaskId],
    slurm_pending: &HashSet<&str>,
    sprio: &HashMap<String, i64>,
    step: i64,
) -> Plan {
    let by_task: HashMap<TaskId, (&String, &Tracked)> = jobs
        .iter()
        .filter(|(id, _)| slurm_pending.contains(id.as_str()))
        .map(|(id, t)| (t.task, (id, t)))
        .collect();
    let pending: Vec<(&String, &Tracked, Option<i64>)> = ranked
        .iter()
        .filter_map(|t| by_task.get(t).copied())
        .map(|(id, t)| (id, t, sprio.get(&t.record).copied()))
        .collect();
    // What Slurm has now: sprio's value; for a job sprio does not list
    // (held), what was last wanted, else Slurm's default 0.
    let current: Vec<i64> = pending
        .iter()
        .map(|(_, t, seen)| seen.or(t.wanted).unwrap_or(0))
        .collect();
    let wanted = factors::assign(&current, step);
    let mut p = Plan {
        pending: pending.len(),
        changes: Vec::new(),
        not_stuck: Vec::new(),
        per_job: Vec::with_capacity(pending.len()),
    };
    for ((id, t, seen), (&cur, &want)) in pending.iter().zip(current.iter().zip(&wanted)) {
        if let (Some(last), Some(s)) = (t.wanted, seen)
            && last != *s
        {
            p.not_stuck.push(((*id).clone(), last, *s));
        }
        if want != cur {
            p.changes.push(((*id).clone(), cur, want));
        }
        p.per_job.push(((*id).clone(), *seen, want));
    }
    p
}

/// A cycle's plan, with what it adds to the totals.
struct Decided {
    plan: Plan,
    /// The order differs from the last cycle's (then it is written).
    ranking_changed: bool,
}

impl Decided {
    fn new(plan: Plan, totals: &mut Totals, last: &[String]) -> Decided {
        totals.not_stuck += plan.not_stuck.len() as u64;
        totals.updates += plan.changes.len() as u64;
        totals.calls += plan.changes.len().div_ceil(UPDATES_PER_CALL) as u64;
        let ranking_changed =
            last.len() != plan.per_job.len() || last.iter().zip(&plan.per_job).any(|(a, (b, _, _))| a != b);
        Decided {
            plan,
            ranking_changed,
        }
    }
}

/// What a cycle writes of its own, in its step's transaction.
struct Writes<'a> {
    gone: &'a [String],
    new_jobs: &'a [(String, Tracked)],
    running_changes: &'a [(String, bool)],
    new_names: &'a [(&'static str, String, i64)],
    new_workflows: &'a BTreeMap<String, i64>,
    ended_workflows: &'a [String],
    records: &'a [(String, String)],
}

impl Writes<'_> {
    /// Writes the cycle's rows: jobs gone, new (with their factors), whose
    /// state or record changed, whose factors changed; names, workflows,
    /// the totals (`totals`, as they will be), and the ranking if it
    /// changed. `jobs` is the controller's, the cycle's changes applied
    /// but not yet the plan's factors.
    fn write(
        &self,
        tx: &rusqlite::Transaction<'_>,
        jobs: &BTreeMap<String, Tracked>,
        d: &Decided,
        totals: &Totals,
    ) -> rusqlite::Result<()> {
        // Prepared once per transaction, not once per row.
        let mut delete = tx.prepare_cached("DELETE FROM steer_jobs WHERE job = ?1")?;
        for id in self.gone {
            delete.execute([id])?;
        }
        // The new jobs' factors (none to look up in a cycle without new jobs).
        let factors: HashMap<&str, (Option<i64>, i64)> = if self.new_jobs.is_empty() {
            HashMap::new()
        } else {
            d.plan
                .per_job
                .iter()
                .map(|(id, seen, want)| (id.as_str(), (*seen, *want)))
                .collect()
        };
        let mut insert = tx.prepare_cached(
            "INSERT INTO steer_jobs (job, task, record, user, account, running, seen, wanted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        let fresh: HashSet<&str> = self.new_jobs.iter().map(|(id, _)| id.as_str()).collect();
        for (id, _) in self.new_jobs {
            let t = &jobs[id];
            let (seen, wanted) = factors
                .get(id.as_str())
                .map_or((None, None), |&(s, w)| (s, Some(w)));
            insert.execute(params![
                id,
                t.task.0 as i64,
                t.record,
                t.user,
                t.account,
                i64::from(t.running),
                seen,
                wanted
            ])?;
        }
        let mut running = tx.prepare_cached("UPDATE steer_jobs SET running = ?2 WHERE job = ?1")?;
        for (id, _) in self.running_changes {
            if let Some(t) = jobs.get(id)
                && !fresh.contains(id.as_str())
            {
                running.execute(params![id, i64::from(t.running)])?;
            }
        }
        let mut rec = tx.prepare_cached("UPDATE steer_jobs SET record = ?2 WHERE job = ?1")?;
        for (id, record) in self.records {
            rec.execute(params![id, record])?;
        }
        // Only the rows whose factors changed.
        let mut up = tx.prepare_cached("UPDATE steer_jobs SET seen = ?2, wanted = ?3 WHERE job = ?1")?;
        for (id, seen, wanted) in &d.plan.per_job {
            if let Some(t) = jobs.get(id)
                && !fresh.contains(id.as_str())
                && (t.seen != *seen || t.wanted != Some(*wanted))
            {
                up.execute(params![id, seen, wanted])?;
            }
        }
        let mut name = tx.prepare_cached("INSERT INTO steer_names (kind, name, id) VALUES (?1, ?2, ?3)")?;
        for (kind, n, id) in self.new_names {
            name.execute(params![kind, n, id])?;
        }
        let mut placed =
            tx.prepare_cached("INSERT OR REPLACE INTO steer_workflows (head, workflow) VALUES (?1, ?2)")?;
        for (h, w) in self.new_workflows {
            placed.execute(params![h, w])?;
        }
        let mut ended = tx.prepare_cached("DELETE FROM steer_workflows WHERE head = ?1")?;
        for h in self.ended_workflows {
            ended.execute([h])?;
        }
        let totals = serde_json::to_string(totals).expect("totals serialize");
        tx.execute("UPDATE steer_meta SET value = ?1 WHERE key = 'totals'", [totals])?;
        if d.ranking_changed {
            let ids: Vec<&str> = d.plan.per_job.iter().map(|(id, _, _)| id.as_str()).collect();
            tx.execute(
                "INSERT INTO steer_meta (key, value) VALUES ('ranking', ?1) ON CONFLICT (key) DO UPDATE SET value = ?1",
                [serde_json::to_string(&ids).expect("ids serialize")],
            )?;
        }
        Ok(())
    }
}

/// Workflows (the workflow-fairness Control's): jobs linked by Slurm
/// dependencies, one workflow per connected chain. A new job that depends
/// on others joins the workflow of the first of them that has one, else
/// starts one named by that job's number; a new job that a new job
/// depends on starts one named by its own number. A job the controller
/// already follows keeps what it had: the first job of a workflow counts
/// in it if it is submitted within one cycle of the jobs after it (or
/// held until they are). Returns the job numbers newly placed, with their
/// workflow ids (ids new in this cycle go to `new_names`).
fn workflows(
    order: &[&SlurmJob],
    jobs: &BTreeMap<String, Tracked>,
    known: &BTreeMap<String, i64>,
    ids: &BTreeMap<String, i64>,
    new_names: &mut Vec<(&'static str, String, i64)>,
) -> BTreeMap<String, i64> {
    let fresh: Vec<&SlurmJob> = order
        .iter()
        .copied()
        .filter(|j| !jobs.contains_key(&j.id) && !known.contains_key(j.head()))
        .collect();
    let named: BTreeSet<&str> = fresh
        .iter()
        .flat_map(|j| j.after.iter().map(String::as_str))
        .collect();
    let mut placed: BTreeMap<String, i64> = BTreeMap::new();
    for j in fresh {
        let head = j.head();
        if placed.contains_key(head) {
            continue;
        }
        let w = if let Some(first) = j.after.first() {
            let parent = j
                .after
                .iter()
                .find_map(|p| known.get(p).or_else(|| placed.get(p)).copied());
            match parent {
                Some(w) => w,
                None => {
                    let w = name_id(ids, new_names, "workflow", first);
                    placed.insert(first.clone(), w);
                    w
                }
            }
        } else if named.contains(head) {
            name_id(ids, new_names, "workflow", head)
        } else {
            continue;
        };
        placed.insert(head.to_owned(), w);
    }
    placed
}

/// Accounts that have at least one user, sorted.
pub fn accounts_with_users(text: &str) -> Result<Vec<String>, SlurmError> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (account, user) = line
            .split_once('|')
            .ok_or_else(|| SlurmError::Failed(format!("sacctmgr output {line:?}: expected ACCOUNT|USER")))?;
        if !user.is_empty() {
            out.insert(account.to_owned());
        }
    }
    Ok(out.into_iter().collect())
}

/// `cpus` processors shared evenly by `accounts` (the first ones get one
/// more when it does not divide).
pub fn even_split(accounts: &[String], cpus: u32) -> Result<Vec<(String, u32)>, SteerError> {
    if accounts.is_empty() {
        return Err(SteerError::Config(
            "sacctmgr lists no account with users: give the organizations with --platform".into(),
        ));
    }
    let n = accounts.len() as u32;
    Ok(accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.clone(), cpus / n + u32::from((i as u32) < cpus % n)))
        .collect())
}

/// The id `name` has, or the next one of its kind (the names already
/// known, plus the new ones of this cycle).
fn name_id<V: Copy + Into<i64>>(
    known: &BTreeMap<String, V>,
    new: &mut Vec<(&'static str, String, i64)>,
    kind: &'static str,
    name: &str,
) -> i64 {
    if let Some(&v) = known.get(name) {
        return v.into();
    }
    if let Some(n) = new.iter().find(|n| n.0 == kind && n.1 == name) {
        return n.2;
    }
    let id = (known.len() + new.iter().filter(|n| n.0 == kind).count()) as i64;
    new.push((kind, name.to_owned(), id));
    id
}

/// `describe`'s parts: each `--flag value` and the organizations.
fn split_described(d: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for w in d.split(' ') {
        match parts.last_mut() {
            Some(last) if !w.starts_with("--") && !w.starts_with('(') => {
                last.push(' ');
                last.push_str(w);
            }
            _ => parts.push(w.to_owned()),
        }
    }
    parts
}

fn describe(s: &Settings) -> String {
    let mut d = format!("--policy {}", s.policy);
    if let Some(c) = &s.control {
        d.push_str(&format!(" --control {c}"));
    }
    if let Some(p) = &s.partition {
        d.push_str(&format!(" --partition {p}"));
    }
    if !s.orgs.is_empty() {
        let o: Vec<String> = s.orgs.iter().map(|(a, p)| format!("{a}={p}")).collect();
        d.push_str(&format!(" (organizations {})", o.join(",")));
    }
    if let Some(st) = s.step {
        d.push_str(&format!(" --step {st}"));
    }
    d
}

#[cfg(test)]
mod tests;
