//! Held tasks' release and cancellation (see the module docs of
//! [`super`]): a held task whose parents all completed enters the core; one
//! with a parent that ended otherwise is cancelled, with its held
//! descendants ([`Broker::settle`]).

use super::hold::Room;
use super::{Broker, Plan, PlanKind};
use fairsched_core::{Event, TaskId, TaskSpec};
use std::collections::HashSet;

/// Why a held task is cancelled when its parent `parent` ended so.
pub(super) fn parent_reason(parent: u64, state: &str) -> String {
    match state {
        "failed" => format!("parent task {parent} failed"),
        s => format!("parent task {parent} was {s}"),
    }
}

impl Broker {
    /// Held tasks are waiting to be released or cancelled (a commit that
    /// failed is tried again at the next batch).
    pub fn unsettled(&self) -> bool {
        !self.ready.is_empty()
            || !self.doomed.is_empty()
            || !self.recheck_users.is_empty()
            || !self.recheck_orgs.is_empty()
            || self.rejoin_check
    }

    /// Releases held tasks whose parents have all completed (a step
    /// submitting them to the core) and cancels those with a parent that
    /// ended otherwise, with their held descendants (in the tables only),
    /// until nothing is left to do; one commit per round. A failed commit
    /// leaves them for the next batch.
    pub fn settle(&mut self) {
        while self.unsettled() {
            let now = self.clock();
            let plans = self.plan_settle();
            if plans.is_empty() {
                continue;
            }
            let replies = self.commit(plans.into_iter().map(Ok).collect(), now, false);
            if let Some(Err(e)) = replies.iter().find(|r| r.is_err()) {
                tracing::warn!(
                    "releasing or cancelling held workflow tasks: {}; tried again at the next batch",
                    e.message()
                );
                self.rejoin_check = !self.rejoin.is_empty();
                return;
            }
        }
    }

    /// Held tasks to cancel from `stack` (task, why), with their held
    /// descendants.
    pub(super) fn doom(&self, stack: &mut Vec<(u64, Option<String>)>, out: &mut Vec<(u64, Option<String>)>) {
        let mut seen = HashSet::new();
        while let Some((id, why)) = stack.pop() {
            if !self.held.contains_key(&id) || !seen.insert(id) {
                continue;
            }
            for &k in self.children.get(&id).into_iter().flatten() {
                stack.push((k, Some(parent_reason(id, "cancelled"))));
            }
            out.push((id, why));
        }
    }

    /// The plans of one round of [`Broker::settle`] (none when what was
    /// pending no longer applies: its tasks ended meanwhile).
    pub(super) fn plan_settle(&mut self) -> Vec<Plan> {
        self.promote_throttled();
        let mut cancel = Vec::new();
        let mut stack: Vec<(u64, Option<String>)> = self
            .doomed
            .iter()
            .rev()
            .map(|(id, why)| (*id, Some(why.clone())))
            .collect();
        self.doom(&mut stack, &mut cancel);
        let cancelled: HashSet<u64> = cancel.iter().map(|c| c.0).collect();
        let ready: Vec<u64> = self
            .ready
            .iter()
            .copied()
            .filter(|id| self.held.contains_key(id) && !cancelled.contains(id))
            .collect();
        // What no longer applies goes.
        let held = &self.held;
        self.ready
            .retain(|id| held.contains_key(id) && !cancelled.contains(id));
        if cancel.is_empty() {
            self.doomed.clear();
        }
        let mut events = Vec::with_capacity(ready.len());
        let mut release = Vec::with_capacity(ready.len());
        let mut room = Room::default();
        for id in ready {
            let (user, org) = (self.held[&id].user, self.held[&id].org);
            if !self.take_room(&mut room, user, org) {
                self.throttle(id, user, org);
                continue;
            }
            let core = TaskId(self.take_id());
            let h = &self.held[&id];
            let mut spec = TaskSpec::new(core.0, h.user, h.org);
            spec.priority = h.priority;
            spec.optional = h.optional;
            spec.workflow = h.workflow;
            release.push((id, core, h.user));
            events.push(Event::Submit(spec));
            // Known before the commit: an end in the same step (a
            // rejection) is written under the public id.
            self.public_of.insert(core, id);
        }
        let mut plans = Vec::new();
        if !release.is_empty() {
            plans.push(Plan {
                events,
                kind: PlanKind::Release(release),
            });
        }
        if !cancel.is_empty() {
            plans.push(Plan {
                events: Vec::new(),
                kind: PlanKind::Withdraw { cancel, asked: None },
            });
        }
        plans.extend(self.plan_rejoin());
        plans
    }
}
