//! A temporary file of this process's own, for the readers that take a path.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file in /dev/shm (or the temporary directory), removed when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// Writes `bytes` to a fresh file whose name ends with `suffix`.
    pub fn new(suffix: &str, bytes: &[u8]) -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!("fairsched-fuzz-{}-{n}{suffix}", std::process::id()));
        std::fs::write(&path, bytes).expect("write a temporary file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
