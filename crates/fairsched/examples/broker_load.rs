//! Load generator for a running `fairsched serve` (used by
//! `bench/broker-throughput.sh`): submits N tasks from C client threads in
//! requests of B tasks each (`POST /v1/tasks`), then polls `GET /v1/status`
//! until they have all ended, and prints the throughput from the first
//! submission to the last completion, the latency of each submission as
//! the client sees it, and the broker's group-commit counters (`/metrics`).
//!
//! ```text
//! cargo run --release -p fairsched --example broker_load -- \
//!     --broker http://127.0.0.1:8080 --token USER_TOKEN --tasks 20000 --clients 8 --batch 100
//! ```
//!
//! The last line is machine-readable (`RESULT key=value …`).

use anyhow::{Context, bail};
use clap::Parser;
use fairsched_broker::api::{NewTask, StatusReply, SubmitReply, SubmitRequest};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Submit N tasks to a fairsched broker and time them to completion")]
struct Args {
    /// The broker's URL.
    #[arg(long, value_name = "URL")]
    broker: String,
    /// A user token (`fairsched admin user add`).
    #[arg(long, value_name = "T")]
    token: String,
    /// Tasks to submit.
    #[arg(long, default_value_t = 20_000)]
    tasks: u64,
    /// Client threads submitting at once (one keep-alive connection each).
    #[arg(long, default_value_t = 8)]
    clients: u64,
    /// Tasks per request.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// The tasks' command.
    #[arg(long, default_value = "true")]
    command: String,
    /// Give up when the tasks have not all ended after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// How often to poll `/v1/status`, in milliseconds (each poll is a read
    /// on the broker's single thread).
    #[arg(long, default_value_t = 50)]
    poll_ms: u64,
    /// A label for the `RESULT` line.
    #[arg(long, default_value = "run")]
    label: String,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

fn status(agent: &ureq::Agent, base: &str, auth: &str) -> anyhow::Result<StatusReply> {
    let mut resp = agent
        .get(format!("{base}/v1/status"))
        .header("Authorization", auth)
        .call()
        .context("GET /v1/status")?;
    if resp.status() != 200 {
        bail!(
            "GET /v1/status: {} {}",
            resp.status(),
            resp.body_mut().read_to_string().unwrap_or_default()
        );
    }
    Ok(serde_json::from_str(&resp.body_mut().read_to_string()?)?)
}

/// `fairsched_commits_total` and `fairsched_steps_total` from `/metrics`.
fn counters(agent: &ureq::Agent, base: &str) -> anyhow::Result<(u64, u64)> {
    let text = agent
        .get(format!("{base}/metrics"))
        .call()
        .context("GET /metrics")?
        .body_mut()
        .read_to_string()?;
    let value = |name: &str| -> anyhow::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .with_context(|| format!("/metrics has no {name}"))
    };
    Ok((value("fairsched_commits_total")?, value("fairsched_steps_total")?))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if a.tasks == 0 || a.clients == 0 || a.batch == 0 {
        bail!("--tasks, --clients and --batch must be at least 1");
    }
    let base = a.broker.trim_end_matches('/').to_string();
    let auth = format!("Bearer {}", a.token.trim());
    let main_agent = agent();
    let before = status(&main_agent, &base, &auth)?;
    let ended_before = before.completed + before.failed + before.cancelled + before.killed + before.rejected;
    let (commits0, steps0) = counters(&main_agent, &base)?;

