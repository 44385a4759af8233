//! The JSON bodies of the user and admin endpoints (docs/protocol.md);
//! the worker protocol's are `fairsched_worker::wire`. The broker decodes
//! requests strictly (an unknown field is a 400 naming it); clients read
//! replies leniently.

use serde::{Deserialize, Serialize};

/// Most tasks one submission may carry.
pub const MAX_TASKS_PER_SUBMIT: usize = 100_000;

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
}

/// `POST /v1/tasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    pub tasks: Vec<NewTask>,
    /// The organization to charge: only the caller's own is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitReply {
    pub ids: Vec<u64>,
}

/// A task as its owner sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskOut {
    pub id: u64,
    pub name: String,
    pub user: i64,
    pub org: u32,
    /// `waiting`, `running`, `completed`, `failed`, `cancelled`, `killed`.
    pub state: String,
    pub attempts: u32,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub submit_ms: i64,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub command: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksReply {
    pub tasks: Vec<TaskOut>,
}

/// `GET /v1/status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReply {
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
