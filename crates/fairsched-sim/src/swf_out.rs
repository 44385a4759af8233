//! `simulate --swf-out`: the simulated schedule as a Standard Workload
//! Format log, readable by every SWF tool (and by `fairsched trace info`).
//!
//! [`SwfSchedule`] is an observer that keeps, for each task that ended,
//! what its record needs (task id, job number, submit, start, end,
//! outcome: 48 bytes). [`SwfSchedule::write`] then reads the log a second
//! time, streamed, and writes each simulated job's record as read, with the
//! simulation's submit (field 2), wait (3), run time (4), processors (5)
//! and status (11). The run's pipeline is left alone: a record is matched
//! to its tasks by the pair it keeps, the job number (field 1) and the
//! submit time in the log (field 2; the window's re-basing is added back),
//! after the same cleaning as the run's ([`clean_with`]), in task order.
//!
//! Records are written in the log's order. A record the run did not
//! simulate (filtered out, outside `--window`, wider than the largest
//! machine) is left out. With `--split-parallel` each task is a record of
//! its own (one processor), numbered 1, 2, … in file order, and a comment
//! line `; job J (Q processors): records A-B` precedes the tasks of each
//! job of the log.
//!
//! Field 11 (`status`): a task the simulation completed ran its logged
//! run time and keeps the log's status (a job the log marks failed, 0, or
//! cancelled, 5, is still failed or cancelled here). A task the
//! simulation stopped: `0` when killed once it had run its requested time
//! (`--runtime-limit kill`) or failed; `5` for any other kill or a cancel
//! while running; `5` with wait and run time `-1` when it never started
//! (rejected, cancelled while waiting). The same rule gives `--batsim-jobs`
//! its `final_state` (`fairsched_report::batsim::final_state`): 1, 2, 3,
//! -1 `COMPLETED_SUCCESSFULLY`; 0 and 4 `COMPLETED_FAILED`, or
//! `COMPLETED_WALLTIME_REACHED` for a kill at the requested time; 5
//! `COMPLETED_KILLED`, or `REJECTED` for a task that never started.

use crate::config::{PlatformInfo, RunConfig, TraceInput};
use crate::errors::SimError;
use crate::semantics::clean_with;
use fairsched_core::{EndRecord, Observer, Outcome, TaskMeta, Time};
use fairsched_trace::{
    FileSource, FilterCounts, ReadOptions, SwfHeader, SwfJob, SwfReader, SwfWriter, TraceError,
};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// What the SWF record of one ended task needs.
#[derive(Clone, Copy, Debug)]
struct TaskEnd {
    task: u64,
    job: u64,
    submit: Time,
    start: Option<Time>,
    end: Time,
    outcome: Outcome,
    /// Killed once it had run its requested time.
    at_limit: bool,
}

/// Keeps every ended task's times and outcome for [`SwfSchedule::write`].
/// Memory: 48 bytes per task.
#[derive(Debug, Default)]
pub struct SwfSchedule {
    ends: Vec<TaskEnd>,
}

