//! Fixtures shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// One SWF job line with the fields tests care about; everything else -1.
pub fn line(id: i64, submit: i64, run: i64, alloc: i64, req: i64, status: i64, user: i64) -> String {
    format!("{id} {submit} 0 {run} {alloc} -1 -1 {req} 3600 -1 {status} {user} 1 -1 -1 -1 -1 -1\n")
}

/// A well-formed job line (job `id`, submitted at `submit`).
pub fn ok_line(id: i64, submit: i64) -> String {
    line(id, submit, 100, 4, 4, 1, 1)
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Writes `bytes` to `name` inside a fresh temporary directory.
pub fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}
