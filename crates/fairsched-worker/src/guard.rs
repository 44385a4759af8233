//! The task guard: a run's processes die with the run, and with the
//! worker, SIGKILL included.
//!
//! A worker that dies without a chance to clean up (SIGKILL, the OOM
//! killer, a crash) cannot kill its runs; the broker requeues them after
//! the lease, so left running they would do their work twice. So the
//! worker does not start `sh FILE` itself: its guards' zygote
//! ([`crate::zygote`], its own executable or `fairsched-task-guard` in
//! guard mode, [`guard_hook`]) forks a guard for each run, which leads a
//! new process group and starts `sh FILE` in that same group. On Linux
//! the zygote dies with the worker's thread that started it and each
//! guard asks for SIGHUP when the zygote ends (`PR_SET_PDEATHSIG`), which
//! a dying worker cannot prevent; the guard becomes the reaper of the
//! script's orphans (`PR_SET_CHILD_SUBREAPER`): every process the script
//! starts stays its descendant, in its group or not (`setsid`), until the
//! guard reaps it.
//!
//! - The script ends: any descendant still running gets SIGTERM, and
//!   SIGKILL once the grace period has passed (a daemon left behind must
//!   not hold the slot's resources); then the guard ends the way the
//!   script did (its exit code, or the same signal), so the worker reads
//!   the script's status from it.
//! - SIGHUP (its worker died): SIGTERM to every descendant, then SIGKILL to
//!   every descendant left once the grace period has passed.
//! - SIGTERM or SIGINT (the worker kills the run: the signal went to the
//!   whole group): the same, SIGTERM going only to the descendants
//!   outside the group.
//!
//! The guard ends only once no descendant is left. When the worker gave
//! the run a cgroup ([`crate::cgroup`]), the script's shell enters it
//! before it execs, the descendants are the processes in it, and the last
//! SIGKILL is its `cgroup.kill`; otherwise they are found in `/proc`
//! (parent links leading to the guard). Only a process started outside
//! the script's process tree (by `at`, `systemd-run`, `ssh localhost`…)
//! escapes.
//!
//! The guard runs in the zygote's empty environment (the shell gets the
//! task's) and gets the script as a file, never as an argument: its
//! command line (`ps`) shows no command.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{SigEvent, SigevNotify};
use nix::sys::signal::{SigHandler, SigSet, Signal, kill, raise};
use nix::sys::timer::{Expiration, Timer, TimerSetTimeFlags};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use crate::cgroup::{self, Placement};
use crate::executor::{WORKER_ERROR_EXIT, limit_memory};

/// The first argument that makes [`guard_hook`] run the guards' zygote
/// ([`crate::zygote`]).
pub(crate) const GUARD_ARG: &str = "__fairsched-task-guard";

