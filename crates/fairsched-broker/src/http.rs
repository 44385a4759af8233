//! `fairsched serve`: the HTTP API (axum on tokio) in front of the
//! [`Broker`], which one thread owns. Handlers send it writes (answered
//! after their group commit) and reads; worker polls wait on a watch of
//! the broker's generation (bumped when tasks start or runs are stopped).
//! The dashboard ([`crate::dashboard`]) is served at `/`. The routes that
//! need no token never run work of their own on the broker's thread: the
//! dashboard's snapshot and `/metrics` are published frames
//! ([`crate::frames`]), built at most every [`DASHBOARD_MIN_GAP`] however
//! many clients ask; a task rebuilds the snapshot after commits (and every
//! [`DASHBOARD_REFRESH`]) for the event streams while one listens; and each
//! client address has a rate limit on them ([`crate::limit`]). The server
//! itself ([`crate::server`]) closes a connection slow to send its request
//! head.

use crate::api::*;
use crate::dashboard;
use crate::frames::{Frame, Published};
use crate::identity::{Principal, hash};
use crate::limit::{BodyBudget, BodyOwner, Held, Limiter, Refused};
pub use crate::server::HttpLimits;
use crate::service::{
    Broker, Gone, LATENCY_BUCKETS_MS, SUBMIT_STEP, ServiceError, Settings, SubmitKey, Write, Written,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fairsched_proto::wire::{DrainReply, OutputsRequest, PollRequest, RegisterRequest, ReportRequest};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Digest as _;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

/// The largest request body accepted (a larger one gets 413).
pub const BODY_LIMIT: usize = 4 << 20;
/// A body over [`BODY_LIMIT`] is still read, and thrown away, up to
/// this many bytes in all before the 413 goes out: a client still sending
/// when the connection closes would get a reset, not the reply.
pub const DRAIN_LIMIT: usize = 64 << 20;
/// The first bytes of its budget a principal may always hold, whatever
/// the others hold: one body of the largest size.
pub const BODY_FLOOR: usize = BODY_LIMIT;

/// The longest a request's body may take to arrive (408 after).
pub const BODY_TIME: Duration = Duration::from_secs(30);
/// The longest a poll waits.
pub const MAX_WAIT_MS: u64 = 30_000;
/// The dashboard's snapshot (and `/metrics`) is built at most this
/// often…
pub const DASHBOARD_MIN_GAP: Duration = crate::frames::MIN_GAP;
/// …and its stream sends one at least this often (waits and satisfactions
/// move with time).
pub const DASHBOARD_REFRESH: Duration = crate::frames::REFRESH;

/// What `fairsched serve` takes.
#[derive(Clone, Debug)]
pub struct ServeOpts {
    pub db: PathBuf,
    pub listen: String,
    /// The audit log (JSON lines, appended, 0600): every admin action,
    /// submission and cancellation, with who asked. `None`: none.
    pub audit: Option<PathBuf>,
    pub settings: Settings,
    /// Stops the broker as SIGTERM does (a program that runs one in a
    /// thread of its own); `None`: signals only.
    pub stop: Option<Stop>,
    /// Timeouts and the anonymous routes' rate limit.
    pub limits: HttpLimits,
    /// HTTPS with this certificate and key (`--tls-cert`, `--tls-key`);
    /// `None`: plain HTTP.
    pub tls: Option<crate::tls::TlsFiles>,
}

/// Stops a broker [`serve`] runs, from the same program: requests in
/// flight are answered, every acknowledged write is committed, and
/// `serve` returns.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<tokio::sync::Notify>);

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }
    /// Asks the broker to stop (before or after it started).
    pub fn stop(&self) {
        self.0.notify_one();
    }
}

type Job = Box<dyn FnOnce(&mut Broker) + Send>;

enum Msg {
    Write(Write, oneshot::Sender<Result<Written, ServiceError>>),
    Read(Job),
    /// A worker session's call refused at the door (503): it counts as a
    /// sign of life, applied before leases are checked; whether the
    /// worker was alive to renew.
    Touch(u64, u32, oneshot::Sender<bool>),
    /// The server stopped: finish the batch and return.
    Stop,
}

/// Authenticated tokens (their SHA-256) → (the tokens epoch, who).
type Principals = HashMap<[u8; 32], (u64, Principal)>;

#[derive(Clone)]
struct App {
    tx: mpsc::Sender<Msg>,
    generation: watch::Receiver<u64>,
    /// Becomes true on SIGTERM: long polls return at once.
    stopping: watch::Receiver<bool>,
    /// Tokens already authenticated, with the [`App::tokens_epoch`] they
    /// were read at: an entry of an older epoch is read again.
    principals: Arc<Mutex<Principals>>,
    /// Bumped whenever a token is revoked: cached principals are stale.
    tokens_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// The audit log, if any.
    audit: Option<Arc<Mutex<std::fs::File>>>,
    /// A read-only connection to the database, for token lookups.
    auth_db: Arc<Mutex<rusqlite::Connection>>,
    /// The broker's clock when this process started (the dashboard's
    /// uptime).
    started_ms: i64,
    /// The broker's group commits, as of its last batch (sent before the
    /// batch's writes are answered).
    commits: watch::Receiver<u64>,
    /// The dashboard's latest snapshot (JSON); each event stream
    /// subscribes.
    dashboard: Arc<Published>,
    /// `/metrics`'s latest text (what the broker's thread renders).
    metrics: Arc<Published>,
    /// Reads the broker's thread ran for requests (frame builds included).
    reads: Arc<AtomicU64>,
    /// Requests of the anonymous routes refused with 429.
    limited: Arc<AtomicU64>,
    /// The memory request bodies hold, per principal ([`door`]).
    bodies: Arc<BodyBudget>,
    /// A body that sends nothing for this long is 408.
    body_idle: Duration,
    /// Requests refused with 503 because their principal's budget, or its
    /// pool, was used up.
    shed: Arc<AtomicU64>,
}

