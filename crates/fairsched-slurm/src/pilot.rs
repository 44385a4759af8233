//! fairsched workers submitted as Slurm batch jobs (pilots, as DIRAC's):
//! the batch script, the state file of the jobs submitted, and what
//! `squeue` says of them. The cluster's scheduler decides when and where a
//! pilot runs; fairsched's core decides which task runs on the slots of
//! the pilots that are running.

use crate::{SlurmError, tools};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The job name of every pilot (`pilot status` and `pilot cancel` touch
/// no other job, whatever ids the state file holds).
pub const PILOT_NAME: &str = "fairsched-pilot";

fn usage(m: String) -> SlurmError {
    SlurmError::Usage(m)
}

/// The state file: every pilot submitted from here.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Pilots {
    pub pilots: Vec<Pilot>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pilot {
    pub job: u64,
    pub broker: String,
    pub slots: u32,
    /// The batch script (in the pilots' directory).
    pub script: PathBuf,
}

impl Pilots {
    /// The file at `path`; none recorded if there is none.
    pub fn load(path: &Path) -> Result<Pilots, SlurmError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| SlurmError::Failed(format!("{}: not a pilots file: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Pilots::default()),
            Err(e) => Err(SlurmError::Io {
                what: format!("cannot read {}", path.display()),
                source: e,
            }),
        }
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), SlurmError> {
        let mut text = serde_json::to_string_pretty(self).expect("plain data");
        text.push('\n');
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let partial = path.with_file_name(format!("{name}.partial"));
        // Written, synced, renamed into place: never a half-written file.
        std::fs::File::create(&partial)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&partial, path))
            .map_err(|source| SlurmError::Io {
                what: format!("cannot write {}", path.display()),
                source,
            })
    }
}

/// A value for an `#SBATCH` line, which sbatch reads without a shell:
/// refused if it holds blanks, quotes or backslashes.
pub fn directive(what: &str, v: &str) -> Result<String, SlurmError> {
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || "'\"\\".contains(c)) {
        return Err(usage(format!(
            "{what} {v:?}: an #SBATCH value cannot hold blanks, quotes or backslashes"
        )));
    }
    Ok(v.to_owned())
}

/// What a pilot job is.
#[derive(Clone, Debug)]
pub struct Job {
    /// Tasks it runs at once (its CPUs).
    pub slots: u32,
    pub time: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    /// Seconds before the wall time ends when it drains.
    pub drain_before_s: u64,
}

/// The batch script of one pilot: `exe worker` on `job.slots` CPUs,
/// output and run directories in `dir`. The broker and token come from
/// the environment sbatch exports (`--export=ALL`), never the script.
pub fn script(job: &Job, exe: &Path, dir: &Path) -> Result<String, SlurmError> {
    let q = tools::shell_quote;
    let dir_s = dir
        .to_str()
        .ok_or_else(|| SlurmError::Failed("the pilots' directory is not valid UTF-8".into()))?;
    let exe_s = exe
        .to_str()
        .ok_or_else(|| SlurmError::Failed("the fairsched path is not valid UTF-8".into()))?;
    let mut s = String::from("#!/bin/sh\n# A fairsched pilot: written by `fairsched pilot slurm`.\n");
    s += &format!("#SBATCH --job-name={PILOT_NAME}\n#SBATCH --ntasks=1\n");
    s += &format!("#SBATCH --cpus-per-task={}\n", job.slots);
    s += &format!(
        "#SBATCH --output={}\n",
        directive("--dir", &format!("{dir_s}/pilot-%j.out"))?
    );
    if let Some(t) = &job.time {
        s += &format!("#SBATCH --time={t}\n");
    }
    if let Some(p) = &job.partition {
        s += &format!("#SBATCH --partition={}\n", directive("--partition", p)?);
    }
    if let Some(acc) = &job.account {
        s += &format!("#SBATCH --account={}\n", directive("--account", acc)?);
    }
    s += &format!(
        "exec {} worker --slots {} --drain-before {} --workdir {}/work-\"$SLURM_JOB_ID\" --host \"pilot-$SLURM_JOB_ID\"\n",
        q(exe_s)?,
        job.slots,
        job.drain_before_s.max(1),
        q(dir_s)?,
    );
    Ok(s)
}

