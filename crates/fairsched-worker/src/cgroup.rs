//! Cgroups: every process of a run found, limited and killed together.
//!
//! At start the worker finds its own cgroups (`/proc/self/mounts` and
//! `/proc/self/cgroup`, [`find`]) and makes a directory of its own under
//! them, `fairsched-worker-PID-START` (its PID and start time: a directory
//! whose worker is gone is known as such, and removed by the next worker
//! to start there). Each run gets a child of it, created by the worker
//! before the run's first script: `task-ID-ATTEMPT` with the run's memory
//! limit (removed after the run), or, for a run without one, an empty
//! `run-N` of a pool (made when none is free, back in the pool once the
//! run's processes are all gone: a mkdir and an rmdir per run cost more
//! than a short run). The run's shell
//! enters it between fork and exec (it writes `0` to `cgroup.procs`), so
//! nothing of the run ever runs outside it, and whatever it starts stays in
//! it: `setsid`, double forks and a killed guard change nothing.
//!
//! | what this machine has | a run's processes found and killed | memory limit |
//! |---|---|---|
//! | cgroup v2, `memory` delegated (systemd `Delegate=yes`) | v2 `cgroup.procs`, `cgroup.kill` | v2 `memory.max` (`memory.swap.max` 0, `memory.oom.group` 1) |
//! | hybrid: cgroup2 without `memory`, v1 `memory` | v2 `cgroup.procs`, `cgroup.kill` | v1 `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`) |
//! | cgroup v1 only | v1 `memory`'s `cgroup.procs`, SIGKILL to each | v1, as above |
//! | none usable | `/proc` (the guard's subtree) | `RLIMIT_AS` of each process |
//!
//! A v2 without `cgroup.kill` (Linux before 5.14) is frozen
//! (`cgroup.freeze`) while each of its processes gets SIGKILL. An OOM kill
//! in a run's cgroup (`memory.events` or `memory.oom_control`: `oom_kill`)
//! ends the run with [`MEMORY_LIMIT_EXIT`](crate::MEMORY_LIMIT_EXIT).
//!
//! `--cgroups auto` (the default) uses what it finds and falls back to
//! rlimits and `/proc` with a warning, for the whole worker or for one
//! run whose cgroup cannot be made; `--cgroups required` refuses to start
//! without one (and fails a run whose cgroup cannot be made); `--cgroups
//! off` never uses them. Nothing here panics on an odd cgroup file.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::errors::CgroupError;
use crate::wire::RunKey;

/// `worker --cgroups`: whether runs get cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CgroupMode {
    /// Use the cgroups this machine lets the worker use; without any, the
    /// memory limit is each process's RLIMIT_AS and a run's processes are
    /// found in /proc
    #[default]
    Auto,
    /// Never use cgroups (RLIMIT_AS and /proc)
    Off,
    /// Refuse to start without a usable cgroup, and fail a run whose
    /// cgroup cannot be made
    Required,
}

/// This process's cgroups, as [`find`] reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its cgroup in the cgroup v2 hierarchy (a directory).
    pub v2: Option<PathBuf>,
    /// Its cgroup in the cgroup v1 `memory` hierarchy.
    pub v1_memory: Option<PathBuf>,
}

/// Finds this process's cgroup directories from the texts of
/// `/proc/self/mounts` and `/proc/self/cgroup`: the first cgroup2 mount
/// and the v1 mount with the `memory` controller, each joined with the
/// process's path in that hierarchy. Lines it cannot read are skipped; a
/// path with `..` or of a removed cgroup (` (deleted)`) is not used.
pub(crate) fn find(mounts: &str, cgroup: &str) -> Found {
    let (v2_mount, memory_mount) = hierarchies(mounts);
    let (mut v2_path, mut memory_path) = (None, None);
    for line in cgroup.lines() {
        // "ID:CONTROLLERS:PATH"; the path may hold ':'.
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2_path = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            memory_path = Some(path);
        }
    }
    Found {
        v2: under(v2_mount, v2_path),
        v1_memory: under(memory_mount, memory_path),
    }
}

/// The mount points of the first cgroup2 and of the v1 hierarchy with the
/// `memory` controller, from the text of `/proc/self/mounts`.
fn hierarchies(mounts: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v2_mount, mut memory_mount) = (None, None);
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(_), Some(point), Some(fstype), Some(options)) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        match fstype {
            "cgroup2" if v2_mount.is_none() => v2_mount = Some(unescape(point)),
            "cgroup" if memory_mount.is_none() && options.split(',').any(|o| o == "memory") => {
                memory_mount = Some(unescape(point));
            }
            _ => {}
        }
    }
    (v2_mount, memory_mount)
}

