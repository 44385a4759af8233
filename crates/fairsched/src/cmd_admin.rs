//! `fairsched admin …`: set up a broker's database.

use crate::term::{sayln, usage};
use fairsched_broker::{Config, Live, LiveError};
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum AdminCommand {
    /// Create the broker's database (once, before the first `fairsched serve`) with the
    /// policies the broker will run, and print the admin token alone on stdout. The
    /// token is shown only now; the database keeps its SHA-256 hash.
    Init {
        /// The SQLite database to create (refused if it already holds one).
        #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
        db: PathBuf,
        /// Order policy (`fairsched policies`). Refused: clairvoyant ones (`ref`, `rand`: live tasks
        /// have no known runtimes) and `easy` (it needs requested run times, which live tasks do not
        /// give).
        #[arg(long, default_value = "first-fit", value_name = "SPEC")]
        policy: String,
        /// Allocate policy (the live service has one pool of slots; `mst` is clairvoyant: refused).
        #[arg(long, default_value = "single-pool", value_name = "SPEC")]
        allocate: String,
        /// Control policy, e.g. `workflow-fairness[tau=0.2]` (default: none).
        #[arg(long, value_name = "SPEC")]
        control: Option<String>,
        /// The core's seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    #[command(flatten)]
    Live(crate::cmd_live::AdminLive),
}

pub fn run(c: AdminCommand) -> anyhow::Result<()> {
    match c {
        AdminCommand::Init {
            db,
            policy,
            allocate,
            control,
            seed,
        } => {
            let config = Config {
                allocate,
                order: policy,
                control,
                seed,
            };
            let live =
                Live::create(&db, &config, &fairsched_core::Registry::builtin()).map_err(|e| match e {
                    // A configuration the core refuses is the command line's.
                    LiveError::Config(m) => usage(m),
                    e => e.into(),
                })?;
            let token = live.store().admin_token()?;
            sayln!("{token}");
            Ok(())
        }
        AdminCommand::Live(c) => crate::cmd_live::admin_live(c),
    }
}
