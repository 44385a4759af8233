//! Workflow inputs for the workflow-fairness experiments: DAGs of tasks grouped into
//! activities, each task running four phases (setup, input, exec, output).
//!
//! Two sources (see [`WorkflowSource`]):
//!
//! - **Traces** in the [WfCommons](https://wfcommons.org) JSON format (plain or gzip), every
//!   schema version: 1.0–1.4 (`workflow.jobs` / `workflow.tasks` with `parents`, `children`,
//!   `files`, `runtime` / `runtimeInSeconds`) and the 1.5/1.6 split layout
//!   (`workflow.specification` + `workflow.execution`). Durations are fixed: `exec` is the
//!   recorded runtime, `input` / `output` the task's file bytes over
//!   [`LoadOptions::bandwidth_bytes_per_s`], `setup` is [`LoadOptions::setup`]. See
//!   [`wfcommons`] for the details.
//! - **Profiles** in a small TOML format (see [`profile`]): activities with task counts,
//!   activity-level dependencies and per-phase duration distributions; durations are drawn
//!   per instance by [`WorkflowSource::instantiate`]. The four workflows of the paper
//!   (GATE, SimuBloch, FIELD-II, PET-Sorteo) ship built in ([`WorkflowSource::builtin`]).
//!
//! Both give a [`Workflow`]: tasks in topological order (every parent index is smaller than
//! its child's), with concrete durations.
//!
//! Every failure is a [`WorkflowError`] naming the file, and the line and field where it
//! applies: `gate.toml:12: activity[1].exec.sigma: must be ≥ 0`,
//! `x.json: task "mDiff_ID01": parent "foo" is not a task of the workflow`. Nothing here
//! panics on user input.
//!
//! # Example
//!
//! ```
//! use fairsched_trace::workflow::WorkflowSource;
//! use rand::SeedableRng;
//!
//! let pet = WorkflowSource::builtin("pet-sorteo").expect("shipped profile");
//! let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
//! let wf = pet.instantiate(&mut rng);
//! assert_eq!(wf.tasks.len(), 1 + 80 + 1 + 80 + 1 + 1);
//! assert_eq!(wf.activities.len(), 6);
//! assert!(wf.critical_path() <= wf.total_work());
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use fairsched_core::Time;

pub mod profile;
pub mod wfcommons;

pub use profile::{ActivityProfile, Dist, Profile};

/// Names of the four phases, in the order of [`WfTask::phases`].
pub const PHASES: [&str; 4] = ["setup", "input", "exec", "output"];

/// Index of the setup phase in [`WfTask::phases`].
pub const SETUP: usize = 0;
/// Index of the input (download) phase in [`WfTask::phases`].
pub const INPUT: usize = 1;
/// Index of the execution phase in [`WfTask::phases`].
pub const EXEC: usize = 2;
/// Index of the output (upload) phase in [`WfTask::phases`].
pub const OUTPUT: usize = 3;

/// Names accepted by [`WorkflowSource::builtin`].
pub const BUILTIN_PROFILES: [&str; 4] = ["gate", "simubloch", "field2", "pet-sorteo"];

/// Largest decompressed / read input accepted (1 GiB): a guard against decompression bombs.
const MAX_INPUT_BYTES: u64 = 1 << 30;

/// One workflow instance with concrete durations.
///
/// Tasks are topologically sorted: every parent index is smaller than the child's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workflow {
    /// Display name (the trace's `name`, else the file stem; the profile's `name`).
    pub name: String,
    /// Activity names; [`WfTask::activity`] indexes this list.
    pub activities: Vec<String>,
    /// Tasks, parents before children.
    pub tasks: Vec<WfTask>,
}

/// One task of a [`Workflow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WfTask {
    /// Task name, unique within the workflow.
    pub name: String,
    /// Index into [`Workflow::activities`].
    pub activity: u32,
    /// Indices into [`Workflow::tasks`], deduplicated and ascending, each smaller than this
    /// task's own index.
    pub parents: Vec<u32>,
    /// Durations of the four phases: setup, input, exec, output (see [`PHASES`]).
    pub phases: [Time; 4],
}

impl WfTask {
    /// Sum of the four phases.
    pub fn duration(&self) -> Time {
        self.phases.iter().fold(Time::ZERO, |a, &p| a + p)
    }
}

impl Workflow {
    /// `M_own` of the spec: the longest path through the DAG, a path's length being the sum
    /// of the four phases of each of its tasks (the critical path with these durations,
    /// assuming no waiting).
    ///
    /// Relies on the topological order; a parent index that is not smaller than the task's
    /// own (impossible for workflows built by this module) is ignored.
    pub fn critical_path(&self) -> Time {
        let mut finish: Vec<Time> = Vec::with_capacity(self.tasks.len());
        let mut best = Time::ZERO;
        for (i, t) in self.tasks.iter().enumerate() {
            let start = t
                .parents
                .iter()
                .filter_map(|&p| {
                    if (p as usize) < i {
                        finish.get(p as usize).copied()
                    } else {
                        None
                    }
                })
                .max()
                .unwrap_or(Time::ZERO);
            let end = start + t.duration();
            best = best.max(end);
            finish.push(end);
        }
        best
    }

