//! The real-clock driver of the core: steps are applied to the core in
//! memory, logged and committed, and only then are their actions handed
//! out. A step the core rejects leaves the core as it was and is never
//! logged, so a restart cannot trip on it; a commit that fails puts the
//! core back too. On open, the core is rebuilt from the configuration and
//! every logged step — same log, same decisions — or, faster, from the
//! newest snapshot that restores plus the steps logged after it. Every
//! [`DEFAULT_SNAPSHOT_EVERY`] steps a snapshot is written, after the
//! commit (it is never part of a step's acknowledgement).

use crate::store::{Config, ReplayError, Snapshot, Step, Store, StoreError};
use fairsched_core::registry::{Kind, PolicySpec, Reads, Registry, article};
use fairsched_core::{Action, CoreError, Event, Platform, Scheduler, SnapshotError, TaskId, Time};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("configuration: {0}")]
    Config(String),
    /// The core refused the step: nothing was applied or logged.
    #[error("refused: {0}")]
    Refused(String),
    /// A logged step no longer applies (the database was written by a
    /// fairsched whose policies decide differently).
    #[error("{path}: replaying step {seq}: {reason}")]
    Replay { path: String, seq: i64, reason: String },
}

/// Steps between two snapshots, unless [`Live::set_snapshot_every`] says
/// otherwise. A snapshot costs O(state) once; replaying a step costs about
/// what applying it did, so this bounds a restart's replay.
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 10_000;

/// The core with its log.
pub struct Live {
    core: Scheduler,
    store: Store,
    /// Where the policies come from (a rebuild from the log uses it again).
    registry: Registry,
    /// The largest `now` applied: the wall clock may step back, the core's
    /// time does not.
    now: Time,
    /// Every task id up to this one has been used: a `Submit` must take a
    /// larger id (so an ended task's id is never accepted again).
    high_id: u64,
    /// The last id [`Live::fresh_id`] handed out (not yet submitted,
    /// perhaps; not logged: after a restart, ids above `high_id` are
    /// handed out again).
    issued: u64,
    /// Actions of the replay.
    out: Vec<Action>,
    /// Timers the core asked for that have not fired: `(at, token)`.
    timers: Vec<(Time, u64)>,
    /// Set when a failed commit could not be undone: every later commit
    /// is refused (restart the broker).
    broken: Option<String>,
    /// Steps between snapshots (0: none).
    snapshot_every: u64,
    /// Steps committed since the last snapshot.
    since_snapshot: u64,
    /// The step of the snapshot the open started from, if any.
    restored_from: Option<i64>,
}

