//! Workers and their leases: registration, polls (what a worker is
//! handed and what it must kill), reports (runs ended, runs lost on the
//! way: [`MISSED_REPORTS`]), leaving and draining, and workers whose lease
//! ran out.

use super::submit::KEYS_KEPT;
use super::{Broker, Gone, Plan, PlanKind, Reply, ServiceError, Worker, Write};
use fairsched_core::{Event, MachineId, OrgId, Phase, SlotId, TaskId};
use fairsched_proto::wire::{
    Assignment, MEMORY_LIMIT_EXIT, Phase as WirePhase, PollReply, ReportEvent, ReportRequest, RunKey,
    TIME_LIMIT_EXIT,
};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// A run handed to a worker and left out of the `running` list of this
/// many of its reports in a row, each written after the worker applied
/// the poll reply that handed the run ([`ReportRequest::polled`]), is
/// lost: its assignment never reached the worker (a reply lost to a
/// dropped connection, a timeout, a size limit), and it goes back to the
/// queue as when its worker is lost.
pub const MISSED_REPORTS: u32 = 2;

/// A poll reply holds at most this many assignments…
pub const MAX_ASSIGN_PER_POLL: usize = 1024;

/// …and at most this many bytes of scripts (one assignment at least,
/// whatever its size); the rest go with the next polls. A worker reads
/// replies of up to 64 MiB.
pub const MAX_POLL_SCRIPT_BYTES: usize = 8 << 20;

/// Why a run failed: how it ended, and in which phase when its worker
/// reported the phases (`the exec phase failed (exit 3)`).
fn failure_reason(p: Option<Phase>, how: &str) -> String {
    match p {
        Some(p) => format!("the {} phase failed ({how})", p.name()),
        None => format!("its run failed ({how})"),
    }
}

/// Why a task failed with its worker: it was lost during the task's run
/// number `attempt`, when `--max-attempts` allows no more.
fn lost_reason(attempt: u32, max: u32) -> String {
    format!(
        "its worker was lost during its run {attempt}, and serve --max-attempts {max} allows no more runs"
    )
}

fn phase(p: WirePhase) -> Phase {
    match p {
        WirePhase::Setup => Phase::Setup,
        WirePhase::Input => Phase::Input,
        WirePhase::Exec => Phase::Exec,
        WirePhase::Output => Phase::Output,
    }
}

impl Broker {
    /// Whether the worker is known, alive and of `org` (a poll renews its
    /// lease).
    pub(super) fn check_worker(&mut self, worker: u64, org: u32) -> Reply<()> {
        match self.workers.get_mut(&worker) {
            None => Err(ServiceError::NotFound(format!("no worker {worker}"))),
            Some(w) if w.org != org => Err(ServiceError::Forbidden(format!(
                "worker {worker} belongs to another organization"
            ))),
            Some(w) if w.lost => Err(ServiceError::Gone(format!(
                "worker {worker} {}: kill its tasks and register again",
                w.gone.says()
            ))),
            Some(w) => {
                w.last_seen = Instant::now();
                Ok(())
            }
        }
    }

    /// Renews the lease of `worker` (of `org`, alive), as its report
    /// about to be applied will, or as a call of its that the door refused
    /// for want of budget (a sign of life all the same: the broker does not
    /// evict a worker whose calls it refused). Whether it was renewed.
    pub fn touch(&mut self, worker: u64, org: u32) -> bool {
        if let Some(w) = self.workers.get_mut(&worker)
            && w.org == org
            && !w.lost
        {
            w.last_seen = Instant::now();
            return true;
        }
        false
    }

    /// Assignments not yet handed to `worker`, and its handed runs
    /// stopped since its last poll (renews its lease). A worker never gets
    /// more runs than its slots: a full one gets kills only.
    pub fn poll(&mut self, worker: u64, org: u32) -> Reply<PollReply> {
        self.check_worker(worker, org)?;
        let view = self.live.core().view();
        self.polls += 1;
        let seq = self.polls;
        let mut out = Vec::new();
        let mut bytes = 0;
        if let Some(set) = self.running.get(&worker) {
            for &id in set {
                let Some(t) = view.task(id) else { continue };
                let attempt = t.attempts();
                if self.delivered.contains(&(id, attempt)) {
                    continue;
                }
                let Some(d) = self.tasks.get(&id) else { continue };
                let size = d.command.len()
                    + d.stage_in.as_ref().map_or(0, String::len)
                    + d.stage_out.as_ref().map_or(0, String::len)
                    + d.name.len();
                if !out.is_empty()
                    && (out.len() >= MAX_ASSIGN_PER_POLL || bytes + size > MAX_POLL_SCRIPT_BYTES)
                {
                    break; // the next poll takes the rest
                }
                bytes += size;
                self.delivered.insert((id, attempt));
                self.handed_in.insert(id, seq);
                self.handed.insert(id, (worker, attempt));
                out.push(Assignment {
                    task: d.public,
                    attempt,
                    name: d.name.clone(),
                    command: d.command.clone(),
                    stage_in: d.stage_in.clone(),
                    stage_out: d.stage_out.clone(),
                    time_limit_ms: d.limits.time_limit_ms,
                    memory_bytes: d.limits.memory_bytes,
                    caps: d.limits.caps,
                    run_as: self.run_as.get(&d.user).cloned(),
                });
            }
        }
        Ok(PollReply {
            assign: out,
            kill: self.kills.remove(&worker).unwrap_or_default(),
            seq,
            drain: self.workers.get(&worker).is_some_and(|w| w.draining),
        })
    }

