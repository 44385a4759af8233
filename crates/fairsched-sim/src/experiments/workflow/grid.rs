//! The simulated grid of the workflow-fairness experiments: pilots (slots)
//! that join and leave, their speeds, task failures, and other users'
//! background load sharing the queue — all drawn from a seed, from the
//! built-in defaults or a TOML scenario file (`--grid FILE`):
//!
//! ```toml
//! [slots]
//! initial = 100          # pilots present at t = 0
//! max = 200              # never more at once
//! join_per_hour = 25     # Poisson arrivals of new pilots
//! lifetime = { dist = "lognormal", median = 14400, sigma = 0.5 }   # s, then the pilot leaves (killing its task)
//! speed = { dist = "lognormal", median = 1.0, sigma = 0.2, min = 0.5, max = 2.0 }
//! failure = 0.03         # probability that a run fails (at a uniform point of it)
//! retries = 5            # resubmissions of a workflow task
//!
//! [background]
//! per_hour = 100         # Poisson arrivals of other users' tasks (priority 1)
//! duration = { dist = "lognormal", median = 1800, sigma = 1.0, max = 86400 }
//! warmup = 0             # s of grid life (pilots, background) before the first workflow
//!
//! [engine]
//! replicate_after = 0    # replicate a running task once it has run this many times its activity's median (0: never)
//! copies = 5             # at most this many copies of a task at once (the first to complete wins)
//! resubmit_lifted = 60   # lift by cancel and resubmit, the new submission this many s later (absent: in place)
//! ```
//!
//! Every key is optional (defaults as above). Distributions: `constant`
//! (`value`), `uniform` (`low`, `high`), `lognormal` (`median`, `sigma`,
//! optional `min`, `max`), in seconds (a speed is a factor). A mistake is
//! reported as ``FILE:LINE: key `slots.lifetime.sigma`: …``.

use super::dirac::Matching;
use crate::errors::SimError;
use crate::platform_file::{Locator, Num};
use fairsched_trace::workflow::Dist;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

/// Largest number of slots a scenario may ask for.
const MAX_SLOTS: i64 = 1_000_000;
/// Largest rate, per hour.
const MAX_RATE: f64 = 1e6;
/// Largest duration parameter, in seconds.
const MAX_SECONDS: f64 = 1e9;

/// A grid: pilots, failures and background load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grid {
    pub initial_slots: u32,
    pub max_slots: u32,
    pub join_per_hour: f64,
    #[serde(skip)]
    pub lifetime: Dist,
    #[serde(skip)]
    pub speed: Dist,
    pub failure: f64,
    pub retries: u32,
    pub background_per_hour: f64,
    #[serde(skip)]
    pub background_duration: Dist,
    /// Seconds the grid runs (pilots come and go, background tasks
    /// arrive) before the first workflow is submitted.
    pub warmup_s: f64,
    /// The workflow engine's task replication (MOTEUR's, the paper's
    /// [12]): a running task that has run this many times the median
    /// duration of its activity's completed tasks (≥ 2 of them) gets a
    /// copy; 0: never.
    pub replicate_after: f64,
    /// Copies of one task alive at once, the first included.
    pub max_copies: u32,
    /// Lifting a task by cancelling it and submitting it again with the
    /// new priority, this many seconds later (DIRAC could not change a
    /// queued task's priority); `None`: priorities change in place.
    pub resubmit_lifted_s: Option<f64>,
    /// How pilots are matched to waiting tasks: one strict priority queue
    /// (the spec's), or DIRAC-like task queues ([`super::dirac`]). Set by
    /// `--matching`, not by the file.
    pub matching: Matching,
}

impl Default for Grid {
    /// An EGI-like production grid: about 110 pilots living a few hours
    /// each, speeds within ×0.5–2, 3 % of runs failing, and other users
    /// keeping about 80 of them busy with half-hour tasks.
    fn default() -> Grid {
        Grid {
            initial_slots: 100,
            max_slots: 200,
            join_per_hour: 25.0,
            lifetime: Dist::LogNormal {
                median: 14_400.0,
                sigma: 0.5,
                min: None,
                max: None,
            },
            speed: Dist::LogNormal {
                median: 1.0,
                sigma: 0.2,
                min: Some(0.5),
                max: Some(2.0),
            },
            failure: 0.03,
            retries: 5,
            background_per_hour: 100.0,
            background_duration: Dist::LogNormal {
                median: 1800.0,
                sigma: 1.0,
                min: None,
                max: Some(86_400.0),
            },
            warmup_s: 0.0,
            replicate_after: 0.0,
            max_copies: 5,
            resubmit_lifted_s: None,
            matching: Matching::Strict,
        }
    }
}

