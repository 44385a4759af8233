//! The pages people look at, opened in a real browser: a `fairsched
//! report` page and the live broker's dashboard, in headless Chromium
//! driven over WebDriver (chromedriver). Each test asserts on the rendered
//! DOM and saves screenshots under `target/tmp/browser/`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them and sets `FAIRSCHED_BROWSER=required`, which turns a missing
//! browser into a failure). Elsewhere, without them, each test says so
//! and skips.

use crate::common::{Broker, Proc, bin, free_port, wait_for};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The browser, its driver, or why the test skips.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |var: &str, names: &[&str]| -> Option<PathBuf> {
        if let Ok(p) = std::env::var(var) {
            return Some(PathBuf::from(p));
        }
        let path = std::env::var_os("PATH")?;
        names.iter().find_map(|n| {
            std::env::split_paths(&path)
                .map(|d| d.join(n))
                .find(|p| p.is_file())
        })
    };
    let chromium = find(
        "FAIRSCHED_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    let driver = find("FAIRSCHED_CHROMEDRIVER", &["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        (c, d) => {
            let missing = [(c.is_none(), "chromium"), (d.is_none(), "chromedriver")]
                .iter()
                .filter(|(m, _)| *m)
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join(" and ");
            let msg = format!(
                "{missing} not found (Debian: apt-get install chromium chromium-driver; or set \
                 FAIRSCHED_CHROMIUM / FAIRSCHED_CHROMEDRIVER)"
            );
            if std::env::var("FAIRSCHED_BROWSER").as_deref() == Ok("required") {
                panic!("FAIRSCHED_BROWSER=required, but {msg}");
            }
            crate::common::skipping(module_path!(), msg);
            None
        }
    }
}

/// Where screenshots go: `target/tmp/browser/`.
fn shots() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// chromedriver on a free port and a WebDriver session of headless
/// Chromium with a fresh profile; both end when dropped (the session is
/// closed by [`Session::close`]; the driver's process group is killed).
struct Session {
    client: Client,
    _driver: Group,
    _profile: tempfile::TempDir,
}

/// chromedriver in a process group of its own, with the browsers it
/// started: the whole group is killed when dropped.
struct Group(i32, #[allow(dead_code)] Proc);

impl Drop for Group {
    fn drop(&mut self) {
        crate::common::kill_group(self.0);
    }
}

impl Session {
    async fn start(chromium: &Path, driver: &Path, log: &Path) -> Session {
        let port = free_port();
        let err = std::fs::File::create(log).unwrap();
        let mut cmd = Command::new(driver);
        cmd.arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let driver = Proc::spawn("chromedriver", &mut cmd, None);
        let driver = Group(driver.pid() as i32, driver);
        let url = format!("http://127.0.0.1:{port}");
        wait_for("chromedriver to listen", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=1366,768",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium.to_str().unwrap(), "args": args }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no WebDriver session from chromedriver at {url}: {e}; its log:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )
            });
        Session {
            client,
            _driver: driver,
            _profile: profile,
        }
    }

    /// `script` run in the page (its `return` value).
    async fn js(&self, script: &str) -> Value {
        self.client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// A screenshot of the whole page (the window made as tall as the page,
    /// at most `max_h` pixels) saved as `name`.
    async fn screenshot(&self, name: &str, max_h: u32) -> PathBuf {
        let h = self.js("return document.documentElement.scrollHeight").await;
        let h = (h.as_u64().unwrap_or(768) as u32).clamp(768, max_h);
        self.client.set_window_size(1366, h).await.unwrap();
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let path = shots().join(name);
        std::fs::write(&path, png).unwrap();
        self.client.set_window_size(1366, 768).await.unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }
}

/// Runs `fairsched ARGS` to its end; panics with its stderr on failure.
fn fairsched(args: &[&str]) {
    let o = bin().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "fairsched {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The value at a dotted path of a JSON document.
fn at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, k| match v {
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        Value::Object(m) => m.get(k),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_page_renders_its_plots_and_the_summary_values() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let out = |n: &str| root.path().join(n).to_str().unwrap().to_string();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bundled = repo.join("data/KTH-SP2-1996-2.1-cln.swf.gz");
    // A simulate run with organizations (ψ over time) and an experiment.
    fairsched(&[
        "simulate",
        "--trace",
        bundled.to_str().unwrap(),
        "--policy",
        "easy",
        "--orgs",
        "3",
        "--window",
        "600000,400000",
        "--no-progress",
        "--out",
        &out("sim"),
    ]);
    fairsched(&[
        "experiment",
        "pffp",
        "--test",
        "2",
        "--logs",
        bundled.to_str().unwrap(),
        "--out",
        &out("pffp"),
    ]);
    let html = root.path().join("report.html");
    fairsched(&[
        "report",
        &out("sim"),
        &out("pffp"),
        "--out",
        html.to_str().unwrap(),
    ]);

    let s = Session::start(&chromium, &driver, &shots().join("chromedriver-report.log")).await;
    s.client
        .goto(&format!("file://{}", html.display()))
        .await
        .unwrap();
    let title = s.client.title().await.unwrap();
    assert_eq!(title, "fairsched results");
    let sections = s
        .js("return [...document.querySelectorAll('section.run')].map(x => [x.dataset.kind, x.dataset.source])")
        .await;
    let kinds: Vec<&str> = sections
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["simulate", "pffp"]);
    // No problem box on fresh runs.
    let problems = s.client.find_all(Locator::Css(".problems")).await.unwrap();
    assert!(problems.is_empty(), "fresh runs report no problem");
    // Plots are there, rendered (a laid-out box), each with a caption.
    for (kind, min) in [("simulate", 2), ("pffp", 2)] {
        let n = s
            .js(&format!(
                "return [...document.querySelectorAll('section[data-kind=\"{kind}\"] figure.plot')]\
                 .filter(f => {{ const r = f.querySelector('svg').getBoundingClientRect(); \
                 return r.width > 300 && r.height > 150 && f.querySelector('figcaption').textContent.length > 10; }}).length"
            ))
            .await;
        assert!(n.as_u64().unwrap() >= min, "{kind}: {n} rendered plots");
    }
    // Every value cell of the simulate section is the summary's value.
    let cells = s
        .js(
            "return [...document.querySelectorAll('section[data-kind=\"simulate\"] td[data-key]')]\
             .map(c => [c.dataset.key, c.dataset.value, c.textContent])",
        )
        .await;
    let cells = cells.as_array().unwrap();
    assert!(cells.len() >= 8, "the summary table has its values: {cells:?}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("sim/summary.json")).unwrap())
            .unwrap();
    for c in cells {
        let (key, value) = (c[0].as_str().unwrap(), c[1].as_str().unwrap());
        let want = at(&summary, key).unwrap_or_else(|| panic!("summary.json has no `{key}`"));
        let got: Value = serde_json::from_str(value).unwrap();
        assert_eq!(&got, want, "cell `{key}` shows {}", c[2]);
    }
    // The experiment's printed tables are in the page, cell for cell.
    let printed: Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("pffp/tables.json")).unwrap())
            .unwrap();
    let first = &printed["tables"][0];
    let shown = s
        .js("return [...document.querySelectorAll('section[data-kind=\"pffp\"] table')[0].querySelectorAll('tbody tr')[0].cells].map(c => c.textContent)")
        .await;
    assert_eq!(&shown, &first["rows"][0], "the first printed row");
    s.screenshot("report.png", 16000).await;
    s.close().await;
}

