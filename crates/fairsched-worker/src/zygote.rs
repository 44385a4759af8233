//! The guards' zygote: one small process per worker that forks the task
//! guard of each run ([`crate::guard`]), so that a run costs one program
//! start (its shell's), not two.
//!
//! On the VMs fairsched is benchmarked on, starting any program costs
//! about 0.6 ms of CPU, most of it in the dynamic loader asking the CPU
//! (through the hypervisor) about its caches; a fork of a small process
//! costs a fraction of that. With a guard started per run, the guards
//! took 40% of the machine at 600 tasks/s (bench/README.md, "Broker
//! throughput").
//!
//! The worker starts the zygote ([`GUARD_PROGRAM`](crate::guard::GUARD_PROGRAM)
//! or its own executable, with [`GUARD_ARG`] and its PID) on first use,
//! with an empty environment, in a process group of its own, from a
//! thread that lives as long as it (the zygote asks for SIGKILL when that
//! thread ends, `PR_SET_PDEATHSIG`; each guard asks for SIGHUP when the
//! zygote ends, and kills its run then). Its standard input is one end of
//! a `SOCK_SEQPACKET` pair, one message per datagram:
//!
//! - worker → zygote: `S` start a run (its [`Spec`]; the run's stdout and
//!   stderr files as `SCM_RIGHTS`); `K` signal a run's process group;
//! - zygote → worker: `P` started (the guard's PID, which leads the run's
//!   process group), `F` not started (why), `E` ended (exit code or signal).
//!
//! A message is a kind byte, the run's id (u64, little-endian), then
//! fields, each a u32 length (little-endian) and its bytes. The zygote
//! signals only the groups of guards it has not reaped: their numbers
//! cannot have been reused. It ends when the worker's end of the socket
//! closes, and its guards then kill their runs. A zygote that died is
//! started again for the next run; the runs it had end with
//! [`WORKER_ERROR_EXIT`].

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg, sendmsg,
    socketpair,
};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getpid, getppid, setpgid};

use crate::cgroup::Placement;
use crate::executor::{KillHandle, Outcome, WORKER_ERROR_EXIT};
use crate::guard::{self, GUARD_ARG, Spec};

/// The largest message either side sends (a run's environment included).
const MAX_MESSAGE: usize = 64 * 1024;

/// The most descriptors a start message carries: stdout, stderr and the
/// `cgroup.procs` of (at most) two cgroups.
const MAX_FDS: usize = 4;

// ---------------------------------------------------------------------------
// Messages

/// A message being built: kind, id, fields.
struct Message(Vec<u8>);

impl Message {
    fn new(kind: u8, id: u64) -> Message {
        let mut m = Vec::with_capacity(256);
        m.push(kind);
        m.extend_from_slice(&id.to_le_bytes());
        Message(m)
    }

    fn field(mut self, bytes: &[u8]) -> Message {
        // Fields are far below 4 GiB: the whole message is at most MAX_MESSAGE.
        self.0.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }

    fn text(self, s: impl ToString) -> Message {
        self.field(s.to_string().as_bytes())
    }
}

/// A message received: its kind, its id and its fields, read in order.
struct Fields<'a> {
    kind: u8,
    id: u64,
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn parse(buf: &'a [u8]) -> Option<Fields<'a>> {
        let (&kind, rest) = buf.split_first()?;
        let (id, rest) = rest.split_first_chunk::<8>()?;
        Some(Fields {
            kind,
            id: u64::from_le_bytes(*id),
            rest,
        })
    }

    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.rest.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
        if rest.len() < len {
            return None;
        }
        let (field, rest) = rest.split_at(len);
        self.rest = rest;
        Some(field)
    }

    fn number<T: std::str::FromStr>(&mut self) -> Option<T> {
        std::str::from_utf8(self.next()?).ok()?.parse().ok()
    }

    fn at_end(&self) -> bool {
        self.rest.is_empty()
    }
}

/// An optional path as a field: empty for none (no path is empty).
fn opt_path(p: Option<&Path>) -> &[u8] {
    p.map_or(&[][..], |p| p.as_os_str().as_bytes())
}

