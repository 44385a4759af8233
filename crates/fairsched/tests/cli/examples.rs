//! Every command example of README.md and of every `--help` text runs as
//! written and does what it says.
//!
//! The examples are read from the sources themselves: README.md's code
//! blocks (lines starting `fairsched ` or `cargo run --release -- `, after a
//! leading `$ `, `\` continuations joined, a trailing `# comment` cut) and
//! the lines starting `fairsched ` of `fairsched … --help` for every
//! command and subcommand (found from `fairsched --help`'s command list).
//! Each one is
//! - a synopsis (placeholders: `[…]`, `|`, `…`, `...`, ALL-CAPS words), not
//!   runnable: it must be listed in [`SYNOPSES`], so a new example either
//!   runs or is declared a synopsis on purpose;
//! - a live-service example (it needs a running broker): it must be listed
//!   in [`LIVE`] with the test that runs it. README's own walk-through runs
//!   here, in `the_readme_live_service_runs_as_written`;
//! - otherwise it runs here, from the repository root (so `../shared`,
//!   `examples/` and `data/` resolve as for a user of a clone), with only
//!   these changes: the `fairsched` binary under test for `fairsched` or
//!   `cargo run --release --`, and `--out` into a temporary folder (added
//!   when absent, as the default `out` would write into the clone). It must
//!   exit 0 without a warning, write its files (none empty: every file the
//!   README's comment names, summary.json, one folder per policy, an
//!   experiment's CSV and SVG), and simulate something (every `jobs` count
//!   in summary.json above 0; several policies give different figures; a
//!   `--control` changes priorities). The few too slow for the test build
//!   run with one flag changed, listed in [`REDUCED`] with why, and
//!   printed on every run.
//!
//! Examples that read `../shared/data` skip, saying so, when it is absent.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Example lines that are synopses (placeholders, not runnable), exactly as
/// extracted (README lines cut at their `# comment`).
const SYNOPSES: &[&str] = &[
    // README.md, "Commands" (each synopsis' first line; its continuation
    // lines do not start with `fairsched`).
    "fairsched simulate --trace LOG.swf[.gz] --policy SPEC [--policy SPEC ...]",
    "fairsched experiment shapley [--table 1|2 | --figure 1] [--instances N] [--orgs K]",
    "fairsched experiment pffp --test 1|2|3|4|5 [--grid] [--instances N] [--logs FILE,...]",
    "fairsched experiment diet-ethic --scenario NAME | --scenario-file FILE.toml",
    "fairsched experiment workflow-fairness --exp 1|2|3 | --workflows FILE|NAME,...",
    "fairsched experiment PAPER --study [--quick] [--reading NAME ...]",
    "fairsched trace info LOG.swf[.gz] [--json] [--lenient]",
    "fairsched trace stats LOG.swf[.gz] [--out DIR] [--json]",
    "fairsched trace tau WORKFLOW... [--grid FILE.toml] [--repetitions N] [--out DIR] [--json]",
    "fairsched report DIR... [--out report.html] [--gantt-window START,LEN] [--color-by user|org]",
    "fairsched policies [--json]",
    // README.md, "Operating it": ids no walk-through can foresee; run in
    // live_operator::held_tasks_and_running_quotas_with_a_real_worker and
    // the broker's a_held_worker_takes_no_new_task_until_released.
    "fairsched admin task hold TASK",
    "fairsched admin worker hold WORKER",
    "fairsched experiment collect DIR",
    "fairsched pilot slurm --count N --slots K [--time HH:MM:SS] [--partition P] [--account A]",
    "fairsched pilot status | cancel [JOBID...]",
    "fairsched slurm steer [--policy SPEC] [--control SPEC] [--platform FILE.toml] [--partition P]",
    "fairsched slurm explain JOBID [--db steer.db]",
    "fairsched slurm history --since DATE [--until DATE] --swf FILE [--platform FILE.toml] [--procs ACCOUNT=N]",
    "fairsched slurm replay LOG --window START,LEN --speedup K [--platform FILE.toml] [--users ORG=USER,...]",
    "fairsched slurm score LOG --platform FILE.toml [--phi]",
    // README.md, "The live service".
    "fairsched status [--tasks] [--json]    fairsched cancel ID    fairsched explain ID [--json]",
    "fairsched submit --workflow montage.json.gz --command mProject='mProject {name}' --command …",
];

