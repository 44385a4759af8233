//! WfCommons JSON traces (<https://wfcommons.org>, schema "WfFormat"), every version.
//!
//! # Layouts read
//!
//! | schema | tasks | references | runtime | file sizes |
//! |---|---|---|---|---|
//! | 1.0 – 1.2 | `workflow.jobs[]` | `parents` / `children` by task `name` | `runtime` | `files[].size` |
//! | 1.3 | `workflow.tasks[]` | same | `runtime` | `files[].size` |
//! | 1.4 | `workflow.tasks[]` | same | `runtimeInSeconds` | `files[].sizeInBytes` |
//! | 1.5, 1.6 | `workflow.specification.tasks[]` + `workflow.execution.tasks[]` | `parents` / `children` by task `id` | `execution.tasks[].runtimeInSeconds` | `inputFiles` / `outputFiles` ids into `specification.files[].sizeInBytes` |
//!
//! The layout is told by the keys present, not by `schemaVersion`: `workflow.specification`
//! → split layout; else `workflow.tasks`; else `workflow.jobs`. In the older layouts both
//! runtime spellings and both size spellings are accepted (`runtimeInSeconds` / `sizeInBytes`
//! win when both are given). A file whose `link` is `input` (any case) is an input, any
//! other link an output (as WfCommons' own migration tool reads them).
//!
//! In 1.0–1.4, tasks are identified by `name` (unique); a reference that matches no name but
//! matches exactly one task's `id` is accepted too. In 1.5/1.6 they are identified by `id`,
//! which becomes [`WfTask::name`](super::WfTask::name).
//!
//! # From a task to phases
//!
//! - activity: the task's `category` when present; else its name (1.5: `name`, falling back
//!   to `id`) with one trailing `_ID<digits>` or `_<digits>` removed (see
//!   [`activity_from_name`]). Activities are numbered in order of first appearance among
//!   the sorted tasks.
//! - setup: [`LoadOptions::setup`]; input: the sum of the task's input file bytes over
//!   [`LoadOptions::bandwidth_bytes_per_s`]; exec: the runtime; output: the sum of the output
//!   file bytes over the bandwidth. Seconds become milliseconds, rounded to the nearest.
//! - parents: the union of the task's `parents` and of every task listing it among its
//!   `children`, deduplicated.
//!
//! Tasks are then sorted topologically, stably (among ready tasks, file order is kept).
//!
//! # Errors
//!
//! A JSON syntax or type error, a missing or negative runtime, a missing or negative file
//! size → [`WorkflowError::Json`] with line and column. An empty task list, a duplicate task
//! name (or id), a reference to an unknown task, a cycle, an execution entry for an unknown
//! task, a task without execution entry (1.5), an unknown file id (1.5) →
//! [`WorkflowError::Invalid`] naming the task and the field.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::{
    LoadOptions, WfTask, Workflow, WorkflowError, activity_from_name, describe_cycle, invalid, secs_to_time,
    stable_topo_order,
};

/// Reads a WfCommons instance from JSON bytes (already decompressed); messages name `path`.
pub fn parse_json(path: &Path, bytes: &[u8], opts: &LoadOptions) -> Result<Workflow, WorkflowError> {
    let inst: Instance = serde_json::from_slice(bytes).map_err(|e| json_error(path, &e))?;
    let name = inst
        .name
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| file_stem(path));
    let w = inst.workflow;
    let (tasks, by) = if let Some(spec) = w.specification {
        (split_layout(path, spec, w.execution)?, KeyKind::Id)
    } else if let Some(tasks) = w.tasks.or(w.jobs) {
        (
            tasks.into_iter().map(TaskV1::into_common).collect(),
            KeyKind::Name,
        )
    } else {
        return Err(invalid(
            path,
            "workflow: no task list (expected workflow.tasks, workflow.jobs or workflow.specification.tasks)",
        ));
    };
    build(path, name, tasks, by, opts)
}

/// `gate.json.gz` → `gate`.
fn file_stem(path: &Path) -> String {
    let f = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let f = f.strip_suffix(".gz").unwrap_or(&f);
    let f = f.strip_suffix(".json").unwrap_or(f);
    if f.is_empty() {
        "workflow".to_string()
    } else {
        f.to_string()
    }
}

