//! Result files: written under a temporary name, synced and renamed into
//! place, so a crash or a kill never leaves a half-written result under its
//! final name. [`RunDir`] lays out one run's folder; [`OutDir`] is a
//! command's `--out` folder: it holds a manifest ([`MANIFEST`]) of what the
//! run writes, so that the next run into it replaces exactly that (and the
//! `*.partial` files a killed run left) and leaves the user's files alone.
//!
//! A run's result files appear together: [`RunDir`] writes each under its
//! `.partial` name and [`RunDir::commit`] renames them all into place,
//! `summary.json` last, as one step that an interrupt (Ctrl-C, SIGTERM,
//! see [`PartialCleaner::interrupt`]) waits for, so that no file is ever
//! seen under its final name without its run's summary. An [`OutDir`] is
//! held by one run at a time: [`OutDir::open`] takes an exclusive lock on
//! [`LOCK`] in the folder and a second run into it stops at once.

use crate::aggregates;
use crate::tasks_csv::TasksCsv;
use fairsched_core::metrics::Metrics;
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An I/O error on a named file. Its message names the operation and the
/// file; the OS error is its `source()`, not repeated in the message (so a
/// printer that walks the chain says it once).
#[derive(Debug, thiserror::Error)]
#[error("{op} {}", path.display())]
pub struct FileError {
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

fn ctx(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FileError {
    let path = path.to_path_buf();
    move |source| FileError { op, path, source }
}

/// `path` with `.partial` appended: where a file is written before it is
/// renamed into place.
pub fn partial(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// Creates `tmp` afresh: whatever had its name (a leftover, or a link to a
/// file elsewhere, which must not be truncated) is removed first.
fn create_partial(tmp: &Path) -> Result<File, FileError> {
    remove_if_present(tmp)?;
    File::options()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(ctx("creating", tmp))
}

/// Writes `bytes` to `path` atomically (write, fsync, rename). On an
/// error the `.partial` file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let tmp = partial(path);
    let mut f = create_partial(&tmp)?;
    let done = f
        .write_all(bytes)
        .map_err(ctx("writing", &tmp))
        .and_then(|()| f.sync_all().map_err(ctx("syncing", &tmp)))
        .and_then(|()| fs::rename(&tmp, path).map_err(ctx("renaming into place", path)));
    if done.is_err() {
        drop(f);
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// Pretty JSON with a final newline.
pub fn json_bytes(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).expect("serializable");
    s.push('\n');
    s.into_bytes()
}

/// One run's result files: `tasks.csv` (streamed while the run goes),
/// `orgs.csv`, `users.csv`, `summary.json` and any other file of the run
/// (in its folder or elsewhere). Each is written under its `.partial` name
/// and *staged*; [`RunDir::commit`] renames every staged file into place,
/// `summary.json` last. A run dropped before its commit (an error, a
/// panic) removes its staged files: none shows under its final name.
pub struct RunDir {
    dir: PathBuf,
    /// The output folder's state, when the folder is an [`OutDir`]'s: its
    /// interrupt waits for a commit under way, and removes what is staged.
    shared: Option<Arc<Shared>>,
    /// Final paths whose `.partial` file is complete, awaiting the commit.
    staged: Mutex<Vec<PathBuf>>,
}

/// What one [`RunDir::commit`] put in place, in the order it did.
pub type Committed = Vec<PathBuf>;

impl RunDir {
    pub fn create(dir: &Path) -> Result<RunDir, FileError> {
        RunDir::with_shared(dir, None)
    }
    fn with_shared(dir: &Path, shared: Option<Arc<Shared>>) -> Result<RunDir, FileError> {
        fs::create_dir_all(dir).map_err(ctx("creating", dir))?;
        Ok(RunDir {
            dir: dir.to_path_buf(),
            shared,
            staged: Mutex::new(Vec::new()),
        })
    }
    pub fn path(&self) -> &Path {
        &self.dir
    }
    /// A `tasks.csv` writer (to `tasks.csv.partial` until
    /// [`RunDir::finish_tasks_csv`]).
    pub fn tasks_csv(&self) -> Result<TasksCsv<BufWriter<File>>, FileError> {
        let tmp = partial(&self.dir.join("tasks.csv"));
        let f = self.create_file(&tmp)?;
        Ok(TasksCsv::new(BufWriter::with_capacity(1 << 16, f)))
    }
    /// Flushes and syncs `tasks.csv.partial` and stages it (renamed into
    /// place by [`RunDir::commit`]).
    pub fn finish_tasks_csv(&self, csv: TasksCsv<BufWriter<File>>) -> Result<(), FileError> {
        let path = self.dir.join("tasks.csv");
        let tmp = partial(&path);
        let file = csv.finish().map_err(ctx("writing", &tmp))?;
        let file = file
            .into_inner()
            .map_err(|e| ctx("writing", &tmp)(e.into_error()))?;
        file.sync_all().map_err(ctx("syncing", &tmp))?;
        self.add_staged(path);
        Ok(())
    }
    /// Writes `name` in the folder atomically, at once (not staged).
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), FileError> {
        write_atomic(&self.dir.join(name), bytes)
    }
    /// Stages `bytes` as the file `path` (a path in this folder or
    /// elsewhere): written to `PATH.partial` and synced now, renamed into
    /// place by [`RunDir::commit`].
    pub fn stage(&self, path: &Path, bytes: &[u8]) -> Result<(), FileError> {
        self.stage_with(path, |mut f| {
            f.write_all(bytes).map_err(ctx("writing", &partial(path)))
        })
    }
    /// Stages the file `path`, written by `write` into `PATH.partial` (then
    /// synced); on an error the partial file is removed.
    pub fn stage_with<E: From<FileError>>(
        &self,
        path: &Path,
        write: impl FnOnce(&File) -> Result<(), E>,
    ) -> Result<(), E> {
        let tmp = partial(path);
        if let Some(sh) = &self.shared {
            // Removed by an interrupt even while being written.
            sh.lock().staged.push(path.to_path_buf());
        }
        let f = self.create_file(&tmp)?;
        let done = write(&f).and_then(|()| f.sync_all().map_err(|e| E::from(ctx("syncing", &tmp)(e))));
        drop(f);
        match done {
            Ok(()) => {
                self.staged_lock().push(path.to_path_buf());
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }
    /// Stages `orgs.csv` (every organization, owning `procs[o]` processors
    /// and named `names[o]`, with its utility and contribution when given;
    /// see [`aggregates::by_org`]), `users.csv` and `summary.json`.
    pub fn write_results(
        &self,
        metrics: &Metrics,
        procs: &[u32],
        names: &[String],
        utility: Option<&[aggregates::OrgUtility]>,
        summary: &impl Serialize,
    ) -> Result<(), FileError> {
        let orgs = aggregates::by_org(metrics, procs, names, utility);
        self.stage(&self.dir.join("orgs.csv"), orgs.to_csv().as_bytes())?;
        let users = aggregates::by_user(metrics);
        self.stage(&self.dir.join("users.csv"), users.to_csv().as_bytes())?;
        self.stage(&self.dir.join("summary.json"), &json_bytes(summary))
    }
    /// Renames every staged file into place, `summary.json` last, as one
    /// step an interrupt of the output folder waits for (and after which
    /// none is done). Returns the final paths, in that order.
    pub fn commit(&self) -> Result<Committed, FileError> {
        let mut files = std::mem::take(&mut *self.staged_lock());
        // Stable: the rest keep their order.
        files.sort_by_key(|p| p.file_name().is_some_and(|n| n == "summary.json"));
        match &self.shared {
            Some(sh) => sh.commit(&files)?,
            None => rename_all(&files)?,
        }
        Ok(files)
    }
    /// Creates the `.partial` file `tmp`; refused once the run was
    /// interrupted. The check and the creation hold the run's lock, which
    /// the interrupt holds while it removes the partial files: a file is
    /// either created before and removed, or never created.
    fn create_file(&self, tmp: &Path) -> Result<File, FileError> {
        let Some(sh) = &self.shared else {
            return create_partial(tmp);
        };
        let st = sh.lock();
        if st.interrupted {
            return Err(ctx("creating", tmp)(io::Error::new(
                io::ErrorKind::Interrupted,
                "the run was interrupted",
            )));
        }
        let f = create_partial(tmp);
        drop(st);
        f
    }
    fn add_staged(&self, path: PathBuf) {
        if let Some(sh) = &self.shared {
            sh.lock().staged.push(path.clone());
        }
        self.staged_lock().push(path);
    }
    fn staged_lock(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.staged.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for RunDir {
    /// Not committed: its staged files are removed.
    fn drop(&mut self) {
        for p in self.staged_lock().drain(..) {
            let _ = fs::remove_file(partial(&p));
        }
    }
}

/// Renames each file's `.partial` into place, in order.
fn rename_all(files: &[PathBuf]) -> Result<(), FileError> {
    for f in files {
        fs::rename(partial(f), f).map_err(ctx("renaming into place", f))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Output folders (`--out`).

/// The manifest of an output folder that fairsched wrote: its format line,
/// the tool's version, the command line and the top-level entries the run
/// writes (`entry NAME`, a folder as `entry NAME/`). Written before any
/// result, so a run killed half-way is recognized too.
pub const MANIFEST: &str = ".fairsched-out";
/// The lock file of an output folder: the run that writes into the folder
/// holds an exclusive lock on it ([`File::try_lock`]) from
/// [`OutDir::open`] to its end, and removes it then. A file left by a
/// killed run holds no lock and is taken over.
pub const LOCK: &str = ".fairsched.lock";
/// The manifest's first line.
const FORMAT: &str = "fairsched-out 1";
/// A larger manifest is refused (it is read as untrusted input).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// The deepest folder level searched for `*.partial` files.
const MAX_DEPTH: usize = 16;

/// Why an output folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    /// Files of someone else, and no `--force` (a command-line error).
    #[error(
        "--out {}: not empty and not a fairsched output folder (no {MANIFEST}); choose another --out, \
         or add --force to write into it (files of the same name are replaced)",
        dir.display()
    )]
    NotOurs { dir: PathBuf },
    /// An entry this run writes is there, and no fairsched run wrote it
    /// (a command-line error).
    #[error(
        "--out {}: {name} is there and no fairsched run wrote it (it is not in {MANIFEST}), \
         but this run writes {name}; move it, choose another --out, or add --force to replace it",
        dir.display()
    )]
    InTheWay { dir: PathBuf, name: String },
    /// `--out` names a file (a command-line error).
    #[error("--out {}: a file, not a folder", dir.display())]
    NotAFolder { dir: PathBuf },
    /// The manifest cannot be trusted: nothing was deleted.
    #[error(
        "{}{}: {what}; nothing was deleted (correct or delete that file, or choose another --out)",
        path.display(),
        line.map_or_else(String::new, |l| format!(":{l}"))
    )]
    Manifest {
        path: PathBuf,
        line: Option<usize>,
        what: String,
    },
    /// Another run holds the folder's lock.
    #[error(
        "--out {}: another fairsched run is writing into this folder (it holds {LOCK} there); \
         wait for it to end, or choose another --out",
        dir.display()
    )]
    Busy { dir: PathBuf },
    /// A name this run was to write is not a plain name in the folder.
    #[error("cannot write {name:?} in --out: not a plain file name")]
    BadName { name: String },
    #[error(transparent)]
    File(#[from] FileError),
}

