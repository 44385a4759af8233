//! # fairsched-client
//!
//! One typed HTTP client of the live service (docs/protocol.md), used by
//! the command line's calls (`submit`, `status`, `cancel`, `explain`,
//! `admin …`) and by the Diet-ethic client-side dispatcher
//! ([`dispatcher`]); the worker's calls ([`worker`]); what a workflow file
//! says ([`dag`], feature `dag`, on by default); and the words of an
//! explanation and of a task list ([`text`]).
//!
//! ```no_run
//! use fairsched_client::{Client, Conn, Role};
//! use fairsched_proto::api::StatusReply;
//! let client = Client::new(&Conn::default(), Role::User)?;
//! let s: StatusReply = client.call("GET", "/v1/status", None::<&()>)?;
//! println!("{} running", s.running);
//! # Ok::<(), fairsched_client::ClientError>(())
//! ```

#[cfg(feature = "dag")]
pub mod dag;
pub mod dispatcher;
pub mod errors;
mod http;
pub mod text;
pub mod worker;

pub use errors::ClientError;
pub use http::base_url;

use http::{Call, Failed, agent_config, certificate_refused, reason};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::time::Duration;

/// Credentials `fairsched serve --quickstart` writes for the commands run
/// from the same directory.
pub const TOKENS_FILE: &str = "fairsched.tokens";

/// The value of `key` in ./fairsched.tokens, if the file is there.
pub fn quickstart(key: &str) -> Option<String> {
    let text = std::fs::read_to_string(TOKENS_FILE).ok()?;
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Where the broker is and who is asking; what is not given comes from
/// ./fairsched.tokens, else the broker is `http://127.0.0.1:8080`.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    pub broker: Option<String>,
    pub token: Option<String>,
    /// The CA (a PEM file) an https:// broker's certificate must be signed
    /// by (`--ca-cert`, `FAIRSCHED_CA_CERT`); `None`: one of the usual
    /// public CAs.
    pub ca_cert: Option<PathBuf>,
}

/// Who a command acts as, for the quickstart file.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    User,
    Admin,
}

/// How long [`Client::submit`] keeps resending a submission the broker
/// did not answer.
pub const SUBMIT_RETRY_FOR: Duration = Duration::from_secs(30);

/// A broker's client: one connection pool, one token.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: String,
}

/// Replies longer than this are not read ([`Client::get_text`]: 64 MiB).
const REPLY_LIMIT: u64 = 256 << 20;

