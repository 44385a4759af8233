//! Records the git commit the binary is built from, for `summary.json`:
//! `FAIRSCHED_GIT_COMMIT` is `git rev-parse --short HEAD`, with `-dirty`
//! when tracked files differ from it, or `unknown` when git or the
//! checkout is missing, or the checkout is not this workspace's (a source
//! tarball builds all the same).
//!
//! Cargo runs this again when HEAD moves (`.git/HEAD`, the branch's ref
//! file, `packed-refs`) and when a file of the workspace's sources changes
//! (which may make the tree dirty or clean). Only paths that exist are
//! watched: Cargo would otherwise run this before every build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = commit(&manifest).unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=FAIRSCHED_GIT_COMMIT={commit}");
}

/// `git` in `dir`, its trimmed standard output if it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn commit(manifest: &Path) -> Option<String> {
    // Only this workspace's own checkout: a tarball unpacked inside some
    // other repository is not that repository's commit.
    let top = PathBuf::from(git(manifest, &["rev-parse", "--show-toplevel"])?);
    let workspace = manifest.join("../..");
    if top.canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let hash = git(manifest, &["rev-parse", "--short", "HEAD"])?;
    if hash.is_empty() || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    watch(manifest, &top);
    let dirty =
        git(manifest, &["status", "--porcelain", "--untracked-files=no"]).is_none_or(|s| !s.is_empty());
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}

/// Asks Cargo to run this again when HEAD, its branch or the sources
/// change; only existing paths (a missing one would rerun it every time).
fn watch(manifest: &Path, top: &Path) {
    let mut paths: Vec<PathBuf> = Vec::new();
    let git_path = |p: &str| git(manifest, &["rev-parse", "--git-path", p]).map(|s| manifest.join(s));
    paths.extend(git_path("HEAD"));
    if let Some(branch) = git(manifest, &["symbolic-ref", "-q", "HEAD"]) {
        paths.extend(git_path(&branch));
    }
    paths.extend(git_path("packed-refs"));
    for p in ["Cargo.toml", "Cargo.lock", "data"] {
        paths.push(top.join(p));
    }
    // Each crate's sources, not the `crates` folder itself: a file a test
    // or a run leaves beside them (an `out` folder in the crate a test
    // ran in) would run this again, and rebuild and relink the binary
    // while other tests run it (.ci/run builds beside running tests).
    let crates = std::fs::read_dir(top.join("crates"))
        .into_iter()
        .flatten()
        .flatten();
    let mut dirs: Vec<PathBuf> = crates.map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for dir in dirs {
        for p in [
            "Cargo.toml",
            "build.rs",
            "src",
            "tests",
            "benches",
            "examples",
            "python",
        ] {
            paths.push(dir.join(p));
        }
    }
    for p in paths {
        if p.exists() {
            println!("cargo::rerun-if-changed={}", p.display());
        }
    }
}
