//! The JSON bodies of the user and admin endpoints (docs/protocol.md);
//! the worker protocol's are [`crate::wire`]. The broker decodes
//! requests strictly (an unknown field is a 400 naming it); clients read
//! replies leniently.

use serde::{Deserialize, Serialize};

/// Most tasks one submission may carry.
pub const MAX_TASKS_PER_SUBMIT: usize = 100_000;

/// The longest `Idempotency-Key` the broker accepts.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// One task of a submission.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_in: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_out: Option<String>,
    /// Higher runs first under the `priority` policy (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Diet-ethic: an optional (as opposed to mandatory) request; the
    /// `diet-ethic` policy runs mandatory requests first and kills an
    /// optional run to start a waiting mandatory one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// With a `workflow`: the task's activity, an index into
    /// [`WorkflowSpec::activities`] (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<u32>,
    /// With a `workflow`: the tasks of the same request it depends on, by
    /// index (each smaller than its own). It is held, not queued, until
    /// every one of them has completed; if one ends otherwise, it is
    /// cancelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
    /// The longest a run may take (ms): the worker kills it then, and it
    /// fails with exit code 124. At most the broker's `--max-time-limit`,
    /// which is also the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// The most memory (bytes) a run may take: all its processes together
    /// on a worker with a memory cgroup (beyond it the run is killed and
    /// fails with exit code 137), else the address space of each of its
    /// processes. At most the broker's `--max-memory`, also the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Per-run limits lower than its worker's (`fairsched worker
    /// --max-processes …`): a run gets the lower of the two of each.
    #[serde(default, skip_serializing_if = "RunCaps::is_none")]
    pub caps: RunCaps,
}

/// The fewest processes a task may limit its runs to: the task guard, its
/// shell and a pipeline's few (below it a run fails to fork at once,
/// before the worker can name the limit).
pub const MIN_RUN_PROCESSES: u64 = 16;

/// The fewest open files a task may limit its runs' processes to: the
/// shell's own and its redirections' need about ten.
pub const MIN_RUN_OPEN_FILES: u64 = 16;

/// A task's own per-run limits, each at most its worker's (`fairsched
/// worker --max-processes --max-open-files --max-disk --max-output`): a
/// run gets the lower of the two. Absent: the worker's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCaps {
    /// Processes (and threads) of the run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Open files of each of its processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
    /// Bytes in its run directory (and of each file it writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    /// Bytes of its `stdout` and `stderr` together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
}

impl RunCaps {
    /// Whether it sets none.
    pub fn is_none(&self) -> bool {
        *self == RunCaps::default()
    }

    /// A limit below the least a run can start with: its name, value and
    /// that least ([`MIN_RUN_PROCESSES`], [`MIN_RUN_OPEN_FILES`], 1 byte).
    pub fn too_low(&self) -> Option<(&'static str, u64, u64)> {
        [
            (self.processes, "processes", MIN_RUN_PROCESSES),
            (self.open_files, "open_files", MIN_RUN_OPEN_FILES),
            (self.disk_bytes, "disk_bytes", 1),
            (self.output_bytes, "output_bytes", 1),
        ]
        .into_iter()
        .find_map(|(v, name, min)| v.filter(|&v| v < min).map(|v| (name, v, min)))
    }
}

/// A request's tasks as one workflow (a DAG of tasks of a few activities).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    pub name: String,
    /// Activity names; [`NewTask::activity`] indexes this list.
    pub activities: Vec<String>,
}

/// `POST /v1/tasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    pub tasks: Vec<NewTask>,
    /// The organization to charge: only the caller's own is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    /// The whole request is one workflow: the broker gives it an id, and
    /// its tasks may depend on each other (`after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowSpec>,
}

