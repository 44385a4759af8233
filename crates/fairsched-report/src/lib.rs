//! # fairsched-report
//!
//! Results as tables (aligned text, CSV, JSON) and the per-task CSV sink.

pub mod aggregates;
pub mod table;
pub mod tasks_csv;

pub use table::{Align, Table, fixed};
pub use tasks_csv::{TASK_COLUMNS, TasksCsv};
