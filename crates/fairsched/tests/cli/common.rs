//! Helpers shared by the test modules (`crate::common`), the live ones
//! first: a broker and its workers as real `fairsched` processes on
//! 127.0.0.1, each killed (and reaped) when its guard is dropped — also
//! when the test panics — and a small HTTP client (not every test uses
//! every helper).

#![allow(dead_code)]

use fairsched_broker::api::{StatusReply, TaskOut, TasksReply};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Says on the terminal that a test skips, and why: "skipping TEST: WHY"
/// on the standard error handle itself, which libtest does not capture
/// (it captures `eprintln!` and drops it for a test that passes, so a
/// skipped test would pass in silence). TEST is the running test's name,
/// else `what`.
pub fn skipping(what: &str, why: impl std::fmt::Display) {
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or(what);
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("skipping {test}: {why}\n").as_bytes(),
    );
}

/// Whether a Slurm cluster is up; panics if one is required and is not.
pub fn slurm_up() -> bool {
    let up = fairsched_slurm::tools::cluster_up();
    if let Err(why) = &up {
        assert!(
            std::env::var("FAIRSCHED_SLURM").as_deref() != Ok("required"),
            "FAIRSCHED_SLURM=required: {why}"
        );
        crate::common::skipping(module_path!(), why);
    }
    up.is_ok()
}

/// The CI's one Slurm cluster, for one test at a time: the tests that
/// submit to it (pilots, sweeps, steering) measure waits and fill its
/// processors, so none runs beside another. Poisoning is ignored (a test
/// that failed holding it leaves the cluster to the next).
pub fn slurm_exclusive() -> std::sync::MutexGuard<'static, ()> {
    static SLURM: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SLURM.lock().unwrap_or_else(|p| p.into_inner())
}

/// The binary under test.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fairsched"));
    c.env_remove("FAIRSCHED_TOKEN")
        .env_remove("FAIRSCHED_BROKER")
        .env("FAIRSCHED_LOG", "warn")
        .stdin(Stdio::null());
    c
}

/// Runs `fairsched ARGS` to the end in `dir` (the client commands read
/// ./fairsched.tokens when given no token: `dir` should have none).
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Polls `f` every 20 ms until it gives a value; panics naming `what` after
/// `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child process, killed and reaped when dropped (SIGTERM first when it
/// has a grace period, then SIGKILL).
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    grace: Option<Duration>,
}

impl Proc {
    pub fn spawn(name: impl Into<String>, cmd: &mut Command, grace: Option<Duration>) -> Proc {
        let name = name.into();
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name,
            child: Some(child),
            grace,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, wait up to `grace` for it to exit, then SIGKILL; its exit
    /// status if it exited by itself.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut c = self.child.take()?;
        let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = c.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        None
    }

    /// Still running (not exited)?
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        match self.grace {
            Some(g) => {
                self.terminate(g);
            }
            None => self.kill9(),
        }
    }
}

/// Kills the process group `pgid` (a task a SIGKILLed worker left behind).
pub fn kill_group(pgid: i32) {
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

/// A free port on 127.0.0.1 (free now: the listener is closed again).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().unwrap().port()
}

/// PEM files for `serve --tls-cert --tls-key` and the clients' `--ca-cert`.
pub struct Pki {
    /// A private CA's certificate.
    pub ca: PathBuf,
    /// The broker's certificate (for 127.0.0.1, localhost and `broker`),
    /// signed by the CA.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

impl Pki {
    /// Makes a CA and the broker's certificate, written to these files.
    pub fn make(ca: &Path, cert: &Path, key: &Path) -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "fairsched test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let names = ["127.0.0.1", "localhost", "broker"].map(String::from).to_vec();
        let mut leaf = CertificateParams::new(names).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "fairsched broker");
        let leaf_key = KeyPair::generate().unwrap();
        let leaf_cert = leaf
            .signed_by(&leaf_key, &Issuer::new(ca_params, ca_key))
            .unwrap();
        std::fs::write(ca, ca_cert.pem()).unwrap();
        std::fs::write(cert, leaf_cert.pem()).unwrap();
        std::fs::write(key, leaf_key.serialize_pem()).unwrap();
        Pki {
            ca: ca.to_path_buf(),
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        }
    }
}