/// Builds the core `config` describes from `registry`. A policy that reads
/// more than the views is refused here, before anything runs: a
/// clairvoyant one (true runtimes, which a live driver does not know), or
/// one that reads the users' runtime estimates (live tasks give none; a
/// steered core's tasks do: Slurm's time limits) — both as their registry
/// entries declare.
pub fn build_core(config: &Config, registry: &Registry) -> Result<Scheduler, LiveError> {
    let spec = |what: &str, s: &str| {
        s.parse()
            .map_err(|e| LiveError::Config(format!("{what} `{s}`: {e}")))
    };
    // A policy of another kind named where this one is expected.
    let flag = |k: Kind| match k {
        Kind::Allocate => "--allocate",
        Kind::Order => "--policy",
        Kind::Control => "--control",
    };
    let misplaced = |kind: Kind, spec: &PolicySpec| -> Option<LiveError> {
        let e = registry
            .find_in(&spec.name, &[kind])
            .filter(|e| e.kind() != kind)?;
        let other = e.kind();
        let what = format!(
            "`{}` is {} {} policy ({})",
            spec.name,
            article(other.name()),
            other.name(),
            flag(other)
        );
        Some(LiveError::Config(if e.clairvoyant() {
            format!(
                "{what}, and it is clairvoyant: refused (it reads true runtimes, which a live service does not know; it runs in `fairsched simulate` only)"
            )
        } else {
            format!("{what}: give it with {}, not {}", flag(other), flag(kind))
        }))
    };
    let allocate_spec: PolicySpec = spec("allocate policy", &config.allocate)?;
    let order_spec: PolicySpec = spec("policy", &config.order)?;
    let control_spec: Option<PolicySpec> = config
        .control
        .as_deref()
        .map(|c| spec("control policy", c))
        .transpose()?;
    let given = [
        (
            Kind::Allocate,
            Some((&allocate_spec, "allocate policy", &config.allocate)),
        ),
        (Kind::Order, Some((&order_spec, "policy", &config.order))),
        (
            Kind::Control,
            control_spec
                .as_ref()
                .zip(config.control.as_ref())
                .map(|(s, c)| (s, "control policy", c)),
        ),
    ];
    for (kind, s) in &given {
        let Some((s, what, text)) = s else { continue };
        let entry = match registry.entry(*kind, &s.name) {
            Ok(e) => e,
            Err(e) => {
                return Err(
                    misplaced(*kind, s).unwrap_or_else(|| LiveError::Config(format!("{what} `{text}`: {e}")))
                );
            }
        };
        match entry.reads() {
            Reads::Blind => {}
            Reads::Oracle => {
                return Err(LiveError::Config(format!(
                    "`{text}` is clairvoyant: it reads true runtimes, which a live service does not know (it runs in `fairsched simulate` only)"
                )));
            }
            Reads::Estimates if config.steered => {}
            Reads::Estimates => {
                return Err(LiveError::Config(format!(
                    "`{text}` reads the users' runtime estimates (requested run times, SWF field 9), and live tasks give none: \
                     it runs in `fairsched simulate` only"
                )));
            }
        }
    }
    let allocate = registry
        .build_allocate(&allocate_spec)
        .map_err(|e| LiveError::Config(format!("allocate policy `{}`: {e}", config.allocate)))?;
    let order = registry
        .build_order(&order_spec)
        .map_err(|e| LiveError::Config(format!("policy `{}`: {e}", config.order)))?;
    let control = match (&config.control, &control_spec) {
        (Some(c), Some(s)) => Some(
            registry
                .build_control(s)
                .map_err(|e| LiveError::Config(format!("control policy `{c}`: {e}")))?,
        ),
        _ => None,
    };
    // One machine; slots join as workers register (or, steering, as the
    // resource manager's processors are counted).
    let core = Scheduler::new(&Platform::pool(0), config.seed, allocate, order, control);
    if config.steered {
        if core.preempts() {
            return Err(LiveError::Config(format!(
                "policy `{}` stops running tasks for waiting ones: a steering controller never stops a job",
                config.order
            )));
        }
        return Ok(core.steered());
    }
    Ok(core)
}

impl Live {
    /// Creates the database at `path` for `config`, its policies from
    /// `registry`.
    pub fn create(path: &Path, config: &Config, registry: &Registry) -> Result<Live, LiveError> {
        let core = build_core(config, registry)?;
        let store = Store::create(path, config)?;
        Ok(Live {
            core,
            store,
            registry: registry.clone(),
            now: Time::ZERO,
            high_id: 0,
            issued: 0,
            out: Vec::new(),
            timers: Vec::new(),
            broken: None,
            snapshot_every: DEFAULT_SNAPSHOT_EVERY,
            since_snapshot: 0,
            restored_from: None,
        })
    }

    /// Opens the database at `path`: the newest snapshot that restores,
    /// then the steps logged after it (the whole log if there is none).
    pub fn open(path: &Path, registry: &Registry) -> Result<Live, LiveError> {
        Live::open_with(path, registry, true)
    }

    /// Opens the database at `path` by replaying its whole log, ignoring
    /// snapshots (to check them, or to see every action again).
    pub fn open_from_log(path: &Path, registry: &Registry) -> Result<Live, LiveError> {
        Live::open_with(path, registry, false)
    }

