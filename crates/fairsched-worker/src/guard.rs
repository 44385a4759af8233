//! The task guard: a run's scripts die with the worker, SIGKILL included.
//!
//! A worker that dies without a chance to clean up (SIGKILL, the OOM
//! killer, a crash) cannot kill its runs; the broker requeues them after
//! the lease, so left running they would do their work twice. So the
//! worker does not start `sh -c SCRIPT` itself: it starts its own
//! executable again in guard mode ([`guard_hook`] dispatches it), as the
//! leader of a new process group, and the guard starts `sh -c SCRIPT` in
//! that same group. On Linux the guard asks for SIGHUP when the worker's
//! thread that started it ends (`PR_SET_PDEATHSIG`), which a dying worker
//! cannot prevent, and becomes the reaper of the script's orphans
//! (`PR_SET_CHILD_SUBREAPER`).
//!
//! - The script ends: the guard ends the same way (its exit code, or the
//!   same signal), so the worker reads the script's status from it.
//! - SIGHUP (its worker died): SIGTERM to the group, then, like a kill by
//!   the worker, SIGKILL to the group once the grace period has passed
//!   with any member left.
//! - SIGTERM or SIGINT (the worker kills the run: the signal went to the
//!   whole group): the same, without sending SIGTERM again.
//!
//! Processes a script moves out of the group (`setsid`) escape, as they
//! escape the worker's own kill.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, SigSet, Signal, killpg, raise};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use crate::executor::{WORKER_ERROR_EXIT, group_has_members};

/// The first argument that makes [`guard_hook`] run the guard.
pub(crate) const GUARD_ARG: &str = "__fairsched-task-guard";

/// Set once [`guard_hook`] ran in this process and returned: this
/// executable can be a guard.
static HOOKED: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main` of a binary that calls [`run`](crate::run).
///
/// Started as `PROGRAM __fairsched-task-guard GRACE_MS WORKER_PID SCRIPT`
/// (by the worker, never by hand), the process is a task guard: it runs
/// `sh -c SCRIPT` and exits with its status; this function does not
/// return then. Otherwise it returns at once and the worker of this
/// process runs each script under a guard. A worker in a binary that never
/// calls it runs `sh -c SCRIPT` directly, and its runs outlive it when it
/// is SIGKILLed.
pub fn guard_hook() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(OsStr::new(GUARD_ARG)) {
        HOOKED.store(true, Ordering::Relaxed);
        return;
    }
    let code = guard(args.collect());
    std::process::exit(code)
}

/// The program to start as a guard, if this executable can be one.
pub(crate) fn program() -> Option<PathBuf> {
    if !HOOKED.load(Ordering::Relaxed) {
        return None;
    }
    // This very executable, even if its file was replaced or removed since.
    let proc_exe = PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return Some(proc_exe);
    }
    std::env::current_exe().ok()
}

/// The arguments that start a guard for `script`.
pub(crate) fn args(grace: Duration, script: &str) -> [OsString; 4] {
    [
        GUARD_ARG.into(),
        grace.as_millis().to_string().into(),
        std::process::id().to_string().into(),
        script.into(),
    ]
}

/// How the script ended.
#[derive(Clone, Copy)]
enum End {
    Exited(i32),
    Signaled(Signal),
}

/// The guard itself; returns the exit code (or dies by the script's signal).
fn guard(args: Vec<OsString>) -> i32 {
    let fail = |why: &str| {
        eprintln!("fairsched task guard: {why}");
        WORKER_ERROR_EXIT
    };
    let [grace, parent, script]: [OsString; 3] = match args.try_into() {
        Ok(a) => a,
        Err(_) => return fail("expected GRACE_MS WORKER_PID SCRIPT"),
    };
    let Some(grace) = grace
        .to_str()
        .and_then(|g| g.parse().ok())
        .map(Duration::from_millis)
    else {
        return fail("GRACE_MS: not a number");
    };
    let Some(parent) = parent.to_str().and_then(|p| p.parse().ok()).map(Pid::from_raw) else {
        return fail("WORKER_PID: not a number");
    };
    // Taken with sigwait, not handled: blocked before anything can send
    // them (and unblocked again in the script's shell).
    let mut watched = SigSet::empty();
    for s in [Signal::SIGHUP, Signal::SIGTERM, Signal::SIGINT, Signal::SIGCHLD] {
        watched.add(s);
    }
    if let Err(e) = watched.thread_block() {
        return fail(&format!("cannot block signals: {e}"));
    }
    #[cfg(target_os = "linux")]
    {
        use nix::sys::prctl;
        if let Err(e) = prctl::set_pdeathsig(Signal::SIGHUP) {
            return fail(&format!("PR_SET_PDEATHSIG: {e}"));
        }
        let _ = prctl::set_child_subreaper(true);
    }
    if getppid() != parent {
        return fail("the worker is gone");
    }
    let group = getpgrp();
    let mut command = Command::new("sh");
    command.arg("-c").arg(&script);
    // SAFETY: pthread_sigmask is async-signal-safe. (std::process leaves
    // the mask as it is.)
    unsafe {
        command.pre_exec(move || watched.thread_unblock().map_err(std::io::Error::from));
    }
    let sh = match command.spawn() {
        Ok(c) => Pid::from_raw(c.id() as i32),
        Err(e) => return fail(&format!("cannot start sh: {e}")),
    };

    let mut end: Option<End> = None;
    // Set when the run is being killed: when to SIGKILL the group.
    let mut deadline: Option<Instant> = None;
    loop {
        // Reap the script and any orphan of it.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == sh => end = Some(End::Exited(code)),
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == sh => end = Some(End::Signaled(sig)),
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => break,
            }
        }
        match (end, deadline) {
            (Some(e), None) => return pass(e),
            (Some(e), Some(_)) if !group_has_members(group, Some(getpid())) => return pass(e),
            (_, Some(d)) if Instant::now() >= d => {
                // Ourselves included: the worker reads a SIGKILL.
                let _ = killpg(group, Signal::SIGKILL);
            }
            _ => {}
        }
        match deadline {
            None => match watched.wait() {
                Ok(Signal::SIGCHLD) | Err(_) => {}
                Ok(Signal::SIGHUP) => {
                    // The worker is gone: nobody else will stop the run.
                    let _ = killpg(group, Signal::SIGTERM);
                    deadline = Some(Instant::now() + grace);
                }
                // The worker signalled the whole group.
                Ok(_) => deadline = Some(Instant::now() + grace),
            },
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                std::thread::sleep(left.min(Duration::from_millis(20)));
            }
        }
    }
}

/// Ends the guard the way the script ended.
fn pass(end: End) -> i32 {
    match end {
        End::Exited(code) => code,
        End::Signaled(sig) => {
            // No core dump of the guard: the script's signal, not its.
            #[cfg(target_os = "linux")]
            let _ = nix::sys::prctl::set_dumpable(false);
            // SAFETY: single-threaded, and no handler is installed: the
            // default action.
            let _ = unsafe { nix::sys::signal::signal(sig, SigHandler::SigDfl) };
            let _ = SigSet::from(sig).thread_unblock();
            let _ = raise(sig);
            128 + sig as i32
        }
    }
}