impl Observer for SwfSchedule {
    fn on_task(&mut self, rec: &EndRecord, meta: &TaskMeta) {
        self.ends.push(TaskEnd {
            task: rec.spec.id.0,
            job: meta.job,
            submit: rec.submit,
            start: rec.start(),
            end: rec.end,
            outcome: rec.outcome,
            at_limit: match (rec.start(), rec.spec.estimate) {
                (Some(s), Some(e)) => rec.end - s >= e,
                _ => false,
            },
        });
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

/// Who wrote the file: the header's `Note` lines.
#[derive(Clone, Debug)]
pub struct SwfOutHeader {
    /// E.g. `fairsched 0.1.0`.
    pub generator: String,
    /// The command line of the run.
    pub command: String,
}

/// What [`SwfSchedule::write`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwfOutStats {
    /// Job lines written (one per simulated task).
    pub records: u64,
    /// Records of the log written (fewer than `records` when jobs were
    /// split).
    pub log_jobs: u64,
}

/// Whole seconds of a time (SWF fields are integers; times read from SWF
/// are whole seconds).
fn secs(t: Time) -> i64 {
    t.millis().div_euclid(1000)
}

/// Field 11 of a simulated task: see the module's documentation.
fn status(logged: i64, e: &TaskEnd) -> i64 {
    if e.start.is_none() {
        return 5;
    }
    match e.outcome {
        Outcome::Completed => logged,
        Outcome::Failed => 0,
        Outcome::Killed if e.at_limit => 0,
        Outcome::Killed | Outcome::Cancelled | Outcome::Rejected => 5,
    }
}

/// `rec` with the simulated fields of `e`.
fn simulated(rec: &SwfJob, e: &TaskEnd) -> SwfJob {
    let (wait, run) = match e.start {
        Some(s) => (secs(s) - secs(e.submit), secs(e.end) - secs(s)),
        None => (-1, -1),
    };
    SwfJob {
        submit_time: secs(e.submit),
        wait_time: wait,
        run_time: run,
        status: status(rec.status, e),
        ..*rec
    }
}

fn open_log(trace: &TraceInput, lenient: bool) -> Result<SwfReader<FileSource>, TraceError> {
    let options = ReadOptions { lenient };
    match trace {
        TraceInput::Path(p) => SwfReader::open_with(p, options),
        TraceInput::Bytes { name, data } => {
            let r: FileSource = if data.starts_with(&[0x1f, 0x8b]) {
                Box::new(flate2::read::MultiGzDecoder::new(*data))
            } else {
                Box::new(*data as &[u8])
            };
            Ok(SwfReader::with_options(name.as_str(), r, options))
        }
    }
}

impl SwfSchedule {
    /// Tasks recorded so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Writes the schedule of the run `config` (whose platform was
    /// `platform`, and whose log's header is `log_header`) to `path`,
    /// gzip-compressed when the name ends in `.gz`. The file is written as
    /// `PATH.partial` and renamed into place at the end; on an error it is
    /// removed.
    pub fn write(
        self,
        path: &Path,
        config: &RunConfig,
        platform: &PlatformInfo,
        log_header: &SwfHeader,
        who: &SwfOutHeader,
    ) -> Result<SwfOutStats, SimError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = PathBuf::from(tmp);
        let written = self.write_to(path, &tmp, config, platform, log_header, who);
        let renamed = written.and_then(|stats| {
            std::fs::rename(&tmp, path).map_err(|source| {
                SimError::Trace(TraceError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            })?;
            Ok(stats)
        });
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        renamed
    }

    fn write_to(
        self,
        path: &Path,
        tmp: &Path,
        config: &RunConfig,
        platform: &PlatformInfo,
        log_header: &SwfHeader,
        who: &SwfOutHeader,
    ) -> Result<SwfOutStats, SimError> {
        let file = File::create(tmp).map_err(|source| TraceError::Io {
            path: tmp.to_path_buf(),
            source,
        })?;
        self.write_into(&file, path, config, platform, log_header, who)
    }

    /// Writes the schedule (as [`SwfSchedule::write`]) into `file`, opened
    /// by the caller, which renames it to `path` (whose name says whether
    /// to gzip, and which messages name).
    pub fn write_into(
        self,
        file: &File,
        path: &Path,
        config: &RunConfig,
        platform: &PlatformInfo,
        log_header: &SwfHeader,
        who: &SwfOutHeader,
    ) -> Result<SwfOutStats, SimError> {
        let buf = BufWriter::with_capacity(256 * 1024, file);
        let gz = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let mut w = if gz {
            SwfWriter::gzip(path, buf)
        } else {
            SwfWriter::plain(path, buf)
        };
        let records = self.ends.len() as u64;
        write_header(&mut w, config, platform, log_header, who, records)?;
        let log_jobs = self.write_records(&mut w, config, platform)?;
        w.finish()?;
        Ok(SwfOutStats { records, log_jobs })
    }