impl App {
    async fn write(&self, w: Write) -> Result<Written, ServiceError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Msg::Write(w, tx))
            .map_err(|_| ServiceError::Unavailable("the broker is shutting down".into()))?;
        rx.await
            .map_err(|_| ServiceError::Unavailable("the broker is shutting down".into()))?
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Broker) -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |b| {
            let _ = tx.send(f(b));
        });
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.tx
            .send(Msg::Read(job))
            .map_err(|_| ServiceError::Unavailable("the broker is shutting down".into()))?;
        rx.await
            .map_err(|_| ServiceError::Unavailable("the broker is shutting down".into()))
    }

    async fn who(&self, headers: &HeaderMap) -> Result<Principal, ServiceError> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .ok_or_else(|| {
                ServiceError::Unauthenticated("no token: send `Authorization: Bearer TOKEN`".into())
            })?;
        let h = hash(token);
        let epoch = self.tokens_epoch.load(std::sync::atomic::Ordering::SeqCst);
        if let Some((e, p)) = self.principals.lock().expect("not poisoned").get(&h)
            && *e == epoch
        {
            return Ok(p.clone());
        }
        // On a read-only connection of its own, off the broker's thread:
        // a flood of unknown tokens costs that thread nothing.
        let t = token.to_string();
        let db = Arc::clone(&self.auth_db);
        let p = tokio::task::spawn_blocking(move || {
            let conn = db.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match crate::identity::token_holder(&conn, &t)? {
                Some(p) => Ok(Some(p)),
                None => crate::identity::session_holder(&conn, &t),
            }
        })
        .await
        .map_err(ServiceError::unavailable)?
        .map_err(|e: rusqlite::Error| ServiceError::Unavailable(format!("tokens: {e}")))?
        .ok_or_else(|| ServiceError::Unauthenticated("unknown token".into()))?;
        // Read after `epoch` was: a revocation since bumped it, and this
        // entry is read again next time.
        self.principals
            .lock()
            .expect("not poisoned")
            .insert(h, (epoch, p.clone()));
        Ok(p)
    }

    /// One line of the audit log: when, who (from which address), what.
    fn audit(&self, who: &Principal, action: &str, detail: serde_json::Value) {
        let Some(file) = &self.audit else { return };
        let who = match who {
            Principal::Admin => serde_json::json!({"admin": true}),
            Principal::User { id, name, org } => {
                serde_json::json!({"user": name, "user_id": id, "org_id": org})
            }
            Principal::Worker { org } => serde_json::json!({"worker_token_of_org_id": org}),
            Principal::Session { org, worker } => serde_json::json!({"worker": worker, "org_id": org}),
        };
        let from = PEER.try_with(|p| p.map(|a| a.to_string())).ok().flatten();
        let line = serde_json::json!({
            "at_ms": crate::store::unix_ms(),
            "who": who,
            "from": from,
            "action": action,
            "detail": detail,
        });
        // The line made first, then one write: `writeln!` into the file
        // itself made a system call per piece of the JSON (a third of the
        // broker's time under one-task submissions, bench/broker-throughput.sh).
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let mut f = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = f.write_all(&bytes) {
            tracing::error!("the audit log: {e}");
        }
    }

    /// The dashboard's snapshot, as of every commit so far (see
    /// [`crate::frames`]).
    async fn dashboard_frame(&self) -> Result<Arc<Frame>, ServiceError> {
        let app = self.clone();
        let commits = *self.commits.borrow();
        self.dashboard
            .get(commits, move || async move {
                let started = app.started_ms;
                let (d, commits) = app
                    .read(move |b| dashboard::snapshot(b, started).map(|d| (d, b.counters.commits)))
                    .await??;
                // Serialized here, not on the broker's thread.
                let json = serde_json::to_vec(&d).map_err(ServiceError::unavailable)?;
                Ok((Bytes::from(json), commits))
            })
            .await
    }

    /// `/metrics`'s text, as of every commit so far.
    async fn metrics_frame(&self) -> Result<Arc<Frame>, ServiceError> {
        let app = self.clone();
        let commits = *self.commits.borrow();
        self.metrics
            .get(commits, move || async move {
                let (text, commits) = app.read(|b| (render_metrics(b), b.counters.commits)).await?;
                Ok((Bytes::from(text), commits))
            })
            .await
    }

    /// Tokens changed: no cached principal is trusted any more.
    fn tokens_changed(&self) {
        self.tokens_epoch
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.principals.lock().expect("not poisoned").clear();
    }

    /// Cancels tasks as the admin (a removed user's); those that ended
    /// meanwhile are skipped.
    async fn cancel_all(&self, tasks: &[u64]) -> Result<Vec<u64>, ServiceError> {
        let mut done = Vec::new();
        for &task in tasks {
            match self
                .write(Write::Cancel {
                    who: Principal::Admin,
                    task,
                })
                .await
            {
                Ok(_) => done.push(task),
                Err(ServiceError::Conflict(_) | ServiceError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// The token of an `Authorization` header's value: the scheme is
/// case-insensitive (RFC 9110 §11.1), `Bearer` only.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl ServiceError {
    /// The status code of each refusal: the one place the service's
    /// errors meet HTTP.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::Invalid(_) => StatusCode::BAD_REQUEST,
            ServiceError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ServiceError::Forbidden(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServiceError::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::Gone(_) => StatusCode::GONE,
            ServiceError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::Quota(_) | ServiceError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ServiceError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let status = self.status();
        let error = self.message().to_string();
        let mut r = (status, axum::Json(ErrorBody { error })).into_response();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            // The rest of the body is not read: the connection is closed
            // after this reply, and the client must not reuse it.
            r.headers_mut()
                .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
        }
        r
    }
}

type R = Result<Response, ServiceError>;

fn json<T: Serialize>(status: StatusCode, body: &T) -> R {
    Ok((status, axum::Json(body)).into_response())
}

/// A request body: within the limit, and the JSON this endpoint expects
/// (the reason names the field and position otherwise).
fn decode<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ServiceError> {
    decode_bytes(&body_bytes(body)?)
}

/// A request body within the limit.
fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ServiceError> {
    body.map_err(|e| {
        // axum refuses a body over the limit (413) or one it failed to
        // read (400).
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServiceError::TooLarge(format!("body larger than {BODY_LIMIT} bytes"))
        } else {
            ServiceError::Invalid(e.body_text())
        }
    })
}

tokio::task_local! {
    /// The address of the client whose request is being served, for the
    /// audit log ([`with_peer`]).
    static PEER: Option<std::net::SocketAddr>;
}

/// Serves a request with its client's address in [`PEER`].
async fn with_peer(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let peer = crate::server::peer(&req);
    PEER.scope(peer, next.run(req)).await
}

/// Who pays for a body.
fn body_owner(p: &Principal) -> BodyOwner {
    match p {
        Principal::Admin => BodyOwner::Admin,
        Principal::User { id, .. } => BodyOwner::User(*id),
        Principal::Worker { org } => BodyOwner::WorkerToken(*org),
        Principal::Session { worker, .. } => BodyOwner::Session(*worker),
    }
}

/// `r` with `Connection: close`: the rest of the body is not read, and the
/// client must not reuse the connection.
fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    r
}

/// The response header that tells a worker its refused call renewed its
/// lease (a 503 of [`door`]).
pub const LEASE_HEADER: &str = "fairsched-lease";

/// The door: a request's token is checked from its headers before any
/// byte of its body is read, then its whole body is read before its
/// handler runs, within its principal's share of the [`BodyBudget`]:
///
/// - a request with no body goes on as it is (the handler checks its
///   token, if the route needs one);
/// - a request with a body and no token, or a token the broker does not
///   know, is refused (401) before its body is read, and its connection
///   closed: anonymous routes take no body;
/// - within [`BODY_LIMIT`] the body is read and passed on; over it, the
///   rest is read and dropped (up to [`DRAIN_LIMIT`]) and the reply is
///   413, which the client then reads (it got a reset while still
///   sending);
/// - past its principal's budget (or its pool), the rest is read and
///   dropped (nothing held) and the reply is 503 with `Retry-After`; a
///   worker session's refused call renews its lease, and the reply says so
///   ([`LEASE_HEADER`]: `renewed`);
/// - a body that sends nothing for [`HttpLimits::body_idle`], or takes
///   over [`BODY_TIME`] in all, is 408 (connection closed).
async fn door(State(app): State<App>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use futures_util::StreamExt;
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if axum::body::HttpBody::is_end_stream(&body) {
        // No body (none declared, or a length of 0): nothing to read.
        return next.run(axum::extract::Request::from_parts(parts, body)).await;
    }
    if !parts.headers.contains_key(header::AUTHORIZATION) {
        return closing(
            ServiceError::Unauthenticated(
                "no token: send `Authorization: Bearer TOKEN` (a request without a token takes no body)"
                    .into(),
            )
            .into_response(),
        );
    }
    let who = match app.who(&parts.headers).await {
        Ok(p) => p,
        Err(e) => return closing(e.into_response()),
    };
    let too_large = || ServiceError::TooLarge(format!("body larger than {BODY_LIMIT} bytes")).into_response();
    if declared.is_some_and(|n| n > DRAIN_LIMIT as u64) {
        return too_large();
    }
    let mut held = Held::new(&app.bodies, body_owner(&who));
    let mut refused = None;
    // A declared length is taken at once: refused before it is sent.
    if let Some(n) = declared.filter(|&n| n <= BODY_LIMIT as u64)
        && let Err(r) = held.take(n as usize)
    {
        refused = Some(r);
    }
    let deadline = tokio::time::Instant::now() + BODY_TIME;
    let mut stream = body.into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut read = 0usize;
    loop {
        let until = (tokio::time::Instant::now() + app.body_idle).min(deadline);
        match tokio::time::timeout_at(until, stream.next()).await {
            Err(_) => {
                let why = if tokio::time::Instant::now() >= deadline {
                    format!("the body took over {BODY_TIME:?} to arrive")
                } else {
                    format!("the body sent nothing for {:?}", app.body_idle)
                };
                return closing(ServiceError::TimedOut(why).into_response());
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return ServiceError::Invalid(format!("reading the body: {e}")).into_response();
            }
            Ok(Some(Ok(chunk))) => {
                read += chunk.len();
                if read > DRAIN_LIMIT {
                    return too_large();
                }
                if read <= BODY_LIMIT && refused.is_none() {
                    let more = read.saturating_sub(held.bytes());
                    if more > 0
                        && let Err(r) = held.take(more)
                    {
                        refused = Some(r);
                    }
                }
                if refused.is_some() {
                    // The rest is read and dropped, holding nothing: the
                    // client, done sending, reads the reply.
                    if held.bytes() > 0 {
                        held = Held::new(&app.bodies, body_owner(&who));
                        buf = Vec::new();
                    }
                } else if read <= BODY_LIMIT {
                    buf.extend_from_slice(&chunk);
                }
            }
        }
    }
    if read > BODY_LIMIT {
        return too_large();
    }
    if let Some(why) = refused {
        return shed(&app, &who, why).await;
    }
    let r = next
        .run(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::from(buf),
        ))
        .await;
    drop(held);
    r
}

