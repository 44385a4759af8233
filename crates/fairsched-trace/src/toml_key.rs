//! Where a byte offset of a TOML document is: its line, and the key path
//! (`org[1].procs`, `activity[0].exec.sigma`) whose key or value holds it.
//! Shared by every TOML file the project reads, so that all their errors
//! name a mistake the same way.

use std::fmt::Write as _;
use std::ops::Range;
use toml::de::{DeTable, DeValue};

/// The innermost key whose key or value holds `pos`, as a path.
pub fn key_path(root: &DeTable<'_>, pos: usize) -> Option<String> {
    let mut path = String::new();
    walk_table(root, pos, &mut path);
    (!path.is_empty()).then_some(path)
}

/// 1-based line of byte offset `pos`.
pub fn line_of(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    1 + text.as_bytes()[..pos].iter().filter(|&&b| b == b'\n').count()
}

fn contains(span: &Range<usize>, pos: usize) -> bool {
    span.start <= pos && (pos < span.end || (span.is_empty() && pos == span.start))
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        path.push_str(key);
    } else {
        let _ = write!(path, "{key:?}");
    }
}

/// Appends to `path` the innermost key whose key or value holds `pos`; true if found.
fn walk_table(t: &DeTable<'_>, pos: usize, path: &mut String) -> bool {
    for (k, v) in t.iter() {
        if contains(&k.span(), pos) {
            push_key(path, k.get_ref());
            return true;
        }
        if contains(&v.span(), pos) {
            push_key(path, k.get_ref());
            let mut sub = String::new();
            if walk_value(v.get_ref(), pos, &mut sub) {
                append(path, &sub);
            }
            return true;
        }
    }
    // The tables of an array of tables have spans covering only their `[[header]]`: look
    // inside the values too.
    for (k, v) in t.iter() {
        let mut sub = String::new();
        if walk_value(v.get_ref(), pos, &mut sub) {
            push_key(path, k.get_ref());
            append(path, &sub);
            return true;
        }
    }
    false
}

fn append(path: &mut String, sub: &str) {
    if sub.is_empty() {
        return;
    }
    if !sub.starts_with('[') && !path.is_empty() {
        path.push('.');
    }
    path.push_str(sub);
}

fn walk_value(v: &DeValue<'_>, pos: usize, path: &mut String) -> bool {
    match v {
        DeValue::Table(t) => walk_table(t, pos, path),
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                let mut sub = String::new();
                let inside = contains(&item.span(), pos);
                if walk_value(item.get_ref(), pos, &mut sub) || inside {
                    let _ = write!(path, "[{i}]");
                    append(path, &sub);
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}
