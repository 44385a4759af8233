//! `fairsched slurm`: fairsched's policies over a Slurm that keeps
//! running its queue (`fairsched_slurm::steer`), and the site's history
//! and workloads for the simulator.
//!
//! - `slurm steer` turns the policy's order of the pending jobs into
//!   Slurm site factors, cycle after cycle; it never starts, holds or
//!   cancels a job. `--dry-run` says what it would change; `--reset`
//!   puts every factor it set back to 0.
//! - `slurm explain JOBID` says why a pending job has its factor.
//! - `slurm history` writes the site's accounting as an SWF log and a
//!   platform file; `slurm replay` submits a window of a log to Slurm.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use fairsched_slurm::steer::{Controller, Cycle, Settings, Tools};

use crate::term::{sayln, usage};

#[derive(clap::Subcommand)]
pub enum SlurmCommand {
    /// Steer a running Slurm's queue: the policy's order of the pending jobs, as site factors.
    ///
    /// Each cycle reads the pending and running jobs (squeue) and their site factors (sprio),
    /// steps fairsched's core with what changed (its log and snapshots in --db: a restart
    /// resumes the same usage history), ranks the pending jobs under the policy, and sends the
    /// site factors that differ (scontrol update JobId=… SiteFactor=…, batched: one scontrol
    /// per 1,000 updates). It never starts, holds or cancels a job, and never sets Priority=:
    /// Slurm's scheduler and backfill stay in charge. Organizations are Slurm accounts; the
    /// processors each contributes come from --platform (its [[org]] names are account names),
    /// else every account with users (sacctmgr) gets an even share. With --control
    /// workflow-fairness, Slurm dependency chains are workflows (a job and the jobs that depend
    /// on it; a job's name is its activity), and a job waiting on a dependency reaches the core
    /// when Slurm could run it. Needs PriorityType=priority/multifactor, no site factor plugin,
    /// and operator rights (docs/slurm-steering.md).
    ///
    /// Examples:
    ///   fairsched slurm steer --dry-run
    ///   fairsched slurm steer --policy fair-share --platform site.toml --every 30s
    ///   fairsched slurm steer --policy direct-contr --platform site.toml --metrics steer.prom
    ///   fairsched slurm steer --policy workflow-fcfs --control 'workflow-fairness[tau=0.05]' --db wf.db
    ///   fairsched slurm steer --reset
    #[command(verbatim_doc_comment)]
    Steer(SteerArgs),
    /// Why a pending job has its site factor: its user's and organization's standing under the
    /// policy, its rank, the last cycle's value and whether it stuck.
    Explain(ExplainArgs),
    /// The site's accounting (sacct) as an SWF log and a platform file (accounts as
    /// organizations, users mapped), for `fairsched simulate` to replay under every policy.
    ///
    /// Examples:
    ///   fairsched slurm history --since 2026-11-01 --swf site.swf --platform site-history.toml
    #[command(verbatim_doc_comment)]
    History(crate::cmd_slurm_history::HistoryArgs),
    /// Submit a window of a workload log to Slurm, time-compressed, as `sleep` jobs under the
    /// users and accounts the platform file maps; what was submitted goes to OUT/submitted.csv.
    ///
    /// Examples:
    ///   fairsched slurm replay data/KTH-SP2-1996-2.1-cln.swf.gz --window 599850,900 --speedup 60 --dry-run
    #[command(verbatim_doc_comment)]
    Replay(crate::cmd_slurm_history::ReplayArgs),
    /// How fair a recorded schedule was (a `slurm history` log, or any SWF log with waits):
    /// each organization's processor time against the processors it contributes, Jain's index
    /// of the two's ratio, the Shapley utilities ψ, and with --phi the contributions φ (REF's
    /// utilities) and Σ|φ − ψ| / p_tot.
    ///
    /// Examples:
    ///   fairsched slurm score site.swf --platform site-history.toml --phi
    #[command(verbatim_doc_comment)]
    Score(ScoreArgs),
}

#[derive(clap::Args)]
pub struct ScoreArgs {
    /// The schedule: an SWF log whose jobs have their waits and run times (field 3 and 4).
    log: PathBuf,
    /// The organizations (processors each contributes, users of each): `slurm history
    /// --platform` writes one.
    #[arg(long, value_name = "FILE.toml")]
    platform: PathBuf,
    /// Also the Shapley contributions φ (2^k − 2 coalition schedules of the whole log: for a
    /// few organizations).
    #[arg(long)]
    phi: bool,
}

