//! `age-boost[after=…,by=…]`: a Control policy that raises the priority of
//! a task by `by` each time it has waited another `after` since it was
//! queued, driven by timer events. Combine it with a priority-aware order
//! (`priority`) to bound how long low-priority tasks can starve.
//!
//! Cost: one timer event per waiting task per `after`. On a platform far
//! too small for its workload (queues of 10^5 tasks waiting for months)
//! that is billions of events: size `after` to the waits you expect.

use crate::event::Notice;
use crate::ids::TaskId;
use crate::point::{Control, ControlOut};
use crate::prelude::*;
use crate::registry::{Ctor, Entry, ParamDoc, Params, SpecError};
use crate::state::View;
use crate::time::Time;

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
    build: Ctor::Control(from_params),
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
    }))
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct AgeBoost {
    after: Time,
    by: i64,
    /// When each waiting task's next boost is due; a timer whose task is
    /// not due at that instant is stale (the task started or was requeued).
    due: FxHashMap<TaskId, Time>,
}

impl Control for AgeBoost {
    fn react(&mut self, view: &View, notices: &[Notice], timers: &[u64], out: &mut ControlOut) {
        let now = view.now();
        for n in notices {
            match *n {
                Notice::Queued { task, .. } | Notice::Requeued { task, .. } => {
                    let at = now + self.after;
                    self.due.insert(task, at);
                    out.timers.push((at, task.0));
                }
                Notice::Started { task, .. } | Notice::Left { task, .. } => {
                    self.due.remove(&task);
                }
                _ => {}
            }
        }
        for &token in timers {
            let task = TaskId(token);
            if self.due.get(&task) != Some(&now) {
                continue;
            }
            match view.task(task) {
                Some(t) if !t.is_running() => {
                    out.priorities.push((task, t.priority().saturating_add(self.by)));
                    let at = now + self.after;
                    self.due.insert(task, at);
                    out.timers.push((at, token));
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
}