fn path_or_none(b: &[u8]) -> Option<PathBuf> {
    (!b.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(b)))
}

/// The `S` message of a run.
fn encode_start(id: u64, spec: &Spec) -> Message {
    let mut m = Message::new(b'S', id)
        .text(spec.grace.as_millis())
        .field(opt_path(spec.lease_file.as_deref()))
        .field(
            spec.memory_bytes
                .map(|b| b.to_string())
                .unwrap_or_default()
                .as_bytes(),
        )
        .field(
            spec.run_as
                .map(|(u, g)| format!("{u}:{g}"))
                .unwrap_or_default()
                .as_bytes(),
        )
        .field(opt_path(spec.cgroup.as_ref().map(|c| c.dir.as_path())))
        .field(opt_path(
            spec.cgroup.as_ref().and_then(|c| c.v1_memory.as_deref()),
        ))
        .field(spec.file.as_bytes())
        .field(spec.dir.as_os_str().as_bytes())
        .field(opt_number(spec.open_files).as_bytes())
        .field(opt_number(spec.processes).as_bytes())
        .field(opt_number(spec.file_bytes).as_bytes())
        .field(opt_path(spec.private_tmp.as_deref()));
    for (k, v) in &spec.env {
        m = m.field(k.as_bytes()).field(v.as_bytes());
    }
    m
}

/// A run's [`Spec`] from the fields of its `S` message.
fn decode_start(f: &mut Fields) -> Option<Spec> {
    let grace = Duration::from_millis(f.number()?);
    let lease_file = path_or_none(f.next()?);
    let memory_bytes = match f.next()? {
        [] => None,
        b => Some(std::str::from_utf8(b).ok()?.parse().ok()?),
    };
    let run_as = match f.next()? {
        [] => None,
        b => {
            let (u, g) = std::str::from_utf8(b).ok()?.split_once(':')?;
            Some((u.parse().ok()?, g.parse().ok()?))
        }
    };
    let cgroup = path_or_none(f.next()?).map(|dir| Placement { dir, v1_memory: None });
    let v1_memory = path_or_none(f.next()?);
    let cgroup = cgroup.map(|c| Placement { v1_memory, ..c });
    let file = OsString::from_vec(f.next()?.to_vec());
    let dir = PathBuf::from(OsString::from_vec(f.next()?.to_vec()));
    let open_files = number_or_none(f.next()?)?;
    let processes = number_or_none(f.next()?)?;
    let file_bytes = number_or_none(f.next()?)?;
    let private_tmp = path_or_none(f.next()?);
    let mut env = Vec::new();
    while !f.at_end() {
        let k = OsString::from_vec(f.next()?.to_vec());
        let v = OsString::from_vec(f.next()?.to_vec());
        env.push((k, v));
    }
    Some(Spec {
        grace,
        lease_file,
        memory_bytes,
        run_as,
        cgroup,
        file,
        dir,
        env,
        open_files,
        processes,
        file_bytes,
        private_tmp,
    })
}

