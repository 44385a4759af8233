//! The core cannot open a file, read the environment, look at a clock,
//! start a thread, open a socket or run a process: it is `no_std`, so the
//! compiler refuses. This test builds the real crate with `src/probe.rs`
//! switched on and checks that every probe line is refused, and that the
//! compile-time reads `no_std` leaves open (`include_bytes!`, `env!`, …)
//! are refused by clippy with the crate's `clippy.toml`.
//!
//! The builds use their own target directory (`target/discipline`), so
//! they neither wait for nor disturb the build running this test.

// This file is a test of the core, not core code: clippy.toml's bans on
// compile-time reads apply to the core's sources, and this test needs
// env!("CARGO") to build them.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `cargo SUBCOMMAND -p fairsched-core --lib … -- RUSTC_ARGS`: success and
/// what it printed. Type-checked only (`rustc` with `--profile check`,
/// as `clippy` does): what is refused is refused before code generation.
fn cargo(subcommand: &str, rustc_args: &[&str]) -> (bool, String) {
    let root = crate_dir().join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .arg(subcommand)
        .args(if subcommand == "rustc" {
            &["--profile", "check"][..]
        } else {
            &[]
        })
        .args([
            "-p",
            "fairsched-core",
            "--lib",
            "--offline",
            "--locked",
            "--color",
            "never",
        ])
        // The target folder of the tests themselves (cargo holds no lock
        // on it while tests run): the dependencies' metadata is there
        // already when `cargo clippy` ran first, as in CI.
        .arg("--target-dir")
        .arg(
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("TARGET/tmp"),
        )
        .arg("--")
        .args(rustc_args)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The probe lines of one module of `src/probe.rs`: (line number, what).
fn probes(module: &str) -> Vec<(usize, String)> {
    let src = std::fs::read_to_string(crate_dir().join("src/probe.rs")).unwrap();
    let start = src.find(&format!("pub mod {module}")).expect("probe module");
    let end = src[start..].find("\n}").map_or(src.len(), |e| start + e);
    let first_line = src[..start].lines().count() + 1;
    src[start..end]
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            l.split_once("// PROBE: ")
                .map(|(_, w)| (first_line + i, w.to_string()))
        })
        .collect()
}

/// The lines of `probe.rs` that the compiler's messages point at.
fn refused_lines(stderr: &str) -> Vec<usize> {
    stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("--> crates/fairsched-core/src/probe.rs:"))
        .filter_map(|rest| rest.split(':').next()?.parse().ok())
        .collect()
}

#[test]
fn core_code_cannot_reach_files_environment_clocks_threads_or_the_network() {
    let probes = probes("std_access");
    assert_eq!(probes.len(), 7, "{probes:?}");
    let (ok, stderr) = cargo("rustc", &["--cfg", "fairsched_probe"]);
    assert!(!ok, "the core built with std access in it:\n{stderr}");
    let refused = refused_lines(&stderr);
    for (line, what) in &probes {
        assert!(
            refused.contains(line),
            "probe `{what}` (src/probe.rs:{line}) was not refused:\n{stderr}"
        );
    }
    assert!(stderr.contains("cannot find module or crate `std`"), "{stderr}");
    // The same build without the probe succeeds: the failure is the probe's.
    let (ok, stderr) = cargo("rustc", &[]);
    assert!(ok, "the core does not build on its own:\n{stderr}");
}

#[test]
fn compile_time_reads_are_refused_by_clippy() {
    let has_clippy = Command::new(env!("CARGO"))
        .args(["clippy", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_clippy {
        // .ci/run installs clippy; a machine without it says so here.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipping compile_time_reads_are_refused_by_clippy: clippy is not installed \
              (rustup component add clippy)\n",
        );
        return;
    }
    let probes = probes("compile_time_reads");
    assert_eq!(probes.len(), 4, "{probes:?}");
    let (ok, stderr) = cargo("clippy", &["--cfg", "fairsched_probe_macros", "-D", "warnings"]);
    assert!(!ok, "clippy let compile-time reads into the core:\n{stderr}");
    let refused: Vec<usize> = stderr
        .split("\nerror")
        .filter(|e| e.contains("disallowed macro"))
        .flat_map(refused_lines)
        .collect();
    for (line, what) in &probes {
        assert!(
            refused.contains(line),
            "probe `{what}` (src/probe.rs:{line}) passed clippy:\n{stderr}"
        );
    }
    let (ok, stderr) = cargo("clippy", &["-D", "warnings"]);
    assert!(ok, "clippy refuses the core as it is:\n{stderr}");
}

#[test]
fn the_crate_root_keeps_its_discipline() {
    // `no_std` holds only while no module declares `extern crate std`;
    // and `unsafe` is forbidden.
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).unwrap();
    assert!(lib.contains("#![cfg_attr(not(test), no_std)]"));
    assert!(lib.contains("#![forbid(unsafe_code)]"));
    let mut stack = vec![crate_dir().join("src")];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, l) in text.lines().enumerate() {
                let code = l.split("//").next().unwrap_or("");
                if code.contains("extern crate") {
                    let rel = p.strip_prefix(crate_dir()).unwrap_or(Path::new("?"));
                    assert!(
                        rel == Path::new("src/lib.rs") && code.trim() == "extern crate alloc;",
                        "{}:{}: {l}",
                        rel.display(),
                        i + 1
                    );
                }
            }
        }
    }
    assert!(files > 10);
}
