//! `fairsched trace …`: inspect workload logs.

use crate::term::{say, sayln};
use anyhow::Context;
use fairsched_trace::{TraceInfo, scan};
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum TraceCommand {
    /// Header, job count, users, span, processors, every filter count.
    Info {
        /// An SWF log, plain or gzip.
        file: PathBuf,
        /// Skip malformed lines (and count them) instead of stopping.
        #[arg(long)]
        lenient: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(c: TraceCommand) -> anyhow::Result<()> {
    match c {
        TraceCommand::Info { file, lenient, json } => {
            let s = scan(&file, lenient).with_context(|| format!("reading {}", file.display()))?;
            let info = TraceInfo::from_scan(&s);
            if json {
                sayln!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                say!("{info}");
            }
            Ok(())
        }
    }
}
