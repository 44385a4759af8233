//! `GET /v1/tasks/ID/explain`: why a task is not running (or where it
//! runs), with the policies' fairness state that concerns it.

use super::{Broker, Reply};
use crate::api::TaskOut;
use crate::identity::Principal;
use fairsched_core::Kind;
use fairsched_core::registry::Picks;
use std::collections::{BTreeMap, HashMap};

impl Broker {
    /// Why task `id` is not running (or where it runs), with its user's
    /// satisfaction and, while it has not ended, the policies' fairness
    /// state that concerns it.
    pub fn explain(&self, who: &Principal, id: u64) -> Reply<serde_json::Value> {
        let t = self.task(who, id)?;
        let mut v = self.explain_state(&t, id)?;
        v["user_satisfaction"] = serde_json::json!(self.satisfaction(t.user));
        if let Some(w) = t.workflow {
            v["workflow"] = serde_json::json!(w);
        }
        let orgs = self.org_names();
        v["org"] = serde_json::json!(t.org);
        if let Some(name) = orgs.get(&t.org) {
            v["org_name"] = serde_json::json!(name);
        }
        if matches!(t.state.as_str(), "held" | "waiting" | "running") {
            v["fairness"] = serde_json::Value::Object(self.fairness(t.org, &orgs));
        }
        Ok(v)
    }

    /// The policies' gauges (what `/metrics` shows as `fairsched_policy_*`)
    /// that concern organization `org`: those about no one in particular
    /// under their name, those about `org` as `its_NAME`, and every
    /// organization's as `NAME_by_org` (by organization name), to compare.
    /// An organization a policy has recorded nothing for yet (none of its
    /// tasks has started) counts 0, as the policies count it (fair-share's
    /// usage, DIRECTCONTR's φ and ψ).
    pub(super) fn fairness(
        &self,
        org: u32,
        names: &HashMap<u32, String>,
    ) -> serde_json::Map<String, serde_json::Value> {
        let name_of = |o: u32| names.get(&o).cloned().unwrap_or_else(|| o.to_string());
        let mut out = serde_json::Map::new();
        let mut by_org: BTreeMap<&'static str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
        for g in self.live.core().gauges() {
            match g.key {
                None => {
                    out.insert(g.name.to_string(), serde_json::json!(g.value));
                }
                Some(("org", o)) => {
                    by_org
                        .entry(g.name)
                        .or_default()
                        .insert(name_of(o as u32), serde_json::json!(g.value));
                    if o == org as i64 {
                        out.insert(format!("its_{}", g.name), serde_json::json!(g.value));
                    }
                }
                Some(_) => {}
            }
        }
        for (name, mut all) in by_org {
            out.entry(format!("its_{name}")).or_insert(serde_json::json!(0.0));
            for &o in names.keys() {
                all.entry(name_of(o)).or_insert(serde_json::json!(0.0));
            }
            out.insert(format!("{name}_by_org"), serde_json::Value::Object(all));
        }
        out
    }

    /// How the order policy `spec` picks, from its registry entry (a
    /// policy the registry does not know: by priority, as the queue count
    /// assumes).
    pub(super) fn picks(&self, spec: &str) -> Picks {
        let name = spec.split('[').next().unwrap_or(spec).trim();
        self.settings
            .registry
            .entry(Kind::Order, name)
            .map_or(Picks::Priority, |e| e.picks)
    }