/// This process's own cgroups (see [`find`]), each with its hierarchy's
/// mount point and its `cgroup.procs` open for writing: where a guard
/// goes back to after it started a run's shell in the run's cgroup
/// (none: those it may not write to).
pub(crate) fn homes() -> Vec<(PathBuf, fs::File)> {
    let read = |p: &str| fs::read_to_string(p).unwrap_or_default();
    let mounts = read("/proc/self/mounts");
    let found = find(&mounts, &read("/proc/self/cgroup"));
    let (v2_mount, memory_mount) = hierarchies(&mounts);
    [(v2_mount, found.v2), (memory_mount, found.v1_memory)]
        .into_iter()
        .filter_map(|(mount, dir)| {
            let procs = fs::OpenOptions::new()
                .write(true)
                .open(dir?.join("cgroup.procs"))
                .ok()?;
            Some((mount?, procs))
        })
        .collect()
}

/// `mount` joined with the cgroup `path` (absolute in its hierarchy).
fn under(mount: Option<PathBuf>, path: Option<&str>) -> Option<PathBuf> {
    let (mount, path) = (mount?, path?);
    let rel = path.strip_prefix('/')?;
    if path.ends_with(" (deleted)") || rel.split('/').any(|c| c == ".." || c == ".") {
        return None;
    }
    Some(if rel.is_empty() { mount } else { mount.join(rel) })
}

/// A field of `/proc/self/mounts`, its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal.and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok()) {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// Which hierarchy a run's processes are found and killed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tracking {
    V2,
    V1,
}

/// What enforces a run's memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryBy {
    /// `memory.max` of its cgroup v2.
    V2,
    /// `memory.limit_in_bytes` of its cgroup in the v1 `memory` hierarchy.
    V1,
    /// `RLIMIT_AS` of each of its processes.
    Rlimit,
}

/// What the worker would use, before it tries: the v2 hierarchy to find
/// and kill processes when there is one, else the v1 `memory` one; v2's
/// memory controller when this cgroup has it (`cgroup.controllers`), else
/// v1's, else rlimits.
pub(crate) fn choose(found: &Found, v2_controllers: Option<&str>) -> (Option<Tracking>, MemoryBy) {
    let tracking = match (&found.v2, &found.v1_memory) {
        (Some(_), _) => Some(Tracking::V2),
        (None, Some(_)) => Some(Tracking::V1),
        (None, None) => None,
    };
    let v2_memory =
        found.v2.is_some() && v2_controllers.is_some_and(|c| c.split_whitespace().any(|c| c == "memory"));
    let memory = if v2_memory {
        MemoryBy::V2
    } else if found.v1_memory.is_some() {
        MemoryBy::V1
    } else {
        MemoryBy::Rlimit
    };
    (tracking, memory)
}

/// The cgroups this worker puts its runs in: cheap to clone.
#[derive(Debug, Clone)]
pub struct Cgroups(Arc<Layout>);

#[derive(Debug)]
struct Layout {
    /// This worker's directory in the cgroup v2 hierarchy (runs are its
    /// children); when there is one, it holds the runs' processes.
    v2: Option<PathBuf>,
    /// Its directory in the v1 `memory` hierarchy: it holds the runs'
    /// processes without a v2 one, their memory limit with `MemoryBy::V1`.
    v1: Option<PathBuf>,
    memory: MemoryBy,
    /// The runs' cgroups v2 have the `pids` controller (`pids.max`).
    pids: bool,
    required: bool,
    /// The cgroups of ended runs without a memory limit of their own,
    /// empty, kept for the next such runs: making and removing a cgroup
    /// costs more than a run of `true` (bench/README.md).
    pool: Mutex<Pool>,
}

#[derive(Debug, Default)]
struct Pool {
    free: Vec<Pooled>,
}

/// A pooled cgroup: its directory, and its `cgroup.procs` open for
/// writing (a run's shell enters it through it).
#[derive(Debug)]
struct Pooled {
    dir: PathBuf,
    procs: OwnedFd,
    /// Its files to set back before the next run (opened once), with the
    /// value each is set to.
    reset: Vec<(fs::File, &'static str)>,
}

impl Cgroups {
    /// Finds what this worker can use and makes its directories (after
    /// removing those of workers gone); logs which mechanism each limit
    /// uses. `Ok(None)`: no cgroup (`off`, or none usable in `auto`).
    pub fn setup(mode: CgroupMode) -> Result<Option<Cgroups>, CgroupError> {
        if mode == CgroupMode::Off {
            tracing::info!(
                "--cgroups off: a run's memory limit is each process's RLIMIT_AS; its processes are found in /proc and killed there"
            );
            return Ok(None);
        }
        let read = |p: &str| fs::read_to_string(p).unwrap_or_default();
        let found = find(&read("/proc/self/mounts"), &read("/proc/self/cgroup"));
        match Cgroups::make(&found, &worker_name(), mode == CgroupMode::Required) {
            Ok(cg) => {
                cg.log();
                Ok(Some(cg))
            }
            Err(why) if mode == CgroupMode::Required => Err(CgroupError::Unusable { why }),
            Err(why) => {
                tracing::warn!(
                    "no usable cgroup ({why}): a run's memory limit is each process's RLIMIT_AS; its processes are found in /proc and killed there"
                );
                Ok(None)
            }
        }
    }

