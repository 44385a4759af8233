//! The real-clock driver of the core: steps are applied to the core in
//! memory, logged and committed, and only then are their actions handed
//! out. A step the core rejects leaves the core as it was and is never
//! logged, so a restart cannot trip on it; a commit that fails puts the
//! core back too. On open, the core is rebuilt from the configuration and
//! every logged step — same log, same decisions.

use crate::store::{Config, ReplayError, Step, Store, StoreError};
use fairsched_core::registry::{build_allocate, build_control, build_order};
use fairsched_core::{Action, CoreError, Event, Platform, Scheduler, TaskId, Time};
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

/// The core with its log.
pub struct Live {
    core: Scheduler,
    store: Store,
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
    /// Timers the replayed steps asked for and that have not fired.
    timers: Vec<(Time, u64)>,
    /// Set when a failed commit could not be undone: every later commit
    /// is refused (restart the broker).
    broken: Option<String>,
}

/// Builds the core `config` describes; a clairvoyant policy (one that
/// reads true runtimes, which a live driver does not know) is refused here,
/// before anything runs.
pub fn build_core(config: &Config) -> Result<Scheduler, LiveError> {
    let spec = |what: &str, s: &str| {
        s.parse()
            .map_err(|e| LiveError::Config(format!("{what} `{s}`: {e}")))
    };
    let allocate = build_allocate(&spec("allocate policy", &config.allocate)?)
        .map_err(|e| LiveError::Config(format!("allocate policy `{}`: {e}", config.allocate)))?;
    let order = build_order(&spec("policy", &config.order)?)
        .map_err(|e| LiveError::Config(format!("policy `{}`: {e}", config.order)))?;
    let control = match &config.control {
        Some(c) => Some(
            build_control(&spec("control policy", c)?)
                .map_err(|e| LiveError::Config(format!("control policy `{c}`: {e}")))?,
        ),
        None => None,
    };
    let clairvoyant = |name: &str| {
        LiveError::Config(format!(
            "`{name}` is clairvoyant: it reads true runtimes, which a live service does not know (it runs in `fairsched simulate` only)"
        ))
    };
    if allocate.is_clairvoyant() {
        return Err(clairvoyant(&config.allocate));
    }
    if order.is_clairvoyant() {
        return Err(clairvoyant(&config.order));
    }
    // One machine; slots join as workers register.
    let core = Scheduler::new(&Platform::pool(0), config.seed, allocate, order, control);
    Ok(core)
}

impl Live {
    /// Creates the database at `path` for `config`.
    pub fn create(path: &Path, config: &Config) -> Result<Live, LiveError> {
        let core = build_core(config)?;
        let store = Store::create(path, config)?;
        Ok(Live {
            core,
            store,
            now: Time::ZERO,
            high_id: 0,
            issued: 0,
            out: Vec::new(),
            timers: Vec::new(),
            broken: None,
        })
    }

    /// Opens the database at `path` and replays its log.
    pub fn open(path: &Path) -> Result<Live, LiveError> {
        let (store, config) = Store::open(path)?;
        let r = replay(&store, &config)?;
        Ok(Live {
            core: r.core,
            store,
            now: r.now,
            high_id: r.high_id,
            issued: r.high_id,
            out: r.out,
            timers: r.timers,
            broken: None,
        })
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

    /// Timers requested before the last restart that have not fired yet:
    /// `(at, token)`.
    pub fn pending_timers(&self) -> &[(Time, u64)] {
        &self.timers
    }

    /// The actions of every step since the database was created, when it
    /// was just opened (for a caller that wants to check them).
    pub fn replayed_actions(&self) -> &[Action] {
        &self.out
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
        self.commit_with(steps, |_, _| Ok(()))
    }

    /// [`Live::commit`], with `extra` writing the service's own tables in
    /// the same transaction as the steps. It gets each step's result (the
    /// actions of an accepted step, `None` for a refused one).
    pub fn commit_with(
        &mut self,
        steps: Vec<(Time, Vec<Event>)>,
        extra: impl FnOnce(&rusqlite::Transaction, &[Option<&[Action]>]) -> rusqlite::Result<()>,
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
                Ok(()) => {
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
            self.store.append_with(&accepted, |tx| extra(tx, &outcomes))
        };
        if let Err(e) = logged {
            let msg = e.to_string();
            (self.now, self.high_id) = before;
            match replay(&self.store, &self.store.config().clone()) {
                Ok(r) => self.core = r.core,
                Err(e2) => self.broken = Some(format!("{msg}; rebuilding from the log: {e2}")),
            }
            return results
                .into_iter()
                .map(|_| Err(LiveError::Refused(format!("not logged: {msg}"))))
                .collect();
        }
        results
    }

    /// Rebuilds the core from the log plus `pending` (steps applied but
    /// not yet logged).
    fn rebuild(&mut self, pending: &[Step]) -> Result<(), String> {
        let config = self.store.config().clone();
        let mut r = replay(&self.store, &config).map_err(|e| e.to_string())?;
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
}

fn replay(store: &Store, config: &Config) -> Result<Replayed, LiveError> {
    let mut core = build_core(config)?;
    let mut now = Time::ZERO;
    let mut high_id = 0;
    let mut out = Vec::new();
    let mut fired: Vec<u64> = Vec::new();
    store
        .replay(|_, step: Step| {
            now = now.max(step.now);
            fired.extend(step.events.iter().filter_map(|e| match e {
                Event::Timer { token } => Some(*token),
                _ => None,
            }));
            high_id = high_id.max(max_submit(&step.events).unwrap_or(0));
            core.step(now, step.events, None, &mut out)
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
    let mut timers: Vec<(Time, u64)> = out
        .iter()
        .filter_map(|a| match a {
            Action::Timer { at, token } => Some((*at, *token)),
            _ => None,
        })
        .collect();
    for t in fired {
        if let Some(i) = timers.iter().position(|&(_, k)| k == t) {
            timers.remove(i);
        }
    }
    Ok(Replayed {
        core,
        now,
        high_id,
        out,
        timers,
    })
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
