//! [`SwfWriter`]: canonical SWF output (plain or gzip).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::errors::{Result, TraceError};
use crate::header::SwfHeader;
use crate::record::SwfJob;

enum Out<W: Write> {
    Plain(W),
    Gzip(Box<GzEncoder<W>>),
}

impl<W: Write> Write for Out<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(buf),
            Out::Gzip(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.write_all(buf),
            Out::Gzip(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            Out::Gzip(w) => w.flush(),
        }
    }
}

/// Writes SWF in canonical form: `; Key: value` header lines, then one line per job with
/// the 18 fields right-aligned and separated by spaces.
///
/// Float fields holding an integer value are written without decimals (`142.00` → `142`),
/// others with the shortest text that reads back to the same `f64`; a non-finite float is
/// written as `-1` (unknown). Call [`SwfWriter::finish`] at the end: it completes the gzip
/// stream and flushes (dropping the writer without it may lose the tail).
pub struct SwfWriter<W: Write> {
    out: Out<W>,
    path: PathBuf,
    line: String,
    jobs: u64,
}

impl SwfWriter<BufWriter<File>> {
    /// Creates (truncates) `path`; gzip-compressed if the name ends in `.gz`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let w = BufWriter::with_capacity(256 * 1024, file);
        let gz = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        Ok(if gz {
            SwfWriter::gzip(path, w)
        } else {
            SwfWriter::plain(path, w)
        })
    }
}

impl<W: Write> SwfWriter<W> {
    /// Plain text into `w`; `name` is used in error messages.
    pub fn plain(name: impl Into<PathBuf>, w: W) -> Self {
        Self::build(name.into(), Out::Plain(w))
    }

    /// Gzip-compressed text into `w`.
    pub fn gzip(name: impl Into<PathBuf>, w: W) -> Self {
        Self::build(
            name.into(),
            Out::Gzip(Box::new(GzEncoder::new(w, Compression::default()))),
        )
    }

    fn build(path: PathBuf, out: Out<W>) -> Self {
        SwfWriter {
            out,
            path,
            line: String::with_capacity(256),
            jobs: 0,
        }
    }

    fn io(&self, source: io::Error) -> TraceError {
        TraceError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes every header pair as `; Key: value` (see [`SwfHeader::pairs`] for the order).
    /// Line breaks inside keys or values are replaced by spaces.
    pub fn write_header(&mut self, header: &SwfHeader) -> Result<()> {
        for (k, v) in header.pairs() {
            self.write_comment(&format!("{}: {}", one_line(&k), one_line(&v)))?;
        }
        Ok(())
    }

    /// Writes one free-text comment line (`; text`).
    pub fn write_comment(&mut self, text: &str) -> Result<()> {
        let text = one_line(text);
        let line = if text.is_empty() {
            ";\n".to_string()
        } else {
            format!("; {text}\n")
        };
        self.out.write_all(line.as_bytes()).map_err(|e| self.io(e))
    }

    /// Writes one job line.
    pub fn write_job(&mut self, job: &SwfJob) -> Result<()> {
        use std::fmt::Write as _;
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        let int = |s: &mut String, width: usize, v: i64| {
            let _ = write!(s, "{v:>width$} ");
        };
        let float = |s: &mut String, width: usize, v: f64| {
            if !v.is_finite() {
                let _ = write!(s, "{:>width$} ", -1);
            } else if v.fract() == 0.0 && v.abs() < 1e15 {
                let _ = write!(s, "{:>width$} ", v as i64);
            } else {
                let _ = write!(s, "{v:>width$} ");
            }
        };
        int(&mut s, 6, job.job_number);
        int(&mut s, 8, job.submit_time);
        int(&mut s, 6, job.wait_time);
        int(&mut s, 6, job.run_time);
        int(&mut s, 4, job.allocated_procs);
        float(&mut s, 6, job.avg_cpu_time);
        float(&mut s, 5, job.used_memory);
        int(&mut s, 4, job.requested_procs);
        int(&mut s, 6, job.requested_time);
        float(&mut s, 5, job.requested_memory);
        int(&mut s, 2, job.status);
        int(&mut s, 4, job.user_id);
        int(&mut s, 3, job.group_id);
        int(&mut s, 3, job.executable);
        int(&mut s, 2, job.queue);
        int(&mut s, 2, job.partition);
        int(&mut s, 3, job.preceding_job);
        int(&mut s, 3, job.think_time);
        s.pop(); // trailing space
        s.push('\n');
        let written = self.out.write_all(s.as_bytes());
        self.line = s;
        written.map_err(|e| self.io(e))?;
        self.jobs += 1;
        Ok(())
    }

    /// Jobs written so far.
    pub fn jobs(&self) -> u64 {
        self.jobs
    }

    /// Completes the gzip stream (if any), flushes, and returns the underlying writer.
    pub fn finish(self) -> Result<W> {
        let path = self.path;
        let io = |source| TraceError::Io {
            path: path.clone(),
            source,
        };
        let mut w = match self.out {
            Out::Plain(w) => w,
            Out::Gzip(g) => g.finish().map_err(io)?,
        };
        w.flush().map_err(io)?;
        Ok(w)
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
