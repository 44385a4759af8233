//! # fairsched-report
//!
//! Results as tables (aligned text, CSV, JSON), the per-task CSV sink, and
//! result files written atomically, SVG charts ([`plot`]), and Batsim's
//! `jobs.csv` ([`batsim`]).

pub mod aggregates;
pub mod batsim;
pub mod files;
pub mod html;
pub mod plot;
pub mod plot_sim;
pub mod report;
pub mod report_exp;
pub mod report_sim;
pub mod sim_files;
pub mod table;
pub mod tasks_csv;
pub mod timeline;

pub use batsim::{BATSIM_COLUMNS, BatsimJobs};
pub use files::{FileError, OutDir, OutError, PartialCleaner, RunDir, write_atomic};
pub use table::{Align, Table, fixed};
pub use tasks_csv::{TASK_COLUMNS, TaskColumns, TasksCsv};