/// serde_json's error as `Json { line, column, message }` without the " at line …" suffix.
fn json_error(path: &Path, e: &serde_json::Error) -> WorkflowError {
    let mut message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    if let Some(m) = message.strip_suffix(&suffix) {
        message = m.to_string();
    }
    WorkflowError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

// ---------------------------------------------------------------------------------------
// serde shapes (unknown keys are ignored: WfCommons allows runtime systems to add fields)

#[derive(Deserialize)]
struct Instance {
    #[serde(default)]
    name: Option<String>,
    workflow: RawWorkflow,
}

#[derive(Deserialize)]
struct RawWorkflow {
    #[serde(default)]
    tasks: Option<Vec<TaskV1>>,
    #[serde(default)]
    jobs: Option<Vec<TaskV1>>,
    #[serde(default)]
    specification: Option<Specification>,
    #[serde(default)]
    execution: Option<Execution>,
}

/// A task of schemas 1.0–1.4, checked as it is read (so errors carry the JSON position).
#[derive(Deserialize)]
#[serde(try_from = "RawTaskV1")]
struct TaskV1 {
    name: String,
    id: Option<String>,
    category: Option<String>,
    parents: Vec<String>,
    children: Vec<String>,
    runtime: f64,
    input_bytes: f64,
    output_bytes: f64,
}

#[derive(Deserialize)]
struct RawTaskV1 {
    name: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    parents: Option<Vec<String>>,
    #[serde(default)]
    children: Option<Vec<String>>,
    #[serde(default)]
    files: Option<Vec<RawFileV1>>,
    #[serde(default, rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
    #[serde(default)]
    runtime: Option<f64>,
}

#[derive(Deserialize)]
struct RawFileV1 {
    #[serde(default)]
    link: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
    #[serde(default)]
    size: Option<f64>,
}

fn check_runtime(task: &str, field: &str, r: Option<f64>) -> Result<f64, String> {
    match r {
        None => Err(format!(
            "task \"{task}\": {field}: missing (the task has no runtime)"
        )),
        Some(r) if !(r.is_finite() && r >= 0.0) => Err(format!(
            "task \"{task}\": {field}: must be a finite number ≥ 0, not {r}"
        )),
        Some(r) => Ok(r),
    }
}

impl TryFrom<RawTaskV1> for TaskV1 {
    type Error = String;

    fn try_from(t: RawTaskV1) -> Result<Self, String> {
        let (field, r) = match (t.runtime_in_seconds, t.runtime) {
            (Some(r), _) => ("runtimeInSeconds", Some(r)),
            (None, Some(r)) => ("runtime", Some(r)),
            (None, None) => ("runtimeInSeconds", None),
        };
        let runtime = check_runtime(&t.name, field, r)?;
        let (mut input_bytes, mut output_bytes) = (0.0, 0.0);
        for (k, f) in t.files.unwrap_or_default().iter().enumerate() {
            let label = match &f.name {
                Some(n) => format!("file \"{n}\""),
                None => format!("files[{k}]"),
            };
            let size = f.size_in_bytes.or(f.size).ok_or_else(|| {
                format!(
                    "task \"{}\": {label}: sizeInBytes: missing (no sizeInBytes or size)",
                    t.name
                )
            })?;
            if !(size.is_finite() && size >= 0.0) {
                return Err(format!(
                    "task \"{}\": {label}: sizeInBytes: must be ≥ 0, not {size}",
                    t.name
                ));
            }
            let is_input = f.link.as_deref().is_some_and(|l| l.eq_ignore_ascii_case("input"));
            if is_input {
                input_bytes += size;
            } else {
                output_bytes += size;
            }
        }
        Ok(TaskV1 {
            name: t.name,
            id: t.id,
            category: t.category,
            parents: t.parents.unwrap_or_default(),
            children: t.children.unwrap_or_default(),
            runtime,
            input_bytes,
            output_bytes,
        })
    }
}

impl TaskV1 {
    fn into_common(self) -> CommonTask {
        let activity = match self.category {
            Some(c) if !c.is_empty() => c,
            _ => activity_from_name(&self.name).to_string(),
        };
        CommonTask {
            key: self.name,
            alt_key: self.id,
            activity,
            parents: self.parents,
            children: self.children,
            runtime: self.runtime,
            input_bytes: self.input_bytes,
            output_bytes: self.output_bytes,
        }
    }
}

#[derive(Deserialize)]
struct Specification {
    tasks: Vec<SpecTask>,
    #[serde(default)]
    files: Option<Vec<SpecFile>>,
}

#[derive(Deserialize)]
struct SpecTask {
    #[serde(default)]
    name: Option<String>,
    id: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    parents: Option<Vec<String>>,
    #[serde(default)]
    children: Option<Vec<String>>,
    #[serde(default, rename = "inputFiles")]
    input_files: Option<Vec<String>>,
    #[serde(default, rename = "outputFiles")]
    output_files: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(try_from = "RawSpecFile")]
struct SpecFile {
    id: String,
    size: f64,
}

#[derive(Deserialize)]
struct RawSpecFile {
    id: String,
    #[serde(default, rename = "sizeInBytes")]
    size_in_bytes: Option<f64>,
}

impl TryFrom<RawSpecFile> for SpecFile {
    type Error = String;

    fn try_from(f: RawSpecFile) -> Result<Self, String> {
        match f.size_in_bytes {
            None => Err(format!("file \"{}\": sizeInBytes: missing", f.id)),
            Some(s) if !(s.is_finite() && s >= 0.0) => {
                Err(format!("file \"{}\": sizeInBytes: must be ≥ 0, not {s}", f.id))
            }
            Some(size) => Ok(SpecFile { id: f.id, size }),
        }
    }
}

#[derive(Deserialize)]
struct Execution {
    #[serde(default)]
    tasks: Vec<ExecTask>,
}

#[derive(Deserialize)]
#[serde(try_from = "RawExecTask")]
struct ExecTask {
    id: String,
    runtime: f64,
}

#[derive(Deserialize)]
struct RawExecTask {
    id: String,
    #[serde(default, rename = "runtimeInSeconds")]
    runtime_in_seconds: Option<f64>,
}

impl TryFrom<RawExecTask> for ExecTask {
    type Error = String;

    fn try_from(t: RawExecTask) -> Result<Self, String> {
        let runtime = check_runtime(&t.id, "runtimeInSeconds", t.runtime_in_seconds)?;
        Ok(ExecTask { id: t.id, runtime })
    }
}

// ---------------------------------------------------------------------------------------
// From any layout to a Workflow

/// A task in a layout-independent form.
struct CommonTask {
    /// Unique identity, used by references (1.x: name; 1.5: id).
    key: String,
    /// Another accepted identity (1.x: id), used only if unambiguous.
    alt_key: Option<String>,
    activity: String,
    parents: Vec<String>,
    children: Vec<String>,
    runtime: f64,
    input_bytes: f64,
    output_bytes: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Name,
    Id,
}

impl KeyKind {
    fn word(self) -> &'static str {
        match self {
            KeyKind::Name => "name",
            KeyKind::Id => "id",
        }
    }
}

