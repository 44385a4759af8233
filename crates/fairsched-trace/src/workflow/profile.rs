//! Workflow profiles: a small TOML format describing a workflow's activities, their task
//! counts and dependencies, and per-phase duration distributions, from which
//! [`Profile::instantiate`] draws concrete [`Workflow`]s.
//!
//! # Format
//!
//! ```toml
//! name = "PET-Sorteo"                  # optional: defaults to the file stem
//! description = "free text"            # optional
//!
//! [[activity]]
//! name = "emission"                    # unique within the profile
//! tasks = 80                           # 1 ..= 1,000,000
//! after = ["prepare"]                  # upstream activities (optional)
//! setup  = { dist = "constant", value = 10 }                                   # optional, default 0
//! input  = { dist = "lognormal", median = 30, sigma = 0.5, min = 1, max = 300 } # optional, default 0
//! exec   = { dist = "uniform", low = 300, high = 900 }                         # required
//! output = { dist = "lognormal", median = 60, sigma = 0.5 }                    # optional, default 0
//! ```
//!
//! Every duration is in **seconds** (integers or decimals). Distributions:
//!
//! - `constant`: `value`.
//! - `uniform`: `low`, `high` (`low ≤ high`), drawn uniformly in `[low, high)`.
//! - `lognormal`: `median > 0`, `sigma ≥ 0` (the standard deviation of the logarithm), and
//!   optional `min` / `max` (`min ≤ max`): a draw outside `[min, max]` is clamped to the
//!   bound (not redrawn).
//!
//! Every parameter must be finite, ≥ 0 and at most 10⁹ s.
//!
//! Dependencies are activity-level: every task of an activity becomes ready once **all**
//! tasks of each activity listed in `after` are done. An instance encodes this as parents:
//! each task of the activity has every task of every upstream activity as a parent.
//!
//! # Errors
//!
//! Unknown keys, unknown distributions, parameters that do not belong to the distribution,
//! missing or out-of-range parameters, zero tasks, duplicate activity names, unknown
//! upstream names and dependency cycles are all refused with the file, the line and the
//! field: `gate.toml:12: activity[1].exec.sigma: must be ≥ 0, not -1`.
//!
//! # Instances
//!
//! Activities are kept in a topological order of the `after` graph (stable: file order
//! among activities whose upstreams are placed), so [`ActivityProfile::after`] only names
//! earlier activities. Tasks are named `<activity>_<k>` (`k` from 0) and emitted activity by
//! activity; for each task the four phases are drawn in order setup, input, exec, output
//! (a `constant` draws no random number, a `uniform` one, a `lognormal` two, by the
//! Box–Muller transform), then rounded to the millisecond.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use crate::toml_key::{key_path, line_of};
use rand::RngExt;
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use super::{PHASES, WfTask, Workflow, WorkflowError, describe_cycle, secs_to_time, stable_topo_order};

/// Largest task count of one activity.
pub const MAX_TASKS_PER_ACTIVITY: u32 = 1_000_000;
/// Largest task count of a whole profile.
pub const MAX_TASKS: usize = 10_000_000;
/// Largest number of parent links of an instance (tasks × upstream tasks, summed).
pub const MAX_DEPENDENCIES: u64 = 50_000_000;
/// Largest accepted distribution parameter, in seconds.
pub const MAX_SECONDS: f64 = 1e9;

/// A duration distribution, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always `value`.
    Constant {
        /// The duration.
        value: f64,
    },
    /// Uniform in `[low, high)`.
    Uniform {
        /// Lower bound.
        low: f64,
        /// Upper bound (≥ `low`).
        high: f64,
    },
    /// `median · exp(sigma · Z)`, `Z` standard normal, clamped to `[min, max]`.
    LogNormal {
        /// Median (> 0).
        median: f64,
        /// Standard deviation of the logarithm (≥ 0).
        sigma: f64,
        /// Optional lower clamp.
        min: Option<f64>,
        /// Optional upper clamp.
        max: Option<f64>,
    },
}

impl Dist {
    /// Zero seconds (the default of an absent phase).
    pub const ZERO: Dist = Dist::Constant { value: 0.0 };

