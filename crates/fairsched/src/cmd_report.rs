//! `fairsched report DIR…`: one self-contained HTML page of the runs'
//! tables and plots.

use crate::term::{note, sayln, usage};
use fairsched_report::html::Page;
use fairsched_report::report::{ColorBy, Options, section};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Output folders of `simulate`, `experiment …`, `trace stats --out` or `trace tau --out`
    /// runs, one section each, in this order. One that is not a folder is refused (exit 2)
    /// before anything is written; if none is a run's output, no page is written (exit 1).
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// The HTML file to write (replaced if it exists).
    #[arg(long, value_name = "FILE", default_value = "report.html")]
    out: PathBuf,
    /// The Gantt charts' window: START,LEN in seconds of the run's clock (the log's, or from the
    /// window's start for `simulate --window`; durations such as `2h` are accepted; write
    /// `--gantt-window=-5,10` for a value starting with `-`). Default: around the first instant of each run's longest queue,
    /// as wide as shows at most 200 runs.
    #[arg(long, value_name = "START,LEN")]
    gantt_window: Option<String>,
    /// What colours the Gantt charts' tasks.
    #[arg(long, value_enum, default_value = "user")]
    color_by: Color,
    /// Rows shown of each table (the CSV files have all of them).
    #[arg(long, value_name = "N", default_value_t = 60)]
    max_rows: usize,
    /// The page's title.
    #[arg(long, value_name = "TEXT", default_value = "fairsched results")]
    title: String,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Color {
    User,
    Org,
}

/// Seconds: a number or a duration (`90`, `10m`, `2h`, `250ms`), as
/// policy parameters are written.
fn seconds(s: &str) -> Result<f64, String> {
    fairsched_core::registry::parse_duration(s.trim())
        .map(|t| t.as_secs_f64())
        .ok_or_else(|| {
            format!(
                "`{}` is neither a number of seconds ≥ 0 nor a duration (90, 10m, 2h, 250ms)",
                s.trim()
            )
        })
}

fn parse_window(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: expected START,LEN"))?;
    let (start, len) = (seconds(a)?, seconds(b)?);
    if len <= 0.0 {
        return Err(format!("`{s}`: the length must be > 0"));
    }
    Ok((start, len))
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let gantt_window = match &a.gantt_window {
        None => None,
        Some(w) => Some(parse_window(w).map_err(|e| usage(format!("--gantt-window {e}")))?),
    };
    if a.out.is_dir() {
        return Err(usage(format!(
            "--out {}: a folder; give the HTML file to write",
            a.out.display()
        )));
    }
    let parent = a.out.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = parent.filter(|p| !p.is_dir()) {
        return Err(usage(format!(
            "--out {}: no folder {}",
            a.out.display(),
            p.display()
        )));
    }
    if a.title.trim().is_empty() {
        return Err(usage("--title must not be empty"));
    }
    if a.max_rows == 0 {
        return Err(usage("--max-rows must be at least 1"));
    }
    // Every input is checked before anything is written: a DIR that is no
    // folder is a mistake in the arguments.
    for d in &a.dirs {
        if !d.is_dir() {
            return Err(usage(format!(
                "{}: {}; give output folders of fairsched runs",
                d.display(),
                if d.exists() {
                    "not a folder"
                } else {
                    "no such folder"
                }
            )));
        }
    }
    let opts = Options {
        gantt_window,
        color_by: match a.color_by {
            Color::User => ColorBy::User,
            Color::Org => ColorBy::Org,
        },
        max_rows: a.max_rows,
    };
    let mut page = Page {
        title: a.title.clone(),
        subtitle: format!(
            "Made by fairsched {} (commit {}) with `{}`",
            env!("CARGO_PKG_VERSION"),
            env!("FAIRSCHED_GIT_COMMIT"),
            fairsched_report::files::command_line()
        ),
        sections: Vec::new(),
    };
    let mut incomplete = 0;
    for d in &a.dirs {
        let s = section(d, &opts);
        if !s.problems.is_empty() {
            incomplete += 1;
            for p in &s.problems {
                note(format_args!("warning: {p}"));
            }
        }
        page.sections.push(s);
    }
    let unreadable = page.sections.iter().filter(|s| s.blocks.is_empty()).count();
    if unreadable == page.sections.len() {
        anyhow::bail!(
            "none of the folders could be read as a fairsched run's output (the warnings above say why); \
             {} not written",
            a.out.display()
        );
    }
    let html = page.render();
    fairsched_report::write_atomic(&a.out, html.as_bytes())?;
    sayln!(
        "wrote {} ({} KiB): {} section{}{}",
        a.out.display(),
        html.len().div_ceil(1024),
        page.sections.len(),
        if page.sections.len() == 1 { "" } else { "s" },
        if incomplete > 0 {
            format!(", {incomplete} of them incomplete (the warnings on stderr say what is missing)")
        } else {
            String::new()
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_take_seconds_and_durations() {
        assert_eq!(parse_window("3600,2h"), Ok((3600.0, 7200.0)));
        assert_eq!(parse_window("1.5m,30"), Ok((90.0, 30.0)));
        assert!(parse_window("10").unwrap_err().contains("START,LEN"));
        assert!(parse_window("10,0").unwrap_err().contains("> 0"));
        assert!(parse_window("-5,10").is_err());
        assert!(parse_window("5,10y").unwrap_err().contains("`10y` is neither"));
    }
}