    /// Workers whose lease ran out, timers that are due: the internal
    /// steps to take now.
    pub fn due(&mut self) -> Vec<Write> {
        let now = Instant::now();
        // Idempotency keys past KEYS_KEPT go, once a minute (the table's
        // rows at the next open).
        if self
            .keys_pruned
            .is_none_or(|t| now.duration_since(t) > Duration::from_secs(60))
        {
            self.keys_pruned = Some(now);
            let since = self.clock().millis() - KEYS_KEPT.as_millis() as i64;
            self.submit_keys.retain(|_, k| k.at_ms >= since);
        }
        let mut out: Vec<Write> = self
            .workers
            .iter()
            .filter(|(_, w)| !w.lost && now.duration_since(w.last_seen) > w.lease)
            .map(|(&id, w)| Write::Leave {
                worker: id,
                org: w.org,
                why: Gone::Lapsed,
            })
            .collect();
        out.sort_by_key(|w| match w {
            Write::Leave { worker, .. } => *worker,
            _ => 0,
        });
        out
    }

    /// A running task stopped by the broker: if its run was handed to a
    /// worker still alive, that worker's next poll (woken now) kills it.
    /// (Runs a worker ends itself end without a stop.)
    pub(super) fn stop_handed(&mut self, task: TaskId) {
        self.misses.remove(&task);
        self.handed_in.remove(&task);
        let Some((worker, attempt)) = self.handed.remove(&task) else {
            return;
        };
        if self.workers.get(&worker).is_none_or(|w| w.lost) {
            return;
        }
        let public = self.public_id(task);
        self.kills.entry(worker).or_default().push(RunKey {
            task: public,
            attempt,
        });
        self.generation += 1;
    }

    pub(super) fn unrun(&mut self, task: TaskId) {
        if let Some(w) = self.runs_on.remove(&task)
            && let Some(set) = self.running.get_mut(&w)
        {
            set.remove(&task);
        }
    }

    /// Workers alive, for `/metrics`.
    pub fn worker_count(&self) -> usize {
        self.workers.values().filter(|w| !w.lost).count()
    }
}

impl Broker {
    /// A worker joining with `slots` slots: its id, its slots, a session.
    pub(super) fn plan_register(&mut self, org: u32, slots: u32, host: String) -> Reply<Plan> {
        if self.removed_orgs.contains(&org) {
            return Err(ServiceError::Forbidden("this organization was removed".into()));
        }
        if slots == 0 || slots > 4096 {
            return Err(ServiceError::Invalid("`slots`: expected 1 to 4096".into()));
        }
        let id = self.next_worker;
        self.next_worker += 1;
        let first = self.next_slot;
        self.next_slot += slots;
        Ok(Plan {
            events: (0..slots)
                .map(|_| Event::SlotJoin {
                    machine: MachineId(0),
                    owner: OrgId(org),
                })
                .collect(),
            kind: PlanKind::Register {
                id,
                org,
                host,
                first,
                slots,
                lease_ms: self.settings.lease.as_millis() as u64,
                session: crate::identity::new_token(),
            },
        })
    }

