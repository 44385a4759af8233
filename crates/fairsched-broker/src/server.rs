//! The broker's accept loop: HTTP/1.1 connections served by hyper, each
//! request handed to the axum router with the peer's address
//! ([`ConnectInfo`]), and the timeouts `axum::serve` does not set.
//!
//! - **Header read**: a connection that has not sent a whole request head
//!   within [`HttpLimits::header_time`] is closed. hyper starts this timer
//!   whenever it waits for a request head, the first one or the next one
//!   on a kept-alive connection, so it is also the **idle keep-alive**
//!   timeout: an idle connection is closed after the same time. (A body
//!   has its own timers, in `http::door`: [`HttpLimits::body_idle`]
//!   without a byte, `BODY_TIME` in all, each answered with 408.)
//! - A response in progress (a long poll, the dashboard's event stream)
//!   is not under either timer.
//! - **TLS handshake** (`serve --tls-cert`, [`crate::tls`]): a connection
//!   whose handshake is not done within the same time is closed, so a
//!   client that opens a connection and sends nothing (or half a hello)
//!   holds nothing for long; the header-read timer then starts.
//!
//! Stopping: the loop stops accepting, every connection is asked to close
//! once its response in flight is written (hyper's graceful shutdown), and
//! [`serve_connections`] returns when all have closed.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// How the broker guards its HTTP side (`fairsched serve` flags).
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// A connection must send a whole request head within this time, the
    /// first one or the next one on a kept-alive connection (closed
    /// otherwise).
    pub header_time: Duration,
    /// Requests per second each client address may make to the routes
    /// that need no token (0: no limit)…
    pub anonymous_rate: u32,
    /// …and how many it may make at once before that rate applies.
    pub anonymous_burst: u32,
    /// The most bytes of request bodies one principal (the admin, a user,
    /// a worker, an organization's worker token) may have being read at
    /// once (503 beyond); the first 4 MiB of it are its own whatever the
    /// others send (`http::BODY_FLOOR`).
    pub body_budget: usize,
    /// Beyond their 4 MiB each, the users and the admin share this many
    /// bytes…
    pub user_body_pool: usize,
    /// …and the workers this many, which users cannot take.
    pub worker_body_pool: usize,
    /// A request body that sends nothing for this long is 408 (the
    /// connection is closed).
    pub body_idle: Duration,
}

/// See [`HttpLimits::header_time`].
pub const HEADER_TIME: Duration = Duration::from_secs(10);
/// See [`HttpLimits::anonymous_rate`].
pub const ANONYMOUS_RATE: u32 = 100;
/// See [`HttpLimits::anonymous_burst`].
pub const ANONYMOUS_BURST: u32 = 200;
/// See [`HttpLimits::body_budget`].
pub const BODY_BUDGET: usize = 16 << 20;
/// See [`HttpLimits::user_body_pool`].
pub const USER_BODY_POOL: usize = 256 << 20;
/// See [`HttpLimits::worker_body_pool`].
pub const WORKER_BODY_POOL: usize = 64 << 20;
/// See [`HttpLimits::body_idle`].
pub const BODY_IDLE: Duration = Duration::from_secs(10);

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            header_time: HEADER_TIME,
            anonymous_rate: ANONYMOUS_RATE,
            anonymous_burst: ANONYMOUS_BURST,
            body_budget: BODY_BUDGET,
            user_body_pool: USER_BODY_POOL,
            worker_body_pool: WORKER_BODY_POOL,
            body_idle: BODY_IDLE,
        }
    }
}

/// A connection's bytes: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Serves `router` on `listener` (through `tls` when given) until
/// `shutdown` completes, then lets each connection finish the response it
/// is writing and returns once all have closed.
pub async fn serve_connections(
    listener: TcpListener,
    router: Router,
    header_time: Duration,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_time);
    // Each connection holds a receiver: told to close by `close`, and the
    // loop knows they have all closed when none is left.
    let (close, closing) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let mut router = router.clone();
            // A `Router` is always ready: no `poll_ready` first.
            tower_service::Service::call(&mut router, req)
        });
        let http = http.clone();
        let tls = tls.clone();
        let mut closing = closing.clone();
        tokio::spawn(async move {
            let stream: Box<dyn Stream> = match tls {
                None => Box::new(stream),
                Some(tls) => {
                    let handshake = tokio::time::timeout(header_time, handshake(&tls, stream));
                    tokio::select! {
                        done = handshake => match done {
                            Ok(Ok(s)) => Box::new(s),
                            // Plain HTTP (answered 400), a certificate
                            // the client refused, a reset.
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, "TLS handshake failed: {e}");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "no TLS handshake within {header_time:?}: closed");
                                return;
                            }
                        },
                        // Stopping: no response is in flight yet.
                        _ = closing.wait_for(|stop| *stop) => return,
                    }
                }
            };
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            loop {
                tokio::select! {
                    // A timeout, a reset, a malformed request: the
                    // connection is over either way.
                    _ = conn.as_mut() => break,
                    changed = closing.changed() => {
                        if changed.is_err() {
                            // Not before this task ends (the loop waits
                            // for it): never here.
                            let _ = conn.as_mut().await;
                            break;
                        }
                        if *closing.borrow_and_update() {
                            // The response in flight is written, then the
                            // connection closes.
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
            drop(closing);
        });
    }
    drop(listener);
    let _ = close.send(true);
    // Only the connections' receivers are left to wait for.
    drop(closing);
    close.closed().await;
}

/// The TLS handshake of a new connection. One that opens with something
/// else than a TLS handshake record (0x16) is most likely plain HTTP: it
/// gets a 400 that says to use https://, not a TLS alert it cannot read.
async fn handshake(
    tls: &TlsAcceptor,
    mut stream: tokio::net::TcpStream,
) -> std::io::Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut first = [0u8; 1];
    if stream.peek(&mut first).await? == 1 && first[0] != 0x16 {
        let body = r#"{"error":"this port speaks HTTPS: use an https:// URL"}"#;
        let reply = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        // The request head is read first: a socket closed with unread
        // bytes is reset, and the client might not see the reply.
        let mut head = [0u8; 4096];
        let _ = stream.read(&mut head).await?;
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await?;
        // Until the client closes (the caller's timeout bounds it).
        while stream.read(&mut head).await? > 0 {}
        return Err(std::io::Error::other("plain HTTP on the TLS port: answered 400"));
    }
    tls.accept(stream).await
}

/// Errors of `accept`: one connection's (it was reset before it was
/// taken) are passed over; others (out of file descriptors) are waited
/// out, as `axum::serve` does.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::error!("accepting a connection: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The peer of a request served by [`serve_connections`].
pub fn peer(req: &axum::extract::Request) -> Option<SocketAddr> {
    req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}
