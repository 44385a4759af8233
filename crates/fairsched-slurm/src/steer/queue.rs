//! What Slurm's tools print, parsed: `squeue` (the jobs), `sprio` (the
//! site factor each pending job has), `sinfo` (the processors) and
//! `scontrol show config` (the priority weights). Pure functions over the
//! text, so every parse is tested on recorded output; a line that does not
//! parse is an error naming the tool, the line and the field, and the
//! whole cycle is skipped (never half of it applied).

use crate::SlurmError;
use std::collections::{BTreeMap, HashMap};

/// `squeue`'s fields, `|`-separated (no user, account, job id, reason or
/// dependency holds a `|`; the name, last, may): the job as it is
/// displayed (`13_2` for an array element), the job record it belongs to
/// (an unsplit pending array shares one), user, account, processors, time
/// limit, state, the reason it waits, the dependencies it still waits on,
/// its name.
pub const SQUEUE_FORMAT: &str = "%i|%A|%u|%a|%C|%l|%T|%r|%E|%j";
/// Fields in [`SQUEUE_FORMAT`].
const SQUEUE_FIELDS: usize = 10;
/// The states asked for: waiting, and holding processors.
pub const SQUEUE_STATES: &str = "PD,CF,R,CG,S";
/// `sprio`'s fields: job record, weighted site factor.
pub const SPRIO_FORMAT: &str = "%i|%S";

/// Whether Slurm has started a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Pending,
    /// Running, configuring, completing or suspended: it holds processors.
    Running,
}

/// One line of `squeue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmJob {
    /// As displayed (`42`, `13_2`): what `scontrol update JobId=` takes.
    pub id: String,
    /// The job record (`%A`): what `sprio` lists.
    pub record: String,
    pub user: String,
    pub account: String,
    pub cpus: u32,
    /// The time limit in seconds (`None`: unlimited or not set).
    pub limit: Option<i64>,
    pub state: JobState,
    /// Why it waits (`%r`: `Priority`, `Resources`, `Dependency`, …).
    pub reason: String,
    /// The job records its dependencies name (`%E`, `afterok:41(unfulfilled),afterany:7_*`
    /// → 41 and 7), in the order given; `singleton` names none.
    pub after: Vec<String>,
    /// Its name (`%j`): a workflow's jobs of one name are one activity.
    pub name: String,
}

impl SlurmJob {
    /// Pending until a job it depends on ends: not yet runnable, as a
    /// workflow task whose inputs do not exist yet (MOTEUR submits a task
    /// only then).
    /// Its job number: `13` for array element `13_2`.
    pub fn head(&self) -> &str {
        self.id.split('_').next().unwrap_or(&self.id)
    }
    pub fn waits_on_dependency(&self) -> bool {
        self.state == JobState::Pending && self.reason.starts_with("Dependency")
    }

    /// The order jobs are numbered in: job number, then array index.
    pub fn sort_key(&self) -> (u64, u64, &str) {
        let (head, tail) = self.id.split_once('_').unwrap_or((&self.id, ""));
        (
            head.parse().unwrap_or(u64::MAX),
            tail.parse().unwrap_or(0),
            &self.id,
        )
    }
}

fn bad(tool: &str, line: usize, text: &str, why: String) -> SlurmError {
    SlurmError::Failed(format!("{tool} output, line {line} ({text:?}): {why}"))
}