    fn open_with(path: &Path, registry: &Registry, snapshots: bool) -> Result<Live, LiveError> {
        let (store, config) = Store::open(path)?;
        let r = load(&store, &config, registry, snapshots)?;
        Ok(Live {
            registry: registry.clone(),
            core: r.core,
            now: r.now,
            high_id: r.high_id,
            issued: r.high_id,
            out: r.out,
            timers: r.timers,
            broken: None,
            snapshot_every: DEFAULT_SNAPSHOT_EVERY,
            since_snapshot: (store.len() as i64 - r.from.unwrap_or(0)).max(0) as u64,
            restored_from: r.from,
            store,
        })
    }

    /// Steps between snapshots; 0 turns them off.
    pub fn set_snapshot_every(&mut self, steps: u64) {
        self.snapshot_every = steps;
    }

    /// Steps logged since the last snapshot (or since the open, if it
    /// started from none).
    pub fn since_snapshot(&self) -> u64 {
        self.since_snapshot
    }

    /// The step of the snapshot this open started from (`None`: the whole
    /// log was replayed).
    pub fn restored_from(&self) -> Option<i64> {
        self.restored_from
    }

    /// Writes a snapshot of the core after the last logged step. `Ok(false)`
    /// if a policy cannot be snapshotted (periodic snapshots then stop:
    /// restarts replay the whole log, which is always correct).
    pub fn write_snapshot(&mut self) -> Result<bool, LiveError> {
        let core = match self.core.snapshot() {
            Ok(bytes) => bytes,
            Err(SnapshotError::Unsupported(name)) => {
                tracing::warn!("policy `{name}` cannot be snapshotted: a restart replays the whole log");
                self.snapshot_every = 0;
                return Ok(false);
            }
            Err(e) => return Err(LiveError::Refused(format!("snapshot: {e}"))),
        };
        let snap = Snapshot {
            seq: self.store.len() as i64,
            now: self.now,
            high_id: self.high_id,
            timers: self.timers.clone(),
            core,
        };
        self.store.write_snapshot(&snap)?;
        self.since_snapshot = 0;
        Ok(true)
    }

    /// The core as it stands.
    pub fn core(&self) -> &Scheduler {
        &self.core
    }

    /// The core's time: the largest `now` applied.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The log.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Steps logged.
    pub fn steps(&self) -> u64 {
        self.store.len()
    }

    /// A task id never used before.
    pub fn fresh_id(&mut self) -> TaskId {
        self.issued = self.issued.max(self.high_id) + 1;
        TaskId(self.issued)
    }

    /// Timers the core asked for that have not fired yet: `(at, token)`.
    pub fn pending_timers(&self) -> &[(Time, u64)] {
        &self.timers
    }

    /// The actions of the steps replayed when the database was opened:
    /// those after the snapshot it started from, or every step since the
    /// database was created with [`Live::open_from_log`].
    pub fn replayed_actions(&self) -> &[Action] {
        &self.out
    }

