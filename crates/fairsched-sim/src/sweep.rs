//! Sweeps on a Slurm cluster: any [`Experiment`] submitted as one Slurm
//! array task per instance ([`submit`]), each array task running its
//! instance into a part ([`run_part`]), and [`collect`] turning the parts
//! into the result files a local run of the same arguments writes, byte
//! for byte.
//!
//! A sweep does stage 2 of the experiment (its plan) when it is submitted
//! (a mistake shows there, not in N array tasks); each array task does 2
//! again and 3 for its instance, into `DIR/parts/instance-I.json`;
//! `collect` does 2 and 4 from the parts. A part gives its rows back
//! exactly (JSON whose numbers round-trip, checked as the part is
//! written), so the files are the same bytes.
//!
//! `DIR/sweep.json` records the experiment's name, its arguments (as the
//! experiment's serde arguments, not a command line), the folder their
//! paths are relative to, the instance count and the job id; the array
//! tasks and `collect` work from that folder. The array tasks run
//! [`Submit::part_command`] `DIR I`: for `fairsched`, `fairsched experiment
//! run-part DIR I`; a program with its own policies names itself, so that
//! its array tasks know them too.

use crate::errors::SimError;
use crate::experiment::{Done, Experiment, Host, open_out, write_outcome};
use crate::experiments::workflow::experiment::WorkflowFairness;
use crate::experiments::{diet::experiment::DietEthic, pffp::experiment::Pffp, shapley::experiment::Shapley};
use crate::study::Study;
use fairsched_core::Registry;
use fairsched_report::OutDir;
use fairsched_slurm as slurm;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::fs;
use std::path::{Path, PathBuf};

/// The sweep's record in its folder.
pub const SWEEP_JSON: &str = "sweep.json";
/// The batch script submitted (kept, to resubmit by hand).
pub const SCRIPT: &str = "sweep.sbatch";
/// The folder of the array tasks' parts and Slurm logs.
pub const PARTS: &str = "parts";
const FORMAT: &str = "fairsched-sweep 2";
const PART_FORMAT: &str = "fairsched-sweep-part 2";

/// `DIR/sweep.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepFile {
    format: String,
    /// `shapley`, `pffp`, …
    pub experiment: String,
    /// The experiment's arguments.
    pub args: serde_json::Value,
    /// The command line as summary.json's `tool` shows it: what a local
    /// run's would be.
    pub command: String,
    /// The folder the arguments' paths are relative to.
    pub cwd: PathBuf,
    pub instances: usize,
    pub partition: Option<String>,
    /// Slurm's job id, once submitted.
    pub job_id: Option<u64>,
}

/// A part as written.
#[derive(Serialize)]
struct PartOut<'a, P> {
    format: &'a str,
    experiment: &'a str,
    args: &'a serde_json::Value,
    instance: usize,
    part: &'a P,
}

/// A part as read.
#[derive(Deserialize)]
struct PartIn<P> {
    format: String,
    experiment: String,
    args: serde_json::Value,
    instance: usize,
    part: P,
}

/// How to submit a sweep.
pub struct Submit {
    /// The Slurm partition of the array tasks (default: the cluster's).
    pub partition: Option<String>,
    /// The program and arguments each array task runs, followed by the
    /// sweep's folder and its instance: `[fairsched, experiment, run-part]`.
    pub part_command: Vec<String>,
    /// The command line the results' `summary.json` will show (a local
    /// run's).
    pub command: String,
}

/// Checks a partition name: letters, digits, `_`, `.`, `-`; several
/// separated by `,`.
pub fn check_partition(p: &str) -> Result<(), SimError> {
    if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "_.,-".contains(c)) {
        return Err(SimError::Usage(format!(
            "--partition {p:?}: not a partition name (letters, digits, `_`, `.`, `-`; several separated by `,`)"
        )));
    }
    Ok(())
}

