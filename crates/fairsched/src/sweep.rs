//! Sweeps on a Slurm cluster: `fairsched experiment KIND … --slurm-array`
//! submits one Slurm array task per instance of the experiment, and
//! `fairsched experiment collect DIR` turns what they wrote into the
//! result files a local run of the same command writes, byte for byte.
//!
//! An experiment that runs as a sweep is split in three:
//! 1. its [`Plan`]: the instances, deterministic from the arguments (and
//!    the files they name);
//! 2. [`Plan::run`]: one instance → its part (rows, serializable);
//! 3. every part, in instance order → the result files and the table.
//!
//! A local run is 1, then 2 for every instance (in parallel), then 3. A
//! sweep does 1 when it is submitted (a mistake shows there, not in N
//! array tasks); each array task (`experiment run-part DIR I`, hidden)
//! does 1 again and 2 for its instance, into `DIR/parts/instance-I.json`;
//! `collect` does 1 and 3 from the parts. Steps 1 and 3 are the same code
//! either way, and a part gives its rows back exactly (JSON whose numbers
//! round-trip, checked as the part is written), so the files are the same
//! bytes.
//!
//! `DIR/sweep.json` records the experiment's arguments as given (minus
//! `--slurm-array` and `--partition`), the folder they are relative to,
//! the instance count and the job id; the array tasks and `collect` work
//! from that folder and parse the arguments again.

use crate::cmd_experiment::{ExperimentCommand, ForceArg, bar, note_kept, open_out};
use crate::term::sayln;
use anyhow::{Context, anyhow, bail};
use clap::{CommandFactory, FromArgMatches};
use fairsched_report::OutDir;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fmt::Debug;
use std::fs;
use std::path::{Path, PathBuf};

/// The sweep's record in its folder.
pub const SWEEP_JSON: &str = "sweep.json";
/// The batch script submitted (kept, to resubmit by hand).
pub const SCRIPT: &str = "sweep.sbatch";
/// The folder of the array tasks' parts and Slurm logs.
pub const PARTS: &str = "parts";
const FORMAT: &str = "fairsched-sweep 1";
const PART_FORMAT: &str = "fairsched-sweep-part 1";
/// The experiments that run as sweeps (the others refuse --slurm-array).
pub const SUPPORTED: &[&str] = &["shapley", "pffp"];

// `--slurm-array [--partition P]`, on every experiment (no doc comment: a
// flattened struct's would become the command's description).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SlurmArgs {
    /// Run on a Slurm cluster instead (shapley and pffp): write
    /// sweep.sbatch in the --out folder, one array task per instance, and
    /// submit it with sbatch; when the tasks are done, `fairsched
    /// experiment collect DIR` writes the files a local run writes.
    #[arg(long)]
    pub slurm_array: bool,
    /// The Slurm partition of the array tasks (with --slurm-array)
    /// [default: the cluster's].
    #[arg(long, value_name = "P", requires = "slurm_array")]
    pub partition: Option<String>,
}

/// `fairsched experiment collect DIR`.
#[derive(clap::Args)]
pub struct CollectArgs {
    /// The --out folder of a `--slurm-array` run.
    dir: PathBuf,
}

/// `fairsched experiment run-part DIR I` (one array task).
#[derive(clap::Args)]
pub struct RunPartArgs {
    /// The sweep's folder.
    dir: PathBuf,
    /// The instance to run ($SLURM_ARRAY_TASK_ID).
    index: usize,
}

/// Steps 1 and 2 of an experiment (see the module docs).
pub trait Plan: Sync {
    /// What one instance gives (its rows); `Debug` shows every number
    /// exactly, to check that the JSON gives the same back.
    type Part: Serialize + DeserializeOwned + Debug + Send;
    /// How many instances.
    fn count(&self) -> usize;
    /// Runs instance `index` (`< count()`).
    fn run(&self, index: usize) -> anyhow::Result<Self::Part>;
}