/// An optional number as a field: empty for none.
fn opt_number(n: Option<u64>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

/// `Some(None)` for an empty field, `None` for one that is no number.
fn number_or_none(b: &[u8]) -> Option<Option<u64>> {
    match b {
        [] => Some(None),
        b => Some(Some(std::str::from_utf8(b).ok()?.parse().ok()?)),
    }
}

/// Sends one message (and `fds`) on `sock`.
fn send(sock: RawFd, m: &Message, fds: &[RawFd]) -> io::Result<()> {
    let cmsgs = [ControlMessage::ScmRights(fds)];
    let cmsgs = if fds.is_empty() { &[][..] } else { &cmsgs[..] };
    loop {
        match sendmsg::<()>(sock, &[IoSlice::new(&m.0)], cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}

// ---------------------------------------------------------------------------
// The worker's side

/// The task guards of a worker's runs, started through its zygote (see
/// the module's documentation); cheap to clone.
#[derive(Clone)]
pub struct Guards(Arc<GuardsInner>);

struct GuardsInner {
    program: PathBuf,
    current: Mutex<Option<Arc<Zygote>>>,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Guards").field(&self.0.program).finish()
    }
}

impl Guards {
    /// Guards from `program`, an executable whose `main` calls
    /// [`guard_hook`](crate::guard_hook) first (`fairsched-task-guard`,
    /// or `fairsched`). Nothing starts before the first run.
    pub fn new(program: impl Into<PathBuf>) -> Guards {
        Guards(Arc::new(GuardsInner {
            program: program.into(),
            current: Mutex::new(None),
        }))
    }

    /// Starts `sh spec.file` under a guard, with `stdio` (its stdout and
    /// stderr), in the cgroups whose `cgroup.procs` files `enter` are;
    /// `bell` is woken when the guard ends.
    pub(crate) fn start(
        &self,
        spec: &Spec,
        stdio: &[&File; 2],
        enter: &[OwnedFd],
        bell: &KillHandle,
    ) -> io::Result<GuardedRun> {
        let z = self.zygote()?;
        match Arc::clone(&z).start(spec, stdio, enter, bell) {
            // It died before it started this run: once more, on a new one.
            Err(_) if z.lock().dead => self.zygote()?.start(spec, stdio, enter, bell),
            r => r,
        }
    }

    /// The zygote, started if there is none or it died.
    fn zygote(&self) -> io::Result<Arc<Zygote>> {
        let mut current = self.0.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(z) = current.as_ref().filter(|z| !z.lock().dead) {
            return Ok(Arc::clone(z));
        }
        let z = Zygote::spawn(&self.0.program)?;
        *current = Some(Arc::clone(&z));
        Ok(z)
    }
}

/// The worker's end of one zygote.
struct Zygote {
    sock: OwnedFd,
    state: Mutex<ZygoteState>,
    changed: Condvar,
}

#[derive(Default)]
struct ZygoteState {
    next_id: u64,
    runs: HashMap<u64, RunState>,
    /// Its socket closed: every run not ended has failed.
    dead: bool,
}

/// What the worker knows of one run started through the zygote.
struct RunState {
    /// The guard's PID, once started.
    pid: Option<Pid>,
    /// Not started, or lost with the zygote: why.
    failed: Option<String>,
    end: Option<Outcome>,
    /// Woken at the end (or the loss) of the run.
    bell: KillHandle,
}

impl Zygote {
    fn lock(&self) -> std::sync::MutexGuard<'_, ZygoteState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn(program: &Path) -> io::Result<Arc<Zygote>> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        let program = program.to_path_buf();
        let (tx, rx) = mpsc::channel();
        // The zygote dies with the thread that started it: this one, which
        // reads its messages as long as it lives.
        std::thread::Builder::new().name("guards".into()).spawn(move || {
            let child = Command::new(&program)
                .arg(GUARD_ARG)
                .arg(std::process::id().to_string())
                .env_clear()
                .current_dir("/")
                .stdin(Stdio::from(theirs))
                .stdout(Stdio::null())
                .process_group(0)
                .spawn();
            let mut child = match child {
                Ok(c) => c,
                Err(e) => {
                    let why = format!("cannot start the task guards ({}): {e}", program.display());
                    let _ = tx.send(Err(io::Error::new(e.kind(), why)));
                    return;
                }
            };
            let z = Arc::new(Zygote {
                sock: ours,
                state: Mutex::new(ZygoteState::default()),
                changed: Condvar::new(),
            });
            let _ = tx.send(Ok(Arc::clone(&z)));
            tracing::debug!(pid = child.id(), "task guards' zygote started");
            z.read_replies();
            // Gone, or its socket unreadable: then it is made to end (its
            // guards stop their runs) rather than left alive with runs
            // this worker has given up.
            let _ = nix::sys::socket::shutdown(z.sock.as_raw_fd(), nix::sys::socket::Shutdown::Both);
            let _ = child.kill();
            let status = child.wait();
            tracing::warn!(
                ?status,
                "the task guards' zygote ended: started again for the next run"
            );
        })?;
        rx.recv()
            .map_err(|_| io::Error::other("the task guards' thread ended"))?
    }

    /// Reads the zygote's replies until its socket closes.
    fn read_replies(&self) {
        let mut buf = vec![0u8; MAX_MESSAGE];
        loop {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let n = match recvmsg::<()>(self.sock.as_raw_fd(), &mut iov, None, MsgFlags::empty()) {
                Ok(r) => r.bytes,
                Err(Errno::EINTR) => continue,
                Err(_) => 0,
            };
            if n == 0 {
                break;
            }
            let Some(mut f) = Fields::parse(&buf[..n]) else {
                continue;
            };
            let mut st = self.lock();
            let Some(run) = st.runs.get_mut(&f.id) else {
                continue;
            };
            match f.kind {
                b'P' => match f.number::<i32>().filter(|&p| p > 0) {
                    Some(pid) => run.pid = Some(Pid::from_raw(pid)),
                    None => run.failed = Some("the task guards' zygote sent no PID".into()),
                },
                b'F' => {
                    run.failed = Some(
                        f.next()
                            .map_or_else(|| "?".into(), |b| String::from_utf8_lossy(b).into_owned()),
                    )
                }
                b'E' => {
                    let kind = f.next().unwrap_or_default().to_vec();
                    let value: i32 = f.number().unwrap_or(WORKER_ERROR_EXIT);
                    run.end = Some(match kind.as_slice() {
                        b"s" => Outcome::Signaled(value),
                        _ => Outcome::Exited(value),
                    });
                    run.bell.wake();
                }
                _ => {}
            }
            drop(st);
            self.changed.notify_all();
        }
        let mut st = self.lock();
        st.dead = true;
        for run in st.runs.values_mut() {
            if run.end.is_none() && run.failed.is_none() {
                run.failed = Some("the task guards' zygote ended".into());
                run.bell.wake();
            }
        }
        drop(st);
        self.changed.notify_all();
    }

    fn start(
        self: Arc<Self>,
        spec: &Spec,
        stdio: &[&File; 2],
        enter: &[OwnedFd],
        bell: &KillHandle,
    ) -> io::Result<GuardedRun> {
        let id = {
            let mut st = self.lock();
            if st.dead {
                return Err(io::Error::other("the task guards' zygote ended"));
            }
            st.next_id += 1;
            let id = st.next_id;
            st.runs.insert(
                id,
                RunState {
                    pid: None,
                    failed: None,
                    end: None,
                    bell: bell.clone(),
                },
            );
            id
        };
        // Removed from the map when dropped, whatever happens next.
        let mut run = GuardedRun {
            zygote: self,
            id,
            pid: Pid::from_raw(0),
        };
        let m = encode_start(id, spec);
        if m.0.len() > MAX_MESSAGE {
            return Err(io::Error::other(format!(
                "the run's environment and paths take {} bytes, more than {MAX_MESSAGE}",
                m.0.len()
            )));
        }
        let fds: Vec<RawFd> = stdio
            .iter()
            .map(|f| f.as_raw_fd())
            .chain(enter.iter().map(|f| f.as_raw_fd()))
            .collect();
        if fds.len() > MAX_FDS {
            return Err(io::Error::other("more than two cgroups to enter"));
        }
        send(run.zygote.sock.as_raw_fd(), &m, &fds)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot reach the task guards' zygote: {e}")))?;
        let st = run.zygote.lock();
        let st = run
            .zygote
            .changed
            .wait_while(st, |st| {
                let r = &st.runs[&id];
                r.pid.is_none() && r.failed.is_none() && r.end.is_none()
            })
            .unwrap_or_else(PoisonError::into_inner);
        let r = &st.runs[&id];
        if let Some(why) = &r.failed {
            return Err(io::Error::other(why.clone()));
        }
        run.pid = r.pid.unwrap_or(Pid::from_raw(0));
        drop(st);
        Ok(run)
    }
}

/// A run's guard, started through the zygote: it leads the run's process
/// group (`pid`).
pub(crate) struct GuardedRun {
    zygote: Arc<Zygote>,
    id: u64,
    pub pid: Pid,
}

impl GuardedRun {
    /// How the guard ended, if it has; an error if the zygote was lost.
    pub fn try_end(&self) -> io::Result<Option<Outcome>> {
        let st = self.zygote.lock();
        Self::end_of(&st.runs[&self.id])
    }

    fn end_of(r: &RunState) -> io::Result<Option<Outcome>> {
        match (&r.end, &r.failed) {
            (Some(end), _) => Ok(Some(*end)),
            (None, Some(why)) => Err(io::Error::other(why.clone())),
            (None, None) => Ok(None),
        }
    }

    /// Waits up to `timeout` (for ever: `None`) for the guard's end.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<Option<Outcome>> {
        let until = timeout.map(|t| Instant::now() + t);
        let mut st = self.zygote.lock();
        loop {
            if let Some(end) = Self::end_of(&st.runs[&self.id])? {
                return Ok(Some(end));
            }
            st = match until {
                None => self
                    .zygote
                    .changed
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(until) => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    self.zygote
                        .changed
                        .wait_timeout(st, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// Sends `sig` to the run's process group: through the zygote while
    /// the guard runs (it knows whether the group's number is still the
    /// guard's), directly once it has ended (its number stays reserved
    /// while the group has members).
    pub fn signal(&self, sig: Signal) {
        if matches!(self.try_end(), Ok(None)) {
            let m = Message::new(b'K', self.id).text(sig as i32);
            if send(self.zygote.sock.as_raw_fd(), &m, &[]).is_ok() {
                return;
            }
        }
        let _ = killpg(self.pid, sig);
    }
}

impl Drop for GuardedRun {
    fn drop(&mut self) {
        self.zygote.lock().runs.remove(&self.id);
    }
}

// ---------------------------------------------------------------------------
// The zygote's side

/// The zygote itself ([`crate::guard_hook`] runs it): `args` is the
/// worker's PID; the socket is standard input. Returns its exit code.
pub(crate) fn serve(args: Vec<OsString>) -> i32 {
    let fail = |why: &str| {
        eprintln!("fairsched task guard: {why}");
        WORKER_ERROR_EXIT
    };
    let Ok([worker]) = <[OsString; 1]>::try_from(args) else {
        return fail("expected WORKER_PID");
    };
    let Some(worker) = worker.to_str().and_then(|p| p.parse().ok()).map(Pid::from_raw) else {
        return fail("WORKER_PID: not a number");
    };
    // Nothing of the worker's but the socket and stdio: a descriptor it
    // inherited without close-on-exec would reach every task.
    // SAFETY: closes descriptors this process does not use.
    unsafe {
        nix::libc::close_range(3, u32::MAX, 0);
    }
    // Every signal back to its default action (Rust's runtime ignores
    // SIGPIPE; `nohup` would have SIGHUP ignored, and an ignored signal is
    // never waited for): the guards and the shells start from that.
    for sig in Signal::iterator() {
        if !matches!(sig, Signal::SIGKILL | Signal::SIGSTOP) {
            // SAFETY: no handler is installed, only the default action.
            let _ = unsafe { nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl) };
        }
    }
    // SIGCHLD is read from a signalfd. The zygote ends only when the
    // worker's end of its socket closes, or with the worker's thread
    // (PR_SET_PDEATHSIG): a SIGTERM to all of a worker's processes (a
    // systemd stop, Slurm's scancel) must not end it before the worker
    // has stopped its runs (they would fail instead of going back to the
    // queue).
    let mut sigchld = SigSet::empty();
    sigchld.add(Signal::SIGCHLD);
    let mut blocked = sigchld;
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        blocked.add(s);
    }
    if let Err(e) = blocked.thread_block() {
        return fail(&format!("cannot block signals: {e}"));
    }
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
        return fail(&format!("PR_SET_PDEATHSIG: {e}"));
    }
    if getppid() != worker {
        return fail("the worker is gone");
    }
    let children = match SignalFd::with_flags(&sigchld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) {
        Ok(fd) => fd,
        Err(e) => return fail(&format!("signalfd: {e}")),
    };
    let sock = io::stdin();
    let sock = sock.as_fd();
    let me = getpid();
    // Opened once, inherited by each guard: an open costs a guard more than
    // its fork.
    let null = match File::open("/dev/null") {
        Ok(f) => f,
        Err(e) => return fail(&format!("/dev/null: {e}")),
    };
    let mut lease: Option<(PathBuf, File)> = None;
    let homes = crate::cgroup::homes();
    // The guards not reaped yet: run id → PID, and back.
    let mut guards: HashMap<u64, Pid> = HashMap::new();
    let mut ids: HashMap<Pid, u64> = HashMap::new();
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let mut fds = [
            PollFd::new(sock, PollFlags::POLLIN),
            PollFd::new(children.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return fail(&format!("poll: {e}")),
        }
        let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let (from_worker, reaped) = (ready(&fds[0]), ready(&fds[1]));
        if reaped {
            while let Ok(Some(_)) = children.read_signal() {}
            loop {
                let (pid, kind, value) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(pid, code)) => (pid, "x", code),
                    Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, "s", sig as i32),
                    Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => break,
                    Ok(_) | Err(Errno::EINTR) => continue,
                    Err(_) => break,
                };
                if let Some(id) = ids.remove(&pid) {
                    guards.remove(&id);
                    let m = Message::new(b'E', id).text(kind).text(value);
                    if send(sock.as_raw_fd(), &m, &[]).is_err() {
                        return 0;
                    }
                }
            }
        }
        if !from_worker {
            continue;
        }
        let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let (n, truncated, received) = match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(r) => {
                let mut received: Vec<OwnedFd> = Vec::new();
                if let Ok(cmsgs) = r.cmsgs() {
                    for c in cmsgs {
                        if let ControlMessageOwned::ScmRights(fds) = c {
                            // SAFETY: the kernel just made these
                            // descriptors for this process; nothing
                            // else owns them.
                            received.extend(fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                        }
                    }
                }
                let truncated = r.flags.intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
                (r.bytes, truncated, received)
            }
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Err(e) => return fail(&format!("recvmsg: {e}")),
        };
        if n == 0 {
            // The worker is gone, or done: so are we (each guard then
            // stops its run).
            return 0;
        }
        let Some(mut f) = Fields::parse(&buf[..n]) else {
            continue;
        };
        match f.kind {
            b'K' => {
                let sig = f.number::<i32>().and_then(|s| Signal::try_from(s).ok());
                if let (Some(&pid), Some(sig)) = (guards.get(&f.id), sig) {
                    let _ = killpg(pid, sig);
                }
            }
            b'S' => {
                let id = f.id;
                let spec = decode_start(&mut f);
                let lease_error = match spec.as_ref().and_then(|s| s.lease_file.as_ref()) {
                    Some(path) if lease.as_ref().is_none_or(|(p, _)| p != path) => match File::open(path) {
                        Ok(file) => {
                            lease = Some((path.clone(), file));
                            None
                        }
                        Err(e) => Some(format!("cannot open {}: {e}", path.display())),
                    },
                    _ => None,
                };
                let mut received = received.into_iter();
                let stdio = (received.next(), received.next());
                let enter: Vec<OwnedFd> = received.collect();
                let reply = match (spec, stdio) {
                    _ if truncated => Message::new(b'F', id).text("the start message was cut short"),
                    (None, _) => Message::new(b'F', id).text("the start message is malformed"),
                    (_, (None, _) | (_, None)) => {
                        Message::new(b'F', id).text("the start message lacks stdout and stderr")
                    }
                    _ if lease_error.is_some() => {
                        Message::new(b'F', id).text(lease_error.unwrap_or_default())
                    }
                    (Some(spec), (Some(out), Some(err))) => {
                        // SAFETY: this process has one thread (the guard
                        // then runs as a whole program would).
                        match unsafe { fork() } {
                            Ok(ForkResult::Child) => {
                                drop(children);
                                let lease = spec
                                    .lease_file
                                    .is_some()
                                    .then(|| lease.as_ref().map(|(_, f)| f))
                                    .flatten();
                                // _exit: the zygote's at-exit work is not
                                // this process's (and costs a guard more
                                // than its fork).
                                let code = become_guard(spec, &null, [out, err], enter, me, lease, &homes);
                                // SAFETY: ends this process at once (no
                                // at-exit handler, no destructor).
                                unsafe { nix::libc::_exit(code) }
                            }
                            Ok(ForkResult::Parent { child }) => {
                                // Here too (as shells do): a kill sent
                                // right after `P` finds the guard's group
                                // whichever of the two runs first.
                                let _ = setpgid(child, child);
                                guards.insert(id, child);
                                ids.insert(child, id);
                                Message::new(b'P', id).text(child.as_raw())
                            }
                            Err(e) => Message::new(b'F', id).text(format!("fork: {e}")),
                        }
                    }
                };
                if send(sock.as_raw_fd(), &reply, &[]).is_err() {
                    return 0;
                }
            }
            _ => {}
        }
    }
}