/// What [`submit`] did.
pub struct Submitted {
    pub job: u64,
    pub instances: usize,
    /// The folder, absolute.
    pub dir: PathBuf,
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
pub(crate) fn earlier_sweep(dir: &OutDir) -> bool {
    dir.had_manifest()
        && fs::read(dir.join(SWEEP_JSON))
            .ok()
            .and_then(|b| serde_json::from_slice::<SweepFile>(&b).ok())
            .is_some_and(|s| s.format == FORMAT)
}

/// The array tasks' files in `parts/`, as `parts/NAME`.
fn sweep_files(dir: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(dir.join(PARTS)) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_sweep_file(n))
        .map(|n| format!("{PARTS}/{n}"))
        .collect()
}

/// Removes the array tasks' files from `parts/` (nothing else), and the
/// folder if that empties it; returns them (`parts/NAME`).
pub(crate) fn clear_parts(dir: &OutDir) -> Result<Vec<String>, SimError> {
    let files = remove_parts(&dir.path().join(PARTS))?;
    let _ = fs::remove_dir(dir.path().join(PARTS));
    Ok(files)
}

fn remove_parts(parts: &Path) -> Result<Vec<String>, SimError> {
    let dir = parts.parent().unwrap_or(parts);
    let files = sweep_files(dir);
    for f in &files {
        let path = dir.join(f);
        fs::remove_file(&path).map_err(|e| SimError::Io {
            what: format!("cannot remove {}", path.display()),
            source: e,
        })?;
    }
    Ok(files)
}

fn part_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(PARTS).join(format!("instance-{index}.json"))
}

/// The plan made again has the sweep's instance count.
fn same_count(sweep: &SweepFile, n: usize) -> Result<(), SimError> {
    if n != sweep.instances {
        return Err(SimError::Sweep(format!(
            "the experiment has {n} instances now, {SWEEP_JSON} says {}: the files its arguments name changed since it was submitted",
            sweep.instances
        )));
    }
    Ok(())
}

/// A path as an `#SBATCH` line takes it: absolute, and nothing that line
/// would split or Slurm would read as a pattern.
fn directive_path(p: &Path, what: &str) -> Result<String, SimError> {
    let s = p
        .to_str()
        .ok_or_else(|| SimError::Usage(format!("--slurm-array: {what} {} is not UTF-8", p.display())))?;
    if let Some(c) = s
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "\"'\\%".contains(*c))
    {
        return Err(SimError::Usage(format!(
            "--slurm-array: {what} {s:?} has {c:?}, which an #SBATCH line cannot hold: use a folder without it"
        )));
    }
    Ok(s.to_string())
}

/// The batch script: one array task per instance, each running
/// `PART_COMMAND DIR $SLURM_ARRAY_TASK_ID`.
fn script(sweep: &SweepFile, dir: &Path, part_command: &[String]) -> Result<String, SimError> {
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
        slurm::shell_quote(&d)?
    );
    let words: Vec<String> = part_command
        .iter()
        .map(|w| slurm::shell_quote(w))
        .collect::<Result<_, _>>()?;
    s += &format!(
        "exec {} {} \"$SLURM_ARRAY_TASK_ID\"\n",
        words.join(" "),
        slurm::shell_quote(&d)?
    );
    Ok(s)
}

/// A sweep's folder, written but not submitted: `sweep.json`, the batch
/// script, an empty `parts/`. [`Prepared::sbatch`] submits it; or its
/// array tasks can be run by hand, [`run_part`] for each instance.
pub struct Prepared {
    /// The folder, absolute.
    pub dir: PathBuf,
    pub instances: usize,
    /// The batch script (also in the folder as [`SCRIPT`]).
    pub script: String,
    sweep: SweepFile,
}

