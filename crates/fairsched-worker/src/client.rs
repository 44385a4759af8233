//! The worker side of the HTTP protocol: one blocking call per endpoint,
//! each reply sorted into what the agent should do about it.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wire::{
    DrainReply, ErrorReply, OutputRequest, PollReply, PollRequest, RegisterReply, RegisterRequest,
    ReportReply, ReportRequest, WorkerId,
};

/// Why a call did not give a usable reply.
#[derive(Debug)]
pub(crate) enum CallError {
    /// 410 (or 404 on a worker's own endpoint): the lease is lost.
    Gone,
    /// 401 or 403: the token is wrong; retrying cannot help.
    Refused(String),
    /// Another 4xx: this request will never be accepted; resending it cannot help.
    Rejected(String),
    /// Cannot connect, timed out, 5xx, or a malformed reply: try again later.
    Transient(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Gone => f.write_str("the broker no longer knows this worker (lease lost)"),
            CallError::Refused(m) | CallError::Rejected(m) | CallError::Transient(m) => f.write_str(m),
        }
    }
}

/// Replies larger than this are refused (the broker's own request limit is 4 MiB).
const REPLY_LIMIT: u64 = 64 << 20;
/// Time allowed for a call on top of the time the broker may hold it.
const SLACK: Duration = Duration::from_secs(10);

/// The worker's calls: registration with the organization's worker
/// token, every other call with the session credential the registration
/// returned ([`RegisterReply::session`]).
pub(crate) struct Client {
    agent: ureq::Agent,
    base: String,
    token: String,
}

impl Client {
    pub(crate) fn new(base: &str, token: &str) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .build();
        Client {
            agent: config.into(),
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        }
    }

    pub(crate) fn register(&self, req: &RegisterRequest) -> Result<RegisterReply, CallError> {
        self.post("/v1/workers", &self.token, Some(req), SLACK)
    }

    pub(crate) fn poll(&self, worker: WorkerId, session: &str, wait_ms: u64) -> Result<PollReply, CallError> {
        let path = format!("/v1/workers/{worker}/poll");
        self.post(
            &path,
            session,
            Some(&PollRequest { wait_ms }),
            Duration::from_millis(wait_ms) + SLACK,
        )
    }

    pub(crate) fn report(
        &self,
        worker: WorkerId,
        session: &str,
        req: &ReportRequest,
    ) -> Result<ReportReply, CallError> {
        self.post(&format!("/v1/workers/{worker}/report"), session, Some(req), SLACK)
    }

    pub(crate) fn drain(&self, worker: WorkerId, session: &str) -> Result<DrainReply, CallError> {
        self.post::<(), DrainReply>(&format!("/v1/workers/{worker}/drain"), session, None, SLACK)
    }

    pub(crate) fn output(
        &self,
        worker: WorkerId,
        session: &str,
        req: &OutputRequest,
    ) -> Result<(), CallError> {
        let path = format!("/v1/workers/{worker}/output");
        self.post::<_, serde::de::IgnoredAny>(&path, session, Some(req), SLACK)
            .map(drop)
    }

    pub(crate) fn leave(&self, worker: WorkerId, session: &str) -> Result<(), CallError> {
        let path = format!("/v1/workers/{worker}/leave");
        self.post::<(), serde::de::IgnoredAny>(&path, session, None, SLACK)
            .map(drop)
    }

    fn post<Req: Serialize, Rep: DeserializeOwned>(
        &self,
        path: &str,
        token: &str,
        body: Option<&Req>,
        timeout: Duration,
    ) -> Result<Rep, CallError> {
        let url = format!("{}{path}", self.base);
        let request = self
            .agent
            .post(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .config()
            .timeout_global(Some(timeout))
            .build();
        let sent = match body {
            Some(body) => {
                let bytes = serde_json::to_vec(body).map_err(|e| {
                    CallError::Rejected(format!("POST {path}: cannot encode the request: {e}"))
                })?;
                request
                    .header("Content-Type", "application/json")
                    .send(&bytes[..])
            }
            None => request.send_empty(),
        };
        let mut response = sent.map_err(|e| CallError::Transient(format!("POST {url}: {e}")))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(REPLY_LIMIT)
            .read_to_string()
            .map_err(|e| CallError::Transient(format!("POST {path}: reading the {status} reply: {e}")))?;
        if (200..300).contains(&status) {
            // Some endpoints (leave) may answer with no body at all.
            let text = if text.trim().is_empty() { "null" } else { &text };
            return serde_json::from_str(text)
                .map_err(|e| CallError::Transient(format!("POST {path}: malformed {status} reply: {e}")));
        }
        let why = serde_json::from_str::<ErrorReply>(&text)
            .map(|r| r.error)
            .unwrap_or(text);
        let message = format!("POST {path}: {status}: {}", why.trim());
        let worker_endpoint = path.starts_with("/v1/workers/");
        Err(match status {
            410 => CallError::Gone,
            404 if worker_endpoint => CallError::Gone,
            401 | 403 => CallError::Refused(message),
            408 | 429 => CallError::Transient(message),
            400..500 => CallError::Rejected(message),
            _ => CallError::Transient(message),
        })
    }
}
