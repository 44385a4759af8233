//! Two small files of a `simulate` run, beside `tasks.csv`:
//!
//! - `runs.csv`: one line per *interrupted* run of a task (stopped by the
//!   policy and requeued, its work lost), which `tasks.csv` (one line per
//!   task, its last run) does not show: `task,attempt,machine,slot,slots,
//!   start,stop`, `attempt` counting the task's runs from 1. Lines in the
//!   order tasks ended, a task's runs in order; the header alone when no
//!   run was interrupted. [`RunsCsv`] collects them while the run goes
//!   (they are rare: kept in memory).
//! - `fairness.csv` (with several organizations): each organization's ψ,
//!   and with `--phi` its φ and φ − ψ, at the first submit, at about 50
//!   evenly spaced instants after it and at the instant `summary.json`'s
//!   `fairness` is seen at (its last lines are that block's figures):
//!   [`fairness_csv`].

use crate::table::push_csv_line;
use fairsched_core::{EndRecord, Observer, TaskMeta, Time};

/// Column names of `runs.csv`; times are seconds as in `tasks.csv`.
pub const RUNS_COLUMNS: &str = "task,attempt,machine,slot,slots,start,stop";

/// Column names of `fairness.csv`: the instant (s), the organization's
/// index and name, ψ, φ and φ − ψ in s² (the last two empty without φ).
pub const FAIRNESS_COLUMNS: &str = "time_s,org,name,psi_s2,phi_s2,phi_minus_psi_s2";

/// Collects `runs.csv`.
#[derive(Debug)]
pub struct RunsCsv {
    text: String,
    pub rows: u64,
}

impl Default for RunsCsv {
    fn default() -> RunsCsv {
        RunsCsv {
            text: format!("{RUNS_COLUMNS}\n"),
            rows: 0,
        }
    }
}

impl RunsCsv {
    /// The file's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.text.into_bytes()
    }
}

impl Observer for RunsCsv {
    fn on_task(&mut self, r: &EndRecord, _meta: &TaskMeta) {
        use std::fmt::Write;
        for (i, a) in r.requeued.iter().enumerate() {
            let _ = writeln!(
                self.text,
                "{},{},{},{},{},{},{}",
                r.spec.id.0,
                i + 1,
                a.machine.0,
                a.slot.0,
                a.slots,
                a.start,
                a.stop
            );
            self.rows += 1;
        }
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

/// One line of `fairness.csv`.
#[derive(Clone, Copy, Debug)]
pub struct FairnessRow<'a> {
    pub at: Time,
    pub org: u32,
    pub name: &'a str,
    pub psi: f64,
    pub phi: Option<f64>,
}

/// The text of `fairness.csv`: numbers as Rust writes an `f64` (the
/// shortest text that reads back as the same value), so the last lines
/// read back exactly as `summary.json`'s figures.
pub fn fairness_csv<'a>(rows: impl IntoIterator<Item = FairnessRow<'a>>) -> String {
    let mut out = format!("{FAIRNESS_COLUMNS}\n");
    for r in rows {
        let num = |x: Option<f64>| x.map(|x| format!("{x}")).unwrap_or_default();
        let cells = [
            r.at.to_string(),
            r.org.to_string(),
            r.name.to_string(),
            num(Some(r.psi)),
            num(r.phi),
            num(r.phi.map(|p| p - r.psi)),
        ];
        push_csv_line(&mut out, cells.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairsched_core::{Attempt, AttemptEnd, MachineId, Outcome, SlotId, TaskSpec};

    #[test]
    fn interrupted_runs_are_lines_and_the_last_run_is_not() {
        let run = |s: i64, e: i64, end| Attempt {
            machine: MachineId(1),
            slot: SlotId(4),
            slots: 2,
            start: Time::from_millis(s),
            stop: Time::from_millis(e),
            end,
        };
        let rec = EndRecord {
            spec: TaskSpec::new(9, 3, 0).slots(2),
            submit: Time::ZERO,
            end: Time::from_secs(50),
            outcome: Outcome::Completed,
            machine: Some(MachineId(1)),
            requeued: vec![
                run(1000, 5500, AttemptEnd::Requeued),
                run(7000, 9000, AttemptEnd::Requeued),
            ],
            last: Some(run(20_000, 50_000, AttemptEnd::Completed)),
            phases: [None; 4],
        };
        let meta = TaskMeta {
            job: 9,
            runtime: None,
            log_status: None,
        };
        let mut c = RunsCsv::default();
        assert_eq!(
            String::from_utf8(RunsCsv::default().into_bytes()).unwrap(),
            format!("{RUNS_COLUMNS}\n")
        );
        c.on_task(&rec, &meta);
        assert_eq!(c.rows, 2);
        assert_eq!(
            String::from_utf8(c.into_bytes()).unwrap(),
            format!("{RUNS_COLUMNS}\n9,1,1,4,2,1,5.5\n9,2,1,4,2,7,9\n")
        );
    }

    #[test]
    fn fairness_lines_read_back_as_the_same_numbers() {
        let psi = 55_307_230_755.123_4_f64;
        let text = fairness_csv([
            FairnessRow {
                at: Time::from_millis(1500),
                org: 0,
                name: "a,b",
                psi,
                phi: Some(1e18 / 3.0),
            },
            FairnessRow {
                at: Time::from_secs(2),
                org: 1,
                name: "b",
                psi: 0.0,
                phi: None,
            },
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], FAIRNESS_COLUMNS);
        assert!(lines[1].starts_with("1.5,0,\"a,b\","), "{}", lines[1]);
        assert_eq!(lines[2], "2,1,b,0,,");
        let cells: Vec<&str> = lines[1].rsplitn(4, ',').collect();
        assert_eq!(cells[2].parse::<f64>().unwrap(), psi);
        assert_eq!(cells[1].parse::<f64>().unwrap(), 1e18 / 3.0);
    }
}