/// The live-service examples (they need a running broker, or Slurm) and
/// the test that runs each.
const LIVE: &[(&str, &str)] = &[
    (
        "fairsched experiment shapley --table 2 --out results/t2 --slurm-array --partition batch",
        SLURM_SWEEP,
    ),
    ("fairsched experiment collect results/t2", SLURM_SWEEP),
    (
        "fairsched pilot slurm --count 4 --slots 16 --time 02:00:00 --partition batch --account phys42",
        PILOTS,
    ),
    (
        "fairsched pilot slurm --count 4 --slots 8 --time 01:00:00",
        PILOTS,
    ),
    (
        "fairsched pilot slurm --count 2 --slots 16 --partition short --time 30:00 --drain-before 120",
        PILOTS_DRAIN,
    ),
    ("fairsched pilot status", PILOTS_CANCEL),
    ("fairsched pilot cancel", PILOTS_CANCEL),
    // README.md, "Steering an existing Slurm", and `slurm … --help`.
    (
        "fairsched slurm steer --dry-run --platform site.toml",
        STEER_STICK,
    ),
    (
        "fairsched slurm steer --policy fair-share --platform site.toml --every 30s --cycles 3",
        STEER_STICK,
    ),
    (
        "fairsched slurm explain \"$(squeue -h -t PD -o %i | head -n 1)\"",
        STEER_STICK,
    ),
    ("fairsched slurm steer --reset", STEER_STICK),
    ("fairsched slurm steer --dry-run", STEER_STICK),
    (
        "fairsched slurm steer --policy fair-share --platform site.toml --every 30s",
        STEER_FLOOD,
    ),
    (
        "fairsched slurm steer --policy direct-contr --platform site.toml --metrics steer.prom",
        STEER_FLOOD,
    ),
    (
        "fairsched slurm steer --policy workflow-fcfs --control 'workflow-fairness[tau=0.05]' --db wf.db",
        STEER_WORKFLOWS,
    ),
    (
        "fairsched slurm history --since \"$(date -d '1 day ago' +%F)\" --swf site.swf --platform site-history.toml",
        STEER_FLOOD,
    ),
    (
        "fairsched slurm history --since 2026-11-01 --swf site.swf --platform site-history.toml",
        STEER_FLOOD,
    ),
    (
        "fairsched slurm score site.swf --platform site-history.toml --phi",
        STEER_FLOOD,
    ),
    (
        "fairsched slurm replay data/KTH-SP2-1996-2.1-cln.swf.gz --window 599850,7200 --speedup 60 --dry-run",
        STEER_REPLAY,
    ),
    (
        "fairsched slurm replay data/KTH-SP2-1996-2.1-cln.swf.gz --window 599850,900 --speedup 60 --dry-run",
        STEER_REPLAY,
    ),
    (
        "fairsched submit --count 2000 -- '$HOME/bin/simulate {i}'",
        WALKTHROUGH,
    ),
    ("fairsched serve --quickstart", WALKTHROUGH),
    ("fairsched worker --slots 4", WALKTHROUGH),
    (
        "fairsched submit --count 10 -- 'echo hello {i}; sleep 1'",
        WALKTHROUGH,
    ),
    (
        "fairsched admin init --db fairsched.db --policy fair-share > admin.token",
        WALKTHROUGH,
    ),
    (
        "fairsched serve --db fairsched.db --listen 0.0.0.0:8443 --lease 30s --tls-cert broker.pem --tls-key broker.key",
        WALKTHROUGH,
    ),
    ("fairsched admin org add physics", WALKTHROUGH),
    (
        "fairsched admin user add alice --org physics > alice.token",
        WALKTHROUGH,
    ),
    (
        "fairsched admin worker-token --org physics > physics-worker.token",
        WALKTHROUGH,
    ),
    ("fairsched worker --slots 16 --workdir /scratch/fs", WALKTHROUGH),
    (
        "fairsched submit --count 100 --name render-{i} --stage-in 'cp ~/in/{i} .' -- 'render {i}'",
        WALKTHROUGH,
    ),
    ("fairsched submit --workflow dag.toml", WALKTHROUGH),
    (
        "fairsched optional --min 3 --max 100 --deadline 10m -- 'render --seed {i}'",
        // Its 10-minute deadline and the user's own `render` do not fit a
        // test: live_optional runs the same client on a diet-ethic broker.
        "live_optional::two_users_both_end_happy_with_fair_optional_shares",
    ),
    (
        "fairsched export --db fairsched.db --swf history.swf --platform orgs.toml",
        WALKTHROUGH,
    ),
    (
        "fairsched admin quota set --user alice --max-queued 1000",
        WALKTHROUGH,
    ),
    (
        "fairsched admin quota set --user alice --max-running 8",
        WALKTHROUGH,
    ),
    ("fairsched admin user rotate alice > alice.token", WALKTHROUGH),
    (
        "fairsched admin token revoke --worker-tokens-of physics",
        WALKTHROUGH,
    ),
    ("fairsched output 1 --stderr", WALKTHROUGH),
    (
        "fairsched simulate --broker-log fairsched.db --policy first-fit --policy fcfs",
        WALKTHROUGH,
    ),
    ("fairsched admin backup --db fairsched.db backup.db", WALKTHROUGH),
    ("fairsched admin compact --db fairsched.db", WALKTHROUGH),
    ("fairsched admin check --db fairsched.db", WALKTHROUGH),
];

const WALKTHROUGH: &str = "examples::the_readme_live_service_runs_as_written";
/// Pilots on the real Slurm (crates/fairsched/tests/cli/slurm_pilots.rs).
const PILOTS: &str = "slurm_pilots::five_hundred_tasks_of_two_users_run_once_on_pilots_with_fair_share";
const PILOTS_DRAIN: &str = "slurm_pilots::a_pilot_drains_before_its_wall_time_and_exits_cleanly";
const PILOTS_CANCEL: &str = "slurm_pilots::a_pilot_cancelled_with_scancel_mid_task_loses_nothing";
/// The steering controller and its companions on the real Slurm
/// (crates/fairsched/tests/cli/slurm_steer.rs).
const STEER_STICK: &str =
    "slurm_steer::factors_stick_survive_a_kill_and_a_dry_run_and_reset_change_what_they_say";
const STEER_FLOOD: &str = "slurm_steer::under_steering_the_trickle_passes_the_flood";
const STEER_WORKFLOWS: &str = "slurm_steer::dependency_chains_are_steered_as_workflows";
const STEER_REPLAY: &str = "slurm_steer::a_replay_dry_run_prints_what_the_window_holds";
/// A sweep submitted to the real Slurm and collected.
const SLURM_SWEEP: &str = "slurm_array::a_sweep_on_the_real_slurm_writes_the_local_runs_files";

/// Runnable examples run with a flag set otherwise than written (each
/// run prints this list): the example, the flag and its value here, why.
/// The test build is about 2.5× slower than `--release`; CI runs the whole
/// suite on 2 cores.
const REDUCED: &[(&str, &str, &str, &str)] = &[
    (
        "fairsched experiment shapley --table 1",
        "--instances",
        "10",
        "100 windows of each of 9 logs take 80 s in the test build (30 s with --release); 10 run the same code",
    ),
    (
        "fairsched experiment shapley --figure 1 --instances 20",
        "--instances",
        "5",
        "20 windows for each of 2…10 organizations take 35 s in the test build; 5 run the same code",
    ),
];

/// Subcommands that talk to a broker.
const LIVE_COMMANDS: &[&str] = &[
    "serve", "worker", "submit", "status", "cancel", "explain", "output", "optional", "admin", "export",
    "pilot", "slurm",
];