impl Client {
    pub fn new(c: &Conn, role: Role) -> Result<Client, ClientError> {
        let key = match role {
            Role::User => "user",
            Role::Admin => "admin",
        };
        let token = c
            .token
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| quickstart(key));
        let Some(token) = token else {
            return Err(ClientError::Usage(format!(
                "no token: give --token T or set FAIRSCHED_TOKEN (or run from the folder of `fairsched serve --quickstart`, whose {TOKENS_FILE} has one)"
            )));
        };
        let broker = c
            .broker
            .clone()
            .or_else(|| quickstart("broker"))
            .unwrap_or_else(|| "http://127.0.0.1:8080".into());
        let base = base_url(&broker)?;
        let agent = agent_config(c.ca_cert.as_deref())?
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Client {
            agent,
            base,
            token: token.trim().to_string(),
        })
    }

    /// Submits `req` with an idempotency key of its own: [`Client::submit_with`]
    /// for [`SUBMIT_RETRY_FOR`].
    pub fn submit(
        &self,
        req: &fairsched_proto::api::SubmitRequest,
    ) -> Result<fairsched_proto::api::SubmitReply, ClientError> {
        self.submit_with(req, None, SUBMIT_RETRY_FOR)
    }

    /// Submits `req` with idempotency key `key` (a random one if `None`),
    /// resent with the same key while the broker cannot be reached,
    /// answers 502–504, or the reply is cut, for up to `retry_for`: a
    /// submission whose reply was lost is retried without being submitted
    /// twice. When the retries run out after a try that may have reached
    /// the broker, [`ClientError::Unconfirmed`], with the key: the same
    /// request again with it (within a day) gets the tasks' ids, or submits
    /// them if the broker never took them.
    pub fn submit_with(
        &self,
        req: &fairsched_proto::api::SubmitRequest,
        key: Option<&str>,
        retry_for: Duration,
    ) -> Result<fairsched_proto::api::SubmitReply, ClientError> {
        let key: String = match key {
            Some(k) => k.to_string(),
            None => new_key()?,
        };
        let deadline = std::time::Instant::now() + retry_for;
        let mut delay = Duration::from_millis(200);
        // Whether a try may have reached the broker (its reply lost).
        let mut maybe_sent = false;
        loop {
            // Each try gets what is left of `retry_for`, at least 5 s (a
            // large submission takes a moment), at most the usual 60 s.
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let call = Call {
                timeout: Some(left.clamp(Duration::from_secs(5), Duration::from_secs(60))),
                ..self.call_to("POST", "/v1/tasks", Some(("Idempotency-Key", &key)))
            };
            let r = self.exchange(&call, Some(req)).and_then(|reply| {
                serde_json::from_str(&reply.text).map_err(|e| malformed("POST", "/v1/tasks", e.to_string()))
            });
            let (retry, reached) = match &r {
                Err(ClientError::Unreachable { source, .. }) => (true, !never_connected(source)),
                Err(ClientError::Refused { status, .. }) => {
                    let retry = matches!(status, 502..=504);
                    (retry, retry)
                }
                Err(ClientError::Malformed { why, .. }) => {
                    let cut = why.starts_with("reading the reply");
                    (cut, cut)
                }
                _ => (false, false),
            };
            maybe_sent |= reached;
            if !retry || std::time::Instant::now() + delay > deadline {
                return match r {
                    Err(last) if retry && maybe_sent => Err(ClientError::Unconfirmed {
                        key,
                        last: Box::new(last),
                    }),
                    r => r,
                };
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// `GET path`, its reply as text, with the value of header `also`.
    pub fn get_text(&self, path: &str, also: &str) -> Result<(String, Option<String>), ClientError> {
        let call = Call {
            also: Some(also),
            limit: 64 << 20,
            ..self.call_to("GET", path, None)
        };
        let reply = self.exchange(&call, None::<&()>)?;
        Ok((reply.text, reply.also))
    }

    /// `method path` with `body` (JSON), its reply read as `T`; an error
    /// status is [`ClientError::Refused`] with the broker's reason.
    pub fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, ClientError> {
        self.send(method, path, body, None)
    }

    /// [`Client::call`] with one more header.
    fn send<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
        header: Option<(&str, &str)>,
    ) -> Result<T, ClientError> {
        let reply = self.exchange(&self.call_to(method, path, header), body)?;
        serde_json::from_str(&reply.text).map_err(|e| malformed(method, path, e.to_string()))
    }

    /// A call of this client's, with its token.
    fn call_to<'a>(&'a self, method: &'a str, path: &'a str, header: Option<(&'a str, &'a str)>) -> Call<'a> {
        Call {
            method,
            path,
            token: &self.token,
            header,
            timeout: None,
            limit: REPLY_LIMIT,
            also: None,
        }
    }

    /// Sends `call`; its reply if 2xx.
    fn exchange(&self, call: &Call<'_>, body: Option<&impl Serialize>) -> Result<http::Reply, ClientError> {
        let (method, path) = (call.method, call.path);
        let reply = call.send(&self.agent, &self.base, body).map_err(|f| match f {
            Failed::Encode(e) => malformed(method, path, e.to_string()),
            Failed::Send(e) => match certificate_refused(&e) {
                Some(why) => ClientError::Certificate {
                    base: self.base.clone(),
                    why,
                    source: Box::new(e),
                },
                None => ClientError::Unreachable {
                    base: self.base.clone(),
                    source: Box::new(e),
                },
            },
            Failed::Read { source, .. } => malformed(method, path, format!("reading the reply: {source}")),
        })?;
        if !reply.ok() {
            return Err(ClientError::Refused {
                method: method.into(),
                path: path.into(),
                status: reply.status,
                message: reason(reply.text),
            });
        }
        Ok(reply)
    }

    /// The caller's tasks with ids from `from` to `to` (both included; all
    /// of them for the admin), by id: `GET /v1/tasks` page after page
    /// ([`TASKS_PAGE`](fairsched_proto::api::TASKS_PAGE) each), the
    /// users' names of every page together.
    pub fn tasks_between(&self, from: u64, to: u64) -> Result<fairsched_proto::api::TasksReply, ClientError> {
        use fairsched_proto::api::{TASKS_PAGE, TasksReply};
        let mut all = TasksReply::default();
        let mut after = from.checked_sub(1);
        loop {
            let path = match after {
                Some(a) => format!("/v1/tasks?after={a}&limit={TASKS_PAGE}"),
                None => format!("/v1/tasks?limit={TASKS_PAGE}"),
            };
            let page: TasksReply = self.call("GET", &path, None::<&()>)?;
            all.tasks.extend(page.tasks.into_iter().filter(|t| t.id <= to));
            all.users.extend(page.users);
            match page.next {
                Some(n) if n < to => after = Some(n),
                _ => return Ok(all),
            }
        }
    }

    /// Every task of the caller (all of them for the admin):
    /// [`Client::tasks_between`] every id.
    pub fn tasks(&self) -> Result<fairsched_proto::api::TasksReply, ClientError> {
        self.tasks_between(0, u64::MAX)
    }

    /// The broker's order policy, read from the explanation of `task` (one
    /// of the caller's), when it is not `diet-ethic` — the only one that
    /// tells optional tasks from mandatory ones. `None` when it is, or
    /// when the broker does not say.
    pub fn not_diet_ethic(&self, task: u64) -> Option<String> {
        let path = format!("/v1/tasks/{task}/explain");
        let v = self.call::<serde_json::Value>("GET", &path, None::<&()>).ok()?;
        let order = v["policy"]["order"].as_str()?;
        let name = order.split('[').next().unwrap_or(order).trim();
        (name != "diet-ethic").then(|| order.to_string())
    }
}

fn malformed(method: &str, path: &str, why: String) -> ClientError {
    ClientError::Malformed {
        method: method.into(),
        path: path.into(),
        why,
    }
}

/// A new random idempotency key (32 hex digits).
pub fn new_key() -> Result<String, ClientError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| ClientError::Usage(format!("no random source for an idempotency key: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Whether `e` says the connection was never made (so that the request
/// cannot have reached the broker).
fn never_connected(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
        ),
        _ => false,
    }
}