/// A body refused for want of budget: 503 with `Retry-After: 1`; a worker
/// session's call counts as a sign of life (its lease is renewed, and the
/// reply says so).
async fn shed(app: &App, who: &Principal, why: Refused) -> Response {
    app.shed.fetch_add(1, Ordering::Relaxed);
    let renewed = match who {
        Principal::Session { org, worker } => {
            let (tx, rx) = oneshot::channel();
            app.tx.send(Msg::Touch(*worker, *org, tx)).is_ok() && rx.await.unwrap_or(false)
        }
        _ => false,
    };
    let message = match why {
        Refused::Own => {
            "this token's request bodies being read at once hold its whole budget (serve --body-budget): retry once one is done"
        }
        Refused::Pool => "the broker is reading too many request bodies at once: retry",
    };
    let mut r = ServiceError::Unavailable(message.into()).into_response();
    r.headers_mut().insert(header::RETRY_AFTER, 1.into());
    if renewed {
        r.headers_mut().insert(
            header::HeaderName::from_static(LEASE_HEADER),
            header::HeaderValue::from_static("renewed"),
        );
    }
    r
}

pub use fairsched_proto::api::MAX_IDEMPOTENCY_KEY;

/// A submission's `Idempotency-Key` header, if any, with its body's digest.
fn idempotency_key(h: &HeaderMap, body: &[u8]) -> Result<Option<SubmitKey>, ServiceError> {
    let Some(v) = h.get("idempotency-key") else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .ok()
        .filter(|k| (1..=MAX_IDEMPOTENCY_KEY).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ServiceError::Invalid(format!(
                "Idempotency-Key: 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
            ))
        })?;
    Ok(Some(SubmitKey {
        key: key.to_string(),
        digest: sha2::Sha256::digest(body).into(),
    }))
}

/// `decode` on bytes: never panics, whatever the input.
pub fn decode_bytes<T: DeserializeOwned>(body: &[u8]) -> Result<T, ServiceError> {
    // Every body is an object (serde would also take a struct written as
    // an array, e.g. `[]` for one whose fields all have defaults).
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ServiceError::Invalid(
            "request body: expected a JSON object".into(),
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    // serde_json refuses nesting deeper than 128 where it builds values;
    // every request type refuses unknown fields, so nothing is skipped.
    let v = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ServiceError::Invalid(format!("request body: {}: {}", e.path(), e.inner())))?;
    de.end()
        .map_err(|e| ServiceError::Invalid(format!("request body: {e}")))?;
    Ok(v)
}

fn admin(p: &Principal) -> Result<(), ServiceError> {
    match p {
        Principal::Admin => Ok(()),
        _ => Err(ServiceError::Forbidden("this needs the admin token".into())),
    }
}

fn worker_org(p: &Principal) -> Result<u32, ServiceError> {
    match p {
        Principal::Worker { org } => Ok(*org),
        _ => Err(ServiceError::Forbidden("this needs a worker token".into())),
    }
}

/// The organization of worker `id`, if `p` is that worker's session.
fn worker_session(p: &Principal, id: &str) -> Result<(u64, u32), ServiceError> {
    let worker = worker_id(id)?;
    match p {
        Principal::Session { org, worker: w } if *w == worker => Ok((worker, *org)),
        Principal::Session { worker: w, .. } => Err(ServiceError::Forbidden(format!("this session is worker {w}'s, not worker {worker}'s"))),
        Principal::Worker { .. } => Err(ServiceError::Forbidden("a worker's calls carry the session credential its registration returned, not the organization's worker token".into())),
        _ => Err(ServiceError::Forbidden("this needs a worker's session credential".into())),
    }
}

async fn add_org(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: OrgRequest = decode(body)?;
    let r = app.read(move |b| b.add_org(&req.name)).await??;
    app.audit(&who, "org add", serde_json::json!({"name": r.name, "id": r.id}));
    json(StatusCode::CREATED, &r)
}

async fn add_user(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: UserRequest = decode(body)?;
    let r = app.read(move |b| b.add_user(&req.name, &req.org)).await??;
    app.audit(
        &who,
        "user add",
        serde_json::json!({"name": r.name, "org": r.org, "id": r.id}),
    );
    json(StatusCode::CREATED, &r)
}

async fn worker_token(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: WorkerTokenRequest = decode(body)?;
    let r = app.read(move |b| b.worker_token(&req.org)).await??;
    app.audit(&who, "worker-token add", serde_json::json!({"org": r.org}));
    json(StatusCode::CREATED, &r)
}

async fn revoke_token(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: RevokeRequest = decode(body)?;
    let r = app.read(move |b| b.revoke_token(&req.token)).await??;
    app.tokens_changed();
    app.audit(&who, "token revoke", serde_json::json!({"revoked": r.revoked}));
    json(StatusCode::OK, &r)
}

async fn rotate_user(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: NameRequest = decode(body)?;
    let r = app.read(move |b| b.rotate_user(&req.name)).await??;
    app.tokens_changed();
    app.audit(&who, "user rotate", serde_json::json!({"name": r.name}));
    json(StatusCode::CREATED, &r)
}

async fn remove_user(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: NameRequest = decode(body)?;
    let name = req.name.clone();
    let (_, tasks) = app.read(move |b| b.remove_user(&req.name)).await??;
    app.tokens_changed();
    let cancelled = app.cancel_all(&tasks).await?;
    app.audit(
        &who,
        "user remove",
        serde_json::json!({"name": name, "cancelled": cancelled}),
    );
    json(
        StatusCode::OK,
        &RemovedReply {
            name,
            cancelled,
            evicted: Vec::new(),
        },
    )
}

async fn remove_org(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: NameRequest = decode(body)?;
    let name = req.name.clone();
    let (tasks, workers) = app.read(move |b| b.remove_org(&req.name)).await??;
    app.tokens_changed();
    let cancelled = app.cancel_all(&tasks).await?;
    let mut evicted = Vec::new();
    for worker in workers {
        let org = app.read(move |b| b.worker_org_of(worker)).await?;
        if let Ok(org) = org
            && app
                .write(Write::Leave {
                    worker,
                    org,
                    why: Gone::Evicted,
                })
                .await
                .is_ok()
        {
            evicted.push(worker);
        }
    }
    app.audit(
        &who,
        "org remove",
        serde_json::json!({"name": name, "cancelled": cancelled, "evicted": evicted}),
    );
    json(
        StatusCode::OK,
        &RemovedReply {
            name,
            cancelled,
            evicted,
        },
    )
}

async fn revoke_worker_tokens(
    State(app): State<App>,
    h: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: WorkerTokenRequest = decode(body)?;
    let r = app.read(move |b| b.revoke_worker_tokens(&req.org)).await??;
    app.tokens_changed();
    app.audit(
        &who,
        "worker-tokens revoke",
        serde_json::json!({"org": r.org, "revoked": r.revoked}),
    );
    json(StatusCode::OK, &r)
}

async fn set_run_as(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: RunAsRequest = decode(body)?;
    let r = app
        .read(move |b| b.set_run_as(&req.name, req.account.as_deref()))
        .await??;
    app.audit(
        &who,
        "user run-as",
        serde_json::json!({"name": r.name, "account": r.account}),
    );
    json(StatusCode::OK, &r)
}

async fn set_quota(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let req: QuotaRequest = decode(body)?;
    let detail = serde_json::json!({"user": req.user, "org": req.org, "max_queued": req.max_queued});
    let r = app.read(move |b| b.set_quota(&req)).await??;
    app.audit(&who, "quota set", detail);
    json(StatusCode::OK, &r)
}

