//! Result files: written to a temporary name and renamed into place, so a
//! crash never leaves a half-written result under its final name.

use anyhow::Context;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `path` with `.partial` appended: where a file is written before it is
/// renamed into place.
pub fn partial(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// Writes `bytes` to `path` atomically (write, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = partial(path);
    let mut f = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.sync_all()
        .with_context(|| format!("syncing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Moves a finished `.partial` file into place.
pub fn commit(path: &Path) -> anyhow::Result<()> {
    let tmp = partial(path);
    fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// A policy spec as a directory name: `age-boost[after=600]` → `age-boost_after-600`.
pub fn slug(spec: &str) -> String {
    let mut s: String = spec
        .chars()
        .map(|c| match c {
            '[' | ',' => '_',
            '=' | ':' => '-',
            ']' => '\0',
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' => c,
            _ => '_',
        })
        .filter(|&c| c != '\0')
        .collect();
    if s.is_empty() {
        s.push('_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_plain_names() {
        assert_eq!(slug("fifo"), "fifo");
        assert_eq!(slug("age-boost[after=600,by=2]"), "age-boost_after-600_by-2");
        assert_eq!(slug("x[s=zipf:1]"), "x_s-zipf-1");
    }
}
