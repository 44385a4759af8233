//! What the command line shows of the broker's replies: the task list of
//! `status --tasks` and the lines of `explain`.

use fairsched_proto::api::TasksReply;

/// `s` cut to `width` characters, `…` marking a cut.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` in lines of at most `width` characters, broken at spaces where it
/// can be (a word longer than a line is cut).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let gap = usize::from(used > 0);
            if used + gap + word.len() <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // Alone on its line and still too long: cut it.
            let rest = word.split_off(width);
            lines.push(word.into_iter().collect());
            word = rest;
        }
    }
    lines.push(line);
    lines
}

/// The `status --tasks` table: a header, then a line per task. A `user`
/// column when the list names users (the admin's), a `reason` column
/// when some task has a reason, wrapped to fit `width` (its further lines
/// under the column).
pub fn task_table(t: &TasksReply, width: usize) -> Vec<String> {
    let users = !t.users.is_empty();
    let reasons = t.tasks.iter().any(|t| t.reason.is_some());
    let user_of = |u: i64| t.users.get(&u).cloned().unwrap_or_else(|| u.to_string());
    let user_w = t
        .tasks
        .iter()
        .map(|x| user_of(x.user).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 16);
    // With a reason after it, the name gets a column of its own.
    let name_w = t
        .tasks
        .iter()
        .map(|x| x.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 24);
    let row = |id: &str, state: &str, attempts: &str, exit: &str, user: &str, name: &str, reason: &str| {
        let mut l = format!("{id:>8}  {state:<10} {attempts:>8} {exit:>5}  ");
        if users {
            l.push_str(&format!("{:<user_w$}  ", fit(user, user_w)));
        }
        if reasons {
            l.push_str(&format!("{:<name_w$}  ", fit(name, name_w)));
            let indent = l.chars().count();
            let room = width.saturating_sub(indent).max(20);
            let mut lines = wrap(reason, room).into_iter();
            l.push_str(&lines.next().unwrap_or_default());
            let mut out = vec![l.trim_end().to_string()];
            out.extend(lines.map(|more| format!("{:indent$}{more}", "")));
            out
        } else {
            l.push_str(name);
            vec![l.trim_end().to_string()]
        }
    };
    let mut out = row("id", "state", "attempts", "exit", "user", "name", "reason");
    for x in &t.tasks {
        let exit = match (x.exit_code, x.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "-".into(),
        };
        out.extend(row(
            &x.id.to_string(),
            &x.state,
            &x.attempts.to_string(),
            &exit,
            &user_of(x.user),
            &x.name,
            x.reason.as_deref().unwrap_or(""),
        ));
    }
    out
}

/// A number as JSON has it, to 3 decimals at most (`12.5`, `3`).
fn num(v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(x) if v.is_f64() => {
            let s = format!("{x:.3}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        _ => v.to_string(),
    }
}

/// `explain`'s text: the line saying why, then `key: value` lines of what
/// the broker sent (`explain --json` prints all of it).
pub fn explain_text(id: u64, v: &serde_json::Value) -> Vec<String> {
    let mut out = vec![format!(
        "task {id}: {}",
        v["why"].as_str().unwrap_or("(the broker says nothing)")
    )];
    let mut line = |k: &str, val: String| {
        let key = if k.is_empty() {
            String::new()
        } else {
            format!("{k}:")
        };
        out.push(format!("{key:<13} {val}"));
    };
    let state = v["state"].as_str().unwrap_or("?");
    let mut st = state.to_string();
    if let Some(p) = v.get("priority").filter(|p| !p.is_null()) {
        st.push_str(&format!(", priority {}", num(p)));
    }
    if let Some(n) = v.get("attempts").and_then(|n| n.as_u64()) {
        st.push_str(&format!(", run {n}"));
    }
    if let Some(w) = v.get("worker").filter(|w| !w.is_null()) {
        st.push_str(&format!(", on worker {}", num(w)));
    }
    line("state", st);
    if let Some(r) = v.get("reason").and_then(|r| r.as_str()) {
        line("reason", r.to_string());
    }
    let p = &v["policy"];
    if let Some(order) = p["order"].as_str() {
        let mut s = order.to_string();
        if let Some(c) = p["control"].as_str() {
            s.push_str(&format!(", control {c}"));
        }
        if let Some(al) = p["allocate"].as_str().filter(|a| *a != "single-pool") {
            s.push_str(&format!(", allocate {al}"));
        }
        line("policy", s);
    }
    if let Some(w) = v.get("waiting_for").and_then(|w| w.as_array())
        && !w.is_empty()
    {
        let ids: Vec<String> = w.iter().map(num).collect();
        line("waiting for", format!("task(s) {}", ids.join(", ")));
    }
    if let Some(ahead) = v.get("ahead_by_priority_then_fifo") {
        line(
            "queue",
            format!(
                "{} waiting task(s) ahead by priority then submission order ({} of the same user), {} submitted before it",
                num(ahead),
                num(&v["ahead_of_same_user"]),
                num(&v["ahead_in_submission_order"])
            ),
        );
    }
    if let Some(slots) = v.get("slots") {
        line(
            "slots",
            format!("{} in all, {} free", num(slots), num(&v["free_slots"])),
        );
    }
    let org = match (v.get("org_name").and_then(|n| n.as_str()), v.get("org")) {
        (Some(n), _) => Some(n.to_string()),
        (None, Some(o)) if !o.is_null() => Some(format!("#{}", num(o))),
        _ => None,
    };
    if let Some(org) = org {
        let mut s = org;
        if let Some(n) = v.get("org_slots") {
            s.push_str(&format!(
                ": contributes {} slot(s), runs {} task(s)",
                num(n),
                num(&v["org_running"])
            ));
        }
        line("organization", s);
    }
    if let Some(n) = v.get("user_running") {
        line("user", format!("runs {} task(s)", num(n)));
    }
    if let Some(f) = v.get("fairness").and_then(|f| f.as_object()) {
        let mut first = true;
        for (k, x) in f {
            let val = match x.as_object() {
                Some(m) => m
                    .iter()
                    .map(|(o, y)| format!("{o} {}", num(y)))
                    .collect::<Vec<_>>()
                    .join(", "),
                None => num(x),
            };
            line(if first { "fairness" } else { "" }, format!("{k} = {val}"));
            first = false;
        }
    }
    match v.get("user_satisfaction") {
        Some(s) if !s.is_null() => line(
            "satisfaction",
            format!(
                "{} (the slot-time its user's runs got over the slot-time it deserved)",
                num(s)
            ),
        ),
        Some(_) => line("satisfaction", "- (nothing deserved yet)".into()),
        None => {}
    }
    if let Some(w) = v.get("workflow").filter(|w| !w.is_null()) {
        line("workflow", num(w));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn reasons_wrap_at_spaces_and_long_words_are_cut() {
        assert_eq!(
            wrap("the exec phase failed (exit 3)", 10),
            ["the exec", "phase", "failed", "(exit 3)"]
        );
        assert_eq!(wrap("short", 10), ["short"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("abcdefghijkl mn", 5), ["abcde", "fghij", "kl mn"]);
        // Every character kept, none past the width.
        let text = "parent task 12 failed: the exec phase failed (exit 3) on worker w1";
        let lines = wrap(text, 16);
        assert!(lines.iter().all(|l| l.chars().count() <= 16), "{lines:?}");
        assert_eq!(lines.join(" "), text);
    }
}