    /// One draw, in seconds. A `constant` uses no random number, a `uniform` one, a
    /// `lognormal` two.
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Uniform { low, high } => low + (high - low) * rng.random::<f64>(),
            Dist::LogNormal {
                median,
                sigma,
                min,
                max,
            } => {
                let mut x = median * libm::exp(sigma * standard_normal(rng));
                if let Some(m) = min {
                    x = x.max(m);
                }
                if let Some(m) = max {
                    x = x.min(m);
                }
                x
            }
        }
    }

    /// The smallest and largest value a draw can take (`f64::INFINITY` for an unclamped
    /// log-normal's upper end; 0 for its lower end).
    pub fn range(&self) -> (f64, f64) {
        match *self {
            Dist::Constant { value } => (value, value),
            Dist::Uniform { low, high } => (low, high),
            Dist::LogNormal {
                sigma,
                median,
                min,
                max,
            } => {
                // The same clamping as `sample`, applied to the unclamped extremes.
                let clamp = |x: f64| {
                    let x = min.map_or(x, |m| x.max(m));
                    max.map_or(x, |m| x.min(m))
                };
                if sigma == 0.0 {
                    (clamp(median), clamp(median))
                } else {
                    (clamp(0.0), clamp(f64::INFINITY))
                }
            }
        }
    }
}

/// A standard normal draw by the Box–Muller transform (two uniform draws).
fn standard_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
    let u2 = rng.random::<f64>();
    (-2.0 * libm::log(u1)).sqrt() * libm::cos(std::f64::consts::TAU * u2)
}

/// One activity of a [`Profile`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActivityProfile {
    /// Activity name.
    pub name: String,
    /// Number of tasks (≥ 1).
    pub tasks: u32,
    /// Upstream activities: indices into [`Profile::activities`], ascending, each smaller
    /// than this activity's own index.
    pub after: Vec<usize>,
    /// Distributions of the setup, input, exec and output phases (see
    /// [`PHASES`]), in seconds.
    pub phases: [Dist; 4],
}

/// A workflow profile read from TOML (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Workflow name.
    pub name: String,
    /// Free text, if given.
    pub description: Option<String>,
    /// Activities in a topological order of their dependencies.
    pub activities: Vec<ActivityProfile>,
}

impl Profile {
    /// Parses and checks a profile; messages name `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Profile, WorkflowError> {
        let loc = Locator::new(path, text)?;
        let raw: RawProfile = toml::from_str(text).map_err(|e| loc.toml_error(&e))?;
        loc.check(raw)
    }

    /// Total number of tasks of an instance.
    pub fn task_count(&self) -> usize {
        self.activities.iter().map(|a| a.tasks as usize).sum()
    }

    /// One instance with durations drawn from `rng` (see the [module docs](self) for the
    /// order of the draws).
    pub fn instantiate<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Workflow {
        let mut first: Vec<u32> = Vec::with_capacity(self.activities.len());
        let mut tasks = Vec::with_capacity(self.task_count());
        for (a, act) in self.activities.iter().enumerate() {
            let start = tasks.len() as u32;
            first.push(start);
            let mut parents = Vec::new();
            for &u in &act.after {
                if let (Some(&f), Some(up)) = (first.get(u), self.activities.get(u))
                    && u < a
                {
                    parents.extend(f..f + up.tasks);
                }
            }
            parents.sort_unstable();
            parents.dedup();
            for k in 0..act.tasks {
                let phases = act.phases.map(|d| secs_to_time(d.sample(rng)));
                tasks.push(WfTask {
                    name: format!("{}_{k}", act.name),
                    activity: a as u32,
                    parents: parents.clone(),
                    phases,
                });
            }
        }
        Workflow {
            name: self.name.clone(),
            activities: self.activities.iter().map(|a| a.name.clone()).collect(),
            tasks,
        }
    }
}

