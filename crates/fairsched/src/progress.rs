//! Progress bars on a terminal, nothing when piped.
//!
//! One bar per concurrent run over simulated time, and with several runs an
//! overall "k of N runs done" line. Every line fits 80 columns.

use fairsched_core::{Observer, Time};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A run's bar: label, bar, percent, message, elapsed time: at most
/// 12 + 2 + 20 + 2 + 4 + 1 + 33 + 1 + 5 = 80 columns (`!` cuts a longer
/// label; the longest message is "9999999 submitted; queue draining").
const RUN_TEMPLATE: &str = "{prefix:>12!} [{bar:20}] {percent:>3}% {msg} {elapsed}";
/// The overall line when several runs share the machine.
const OVERALL_TEMPLATE: &str = "{prefix:>12!} {pos} of {len} runs done ({elapsed})";

/// A set of bars (one per concurrent run), hidden unless stderr is a terminal.
pub struct Bars {
    multi: MultiProgress,
    enabled: bool,
    /// "k of N runs done", with more than one run.
    overall: Option<ProgressBar>,
}

impl Bars {
    /// Bars for `runs` runs on stderr, when it is a terminal.
    pub fn new(enabled: bool, runs: usize) -> Bars {
        let enabled = enabled && std::io::stderr().is_terminal();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars::with_target(target, enabled, runs)
    }

    fn with_target(target: ProgressDrawTarget, enabled: bool, runs: usize) -> Bars {
        let multi = MultiProgress::with_draw_target(target);
        let overall = (enabled && runs > 1).then(|| {
            let pb = multi.add(ProgressBar::new(runs as u64));
            pb.set_style(ProgressStyle::with_template(OVERALL_TEMPLATE).expect("valid template"));
            pb.set_prefix("all");
            pb.tick();
            pb
        });
        Bars {
            multi,
            enabled,
            overall,
        }
    }

    /// Whether the bars are drawn (stderr is a terminal, not disabled).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A bar over simulated time `[from, from + span)` seconds: the same
    /// measure whether jobs are split into tasks or not.
    pub fn bar(&self, label: &str, from: i64, span: u64) -> Progress {
        if !self.enabled {
            return Progress {
                bar: None,
                overall: None,
                from,
                span,
            };
        }
        let pb = self.multi.add(ProgressBar::new(span.max(1)));
        pb.set_style(
            ProgressStyle::with_template(RUN_TEMPLATE)
                .expect("valid template")
                .progress_chars("=> "),
        );
        pb.set_prefix(label.to_string());
        Progress {
            bar: Some(pb),
            overall: self.overall.clone(),
            from,
            span,
        }
    }
}

/// An observer that moves a bar along simulated time.
pub struct Progress {
    bar: Option<ProgressBar>,
    overall: Option<ProgressBar>,
    from: i64,
    span: u64,
}

impl Progress {
    pub fn finish(&self) {
        if let Some(pb) = &self.bar {
            pb.set_position(pb.length().unwrap_or(0));
            pb.set_message("done");
            pb.finish();
        }
        if let Some(o) = &self.overall {
            o.inc(1);
            if o.position() >= o.length().unwrap_or(0) {
                o.finish();
            }
        }
    }
}

impl Observer for Progress {
    fn on_progress(&mut self, now: Time, submitted: u64) {
        if let Some(pb) = &self.bar {
            let at = now.whole_secs().saturating_sub(self.from).max(0) as u64;
            pb.set_position(at.min(self.span));
            // Past the last submission the bar is full while the jobs
            // already queued still run: say so rather than sit at 100 %.
            pb.set_message(if at >= self.span {
                format!("{submitted} submitted; queue draining")
            } else {
                format!("{submitted} submitted")
            });
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::InMemoryTerm;

    #[test]
    fn runs_count_and_draining_fit_80_columns() {
        let term = InMemoryTerm::new(10, 200);
        let bars = Bars::with_target(ProgressDrawTarget::term_like(Box::new(term.clone())), true, 3);
        let mut a = bars.bar("a-long-policy-name[x=1]", 1000, 500);
        let mut b = bars.bar("fcfs", 1000, 500);
        a.on_progress(Time::from_secs(1250), 123_456);
        b.on_progress(Time::from_secs(1_000_000), 9_999_999);
        a.finish();
        // Drawing is rate-limited: force a final draw of every line.
        for pb in [&bars.overall, &a.bar, &b.bar].into_iter().flatten() {
            pb.force_draw();
        }
        let text = term.contents();
        assert!(text.contains("1 of 3 runs done"), "{text}");
        assert!(text.contains("9999999 submitted; queue draining"), "{text}");
        assert!(text.contains("100%"), "{text}");
        for l in text.lines() {
            assert!(
                l.trim_end().chars().count() <= 80,
                "{} columns: {l:?}",
                l.trim_end().chars().count()
            );
        }
    }
}