impl OutError {
    /// The command line's mistake (exit status 2), not the run's.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OutError::NotOurs { .. } | OutError::NotAFolder { .. } | OutError::InTheWay { .. }
        )
    }
}

/// A top-level entry of an output folder.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    name: String,
    folder: bool,
}

impl Entry {
    /// `NAME` (a file) or `NAME/` (a folder): one plain name in the
    /// folder, never `.`, `..`, a path, a control character or the manifest.
    fn parse(s: &str) -> Result<Entry, String> {
        let (name, folder) = match s.strip_suffix('/') {
            Some(n) => (n, true),
            None => (s, false),
        };
        let why = if name.is_empty() {
            Some("an empty name")
        } else if name.starts_with(['/', '\\']) {
            Some("an absolute path")
        } else if name.split(['/', '\\']).any(|c| c == "..") {
            Some("`..` leads out of the folder")
        } else if name == "." {
            Some("`.` is the folder itself")
        } else if name.contains(['/', '\\']) {
            Some("a path, not a name in this folder")
        } else if name.chars().any(char::is_control) {
            Some("a control character")
        } else if name.trim() != name {
            Some("leading or trailing blanks")
        } else if name == MANIFEST {
            Some("the manifest itself")
        } else if name == LOCK {
            Some("the folder's lock file")
        } else {
            None
        };
        match why {
            Some(why) => Err(format!("entry {s:?} refused: {why}")),
            None => Ok(Entry {
                name: name.to_string(),
                folder,
            }),
        }
    }