    fn make(found: &Found, name: &str, required: bool) -> Result<Cgroups, String> {
        if found.v2.is_none() && found.v1_memory.is_none() {
            return Err(
                "neither a cgroup2 nor a cgroup v1 memory hierarchy is mounted with this process in it"
                    .into(),
            );
        }
        for parent in [&found.v2, &found.v1_memory].into_iter().flatten() {
            remove_gone_workers(parent, name);
        }
        let controllers = found
            .v2
            .as_ref()
            .and_then(|d| fs::read_to_string(d.join("cgroup.controllers")).ok());
        let (tracking, mut memory) = choose(found, controllers.as_deref());
        let mut why_not = Vec::new();
        let v2 = found
            .v2
            .as_ref()
            .filter(|_| tracking == Some(Tracking::V2))
            .and_then(|parent| {
                let dir = parent.join(name);
                make_dir(&dir)
                    .map_err(|e| why_not.push(format!("cannot create {}: {e}", dir.display())))
                    .ok()
                    .map(|()| dir)
            });
        let v1_fallback = if found.v1_memory.is_some() {
            MemoryBy::V1
        } else {
            MemoryBy::Rlimit
        };
        if memory == MemoryBy::V2 {
            let enabled = match (&v2, &found.v2) {
                (Some(dir), Some(parent)) => enable_memory(parent, dir),
                _ => Err(io::Error::other("no cgroup v2 directory")),
            };
            if let Err(e) = enabled {
                tracing::warn!("cgroup v2 memory controller not usable for the runs: {e}");
                memory = v1_fallback;
            }
        }
        let v1 = match (&found.v1_memory, memory == MemoryBy::V1 || v2.is_none()) {
            (Some(parent), true) => {
                let dir = parent.join(name);
                make_dir(&dir)
                    .map_err(|e| why_not.push(format!("cannot create {}: {e}", dir.display())))
                    .ok()
                    .map(|()| dir)
            }
            _ => None,
        };
        if memory == MemoryBy::V1 && v1.is_none() {
            memory = MemoryBy::Rlimit;
        }
        if v2.is_none() && v1.is_none() {
            return Err(why_not.join("; "));
        }
        for why in why_not {
            tracing::warn!("cgroups: {why}");
        }
        // The runs' process limit, where the v2 hierarchy has `pids` (best
        // effort: else RLIMIT_NPROC).
        let pids = match (&v2, &found.v2) {
            (Some(dir), Some(parent)) => enable_controller(parent, dir, "pids")
                .map_err(|e| tracing::info!("cgroup v2 pids controller not usable for the runs: {e}"))
                .is_ok(),
            _ => false,
        };
        Ok(Cgroups(Arc::new(Layout {
            v2,
            v1,
            memory,
            pids,
            required,
            pool: Mutex::new(Pool::default()),
        })))
    }

    fn log(&self) {
        let l = &self.0;
        match (&l.v2, &l.v1) {
            (Some(dir), _) => {
                let kill = if dir.join("cgroup.kill").exists() {
                    "cgroup.kill"
                } else {
                    "SIGKILL to each process, the cgroup frozen"
                };
                tracing::info!(
                    "cgroups: each run in a cgroup v2 of its own, {}/task-ID-ATTEMPT (with a memory limit) or run-N (reused once empty); a cancel, a time limit, a lost lease or the worker's stop kill its processes there ({kill})",
                    dir.display()
                );
            }
            (None, Some(dir)) => tracing::info!(
                "cgroups: each run in a cgroup of its own in the v1 memory hierarchy, {}/task-ID-ATTEMPT (with a memory limit) or run-N (reused once empty); a cancel, a time limit, a lost lease or the worker's stop kill its processes there (SIGKILL to each)",
                dir.display()
            ),
            (None, None) => {}
        }
        match l.memory {
            MemoryBy::V2 => tracing::info!(
                "memory limit: memory.max of the run's cgroup v2, for all its processes together"
            ),
            MemoryBy::V1 => tracing::info!(
                "memory limit: memory.limit_in_bytes (and memory.memsw.limit_in_bytes) of the run's cgroup in {}, for all its processes together",
                l.v1.as_deref().unwrap_or(Path::new("?")).display()
            ),
            MemoryBy::Rlimit => tracing::warn!(
                "memory limit: RLIMIT_AS of each process (no memory cgroup usable here: under systemd, give the unit Delegate=yes)"
            ),
        }
        tracing::info!("time limit: the worker's clock; the run's processes are killed through its cgroup");
    }