/// Parses `squeue -h -r -t SQUEUE_STATES -o SQUEUE_FORMAT`.
pub fn parse_squeue(text: &str) -> Result<Vec<SlurmJob>, SlurmError> {
    let mut jobs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        // Split without a vector per line (10,000 lines a cycle).
        let mut f = [""; SQUEUE_FIELDS];
        let mut count = 0;
        for (slot, field) in f.iter_mut().zip(line.trim_start().splitn(SQUEUE_FIELDS, '|')) {
            *slot = field;
            count += 1;
        }
        if count != SQUEUE_FIELDS {
            return Err(bad(
                "squeue",
                n,
                line,
                format!("{count} fields, expected {SQUEUE_FIELDS} ({SQUEUE_FORMAT})"),
            ));
        }
        let id = f[0];
        if id.is_empty()
            || !id
                .split('_')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(bad(
                "squeue",
                n,
                line,
                format!("field 1, job id {id:?}, is not a number or NUMBER_INDEX"),
            ));
        }
        let record = f[1];
        if record.is_empty() || !record.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(
                "squeue",
                n,
                line,
                format!("field 2, job record {record:?}, is not a number"),
            ));
        }
        let cpus: u32 = f[4].parse().ok().filter(|&c| c > 0).ok_or_else(|| {
            bad(
                "squeue",
                n,
                line,
                format!("field 5, processors {:?}, is not a positive number", f[4]),
            )
        })?;
        let limit =
            parse_limit(f[5]).map_err(|why| bad("squeue", n, line, format!("field 6, time limit: {why}")))?;
        let state = match f[6] {
            "PENDING" => JobState::Pending,
            "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" => JobState::Running,
            other => {
                return Err(bad(
                    "squeue",
                    n,
                    line,
                    format!("field 7, state {other:?}, was not asked for"),
                ));
            }
        };
        jobs.push(SlurmJob {
            id: id.to_owned(),
            record: record.to_owned(),
            user: f[2].to_owned(),
            account: f[3].to_owned(),
            cpus,
            limit,
            state,
            reason: f[7].to_owned(),
            after: parse_dependency(f[8]),
            name: f[9].to_owned(),
        });
    }
    Ok(jobs)
}

/// The job records a dependency list names (`%E`): items separated by
/// `,` (all) or `?` (any), each `TYPE:JOB[_TASK][+MINUTES][:JOB…]` with
/// Slurm's `(state)` after it; `singleton` and `(null)` name none, and a
/// token that is not a job number is passed over (the dependency still
/// holds the job in Slurm; only its workflow is not recognised).
pub fn parse_dependency(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in s.split([',', '?']) {
        let item = item.split('(').next().unwrap_or("");
        let Some((_, jobs)) = item.split_once(':') else {
            continue;
        };
        for job in jobs.split(':') {
            let num = job.split(['_', '+']).next().unwrap_or("");
            if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) && !out.iter().any(|o| o == num) {
                out.push(num.to_owned());
            }
        }
    }
    out
}

/// A Slurm time limit in seconds: `[DAYS-]HOURS:MINUTES:SECONDS`,
/// `MINUTES:SECONDS`, `MINUTES`; `UNLIMITED`, `NOT_SET` and `INFINITE` are
/// `None`.
pub fn parse_limit(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if matches!(s, "UNLIMITED" | "NOT_SET" | "INFINITE" | "N/A" | "") {
        return Ok(None);
    }
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().map_err(|_| format!("{s:?}: days {d:?}"))?, r),
        None => (0, s),
    };
    let parts: Vec<i64> = rest
        .split(':')
        .map(|p| p.parse::<i64>().ok().filter(|&v| v >= 0))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{s:?} is not [D-]HH:MM:SS"))?;
    let secs = match (s.contains('-'), parts.as_slice()) {
        (false, [m]) => m * 60,
        (false, [m, sec]) => m * 60 + sec,
        (_, [h, m, sec]) => h * 3600 + m * 60 + sec,
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        _ => return Err(format!("{s:?} is not [D-]HH:MM:SS")),
    };
    Ok(Some(days * 86_400 + secs))
}

/// Parses `sprio -h -o SPRIO_FORMAT`: each pending job record's site
/// factor (held jobs are not listed). Looked up, never iterated: hashed.
pub fn parse_sprio(text: &str) -> Result<HashMap<String, i64>, SlurmError> {
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((id, site)) = line.split_once('|') else {
            return Err(bad(
                "sprio",
                i + 1,
                line,
                format!("expected 2 fields ({SPRIO_FORMAT})"),
            ));
        };
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(
                "sprio",
                i + 1,
                line,
                format!("field 1, job {id:?}, is not a number"),
            ));
        }
        let v: i64 = site.trim().parse().map_err(|_| {
            bad(
                "sprio",
                i + 1,
                line,
                format!("field 2, site factor {site:?}, is not a number"),
            )
        })?;
        out.insert(id.to_owned(), v);
    }
    Ok(out)
}

