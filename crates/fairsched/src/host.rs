//! The command line as the libraries' [`Host`]: notes on standard error,
//! text on standard output (which a closed pipe never stops), progress
//! bars on a terminal, partial files removed on Ctrl-C, and this build in
//! every `summary.json`.

use crate::progress::{Bars, Progress};
use crate::term;
use fairsched_report::PartialCleaner;
use fairsched_sim::compare::{CompareHost, RunBar, RunBars};
use fairsched_sim::experiment::{Host, Ticker};
use fairsched_sim::run::Tool;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// The command line's host; `progress`: bars unless `--no-progress`.
pub struct Cli {
    progress: bool,
}

impl Cli {
    pub fn new(progress: bool) -> Cli {
        Cli { progress }
    }
}

/// A bar of `len` `unit`s on standard error, when it is a terminal and
/// `enabled`; hidden otherwise.
pub fn bar(len: u64, enabled: bool, unit: &str) -> ProgressBar {
    let target = if enabled && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(Some(len), target);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{elapsed}}, ETA {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb
}

struct Ticks(ProgressBar);

impl Ticker for Ticks {
    fn tick(&self) {
        self.0.inc(1);
    }
    fn done(&self) {
        self.0.finish_and_clear();
    }
}

impl Host for Cli {
    fn tool(&self) -> Tool {
        term::tool()
    }
    fn note(&self, line: &str) {
        term::note(format_args!("{line}"));
    }
    fn opened(&self, cleaner: PartialCleaner) {
        term::clean_up_on_interrupt(cleaner);
    }
    fn progress(&self, len: u64, prefix: &str, unit: &str) -> Box<dyn Ticker + '_> {
        let pb = bar(len, self.progress, unit);
        pb.set_prefix(prefix.to_string());
        Box::new(Ticks(pb))
    }
}

impl CompareHost for Cli {
    fn say(&self, text: &str) {
        let _ = term::out(format_args!("{text}"));
    }
    fn bars(&self, runs: usize) -> Box<dyn RunBars + '_> {
        Box::new(Bars::new(self.progress, runs))
    }
}

impl RunBars for Bars {
    fn shown(&self) -> bool {
        self.enabled()
    }
    fn bar(&self, label: &str, from: i64, span: u64) -> Box<dyn RunBar> {
        Box::new(Bars::bar(self, label, from, span))
    }
}

impl RunBar for Progress {
    fn finish(&self) {
        Progress::finish(self);
    }
}
