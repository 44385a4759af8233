//! The live service from the command line: `serve`, `worker`, and the
//! client commands (`submit`, `status`, `cancel`, `explain`, `admin org|user|worker-token`),
//! which talk to a running broker over HTTP (docs/protocol.md).

use crate::term::{sayln, usage};
use anyhow::{Context, bail};
use fairsched_broker::api::*;
use fairsched_broker::http::{ServeOpts, serve};
use fairsched_broker::service::Settings;
use serde::Serialize;
use serde::de::DeserializeOwned;
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
}

/// Credentials `fairsched serve --quickstart` writes for the commands run
/// from the same directory.
pub const TOKENS_FILE: &str = "fairsched.tokens";

/// The value of `key` in ./fairsched.tokens, if the file is there.
pub(crate) fn quickstart(key: &str) -> Option<String> {
    let text = std::fs::read_to_string(TOKENS_FILE).ok()?;
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Who this command acts as, for the quickstart file.
#[derive(Clone, Copy)]
pub(crate) enum Role {
    User,
    Admin,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The database made by `fairsched admin init` (it fixes the policies).
    #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
    db: PathBuf,
    /// Address to listen on (port 0: any free port; the line `listening on
    /// http://ADDR` says which).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,
    /// A worker silent this long loses its slots; its tasks go back to the queue.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration, allow_hyphen_values = true)]
    lease: Duration,
    /// A task whose worker is lost (it left, or its lease ran out) during the task's Nth run
    /// fails; during an earlier run, it goes back to the queue. With 5, a task that loses its
    /// worker every time fails at the 5th loss (every run counts, also one a preempting policy
    /// stopped).
    #[arg(long, value_name = "N", default_value_t = 5)]
    max_attempts: u32,
    /// Steps of the log between two snapshots of the scheduler's state (a restart restores the
    /// newest and replays only the steps after it; 0: no snapshots, a restart replays the whole
    /// log). A clean shutdown writes one too.
    #[arg(long, value_name = "N", default_value_t = fairsched_broker::DEFAULT_SNAPSHOT_EVERY)]
    snapshot_every: u64,
    /// Try it on one machine: create the database if it is missing (policy `first-fit`, an
    /// organization `local`, a user `you`), and write the admin, user and worker tokens and
    /// the broker's URL to ./fairsched.tokens (readable by you only), where `fairsched
    /// worker`, `submit`, `status`… run from this folder find them.
    #[arg(long)]
    quickstart: bool,
}

fn duration(s: &str) -> Result<Duration, String> {
    fairsched_worker::parse_duration(s).map_err(|e| e.to_string())
}

pub fn serve_cmd(a: ServeArgs, registry: &fairsched_core::Registry) -> anyhow::Result<()> {
    if a.lease < Duration::from_millis(100) {
        return Err(usage("--lease: at least 100ms"));
    }
    if a.max_attempts == 0 {
        return Err(usage("--max-attempts: at least 1"));
    }
    let mut tokens: Option<Vec<(&str, String)>> = None;
    let mut created = false;
    if a.quickstart {
        if !a.db.exists() {
            tokens = Some(quickstart_init(&a.db)?);
            created = true;
        } else if std::path::Path::new(TOKENS_FILE).exists() {
            // Same broker again: keep the tokens, refresh the URL below.
            let keys = ["admin", "user", "worker"];
            tokens = Some(
                keys.iter()
                    .filter_map(|k| quickstart(k).map(|v| (*k, v)))
                    .collect(),
            );
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
        settings: Settings {
            lease: a.lease,
            max_attempts: a.max_attempts,
            snapshot_every: a.snapshot_every,
            registry: registry.clone(),
        },
    };
    let listening = std::cell::Cell::new(false);
    let served = serve(opts, |addr| {
        listening.set(true);
        if let Some(t) = &tokens
            && let Err(e) = write_tokens(&format!("http://{addr}"), t)
        {
            tracing::error!("{TOKENS_FILE}: {e}");
        }
        // Tests and scripts wait for this line.
        let mut out = std::io::stdout();
        let _ = writeln!(out, "listening on http://{addr}");
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
fn quickstart_init(db: &std::path::Path) -> anyhow::Result<Vec<(&'static str, String)>> {
    let live = fairsched_broker::Live::create(
        db,
        &fairsched_broker::Config::default(),
        &fairsched_core::Registry::builtin(),
    )?;
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
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
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
    if o.token.trim().is_empty() {
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
}

pub(crate) struct Client {
    agent: ureq::Agent,
    base: String,
    auth: String,
}

impl Client {
    pub(crate) fn new(c: &Conn, role: Role) -> anyhow::Result<Client> {
        let key = match role {
            Role::User => "user",
            Role::Admin => "admin",
        };
        let token = c
            .token
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| quickstart(key));
        let Some(token) = token else {
            return Err(usage(format!(
                "no token: give --token T or set FAIRSCHED_TOKEN (or run from the folder of `fairsched serve --quickstart`, whose {TOKENS_FILE} has one)"
            )));
        };
        let broker = c
            .broker
            .clone()
            .or_else(|| quickstart("broker"))
            .unwrap_or_else(|| "http://127.0.0.1:8080".into());
        if !broker.starts_with("http://") && !broker.starts_with("https://") {
            return Err(usage(format!(
                "--broker `{broker}`: expected a URL like http://127.0.0.1:8080"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Client {
            agent,
            base: broker.trim_end_matches('/').to_string(),
            auth: format!("Bearer {}", token.trim()),
        })
    }

    pub(crate) fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> anyhow::Result<T> {
        let url = format!("{}{path}", self.base);
        let resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).header("Authorization", &self.auth).call(),
            (_, Some(b)) => self
                .agent
                .post(&url)
                .header("Authorization", &self.auth)
                .header("Content-Type", "application/json")
                .send(&serde_json::to_vec(b)?[..]),
            (_, None) => self
                .agent
                .post(&url)
                .header("Authorization", &self.auth)
                .send_empty(),
        };
        let mut resp = resp.with_context(|| format!("cannot reach the broker at {}", self.base))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .with_context(|| format!("{method} {url}: reading the reply"))?;
        if !(200..300).contains(&status) {
            let why = serde_json::from_str::<ErrorBody>(&text)
                .map(|e| e.error)
                .unwrap_or(text);
            bail!("{method} {path}: {status}: {}", why.trim());
        }
        serde_json::from_str(&text).with_context(|| format!("{method} {path}: malformed reply"))
    }
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
        }
        let client = Client::new(&a.conn, Role::User)?;
        let req = SubmitRequest {
            tasks,
            org: None,
            workflow: Some(workflow),
        };
        let r: SubmitReply = client.call("POST", "/v1/tasks", Some(&req))?;
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
    let client = Client::new(&a.conn, Role::User)?;
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
                ..NewTask::default()
            }
        })
        .collect();
    let req = SubmitRequest {
        tasks,
        ..SubmitRequest::default()
    };
    let r: SubmitReply = client.call("POST", "/v1/tasks", Some(&req))?;
    print_ids(&r, a.json)?;
    warn_optional(&client, &a, &r);
    Ok(())
}

/// With --optional, warns when the broker's policy is not `diet-ethic`
/// (the only one that tells optional tasks from mandatory ones), as
/// `fairsched optional` does.
fn warn_optional(client: &Client, a: &SubmitArgs, r: &SubmitReply) {
    if !a.optional {
        return;
    }
    let Some(&first) = r.ids.first() else { return };
    if let Some(order) = crate::cmd_optional::not_diet_ethic(client, first) {
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

/// `--command ACTIVITY=CMD` flags, by activity.
fn activity_commands(flags: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for f in flags {
        let Some((activity, cmd)) = f.split_once('=') else {
            return Err(usage(format!("--command `{f}`: expected ACTIVITY=CMD")));
        };
        let activity = activity.trim();
        if activity.is_empty() || cmd.trim().is_empty() {
            return Err(usage(format!(
                "--command `{f}`: expected ACTIVITY=CMD, both non-empty"
            )));
        }
        if out.iter().any(|(a, _)| a == activity) {
            return Err(usage(format!("--command: activity `{activity}` given twice")));
        }
        out.push((activity.to_string(), cmd.to_string()));
    }
    Ok(out)
}

/// One task of a TOML workflow file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DagTask {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    activity: Option<String>,
    #[serde(default)]
    after: Vec<String>,
    #[serde(default)]
    stage_in: Option<String>,
    #[serde(default)]
    stage_out: Option<String>,
    #[serde(default)]
    priority: Option<i64>,
}

/// A TOML workflow file: `name`, then `[[task]]` tables.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DagFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "task")]
    tasks: Vec<DagTask>,
}

/// A task's activity when it names none: its name without trailing
/// digits, `_`, `-` and `.` (`work-12` → `work`); the whole name if
/// nothing would be left.
pub(crate) fn default_activity(name: &str) -> &str {
    let a = name.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if a.is_empty() { name } else { a }
}

/// Reads `--workflow FILE`: a WfCommons trace (by its name `.json`,
/// `.json.gz` or `.gz`, or a content starting with `{` or gzip's magic
/// bytes) whose tasks get their activity's command from `commands`, or
/// else a TOML DAG. Tasks come out parents first, `after` holding indices.
pub(crate) fn workflow_file(
    path: &std::path::Path,
    commands: &[(String, String)],
) -> anyhow::Result<(WorkflowSpec, Vec<NewTask>)> {
    use fairsched_trace::workflow::{LoadOptions, WorkflowSource};
    let lower = path.to_string_lossy().to_ascii_lowercase();
    let json = if lower.ends_with(".json") || lower.ends_with(".gz") {
        true
    } else if lower.ends_with(".toml") {
        false
    } else {
        let mut head = [0u8; 64];
        let n = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .with_context(|| format!("--workflow {}", path.display()))?;
        let head = &head[..n];
        head.starts_with(&[0x1f, 0x8b]) || head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
    };
    if !json {
        return toml_workflow(path, commands);
    }
    let w = match WorkflowSource::load(path, &LoadOptions::default())? {
        WorkflowSource::Trace(w) => w,
        WorkflowSource::Profile(_) => {
            bail!(
                "{}: a workflow profile, not a DAG of tasks (give a TOML file of [[task]] tables or a WfCommons trace)",
                path.display()
            )
        }
    };
    let missing: Vec<&str> = w
        .activities
        .iter()
        .filter(|a| !commands.iter().any(|(c, _)| c == *a))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "{}: give the command of every activity with --command ACTIVITY=CMD; missing: {}",
            path.display(),
            missing.join(", ")
        )));
    }
    if let Some((a, _)) = commands.iter().find(|(a, _)| !w.activities.contains(a)) {
        return Err(usage(format!(
            "--command {a}=…: {} has no activity `{a}` (it has {})",
            path.display(),
            w.activities.join(", ")
        )));
    }
    if w.tasks.len() > MAX_TASKS_PER_SUBMIT {
        bail!(
            "{}: {} tasks; a workflow has at most {MAX_TASKS_PER_SUBMIT}",
            path.display(),
            w.tasks.len()
        );
    }
    let tasks = w
        .tasks
        .iter()
        .map(|t| {
            let activity = &w.activities[t.activity as usize];
            let cmd = &commands
                .iter()
                .find(|(a, _)| a == activity)
                .expect("checked above")
                .1;
            NewTask {
                command: cmd.replace("{name}", &t.name),
                name: Some(t.name.clone()),
                activity: Some(t.activity),
                after: t.parents.clone(),
                ..NewTask::default()
            }
        })
        .collect();
    Ok((
        WorkflowSpec {
            name: w.name,
            activities: w.activities,
        },
        tasks,
    ))
}

