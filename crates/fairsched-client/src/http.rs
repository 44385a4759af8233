//! What the command line's calls ([`Client`](crate::Client)) and the
//! worker's ([`WorkerClient`](crate::worker::WorkerClient)) share, each
//! in one place: the broker's URL, the agent's settings (which
//! certificates an https:// broker may have), one request and its reply,
//! the reason an error reply gives, and what a refused certificate means.

use std::path::Path;
use std::time::Duration;

use fairsched_proto::api::ErrorBody;
use serde::Serialize;
use ureq::config::ConfigBuilder;
use ureq::typestate::AgentScope;

use crate::ClientError;

/// `broker` as a base URL: an `http://` or `https://` URL, without a
/// trailing `/`.
pub fn base_url(broker: &str) -> Result<String, ClientError> {
    let b = broker.trim();
    if !b.starts_with("http://") && !b.starts_with("https://") {
        return Err(ClientError::Usage(format!(
            "--broker `{b}`: expected an http:// or https:// URL, like http://127.0.0.1:8080"
        )));
    }
    Ok(b.trim_end_matches('/').to_string())
}

/// Every agent's settings, before its timeouts: an error status is a
/// reply to read (the broker's reason), not a transport error; an
/// https:// broker's certificate must be signed by the CA of `ca_cert`
/// (a PEM file) when given, else by one of the usual public CAs (Mozilla's
/// list, built in).
pub(crate) fn agent_config(ca_cert: Option<&Path>) -> Result<ConfigBuilder<AgentScope>, ClientError> {
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(path) = ca_cert {
        tls = tls.root_certs(ca_roots(path)?);
    }
    Ok(ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls.build()))
}

/// The certificates of the PEM file `path` (`--ca-cert`, or
/// `FAIRSCHED_CA_CERT`: an error names both).
fn ca_roots(path: &Path) -> Result<ureq::tls::RootCerts, ClientError> {
    let named = |why: String| {
        ClientError::File(format!(
            "the CA certificate {} (--ca-cert or FAIRSCHED_CA_CERT): {why}",
            path.display()
        ))
    };
    let pem = std::fs::read(path).map_err(|e| named(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            // A key beside the certificate: not for us.
            Ok(_) => {}
            Err(e) => return Err(named(format!("not a PEM file: {e}"))),
        }
    }
    if certs.is_empty() {
        return Err(named(
            "no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(ureq::tls::RootCerts::new_with_certs(&certs))
}

/// What it means when `e` is the broker's certificate refused by this
/// client (`None`: another failure).
pub(crate) fn certificate_refused(e: &ureq::Error) -> Option<&'static str> {
    use rustls::{CertificateError, Error};
    // The handshake runs inside the first write or read: its error comes
    // wrapped in an I/O error.
    let tls = match e {
        ureq::Error::Rustls(t) => t,
        ureq::Error::Io(io) => io.get_ref()?.downcast_ref::<Error>()?,
        _ => return None,
    };
    match tls {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => Some(
            "the broker's certificate is not signed by a CA this client trusts (a private CA or a \
             self-signed certificate: give it with --ca-cert FILE or FAIRSCHED_CA_CERT)",
        ),
        // What `openssl req -x509` makes unless told otherwise.
        Error::InvalidCertificate(CertificateError::Other(other))
            if matches!(
                other.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            Some(
                "the broker's certificate is a CA's (basicConstraints CA:TRUE), which TLS clients \
                 refuse from a server: make it with CA:FALSE (docs/security.md, \"Native TLS\")",
            )
        }
        Error::InvalidCertificate(_) => Some("the broker's certificate is refused"),
        _ => None,
    }
}

/// One request to the broker.
pub(crate) struct Call<'a> {
    /// `GET`, else a `POST`.
    pub method: &'a str,
    pub path: &'a str,
    /// The `Bearer` credential.
    pub token: &'a str,
    /// One more header.
    pub header: Option<(&'a str, &'a str)>,
    /// The whole call's time limit, instead of the agent's.
    pub timeout: Option<Duration>,
    /// Longer replies are not read.
    pub limit: u64,
    /// A header of the reply to return.
    pub also: Option<&'a str>,
}

/// A reply of any status.
pub(crate) struct Reply {
    pub status: u16,
    pub text: String,
    /// The value of [`Call::also`].
    pub also: Option<String>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a [`Call`] has no [`Reply`].
pub(crate) enum Failed {
    /// The body could not be written as JSON.
    Encode(serde_json::Error),
    /// Not sent, or no reply: no connection, a TLS failure, a timeout.
    Send(ureq::Error),
    /// The reply's body was cut, or over [`Call::limit`].
    Read { status: u16, source: ureq::Error },
}

impl Call<'_> {
    /// Sends the call to `base` (from [`base_url`]), with `body` as JSON
    /// (a `POST`; none: an empty one), and reads the reply.
    pub fn send(
        &self,
        agent: &ureq::Agent,
        base: &str,
        body: Option<&impl Serialize>,
    ) -> Result<Reply, Failed> {
        let url = format!("{base}{}", self.path);
        let sent = if self.method == "GET" {
            self.prepare(agent.get(&url)).call()
        } else {
            let r = self.prepare(agent.post(&url));
            match body {
                Some(b) => {
                    let bytes = serde_json::to_vec(b).map_err(Failed::Encode)?;
                    r.header("Content-Type", "application/json").send(&bytes[..])
                }
                None => r.send_empty(),
            }
        };
        let mut resp = sent.map_err(Failed::Send)?;
        let status = resp.status().as_u16();
        let also = self.also.and_then(|name| {
            let v = resp.headers().get(name)?;
            v.to_str().ok().map(str::to_string)
        });
        let text = resp
            .body_mut()
            .with_config()
            .limit(self.limit)
            .read_to_string()
            .map_err(|source| Failed::Read { status, source })?;
        Ok(Reply { status, text, also })
    }

    /// The headers and the time limit of every call.
    fn prepare<B>(&self, r: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let mut r = r.header("Authorization", &format!("Bearer {}", self.token));
        if let Some((name, value)) = self.header {
            r = r.header(name, value);
        }
        match self.timeout {
            Some(t) => r.config().timeout_global(Some(t)).build(),
            None => r,
        }
    }
}

/// What an error reply says: its `error` (docs/protocol.md, "Errors"),
/// else its text as is; trimmed.
pub(crate) fn reason(text: String) -> String {
    let why = serde_json::from_str::<ErrorBody>(&text)
        .map(|e| e.error)
        .unwrap_or(text);
    why.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(base_url(" http://b:8080/ ").unwrap(), "http://b:8080");
        assert_eq!(base_url("https://b").unwrap(), "https://b");
        let e = base_url("b:8080").unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("`b:8080`"), "{e}");
    }

    #[test]
    fn reasons() {
        assert_eq!(reason(r#"{"error": " no such task "}"#.into()), "no such task");
        assert_eq!(reason("Bad Gateway\n".into()), "Bad Gateway");
        assert_eq!(reason(r#"{"other": 1}"#.into()), r#"{"other": 1}"#);
    }
}
