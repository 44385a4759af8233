//! The registry listed for people (`fairsched policies`) and for
//! programs (`fairsched policies --json`): each policy's kind, what it
//! reads, its parameters and documentation.

use fairsched_core::{Kind, Reads, Registry};
use std::fmt::Write;

/// Every line of the text fits this many columns.
pub const WIDTH: usize = 80;

/// Every entry as a JSON object: name, kind, doc, params, reads,
/// clairvoyant, parallel_jobs, between_organizations.
pub fn json(registry: &Registry) -> serde_json::Value {
    registry
        .entries()
        .iter()
        .map(|e| {
            serde_json::json!({
                "name": e.name, "kind": e.kind(), "doc": e.doc, "params": e.params,
                "reads": e.reads(), "clairvoyant": e.clairvoyant(), "parallel_jobs": e.parallel,
                "between_organizations": e.orgs,
            })
        })
        .collect()
}

/// The registry by extension point: each policy's name, then its
/// description and parameters wrapped to [`WIDTH`] columns.
pub fn text(registry: &Registry) -> String {
    let mut s = String::new();
    s.push_str(&wrap(
        "Write a policy as NAME or NAME[key=value,...], e.g. --control 'age-boost[after=10m,by=2]'. \
         Durations take s, m, h or d.",
        "",
    ));
    for (kind, flag, what) in [
        (Kind::Order, "--policy", "which waiting task starts next"),
        (Kind::Allocate, "--allocate", "which machine gets a task"),
        (Kind::Control, "--control", "priority changes while tasks wait"),
    ] {
        let _ = writeln!(s, "\n{} policies ({flag}: {what})", kind.name());
        for e in registry.of_kind(kind) {
            let _ = writeln!(s, "\n  {}", e.name);
            let mut doc = e.doc.to_string();
            if e.orgs {
                doc.push_str(" [between organizations: give --orgs K or --platform FILE]");
            }
            match e.reads() {
                Reads::Oracle => doc.push_str(" [clairvoyant: simulation only, refused by `serve`]"),
                Reads::Estimates => {
                    doc.push_str(" [reads the users' runtime estimates: simulation only, refused by `serve`]")
                }
                Reads::Blind => {}
            }
            s.push_str(&wrap(&doc, "      "));
            for p in e.params {
                let head = format!("      {}={}", p.name, p.default);
                // The parameter's doc on the same line when it fits beside it.
                let indent = " ".repeat(head.len().max(24) + 2);
                let body = wrap(p.doc, &indent);
                let first = body.trim_start();
                if head.len() + 2 <= indent.len() {
                    let _ = write!(s, "{head:<w$}{first}", w = indent.len());
                } else {
                    let _ = writeln!(s, "{head}");
                    s.push_str(&body);
                }
            }
        }
    }
    s
}

fn wrap(text: &str, indent: &str) -> String {
    let opts = textwrap::Options::new(WIDTH)
        .initial_indent(indent)
        .subsequent_indent(indent)
        // Never break inside `age-boost` or `fair-share`.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut out = textwrap::fill(text, opts);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_fits_and_every_policy_and_parameter_is_listed() {
        let r = Registry::builtin();
        let t = text(&r);
        for l in t.lines() {
            assert!(l.chars().count() <= WIDTH, "{} columns: {l}", l.chars().count());
        }
        for e in r.entries() {
            assert!(t.contains(&format!("\n  {}\n", e.name)), "{}", e.name);
            for p in e.params {
                assert!(
                    t.contains(&format!("{}={}", p.name, p.default)),
                    "{}.{}",
                    e.name,
                    p.name
                );
            }
        }
    }
}