#[derive(clap::Args)]
pub struct SteerArgs {
    /// The order policy (`fairsched policies`): the fair-share family, direct-contr,
    /// round-robin, fcfs, or any blind or estimate-reading order of the registry. Clairvoyant
    /// and preempting ones are refused.
    #[arg(long, value_name = "SPEC", default_value = "fair-share")]
    policy: String,
    /// A control policy (`fairsched policies`), changing priorities after events:
    /// workflow-fairness (with a priority order: workflow-fcfs) over dependency chains.
    #[arg(long, value_name = "SPEC")]
    control: Option<String>,
    /// The organizations: a platform file whose [[org]] names are Slurm accounts, each with the
    /// processors it contributes (`procs`); see examples/platform.toml.
    #[arg(long, value_name = "FILE.toml")]
    platform: Option<PathBuf>,
    /// Steer only this partition's jobs (its processors are the pool).
    #[arg(long, value_name = "P")]
    partition: Option<String>,
    /// Time between cycles (seconds, or 30s, 2m; at least 1 s: each cycle runs squeue and
    /// sprio over the whole queue).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = every)]
    every: Duration,
    /// The controller's database (SQLite: its log, snapshots and last decisions).
    #[arg(long, value_name = "FILE", default_value = "steer.db")]
    db: PathBuf,
    /// Run one cycle and print, job by job, the site factors it would change; change nothing
    /// (neither Slurm nor the database).
    #[arg(long, conflicts_with = "reset")]
    dry_run: bool,
    /// Set back to 0 the site factor of every pending job the controller set one on, and exit.
    #[arg(long)]
    reset: bool,
    /// Stop after N cycles [default: run until stopped].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    cycles: Option<u64>,
    /// Write the controller's metrics (Prometheus text format) to this file after every cycle.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Spacing of the site factors [default: one more than the sum of Slurm's priority
    /// weights, so that the site factor alone decides the order].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..=1_000_000_000))]
    step: Option<i64>,
    /// The core's seed (policies that draw at random).
    #[arg(long, value_name = "N", default_value = "0")]
    seed: u64,
}

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// The Slurm job id (as squeue prints it: 42, or 42_3 for an array element).
    job: String,
    /// The controller's database.
    #[arg(long, value_name = "FILE", default_value = "steer.db")]
    db: PathBuf,
}

fn every(s: &str) -> Result<Duration, String> {
    let d = fairsched_worker::parse_seconds(s)?;
    if d < Duration::from_secs(1) {
        return Err(format!("{s}: at least 1 s between cycles"));
    }
    Ok(d)
}

pub fn run(c: SlurmCommand, registry: &fairsched_core::Registry) -> anyhow::Result<()> {
    match c {
        SlurmCommand::Steer(a) => steer(a, registry),
        SlurmCommand::Explain(a) => explain(a, registry),
        SlurmCommand::History(a) => crate::cmd_slurm_history::history(a),
        SlurmCommand::Replay(a) => crate::cmd_slurm_history::replay(a),
        SlurmCommand::Score(a) => score(a),
    }
}

