//! Native TLS (issue 27): `serve --tls-cert --tls-key` (or the same keys
//! in `--config`), clients and workers trusting a private CA with
//! `--ca-cert` or `FAIRSCHED_CA_CERT`; what is refused, and how it says so.
//! The certificates are made here: a CA, and the broker's certificate for
//! 127.0.0.1 that it signs.

use crate::common::{Api, Broker, Pki, Proc, bin, run_in, wait_for};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A CA, and the broker's certificate and key it signed, in `dir/tls`.
fn pki(dir: &Path) -> Pki {
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    Pki::make(&tls.join("ca.pem"), &tls.join("cert.pem"), &tls.join("key.pem"))
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[track_caller]
fn refused(o: &Output, says: &[&str]) -> String {
    assert!(!o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    for s in says {
        assert!(err.contains(s), "expected {s:?} in: {err}");
    }
    err
}

/// The certificate and key from `--config` (relative to the file's
/// folder); `submit` with `--ca-cert`, `status` and `output` with
/// `FAIRSCHED_CA_CERT`, a worker with `--ca-cert`: the task runs.
#[test]
fn a_task_submitted_over_https_runs_on_a_worker_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        "tls_cert = \"tls/cert.pem\"\ntls_key = \"tls/key.pem\"\n",
    )
    .unwrap();
    let mut b = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--config", path(&config)],
        "30s",
        "127.0.0.1:0",
    );
    assert!(b.url.starts_with("https://127.0.0.1:"), "{}", b.url);
    b.ca = Some(pki.ca.clone());
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let worker = b.worker_token("physics");
    let _w = b.worker("w1", &worker, 1, &dir.path().join("wd"), "process");
    b.wait_slots(1);

    let submitted = ok(&run_in(
        dir.path(),
        &[
            "submit",
            "--broker",
            &b.url,
            "--token",
            &alice,
            "--ca-cert",
            path(&pki.ca),
            "--",
            "echo over-tls",
        ],
    ));
    assert_eq!(submitted.trim(), "1");
    b.wait_idle(Duration::from_secs(30));
    let cli = |args: &[&str]| {
        bin()
            .current_dir(dir.path())
            .env("FAIRSCHED_CA_CERT", &pki.ca)
            .args(args)
            .args(["--broker", &b.url, "--token", &alice])
            .output()
            .unwrap()
    };
    let status = ok(&cli(&["status", "--json"]));
    assert!(status.contains("\"completed\": 1"), "{status}");
    assert_eq!(ok(&cli(&["output", "1"])), "over-tls\n");
}

/// A plain-HTTP request to the TLS port, a client or a worker without the
/// CA, a connection that never finishes its handshake: each refused, the
/// broker serving on.
#[test]
fn plain_http_untrusted_clients_and_stalled_handshakes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut b = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &[
            "--tls-cert",
            path(&pki.cert),
            "--tls-key",
            path(&pki.key),
            "--header-timeout",
            "300ms",
        ],
        "30s",
        "127.0.0.1:0",
    );
    b.ca = Some(pki.ca.clone());
    b.add_org("physics");
    let alice = b.add_user("alice", "physics");
    let worker = b.worker_token("physics");

    // Plain HTTP to the TLS port: a 400 that says what to do.
    let plain = b.url.replacen("https://", "http://", 1);
    let r = Api::with_timeout(&plain, Duration::from_secs(5)).get("/healthz", None);
    assert_eq!(
        (r.status, r.error()),
        (400, "this port speaks HTTPS: use an https:// URL".into())
    );
    let o = run_in(dir.path(), &["status", "--broker", &plain, "--token", &alice]);
    refused(&o, &["400: this port speaks HTTPS"]);

    // No CA: the public roots do not know it, and the error says what to do.
    let o = run_in(dir.path(), &["status", "--broker", &b.url, "--token", &alice]);
    refused(&o, &["not signed by a CA this client trusts", "--ca-cert FILE"]);
    // Another CA (the broker's own certificate is not one).
    let o = run_in(
        dir.path(),
        &[
            "status",
            "--broker",
            &b.url,
            "--token",
            &alice,
            "--ca-cert",
            path(&pki.key),
        ],
    );
    refused(
        &o,
        &["key.pem (--ca-cert or FAIRSCHED_CA_CERT): no certificate in it"],
    );

    // A worker without the CA keeps trying, and says why in its log.
    let ca = b.ca.take();
    let _w = b.worker("blind", &worker, 1, &dir.path().join("wd"), "process");
    b.ca = ca;
    wait_for("the worker's certificate error", Duration::from_secs(20), || {
        let log = std::fs::read_to_string(dir.path().join("blind.stderr")).ok()?;
        log.contains("not signed by a CA this client trusts")
            .then_some(())
    });
    assert_eq!(b.api().status(&b.admin).slots, 0);

    // A connection that sends nothing, or half a TLS record, is closed
    // after --header-timeout.
    let addr = b.url.trim_start_matches("https://").to_string();
    for sent in [&b""[..], &b"\x16\x03\x01\x00\x80\x01"[..]] {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.write_all(sent).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let t = Instant::now();
        let mut buf = [0u8; 64];
        let closed = matches!(s.read(&mut buf), Ok(0) | Err(_)) && t.elapsed() < Duration::from_secs(5);
        assert!(closed, "after {sent:?}: still open after {:?}", t.elapsed());
    }
    assert!(b.api().healthy());
}