/// ALL-CAPS words that are names, not placeholders: the shared logs'
/// names (`--traces`).
const NAMES: &[&str] = &[
    "LPC-EGEE",
    "RICC",
    "CTC-SP2",
    "HPC2N",
    "KTH-SP2",
    "LANL-CM5",
    "SDSC-BLUE",
    "SDSC-DS",
    "SDSC-SP2",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

fn shared_present() -> bool {
    repo().join("../shared/data").is_dir()
}

/// Straight to the stderr handle: libtest captures `eprintln!` of passing
/// tests, and these lines must show in every run.
fn say(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// One command example and where it was found.
#[derive(Clone, Debug)]
struct Example {
    /// From `fairsched` (or `cargo run --release --`) to the end of the
    /// command, its comment cut.
    text: String,
    /// What comes before it on its line (`VAR=… `, `umask 077; `).
    prefix: String,
    /// Its trailing comment and the comment lines right above it.
    comment: String,
    /// `README.md:LINE` or `fairsched … --help`.
    sources: Vec<String>,
}

/// For each byte of `s`: is it bare, i.e. outside quotes, `$(…)` and
/// backquotes?
fn bare(s: &str) -> Vec<bool> {
    let b = s.as_bytes();
    let mut out = vec![true; b.len()];
    let (mut single, mut double, mut tick, mut depth) = (false, false, false, 0usize);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let was_inside = single || double || tick || depth > 0;
        if single {
            single = c != b'\'';
        } else if double {
            if c == b'\\' && i + 1 < b.len() {
                out[i] = false;
                i += 1;
            } else {
                double = c != b'"';
            }
        } else if tick {
            tick = c != b'`';
        } else if depth > 0 {
            match c {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
        } else {
            match c {
                b'\'' => single = true,
                b'"' => double = true,
                b'`' => tick = true,
                b'$' if b.get(i + 1) == Some(&b'(') => {
                    out[i] = false;
                    i += 1;
                    depth = 1;
                }
                _ => {}
            }
        }
        out[i] = !(was_inside || single || double || tick || depth > 0);
        i += 1;
    }
    out
}

/// The bare characters of `s` (quoted parts left out).
fn bare_text(s: &str) -> String {
    let mask = bare(s);
    s.char_indices()
        .filter(|(i, _)| mask[*i])
        .map(|(_, c)| c)
        .collect()
}

/// Where a `fairsched` command starts on `line` (at the start, or after a
/// bare `;`/`&&`, past `NAME=value` assignments): (prefix, command,
/// comment).
fn split_command(line: &str) -> Option<(String, String, String)> {
    let mask = bare(line);
    let b = line.as_bytes();
    let comment_at = (0..b.len())
        .find(|&i| mask[i] && b[i] == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()))
        .unwrap_or(b.len());
    let comment = line[comment_at..].trim_start_matches('#').trim().to_string();
    let mut starts = vec![0];
    for i in 0..comment_at {
        if mask[i] && (b[i] == b';' || (b[i] == b'&' && b.get(i + 1) == Some(&b'&'))) {
            starts.push(if b[i] == b';' { i + 1 } else { i + 2 });
        }
    }
    for s in starts {
        let mut at = s;
        loop {
            while at < comment_at && b[at].is_ascii_whitespace() {
                at += 1;
            }
            let rest = &line[at..comment_at];
            if rest.starts_with("fairsched ") || rest.starts_with("cargo run --release -- ") {
                return Some((line[..at].to_string(), rest.trim_end().to_string(), comment));
            }
            // A `NAME=value` assignment: skip it (its value ends at the
            // first bare blank).
            let name_len = rest
                .bytes()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
                .count();
            if name_len == 0 || rest.as_bytes().get(name_len) != Some(&b'=') {
                break;
            }
            let mut end = at + name_len + 1;
            while end < comment_at && !(mask[end] && b[end].is_ascii_whitespace()) {
                end += 1;
            }
            at = end;
        }
    }
    None
}

/// README.md's examples.
fn readme_examples() -> Vec<Example> {
    let text = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_block = false;
    let mut above = String::new();
    let mut i = 0;
    while i < lines.len() {
        let number = i + 1;
        let mut line = lines[i].trim_end().to_string();
        i += 1;
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            above.clear();
            continue;
        }
        if !in_block {
            continue;
        }
        while line.ends_with('\\') && i < lines.len() {
            line.pop();
            line.truncate(line.trim_end().len());
            line.push(' ');
            line.push_str(lines[i].trim());
            i += 1;
        }
        let line = line.trim();
        let line = line.strip_prefix("$ ").unwrap_or(line);
        if line.starts_with('#') {
            above.push_str(line);
            above.push('\n');
            continue;
        }
        if let Some((prefix, text, comment)) = split_command(line) {
            out.push(Example {
                text,
                prefix,
                comment: format!("{above}{comment}"),
                sources: vec![format!("README.md:{number}")],
            });
        }
        above.clear();
    }
    out
}

/// `fairsched PATH… --help` (exit 0).
fn help_of(path: &[String]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(path)
        .arg("--help")
        .output()
        .expect("the binary runs");
    assert!(
        o.status.success(),
        "fairsched {} --help failed:\n{}",
        path.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8 help")
}

/// The subcommands a help text lists (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
        } else if inside && line.trim().is_empty() {
            break;
        } else if inside && line.starts_with("  ") && !line.starts_with("   ") {
            let name = line.split_whitespace().next().unwrap_or_default();
            if name != "help" {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Every command path (`[]`, `["simulate"]`, `["trace", "info"]`, …) and
/// its `--help`.
fn help_tree() -> &'static BTreeMap<Vec<String>, String> {
    static TREE: OnceLock<BTreeMap<Vec<String>, String>> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut tree = BTreeMap::new();
        let mut todo = vec![Vec::<String>::new()];
        while let Some(path) = todo.pop() {
            let help = help_of(&path);
            for sub in subcommands(&help) {
                let mut p = path.clone();
                p.push(sub);
                todo.push(p);
            }
            tree.insert(path, help);
        }
        assert!(tree.len() > 20, "too few commands found: {:?}", tree.keys());
        tree
    })
}

/// The examples of every `--help`.
fn help_examples() -> Vec<Example> {
    let mut out = Vec::new();
    for (path, help) in help_tree() {
        for line in help.lines() {
            let line = line.trim();
            if !line.starts_with("fairsched ") {
                continue;
            }
            let (prefix, text, comment) =
                split_command(line).expect("a line starting `fairsched ` is a command");
            out.push(Example {
                text,
                prefix,
                comment,
                sources: vec![format!("fairsched {} --help", path.join(" "))],
            });
        }
    }
    out
}

