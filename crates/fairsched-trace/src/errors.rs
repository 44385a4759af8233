//! The crate's error type: every failure names the file and, where it applies, the line and field.

use std::io;
use std::path::PathBuf;

/// Convenience alias used throughout the crate.
pub type Result<T, E = TraceError> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, writing or transforming a trace.
///
/// No function of this crate panics on user input: malformed lines, truncated archives and
/// bad transform parameters all come back as one of these variants.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The operating system refused to open, read or write `path`.
    #[error("{}: {source}", path.display())]
    Io {
        /// File (or stream name) being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// One field of a job line is not a valid number.
    ///
    /// Displays as `HPC2N.swf:1234: field 4 (run_time): "abc" is not a number`.
    #[error("{}:{line}: field {index} ({field}): \"{value}\" {reason}", path.display())]
    Parse {
        /// File (or stream name).
        path: PathBuf,
        /// 1-based physical line number (comments and blank lines count).
        line: u64,
        /// SWF field name, e.g. `"run_time"` (see [`crate::FIELD_NAMES`]).
        field: &'static str,
        /// 1-based SWF field number (1..=18).
        index: u8,
        /// The offending text (truncated to 80 characters).
        value: String,
        /// Why it was rejected, e.g. `is not a number`, `is not an integer`, `is out of range`.
        reason: String,
    },

    /// A job line does not have exactly 18 fields.
    #[error("{}:{line}: expected 18 fields, found {found}", path.display())]
    FieldCount {
        /// File (or stream name).
        path: PathBuf,
        /// 1-based physical line number.
        line: u64,
        /// Number of whitespace-separated fields on the line.
        found: usize,
    },

    /// The (gzip) stream ended in the middle: the file is truncated.
    #[error(
        "{}: compressed stream ended early (truncated file?) after line {line}",
        path.display()
    )]
    Truncated {
        /// File (or stream name).
        path: PathBuf,
        /// The last complete line read before the stream ended.
        line: u64,
    },

    /// A line is longer than the reader accepts (the input is probably not a text file).
    #[error("{}:{line}: line longer than {limit} bytes (not an SWF text file?)", path.display())]
    LineTooLong {
        /// File (or stream name).
        path: PathBuf,
        /// 1-based physical line number.
        line: u64,
        /// The limit in bytes.
        limit: usize,
    },

    /// Submit times went backwards in a stream that a previous scan found monotone
    /// (the file changed between the two passes, or the scan belongs to another file).
    #[error(
        "{}: job {job} submitted at {submit} s, before the previous job ({previous} s), \
         but the scan said submits were monotone",
        path.display()
    )]
    Unsorted {
        /// File (or stream name).
        path: PathBuf,
        /// Job number of the out-of-order job.
        job: u64,
        /// Its submit time.
        submit: i64,
        /// The largest submit time seen before it.
        previous: i64,
    },

    /// A transform or option was given an impossible parameter
    /// (e.g. Zipf ownership with more organizations than processors).
    #[error("invalid parameter: {0}")]
    Config(String),
}

impl TraceError {
    /// The file this error is about, if any.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            TraceError::Io { path, .. }
            | TraceError::Parse { path, .. }
            | TraceError::FieldCount { path, .. }
            | TraceError::Truncated { path, .. }
            | TraceError::LineTooLong { path, .. }
            | TraceError::Unsorted { path, .. } => Some(path),
            TraceError::Config(_) => None,
        }
    }

    /// True for per-line problems that lenient reading skips (bad numbers, wrong field count).
    pub fn is_line_error(&self) -> bool {
        matches!(self, TraceError::Parse { .. } | TraceError::FieldCount { .. })
    }
}
