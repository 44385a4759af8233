//! Workflow files for `fairsched submit --workflow`: a TOML DAG of
//! `[[task]]` tables, or a WfCommons trace whose activities get their
//! commands from `--command ACTIVITY=CMD` — checked (unique names, known
//! parents, no cycle) and sorted parents first, as the broker takes them.

use crate::ClientError;
use fairsched_proto::api::{MAX_TASKS_PER_SUBMIT, NewTask, WorkflowSpec};

fn usage(m: impl Into<String>) -> ClientError {
    ClientError::Usage(m.into())
}

fn file(m: impl Into<String>) -> ClientError {
    ClientError::File(m.into())
}

/// `--command ACTIVITY=CMD` flags, by activity.
pub fn activity_commands(flags: &[String]) -> Result<Vec<(String, String)>, ClientError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for f in flags {
        let Some((activity, cmd)) = f.split_once('=') else {
            return Err(usage(format!("--command `{f}`: expected ACTIVITY=CMD")));
        };
        let activity = activity.trim();
        if activity.is_empty() || cmd.trim().is_empty() {
            return Err(usage(format!(
                "--command `{f}`: expected ACTIVITY=CMD, both non-empty"
            )));
        }
        if out.iter().any(|(a, _)| a == activity) {
            return Err(usage(format!("--command: activity `{activity}` given twice")));
        }
        out.push((activity.to_string(), cmd.to_string()));
    }
    Ok(out)
}

/// One task of a TOML workflow file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DagTask {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    activity: Option<String>,
    #[serde(default)]
    after: Vec<String>,
    #[serde(default)]
    stage_in: Option<String>,
    #[serde(default)]
    stage_out: Option<String>,
    #[serde(default)]
    priority: Option<i64>,
}

/// A TOML workflow file: `name`, then `[[task]]` tables.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DagFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "task")]
    tasks: Vec<DagTask>,
}

/// A task's activity when it names none: its name without trailing
/// digits, `_`, `-` and `.` (`work-12` → `work`); the whole name if
/// nothing would be left.
pub fn default_activity(name: &str) -> &str {
    let a = name.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if a.is_empty() { name } else { a }
}

/// Reads `--workflow FILE`: a WfCommons trace (by its name `.json`,
/// `.json.gz` or `.gz`, or a content starting with `{` or gzip's magic
/// bytes) whose tasks get their activity's command from `commands`, or
/// else a TOML DAG. Tasks come out parents first, `after` holding indices.
pub fn workflow_file(
    path: &std::path::Path,
    commands: &[(String, String)],
) -> Result<(WorkflowSpec, Vec<NewTask>), ClientError> {
    use fairsched_trace::workflow::{LoadOptions, WorkflowSource};
    let lower = path.to_string_lossy().to_ascii_lowercase();
    let json = if lower.ends_with(".json") || lower.ends_with(".gz") {
        true
    } else if lower.ends_with(".toml") {
        false
    } else {
        let mut head = [0u8; 64];
        let n = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .map_err(|e| file(format!("--workflow {}: {e}", path.display())))?;
        let head = &head[..n];
        head.starts_with(&[0x1f, 0x8b]) || head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
    };
    if !json {
        return toml_workflow(path, commands);
    }
    let w = match WorkflowSource::load(path, &LoadOptions::default()).map_err(|e| file(e.to_string()))? {
        WorkflowSource::Trace(w) => w,
        WorkflowSource::Profile(_) => {
            return Err(file(format!(
                "{}: a workflow profile, not a DAG of tasks (give a TOML file of [[task]] tables or a WfCommons trace)",
                path.display()
            )));
        }
    };
    let missing: Vec<&str> = w
        .activities
        .iter()
        .filter(|a| !commands.iter().any(|(c, _)| c == *a))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "{}: give the command of every activity with --command ACTIVITY=CMD; missing: {}",
            path.display(),
            missing.join(", ")
        )));
    }
    if let Some((a, _)) = commands.iter().find(|(a, _)| !w.activities.contains(a)) {
        return Err(usage(format!(
            "--command {a}=…: {} has no activity `{a}` (it has {})",
            path.display(),
            w.activities.join(", ")
        )));
    }
    if w.tasks.len() > MAX_TASKS_PER_SUBMIT {
        return Err(file(format!(
            "{}: {} tasks; a workflow has at most {MAX_TASKS_PER_SUBMIT}",
            path.display(),
            w.tasks.len()
        )));
    }
    let tasks = w
        .tasks
        .iter()
        .map(|t| {
            let activity = &w.activities[t.activity as usize];
            let cmd = &commands
                .iter()
                .find(|(a, _)| a == activity)
                .expect("checked above")
                .1;
            NewTask {
                command: cmd.replace("{name}", &t.name),
                name: Some(t.name.clone()),
                activity: Some(t.activity),
                after: t.parents.clone(),
                ..NewTask::default()
            }
        })
        .collect();
    Ok((
        WorkflowSpec {
            name: w.name,
            activities: w.activities,
        },
        tasks,
    ))
}

