//! The worker side of the protocol (docs/protocol.md, "Worker
//! protocol"): one blocking call per endpoint, each reply sorted into what
//! the worker agent should do about it ([`CallError`]).

use std::time::Duration;

use fairsched_proto::wire::{
    DrainReply, OutputsReply, OutputsRequest, PollReply, PollRequest, RegisterReply, RegisterRequest,
    ReportReply, ReportRequest, WorkerId,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::errors::CallError;
use crate::http::{Call, Failed, agent_config, base_url, certificate_refused, reason};
use crate::{ClientError, Conn};

/// Replies larger than this are refused (the broker's own request limit is 4 MiB).
const REPLY_LIMIT: u64 = 64 << 20;
/// Time allowed for a call on top of the time the broker may hold it.
const SLACK: Duration = Duration::from_secs(10);
/// Time allowed to connect.
const CONNECT: Duration = Duration::from_secs(5);

/// The worker's calls: registration with the organization's worker
/// token, every other call with the session credential the registration
/// returned ([`RegisterReply::session`]).
pub struct WorkerClient {
    agent: ureq::Agent,
    base: String,
    token: String,
}

impl WorkerClient {
    /// A client of `c.broker` (which must be given: a worker does not read
    /// ./fairsched.tokens) registering with the worker token `c.token`.
    pub fn new(c: &Conn) -> Result<WorkerClient, ClientError> {
        let broker = c.broker.as_deref().unwrap_or_default();
        let config = agent_config(c.ca_cert.as_deref())?
            .timeout_connect(Some(CONNECT))
            .build();
        let agent = ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::default(),
            NoThreadResolver,
        );
        Ok(WorkerClient {
            agent,
            base: base_url(broker)?,
            token: c.token.clone().unwrap_or_default(),
        })
    }

    pub fn register(&self, req: &RegisterRequest) -> Result<RegisterReply, CallError> {
        self.post("/v1/workers", &self.token, Some(req), SLACK)
    }

    /// `draining`: the worker knows it drains (a drain the broker has
    /// not told it of answers at once).
    pub fn poll(
        &self,
        worker: WorkerId,
        session: &str,
        wait_ms: u64,
        draining: bool,
    ) -> Result<PollReply, CallError> {
        let path = format!("/v1/workers/{worker}/poll");
        self.post(
            &path,
            session,
            Some(&PollRequest { wait_ms, draining }),
            Duration::from_millis(wait_ms) + SLACK,
        )
    }

    pub fn report(
        &self,
        worker: WorkerId,
        session: &str,
        req: &ReportRequest,
    ) -> Result<ReportReply, CallError> {
        self.post(&format!("/v1/workers/{worker}/report"), session, Some(req), SLACK)
    }

    pub fn drain(&self, worker: WorkerId, session: &str) -> Result<DrainReply, CallError> {
        self.post::<(), DrainReply>(&format!("/v1/workers/{worker}/drain"), session, None, SLACK)
    }

    /// Sends the outputs of runs whose end the broker has acknowledged.
    pub fn outputs(
        &self,
        worker: WorkerId,
        session: &str,
        req: &OutputsRequest,
    ) -> Result<OutputsReply, CallError> {
        let path = format!("/v1/workers/{worker}/outputs");
        self.post(&path, session, Some(req), SLACK)
    }

    pub fn leave(&self, worker: WorkerId, session: &str) -> Result<(), CallError> {
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
        let call = Call {
            method: "POST",
            path,
            token,
            header: None,
            timeout: Some(timeout),
            limit: REPLY_LIMIT,
            also: Some(LEASE_HEADER),
        };
        let reply = call.send(&self.agent, &self.base, body).map_err(|f| match f {
            Failed::Encode(e) => CallError::Rejected(format!("POST {path}: cannot encode the request: {e}")),
            // Retried as any failure to connect: a certificate may be
            // renewed, but say what to do about it.
            Failed::Send(e) => match certificate_refused(&e) {
                Some(why) => CallError::Transient(format!("POST {}{path}: {why}: {e}", self.base)),
                None => CallError::Transient(format!("POST {}{path}: {e}", self.base)),
            },
            Failed::Read { status, source } => {
                CallError::Transient(format!("POST {path}: reading the {status} reply: {source}"))
            }
        })?;
        let status = reply.status;
        if reply.ok() {
            // Some endpoints (leave) may answer with no body at all.
            let text = if reply.text.trim().is_empty() {
                "null"
            } else {
                &reply.text
            };
            return serde_json::from_str(text)
                .map_err(|e| CallError::Transient(format!("POST {path}: malformed {status} reply: {e}")));
        }
        let message = format!("POST {path}: {status}: {}", reason(reply.text));
        Err(classify(status, path, reply.also.as_deref(), message))
    }
}