/// `DIR/sweep.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepFile {
    format: String,
    /// `shapley`, `pffp`, …
    experiment: String,
    /// The arguments after `experiment`, without the sweep's own.
    args: Vec<String>,
    /// The command line as summary.json's `tool` shows it: what a local
    /// run's would be.
    command: String,
    /// The folder the arguments' paths are relative to.
    cwd: PathBuf,
    instances: usize,
    partition: Option<String>,
    /// Slurm's job id, once submitted.
    job_id: Option<u64>,
}

/// A part as written.
#[derive(Serialize)]
struct PartOut<'a, P> {
    format: &'a str,
    experiment: &'a str,
    args: &'a [String],
    instance: usize,
    part: &'a P,
}

/// A part as read.
#[derive(Deserialize)]
struct PartIn<P> {
    format: String,
    experiment: String,
    args: Vec<String>,
    instance: usize,
    part: P,
}

/// How an experiment runs.
pub enum Mode {
    /// Every instance here.
    Local,
    /// Submitted as a Slurm array.
    Submit { partition: Option<String> },
    /// One instance of a sweep (an array task).
    Part {
        dir: PathBuf,
        index: usize,
        sweep: SweepFile,
    },
    /// A sweep's parts into its result files.
    Collect(Box<Collecting>),
}

impl Mode {
    /// What an experiment's own command line asks for.
    pub fn of(experiment: &str, s: &SlurmArgs) -> anyhow::Result<Mode> {
        if !s.slurm_array {
            return Ok(Mode::Local);
        }
        if !SUPPORTED.contains(&experiment) {
            return Err(crate::term::usage(format!(
                "--slurm-array: experiment {experiment} does not run as a Slurm sweep (these do: {})",
                SUPPORTED.join(", ")
            )));
        }
        if let Some(p) = &s.partition
            && (p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "_.,-".contains(c)))
        {
            return Err(crate::term::usage(format!(
                "--partition {p:?}: not a partition name (letters, digits, `_`, `.`, `-`; several separated by `,`)"
            )));
        }
        Ok(Mode::Submit {
            partition: s.partition.clone(),
        })
    }
}

/// What `collect` read before the experiment's plan.
pub struct Collecting {
    /// The folder, absolute.
    dir: PathBuf,
    /// The folder as `collect` was given it (for what it prints).
    shown: PathBuf,
    sweep: SweepFile,
    /// sweep.json and sweep.sbatch as they are: written back after the
    /// folder is cleared for the results.
    keep: Vec<(&'static str, Vec<u8>)>,
}

/// An experiment's run, from its output folder to its parts.
pub struct Stage {
    mode: Mode,
    out: Option<OutDir>,
    shown: PathBuf,
}

impl Stage {
    /// Before the plan: opens the output folder (`out`, or the sweep's
    /// folder when collecting; an array task writes only its part).
    pub fn open(mode: Mode, out: &Path, force: ForceArg) -> anyhow::Result<Stage> {
        let (dir, shown) = match &mode {
            Mode::Local | Mode::Submit { .. } => (Some(open_out(out, force)?), out.to_path_buf()),
            Mode::Part { dir, .. } => (None, dir.clone()),
            Mode::Collect(c) => (Some(open_out(&c.dir, force)?), c.shown.clone()),
        };
        Ok(Stage {
            mode,
            out: dir,
            shown,
        })
    }

