//! The live service from the command line: `serve`, `worker`, and the
//! client commands (`submit`, `status`, `cancel`, `explain`, `admin org|user|worker-token`),
//! which talk to a running broker over HTTP (docs/protocol.md).

use crate::term::{sayln, usage};
use fairsched_broker::api::*;
use fairsched_broker::export::{Exported, platform_toml};
use fairsched_broker::http::{HttpLimits, ServeOpts, serve};
use fairsched_broker::service::Settings;
use fairsched_broker::tls::TlsFiles;
use fairsched_client::dag::{activity_commands, workflow_file};
use fairsched_client::text::{explain_text, task_table};
use fairsched_client::{Client, Role, TOKENS_FILE, quickstart};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// Where the broker is and who is asking.
#[derive(clap::Args, Clone, Debug)]
pub struct Conn {
    /// The broker's URL [default: the `broker` line of ./fairsched.tokens, else
    /// http://127.0.0.1:8080].
    #[arg(long, env = "FAIRSCHED_BROKER", hide_env_values = true, value_name = "URL")]
    pub broker: Option<String>,
    /// Your token: the admin token (from `fairsched admin init`) for `admin …` commands, a user
    /// token (from `fairsched admin user add`) otherwise [default: from ./fairsched.tokens,
    /// written by `fairsched serve --quickstart`].
    #[arg(long, env = "FAIRSCHED_TOKEN", hide_env_values = true, value_name = "T")]
    pub token: Option<String>,
    /// An https:// broker's certificate is trusted if this CA signed it (a PEM file: a private
    /// CA's certificate, or the broker's own self-signed one) [default: the usual public CAs].
    #[arg(long, env = "FAIRSCHED_CA_CERT", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

impl Conn {
    /// The client's connection.
    pub fn conn(&self) -> fairsched_client::Conn {
        fairsched_client::Conn {
            broker: self.broker.clone(),
            token: self.token.clone(),
            ca_cert: self.ca_cert.clone(),
        }
    }
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// A TOML file of these settings (keys as the flags' names with `_`: `db`, `listen`,
    /// `lease`, `max_attempts`, `max_user_priority`, `max_time_limit`, `max_memory`,
    /// `default_max_queued`, `output_keep_for`, `output_keep_bytes`, `snapshot_every`, `audit_log`, `header_timeout`, `anonymous_rate`, `anonymous_burst`,
    /// `body_budget`, `user_body_pool`, `worker_body_pool`, `body_idle_timeout`, `tls_cert`,
    /// `tls_key`; paths relative to the file's folder). A flag given
    /// overrides the file. deploy/fairsched.toml is an example.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The database made by `fairsched admin init` (it fixes the policies) [default:
    /// fairsched.db].
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Address to listen on (port 0: any free port; the line `listening on
    /// http://ADDR`, https:// with --tls-cert, says which) [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// A worker silent this long loses its slots; its tasks go back to the queue [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    lease: Option<Duration>,
    /// A task whose worker is lost (it left, or its lease ran out) during the task's Nth run
    /// fails; during an earlier run, it goes back to the queue. With 5, a task that loses its
    /// worker every time fails at the 5th loss (every run counts, also one a preempting policy
    /// stopped) [default: 5].
    #[arg(long, value_name = "N")]
    max_attempts: Option<u32>,
    /// The highest priority a user may give a task. The default, 1, is the priority of a task
    /// given none: users may lower theirs, not raise them over others' [default: 1].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    max_user_priority: Option<i64>,
    /// The longest time limit a task may ask for (`submit --time-limit`), and the limit of a
    /// task that gives none [default: no limit].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    max_time_limit: Option<Duration>,
    /// The most memory a task may ask for (`submit --memory`), and the limit of a task that
    /// gives none: bytes, or with K, M, G, T [default: no limit].
    #[arg(long, value_name = "SIZE", value_parser = size)]
    max_memory: Option<u64>,
    /// The most tasks a user may have queued (waiting or held) unless the admin gave the user a
    /// queued quota of its own (`admin quota set --user U --max-queued N`); 0: no limit
    /// [default: 100000].
    #[arg(long, value_name = "N")]
    default_max_queued: Option<u64>,
    /// A run's output (`fairsched output`) is kept this long after its task ended; `0`: for
    /// ever [default: 7d].
    #[arg(long, value_name = "DURATION", value_parser = duration_or_zero)]
    output_keep_for: Option<Duration>,
    /// All runs' output kept in the database takes at most this much; past it, the oldest
    /// tasks' go first. 0: no bound [default: 1G].
    #[arg(long, value_name = "SIZE", value_parser = size_or_zero)]
    output_keep_bytes: Option<u64>,
    /// Steps of the log between two snapshots of the scheduler's state (a restart restores the
    /// newest and replays only the steps after it; 0: no snapshots, a restart replays the whole
    /// log). A clean shutdown writes one too [default: 10000].
    #[arg(long, value_name = "N")]
    snapshot_every: Option<u64>,
    /// Where the audit log goes: one JSON line per admin action, submission and cancellation,
    /// with who asked [default: the database's path with `.audit.jsonl`].
    #[arg(long, value_name = "PATH")]
    audit_log: Option<PathBuf>,
    /// Try it on one machine: create the database if it is missing (policy `first-fit`, an
    /// organization `local`, a user `you`), and write the admin, user and worker tokens and
    /// the broker's URL to ./fairsched.tokens (readable by you only), where `fairsched
    /// worker`, `submit`, `status`… run from this folder find them.
    #[arg(long)]
    quickstart: bool,
    /// A connection that has not sent a whole request head within this time is closed; so is a
    /// kept-alive connection idle this long [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    header_timeout: Option<Duration>,
    /// Requests per second each client address may make to the routes that need no token (the
    /// dashboard, /metrics, /openapi.json, /healthz); past it, 429 with Retry-After. 0: no
    /// limit [default: 100].
    #[arg(long, value_name = "N")]
    anonymous_rate: Option<u32>,
    /// Requests a client address may make to those routes at once before --anonymous-rate
    /// applies [default: 200].
    #[arg(long, value_name = "N")]
    anonymous_burst: Option<u32>,
    /// The most bytes of request bodies one token (the admin, a user, a worker) may have being
    /// read at once; past it, 503 with Retry-After. The first 4 MiB of it are its own whatever
    /// others send. A request without a token takes no body: refused (401) before it is read
    /// [default: 16M].
    #[arg(long, value_name = "SIZE", value_parser = size)]
    body_budget: Option<u64>,
    /// Beyond their 4 MiB each, the users and the admin share this many bytes of request bodies
    /// being read (503 beyond) [default: 256M].
    #[arg(long, value_name = "SIZE", value_parser = size_or_zero)]
    user_body_pool: Option<u64>,
    /// The same for the workers' calls, a pool of their own that users cannot take: an
    /// overloaded broker still hears its workers [default: 64M].
    #[arg(long, value_name = "SIZE", value_parser = size_or_zero)]
    worker_body_pool: Option<u64>,
    /// A request body that sends nothing for this long is answered 408 and its connection
    /// closed (a body has 30 s in all) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    body_idle_timeout: Option<Duration>,
    /// Serve HTTPS with this certificate (PEM: the broker's certificate, then any intermediate
    /// ones), and --tls-key. Without them the broker speaks plain HTTP: beyond loopback, put it
    /// behind a TLS-terminating proxy (docs/security.md) [default: plain HTTP].
    #[arg(long, value_name = "FILE.pem")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, RSA or EC), readable by the broker only.
    #[arg(long, value_name = "FILE.pem")]
    tls_key: Option<PathBuf>,
}

/// `serve --config FILE`: the same settings as the flags.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    db: Option<PathBuf>,
    listen: Option<String>,
    lease: Option<String>,
    max_attempts: Option<u32>,
    max_user_priority: Option<i64>,
    max_time_limit: Option<String>,
    max_memory: Option<toml::Value>,
    default_max_queued: Option<u64>,
    output_keep_for: Option<toml::Value>,
    output_keep_bytes: Option<toml::Value>,
    snapshot_every: Option<u64>,
    audit_log: Option<PathBuf>,
    header_timeout: Option<String>,
    anonymous_rate: Option<u32>,
    anonymous_burst: Option<u32>,
    body_budget: Option<toml::Value>,
    user_body_pool: Option<toml::Value>,
    worker_body_pool: Option<toml::Value>,
    body_idle_timeout: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
}

/// `serve`'s settings: each flag given, else the file's, else the default.
struct Serve {
    db: PathBuf,
    listen: String,
    lease: Duration,
    max_attempts: u32,
    max_user_priority: i64,
    max_time_limit: Option<Duration>,
    max_memory: Option<u64>,
    default_max_queued: Option<u64>,
    output_keep_for: Option<Duration>,
    output_keep_bytes: Option<u64>,
    snapshot_every: u64,
    audit_log: PathBuf,
    header_timeout: Duration,
    anonymous_rate: u32,
    anonymous_burst: u32,
    body_budget: u64,
    user_body_pool: u64,
    worker_body_pool: u64,
    body_idle_timeout: Duration,
    tls: Option<TlsFiles>,
}

impl ServeArgs {
    fn resolve(&self) -> anyhow::Result<Serve> {
        let (file, dir) = match &self.config {
            None => (ServeFile::default(), PathBuf::new()),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| usage(format!("--config {}: {e}", path.display())))?;
                let f: ServeFile =
                    toml::from_str(&text).map_err(|e| usage(format!("--config {}: {e}", path.display())))?;
                (f, path.parent().map(PathBuf::from).unwrap_or_default())
            }
        };
        let named = |key: &str, e: String| {
            let path = self.config.as_deref().unwrap_or(std::path::Path::new(""));
            usage(format!("--config {}: `{key}`: {e}", path.display()))
        };
        let path = |p: &PathBuf| if p.is_absolute() { p.clone() } else { dir.join(p) };
        let db = self
            .db
            .clone()
            .or_else(|| file.db.as_ref().map(path))
            .unwrap_or_else(|| PathBuf::from("fairsched.db"));
        let lease = match (self.lease, &file.lease) {
            (Some(d), _) => d,
            (None, Some(s)) => duration(s).map_err(|e| named("lease", e))?,
            (None, None) => Duration::from_secs(30),
        };
        let header_timeout = match (self.header_timeout, &file.header_timeout) {
            (Some(d), _) => d,
            (None, Some(s)) => duration(s).map_err(|e| named("header_timeout", e))?,
            (None, None) => Duration::from_secs(10),
        };
        let body_idle_timeout = match (self.body_idle_timeout, &file.body_idle_timeout) {
            (Some(d), _) => d,
            (None, Some(s)) => duration(s).map_err(|e| named("body_idle_timeout", e))?,
            (None, None) => fairsched_broker::server::BODY_IDLE,
        };
        // A size: the flag's, else the file's (bytes, or a string such as
        // "16M"; 0 where `zero` allows it), else `default`.
        let bytes = |flag: Option<u64>, v: &Option<toml::Value>, key: &str, zero: bool, default: usize| {
            let parse = if zero { size_or_zero } else { size };
            match (flag, v) {
                (Some(b), _) => Ok(b),
                (None, Some(toml::Value::Integer(n))) if *n > 0 || (zero && *n == 0) => Ok(*n as u64),
                (None, Some(toml::Value::String(s))) => parse(s).map_err(|e| named(key, e)),
                (None, Some(v)) => Err(named(
                    key,
                    format!("{} is neither bytes nor a string such as \"16M\"", v.type_str()),
                )),
                (None, None) => Ok(default as u64),
            }
        };
        use fairsched_broker::server::{BODY_BUDGET, USER_BODY_POOL, WORKER_BODY_POOL};
        let body_budget = bytes(
            self.body_budget,
            &file.body_budget,
            "body_budget",
            false,
            BODY_BUDGET,
        )?;
        let user_body_pool = bytes(
            self.user_body_pool,
            &file.user_body_pool,
            "user_body_pool",
            true,
            USER_BODY_POOL,
        )?;
        let worker_body_pool = bytes(
            self.worker_body_pool,
            &file.worker_body_pool,
            "worker_body_pool",
            true,
            WORKER_BODY_POOL,
        )?;
        let max_time_limit = match (self.max_time_limit, &file.max_time_limit) {
            (Some(d), _) => Some(d),
            (None, Some(s)) => Some(duration(s).map_err(|e| named("max_time_limit", e))?),
            (None, None) => None,
        };
        let max_memory = match (self.max_memory, &file.max_memory) {
            (Some(b), _) => Some(b),
            (None, Some(toml::Value::Integer(n))) if *n > 0 => Some(*n as u64),
            (None, Some(toml::Value::String(s))) => Some(size(s).map_err(|e| named("max_memory", e))?),
            (None, Some(v)) => {
                return Err(named(
                    "max_memory",
                    format!("{} is neither bytes nor a string such as \"512M\"", v.type_str()),
                ));
            }
            (None, None) => None,
        };
        let output_keep_for = match (self.output_keep_for, &file.output_keep_for) {
            (Some(d), _) => d,
            (None, Some(toml::Value::String(s))) => {
                duration_or_zero(s).map_err(|e| named("output_keep_for", e))?
            }
            (None, Some(toml::Value::Integer(0))) => Duration::ZERO,
            (None, Some(v)) => {
                return Err(named(
                    "output_keep_for",
                    format!(
                        "{} is not a duration such as \"7d\" (or 0: for ever)",
                        v.type_str()
                    ),
                ));
            }
            (None, None) => fairsched_broker::OUTPUT_KEEP_FOR,
        };
        let output_keep_bytes = bytes(
            self.output_keep_bytes,
            &file.output_keep_bytes,
            "output_keep_bytes",
            true,
            fairsched_broker::OUTPUT_KEEP_BYTES as usize,
        )?;
        let default_max_queued = self
            .default_max_queued
            .or(file.default_max_queued)
            .unwrap_or(fairsched_broker::DEFAULT_MAX_QUEUED);
        let audit_log = self
            .audit_log
            .clone()
            .or_else(|| file.audit_log.as_ref().map(path))
            .unwrap_or_else(|| {
                let mut p = db.clone().into_os_string();
                p.push(".audit.jsonl");
                PathBuf::from(p)
            });
        // Each with where it was given, as errors about it say.
        let in_file = |key: &str| {
            let config = self.config.as_deref().unwrap_or(std::path::Path::new(""));
            format!("`{key}` in --config {}:", config.display())
        };
        let tls_cert = match (&self.tls_cert, &file.tls_cert) {
            (Some(p), _) => Some((p.clone(), "--tls-cert".to_string())),
            (None, Some(p)) => Some((path(p), in_file("tls_cert"))),
            (None, None) => None,
        };
        let tls_key = match (&self.tls_key, &file.tls_key) {
            (Some(p), _) => Some((p.clone(), "--tls-key".to_string())),
            (None, Some(p)) => Some((path(p), in_file("tls_key"))),
            (None, None) => None,
        };
        let tls = match (tls_cert, tls_key) {
            (Some((cert, cert_as)), Some((key, key_as))) => Some(TlsFiles {
                cert,
                key,
                given_as: (cert_as, key_as),
            }),
            (None, None) => None,
            (Some(_), None) => return Err(usage("--tls-cert needs --tls-key (or `tls_key` in --config)")),
            (None, Some(_)) => return Err(usage("--tls-key needs --tls-cert (or `tls_cert` in --config)")),
        };
        Ok(Serve {
            listen: self
                .listen
                .clone()
                .or(file.listen)
                .unwrap_or_else(|| "127.0.0.1:8080".into()),
            lease,
            max_attempts: self.max_attempts.or(file.max_attempts).unwrap_or(5),
            max_user_priority: self.max_user_priority.or(file.max_user_priority).unwrap_or(1),
            max_time_limit,
            max_memory,
            default_max_queued: (default_max_queued > 0).then_some(default_max_queued),
            output_keep_for: (!output_keep_for.is_zero()).then_some(output_keep_for),
            output_keep_bytes: (output_keep_bytes > 0).then_some(output_keep_bytes),
            snapshot_every: self
                .snapshot_every
                .or(file.snapshot_every)
                .unwrap_or(fairsched_broker::DEFAULT_SNAPSHOT_EVERY),
            audit_log,
            db,
            header_timeout,
            anonymous_rate: self
                .anonymous_rate
                .or(file.anonymous_rate)
                .unwrap_or(fairsched_broker::server::ANONYMOUS_RATE),
            anonymous_burst: self
                .anonymous_burst
                .or(file.anonymous_burst)
                .unwrap_or(fairsched_broker::server::ANONYMOUS_BURST),
            body_budget,
            user_body_pool,
            worker_body_pool,
            body_idle_timeout,
            tls,
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// [`size`], or 0.
fn size_or_zero(s: &str) -> Result<u64, String> {
    if s.trim() == "0" { Ok(0) } else { size(s) }
}

/// Bytes, or with a K, M or G suffix (powers of 1024).
fn size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}`: expected bytes, or a number with K, M or G (e.g. 512M)"))?;
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (K, M, G or T)")),
    };
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("`{s}`: expected more than 0 and less than 16 EiB"))
}

/// [`duration`], or `0`.
fn duration_or_zero(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        Ok(Duration::ZERO)
    } else {
        duration(s)
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    fairsched_worker::parse_duration(s).map_err(|e| e.to_string())
}

pub fn serve_cmd(args: ServeArgs, registry: &fairsched_core::Registry) -> anyhow::Result<()> {
    let quickstart_asked = args.quickstart;
    let a = args.resolve()?;
    if a.lease < Duration::from_millis(100) {
        return Err(usage("--lease: at least 100ms"));
    }
    if a.max_attempts == 0 {
        return Err(usage("--max-attempts: at least 1"));
    }
    if a.max_time_limit.is_some_and(|d| d < Duration::from_millis(1)) {
        return Err(usage(
            "--max-time-limit: at least 1ms (leave it out for no limit)",
        ));
    }
    if a.header_timeout < Duration::from_millis(100) {
        return Err(usage("--header-timeout: at least 100ms"));
    }
    if a.body_budget < fairsched_broker::http::BODY_FLOOR as u64 {
        return Err(usage(
            "--body-budget: at least 4M (one body of the largest size the broker takes)",
        ));
    }
    if a.body_idle_timeout < Duration::from_millis(100) {
        return Err(usage("--body-idle-timeout: at least 100ms"));
    }
    if a.anonymous_rate > 0 && a.anonymous_burst == 0 {
        return Err(usage(
            "--anonymous-burst: at least 1 (or --anonymous-rate 0: no limit)",
        ));
    }
    let mut tokens: Option<Vec<(&str, String)>> = None;
    let mut created = false;
    if quickstart_asked {
        if !a.db.exists() {
            tokens = Some(quickstart_init(&a.db, registry)?);
            created = true;
        } else if std::path::Path::new(TOKENS_FILE).exists() {
            // Same broker again: keep the tokens, refresh the URL below —
            // if they are this database's.
            let keys = ["admin", "user", "worker"];
            let kept: Vec<(&str, String)> = keys
                .iter()
                .filter_map(|k| quickstart(k).map(|v| (*k, v)))
                .collect();
            let admin = kept.iter().find(|(k, _)| *k == "admin").map(|(_, v)| v.clone());
            let (store, _) = fairsched_broker::Store::open(&a.db)?;
            let ours = match admin {
                Some(t) => store.authenticate(&t)? == Some(fairsched_broker::Principal::Admin),
                None => false,
            };
            drop(store);
            if !ours {
                return Err(usage(format!(
                    "--quickstart: ./{TOKENS_FILE} holds the tokens of another database than {}; serve it without --quickstart, or move ./{TOKENS_FILE} away",
                    a.db.display()
                )));
            }
            tokens = Some(kept);
        } else {
            return Err(usage(format!(
                "--quickstart: {} exists but ./{TOKENS_FILE} does not (its tokens were shown once); serve it without --quickstart, or pick a new --db",
                a.db.display()
            )));
        }
    }
    let db = a.db.clone();
    let opts = ServeOpts {
        db: a.db,
        listen: a.listen,
        audit: Some(a.audit_log),
        settings: Settings {
            lease: a.lease,
            max_attempts: a.max_attempts,
            snapshot_every: a.snapshot_every,
            registry: registry.clone(),
            max_user_priority: a.max_user_priority,
            max_time_limit: a.max_time_limit,
            max_memory: a.max_memory,
            default_max_queued: a.default_max_queued,
            output_keep_for: a.output_keep_for,
            output_keep_bytes: a.output_keep_bytes,
            ..Settings::default()
        },
        stop: None,
        limits: HttpLimits {
            header_time: a.header_timeout,
            anonymous_rate: a.anonymous_rate,
            anonymous_burst: a.anonymous_burst,
            body_budget: usize::try_from(a.body_budget).unwrap_or(usize::MAX),
            user_body_pool: usize::try_from(a.user_body_pool).unwrap_or(usize::MAX),
            worker_body_pool: usize::try_from(a.worker_body_pool).unwrap_or(usize::MAX),
            body_idle: a.body_idle_timeout,
        },
        tls: a.tls,
    };
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let listening = std::cell::Cell::new(false);
    let served = serve(opts, |addr| {
        listening.set(true);
        if let Some(t) = &tokens
            && let Err(e) = write_tokens(&format!("{scheme}://{addr}"), t)
        {
            tracing::error!("{TOKENS_FILE}: {e}");
        }
        // Tests and scripts wait for this line.
        let mut out = std::io::stdout();
        let _ = writeln!(out, "listening on {scheme}://{addr}");
        let _ = out.flush();
    });
    if served.is_err() && created && !listening.get() {
        // Never served: do not leave a database whose tokens nobody saw.
        for ext in ["", "-wal", "-shm", ".lock"] {
            let mut p = db.clone().into_os_string();
            p.push(ext);
            let _ = std::fs::remove_file(p);
        }
    }
    served.map_err(anyhow::Error::msg)
}

/// Creates `db` for a one-machine trial: its tokens.
fn quickstart_init(
    db: &std::path::Path,
    registry: &fairsched_core::Registry,
) -> anyhow::Result<Vec<(&'static str, String)>> {
    let live = fairsched_broker::Live::create(db, &fairsched_broker::Config::default(), registry)?;
    let store = live.store();
    let admin = store.admin_token()?;
    store.add_org("local")?;
    let user = store.add_user("you", "local")?;
    let worker = store.worker_token("local")?;
    Ok(vec![("admin", admin), ("user", user), ("worker", worker)])
}

/// Writes ./fairsched.tokens (mode 600).
fn write_tokens(broker: &str, tokens: &[(&str, String)]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut text = String::from(
        "# Written by `fairsched serve --quickstart`: the broker's URL and its tokens. Keep private.\n",
    );
    text.push_str(&format!("broker={broker}\n"));
    for (k, v) in tokens {
        text.push_str(&format!("{k}={v}\n"));
    }
    let tmp = format!("{TOKENS_FILE}.partial");
    // A file already there (left by a crash, or planted: a link, or mode
    // 0666, which `mode` would not change) is removed, not written
    // through: the new one is created here, 0600, or not at all
    // (`create_new` is O_EXCL, which follows no link).
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, TOKENS_FILE)
}

pub fn worker_cmd(mut o: fairsched_worker::Opts) -> anyhow::Result<()> {
    if o.broker.trim().is_empty() {
        o.broker = quickstart("broker").unwrap_or_default();
    }
    if o.token.trim().is_empty() && o.token_file.is_none() {
        o.token = quickstart("worker").unwrap_or_default();
    }
    fairsched_worker::run(o)
}

#[derive(clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    conn: Conn,
    /// How many tasks (a bag of tasks; `{i}` in the command becomes 0…N−1).
    #[arg(long, default_value_t = 1, value_name = "N", conflicts_with = "workflow")]
    count: u64,
    /// A name for the tasks (`{i}` is replaced too); with --workflow, the workflow's name.
    #[arg(long)]
    name: Option<String>,
    /// Priority (used by the `priority` policy; higher first); with --workflow, of the tasks
    /// that give none.
    #[arg(long)]
    priority: Option<i64>,
    /// A command run before the task, in its directory (the input phase).
    #[arg(long, value_name = "CMD", conflicts_with = "workflow")]
    stage_in: Option<String>,
    /// A command run after the task (the output phase).
    #[arg(long, value_name = "CMD", conflicts_with = "workflow")]
    stage_out: Option<String>,
    /// Mark the tasks optional (Diet-ethic: under the `diet-ethic` policy, mandatory tasks run
    /// first and a waiting mandatory task kills a running optional one).
    #[arg(long)]
    optional: bool,
    /// Kill a run that takes longer than this (e.g. 90s, 2h); the task fails with exit code
    /// 124. At most, and by default, the broker's `serve --max-time-limit`.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    time_limit: Option<Duration>,
    /// The most memory a run may take: bytes, or with K, M, G, T (e.g. 512M). All its processes
    /// together on a worker with a memory cgroup (beyond it the run is killed, exit code 137),
    /// else each process's address space. At most, and by default, `serve --max-memory`.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    memory: Option<u64>,
    /// At most this many processes (and threads) of a run at once, if lower than its worker's
    /// `--max-processes` (a run gets the lower of the two; beyond it, it is killed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(16..))]
    max_processes: Option<u64>,
    /// At most this many open files in each process of a run, if lower than its worker's
    /// `--max-open-files`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(16..))]
    max_open_files: Option<u64>,
    /// At most this much in a run's directory (and in each file it writes), if lower than its
    /// worker's `--max-disk`: bytes, or with K, M, G, T.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    max_disk: Option<u64>,
    /// At most this much `stdout` and `stderr` together, if lower than its worker's
    /// `--max-output`.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    max_output: Option<u64>,
    /// Submit a workflow: a DAG of tasks, each held until the tasks it comes after have
    /// completed (and cancelled if one of them fails). FILE is a TOML DAG (`[[task]]` tables
    /// with `name`, `command`, optional `activity`, `after = [names]`, `stage_in`,
    /// `stage_out`, `priority`) or a WfCommons trace (.json or .json.gz) with a --command for
    /// each of its activities.
    #[arg(long, value_name = "FILE")]
    workflow: Option<PathBuf>,
    /// With --workflow: the command of every task of ACTIVITY (`{name}` becomes the task's
    /// name). Needed for each activity of a WfCommons trace; in a TOML DAG, for tasks that
    /// give no `command`.
    #[arg(long = "command", value_name = "ACTIVITY=CMD", requires = "workflow")]
    commands: Vec<String>,
    /// Print `{"ids": […]}` (with `"workflow": ID` for a workflow) instead of one id per line.
    #[arg(long)]
    json: bool,
    /// The submission's idempotency key: the same command again with the same key (within 24
    /// h) gets the ids of the tasks the first one submitted, and submits nothing. Give it to
    /// rerun a submit that exited with 3 (its tasks may exist) [default: a new random key,
    /// printed when the outcome is not known].
    #[arg(long, value_name = "KEY")]
    key: Option<String>,
    /// Resend the submission (with its key) while the broker cannot be reached or its reply is
    /// lost, for up to this long; then exit 3 if a try may have reached it [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration_or_zero)]
    retry_for: Option<Duration>,
    /// The command, run with `sh -c` on a worker.
    #[arg(
        last = true,
        required_unless_present = "workflow",
        conflicts_with = "workflow",
        value_name = "CMD"
    )]
    command: Vec<String>,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    conn: Conn,
    /// Every task of yours with its state, attempts and exit code.
    #[arg(long)]
    tasks: bool,
    /// Print JSON (the counts, and `tasks` with --tasks).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct TaskArgs {
    #[command(flatten)]
    conn: Conn,
    /// The task id.
    id: u64,
}

#[derive(clap::Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    conn: Conn,
    /// The task id.
    id: u64,
    /// Print the broker's explanation as JSON (only).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct OutputArgs {
    #[command(flatten)]
    conn: Conn,
    /// The task id.
    id: u64,
    /// Its stderr instead of its stdout.
    #[arg(long)]
    stderr: bool,
    /// Of this run [default: its latest with output].
    #[arg(long, value_name = "N")]
    attempt: Option<u32>,
}

/// `fairsched admin org|user|worker-token`.
#[derive(clap::Subcommand)]
pub enum AdminLive {
    /// Organizations (through the running broker, with the admin token).
    #[command(subcommand)]
    Org(OrgCmd),
    /// Users (through the running broker, with the admin token).
    #[command(subcommand)]
    User(UserCmd),
    /// A token for workers contributing processors of an organization; printed alone.
    WorkerToken {
        #[command(flatten)]
        conn: Conn,
        /// The organization whose processors its workers contribute.
        #[arg(long)]
        org: String,
    },
    /// Leaked tokens: revoke them.
    #[command(subcommand)]
    Token(TokenCmd),
    /// Workers, by id (the dashboard and `/metrics` show them): drain, hold, release or evict
    /// one.
    #[command(subcommand)]
    Worker(WorkerCmd),
    /// Quotas on the tasks a user, or an organization's users together, may have queued and
    /// running.
    #[command(subcommand)]
    Quota(QuotaCmd),
    /// Any user's tasks: put a running one back in the queue, hold or release one.
    #[command(subcommand)]
    Task(AdminTaskCmd),
}

#[derive(clap::Subcommand)]
pub enum AdminTaskCmd {
    /// Put a waiting task on hold: it does not run until the admin releases it (its user
    /// cannot).
    Hold {
        #[command(flatten)]
        conn: Conn,
        /// The task's id.
        id: u64,
    },
    /// Release a task on hold (the admin's hold or its user's).
    Release {
        #[command(flatten)]
        conn: Conn,
        /// The task's id.
        id: u64,
    },
    /// Stop a running task's run and put it back in the queue: a new attempt runs it later
    /// (its worker kills the run).
    Requeue {
        #[command(flatten)]
        conn: Conn,
        /// The task's id.
        id: u64,
    },
}

#[derive(clap::Subcommand)]
pub enum TokenCmd {
    /// Revoke one token (a user's, or a worker token), or every worker token of an
    /// organization; prints whose it was. Workers registered with a revoked worker token keep
    /// their sessions: evict them with `admin worker evict`. (The admin token is not revoked
    /// this way.)
    Revoke {
        #[command(flatten)]
        conn: Conn,
        /// The leaked token.
        #[arg(
            required_unless_present = "worker_tokens_of",
            conflicts_with = "worker_tokens_of"
        )]
        leaked: Option<String>,
        /// Every worker token of this organization instead.
        #[arg(long, value_name = "ORG")]
        worker_tokens_of: Option<String>,
    },
}

#[derive(clap::Subcommand)]
pub enum WorkerCmd {
    /// The worker takes no new task until released (its runs go on; it stays registered):
    /// its free slots leave now, the others as their runs end.
    Hold {
        #[command(flatten)]
        conn: Conn,
        /// The worker's id.
        id: u64,
    },
    /// A held worker takes tasks again: its slots come back (those still running a task from
    /// before the hold, once that run ends).
    Release {
        #[command(flatten)]
        conn: Conn,
        /// The worker's id.
        id: u64,
    },
    /// The worker takes no new task and leaves once its runs end.
    Drain {
        #[command(flatten)]
        conn: Conn,
        /// The worker's id.
        id: u64,
    },
    /// The worker's slots leave now and its runs go back to the queue (as when its lease runs
    /// out); its next call is refused, and it kills its runs. It registers again (a new id)
    /// while its token works: revoke that first (`admin token revoke --worker-tokens-of ORG`)
    /// to keep it out.
    Evict {
        #[command(flatten)]
        conn: Conn,
        /// The worker's id.
        id: u64,
    },
}

#[derive(clap::Subcommand)]
pub enum QuotaCmd {
    /// Set (or with `none`, lift) the most tasks a user, or all users of an organization
    /// together, may have queued (`--max-queued`: waiting or held; a submission that would pass
    /// it is refused, naming the quota) and running (`--max-running`: tasks past it wait held,
    /// and run as the others end). A limit not given stays as it was.
    Set {
        #[command(flatten)]
        conn: Conn,
        /// The user.
        #[arg(long, required_unless_present = "org", conflicts_with = "org")]
        user: Option<String>,
        /// The organization.
        #[arg(long)]
        org: Option<String>,
        /// A number, or `none`.
        #[arg(long, value_name = "N|none", required_unless_present = "max_running")]
        max_queued: Option<String>,
        /// A number, or `none` (0 holds every new task of theirs until it is raised).
        #[arg(long, value_name = "N|none", required_unless_present = "max_queued")]
        max_running: Option<String>,
    },
    /// The quotas in force.
    List {
        #[command(flatten)]
        conn: Conn,
    },
}

#[derive(clap::Subcommand)]
pub enum OrgCmd {
    /// Add an organization; prints its id.
    Add {
        #[command(flatten)]
        conn: Conn,
        /// 1 to 64 letters, digits, '.', '_' or '-'.
        name: String,
    },
    /// Remove an organization: its users are removed (their tokens revoked, their tasks not
    /// ended cancelled), its worker tokens revoked, its workers evicted. Its name stays taken.
    Remove {
        #[command(flatten)]
        conn: Conn,
        name: String,
    },
}

#[derive(clap::Subcommand)]
pub enum UserCmd {
    /// Add a user of an organization; prints the user's token alone.
    Add {
        #[command(flatten)]
        conn: Conn,
        /// 1 to 64 letters, digits, '.', '_' or '-'.
        name: String,
        /// The organization the user belongs to (and submits for).
        #[arg(long)]
        org: String,
    },
    /// A new token for a user (printed alone); its old tokens stop working at once.
    Rotate {
        #[command(flatten)]
        conn: Conn,
        name: String,
    },
    /// Remove a user: its tokens are revoked and its tasks not ended cancelled. Its name stays
    /// taken.
    Remove {
        #[command(flatten)]
        conn: Conn,
        name: String,
    },
    /// The local account a user's tasks run as on workers started as root with
    /// `--run-as-user` (which refuse the tasks of a user with none).
    RunAs {
        #[command(flatten)]
        conn: Conn,
        name: String,
        /// A local account name on the workers, or `none`.
        #[arg(long, value_name = "ACCOUNT|none")]
        account: String,
    },
}

pub fn submit_cmd(a: SubmitArgs) -> anyhow::Result<()> {
    if a.workflow.is_none() && !a.commands.is_empty() {
        // clap's `requires` does not see it: the command after `--`
        // conflicts with --workflow, which satisfies the requirement.
        return Err(usage(
            "--command ACTIVITY=CMD goes with --workflow FILE (a bag of tasks takes its command after `--`)",
        ));
    }
    if let Some(file) = &a.workflow {
        let commands = activity_commands(&a.commands)?;
        let (workflow, mut tasks) = workflow_file(file, &commands)?;
        let workflow = WorkflowSpec {
            name: a.name.clone().unwrap_or(workflow.name),
            ..workflow
        };
        for t in &mut tasks {
            t.priority = t.priority.or(a.priority);
            t.optional = a.optional;
            t.time_limit_ms = a.time_limit.map(millis);
            t.memory_bytes = a.memory;
            t.caps = caps(&a);
        }
        let client = Client::new(&a.conn.conn(), Role::User)?;
        let req = SubmitRequest {
            tasks,
            org: None,
            workflow: Some(workflow),
        };
        let r: SubmitReply = send(&client, &req, &a)?;
        print_ids(&r, a.json)?;
        warn_optional(&client, &a, &r);
        return Ok(());
    }
    if a.count == 0 || a.count > MAX_TASKS_PER_SUBMIT as u64 {
        return Err(usage(format!("--count: 1 to {MAX_TASKS_PER_SUBMIT}")));
    }
    let command = a.command.join(" ");
    if command.trim().is_empty() {
        return Err(usage("the command after `--` is empty"));
    }
    let client = Client::new(&a.conn.conn(), Role::User)?;
    let tasks = (0..a.count)
        .map(|i| {
            let sub = |s: &str| s.replace("{i}", &i.to_string());
            NewTask {
                command: sub(&command),
                name: a.name.as_deref().map(sub),
                stage_in: a.stage_in.as_deref().map(sub),
                stage_out: a.stage_out.as_deref().map(sub),
                priority: a.priority,
                optional: a.optional,
                time_limit_ms: a.time_limit.map(millis),
                memory_bytes: a.memory,
                caps: caps(&a),
                ..NewTask::default()
            }
        })
        .collect();
    let req = SubmitRequest {
        tasks,
        ..SubmitRequest::default()
    };
    let r: SubmitReply = send(&client, &req, &a)?;
    print_ids(&r, a.json)?;
    warn_optional(&client, &a, &r);
    Ok(())
}

/// The per-run limits `a` asks for.
fn caps(a: &SubmitArgs) -> fairsched_broker::api::RunCaps {
    fairsched_broker::api::RunCaps {
        processes: a.max_processes,
        open_files: a.max_open_files,
        disk_bytes: a.max_disk,
        output_bytes: a.max_output,
    }
}

/// `req` sent with the key and for the time `a` gives.
fn send(client: &Client, req: &SubmitRequest, a: &SubmitArgs) -> anyhow::Result<SubmitReply> {
    if let Some(k) = &a.key
        && (!(1..=fairsched_broker::api::MAX_IDEMPOTENCY_KEY).contains(&k.len())
            || !k.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(usage(format!(
            "--key: 1 to {} visible ASCII characters",
            fairsched_broker::api::MAX_IDEMPOTENCY_KEY
        )));
    }
    let retry_for = a.retry_for.unwrap_or(fairsched_client::SUBMIT_RETRY_FOR);
    // Made here when not given, so that an error can say it.
    let key = match &a.key {
        Some(k) => k.clone(),
        None => fairsched_client::new_key()?,
    };
    match client.submit_with(req, Some(&key), retry_for) {
        Ok(r) => Ok(r),
        // A request written in steps that stopped part-way: its retry with
        // the key submits the rest, and only the rest.
        Err(e @ fairsched_client::ClientError::Refused { .. }) if e.to_string().contains("tasks were submitted (ids") => {
            Err(anyhow::Error::new(e).context(format!(
                "part of the submission was taken: run the same command again with --key {key} (within 24 h) to submit the rest, and only the rest"
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// With --optional, warns when the broker's policy is not `diet-ethic`
/// (the only one that tells optional tasks from mandatory ones), as
/// `fairsched optional` does.
fn warn_optional(client: &Client, a: &SubmitArgs, r: &SubmitReply) {
    if !a.optional {
        return;
    }
    let Some(&first) = r.ids.first() else { return };
    if let Some(order) = client.not_diet_ethic(first) {
        eprintln!(
            "fairsched submit: warning: the broker's order policy is `{order}`, not `diet-ethic`: --optional changes nothing there (only diet-ethic runs mandatory tasks first)"
        );
    }
}

fn print_ids(r: &SubmitReply, json: bool) -> anyhow::Result<()> {
    if json {
        sayln!("{}", serde_json::to_string(r)?);
    } else {
        for id in &r.ids {
            sayln!("{id}");
        }
    }
    Ok(())
}

pub fn status_cmd(a: StatusArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn.conn(), Role::User)?;
    let s: StatusReply = client.call("GET", "/v1/status", None::<&()>)?;
    let tasks: Option<TasksReply> = if a.tasks {
        // Page after page (`GET /v1/tasks?after=…`).
        Some(client.tasks()?)
    } else {
        None
    };
    if a.json {
        let mut v = serde_json::to_value(&s)?;
        if let Some(t) = &tasks {
            v["tasks"] = serde_json::to_value(&t.tasks)?;
            if !t.users.is_empty() {
                v["users"] = serde_json::to_value(&t.users)?;
            }
        }
        sayln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    sayln!(
        "held {}  waiting {}  running {}  completed {}  failed {}  cancelled {}  killed {}",
        s.held,
        s.waiting,
        s.running,
        s.completed,
        s.failed,
        s.cancelled,
        s.killed
    );
    sayln!("workers {}  slots {} ({} busy)", s.workers, s.slots, s.busy_slots);
    if s.workers_short_of_disk > 0 {
        sayln!(
            "{} worker(s) short of disk space (below their --min-free-disk): they start no run until space is freed; the tasks handed to them wait",
            s.workers_short_of_disk
        );
    }
    if let Some(t) = tasks {
        for line in task_table(&t, terminal_width()) {
            sayln!("{line}");
        }
    }
    Ok(())
}

/// The width to fit `status --tasks` in: `$COLUMNS` if set, else 120.
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&w: &usize| w >= 40)
        .unwrap_or(120)
}

/// `cancel`, `hold` or `release` (`action`) of a task of the user's.
pub fn task_cmd(a: TaskArgs, action: &str) -> anyhow::Result<()> {
    let client = Client::new(&a.conn.conn(), Role::User)?;
    let t: TaskOut = client.call("POST", &format!("/v1/tasks/{}/{action}", a.id), None::<&()>)?;
    print_task(&t)
}

/// `ID STATE`, and why a held task is held.
fn print_task(t: &TaskOut) -> anyhow::Result<()> {
    match &t.reason {
        Some(why) if t.state == "held" => sayln!("{} held: {why}", t.id),
        _ => sayln!("{} {}", t.id, t.state),
    }
    Ok(())
}

pub fn explain_cmd(a: ExplainArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn.conn(), Role::User)?;
    let v: serde_json::Value = client.call("GET", &format!("/v1/tasks/{}/explain", a.id), None::<&()>)?;
    if a.json {
        sayln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    for line in explain_text(a.id, &v) {
        sayln!("{line}");
    }
    Ok(())
}

pub fn output_cmd(a: OutputArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn.conn(), Role::User)?;
    let mut path = format!(
        "/v1/tasks/{}/output?stream={}",
        a.id,
        if a.stderr { "stderr" } else { "stdout" }
    );
    if let Some(n) = a.attempt {
        path.push_str(&format!("&attempt={n}"));
    }
    let (text, bytes) = client.get_text(&path, "x-fairsched-bytes")?;
    let total: u64 = bytes.and_then(|b| b.parse().ok()).unwrap_or(0);
    if total > text.len() as u64 {
        crate::term::note(format_args!(
            "(the last {} of its {total} bytes; the rest is in the run's directory on its worker)",
            text.len()
        ));
    }
    crate::term::say!("{text}");
    Ok(())
}

/// `method path` with `body` as the admin, the reply read as `T`.
fn admin_call<T: serde::de::DeserializeOwned>(
    conn: &Conn,
    method: &str,
    path: &str,
    body: Option<&impl serde::Serialize>,
) -> Result<T, fairsched_client::ClientError> {
    Client::new(&conn.conn(), Role::Admin)?.call(method, path, body)
}

pub fn admin_live(c: AdminLive) -> anyhow::Result<()> {
    match c {
        AdminLive::Org(OrgCmd::Add { conn, name }) => {
            let r: OrgReply = admin_call(&conn, "POST", "/v1/admin/orgs", Some(&OrgRequest { name }))?;
            sayln!("{}", r.id);
        }
        AdminLive::User(UserCmd::Add { conn, name, org }) => {
            let r: UserReply =
                admin_call(&conn, "POST", "/v1/admin/users", Some(&UserRequest { name, org }))?;
            sayln!("{}", r.token);
        }
        AdminLive::Org(OrgCmd::Remove { conn, name }) => {
            let r: RemovedReply = admin_call(
                &conn,
                "POST",
                "/v1/admin/orgs/remove",
                Some(&NameRequest { name }),
            )?;
            sayln!(
                "removed organization {}: {} tasks cancelled, workers evicted: {:?}",
                r.name,
                r.cancelled.len(),
                r.evicted
            );
        }
        AdminLive::User(UserCmd::Rotate { conn, name }) => {
            let r: UserReply = admin_call(
                &conn,
                "POST",
                "/v1/admin/users/rotate",
                Some(&NameRequest { name }),
            )?;
            sayln!("{}", r.token);
        }
        AdminLive::User(UserCmd::Remove { conn, name }) => {
            let r: RemovedReply = admin_call(
                &conn,
                "POST",
                "/v1/admin/users/remove",
                Some(&NameRequest { name }),
            )?;
            sayln!("removed user {}: {} tasks cancelled", r.name, r.cancelled.len());
        }
        AdminLive::User(UserCmd::RunAs { conn, name, account }) => {
            let account = (account != "none").then_some(account);
            let r: RunAsReply = admin_call(
                &conn,
                "POST",
                "/v1/admin/users/run-as",
                Some(&RunAsRequest { name, account }),
            )?;
            match r.account {
                Some(a) => sayln!("{}'s tasks run as {a} on workers with --run-as-user", r.name),
                None => sayln!(
                    "{} has no local account: workers with --run-as-user refuse its tasks",
                    r.name
                ),
            }
        }
        AdminLive::Token(TokenCmd::Revoke {
            conn,
            leaked,
            worker_tokens_of,
        }) => {
            let client = Client::new(&conn.conn(), Role::Admin)?;
            match (leaked, worker_tokens_of) {
                (_, Some(org)) => {
                    let r: RevokedReply = client.call(
                        "POST",
                        "/v1/admin/worker-tokens/revoke",
                        Some(&WorkerTokenRequest { org }),
                    )?;
                    sayln!(
                        "revoked {} worker token{} of {}",
                        r.revoked,
                        if r.revoked == 1 { "" } else { "s" },
                        r.org
                    );
                }
                (Some(token), None) => {
                    let r: RevokeReply =
                        client.call("POST", "/v1/admin/tokens/revoke", Some(&RevokeRequest { token }))?;
                    sayln!("revoked {}", r.revoked);
                }
                (None, None) => return Err(usage("give the leaked token, or --worker-tokens-of ORG")),
            }
        }
        AdminLive::Worker(WorkerCmd::Drain { conn, id }) => {
            let r: fairsched_broker::wire::DrainReply = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/workers/{id}/drain"),
                None::<&()>,
            )?;
            sayln!("worker {id} drains: {} busy slots left", r.slots);
        }
        AdminLive::Worker(WorkerCmd::Hold { conn, id }) => {
            let r: serde_json::Value = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/workers/{id}/hold"),
                None::<&()>,
            )?;
            sayln!("worker {id} held: {} slots still running a task", r["slots"]);
        }
        AdminLive::Worker(WorkerCmd::Release { conn, id }) => {
            let r: serde_json::Value = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/workers/{id}/release"),
                None::<&()>,
            )?;
            sayln!(
                "worker {id} released ({} of its slots still running a task from before)",
                r["slots"]
            );
        }
        AdminLive::Worker(WorkerCmd::Evict { conn, id }) => {
            let _: serde_json::Value = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/workers/{id}/evict"),
                None::<&()>,
            )?;
            sayln!("worker {id} evicted: its runs are back in the queue");
        }
        AdminLive::Quota(QuotaCmd::Set {
            conn,
            user,
            org,
            max_queued,
            max_running,
        }) => {
            let limit = |flag: &str, v: &str| match v {
                "none" => Ok(None),
                n => n
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| usage(format!("{flag} {n}: a number, or `none`"))),
            };
            let client = Client::new(&conn.conn(), Role::Admin)?;
            // A limit not given keeps its value: the request sets both.
            let now: QuotasReply = client.call("GET", "/v1/admin/quotas", None::<&()>)?;
            let old = now.quotas.into_iter().find(|q| q.user == user && q.org == org);
            let max_queued = match max_queued {
                Some(v) => limit("--max-queued", &v)?,
                None => old.as_ref().and_then(|q| q.max_queued),
            };
            let max_running = match max_running {
                Some(v) => limit("--max-running", &v)?,
                None => old.as_ref().and_then(|q| q.max_running),
            };
            let r: QuotasReply = client.call(
                "POST",
                "/v1/admin/quotas",
                Some(&QuotaRequest {
                    user,
                    org,
                    max_queued,
                    max_running,
                }),
            )?;
            print_quotas(&r)?;
        }
        AdminLive::Task(AdminTaskCmd::Hold { conn, id }) => {
            let t: TaskOut = admin_call(&conn, "POST", &format!("/v1/admin/tasks/{id}/hold"), None::<&()>)?;
            print_task(&t)?;
        }
        AdminLive::Task(AdminTaskCmd::Release { conn, id }) => {
            let t: TaskOut = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/tasks/{id}/release"),
                None::<&()>,
            )?;
            print_task(&t)?;
        }
        AdminLive::Task(AdminTaskCmd::Requeue { conn, id }) => {
            let t: TaskOut = admin_call(
                &conn,
                "POST",
                &format!("/v1/admin/tasks/{id}/requeue"),
                None::<&()>,
            )?;
            sayln!("task {id}: {} after {} runs", t.state, t.attempts);
        }
        AdminLive::Quota(QuotaCmd::List { conn }) => {
            let r: QuotasReply = admin_call(&conn, "GET", "/v1/admin/quotas", None::<&()>)?;
            print_quotas(&r)?;
        }
        AdminLive::WorkerToken { conn, org } => {
            let r: TokenReply = admin_call(
                &conn,
                "POST",
                "/v1/admin/worker-tokens",
                Some(&WorkerTokenRequest { org }),
            )?;
            sayln!("{}", r.token);
        }
    }
    Ok(())
}

/// One line per quota in force.
fn print_quotas(r: &QuotasReply) -> anyhow::Result<()> {
    if r.quotas.is_empty() {
        sayln!("no quotas");
    }
    for q in &r.quotas {
        let whose = match (&q.user, &q.org) {
            (Some(u), _) => format!("user {u}"),
            (_, Some(o)) => format!("organization {o}"),
            _ => continue,
        };
        let limits: Vec<String> = [(q.max_queued, "queued"), (q.max_running, "running")]
            .into_iter()
            .filter_map(|(n, what)| n.map(|n| format!("at most {n} {what}")))
            .collect();
        sayln!("{whose}: {}", limits.join(", "));
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The broker's database (read-only: the broker may keep running).
    #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
    db: PathBuf,
    /// The SWF log to write (gzip if it ends in .gz; `-`: standard output): one line per task
    /// that ran, user (field 12), organization (field 13), measured wait and run times.
    #[arg(long, value_name = "OUT")]
    swf: PathBuf,
    /// Also write the organizations (their slots, their users) as a platform file for
    /// `fairsched simulate --platform`.
    #[arg(long, value_name = "TOML")]
    platform: Option<PathBuf>,
}

/// Writes the broker's history at `db` as an SWF log, and its
/// organizations as a platform file.
pub fn export(
    db: &std::path::Path,
    swf: &std::path::Path,
    platform: Option<&std::path::Path>,
) -> anyhow::Result<Exported> {
    let (e, h) = fairsched_broker::export::export(db, swf)?;
    if let Some(p) = platform {
        fairsched_report::write_atomic(p, platform_toml(&h).as_bytes())?;
    }
    Ok(e)
}

pub fn export_cmd(a: ExportArgs) -> anyhow::Result<()> {
    let e = match export(&a.db, &a.swf, a.platform.as_deref()) {
        Err(e)
            if e.downcast_ref::<fairsched_broker::export::ExportError>()
                .is_some_and(|e| e.broken_pipe()) =>
        {
            return Ok(());
        }
        e => e?,
    };
    let to_stdout = a.swf == std::path::Path::new("-");
    let what = if to_stdout {
        "standard output".to_string()
    } else {
        a.swf.display().to_string()
    };
    let summary = format!(
        "{what}: {} ended tasks ({} that never started left out; tasks still waiting, running or held are not exported){}",
        e.jobs,
        e.skipped,
        a.platform
            .as_ref()
            .map(|p| format!("; organizations in {}", p.display()))
            .unwrap_or_default()
    );
    if to_stdout {
        // Standard output is the log.
        eprintln!("{summary}");
    } else {
        sayln!("{summary}");
    }
    Ok(())
}