/// `fairsched serve` on a database made by `fairsched admin init`.
pub struct Broker {
    pub dir: PathBuf,
    pub db: PathBuf,
    pub admin: String,
    /// `http://127.0.0.1:PORT` once serving.
    pub url: String,
    pub lease: String,
    /// Where it listens (what `--listen` got, or the address it picked).
    pub listen: String,
    pub starts: u32,
    /// More arguments for every `serve`.
    pub serve_args: Vec<String>,
    /// The CA of an https:// broker's certificate (`serve --tls-cert`):
    /// [`Broker::api`] trusts it, [`Broker::worker_with`] passes it.
    pub ca: Option<PathBuf>,
    proc: Option<Proc>,
}

impl Broker {
    /// `admin init --policy POLICY` in `dir`, then serves on any free port.
    pub fn start(dir: &Path, policy: &str, lease: &str) -> Broker {
        Broker::start_on(dir, policy, lease, "127.0.0.1:0")
    }

    pub fn start_on(dir: &Path, policy: &str, lease: &str, listen: &str) -> Broker {
        Broker::start_with(dir, &["--policy", policy], &[], lease, listen)
    }

    /// `admin init --db DB INIT…` in `dir`, then `serve … SERVE…` on `listen`.
    pub fn start_with(dir: &Path, init: &[&str], serve: &[&str], lease: &str, listen: &str) -> Broker {
        let db = dir.join("broker.db");
        let mut args = vec!["admin", "init", "--db", db.to_str().unwrap()];
        args.extend_from_slice(init);
        let o = run_in(dir, &args);
        assert!(
            o.status.success(),
            "admin init: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let admin = String::from_utf8(o.stdout).unwrap().trim().to_string();
        assert!(!admin.is_empty());
        let mut b = Broker {
            dir: dir.to_path_buf(),
            db,
            admin,
            url: String::new(),
            lease: lease.to_string(),
            listen: listen.to_string(),
            starts: 0,
            serve_args: serve.iter().map(|s| s.to_string()).collect(),
            ca: None,
            proc: None,
        };
        b.serve();
        b
    }

    /// `serve` on the existing database `db` (a copy, a compacted one) with
    /// its admin token, on any free port; working directory `dir`.
    pub fn open(dir: &Path, db: &Path, admin: &str, lease: &str) -> Broker {
        let mut b = Broker {
            dir: dir.to_path_buf(),
            db: db.to_path_buf(),
            admin: admin.to_string(),
            url: String::new(),
            lease: lease.to_string(),
            listen: "127.0.0.1:0".into(),
            starts: 0,
            serve_args: Vec::new(),
            ca: None,
            proc: None,
        };
        b.serve();
        b
    }

    /// Starts `serve` (again) on `self.listen`; returns once it listens.
    pub fn serve(&mut self) {
        assert!(self.proc.is_none(), "the broker is already running");
        self.starts += 1;
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("broker.stderr"))
            .unwrap();
        let mut cmd = bin();
        cmd.current_dir(&self.dir)
            .args([
                "serve",
                "--db",
                self.db.to_str().unwrap(),
                "--listen",
                &self.listen,
            ])
            .args(["--lease", &self.lease])
            .args(&self.serve_args)
            .env("FAIRSCHED_LOG", "warn,fairsched_broker=info")
            .stdout(Stdio::piped())
            .stderr(err);
        let mut p = Proc::spawn(format!("broker #{}", self.starts), &mut cmd, None);
        let stdout = p.child.as_mut().unwrap().stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Reads to the end so the broker never blocks on stdout.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => panic!(
                "the broker did not say `listening on` within 30 s; its stderr:\n{}",
                std::fs::read_to_string(self.dir.join("broker.stderr")).unwrap_or_default()
            ),
        };
        if self.listen.ends_with(":0") {
            // Restarts take the same port.
            self.listen = url.split_once("://").map_or(&url[..], |(_, a)| a).to_string();
        }
        self.url = url;
        self.proc = Some(p);
    }

    /// SIGKILL: no shutdown, no last words.
    pub fn kill9(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill9();
        }
    }

    pub fn running(&self) -> bool {
        self.proc.is_some()
    }

    pub fn api(&self) -> Api {
        match &self.ca {
            Some(ca) => Api::with_ca(&self.url, ca),
            None => Api::new(&self.url),
        }
    }

    /// `admin org add` (through HTTP); the org's id.
    pub fn add_org(&self, name: &str) -> u32 {
        let v = self
            .api()
            .post_ok("/v1/admin/orgs", &self.admin, &json!({ "name": name }));
        v["id"].as_u64().unwrap() as u32
    }

    /// `admin user add`; the user's token.
    pub fn add_user(&self, name: &str, org: &str) -> String {
        let v = self.api().post_ok(
            "/v1/admin/users",
            &self.admin,
            &json!({ "name": name, "org": org }),
        );
        v["token"].as_str().unwrap().to_string()
    }

    /// `admin worker-token`.
    pub fn worker_token(&self, org: &str) -> String {
        let v = self
            .api()
            .post_ok("/v1/admin/worker-tokens", &self.admin, &json!({ "org": org }));
        v["token"].as_str().unwrap().to_string()
    }

    /// `fairsched worker` with `slots` slots in `dir/workdir`.
    pub fn worker(&self, name: &str, token: &str, slots: u32, workdir: &Path, executor: &str) -> Proc {
        self.worker_with(name, token, slots, workdir, executor, &[])
    }

    /// [`Broker::worker`] with more options. Started as root without
    /// `--run-as-user` or `--task-user`, it gets `--allow-root-tasks`: the
    /// tests of other things keep their tasks as the test's own user
    /// (`live_limits` tests the default, [`Broker::worker_exact`]).
    pub fn worker_with(
        &self,
        name: &str,
        token: &str,
        slots: u32,
        workdir: &Path,
        executor: &str,
        more: &[&str],
    ) -> Proc {
        let mut more = more.to_vec();
        if nix::unistd::geteuid().is_root()
            && !more.iter().any(|a| ["--run-as-user", "--task-user"].contains(a))
        {
            more.push("--allow-root-tasks");
        }
        self.worker_exact(name, token, slots, workdir, executor, &more)
    }

    /// [`Broker::worker_with`] with exactly these options.
    pub fn worker_exact(
        &self,
        name: &str,
        token: &str,
        slots: u32,
        workdir: &Path,
        executor: &str,
        more: &[&str],
    ) -> Proc {
        let err = File::create(self.dir.join(format!("{name}.stderr"))).unwrap();
        let mut cmd = bin();
        cmd.current_dir(&self.dir)
            .args(["worker", "--broker", &self.url])
            // No token: the caller gives --token-file in `more`.
            .args(if token.is_empty() {
                vec![]
            } else {
                vec!["--token", token]
            })
            .args([
                "--slots",
                &slots.to_string(),
                "--workdir",
                workdir.to_str().unwrap(),
            ])
            .args(["--executor", executor, "--grace", "1s", "--host", name])
            .args(
                self.ca
                    .iter()
                    .flat_map(|ca| [OsStr::new("--ca-cert"), ca.as_os_str()]),
            )
            .args(more)
            .stdout(Stdio::null())
            .stderr(err);
        Proc::spawn(name, &mut cmd, Some(Duration::from_secs(5)))
    }

    /// Waits until the broker counts `slots` slots.
    pub fn wait_slots(&self, slots: u64) {
        let api = self.api();
        wait_for(&format!("{slots} slots"), Duration::from_secs(30), || {
            let s = api.status(&self.admin);
            (s.slots == slots).then_some(())
        });
    }

    /// Waits until no task is waiting or running (every task has ended).
    pub fn wait_idle(&self, timeout: Duration) -> StatusReply {
        let api = self.api();
        wait_for("every task to end", timeout, || {
            let s = api.try_status(&self.admin)?;
            (s.waiting == 0 && s.running == 0).then_some(s)
        })
    }

    /// Every task (the admin's view).
    pub fn tasks(&self) -> Vec<TaskOut> {
        self.api().tasks(&self.admin)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A reply: its status and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub text: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?} (status {})", self.text, self.status))
    }

    /// The `error` of an error body (which must be `{"error": "…"}`).
    pub fn error(&self) -> String {
        let v = self.json();
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("error body not an object: {}", self.text));
        assert_eq!(obj.len(), 1, "error body: {}", self.text);
        obj["error"].as_str().expect("`error` is a string").to_string()
    }
}

