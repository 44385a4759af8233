//! Progress bars on a terminal, nothing when piped.

use fairsched_core::{Observer, Time};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A set of bars (one per concurrent run), hidden unless stderr is a terminal.
pub struct Bars {
    multi: MultiProgress,
    enabled: bool,
}

impl Bars {
    pub fn new(enabled: bool) -> Bars {
        let enabled = enabled && std::io::stderr().is_terminal();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
            enabled,
        }
    }

    /// A bar over simulated time `[from, from + span)` seconds: the same
    /// measure whether jobs are split into tasks or not.
    pub fn bar(&self, label: &str, from: i64, span: u64) -> Progress {
        if !self.enabled {
            return Progress { bar: None, from };
        }
        let pb = self.multi.add(ProgressBar::new(span.max(1)));
        pb.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{bar:30}] {percent:>3}% of trace time, {msg} ({elapsed})",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        pb.set_prefix(label.to_string());
        Progress { bar: Some(pb), from }
    }
}

/// An observer that moves a bar along simulated time.
pub struct Progress {
    bar: Option<ProgressBar>,
    from: i64,
}

impl Progress {
    pub fn finish(&self) {
        if let Some(pb) = &self.bar {
            pb.set_position(pb.length().unwrap_or(0));
            pb.finish();
        }
    }
}

impl Observer for Progress {
    fn on_progress(&mut self, now: Time, submitted: u64) {
        if let Some(pb) = &self.bar {
            pb.set_position(now.whole_secs().saturating_sub(self.from).max(0) as u64);
            pb.set_message(format!("{submitted} tasks submitted"));
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}