    /// Whether a run whose cgroup cannot be made fails (`required`) rather
    /// than runs under rlimits.
    pub(crate) fn required(&self) -> bool {
        self.0.required
    }

    /// The cgroup of run `key`: with a memory limit the cgroups enforce, a
    /// new one, `task-ID-ATTEMPT`, with that limit (removed after the
    /// run); else an empty one of the pool, `run-N` (made if none is
    /// free, back in the pool after the run once empty).
    pub(crate) fn make_run(
        &self,
        key: RunKey,
        memory_bytes: Option<u64>,
        processes: Option<u64>,
    ) -> io::Result<RunCgroup> {
        let mut run = self.make_run_cgroup(key, memory_bytes)?;
        if let Some(n) = processes.filter(|_| self.0.pids && self.0.v2.is_some()) {
            let dir = &run.place.dir;
            let events = dir.join("pids.events");
            let path = dir.join("pids.max");
            write_file(&path, &n.to_string())
                .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
            let before = fs::read_to_string(&events)
                .ok()
                .and_then(|t| counter(&t, "max"))
                .unwrap_or(0);
            run.pids = Some((before, events));
        } else if self.0.pids && self.0.v2.is_some() {
            let _ = write_file(&run.place.dir.join("pids.max"), "max");
        }
        Ok(run)
    }

    fn make_run_cgroup(&self, key: RunKey, memory_bytes: Option<u64>) -> io::Result<RunCgroup> {
        let l = &self.0;
        let parent =
            l.v2.as_ref()
                .or(l.v1.as_ref())
                .ok_or_else(|| io::Error::other("no cgroup"))?;
        let memory_bytes = memory_bytes.filter(|_| l.memory != MemoryBy::Rlimit);
        if memory_bytes.is_none() {
            let taken = l.pool.lock().unwrap_or_else(PoisonError::into_inner).free.pop();
            let pooled = match taken {
                Some(p) => p,
                None => {
                    // Numbered for the whole process: two `Cgroups` of one
                    // process (tests) share the worker's directory.
                    static MADE: AtomicU64 = AtomicU64::new(0);
                    let n = MADE.fetch_add(1, Ordering::Relaxed) + 1;
                    let dir = parent.join(format!("run-{n}"));
                    make_dir(&dir).map_err(|e| {
                        io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
                    })?;
                    let place = Placement {
                        dir: dir.clone(),
                        v1_memory: None,
                    };
                    let procs = place
                        .open()?
                        .pop()
                        .ok_or_else(|| io::Error::other("no cgroup.procs"))?;
                    // What a task of the worker's own user may set there.
                    let mut settings = vec![("cgroup.freeze", "0")];
                    if l.memory == MemoryBy::V2 {
                        settings.push(("memory.max", "max"));
                    }
                    let reset = settings
                        .into_iter()
                        .filter_map(|(file, value)| {
                            let f = fs::OpenOptions::new().write(true).open(dir.join(file)).ok()?;
                            Some((f, value))
                        })
                        .collect();
                    Pooled { dir, procs, reset }
                }
            };
            return Ok(RunCgroup {
                place: Placement {
                    dir: pooled.dir,
                    v1_memory: None,
                },
                memory: None,
                pids: None,
                made: Vec::new(),
                enter: vec![pooled.procs],
                reset: pooled.reset,
                pool: Some(self.clone()),
                reuse: AtomicBool::new(true),
            });
        }
        let name = format!("task-{}-{}", key.task, key.attempt);
        let dir = parent.join(&name);
        // The v1 memory cgroup, when another (v2) holds the run.
        let v1_memory = match (&l.v2, &l.v1, l.memory) {
            (Some(_), Some(v1), MemoryBy::V1) => Some(v1.join(&name)),
            _ => None,
        };
        let mut run = RunCgroup {
            place: Placement { dir, v1_memory },
            memory: None,
            pids: None,
            made: Vec::new(),
            enter: Vec::new(),
            reset: Vec::new(),
            pool: None,
            reuse: AtomicBool::new(false),
        };
        for d in run.place.dirs() {
            make_dir(d)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", d.display())))?;
            run.made.push(d.to_path_buf());
        }
        if let Some(bytes) = memory_bytes {
            run.memory = run.limit_memory(l.memory, bytes)?;
        }
        run.enter = run.place.open()?;
        Ok(run)
    }

    /// Whether runs' memory limits are cgroups' (else each process's `RLIMIT_AS`).
    pub fn limits_memory(&self) -> bool {
        self.0.memory != MemoryBy::Rlimit
    }

    /// Removes this worker's directories, empty once its runs are gone
    /// (best effort: one this worker stays in itself is left for the next
    /// worker to remove).
    pub fn remove(&self) {
        for dir in [&self.0.v2, &self.0.v1].into_iter().flatten() {
            if let Ok(entries) = fs::read_dir(dir) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        let _ = fs::remove_dir(e.path());
                    }
                }
            }
            let _ = fs::remove_dir(dir);
        }
    }
}