/// The total processors of `sinfo -h -o %C` (`ALLOCATED/IDLE/OTHER/TOTAL`
/// per line: one line per partition asked for, or one for all).
pub fn parse_sinfo_cpus(text: &str) -> Result<u32, SlurmError> {
    let mut total = 0u32;
    let mut lines = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        lines += 1;
        let t = line
            .rsplit('/')
            .next()
            .and_then(|t| t.parse::<u32>().ok())
            .filter(|_| line.split('/').count() == 4)
            .ok_or_else(|| bad("sinfo", i + 1, line, "expected ALLOCATED/IDLE/OTHER/TOTAL".into()))?;
        total = total.saturating_add(t);
    }
    if lines == 0 {
        return Err(SlurmError::Usage(
            "sinfo listed no processors (is the partition's name right?)".into(),
        ));
    }
    Ok(total)
}

/// What `scontrol show config` says of priorities: the plugin and the
/// weights, by name (`PriorityWeightAge` → 1000).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PriorityConfig {
    pub priority_type: String,
    pub site_factor_plugin: Option<String>,
    pub weights: BTreeMap<String, i64>,
}

impl PriorityConfig {
    /// The largest sum Slurm's own factors can add to a job's priority
    /// (each factor is at most 1, times its weight; TRES weights count
    /// as one each): a site factor step above it decides the order alone.
    pub fn weight_sum(&self) -> i64 {
        self.weights.values().sum()
    }
}