    /// A worker's report: runs ended, what it runs that it should not,
    /// and handed runs it did not list ([`MISSED_REPORTS`]).
    pub(super) fn plan_report(&mut self, worker: u64, org: u32, body: ReportRequest) -> Reply<Plan> {
        self.check_worker(worker, org)?;
        if let Some(w) = self.workers.get_mut(&worker) {
            w.short_of_disk = body.short_of_disk;
        }
        let view = self.live.core().view();
        let mine = self.running.get(&worker);
        // The core id of a run this worker is running now.
        let current = |task: u64, attempt: u32| -> Option<TaskId> {
            let (id, _) = self.live_task(task)?;
            (mine.is_some_and(|m| m.contains(&id))
                && view
                    .task(id)
                    .is_some_and(|t| t.is_running() && t.attempts() == attempt))
            .then_some(id)
        };
        let mut events = Vec::new();
        let mut exits = Vec::new();
        let mut ended_runs = Vec::new();
        let mut ended: HashSet<u64> = HashSet::new();
        // The phase each run is in: reported in this body, or before.
        let mut phases: HashMap<u64, Phase> = HashMap::new();
        for r in &body.reports {
            if ended.contains(&r.task) {
                continue; // duplicate: ignored
            }
            let Some(task) = current(r.task, r.attempt) else {
                continue; // late or lost: ignored
            };
            let in_phase = |phases: &HashMap<u64, Phase>| {
                phases
                    .get(&r.task)
                    .copied()
                    .or_else(|| view.task(task).and_then(|t| t.phase()).map(|(p, _)| p))
            };
            match r.event {
                ReportEvent::Phase(p) => {
                    phases.insert(r.task, phase(p));
                    events.push(Event::Phase {
                        task,
                        phase: phase(p),
                    })
                }
                ReportEvent::Exit(code) => {
                    ended.insert(r.task);
                    let limits = self.live_task(r.task).map(|(_, d)| d.limits).unwrap_or_default();
                    let how = match code {
                        _ if r.limit.is_some() => {
                            format!("exit {code}: {}", r.limit.map_or("", |l| l.describe()))
                        }
                        TIME_LIMIT_EXIT if limits.time_limit_ms.is_some() => {
                            format!("exit {code}: its time limit passed")
                        }
                        MEMORY_LIMIT_EXIT if limits.memory_bytes.is_some() => {
                            format!("exit {code}: killed, most likely at its memory limit")
                        }
                        _ => format!("exit {code}"),
                    };
                    let why = (code != 0).then(|| failure_reason(in_phase(&phases), &how));
                    events.push(if code == 0 {
                        Event::Complete { task }
                    } else {
                        Event::Fail { task }
                    });
                    exits.push((r.task, Some(code), None, why));
                    ended_runs.push(r.key());
                }
                ReportEvent::Signal(sig) => {
                    ended.insert(r.task);
                    events.push(Event::Fail { task });
                    let why = failure_reason(in_phase(&phases), &format!("signal {sig}"));
                    exits.push((r.task, None, Some(sig), Some(why)));
                    ended_runs.push(r.key());
                }
            }
        }
        // What it runs that it should not (cancelled, or not its).
        let kill: Vec<RunKey> = body
            .running
            .iter()
            .filter(|r| current(r.task, r.attempt).is_none())
            .copied()
            .collect();
        // Runs handed to it that it does not list (nor end here).
        let listed: HashSet<RunKey> = body.running.iter().copied().collect();
        let mut missed = Vec::new();
        for &id in mine.into_iter().flatten() {
            let Some(&(w, attempt)) = self.handed.get(&id) else {
                continue; // not handed yet
            };
            let public = self.public_id(id);
            let key = RunKey {
                task: public,
                attempt,
            };
            if w != worker || ended.contains(&public) || listed.contains(&key) {
                continue;
            }
            // Written after the worker applied the reply that
            // handed it (by this process: the high bits)?
            let after = body.polled.is_some_and(|p| {
                p >> 32 == self.polls >> 32 && self.handed_in.get(&id).is_some_and(|&h| p >= h)
            });
            if !after {
                continue;
            }
            let n = self.misses.get(&id).filter(|m| m.0 == attempt).map_or(0, |m| m.1) + 1;
            missed.push((id, attempt, n));
            if n < MISSED_REPORTS {
                continue;
            }
            let attempts = view.task(id).map_or(attempt, |t| t.attempts());
            if attempts >= self.settings.max_attempts {
                events.push(Event::Fail { task: id });
                exits.push((
                    public,
                    None,
                    None,
                    Some(lost_reason(attempts, self.settings.max_attempts)),
                ));
            } else {
                events.push(Event::Requeue { task: id });
            }
            tracing::warn!(
                worker,
                task = public,
                attempt,
                "the worker's last {MISSED_REPORTS} reports did not list this run: its assignment was lost; the run goes back to the queue"
            );
        }
        let listed: Vec<TaskId> = listed.iter().filter_map(|r| current(r.task, r.attempt)).collect();
        Ok(Plan {
            events,
            kind: PlanKind::Report {
                worker,
                exits,
                kill,
                missed,
                listed,
                ended_runs,
            },
        })
    }