fn split_layout(
    path: &Path,
    spec: Specification,
    exec: Option<Execution>,
) -> Result<Vec<CommonTask>, WorkflowError> {
    let mut sizes: HashMap<String, f64> = HashMap::new();
    for f in spec.files.unwrap_or_default() {
        // A file listed twice keeps its first size.
        sizes.entry(f.id).or_insert(f.size);
    }
    let mut runtimes: HashMap<String, f64> = HashMap::new();
    let spec_ids: HashMap<&str, ()> = spec.tasks.iter().map(|t| (t.id.as_str(), ())).collect();
    for t in exec.map(|e| e.tasks).unwrap_or_default() {
        if !spec_ids.contains_key(t.id.as_str()) {
            return Err(invalid(
                path,
                format!(
                    "workflow.execution.tasks: task \"{}\" is not in workflow.specification.tasks",
                    t.id
                ),
            ));
        }
        if runtimes.insert(t.id.clone(), t.runtime).is_some() {
            return Err(invalid(
                path,
                format!("workflow.execution.tasks: task \"{}\" appears twice", t.id),
            ));
        }
    }
    let sum = |task: &str, field: &str, ids: &[String]| -> Result<f64, WorkflowError> {
        let mut total = 0.0;
        for id in ids {
            match sizes.get(id) {
                Some(s) => total += s,
                None => {
                    return Err(invalid(
                        path,
                        format!(
                            "task \"{task}\": {field}: file \"{id}\" is not in workflow.specification.files"
                        ),
                    ));
                }
            }
        }
        Ok(total)
    };
    let mut out = Vec::with_capacity(spec.tasks.len());
    for t in spec.tasks {
        let Some(&runtime) = runtimes.get(&t.id) else {
            return Err(invalid(
                path,
                format!(
                    "task \"{}\": runtimeInSeconds: missing (no entry in workflow.execution.tasks)",
                    t.id
                ),
            ));
        };
        let input_bytes = sum(&t.id, "inputFiles", t.input_files.as_deref().unwrap_or_default())?;
        let output_bytes = sum(
            &t.id,
            "outputFiles",
            t.output_files.as_deref().unwrap_or_default(),
        )?;
        let activity = match (t.category, &t.name) {
            (Some(c), _) if !c.is_empty() => c,
            (_, Some(n)) if !n.is_empty() => activity_from_name(n).to_string(),
            _ => activity_from_name(&t.id).to_string(),
        };
        out.push(CommonTask {
            key: t.id,
            alt_key: None,
            activity,
            parents: t.parents.unwrap_or_default(),
            children: t.children.unwrap_or_default(),
            runtime,
            input_bytes,
            output_bytes,
        });
    }
    Ok(out)
}

