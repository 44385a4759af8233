//! Native TLS (`serve --tls-cert FILE --tls-key FILE`): the broker's
//! certificate chain and private key, read once at start into the
//! acceptor that [`serve_connections`](crate::server::serve_connections)
//! puts in front of every connection. rustls with ring: TLS 1.2 and 1.3,
//! HTTP/1.1 announced by ALPN, no client certificates (every request
//! carries its token).
//!
//! The other way, a TLS-terminating reverse proxy in front of a broker on
//! loopback, is in docs/security.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Where the broker's certificate and key are (PEM files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain: the broker's own certificate first, then
    /// the intermediates that signed it, if any.
    pub cert: PathBuf,
    /// Its private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC).
    pub key: PathBuf,
    /// Where each path was given, as errors name it: `--tls-cert` and
    /// `--tls-key` ([`TlsFiles::new`]), or a configuration file's keys.
    pub given_as: (String, String),
}

impl TlsFiles {
    /// The files given as `--tls-cert CERT --tls-key KEY`.
    pub fn new(cert: PathBuf, key: PathBuf) -> TlsFiles {
        TlsFiles {
            cert,
            key,
            given_as: ("--tls-cert".into(), "--tls-key".into()),
        }
    }

    /// Reads both files; an error names the file (and where it was given)
    /// at fault.
    pub fn acceptor(&self) -> Result<TlsAcceptor, String> {
        let certs = certs(&self.given_as.0, &self.cert)?;
        let key = key(&self.given_as.1, &self.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                format!(
                    "{} {} with {} {}: {e}",
                    self.given_as.0,
                    self.cert.display(),
                    self.given_as.1,
                    self.key.display()
                )
            })?;
        // The accept loop serves HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// Every certificate of the PEM file `path` (given as `flag`), in its order.
fn certs(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = read(flag, path)?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} {}: not a PEM file: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

/// The first private key of the PEM file `path` (given as `flag`).
fn key(flag: &str, path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let text = read(flag, path)?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
        pem::Error::NoItemsFound => format!(
            "{flag} {}: no private key in it (expected PEM: -----BEGIN PRIVATE KEY-----)",
            path.display()
        ),
        e => format!("{flag} {}: not a PEM file: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path, cert: &str, key: &str) -> TlsFiles {
        let f = TlsFiles::new(dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&f.cert, cert).unwrap();
        std::fs::write(&f.key, key).unwrap();
        f
    }

    fn refused(f: &TlsFiles) -> String {
        match f.acceptor() {
            Ok(_) => panic!("{f:?} accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TlsFiles::new(dir.path().join("nope.pem"), dir.path().join("key.pem"));
        let e = refused(&missing);
        assert!(e.starts_with("--tls-cert ") && e.contains("nope.pem"), "{e}");
        // Given in a configuration file: named so.
        let from_file = TlsFiles {
            given_as: (
                "`tls_cert` in serve.toml".into(),
                "`tls_key` in serve.toml".into(),
            ),
            ..missing
        };
        let e = refused(&from_file);
        assert!(
            e.starts_with("`tls_cert` in serve.toml ") && e.contains("nope.pem"),
            "{e}"
        );

        let key_only = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let e = refused(&files(dir.path(), key_only, key_only));
        assert!(e.contains("cert.pem: no certificate in it"), "{e}");

        let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = refused(&files(dir.path(), cert, "just text\n"));
        assert!(e.contains("key.pem: no private key in it"), "{e}");

        // Well-formed PEM around garbage: rustls refuses the pair.
        let e = refused(&files(dir.path(), cert, key_only));
        assert!(e.contains("cert.pem with --tls-key"), "{e}");
    }
}
