//! What a worker started as a Slurm job (a pilot) needs of Slurm: how long
//! its job has left, so that it can drain before the time limit.

use std::time::Duration;

/// A time as Slurm writes and reads it (`--time`, `squeue -o %L`): `MM`,
/// `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM` or `D-HH:MM:SS`; in seconds.
///
/// ```
/// use fairsched_worker::parse_slurm_time;
/// assert_eq!(parse_slurm_time("30"), Ok(1800));
/// assert_eq!(parse_slurm_time("1-02:00:00"), Ok(93_600));
/// assert!(parse_slurm_time("UNLIMITED").is_err());
/// ```
pub fn parse_slurm_time(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
    let num = |p: &str| -> Result<u64, String> {
        if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        p.parse().map_err(|_| bad())
    };
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (Some(num(d)?), r),
        None => (None, s),
    };
    let parts: Vec<u64> = rest.split(':').map(num).collect::<Result<_, _>>()?;
    let secs = match (days, parts.as_slice()) {
        (None, [m]) => m * 60,
        (None, [m, s]) => m * 60 + s,
        (None, [h, m, s]) => h * 3600 + m * 60 + s,
        (Some(d), [h]) => d * 86_400 + h * 3600,
        (Some(d), [h, m]) => d * 86_400 + h * 3600 + m * 60,
        (Some(d), [h, m, s]) => d * 86_400 + h * 3600 + m * 60 + s,
        _ => return Err(bad()),
    };
    if secs == 0 {
        return Err(format!("{s:?}: a time of zero"));
    }
    Ok(secs)
}

/// The time left before Slurm stops the job this process runs in
/// (`$SLURM_JOB_ID`), as `squeue -h -j ID -o %L` tells it; `Ok(None)`
/// outside a Slurm job or for a job without a time limit.
pub fn job_time_left() -> anyhow::Result<Option<Duration>> {
    let Ok(job) = std::env::var("SLURM_JOB_ID") else {
        return Ok(None);
    };
    let squeue = std::env::var("FAIRSCHED_SQUEUE").unwrap_or_else(|_| "squeue".to_owned());
    let out = std::process::Command::new(&squeue)
        .args(["-h", "-j", &job, "-o", "%L"])
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run `{squeue}` to read job {job}'s time left: {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "`{squeue} -h -j {job} -o %L` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let left = text.trim();
    if matches!(left, "UNLIMITED" | "NOT_SET" | "INVALID" | "") {
        return Ok(None);
    }
    parse_slurm_time(left)
        .map(|s| Some(Duration::from_secs(s)))
        .map_err(|e| anyhow::anyhow!("job {job}'s time left: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_every_slurm_form() {
        assert_eq!(parse_slurm_time("1:30"), Ok(90));
        assert_eq!(parse_slurm_time("01:00:05"), Ok(3605));
        assert_eq!(parse_slurm_time("1-2"), Ok(93_600));
        assert_eq!(parse_slurm_time("1-0:1"), Ok(86_460));
        assert_eq!(parse_slurm_time("1-0:0:1"), Ok(86_401));
        for bad in [
            "",
            "1:2:3:4",
            "a",
            "-1",
            "1-",
            "0",
            "00:00:00",
            "1:-2",
            "99999999999999",
        ] {
            assert!(parse_slurm_time(bad).is_err(), "{bad:?}");
        }
    }
}
