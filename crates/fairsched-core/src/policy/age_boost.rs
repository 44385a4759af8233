//! `age-boost[after=…,by=…]`: a Control policy that raises the priority of
//! a task by `by` each time it has waited another `after` since it was
//! queued (or requeued), driven by timer events. Combine it with a
//! priority-aware order (`priority`) to bound how long low-priority tasks
//! can starve.
//!
//! Cost, exactly: one priority change per waiting task per `after` it
//! waits, Σ ⌊wait / after⌋ over a run (a task that starts before its next
//! crossing gets no change for it), each O(1) here plus the order's
//! re-keying. Pending crossings are kept in one FIFO calendar: each is due
//! `after` after the instant it was scheduled at, and instants never
//! decrease, so the calendar is sorted by construction. When a timer
//! fires, only the crossings due then are visited, never the whole queue,
//! and tasks due at the same instant (the parts of a split job, a burst of
//! submissions) share one timer instead of one each.
//!
//! What no implementation of this rule can bound is the number of
//! crossings: on a platform far too small for its workload the waits, and
//! so the changes, grow with the queue. README example 3 on 2 + 4 + 8
//! processors instead of its 100 has tasks waiting 52·10^6 s on average,
//! 1.9·10^10 crossings of 10 min. Size `after` to the waits you expect.

use crate::event::Notice;
use crate::ids::TaskId;
use crate::point::{Control, ControlOut};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, Picks, SpecError};
use crate::snapshot::snapshot_policy;
use crate::state::View;
use crate::time::Time;
use alloc::collections::VecDeque;
use serde::{Deserialize, Serialize};

pub const NAME: &str = "age-boost";

pub const ENTRY: Entry = Entry {
    name: NAME,
    doc: "raise a waiting task's priority by `by` every `after` it keeps waiting (timer-driven aging)",
    params: &[
        ParamDoc {
            name: "after",
            default: "600",
            doc: "waiting time before each boost (s; or 10m, 1h, 250ms)",
        },
        ParamDoc {
            name: "by",
            default: "1",
            doc: "priority added at each boost",
        },
    ],
    parallel: true,
    orgs: false,
    picks: Picks::Priority,
    build: Ctor::control(from_params),
};

fn from_params(p: &Params) -> Result<Box<dyn Control>, SpecError> {
    let after = p.duration("after")?;
    if after <= Time::ZERO {
        return Err(SpecError::BadValue {
            policy: NAME.into(),
            key: "after".into(),
            value: "0".into(),
            reason: "must be positive".into(),
        });
    }
    Ok(Box::new(AgeBoost {
        after,
        by: p.i64("by")?,
        due: FxHashMap::default(),
        calendar: VecDeque::new(),
        last_timer: None,
    }))
}

/// The token of this Control's timers (it needs no other).
const TICK: u64 = 0;

/// See the module docs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgeBoost {
    after: Time,
    by: i64,
    /// When each waiting task's next boost is due. A calendar entry whose
    /// instant is not its task's `due` is stale (the task started, left or
    /// was requeued since): it is dropped when it comes due.
    #[serde(with = "crate::snapshot::sorted_map")]
    due: FxHashMap<TaskId, Time>,
    /// `(due, task)` in the order scheduled, which is non-decreasing `due`
    /// order: each is `now + after` at an instant `now` that never goes back.
    calendar: VecDeque<(Time, TaskId)>,
    /// The latest instant a timer was asked for: crossings due at the same
    /// instant share it.
    last_timer: Option<Time>,
}

impl AgeBoost {
    /// The task's next crossing is `after` from now; a timer is pending at
    /// every instant a crossing was scheduled for (so the core steps at the
    /// same instants as with one timer per task and crossing, and the
    /// decisions are the same: `tests/sim/age_boost_model.rs` in fairsched-sim).
    fn schedule(&mut self, task: TaskId, now: Time, out: &mut ControlOut) {
        let at = now + self.after;
        self.due.insert(task, at);
        self.calendar.push_back((at, task));
        if self.last_timer != Some(at) {
            self.last_timer = Some(at);
            out.timers.push((at, TICK));
        }
    }
}