/// Every example, once per text (README's first), in order of appearance.
fn examples() -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for ex in readme_examples().into_iter().chain(help_examples()) {
        match out.iter_mut().find(|e| e.text == ex.text) {
            Some(e) => e.sources.extend(ex.sources),
            None => out.push(ex),
        }
    }
    out
}

/// Why `text` is a synopsis (its first placeholder), if it is one.
fn placeholder(text: &str) -> Option<String> {
    let bare = bare_text(text);
    for mark in ["[", "]", "|", "…", "..."] {
        if bare.contains(mark) {
            return Some(format!("`{mark}`"));
        }
    }
    for word in bare.split_whitespace() {
        let head = word.split(['.', ':', '=', ',']).next().unwrap_or_default();
        if !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && head.chars().any(|c| c.is_ascii_uppercase())
            && !NAMES.contains(&head)
        {
            return Some(format!("the ALL-CAPS word `{word}`"));
        }
    }
    None
}

/// The words of a command, its program (`fairsched` or `cargo run
/// --release --`) left out.
fn words(text: &str) -> Vec<String> {
    let mut w = shlex::split(text).unwrap_or_else(|| panic!("cannot split `{text}` into words"));
    let program = if w.first().map(String::as_str) == Some("cargo") {
        4
    } else {
        1
    };
    w.drain(..program);
    w
}

#[derive(Debug, PartialEq)]
enum Kind {
    Synopsis(String),
    Live,
    Run,
}

fn kind(ex: &Example) -> Kind {
    if let Some(why) = placeholder(&ex.text) {
        return Kind::Synopsis(why);
    }
    let w = words(&ex.text);
    if w.first().is_some_and(|c| LIVE_COMMANDS.contains(&c.as_str()))
        || w.iter().any(|a| a == "--broker-log" || a == "--slurm-array")
        || w.starts_with(&["experiment".to_string(), "collect".to_string()])
    {
        Kind::Live
    } else {
        Kind::Run
    }
}

/// The longest command path `words` start with, and its help.
fn command_of(words: &[String]) -> (Vec<String>, &'static str) {
    let tree = help_tree();
    (0..=words.len())
        .rev()
        .find_map(|n| tree.get_key_value(&words[..n]))
        .map(|(k, v)| (k.clone(), v.as_str()))
        .expect("the empty path is in the tree")
}