/// This worker's directory name: `fairsched-worker-PID-START`.
fn worker_name() -> String {
    let me = std::process::id();
    let start = start_time(me).unwrap_or_default();
    format!("{WORKER_PREFIX}{me}-{start}")
}

const WORKER_PREFIX: &str = "fairsched-worker-";

/// When process `pid` started (clock ticks after boot: `/proc/PID/stat`'s
/// 22nd field), if it runs.
fn start_time(pid: u32) -> Option<String> {
    // The 22nd field is the 20th after the name.
    let stat = crate::guard::proc_stat(i32::try_from(pid).ok()?)?;
    stat.split_whitespace().nth(19).map(str::to_owned)
}

/// Removes the directories of workers gone (`fairsched-worker-PID-START`
/// whose process no longer runs), killing what is left in them: runs of a
/// worker that crashed.
fn remove_gone_workers(parent: &Path, mine: &str) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_prefix(WORKER_PREFIX)) else {
            continue;
        };
        let Some((pid, start)) = id.split_once('-') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if name == mine
            || start_time(pid).as_deref() == Some(start)
            || !e.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        let removed = kill_and_remove(&e.path());
        tracing::info!(
            "removed {removed} cgroups of a worker gone (pid {pid}): {}",
            e.path().display()
        );
    }
}

/// Kills what runs in `dir` and its child cgroups and removes them; how
/// many it removed. Best effort.
fn kill_and_remove(dir: &Path) -> usize {
    let mut removed = 0;
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                removed += kill_and_remove(&e.path());
            }
        }
    }
    let place = Placement {
        dir: dir.to_path_buf(),
        v1_memory: None,
    };
    if !place.is_empty() {
        place.kill_until_empty(Duration::from_secs(1));
    }
    if remove_dir(dir).is_ok() {
        removed += 1;
    }
    removed
}

/// Writes `value` to the cgroup file `path`, which must exist (never
/// created: a directory that is not a cgroup gets no stray file).
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    use std::io::Write;
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// Creates a cgroup (one already there will do).
fn make_dir(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Removes an empty cgroup, trying again a little while it is busy (its
/// last processes may still be leaving it).
fn remove_dir(dir: &Path) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match fs::remove_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

/// Lets the runs (children of `dir`, a child of `parent`) have a
/// `memory.max`: `memory` in `parent`'s and `dir`'s `cgroup.subtree_control`.
/// A cgroup v2 that has processes of its own cannot give its children a
/// controller: when this worker is the only process in `parent` (a
/// systemd service with `Delegate=yes`), it moves itself to `dir/worker`
/// first.
fn enable_memory(parent: &Path, dir: &Path) -> io::Result<()> {
    let control = parent.join("cgroup.subtree_control");
    let has = |p: &Path| fs::read_to_string(p).is_ok_and(|t| t.split_whitespace().any(|c| c == "memory"));
    if !has(&control)
        && let Err(e) = write_file(&control, "+memory")
    {
        if e.raw_os_error() != Some(nix::libc::EBUSY) {
            return Err(io::Error::new(e.kind(), format!("{}: {e}", control.display())));
        }
        let procs = read_pids(&parent.join("cgroup.procs"))?;
        if procs != [Pid::from_raw(std::process::id() as i32)] {
            return Err(io::Error::other(format!(
                "{} holds other processes than this worker, so its children cannot have a memory controller (run the worker as a systemd service with Delegate=yes)",
                parent.display()
            )));
        }
        let leaf = dir.join("worker");
        make_dir(&leaf)?;
        write_file(&leaf.join("cgroup.procs"), "0").map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot move this worker to {}: {e}", leaf.display()),
            )
        })?;
        tracing::info!(
            "this worker moved itself to {} (the runs' cgroups get a memory controller)",
            leaf.display()
        );
        write_file(&control, "+memory")
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", control.display())))?;
    }
    let sub = dir.join("cgroup.subtree_control");
    write_file(&sub, "+memory").map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", sub.display())))
}

/// `+NAME` in `parent`'s and `dir`'s `cgroup.subtree_control`, if the
/// controller is available there (and not on already).
fn enable_controller(parent: &Path, dir: &Path, name: &str) -> io::Result<()> {
    let has = |p: &Path| fs::read_to_string(p).is_ok_and(|t| t.split_whitespace().any(|c| c == name));
    if !has(&parent.join("cgroup.controllers")) {
        return Err(io::Error::other(format!(
            "no `{name}` in {}/cgroup.controllers",
            parent.display()
        )));
    }
    for d in [parent, dir] {
        let control = d.join("cgroup.subtree_control");
        if !has(&control) {
            write_file(&control, &format!("+{name}"))
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", control.display())))?;
        }
    }
    Ok(())
}