    /// Step 2 as the mode has it: every instance here (a progress bar,
    /// `prefix`, counting `unit`s), or the sweep submitted, or one part
    /// written, or the parts read. `Some`: the parts in instance order and
    /// the folder for step 3; `None`: nothing more to do.
    pub fn run<P: Plan>(
        self,
        plan: &P,
        prefix: String,
        unit: &str,
        progress: bool,
    ) -> anyhow::Result<Option<(Vec<P::Part>, Output)>> {
        let n = plan.count();
        match self.mode {
            Mode::Local => {
                let pb = bar(n as u64, progress, unit);
                pb.set_prefix(prefix);
                let parts: Vec<anyhow::Result<P::Part>> = (0..n)
                    .into_par_iter()
                    .map(|i| {
                        let p = plan.run(i);
                        pb.inc(1);
                        p
                    })
                    .collect();
                pb.finish_and_clear();
                // The first failure in instance order, whatever the threads.
                let parts = parts.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
                let dir = self.out.expect("opened");
                let clear_parts = earlier_sweep(&dir);
                Ok(Some((
                    parts,
                    Output {
                        dir,
                        shown: self.shown,
                        command: None,
                        keep: Vec::new(),
                        clear_parts,
                    },
                )))
            }
            Mode::Submit { partition } => {
                submit(self.out.expect("opened"), &self.shown, partition, n)?;
                Ok(None)
            }
            Mode::Part { dir, index, sweep } => {
                same_count(&sweep, n)?;
                let part = plan.run(index)?;
                write_part(&dir, &sweep, index, &part)?;
                Ok(None)
            }
            Mode::Collect(c) => {
                same_count(&c.sweep, n)?;
                let parts = read_parts::<P::Part>(&c.dir, &c.sweep)?;
                Ok(Some((
                    parts,
                    Output {
                        dir: self.out.expect("opened"),
                        shown: self.shown,
                        command: Some(c.sweep.command.clone()),
                        keep: c.keep,
                        clear_parts: false,
                    },
                )))
            }
        }
    }
}

/// The output folder for step 3.
pub struct Output {
    pub dir: OutDir,
    /// The folder as the last line printed names it.
    pub shown: PathBuf,
    /// `collect`: the sweep's command line, for summary.json's `tool`.
    command: Option<String>,
    /// `collect`: the sweep's own files, written back after `begin`.
    keep: Vec<(&'static str, Vec<u8>)>,
    /// A local run into the folder of an earlier sweep: its parts go.
    clear_parts: bool,
}

impl Output {
    /// Clears what the earlier run of the folder wrote and lists `planned`
    /// (see `cmd_experiment::begin_out`); a collected sweep's own files
    /// stay, listed too, and a local run removes an earlier sweep's parts.
    pub fn begin(&mut self, planned: &[&str]) -> anyhow::Result<()> {
        let collecting = self.command.is_some();
        let parts_entry = format!("{PARTS}/");
        let mut names: Vec<&str> = planned.to_vec();
        if collecting {
            names.extend([SWEEP_JSON, SCRIPT, &parts_entry]);
        }
        let mut kept = self.dir.begin(&names)?;
        if collecting {
            for (name, bytes) in &self.keep {
                self.dir.write(name, bytes)?;
            }
        }
        if self.clear_parts {
            remove_parts(&self.dir.path().join(PARTS))?;
            let _ = fs::remove_dir(self.dir.path().join(PARTS));
        }
        if collecting || self.clear_parts {
            kept.retain(|k| !k.strip_prefix(&parts_entry).is_some_and(is_sweep_file));
        }
        note_kept(&self.dir, &kept);
        Ok(())
    }

    /// `value` as summary.json, `tool` first (as `term::summary_json`);
    /// collected, with the sweep's command line: what the local run's says.
    pub fn summary_json(&self, value: &impl Serialize) -> Vec<u8> {
        match &self.command {
            None => crate::term::summary_json(value),
            Some(c) => {
                let mut tool = crate::term::tool();
                tool.command = c.clone();
                crate::term::summary_json_as(tool, value)
            }
        }
    }

    /// The run is done (see `OutDir::finish`).
    pub fn finish(self) -> anyhow::Result<()> {
        Ok(self.dir.finish()?)
    }
}

/// A file an array task writes in `parts/`: `instance-I.json` (or its
/// `.partial`) or a Slurm log `slurm-J_I.out`.
fn is_sweep_file(name: &str) -> bool {
    let name = name.strip_suffix(".partial").unwrap_or(name);
    (name.starts_with("instance-") && name.ends_with(".json"))
        || (name.starts_with("slurm-") && name.ends_with(".out"))
}

/// Whether the folder holds an earlier sweep (a fairsched folder with a
/// sweep.json of ours): its `parts/` is ours to clear.
fn earlier_sweep(dir: &OutDir) -> bool {
    dir.had_manifest()
        && fs::read(dir.join(SWEEP_JSON))
            .ok()
            .and_then(|b| serde_json::from_slice::<SweepFile>(&b).ok())
            .is_some_and(|s| s.format == FORMAT)
}

/// Removes the array tasks' files from `parts` (nothing else).
fn remove_parts(parts: &Path) -> anyhow::Result<()> {
    let Ok(rd) = fs::read_dir(parts) else {
        return Ok(());
    };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_file()) && is_sweep_file(&e.file_name().to_string_lossy()) {
            fs::remove_file(e.path()).with_context(|| format!("cannot remove {}", e.path().display()))?;
        }
    }
    Ok(())
}

