//! `fairsched policies`: the registry, with parameters and docs.

use crate::term::{say, sayln};
use fairsched_core::Registry;
use fairsched_sim::policies;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args, registry: &Registry) -> anyhow::Result<()> {
    if a.json {
        sayln!("{}", serde_json::to_string_pretty(&policies::json(registry))?);
    } else {
        say!("{}", policies::text(registry));
    }
    Ok(())
}