async fn quotas(State(app): State<App>, h: HeaderMap) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let r = app.read(|b| b.quotas()).await?;
    json(StatusCode::OK, &r)
}

/// The admin puts a running task back in the queue.
async fn admin_requeue(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, true, "task requeue", |_, task| Write::Requeue {
        task,
    })
    .await
}

/// The admin drains a worker: as the worker's own drain.
async fn admin_drain(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let worker = worker_id(&id)?;
    let org = app.read(move |b| b.worker_org_of(worker)).await??;
    match app.write(Write::Drain { worker, org }).await? {
        Written::Draining { slots } => {
            app.audit(&who, "worker drain", serde_json::json!({"worker": worker}));
            json(StatusCode::OK, &DrainReply { slots })
        }
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

/// The admin holds a worker (it takes no new task; its runs go on) or
/// releases it (its slots come back).
async fn admin_hold_worker(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    hold_or_release_worker(app, h, id, true).await
}

async fn admin_release_worker(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    hold_or_release_worker(app, h, id, false).await
}

async fn hold_or_release_worker(app: App, h: HeaderMap, id: String, hold: bool) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let worker = worker_id(&id)?;
    let w = if hold {
        Write::HoldWorker { worker }
    } else {
        Write::ReleaseWorker { worker }
    };
    match app.write(w).await? {
        Written::WorkerHeld { held, slots } => {
            let action = if held { "worker hold" } else { "worker release" };
            app.audit(&who, action, serde_json::json!({"worker": worker}));
            json(
                StatusCode::OK,
                &serde_json::json!({"worker": worker, "held": held, "slots": slots}),
            )
        }
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

/// The admin evicts a worker: its slots leave and its runs go back to
/// the queue, as when its lease runs out; its next call gets 410, and
/// the reference worker then kills its runs.
async fn admin_evict(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let who = app.who(&h).await?;
    admin(&who)?;
    let worker = worker_id(&id)?;
    let org = app.read(move |b| b.worker_org_of(worker)).await??;
    app.write(Write::Leave {
        worker,
        org,
        why: Gone::Evicted,
    })
    .await?;
    app.audit(&who, "worker evict", serde_json::json!({"worker": worker}));
    json(StatusCode::OK, &serde_json::json!({ "worker": worker }))
}

async fn submit(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    let Principal::User { id, org, .. } = who.clone() else {
        return Err(ServiceError::Forbidden("only users submit tasks".into()));
    };
    let body = body_bytes(body)?;
    let key = idempotency_key(&h, &body)?;
    let req: SubmitRequest = decode_bytes(&body)?;
    req.check()
        .map_err(|m| ServiceError::Invalid(format!("request body: {m}")))?;
    if let Some(name) = &req.org {
        let name = name.clone();
        let theirs = app
            .read(move |b| b.live().store().org_id(&name))
            .await?
            .map_err(ServiceError::unavailable)?;
        if theirs != Some(org) {
            return Err(ServiceError::Forbidden(format!(
                "a user submits only for its own organization, not `{}`",
                req.org.unwrap_or_default()
            )));
        }
    }
    let (ids, workflow) = submit_in_steps(&app, id, org, req, key).await?;
    {
        {
            let (first, last) = (ids.first(), ids.last());
            app.audit(
                &who,
                "submit",
                serde_json::json!({"tasks": ids.len(), "first": first, "last": last, "workflow": workflow}),
            );
            json(StatusCode::CREATED, &SubmitReply { ids, workflow })
        }
    }
}

/// A submission, written as one step if it is a workflow or at most
/// [`SUBMIT_STEP`] tasks, else in steps of that many tasks, each its own
/// write: the broker's thread answers other requests between two steps, so
/// that one tenant's large submission holds the others up a few
/// milliseconds at a time, not for seconds. Room for the whole request is
/// reserved under the queued quotas first ([`Broker::reserve`]): it is
/// refused whole, and no other request takes the room while it is being
/// written. Step `i` of a request with an `Idempotency-Key` K is keyed
/// `K step i` (a user's key has no space): a retry replays the steps done
/// and submits the others, so a request cut short (a broker restart, a
/// step refused) is completed by its retry without a task submitted twice.
async fn submit_in_steps(
    app: &App,
    user: i64,
    org: u32,
    req: SubmitRequest,
    key: Option<SubmitKey>,
) -> Result<(Vec<u64>, Option<u32>), ServiceError> {
    let one = |tasks, workflow, key, reservation| Write::Submit {
        user,
        org,
        tasks,
        workflow,
        key,
        reservation,
    };
    if req.workflow.is_some() || req.tasks.len() <= SUBMIT_STEP {
        return match app.write(one(req.tasks, req.workflow, key, None)).await? {
            Written::Submitted { ids, workflow } => Ok((ids, workflow)),
            other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
        };
    }
    // Retried whole, or its key used for another request.
    if let Some(k) = &key {
        let k2 = k.clone();
        if let Some(done) = app.read(move |b| b.keyed(user, &k2)).await?? {
            return Ok(done);
        }
    }
    let total = req.tasks.len();
    let reservation = app.read(move |b| b.reserve(user, org, total as u64)).await??;
    // Given back however this ends (done, refused, or the client gone and
    // this future dropped).
    let _release = Release(app.tx.clone(), reservation);
    let mut ids: Vec<u64> = Vec::with_capacity(total);
    let mut tasks = req.tasks.into_iter();
    let mut step = 0;
    while ids.len() < total {
        let chunk: Vec<NewTask> = tasks.by_ref().take(SUBMIT_STEP).collect();
        let key = key.as_ref().map(|k| SubmitKey {
            key: format!("{} step {step}", k.key),
            digest: k.digest,
        });
        let done = ids.len();
        let refused = |e: ServiceError, ids: &[u64]| {
            if done == 0 {
                return e;
            }
            let retry = if key.is_some() {
                "retry with the same Idempotency-Key to submit the rest (those submitted are not submitted again)"
            } else {
                "without an Idempotency-Key a retry submits them again: submit the rest alone"
            };
            e.with_message(format!(
                "tasks[{done}..]: {}; the request's first {done} tasks were submitted (ids {} to {}): {retry}",
                e.message(),
                ids[0],
                ids[done - 1]
            ))
        };
        match app.write(one(chunk, None, key.clone(), Some(reservation))).await {
            Ok(Written::Submitted { ids: got, .. }) => ids.extend(got),
            Ok(other) => return Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
            Err(e) => return Err(refused(e, &ids)),
        }
        step += 1;
    }
    if let Some(k) = key {
        let all = ids.clone();
        if let Err(e) = app.read(move |b| b.remember_key(user, &k, &all)).await? {
            // The steps' keys answer a retry all the same.
            tracing::warn!("a submission's key was not kept whole: {}", e.message());
        }
    }
    Ok((ids, None))
}

/// Releases a reservation of [`submit_in_steps`] when dropped.
struct Release(mpsc::Sender<Msg>, u64);

impl Drop for Release {
    fn drop(&mut self) {
        let id = self.1;
        let _ = self.0.send(Msg::Read(Box::new(move |b| b.release(id))));
    }
}

/// `GET /v1/tasks`'s query: the page after task `after`, of `limit`
/// tasks.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TasksQuery {
    after: Option<u64>,
    limit: Option<u32>,
}

async fn list_tasks(State(app): State<App>, h: HeaderMap, q: Result<Query<TasksQuery>, QueryRejection>) -> R {
    let who = app.who(&h).await?;
    let Query(q) = q.map_err(|e| ServiceError::Invalid(format!("query: {}", e.body_text())))?;
    let limit = q.limit.unwrap_or(TASKS_PAGE);
    if !(1..=MAX_TASKS_PAGE).contains(&limit) {
        return Err(ServiceError::Invalid(format!(
            "query: limit {limit}: from 1 to {MAX_TASKS_PAGE}"
        )));
    }
    let after = q.after;
    let reply = app.read(move |b| b.task_list(&who, after, limit)).await??;
    json(StatusCode::OK, &reply)
}

fn task_id(s: &str) -> Result<u64, ServiceError> {
    s.parse()
        .map_err(|_| ServiceError::NotFound(format!("no task `{s}` (task ids are numbers)")))
}

async fn get_task(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let who = app.who(&h).await?;
    let id = task_id(&id)?;
    let t = app.read(move |b| b.task(&who, id)).await??;
    json(StatusCode::OK, &t)
}

async fn cancel(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, false, "cancel", |who, task| Write::Cancel {
        who,
        task,
    })
    .await
}

/// A task is put on hold (by its user or the admin): it does not run
/// until released. Only a waiting or held task.
async fn hold(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, false, "hold", |who, task| Write::Hold {
        who,
        task,
    })
    .await
}