/// Set once [`guard_hook`] ran in this process and returned: this
/// executable can be a guard.
static HOOKED: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main` of a binary that calls [`run`](crate::run).
///
/// Started as `PROGRAM __fairsched-task-guard WORKER_PID` (by the worker,
/// never by hand), the process is the worker's guards' zygote, which forks
/// the guard of each run ([`crate::zygote`]); this function does not
/// return then. Otherwise it returns at once and the worker of this
/// process runs each script under a guard. A worker in a binary that never
/// calls it runs `sh FILE` directly, and its runs outlive it when it is
/// SIGKILLed.
pub fn guard_hook() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(OsStr::new(GUARD_ARG)) {
        HOOKED.store(true, Ordering::Relaxed);
        return;
    }
    let code = crate::zygote::serve(args.collect());
    std::process::exit(code)
}

/// The name of the guard's own small executable, looked for beside the
/// worker's ([`program`]).
pub const GUARD_PROGRAM: &str = "fairsched-task-guard";

/// The program to start as the guards' zygote: [`GUARD_PROGRAM`] beside
/// this executable (a small program), else this executable if it can be
/// one.
pub(crate) fn program() -> Option<PathBuf> {
    if !HOOKED.load(Ordering::Relaxed) {
        return None;
    }
    if let Some(small) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(GUARD_PROGRAM)))
        .filter(|p| is_executable(p))
    {
        return Some(small);
    }
    // This very executable, even if its file was replaced or removed since.
    let proc_exe = PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return Some(proc_exe);
    }
    std::env::current_exe().ok()
}

/// What a run's guard is told: how to run its script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// Between SIGTERM and SIGKILL of what the script left.
    pub grace: Duration,
    /// The worker's lease file: the run is stopped when the lease lapses.
    pub lease_file: Option<PathBuf>,
    /// The shell's address-space limit (`RLIMIT_AS`).
    pub memory_bytes: Option<u64>,
    /// The task's account (UID, GID), the guard being root.
    pub run_as: Option<(u32, u32)>,
    /// The run's cgroups, which the shell enters before it execs.
    pub cgroup: Option<Placement>,
    /// The script's file, in `dir`.
    pub file: OsString,
    /// The run's directory, the shell's working directory.
    pub dir: PathBuf,
    /// The shell's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The open files of each process of the run (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// The processes of the task's uid (`RLIMIT_NPROC`), when no
    /// `pids.max` holds the run's.
    pub processes: Option<u64>,
    /// The size of each file a process of the run writes
    /// (`RLIMIT_FSIZE`: the run's disk limit).
    pub file_bytes: Option<u64>,
    /// The run's `tmp`, mounted on `/tmp` in a mount namespace of the
    /// run's own (the guard is root).
    pub private_tmp: Option<PathBuf>,
}

/// What every process of a run starts with, in the process about to start
/// its shell (the guard, or the shell itself before it execs): the task's
/// umask, and its open-file and process limits. Async-signal-safe.
pub(crate) fn task_limits(
    open_files: Option<u64>,
    processes: Option<u64>,
    file_bytes: Option<u64>,
) -> std::io::Result<()> {
    use nix::sys::resource::{Resource, setrlimit};
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
        crate::executor::TASK_UMASK,
    ));
    if let Some(n) = open_files {
        setrlimit(Resource::RLIMIT_NOFILE, n, n).map_err(std::io::Error::from)?;
    }
    if let Some(n) = processes {
        setrlimit(Resource::RLIMIT_NPROC, n, n).map_err(std::io::Error::from)?;
    }
    if let Some(n) = file_bytes {
        setrlimit(Resource::RLIMIT_FSIZE, n, n).map_err(std::io::Error::from)?;
    }
    Ok(())
}

/// Puts this process (single-threaded, root, in the run's directory
/// already: `/tmp` may hold it) in a mount namespace of its own whose
/// `/tmp` is `tmp` (a C path). Async-signal-safe.
pub(crate) fn private_tmp(tmp: &std::ffi::CStr) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on NUL-terminated paths.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0
            || libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            || libc::mount(
                tmp.as_ptr(),
                c"/tmp".as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether this worker can give its runs a private `/tmp`: it is root and
/// a child of its can make a mount namespace and bind a directory on
/// `/tmp` (not in every container).
pub fn private_tmp_works(workdir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if !nix::unistd::geteuid().is_root() {
        return false;
    }
    let Ok(tmp) = std::ffi::CString::new(workdir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut c = Command::new("/bin/sh");
    c.args(["-c", "exit 0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: private_tmp is async-signal-safe.
    unsafe {
        c.pre_exec(move || private_tmp(&tmp));
    }
    c.status().is_ok_and(|s| s.success())
}

/// Drops to `uid`:`gid` with no supplementary group, failing closed: in a
/// child about to exec a task's shell, as root (`--run-as-user`). The
/// guard itself stays root, out of the task's reach (it could kill or stop
/// a guard of its own uid, and with it the kill of its subtree).
pub(crate) fn drop_to(uid: u32, gid: u32) -> std::io::Result<()> {
    use nix::unistd::{Gid, Uid, setgid, setgroups, setuid};
    setgroups(&[]).map_err(std::io::Error::from)?;
    setgid(Gid::from_raw(gid)).map_err(std::io::Error::from)?;
    setuid(Uid::from_raw(uid)).map_err(std::io::Error::from)?;
    if nix::unistd::getuid().is_root() || nix::unistd::geteuid().is_root() {
        return Err(std::io::Error::other("still root after setuid"));
    }
    Ok(())
}

/// How the script ended.
#[derive(Clone, Copy)]
enum End {
    Exited(i32),
    Signaled(Signal),
}

/// The guard itself, in a process the zygote `parent` forked, with the
/// worker's lease file (`spec.lease_file`, opened), the `cgroup.procs`
/// files of the run's cgroups (`spec.cgroup`, opened: `enter`) and of the
/// zygote's own (`homes`, with their hierarchies' mount points); returns
/// the exit code (or dies by the script's signal).
pub(crate) fn guard(
    spec: Spec,
    parent: Pid,
    lease: Option<&std::fs::File>,
    enter: Vec<std::os::fd::OwnedFd>,
    homes: &[(PathBuf, std::fs::File)],
) -> i32 {
    let fail = |why: &str| {
        eprintln!("fairsched task guard: {why}");
        WORKER_ERROR_EXIT
    };
    let Spec {
        grace,
        lease_file: _,
        memory_bytes: memory,
        run_as,
        cgroup: place,
        file,
        dir,
        env,
        open_files,
        processes,
        file_bytes,
        private_tmp: tmp,
    } = spec;
    // Taken with sigwait, not handled: blocked before anything can send
    // them (and unblocked again in the script's shell).
    let mut watched = SigSet::empty();
    for s in [
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGCHLD,
        Signal::SIGALRM,
    ] {
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
        if let Err(e) = prctl::set_child_subreaper(true) {
            return fail(&format!("PR_SET_CHILD_SUBREAPER: {e}"));
        }
    }
    if getppid() != parent {
        return fail("the worker's guards are gone");
    }
    // The worker's lease (the zygote opened its file), read at each tick
    // (SIGALRM every LEASE_TICK).
    let _ticks = match lease {
        None => None,
        Some(_) => {
            let tick = nix::sys::time::TimeSpec::from_duration(LEASE_TICK);
            let mut timer = match Timer::new(
                ClockId::CLOCK_MONOTONIC,
                SigEvent::new(SigevNotify::SigevSignal {
                    signal: Signal::SIGALRM,
                    si_value: 0,
                }),
            ) {
                Ok(t) => t,
                Err(e) => return fail(&format!("cannot create a timer: {e}")),
            };
            if let Err(e) = timer.set(Expiration::Interval(tick), TimerSetTimeFlags::empty()) {
                return fail(&format!("cannot set a timer: {e}"));
            }
            Some(timer)
        }
    };
    let me = getpid();
    let group = getpgrp();
    if place.is_some() && enter.is_empty() {
        return fail("the run's cgroup.procs files are missing");
    }
    // Where this guard goes back to after it started the shell in the
    // run's cgroup: its own cgroup of the same hierarchy. `None`: the
    // shell must enter the run's cgroups itself.
    let home = match &place {
        None => Some(None),
        Some(p) if p.v1_memory.is_none() && enter.len() == 1 => homes
            .iter()
            .find(|(mount, _)| p.dir.starts_with(mount))
            .map(|(_, procs)| Some(procs)),
        Some(_) => None,
    };
    // Inherited by the shell: the task's umask and limits, its /tmp.
    if let Err(e) = task_limits(open_files, processes, file_bytes) {
        return fail(&format!("cannot set the run's limits: {e}"));
    }
    if let Some(tmp) = &tmp {
        use std::os::unix::ffi::OsStrExt;
        if let Err(e) = nix::unistd::chdir(&dir) {
            return fail(&format!("cannot enter {}: {e}", dir.display()));
        }
        let Ok(c) = std::ffi::CString::new(tmp.as_os_str().as_bytes()) else {
            return fail("a NUL byte in the run's directory");
        };
        if let Err(e) = private_tmp(&c) {
            return fail(&format!("cannot give the run a private /tmp: {e}"));
        }
    }
    let sh: Result<Pid, String> = match home {
        Some(home) if memory.is_none() && run_as.is_none() => {
            // Nothing to do between fork and exec: the shell is started
            // with posix_spawn (a vfork, no copy of this process), with
            // no signal blocked. It is born in the run's cgroup, which
            // this guard enters for that moment only.
            if tmp.is_none()
                && let Err(e) = nix::unistd::chdir(&dir)
            {
                return fail(&format!("cannot enter {}: {e}", dir.display()));
            }
            if let Err(e) = cgroup::enter(&enter) {
                return fail(&format!("cannot enter the run's cgroup: {e}"));
            }
            let spawned = spawn_sh(&file, &env, &watched);
            if let Some(home) = home
                && let Err(e) = nix::unistd::write(home, b"0")
            {
                if let Ok(pid) = spawned {
                    let _ = kill(pid, Signal::SIGKILL);
                    let _ = waitpid(pid, None);
                }
                return fail(&format!("cannot leave the run's cgroup: {e}"));
            }
            spawned
        }
        _ => {
            let mut command = Command::new("/bin/sh");
            command.arg(&file).env_clear().envs(env);
            // Not through /tmp once it is the run's own: entered before.
            if tmp.is_none() {
                command.current_dir(&dir);
            }
            // The shell enters the run's cgroups and takes its limits
            // before it execs (as root, before it drops to the task's
            // account).
            // SAFETY: write, pthread_sigmask, setrlimit, setgroups, setgid
            // and setuid are async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    cgroup::enter(&enter)?;
                    if let Some(bytes) = memory {
                        limit_memory(bytes)?;
                    }
                    if let Some((uid, gid)) = run_as {
                        drop_to(uid, gid)?;
                    }
                    watched.thread_unblock().map_err(std::io::Error::from)
                });
            }
            // A fork bomb of the same uid may hold every process it may
            // have for a moment (RLIMIT_NPROC, until the worker kills it):
            // tried again for a while, not failed at once.
            let mut tries = 0;
            loop {
                match command.spawn() {
                    Ok(c) => break Ok(Pid::from_raw(c.id() as i32)),
                    Err(e) if e.raw_os_error() == Some(nix::libc::EAGAIN) && tries < SPAWN_TRIES => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(e) => break Err(format!("cannot start sh: {e}")),
                }
            }
        }
    };
    let sh = match sh {
        Ok(pid) => pid,
        Err(why) => return fail(&why),
    };

    let mut end: Option<End> = None;
    // Set when the run is being stopped: when to SIGKILL what is left.
    let mut deadline: Option<Instant> = None;
    loop {
        // Reap the script and any orphan of it.
        let mut no_children = false;
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == sh => end = Some(End::Exited(code)),
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == sh => end = Some(End::Signaled(sig)),
                Ok(WaitStatus::StillAlive) => break,
                Err(Errno::ECHILD) => {
                    no_children = true;
                    break;
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => break,
            }
        }
        if let Some(e) = end {
            // The guard is their subreaper: with the script gone, a
            // descendant still alive would have made one of them its
            // child. None: nothing to look for in /proc.
            if no_children {
                return pass(e);
            }
            let left = members(place.as_ref(), me);
            if left.is_empty() {
                return pass(e);
            }
            if deadline.is_none() {
                // The script ended, leaving processes behind: stop them.
                signal_all(&left, Signal::SIGTERM, None);
                deadline = Some(Instant::now() + grace);
            }
        }
        if let Some(d) = deadline
            && Instant::now() >= d
        {
            // Again at each turn: a process may have forked meanwhile.
            kill_members(place.as_ref(), me);
        }
        match deadline {
            None => match watched.wait() {
                Ok(Signal::SIGCHLD) | Err(_) => {}
                Ok(Signal::SIGALRM) => {
                    if let Some((_, kill_at)) = lease.and_then(lease_lapsed) {
                        // The worker has not renewed its lease in time (it
                        // is stopped, or cut off): the broker may give the
                        // run to another worker.
                        signal_all(&members(place.as_ref(), me), Signal::SIGTERM, None);
                        let until_kill = Duration::from_nanos(kill_at.saturating_sub(monotonic_ns()));
                        deadline = Some(Instant::now() + grace.min(until_kill));
                    }
                }
                Ok(Signal::SIGHUP) => {
                    // The worker is gone: nobody else will stop the run.
                    signal_all(&members(place.as_ref(), me), Signal::SIGTERM, None);
                    deadline = Some(Instant::now() + grace);
                }
                // The worker signalled the whole group; the processes
                // that left it have not heard.
                Ok(_) => {
                    signal_all(&members(place.as_ref(), me), Signal::SIGTERM, Some(group));
                    deadline = Some(Instant::now() + grace);
                }
            },
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                let pause = Duration::from_millis(20);
                std::thread::sleep(if left.is_zero() { pause } else { left.min(pause) });
            }
        }
    }
}

/// `/bin/sh FILE` (in this process's directory) in environment `env`, by
/// posix_spawn: no signal blocked (`watched` are, in the guard), each of
/// `watched` back to its default action.
fn spawn_sh(file: &OsStr, env: &[(OsString, OsString)], watched: &SigSet) -> Result<Pid, String> {
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c =
        |b: &[u8]| CString::new(b).map_err(|_| "a NUL byte in the script's name or environment".to_string());
    let args = [c(b"/bin/sh")?, c(file.as_bytes())?];
    let envp = env
        .iter()
        .map(|(k, v)| c(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<Result<Vec<_>, _>>()?;
    let why = |e: nix::Error| format!("cannot start sh: {e}");
    let mut attr = PosixSpawnAttr::init().map_err(why)?;
    attr.set_sigmask(&SigSet::empty()).map_err(why)?;
    // The zygote set every signal to its default action and the guard
    // changes none: `watched` alone is reset (the child makes one system
    // call per signal reset).
    attr.set_sigdefault(watched).map_err(why)?;
    attr.set_flags(PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF)
        .map_err(why)?;
    let actions = PosixSpawnFileActions::init().map_err(why)?;
    posix_spawn(c"/bin/sh", &actions, &attr, &args, &envp).map_err(why)
}

/// How many times a guard tries again to start a shell that the system
/// refused for lack of processes (50 ms apart).
const SPAWN_TRIES: u32 = 100;

/// How often a guard reads its worker's lease file.
const LEASE_TICK: Duration = Duration::from_millis(50);

/// CLOCK_MONOTONIC now, in ns: the clock of the lease file, the same in
/// every process (it goes on while a process is stopped).
pub(crate) fn monotonic_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec()).unwrap_or(0)
    })
}

/// `Some((TERM_NS, KILL_NS))` if the lease in `file` has lapsed (0: no
/// lease yet; an unreadable file: not lapsed).
fn lease_lapsed(file: &std::fs::File) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 64];
    let n = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    let (Some(Some(term)), Some(Some(kill))) = (f.next(), f.next()) else {
        return None;
    };
    (term != 0 && monotonic_ns() >= term).then_some((term, kill))
}

/// A running (not zombie) descendant of the guard: its pid and process group.
pub(crate) struct Descendant {
    pid: Pid,
    pgrp: Pid,
}

/// Sends `sig` to each of `procs`, except those in group `except`.
fn signal_all(procs: &[Descendant], sig: Signal, except: Option<Pid>) {
    for p in procs {
        if Some(p.pgrp) != except {
            let _ = kill(p.pid, sig);
        }
    }
}

/// Every running process of the run: those in its cgroup, when it has one
/// (and it can be read), else the guard's descendants.
fn members(place: Option<&Placement>, me: Pid) -> Vec<Descendant> {
    match place.and_then(Placement::members) {
        Some(pids) => pids
            .into_iter()
            .map(|pid| Descendant {
                pid,
                pgrp: group_of(pid),
            })
            .collect(),
        None => descendants(me),
    }
}

/// SIGKILL to every process of the run: through its cgroup when it has
/// one, else to each of the guard's descendants.
fn kill_members(place: Option<&Placement>, me: Pid) {
    if place.is_none_or(|p| p.kill_all().is_err()) {
        signal_all(&descendants(me), Signal::SIGKILL, None);
    }
}

/// The process group of `pid` (0 if it cannot be read).
fn group_of(pid: Pid) -> Pid {
    let pgrp = proc_stat(pid.as_raw()).and_then(|f| f.split_whitespace().nth(2)?.parse().ok());
    Pid::from_raw(pgrp.unwrap_or(0))
}

/// The fields of `/proc/PID/stat` after the process's name, `STATE PPID
/// PGRP …` (the name, in parentheses, may hold spaces and parentheses);
/// `None` if the process is gone.
pub(crate) fn proc_stat(pid: i32) -> Option<String> {
    let mut stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let end = stat.rfind(')')?;
    Some(stat.split_off(end + 1))
}

/// Every running process whose chain of parents leads to `root` (zombies
/// left out: they run nothing, and the guard reaps those that are its own).
pub(crate) fn descendants(root: Pid) -> Vec<Descendant> {
    // pid → (parent, group, zombie)
    let mut procs: HashMap<i32, (i32, i32, bool)> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Some(stat) = proc_stat(pid) else {
            continue;
        };
        let mut f = stat.split_whitespace();
        let state = f.next();
        let (Some(ppid), Some(pgrp)) = (
            f.next().and_then(|p| p.parse().ok()),
            f.next().and_then(|p| p.parse().ok()),
        ) else {
            continue;
        };
        procs.insert(pid, (ppid, pgrp, state == Some("Z")));
    }
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, &(ppid, _, _)) in &procs {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![root.as_raw()];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            todo.push(c);
            let (_, pgrp, zombie) = procs[&c];
            if !zombie {
                out.push(Descendant {
                    pid: Pid::from_raw(c),
                    pgrp: Pid::from_raw(pgrp),
                });
            }
        }
    }
    out
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

/// A regular file with an execute bit.
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