impl Grid {
    /// The paper's worst case: `slots` constant, reliable, identical
    /// slots, no other users.
    pub fn constant(slots: u32) -> Grid {
        Grid {
            initial_slots: slots,
            max_slots: slots,
            join_per_hour: 0.0,
            lifetime: Dist::Constant { value: f64::INFINITY },
            speed: Dist::Constant { value: 1.0 },
            failure: 0.0,
            retries: 5,
            background_per_hour: 0.0,
            background_duration: Dist::ZERO,
            warmup_s: 0.0,
            ..Grid::default()
        }
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Grid, SimError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SimError::Config(format!("{}: {e}", path.display())))?;
        Grid::parse(path, &text)
    }

    /// Parses `text`; messages name `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Grid, SimError> {
        let (loc, raw) = Locator::parse::<RawGrid>(path, text)?;
        let mut g = Grid::default();
        let count = |v: &Spanned<i64>, lo: i64| -> Result<u32, SimError> {
            let x = *v.get_ref();
            if !(lo..=MAX_SLOTS).contains(&x) {
                return Err(loc.error(v.span(), format!("expected {lo} to {MAX_SLOTS}, found {x}")));
            }
            Ok(x as u32)
        };
        let rate = |v: &Spanned<Num>| -> Result<f64, SimError> {
            let x = v.get_ref().f();
            if !(x.is_finite() && (0.0..=MAX_RATE).contains(&x)) {
                return Err(loc.error(
                    v.span(),
                    format!("expected a rate from 0 to {MAX_RATE} per hour, found {x}"),
                ));
            }
            Ok(x)
        };
        let dist = |v: &Spanned<RawDist>, positive: bool| -> Result<Dist, SimError> {
            v.get_ref().check(positive).map_err(|m| loc.error(v.span(), m))
        };
        if let Some(s) = &raw.slots {
            if let Some(v) = &s.initial {
                g.initial_slots = count(v, 0)?;
            }
            if let Some(v) = &s.max {
                g.max_slots = count(v, 1)?;
            }
            if g.initial_slots > g.max_slots {
                let span = s.max.as_ref().or(s.initial.as_ref()).map_or(0..0, |v| v.span());
                return Err(loc.error(
                    span,
                    format!("max ({}) is below initial ({})", g.max_slots, g.initial_slots),
                ));
            }
            if let Some(v) = &s.join_per_hour {
                g.join_per_hour = rate(v)?;
            }
            if let Some(v) = &s.lifetime {
                g.lifetime = dist(v, true)?;
            }
            if let Some(v) = &s.speed {
                g.speed = dist(v, true)?;
            }
            if let Some(v) = &s.failure {
                let x = v.get_ref().f();
                if !(0.0..1.0).contains(&x) {
                    return Err(loc.error(v.span(), format!("a probability below 1 is expected, found {x}")));
                }
                g.failure = x;
            }
            if let Some(v) = &s.retries {
                let x = *v.get_ref();
                if !(0..=100).contains(&x) {
                    return Err(loc.error(v.span(), format!("expected 0 to 100, found {x}")));
                }
                g.retries = x as u32;
            }
        }
        if let Some(b) = &raw.background {
            if let Some(v) = &b.per_hour {
                g.background_per_hour = rate(v)?;
            }
            if let Some(v) = &b.duration {
                g.background_duration = dist(v, true)?;
            }
            if let Some(v) = &b.warmup {
                let x = v.get_ref().f();
                if !(x.is_finite() && (0.0..=MAX_SECONDS).contains(&x)) {
                    return Err(loc.error(
                        v.span(),
                        format!("expected seconds from 0 to {MAX_SECONDS}, found {x}"),
                    ));
                }
                g.warmup_s = x;
            }
        }
        if let Some(e) = &raw.engine {
            if let Some(v) = &e.replicate_after {
                let x = v.get_ref().f();
                if !(x == 0.0 || (x.is_finite() && (1.0..=1000.0).contains(&x))) {
                    return Err(loc.error(
                        v.span(),
                        format!("expected 0 (never) or a factor from 1 to 1000, found {x}"),
                    ));
                }
                g.replicate_after = x;
            }
            if let Some(v) = &e.copies {
                let x = *v.get_ref();
                if !(2..=100).contains(&x) {
                    return Err(loc.error(
                        v.span(),
                        format!("expected 2 to 100 (the task's first copy counts), found {x}"),
                    ));
                }
                g.max_copies = x as u32;
            }
            if let Some(v) = &e.resubmit_lifted {
                let x = v.get_ref().f();
                if !(x.is_finite() && (0.0..=MAX_SECONDS).contains(&x)) {
                    return Err(loc.error(
                        v.span(),
                        format!("expected seconds from 0 to {MAX_SECONDS}, found {x}"),
                    ));
                }
                g.resubmit_lifted_s = Some(x);
            }
        }
        if g.initial_slots == 0 && g.join_per_hour == 0.0 {
            return Err(loc.error_at(
                1,
                Some("slots"),
                "no slot will ever exist: set slots.initial or slots.join_per_hour",
            ));
        }
        Ok(g)
    }

    /// What the scenario says, for summaries.
    pub fn describe(&self) -> String {
        format!(
            "{} pilots at start (≤ {}), {} joining per hour, lifetime {}, speed {}, {:.0} % of runs failing, ≤ {} resubmissions; background {} tasks per hour of {}",
            self.initial_slots,
            self.max_slots,
            self.join_per_hour,
            show(&self.lifetime, "s"),
            show(&self.speed, "×"),
            self.failure * 100.0,
            self.retries,
            self.background_per_hour,
            show(&self.background_duration, "s"),
        ) + &if self.warmup_s > 0.0 {
            format!("; {} s of warm-up before the first workflow", self.warmup_s)
        } else {
            String::new()
        } + &if self.replicate_after > 0.0 {
            format!(
                "; a task running {}× its activity's median gets a copy (≤ {} at once)",
                self.replicate_after, self.max_copies
            )
        } else {
            String::new()
        } + &self.resubmit_lifted_s.map_or_else(String::new, |d| {
            format!("; a lift cancels the task and submits it again {d} s later")
        }) + match self.matching {
            Matching::Strict => "",
            Matching::Dirac => {
                "; pilots matched DIRAC-like: a task queue drawn at random, weighted by its owner's share × its mean priority ÷ the owner's sum (the workflows one owner, a queue per application; other users another)"
            }
            Matching::DiracOneQueue => {
                "; pilots matched DIRAC-like: a task queue drawn at random, weighted by its owner's share × its mean priority ÷ the owner's sum (the workflows one owner, all in one queue; other users another)"
            }
        }
    }
}