/// Most activities one workflow may name, and the longest name.
pub const MAX_ACTIVITIES: usize = 10_000;
pub const MAX_NAME_LEN: usize = 256;
/// The longest command, `stage_in` or `stage_out` accepted (bytes): 128
/// KiB less one. A worker hands a script to `sh -c` as one argument, and
/// Linux refuses an argument of 128 KiB or more, its final NUL included
/// (`MAX_ARG_STRLEN`): a longer one would be accepted here and fail on the
/// worker.
pub const MAX_SCRIPT_LEN: usize = 128 * 1024 - 1;

/// A script field of a task: within [`MAX_SCRIPT_LEN`], and no NUL byte
/// (no C string, hence no `sh` argument, holds one).
fn check_script(field: &str, script: &str) -> Result<(), String> {
    if script.len() > MAX_SCRIPT_LEN {
        return Err(format!(
            "{field}: {} bytes, at most {MAX_SCRIPT_LEN} (put a long script in a file and run that)",
            script.len()
        ));
    }
    if script.contains('\0') {
        return Err(format!("{field}: holds a NUL byte, which no shell command can"));
    }
    Ok(())
}

impl SubmitRequest {
    /// What the broker refuses before anything is logged (the reason names
    /// the field, like a decoding error).
    pub fn check(&self) -> Result<(), String> {
        check_tasks(&self.tasks, self.workflow.as_ref())
    }
}