/// Prepares experiment `E` with `args` as a Slurm array in `out`: checks
/// and plans it (the instances are counted, a mistake shows here), and
/// writes sweep.json and the script into the folder.
pub fn prepare<E: Experiment>(
    args: &E::Args,
    out: &Path,
    force: bool,
    how: &Submit,
    registry: &Registry,
    host: &dyn Host,
) -> Result<Prepared, SimError> {
    if !E::SWEEPS {
        return Err(SimError::Usage(format!(
            "--slurm-array: experiment {} does not run as a Slurm sweep (these do: {})",
            E::NAME,
            sweepable().join(", ")
        )));
    }
    if let Some(p) = &how.partition {
        check_partition(p)?;
    }
    E::check(args, registry, host)?;
    let mut dir = open_out(out, force, host)?;
    let plan = E::plan(args, registry, host)?;
    let n = plan.instances();
    if n == 0 {
        return Err(SimError::Sweep(
            "--slurm-array: the experiment has no instance to run".into(),
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| SimError::Io {
        what: "the current folder".into(),
        source: e,
    })?;
    let abs = absolute(dir.path())?;
    let sweep = SweepFile {
        format: FORMAT.into(),
        experiment: E::NAME.into(),
        args: serde_json::to_value(args).map_err(|e| SimError::Sweep(format!("the arguments: {e}")))?,
        command: how.command.clone(),
        cwd,
        instances: n,
        partition: how.partition.clone(),
        job_id: None,
    };
    // The array tasks read the arguments back: they must.
    serde_json::from_value::<E::Args>(sweep.args.clone())
        .map_err(|e| SimError::Sweep(format!("the arguments do not read back: {e}")))?;
    let text = script(&sweep, &abs, &how.part_command)?;
    let mut kept = dir.begin(&[SWEEP_JSON, SCRIPT, &format!("{PARTS}/")])?;
    // An earlier sweep's parts would be taken for this one's.
    let parts = abs.join(PARTS);
    let removed = remove_parts(&parts)?;
    fs::create_dir_all(&parts).map_err(|e| SimError::Io {
        what: format!("cannot create {}", parts.display()),
        source: e,
    })?;
    kept.retain(|k| !removed.contains(k) && !k.strip_prefix(&format!("{PARTS}/")).is_some_and(is_sweep_file));
    crate::experiment::note_kept(&dir, &kept, host);
    dir.write(SWEEP_JSON, &fairsched_report::files::json_bytes(&sweep))?;
    slurm::write_script(&abs, SCRIPT, &text)?;
    dir.finish()?;
    Ok(Prepared {
        dir: abs,
        instances: n,
        script: text,
        sweep,
    })
}

impl Prepared {
    /// Submits the array with `sbatch`, and records its job id.
    pub fn sbatch(mut self) -> Result<Submitted, SimError> {
        let n = self.instances;
        let shown = self.dir.join(SCRIPT);
        let job = slurm::sbatch(&[], &self.script).map_err(|e| {
            // The array limit is named only when Slurm refused the array's size.
            let hint = if e.to_string().to_ascii_lowercase().contains("array") {
                "; Slurm's MaxArraySize, in `scontrol show config`, limits an array"
            } else {
                ""
            };
            SimError::Sweep(format!(
                "submitting {} ({n} array task{}{hint}): {e}",
                shown.display(),
                if n == 1 { "" } else { "s" }
            ))
        })?;
        self.sweep.job_id = Some(job);
        fairsched_report::write_atomic(
            &self.dir.join(SWEEP_JSON),
            &fairsched_report::files::json_bytes(&self.sweep),
        )?;
        Ok(Submitted {
            job,
            instances: n,
            dir: self.dir,
        })
    }
}

/// [`prepare`], then [`Prepared::sbatch`].
pub fn submit<E: Experiment>(
    args: &E::Args,
    out: &Path,
    force: bool,
    how: &Submit,
    registry: &Registry,
    host: &dyn Host,
) -> Result<Submitted, SimError> {
    prepare::<E>(args, out, force, how, registry, host)?.sbatch()
}

/// Writes instance `index`'s part, atomically, once sure that reading it
/// gives `part` back exactly.
fn write_part<P: Serialize + DeserializeOwned + Debug>(
    dir: &Path,
    sweep: &SweepFile,
    index: usize,
    part: &P,
) -> Result<(), SimError> {
    let mut bytes = serde_json::to_vec(&PartOut {
        format: PART_FORMAT,
        experiment: &sweep.experiment,
        args: &sweep.args,
        instance: index,
        part,
    })
    .map_err(|e| {
        SimError::Sweep(format!(
            "instance {index}: its results cannot be stored as JSON: {e}"
        ))
    })?;
    bytes.push(b'\n');
    let back: PartIn<P> = serde_json::from_slice(&bytes).map_err(|e| {
        SimError::Sweep(format!(
            "instance {index}: its results cannot be stored as JSON: {e}"
        ))
    })?;
    if format!("{:?}", back.part) != format!("{part:?}") {
        return Err(SimError::Sweep(format!(
            "instance {index}: its results do not read back from JSON exactly (a number that is not finite?)"
        )));
    }
    let path = part_path(dir, index);
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).map_err(|e| SimError::Io {
            what: format!("cannot create {}", p.display()),
            source: e,
        })?;
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
fn read_parts<P: DeserializeOwned>(dir: &Path, sweep: &SweepFile) -> Result<Vec<P>, SimError> {
    (0..sweep.instances)
        .map(|i| {
            let path = part_path(dir, i);
            let bytes = fs::read(&path).map_err(|e| SimError::Io {
                what: format!("cannot read {}", path.display()),
                source: e,
            })?;
            let p: PartIn<P> = serde_json::from_slice(&bytes)
                .map_err(|e| SimError::Sweep(format!("{}: not a part of this sweep: {e}", path.display())))?;
            if p.format != PART_FORMAT {
                return Err(SimError::Sweep(format!(
                    "{}: format {:?}, expected {PART_FORMAT:?}",
                    path.display(),
                    p.format
                )));
            }
            if p.experiment != sweep.experiment || p.args != sweep.args || p.instance != i {
                return Err(SimError::Sweep(format!(
                    "{}: written for another sweep (instance {} of experiment {}), not instance {i} of this one's {SWEEP_JSON}: remove it and run its array task again",
                    path.display(),
                    p.instance,
                    p.experiment
                )));
            }
            Ok(p.part)
        })
        .collect()
}

/// Reads `DIR/sweep.json` (`dir` absolute); also its bytes.
pub fn read_sweep(dir: &Path) -> Result<(SweepFile, Vec<u8>), SimError> {
    let path = dir.join(SWEEP_JSON);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SimError::Sweep(format!(
                "{}: no {SWEEP_JSON}: not the folder of a `fairsched experiment … --slurm-array` run",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(SimError::Io {
                what: format!("cannot read {}", path.display()),
                source: e,
            });
        }
    };
    let sweep: SweepFile = serde_json::from_slice(&bytes)
        .map_err(|e| SimError::Sweep(format!("{}: not a sweep's record: {e}", path.display())))?;
    if sweep.format != FORMAT {
        return Err(SimError::Sweep(format!(
            "{}: format {:?}, expected {FORMAT:?}",
            path.display(),
            sweep.format
        )));
    }
    Ok((sweep, bytes))
}

fn absolute(p: &Path) -> Result<PathBuf, SimError> {
    std::path::absolute(p).map_err(|e| SimError::Io {
        what: p.display().to_string(),
        source: e,
    })
}

/// Goes to the folder the sweep's arguments are relative to (the
/// process's working directory) until the guard is dropped, which puts
/// back the one before.
fn enter(sweep: &SweepFile) -> Result<Back, SimError> {
    let before = std::env::current_dir().ok();
    std::env::set_current_dir(&sweep.cwd).map_err(|e| SimError::Io {
        what: format!(
            "cannot work from {} (the folder the sweep was submitted from)",
            sweep.cwd.display()
        ),
        source: e,
    })?;
    Ok(Back(before))
}

/// The working directory to go back to (see [`enter`]).
struct Back(Option<PathBuf>);

impl Drop for Back {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::env::set_current_dir(d);
        }
    }
}