#[test]
fn every_example_is_classified() {
    let all = examples();
    let readme = readme_examples();
    assert!(readme.len() >= 30, "too few README examples: {readme:#?}");
    assert!(
        help_examples().len() >= 10,
        "too few --help examples: {:#?}",
        help_examples()
    );
    let mut problems = Vec::new();
    let (mut synopses, mut live, mut run) = (Vec::new(), Vec::new(), Vec::new());
    let mut listing = String::new();
    for ex in &all {
        let k = kind(ex);
        listing.push_str(&format!(
            "  {:8} {}  ({})\n",
            match &k {
                Kind::Synopsis(_) => "synopsis",
                Kind::Live => "live",
                Kind::Run => "run",
            },
            ex.text,
            ex.sources.join(", ")
        ));
        match k {
            Kind::Synopsis(why) => {
                if !SYNOPSES.contains(&ex.text.as_str()) {
                    problems.push(format!(
                        "{} has a placeholder ({why}) but is not in SYNOPSES: make it runnable, or list it\n    {}",
                        ex.sources.join(", "),
                        ex.text
                    ));
                }
                synopses.push(ex.text.as_str());
            }
            Kind::Live => {
                if !LIVE.iter().any(|(t, _)| *t == ex.text) {
                    problems.push(format!(
                        "{} needs a broker but is not in LIVE (with the test that runs it)\n    {}",
                        ex.sources.join(", "),
                        ex.text
                    ));
                }
                live.push(ex.text.as_str());
            }
            Kind::Run => run.push(ex.text.as_str()),
        }
    }
    for s in SYNOPSES {
        if !synopses.contains(s) {
            problems.push(format!(
                "SYNOPSES lists `{s}`, which no README or --help synopsis is"
            ));
        }
    }
    for (t, test) in LIVE {
        if !live.contains(t) {
            problems.push(format!("LIVE lists `{t}`, which no README live example is"));
        }
        let (file, name) = test.split_once("::").expect("FILE::TEST");
        let source =
            fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/cli/{file}.rs")))
                .unwrap_or_default();
        if !source.contains(&format!("fn {name}()")) {
            problems.push(format!("LIVE: no test `{test}` (for `{t}`)"));
        }
    }
    for (t, ..) in REDUCED {
        if !run.contains(t) {
            problems.push(format!("REDUCED lists `{t}`, which no runnable example is"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The classification itself.
    assert_eq!(
        placeholder("fairsched experiment shapley --traces LPC-EGEE,RICC --instances 10"),
        None
    );
    assert_eq!(
        placeholder("fairsched simulate --control 'age-boost[after=10m,by=1]'"),
        None
    );
    assert!(placeholder("fairsched cancel ID").is_some());
    assert!(placeholder("fairsched trace info LOG.swf").is_some());
    assert_eq!(
        split_command("FAIRSCHED_TOKEN=$(cat w.token) fairsched worker --slots 16   # x"),
        Some((
            "FAIRSCHED_TOKEN=$(cat w.token) ".to_string(),
            "fairsched worker --slots 16".to_string(),
            "x".to_string()
        ))
    );
    say(&format!(
        "{listing}examples: {} distinct ({} in README.md, {} in --help texts): {} synopses, {} live, {} run here\n",
        all.len(),
        readme.len(),
        help_examples().len(),
        synopses.len(),
        live.len(),
        run.len()
    ));
}

/// A child process to its end, its output in files, killed after `limit`.
fn run_to_end(cmd: &mut Command, dir: &Path, limit: Duration) -> (Option<i32>, String, String) {
    let out_file = dir.join("stdout.txt");
    let err_file = dir.join("stderr.txt");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_file).unwrap())
        .stderr(fs::File::create(&err_file).unwrap())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status,
        fs::read_to_string(out_file).unwrap_or_default(),
        fs::read_to_string(err_file).unwrap_or_default(),
    )
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every number under a key `jobs` in `v`, with its JSON path.
fn job_counts(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if k == "jobs"
                    && let Some(n) = x.as_f64()
                {
                    out.push((p.clone(), n));
                }
                job_counts(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                job_counts(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// What a finished run must show: the problems found.
fn check_run(
    ex: &Example,
    words: &[String],
    out_dir: Option<&Path>,
    stdout: &str,
    stderr: &str,
) -> Vec<String> {
    let mut bad = Vec::new();
    for (what, text) in [("stdout", stdout), ("stderr", stderr)] {
        if let Some(l) = text.lines().find(|l| l.to_lowercase().contains("warning")) {
            bad.push(format!("a warning on {what}: {l}"));
        }
    }
    if stdout.trim().is_empty() {
        bad.push("printed nothing".into());
    }
    let Some(dir) = out_dir else { return bad };
    let all = files(dir);
    let has = |name: &str| all.iter().any(|p| p.file_name().is_some_and(|n| n == name));
    if !all
        .iter()
        .any(|p| p.file_name().is_some_and(|n| n != ".fairsched-out"))
    {
        bad.push(format!("wrote nothing into {}", dir.display()));
    }
    for p in &all {
        if fs::metadata(p).map(|m| m.len()).unwrap_or(0) == 0 {
            bad.push(format!("{} is empty", p.display()));
        }
        if p.file_name().is_some_and(|n| n == "summary.json") {
            let v: Value = match fs::read_to_string(p)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            {
                Ok(v) => v,
                Err(e) => {
                    bad.push(format!("{}: {e}", p.display()));
                    continue;
                }
            };
            let mut counts = Vec::new();
            job_counts(&v, "", &mut counts);
            for (at, n) in counts {
                if n <= 0.0 {
                    bad.push(format!("{}: {at} = {n}: nothing simulated", p.display()));
                }
            }
        }
    }
    // The files the README's comment on it names (`out/…`).
    for word in ex
        .comment
        .split(|c: char| c.is_whitespace() || c == ',' || c == '`')
    {
        if let Some(rel) = word.strip_prefix("out/") {
            let p = dir.join(rel.trim_end_matches(['.', ')', ';']));
            if !p.is_file() {
                bad.push(format!("its comment names {word}, not written"));
            }
        }
    }
    let (command, _) = command_of(words);
    match command.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["simulate"] => {
            let policies = words.iter().filter(|w| *w == "--policy").count();
            let per_run = ["summary.json", "tasks.csv", "orgs.csv", "users.csv"];
            if policies == 1 {
                for f in per_run {
                    if !dir.join(f).is_file() {
                        bad.push(format!("one policy, no {f}"));
                    }
                }
                if let Ok(v) = fs::read_to_string(dir.join("summary.json"))
                    .map(|t| serde_json::from_str::<Value>(&t).unwrap_or_default())
                    && v["jobs"].as_u64().unwrap_or(0) == 0
                {
                    bad.push("summary.json: no `jobs`, or 0".into());
                }
            } else {
                // Several policies (none: the demo's comparison): one row
                // of comparison.csv and one folder per policy.
                let rows = fs::read_to_string(dir.join("comparison.csv"))
                    .map(|t| t.lines().count().saturating_sub(1))
                    .unwrap_or(0);
                let folders: Vec<PathBuf> = fs::read_dir(dir)
                    .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
                    .unwrap_or_default();
                if rows == 0 || rows != folders.len() || (policies > 0 && rows != policies) {
                    bad.push(format!(
                        "{policies} --policy: comparison.csv has {rows} rows, {} policy folders",
                        folders.len()
                    ));
                }
                for f in &folders {
                    for name in per_run {
                        if !f.join(name).is_file() {
                            bad.push(format!("no {}/{name}", f.display()));
                        }
                    }
                }
                // A comparison shows a difference: the rows, but for the
                // policy's name and the wall time, are not all the same.
                let csv = fs::read_to_string(dir.join("comparison.csv")).unwrap_or_default();
                let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
                let figures: std::collections::BTreeSet<Vec<&str>> = csv
                    .lines()
                    .skip(1)
                    .map(|l| {
                        l.split(',')
                            .zip(&header)
                            .filter(|(_, h)| !matches!(**h, "policy" | "wall_s"))
                            .map(|(v, _)| v)
                            .collect()
                    })
                    .collect();
                if rows > 1 && figures.len() < 2 {
                    bad.push(format!(
                        "the {rows} policies compared give the same figures (no queue?):\n{csv}"
                    ));
                }
            }
            if words.iter().any(|w| w == "--control") {
                // A control policy acts: it changes priorities.
                for p in all
                    .iter()
                    .filter(|p| p.file_name().is_some_and(|n| n == "summary.json"))
                {
                    let v: Value =
                        serde_json::from_str(&fs::read_to_string(p).unwrap_or_default()).unwrap_or_default();
                    if v["core"]["priority_changes"].as_u64().unwrap_or(0) == 0 {
                        bad.push(format!("{}: --control changed no priority", p.display()));
                    }
                }
            }
        }
        ["experiment", _] if words.iter().any(|x| x == "--study") => {
            // A study: one row per reading, as JSON and CSV; a chart per
            // case.
            for f in ["summary.json", "study.json", "study.csv", "tables.json"] {
                if !has(f) {
                    bad.push(format!("no {f}"));
                }
            }
            if !all.iter().any(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("study-") && n.ends_with(".svg"))
            }) {
                bad.push("no study-*.svg".into());
            }
        }
        ["experiment", _] => {
            // "summary.json, a CSV with one row per instance and an SVG chart".
            if !has("summary.json") {
                bad.push("no summary.json".into());
            }
            for ext in ["csv", "svg"] {
                if !all.iter().any(|p| p.extension().is_some_and(|e| e == ext)) {
                    bad.push(format!("no .{ext} file"));
                }
            }
        }
        ["trace", "tau"] if !stdout.contains("τ") => bad.push("printed no τ".into()),
        _ => {}
    }
    bad
}

/// One runnable example's run: its time and what went wrong.
struct Ran {
    text: String,
    command: String,
    seconds: f64,
    problems: Option<String>,
}

/// Runs `ex` from the repository root, `--out` in a temporary folder.
fn run_example(ex: &Example) -> Ran {
    let mut w = words(&ex.text);
    let (command, help) = command_of(&w);
    if let Some((_, flag, value, _)) = REDUCED.iter().find(|(t, ..)| *t == ex.text) {
        w = with(w, flag, value);
    }
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = help.contains("--out <").then(|| {
        let d = match w.iter().position(|a| a == "--out") {
            Some(i) if i + 1 < w.len() => tmp.path().join(&w[i + 1]),
            _ => tmp.path().join("out"),
        };
        w = with(std::mem::take(&mut w), "--out", d.to_str().unwrap());
        d
    });
    let t0 = Instant::now();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fairsched"));
    cmd.current_dir(repo()).args(&w);
    let (code, stdout, stderr) = run_to_end(&mut cmd, tmp.path(), Duration::from_secs(900));
    let seconds = t0.elapsed().as_secs_f64();
    let bad = if code == Some(0) {
        check_run(ex, &w, out_dir.as_deref(), &stdout, &stderr)
    } else {
        vec![format!("exit {code:?}")]
    };
    Ran {
        text: ex.text.clone(),
        command: command.join(" "),
        seconds,
        problems: (!bad.is_empty()).then(|| {
            format!(
                "{}\n  from {}\n  ran: fairsched {}\n  {}\n  --- stdout (end)\n{}\n  --- stderr (end)\n{}",
                ex.text,
                ex.sources.join(", "),
                w.join(" "),
                bad.join("\n  "),
                tail(&stdout),
                tail(&stderr)
            )
        }),
    }
}

#[test]
fn every_runnable_example_runs_and_does_what_it_says() {
    let shared = shared_present();
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut todo = Vec::new();
    for ex in examples() {
        if kind(&ex) != Kind::Run {
            continue;
        }
        if !ex.prefix.trim().is_empty() || bare_text(&ex.text).contains(['>', '<', ';', '&', '$', '`']) {
            failures.push(format!(
                "{}{}\n  from {}\n  needs a shell (redirection, variables, several commands): make it one command, or a live example",
                ex.prefix,
                ex.text,
                ex.sources.join(", ")
            ));
            continue;
        }
        let (_, help) = command_of(&words(&ex.text));
        if !shared && (ex.text.contains("../shared") || help.contains("../shared")) {
            skipped.push(format!("{} (../shared/data not found)", ex.text));
            continue;
        }
        todo.push(ex);
    }
    // Two at a time: most examples use one core.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(ex) = todo.get(i) else { break };
                    let r = run_example(ex);
                    say(&format!(
                        "  {:6.1} s  {}  [{}]{}\n",
                        r.seconds,
                        r.text,
                        r.command,
                        if r.problems.is_some() { "  FAILED" } else { "" }
                    ));
                    done.lock().unwrap().push(r);
                }
            });
        }
    });
    let done = done.into_inner().unwrap();
    failures.extend(done.iter().filter_map(|r| r.problems.clone()));
    say(&format!(
        "examples run: {} in {:.1} s (the slowest {:.1} s); {} skipped{}\n",
        done.len(),
        started.elapsed().as_secs_f64(),
        done.iter().map(|r| r.seconds).fold(0.0, f64::max),
        skipped.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(":\n  {}", skipped.join("\n  "))
        }
    ));
    let reduced: Vec<String> = REDUCED
        .iter()
        .map(|(t, flag, value, why)| format!("{t}: run with {flag} {value}: {why}"))
        .collect();
    if !reduced.is_empty() {
        say(&format!("not run as written:\n  {}\n", reduced.join("\n  ")));
    }
    assert!(
        failures.is_empty(),
        "{} example(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(done.len() + skipped.len() >= 20, "too few examples ran");
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The README's example `text` (asserted to be one), as words.
fn readme_command(text: &str) -> Vec<String> {
    assert!(
        readme_examples().iter().any(|e| e.text == text),
        "README.md no longer has `{text}`: update this walk-through"
    );
    words(text)
}

/// `args` with the value after `flag` replaced (or the pair added).
fn with(mut args: Vec<String>, flag: &str, value: &str) -> Vec<String> {
    match args.iter().position(|a| a == flag) {
        Some(i) => args[i + 1] = value.to_string(),
        None => {
            args.push(flag.to_string());
            args.push(value.to_string());
        }
    }
    args
}

/// A client command run to its end in `dir` with `env`: its stdout.
fn client(dir: &Path, env: &[(&str, &str)], args: &[String]) -> String {
    let mut cmd = crate::common::bin();
    cmd.current_dir(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the binary runs");
    assert!(
        o.status.success(),
        "fairsched {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.to_lowercase().contains("warning"),
        "fairsched {}: {stderr}",
        args.join(" ")
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The README's example `text`, which ends in `> FILE`, run by [`client`]
/// with its stdout written to `dir/FILE`, as a shell would: that stdout.
fn client_to(dir: &Path, env: &[(&str, &str)], text: &str) -> String {
    let mut args = readme_command(text);
    let at = args
        .iter()
        .position(|a| a == ">")
        .expect("a `> FILE` redirection");
    let file = args.get(at + 1).expect("`>` names a file").clone();
    args.truncate(at);
    let out = client(dir, env, &args);
    fs::write(dir.join(file), &out).unwrap();
    out
}

/// `serve ARGS` in `dir`, its stdout in `dir/serve.out`: the process and
/// its URL once it listens.
fn serve(dir: &Path, args: &[String]) -> (crate::common::Proc, String) {
    let out = dir.join("serve.out");
    let mut cmd = crate::common::bin();
    cmd.current_dir(dir)
        .args(args)
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(dir.join("serve.err")).unwrap());
    let p = crate::common::Proc::spawn("broker", &mut cmd, Some(Duration::from_secs(10)));
    let url = crate::common::wait_for("`listening on`", Duration::from_secs(30), || {
        fs::read_to_string(&out)
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("listening on ").map(|u| u.trim().to_string()))
    });
    (p, url)
}

fn worker(dir: &Path, env: &[(&str, &str)], args: &[String]) -> crate::common::Proc {
    let mut cmd = crate::common::bin();
    cmd.current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.join("worker.err")).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    crate::common::Proc::spawn("worker", &mut cmd, Some(Duration::from_secs(10)))
}

/// `status --tasks --json` once every task has ended.
fn when_idle(dir: &Path, env: &[(&str, &str)], tasks: usize) -> Value {
    let args: Vec<String> = ["status", "--tasks", "--json"].map(String::from).to_vec();
    crate::common::wait_for(&format!("{tasks} tasks to end"), Duration::from_secs(120), || {
        let v: Value = serde_json::from_str(&client(dir, env, &args)).unwrap();
        let n = v["tasks"].as_array().map_or(0, Vec::len);
        (n == tasks && v["waiting"] == 0 && v["running"] == 0 && v["held"] == 0).then_some(v)
    })
}

fn states(v: &Value) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for t in v["tasks"].as_array().unwrap() {
        *m.entry(t["state"].as_str().unwrap().to_string()).or_default() += 1;
    }
    m
}

