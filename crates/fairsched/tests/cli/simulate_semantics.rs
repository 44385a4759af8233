//! `fairsched simulate --procs-from` and `--runtime-limit` (the replay
//! semantics of docs/semantics.md), end to end on real log lines.

use fairsched_trace::SwfReader;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs `fairsched simulate ARGS --out TMP --no-progress`, which must
/// succeed; returns the output folder and what it printed.
fn simulate(args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap(), "--no-progress"]);
    let o = run(&all);
    assert!(
        o.status.success(),
        "fairsched {all:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (dir, String::from_utf8(o.stdout).unwrap())
}

fn summary(dir: &tempfile::TempDir) -> Value {
    let p = dir.path().join("out/summary.json");
    serde_json::from_str(&fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// tasks.csv as (job, slots, start, end, outcome), in file order.
fn tasks(dir: &tempfile::TempDir) -> Vec<(u64, u32, f64, f64, String)> {
    let text = fs::read_to_string(dir.path().join("out/tasks.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} column"))
    };
    let (job, slots, start, end, outcome) =
        (col("job"), col("slots"), col("start"), col("end"), col("outcome"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[job].parse().unwrap(),
                f[slots].parse().unwrap(),
                f[start].parse().unwrap(),
                f[end].parse().unwrap(),
                f[outcome].to_string(),
            )
        })
        .collect()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Four real KTH-SP2-1996-2.1 lines (jobs 127–130): 36 processors each, a
/// requested time of 60 s (field 9), and runs of 129, 111, 159 and 160 s.
const KTH_OVERRUNS: &str = "\
; MaxProcs: 100
  127   675520   2040    129   36     -1    -1   36     60    -1  0  18  18  -1 -1 -1 -1 -1
  128   675545   2520    111   36     -1    -1   36     60    -1  0  18  18  -1 -1 -1 -1 -1
  129   675553   4440    159   36     -1    -1   36     60    -1  0  18  18  -1 -1 -1 -1 -1
  130   675568   3840    160   36     -1    -1   36     60    -1  0  18  18  -1 -1 -1 -1 -1
";

#[test]
fn help_states_both_flags_and_their_defaults() {
    let o = run(&["simulate", "--help"]);
    assert!(o.status.success());
    // Wrapped to the terminal's width: compared with single spaces.
    let help = String::from_utf8(o.stdout).unwrap();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "--procs-from <FIELD>",
        "`allocated` (default: field 5, or field 8 when 5 is unknown)",
        "`requested` (field 8 when known",
        "AccaSim",
        "[default: allocated]",
        "--runtime-limit <WHAT>",
        "`ignore` (default: it runs its logged runtime",
        "`kill`",
        "[default: ignore]",
    ] {
        assert!(help.contains(want), "--help lacks {want:?}:\n{help}");
    }
}

#[test]
fn unknown_values_are_usage_errors_that_list_the_choices() {
    for (flag, value, choices) in [
        ("--procs-from", "alloc", "allocated, requested"),
        ("--runtime-limit", "cut", "ignore, kill"),
    ] {
        let o = run(&["simulate", "--policy", "fcfs", flag, value, "--no-progress"]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(flag) && err.contains(choices),
            "{flag} {value}: {err}"
        );
    }
}

#[test]
fn kill_ends_real_overrunning_jobs_at_their_requested_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("kth-overruns.swf");
    fs::write(&log, KTH_OVERRUNS).unwrap();
    let log = log.to_str().unwrap();

    // Default: every job runs its logged time.
    let (ignore, _) = simulate(&["--trace", log, "--policy", "fcfs"]);
    let s = summary(&ignore);
    assert_eq!(
        (s["runtime_limit"].as_str(), s["killed_at_limit"].as_u64()),
        (Some("ignore"), Some(0))
    );
    let runs: Vec<f64> = tasks(&ignore).iter().map(|t| t.3 - t.2).collect();
    assert_eq!(runs, [129.0, 111.0, 159.0, 160.0]);
    assert!(tasks(&ignore).iter().all(|t| t.4 == "completed"));

    // kill: every job ends 60 s after its start, as killed, and the third
    // one starts when the first is killed (675,520 + 60), not when it
    // would have ended (675,520 + 129).
    for policy in ["fcfs", "easy"] {
        let (kill, stdout) = simulate(&["--trace", log, "--policy", policy, "--runtime-limit", "kill"]);
        let t = tasks(&kill);
        assert_eq!(t.len(), 4);
        for (job, _, start, end, outcome) in &t {
            assert_eq!(
                (end - start, outcome.as_str()),
                (60.0, "killed"),
                "{policy}: job {job}"
            );
        }
        let start_129 = t.iter().find(|x| x.0 == 129).unwrap().2;
        assert_eq!(start_129, 675_580.0, "{policy}");
        let s = summary(&kill);
        assert_eq!(s["runtime_limit"], "kill");
        assert_eq!(s["killed_at_limit"], 4);
        assert_eq!(s["outcomes"]["killed"], 4);
        assert!(stdout.contains("runtime limit kill"), "{stdout}");
        assert!(
            stdout.contains("4 task(s) killed at their requested time"),
            "{stdout}"
        );
    }
}

/// The bundled KTH-SP2 log read with field 8: every job whose field 8
/// differs from its field 5 runs on field 8's count (counted independently
/// here from the raw records).
#[test]
fn requested_reads_field_8_of_the_bundled_log() {
    let bundled = repo().join("data/KTH-SP2-1996-2.1-cln.swf.gz");
    let mut differ = std::collections::BTreeMap::new();
    let mut kept = 0u64;
    for rec in SwfReader::open(&bundled).unwrap() {
        let r = rec.unwrap();
        let known = |p: i64| p > 0;
        if r.run_time <= 0 || !(known(r.allocated_procs) || known(r.requested_procs)) {
            continue;
        }
        kept += 1;
        if known(r.allocated_procs) && known(r.requested_procs) && r.allocated_procs != r.requested_procs {
            differ.insert(r.job_number as u64, r.requested_procs as u32);
        }
    }
    assert!(differ.len() > 100, "the log has {} such jobs", differ.len());

    let (allocated, _) = simulate(&["--policy", "fcfs"]);
    let s = summary(&allocated);
    assert_eq!(
        (s["procs_from"].as_str(), s["procs_differ"].as_u64()),
        (Some("allocated"), Some(0))
    );
    assert_eq!(s["jobs"].as_u64(), Some(kept));

    let (requested, stdout) = simulate(&["--policy", "fcfs", "--procs-from", "requested"]);
    let s = summary(&requested);
    assert_eq!(s["procs_from"], "requested");
    assert_eq!(s["procs_differ"].as_u64(), Some(differ.len() as u64));
    assert_eq!(s["jobs"].as_u64(), Some(kept));
    assert_eq!(
        s["filters"],
        summary(&allocated)["filters"],
        "the same records are kept"
    );
    for (job, slots, ..) in tasks(&requested) {
        if let Some(&want) = differ.get(&job) {
            assert_eq!(slots, want, "job {job}");
        }
    }
    assert!(
        stdout.contains("processors from requested (field 8, else 5)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{} job(s) read with their requested processors (field 8)",
            differ.len()
        )),
        "{stdout}"
    );
}