/// The processes listed in a `cgroup.procs` file (lines it cannot read skipped).
fn read_pids(path: &Path) -> io::Result<Vec<Pid>> {
    Ok(fs::read_to_string(path)?
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
        .map(Pid::from_raw)
        .collect())
}

/// Where a run's processes are: what the guard (or the worker, without
/// one) puts the run's shell in, finds its processes in and kills them
/// through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Holds every process of the run (its `cgroup.procs`).
    pub dir: PathBuf,
    /// The run's cgroup in the v1 `memory` hierarchy, when `dir` is a v2 one.
    pub v1_memory: Option<PathBuf>,
}

impl Placement {
    fn dirs(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.dir.as_path()).chain(self.v1_memory.as_deref())
    }

    /// Opens the `cgroup.procs` files the run's shell writes itself to
    /// ([`enter`]), before the fork.
    pub fn open(&self) -> io::Result<Vec<OwnedFd>> {
        self.dirs()
            .map(|d| {
                let path = d.join("cgroup.procs");
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display())))
            })
            .collect()
    }

    /// Every process of the run (none left when it is empty); `None` if
    /// its `cgroup.procs` cannot be read.
    pub fn members(&self) -> Option<Vec<Pid>> {
        read_pids(&self.dir.join("cgroup.procs")).ok()
    }

    /// No process of the run is left (or its cgroup is gone).
    pub fn is_empty(&self) -> bool {
        self.members().is_none_or(|m| m.is_empty())
    }

    /// SIGKILL to every process of the run: `cgroup.kill` (cgroup v2,
    /// Linux 5.14 and later), else to each process in `cgroup.procs`, the
    /// cgroup frozen meanwhile when it can be (v2) so that none forks
    /// between the read and the kill. An error: nothing could be done.
    pub fn kill_all(&self) -> io::Result<()> {
        if write_file(&self.dir.join("cgroup.kill"), "1").is_ok() {
            return Ok(());
        }
        let freeze = self.dir.join("cgroup.freeze");
        let frozen = write_file(&freeze, "1").is_ok();
        let members = read_pids(&self.dir.join("cgroup.procs"));
        for &p in members.iter().flatten() {
            let _ = kill(p, Signal::SIGKILL);
        }
        if frozen {
            let _ = write_file(&freeze, "0");
        }
        members.map(|_| ())
    }

    /// SIGKILLs the run's processes until none is left, for at most
    /// `bound`; whether none is left.
    pub fn kill_until_empty(&self, bound: Duration) -> bool {
        let until = Instant::now() + bound;
        loop {
            if self.kill_all().is_err() {
                return self.is_empty();
            }
            if self
                .wait_empty(Duration::from_millis(100).min(until.saturating_duration_since(Instant::now())))
            {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
        }
    }

    /// Waits up to `timeout` for the run to have no process; whether it has none.
    pub fn wait_empty(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            if self.is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            std::thread::sleep(pause.min(until - now));
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }
}

/// Moves the calling process into the cgroups whose `cgroup.procs` files
/// `fds` are (from [`Placement::open`]): in the run's shell, between fork
/// and exec. Async-signal-safe (a write of `0` to each: "this process").
pub(crate) fn enter(fds: &[OwnedFd]) -> io::Result<()> {
    for fd in fds {
        nix::unistd::write(fd, b"0").map_err(io::Error::from)?;
    }
    Ok(())
}

/// One run's cgroups, made by the worker: removed when dropped (after
/// killing what is left in them).
#[derive(Debug)]
pub(crate) struct RunCgroup {
    pub place: Placement,
    /// The memory limit the cgroup enforces, and the file that counts its OOM kills.
    memory: Option<(u64, PathBuf)>,
    /// Its `pids.max` is set: the `max` count of its `pids.events` when
    /// the run started (a pooled cgroup's counts from earlier runs), and
    /// that file.
    pids: Option<(u64, PathBuf)>,
    /// The directories made, to remove.
    made: Vec<PathBuf>,
    /// Its `cgroup.procs` files, open for writing: a run's shell enters
    /// the cgroups through them ([`enter`]).
    pub enter: Vec<OwnedFd>,
    /// A pooled cgroup's files to set back before its next run.
    reset: Vec<(fs::File, &'static str)>,
    /// A cgroup of this pool: back in it after the run, once empty…
    pool: Option<Cgroups>,
    /// …unless this was cleared ([`RunCgroup::not_reused`]).
    reuse: AtomicBool,
}

impl RunCgroup {
    /// Sets the run's memory limit; the limit and the file counting OOM
    /// kills, or `None` when the cgroups do not limit memory (rlimits do).
    fn limit_memory(&self, by: MemoryBy, bytes: u64) -> io::Result<Option<(u64, PathBuf)>> {
        let write = |dir: &Path, file: &str, value: &str| {
            let path = dir.join(file);
            write_file(&path, value)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
        };
        let value = bytes.to_string();
        match by {
            MemoryBy::V2 => {
                let dir = &self.place.dir;
                write(dir, "memory.max", &value)?;
                // No swap beyond the limit, and an OOM kill stops the whole
                // run rather than one of its processes (best effort: older
                // kernels have neither file).
                if dir.join("memory.swap.max").exists() {
                    write(dir, "memory.swap.max", "0")?;
                }
                let _ = write_file(&dir.join("memory.oom.group"), "1");
                Ok(Some((bytes, dir.join("memory.events"))))
            }
            MemoryBy::V1 => {
                let dir = self.place.v1_memory.as_ref().unwrap_or(&self.place.dir);
                write(dir, "memory.limit_in_bytes", &value)?;
                // Memory and swap together, when the kernel counts swap.
                if dir.join("memory.memsw.limit_in_bytes").exists() {
                    write(dir, "memory.memsw.limit_in_bytes", &value)?;
                }
                Ok(Some((bytes, dir.join("memory.oom_control"))))
            }
            MemoryBy::Rlimit => Ok(None),
        }
    }