fn args_of<E: Experiment>(sweep: &SweepFile) -> Result<E::Args, SimError> {
    serde_json::from_value(sweep.args.clone()).map_err(|e| {
        SimError::Sweep(format!(
            "{SWEEP_JSON}: its arguments do not read as {}'s: {e}",
            E::NAME
        ))
    })
}

/// The experiments that run as Slurm sweeps.
pub fn sweepable() -> Vec<&'static str> {
    [
        (Shapley::NAME, Shapley::SWEEPS),
        (Pffp::NAME, Pffp::SWEEPS),
        (DietEthic::NAME, DietEthic::SWEEPS),
        (WorkflowFairness::NAME, WorkflowFairness::SWEEPS),
        (Study::<Shapley>::NAME, Study::<Shapley>::SWEEPS),
        (Study::<Pffp>::NAME, Study::<Pffp>::SWEEPS),
        (Study::<DietEthic>::NAME, Study::<DietEthic>::SWEEPS),
        (Study::<WorkflowFairness>::NAME, Study::<WorkflowFairness>::SWEEPS),
    ]
    .into_iter()
    .filter_map(|(n, s)| s.then_some(n))
    .collect()
}

/// Calls `$f::<E>` for the experiment named `$name`.
macro_rules! by_name {
    ($name:expr, $f:ident ( $($a:expr),* )) => {
        match $name {
            n if n == Shapley::NAME => $f::<Shapley>($($a),*),
            n if n == Pffp::NAME => $f::<Pffp>($($a),*),
            n if n == DietEthic::NAME => $f::<DietEthic>($($a),*),
            n if n == WorkflowFairness::NAME => $f::<WorkflowFairness>($($a),*),
            n if n == Study::<Shapley>::NAME => $f::<Study<Shapley>>($($a),*),
            n if n == Study::<Pffp>::NAME => $f::<Study<Pffp>>($($a),*),
            n if n == Study::<DietEthic>::NAME => $f::<Study<DietEthic>>($($a),*),
            n if n == Study::<WorkflowFairness>::NAME => $f::<Study<WorkflowFairness>>($($a),*),
            other => Err(SimError::Sweep(format!("{SWEEP_JSON}: unknown experiment {other:?}"))),
        }
    };
}

