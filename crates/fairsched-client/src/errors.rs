//! What goes wrong talking to a broker: [`ClientError`] for the command
//! line and the dispatcher, [`CallError`] for the worker, whose agent acts
//! on each kind differently.

/// What went wrong talking to a broker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The caller's mistake (a missing token, a malformed URL, a workflow
    /// file that does not say what to run): `fairsched` exits with 2.
    #[error("{0}")]
    Usage(String),
    #[error("cannot reach the broker at {base}: {source}")]
    Unreachable {
        base: String,
        #[source]
        source: Box<ureq::Error>,
    },
    /// TLS: the broker's certificate is not one this client accepts.
    #[error("{base}: {why}: {source}")]
    Certificate {
        base: String,
        why: &'static str,
        #[source]
        source: Box<ureq::Error>,
    },
    /// The broker answered with an error status.
    #[error("{method} {path}: {status}: {message}")]
    Refused {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error("{method} {path}: malformed reply: {why}")]
    Malformed {
        method: String,
        path: String,
        why: String,
    },
    /// A file the caller named (a workflow).
    #[error("{0}")]
    File(String),
    /// A submission's retries ran out after a try that may have reached
    /// the broker: its tasks may exist. `fairsched` exits with 3.
    #[error(
        "{last}; the broker may have taken the submission before its reply was lost: run the same command again with --key {key} (within 24 h) to get its tasks' ids, or to submit them if it did not, never twice"
    )]
    Unconfirmed { key: String, last: Box<ClientError> },
}

impl ClientError {
    /// Whether it is the caller's mistake.
    pub fn is_usage(&self) -> bool {
        matches!(self, ClientError::Usage(_))
    }
}

/// Why a worker's call ([`WorkerClient`](crate::worker::WorkerClient)) did
/// not give a usable reply: each kind is one way for the worker to go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// 410 (or 404 on a worker's own endpoint): the broker no longer
    /// knows this worker; the broker's reason (it left, it lost its lease,
    /// the admin evicted it).
    #[error("{0}")]
    Gone(String),
    /// 401 or 403: the token is wrong; retrying cannot help.
    #[error("{0}")]
    Refused(String),
    /// Another 4xx: this request will never be accepted; resending it cannot help.
    #[error("{0}")]
    Rejected(String),
    /// Cannot connect, timed out, 5xx, or a malformed reply: try again later.
    #[error("{0}")]
    Transient(String),
    /// 503 with `fairsched-lease: renewed`: the broker refused the call for
    /// load but took it as a sign of life, renewing the worker's lease
    /// (as of when the call was sent at the latest); try again later.
    #[error("{0}")]
    Busy(String),
}