    /// A worker leaving (or lost): its runs requeued, or failed on their
    /// last allowed attempt, and its slots gone.
    pub(super) fn plan_leave(&mut self, worker: u64, org: u32, why: Gone) -> Reply<Plan> {
        match self.workers.get(&worker) {
            Some(w) if w.org == org && !w.lost => {}
            Some(w) if w.org != org => {
                return Err(ServiceError::Forbidden(format!(
                    "worker {worker} belongs to another organization"
                )));
            }
            Some(_) => return Err(ServiceError::Gone(format!("worker {worker} already left"))),
            None => return Err(ServiceError::NotFound(format!("no worker {worker}"))),
        }
        let view = self.live.core().view();
        let mut events = Vec::new();
        let mut failed = Vec::new();
        for &id in self.running.get(&worker).into_iter().flatten() {
            let Some(t) = view.task(id) else { continue };
            if t.attempts() >= self.settings.max_attempts {
                events.push(Event::Fail { task: id });
                failed.push((
                    self.public_id(id),
                    lost_reason(t.attempts(), self.settings.max_attempts),
                ));
            } else {
                events.push(Event::Requeue { task: id });
            }
        }
        for &slot in &self.workers[&worker].slots {
            events.push(Event::SlotLeave { slot });
        }
        Ok(Plan {
            events,
            kind: PlanKind::Leave { worker, failed, why },
        })
    }

    /// A worker draining: its free slots leave now, the others as their
    /// runs end.
    pub(super) fn plan_drain(&mut self, worker: u64, org: u32) -> Reply<Plan> {
        self.check_worker(worker, org)?;
        let view = self.live.core().view();
        let events = self.workers[&worker]
            .slots
            .iter()
            .filter(|&&s| view.slot_present(s))
            .map(|&slot| Event::SlotDrain { slot })
            .collect();
        Ok(Plan {
            events,
            kind: PlanKind::Drain { worker },
        })
    }

    /// The worker a slot belongs to.
    pub(crate) fn worker_of_slot(&self, slot: SlotId) -> Option<u64> {
        self.slot_worker.get(&slot).copied()
    }

    /// The slots of `worker` in the platform now.
    pub(super) fn present_slots(&self, worker: u64) -> u32 {
        let view = self.live.core().view();
        self.workers.get(&worker).map_or(0, |w| {
            w.slots.iter().filter(|&&s| view.slot_present(s)).count() as u32
        })
    }

    /// The admin holds a worker: its free slots leave now, the others as
    /// their runs end (as a drain), but it stays registered, and a release
    /// gives its slots back.
    pub(super) fn plan_hold_worker(&mut self, worker: u64) -> Reply<Plan> {
        let w = self.live_worker(worker)?;
        if w.held {
            return Err(ServiceError::Conflict(format!("worker {worker} is already held")));
        }
        if w.draining {
            return Err(ServiceError::Conflict(format!(
                "worker {worker} drains: it leaves once its runs end"
            )));
        }
        let view = self.live.core().view();
        let events = w
            .slots
            .iter()
            .filter(|&&s| view.slot_present(s) && !view.slot_draining(s))
            .map(|&slot| Event::SlotDrain { slot })
            .collect();
        Ok(Plan {
            events,
            kind: PlanKind::HoldWorker(worker),
        })
    }

    /// The admin releases a held worker: its slots join again, as many as
    /// have left now, the others as their runs end.
    pub(super) fn plan_release_worker(&mut self, worker: u64) -> Reply<Plan> {
        if !self.live_worker(worker)?.held {
            return Err(ServiceError::Conflict(format!("worker {worker} is not held")));
        }
        Ok(Plan {
            events: Vec::new(),
            kind: PlanKind::ReleaseWorker(worker),
        })
    }

    /// Worker `worker`, if it has not left.
    pub(super) fn live_worker(&self, worker: u64) -> Reply<&Worker> {
        match self.workers.get(&worker) {
            Some(w) if !w.lost => Ok(w),
            Some(_) => Err(ServiceError::Gone(format!("worker {worker} already left"))),
            None => Err(ServiceError::NotFound(format!("no worker {worker}"))),
        }
    }

    /// Slots joining for released workers, as many as each lacks; a
    /// worker none of whose slots drains any more is done with.
    pub(super) fn plan_rejoin(&mut self) -> Vec<Plan> {
        if !std::mem::take(&mut self.rejoin_check) {
            return Vec::new();
        }
        let mut plans = Vec::new();
        let mut done = Vec::new();
        for &worker in &self.rejoin {
            let Some(w) = self
                .workers
                .get(&worker)
                .filter(|w| !w.lost && !w.held && !w.draining)
            else {
                done.push(worker);
                continue;
            };
            let view = self.live.core().view();
            let present = w.slots.iter().filter(|&&s| view.slot_present(s)).count() as u32;
            let still_draining = w.slots.iter().any(|&s| view.slot_draining(s));
            let n = w.capacity.saturating_sub(present);
            if !still_draining {
                done.push(worker);
            }
            if n == 0 {
                continue;
            }
            let first = self.next_slot;
            self.next_slot += n;
            plans.push(Plan {
                events: (0..n)
                    .map(|_| Event::SlotJoin {
                        machine: MachineId(0),
                        owner: OrgId(w.org),
                    })
                    .collect(),
                kind: PlanKind::Rejoin { worker, first, n },
            });
        }
        for w in done {
            self.rejoin.remove(&w);
        }
        plans
    }
}