/// A small blocking HTTP client (no status is an error).
#[derive(Clone)]
pub struct Api {
    agent: ureq::Agent,
    pub base: String,
}

impl Api {
    pub fn new(base: &str) -> Api {
        Api::with_timeout(base, Duration::from_secs(30))
    }

    pub fn with_timeout(base: &str, timeout: Duration) -> Api {
        Api::build(base, timeout, None)
    }

    /// An https:// broker whose certificate the CA of the PEM file `ca`
    /// signed (that CA only).
    pub fn with_ca(base: &str, ca: &Path) -> Api {
        Api::build(base, Duration::from_secs(30), Some(ca))
    }

    fn build(base: &str, timeout: Duration, ca: Option<&Path>) -> Api {
        use ureq::tls::{PemItem, RootCerts, TlsConfig, parse_pem};
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout));
        if let Some(ca) = ca {
            let pem = std::fs::read(ca).unwrap_or_else(|e| panic!("{}: {e}", ca.display()));
            let certs: Vec<_> = parse_pem(&pem)
                .filter_map(|item| match item.expect("PEM") {
                    PemItem::Certificate(c) => Some(c),
                    _ => None,
                })
                .collect();
            let roots = RootCerts::new_with_certs(&certs);
            config = config.tls_config(TlsConfig::builder().root_certs(roots).build());
        }
        Api {
            agent: config.build().into(),
            base: base.trim_end_matches('/').to_string(),
        }
    }

    fn finish(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Reply, ureq::Error> {
        let mut r = r?;
        let status = r.status().as_u16();
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    v.to_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let text = r.body_mut().with_config().limit(256 << 20).read_to_string()?;
        Ok(Reply {
            status,
            text,
            headers,
        })
    }

    /// GET with an optional bearer token.
    pub fn try_get(&self, path: &str, token: Option<&str>) -> Result<Reply, ureq::Error> {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        Api::finish(req.call())
    }

    /// POST `body` (as is) with an optional bearer token.
    pub fn try_post(&self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Reply, ureq::Error> {
        let mut req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        Api::finish(req.send(body))
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.try_get(path, token)
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &[u8]) -> Reply {
        self.try_post(path, token, body)
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// POST JSON, whatever the reply.
    pub fn post_json(&self, path: &str, token: &str, body: &Value) -> Reply {
        self.post(path, Some(token), body.to_string().as_bytes())
    }

    /// GET with this `Authorization` header, as is.
    pub fn get_with(&self, path: &str, authorization: &str) -> Reply {
        let req = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", authorization);
        Api::finish(req.call()).unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// POST `body` with a bearer token and one more header.
    pub fn post_with(&self, path: &str, token: &str, header: (&str, &str), body: &[u8]) -> Reply {
        self.try_post_with(path, token, header, body)
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// [`Api::post_with`], its error if the broker cannot be reached.
    pub fn try_post_with(
        &self,
        path: &str,
        token: &str,
        header: (&str, &str),
        body: &[u8],
    ) -> Result<Reply, ureq::Error> {
        let req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .header(header.0, header.1);
        Api::finish(req.send(body))
    }

    /// POST JSON; the reply must be 2xx.
    pub fn post_ok(&self, path: &str, token: &str, body: &Value) -> Value {
        let r = self.post(path, Some(token), body.to_string().as_bytes());
        assert!(
            (200..300).contains(&r.status),
            "POST {path}: {} {}",
            r.status,
            r.text
        );
        r.json()
    }

    /// GET; the reply must be 2xx.
    pub fn get_ok(&self, path: &str, token: &str) -> Value {
        let r = self.get(path, Some(token));
        assert!(
            (200..300).contains(&r.status),
            "GET {path}: {} {}",
            r.status,
            r.text
        );
        r.json()
    }

    pub fn status(&self, token: &str) -> StatusReply {
        serde_json::from_value(self.get_ok("/v1/status", token)).unwrap()
    }

    /// The status, or `None` if the broker cannot be reached or errs.
    pub fn try_status(&self, token: &str) -> Option<StatusReply> {
        let r = self.try_get("/v1/status", Some(token)).ok()?;
        (r.status == 200).then(|| serde_json::from_str(&r.text).unwrap())
    }

    /// Every task `token` may list, page after page.
    pub fn tasks(&self, token: &str) -> Vec<TaskOut> {
        let mut all = Vec::new();
        let mut path = "/v1/tasks".to_string();
        loop {
            let r: TasksReply = serde_json::from_value(self.get_ok(&path, token)).unwrap();
            all.extend(r.tasks);
            match r.next {
                Some(n) => path = format!("/v1/tasks?after={n}"),
                None => return all,
            }
        }
    }

    /// Submits tasks with these commands; their ids.
    pub fn submit(&self, token: &str, commands: &[String]) -> Vec<u64> {
        let tasks: Vec<Value> = commands.iter().map(|c| json!({ "command": c })).collect();
        let v = self.post_ok("/v1/tasks", token, &json!({ "tasks": tasks }));
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap())
            .collect()
    }

    pub fn healthy(&self) -> bool {
        self.try_get("/healthz", None)
            .is_ok_and(|r| r.status == 200 && r.text.trim() == "ok")
    }
}
