//! `simulate` reads a log once when it can (only the header first, the
//! run's stream scanning as it goes) and twice when it must: the printed
//! lines and every file are the same either way, and a log found out of
//! order on the way is scanned and run again on its sorted jobs.

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

fn simulate(args: &[&str], out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_fairsched"))
        .arg("simulate")
        .args(args)
        .args(["--no-progress", "--out"])
        .arg(out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    String::from_utf8(o.stdout).unwrap()
}

/// A real-looking log: KTH-SP2-1996 lines (job, submit, run, processors,
/// user), with a header.
fn log(order: &[usize], header: &str) -> String {
    let jobs = [
        (1, 0, 3600, 8, 3),
        (2, 120, 60, 32, 4),
        (3, 130, 900, 64, 3),
        (4, 400, 30, 1, 5),
        (5, 400, 7200, 16, 4),
        (6, 1000, 10, 100, 6),
        (7, 1500, 600, 4, 5),
    ];
    let mut s = header.to_string();
    for &i in order {
        let (id, submit, run, procs, user) = jobs[i];
        s.push_str(&format!(
            "{id} {submit} -1 {run} {procs} -1 -1 {procs} {run} -1 1 {user} 1 -1 -1 -1 -1 -1\n"
        ));
    }
    s
}

fn summary(dir: &Path) -> Value {
    let mut v: Value = serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["wall_time_s", "tool", "trace"] {
        o.remove(k);
    }
    v
}

/// Out of order (jobs 4 and 7 moved up: 4 jobs behind the latest submit): read once, found unsorted, scanned,
/// run again on the sorted jobs; the schedule is the sorted log's, the
/// summary says the submits were sorted, and the trace line is printed
/// once, first.
#[test]
fn a_log_out_of_order_is_run_again_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let header = "; MaxProcs: 100\n";
    let sorted = dir.path().join("sorted.swf");
    let shuffled = dir.path().join("shuffled.swf");
    fs::write(&sorted, log(&[0, 1, 2, 3, 4, 5, 6], header)).unwrap();
    fs::write(&shuffled, log(&[0, 3, 1, 2, 6, 4, 5], header)).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for policy in ["fcfs", "easy"] {
        let out_a = simulate(&["--trace", sorted.to_str().unwrap(), "--policy", policy], &a);
        let out_b = simulate(&["--trace", shuffled.to_str().unwrap(), "--policy", policy], &b);
        // Stable sort: jobs 4 and 5 (both at 400 s) keep the file's order.
        assert_eq!(
            fs::read_to_string(a.join("tasks.csv")).unwrap(),
            fs::read_to_string(b.join("tasks.csv")).unwrap(),
            "{policy}"
        );
        let (sa, sb) = (summary(&a), summary(&b));
        assert_eq!(sa["sorted_submits"], false);
        assert_eq!(sb["sorted_submits"], true);
        assert_eq!(sb["filters"]["non_monotone_submits"], 4);
        assert_eq!(sa["jobs"], sb["jobs"]);
        assert_eq!(sa["mean_wait_s"], sb["mean_wait_s"]);
        for out in [&out_a, &out_b] {
            assert!(out.starts_with("trace: "), "{out}");
            assert_eq!(out.matches("trace: ").count(), 1, "{out}");
            assert!(out.contains("7 jobs, 7 kept, 4 users, span 1500 s"), "{out}");
        }
        assert!(out_b.contains("non_monotone_submits 4"), "{out_b}");
    }
}

/// Read once (the header gives the platform) or scanned first (no
/// MaxProcs: the widest job does): the same lines, in the same order, and
/// the same files, for one policy and for several.
#[test]
fn one_read_and_two_print_and_write_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let order = [0, 1, 2, 3, 4, 5, 6];
    // The widest job has 100 processors: both logs run on 100.
    let with = dir.path().join("with.swf");
    let without = dir.path().join("without.swf");
    fs::write(&with, log(&order, "; Computer: test\n; MaxProcs: 100\n")).unwrap();
    fs::write(&without, log(&order, "; Computer: test\n")).unwrap();
    for policies in [&["fcfs"][..], &["fcfs", "fair-share"][..]] {
        let mut args: Vec<&str> = vec!["--orgs", "2"];
        for p in policies {
            args.extend(["--policy", p]);
        }
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let once = simulate(&[&["--trace", with.to_str().unwrap()], &args[..]].concat(), &a);
        let twice = simulate(&[&["--trace", without.to_str().unwrap()], &args[..]].concat(), &b);
        let lines = |s: &str, from: &str| -> Vec<String> {
            s.lines()
                .filter(|l| !l.starts_with("wrote ") && !l.starts_with("next: "))
                .map(|l| {
                    l.replace(from, "LOG")
                        .replace("header MaxProcs", "SOURCE")
                        .replace("widest job", "SOURCE")
                })
                .collect()
        };
        assert_eq!(
            lines(&once, with.to_str().unwrap()),
            lines(&twice, without.to_str().unwrap()),
            "{policies:?}"
        );
        let folders: Vec<&Path> = if policies.len() == 1 {
            vec![Path::new("")]
        } else {
            policies.iter().map(Path::new).collect()
        };
        for f in folders {
            for file in ["tasks.csv", "orgs.csv", "users.csv"] {
                assert_eq!(
                    fs::read_to_string(a.join(f).join(file)).unwrap(),
                    fs::read_to_string(b.join(f).join(file)).unwrap(),
                    "{policies:?} {file}"
                );
            }
            let (mut sa, mut sb) = (summary(&a.join(f)), summary(&b.join(f)));
            for s in [&mut sa, &mut sb] {
                s["platform"]["source"] = Value::Null;
            }
            assert_eq!(sa, sb, "{policies:?}");
        }
    }
}

/// A malformed line found while the log is read once: the error names the
/// file, the line and the field (without a policy's name: it is the
/// log's), and the output folder is left as a full scan leaves it, with
/// no manifest of files never written; for one policy and for several.
#[test]
fn a_malformed_log_read_once_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.swf");
    let mut text = log(&[0, 1, 2], "; MaxProcs: 100\n");
    text.push_str("9 2000 -1 abc 4 -1 -1 4 60 -1 1 3 1 -1 -1 -1 -1 -1\n");
    fs::write(&bad, text).unwrap();
    for policies in [&["fcfs"][..], &["fcfs", "easy"][..]] {
        let out = dir.path().join(format!("out{}", policies.len()));
        let mut c = Command::new(env!("CARGO_BIN_EXE_fairsched"));
        c.args([
            "simulate",
            "--trace",
            bad.to_str().unwrap(),
            "--no-progress",
            "--out",
        ])
        .arg(&out);
        for p in policies {
            c.args(["--policy", p]);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("bad.swf:5") && err.contains("run_time") && err.contains("abc"),
            "{err}"
        );
        assert!(!err.contains("policy") && !err.contains("panicked"), "{err}");
        // Nothing left: no file, and the folder this run created is gone
        // when the run ended before writing anything.
        let left: Vec<_> = fs::read_dir(&out).map(|d| d.collect()).unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    }
}