    /// Sum of every task's four phases.
    pub fn total_work(&self) -> Time {
        self.tasks.iter().fold(Time::ZERO, |a, t| a + t.duration())
    }

    /// True when every parent index is smaller than its child's index (as this module
    /// guarantees) and every activity index is in range.
    pub fn is_topologically_sorted(&self) -> bool {
        self.tasks.iter().enumerate().all(|(i, t)| {
            (t.activity as usize) < self.activities.len() && t.parents.iter().all(|&p| (p as usize) < i)
        })
    }

    /// For each task, the indices of its children (ascending).
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.tasks.len()];
        for (i, t) in self.tasks.iter().enumerate() {
            for &p in &t.parents {
                if let Some(c) = out.get_mut(p as usize) {
                    c.push(i as u32);
                }
            }
        }
        out
    }

    /// Number of tasks of each activity, indexed like [`Workflow::activities`].
    pub fn activity_sizes(&self) -> Vec<usize> {
        let mut out = vec![0; self.activities.len()];
        for t in &self.tasks {
            if let Some(n) = out.get_mut(t.activity as usize) {
                *n += 1;
            }
        }
        out
    }
}

/// How trace files are turned into phase durations. Profiles ignore these options (their
/// phases are durations already).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadOptions {
    /// Transfer rate for the input and output phases, in bytes per second: a phase lasts the
    /// task's file bytes divided by this. Default 10 MB/s (10⁷ B/s).
    pub bandwidth_bytes_per_s: f64,
    /// Setup phase of every task of a trace. Default 0.
    pub setup: Time,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            bandwidth_bytes_per_s: 10e6,
            setup: Time::ZERO,
        }
    }
}

/// Where a workflow comes from: a real trace (fixed durations) or a profile (durations drawn
/// per instance).
#[derive(Clone, Debug, PartialEq)]
pub enum WorkflowSource {
    /// A WfCommons trace: every instance is the same.
    Trace(Workflow),
    /// A TOML profile: every instance draws its own durations.
    Profile(Profile),
}

impl WorkflowSource {
    /// Reads a WfCommons JSON trace (`.json`, or gzip-compressed `.json.gz`) or a TOML
    /// profile (`.toml`). A name ending in `.json`, `.gz` or `.toml` decides; otherwise the
    /// content does: gzip magic bytes → compressed JSON; a first non-blank character `{` →
    /// JSON; anything else → TOML. A UTF-8 byte-order mark is skipped.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<WorkflowSource, WorkflowError> {
        check_options(opts)?;
        let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
        let mut raw = Vec::new();
        file.take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut raw)
            .map_err(|e| io_error(path, e))?;
        let name = path
            .file_name()
            .map(|f| f.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let is_toml = name.ends_with(".toml");
        let is_json = name.ends_with(".json") || name.ends_with(".gz");
        let bytes = if !is_toml && raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(raw.as_slice())
                .take(MAX_INPUT_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| io_error(path, e))?;
            out
        } else {
            raw
        };
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            return Err(invalid(path, format!("larger than {MAX_INPUT_BYTES} bytes")));
        }
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if is_json || (!is_toml && first == Some(&b'{')) {
            wfcommons::parse_json(path, bytes, opts).map(WorkflowSource::Trace)
        } else {
            let text = std::str::from_utf8(bytes)
                .map_err(|e| invalid(path, format!("not UTF-8 text (byte {})", e.valid_up_to())))?;
            Profile::parse(path, text).map(WorkflowSource::Profile)
        }
    }

    /// A profile shipped with the crate: `"gate"`, `"simubloch"`, `"field2"` or
    /// `"pet-sorteo"` (case-insensitive; `"field-ii"` and `"petsorteo"` are accepted too).
    pub fn builtin(name: &str) -> Option<WorkflowSource> {
        let (file, text) = match name.to_ascii_lowercase().as_str() {
            "gate" => ("gate.toml", include_str!("../../profiles/gate.toml")),
            "simubloch" => ("simubloch.toml", include_str!("../../profiles/simubloch.toml")),
            "field2" | "field-ii" | "fieldii" => ("field2.toml", include_str!("../../profiles/field2.toml")),
            "pet-sorteo" | "petsorteo" | "pet_sorteo" => {
                ("pet-sorteo.toml", include_str!("../../profiles/pet-sorteo.toml"))
            }
            _ => return None,
        };
        let path = Path::new("profiles").join(file);
        Profile::parse(&path, text).ok().map(WorkflowSource::Profile)
    }

    /// One instance: a clone of the trace, or a profile's DAG with freshly drawn durations.
    /// Deterministic for a given generator state.
    pub fn instantiate<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Workflow {
        match self {
            WorkflowSource::Trace(w) => w.clone(),
            WorkflowSource::Profile(p) => p.instantiate(rng),
        }
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        match self {
            WorkflowSource::Trace(w) => &w.name,
            WorkflowSource::Profile(p) => &p.name,
        }
    }

    /// Number of tasks of every instance.
    pub fn task_count(&self) -> usize {
        match self {
            WorkflowSource::Trace(w) => w.tasks.len(),
            WorkflowSource::Profile(p) => p.task_count(),
        }
    }
}

