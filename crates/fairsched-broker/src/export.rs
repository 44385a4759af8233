//! A broker's history as a workload log (`fairsched export`, and
//! `fairsched simulate --broker-log`): each task that ran, with its
//! measured wait and run times, user and organization, as an SWF log, and
//! the organizations (their most slots at once, their users) as a
//! platform file — so that last month can be replayed under another
//! policy.

use crate::service::{History, history};
use fairsched_trace::{SwfHeader, SwfJob, SwfWriter};
use std::path::Path;

/// What an export wrote.
pub struct Exported {
    pub jobs: u64,
    /// Tasks that ended without ever starting (left out).
    pub skipped: u64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The database could not be read.
    #[error("{0}")]
    History(String),
    /// The log could not be written.
    #[error(transparent)]
    Write(#[from] fairsched_trace::TraceError),
}

impl ExportError {
    /// Whether writing stopped at a closed pipe (`export --swf - | head`).
    pub fn broken_pipe(&self) -> bool {
        let io = match self {
            ExportError::Write(fairsched_trace::TraceError::Io { source, .. }) => Some(source),
            _ => None,
        };
        io.is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Writes the broker's history at `db` as an SWF log; returns what it
/// wrote and the history (for [`platform_toml`]). SWF counts whole
/// seconds: a run shorter than a second is written as 1 s. `swf` = `-`:
/// standard output.
pub fn export(db: &Path, swf: &Path) -> Result<(Exported, History), ExportError> {
    let h = history(db).map_err(ExportError::History)?;
    let e = if swf == Path::new("-") {
        let out = std::io::BufWriter::new(std::io::stdout().lock());
        write_history(SwfWriter::plain("standard output", out), db, &h)?
    } else {
        write_history(SwfWriter::create(swf)?, db, &h)?
    };
    Ok((e, h))
}

/// The organizations of a broker's history as a platform file for
/// `fairsched simulate --platform`: the most slots its workers held at
/// once, and its users (SWF field 12).
pub fn platform_toml(h: &History) -> String {
    let mut s = String::from(
        "# Organizations of a fairsched broker (`fairsched export`): the most slots its\n# workers held at once, and its users (SWF field 12).\nunlisted = \"error\"\n",
    );
    for (id, name, slots) in &h.orgs {
        let users: Vec<String> = h
            .users
            .iter()
            .filter(|u| u.2 == *id)
            .map(|u| u.0.to_string())
            .collect();
        s.push_str(&format!(
            "\n[[org]]\nname = {name:?}\nprocs = {slots}\nusers = [{}]\n",
            users.join(", ")
        ));
    }
    s
}

fn write_history<W: std::io::Write>(
    mut w: SwfWriter<W>,
    db: &Path,
    h: &History,
) -> Result<Exported, ExportError> {
    let total: u32 = h.orgs.iter().map(|o| o.2).sum();
    let mut header = SwfHeader::default();
    header.set("Version", "2.2");
    header.set("Computer", "a fairsched broker");
    header.set("Installation", &format!("exported from {}", db.display()));
    header.set("UnixStartTime", &(h.epoch_ms / 1000).to_string());
    header.set("MaxProcs", &total.max(1).to_string());
    header.set(
        "Note",
        "field 12 is the broker's user id, field 13 its organization id; times are rounded to seconds (a run under 1 s is 1 s)",
    );
    w.write_header(&header)?;
    let (mut jobs, mut skipped) = (0, 0);
    for t in &h.tasks {
        let Some(start) = t.start_ms else {
            skipped += 1;
            continue;
        };
        let secs = |ms: i64| ms.div_euclid(1000);
        let job = SwfJob {
            job_number: t.id as i64,
            submit_time: secs(t.submit_ms),
            wait_time: (start - t.submit_ms).max(0) / 1000,
            run_time: ((t.end_ms - start).max(0) + 999).div_euclid(1000).max(1),
            allocated_procs: 1,
            requested_procs: 1,
            status: match t.state.as_str() {
                "completed" => 1,
                "cancelled" => 5,
                _ => 0,
            },
            user_id: t.user,
            group_id: t.org as i64,
            ..SwfJob::default()
        };
        w.write_job(&job)?;
        jobs += 1;
    }
    w.finish()?;
    Ok(Exported { jobs, skipped })
}
