//! The terminal edge: standard output that cannot stop a run, errors
//! printed once, and exit codes.
//!
//! - Printing never loses a result: with `fairsched … | head`, `head` reads
//!   what it wants and the run goes on to write its result files. A closed
//!   pipe just ends the printing; any other write error (a full disk behind
//!   `> file`) ends it too, and is reported when the command is done, with
//!   exit status 1. Nothing here can panic on a closed stdout or stderr.
//! - An error prints as one line, each cause once (see [`one_line`]).
//! - Exit status: 0 done; 1 the run failed (a file, the data, the
//!   platform); 2 the command line is wrong: clap's own errors, and values
//!   that parse but are refused before anything is read ([`usage`]).
//! - Every result file says which program wrote it: [`tool`], put first
//!   in each `summary.json` and `tau.json` (`fairsched_sim::experiment::summary_json`).

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to standard output failed: nothing more is printed.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error other than a closed pipe, reported at the end.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Writes to standard output. Never fails: a closed pipe ends the printing
/// quietly, another error ends it and is reported by [`finish`]; either
/// way the command goes on and writes its files.
pub fn out(args: fmt::Arguments) -> anyhow::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert(e);
        }
    }
    Ok(())
}

/// `print!` through [`out`].
macro_rules! say {
    ($($t:tt)*) => { $crate::term::out(format_args!($($t)*))? };
}

/// `println!` through [`out`].
macro_rules! sayln {
    () => { $crate::term::out(format_args!("\n"))? };
    ($($t:tt)*) => { $crate::term::out(format_args!("{}\n", format_args!($($t)*)))? };
}

pub(crate) use {say, sayln};

/// A line on standard error (a remark, not an error); never fails.
pub fn note(args: fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{args}");
}

/// This program, its build and its command line: the `tool` block of every
/// `summary.json` (and `tau.json`).
pub fn tool() -> fairsched_sim::run::Tool {
    fairsched_sim::run::Tool {
        name: env!("CARGO_PKG_NAME").into(),
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("FAIRSCHED_GIT_COMMIT").into(),
        command: fairsched_report::files::command_line(),
    }
}

/// On SIGINT (Ctrl-C) or SIGTERM: waits for a commit of result files under
/// way, then removes the run's `*.partial` files and its folder's lock
/// (see `fairsched_report::OutDir`), says so, and ends the process with
/// status 128 + the signal, as the signal itself would have. A run killed
/// otherwise (SIGKILL, a crash) leaves them to the next run into its folder.
pub fn clean_up_on_interrupt(cleaner: fairsched_report::PartialCleaner) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            cleaner.interrupt();
            note(format_args!(
                "\ninterrupted ({}): the run stopped; its *.partial files are removed",
                if sig == SIGINT { "SIGINT" } else { "SIGTERM" }
            ));
            std::process::exit(128 + sig);
        }
    });
}

/// A value the command line gave that is refused before any work (exit 2).
#[derive(Debug)]
pub struct Usage(String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Marks an error as the command line's (exit status 2, as clap's own).
pub fn usage(e: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Usage(e.to_string()))
}

/// An error and its causes on one line, each said once. A cause is left
/// out when the message before it already ends with it: error types that
/// write their source into their own message (`path: {source}`) and also
/// return it as `source()` would otherwise say it twice.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    let mut last = msg.clone();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !last.ends_with(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
        last = c;
    }
    msg
}

/// Whether the error is the command line's: a [`usage`] error, a
/// library's (`SimError::is_usage`, `ClientError::is_usage`), or an `--out` folder
/// refused (`fairsched_report::OutError::is_usage`).
fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<Usage>()
            || c.downcast_ref::<fairsched_report::OutError>()
                .is_some_and(fairsched_report::OutError::is_usage)
            || c.downcast_ref::<fairsched_sim::SimError>()
                .is_some_and(fairsched_sim::SimError::is_usage)
            || c.downcast_ref::<fairsched_client::ClientError>()
                .is_some_and(fairsched_client::ClientError::is_usage)
    })
}

/// Prints the outcome of a command on standard error and turns it into the
/// exit status (see the module docs).
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    // Standard error may be closed too: what cannot be said is dropped.
    let mut err = io::stderr().lock();
    let failed = FAILED.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(e) = &failed {
        let _ = writeln!(err, "error: writing to standard output: {e}");
    }
    match result {
        Ok(()) if failed.is_some() => ExitCode::FAILURE,
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(err, "error: {}", one_line(&e));
            if is_usage(&e) {
                let _ = writeln!(err, "\nFor more information, try '--help'.");
                ExitCode::from(2)
            } else if e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<fairsched_client::ClientError>(),
                    Some(fairsched_client::ClientError::Unconfirmed { .. })
                )
            }) {
                // Neither done nor failed: the tasks may exist (the
                // message says how to know without submitting twice).
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once() {
        let io = || io::Error::new(io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        // A cause its message already ends with (`{path}: {source}` and
        // `#[source]`) is left out...
        let e = anyhow::Error::new(io()).context("x.swf: No such file or directory (os error 2)");
        assert_eq!(one_line(&e), "x.swf: No such file or directory (os error 2)");
        // ...one it does not hold is said once, after it.
        let e = anyhow::Error::new(io()).context("creating out");
        assert_eq!(
            one_line(&e),
            "creating out: No such file or directory (os error 2)"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
        // Only the end counts: a message that merely mentions the cause's
        // words keeps it.
        let e = anyhow::anyhow!("denied").context("denied by policy x");
        assert_eq!(one_line(&e), "denied by policy x: denied");
    }

    #[test]
    fn a_summary_gets_the_tool_block_first() {
        #[derive(serde::Serialize)]
        struct S {
            experiment: &'static str,
            seed: u64,
        }
        let text = String::from_utf8(fairsched_sim::experiment::summary_json(
            tool(),
            &S {
                experiment: "x",
                seed: 3,
            },
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["tool"]["name"], "fairsched");
        assert_eq!(v["tool"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["tool"]["commit"], env!("FAIRSCHED_GIT_COMMIT"));
        assert!(v["tool"]["command"].is_string());
        assert_eq!(
            (v["experiment"].as_str(), v["seed"].as_u64()),
            (Some("x"), Some(3))
        );
        assert!(
            text.trim_start_matches(['{', '\n', ' ']).starts_with("\"tool\""),
            "{text}"
        );
    }

    #[test]
    fn usage_errors_are_recognized_through_context() {
        let e = usage("--procs 0: no").context("simulate");
        assert!(e.chain().any(|c| c.is::<Usage>()));
        assert_eq!(one_line(&e), "simulate: --procs 0: no");
        // An --out folder refused is the command line's too; its I/O errors
        // are the run's.
        let refused = fairsched_report::OutError::NotOurs { dir: "x".into() };
        assert!(is_usage(&anyhow::Error::new(refused).context("policy fcfs")));
        let io = fairsched_report::OutError::File(fairsched_report::FileError {
            op: "creating",
            path: "x".into(),
            source: io::Error::other("full"),
        });
        assert!(!is_usage(&anyhow::Error::new(io)));
    }
}
