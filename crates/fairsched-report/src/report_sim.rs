//! `fairsched report` sections of `simulate` runs.

use crate::html::Block;
use crate::report::{Options, RunFolder, tool_facts};
use serde_json::Value;

/// One `simulate` run (a folder with `summary.json` naming a policy).
pub fn single(f: &mut RunFolder, summary: &Value, _opts: &Options) -> Vec<Block> {
    vec![Block::Facts(tool_facts(f, summary, "summary.json"))]
}

/// `simulate` with several policies: `comparison.json` and one folder per
/// policy.
pub fn comparison(_f: &mut RunFolder, _comparison: &Value, _opts: &Options) -> Vec<Block> {
    Vec::new()
}