    /// Not back in the pool after this run: removed instead (a process
    /// that still has its `cgroup.procs` open then cannot enter it).
    pub fn not_reused(&self) {
        self.reuse.store(false, Ordering::Relaxed);
    }

    /// Whether the cgroup holds the run's process limit (`pids.max`).
    pub fn limits_pids(&self) -> bool {
        self.pids.is_some()
    }

    /// Whether a fork of the run failed at its `pids.max` since it started.
    pub fn pids_max_reached(&self) -> bool {
        self.pids.as_ref().is_some_and(|(before, file)| {
            fs::read_to_string(file)
                .ok()
                .and_then(|t| counter(&t, "max"))
                .is_some_and(|n| n > *before)
        })
    }

    /// The memory limit the cgroup enforces (none: rlimits do, if any).
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory.as_ref().map(|&(bytes, _)| bytes)
    }

    /// Whether the cgroup's OOM killer has killed a process of the run
    /// (`oom_kill` of `memory.events` or `memory.oom_control`).
    pub fn oom_killed(&self) -> bool {
        self.memory
            .as_ref()
            .and_then(|(_, file)| fs::read_to_string(file).ok())
            .is_some_and(|text| counter(&text, "oom_kill").is_some_and(|n| n > 0))
    }

    /// Stops what is left of the run: SIGTERM to each process and, after
    /// `grace` (none: at once), SIGKILL until none is left (a few seconds
    /// at most); whether none is left.
    pub fn stop(&self, grace: Duration) -> bool {
        match self.place.members() {
            // Unreadable: gone, or nothing can be known.
            None => return !self.place.dir.exists(),
            Some(m) if m.is_empty() => return true,
            Some(m) if !grace.is_zero() => {
                for p in m {
                    let _ = kill(p, Signal::SIGTERM);
                }
                if self.place.wait_empty(grace) {
                    return true;
                }
            }
            Some(_) => {}
        }
        self.place.kill_until_empty(KILL_BOUND)
    }
}

/// How long the worker SIGKILLs what is left of a run before it gives up.
const KILL_BOUND: Duration = Duration::from_secs(5);

impl Drop for RunCgroup {
    fn drop(&mut self) {
        if !self.stop(Duration::ZERO) {
            tracing::warn!(
                "processes are left in {} after SIGKILL: it is not removed, nor used again",
                self.place.dir.display()
            );
            return;
        }
        if let Some(cgroups) = self.pool.take()
            && self.reuse.load(Ordering::Relaxed)
            && let Some(procs) = self.enter.pop()
        {
            // What a task of the worker's own user may have set there.
            for (f, value) in &self.reset {
                use std::os::unix::fs::FileExt;
                let _ = f.write_at(value.as_bytes(), 0);
            }
            cgroups
                .0
                .pool
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .free
                .push(Pooled {
                    dir: std::mem::take(&mut self.place.dir),
                    procs,
                    reset: std::mem::take(&mut self.reset),
                });
            return;
        }
        // Made for this run, or of the pool but not to be used again.
        if self.made.is_empty() {
            self.made.push(self.place.dir.clone());
        }
        for dir in self.made.iter().rev() {
            if let Err(e) = remove_dir(dir) {
                tracing::warn!("cannot remove {}: {e}", dir.display());
            }
        }
    }
}