    fn line(&self) -> String {
        if self.folder {
            format!("{}/", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// What one run has written, or will write, in its folder.
struct State {
    begun: bool,
    command: String,
    /// The commit the program was built from, for the manifest.
    commit: Option<String>,
    /// Set by [`PartialCleaner::interrupt`]: no commit after it.
    interrupted: bool,
    /// Files staged by this run's [`RunDir`]s (in the folder or elsewhere),
    /// not yet committed: their `.partial` files go on an interrupt.
    staged: Vec<PathBuf>,
    entries: Vec<Entry>,
    /// Names of the files this run writes inside its folders (besides
    /// [`FOLDER_FILES`]): listed as `inside NAME` so that the next run
    /// removes them too.
    inside: Vec<String>,
}

struct Shared {
    dir: PathBuf,
    /// `--force`: an entry of this run's name that no fairsched run wrote is
    /// replaced (else refused).
    force: bool,
    /// The lock file, when the lock was taken: removed on an interrupt
    /// (the process ends without running destructors).
    lock_path: Option<PathBuf>,
    /// This run created the folder: one that fails before its first
    /// result (a missing log) leaves no empty folder behind.
    created: bool,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes way for the entry `e` this run writes: nothing there, fine;
    /// something no fairsched run listed is refused, or with `--force`
    /// replaced (a folder removed now, a file when the new one is renamed
    /// over it).
    fn clear_way(&self, e: &Entry) -> Result<(), OutError> {
        let path = self.dir.join(&e.name);
        let Ok(m) = fs::symlink_metadata(&path) else {
            return Ok(());
        };
        if !self.force {
            return Err(OutError::InTheWay {
                dir: self.dir.clone(),
                name: e.line(),
            });
        }
        if m.is_dir() {
            fs::remove_dir_all(&path).map_err(ctx("removing", &path))?;
        } else if e.folder {
            fs::remove_file(&path).map_err(ctx("removing", &path))?;
        }
        Ok(())
    }

    fn write_manifest(&self, st: &State) -> Result<(), FileError> {
        let mut text = format!(
            "{FORMAT}\n\
             # Written by fairsched. The next fairsched run into this folder deletes the\n\
             # entries below (and only them, and any *.partial file) before writing its\n\
             # own; other files are left alone.\n\
             version {}\n",
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(c) = &st.commit {
            text.push_str(&format!("commit {c}\n"));
        }
        text.push_str(&format!("command {}\n", st.command));
        for e in &st.entries {
            text.push_str("entry ");
            text.push_str(&e.line());
            text.push('\n');
        }
        for n in &st.inside {
            text.push_str("inside ");
            text.push_str(n);
            text.push('\n');
        }
        write_atomic(&self.dir.join(MANIFEST), text.as_bytes())
    }

    /// Renames the staged `files` into place (see [`RunDir::commit`]),
    /// unless the run was interrupted; an interrupt waits for it.
    fn commit(&self, files: &[PathBuf]) -> Result<(), FileError> {
        let mut st = self.lock();
        if st.interrupted {
            let path = files.first().cloned().unwrap_or_else(|| self.dir.clone());
            return Err(FileError {
                op: "renaming into place",
                path,
                source: io::Error::new(io::ErrorKind::Interrupted, "the run was interrupted"),
            });
        }
        rename_all(files)?;
        st.staged.retain(|p| !files.contains(p));
        Ok(())
    }

    /// Removes the `*.partial` files of this run's entries (and of the
    /// manifest, and staged ones elsewhere); errors are ignored (this runs
    /// on the way out).
    fn clean_partials(&self) {
        self.clean_partials_locked(&self.lock());
    }

    /// [`Shared::clean_partials`] with the lock held.
    fn clean_partials_locked(&self, st: &State) {
        for p in &st.staged {
            let _ = fs::remove_file(partial(p));
        }
        if !st.begun {
            return;
        }
        let _ = fs::remove_file(partial(&self.dir.join(MANIFEST)));
        for e in &st.entries {
            let path = self.dir.join(&e.name);
            let _ = fs::remove_file(partial(&path));
            if e.folder {
                remove_partials_in(&path, 0);
            }
        }
    }
}

/// Removes every `*.partial` file under `dir` (symbolic links are not
/// followed).
fn remove_partials_in(dir: &Path, depth: usize) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            if depth < MAX_DEPTH {
                remove_partials_in(&e.path(), depth + 1);
            }
        } else if e.file_name().to_string_lossy().ends_with(".partial") {
            let _ = fs::remove_file(e.path());
        }
    }
}

fn remove_if_present(path: &Path) -> Result<(), FileError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(ctx("removing", path)(e)),
        _ => Ok(()),
    }
}

/// The command line, one line, each argument quoted when it needs to be
/// (as the manifest and `summary.json` show it).
pub fn command_line() -> String {
    format_command_line(std::env::args_os())
}

/// [`command_line`] of any argument list (the program first, shown by its
/// file name).
pub fn format_command_line(args: impl IntoIterator<Item = std::ffi::OsString>) -> String {
    let mut args = args.into_iter();
    let first = args
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "fairsched".into());
    let mut line = first;
    for a in args {
        let a = a.to_string_lossy();
        line.push(' ');
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_alphanumeric() || "-_./:=,@%+[]".contains(c));
        if plain {
            line.push_str(&a);
        } else {
            line.push('\'');
            for c in a.chars() {
                match c {
                    '\'' => line.push_str("'\\''"),
                    c if c.is_control() => line.extend(c.escape_default()),
                    c => line.push(c),
                }
            }
            line.push('\'');
        }
    }
    line
}

/// Reads and checks a manifest: every entry a plain name in the folder.
fn read_manifest(path: &Path) -> Result<Earlier, OutError> {
    let bad = |line: Option<usize>, what: String| OutError::Manifest {
        path: path.to_path_buf(),
        line,
        what,
    };
    // Not a FIFO or a device: it would block or never end.
    let meta = fs::metadata(path).map_err(ctx("reading", path))?;
    if !meta.is_file() {
        return Err(bad(None, "not a regular file".into()));
    }
    let f = File::open(path).map_err(ctx("reading", path))?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(f, MAX_MANIFEST_BYTES + 1), &mut bytes)
        .map_err(ctx("reading", path))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(bad(
            None,
            format!("larger than {MAX_MANIFEST_BYTES} bytes: not a fairsched manifest"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| bad(None, "not UTF-8 text".into()))?;
    let mut entries = Vec::new();
    let mut inside = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if n == 1 {
            if line != FORMAT {
                return Err(bad(
                    Some(1),
                    match line.strip_prefix("fairsched-out ") {
                        Some(v) => format!("format {v:?} is not one this fairsched reads (it reads 1)"),
                        None => format!("not a fairsched manifest (expected {FORMAT:?})"),
                    },
                ));
            }
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "version" | "commit" | "command" => {}
            "inside" => {
                let e = Entry::parse(value).map_err(|what| bad(Some(n), what))?;
                if e.folder {
                    return Err(bad(
                        Some(n),
                        format!("inside {value:?}: a file name, not a folder"),
                    ));
                }
                inside.push(e.name);
            }
            "entry" => {
                let e = Entry::parse(value).map_err(|what| bad(Some(n), what))?;
                if !entries.contains(&e) {
                    entries.push(e);
                }
            }
            _ => {
                return Err(bad(
                    Some(n),
                    format!("unknown key {key:?} (expected version, commit, command, entry or inside)"),
                ));
            }
        }
    }
    if text.is_empty() {
        return Err(bad(None, format!("empty (expected {FORMAT:?} on line 1)")));
    }
    Ok(Earlier { entries, inside })
}