fn part_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(PARTS).join(format!("instance-{index}.json"))
}

/// The plan made again has the sweep's instance count.
fn same_count(sweep: &SweepFile, n: usize) -> anyhow::Result<()> {
    if n != sweep.instances {
        bail!(
            "the experiment has {n} instances now, {SWEEP_JSON} says {}: the files its arguments name changed since it was submitted",
            sweep.instances
        );
    }
    Ok(())
}

/// The arguments after `experiment`, without `--slurm-array` and
/// `--partition P`, and the command line a local run's summary.json shows.
fn sweep_args() -> anyhow::Result<(Vec<String>, String)> {
    let all: Vec<String> = std::env::args_os()
        .map(|a| {
            a.into_string()
                .map_err(|a| crate::term::usage(format!("--slurm-array: the argument {a:?} is not UTF-8")))
        })
        .collect::<anyhow::Result<_>>()?;
    let at = all
        .iter()
        .position(|a| a == "experiment")
        .ok_or_else(|| anyhow!("--slurm-array: `experiment` is not on the command line"))?;
    let mut args = Vec::new();
    let mut rest = all[at + 1..].iter();
    while let Some(a) = rest.next() {
        if a == "--slurm-array" {
            continue;
        }
        if a == "--partition" {
            rest.next();
            continue;
        }
        if a.starts_with("--partition=") {
            continue;
        }
        args.push(a.clone());
    }
    let command =
        fairsched_report::files::format_command_line(all[..=at].iter().chain(&args).map(OsString::from));
    Ok((args, command))
}

/// The experiments' commands, parsed again from a sweep's arguments.
#[derive(clap::Parser)]
#[command(name = "experiment")]
struct Again {
    #[command(subcommand)]
    cmd: ExperimentCommand,
}

/// Parses a sweep's arguments as `fairsched experiment` does (values that
/// start with `-` taken as values, as `main.rs`'s `parse_cli`).
fn reparse(sweep: &SweepFile) -> anyhow::Result<ExperimentCommand> {
    let argv = std::iter::once("experiment".to_string()).chain(sweep.args.iter().cloned());
    let m = crate::negatives(Again::command())
        .try_get_matches_from(argv)
        .map_err(|e| {
            anyhow!(
                "{SWEEP_JSON}: its arguments do not parse: {}",
                e.render().to_string().trim()
            )
        })?;
    let again = Again::from_arg_matches(&m).map_err(|e| anyhow!("{SWEEP_JSON}: {e}"))?;
    match &again.cmd {
        ExperimentCommand::Collect(_) | ExperimentCommand::RunPart(_) => {
            bail!("{SWEEP_JSON}: its arguments are not an experiment's")
        }
        _ => Ok(again.cmd),
    }
}

/// A path as an `#SBATCH` line takes it: absolute, and nothing that line
/// would split or Slurm would read as a pattern.
fn directive_path(p: &Path, what: &str) -> anyhow::Result<String> {
    let s = p
        .to_str()
        .ok_or_else(|| crate::term::usage(format!("--slurm-array: {what} {} is not UTF-8", p.display())))?;
    if let Some(c) = s
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "\"'\\%".contains(*c))
    {
        return Err(crate::term::usage(format!(
            "--slurm-array: {what} {s:?} has {c:?}, which an #SBATCH line cannot hold: use a folder without it"
        )));
    }
    Ok(s.to_string())
}