    /// Runs `f` in one transaction of the database, outside any step: a
    /// driver's own tables (the steering controller's last decisions). It
    /// gets the core, to decide from it what is written.
    pub fn transact(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction, &Scheduler) -> rusqlite::Result<()>,
    ) -> Result<(), LiveError> {
        let core = &self.core;
        Ok(self.store.transact(|tx| f(tx, core))?)
    }

    /// Applies one step at `now` (clamped to the core's time); see
    /// [`Live::commit`].
    pub fn step(&mut self, now: Time, events: Vec<Event>) -> Result<Vec<Action>, LiveError> {
        self.commit(vec![(now, events)])
            .pop()
            .expect("one result per step")
    }

    /// Group commit: applies each step in order (a refused one leaves the
    /// core as it was and is skipped), logs the accepted ones in one
    /// transaction, and returns each step's actions or why it was refused.
    /// If the commit fails, the core is put back as before the group and
    /// every step gets the error: nothing was applied.
    pub fn commit(&mut self, steps: Vec<(Time, Vec<Event>)>) -> Vec<Result<Vec<Action>, LiveError>> {
        self.commit_with(steps, |_, _, _| Ok(()))
    }

    /// [`Live::commit`], with `extra` writing the service's own tables in
    /// the same transaction as the steps. It gets each step's result (the
    /// actions of an accepted step, `None` for a refused one) and the core
    /// after the steps (to decide from it what is written with them).
    pub fn commit_with(
        &mut self,
        steps: Vec<(Time, Vec<Event>)>,
        extra: impl FnOnce(&rusqlite::Transaction, &[Option<&[Action]>], &Scheduler) -> rusqlite::Result<()>,
    ) -> Vec<Result<Vec<Action>, LiveError>> {
        if let Some(why) = &self.broken {
            let msg = format!("not logged: the broker must restart ({why})");
            return steps
                .iter()
                .map(|_| Err(LiveError::Refused(msg.clone())))
                .collect();
        }
        // Nothing is cloned to undo a group whose commit fails (that would
        // cost as much as the whole state at every commit): the core is
        // rebuilt from the log instead, which holds exactly the steps
        // committed before.
        let before = (self.now, self.high_id);
        let mut results = Vec::with_capacity(steps.len());
        let mut accepted = Vec::with_capacity(steps.len());
        for (now, events) in steps {
            if let Err(e) = self.check(&events) {
                results.push(Err(e));
                continue;
            }
            let now = now.max(self.now);
            let mut out = Vec::new();
            // `step`, not `step_atomic`: the latter clones the whole core to
            // undo a refused step, O(live tasks) per step. A refused step
            // (rare: a policy bug) is undone by rebuilding from the log and
            // the group's steps accepted so far.
            match self.core.step(now, events.iter().cloned(), None, &mut out) {
                Ok(_) => {
                    self.now = now;
                    self.high_id = self.high_id.max(max_submit(&events).unwrap_or(0));
                    accepted.push(Step { now, events });
                    results.push(Ok(out));
                }
                Err(e) => {
                    results.push(Err(refused(e)));
                    if let Err(why) = self.rebuild(&accepted) {
                        self.broken = Some(why);
                    }
                }
            }
        }
        let outcomes: Vec<Option<&[Action]>> = results
            .iter()
            .map(|r| r.as_ref().ok().map(|a| a.as_slice()))
            .collect();
        let logged = if accepted.is_empty() {
            Ok(())
        } else {
            let core = &self.core;
            self.store.append_with(&accepted, |tx| extra(tx, &outcomes, core))
        };
        if let Err(e) = logged {
            let msg = e.to_string();
            (self.now, self.high_id) = before;
            match load(&self.store, &self.store.config().clone(), &self.registry, true) {
                Ok(r) => {
                    self.core = r.core;
                    self.timers = r.timers;
                }
                Err(e2) => self.broken = Some(format!("{msg}; rebuilding from the log: {e2}")),
            }
            return results
                .into_iter()
                .map(|_| Err(LiveError::Refused(format!("not logged: {msg}"))))
                .collect();
        }
        for (step, out) in accepted
            .iter()
            .zip(results.iter().filter_map(|r| r.as_ref().ok()))
        {
            track_timers(&mut self.timers, &step.events, out);
        }
        self.since_snapshot += accepted.len() as u64;
        if self.snapshot_every > 0 && self.since_snapshot >= self.snapshot_every {
            // After the commit, outside the steps' acknowledgement: a
            // snapshot that fails costs only a longer replay later.
            if let Err(e) = self.write_snapshot() {
                tracing::warn!("{}: {e}", self.store.path().display());
                self.since_snapshot = 0;
            }
        }
        results
    }

    /// Rebuilds the core from the log plus `pending` (steps applied but
    /// not yet logged).
    fn rebuild(&mut self, pending: &[Step]) -> Result<(), String> {
        let config = self.store.config().clone();
        let mut r = load(&self.store, &config, &self.registry, true).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for st in pending {
            r.core
                .step(st.now, st.events.iter().cloned(), None, &mut out)
                .map_err(|e| e.to_string())?;
        }
        self.core = r.core;
        Ok(())
    }

    /// What the log layer refuses before the core sees it: a submission
    /// reusing an id (the core itself would take an ended task's id as
    /// new).
    fn check(&self, events: &[Event]) -> Result<(), LiveError> {
        let mut high = self.high_id;
        for e in events {
            if let Event::Submit(spec) = e {
                if spec.id.0 <= high {
                    return Err(LiveError::Refused(format!(
                        "task id {} was already used (ids must increase; take one from fresh_id)",
                        spec.id.0
                    )));
                }
                high = spec.id.0;
            }
        }
        Ok(())
    }
}