/// One array task: instance `index` of the sweep in `dir`, into
/// `dir/parts/instance-INDEX.json`. Works from the folder the sweep was
/// submitted from: the process's working directory is that folder while
/// it runs, and is put back before it returns (other threads of the
/// program see the change meanwhile).
pub fn run_part(dir: &Path, index: usize, registry: &Registry, host: &dyn Host) -> Result<(), SimError> {
    let dir = absolute(dir)?;
    let (sweep, _) = read_sweep(&dir)?;
    if index >= sweep.instances {
        return Err(SimError::Sweep(format!(
            "instance {index}: the sweep has {} (0 to {})",
            sweep.instances,
            sweep.instances.saturating_sub(1)
        )));
    }
    let _back = enter(&sweep)?;
    by_name!(
        sweep.experiment.as_str(),
        part_as(&dir, index, &sweep, registry, host)
    )
}

fn part_as<E: Experiment>(
    dir: &Path,
    index: usize,
    sweep: &SweepFile,
    registry: &Registry,
    host: &dyn Host,
) -> Result<(), SimError> {
    let args = args_of::<E>(sweep)?;
    let plan = E::plan(&args, registry, host)?;
    same_count(sweep, plan.instances())?;
    let part = plan.run(registry, index)?;
    write_part(dir, sweep, index, &part)
}

/// What [`collect`] gives: the experiment's results, as its local run's.
pub struct Collected {
    pub experiment: String,
    pub text: String,
    pub listed: Vec<String>,
    pub tables: Vec<fairsched_report::Table>,
    pub summary: serde_json::Value,
}

