//! The command line of the worker.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fairsched_worker::{ExecutorKind, Opts, default_slots};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    opts: Opts,
}

fn parse(args: &[&str]) -> Result<Opts, clap::Error> {
    let base = ["worker", "--broker", "http://127.0.0.1:1", "--token", "t"];
    Cli::try_parse_from(base.iter().chain(args)).map(|cli| cli.opts)
}

#[test]
fn defaults() {
    let opts = parse(&[]).unwrap();
    assert_eq!(opts.slots, default_slots());
    assert!(opts.slots >= 1);
    assert_eq!(opts.workdir, PathBuf::from("./fairsched-work"));
    assert_eq!(opts.executor, ExecutorKind::Process);
    assert_eq!(opts.grace, Duration::from_secs(10));
    assert!(!opts.host.is_empty());
}

#[test]
fn every_option() {
    let opts = parse(&[
        "--slots",
        "3",
        "--workdir",
        "/tmp/w",
        "--executor",
        "noop",
        "--grace",
        "500ms",
        "--host",
        "n7",
        "--ca-cert",
        "/etc/fairsched/ca.pem",
    ])
    .unwrap();
    assert_eq!(opts.slots, 3);
    assert_eq!(opts.workdir, PathBuf::from("/tmp/w"));
    assert_eq!(opts.executor, ExecutorKind::Noop);
    assert_eq!(opts.grace, Duration::from_millis(500));
    assert_eq!(opts.host, "n7");
    assert_eq!(opts.ca_cert, Some(PathBuf::from("/etc/fairsched/ca.pem")));
}

#[test]
fn refuses_zero_slots_and_bad_values() {
    assert!(parse(&["--slots", "0"]).is_err());
    assert!(parse(&["--slots", "4097"]).is_err());
    assert_eq!(parse(&["--slots", "4096"]).unwrap().slots, 4096);
    assert!(parse(&["--grace", "10"]).is_err());
    assert!(parse(&["--executor", "docker"]).is_err());
}

#[test]
fn token_file_instead_of_a_token() {
    let opts = Cli::try_parse_from([
        "worker",
        "--broker",
        "http://127.0.0.1:1",
        "--token-file",
        "/run/t",
    ])
    .unwrap()
    .opts;
    assert_eq!(opts.token_file, Some(PathBuf::from("/run/t")));
    // With a token too (FAIRSCHED_TOKEN exported for other commands): the
    // file wins (`run` reads it over the token).
    let both = parse(&["--token-file", "/run/t"]).unwrap();
    assert_eq!(both.token_file, Some(PathBuf::from("/run/t")));
}

#[test]
fn read_token_file_takes_the_first_line_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "  wt_secret \nignored\n").unwrap();
    assert_eq!(fairsched_worker::read_token_file(&path).unwrap(), "wt_secret");
    std::fs::write(&path, "\n").unwrap();
    assert!(fairsched_worker::read_token_file(&path).is_err());
    assert!(fairsched_worker::read_token_file(&dir.path().join("missing")).is_err());
}