/// The counts the dashboard shows.
async fn counts(s: &Session) -> (u64, u64, u64) {
    let v = s
        .js(
            "const n = id => Number(document.getElementById(id).textContent.replace(/[^0-9]/g, '') || NaN); \
             return [n('waiting-count'), n('running-count'), n('completed-count')]",
        )
        .await;
    let n = |i: usize| v[i].as_u64().unwrap_or(u64::MAX);
    (n(0), n(1), n(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_follows_a_live_run_without_reloading() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), "fair-share", "2s");
    broker.add_org("physics");
    broker.add_org("biology");
    let alice = broker.add_user("alice", "physics");
    let bob = broker.add_user("bob", "biology");
    let wtoken = broker.worker_token("physics");
    let wd = dir.path().join("w1");
    std::fs::create_dir_all(&wd).unwrap();
    let _worker = broker.worker("worker-1", &wtoken, 2, &wd, "process");
    broker.wait_slots(2);

    let s = Session::start(&chromium, &driver, &shots().join("chromedriver-dashboard.log")).await;
    s.client.goto(&format!("{}/", broker.url)).await.unwrap();
    // Connected, and nothing has run yet.
    for _ in 0..200 {
        if s.js("return document.body.dataset.state").await == "live" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(s.js("return document.body.dataset.state").await, "live");
    assert_eq!(counts(&s).await, (0, 0, 0));
    // The page is never reloaded: a marker set now must survive.
    s.js("window.__marker = 42; return null").await;

    // Eight 1.5 s tasks from two users on two slots: about 6 s of work.
    let api = broker.api();
    let cmd = || vec!["sleep 1.5".to_string(); 4];
    api.submit(&alice, &cmd());
    api.submit(&bob, &cmd());

    let mut seen_running = Vec::new();
    let mut shot_mid = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let last = loop {
        let c = counts(&s).await;
        if seen_running.last() != Some(&c.1) {
            seen_running.push(c.1);
        }
        if c.1 == 2 && !shot_mid {
            // The running tasks, per worker, and both users in the tables.
            let text = s
                .js("return document.getElementById('workers').textContent")
                .await;
            assert!(
                text.as_str().unwrap().contains("worker-1"),
                "workers table: {text}"
            );
            s.screenshot("dashboard-running.png", 2000).await;
            shot_mid = true;
        }
        if c == (0, 0, 8) {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the dashboard did not reach 8 completed tasks in 60 s: last {c:?}, running seen {seen_running:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(last, (0, 0, 8));
    assert!(shot_mid, "two tasks were seen running at once: {seen_running:?}");
    assert!(
        seen_running.windows(2).any(|w| w[1] < w[0]),
        "the running count went down as tasks completed: {seen_running:?}"
    );
    assert_eq!(
        s.js("return window.__marker").await,
        42,
        "the page was not reloaded"
    );
    let users = s.js("return document.getElementById('users').textContent").await;
    let users = users.as_str().unwrap();
    assert!(
        users.contains("alice") && users.contains("bob"),
        "users table: {users}"
    );
    let events = s
        .js("return document.querySelectorAll('#events tr, #events li').length")
        .await;
    assert!(events.as_u64().unwrap() >= 8, "recent events listed: {events}");
    s.screenshot("dashboard-done.png", 2000).await;
    s.close().await;
}
