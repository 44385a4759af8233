//! A paper's experiment as a library: one [`Experiment`] trait, which
//! every experiment of [`crate::experiments`] implements, and the drivers
//! that run one — here ([`run_local`]) or as a Slurm array
//! ([`crate::sweep`]) — into an output folder of result files.
//!
//! An experiment is split in stages, in this order:
//! 1. [`Experiment::check`]: its arguments (serde: a sweep stores them),
//!    refused before anything is read ([`SimError::Usage`]);
//! 2. [`Experiment::plan`]: the instances, deterministic from the
//!    arguments and the files they name (logs are read here);
//! 3. [`Experiment::run`]: one instance → its part (rows, serializable);
//!    instances are independent, so a local run does them in parallel and
//!    a sweep gives each its own Slurm array task;
//! 4. [`Experiment::report`]: every part, in instance order → the typed
//!    summary, the tables printed and the result files.
//!
//! Stages 1, 2 and 4 are the same code however stage 3 ran, and a part
//! gives its numbers back exactly, so a sweep's files are the local run's
//! bytes.
//!
//! Everything a program around the library decides — where standard error
//! goes, progress bars, what happens on Ctrl-C, which build wrote the
//! files — goes through a [`Host`]; [`Quiet`] shows nothing.

use crate::errors::SimError;
use crate::run::Tool;
use fairsched_core::Registry;
use fairsched_report::table::Table;
use fairsched_report::{OutDir, PartialCleaner};
use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

/// What a program tells the library about itself, and how it shows what
/// goes on. Every method has a default that shows nothing.
pub trait Host: Sync {
    /// The program that runs: `summary.json`'s `tool` block.
    fn tool(&self) -> Tool {
        Tool::library()
    }
    /// A remark for the user (a warning, files kept in a folder).
    fn note(&self, _line: &str) {}
    /// An output folder was opened: `cleaner` removes the run's partial
    /// files if the program is interrupted (the CLI does on Ctrl-C).
    fn opened(&self, _cleaner: PartialCleaner) {}
    /// Progress over `len` units (`unit`: "instances", "weeks"…).
    fn progress(&self, _len: u64, _prefix: &str, _unit: &str) -> Box<dyn Ticker + '_> {
        Box::new(NoTicks)
    }
}

/// Progress of one stage: a unit done, the stage over.
pub trait Ticker: Sync {
    fn tick(&self) {}
    fn done(&self) {}
}

struct NoTicks;
impl Ticker for NoTicks {}

/// A host that shows nothing (tests, bindings).
pub struct Quiet;
impl Host for Quiet {}

/// `value` as pretty JSON with `tool` first, as `"tool": {...}`: every
/// `summary.json` (`value` must serialize as a map without a `tool`).
pub fn summary_json(tool: Tool, value: &impl Serialize) -> Vec<u8> {
    #[derive(Serialize)]
    struct WithTool<'a, T: Serialize> {
        tool: Tool,
        #[serde(flatten)]
        rest: &'a T,
    }
    fairsched_report::files::json_bytes(&WithTool { tool, rest: value })
}

/// Opens an output folder before any work (creating it if missing and
/// checking that it takes files): a folder of other files without
/// `force` is the caller's mistake ([`fairsched_report::OutError::is_usage`]);
/// a folder another run is writing into is refused at once. Nothing is
/// deleted yet (see [`begin`]).
pub fn open_out(dir: &Path, force: bool, host: &dyn Host) -> Result<OutDir, SimError> {
    let mut out = OutDir::open(dir, force)?;
    if let Some(w) = out.lock_warning() {
        host.note(&format!("warning: {w}"));
    }
    out.set_commit(&host.tool().commit);
    host.opened(out.cleaner());
    Ok(out)
}

/// Before the first result: clears what an earlier fairsched run wrote in
/// the folder, lists `planned` (`NAME`, or `NAME/` for a folder) in this
/// run's manifest, and notes which files it left alone.
pub fn begin(out: &mut OutDir, planned: &[&str], host: &dyn Host) -> Result<(), SimError> {
    let kept = out.begin(planned)?;
    note_kept(out, &kept, host);
    Ok(())
}

/// Notes the files [`begin`] left alone (the user's own).
pub fn note_kept(out: &OutDir, kept: &[String], host: &dyn Host) {
    if kept.is_empty() {
        return;
    }
    const SHOWN: usize = 5;
    let mut list = kept.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if kept.len() > SHOWN {
        list.push_str(&format!(", … ({} more)", kept.len() - SHOWN));
    }
    host.note(&format!(
        "{}: kept {} file{} not written by fairsched: {list}",
        out.path().display(),
        kept.len(),
        if kept.len() == 1 { "" } else { "s" }
    ));
}

/// A result file's content.
pub enum Body {
    Bytes(Vec<u8>),
    /// `summary.json`: the summary with the host's `tool` block first.
    Summary,
}

/// What an experiment's report gives.
pub struct Outcome<S> {
    /// The typed summary (`summary.json` without its `tool`).
    pub summary: S,
    /// What the command line prints on standard output: the tables as
    /// text (and notes).
    pub text: String,
    /// The tables printed (also in `tables.json`).
    pub tables: Vec<Table>,
    /// The result files, in the order written.
    pub files: Vec<(String, Body)>,
    /// The names the folder's manifest lists before the first is written.
    pub planned: Vec<String>,
}