/// A task on hold is released (the admin's hold by the admin only).
async fn release(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, false, "release", |who, task| Write::Unhold {
        who,
        task,
    })
    .await
}

/// The admin's hold and release (`admin task hold|release`): refused
/// without the admin token, where `/v1/tasks/ID/hold` would act as the
/// user whose token it is.
async fn admin_hold(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, true, "task hold", |who, task| Write::Hold {
        who,
        task,
    })
    .await
}

async fn admin_release(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    task_change(&app, &h, &id, true, "task release", |who, task| Write::Unhold {
        who,
        task,
    })
    .await
}

/// Applies the write `make(who, task)` to task `id` (with `admin_only`,
/// for the admin token alone) and answers with the task, recorded in the
/// audit log as `action`.
async fn task_change(
    app: &App,
    h: &HeaderMap,
    id: &str,
    admin_only: bool,
    action: &str,
    make: impl FnOnce(Principal, u64) -> Write,
) -> R {
    let who = app.who(h).await?;
    if admin_only {
        admin(&who)?;
    }
    let task = task_id(id)?;
    match app.write(make(who.clone(), task)).await? {
        Written::Cancelled(t) => {
            app.audit(&who, action, serde_json::json!({"task": task, "state": t.state}));
            json(StatusCode::OK, &t)
        }
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

async fn explain(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let who = app.who(&h).await?;
    let id = task_id(&id)?;
    let t = app.read(move |b| b.explain(&who, id)).await??;
    json(StatusCode::OK, &t)
}

async fn status(State(app): State<App>, h: HeaderMap) -> R {
    let who = app.who(&h).await?;
    let s = app.read(move |b| b.status(&who)).await??;
    json(StatusCode::OK, &s)
}

async fn register(State(app): State<App>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> R {
    let who = app.who(&h).await?;
    let org = worker_org(&who)?;
    let req: RegisterRequest = decode(body)?;
    req.check()
        .map_err(|m| ServiceError::Invalid(format!("request body: {m}")))?;
    let host = req.host.clone();
    match app
        .write(Write::Register {
            org,
            slots: req.slots,
            host: req.host,
        })
        .await?
    {
        Written::Registered(r) => {
            app.audit(
                &who,
                "worker register",
                serde_json::json!({"worker": r.worker, "host": host, "slots": req.slots}),
            );
            json(StatusCode::CREATED, &r)
        }
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

fn worker_id(s: &str) -> Result<u64, ServiceError> {
    s.parse()
        .map_err(|_| ServiceError::NotFound(format!("no worker `{s}`")))
}

async fn poll(
    State(app): State<App>,
    h: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> R {
    let (worker, org) = worker_session(&app.who(&h).await?, &id)?;
    let req: PollRequest = decode(body)?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(req.wait_ms.min(MAX_WAIT_MS));
    let mut generation = app.generation.clone();
    let mut stopping = app.stopping.clone();
    loop {
        if *stopping.borrow_and_update() {
            return Err(ServiceError::Unavailable("the broker is shutting down".into()));
        }
        generation.borrow_and_update();
        let reply = app.read(move |b| b.poll(worker, org)).await??;
        if !reply.assign.is_empty()
            || !reply.kill.is_empty()
            || (reply.drain && !req.draining)
            || tokio::time::Instant::now() >= deadline
        {
            return json(StatusCode::OK, &reply);
        }
        tokio::select! {
            changed = generation.changed() => {
                if changed.is_err() {
                    return Err(ServiceError::Unavailable("the broker is shutting down".into()));
                }
            }
            _ = tokio::time::sleep_until(deadline) => {}
            _ = stopping.changed() => {}
        }
    }
}

async fn report(
    State(app): State<App>,
    h: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> R {
    let (worker, org) = worker_session(&app.who(&h).await?, &id)?;
    let body: ReportRequest = decode(body)?;
    match app.write(Write::Report { worker, org, body }).await? {
        Written::Reported(r) => json(StatusCode::OK, &r),
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

async fn output_in(
    State(app): State<App>,
    h: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> R {
    let (worker, _) = worker_session(&app.who(&h).await?, &id)?;
    let req: OutputsRequest = decode(body)?;
    let reply = app.read(move |b| b.store_outputs(worker, &req.outputs)).await??;
    json(StatusCode::OK, &reply)
}

/// `?stream=stdout|stderr&attempt=N` of `GET /v1/tasks/ID/output`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputQuery {
    #[serde(default)]
    stream: Option<String>,
    #[serde(default)]
    attempt: Option<u32>,
}

async fn output_out(
    State(app): State<App>,
    h: HeaderMap,
    Path(id): Path<String>,
    q: Result<axum::extract::Query<OutputQuery>, axum::extract::rejection::QueryRejection>,
) -> R {
    let who = app.who(&h).await?;
    let id = task_id(&id)?;
    let q = q
        .map_err(|e| ServiceError::Invalid(format!("query: {}", e.body_text())))?
        .0;
    let stderr = match q.stream.as_deref() {
        None | Some("stdout") => false,
        Some("stderr") => true,
        Some(other) => {
            return Err(ServiceError::Invalid(format!(
                "stream `{other}`: stdout or stderr"
            )));
        }
    };
    let o = app.read(move |b| b.output(&who, id, stderr, q.attempt)).await??;
    Ok((
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_string()),
            (
                header::HeaderName::from_static("x-fairsched-attempt"),
                o.attempt.to_string(),
            ),
            (
                header::HeaderName::from_static("x-fairsched-bytes"),
                o.bytes.to_string(),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        o.text,
    )
        .into_response())
}

async fn leave(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let (worker, org) = worker_session(&app.who(&h).await?, &id)?;
    app.write(Write::Leave {
        worker,
        org,
        why: Gone::Left,
    })
    .await?;
    json(StatusCode::OK, &serde_json::json!({}))
}

async fn drain(State(app): State<App>, h: HeaderMap, Path(id): Path<String>) -> R {
    let (worker, org) = worker_session(&app.who(&h).await?, &id)?;
    match app.write(Write::Drain { worker, org }).await? {
        Written::Draining { slots } => json(StatusCode::OK, &DrainReply { slots }),
        other => Err(ServiceError::Unavailable(format!("unexpected {other:?}"))),
    }
}

/// The published text ([`render_metrics`]), then the HTTP side's own
/// counters as of this request.
async fn metrics(State(app): State<App>) -> R {
    let frame = app.metrics_frame().await?;
    let mut text = String::with_capacity(frame.body.len() + 1024);
    text.push_str(std::str::from_utf8(&frame.body).unwrap_or_default());
    let _ = writeln!(
        text,
        "# HELP fairsched_http_broker_reads_total Reads the broker's thread ran for HTTP requests (token lookups, frame builds and every authenticated read).\n# TYPE fairsched_http_broker_reads_total counter\nfairsched_http_broker_reads_total {}",
        app.reads.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        text,
        "# HELP fairsched_http_frames_built_total Frames the broker's thread built for the routes that need no token (each serves every request until it is stale).\n# TYPE fairsched_http_frames_built_total counter\nfairsched_http_frames_built_total{{frame=\"dashboard\"}} {}\nfairsched_http_frames_built_total{{frame=\"metrics\"}} {}",
        app.dashboard.builds(),
        app.metrics.builds()
    );
    let _ = writeln!(
        text,
        "# HELP fairsched_http_rate_limited_total Requests to the routes that need no token refused with 429 (per-client rate limit).\n# TYPE fairsched_http_rate_limited_total counter\nfairsched_http_rate_limited_total {}",
        app.limited.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        text,
        "# HELP fairsched_http_bodies_shed_total Requests refused with 503 because their token's request-body budget (or its pool) was used up.\n# TYPE fairsched_http_bodies_shed_total counter\nfairsched_http_bodies_shed_total {}",
        app.shed.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        text,
        "# HELP fairsched_http_body_bytes Bytes of request bodies held now (being read, or with their handler).\n# TYPE fairsched_http_body_bytes gauge\nfairsched_http_body_bytes {}",
        app.bodies.total()
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

/// The rate limit of the routes that need no token: 429, with
/// `Retry-After` (whole seconds, at least 1), past a client's share.
async fn limit_anonymous(
    State((limiter, limited)): State<(Arc<Limiter>, Arc<AtomicU64>)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(peer) = crate::server::peer(&req)
        && let Err(wait) = limiter.take(peer.ip(), Instant::now())
    {
        limited.fetch_add(1, Ordering::Relaxed);
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let mut r = ServiceError::RateLimited(format!(
            "too many requests from {}: try again in {}s",
            peer.ip(),
            secs.max(1)
        ))
        .into_response();
        r.headers_mut().insert(header::RETRY_AFTER, secs.max(1).into());
        return r;
    }
    next.run(req).await
}

/// A file of the dashboard: bundled, same-origin only.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, dashboard::CSP),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

async fn dashboard_page() -> Response {
    asset("text/html; charset=utf-8", dashboard::PAGE)
}

async fn dashboard_script() -> Response {
    asset("text/javascript; charset=utf-8", dashboard::SCRIPT)
}

async fn dashboard_style() -> Response {
    asset("text/css; charset=utf-8", dashboard::STYLE)
}

/// The dashboard's snapshot (no token: aggregate, read-only data, as
/// `/metrics`): the published frame.
async fn dashboard_snapshot(State(app): State<App>) -> R {
    let frame = app.dashboard_frame().await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        frame.body.clone(),
    )
        .into_response())
}

/// The dashboard's snapshot now, then again whenever a new one is
/// published, as server-sent events (`event: snapshot`), until the broker
/// stops.
async fn dashboard_events(State(app): State<App>) -> R {
    // Subscribed before the first snapshot is taken: a newer one is sent
    // next (the same one is not sent twice).
    let frames = app.dashboard.subscribe();
    let first = app.dashboard_frame().await?;
    let stopping = app.stopping.clone();
    let text = |f: &Frame| String::from_utf8_lossy(&f.body).into_owned();
    let stream = futures_util::stream::unfold(
        (Some(first.clone()), first, frames, stopping),
        move |(pending, mut sent, mut frames, mut stopping)| async move {
            if let Some(f) = pending {
                // `retry`: a browser reconnects after 1 s (a restarted broker).
                let e = SseEvent::default()
                    .event("snapshot")
                    .retry(Duration::from_secs(1))
                    .data(text(&f));
                return Some((
                    Ok::<_, std::convert::Infallible>(e),
                    (None, sent, frames, stopping),
                ));
            }
            loop {
                if *stopping.borrow_and_update() {
                    return None;
                }
                tokio::select! {
                    changed = frames.changed() => {
                        // The publisher is gone: the broker is stopping.
                        changed.ok()?;
                    }
                    _ = stopping.changed() => continue,
                }
                let f = frames.borrow_and_update().clone();
                if let Some(f) = f
                    && !Arc::ptr_eq(&f, &sent)
                {
                    let e = SseEvent::default().event("snapshot").data(text(&f));
                    sent = f;
                    return Some((Ok(e), (None, sent, frames, stopping)));
                }
            }
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// Has the dashboard's snapshot rebuilt after each commit (`commits`) and
/// every [`DASHBOARD_REFRESH`], while at least one event stream listens
/// (the frames requests make reach the streams too).
async fn publish_dashboard(app: App) {
    let mut stopping = app.stopping.clone();
    let mut commits = app.commits.clone();
    loop {
        let now = tokio::time::Instant::now();
        let next = match app.dashboard.latest() {
            Some(f) if app.dashboard.listeners() > 0 => (f.at + DASHBOARD_REFRESH).max(now),
            _ => now + DASHBOARD_REFRESH,
        };
        tokio::select! {
            changed = commits.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(next) => {}
            _ = stopping.changed() => {}
        }
        if *stopping.borrow_and_update() {
            return;
        }
        if app.dashboard.listeners() == 0 {
            continue;
        }
        if let Err(e) = app.dashboard_frame().await {
            // The actor stops after `stopping` is set: checked above.
            tracing::warn!("dashboard: {}", e.message());
            tokio::time::sleep(DASHBOARD_MIN_GAP).await;
        }
    }
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        include_str!("openapi.json"),
    )
        .into_response()
}

async fn not_found() -> ServiceError {
    ServiceError::NotFound("no such route (see /openapi.json)".into())
}

/// A route served with another method (axum adds the `Allow` header).
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ServiceError {
    ServiceError::MethodNotAllowed(format!(
        "{method} {}: method not allowed (the `Allow` header lists those this route takes; see /openapi.json)",
        uri.path()
    ))
}

/// Prometheus text format.
pub fn render_metrics(b: &mut Broker) -> String {
    let mut s = String::new();
    let (waiting, running) = b.live_counts();
    let c = b.counters.clone();
    let mut gauge = |name: &str, help: &str, v: String| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
    };
    gauge(
        "fairsched_tasks_queued",
        "Tasks waiting for a slot.",
        waiting.to_string(),
    );
    gauge("fairsched_tasks_running", "Tasks running.", running.to_string());
    gauge(
        "fairsched_tasks_held",
        "Workflow tasks held until their parents complete (not queued yet).",
        b.held_count().to_string(),
    );
    gauge(
        "fairsched_workers",
        "Workers holding a lease.",
        b.worker_count().to_string(),
    );
    let view = b.live().core().view();
    gauge(
        "fairsched_slots",
        "Slots contributed by workers.",
        view.total_slots().to_string(),
    );
    let _ = writeln!(
        s,
        "# HELP fairsched_tasks_ended_total Tasks ended since the broker started, by outcome.\n# TYPE fairsched_tasks_ended_total counter"
    );
    for outcome in ["completed", "failed", "cancelled", "killed", "rejected"] {
        let n = c.ended.get(outcome).copied().unwrap_or(0);
        let _ = writeln!(s, "fairsched_tasks_ended_total{{outcome=\"{outcome}\"}} {n}");
    }
    let _ = writeln!(
        s,
        "# HELP fairsched_steps_total Core steps logged since the broker started.\n# TYPE fairsched_steps_total counter\nfairsched_steps_total {}\n# HELP fairsched_commits_total Group commits since the broker started.\n# TYPE fairsched_commits_total counter\nfairsched_commits_total {}\n# HELP fairsched_requeued_lost_total Runs requeued because their worker lost its lease.\n# TYPE fairsched_requeued_lost_total counter\nfairsched_requeued_lost_total {}",
        c.steps, c.commits, c.requeued_lost
    );
    let _ = writeln!(
        s,
        "# HELP fairsched_dispatch_latency_seconds From submission to start.\n# TYPE fairsched_dispatch_latency_seconds histogram"
    );
    let mut cum = 0;
    for (i, le) in LATENCY_BUCKETS_MS.iter().enumerate() {
        cum += c.dispatch[i];
        let _ = writeln!(
            s,
            "fairsched_dispatch_latency_seconds_bucket{{le=\"{}\"}} {cum}",
            *le as f64 / 1000.0
        );
    }
    let _ = writeln!(
        s,
        "fairsched_dispatch_latency_seconds_bucket{{le=\"+Inf\"}} {}\nfairsched_dispatch_latency_seconds_sum {}\nfairsched_dispatch_latency_seconds_count {}",
        c.dispatch_count,
        c.dispatch_sum_ms as f64 / 1000.0,
        c.dispatch_count
    );
    let orgs = b.org_names();
    let org = |o: i64| match orgs.get(&(o as u32)) {
        Some(name) => label(name),
        None => o.to_string(),
    };
    let _ = writeln!(
        s,
        "# HELP fairsched_org_slots Slots each organization contributes.\n# TYPE fairsched_org_slots gauge"
    );
    for o in 0..view.org_count() {
        let _ = writeln!(
            s,
            "fairsched_org_slots{{org=\"{}\"}} {}",
            org(o as i64),
            view.org_slots(fairsched_core::OrgId(o as u32))
        );
    }
    let users = b.user_names();
    let _ = writeln!(
        s,
        "# HELP fairsched_user_satisfaction Slot-time a user's runs got (any outcome, runs in progress included) over the slot-time it deserved: the slots shared equally among the users with tasks waiting or running, while it had some (spec/diet-ethic.md, Metrics).\n# TYPE fairsched_user_satisfaction gauge"
    );
    for (u, v) in b.satisfactions() {
        let name = users.get(&u).map_or_else(|| u.to_string(), |n| label(n));
        let _ = writeln!(s, "fairsched_user_satisfaction{{user=\"{name}\"}} {v}");
    }
    let mut named: Vec<&'static str> = Vec::new();
    let mut gauges = b.live().core().gauges();
    // A metric's samples must be together.
    gauges.sort_by_key(|g| g.name);
    for g in gauges {
        let name = format!("fairsched_policy_{}", g.name);
        if !named.contains(&g.name) {
            named.push(g.name);
            let _ = writeln!(s, "# HELP {name} {}\n# TYPE {name} gauge", g.help);
        }
        match g.key {
            Some(("org", v)) => {
                let _ = writeln!(s, "{name}{{org=\"{}\"}} {}", org(v), g.value);
            }
            Some((k, v)) => {
                let _ = writeln!(s, "{name}{{{k}=\"{v}\"}} {}", g.value);
            }
            None => {
                let _ = writeln!(s, "{name} {}", g.value);
            }
        }
    }
    s
}

/// A label value of the Prometheus text format: `\`, `"` and line breaks
/// escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The actor: owns the broker, batches writes into group commits, runs
/// reads between them, expires leases and fires timers.
fn actor(
    mut b: Broker,
    rx: mpsc::Receiver<Msg>,
    generation: watch::Sender<u64>,
    changes: watch::Sender<u64>,
) {
    const MAX_BATCH: usize = 4096;
    let tick = Duration::from_millis(100);
    let mut last_check = Instant::now();
    loop {
        let wait = match b.next_timer() {
            Some(at) => {
                let ms = (at.millis() - b.clock().millis()).max(0) as u64;
                tick.min(Duration::from_millis(ms))
            }
            None => tick,
        };
        let mut batch = Vec::new();
        match rx.recv_timeout(wait) {
            Ok(m) => batch.push(m),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        let mut writes = Vec::new();
        let mut repliers = Vec::new();
        let mut reads = Vec::new();
        let mut stop = false;
        for m in batch {
            match m {
                Msg::Stop => stop = true,
                // Before leases are checked (below): a worker whose call
                // the door refused is not expired for it.
                Msg::Touch(worker, org, tx) => {
                    let _ = tx.send(b.touch(worker, org));
                }
                Msg::Write(w, tx) => {
                    writes.push(w);
                    repliers.push(Some(tx));
                }
                Msg::Read(f) => reads.push(f),
            }
        }
        if last_check.elapsed() >= tick {
            last_check = Instant::now();
            // A report waiting in this batch renews its worker's lease
            // before leases are checked: a busy broker does not expire a
            // worker whose heartbeat it has not applied yet.
            for w in &writes {
                if let Write::Report { worker, org, .. } = w {
                    b.touch(*worker, *org);
                }
            }
            for w in b.due() {
                tracing::warn!("a worker lost its lease: its tasks go back to the queue");
                writes.push(w);
                repliers.push(None);
            }
            // The outputs' retention, a bounded pass when one is due.
            match b.prune_outputs() {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!("{n} runs' output removed (serve --output-keep-for, --output-keep-bytes)")
                }
                Err(e) => tracing::warn!("the outputs' retention: {}", e.message()),
            }
        }
        let timer_due = b.next_timer().is_some_and(|at| at <= b.clock());
        if !writes.is_empty() || timer_due || b.unsettled() {
            let replies = b.write(writes);
            // Before the replies: a client that got its write acknowledged
            // and then reads a published frame gets one built after it.
            if *changes.borrow() != b.counters.commits {
                changes.send_replace(b.counters.commits);
            }
            for (tx, r) in repliers.into_iter().zip(replies) {
                if let Some(tx) = tx {
                    let _ = tx.send(r);
                }
            }
        }
        for f in reads {
            f(&mut b);
        }
        if *generation.borrow() != b.generation {
            let _ = generation.send(b.generation);
        }
        if *changes.borrow() != b.counters.commits {
            changes.send_replace(b.counters.commits);
        }
        if stop {
            b.snapshot_now();
            break;
        }
    }
}

/// Runs the broker until SIGTERM or SIGINT. `ready` gets the address
/// once it listens.
pub fn serve(opts: ServeOpts, ready: impl FnOnce(std::net::SocketAddr)) -> Result<(), String> {
    // Before anything is opened or locked: a wrong file is refused at once.
    let tls = opts
        .tls
        .as_ref()
        .map(crate::tls::TlsFiles::acceptor)
        .transpose()?;
    if opts.db.is_dir() {
        return Err(format!(
            "--db {}: a directory, not a database file",
            opts.db.display()
        ));
    }
    // Said of the database, not of the lock file beside it.
    if !opts.db.exists() {
        return Err(crate::store::StoreError::NotInitialized(opts.db.clone()).to_string());
    }
    // One broker per database: a second one would interleave its steps
    // with ours. The lock goes with the process (even on SIGKILL). It is
    // taken beside the file the path resolves to: two paths to one
    // database (a link, `..`) take one lock.
    let mut opts = opts;
    if let Ok(real) = opts.db.canonicalize() {
        opts.db = real;
    }
    // (`fairsched admin compact` takes the same lock.)
    let lock_path = crate::upkeep::lock_path(&opts.db);
    // A lock file this call creates is removed again if the broker does not
    // start (no database there, not a database, the address taken): only a
    // database that served keeps one.
    let new_lock = !lock_path.exists();
    let unlock = |lock: std::fs::File| {
        if new_lock {
            let _ = std::fs::remove_file(&lock_path);
        }
        drop(lock);
    };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    if let Err(e) = lock.try_lock() {
        // Another broker holds it: not ours to remove.
        return Err(match e {
            std::fs::TryLockError::WouldBlock => format!(
                "{}: another `fairsched serve` is using this database (it holds {})",
                opts.db.display(),
                lock_path.display()
            ),
            std::fs::TryLockError::Error(e) => format!("{}: {e}", lock_path.display()),
        });
    }
    let audit = match &opts.audit {
        None => None,
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
        {
            Ok(f) => Some(Arc::new(Mutex::new(f))),
            Err(e) => {
                unlock(lock);
                return Err(format!("the audit log {}: {e}", path.display()));
            }
        },
    };
    let broker = match Broker::open(&opts.db, opts.settings.clone()) {
        Ok(b) => b,
        Err(e) => {
            unlock(lock);
            return Err(e.to_string());
        }
    };
    let auth_db = match rusqlite::Connection::open_with_flags(
        &opts.db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| c.busy_timeout(Duration::from_secs(5)).map(|()| c))
    {
        Ok(c) => Arc::new(Mutex::new(c)),
        Err(e) => {
            unlock(lock);
            return Err(format!("{}: {e}", opts.db.display()));
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            unlock(lock);
            return Err(format!("tokio: {e}"));
        }
    };
    let (tx, rx) = mpsc::channel();
    let (gen_tx, gen_rx) = watch::channel(0u64);
    let (changes_tx, changes_rx) = watch::channel(broker.counters.commits);
    let started_ms = broker.clock().millis();
    let actor = match std::thread::Builder::new()
        .name("broker".into())
        .spawn(move || actor(broker, rx, gen_tx, changes_tx))
    {
        Ok(a) => a,
        Err(e) => {
            unlock(lock);
            return Err(format!("thread: {e}"));
        }
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let app = App {
        audit,
        auth_db,
        tx,
        generation: gen_rx,
        stopping: stop_rx,
        principals: Arc::default(),
        tokens_epoch: Arc::default(),
        started_ms,
        commits: changes_rx,
        dashboard: Arc::default(),
        metrics: Arc::default(),
        reads: Arc::default(),
        limited: Arc::default(),
        bodies: Arc::new(BodyBudget::new(
            BODY_FLOOR,
            opts.limits.body_budget,
            opts.limits.user_body_pool,
            opts.limits.worker_body_pool,
        )),
        body_idle: opts.limits.body_idle,
        shed: Arc::default(),
    };
    let publisher = app.clone();
    let doorkeeper = app.clone();
    let stopper = app.tx.clone();
    let limiter = Arc::new(Limiter::new(
        opts.limits.anonymous_rate,
        opts.limits.anonymous_burst,
    ));
    // The routes that need no token: each client address has a rate limit
    // on them (a route layer: a request to no route is not counted).
    let anonymous = Router::new()
        .route("/metrics", get(metrics))
        .route("/", get(dashboard_page))
        .route("/dashboard.js", get(dashboard_script))
        .route("/dashboard.css", get(dashboard_style))
        .route("/v1/dashboard", get(dashboard_snapshot))
        .route("/v1/dashboard/events", get(dashboard_events))
        .route("/openapi.json", get(openapi))
        .route("/healthz", get(|| async { "ok" }))
        .route_layer(axum::middleware::from_fn_with_state(
            (limiter, app.limited.clone()),
            limit_anonymous,
        ));
    let router = Router::new()
        .route("/v1/admin/orgs", post(add_org))
        .route("/v1/admin/users", post(add_user))
        .route("/v1/admin/worker-tokens", post(worker_token))
        .route("/v1/admin/worker-tokens/revoke", post(revoke_worker_tokens))
        .route("/v1/admin/tokens/revoke", post(revoke_token))
        .route("/v1/admin/users/rotate", post(rotate_user))
        .route("/v1/admin/users/remove", post(remove_user))
        .route("/v1/admin/users/run-as", post(set_run_as))
        .route("/v1/admin/orgs/remove", post(remove_org))
        .route("/v1/admin/quotas", post(set_quota).get(quotas))
        .route("/v1/admin/workers/{id}/drain", post(admin_drain))
        .route("/v1/admin/workers/{id}/hold", post(admin_hold_worker))
        .route("/v1/admin/workers/{id}/release", post(admin_release_worker))
        .route("/v1/admin/tasks/{id}/requeue", post(admin_requeue))
        .route("/v1/admin/tasks/{id}/hold", post(admin_hold))
        .route("/v1/admin/tasks/{id}/release", post(admin_release))
        .route("/v1/admin/workers/{id}/evict", post(admin_evict))
        .route("/v1/tasks", post(submit).get(list_tasks))
        .route("/v1/tasks/{id}", get(get_task))
        .route("/v1/tasks/{id}/cancel", post(cancel))
        .route("/v1/tasks/{id}/hold", post(hold))
        .route("/v1/tasks/{id}/release", post(release))
        .route("/v1/tasks/{id}/explain", get(explain))
        .route("/v1/tasks/{id}/output", get(output_out))
        .route("/v1/status", get(status))
        .route("/v1/workers", post(register))
        .route("/v1/workers/{id}/poll", post(poll))
        .route("/v1/workers/{id}/report", post(report))
        .route("/v1/workers/{id}/leave", post(leave))
        .route("/v1/workers/{id}/outputs", post(output_in))
        .route("/v1/workers/{id}/drain", post(drain))
        .merge(anonymous)
        // After every route: it applies to the routes defined before it.
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(doorkeeper, door))
        .layer(axum::middleware::from_fn(with_peer))
        .with_state(app);
    let listen = opts.listen.clone();
    let listening = std::cell::Cell::new(false);
    let served = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("--listen {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listening.set(true);
        tokio::spawn(publish_dashboard(publisher));
        ready(addr);
        crate::server::serve_connections(
            listener,
            router,
            opts.limits.header_time,
            tls,
            shutdown(stop_tx, opts.stop.clone()),
        )
        .await;
        Ok::<(), String>(())
    });
    // The server answered what was in flight; the actor finishes its batch
    // (every acknowledged write is committed) and stops. Connections still
    // open get 503s.
    let _ = stopper.send(Msg::Stop);
    let _ = actor.join();
    rt.shutdown_timeout(Duration::from_millis(500));
    if listening.get() {
        drop(lock);
        tracing::info!("broker stopped; every acknowledged request is in the log");
    } else {
        unlock(lock);
    }
    served
}

async fn shutdown(stopping: watch::Sender<bool>, stop: Option<Stop>) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let asked = async {
        match stop {
            Some(s) => s.0.notified().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = asked => {}
    }
    // Not eprintln!: a closed stderr (`2>&1 | head`) must not stop the
    // clean shutdown.
    let _ = writeln!(
        std::io::stderr(),
        "fairsched serve: shutting down (requests in flight are answered first)"
    );
    let _ = stopping.send(true);
}

#[cfg(test)]
mod tests {
    /// `/openapi.json` is valid JSON and describes every route the router
    /// serves, and nothing else.
    #[test]
    fn openapi_lists_every_route() {
        let doc: serde_json::Value = serde_json::from_str(include_str!("openapi.json")).unwrap();
        let mut documented: Vec<String> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(p, ops)| {
                ops.as_object()
                    .unwrap()
                    .keys()
                    .map(move |m| format!("{} {p}", m.to_uppercase()))
            })
            .collect();
        documented.sort();
        let src = include_str!("http.rs");
        let mut served: Vec<String> = src
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".route(\""))
            .flat_map(|l| {
                let (path, rest) = l.split_once('"').unwrap();
                let path = path.to_string();
                ["get(", "post("]
                    .into_iter()
                    .filter(move |m| rest.contains(m))
                    .map(move |m| format!("{} {path}", m.trim_end_matches('(').to_uppercase()))
            })
            .collect();
        served.sort();
        assert_eq!(documented, served);
    }

    /// The bodies `/openapi.json` describes have the fields the broker
    /// reads and writes: a request type exactly (its schema refuses
    /// anything else), a reply at least.
    #[test]
    fn openapi_describes_every_field() {
        use crate::api::*;
        let doc: serde_json::Value = serde_json::from_str(include_str!("openapi.json")).unwrap();
        let fields = |schema: &str| -> Vec<String> {
            let mut v: Vec<String> = doc["components"]["schemas"][schema]["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("no schema {schema}"))
                .keys()
                .cloned()
                .collect();
            v.sort();
            v
        };
        let keys = |v: serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let task = NewTask {
            command: "c".into(),
            name: Some("n".into()),
            stage_in: Some("i".into()),
            stage_out: Some("o".into()),
            priority: Some(2),
            optional: true,
            activity: Some(0),
            after: vec![0],
            time_limit_ms: Some(1),
            memory_bytes: Some(1),
            caps: RunCaps {
                processes: Some(1),
                ..RunCaps::default()
            },
        };
        let wf = WorkflowSpec {
            name: "w".into(),
            activities: vec!["a".into()],
        };
        let req = SubmitRequest {
            tasks: vec![task.clone()],
            org: Some("o".into()),
            workflow: Some(wf.clone()),
        };
        assert_eq!(keys(serde_json::to_value(&task).unwrap()), fields("NewTask"));
        assert_eq!(keys(serde_json::to_value(&wf).unwrap()), fields("WorkflowSpec"));
        assert_eq!(keys(serde_json::to_value(&req).unwrap()), fields("SubmitRequest"));
        let replies = [
            (
                "SubmitReply",
                serde_json::to_value(SubmitReply {
                    ids: vec![1],
                    workflow: Some(1),
                })
                .unwrap(),
            ),
            (
                "StatusReply",
                serde_json::to_value(StatusReply::default()).unwrap(),
            ),
            (
                "TasksReply",
                serde_json::to_value(TasksReply {
                    tasks: Vec::new(),
                    users: [(1, "u".to_string())].into(),
                    next: Some(1),
                })
                .unwrap(),
            ),
            (
                "Task",
                serde_json::to_value(TaskOut {
                    workflow: Some(1),
                    reason: Some("r".into()),
                    ..TaskOut::default()
                })
                .unwrap(),
            ),
        ];
        for (schema, v) in replies {
            let documented = fields(schema);
            for k in keys(v) {
                assert!(documented.contains(&k), "{schema}.{k} is not in openapi.json");
            }
        }
    }
}