    pub(super) fn explain_state(&self, t: &TaskOut, id: u64) -> Reply<serde_json::Value> {
        let cfg = self.live.store().config();
        let policy = serde_json::json!({
            "order": cfg.order, "allocate": cfg.allocate, "control": cfg.control,
        });
        if let Some(why) = self.held_reason(id) {
            return Ok(serde_json::json!({
                "task": id, "state": "held", "policy": policy, "reason": why,
                "why": format!("it is {why}"),
            }));
        }
        if let Some(h) = self.held.get(&id) {
            let parents: Vec<(u64, String)> = h.parents.iter().map(|&p| (p, self.state_of(p))).collect();
            let waiting: Vec<&(u64, String)> = parents.iter().filter(|(_, s)| s != "completed").collect();
            let list: Vec<String> = waiting.iter().map(|(p, s)| format!("task {p} ({s})")).collect();
            return Ok(serde_json::json!({
                "task": id, "state": "held", "policy": policy,
                "parents": parents.iter().map(|(p, s)| serde_json::json!({"task": p, "state": s})).collect::<Vec<_>>(),
                "waiting_for": waiting.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
                "why": format!(
                    "it is held until its parents complete: it waits for {}",
                    list.join(", ")
                ),
            }));
        }
        let view = self.live.core().view();
        let tv = self.live_task(id).and_then(|(core, _)| view.task(core));
        let Some(tv) = tv else {
            let why = match &t.reason {
                Some(r) => format!("it has ended ({}: {r})", t.state),
                None => format!("it has ended ({})", t.state),
            };
            return Ok(serde_json::json!({
                "task": id, "state": t.state, "policy": policy, "reason": t.reason,
                "why": why,
            }));
        };
        if tv.is_running() {
            let w = tv
                .held_slots()
                .first()
                .and_then(|s| self.slot_worker.get(s))
                .copied();
            // Handed to a worker that holds it for want of disk space (it
            // has reported no phase of it yet).
            let short = w
                .and_then(|w| self.short_of_disk(w))
                .filter(|_| tv.phase().is_none());
            let why = match (short, w) {
                (Some(free), Some(w)) => format!(
                    "it was handed to worker {w}, which is short of disk space ({free} bytes free, below its --min-free-disk): it starts there once space is freed"
                ),
                _ => "it is running".to_string(),
            };
            return Ok(serde_json::json!({
                "task": id, "state": "running", "policy": policy, "worker": w,
                "attempts": tv.attempts(),
                "why": why,
            }));
        }
        // Ahead of it under priority, then submission order; and in
        // submission order alone.
        let (prio, seq) = (tv.priority(), tv.seq());
        let mut ahead = 0u64;
        let mut earlier = 0u64;
        let mut ahead_same_user = 0u64;
        let mut user_running = 0u64;
        let mut org_running = 0u64;
        for other in self.live.core().live_task_ids() {
            let Some(o) = view.task(other) else { continue };
            if o.is_running() {
                if o.spec().user() == tv.spec().user() {
                    user_running += 1;
                }
                if o.org() == tv.org() {
                    org_running += 1;
                }
                continue;
            }
            if o.seq() < seq {
                earlier += 1;
            }
            if o.priority() > prio || (o.priority() == prio && o.seq() < seq) {
                ahead += 1;
                if o.spec().user() == tv.spec().user() {
                    ahead_same_user += 1;
                }
            }
        }
        let free = view.total_slots() as u64 - view.busy_slots();
        let order = &cfg.order;
        let why = if view.total_slots() == 0 {
            let (held, draining) = self
                .workers
                .values()
                .filter(|w| !w.lost)
                .fold((0, 0), |(h, d), w| {
                    (h + u32::from(w.held), d + u32::from(w.draining))
                });
            if held + draining > 0 {
                format!(
                    "there are no slots: every worker is held ({held}) or draining ({draining}) (`fairsched admin worker release ID` lets a held one take tasks again)"
                )
            } else {
                "no worker has joined: there are no slots".to_string()
            }
        } else if free == 0 {
            let slots = view.total_slots();
            match self.picks(order) {
                Picks::Submission => format!(
                    "all {slots} slots are busy; {earlier} waiting task(s) were submitted before it, and the `{order}` policy starts them first"
                ),
                Picks::Priority => format!(
                    "all {slots} slots are busy; {ahead} waiting task(s) are ahead of it by priority then submission order, and the `{order}` policy starts them first"
                ),
                Picks::Weighs(what) => format!(
                    "all {slots} slots are busy; {ahead} waiting task(s) are ahead of it by priority then submission order, but the `{order}` policy may pick differently: {what} (see `fairness`)"
                ),
            }
        } else {
            match self.picks(order) {
                Picks::Weighs(_) => format!(
                    "{free} slot(s) are free but the `{order}` policy keeps it waiting (its user or organization is ahead of its fair share)"
                ),
                _ => format!(
                    "{free} slot(s) are free: the `{order}` policy starts it at the broker's next decision"
                ),
            }
        };
        Ok(serde_json::json!({
            "task": id, "state": "waiting", "policy": policy,
            "priority": prio,
            "ahead_by_priority_then_fifo": ahead,
            "ahead_in_submission_order": earlier,
            "ahead_of_same_user": ahead_same_user,
            "user_running": user_running,
            "org": tv.org().0,
            "org_running": org_running,
            "org_slots": view.org_slots(tv.org()),
            "slots": view.total_slots(),
            "free_slots": free,
            "waiting_since_ms": tv.submit().millis(),
            "why": why,
        }))
    }
}