/// A paper's experiment (see the module docs).
pub trait Experiment: Sized + Sync {
    /// Its name on the command line and in a sweep's record.
    const NAME: &'static str;
    /// Its arguments.
    type Args: Clone + Debug + Serialize + DeserializeOwned + Send + Sync;
    /// What one instance gives; `Debug` shows every number exactly (a
    /// sweep checks that a part reads back as written).
    type Part: Debug + Serialize + DeserializeOwned + Send;
    /// `summary.json`, without its `tool` block.
    type Summary: Serialize;

    /// The folder results go to when none is given.
    fn default_out(args: &Self::Args) -> PathBuf;
    /// Whether it runs as a Slurm array (one array task per instance).
    const SWEEPS: bool = true;
    /// Checks what needs no file: a mistake is [`SimError::Usage`].
    fn check(_args: &Self::Args, _registry: &Registry, _host: &dyn Host) -> Result<(), SimError> {
        Ok(())
    }
    /// The instances, from the arguments and the files they name.
    fn plan(args: &Self::Args, registry: &Registry, host: &dyn Host) -> Result<Self, SimError>;
    /// How many instances.
    fn instances(&self) -> usize;
    /// For progress: what is running, and what an instance is called.
    fn progress(&self) -> (String, &'static str);
    /// Runs instance `index` (`< instances()`).
    fn run(&self, registry: &Registry, index: usize) -> Result<Self::Part, SimError>;
    /// Every part, in instance order → the results.
    fn report(self, parts: Vec<Self::Part>, host: &dyn Host) -> Result<Outcome<Self::Summary>, SimError>;
    /// The written files as the command line lists them (several files
    /// of a kind as one item: "profile-*.svg").
    fn listed(written: &[String]) -> Vec<String> {
        written.to_vec()
    }
}

/// A finished run's results and where they went.
pub struct Done<S> {
    pub summary: S,
    pub text: String,
    pub tables: Vec<Table>,
    /// The files written, as the command line lists them.
    pub listed: Vec<String>,
}

/// Runs every instance here, in parallel (results identical whatever the
/// thread count), with the host's progress.
pub fn run_parts<E: Experiment>(
    plan: &E,
    registry: &Registry,
    host: &dyn Host,
) -> Result<Vec<E::Part>, SimError> {
    let n = plan.instances();
    let (prefix, unit) = plan.progress();
    let ticks = host.progress(n as u64, &prefix, unit);
    let parts: Vec<Result<E::Part, SimError>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let p = plan.run(registry, i);
            ticks.tick();
            p
        })
        .collect();
    ticks.done();
    // The first failure in instance order, whatever the threads.
    parts.into_iter().collect()
}

/// Stage 4 into an opened folder: the report, then its files, together
/// (the summary renamed last); `tool` is summary.json's, `extra` names
/// the manifest also lists (a sweep's own files), written by `after_begin`.
pub(crate) fn write_outcome<E: Experiment>(
    out: &mut OutDir,
    outcome: Outcome<E::Summary>,
    tool: Tool,
    extra: &[&str],
    after_begin: &dyn Fn(&mut OutDir) -> Result<Vec<String>, SimError>,
    host: &dyn Host,
) -> Result<Done<E::Summary>, SimError> {
    let Outcome {
        summary,
        text,
        tables,
        files,
        planned,
    } = outcome;
    let mut names: Vec<&str> = planned.iter().map(String::as_str).collect();
    names.extend_from_slice(extra);
    let mut kept = out.begin(&names)?;
    let dropped = after_begin(out)?;
    kept.retain(|k| !dropped.contains(k));
    note_kept(out, &kept, host);
    let summary_bytes = summary_json(tool, &summary);
    let set: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| {
            let bytes: &[u8] = match b {
                Body::Bytes(v) => v,
                Body::Summary => &summary_bytes,
            };
            (n.as_str(), bytes)
        })
        .collect();
    let written = out.write_set(&set)?;
    Ok(Done {
        summary,
        text,
        tables,
        listed: E::listed(&written),
    })
}

/// Runs experiment `E` here: checks, opens `out` (`force`: see
/// [`open_out`]), plans, runs every instance, reports and writes the
/// result files.
pub fn run_local<E: Experiment>(
    args: &E::Args,
    out: &Path,
    force: bool,
    registry: &Registry,
    host: &dyn Host,
) -> Result<Done<E::Summary>, SimError> {
    E::check(args, registry, host)?;
    let mut dir = open_out(out, force, host)?;
    let plan = E::plan(args, registry, host)?;
    let parts = run_parts(&plan, registry, host)?;
    let outcome = plan.report(parts, host)?;
    let clear_parts = crate::sweep::earlier_sweep(&dir);
    let done = write_outcome::<E>(
        &mut dir,
        outcome,
        host.tool(),
        &[],
        &|d| {
            if clear_parts {
                crate::sweep::clear_parts(d)
            } else {
                Ok(Vec::new())
            }
        },
        host,
    )?;
    dir.finish()?;
    Ok(done)
}