// ---------------------------------------------------------------------------------------
// serde shapes

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    #[serde(default)]
    name: Option<Spanned<String>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    activity: Vec<Spanned<RawActivity>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawActivity {
    name: Spanned<String>,
    tasks: Spanned<i64>,
    #[serde(default)]
    after: Vec<Spanned<String>>,
    #[serde(default)]
    setup: Option<Spanned<RawDist>>,
    #[serde(default)]
    input: Option<Spanned<RawDist>>,
    exec: Spanned<RawDist>,
    #[serde(default)]
    output: Option<Spanned<RawDist>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDist {
    dist: Spanned<String>,
    #[serde(default)]
    value: Option<Spanned<f64>>,
    #[serde(default)]
    low: Option<Spanned<f64>>,
    #[serde(default)]
    high: Option<Spanned<f64>>,
    #[serde(default)]
    median: Option<Spanned<f64>>,
    #[serde(default)]
    sigma: Option<Spanned<f64>>,
    #[serde(default)]
    min: Option<Spanned<f64>>,
    #[serde(default)]
    max: Option<Spanned<f64>>,
}

// ---------------------------------------------------------------------------------------
// Locating errors

/// Turns byte offsets into lines and dotted field paths (`activity[1].exec.sigma`).
struct Locator<'a> {
    path: &'a Path,
    text: &'a str,
    root: DeTable<'a>,
}

