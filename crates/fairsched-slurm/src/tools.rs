//! Slurm's command-line tools, called as processes: `sbatch`, `squeue`,
//! `scancel`. fairsched never links to Slurm; it submits batch scripts
//! and reads what the tools print, so any Slurm whose `sbatch` is on the
//! `PATH` (or named by `$FAIRSCHED_SBATCH` and friends) will do.

use crate::SlurmError;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn slurm(msg: String) -> SlurmError {
    SlurmError::Failed(msg)
}

/// A Slurm tool's program name, overridable for tests and odd installs by
/// `$FAIRSCHED_<TOOL>` (e.g. `FAIRSCHED_SBATCH=/opt/slurm/bin/sbatch`).
pub fn program(tool: &str) -> String {
    std::env::var(format!("FAIRSCHED_{}", tool.to_ascii_uppercase())).unwrap_or_else(|_| tool.to_owned())
}

/// Runs a Slurm tool; its standard output, or an error that names the
/// command and carries what it printed on standard error.
pub fn run(tool: &str, args: &[String], stdin: Option<&str>) -> Result<String, SlurmError> {
    run_env(tool, args, stdin, &[])
}

/// [`run`] with more environment variables for the tool (sbatch passes
/// its environment on to the job).
pub fn run_env(
    tool: &str,
    args: &[String],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> Result<String, SlurmError> {
    let prog = program(tool);
    let mut cmd = Command::new(&prog);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            slurm(format!(
                "`{prog}` not found: is this a Slurm login node? (install Slurm's client tools, or name the program with $FAIRSCHED_{})",
                tool.to_ascii_uppercase()
            ))
        } else {
            slurm(format!("cannot run `{prog}`: {e}"))
        }
    })?;
    if let Some(text) = stdin {
        // The child may exit before reading everything (a refused
        // script): its status says why, not the broken pipe.
        if let Some(mut pipe) = child.stdin.take() {
            let _ = pipe.write_all(text.as_bytes());
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| slurm(format!("`{prog}` did not finish: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(slurm(format!(
            "`{prog} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            err.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a Slurm cluster is up here: `sinfo` runs and some node takes
/// jobs (idle, mixed, allocated, completing…: not down, drained, failed
/// or unknown). `Err` says why not (for a test's "skipping" line).
pub fn cluster_up() -> Result<(), String> {
    let states = Command::new(program("sinfo"))
        .args(["-h", "-o", "%T"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let up = states.as_deref().is_some_and(|s| {
        s.lines().any(|l| {
            let l = l.trim();
            !l.is_empty()
                && !["down", "drain", "fail", "unknown", "not_responding"]
                    .iter()
                    .any(|p| l.starts_with(p))
        })
    });
    if up {
        Ok(())
    } else {
        Err(format!(
            "no Slurm cluster here (`sinfo -h -o %T` says {states:?}; .ci/slurm-setup.sh starts one)"
        ))
    }
}

/// Submits a batch script (its text, starting with `#!`) with these extra
/// `sbatch` options; the job id Slurm gave it (with `--parsable`, the part
/// before any `;cluster`).
pub fn sbatch(options: &[String], script: &str) -> Result<u64, SlurmError> {
    sbatch_env(options, script, &[])
}

/// [`sbatch`] with these variables in its environment (with
/// `--export=ALL`, the job gets them: a secret stays off the disk and off
/// every command line).
pub fn sbatch_env(options: &[String], script: &str, env: &[(&str, &str)]) -> Result<u64, SlurmError> {
    let mut args = vec!["--parsable".to_owned()];
    args.extend(options.iter().cloned());
    let out = run_env("sbatch", &args, Some(script), env)?;
    parse_job_id(&out)
}

/// `sbatch --parsable`'s answer: `ID` or `ID;CLUSTER`.
pub fn parse_job_id(out: &str) -> Result<u64, SlurmError> {
    let line = out.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let id = line.split(';').next().unwrap_or("");
    id.parse()
        .map_err(|_| slurm(format!("sbatch answered {:?}, not a job id", out.trim())))
}

/// Makes `dir` and writes a batch script there (mode 755), for the record
/// and for a user who wants to resubmit it by hand.
pub fn write_script(dir: &Path, name: &str, script: &str) -> Result<std::path::PathBuf, SlurmError> {
    let io = |what: String| move |source| SlurmError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let path = dir.join(name);
    std::fs::write(&path, script).map_err(io(format!("cannot write {}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(io(format!("cannot make {} executable", path.display())))?;
    }
    Ok(path)
}

/// Quotes a word for a POSIX shell (the script's command lines).
pub fn shell_quote(word: &str) -> Result<String, SlurmError> {
    Ok(shlex::try_quote(word)
        .map_err(|e| SlurmError::Usage(format!("{word:?} cannot go on a shell command line: {e}")))?
        .into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_as_sbatch_prints_them() {
        assert_eq!(parse_job_id("42\n").unwrap(), 42);
        assert_eq!(parse_job_id("42;ci\n").unwrap(), 42);
        assert!(parse_job_id("Submitted batch job 42").is_err());
        assert!(parse_job_id("").is_err());
    }
}