fn build(
    path: &Path,
    name: String,
    tasks: Vec<CommonTask>,
    by: KeyKind,
    opts: &LoadOptions,
) -> Result<Workflow, WorkflowError> {
    if tasks.is_empty() {
        return Err(invalid(path, "workflow: no tasks"));
    }
    if u32::try_from(tasks.len()).is_err() {
        return Err(invalid(
            path,
            format!("workflow: too many tasks ({})", tasks.len()),
        ));
    }
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        if index.insert(t.key.as_str(), i).is_some() {
            return Err(invalid(
                path,
                format!(
                    "task \"{}\": {}: two tasks have this {}",
                    t.key,
                    by.word(),
                    by.word()
                ),
            ));
        }
    }
    // Secondary identities (1.x ids) that are unambiguous and not someone's name.
    let mut alt: HashMap<&str, Option<usize>> = HashMap::new();
    for (i, t) in tasks.iter().enumerate() {
        if let Some(a) = t.alt_key.as_deref() {
            alt.entry(a).and_modify(|v| *v = None).or_insert(Some(i));
        }
    }
    let resolve = |r: &str| index.get(r).copied().or_else(|| alt.get(r).copied().flatten());

    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for (i, t) in tasks.iter().enumerate() {
        for p in &t.parents {
            let Some(j) = resolve(p) else {
                return Err(invalid(
                    path,
                    format!("task \"{}\": parent \"{p}\" is not a task of the workflow", t.key),
                ));
            };
            parents[i].push(j);
        }
        for c in &t.children {
            let Some(j) = resolve(c) else {
                return Err(invalid(
                    path,
                    format!("task \"{}\": child \"{c}\" is not a task of the workflow", t.key),
                ));
            };
            parents[j].push(i);
        }
    }
    for ps in &mut parents {
        ps.sort_unstable();
        ps.dedup();
    }
    let order = stable_topo_order(&parents).map_err(|cycle| {
        invalid(
            path,
            format!(
                "task \"{}\": dependency cycle: {}",
                tasks[cycle.first().copied().unwrap_or(0)].key,
                describe_cycle(|i| tasks[i].key.as_str(), &cycle)
            ),
        )
    })?;
    let mut new_index = vec![0u32; tasks.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }

    let bw = opts.bandwidth_bytes_per_s;
    let mut activities: Vec<String> = Vec::new();
    let mut activity_index: HashMap<String, u32> = HashMap::new();
    let mut tasks: Vec<Option<CommonTask>> = tasks.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(order.len());
    for &old in &order {
        let Some(t) = tasks[old].take() else { continue };
        let activity = match activity_index.get(&t.activity) {
            Some(&a) => a,
            None => {
                let a = activities.len() as u32;
                activity_index.insert(t.activity.clone(), a);
                activities.push(t.activity.clone());
                a
            }
        };
        let mut ps: Vec<u32> = parents[old].iter().map(|&p| new_index[p]).collect();
        ps.sort_unstable();
        out.push(WfTask {
            name: t.key,
            activity,
            parents: ps,
            phases: [
                opts.setup,
                secs_to_time(t.input_bytes / bw),
                secs_to_time(t.runtime),
                secs_to_time(t.output_bytes / bw),
            ],
        });
    }
    Ok(Workflow {
        name,
        activities,
        tasks: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_core::Time;

    fn load(text: &str) -> Result<Workflow, WorkflowError> {
        parse_json(Path::new("x.json"), text.as_bytes(), &LoadOptions::default())
    }

    #[test]
    fn v14_with_children_only_and_unsorted_file() {
        let w = load(
            r#"{"name": "t", "schemaVersion": "1.4", "workflow": {"tasks": [
              {"name": "b_ID2", "id": "ID2", "runtimeInSeconds": 2.0004,
               "files": [{"link": "input", "name": "f", "sizeInBytes": 10000000}]},
              {"name": "a_ID1", "id": "ID1", "children": ["b_ID2", "b_ID2"], "runtimeInSeconds": 1,
               "files": [{"link": "output", "name": "f", "sizeInBytes": 5000000}]}
            ]}}"#,
        )
        .unwrap();
        assert_eq!(w.name, "t");
        assert_eq!(w.activities, ["a", "b"]);
        assert_eq!(w.tasks[0].name, "a_ID1");
        assert_eq!(w.tasks[1].parents, [0]);
        assert_eq!(
            w.tasks[0].phases,
            [Time::ZERO, Time::ZERO, Time::from_secs(1), Time::from_millis(500)]
        );
        assert_eq!(
            w.tasks[1].phases,
            [
                Time::ZERO,
                Time::from_secs(1),
                Time::from_millis(2000),
                Time::ZERO
            ]
        );
    }

    #[test]
    fn v10_jobs_with_runtime_size_and_id_references() {
        let w = load(
            r#"{"workflow": {"jobs": [
              {"name": "split_1", "id": "ID1", "runtime": 3, "files": [{"link": "input", "size": 20000000}]},
              {"name": "work_2", "parents": ["ID1"], "runtime": 4, "category": "compute"}
            ]}}"#,
        )
        .unwrap();
        assert_eq!(w.name, "x");
        assert_eq!(w.activities, ["split", "compute"]);
        assert_eq!(w.tasks[0].phases[1], Time::from_secs(2));
        assert_eq!(w.tasks[1].parents, [0]);
    }

    #[test]
    fn errors_name_the_file_and_the_place() {
        let e = load(r#"{"workflow": {"tasks": [{"name": "a"}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.json:1:"), "{e}");
        assert!(e.contains("task \"a\": runtimeInSeconds: missing"), "{e}");
        let e = load(r#"{"workflow": {"tasks": [{"name": "a", "runtime": -1}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime: must be a finite number ≥ 0"), "{e}");
        let e = load(r#"{"workflow": {"tasks": []}}"#).unwrap_err().to_string();
        assert_eq!(e, "x.json: workflow: no tasks");
        let e = load(r#"{"workflow": {}}"#).unwrap_err().to_string();
        assert!(e.contains("no task list"), "{e}");
        let e =
            load(r#"{"workflow": {"tasks": [{"name": "a", "runtime": 1}, {"name": "a", "runtime": 1}]}}"#)
                .unwrap_err()
                .to_string();
        assert!(e.contains("task \"a\": name: two tasks have this name"), "{e}");
        let e = load("{\n\"workflow\": [}").unwrap_err().to_string();
        assert!(e.starts_with("x.json:2:"), "{e}");
        let e =
            load(r#"{"workflow": {"tasks": [{"name": "a", "runtime": 1, "files": [{"link": "input"}]}]}}"#)
                .unwrap_err()
                .to_string();
        assert!(e.contains("files[0]: sizeInBytes: missing"), "{e}");
        let e = load(r#"{"workflow": {"tasks": [{"name": "a", "runtime": 1, "children": ["a"]}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("dependency cycle: \"a\" -> \"a\""), "{e}");
    }

    #[test]
    fn split_layout_errors() {
        let e = load(
            r#"{"workflow": {"specification": {"tasks": [{"id": "a", "inputFiles": ["nope"]}], "files": []},
               "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 1}]}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("task \"a\": inputFiles: file \"nope\" is not in workflow.specification.files"),
            "{e}"
        );
        let e = load(r#"{"workflow": {"specification": {"tasks": [{"id": "a"}]}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("task \"a\": runtimeInSeconds: missing"), "{e}");
        let e = load(
            r#"{"workflow": {"specification": {"tasks": [{"id": "a"}]},
               "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 1}, {"id": "b", "runtimeInSeconds": 1}]}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("task \"b\" is not in workflow.specification.tasks"),
            "{e}"
        );
        let e = load(
            r#"{"workflow": {"specification": {"tasks": [{"id": "a"}]},
               "execution": {"tasks": [{"id": "a"}]}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("x.json:2:") && e.contains("runtimeInSeconds: missing"),
            "{e}"
        );
    }

    #[test]
    fn file_stems() {
        assert_eq!(file_stem(Path::new("/a/b/montage-1.json.gz")), "montage-1");
        assert_eq!(file_stem(Path::new("w.json")), "w");
        assert_eq!(file_stem(Path::new("")), "workflow");
    }
}