impl<'a> Locator<'a> {
    /// Parses the document's structure (syntax errors come out here, located).
    fn new(path: &'a Path, text: &'a str) -> Result<Locator<'a>, WorkflowError> {
        match DeTable::parse(text) {
            Ok(root) => Ok(Locator {
                path,
                text,
                root: root.into_inner(),
            }),
            Err(e) => {
                let line = e.span().map_or(1, |s| line_of(text, s.start));
                Err(WorkflowError::Toml {
                    path: path.to_path_buf(),
                    line,
                    field: String::new(),
                    message: format!("invalid TOML: {}", e.message().trim_end()),
                })
            }
        }
    }

    fn error(
        &self,
        span: Range<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> WorkflowError {
        WorkflowError::Toml {
            path: self.path.to_path_buf(),
            line: line_of(self.text, span.start),
            field: field.into(),
            message: message.into(),
        }
    }

    /// A serde error: the field is found from the error's span in the document structure.
    fn toml_error(&self, e: &toml::de::Error) -> WorkflowError {
        let message = e
            .message()
            .trim_end()
            .replace("expected i64", "expected an integer");
        match e.span() {
            Some(span) => {
                let field = key_path(&self.root, span.start).unwrap_or_default();
                self.error(span, field, message)
            }
            None => self.error(0..0, "", message),
        }
    }

    /// The semantic checks, turning the raw file into a [`Profile`].
    fn check(&self, raw: RawProfile) -> Result<Profile, WorkflowError> {
        let name = match raw.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err(self.error(n.span(), "name", "must not be empty"));
            }
            Some(n) => n.into_inner(),
            None => {
                let f = self
                    .path
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                f.strip_suffix(".toml").unwrap_or(&f).to_string()
            }
        };
        if raw.activity.is_empty() {
            return Err(self.error(
                0..0,
                "activity",
                "no activity: declare at least one [[activity]] table",
            ));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut total: usize = 0;
        for (i, a) in raw.activity.iter().enumerate() {
            let a = a.get_ref();
            let n = a.name.get_ref();
            if n.trim().is_empty() {
                return Err(self.error(a.name.span(), format!("activity[{i}].name"), "must not be empty"));
            }
            if let Some(j) = index.insert(n.as_str(), i) {
                return Err(self.error(
                    a.name.span(),
                    format!("activity[{i}].name"),
                    format!("\"{n}\" is already the name of activity[{j}]"),
                ));
            }
            let t = *a.tasks.get_ref();
            if !(1..=i64::from(MAX_TASKS_PER_ACTIVITY)).contains(&t) {
                return Err(self.error(
                    a.tasks.span(),
                    format!("activity[{i}].tasks"),
                    format!("must be between 1 and {MAX_TASKS_PER_ACTIVITY}, not {t}"),
                ));
            }
            total += t as usize;
            if total > MAX_TASKS {
                return Err(self.error(
                    a.tasks.span(),
                    format!("activity[{i}].tasks"),
                    format!("the profile has more than {MAX_TASKS} tasks"),
                ));
            }
        }
        // Upstream indices (file order), deduplicated.
        let mut after: Vec<Vec<usize>> = Vec::with_capacity(raw.activity.len());
        for (i, a) in raw.activity.iter().enumerate() {
            let mut ups = Vec::new();
            for (k, u) in a.get_ref().after.iter().enumerate() {
                match index.get(u.get_ref().as_str()) {
                    Some(&j) => ups.push(j),
                    None => {
                        return Err(self.error(
                            u.span(),
                            format!("activity[{i}].after[{k}]"),
                            format!("\"{}\" is not the name of an activity", u.get_ref()),
                        ));
                    }
                }
            }
            ups.sort_unstable();
            ups.dedup();
            after.push(ups);
        }
        let order = stable_topo_order(&after).map_err(|cycle| {
            // Report at the `after` entry of the cycle's second activity naming the first.
            let (Some(&up), Some(&down)) = (cycle.first(), cycle.get(1 % cycle.len().max(1))) else {
                return self.error(0..0, "activity", "dependency cycle");
            };
            let act = raw.activity[down].get_ref();
            let (k, span) = act
                .after
                .iter()
                .enumerate()
                .find(|(_, u)| index.get(u.get_ref().as_str()) == Some(&up))
                .map_or((0, 0..0), |(k, u)| (k, u.span()));
            self.error(
                span,
                format!("activity[{down}].after[{k}]"),
                format!(
                    "dependency cycle: {}",
                    describe_cycle(|i| raw.activity[i].get_ref().name.get_ref().as_str(), &cycle)
                ),
            )
        })?;
        let mut links: u64 = 0;
        for (i, a) in raw.activity.iter().enumerate() {
            let ups: u64 = after[i]
                .iter()
                .map(|&u| *raw.activity[u].get_ref().tasks.get_ref() as u64)
                .sum();
            links = links.saturating_add(ups.saturating_mul(*a.get_ref().tasks.get_ref() as u64));
            if links > MAX_DEPENDENCIES {
                return Err(self.error(
                    a.span(),
                    format!("activity[{i}].after"),
                    format!("more than {MAX_DEPENDENCIES} task dependencies in the profile"),
                ));
            }
        }
        let mut new_index = vec![0; raw.activity.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }

        let mut checked: Vec<Option<ActivityProfile>> = Vec::with_capacity(raw.activity.len());
        for (i, a) in raw.activity.into_iter().enumerate() {
            let a = a.into_inner();
            let field = |phase: &str| format!("activity[{i}].{phase}");
            let mut phases = [Dist::ZERO; 4];
            for (p, d) in [a.setup, a.input, Some(a.exec), a.output].into_iter().enumerate() {
                if let Some(d) = d {
                    phases[p] = self.dist(&field(PHASES[p]), d)?;
                }
            }
            let mut ups: Vec<usize> = after[i].iter().map(|&u| new_index[u]).collect();
            ups.sort_unstable();
            checked.push(Some(ActivityProfile {
                name: a.name.into_inner(),
                tasks: *a.tasks.get_ref() as u32,
                after: ups,
                phases,
            }));
        }
        let activities = order.iter().filter_map(|&old| checked[old].take()).collect();
        Ok(Profile {
            name,
            description: raw.description,
            activities,
        })
    }

    /// Checks one distribution table; `field` is its path, e.g. `activity[1].exec`.
    fn dist(&self, field: &str, d: Spanned<RawDist>) -> Result<Dist, WorkflowError> {
        let span = d.span();
        let d = d.into_inner();
        let kind = d.dist.get_ref().as_str();
        let params: [(&str, &Option<Spanned<f64>>); 7] = [
            ("value", &d.value),
            ("low", &d.low),
            ("high", &d.high),
            ("median", &d.median),
            ("sigma", &d.sigma),
            ("min", &d.min),
            ("max", &d.max),
        ];
        let allowed: &[&str] = match kind {
            "constant" => &["value"],
            "uniform" => &["low", "high"],
            "lognormal" => &["median", "sigma", "min", "max"],
            _ => {
                return Err(self.error(
                    d.dist.span(),
                    format!("{field}.dist"),
                    format!(
                        "unknown distribution \"{kind}\", expected \"constant\", \"uniform\" or \"lognormal\""
                    ),
                ));
            }
        };
        for (key, v) in params {
            let Some(v) = v else { continue };
            if !allowed.contains(&key) {
                return Err(self.error(
                    v.span(),
                    format!("{field}.{key}"),
                    format!(
                        "`{key}` is not a parameter of dist = \"{kind}\" (its parameters: {})",
                        allowed.join(", ")
                    ),
                ));
            }
            let x = *v.get_ref();
            if !(x.is_finite() && x >= 0.0) {
                return Err(self.error(
                    v.span(),
                    format!("{field}.{key}"),
                    format!("must be ≥ 0, not {x}"),
                ));
            }
            if x > MAX_SECONDS {
                return Err(self.error(
                    v.span(),
                    format!("{field}.{key}"),
                    format!("must be at most {MAX_SECONDS:e} seconds, not {x}"),
                ));
            }
        }
        let need = |key: &str, v: &Option<Spanned<f64>>| -> Result<f64, WorkflowError> {
            v.as_ref()
                .map(|v| *v.get_ref())
                .ok_or_else(|| self.error(span.clone(), field, format!("dist = \"{kind}\" needs `{key}`")))
        };
        let bad = |v: &Option<Spanned<f64>>, key: &str, msg: String| {
            let s = v.as_ref().map_or(span.clone(), |v| v.span());
            self.error(s, format!("{field}.{key}"), msg)
        };
        match kind {
            "constant" => Ok(Dist::Constant {
                value: need("value", &d.value)?,
            }),
            "uniform" => {
                let (low, high) = (need("low", &d.low)?, need("high", &d.high)?);
                if high < low {
                    return Err(bad(&d.high, "high", format!("must be ≥ low ({low}), not {high}")));
                }
                Ok(Dist::Uniform { low, high })
            }
            _ => {
                let (median, sigma) = (need("median", &d.median)?, need("sigma", &d.sigma)?);
                if median <= 0.0 {
                    return Err(bad(&d.median, "median", "must be > 0".to_string()));
                }
                let (min, max) = (
                    d.min.as_ref().map(|v| *v.get_ref()),
                    d.max.as_ref().map(|v| *v.get_ref()),
                );
                if let (Some(lo), Some(hi)) = (min, max)
                    && hi < lo
                {
                    return Err(bad(&d.max, "max", format!("must be ≥ min ({lo}), not {hi}")));
                }
                Ok(Dist::LogNormal {
                    median,
                    sigma,
                    min,
                    max,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn parse(text: &str) -> Result<Profile, WorkflowError> {
        Profile::parse(Path::new("p.toml"), text)
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    const TWO: &str = r#"
name = "two"

[[activity]]
name = "b"
tasks = 3
after = ["a"]
exec = { dist = "uniform", low = 1, high = 2 }

[[activity]]
name = "a"
tasks = 2
setup = { dist = "constant", value = 1.5 }
exec = { dist = "lognormal", median = 10, sigma = 0.5, min = 5, max = 20 }
"#;

    #[test]
    fn activities_are_sorted_and_instances_drawn_within_bounds() {
        let p = parse(TWO).unwrap();
        assert_eq!(p.name, "two");
        assert_eq!(
            p.activities.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(p.activities[1].after, [0]);
        let w = p.instantiate(&mut Pcg64Mcg::seed_from_u64(1));
        assert_eq!(w.tasks.len(), 5);
        assert!(w.is_topologically_sorted());
        assert_eq!(w.tasks[2].name, "b_0");
        assert_eq!(w.tasks[4].parents, [0, 1]);
        for t in &w.tasks[..2] {
            assert_eq!(t.phases[0], fairsched_core::Time::from_millis(1500));
            assert!((5000..=20000).contains(&t.phases[2].millis()));
        }
        for t in &w.tasks[2..] {
            assert!((1000..=2000).contains(&t.phases[2].millis()));
            assert_eq!(t.phases[3], fairsched_core::Time::ZERO);
        }
    }

    #[test]
    fn located_errors() {
        let e = err(
            "name = \"x\"\n[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"constant\", value = 1, sigma = 2 }\n",
        );
        assert_eq!(
            e,
            "p.toml:5: activity[0].exec.sigma: `sigma` is not a parameter of dist = \"constant\" (its parameters: value)"
        );
        let e = err(
            "[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"lognormal\", median = 1, sigma = -1 }\n",
        );
        assert_eq!(e, "p.toml:4: activity[0].exec.sigma: must be ≥ 0, not -1");
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"lognormal\", median = 1 }\n");
        assert_eq!(
            e,
            "p.toml:4: activity[0].exec: dist = \"lognormal\" needs `sigma`"
        );
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"normal\", median = 1 }\n");
        assert!(
            e.starts_with("p.toml:4: activity[0].exec.dist: unknown distribution \"normal\""),
            "{e}"
        );
        let e =
            err("[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"uniform\", low = 2, high = 1 }\n");
        assert_eq!(e, "p.toml:4: activity[0].exec.high: must be ≥ low (2), not 1");
        let e = err("[[activity]]\nname = \"a\"\ntasks = 0\nexec = { dist = \"constant\", value = 1 }\n");
        assert_eq!(
            e,
            "p.toml:3: activity[0].tasks: must be between 1 and 1000000, not 0"
        );
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1\n");
        assert_eq!(e, "p.toml:1: activity[0]: missing field `exec`");
        let e = err(
            "[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"constant\", value = 1 }\n[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"constant\", value = 1 }\n",
        );
        assert_eq!(
            e,
            "p.toml:6: activity[1].name: \"a\" is already the name of activity[0]"
        );
        let e = err("name = \"x\"\n");
        assert_eq!(
            e,
            "p.toml:1: activity: no activity: declare at least one [[activity]] table"
        );
        let e = err("name = \"x\"\nname = \"y\"\n");
        assert!(e.starts_with("p.toml:2: invalid TOML: "), "{e}");
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1.5\nexec = { dist = \"constant\", value = 1 }\n");
        assert!(e.starts_with("p.toml:3: activity[0].tasks: invalid type"), "{e}");
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"constant\", value = inf }\n");
        assert_eq!(e, "p.toml:4: activity[0].exec.value: must be ≥ 0, not inf");
        let e = err("[[activity]]\nname = \"a\"\ntasks = 1\nexec = { dist = \"constant\", value = 1e10 }\n");
        assert!(
            e.starts_with("p.toml:4: activity[0].exec.value: must be at most"),
            "{e}"
        );
    }

    #[test]
    fn self_dependency_is_a_cycle() {
        let e = err(
            "[[activity]]\nname = \"a\"\ntasks = 1\nafter = [\"a\"]\nexec = { dist = \"constant\", value = 1 }\n",
        );
        assert_eq!(
            e,
            "p.toml:4: activity[0].after[0]: dependency cycle: \"a\" -> \"a\""
        );
    }

    #[test]
    fn dist_ranges() {
        assert_eq!(Dist::Constant { value: 2.0 }.range(), (2.0, 2.0));
        let d = Dist::LogNormal {
            median: 3.0,
            sigma: 1.0,
            min: Some(1.0),
            max: None,
        };
        assert_eq!(d.range(), (1.0, f64::INFINITY));
        let d = Dist::LogNormal {
            median: 3.0,
            sigma: 0.0,
            min: None,
            max: None,
        };
        assert_eq!(d.range(), (3.0, 3.0));
        let d = Dist::LogNormal {
            median: 3.0,
            sigma: 0.0,
            min: Some(5.0),
            max: Some(9.0),
        };
        assert_eq!(d.range(), (5.0, 5.0));
        assert_eq!(d.sample(&mut Pcg64Mcg::seed_from_u64(0)), 5.0);
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let d = Dist::LogNormal {
            median: 100.0,
            sigma: 0.5,
            min: None,
            max: None,
        };
        let mut xs: Vec<f64> = (0..2001).map(|_| d.sample(&mut rng)).collect();
        xs.sort_by(f64::total_cmp);
        let med = xs[1000];
        assert!((85.0..115.0).contains(&med), "median {med}");
    }
}