/// README.md's "The live service", command by command, as written but
/// for the address (`--listen 127.0.0.1:0`, any free port, and
/// FAIRSCHED_BROKER set to it) and `--workdir` (in a temporary folder);
/// the certificates it serves are made here, by a CA of the test's.
#[test]
fn the_readme_live_service_runs_as_written() {
    // Three commands, in three terminals of one folder.
    let a = tempfile::tempdir().unwrap();
    let a = a.path();
    let (mut broker, url) = serve(
        a,
        &with(
            readme_command("fairsched serve --quickstart"),
            "--listen",
            "127.0.0.1:0",
        ),
    );
    let tokens = fs::read_to_string(a.join("fairsched.tokens")).unwrap();
    assert!(tokens.contains(&format!("broker={url}")), "{tokens}");
    let mut w = worker(a, &[], &readme_command("fairsched worker --slots 4"));
    let ids = client(
        a,
        &[],
        &readme_command("fairsched submit --count 10 -- 'echo hello {i}; sleep 1'"),
    );
    assert_eq!(ids.lines().count(), 10, "ten ids: {ids}");
    let v = when_idle(a, &[], 10);
    assert_eq!(
        states(&v),
        BTreeMap::from([("completed".to_string(), 10)]),
        "{v:#}"
    );
    let table = client(a, &[], &["status".into(), "--tasks".into()]);
    assert!(table.contains("completed 10"), "{table}");
    w.terminate(Duration::from_secs(10));
    broker.terminate(Duration::from_secs(10));

    // For real use.
    let b = tempfile::tempdir().unwrap();
    let b = b.path();
    // `umask 077; fairsched admin init … > admin.token`, then
    // `FAIRSCHED_TOKEN=$(cat admin.token)`.
    let admin = client_to(
        b,
        &[],
        "fairsched admin init --db fairsched.db --policy fair-share > admin.token",
    );
    assert_eq!(admin.lines().count(), 1, "the admin token alone: {admin}");
    let admin = admin.trim().to_string();
    // broker.pem and broker.key, signed by the private CA of ca.pem
    // (`FAIRSCHED_CA_CERT=$PWD/ca.pem`).
    let pki = crate::common::Pki::make(&b.join("ca.pem"), &b.join("broker.pem"), &b.join("broker.key"));
    let ca = pki.ca.to_str().unwrap();
    let (mut broker, url) = serve(
        b,
        &with(
            readme_command(
                "fairsched serve --db fairsched.db --listen 0.0.0.0:8443 --lease 30s --tls-cert broker.pem --tls-key broker.key",
            ),
            "--listen",
            "127.0.0.1:0",
        ),
    );
    assert!(url.starts_with("https://"), "{url}");
    let as_admin = [
        ("FAIRSCHED_BROKER", url.as_str()),
        ("FAIRSCHED_CA_CERT", ca),
        ("FAIRSCHED_TOKEN", admin.as_str()),
    ];
    let org = client(b, &as_admin, &readme_command("fairsched admin org add physics"));
    assert!(org.trim().parse::<u32>().is_ok(), "an organization id: {org}");
    let alice = client_to(
        b,
        &as_admin,
        "fairsched admin user add alice --org physics > alice.token",
    );
    let worker_token = client_to(
        b,
        &as_admin,
        "fairsched admin worker-token --org physics > physics-worker.token",
    );
    let (alice, worker_token) = (alice.trim().to_string(), worker_token.trim().to_string());
    assert!(!alice.is_empty() && !alice.contains(char::is_whitespace));
    assert!(!worker_token.is_empty() && worker_token != alice);
    let scratch = b.join("scratch/fs");
    let mut w = worker(
        b,
        &[
            ("FAIRSCHED_BROKER", url.as_str()),
            ("FAIRSCHED_CA_CERT", ca),
            ("FAIRSCHED_TOKEN", worker_token.as_str()),
        ],
        &with(
            readme_command("fairsched worker --slots 16 --workdir /scratch/fs"),
            "--workdir",
            scratch.to_str().unwrap(),
        ),
    );
    let as_alice = [
        ("FAIRSCHED_BROKER", url.as_str()),
        ("FAIRSCHED_CA_CERT", ca),
        ("FAIRSCHED_TOKEN", alice.as_str()),
    ];
    let ids = client(
        b,
        &as_alice,
        &readme_command(
            "fairsched submit --count 100 --name render-{i} --stage-in 'cp ~/in/{i} .' -- 'render {i}'",
        ),
    );
    assert_eq!(ids.lines().count(), 100, "100 ids: {ids}");
    // `render` and ~/in are the reader's own: here the stage-in fails, and
    // each task fails saying so.
    let v = when_idle(b, &as_alice, 100);
    let names: Vec<&str> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"render-0") && names.contains(&"render-99"),
        "{names:?}"
    );
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/examples/dag.toml"),
        b.join("dag.toml"),
    )
    .unwrap();
    let dag = client(
        b,
        &as_alice,
        &readme_command("fairsched submit --workflow dag.toml"),
    );
    assert_eq!(dag.lines().count(), 4, "four ids: {dag}");
    let v = when_idle(b, &as_alice, 104);
    let dag: Vec<&Value> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["workflow"].is_u64())
        .collect();
    assert_eq!(dag.len(), 4);
    let end = |n: &str| {
        dag.iter().find(|t| t["name"] == n).unwrap()["end_ms"]
            .as_i64()
            .unwrap()
    };
    let start = |n: &str| {
        dag.iter().find(|t| t["name"] == n).unwrap()["start_ms"]
            .as_i64()
            .unwrap()
    };
    assert!(dag.iter().all(|t| t["state"] == "completed"), "{dag:#?}");
    assert!(
        start("render-1") >= end("prepare") && start("merge") >= end("render-2"),
        "{dag:#?}"
    );

    // Operating it.
    let said = client(
        b,
        &as_admin,
        &readme_command("fairsched admin quota set --user alice --max-queued 1000"),
    );
    assert_eq!(said, "user alice: at most 1000 queued\n");
    let said = client(
        b,
        &as_admin,
        &readme_command("fairsched admin quota set --user alice --max-running 8"),
    );
    assert_eq!(said, "user alice: at most 1000 queued, at most 8 running\n");
    // Task 1's stage-in failed (no ~/in/0 here): its stderr says so,
    // once its worker has sent it.
    let why = crate::common::wait_for("task 1's output", Duration::from_secs(20), || {
        let mut cmd = crate::common::bin();
        cmd.current_dir(b)
            .args(readme_command("fairsched output 1 --stderr"))
            .envs(as_alice);
        let o = cmd.output().unwrap();
        o.status.success().then(|| String::from_utf8(o.stdout).unwrap())
    });
    assert!(why.contains("in/0"), "{why}");
    let new = client_to(b, &as_admin, "fairsched admin user rotate alice > alice.token");
    let new = new.trim().to_string();
    assert!(new.len() == 64 && new != alice, "{new}");
    let old = crate::common::bin()
        .current_dir(b)
        .args(["status"])
        .envs(as_alice)
        .output()
        .unwrap();
    assert!(!old.status.success(), "alice's old token still works");
    let as_new = [
        ("FAIRSCHED_BROKER", url.as_str()),
        ("FAIRSCHED_CA_CERT", ca),
        ("FAIRSCHED_TOKEN", new.as_str()),
    ];
    client(b, &as_new, &["status".into()]);
    let said = client(
        b,
        &as_admin,
        &readme_command("fairsched admin token revoke --worker-tokens-of physics"),
    );
    assert_eq!(said, "revoked 1 worker token of physics\n");
    // A copy while the broker runs.
    let said = client(
        b,
        &[],
        &readme_command("fairsched admin backup --db fairsched.db backup.db"),
    );
    assert!(
        said.contains("backup.db") && b.join("backup.db").is_file(),
        "{said}"
    );
    w.terminate(Duration::from_secs(10));
    assert!(
        broker.terminate(Duration::from_secs(10)).is_some(),
        "the broker stops on SIGTERM"
    );

    let export = readme_command("fairsched export --db fairsched.db --swf history.swf --platform orgs.toml");
    client(b, &[], &export);
    let swf = fs::read_to_string(b.join("history.swf")).unwrap();
    let jobs = swf
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .count();
    assert!(jobs >= 4, "the tasks that ran: {jobs} in\n{swf}");
    let orgs = fs::read_to_string(b.join("orgs.toml")).unwrap();
    assert!(orgs.contains("physics"), "{orgs}");
    let out = b.join("what-if");
    let args = with(
        readme_command("fairsched simulate --broker-log fairsched.db --policy first-fit --policy fcfs"),
        "--out",
        out.to_str().unwrap(),
    );
    client(b, &[], &args);
    for p in ["first-fit", "fcfs"] {
        let s: Value =
            serde_json::from_str(&fs::read_to_string(out.join(p).join("summary.json")).unwrap()).unwrap();
        assert!(s["jobs"].as_u64().unwrap() >= 4, "{s:#}");
    }
    // The broker stopped (its snapshot written): the log up to it goes to
    // the archive, and the export reads the same.
    let said = client(
        b,
        &[],
        &readme_command("fairsched admin compact --db fairsched.db"),
    );
    assert!(
        said.contains("archived in") && b.join("fairsched.db.archive").is_file(),
        "{said}"
    );
    client(b, &[], &export);
    assert_eq!(fs::read_to_string(b.join("history.swf")).unwrap(), swf);
    // The database after all that: whole.
    let said = client(b, &[], &readme_command("fairsched admin check --db fairsched.db"));
    assert!(
        said.ends_with(": ok (integrity check passed; every table and column is there)\n"),
        "{said}"
    );
}