/// What an earlier run's manifest lists.
struct Earlier {
    entries: Vec<Entry>,
    inside: Vec<String>,
}

/// The files a run writes in each of its folders (`fairness.csv` with
/// several organizations only), always cleared with
/// the folder's entry (with the manifest's `inside` names and `*.partial`
/// files); anything else found there is the user's and stays.
pub const FOLDER_FILES: &[&str] = &[
    "summary.json",
    "tasks.csv",
    "runs.csv",
    "orgs.csv",
    "users.csv",
    "fairness.csv",
];

/// An output folder (`--out`), in two steps. [`OutDir::open`], before any
/// work, decides whether the folder may be used: a missing or empty folder,
/// or one with a [`MANIFEST`] (an earlier fairsched run's, finished or
/// killed), is; a folder of other files only with `force`. It deletes
/// nothing. [`OutDir::begin`], before the first result, deletes exactly what
/// the earlier run's manifest lists and any `*.partial` file it left, then
/// writes this run's manifest; files not listed are the user's and stay (an
/// entry of the user's that has a name this run writes is refused, or with
/// `force` replaced). Every later entry is listed before it is written ([`OutDir::write`],
/// [`OutDir::plan`]); [`OutDir::finish`] drops from the list what was not
/// written. Dropping the folder (an error, a panic) removes this run's
/// `*.partial` files. Nothing outside the folder is ever deleted.
pub struct OutDir {
    shared: Arc<Shared>,
    /// The manifest found, if any: what an earlier run wrote.
    earlier: Option<Earlier>,
    /// The folder's lock, held until the end (dropped after the
    /// `*.partial` files are removed).
    _lock: Option<Lock>,
    /// Why the folder could not be locked, if it could not.
    lock_warning: Option<String>,
}

/// The exclusive lock on an output folder's [`LOCK`] file. Dropped, it
/// removes the file first, then closes it (which releases the lock): a
/// run that opened the file meanwhile finds it removed and locks a new one
/// (see [`take_lock`]).
struct Lock {
    path: PathBuf,
    _file: File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Whether the open `file` is the one at `path` now.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.is_file()
}

/// Takes the exclusive lock on `dir`'s [`LOCK`] file, without waiting:
/// held by another run, [`OutError::Busy`]. A file system that cannot lock
/// gives `Err(warning)` inside `Ok`: the run goes on without the lock.
fn take_lock(dir: &Path) -> Result<Result<Lock, String>, OutError> {
    let path = dir.join(LOCK);
    // A few tries: each time, the run that held the file may have removed
    // it between our open and our lock.
    for _ in 0..16 {
        // A link or a folder of that name is not ours to open.
        if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            fs::remove_file(&path).map_err(ctx("removing", &path))?;
        }
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(ctx("cannot write in", dir))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(OutError::Busy {
                    dir: dir.to_path_buf(),
                });
            }
            Err(fs::TryLockError::Error(e)) => {
                let _ = fs::remove_file(&path);
                return Ok(Err(format!(
                    "{}: cannot lock ({e}); another run into this folder at the same time \
                     would not be stopped",
                    path.display()
                )));
            }
        }
        if same_file(&file, &path) {
            return Ok(Ok(Lock { path, _file: file }));
        }
    }
    Err(OutError::File(FileError {
        op: "locking",
        path,
        source: io::Error::other("the lock file was replaced again and again"),
    }))
}

/// Removes a run's `*.partial` files from another thread (a signal
/// handler's), while the run goes on or is about to be stopped.
#[derive(Clone)]
pub struct PartialCleaner(Arc<Shared>);

impl PartialCleaner {
    pub fn clean(&self) {
        self.0.clean_partials();
    }
    /// The process is about to end (a signal): waits for a commit under
    /// way, forbids any later one, removes the `*.partial` files and the
    /// lock file.
    pub fn interrupt(&self) {
        // One hold of the lock: no partial file is created between the two
        // (RunDir::create_file checks the flag under it).
        let mut st = self.0.lock();
        st.interrupted = true;
        self.0.clean_partials_locked(&st);
        drop(st);
        if let Some(p) = &self.0.lock_path {
            let _ = fs::remove_file(p);
        }
    }
}

