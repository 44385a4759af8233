//! `fairsched policies`: the registry, with parameters and docs.

use crate::term::{say, sayln};
use fairsched_core::REGISTRY;
use fairsched_report::Table;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.json {
        let v: Vec<_> = REGISTRY
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name, "kind": e.kind(), "doc": e.doc, "params": e.params,
                    "clairvoyant": e.clairvoyant(), "parallel_jobs": e.parallel,
                })
            })
            .collect();
        sayln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut t = Table::new(["policy", "point", "description"]);
    t.columns[1].1 = fairsched_report::Align::Left;
    for e in REGISTRY {
        let mut doc = e.doc.to_string();
        if e.clairvoyant() {
            doc.push_str(" [clairvoyant: simulation only]");
        }
        t.row([e.name.to_string(), e.kind().name().to_string(), doc]);
        for p in e.params {
            t.row([
                format!("  {}={}", p.name, p.default),
                String::new(),
                p.doc.to_string(),
            ]);
        }
    }
    t.note("Write a policy as name or name[key=value,...]; e.g. --control 'age-boost[after=10m,by=2]'.");
    t.note("--policy takes an order, --allocate an allocate policy, --control a control policy.");
    say!("{}", t.to_text());
    Ok(())
}