/// The batch script: one array task per instance, each running
/// `fairsched experiment run-part DIR $SLURM_ARRAY_TASK_ID`.
fn script(sweep: &SweepFile, dir: &Path, exe: &Path) -> anyhow::Result<String> {
    let d = directive_path(dir, "the --out folder")?;
    let cwd = directive_path(&sweep.cwd, "the current folder")?;
    let mut s = String::from("#!/bin/sh\n");
    s += &format!("#SBATCH --job-name=fairsched-{}\n", sweep.experiment);
    s += &format!("#SBATCH --array=0-{}\n", sweep.instances - 1);
    s += &format!("#SBATCH --output={d}/{PARTS}/slurm-%A_%a.out\n");
    s += &format!("#SBATCH --chdir={cwd}\n");
    s += "#SBATCH --ntasks=1\n";
    if let Some(p) = &sweep.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    s += &format!(
        "# One array task per instance of\n#   {}\n\
         # each writing {d}/{PARTS}/instance-$SLURM_ARRAY_TASK_ID.json; when all are done:\n\
         #   fairsched experiment collect {}\n",
        sweep.command,
        crate::slurm::shell_quote(&d)?
    );
    s += &format!(
        "exec {} experiment run-part {} \"$SLURM_ARRAY_TASK_ID\"\n",
        crate::slurm::shell_quote(&exe.to_string_lossy())?,
        crate::slurm::shell_quote(&d)?
    );
    Ok(s)
}

/// Writes sweep.json and the script into the folder and submits the array.
fn submit(mut out: OutDir, shown: &Path, partition: Option<String>, n: usize) -> anyhow::Result<()> {
    if n == 0 {
        bail!("--slurm-array: the experiment has no instance to run");
    }
    let (args, command) = sweep_args()?;
    let experiment = args.first().cloned().unwrap_or_default();
    let cwd = std::env::current_dir().context("the current folder")?;
    let dir = std::path::absolute(out.path()).with_context(|| format!("{}", out.path().display()))?;
    let exe = std::env::current_exe().context("the path of this fairsched program")?;
    let mut sweep = SweepFile {
        format: FORMAT.into(),
        experiment,
        args,
        command,
        cwd,
        instances: n,
        partition,
        job_id: None,
    };
    // The array tasks parse the arguments again: they must.
    reparse(&sweep)?;
    let text = script(&sweep, &dir, &exe)?;
    let kept = out.begin(&[SWEEP_JSON, SCRIPT, &format!("{PARTS}/")])?;
    // An earlier sweep's parts would be taken for this one's.
    let parts = dir.join(PARTS);
    remove_parts(&parts)?;
    fs::create_dir_all(&parts).with_context(|| format!("cannot create {}", parts.display()))?;
    let mut kept = kept;
    kept.retain(|k| !k.strip_prefix(&format!("{PARTS}/")).is_some_and(is_sweep_file));
    note_kept(&out, &kept);
    out.write(SWEEP_JSON, &fairsched_report::files::json_bytes(&sweep))?;
    crate::slurm::write_script(&dir, SCRIPT, &text)?;
    let job = crate::slurm::sbatch(&[], &text).map_err(|e| {
        // The array limit is named only when Slurm refused the array's size.
        let hint = if e.to_string().to_ascii_lowercase().contains("array") {
            "; Slurm's MaxArraySize, in `scontrol show config`, limits an array"
        } else {
            ""
        };
        e.context(format!(
            "submitting {} ({n} array task{}{hint})",
            shown.join(SCRIPT).display(),
            if n == 1 { "" } else { "s" }
        ))
    })?;
    sweep.job_id = Some(job);
    out.write(SWEEP_JSON, &fairsched_report::files::json_bytes(&sweep))?;
    out.finish()?;
    let p = |f: &str| shown.join(f).display().to_string();
    sayln!(
        "submitted Slurm job {job}: {n} array task{} ({}), one per instance, each writing {}",
        if n == 1 { "" } else { "s" },
        p(SCRIPT),
        p(&format!("{PARTS}/instance-<i>.json"))
    );
    sayln!("when they are done (`squeue -j {job}` lists none), write the results with:");
    sayln!(
        "  fairsched experiment collect {}",
        crate::slurm::shell_quote(&dir.to_string_lossy())?
    );
    Ok(())
}