impl OutDir {
    /// Checks (and creates, if missing) the folder and that it takes files.
    /// Refuses a folder that is not empty and holds no manifest unless
    /// `force`, and a manifest that is not one (an entry naming anything but
    /// a plain name in the folder): nothing is deleted here.
    pub fn open(dir: &Path, force: bool) -> Result<OutDir, OutError> {
        let mut created = false;
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(OutError::NotAFolder {
                    dir: dir.to_path_buf(),
                });
            }
            Ok(_) => {}
            Err(_) => {
                fs::create_dir_all(dir).map_err(ctx("creating", dir))?;
                created = true;
            }
        }
        let manifest = dir.join(MANIFEST);
        let ours = fs::symlink_metadata(&manifest).is_ok();
        if !ours && !force {
            // Refused without touching the folder (a lock file a killed
            // run left does not count).
            let mut rd = fs::read_dir(dir).map_err(ctx("reading", dir))?;
            if rd.any(|e| e.is_ok_and(|e| e.file_name() != LOCK)) {
                return Err(OutError::NotOurs {
                    dir: dir.to_path_buf(),
                });
            }
        }
        // Held from here to the end: the manifest is read, and the folder
        // cleared and written, by this run only.
        let (lock, lock_warning) = match take_lock(dir)? {
            Ok(l) => (Some(l), None),
            Err(w) => (None, Some(w)),
        };
        let earlier = if fs::symlink_metadata(&manifest).is_ok() {
            Some(read_manifest(&manifest)?)
        } else {
            None
        };
        // The folder takes files (before the run's work, not after it).
        let probe = partial(&manifest);
        remove_if_present(&probe)?;
        File::options()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(ctx("cannot write in", dir))?;
        fs::remove_file(&probe).map_err(ctx("removing", &probe))?;
        Ok(OutDir {
            shared: Arc::new(Shared {
                dir: dir.to_path_buf(),
                force,
                lock_path: lock.as_ref().map(|l| l.path.clone()),
                created,
                state: Mutex::new(State {
                    begun: false,
                    command: String::new(),
                    commit: None,
                    interrupted: false,
                    staged: Vec::new(),
                    entries: Vec::new(),
                    inside: Vec::new(),
                }),
            }),
            earlier,
            _lock: lock,
            lock_warning,
        })
    }

    /// Why the folder could not be locked (a file system without locks):
    /// the run goes on, unprotected from a second one.
    pub fn lock_warning(&self) -> Option<&str> {
        self.lock_warning.as_deref()
    }

    /// The commit the program was built from, written in the manifest
    /// (`commit C`); call before [`OutDir::begin`].
    pub fn set_commit(&mut self, commit: &str) {
        self.shared.lock().commit = Some(commit.to_string());
    }

    pub fn path(&self) -> &Path {
        &self.shared.dir
    }

    /// `name` in the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.shared.dir.join(name)
    }

    /// Whether an earlier fairsched run's manifest was found.
    pub fn had_manifest(&self) -> bool {
        self.earlier.is_some()
    }

    /// Clears what an earlier run wrote (the entries its manifest lists,
    /// folders recursively, and every top-level `*.partial` file; with
    /// `force` and no manifest, only the `*.partial` files of `planned`
    /// names), then writes this run's manifest listing `planned` (`NAME`
    /// for a file, `NAME/` for a folder). A planned name that is there and
    /// was not listed is refused before anything is deleted ([`OutError::InTheWay`]),
    /// or with `force` replaced. Returns the names left in the
    /// folder that this run does not write: the user's own, sorted. Called
    /// again, it only adds `planned` to the list.
    pub fn begin(&mut self, planned: &[&str]) -> Result<Vec<String>, OutError> {
        if self.shared.lock().begun {
            self.plan(planned)?;
            return Ok(Vec::new());
        }
        let planned = parse_names(planned)?;
        let dir = &self.shared.dir;
        // Before anything is deleted: an entry of this run's that the user
        // made (no run listed it) is refused without --force.
        if !self.shared.force {
            let listed = |e: &Entry| {
                self.earlier
                    .as_ref()
                    .is_some_and(|l| l.entries.iter().any(|o| o.name == e.name))
            };
            for e in planned.iter().filter(|e| !listed(e)) {
                self.shared.clear_way(e)?;
            }
        }
        let mut kept_inside: Vec<String> = Vec::new();
        // Folders an earlier run listed that the user's files keep: this
        // run writes into them as they are.
        let mut reused: Vec<String> = Vec::new();
        if let Some(earlier) = self.earlier.take() {
            for e in &earlier.entries {
                let path = dir.join(&e.name);
                let Ok(m) = fs::symlink_metadata(&path) else {
                    continue;
                };
                if m.is_dir() {
                    // A folder listed as a file is not what that run wrote.
                    if e.folder {
                        clear_run_folder(&path, &e.name, &earlier.inside, &mut kept_inside)?;
                        if path.is_dir() {
                            reused.push(e.name.clone());
                        }
                    }
                } else if !e.folder {
                    fs::remove_file(&path).map_err(ctx("removing", &path))?;
                }
            }
            for e in fs::read_dir(dir).map_err(ctx("reading", dir))?.flatten() {
                let is_file = e.file_type().is_ok_and(|t| !t.is_dir());
                if is_file && e.file_name().to_string_lossy().ends_with(".partial") {
                    remove_if_present(&e.path())?;
                }
            }
        } else {
            for e in &planned {
                remove_if_present(&partial(&dir.join(&e.name)))?;
            }
        }
        remove_if_present(&partial(&dir.join(MANIFEST)))?;
        for e in planned.iter().filter(|e| !(e.folder && reused.contains(&e.name))) {
            self.shared.clear_way(e)?;
        }
        let mut kept: Vec<String> = fs::read_dir(dir)
            .map_err(ctx("reading", dir))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != MANIFEST && n != LOCK && !planned.iter().any(|e| &e.name == n))
            .collect();
        kept.extend(kept_inside);
        kept.sort();
        let mut st = self.shared.lock();
        st.begun = true;
        st.command = command_line();
        st.entries = planned;
        self.shared.write_manifest(&st)?;
        Ok(kept)
    }

    /// Declares a file name this run writes inside its folders (besides
    /// [`FOLDER_FILES`]), so that the next run clears it with the folder.
    /// Call before [`OutDir::begin`].
    pub fn inside(&mut self, name: &str) -> Result<(), OutError> {
        let e = parse_names(&[name])?.remove(0);
        let mut st = self.shared.lock();
        if !e.folder && !st.inside.contains(&e.name) {
            st.inside.push(e.name);
        }
        Ok(())
    }

    /// Adds entries (`NAME` or `NAME/`) to the manifest, rewritten when the
    /// list grows: listed before they are written.
    pub fn plan(&self, names: &[&str]) -> Result<(), OutError> {
        let new = parse_names(names)?;
        let mut st = self.shared.lock();
        assert!(st.begun, "OutDir::plan before OutDir::begin");
        let before = st.entries.len();
        for e in new {
            if !st.entries.iter().any(|o| o.name == e.name) {
                self.shared.clear_way(&e)?;
                st.entries.push(e);
            }
        }
        if st.entries.len() != before {
            self.shared.write_manifest(&st)?;
        }
        Ok(())
    }

    /// Writes the file `name` in the folder atomically, listed first.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), OutError> {
        self.plan(&[name])?;
        Ok(write_atomic(&self.join(name), bytes)?)
    }

    /// The run folder `name/` (listed first), created. Its commit and
    /// this folder's interrupt exclude each other.
    pub fn run_dir(&self, name: &str) -> Result<RunDir, OutError> {
        self.plan(&[&format!("{name}/")])?;
        Ok(RunDir::with_shared(
            &self.join(name),
            Some(Arc::clone(&self.shared)),
        )?)
    }

    /// The folder itself as one run's folder (its files listed by
    /// [`OutDir::begin`]), as [`OutDir::run_dir`].
    pub fn here(&self) -> Result<RunDir, OutError> {
        Ok(RunDir::with_shared(
            &self.shared.dir,
            Some(Arc::clone(&self.shared)),
        )?)
    }

    /// Writes the files `(name, bytes)` in the folder (each listed first)
    /// so that they appear together: all are written under their
    /// `.partial` names, then renamed into place, `summary.json` last
    /// ([`RunDir::commit`]). Returns their names, as given.
    pub fn write_set(&self, files: &[(&str, &[u8])]) -> Result<Vec<String>, OutError> {
        let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        self.plan(&names)?;
        let set = self.here()?;
        for (name, bytes) in files {
            set.stage(&self.join(name), bytes)?;
        }
        set.commit()?;
        Ok(names.into_iter().map(String::from).collect())
    }

    /// A handle that removes this run's `*.partial` files from elsewhere.
    pub fn cleaner(&self) -> PartialCleaner {
        PartialCleaner(Arc::clone(&self.shared))
    }

    /// The run is done: the manifest lists only what exists (it is
    /// rewritten if an entry planned was not written).
    pub fn finish(self) -> Result<(), OutError> {
        let mut st = self.shared.lock();
        if !st.begun {
            return Ok(());
        }
        let before = st.entries.len();
        let dir = &self.shared.dir;
        st.entries
            .retain(|e| fs::symlink_metadata(dir.join(&e.name)).is_ok());
        if st.entries.len() != before {
            self.shared.write_manifest(&st)?;
        }
        Ok(())
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        self.shared.clean_partials();
        // Created by this run, which ended before writing anything: gone
        // again (only if empty but for the lock).
        if self.shared.created && !self.shared.lock().begun {
            if let Some(p) = &self.shared.lock_path {
                let _ = fs::remove_file(p);
            }
            let _ = fs::remove_dir(&self.shared.dir);
        }
    }
}