fn settings(a: &SteerArgs) -> anyhow::Result<Settings> {
    let orgs = match &a.platform {
        None => Vec::new(),
        Some(p) => {
            let file = fairsched_sim::platform_file::PlatformFile::load(p)
                .map_err(|e| usage(format!("--platform: {e}")))?;
            file.orgs.iter().map(|o| (o.name.clone(), o.procs)).collect()
        }
    };
    Ok(Settings {
        policy: a.policy.clone(),
        control: a.control.clone(),
        seed: a.seed,
        partition: a.partition.clone(),
        orgs,
        step: a.step,
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn steer(a: SteerArgs, registry: &fairsched_core::Registry) -> anyhow::Result<()> {
    let settings = settings(&a)?;
    let mut tools = Tools {
        partition: a.partition.clone(),
    };
    let config_error = |e: fairsched_slurm::steer::SteerError| -> anyhow::Error {
        match e {
            fairsched_slurm::steer::SteerError::Config(m) => usage(m),
            fairsched_slurm::steer::SteerError::Live(fairsched_broker::LiveError::Config(m)) => usage(m),
            fairsched_slurm::steer::SteerError::Slurm(e) if e.is_usage() => usage(e),
            e => anyhow::Error::new(e),
        }
    };
    // A Control changes priorities; an order that does not read them
    // would make it do nothing.
    if a.control.is_some()
        && let Ok(spec) = a.policy.parse::<fairsched_core::registry::PolicySpec>()
        && let Some(entry) = registry.find_in(&spec.name, &[fairsched_core::Kind::Order])
        && entry.picks != fairsched_core::registry::Picks::Priority
    {
        tracing::warn!(
            "--control {}: --policy {} does not order by priority, so the Control's changes leave the order as it is \
             (a priority order reads them: workflow-fcfs, priority)",
            a.control.as_deref().unwrap_or(""),
            a.policy
        );
    }
    if a.reset {
        if !a.db.exists() {
            return Err(usage(format!(
                "{}: no such controller database (nothing to reset; name it with --db)",
                a.db.display()
            )));
        }
        let mut c = Controller::open(&a.db, registry).map_err(config_error)?;
        let (reset, sent) = c.reset(&mut tools)?;
        sayln!(
            "reset: {reset} pending job{} whose site factor the controller had set {} 0 again ({} scontrol call{}, {} refused)",
            if reset == 1 { "" } else { "s" },
            if reset == 1 { "is" } else { "are" },
            sent.calls,
            if sent.calls == 1 { "" } else { "s" },
            sent.refused.len()
        );
        for (job, why) in &sent.refused {
            sayln!("  job {job}: {why}");
        }
        return Ok(());
    }
    if a.dry_run {
        // A database that does not exist yet is made in a temporary
        // folder and removed: a dry run writes nothing.
        let scratch;
        let db = if a.db.exists() {
            a.db.clone()
        } else {
            scratch = Scratch::new()?;
            scratch.0.join("steer.db")
        };
        let fresh = !a.db.exists();
        let mut c = Controller::open_or_create(&db, &settings, registry, &mut tools).map_err(config_error)?;
        let cy = c.cycle(&mut tools, now_ms(), true)?;
        if fresh {
            sayln!(
                "(a new controller: it knows no usage yet, so this first cycle ranks as if no job had run; \
                 ties between organizations go to the first of {})",
                orgs_line(&c)
            );
        }
        sayln!(
            "dry run (nothing sent): {} pending, {} running under {}; {} site factor{} would change",
            cy.pending,
            cy.running,
            settings.policy,
            cy.changes.len(),
            if cy.changes.len() == 1 { "" } else { "s" }
        );
        for (job, from, to) in &cy.changes {
            match cy.who.get(job) {
                Some((user, account, rank)) => sayln!(
                    "job {job} ({user}, {account}, rank {}): site factor {from} -> {to}",
                    rank + 1
                ),
                None => sayln!("job {job}: site factor {from} -> {to}"),
            }
        }
        return Ok(());
    }
    if let Some(m) = &a.metrics {
        let parent = m
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if m.is_dir() || !parent.is_dir() {
            return Err(usage(format!(
                "--metrics {}: {}",
                m.display(),
                if m.is_dir() {
                    "a folder, not a file"
                } else {
                    "its folder does not exist"
                }
            )));
        }
    }
    let mut c = Controller::open_or_create(&a.db, &settings, registry, &mut tools).map_err(config_error)?;
    sayln!("organizations (account: processors): {}", orgs_line(&c));
    sayln!(
        "steering{} under {} (site factors at least {} apart; database {}), every {} s",
        a.partition
            .as_ref()
            .map(|p| format!(" partition {p}"))
            .unwrap_or_default(),
        settings.policy,
        c.step(),
        a.db.display(),
        a.every.as_secs_f64()
    );
    let mut done = 0u64;
    // Cycles in a row that found factors changed behind the controller.
    let mut fought = 0u32;
    loop {
        let started = Instant::now();
        match c.cycle(&mut tools, now_ms(), false) {
            Ok(cy) => {
                report(&cy, c.totals().cycles)?;
                fought = if cy.not_stuck.is_empty() { 0 } else { fought + 1 };
                if let Some(w) = not_stuck_warning(&cy.not_stuck, fought) {
                    tracing::warn!("{w}");
                }
                if let Some(m) = &a.metrics {
                    write_metrics(m, &cy, &c)?;
                }
            }
            // A tool that failed or printed what does not parse: the cycle
            // was skipped whole (nothing applied); the next one retries.
            Err(fairsched_slurm::steer::SteerError::Slurm(e)) if e.is_usage() => {
                return Err(usage(e));
            }
            Err(fairsched_slurm::steer::SteerError::Slurm(e)) => {
                tracing::warn!("cycle skipped: {e}");
                if let Some(m) = &a.metrics {
                    write_metrics(m, &Cycle::default(), &c)?;
                }
            }
            Err(e) => return Err(anyhow::Error::new(e).context("steering stopped")),
        }
        done += 1;
        if a.cycles.is_some_and(|n| done >= n) {
            return Ok(());
        }
        let left = a.every.saturating_sub(started.elapsed());
        std::thread::sleep(left);
    }
}

/// What a cycle that found factors changed since it set them says: the
/// jobs (at most three named), what was set and found, and who may have
/// written them; from the second such cycle in a row (`fought`), that a
/// second controller is the likely writer.
fn not_stuck_warning(not_stuck: &[(String, i64, i64)], fought: u32) -> Option<String> {
    if not_stuck.is_empty() {
        return None;
    }
    let named: Vec<String> = not_stuck
        .iter()
        .take(3)
        .map(|(job, set, found)| format!("job {job}: set {set}, found {found}"))
        .collect();
    let more = not_stuck.len().saturating_sub(3);
    let jobs = if more > 0 {
        format!("{} and {more} more", named.join("; "))
    } else {
        named.join("; ")
    };
    let n = not_stuck.len();
    let head = format!(
        "{n} site factor{} changed since this controller set {} ({jobs}); sent again",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" }
    );
    Some(if fought >= 2 {
        format!(
            "{head}. {fought} cycles in a row: another writer is setting this queue's site factors, most likely a second controller \
             (two controllers on one queue undo each other every cycle: run one per cluster, or one per --partition), \
             or an operator's `scontrol update ... SiteFactor=`"
        )
    } else {
        format!(
            "{head}: another controller, an operator's `scontrol update ... SiteFactor=`, or (before Slurm 26.05.3) a backfill pass that raced the update"
        )
    })
}

/// `physics: 8, chemistry: 8`.
fn orgs_line(c: &Controller) -> String {
    c.contributed()
        .iter()
        .map(|(a, p)| format!("{a}: {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn report(cy: &Cycle, n: u64) -> anyhow::Result<()> {
    sayln!(
        "cycle {n}: {} pending, {} running; {} submitted{}, {} started, {} ended; {} update{} in {} scontrol call{}, {} not stuck, {} refused; {:.1} ms own, {:.1} ms in Slurm's tools",
        cy.pending,
        cy.running,
        cy.submitted,
        if cy.waiting > 0 {
            format!(" ({} more waiting on a dependency)", cy.waiting)
        } else {
            String::new()
        },
        cy.started,
        cy.ended,
        cy.changes.len(),
        if cy.changes.len() == 1 { "" } else { "s" },
        cy.calls,
        if cy.calls == 1 { "" } else { "s" },
        cy.not_stuck.len(),
        cy.refused.len(),
        cy.own_secs * 1e3,
        cy.tools_secs * 1e3
    );
    Ok(())
}

/// The metrics file: Prometheus' text format, replaced whole.
fn write_metrics(path: &Path, cy: &Cycle, c: &Controller) -> anyhow::Result<()> {
    let t = c.totals();
    let mut s = String::new();
    let mut m = |name: &str, kind: &str, help: &str, v: f64| {
        s.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n"
        ));
    };
    m(
        "fairsched_steer_cycles_total",
        "counter",
        "Cycles run.",
        t.cycles as f64,
    );
    m(
        "fairsched_steer_cycles_skipped_total",
        "counter",
        "Cycles skipped (a Slurm tool failed or printed what does not parse).",
        t.skipped as f64,
    );
    m(
        "fairsched_steer_cycle_own_seconds",
        "gauge",
        "The last cycle's time in the controller, outside Slurm's tools.",
        cy.own_secs,
    );
    m(
        "fairsched_steer_cycle_tools_seconds",
        "gauge",
        "The last cycle's time in Slurm's tools.",
        cy.tools_secs,
    );
    m(
        "fairsched_steer_jobs_pending",
        "gauge",
        "Pending jobs the last cycle saw.",
        cy.pending as f64,
    );
    m(
        "fairsched_steer_jobs_running",
        "gauge",
        "Running jobs the last cycle saw.",
        cy.running as f64,
    );
    m(
        "fairsched_steer_updates_total",
        "counter",
        "Site factors sent.",
        t.updates as f64,
    );
    m(
        "fairsched_steer_scontrol_calls_total",
        "counter",
        "scontrol processes run.",
        t.calls as f64,
    );
    m(
        "fairsched_steer_not_stuck_total",
        "counter",
        "Site factors found changed since the controller set them (re-asserted).",
        t.not_stuck as f64,
    );
    m(
        "fairsched_steer_refused_total",
        "counter",
        "Updates Slurm refused (the job had gone).",
        t.refused as f64,
    );
    m(
        "fairsched_steer_unmirrored_total",
        "counter",
        "Starts the core's pool could not hold (more processors busy than the organizations contribute).",
        t.unmirrored as f64,
    );
    fairsched_report::write_atomic(path, s.as_bytes())
        .with_context(|| format!("metrics file {}", path.display()))
}

fn explain(a: ExplainArgs, registry: &fairsched_core::Registry) -> anyhow::Result<()> {
    let id_ok = !a.job.is_empty()
        && a.job
            .split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && a.job.matches('_').count() <= 1;
    if !id_ok {
        return Err(usage(format!(
            "{:?} is not a Slurm job id (42, or 42_3 for an array's element)",
            a.job
        )));
    }
    if !a.db.exists() {
        return Err(usage(format!(
            "{}: no such controller database (run `fairsched slurm steer` first, or name it with --db)",
            a.db.display()
        )));
    }
    let c = Controller::open(&a.db, registry).map_err(|e| match e {
        fairsched_slurm::steer::SteerError::Config(m) => usage(m),
        e => anyhow::Error::new(e),
    })?;
    let Some(t) = c.jobs().get(&a.job) else {
        let elements = c
            .jobs()
            .keys()
            .filter(|k| k.starts_with(&format!("{}_", a.job)))
            .count();
        if elements > 0 {
            bail!(
                "job {}: an array; the controller follows its elements one by one ({elements} of them, as {}_1, {}_2, …: `squeue -r` lists them)",
                a.job,
                a.job,
                a.job
            );
        }
        bail!(
            "job {}: not followed by the controller of {} (finished, never seen by a cycle, not in its partition, \
             or waiting on a dependency: such a job is followed once Slurm could run it)",
            a.job,
            a.db.display()
        );
    };
    let org = c.org_of(&t.account);
    let user = c.user_of(&t.user);
    let pending = c.jobs().values().filter(|j| !j.running).count();
    sayln!(
        "job {} of user {} (fairsched user {}), account {} (organization {}), {}",
        a.job,
        t.user,
        user.map_or("?".into(), |u| u.to_string()),
        t.account,
        org.map_or("?".into(), |o| o.to_string()),
        if t.running { "running" } else { "pending" }
    );
    sayln!("policy: {}", c.settings().policy);
    let view = c.live().core().view();
    if let Some(task) = view.task(t.task)
        && let Some(w) = task.spec().workflow()
    {
        // Workflows are named by their first job's number, activities
        // by "WORKFLOW/JOB NAME".
        let named = |ids: &std::collections::BTreeMap<String, i64>, id: u32| {
            ids.iter()
                .find(|(_, v)| **v == i64::from(id))
                .map(|(k, _)| k.clone())
        };
        let first = named(c.workflow_ids(), w.workflow.0).unwrap_or_else(|| w.workflow.0.to_string());
        let activity = named(c.activity_ids(), w.activity)
            .and_then(|a| a.split_once('/').map(|(_, n)| n.to_owned()))
            .unwrap_or_else(|| w.activity.to_string());
        sayln!(
            "workflow of job {first} (a chain of Slurm dependencies), activity {activity:?} (the job's name); priority {}{}",
            task.spec().priority(),
            c.settings()
                .control
                .as_ref()
                .map_or(String::new(), |k| format!(" under --control {k}"))
        );
        let gauges = c.live().core().gauges();
        for g in gauges.iter().filter(|g| g.key.is_none()) {
            sayln!("  {}: {:.3}   ({})", g.name, g.value, g.help);
        }
        for g in gauges.iter().filter(|g| matches!(g.key, Some(("workflow", _)))) {
            let (_, k) = g.key.expect("filtered");
            let name = named(c.workflow_ids(), k as u32).unwrap_or_else(|| k.to_string());
            let mark = if i64::from(w.workflow.0) == k {
                "  <- this job's"
            } else {
                ""
            };
            sayln!("  {} of the workflow of job {name}: {:.3}{mark}", g.name, g.value);
        }
    }
    if let Some(r) = t.rank {
        sayln!(
            "rank at the last cycle: {} of {pending} pending (1: starts next)",
            r + 1
        );
    }
    match (t.wanted, t.seen) {
        (Some(w), Some(s)) if w == s => {
            sayln!("site factor: {w} (set, and sprio showed it at the last cycle: it stuck)")
        }
        (Some(w), Some(s)) => sayln!(
            "site factor: the last cycle sent {w} (sprio showed {s} before it was sent); the next cycle reads it back and re-asserts it if it did not stick"
        ),
        (Some(w), None) => sayln!(
            "site factor: the last cycle wanted {w} (sprio did not list the job: held, or just submitted)"
        ),
        (None, _) => sayln!("site factor: none set by the controller"),
    }
    // The core steps only at cycles that saw a change: its gauges (a fair
    // share's usage of running jobs) are read as of now.
    let now = fairsched_core::Time::from_millis((now_ms() - c.live().store().epoch_ms()).max(0));
    let gauges = c.live().core().gauges_at(now);
    let mut names: Vec<&'static str> = Vec::new();
    for g in &gauges {
        if matches!(g.key, Some(("org", _))) && !names.contains(&g.name) {
            names.push(g.name);
        }
    }
    if !names.is_empty() {
        sayln!("the organizations' standing under {}, now:", c.settings().policy);
        let mut orgs: Vec<(&String, u32)> = c.orgs().iter().map(|(n, i)| (n, *i)).collect();
        orgs.sort_by_key(|o| o.1);
        for name in names {
            let help = gauges.iter().find(|g| g.name == name).map_or("", |g| g.help);
            sayln!("  {name} ({help}):");
            for (account, id) in &orgs {
                let value = gauges
                    .iter()
                    .find(|g| g.name == name && g.key == Some(("org", i64::from(*id))))
                    .map(|g| g.value);
                let mark = if org == Some(*id) { "  <- this job's" } else { "" };
                match value {
                    Some(v) => sayln!("    {account}: {v:.3}{mark}"),
                    None => sayln!("    {account}: 0 (nothing run yet){mark}"),
                }
            }
        }
    }
    Ok(())
}

fn score(a: ScoreArgs) -> anyhow::Result<()> {
    use fairsched_core::{
        Attempt, AttemptEnd, EndRecord, MachineId, Outcome, SlotId, TaskMeta, TaskSpec, Time, sink::Observer,
    };
    let platform = fairsched_sim::platform_file::PlatformFile::load(&a.platform).map_err(usage)?;
    let orgs = platform.mapper(0);
    let reader = fairsched_trace::SwfReader::open(&a.log).map_err(usage)?;
    let mut observer = fairsched_sim::fairness::FairnessObserver::new(None, a.phi);
    let k = platform.orgs.len();
    let (mut work, mut jobs, mut skipped) = (vec![0f64; k], vec![0u64; k], 0u64);
    for job in reader {
        let j = job.map_err(usage)?;
        if j.wait_time < 0 || j.run_time < 0 {
            skipped += 1;
            continue;
        }
        let org = orgs
            .org_of(j.user_id)
            .map_err(|e| usage(format!("{}, job {}: {e}", a.log.display(), j.job_number)))?;
        let procs = u32::try_from(
            if j.allocated_procs > 0 {
                j.allocated_procs
            } else {
                j.requested_procs
            }
            .max(1),
        )
        .unwrap_or(u32::MAX);
        let submit = Time::from_secs(j.submit_time);
        let start = Time::from_secs(j.submit_time + j.wait_time);
        let stop = Time::from_secs(j.submit_time + j.wait_time + j.run_time);
        let rec = EndRecord {
            spec: TaskSpec::new(j.job_number.max(0) as u64, j.user_id, org).slots(procs),
            submit,
            end: stop,
            outcome: Outcome::Completed,
            machine: Some(MachineId(0)),
            requeued: Vec::new(),
            last: Some(Attempt {
                machine: MachineId(0),
                slot: SlotId(0),
                slots: procs,
                start,
                stop,
                end: AttemptEnd::Completed,
            }),
            phases: [None; 4],
        };
        let meta = TaskMeta {
            job: j.job_number.max(0) as u64,
            runtime: Some(Time::from_secs(j.run_time)),
            log_status: None,
        };
        observer.on_task(&rec, &meta);
        work[org as usize] += f64::from(procs) * j.run_time as f64;
        jobs[org as usize] += 1;
    }
    let procs = platform.procs();
    let fair = observer.finish(&procs, 1);
    let total_work: f64 = work.iter().sum();
    let total_procs: f64 = procs.iter().map(|&p| f64::from(p)).sum();
    sayln!(
        "{}: {} jobs scored ({} without a wait or a run time left out), {} organizations of {}",
        a.log.display(),
        jobs.iter().sum::<u64>(),
        skipped,
        k,
        a.platform.display()
    );
    sayln!(
        "{:<14} {:>6} {:>12} {:>6} {:>16} {:>9} {:>14} {:>14} {:>14}",
        "organization",
        "procs",
        "contributes",
        "jobs",
        "processor-time",
        "received",
        "psi (s^2)",
        "phi (s^2)",
        "phi - psi"
    );
    let mut ratios = Vec::new();
    for (i, o) in platform.orgs.iter().enumerate() {
        let share = f64::from(o.procs) / total_procs.max(1.0);
        let got = if total_work > 0.0 {
            work[i] / total_work
        } else {
            0.0
        };
        if share > 0.0 {
            ratios.push(got / share);
        }
        let line = fair.orgs.get(i);
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4e}"));
        sayln!(
            "{:<14} {:>6} {:>11.1}% {:>6} {:>14.0} s {:>8.1}% {:>14} {:>14} {:>14}",
            o.name,
            o.procs,
            share * 100.0,
            jobs[i],
            work[i],
            got * 100.0,
            fmt(line.map(|l| l.psi)),
            fmt(line.and_then(|l| l.phi)),
            fmt(line.and_then(|l| l.phi_minus_psi))
        );
    }
    if let Some(j) = fairsched_core::metrics::jain(ratios.iter().copied()) {
        sayln!(
            "Jain's index of received / contributed over the organizations: {j:.4} (1: each received its share)"
        );
    }
    match (fair.phi_gap_per_work_s, &fair.note) {
        (Some(g), _) => sayln!(
            "sum |phi - psi| / p_tot: {g:.1} s (0: every organization got its contribution, as under REF)"
        ),
        (None, Some(n)) => sayln!("phi: {n}"),
        (None, None) => {}
    }
    Ok(())
}

/// A temporary folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let p = std::env::temp_dir().join(format!("fairsched-steer-dry-{}-{}", std::process::id(), now_ms()));
        std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
        Ok(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::not_stuck_warning;

    #[test]
    fn factors_changed_behind_the_controller_are_named_and_a_fight_is_called_one() {
        assert_eq!(not_stuck_warning(&[], 0), None);
        let one = not_stuck_warning(&[("12".into(), 300, 0)], 1).unwrap();
        assert!(one.starts_with("1 site factor changed since this controller set it (job 12: set 300, found 0); sent again: another controller"), "{one}");
        assert!(!one.contains("in a row"), "{one}");
        let five: Vec<(String, i64, i64)> = (1..=5).map(|i| (i.to_string(), 100 * i, 7)).collect();
        let fight = not_stuck_warning(&five, 2).unwrap();
        assert!(fight.starts_with("5 site factors changed since this controller set them (job 1: set 100, found 7; job 2: set 200, found 7; job 3: set 300, found 7 and 2 more)"), "{fight}");
        assert!(fight.contains("2 cycles in a row: another writer is setting this queue's site factors, most likely a second controller"), "{fight}");
    }
}