    // Requests are claimed from a shared counter: each takes the next B
    // tasks (the last one fewer).
    let next = Arc::new(AtomicU64::new(0));
    let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
    let start = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..a.clients {
        let (next, latencies) = (next.clone(), latencies.clone());
        let (base, auth, command) = (base.clone(), auth.clone(), a.command.clone());
        let (total, batch) = (a.tasks, a.batch);
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let agent = agent();
            let mut mine = Vec::new();
            loop {
                let first = next.fetch_add(batch, Ordering::Relaxed);
                if first >= total {
                    break;
                }
                let n = batch.min(total - first);
                let req = SubmitRequest {
                    tasks: (0..n)
                        .map(|_| NewTask {
                            command: command.clone(),
                            ..NewTask::default()
                        })
                        .collect(),
                    ..SubmitRequest::default()
                };
                let body = serde_json::to_vec(&req)?;
                let t = Instant::now();
                let mut resp = agent
                    .post(format!("{base}/v1/tasks"))
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(&body[..])
                    .context("POST /v1/tasks")?;
                let code = resp.status();
                let text = resp.body_mut().read_to_string()?;
                mine.push(t.elapsed().as_secs_f64() * 1e3);
                if code != 201 {
                    bail!("POST /v1/tasks: {code} {text}");
                }
                let reply: SubmitReply = serde_json::from_str(&text)?;
                if reply.ids.len() as u64 != n {
                    bail!("POST /v1/tasks: {} ids for {n} tasks", reply.ids.len());
                }
            }
            latencies.lock().expect("not poisoned").extend(mine);
            Ok(())
        }));
    }
    for h in handles {
        h.join().expect("client thread")?;
    }
    let submitted = start.elapsed().as_secs_f64();

    // Wait for every task to end.
    let deadline = start + Duration::from_secs(a.timeout);
    let mut polls = 0u64;
    let last = loop {
        let s = status(&main_agent, &base, &auth)?;
        polls += 1;
        let ended = s.completed + s.failed + s.cancelled + s.killed + s.rejected - ended_before;
        if ended >= a.tasks {
            break s;
        }
        if Instant::now() > deadline {
            bail!(
                "timeout after {} s: {ended} of {} tasks ended ({} waiting, {} running, {} slots)",
                a.timeout,
                a.tasks,
                s.waiting,
                s.running,
                s.slots
            );
        }
        std::thread::sleep(Duration::from_millis(a.poll_ms));
    };
    let secs = start.elapsed().as_secs_f64();
    let (commits1, steps1) = counters(&main_agent, &base)?;
    let completed = last.completed - before.completed;
    let failed = last.failed - before.failed;

    let mut lat = std::mem::take(&mut *latencies.lock().expect("not poisoned"));
    lat.sort_by(f64::total_cmp);
    let (p50, p99, max) = (
        percentile(&lat, 50.0),
        percentile(&lat, 99.0),
        lat.last().copied().unwrap_or(f64::NAN),
    );
    let tps = a.tasks as f64 / secs;
    let (commits, steps) = (commits1 - commits0, steps1 - steps0);

    println!("label                {}", a.label);
    println!(
        "tasks                {} ({} completed, {failed} failed) in {} requests of {} from {} clients",
        a.tasks,
        completed,
        lat.len(),
        a.batch,
        a.clients
    );
    println!(
        "submission           {submitted:.2} s ({:.0} tasks/s, {:.0} requests/s accepted)",
        a.tasks as f64 / submitted,
        lat.len() as f64 / submitted
    );
    println!("to completion        {secs:.2} s: {tps:.0} tasks/s (first submission to last completion)");
    println!("submit latency       p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms");
    println!(
        "group commits        {commits} commits, {steps} steps ({:.1} steps per commit; {polls} status polls)",
        steps as f64 / commits.max(1) as f64
    );
    println!(
        "RESULT label={} tasks={} completed={completed} failed={failed} clients={} batch={} requests={} submit_s={submitted:.3} secs={secs:.3} tps={tps:.1} p50_ms={p50:.3} p99_ms={p99:.3} max_ms={max:.3} commits={commits} steps={steps}",
        a.label,
        a.tasks,
        a.clients,
        a.batch,
        lat.len()
    );
    if failed > 0 || completed < a.tasks {
        bail!("{failed} tasks failed, {completed} of {} completed", a.tasks);
    }
    Ok(())
}
