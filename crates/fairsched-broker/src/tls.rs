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
}

impl TlsFiles {
    /// Reads both files; an error names the file (and the flag) at fault.
    pub fn acceptor(&self) -> Result<TlsAcceptor, String> {
        let certs = certs(&self.cert)?;
        let key = key(&self.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                format!(
                    "--tls-cert {} with --tls-key {}: {e}",
                    self.cert.display(),
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

/// Every certificate of the PEM file `path`, in its order.
fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let flag = "--tls-cert";
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

/// The first private key of the PEM file `path`.
fn key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let flag = "--tls-key";
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
        let f = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
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
        let missing = TlsFiles {
            cert: dir.path().join("nope.pem"),
            key: dir.path().join("key.pem"),
        };
        let e = refused(&missing);
        assert!(e.starts_with("--tls-cert ") && e.contains("nope.pem"), "{e}");

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