/// Submits `count` pilots running `text` (from [`script`]) in `dir`, the
/// broker and token in their environment, each recorded in the state
/// file `state`; the script is kept as `dir/pilot-FIRSTJOB.sbatch`.
/// Returns the job ids and the script's path. A failure after the first
/// submission keeps the jobs submitted recorded, and says so.
#[allow(clippy::too_many_arguments)]
pub fn submit(
    count: u32,
    slots: u32,
    text: &str,
    dir: &Path,
    options: &[String],
    broker: &str,
    token: &str,
    state: &Path,
) -> Result<(Vec<u64>, PathBuf), SlurmError> {
    // Named after the first job once it is known: one script per submission.
    tools::write_script(dir, ".pilot-submitting.sbatch", text)?;
    let mut pilots = Pilots::load(state)?;
    let env = [("FAIRSCHED_BROKER", broker), ("FAIRSCHED_TOKEN", token)];
    let mut ids: Vec<u64> = Vec::new();
    for i in 0..count {
        let job = match tools::sbatch_env(options, text, &env) {
            Ok(job) => job,
            Err(e) if ids.is_empty() => return Err(e),
            Err(e) => {
                let _ = std::fs::rename(
                    dir.join(".pilot-submitting.sbatch"),
                    dir.join(format!("pilot-{}.sbatch", ids[0])),
                );
                pilots.save(state)?;
                return Err(SlurmError::Failed(format!(
                    "pilot {} of {count} not submitted; the {} before it are recorded in {}: {e}",
                    i + 1,
                    ids.len(),
                    state.display()
                )));
            }
        };
        ids.push(job);
        pilots.pilots.push(Pilot {
            job,
            broker: broker.to_owned(),
            slots,
            script: dir.join(format!("pilot-{}.sbatch", ids[0])),
        });
    }
    let path = dir.join(format!("pilot-{}.sbatch", ids[0]));
    std::fs::rename(dir.join(".pilot-submitting.sbatch"), &path).map_err(|source| SlurmError::Io {
        what: format!("cannot write {}", path.display()),
        source,
    })?;
    pilots.save(state)?;
    Ok((ids, path))
}

/// One pilot as `squeue` sees it.
#[derive(Debug, Serialize)]
pub struct Row {
    pub job: u64,
    pub slots: u32,
    pub state: String,
    pub elapsed: String,
    pub left: String,
    /// The node it runs on, or why it waits.
    pub r#where: String,
}

/// What `squeue -t all` says of these jobs, by id (finished jobs drop out
/// of it after Slurm's MinJobAge).
fn squeue(jobs: &[u64]) -> Result<HashMap<u64, [String; 4]>, SlurmError> {
    let mut found = HashMap::new();
    if jobs.is_empty() {
        return Ok(found);
    }
    let list: Vec<String> = jobs.iter().map(u64::to_string).collect();
    let args = |ids: &str| -> Vec<String> {
        ["-h", "-t", "all", "-o", "%i|%j|%T|%M|%L|%R", "-j", ids]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    // One call for all; if Slurm refuses the list (a job it has
    // forgotten), one call per job. Any other failure (Slurm down, no
    // squeue) is an error: not knowing is not "ended".
    let outs = match tools::run("squeue", &args(&list.join(",")), None) {
        Ok(out) => vec![out],
        Err(_) => {
            let mut outs = Vec::new();
            for id in &list {
                match tools::run("squeue", &args(id), None) {
                    Ok(out) => outs.push(out),
                    Err(e) if e.to_string().contains("Invalid job id") => {}
                    Err(e) => return Err(e),
                }
            }
            outs
        }
    };
    for out in outs {
        for line in out.lines() {
            let f: Vec<&str> = line.split('|').collect();
            // A job id Slurm gave again to a job that is not a pilot (its
            // ids restart after its state is wiped) is not ours.
            if let [id, name, state, elapsed, left, reason] = f[..]
                && let Ok(id) = id.trim().parse::<u64>()
                && name.trim() == PILOT_NAME
            {
                let ended = !in_queue(state);
                let left = if ended { "-" } else { left };
                found.insert(id, [state, elapsed, left, reason].map(|s| s.trim().to_owned()));
            }
        }
    }
    Ok(found)
}

/// Whether a job in this `squeue` state is still in Slurm's queue (waiting
/// or running: `scancel` has something to cancel).
fn in_queue(state: &str) -> bool {
    matches!(
        state.trim(),
        "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED" | "RESIZING"
    )
}

/// Every recorded pilot as Slurm sees it now (one Slurm has forgotten is
/// `ENDED`).
pub fn status(pilots: &Pilots) -> Result<Vec<Row>, SlurmError> {
    let jobs: Vec<u64> = pilots.pilots.iter().map(|p| p.job).collect();
    let known = squeue(&jobs)?;
    Ok(pilots
        .pilots
        .iter()
        .map(|p| match known.get(&p.job) {
            Some([state, elapsed, left, reason]) => Row {
                job: p.job,
                slots: p.slots,
                state: state.clone(),
                elapsed: elapsed.clone(),
                left: left.clone(),
                r#where: reason.clone(),
            },
            None => Row {
                job: p.job,
                slots: p.slots,
                state: "ENDED".into(),
                elapsed: "-".into(),
                left: "-".into(),
                r#where: "(no longer in squeue)".into(),
            },
        })
        .collect())
}

/// What [`cancel`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cancelled {
    /// The pilots still in Slurm's queue, which `scancel` was asked to end.
    pub cancelled: Vec<u64>,
    /// The pilots that had already left it (finished, cancelled, timed
    /// out, or forgotten by Slurm): nothing to cancel.
    pub gone: Vec<u64>,
}

