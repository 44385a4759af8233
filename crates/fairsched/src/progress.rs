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
    pub fn bar(&self, label: &str, total: u64) -> Progress {
        if !self.enabled {
            return Progress(None);
        }
        let pb = self.multi.add(ProgressBar::new(total));
        pb.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{bar:30}] {pos}/{len} tasks, sim t={msg} ({elapsed})",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        pb.set_prefix(label.to_string());
        Progress(Some(pb))
    }
}

/// An observer that moves a bar.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    pub fn finish(&self) {
        if let Some(pb) = &self.0 {
            pb.finish();
        }
    }
}

impl Observer for Progress {
    fn on_progress(&mut self, now: Time, submitted: u64) {
        if let Some(pb) = &self.0 {
            pb.set_position(submitted);
            pb.set_message(format!("{}s", now.whole_secs()));
        }
    }
}
