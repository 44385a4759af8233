//! Load generator for a running `fairsched serve` (used by
//! `bench/broker-anonymous.sh`): how much anonymous readers slow the
//! broker's steps. It first queues `--preload` tasks (no worker runs them:
//! they wait, as in a busy broker), then, in each phase, submits `--submits`
//! one-task requests one after the other and records each one's latency as
//! the client sees it (a submission is one core step and one group commit):
//!
//! - `idle`: nobody else talks to the broker;
//! - `polled`: meanwhile `--pollers` threads each GET `--path` (default
//!   `/v1/dashboard`, no token) in a loop, as fast as the replies come.
//!
//! ```text
//! cargo run --release -p fairsched --example broker_anonymous -- \
//!     --broker http://127.0.0.1:8080 --token USER_TOKEN --preload 300000 --submits 500 --pollers 8
//! ```
//!
//! One `RESULT key=value …` line per phase.

use anyhow::{Context, bail};
use clap::Parser;
use fairsched_broker::api::{NewTask, SubmitRequest};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Submission latency of a fairsched broker, alone and under anonymous readers")]
struct Args {
    /// The broker's URL.
    #[arg(long, value_name = "URL")]
    broker: String,
    /// A user token (`fairsched admin user add`).
    #[arg(long, value_name = "T")]
    token: String,
    /// Tasks queued first (in requests of 50,000), left waiting.
    #[arg(long, default_value_t = 300_000)]
    preload: u64,
    /// One-task submissions timed in each phase.
    #[arg(long, default_value_t = 500)]
    submits: usize,
    /// Anonymous readers in the `polled` phase.
    #[arg(long, default_value_t = 8)]
    pollers: usize,
    /// What they read.
    #[arg(long, default_value = "/v1/dashboard")]
    path: String,
    /// Phases, in order (`idle`, `polled`).
    #[arg(long, value_delimiter = ',', default_value = "idle,polled")]
    phases: Vec<String>,
    /// A label for the `RESULT` lines.
    #[arg(long, default_value = "run")]
    label: String,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(300)))
        .build()
        .into()
}

fn submit(agent: &ureq::Agent, base: &str, auth: &str, n: u64) -> anyhow::Result<()> {
    let req = SubmitRequest {
        tasks: (0..n)
            .map(|_| NewTask {
                command: "true".into(),
                ..NewTask::default()
            })
            .collect(),
        ..SubmitRequest::default()
    };
    let body = serde_json::to_vec(&req)?;
    let mut resp = agent
        .post(format!("{base}/v1/tasks"))
        .header("Authorization", auth)
        .header("Content-Type", "application/json")
        .send(&body[..])
        .context("POST /v1/tasks")?;
    let code = resp.status();
    let text = resp.body_mut().read_to_string()?;
    if code != 201 {
        bail!("POST /v1/tasks: {code} {text}");
    }
    Ok(())
}

/// A sample of `/metrics` (`None` if this broker has no such line).
fn metric(agent: &ureq::Agent, base: &str, name: &str) -> Option<u64> {
    let text = agent
        .get(format!("{base}/metrics"))
        .call()
        .ok()?
        .body_mut()
        .read_to_string()
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let base = a.broker.trim_end_matches('/').to_string();
    let auth = format!("Bearer {}", a.token.trim());
    let main_agent = agent();

    let t = Instant::now();
    let mut left = a.preload;
    while left > 0 {
        let n = left.min(50_000);
        submit(&main_agent, &base, &auth, n)?;
        left -= n;
    }
    if a.preload > 0 {
        eprintln!(
            "preloaded {} waiting tasks in {:.1} s",
            a.preload,
            t.elapsed().as_secs_f64()
        );
    }

    for phase in &a.phases {
        let pollers = match phase.as_str() {
            "idle" => 0,
            "polled" => a.pollers,
            other => bail!("--phases: unknown phase `{other}` (idle, polled)"),
        };
        let reads0 = metric(&main_agent, &base, "fairsched_http_broker_reads_total");
        let builds0 = metric(
            &main_agent,
            &base,
            "fairsched_http_frames_built_total{frame=\"dashboard\"}",
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (ok, limited, other, bytes) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let threads: Vec<_> = (0..pollers)
            .map(|_| {
                let (stop, ok, limited, other, bytes) = (
                    stop.clone(),
                    ok.clone(),
                    limited.clone(),
                    other.clone(),
                    bytes.clone(),
                );
                let url = format!("{base}{}", a.path);
                std::thread::spawn(move || {
                    let agent = agent();
                    while !stop.load(Ordering::Relaxed) {
                        match agent.get(&url).call() {
                            Ok(mut r) => {
                                let n = r
                                    .body_mut()
                                    .with_config()
                                    .limit(1 << 30)
                                    .read_to_vec()
                                    .map_or(0, |b| b.len());
                                bytes.fetch_add(n as u64, Ordering::Relaxed);
                                match r.status().as_u16() {
                                    200 => &ok,
                                    429 => &limited,
                                    _ => &other,
                                }
                                .fetch_add(1, Ordering::Relaxed);
                            }
                            Err(_) => {
                                other.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        // The readers get going first.
        if pollers > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        let (ok0, limited0) = (ok.load(Ordering::Relaxed), limited.load(Ordering::Relaxed));
        let started = Instant::now();
        let mut lat = Vec::with_capacity(a.submits);
        for _ in 0..a.submits {
            let t = Instant::now();
            submit(&main_agent, &base, &auth, 1)?;
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let secs = started.elapsed().as_secs_f64();
        let (ok1, limited1) = (ok.load(Ordering::Relaxed), limited.load(Ordering::Relaxed));
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        let reads1 = metric(&main_agent, &base, "fairsched_http_broker_reads_total");
        let builds1 = metric(
            &main_agent,
            &base,
            "fairsched_http_frames_built_total{frame=\"dashboard\"}",
        );
        lat.sort_by(f64::total_cmp);
        let (p50, p99, max) = (
            percentile(&lat, 50.0),
            percentile(&lat, 99.0),
            lat.last().copied().unwrap_or(f64::NAN),
        );
        let reads = reads0.zip(reads1).map(|(a, b)| b - a);
        let builds = builds0.zip(builds1).map(|(a, b)| b - a);
        let (reads_ok, reads_429) = (ok1 - ok0, limited1 - limited0);
        println!(
            "{phase:<7} {} submissions in {secs:.2} s: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms; \
             {pollers} readers of {}: {:.0} replies/s ({:.0} 200, {:.0} 429 a second), {} others, {:.1} MB; \
             broker thread reads {}, dashboard builds {}",
            a.submits,
            a.path,
            (reads_ok + reads_429) as f64 / secs,
            reads_ok as f64 / secs,
            reads_429 as f64 / secs,
            other.load(Ordering::Relaxed),
            bytes.load(Ordering::Relaxed) as f64 / 1e6,
            show(reads),
            show(builds),
        );
        println!(
            "RESULT label={} phase={phase} preload={} submits={} pollers={pollers} p50_ms={p50:.3} p99_ms={p99:.3} max_ms={max:.3} \
             polls_ok_per_s={:.1} polls_429_per_s={:.1} broker_reads={} dashboard_builds={}",
            a.label,
            a.preload,
            a.submits,
            reads_ok as f64 / secs,
            reads_429 as f64 / secs,
            show(reads),
            show(builds),
        );
    }
    Ok(())
}