/// The core rebuilt from a log.
struct Replayed {
    core: Scheduler,
    now: Time,
    high_id: u64,
    out: Vec<Action>,
    timers: Vec<(Time, u64)>,
    /// The snapshot it started from.
    from: Option<i64>,
}

/// The core from the newest snapshot that restores (when `snapshots`) and
/// the steps after it, else from the whole log. A snapshot that does not
/// restore, or whose tail does not replay, is passed over with a warning:
/// the log alone is the truth.
fn load(store: &Store, config: &Config, registry: &Registry, snapshots: bool) -> Result<Replayed, LiveError> {
    if snapshots {
        for snap in store.snapshots()? {
            let snap = match snap {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("{e}; using an older snapshot or the whole log");
                    continue;
                }
            };
            let seq = snap.seq;
            let mut core = build_core(config, registry)?;
            let start = core.restore(&snap.core).map(|()| Replayed {
                core,
                now: snap.now,
                high_id: snap.high_id,
                out: Vec::new(),
                timers: snap.timers,
                from: Some(seq),
            });
            match start
                .map_err(|e| e.to_string())
                .and_then(|r| replay(store, r).map_err(|e| e.to_string()))
            {
                Ok(r) => return Ok(r),
                Err(e) => tracing::warn!(
                    "{}: snapshot after step {seq}: {e}; using an older snapshot or the whole log",
                    store.path().display()
                ),
            }
        }
    }
    let start = Replayed {
        core: build_core(config, registry)?,
        now: Time::ZERO,
        high_id: 0,
        out: Vec::new(),
        timers: Vec::new(),
        from: None,
    };
    replay(store, start)
}

/// Applies the steps logged after `r.from` to `r`.
fn replay(store: &Store, mut r: Replayed) -> Result<Replayed, LiveError> {
    let mut fired: Vec<u64> = Vec::new();
    let mut out = Vec::new();
    store
        .replay_after(r.from.unwrap_or(0), |_, step: Step| {
            r.now = r.now.max(step.now);
            fired.extend(step.events.iter().filter_map(|e| match e {
                Event::Timer { token } => Some(*token),
                _ => None,
            }));
            r.high_id = r.high_id.max(max_submit(&step.events).unwrap_or(0));
            r.core.step(r.now, step.events, None, &mut out).map(drop)
        })
        .map_err(|e| match e {
            ReplayError::Store(s) => LiveError::Store(s),
            ReplayError::Step(seq, e) => LiveError::Replay {
                path: store.path().display().to_string(),
                seq,
                reason: e.to_string(),
            },
        })?;
    // Timers asked for and not yet delivered (a token is delivered once
    // per request).
    r.timers.extend(out.iter().filter_map(|a| match a {
        Action::Timer { at, token } => Some((*at, *token)),
        _ => None,
    }));
    for t in fired {
        if let Some(i) = r.timers.iter().position(|&(_, k)| k == t) {
            r.timers.remove(i);
        }
    }
    r.out = out;
    Ok(r)
}

/// Keeps `timers` (asked for, not fired) up to date with one step.
fn track_timers(timers: &mut Vec<(Time, u64)>, events: &[Event], out: &[Action]) {
    for e in events {
        if let Event::Timer { token } = e
            && let Some(i) = timers.iter().position(|&(_, k)| k == *token)
        {
            timers.remove(i);
        }
    }
    timers.extend(out.iter().filter_map(|a| match a {
        Action::Timer { at, token } => Some((*at, *token)),
        _ => None,
    }));
}

fn max_submit(events: &[Event]) -> Option<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Submit(s) => Some(s.id.0),
            _ => None,
        })
        .max()
}

fn refused(e: CoreError) -> LiveError {
    LiveError::Refused(e.to_string())
}