/// [`SubmitRequest::check`] on its parts.
pub fn check_tasks(tasks: &[NewTask], workflow: Option<&WorkflowSpec>) -> Result<(), String> {
    if tasks.is_empty() {
        return Err("tasks: at least one task".into());
    }
    if tasks.len() > MAX_TASKS_PER_SUBMIT {
        return Err(format!("tasks: at most {MAX_TASKS_PER_SUBMIT} per request"));
    }
    if let Some(w) = workflow {
        if w.name.len() > MAX_NAME_LEN {
            return Err(format!("workflow.name: at most {MAX_NAME_LEN} bytes"));
        }
        if w.activities.is_empty() {
            return Err("workflow.activities: at least one activity".into());
        }
        if w.activities.len() > MAX_ACTIVITIES {
            return Err(format!("workflow.activities: at most {MAX_ACTIVITIES}"));
        }
        if let Some(i) = w.activities.iter().position(|a| a.len() > MAX_NAME_LEN) {
            return Err(format!("workflow.activities[{i}]: at most {MAX_NAME_LEN} bytes"));
        }
    }
    for (i, t) in tasks.iter().enumerate() {
        if t.command.trim().is_empty() {
            return Err(format!("tasks[{i}].command: empty"));
        }
        check_script(&format!("tasks[{i}].command"), &t.command)?;
        if let Some(s) = &t.stage_in {
            check_script(&format!("tasks[{i}].stage_in"), s)?;
        }
        if let Some(s) = &t.stage_out {
            check_script(&format!("tasks[{i}].stage_out"), s)?;
        }
        if let Some(n) = &t.name
            && (n.len() > MAX_NAME_LEN || n.chars().any(char::is_control))
        {
            return Err(format!(
                "tasks[{i}].name: at most {MAX_NAME_LEN} bytes, no control characters"
            ));
        }
        match workflow {
            None => {
                if t.activity.is_some() {
                    return Err(format!("tasks[{i}].activity: only in a request with `workflow`"));
                }
                if !t.after.is_empty() {
                    return Err(format!("tasks[{i}].after: only in a request with `workflow`"));
                }
            }
            Some(w) => {
                let a = t.activity.unwrap_or(0) as usize;
                if a >= w.activities.len() {
                    return Err(format!(
                        "tasks[{i}].activity: {a} is not an index of workflow.activities (it has {})",
                        w.activities.len()
                    ));
                }
                if let Some(&p) = t.after.iter().find(|&&p| p as usize >= i) {
                    return Err(format!(
                        "tasks[{i}].after: {p} is not the index of an earlier task of the request (parents come first)"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitReply {
    pub ids: Vec<u64>,
    /// The workflow's id, when the request was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<u32>,
}

/// A task as its owner sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskOut {
    pub id: u64,
    pub name: String,
    pub user: i64,
    pub org: u32,
    /// `held` (a workflow task whose parents have not all completed, a
    /// task on hold, or one over its user's running quota: `reason` says
    /// which), `waiting`, `running`, `completed`, `failed`, `cancelled`,
    /// `killed`, `rejected`.
    pub state: String,
    pub attempts: u32,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub submit_ms: i64,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub command: String,
    /// Its workflow, if it was submitted as part of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<u32>,
    /// Why it ended without running, when the broker ended it (e.g. a
    /// workflow task whose parent failed); why a held task is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Tasks a `GET /v1/tasks` page holds when it gives no `limit`.
pub const TASKS_PAGE: u32 = 1000;
/// The largest `limit` of a `GET /v1/tasks` page.
pub const MAX_TASKS_PAGE: u32 = 10_000;

/// `GET /v1/tasks?after=ID&limit=N`: one page of tasks, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksReply {
    pub tasks: Vec<TaskOut>,
    /// The admin's list only: the name of each user who has tasks in it,
    /// by user id (`TaskOut::user`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub users: std::collections::BTreeMap<i64, String>,
    /// The `after` of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<u64>,
}

/// `GET /v1/status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReply {
    /// Workflow tasks waiting for their parents (not queued yet).
    #[serde(default)]
    pub held: u64,
    pub waiting: u64,
    pub running: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub killed: u64,
    pub rejected: u64,
    pub workers: u64,
    pub slots: u64,
    pub busy_slots: u64,
    /// Workers that start no run for want of disk space (below their
    /// `--min-free-disk`): the tasks handed to them wait there.
    #[serde(default)]
    pub workers_short_of_disk: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrgRequest {
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrgReply {
    pub id: u32,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserRequest {
    pub name: String,
    pub org: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserReply {
    pub id: i64,
    pub name: String,
    pub org: String,
    pub token: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerTokenRequest {
    pub org: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenReply {
    pub org: String,
    pub token: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

/// `POST /v1/admin/users/rotate`, `/v1/admin/users/remove`,
/// `/v1/admin/orgs/remove`: the user or organization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameRequest {
    pub name: String,
}

/// `POST /v1/admin/tokens/revoke`: a leaked token (a user's, or a worker
/// token of an organization).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    pub token: String,
}

/// Reply to [`RevokeRequest`]: whose it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeReply {
    pub revoked: String,
}

/// Reply to `POST /v1/admin/worker-tokens/revoke`: how many of the
/// organization's worker tokens no longer work (its registered workers
/// keep their sessions: evict them for that).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokedReply {
    pub org: String,
    pub revoked: u64,
}

/// Reply to a removal: its tokens are revoked, these of its tasks were
/// cancelled, these workers evicted (an organization's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedReply {
    pub name: String,
    pub cancelled: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<u64>,
}

/// `POST /v1/admin/quotas`: the most tasks a user, or all the users of an
/// organization together, may have queued (waiting or held) at once, and
/// in the scheduler at once (waiting or running: so at most that many
/// run). The request sets both: an absent or `null` field sets no limit of
/// its kind, and with both absent the quota is lifted. A submission that
/// would pass `max_queued` is refused (429); tasks past `max_running` wait
/// held (their `reason` says so) and enter the scheduler, oldest first, as
/// the user's others end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaRequest {
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub org: Option<String>,
    #[serde(default)]
    pub max_queued: Option<u64>,
    #[serde(default)]
    pub max_running: Option<u64>,
}

/// One quota in force (`GET /v1/admin/quotas`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queued: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<u64>,
}

/// `GET /v1/admin/quotas`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotasReply {
    pub quotas: Vec<Quota>,
}

/// `POST /v1/admin/users/run-as`: the local account user `name`'s tasks
/// run as on workers started with `--run-as-user` (`null`: none; such a
/// worker then refuses its tasks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunAsRequest {
    pub name: String,
    pub account: Option<String>,
}

/// Reply to [`RunAsRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAsReply {
    pub name: String,
    pub account: Option<String>,
}