/// A TOML DAG (see [`workflow_file`]), checked: unique names, known
/// parents, no cycle; sorted parents first (file order among tasks ready
/// together).
fn toml_workflow(
    path: &std::path::Path,
    commands: &[(String, String)],
) -> anyhow::Result<(WorkflowSpec, Vec<NewTask>)> {
    let p = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("--workflow {p}"))?;
    let file: DagFile = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(":{}", fairsched_trace::toml_key::line_of(&text, s.start)))
            .unwrap_or_default();
        anyhow::anyhow!("{p}{at}: {}", e.message().trim())
    })?;
    if file.tasks.is_empty() {
        bail!("{p}: no task (a workflow is `[[task]]` tables with a `name` and a `command`)");
    }
    if file.tasks.len() > MAX_TASKS_PER_SUBMIT {
        bail!(
            "{p}: {} tasks; a workflow has at most {MAX_TASKS_PER_SUBMIT}",
            file.tasks.len()
        );
    }
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, t) in file.tasks.iter().enumerate() {
        if t.name.trim().is_empty() {
            bail!("{p}: task #{}: empty name", i + 1);
        }
        if index.insert(t.name.as_str(), i).is_some() {
            bail!("{p}: task \"{}\": two tasks have this name", t.name);
        }
    }
    // Parents by index, checked.
    let mut parents: Vec<Vec<usize>> = Vec::with_capacity(file.tasks.len());
    for t in &file.tasks {
        let mut ps = Vec::with_capacity(t.after.len());
        for a in &t.after {
            match index.get(a.as_str()) {
                Some(&j) => ps.push(j),
                None => bail!(
                    "{p}: task \"{}\": after: \"{a}\" is not a task of the workflow",
                    t.name
                ),
            }
        }
        ps.sort_unstable();
        ps.dedup();
        parents.push(ps);
    }
    // Topological order (Kahn), the file's order among ready tasks.
    let n = file.tasks.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pending: Vec<usize> = parents.iter().map(Vec::len).collect();
    for (i, ps) in parents.iter().enumerate() {
        for &j in ps {
            children[j].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &c in &children[i] {
            pending[c] -= 1;
            if pending[c] == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() < n {
        // A cycle among the tasks left: follow parents until one repeats.
        let start = (0..n).find(|&i| pending[i] > 0).expect("a task is left");
        let mut path = vec![start];
        let mut at = start;
        loop {
            at = *parents[at]
                .iter()
                .find(|&&j| pending[j] > 0)
                .expect("a task left has a parent left");
            if let Some(k) = path.iter().position(|&x| x == at) {
                // `path` follows parents: reversed, each runs after the one before.
                let mut cycle: Vec<&str> = path[k..]
                    .iter()
                    .rev()
                    .map(|&i| file.tasks[i].name.as_str())
                    .collect();
                cycle.push(cycle[0]);
                bail!(
                    "{p}: task \"{}\": a cycle of dependencies: {} (each runs after the one before it)",
                    file.tasks[at].name,
                    cycle.join(" → ")
                );
            }
            path.push(at);
        }
    }
    let mut position = vec![0u32; n];
    for (k, &i) in order.iter().enumerate() {
        position[i] = k as u32;
    }
    let mut activities: Vec<String> = Vec::new();
    let mut tasks = Vec::with_capacity(n);
    let mut missing: Vec<String> = Vec::new();
    for &i in &order {
        let t = &file.tasks[i];
        let activity = t
            .activity
            .clone()
            .unwrap_or_else(|| default_activity(&t.name).to_string());
        let a = match activities.iter().position(|x| *x == activity) {
            Some(a) => a,
            None => {
                activities.push(activity.clone());
                activities.len() - 1
            }
        };
        let command = match (&t.command, commands.iter().find(|(x, _)| *x == activity)) {
            (Some(c), _) => c.clone(),
            (None, Some((_, c))) => c.clone(),
            (None, None) => {
                if !missing.contains(&activity) {
                    missing.push(activity.clone());
                }
                String::new()
            }
        };
        if command.trim().is_empty() && t.command.is_some() {
            bail!("{p}: task \"{}\": command: empty", t.name);
        }
        let mut after: Vec<u32> = parents[i].iter().map(|&j| position[j]).collect();
        after.sort_unstable();
        tasks.push(NewTask {
            command: command.replace("{name}", &t.name),
            name: Some(t.name.clone()),
            stage_in: t.stage_in.clone(),
            stage_out: t.stage_out.clone(),
            priority: t.priority,
            activity: Some(a as u32),
            after,
            ..NewTask::default()
        });
    }
    if !missing.is_empty() {
        return Err(usage(format!(
            "{p}: tasks without a `command`, and no --command ACTIVITY=CMD for their activity: {}",
            missing.join(", ")
        )));
    }
    if let Some((a, _)) = commands.iter().find(|(a, _)| !activities.contains(a)) {
        return Err(usage(format!(
            "--command {a}=…: {p} has no activity `{a}` (it has {})",
            activities.join(", ")
        )));
    }
    let name = file.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workflow".into())
    });
    Ok((WorkflowSpec { name, activities }, tasks))
}