/// Writes instance `index`'s part, atomically, once sure that reading it
/// gives `part` back exactly.
fn write_part<P: Serialize + DeserializeOwned + Debug>(
    dir: &Path,
    sweep: &SweepFile,
    index: usize,
    part: &P,
) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec(&PartOut {
        format: PART_FORMAT,
        experiment: &sweep.experiment,
        args: &sweep.args,
        instance: index,
        part,
    })?;
    bytes.push(b'\n');
    let back: PartIn<P> = serde_json::from_slice(&bytes)
        .with_context(|| format!("instance {index}: its results cannot be stored as JSON"))?;
    if format!("{:?}", back.part) != format!("{part:?}") {
        bail!(
            "instance {index}: its results do not read back from JSON exactly (a number that is not finite?)"
        );
    }
    let path = part_path(dir, index);
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).with_context(|| format!("cannot create {}", p.display()))?;
    }
    fairsched_report::write_atomic(&path, &bytes)?;
    Ok(())
}

/// Instance numbers as ranges: `0, 2, 5–9`, the first 20 ranges.
fn ranges(xs: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < xs.len() {
        let mut j = i;
        while j + 1 < xs.len() && xs[j + 1] == xs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            xs[i].to_string()
        } else {
            format!("{}–{}", xs[i], xs[j])
        });
        i = j + 1;
    }
    if out.len() > 20 {
        let more = out.len() - 20;
        out.truncate(20);
        out.push(format!("… ({more} more ranges)"));
    }
    out.join(", ")
}

/// Every part, in instance order.
fn read_parts<P: DeserializeOwned>(dir: &Path, sweep: &SweepFile) -> anyhow::Result<Vec<P>> {
    (0..sweep.instances)
        .map(|i| {
            let path = part_path(dir, i);
            let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let p: PartIn<P> = serde_json::from_slice(&bytes)
                .with_context(|| format!("{}: not a part of this sweep", path.display()))?;
            if p.format != PART_FORMAT {
                bail!(
                    "{}: format {:?}, expected {PART_FORMAT:?}",
                    path.display(),
                    p.format
                );
            }
            if p.experiment != sweep.experiment || p.args != sweep.args || p.instance != i {
                bail!(
                    "{}: written for another sweep (instance {} of `experiment {}`), not instance {i} of this one's {SWEEP_JSON}: remove it and run its array task again",
                    path.display(),
                    p.instance,
                    p.args.join(" ")
                );
            }
            Ok(p.part)
        })
        .collect()
}

/// Reads `DIR/sweep.json` (`dir` absolute); also its bytes.
fn read_sweep(dir: &Path) -> anyhow::Result<(SweepFile, Vec<u8>)> {
    let path = dir.join(SWEEP_JSON);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "{}: no {SWEEP_JSON}: not the folder of a `fairsched experiment … --slurm-array` run",
                dir.display()
            )
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))),
    };
    let sweep: SweepFile = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a sweep's record", path.display()))?;
    if sweep.format != FORMAT {
        bail!(
            "{}: format {:?}, expected {FORMAT:?}",
            path.display(),
            sweep.format
        );
    }
    Ok((sweep, bytes))
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}", p.display()))
}

/// Goes to the folder the sweep's arguments are relative to.
fn enter(sweep: &SweepFile) -> anyhow::Result<()> {
    std::env::set_current_dir(&sweep.cwd).with_context(|| {
        format!(
            "cannot work from {} (the folder the sweep was submitted from)",
            sweep.cwd.display()
        )
    })
}