/// `examples/custom_policy.rs` (docs/extending.md) runs as documented: its
/// two out-of-tree policies through a comparison, the Shapley experiment,
/// a sweep and a live broker. `cargo test` builds it beside the binary
/// under test; a filtered run (`--test cli`) does not: then it says how.
#[test]
fn the_custom_policy_example_runs_as_documented() {
    let bin = Path::new(env!("CARGO_BIN_EXE_fairsched"));
    let example = bin.with_file_name("examples").join("custom_policy");
    assert!(
        example.is_file(),
        "{} is not built: `cargo test --workspace` builds it (or `cargo build --example custom_policy` first)",
        example.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(&example)
        .arg(&out)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stdout}\n{stderr}");
    for says in [
        "estimates shown: least-running-org (blind) 0, shortest-estimate-first ",
        "  least-running-org  ",
        "3. the sweep's 3 parts collected",
        "4. the broker refuses shortest-estimate-first: ",
        "the worker ran, in order: ",
        "restarted from the snapshot after step ",
        "all done: results in ",
    ] {
        assert!(stdout.contains(says), "no {says:?} in:\n{stdout}");
    }
    // Both policies ran in the comparison, each into a folder of its own.
    for p in ["fcfs", "least-running-org", "shortest-estimate-first"] {
        let summary = out.join("compare").join(p).join("summary.json");
        let s: Value = serde_json::from_slice(&fs::read(&summary).unwrap()).unwrap();
        assert!(s["jobs"].as_u64().unwrap() > 1000, "{p}: {s}");
    }
    // The blind policy alternated the two organizations as slots freed up.
    let ran = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("the worker ran, in order: "))
        .unwrap();
    assert!(ran.starts_with("physics biology physics biology"), "{ran}");
}