pub fn status_cmd(a: StatusArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn, Role::User)?;
    let s: StatusReply = client.call("GET", "/v1/status", None::<&()>)?;
    let tasks: Option<TasksReply> = if a.tasks {
        Some(client.call("GET", "/v1/tasks", None::<&()>)?)
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

/// `s` cut to `width` characters, `…` marking a cut.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The `status --tasks` table: a header, then a line per task. A `user`
/// column when the list names users (the admin's), a `reason` column,
/// cut to fit `width`, when some task has a reason.
fn task_table(t: &TasksReply, width: usize) -> Vec<String> {
    let users = !t.users.is_empty();
    let reasons = t.tasks.iter().any(|t| t.reason.is_some());
    let user_of = |u: i64| t.users.get(&u).cloned().unwrap_or_else(|| u.to_string());
    let user_w = t
        .tasks
        .iter()
        .map(|x| user_of(x.user).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 16);
    // With a reason after it, the name gets a column of its own.
    let name_w = t
        .tasks
        .iter()
        .map(|x| x.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 24);
    let row = |id: &str, state: &str, attempts: &str, exit: &str, user: &str, name: &str, reason: &str| {
        let mut l = format!("{id:>8}  {state:<10} {attempts:>8} {exit:>5}  ");
        if users {
            l.push_str(&format!("{:<user_w$}  ", fit(user, user_w)));
        }
        if reasons {
            l.push_str(&format!("{:<name_w$}  ", fit(name, name_w)));
            let room = width.saturating_sub(l.chars().count()).max(20);
            l.push_str(&fit(reason, room));
        } else {
            l.push_str(name);
        }
        l.trim_end().to_string()
    };
    let mut out = vec![row("id", "state", "attempts", "exit", "user", "name", "reason")];
    for x in &t.tasks {
        let exit = match (x.exit_code, x.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "-".into(),
        };
        out.push(row(
            &x.id.to_string(),
            &x.state,
            &x.attempts.to_string(),
            &exit,
            &user_of(x.user),
            &x.name,
            x.reason.as_deref().unwrap_or(""),
        ));
    }
    out
}

pub fn cancel_cmd(a: TaskArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn, Role::User)?;
    let t: TaskOut = client.call("POST", &format!("/v1/tasks/{}/cancel", a.id), None::<&()>)?;
    sayln!("{} {}", t.id, t.state);
    Ok(())
}

