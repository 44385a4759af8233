//! `fairsched report` sections of experiments, `trace stats` and
//! `trace tau`.

use crate::html::Block;
use crate::report::{Options, RunFolder, tool_facts};
use serde_json::Value;

/// An experiment's folder (`summary.json` with `experiment`).
pub fn experiment(f: &mut RunFolder, _name: &str, summary: &Value, opts: &Options) -> Vec<Block> {
    let mut out = vec![Block::Facts(tool_facts(f, summary, "summary.json"))];
    out.extend(f.printed_tables(opts));
    out
}

/// `trace stats --out`.
pub fn trace_stats(f: &mut RunFolder, summary: &Value, _opts: &Options) -> Vec<Block> {
    vec![Block::Facts(tool_facts(f, summary, "summary.json"))]
}

/// `trace tau --out`.
pub fn trace_tau(f: &mut RunFolder, tau: &Value, _opts: &Options) -> Vec<Block> {
    vec![Block::Facts(tool_facts(f, tau, "tau.json"))]
}
