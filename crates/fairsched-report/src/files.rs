//! Result files: written under a temporary name, synced and renamed into
//! place, so a crash or a kill never leaves a half-written result under its
//! final name. [`RunDir`] lays out one run's folder.

use crate::aggregates;
use crate::tasks_csv::TasksCsv;
use fairsched_core::metrics::Metrics;
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

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

/// Writes `bytes` to `path` atomically (write, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let tmp = partial(path);
    let mut f = File::create(&tmp).map_err(ctx("creating", &tmp))?;
    f.write_all(bytes).map_err(ctx("writing", &tmp))?;
    f.sync_all().map_err(ctx("syncing", &tmp))?;
    fs::rename(&tmp, path).map_err(ctx("renaming into place", path))
}

/// Pretty JSON with a final newline.
pub fn json_bytes(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).expect("serializable");
    s.push('\n');
    s.into_bytes()
}

/// One run's folder: `tasks.csv` (streamed while the run goes), `orgs.csv`,
/// `users.csv` and `summary.json`.
pub struct RunDir {
    dir: PathBuf,
}

impl RunDir {
    pub fn create(dir: &Path) -> Result<RunDir, FileError> {
        fs::create_dir_all(dir).map_err(ctx("creating", dir))?;
        Ok(RunDir {
            dir: dir.to_path_buf(),
        })
    }
    pub fn path(&self) -> &Path {
        &self.dir
    }
    /// A `tasks.csv` writer (to `tasks.csv.partial` until
    /// [`RunDir::finish_tasks_csv`]).
    pub fn tasks_csv(&self) -> Result<TasksCsv<BufWriter<File>>, FileError> {
        let tmp = partial(&self.dir.join("tasks.csv"));
        let f = File::create(&tmp).map_err(ctx("creating", &tmp))?;
        Ok(TasksCsv::new(BufWriter::with_capacity(1 << 16, f)))
    }
    /// Flushes and syncs `tasks.csv`, then moves it into place.
    pub fn finish_tasks_csv(&self, csv: TasksCsv<BufWriter<File>>) -> Result<(), FileError> {
        let path = self.dir.join("tasks.csv");
        let tmp = partial(&path);
        let file = csv.finish().map_err(ctx("writing", &tmp))?;
        let file = file
            .into_inner()
            .map_err(|e| ctx("writing", &tmp)(e.into_error()))?;
        file.sync_all().map_err(ctx("syncing", &tmp))?;
        fs::rename(&tmp, &path).map_err(ctx("renaming into place", &path))
    }
    /// Writes `name` in the folder, atomically.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), FileError> {
        write_atomic(&self.dir.join(name), bytes)
    }
    /// `orgs.csv` (with each organization's utility and contribution
    /// when given), `users.csv` and `summary.json`.
    pub fn write_results(
        &self,
        metrics: &Metrics,
        utility: Option<&[aggregates::OrgUtility]>,
        summary: &impl Serialize,
    ) -> Result<(), FileError> {
        let orgs = match utility {
            Some(u) => aggregates::by_org_with_utility(metrics, u),
            None => aggregates::by_org(metrics),
        };
        self.write("orgs.csv", orgs.to_csv().as_bytes())?;
        self.write("users.csv", aggregates::by_user(metrics).to_csv().as_bytes())?;
        self.write("summary.json", &json_bytes(summary))
    }
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
}
