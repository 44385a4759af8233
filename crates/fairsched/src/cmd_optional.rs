//! `fairsched optional`: the Diet-ethic client-side dispatcher
//! (`fairsched_client::dispatcher`) from the command line — its flags,
//! signals, status line and summary.

use crate::term::{sayln, usage};
use anyhow::bail;
use fairsched_client::dispatcher::{Dispatcher, Ending, Options, Show};
use fairsched_client::{Client, Role};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The long help of `fairsched optional`.
pub const LONG_ABOUT: &str = "\
Run a Diet-ethic client (docs/diet-ethic.md) against a broker whose policy is `diet-ethic`: \
A mandatory requests (the results you need), optional ones up to B requests in all, until \
every mandatory request has completed and the deadline has passed.

The paper's client sends its mandatory requests round-robin over up to B single-slot servers \
and keeps one optional request on each. The live broker has ONE pooled machine whose slots are \
its workers' slots, and one diet-ethic queue for it (mandatory first, started first, mandatory \
requests first come first served, the user with the least time allocated first, then a seeded \
draw; a waiting mandatory request kills a running optional one). So this client:

  setup       submits the A mandatory requests at once, then as many optional requests as the \
pool has slots (`slots` of GET /v1/status), never more than B requests in all;

  monitoring  looks at each request in flight every --poll. When an optional request ends, a new \
one is submitted, while fewer than B requests have been. The pool's slots are read again at each \
poll: a pool that grows gets more optional requests; one that shrinks gets no new ones until \
enough have ended. A mandatory request that fails (or ends killed) is reported and submitted \
again as a new mandatory request, at most --resubmits times in all. A resubmission replaces a \
request that gave no result, so it does not count against B: never more than B requests can \
complete;

  end         once all A mandatory requests have completed and the deadline (counted from the \
command's start) has passed, cancels every request that has not ended. It ends before the \
deadline when nothing is left to do: every request it submitted has ended and B have been \
submitted (the mandatory requests then either all completed, or some failed with their \
--resubmits used up and never can). Ctrl-C or SIGTERM cancels the requests in flight too (a \
second one exits at once, leaving them).

`{i}` in the command and in --name becomes the request's index (0, 1, ... in submission order; a \
resubmitted request gets a new index), `{kind}` becomes `mandatory` or `optional`.

The summary (standard output, or JSON with --json): the mandatory requests completed and when the \
last one did, against the deadline (happy: all of them by the deadline); the optional requests \
completed; the requests cancelled at the end; whether it ended before the deadline (nothing \
left to run); the runs killed (by a mandatory request, or with \
their worker: the request runs again); and the server time used by every run, killed and \
cancelled ones included. The broker does not report runs that were killed, so their time is \
counted up to the poll that saw them stopped, and a run started and killed between two polls \
is not counted.

Exit status: 0 when all mandatory requests completed (on time or late); 1 when some never \
completed, the run was interrupted, requests could not be cancelled, or the broker could not be \
reached; 2 for a wrong command line.";

#[derive(clap::Args)]
pub struct OptionalArgs {
    #[command(flatten)]
    conn: crate::cmd_live::Conn,
    /// Mandatory requests: the results you need (n_min, 1 to 100000).
    #[arg(long, value_name = "A")]
    min: u64,
    /// Requests submitted in all, at most (n_max, at least A).
    #[arg(long, value_name = "B")]
    max: u64,
    /// The tentative deadline, counted from now (e.g. 90s, 20m, 8h).
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    deadline: Duration,
    /// A name for the requests (`{i}` and `{kind}` are replaced as in the command).
    #[arg(long)]
    name: Option<String>,
    /// How often to look at the requests in flight.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration, allow_hyphen_values = true)]
    poll: Duration,
    /// Failed mandatory requests submitted again, at most, in all.
    #[arg(long, value_name = "N", default_value_t = 3)]
    resubmits: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// The command, run with `sh -c` on a worker (`{i}`: the request's index; `{kind}`:
    /// mandatory or optional).
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

fn duration(s: &str) -> Result<Duration, String> {
    fairsched_worker::parse_duration(s).map_err(|e| e.to_string())
}

/// The status line on a terminal (a spinner), remarks above it.
struct Line(ProgressBar);

impl Show for Line {
    fn note(&self, line: &str) {
        self.0.suspend(|| eprintln!("{line}"));
    }
    fn status(&self, line: &str) {
        self.0.set_message(line.to_string());
    }
    fn shows_status(&self) -> bool {
        !self.0.is_hidden()
    }
}

pub fn optional_cmd(a: OptionalArgs) -> anyhow::Result<()> {
    let opts = Options {
        min: a.min,
        max: a.max,
        deadline: a.deadline,
        name: a.name.clone(),
        poll: a.poll,
        resubmits: a.resubmits,
        command: a.command.join(" "),
    };
    opts.check().map_err(usage)?;
    let client = Client::new(&a.conn.conn(), Role::User)?;
    // The first signal asks for the cleanup; a second one exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let pb = if std::io::stderr().is_terminal() {
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        pb.set_style(ProgressStyle::with_template("{spinner} {wide_msg}").expect("valid template"));
        pb.enable_steady_tick(Duration::from_millis(100));
        pb
    } else {
        ProgressBar::hidden()
    };
    let line = Line(pb);
    let mut d = Dispatcher::new(opts, client, &line);
    let outcome = d.run(&stop);
    let left = d.cleanup();
    line.0.finish_and_clear();
    if !d.submitted_any() {
        // Nothing submitted: nothing to summarise.
        return Ok(outcome.map(drop)?);
    }
    let interrupted = matches!(outcome, Ok(Ending::Interrupted));
    let early = matches!(outcome, Ok(Ending::NothingLeft));
    let s = d.summary(interrupted, early);
    if a.json {
        sayln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        crate::term::out(format_args!("{}", s.text()))?;
    }
    outcome?;
    if !left.is_empty() {
        bail!(
            "{} request(s) could not be cancelled and may still run: tasks {}",
            left.len(),
            left.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
        );
    }
    if interrupted {
        bail!("interrupted: the requests in flight were cancelled");
    }
    if s.mandatory.completed < a.min {
        bail!(
            "{} of the {} mandatory requests never completed",
            a.min - s.mandatory.completed,
            a.min
        );
    }
    Ok(())
}