/// Files that are not a certificate or a key, named; one without the other;
/// and `--quickstart` writes an https:// URL that the commands run from its
/// folder use.
#[test]
fn bad_tls_files_are_named_and_quickstart_says_https() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let db = dir.path().join("never.db");
    let serve = |cert: &Path, key: &Path| {
        run_in(
            dir.path(),
            &[
                "serve",
                "--db",
                path(&db),
                "--listen",
                "127.0.0.1:0",
                "--tls-cert",
                path(cert),
                "--tls-key",
                path(key),
            ],
        )
    };
    let missing = dir.path().join("missing.pem");
    refused(&serve(&missing, &pki.key), &["--tls-cert", "missing.pem"]);
    refused(&serve(&pki.cert, &missing), &["--tls-key", "missing.pem"]);
    refused(&serve(&pki.key, &pki.key), &["key.pem: no certificate in it"]);
    refused(&serve(&pki.cert, &pki.cert), &["cert.pem: no private key in it"]);
    // A key that is not the certificate's.
    let other = KeyPair::generate().unwrap();
    let other_key = dir.path().join("other-key.pem");
    std::fs::write(&other_key, other.serialize_pem()).unwrap();
    refused(
        &serve(&pki.cert, &other_key),
        &["cert.pem with --tls-key", "other-key.pem"],
    );
    let o = run_in(
        dir.path(),
        &["serve", "--db", path(&db), "--tls-cert", path(&pki.cert)],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    refused(&o, &["--tls-cert needs --tls-key"]);
    assert!(!db.exists() && !dir.path().join("never.db.lock").exists());

    // Quickstart over TLS.
    let out = dir.path().join("quickstart.stdout");
    let mut cmd = bin();
    cmd.current_dir(dir.path())
        .args(["serve", "--quickstart", "--listen", "127.0.0.1:0"])
        .args(["--tls-cert", path(&pki.cert), "--tls-key", path(&pki.key)])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null());
    let _p = Proc::spawn("quickstart broker", &mut cmd, None);
    let line = wait_for("`listening on`", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&out).ok()?;
        let line = text.lines().find(|l| l.starts_with("listening on "))?;
        Some(line.to_string())
    });
    let url = line.trim_start_matches("listening on ");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let tokens = std::fs::read_to_string(dir.path().join("fairsched.tokens")).unwrap();
    assert!(tokens.contains(&format!("broker={url}\n")), "{tokens}");
    let status = bin()
        .current_dir(dir.path())
        .env("FAIRSCHED_CA_CERT", &pki.ca)
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(ok(&status).contains("\"waiting\": 0"));
}

/// A self-signed certificate that is a CA's (as `openssl req -x509` makes
/// by default) is refused by every client as a server's, even when given
/// as its own CA: the error says how to make one that works.
#[test]
fn a_ca_certificate_served_as_the_brokers_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let b = Broker::start_with(
        dir.path(),
        &["--policy", "fifo"],
        &["--tls-cert", path(&cert_file), "--tls-key", path(&key_file)],
        "30s",
        "127.0.0.1:0",
    );
    let o = run_in(
        dir.path(),
        &[
            "status",
            "--broker",
            &b.url,
            "--token",
            &b.admin,
            "--ca-cert",
            path(&cert_file),
        ],
    );
    refused(&o, &["basicConstraints CA:TRUE", "make it with CA:FALSE"]);
}