pub fn explain_cmd(a: ExplainArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.conn, Role::User)?;
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

/// A number as JSON has it, to 3 decimals at most (`12.5`, `3`).
fn num(v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(x) if v.is_f64() => {
            let s = format!("{x:.3}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        _ => v.to_string(),
    }
}

/// `explain`'s text: the line saying why, then `key: value` lines of what
/// the broker sent (`explain --json` prints all of it).
fn explain_text(id: u64, v: &serde_json::Value) -> Vec<String> {
    let mut out = vec![format!(
        "task {id}: {}",
        v["why"].as_str().unwrap_or("(the broker says nothing)")
    )];
    let mut line = |k: &str, val: String| {
        let key = if k.is_empty() {
            String::new()
        } else {
            format!("{k}:")
        };
        out.push(format!("{key:<13} {val}"));
    };
    let state = v["state"].as_str().unwrap_or("?");
    let mut st = state.to_string();
    if let Some(p) = v.get("priority").filter(|p| !p.is_null()) {
        st.push_str(&format!(", priority {}", num(p)));
    }
    if let Some(n) = v.get("attempts").and_then(|n| n.as_u64()) {
        st.push_str(&format!(", run {n}"));
    }
    if let Some(w) = v.get("worker").filter(|w| !w.is_null()) {
        st.push_str(&format!(", on worker {}", num(w)));
    }
    line("state", st);
    if let Some(r) = v.get("reason").and_then(|r| r.as_str()) {
        line("reason", r.to_string());
    }
    let p = &v["policy"];
    if let Some(order) = p["order"].as_str() {
        let mut s = order.to_string();
        if let Some(c) = p["control"].as_str() {
            s.push_str(&format!(", control {c}"));
        }
        if let Some(al) = p["allocate"].as_str().filter(|a| *a != "single-pool") {
            s.push_str(&format!(", allocate {al}"));
        }
        line("policy", s);
    }
    if let Some(w) = v.get("waiting_for").and_then(|w| w.as_array())
        && !w.is_empty()
    {
        let ids: Vec<String> = w.iter().map(num).collect();
        line("waiting for", format!("task(s) {}", ids.join(", ")));
    }
    if let Some(ahead) = v.get("ahead_by_priority_then_fifo") {
        line(
            "queue",
            format!(
                "{} waiting task(s) ahead by priority then submission order ({} of the same user), {} submitted before it",
                num(ahead),
                num(&v["ahead_of_same_user"]),
                num(&v["ahead_in_submission_order"])
            ),
        );
    }
    if let Some(slots) = v.get("slots") {
        line(
            "slots",
            format!("{} in all, {} free", num(slots), num(&v["free_slots"])),
        );
    }
    let org = match (v.get("org_name").and_then(|n| n.as_str()), v.get("org")) {
        (Some(n), _) => Some(n.to_string()),
        (None, Some(o)) if !o.is_null() => Some(format!("#{}", num(o))),
        _ => None,
    };
    if let Some(org) = org {
        let mut s = org;
        if let Some(n) = v.get("org_slots") {
            s.push_str(&format!(
                ": contributes {} slot(s), runs {} task(s)",
                num(n),
                num(&v["org_running"])
            ));
        }
        line("organization", s);
    }
    if let Some(n) = v.get("user_running") {
        line("user", format!("runs {} task(s)", num(n)));
    }
    if let Some(f) = v.get("fairness").and_then(|f| f.as_object()) {
        let mut first = true;
        for (k, x) in f {
            let val = match x.as_object() {
                Some(m) => m
                    .iter()
                    .map(|(o, y)| format!("{o} {}", num(y)))
                    .collect::<Vec<_>>()
                    .join(", "),
                None => num(x),
            };
            line(if first { "fairness" } else { "" }, format!("{k} = {val}"));
            first = false;
        }
    }
    match v.get("user_satisfaction") {
        Some(s) if !s.is_null() => line(
            "satisfaction",
            format!(
                "{} (the slot-time its user's runs got over the slot-time it deserved)",
                num(s)
            ),
        ),
        Some(_) => line("satisfaction", "- (nothing deserved yet)".into()),
        None => {}
    }
    if let Some(w) = v.get("workflow").filter(|w| !w.is_null()) {
        line("workflow", num(w));
    }
    out
}

pub fn admin_live(c: AdminLive) -> anyhow::Result<()> {
    match c {
        AdminLive::Org(OrgCmd::Add { conn, name }) => {
            let r: OrgReply = Client::new(&conn, Role::Admin)?.call(
                "POST",
                "/v1/admin/orgs",
                Some(&OrgRequest { name }),
            )?;
            sayln!("{}", r.id);
        }
        AdminLive::User(UserCmd::Add { conn, name, org }) => {
            let r: UserReply = Client::new(&conn, Role::Admin)?.call(
                "POST",
                "/v1/admin/users",
                Some(&UserRequest { name, org }),
            )?;
            sayln!("{}", r.token);
        }
        AdminLive::WorkerToken { conn, org } => {
            let r: TokenReply = Client::new(&conn, Role::Admin)?.call(
                "POST",
                "/v1/admin/worker-tokens",
                Some(&WorkerTokenRequest { org }),
            )?;
            sayln!("{}", r.token);
        }
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

/// What an export wrote.
pub struct Exported {
    pub jobs: u64,
    pub skipped: u64,
}

pub fn export_cmd(a: ExportArgs) -> anyhow::Result<()> {
    let e = match export(&a.db, &a.swf, a.platform.as_deref()) {
        Err(e) if broken_pipe(&e) => return Ok(()),
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

/// Whether `e` comes from writing to a closed pipe (`export --swf - | head`).
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes the broker's history at `db` as an SWF log (and a platform file).
/// SWF counts whole seconds: a run shorter than a second is written as 1 s.
/// `swf` = `-`: standard output.
pub fn export(
    db: &std::path::Path,
    swf: &std::path::Path,
    platform: Option<&std::path::Path>,
) -> anyhow::Result<Exported> {
    use fairsched_trace::SwfWriter;
    let h = fairsched_broker::service::history(db).map_err(anyhow::Error::msg)?;
    let e = if swf == std::path::Path::new("-") {
        let out = std::io::BufWriter::new(std::io::stdout().lock());
        write_history(SwfWriter::plain("standard output", out), db, &h)?
    } else {
        write_history(SwfWriter::create(swf)?, db, &h)?
    };
    if let Some(p) = platform {
        let mut s = String::from(
            "# Organizations of a fairsched broker (`fairsched export`): the most slots its\n# workers held at once, and its users (SWF field 12).\nunlisted = \"error\"\n",
        );
        for (id, name, slots) in &h.orgs {
            let users: Vec<String> = h
                .users
                .iter()
                .filter(|u| u.2 == *id)
                .map(|u| u.0.to_string())
                .collect();
            s.push_str(&format!(
                "\n[[org]]\nname = {name:?}\nprocs = {slots}\nusers = [{}]\n",
                users.join(", ")
            ));
        }
        fairsched_report::write_atomic(p, s.as_bytes())?;
    }
    Ok(e)
}

fn write_history<W: std::io::Write>(
    mut w: fairsched_trace::SwfWriter<W>,
    db: &std::path::Path,
    h: &fairsched_broker::service::History,
) -> anyhow::Result<Exported> {
    use fairsched_trace::{SwfHeader, SwfJob};
    let total: u32 = h.orgs.iter().map(|o| o.2).sum();
    let mut header = SwfHeader::default();
    header.set("Version", "2.2");
    header.set("Computer", "a fairsched broker");
    header.set("Installation", &format!("exported from {}", db.display()));
    header.set("UnixStartTime", &(h.epoch_ms / 1000).to_string());
    header.set("MaxProcs", &total.max(1).to_string());
    header.set(
        "Note",
        "field 12 is the broker's user id, field 13 its organization id; times are rounded to seconds (a run under 1 s is 1 s)",
    );
    w.write_header(&header)?;
    let (mut jobs, mut skipped) = (0, 0);
    for t in &h.tasks {
        let Some(start) = t.start_ms else {
            skipped += 1;
            continue;
        };
        let secs = |ms: i64| ms.div_euclid(1000);
        let job = SwfJob {
            job_number: t.id as i64,
            submit_time: secs(t.submit_ms),
            wait_time: (start - t.submit_ms).max(0) / 1000,
            run_time: ((t.end_ms - start).max(0) + 999).div_euclid(1000).max(1),
            allocated_procs: 1,
            requested_procs: 1,
            status: match t.state.as_str() {
                "completed" => 1,
                "cancelled" => 5,
                _ => 0,
            },
            user_id: t.user,
            group_id: t.org as i64,
            ..SwfJob::default()
        };
        w.write_job(&job)?;
        jobs += 1;
    }
    w.finish()?;
    Ok(Exported { jobs, skipped })
}