/// Everything that can go wrong while reading a workflow trace or profile.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// The operating system refused to read `path` (or its gzip stream is corrupt).
    #[error("{}: {source}", path.display())]
    Io {
        /// File being read.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A JSON syntax or type error, or a per-task error found while reading a task (missing
    /// or negative runtime, bad file size). Displays as `x.json:12:5: MESSAGE`: line and
    /// column of the decompressed text where the error was noticed. For a per-task error
    /// that is the end of the task's object (or the start of the next token), and the
    /// message names the task: `x.json:40:1: task "b": runtimeInSeconds: missing (…)`.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Json {
        /// File being read.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },

    /// A TOML syntax error or a bad profile value. Displays as
    /// `gate.toml:12: activity[1].exec.sigma: must be ≥ 0` (the field is left out when the
    /// error has none, e.g. a syntax error).
    #[error("{}", toml_display(path, *line, field, message))]
    Toml {
        /// File being read.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Dotted path of the field, e.g. `activity[1].exec.sigma`; empty when unknown.
        field: String,
        /// What is wrong.
        message: String,
    },

    /// A problem with the workflow as a whole (dependencies, cycles, duplicate names),
    /// without a line: `x.json: task "mDiff_ID01": parent "foo" is not a task of the workflow`.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// File being read.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// An impossible [`LoadOptions`] value.
    #[error("invalid load options: {0}")]
    Options(String),
}

impl WorkflowError {
    /// The file this error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WorkflowError::Io { path, .. }
            | WorkflowError::Json { path, .. }
            | WorkflowError::Toml { path, .. }
            | WorkflowError::Invalid { path, .. } => Some(path),
            WorkflowError::Options(_) => None,
        }
    }
}