/// `fairsched experiment run-part DIR I`: one array task.
pub fn run_part(a: RunPartArgs) -> anyhow::Result<()> {
    let dir = absolute(&a.dir)?;
    let (sweep, _) = read_sweep(&dir)?;
    if a.index >= sweep.instances {
        bail!(
            "instance {}: the sweep has {} (0 to {})",
            a.index,
            sweep.instances,
            sweep.instances.saturating_sub(1)
        );
    }
    // The task has the CPUs Slurm gave it: one, or --cpus-per-task.
    let threads = std::env::var("SLURM_CPUS_PER_TASK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
    enter(&sweep)?;
    let cmd = reparse(&sweep)?;
    let index = a.index;
    crate::cmd_experiment::dispatch(cmd, Some(Mode::Part { dir, index, sweep }))
}

/// `fairsched experiment collect DIR`.
pub fn collect(a: CollectArgs) -> anyhow::Result<()> {
    let dir = absolute(&a.dir)?;
    let (sweep, bytes) = read_sweep(&dir)?;
    let missing: Vec<usize> = (0..sweep.instances)
        .filter(|&i| !part_path(&dir, i).is_file())
        .collect();
    if !missing.is_empty() {
        let what = format!(
            "{}: {} of {} parts missing, instance{} {}",
            a.dir.display(),
            missing.len(),
            sweep.instances,
            if missing.len() == 1 { "" } else { "s" },
            ranges(&missing),
        );
        let Some(job) = sweep.job_id else {
            bail!(
                "{what}: the sweep was not submitted (sbatch refused it): submit {} with sbatch, or run the experiment with --slurm-array again",
                a.dir.join(SCRIPT).display()
            );
        };
        bail!(
            "{what}: the array tasks are still running (`squeue -j {job}`), or failed (see {})",
            a.dir.join(PARTS).join(format!("slurm-{job}_*.out")).display()
        );
    }
    let mut keep = vec![(SWEEP_JSON, bytes)];
    if let Ok(s) = fs::read(dir.join(SCRIPT)) {
        keep.push((SCRIPT, s));
    }
    enter(&sweep)?;
    let cmd = reparse(&sweep)?;
    let c = Collecting {
        dir,
        shown: a.dir,
        sweep,
        keep,
    };
    crate::cmd_experiment::dispatch(cmd, Some(Mode::Collect(Box::new(c))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn every_f64_comes_back_from_a_part_exactly() {
        // Without serde_json's float_roundtrip, some of these come back
        // one unit in the last place off.
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut xs: Vec<f64> = (0..20_000)
            .map(|_| f64::from_bits(rng.next_u64()))
            .filter(|x| x.is_finite())
            .collect();
        xs.extend([
            0.1 + 0.2,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            -0.0,
            1e23,
            2.225_073_858_507_201e-308,
        ]);
        let sweep = SweepFile {
            format: FORMAT.into(),
            experiment: "x".into(),
            args: vec!["x".into()],
            command: "fairsched experiment x".into(),
            cwd: "/".into(),
            instances: 1,
            partition: None,
            job_id: None,
        };
        let d = tempfile::tempdir().unwrap();
        write_part(d.path(), &sweep, 0, &xs).unwrap();
        let back: Vec<Vec<f64>> = read_parts(d.path(), &sweep).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].len(), xs.len());
        for (a, b) in xs.iter().zip(&back[0]) {
            assert_eq!(a.to_bits(), b.to_bits(), "{a:e} came back as {b:e}");
        }
        // A number JSON cannot hold is refused, not written wrong.
        let e = write_part(d.path(), &sweep, 0, &vec![Some(f64::NAN)]).unwrap_err();
        assert!(e.to_string().contains("instance 0"), "{e}");
    }

    #[test]
    fn instance_numbers_read_as_ranges() {
        assert_eq!(ranges(&[0, 2, 5, 6, 7, 8, 9]), "0, 2, 5–9");
        assert_eq!(ranges(&[3]), "3");
        let many: Vec<usize> = (0..100).map(|i| i * 2).collect();
        assert!(ranges(&many).ends_with("… (80 more ranges)"));
    }

    #[test]
    fn only_the_array_tasks_files_are_sweep_files() {
        for f in ["instance-0.json", "instance-12.json.partial", "slurm-42_3.out"] {
            assert!(is_sweep_file(f), "{f}");
        }
        for f in ["notes.txt", "instance-0.csv", "summary.json", "slurm.conf"] {
            assert!(!is_sweep_file(f), "{f}");
        }
    }

    #[test]
    fn directive_paths_refuse_what_an_sbatch_line_splits() {
        assert_eq!(
            directive_path(Path::new("/a/b-c_d.e"), "x").unwrap(),
            "/a/b-c_d.e"
        );
        for bad in ["/a b", "/a%b", "/a\"b", "/a'b", "/a\\b", "/a\nb"] {
            assert!(directive_path(Path::new(bad), "x").is_err(), "{bad:?}");
        }
    }
}