/// `collect DIR`: the result files of the sweep in `dir` from its parts;
/// missing parts are named. Works from the folder the sweep was submitted
/// from, as [`run_part`] does.
pub fn collect(dir: &Path, force: bool, registry: &Registry, host: &dyn Host) -> Result<Collected, SimError> {
    let shown = dir.to_path_buf();
    let dir = absolute(dir)?;
    let (sweep, bytes) = read_sweep(&dir)?;
    let missing: Vec<usize> = (0..sweep.instances)
        .filter(|&i| !part_path(&dir, i).is_file())
        .collect();
    if !missing.is_empty() {
        let what = format!(
            "{}: {} of {} parts missing, instance{} {}",
            shown.display(),
            missing.len(),
            sweep.instances,
            if missing.len() == 1 { "" } else { "s" },
            ranges(&missing),
        );
        let Some(job) = sweep.job_id else {
            return Err(SimError::Sweep(format!(
                "{what}: the sweep was not submitted (sbatch refused it): submit {} with sbatch, or run the experiment with --slurm-array again",
                shown.join(SCRIPT).display()
            )));
        };
        return Err(SimError::Sweep(format!(
            "{what}: the array tasks are still running (`squeue -j {job}`), or failed (see {})",
            shown.join(PARTS).join(format!("slurm-{job}_*.out")).display()
        )));
    }
    let mut keep = vec![(SWEEP_JSON, bytes)];
    if let Ok(s) = fs::read(dir.join(SCRIPT)) {
        keep.push((SCRIPT, s));
    }
    let _back = enter(&sweep)?;
    let experiment = sweep.experiment.clone();
    by_name!(
        experiment.as_str(),
        collect_as(&dir, force, &sweep, &keep, registry, host)
    )
}

fn collect_as<E: Experiment>(
    dir: &Path,
    force: bool,
    sweep: &SweepFile,
    keep: &[(&str, Vec<u8>)],
    registry: &Registry,
    host: &dyn Host,
) -> Result<Collected, SimError> {
    let args = args_of::<E>(sweep)?;
    let mut out = open_out(dir, force, host)?;
    let plan = E::plan(&args, registry, host)?;
    same_count(sweep, plan.instances())?;
    let parts = read_parts::<E::Part>(dir, sweep)?;
    let outcome = plan.report(parts, host)?;
    let mut tool = host.tool();
    tool.command = sweep.command.clone();
    let parts_entry = format!("{PARTS}/");
    let Done {
        summary,
        text,
        tables,
        listed,
    } = write_outcome::<E>(
        &mut out,
        outcome,
        tool,
        &[SWEEP_JSON, SCRIPT, &parts_entry],
        &|d| {
            for (name, bytes) in keep {
                d.write(name, bytes)?;
            }
            Ok(sweep_files(d.path()))
        },
        host,
    )?;
    out.finish()?;
    Ok(Collected {
        experiment: E::NAME.into(),
        text,
        listed,
        tables,
        summary: serde_json::to_value(&summary).unwrap_or(serde_json::Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sweep() -> SweepFile {
        SweepFile {
            format: FORMAT.into(),
            experiment: "x".into(),
            args: serde_json::json!({"x": 1}),
            command: "fairsched experiment x".into(),
            cwd: "/".into(),
            instances: 1,
            partition: None,
            job_id: None,
        }
    }

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
        let sweep = sweep();
        let d = tempfile_dir();
        write_part(&d, &sweep, 0, &xs).unwrap();
        let back: Vec<Vec<f64>> = read_parts(&d, &sweep).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].len(), xs.len());
        for (a, b) in xs.iter().zip(&back[0]) {
            assert_eq!(a.to_bits(), b.to_bits(), "{a:e} came back as {b:e}");
        }
        // A number JSON cannot hold is refused, not written wrong.
        let e = write_part(&d, &sweep, 0, &vec![Some(f64::NAN)]).unwrap_err();
        assert!(e.to_string().contains("instance 0"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("fairsched-sweep-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
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