/// A TOML DAG (see [`workflow_file`]), checked: unique names, known
/// parents, no cycle; sorted parents first (file order among tasks ready
/// together).
fn toml_workflow(
    path: &std::path::Path,
    commands: &[(String, String)],
) -> Result<(WorkflowSpec, Vec<NewTask>), ClientError> {
    let p = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| file(format!("--workflow {p}: {e}")))?;
    let dag: DagFile = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(":{}", fairsched_trace::toml_key::line_of(&text, s.start)))
            .unwrap_or_default();
        file(format!("{p}{at}: {}", e.message().trim()))
    })?;
    let file_ = dag;
    if file_.tasks.is_empty() {
        return Err(file(format!(
            "{p}: no task (a workflow is `[[task]]` tables with a `name` and a `command`)"
        )));
    }
    if file_.tasks.len() > MAX_TASKS_PER_SUBMIT {
        return Err(file(format!(
            "{p}: {} tasks; a workflow has at most {MAX_TASKS_PER_SUBMIT}",
            file_.tasks.len()
        )));
    }
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, t) in file_.tasks.iter().enumerate() {
        if t.name.trim().is_empty() {
            return Err(file(format!("{p}: task #{}: empty name", i + 1)));
        }
        if index.insert(t.name.as_str(), i).is_some() {
            return Err(file(format!(
                "{p}: task \"{}\": two tasks have this name",
                t.name
            )));
        }
    }
    // Parents by index, checked.
    let mut parents: Vec<Vec<usize>> = Vec::with_capacity(file_.tasks.len());
    for t in &file_.tasks {
        let mut ps = Vec::with_capacity(t.after.len());
        for a in &t.after {
            match index.get(a.as_str()) {
                Some(&j) => ps.push(j),
                None => {
                    return Err(file(format!(
                        "{p}: task \"{}\": after: \"{a}\" is not a task of the workflow",
                        t.name
                    )));
                }
            }
        }
        ps.sort_unstable();
        ps.dedup();
        parents.push(ps);
    }
    // Topological order (Kahn), the file's order among ready tasks.
    let n = file_.tasks.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pending: Vec<usize> = parents.iter().map(Vec::len).collect();
    for (i, ps) in parents.iter().enumerate() {
        for &j in ps {
            children[j].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &c in &children[i] {
            pending[c] -= 1;
            if pending[c] == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() < n {
        // A cycle among the tasks left: follow parents until one repeats.
        let start = (0..n).find(|&i| pending[i] > 0).expect("a task is left");
        let mut path = vec![start];
        let mut at = start;
        loop {
            at = *parents[at]
                .iter()
                .find(|&&j| pending[j] > 0)
                .expect("a task left has a parent left");
            if let Some(k) = path.iter().position(|&x| x == at) {
                // `path` follows parents: reversed, each runs after the one before.
                let mut cycle: Vec<&str> = path[k..]
                    .iter()
                    .rev()
                    .map(|&i| file_.tasks[i].name.as_str())
                    .collect();
                cycle.push(cycle[0]);
                return Err(file(format!(
                    "{p}: task \"{}\": a cycle of dependencies: {} (each runs after the one before it)",
                    file_.tasks[at].name,
                    cycle.join(" → ")
                )));
            }
            path.push(at);
        }
    }
    let mut position = vec![0u32; n];
    for (k, &i) in order.iter().enumerate() {
        position[i] = k as u32;
    }
    let mut activities: Vec<String> = Vec::new();
    let mut tasks = Vec::with_capacity(n);
    let mut missing: Vec<String> = Vec::new();
    for &i in &order {
        let t = &file_.tasks[i];
        let activity = t
            .activity
            .clone()
            .unwrap_or_else(|| default_activity(&t.name).to_string());
        let a = match activities.iter().position(|x| *x == activity) {
            Some(a) => a,
            None => {
                activities.push(activity.clone());
                activities.len() - 1
            }
        };
        let command = match (&t.command, commands.iter().find(|(x, _)| *x == activity)) {
            (Some(c), _) => c.clone(),
            (None, Some((_, c))) => c.clone(),
            (None, None) => {
                if !missing.contains(&activity) {
                    missing.push(activity.clone());
                }
                String::new()
            }
        };
        if command.trim().is_empty() && t.command.is_some() {
            return Err(file(format!("{p}: task \"{}\": command: empty", t.name)));
        }
        let mut after: Vec<u32> = parents[i].iter().map(|&j| position[j]).collect();
        after.sort_unstable();
        tasks.push(NewTask {
            command: command.replace("{name}", &t.name),
            name: Some(t.name.clone()),
            stage_in: t.stage_in.clone(),
            stage_out: t.stage_out.clone(),
            priority: t.priority,
            activity: Some(a as u32),
            after,
            ..NewTask::default()
        });
    }
    if !missing.is_empty() {
        return Err(usage(format!(
            "{p}: tasks without a `command`, and no --command ACTIVITY=CMD for their activity: {}",
            missing.join(", ")
        )));
    }
    if let Some((a, _)) = commands.iter().find(|(a, _)| !activities.contains(a)) {
        return Err(usage(format!(
            "--command {a}=…: {p} has no activity `{a}` (it has {})",
            activities.join(", ")
        )));
    }
    let name = file_.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workflow".into())
    });
    Ok((WorkflowSpec { name, activities }, tasks))
}