impl Control for AgeBoost {
    snapshot_policy!(NAME, config: after, by);
    fn react(&mut self, view: &View, notices: &[Notice], _timers: &[u64], out: &mut ControlOut) {
        let now = view.now();
        for n in notices {
            match *n {
                Notice::Queued { task, .. } | Notice::Requeued { task, .. } => {
                    self.schedule(task, now, out);
                }
                Notice::Started { task, .. } | Notice::Left { task, .. } => {
                    self.due.remove(&task);
                }
                _ => {}
            }
        }
        // The crossings due by now, in the order they were scheduled (the
        // order per-task timers would fire in); never the whole queue. A
        // timer was pending at each instant, so in a simulation each is due
        // exactly now; a live driver may deliver a timer late, and the next
        // crossing is then counted from now (the calendar stays sorted).
        while let Some(&(at, task)) = self.calendar.front() {
            if at > now {
                break;
            }
            self.calendar.pop_front();
            if self.due.get(&task) != Some(&at) {
                continue; // stale
            }
            match view.task(task) {
                Some(t) if !t.is_running() => {
                    out.priorities.push((task, t.priority().saturating_add(self.by)));
                    self.schedule(task, now, out);
                }
                _ => {
                    self.due.remove(&task);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fairsched_sim::harness::Harness;

    #[test]
    fn an_old_low_priority_task_overtakes_newer_high_priority_ones() {
        // One slot busy until t=100 with task 1. Task 2 (priority 1) at t=1;
        // tasks 3, 4 (priority 2) at t=50 and 60. Without aging, 3 and 4 go
        // first; with after=30s task 2 is boosted at t=31 (→2) and t=61 (→3).
        let base = Harness::pool(1, "priority")
            .task(1, 0, 100)
            .task(2, 1, 10)
            .task_prio(3, 50, 10, 2)
            .task_prio(4, 60, 10, 2);
        assert_eq!(base.clone().run().order(), vec![1, 3, 4, 2]);
        let aged = base.control("age-boost[after=30,by=1]").run();
        assert_eq!(aged.order(), vec![1, 2, 3, 4]);
        // Boosts: task 2 at 31, 61, 91; task 3 at 80 and 110 (the timer
        // fires before that instant's dispatch); task 4 at 90 and 120.
        assert_eq!(aged.priority_actions(), 7);
    }

    #[test]
    fn one_change_per_crossing_and_one_timer_per_crossing_instant() {
        // One slot busy until t=100; tasks 2..=6 (a burst, like the parts
        // of a split job) queued at t=1, 10 s each: they start at 100, 110,
        // 120, 130, 140, after waits of 99, 109, 119, 129, 139 s. With
        // after=30 each gets ⌊wait/30⌋ boosts: 3+3+3+4+4 = 17, at 31, 61,
        // 91 (all five) and 121 (tasks 5 and 6; 4 started at 120).
        let mut h = Harness::pool(1, "priority").task(1, 0, 100);
        for id in 2..=6 {
            h = h.task(id, 1, 10);
        }
        let r = h.control("age-boost[after=30,by=1]").run();
        assert_eq!(r.order(), vec![1, 2, 3, 4, 5, 6]);
        let waits: i64 = r.starts().iter().skip(1).map(|&(_, at)| (at - 1) / 30).sum();
        assert_eq!(waits, 17);
        assert_eq!(r.priority_actions(), 17);
        // One timer per instant a crossing was scheduled for, shared by the
        // burst: 30 (task 1's, set when it was queued at 0, before it
        // started), 31, 61, 91, 121 and 151 (tasks 5 and 6, which start
        // first). Not one per task per crossing (6 + 17 = 23).
        assert_eq!(r.timers(), vec![30, 31, 61, 91, 121, 151]);
    }
}