fn show(d: &Dist, unit: &str) -> String {
    match *d {
        Dist::Constant { value } if value.is_infinite() => "unbounded".into(),
        Dist::Constant { value } => format!("{value}{unit}"),
        Dist::Uniform { low, high } => format!("uniform {low}–{high}{unit}"),
        Dist::LogNormal { median, sigma, .. } => format!("log-normal (median {median}{unit}, σ {sigma})"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    slots: Option<RawSlots>,
    background: Option<RawBackground>,
    engine: Option<RawEngine>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    replicate_after: Option<Spanned<Num>>,
    copies: Option<Spanned<i64>>,
    resubmit_lifted: Option<Spanned<Num>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlots {
    initial: Option<Spanned<i64>>,
    max: Option<Spanned<i64>>,
    join_per_hour: Option<Spanned<Num>>,
    lifetime: Option<Spanned<RawDist>>,
    speed: Option<Spanned<RawDist>>,
    failure: Option<Spanned<Num>>,
    retries: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackground {
    per_hour: Option<Spanned<Num>>,
    duration: Option<Spanned<RawDist>>,
    warmup: Option<Spanned<Num>>,
}

#[derive(Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
enum RawDist {
    Constant {
        value: Num,
    },
    Uniform {
        low: Num,
        high: Num,
    },
    Lognormal {
        median: Num,
        sigma: Num,
        min: Option<Num>,
        max: Option<Num>,
    },
}

impl RawDist {
    /// Checks the parameters (all finite, ≥ 0, at most 10⁹; `positive`:
    /// the values drawn must be > 0).
    fn check(&self, positive: bool) -> Result<Dist, String> {
        let ok = |x: f64, what: &str| -> Result<f64, String> {
            if x.is_finite() && (0.0..=MAX_SECONDS).contains(&x) {
                Ok(x)
            } else {
                Err(format!("{what} must be from 0 to {MAX_SECONDS}, found {x}"))
            }
        };
        let d = match self {
            RawDist::Constant { value } => Dist::Constant {
                value: ok(value.f(), "value")?,
            },
            RawDist::Uniform { low, high } => {
                let (low, high) = (ok(low.f(), "low")?, ok(high.f(), "high")?);
                if high < low {
                    return Err(format!("high ({high}) is below low ({low})"));
                }
                Dist::Uniform { low, high }
            }
            RawDist::Lognormal {
                median,
                sigma,
                min,
                max,
            } => {
                let median = ok(median.f(), "median")?;
                if median <= 0.0 {
                    return Err("median must be more than 0".into());
                }
                let min = min.as_ref().map(|m| ok(m.f(), "min")).transpose()?;
                let max = max.as_ref().map(|m| ok(m.f(), "max")).transpose()?;
                if let (Some(a), Some(b)) = (min, max)
                    && b < a
                {
                    return Err(format!("max ({b}) is below min ({a})"));
                }
                Dist::LogNormal {
                    median,
                    sigma: ok(sigma.f(), "sigma")?,
                    min,
                    max,
                }
            }
        };
        if positive && d.range().1 <= 0.0 {
            return Err("every draw would be 0: a positive value is needed".into());
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_overrides_the_defaults() {
        let g = Grid::parse(
            Path::new("g.toml"),
            "[slots]\ninitial = 10\nmax = 20\nfailure = 0.1\nspeed = { dist = \"uniform\", low = 0.5, high = 1.5 }\n\
             [background]\nper_hour = 0\n",
        )
        .unwrap();
        assert_eq!((g.initial_slots, g.max_slots, g.failure), (10, 20, 0.1));
        assert_eq!(g.speed, Dist::Uniform { low: 0.5, high: 1.5 });
        assert_eq!(g.background_per_hour, 0.0);
        assert_eq!(g.lifetime, Grid::default().lifetime);
        assert_eq!(Grid::parse(Path::new("g.toml"), "").unwrap(), Grid::default());
        let e = Grid::parse(
            Path::new("g.toml"),
            "[engine]\nreplicate_after = 2\ncopies = 3\nresubmit_lifted = 60\n",
        )
        .unwrap();
        assert_eq!(
            (e.replicate_after, e.max_copies, e.resubmit_lifted_s),
            (2.0, 3, Some(60.0))
        );
    }

    #[test]
    fn mistakes_name_the_line_and_key() {
        let cases = [
            ("[slots]\ninitial = -1\n", "g.toml:2: key `slots.initial`"),
            ("[slots]\ninitial = 30\nmax = 20\n", "below initial"),
            ("[slots]\nfailure = 1.5\n", "g.toml:2: key `slots.failure`"),
            (
                "[slots]\nlifetime = { dist = \"lognormal\", median = 0, sigma = 1 }\n",
                "median must be more than 0",
            ),
            ("[slots]\nspeed = { dist = \"gamma\", k = 1 }\n", "g.toml:2"),
            (
                "[background]\nduration = { dist = \"uniform\", low = 5, high = 1 }\n",
                "below low",
            ),
            ("[background]\nper_hour = \"many\"\n", "g.toml:2"),
            (
                "[slots]\ninitial = 0\njoin_per_hour = 0\n",
                "no slot will ever exist",
            ),
            ("[nodes]\n", "nodes"),
            (
                "[engine]\nreplicate_after = 0.5\n",
                "g.toml:2: key `engine.replicate_after`",
            ),
            ("[engine]\ncopies = 1\n", "g.toml:2: key `engine.copies`"),
            (
                "[engine]\nresubmit_lifted = -1\n",
                "g.toml:2: key `engine.resubmit_lifted`",
            ),
        ];
        for (text, want) in cases {
            let e = Grid::parse(Path::new("g.toml"), text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