/// Clears a run folder an earlier run wrote: its [`FOLDER_FILES`], the
/// `inside` names and `*.partial` files; anything else (the user's notes,
/// a folder of plots) stays and is named in `kept` as `FOLDER/NAME`. The
/// folder goes only when nothing is left in it.
fn clear_run_folder(
    path: &Path,
    folder: &str,
    inside: &[String],
    kept: &mut Vec<String>,
) -> Result<(), OutError> {
    for e in fs::read_dir(path).map_err(ctx("reading", path))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours =
            FOLDER_FILES.contains(&name.as_str()) || inside.contains(&name) || name.ends_with(".partial");
        if ours && e.file_type().is_ok_and(|t| !t.is_dir()) {
            remove_if_present(&e.path())?;
        } else {
            kept.push(format!("{folder}/{name}"));
        }
    }
    // Not empty: the user's files keep it.
    let _ = fs::remove_dir(path);
    Ok(())
}

fn parse_names(names: &[&str]) -> Result<Vec<Entry>, OutError> {
    let mut out: Vec<Entry> = Vec::new();
    for n in names {
        let e = Entry::parse(n).map_err(|_| OutError::BadName { name: n.to_string() })?;
        if !out.iter().any(|o| o.name == e.name) {
            out.push(e);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_leaves_no_partial_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        write_atomic(&p, b"{}\n").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"{}\n");
        assert!(!partial(&p).exists());
        let e = write_atomic(&d.path().join("no/such/dir/x"), b"").unwrap_err();
        assert!(e.to_string().contains("no/such/dir/x.partial"), "{e}");
        // The OS error is the source, said by the source only.
        let os = std::error::Error::source(&e).expect("a source").to_string();
        assert!(!e.to_string().contains(&os), "{e} / {os}");
    }
    #[test]
    fn a_failed_atomic_write_leaves_no_partial_file() {
        let d = tempfile::tempdir().unwrap();
        // The rename fails: a non-empty folder holds the final name.
        let p = d.path().join("x");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), "").unwrap();
        assert!(write_atomic(&p, b"data").is_err());
        assert!(!partial(&p).exists());
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn manifest_entries(dir: &Path) -> Vec<String> {
        fs::read_to_string(dir.join(MANIFEST))
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("entry ").map(String::from))
            .collect()
    }

    #[test]
    fn a_folder_created_for_a_run_that_wrote_nothing_goes_again() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("new");
        drop(OutDir::open(&out, false).unwrap());
        assert!(!out.exists(), "an empty folder was left behind");
        // One that was there stays, and one this run began writing too.
        fs::create_dir(&out).unwrap();
        drop(OutDir::open(&out, false).unwrap());
        assert!(out.is_dir());
        let begun = d.path().join("begun");
        let mut o = OutDir::open(&begun, false).unwrap();
        o.begin(&["summary.json"]).unwrap();
        drop(o);
        assert!(begun.join(MANIFEST).exists());
    }

    #[test]
    fn a_missing_or_empty_folder_is_used_and_gets_a_manifest_first() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("a/b");
        let mut o = OutDir::open(&out, false).unwrap();
        assert!(out.is_dir(), "created by open");
        assert_eq!(names(&out), [LOCK], "open writes nothing but its lock");
        o.set_commit("abc1234-dirty");
        let kept = o.begin(&["comparison.csv", "fcfs/"]).unwrap();
        assert!(kept.is_empty());
        // The manifest is there before any result.
        assert_eq!(names(&out), [MANIFEST, LOCK]);
        let text = fs::read_to_string(out.join(MANIFEST)).unwrap();
        assert!(text.starts_with("fairsched-out 1\n"), "{text}");
        assert!(
            text.contains(&format!("version {}", env!("CARGO_PKG_VERSION"))),
            "{text}"
        );
        assert!(text.contains("\ncommand "), "{text}");
        assert!(text.contains("\ncommit abc1234-dirty\n"), "{text}");
        assert_eq!(manifest_entries(&out), ["comparison.csv", "fcfs/"]);
        // Entries written later are listed before they are written.
        o.write("extra.svg", b"<svg/>").unwrap();
        assert_eq!(manifest_entries(&out), ["comparison.csv", "fcfs/", "extra.svg"]);
        o.run_dir("fcfs").unwrap().write("summary.json", b"{}").unwrap();
        // At the end, a planned entry never written is dropped, and the
        // lock file goes.
        o.finish().unwrap();
        assert_eq!(manifest_entries(&out), ["fcfs/", "extra.svg"]);
        assert!(!out.join(LOCK).exists());
        // An empty folder is used as it is.
        let empty = d.path().join("empty");
        fs::create_dir(&empty).unwrap();
        OutDir::open(&empty, false).unwrap();
    }

    #[test]
    fn a_second_run_replaces_what_the_first_wrote_and_keeps_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        let mut o = OutDir::open(out, false).unwrap();
        o.begin(&["comparison.csv", "fcfs/", "easy/"]).unwrap();
        o.write("comparison.csv", b"a\n").unwrap();
        for p in ["fcfs", "easy"] {
            o.run_dir(p).unwrap().write("summary.json", b"{}").unwrap();
        }
        o.finish().unwrap();
        // Between the runs: the user's own files, and what a killed run leaves.
        fs::write(out.join("notes.txt"), "mine").unwrap();
        fs::create_dir(out.join("mine")).unwrap();
        fs::write(out.join("x.partial"), "").unwrap();
        fs::write(out.join("easy/tasks.csv.partial"), "").unwrap();

        let mut o = OutDir::open(out, false).unwrap();
        assert!(o.had_manifest());
        // Nothing is deleted before begin.
        assert!(out.join("easy").exists() && out.join("x.partial").exists());
        let kept = o.begin(&["comparison.csv", "fair-share/"]).unwrap();
        assert_eq!(kept, ["mine", "notes.txt"]);
        assert_eq!(names(out), [MANIFEST, LOCK, "mine", "notes.txt"]);
        o.write("comparison.csv", b"b\n").unwrap();
        o.run_dir("fair-share").unwrap();
        o.finish().unwrap();
        assert_eq!(manifest_entries(out), ["comparison.csv", "fair-share/"]);
        assert_eq!(
            names(out),
            [MANIFEST, "comparison.csv", "fair-share", "mine", "notes.txt"]
        );
    }

    #[test]
    fn a_folder_of_other_files_is_refused_unless_forced() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        fs::write(out.join("data.swf"), "x").unwrap();
        fs::write(out.join("summary.json"), "old").unwrap();
        let e = OutDir::open(out, false).err().expect("refused");
        assert!(e.is_usage());
        let msg = e.to_string();
        assert!(
            msg.contains("not empty and not a fairsched output folder (no .fairsched-out)")
                && msg.contains("--force"),
            "{msg}"
        );
        assert_eq!(names(out), ["data.swf", "summary.json"], "nothing written");
        // Forced: files of the same name are replaced, the others stay, and
        // the folder is fairsched's from now on.
        let mut o = OutDir::open(out, true).unwrap();
        assert_eq!(o.begin(&["summary.json"]).unwrap(), ["data.swf"]);
        o.write("summary.json", b"new").unwrap();
        o.finish().unwrap();
        assert_eq!(fs::read(out.join("summary.json")).unwrap(), b"new");
        let mut o = OutDir::open(out, false).unwrap();
        assert_eq!(o.begin(&["other.csv"]).unwrap(), ["data.swf"]);
        assert!(!out.join("summary.json").exists());
        // A file as --out.
        let e = OutDir::open(&out.join("data.swf"), true).err().unwrap();
        assert!(e.is_usage() && e.to_string().contains("not a folder"), "{e}");
    }

    #[test]
    fn an_untrusted_manifest_is_refused_and_nothing_is_deleted() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("evil");
        fs::write(&victim, "precious").unwrap();
        let outside = d.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("f"), "precious").unwrap();
        let out = d.path().join("out");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("summary.json"), "{}").unwrap();
        let abs = outside.display().to_string();
        let cases: Vec<(String, usize, &str)> = vec![
            ("entry summary.json\nentry ../evil\n".into(), 5, "`..`"),
            ("entry ..\n".into(), 4, "`..`"),
            (format!("entry {abs}/\n"), 4, "absolute"),
            ("entry a/b\n".into(), 4, "a path"),
            ("entry sub/../../evil\n".into(), 4, "`..`"),
            ("entry sub/x\n".into(), 4, "a path"),
            ("entry .\n".into(), 4, "`.`"),
            ("entry \n".into(), 4, "empty"),
            ("entry a\\b\n".into(), 4, "a path"),
            ("entry a\\..\\..\\b\n".into(), 4, "`..`"),
            ("entry x\u{0}y\n".into(), 4, "control"),
            ("entry .fairsched-out\n".into(), 4, "manifest"),
            ("rm -rf /\n".into(), 4, "unknown key"),
        ];
        for (body, line, says) in cases {
            let text = format!("fairsched-out 1\nversion 0\ncommand x\n{body}");
            fs::write(out.join(MANIFEST), &text).unwrap();
            let e = OutDir::open(&out, false)
                .err()
                .unwrap_or_else(|| panic!("accepted {body:?}"));
            let msg = e.to_string();
            assert!(!e.is_usage(), "{msg}");
            assert!(
                msg.starts_with(&format!("{}:{line}: ", out.join(MANIFEST).display()))
                    && msg.contains(says)
                    && msg.contains("nothing was deleted"),
                "{body:?}: {msg}"
            );
            assert_eq!(fs::read(&victim).unwrap(), b"precious");
            assert_eq!(fs::read(outside.join("f")).unwrap(), b"precious");
            assert!(out.join("summary.json").exists());
        }
        for (bytes, says) in [
            (b"".to_vec(), "empty"),
            (b"entry x\n".to_vec(), ":1: not a fairsched manifest"),
            (b"fairsched-out 9\n".to_vec(), ":1: format \"9\""),
            (vec![0xff, 0xfe, b'\n'], "not UTF-8"),
            (vec![b'#'; (MAX_MANIFEST_BYTES + 10) as usize], "larger than"),
        ] {
            fs::write(out.join(MANIFEST), &bytes).unwrap();
            let e = OutDir::open(&out, false).err().expect("refused");
            assert!(e.to_string().contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn a_listed_name_that_is_a_link_is_unlinked_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("f"), "precious").unwrap();
        let out = d.path().join("out");
        fs::create_dir(&out).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&outside, out.join("run")).unwrap();
            std::os::unix::fs::symlink(&outside, out.join("link")).unwrap();
            fs::write(out.join(MANIFEST), "fairsched-out 1\nentry run/\nentry link\n").unwrap();
            let mut o = OutDir::open(&out, false).unwrap();
            let kept = o.begin(&[]).unwrap();
            // `link` (listed as a file) is unlinked; `run` (listed as a
            // folder, but a link) stays; the folder it points to is intact.
            assert_eq!(kept, ["run"]);
            assert!(!out.join("link").exists());
            assert_eq!(fs::read(outside.join("f")).unwrap(), b"precious");
        }
    }

    #[test]
    fn dropping_a_run_removes_its_partial_files() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        fs::write(out.join("theirs.partial"), "").unwrap();
        let mut o = OutDir::open(out, true).unwrap();
        o.begin(&["a.csv"]).unwrap();
        let run = o.run_dir("fcfs").unwrap();
        let csv = run.tasks_csv().unwrap();
        fs::write(out.join("a.csv.partial"), "").unwrap();
        assert!(out.join("fcfs/tasks.csv.partial").exists());
        // An error path: the run is abandoned.
        drop(csv);
        drop(o);
        assert!(!out.join("fcfs/tasks.csv.partial").exists());
        assert!(!out.join("a.csv.partial").exists());
        // A file not of this run stays (the folder was forced).
        assert!(out.join("theirs.partial").exists());
    }
    #[cfg(unix)]
    #[test]
    fn a_partial_name_that_links_elsewhere_is_replaced_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("precious");
        fs::write(&outside, "precious").unwrap();
        let out = d.path().join("out");
        fs::create_dir(&out).unwrap();
        for name in ["summary.json", "tasks.csv"] {
            std::os::unix::fs::symlink(&outside, out.join(format!("{name}.partial"))).unwrap();
        }
        std::os::unix::fs::symlink(&outside, out.join(".fairsched-out.partial")).unwrap();
        let mut o = OutDir::open(&out, true).unwrap();
        o.begin(&["summary.json", "tasks.csv"]).unwrap();
        write_atomic(&out.join("summary.json"), b"{}").unwrap();
        let run = RunDir::create(&out).unwrap();
        let csv = run.tasks_csv().unwrap();
        run.finish_tasks_csv(csv).unwrap();
        run.commit().unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        drop(o);
        // A manifest that is not a regular file (a FIFO would block).
        let m = out.join(MANIFEST);
        fs::remove_file(&m).unwrap();
        fs::create_dir(&m).unwrap();
        let e = OutDir::open(&out, false).err().unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    #[test]
    fn a_second_run_into_a_held_folder_stops_at_once() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let first = OutDir::open(&out, false).unwrap();
        assert!(first.lock_warning().is_none());
        // The same folder by another path: the lock is the folder's.
        let e = OutDir::open(&d.path().join("./out/"), false).err().expect("busy");
        assert!(matches!(e, OutError::Busy { .. }) && !e.is_usage(), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("another fairsched run is writing into this folder") && msg.contains("out"),
            "{msg}"
        );
        // Nothing of the first run's was touched.
        assert_eq!(names(&out), [LOCK]);
        drop(first);
        assert!(
            !out.exists(),
            "the lock file goes with the run, and the folder it created for nothing"
        );
        // A lock file a killed run left holds no lock: taken over, and a
        // folder holding only it is not someone else's.
        fs::create_dir(&out).unwrap();
        fs::write(out.join(LOCK), "").unwrap();
        let mut o = OutDir::open(&out, false).unwrap();
        assert!(
            o.begin(&["a.csv"]).unwrap().is_empty(),
            "the lock is not the user's"
        );
        drop(o);
        // A lock file held by another handle (as another process would).
        let held = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(out.join(LOCK))
            .unwrap();
        held.lock().unwrap();
        assert!(matches!(OutDir::open(&out, true), Err(OutError::Busy { .. })));
        assert!(out.join(MANIFEST).exists(), "nothing deleted");
        drop(held);
        OutDir::open(&out, false).unwrap();
        // Never a name a run may write.
        assert!(Entry::parse(LOCK).is_err());
    }

    #[test]
    fn a_runs_files_appear_together_when_it_commits_and_never_before() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let elsewhere = d.path().join("schedule.swf");
        let o = OutDir::open(&out, false).unwrap();
        let mut o = o;
        o.begin(&["fcfs/"]).unwrap();
        let run = o.run_dir("fcfs").unwrap();
        let csv = run.tasks_csv().unwrap();
        run.finish_tasks_csv(csv).unwrap();
        run.stage(&elsewhere, b"; swf\n").unwrap();
        run.stage(&run.path().join("summary.json"), b"{}").unwrap();
        run.stage(&run.path().join("orgs.csv"), b"org\n").unwrap();
        // Staged: nothing under a final name yet.
        assert_eq!(
            names(&out.join("fcfs")),
            ["orgs.csv.partial", "summary.json.partial", "tasks.csv.partial"]
        );
        assert!(!elsewhere.exists());
        let done = run.commit().unwrap();
        let last: Vec<String> = done
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(last, ["tasks.csv", "schedule.swf", "orgs.csv", "summary.json"]);
        assert_eq!(
            names(&out.join("fcfs")),
            ["orgs.csv", "summary.json", "tasks.csv"]
        );
        assert_eq!(fs::read(&elsewhere).unwrap(), b"; swf\n");

        // A run dropped before its commit (an error) leaves nothing.
        let run = o.run_dir("easy").unwrap();
        let csv = run.tasks_csv().unwrap();
        run.finish_tasks_csv(csv).unwrap();
        run.stage(&d.path().join("other.swf"), b"x").unwrap();
        drop(run);
        assert!(names(&out.join("easy")).is_empty());
        assert!(!d.path().join("other.swf.partial").exists());

        // An interrupt removes what is staged, here or elsewhere, and no
        // commit follows it.
        let run = o.run_dir("fifo").unwrap();
        run.stage(&run.path().join("summary.json"), b"{}").unwrap();
        run.stage(&d.path().join("third.swf"), b"x").unwrap();
        o.cleaner().interrupt();
        assert!(names(&out.join("fifo")).is_empty());
        assert!(!d.path().join("third.swf.partial").exists());
        assert!(!out.join(LOCK).exists(), "the process ends without destructors");
        let e = run.commit().unwrap_err();
        assert_eq!(e.source.kind(), io::ErrorKind::Interrupted, "{e}");
        assert!(!out.join("fifo/summary.json").exists());
    }

    #[test]
    fn a_set_of_files_is_written_together_summary_last() {
        let d = tempfile::tempdir().unwrap();
        let mut o = OutDir::open(d.path(), false).unwrap();
        o.begin(&[]).unwrap();
        let names_written = o
            .write_set(&[("summary.json", b"{}"), ("a.csv", b"a"), ("b.svg", b"b")])
            .unwrap();
        assert_eq!(names_written, ["summary.json", "a.csv", "b.svg"]);
        o.finish().unwrap();
        assert_eq!(manifest_entries(d.path()), ["summary.json", "a.csv", "b.svg"]);
        assert_eq!(fs::read(d.path().join("a.csv")).unwrap(), b"a");
    }

    #[test]
    fn an_entry_of_the_users_in_the_way_is_refused_unless_forced() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        let mut o = OutDir::open(out, false).unwrap();
        o.begin(&["a.csv"]).unwrap();
        o.write("a.csv", b"1").unwrap();
        o.finish().unwrap();
        // The user's own folder and file, of names the next run writes.
        fs::create_dir(out.join("fcfs")).unwrap();
        fs::write(out.join("fcfs/notes.txt"), "mine").unwrap();
        fs::write(out.join("c.txt"), "mine").unwrap();
        let mut o = OutDir::open(out, false).unwrap();
        let e = o.begin(&["a.csv", "fcfs/"]).unwrap_err();
        assert!(e.is_usage(), "{e}");
        assert!(
            e.to_string()
                .contains("fcfs/ is there and no fairsched run wrote it")
                && e.to_string().contains("--force"),
            "{e}"
        );
        // Refused before anything was deleted.
        assert!(out.join("a.csv").exists() && out.join("fcfs/notes.txt").exists());
        drop(o);
        // A name found only while the run goes is refused too.
        let mut o = OutDir::open(out, false).unwrap();
        o.begin(&["a.csv"]).unwrap();
        let e = o.write("c.txt", b"new").unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("c.txt is there"), "{e}");
        assert_eq!(fs::read(out.join("c.txt")).unwrap(), b"mine");
        drop(o);
        // --force replaces them.
        let mut o = OutDir::open(out, true).unwrap();
        o.begin(&["a.csv", "fcfs/"]).unwrap();
        assert!(!out.join("fcfs").exists(), "the folder of that name is replaced");
        o.run_dir("fcfs").unwrap();
        o.write("c.txt", b"new").unwrap();
        assert_eq!(fs::read(out.join("c.txt")).unwrap(), b"new");
    }
}
