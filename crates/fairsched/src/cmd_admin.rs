//! `fairsched admin …`: set up a broker's database, back it up, keep its
//! log in bounds, check it.

use crate::term::{note, sayln, usage};
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
    /// Copy the broker's database to OUT while the broker runs (SQLite's online backup: the
    /// copy is the database as of one commit). OUT is created readable by you only, and
    /// refused if it exists; `fairsched serve --db OUT` serves the copy. The archive made by
    /// `admin compact`, if any, is not copied: the copy records the same one.
    Backup {
        /// The database to copy.
        #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
        db: PathBuf,
        /// The copy (a new file).
        #[arg(value_name = "OUT")]
        out: PathBuf,
    },
    /// Move the steps of the log that no restart needs — those up to the older of the two
    /// snapshots kept — into an archive, so that the database stops growing with every step.
    /// A restart restores a snapshot and replays the steps after it: every one of those stays.
    /// A replay of the whole log reads the archive first. Refused while a broker serves the
    /// database (and no broker starts meanwhile).
    Compact {
        /// The database (its broker stopped).
        #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
        db: PathBuf,
        /// The archive: a SQLite file, created readable by you only, appended to by later
        /// compactions [default: DB.archive; once made, the one the database records].
        #[arg(long, value_name = "FILE")]
        archive: Option<PathBuf>,
    },
    /// Check the database offline, whatever its size: SQLite's full `PRAGMA integrity_check`
    /// (pages, b-trees, indexes against their tables), then that every table and column this
    /// fairsched reads is there. Prints what is wrong, one line each, and exits 1 if anything
    /// is; a broker refuses to open a database with a missing table or column, and says
    /// "corrupt" with the table and row when a row does not read. Read-only: it may run
    /// while a broker serves the database.
    Check {
        /// The database to check.
        #[arg(long, value_name = "PATH", default_value = "fairsched.db")]
        db: PathBuf,
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
                steered: false,
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
        AdminCommand::Backup { db, out } => {
            let b = fairsched_broker::upkeep::backup(&db, &out)?;
            sayln!(
                "{} → {}: {} steps, {} bytes",
                db.display(),
                out.display(),
                b.steps,
                b.pages * b.page_size
            );
            if let Some(a) = b.archive {
                note(format_args!(
                    "steps 1 to {} are in the archive {} (not copied; the copy reads it when it replays its whole log)",
                    b.archived_through,
                    a.display()
                ));
            }
            Ok(())
        }
        AdminCommand::Compact { db, archive } => {
            let c = fairsched_broker::upkeep::compact(&db, archive.as_deref())?;
            match c.oldest_snapshot {
                None => sayln!(
                    "{}: no snapshot yet (a restart replays the whole log): nothing archived",
                    db.display()
                ),
                Some(_) if c.moved == 0 => sayln!(
                    "{}: steps 1 to {} already in {}; the rest is what a restart needs: nothing archived",
                    db.display(),
                    c.archived_through,
                    c.archive.display()
                ),
                Some(s) => sayln!(
                    "{}: {} steps archived in {} (steps 1 to {} are there); kept {} steps, {} to {} (a restart replays the steps after the snapshot of step {s} or a newer one)",
                    db.display(),
                    c.moved,
                    c.archive.display(),
                    c.archived_through,
                    c.last - c.archived_through,
                    c.archived_through + 1,
                    c.last
                ),
            }
            Ok(())
        }
        AdminCommand::Check { db } => {
            let report = fairsched_broker::store::check(&db)?;
            if report.is_whole() {
                sayln!(
                    "{}: ok (integrity check passed; every table and column is there)",
                    db.display()
                );
                return Ok(());
            }
            for p in &report.problems {
                sayln!("{}: corrupt: {p}", db.display());
            }
            for m in &report.missing {
                sayln!("{}: missing: {m}", db.display());
            }
            anyhow::bail!(
                "{}: the database is damaged ({} problems, {} tables or columns missing): restore it from a backup (`fairsched admin backup` makes them)",
                db.display(),
                report.problems.len(),
                report.missing.len()
            )
        }
        AdminCommand::Live(c) => crate::cmd_live::admin_live(c),
    }
}