/// Whether `scancel` refused a job because it has already ended.
fn already_ended(e: &SlurmError) -> bool {
    let m = e.to_string();
    m.contains("Invalid job id") || m.contains("already completing or completed")
}

/// Cancels those of these pilots that are still in Slurm's queue (as
/// `squeue` says); the others have already left it and are only reported.
/// A pilot that ends between `squeue` and `scancel` counts as gone. Only
/// jobs named as pilots are touched: an id Slurm gave again to another job
/// (after its state was wiped) is left alone.
pub fn cancel(jobs: &[u64]) -> Result<Cancelled, SlurmError> {
    let known = squeue(jobs)?;
    let (live, mut gone): (Vec<u64>, Vec<u64>) = jobs
        .iter()
        .partition(|j| known.get(*j).is_some_and(|[state, ..]| in_queue(state)));
    if live.is_empty() {
        return Ok(Cancelled {
            cancelled: live,
            gone,
        });
    }
    let scancel = |ids: &[u64]| {
        let mut args = vec![format!("--name={PILOT_NAME}")];
        args.extend(ids.iter().map(u64::to_string));
        tools::run("scancel", &args, None)
    };
    let mut cancelled = Vec::new();
    match scancel(&live) {
        Ok(_) => cancelled = live,
        // One of them ended meanwhile: each alone, to tell which.
        Err(e) if already_ended(&e) => {
            for j in live {
                match scancel(&[j]) {
                    Ok(_) => cancelled.push(j),
                    Err(e) if already_ended(&e) => gone.push(j),
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) => return Err(e),
    }
    gone.sort_unstable();
    Ok(Cancelled { cancelled, gone })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(time: Option<&str>) -> Job {
        Job {
            slots: 8,
            time: time.map(Into::into),
            partition: Some("short".into()),
            account: Some("p42".into()),
            drain_before_s: 120,
        }
    }

    #[test]
    fn the_script_asks_for_the_slots_and_runs_a_draining_worker() {
        let s = script(
            &job(Some("01:00:00")),
            Path::new("/opt/fs/fairsched"),
            Path::new("/home/u/pilots"),
        )
        .unwrap();
        assert!(s.starts_with("#!/bin/sh\n"));
        for line in [
            "#SBATCH --cpus-per-task=8",
            "#SBATCH --time=01:00:00",
            "#SBATCH --partition=short",
            "#SBATCH --account=p42",
            "#SBATCH --output=/home/u/pilots/pilot-%j.out",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing from\n{s}");
        }
        let exec = s.lines().last().unwrap();
        assert!(
            exec.starts_with("exec /opt/fs/fairsched worker --slots 8 --drain-before 120 "),
            "{exec}"
        );
        assert!(!s.contains("TOKEN"), "the token never goes into the script");
    }

    #[test]
    fn odd_paths_are_quoted() {
        let j = Job {
            partition: None,
            account: None,
            ..job(None)
        };
        let s = script(&j, Path::new("/opt/my fs/fairsched"), Path::new("/tmp/pilots")).unwrap();
        assert!(s.contains("exec '/opt/my fs/fairsched' worker"), "{s}");
        assert!(!s.contains("--time"));
        // sbatch reads #SBATCH lines without a shell: no quoting there.
        let e = script(&j, Path::new("/bin/fairsched"), Path::new("/tmp/it's")).unwrap_err();
        assert!(e.to_string().contains("--dir"), "{e}");
    }
}