/// The value of line `key N` of a cgroup's key-value file.
fn counter(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The cgroup directories process `pid` is in (cgroup v2, then v1
/// `memory`), for tests and diagnostics: where a run's processes are.
pub fn cgroups_of(pid: u32) -> io::Result<Vec<PathBuf>> {
    let mounts = fs::read_to_string("/proc/self/mounts")?;
    let cgroup = fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    let found = find(&mounts, &cgroup);
    Ok(found.v2.into_iter().chain(found.v1_memory).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_ONLY_MOUNTS: &str = "\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0
cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,nodev,noexec,relatime,freezer 0 0
";
    const V1_ONLY_CGROUP: &str = "\
11:freezer:/
10:memory:/system.slice/fairsched-worker.service
4:cpu,cpuacct:/system.slice/fairsched-worker.service
1:name=systemd:/system.slice/fairsched-worker.service
";

    /// This machine's kind: a cgroup2 without controllers beside v1 ones.
    const HYBRID_MOUNTS: &str = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";
    const HYBRID_CGROUP: &str = "\
9:name=systemd:/
4:memory:/process_api/d5205724
1:cpu:/
0::/
";

    const V2_MOUNTS: &str = "\
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0
/dev/sda1 / ext4 rw,relatime 0 0
";
    const V2_CGROUP: &str = "0::/system.slice/fairsched-worker.service\n";

    fn p(s: &str) -> Option<PathBuf> {
        Some(PathBuf::from(s))
    }

    #[test]
    fn v1_only_finds_the_memory_hierarchy() {
        let found = find(V1_ONLY_MOUNTS, V1_ONLY_CGROUP);
        assert_eq!(
            found,
            Found {
                v2: None,
                v1_memory: p("/sys/fs/cgroup/memory/system.slice/fairsched-worker.service"),
            }
        );
        assert_eq!(choose(&found, None), (Some(Tracking::V1), MemoryBy::V1));
    }

    #[test]
    fn hybrid_tracks_in_v2_and_limits_memory_in_v1() {
        let found = find(HYBRID_MOUNTS, HYBRID_CGROUP);
        assert_eq!(
            found,
            Found {
                v2: p("/sys/fs/cgroup/unified"),
                v1_memory: p("/sys/fs/cgroup/memory/process_api/d5205724"),
            }
        );
        // Its cgroup2 has no controller (or one, not memory).
        for controllers in ["", "hugetlb\n"] {
            assert_eq!(
                choose(&found, Some(controllers)),
                (Some(Tracking::V2), MemoryBy::V1)
            );
        }
    }

    #[test]
    fn pure_v2_uses_memory_max_when_memory_is_delegated() {
        let found = find(V2_MOUNTS, V2_CGROUP);
        assert_eq!(
            found,
            Found {
                v2: p("/sys/fs/cgroup/system.slice/fairsched-worker.service"),
                v1_memory: None,
            }
        );
        assert_eq!(
            choose(&found, Some("cpuset cpu io memory pids\n")),
            (Some(Tracking::V2), MemoryBy::V2)
        );
        // Not delegated (no Delegate=yes): found and killed there, rlimits for memory.
        assert_eq!(
            choose(&found, Some("cpu io pids\n")),
            (Some(Tracking::V2), MemoryBy::Rlimit)
        );
        assert_eq!(choose(&found, None), (Some(Tracking::V2), MemoryBy::Rlimit));
    }

    #[test]
    fn none_without_cgroup_mounts_or_paths() {
        let none = (None, MemoryBy::Rlimit);
        // No cgroup filesystem mounted (a bare container).
        let found = find("proc /proc proc rw 0 0\n", "0::/\n");
        assert_eq!(found, Found::default());
        assert_eq!(choose(&found, None), none);
        // Mounted, but this process's cgroup file says nothing (or nonsense).
        for cgroup in ["", "garbage\n", "0:/x\n", "x::relative\n"] {
            let found = find(HYBRID_MOUNTS, cgroup);
            assert_eq!(found, Found::default(), "{cgroup:?}");
            assert_eq!(choose(&found, None), none);
        }
        // A removed cgroup or a path leaving the hierarchy is not used.
        assert_eq!(find(V2_MOUNTS, "0::/gone (deleted)\n"), Found::default());
        assert_eq!(find(V2_MOUNTS, "0::/a/../../etc\n"), Found::default());
        // Truncated mount lines are skipped.
        assert_eq!(find("cgroup2 /sys/fs/cgroup\n", V2_CGROUP), Found::default());
    }

    #[test]
    fn mount_points_are_unescaped_and_paths_may_hold_colons() {
        let found = find("cgroup2 /mnt/cg\\040two cgroup2 rw 0 0\n", "0::/a:b/c\n");
        assert_eq!(found.v2, p("/mnt/cg two/a:b/c"));
        assert_eq!(unescape("a\\134b\\9"), PathBuf::from("a\\b\\9"));
    }

    #[test]
    fn oom_counters_are_read_from_either_file() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n";
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(counter(v2, "oom_kill"), Some(1));
        assert_eq!(counter(v1, "oom_kill"), Some(3));
        assert_eq!(counter("oom_kill x\n", "oom_kill"), None);
        assert_eq!(counter("", "oom_kill"), None);
    }
}