/// The broker's header on a 503 that renewed the worker's lease
/// (docs/protocol.md, "Errors").
const LEASE_HEADER: &str = "fairsched-lease";

/// What the worker does about an error status `status` of `path`, whose
/// reply had `lease` as its [`LEASE_HEADER`].
fn classify(status: u16, path: &str, lease: Option<&str>, message: String) -> CallError {
    let worker_endpoint = path.starts_with("/v1/workers/");
    match status {
        503 if worker_endpoint && lease == Some("renewed") => CallError::Busy(message),
        410 => CallError::Gone(message),
        404 if worker_endpoint => CallError::Gone(message),
        401 | 403 => CallError::Refused(message),
        408 | 429 => CallError::Transient(message),
        400..500 => CallError::Rejected(message),
        _ => CallError::Transient(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let poll = "/v1/workers/3/poll";
        let m = || "why".to_string();
        let cases = [
            (410, "/v1/workers", CallError::Gone(m())),
            (410, poll, CallError::Gone(m())),
            (404, poll, CallError::Gone(m())),
            // Registration has no worker yet: a 404 there is a wrong URL.
            (404, "/v1/workers", CallError::Rejected(m())),
            (401, poll, CallError::Refused(m())),
            (403, "/v1/workers", CallError::Refused(m())),
            (408, poll, CallError::Transient(m())),
            (429, poll, CallError::Transient(m())),
            (400, poll, CallError::Rejected(m())),
            (413, poll, CallError::Rejected(m())),
            (500, poll, CallError::Transient(m())),
            (503, poll, CallError::Transient(m())),
            (302, poll, CallError::Transient(m())),
        ];
        for (status, path, want) in cases {
            assert_eq!(classify(status, path, None, m()), want, "{status} {path}");
        }
        // A 503 that renewed the lease, and only that.
        let renewed = Some("renewed");
        assert_eq!(classify(503, poll, renewed, m()), CallError::Busy(m()));
        assert_eq!(classify(503, poll, Some("no"), m()), CallError::Transient(m()));
        assert_eq!(classify(500, poll, renewed, m()), CallError::Transient(m()));
        assert_eq!(
            classify(503, "/v1/workers", renewed, m()),
            CallError::Transient(m())
        );
    }

    #[test]
    fn unreachable_is_transient() {
        // Nothing listens on port 9 of loopback (discard, never served here).
        let c = WorkerClient::new(&Conn {
            broker: Some("http://127.0.0.1:9/".into()),
            token: Some("t".into()),
            ca_cert: None,
        })
        .unwrap();
        assert_eq!(c.base, "http://127.0.0.1:9");
        match c.drain(1, "s") {
            Err(CallError::Transient(m)) => {
                assert!(m.starts_with("POST http://127.0.0.1:9/v1/workers/1/drain"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn not_a_url() {
        let e = WorkerClient::new(&Conn {
            broker: Some("broker:8080".into()),
            ..Conn::default()
        })
        .err()
        .unwrap();
        assert!(e.is_usage(), "{e}");
    }
}

/// The worker's name resolution: an IP address (a broker's usual URL) is
/// taken as it is, without ureq's resolver, which starts a thread for each
/// look-up under a timeout and panics when it cannot (the worker's tasks
/// may hold every process of its account, a fork bomb); a host name goes
/// to ureq's resolver, a failed thread start an error rather than a panic.
#[derive(Debug)]
struct NoThreadResolver;

impl ureq::unversioned::resolver::Resolver for NoThreadResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        use ureq::unversioned::resolver::DefaultResolver;
        if let Some(authority) = uri.authority() {
            let host = authority.host().trim_start_matches('[').trim_end_matches(']');
            let port = authority.port_u16().or_else(|| match uri.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                _ => None,
            });
            if let (Ok(ip), Some(port)) = (host.parse::<std::net::IpAddr>(), port) {
                let mut out = self.empty();
                out.push(std::net::SocketAddr::new(ip, port));
                return Ok(out);
            }
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            DefaultResolver::default().resolve(uri, config, timeout)
        }))
        .unwrap_or_else(|_| {
            Err(ureq::Error::Io(std::io::Error::other(
                "cannot look up the broker's name (no thread could be started)",
            )))
        })
    }
}