    /// Streams the log, writing each simulated record; returns how many
    /// records of the log were written.
    fn write_records<W: std::io::Write>(
        self,
        w: &mut SwfWriter<W>,
        config: &RunConfig,
        platform: &PlatformInfo,
    ) -> Result<u64, SimError> {
        let offset = config.window.map_or(0, |(start, _)| start);
        let widest = platform.machines.iter().copied().max().unwrap_or(0);
        // Tasks grouped by (job number, submit in the log), each group in
        // task order (the order the run's stream gave them).
        let mut ends = self.ends;
        let key = |e: &TaskEnd| (e.job, secs(e.submit) + offset);
        ends.sort_unstable_by_key(|e| (key(e), e.task));
        let mut groups: FxHashMap<(u64, i64), (usize, usize)> = FxHashMap::default();
        let mut i = 0;
        while i < ends.len() {
            let k = key(&ends[i]);
            let mut j = i + 1;
            while j < ends.len() && key(&ends[j]) == k {
                j += 1;
            }
            groups.insert(k, (i, j));
            i = j;
        }
        let total = ends.len();
        let (mut matched, mut log_jobs, mut number) = (0usize, 0u64, 0i64);
        let (mut counts, mut differ) = (FilterCounts::default(), 0u64);
        let mut reader = open_log(&config.trace, config.stream.lenient)?;
        while matched < total {
            let Some(rec) = reader.next_job()? else { break };
            let Some(job) = clean_with(
                &rec,
                config.procs_from,
                config.stream.filter,
                &mut counts,
                &mut differ,
            ) else {
                continue;
            };
            let parts = if config.split_parallel { job.procs } else { 1 };
            if !config.split_parallel && job.procs > widest {
                continue; // dropped by the run: wider than every machine
            }
            let Some((from, to)) = groups.get_mut(&(job.id, job.submit)) else {
                continue; // not simulated: outside the window, or filtered
            };
            if (*to - *from) < parts as usize {
                continue;
            }
            let tasks = &ends[*from..*from + parts as usize];
            *from += parts as usize;
            matched += tasks.len();
            log_jobs += 1;
            if !config.split_parallel {
                let mut out = simulated(&rec, &tasks[0]);
                out.allocated_procs = i64::from(job.procs);
                w.write_job(&out)?;
                continue;
            }
            w.write_comment(&format!(
                "job {} ({} processor{}): record{} {}",
                rec.job_number,
                parts,
                if parts == 1 { "" } else { "s" },
                if parts == 1 { "" } else { "s" },
                if parts == 1 {
                    (number + 1).to_string()
                } else {
                    format!("{}-{}", number + 1, number + i64::from(parts))
                }
            ))?;
            for t in tasks {
                number += 1;
                let mut out = simulated(&rec, t);
                out.job_number = number;
                out.allocated_procs = 1;
                if out.requested_procs > 0 {
                    out.requested_procs = 1;
                }
                w.write_job(&out)?;
            }
        }
        if matched < total {
            return Err(SimError::Internal(format!(
                "--swf-out: {} of {total} simulated tasks found no record in {}",
                total - matched,
                config.trace.name()
            )));
        }
        Ok(log_jobs)
    }
}

fn write_header<W: std::io::Write>(
    w: &mut SwfWriter<W>,
    config: &RunConfig,
    platform: &PlatformInfo,
    log: &SwfHeader,
    who: &SwfOutHeader,
    records: u64,
) -> Result<(), TraceError> {
    let mut under = config.order.to_string();
    if platform.machines.len() > 1 || config.allocate.is_some() {
        under.push_str(&format!(", allocate {}", config.allocate()));
    }
    if let Some(c) = &config.control {
        under.push_str(&format!(", control {c}"));
    }
    let mut c = |text: String| w.write_comment(&text);
    c("Version: 2.2".into())?;
    c(format!(
        "Computer: fairsched simulation of {} under {under}",
        config.trace.name()
    ))?;
    if let Some(v) = &log.installation {
        c(format!("Installation: {v}"))?;
    }
    for (k, v) in &log.other {
        if k.eq_ignore_ascii_case("Acknowledge") {
            c(format!("Acknowledge: {v}"))?;
        }
    }
    c(format!("MaxJobs: {records}"))?;
    c(format!("MaxRecords: {records}"))?;
    let offset = config.window.map_or(0, |(start, _)| start);
    if let Some(t) = log.unix_start_time {
        c(format!("UnixStartTime: {}", t.saturating_add(offset)))?;
    }
    if let Some(z) = log.time_zone {
        c(format!("TimeZone: {z}"))?;
    }
    if let Some(z) = &log.time_zone_string {
        c(format!("TimeZoneString: {z}"))?;
    }
    c(format!("MaxProcs: {}", platform.total))?;
    c(format!("Note: written by {}: {}", who.generator, who.command))?;
    if let Some(v) = &log.computer {
        c(format!("Note: the log's computer was {v}"))?;
    }
    if platform.machines.len() > 1 {
        let sizes: Vec<String> = platform.machines.iter().map(u32::to_string).collect();
        c(format!(
            "Note: {} machines of {} processors, each with its own queue",
            platform.machines.len(),
            sizes.join(", ")
        ))?;
    }
    c("Note: the simulated schedule. One record per simulated job, in the log's order, each as".into())?;
    c("      read from the log but for field 2 (submit), 3 (wait), 4 (run time), 5 (processors".into())?;
    c("      given) and 11 (status), which are the simulation's. A job the simulation completed".into())?;
    c("      ran its logged run time and keeps the log's status (0 failed, 5 cancelled...).".into())?;
    c("      Else 0 if it was killed at its requested time or failed; 5 if killed otherwise,".into())?;
    c("      cancelled, or never started (wait and run time are then -1). Jobs the run did".into())?;
    c("      not simulate are left out.".into())?;
    if let Some((start, len)) = config.window {
        c(format!(
            "Note: --window {start},{len}: submit times are re-based, the log's second {start} is 0 here"
        ))?;
    }
    if config.split_parallel {
        c("Note: --split-parallel: each record is one task of one processor (fields 5 and 8 are 1),".into())?;
        c("      numbered 1, 2, ... in file order; a comment line before the tasks of each job of".into())?;
        c("      the log gives its number and processors and the records that hold them".into())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::semantics::RuntimeLimit;

    fn read_records(f: File) -> (SwfHeader, Vec<SwfJob>) {
        let mut reader = SwfReader::from_reader("s.swf", f);
        let mut jobs = Vec::new();
        while let Some(j) = reader.next_job().unwrap() {
            jobs.push(j);
        }
        (reader.header().clone(), jobs)
    }

    /// The first two real HPC2N-2002-2.2 lines (jobs 11 and 12), and a third
    /// copy of job 12 under another number, one second later.
    const HPC2N: &[u8] = b"; MaxProcs: 40
; UnixStartTime: 1027839845
; Installation: HPC2N - High Performance Computing Center North, Sweden
; Acknowledge: Ake Sandgren
   11   342072     32  43306   32  43307    -1   32  43200    -1  1   4   1  -1 -1  1 -1 -1
   12   342343      5    553   40 552.21    -1   40  43200    -1  1   4   1  -1 -1  1 -1 -1
   13   342344      5     -1   40 552.21    -1   40  43200    -1  5   4   1  -1 -1  1 -1 -1
";

    fn schedule(c: &RunConfig) -> (SwfHeader, Vec<SwfJob>) {
        let scan = c.trace.scan(false).unwrap();
        let mut s = SwfSchedule::default();
        let done = c.execute(&scan, &mut s).unwrap();
        let dir = tempfile_dir();
        let path = dir.join(format!("s{}.swf", s.len()));
        let who = SwfOutHeader {
            generator: "fairsched test".into(),
            command: "fairsched simulate".into(),
        };
        s.write(&path, c, &done.summary.platform, &scan.header, &who)
            .unwrap();
        let f = File::open(&path).unwrap();
        let out = read_records(f);
        std::fs::remove_file(&path).unwrap();
        out
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("fairsched-swf-out-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn config(policy: &str) -> RunConfig {
        RunConfig::new(
            TraceInput::Bytes {
                name: "hpc2n.swf".into(),
                data: HPC2N,
            },
            policy.parse().unwrap(),
        )
    }

    #[test]
    fn waits_runs_and_statuses_are_the_simulation_s() {
        let mut c = config("fcfs");
        c.runtime_limit = RuntimeLimit::Kill;
        let (h, jobs) = schedule(&c);
        assert_eq!(h.max_procs, Some(40));
        assert_eq!(h.max_records, Some(2));
        assert_eq!(h.unix_start_time, Some(1027839845));
        assert_eq!(h.get("Acknowledge").as_deref(), Some("Ake Sandgren"));
        assert!(h.computer.unwrap().contains("simulation of hpc2n.swf under fcfs"));
        // Job 13 (run time unknown) was not simulated.
        assert_eq!(jobs.len(), 2);
        // Job 11 killed at 43,200 s; job 12 starts then, waits 43,200 − 271.
        assert_eq!(
            (
                jobs[0].job_number,
                jobs[0].wait_time,
                jobs[0].run_time,
                jobs[0].status
            ),
            (11, 0, 43200, 0)
        );
        assert_eq!(
            (
                jobs[1].job_number,
                jobs[1].wait_time,
                jobs[1].run_time,
                jobs[1].status
            ),
            (12, 342072 + 43200 - 342343, 553, 1)
        );
        // Everything else as read.
        assert_eq!(jobs[1].avg_cpu_time, 552.21);
        assert_eq!(
            (jobs[1].requested_time, jobs[1].user_id, jobs[1].partition),
            (43200, 4, 1)
        );
    }

    #[test]
    fn the_status_is_the_logs_unless_the_simulation_stopped_the_task() {
        let e = |outcome, start: Option<i64>, at_limit| TaskEnd {
            task: 1,
            job: 1,
            submit: Time::ZERO,
            start: start.map(Time::from_secs),
            end: Time::from_secs(10),
            outcome,
            at_limit,
        };
        // Completed: it ran its logged time, and ended as the log says.
        for logged in [1, 0, 5, 4, -1] {
            assert_eq!(status(logged, &e(Outcome::Completed, Some(0), false)), logged);
        }
        assert_eq!(status(1, &e(Outcome::Killed, Some(0), true)), 0);
        assert_eq!(status(1, &e(Outcome::Failed, Some(0), false)), 0);
        assert_eq!(status(1, &e(Outcome::Killed, Some(0), false)), 5);
        assert_eq!(status(1, &e(Outcome::Cancelled, Some(0), false)), 5);
        assert_eq!(status(1, &e(Outcome::Cancelled, None, false)), 5);
        assert_eq!(status(0, &e(Outcome::Rejected, None, false)), 5);
    }

    #[test]
    fn a_window_re_bases_submits_and_the_start_time() {
        let mut c = config("fcfs");
        c.window = Some((342300, 100));
        let (h, jobs) = schedule(&c);
        assert_eq!(h.unix_start_time, Some(1027839845 + 342300));
        assert_eq!(jobs.len(), 1);
        assert_eq!(
            (jobs[0].job_number, jobs[0].submit_time, jobs[0].wait_time),
            (12, 43, 0)
        );
    }

    #[test]
    fn split_jobs_are_one_record_per_task() {
        let mut c = config("fcfs");
        c.split_parallel = true;
        let (h, jobs) = schedule(&c);
        assert_eq!(jobs.len(), 72);
        assert_eq!(h.max_records, Some(72));
        let numbers: Vec<i64> = jobs.iter().map(|j| j.job_number).collect();
        assert_eq!(numbers, (1..=72).collect::<Vec<_>>());
        assert!(
            jobs.iter()
                .all(|j| j.allocated_procs == 1 && j.requested_procs == 1)
        );
        // 40 processors: job 11's 32 tasks start at once, 8 of job 12's too.
        assert!(jobs[..40].iter().all(|j| j.wait_time == 0));
        assert!(jobs[40..].iter().all(|j| j.wait_time > 0 && j.run_time == 553));
    }
}