fn toml_display(path: &Path, line: usize, field: &str, message: &str) -> String {
    let mut s = format!("{}:{line}: ", path.display());
    if !field.is_empty() {
        let _ = write!(s, "{field}: ");
    }
    s.push_str(message);
    s
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> WorkflowError {
    WorkflowError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> WorkflowError {
    WorkflowError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn check_options(opts: &LoadOptions) -> Result<(), WorkflowError> {
    let b = opts.bandwidth_bytes_per_s;
    if !(b.is_finite() && b > 0.0) {
        return Err(WorkflowError::Options(format!(
            "bandwidth_bytes_per_s must be a finite number > 0, not {b}"
        )));
    }
    if opts.setup < Time::ZERO {
        return Err(WorkflowError::Options(format!(
            "setup must be ≥ 0, not {}",
            opts.setup
        )));
    }
    Ok(())
}

/// Seconds (finite, ≥ 0) to milliseconds, rounded to the nearest; saturates at `i64::MAX`.
pub(crate) fn secs_to_time(s: f64) -> Time {
    // `as` saturates (and maps NaN to 0): no panic whatever the input.
    Time::from_millis((s * 1000.0).round() as i64)
}

/// The activity of a task without a category: its name with a trailing `_ID<digits>` or
/// `_<digits>` suffix removed (`mDiffFit_ID0000009` → `mDiffFit`, `emission_12` →
/// `emission`, `merge` → `merge`). Only one suffix is removed, and a name that would become
/// empty is kept whole.
pub fn activity_from_name(name: &str) -> &str {
    let Some((head, tail)) = name.rsplit_once('_') else {
        return name;
    };
    let digits = tail.strip_prefix("ID").unwrap_or(tail);
    if !head.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        head
    } else {
        name
    }
}

/// Orders `n` nodes with the given parent lists (indices `< n`) topologically, stably:
/// among the ready nodes, the one with the smallest original index comes first (so an
/// already sorted input keeps its order). On a cycle, returns the nodes of one cycle, in
/// dependency order (each is a parent of the next, and the last a parent of the first).
pub(crate) fn stable_topo_order(parents: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = parents.len();
    let mut missing: Vec<usize> = parents.iter().map(Vec::len).collect();
    let mut children = vec![Vec::new(); n];
    for (c, ps) in parents.iter().enumerate() {
        for &p in ps {
            children[p].push(c);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| missing[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &c in &children[i] {
            missing[c] -= 1;
            if missing[c] == 0 {
                ready.push(Reverse(c));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every node left has an unfinished parent: walk up parents until a node repeats.
    let Some(start) = (0..n).find(|&i| missing[i] > 0) else {
        return Err(Vec::new());
    };
    let mut seen = vec![usize::MAX; n];
    let mut path = Vec::new();
    let mut cur = start;
    while seen[cur] == usize::MAX {
        seen[cur] = path.len();
        path.push(cur);
        match parents[cur].iter().copied().find(|&p| missing[p] > 0) {
            Some(p) => cur = p,
            None => return Err(path), // cannot happen: a stuck node has a stuck parent
        }
    }
    let mut cycle = path.split_off(seen[cur]);
    cycle.reverse();
    Err(cycle)
}

/// `a -> b -> c -> a` for a cycle given in dependency order.
pub(crate) fn describe_cycle<'a>(names: impl Fn(usize) -> &'a str, cycle: &[usize]) -> String {
    let mut s = String::new();
    for &i in cycle {
        let _ = write!(s, "\"{}\" -> ", names(i));
    }
    if let Some(&first) = cycle.first() {
        let _ = write!(s, "\"{}\"", names(first));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, parents: &[u32], secs: [i64; 4]) -> WfTask {
        WfTask {
            name: name.into(),
            activity: 0,
            parents: parents.to_vec(),
            phases: secs.map(Time::from_secs),
        }
    }

    #[test]
    fn critical_path_of_a_diamond() {
        //     a(1+1+3+1=6)
        //    /            \
        // b(10)          c(2)
        //    \            /
        //       d(4)
        let wf = Workflow {
            name: "diamond".into(),
            activities: vec!["x".into()],
            tasks: vec![
                task("a", &[], [1, 1, 3, 1]),
                task("b", &[0], [0, 0, 10, 0]),
                task("c", &[0], [0, 1, 1, 0]),
                task("d", &[1, 2], [1, 1, 1, 1]),
            ],
        };
        assert!(wf.is_topologically_sorted());
        assert_eq!(wf.critical_path(), Time::from_secs(6 + 10 + 4));
        assert_eq!(wf.total_work(), Time::from_secs(6 + 10 + 2 + 4));
        assert_eq!(wf.children(), vec![vec![1, 2], vec![3], vec![3], vec![]]);
        assert_eq!(wf.activity_sizes(), vec![4]);
        // Two independent chains: the longer wins.
        let wf2 = Workflow {
            name: "two".into(),
            activities: vec!["x".into()],
            tasks: vec![
                task("a", &[], [0, 0, 5, 0]),
                task("b", &[], [0, 0, 1, 0]),
                task("c", &[1], [0, 0, 7, 0]),
            ],
        };
        assert_eq!(wf2.critical_path(), Time::from_secs(8));
    }

    #[test]
    fn activity_rule() {
        assert_eq!(activity_from_name("mDiffFit_ID0000009"), "mDiffFit");
        assert_eq!(activity_from_name("emission_12"), "emission");
        assert_eq!(activity_from_name("merge"), "merge");
        assert_eq!(activity_from_name("a_b_ID7"), "a_b");
        assert_eq!(activity_from_name("_12"), "_12");
        assert_eq!(activity_from_name("x_"), "x_");
        assert_eq!(activity_from_name("x_ID"), "x_ID");
        assert_eq!(activity_from_name("x_IDa1"), "x_IDa1");
    }

    #[test]
    fn topo_order_is_stable_and_finds_cycles() {
        assert_eq!(stable_topo_order(&[vec![], vec![0], vec![]]), Ok(vec![0, 1, 2]));
        // 0 needs 2: 1 and 2 are ready first, 1 precedes 2 (file order).
        assert_eq!(stable_topo_order(&[vec![2], vec![], vec![]]), Ok(vec![1, 2, 0]));
        let err = stable_topo_order(&[vec![], vec![3], vec![1], vec![2]]).unwrap_err();
        assert_eq!(err.len(), 3);
        let names = ["a", "b", "c", "d"];
        let text = describe_cycle(|i| names[i], &err);
        assert!(text.contains("\"b\" -> \"c\""), "{text}");
        assert_eq!(stable_topo_order(&[vec![0]]), Err(vec![0]));
    }

    #[test]
    fn bad_options_are_refused() {
        let mut o = LoadOptions {
            bandwidth_bytes_per_s: 0.0,
            ..LoadOptions::default()
        };
        assert!(check_options(&o).is_err());
        o.bandwidth_bytes_per_s = f64::NAN;
        assert!(check_options(&o).is_err());
        o.bandwidth_bytes_per_s = 1.0;
        o.setup = Time::from_secs(-1);
        assert!(check_options(&o).is_err());
    }
}