/// Parses `scontrol show config`.
pub fn parse_config(text: &str) -> PriorityConfig {
    let mut c = PriorityConfig::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "PriorityType" => c.priority_type = v.to_owned(),
            "PrioritySiteFactorPlugin" if v != "(null)" && !v.is_empty() => {
                c.site_factor_plugin = Some(v.to_owned());
            }
            "PriorityWeightTRES" => {
                // `CPU=1000,Mem=2000` or `(null)`.
                for part in v.split(',') {
                    if let Some((_, w)) = part.split_once('=')
                        && let Ok(w) = w.trim().parse::<i64>()
                    {
                        *c.weights.entry("PriorityWeightTRES".into()).or_default() += w;
                    }
                }
            }
            _ if k.starts_with("PriorityWeight") => {
                if let Ok(w) = v.parse::<i64>() {
                    c.weights.insert(k.to_owned(), w);
                }
            }
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded on the CI Slurm (22.05.8): a running blocker, a pending
    /// array split by an update (13_2 became record 14), a 2-CPU job.
    const SQUEUE: &str = "13_1|13|alice|physics|1|5:00|PENDING|Priority|(null)|flood\n\
                          13_2|14|alice|physics|1|5:00|PENDING|Resources|(null)|flood\n\
                          13_3|13|alice|physics|1|5:00|PENDING|Priority|(null)|flood\n\
                          12|12|root|root|16|UNLIMITED|RUNNING|None|(null)|blocker\n\
                          9|9|carol|chemistry|2|1-02:04:00|COMPLETING|None|(null)|a|b c\n\
                          15|15|carol|chemistry|1|5:00|PENDING|Dependency|afterok:12(unfulfilled),afterany:13_*(unfulfilled)|merge\n";

    #[test]
    fn squeue_lines_as_the_ci_slurm_prints_them() {
        let jobs = parse_squeue(SQUEUE).unwrap();
        assert_eq!(jobs.len(), 6);
        assert_eq!(jobs[4].name, "a|b c", "a name may hold a |");
        assert!(jobs[5].waits_on_dependency() && !jobs[0].waits_on_dependency());
        assert_eq!(jobs[5].after, ["12", "13"]);
        assert_eq!(jobs[5].name, "merge");
        assert_eq!(jobs[1].id, "13_2");
        assert_eq!(jobs[1].record, "14");
        assert_eq!(jobs[1].limit, Some(300));
        assert_eq!(jobs[3].limit, None);
        assert_eq!(jobs[3].cpus, 16);
        assert_eq!(jobs[4].state, JobState::Running);
        assert_eq!(jobs[4].limit, Some(86_400 + 2 * 3600 + 4 * 60));
        assert!(jobs[0].sort_key() < jobs[1].sort_key());
        assert!(jobs[3].sort_key() < jobs[0].sort_key());
    }

    #[test]
    fn a_line_that_does_not_parse_names_its_line_and_field() {
        const T: &str = "|Priority|(null)|job";
        let e = parse_squeue(&format!("1|1|a|b|1|5:00|PENDING{T}\n2|2|a|b|x|5:00|PENDING{T}\n")).unwrap_err();
        assert!(
            e.to_string().contains("line 2") && e.to_string().contains("field 5"),
            "{e}"
        );
        let e = parse_squeue("1|1|a|b|1|5:00\n").unwrap_err();
        assert!(e.to_string().contains("6 fields"), "{e}");
        let e = parse_squeue(&format!("1|1|a|b|1|5:00|BOOT_FAIL{T}\n")).unwrap_err();
        assert!(e.to_string().contains("field 7"), "{e}");
        let e = parse_squeue(&format!("1|1|a|b|1|5:xx|PENDING{T}\n")).unwrap_err();
        assert!(e.to_string().contains("field 6"), "{e}");
        let e = parse_squeue(&format!("x1|1|a|b|1|5:00|PENDING{T}\n")).unwrap_err();
        assert!(e.to_string().contains("field 1"), "{e}");
        assert!(
            parse_sprio("13|0\n14|x\n")
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
    }

    #[test]
    fn dependencies_in_every_form_slurm_prints() {
        assert!(parse_dependency("(null)").is_empty());
        assert!(parse_dependency("singleton(unfulfilled)").is_empty());
        assert_eq!(parse_dependency("afterok:41(unfulfilled)"), ["41"]);
        assert_eq!(
            parse_dependency("afterany:7_3(unfulfilled)?afterok:8(failed)"),
            ["7", "8"]
        );
        assert_eq!(
            parse_dependency("after:5+10(unfulfilled),aftercorr:6:7"),
            ["5", "6", "7"]
        );
        assert_eq!(
            parse_dependency("afterok:x(unfulfilled),afterok:41,afterok:41"),
            ["41"]
        );
    }

    #[test]
    fn time_limits_in_every_form_slurm_prints() {
        assert_eq!(parse_limit("5").unwrap(), Some(300));
        assert_eq!(parse_limit("5:00").unwrap(), Some(300));
        assert_eq!(parse_limit("1:00:00").unwrap(), Some(3600));
        assert_eq!(parse_limit("2-00:00:00").unwrap(), Some(172_800));
        assert_eq!(parse_limit("2-3").unwrap(), Some(2 * 86_400 + 3 * 3600));
        assert_eq!(parse_limit("UNLIMITED").unwrap(), None);
        assert!(parse_limit("1:2:3:4").is_err());
        assert!(parse_limit("-5").is_err());
    }

    #[test]
    fn sprio_sinfo_and_config() {
        let s = parse_sprio("13|0\n14|77\n").unwrap();
        assert_eq!(s["14"], 77);
        assert_eq!(parse_sinfo_cpus("0/16/0/16\n").unwrap(), 16);
        assert_eq!(parse_sinfo_cpus("0/16/0/16\n4/4/0/8\n").unwrap(), 24);
        assert!(parse_sinfo_cpus("").is_err());
        assert!(parse_sinfo_cpus("16\n").is_err());
        let c = parse_config(
            "PrioritySiteFactorPlugin = (null)\nPriorityType            = priority/multifactor\n\
             PriorityWeightAge       = 1000\nPriorityWeightFairShare = 10000\nPriorityWeightTRES      = (null)\n\
             PriorityWeightPartition = 1000\n",
        );
        assert_eq!(c.priority_type, "priority/multifactor");
        assert_eq!(c.site_factor_plugin, None);
        assert_eq!(c.weight_sum(), 12_000);
    }
}
