//! What the service refuses, and why: one variant per kind of refusal, in
//! the domain's words. The HTTP layer maps each to its status code, in one
//! place (`ServiceError::status`, in [`crate::http`]); the service never
//! names a status.

use crate::identity::IdentityError;
use std::fmt::Display;

/// A request refused, with the reason the client reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The request is malformed, or asks for what the broker's settings
    /// do not allow (a limit over the maximum, a bad field).
    #[error("{0}")]
    Invalid(String),
    /// No credential, or one the broker does not know.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this (another user's task, a removed user, a
    /// worker's call without its session).
    #[error("{0}")]
    Forbidden(String),
    /// No such task, worker, route or run output.
    #[error("{0}")]
    NotFound(String),
    /// The route exists, not with this method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The request's body took too long to arrive.
    #[error("{0}")]
    TimedOut(String),
    /// The request does not fit the task's or the worker's state now (a
    /// task already ended, already on hold; an idempotency key reused).
    #[error("{0}")]
    Conflict(String),
    /// The worker lost its lease or left: it must register again.
    #[error("{0}")]
    Gone(String),
    /// The request's body is over the limit.
    #[error("{0}")]
    TooLarge(String),
    /// The submission would pass a quota on queued tasks.
    #[error("{0}")]
    Quota(String),
    /// The client sent too many requests to the routes that need no token.
    #[error("{0}")]
    RateLimited(String),
    /// The broker cannot answer now: its database failed, it is shutting
    /// down, or it is busy; a retry may succeed.
    #[error("{0}")]
    Unavailable(String),
}

impl ServiceError {
    /// Why, as the client reads it.
    pub fn message(&self) -> &str {
        match self {
            ServiceError::Invalid(m)
            | ServiceError::Unauthenticated(m)
            | ServiceError::Forbidden(m)
            | ServiceError::NotFound(m)
            | ServiceError::MethodNotAllowed(m)
            | ServiceError::TimedOut(m)
            | ServiceError::Conflict(m)
            | ServiceError::Gone(m)
            | ServiceError::TooLarge(m)
            | ServiceError::Quota(m)
            | ServiceError::RateLimited(m)
            | ServiceError::Unavailable(m) => m,
        }
    }

    /// The same kind of refusal, saying `m`.
    pub fn with_message(&self, m: String) -> ServiceError {
        match self {
            ServiceError::Invalid(_) => ServiceError::Invalid(m),
            ServiceError::Unauthenticated(_) => ServiceError::Unauthenticated(m),
            ServiceError::Forbidden(_) => ServiceError::Forbidden(m),
            ServiceError::NotFound(_) => ServiceError::NotFound(m),
            ServiceError::MethodNotAllowed(_) => ServiceError::MethodNotAllowed(m),
            ServiceError::TimedOut(_) => ServiceError::TimedOut(m),
            ServiceError::Conflict(_) => ServiceError::Conflict(m),
            ServiceError::Gone(_) => ServiceError::Gone(m),
            ServiceError::TooLarge(_) => ServiceError::TooLarge(m),
            ServiceError::Quota(_) => ServiceError::Quota(m),
            ServiceError::RateLimited(_) => ServiceError::RateLimited(m),
            ServiceError::Unavailable(_) => ServiceError::Unavailable(m),
        }
    }

    /// The broker cannot answer: its store failed (`e` says how).
    pub(crate) fn unavailable(e: impl Display) -> ServiceError {
        ServiceError::Unavailable(e.to_string())
    }
}

impl From<IdentityError> for ServiceError {
    fn from(e: IdentityError) -> ServiceError {
        match e {
            IdentityError::Invalid(m) => ServiceError::Invalid(m),
            IdentityError::Exists(m) => ServiceError::Conflict(format!("{m} already exists")),
            IdentityError::Unknown(m) => ServiceError::NotFound(format!("no {m}")),
            IdentityError::Store(s) => ServiceError::unavailable(s),
        }
    }
}