/// In the forked child: the run's standard input, output and error, a
/// process group of its own, then the guard.
fn become_guard(
    spec: Spec,
    null: &File,
    [out, err]: [OwnedFd; 2],
    enter: Vec<OwnedFd>,
    zygote: Pid,
    lease: Option<&File>,
    homes: &[(PathBuf, File)],
) -> i32 {
    let fail = |why: String| {
        eprintln!("fairsched task guard: {why}");
        WORKER_ERROR_EXIT
    };
    // The zygote's blocked signals are not the guard's (it blocks its own).
    if let Err(e) = SigSet::empty().thread_set_mask() {
        return fail(format!("cannot unblock signals: {e}"));
    }
    // Standard input was the socket: this closes it here.
    let stdio = nix::unistd::dup2_stdin(null)
        .and_then(|()| nix::unistd::dup2_stdout(&out))
        .and_then(|()| nix::unistd::dup2_stderr(&err));
    if let Err(e) = stdio {
        return fail(format!("dup2: {e}"));
    }
    drop((out, err));
    if let Err(e) = setpgid(Pid::from_raw(0), Pid::from_raw(0)) {
        return fail(format!("setpgid: {e}"));
    }
    guard::guard(spec, zygote, lease, enter, homes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_message_round_trips() {
        let spec = Spec {
            grace: Duration::from_millis(1500),
            lease_file: Some("/w/.fairsched-lease-7".into()),
            memory_bytes: Some(1 << 30),
            run_as: Some((1001, 1002)),
            cgroup: Some(Placement {
                dir: "/sys/fs/cgroup/x/run-1".into(),
                v1_memory: Some("/sys/fs/cgroup/memory/x/run-1".into()),
            }),
            file: "./.fairsched-exec.sh".into(),
            dir: "/w/task-1-1".into(),
            env: vec![
                ("PATH".into(), "/bin".into()),
                ("LANG".into(), OsString::from_vec(b"\xff not utf-8".to_vec())),
                ("EMPTY".into(), "".into()),
            ],
            open_files: Some(1024),
            processes: Some(64),
            file_bytes: Some(1 << 30),
            private_tmp: Some("/w/task-1-1/tmp".into()),
        };
        let m = encode_start(42, &spec);
        let mut f = Fields::parse(&m.0).unwrap();
        assert_eq!((f.kind, f.id), (b'S', 42));
        assert_eq!(decode_start(&mut f), Some(spec.clone()));

        let bare = Spec {
            lease_file: None,
            memory_bytes: None,
            run_as: None,
            cgroup: None,
            env: Vec::new(),
            open_files: None,
            processes: None,
            file_bytes: None,
            private_tmp: None,
            ..spec
        };
        let m = encode_start(7, &bare);
        assert_eq!(decode_start(&mut Fields::parse(&m.0).unwrap()), Some(bare));
    }

    #[test]
    fn a_cut_message_is_refused() {
        let spec = Spec {
            grace: Duration::from_millis(10),
            lease_file: None,
            memory_bytes: None,
            run_as: None,
            cgroup: None,
            file: "f".into(),
            dir: "/d".into(),
            env: vec![("A".into(), "B".into())],
            open_files: None,
            processes: None,
            file_bytes: None,
            private_tmp: None,
        };
        let m = encode_start(1, &spec);
        // Cut inside a field, or between a key and its value.
        for cut in [m.0.len() - 1, m.0.len() - 5] {
            let mut f = Fields::parse(&m.0[..cut]).unwrap();
            assert_eq!(decode_start(&mut f), None, "cut at {cut}");
        }
        assert!(Fields::parse(&m.0[..5]).is_none());
    }
}
