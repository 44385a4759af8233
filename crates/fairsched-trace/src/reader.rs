//! [`SwfReader`]: streamed SWF parsing from a file (plain or gzip) or any [`Read`].

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;
use memchr::memchr;

use crate::errors::{Result, TraceError};
use crate::header::SwfHeader;
use crate::parse::{LineError, is_ws, parse_job_line};
use crate::record::{FIELD_NAMES, SwfJob};

/// Initial buffer size; a chunk this large is read at a time.
const CHUNK: usize = 256 * 1024;
/// Longest accepted line; beyond it the input is not an SWF text.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// How many skipped-line errors [`SwfReader::skipped_examples`] keeps.
const KEEP_SKIPPED: usize = 5;

/// Reader options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Skip malformed job lines (bad number, wrong field count) and count them in
    /// [`SwfReader::bad_lines_skipped`] instead of returning an error. I/O errors and
    /// truncated archives are still errors.
    pub lenient: bool,
}

impl ReadOptions {
    /// Strict reading (the default).
    pub const STRICT: ReadOptions = ReadOptions { lenient: false };
    /// Lenient reading.
    pub const LENIENT: ReadOptions = ReadOptions { lenient: true };
}

/// The boxed source behind [`SwfReader::open`] (a file, possibly through a gzip decoder).
pub type FileSource = Box<dyn Read + Send>;

/// Streamed SWF reader: yields one [`SwfJob`] per job line.
///
/// * comments (`;`) may appear anywhere; `; Key: value` lines fill [`SwfReader::header`];
/// * blank and whitespace-only lines are skipped;
/// * fields are separated by any run of spaces/tabs; `\r\n` line ends are fine;
/// * a job line must have exactly 18 fields.
///
/// Memory is one chunk buffer (256 KiB, more only for an absurdly long line), whatever the
/// file size. Lines are parsed straight from the buffer (no per-line allocation, no UTF-8
/// validation except in comments and error messages).
///
/// Errors: per-line errors ([`TraceError::Parse`], [`TraceError::FieldCount`]) are returned
/// and the next call continues with the following line (or, when lenient, they are skipped
/// and counted); stream errors ([`TraceError::Io`], [`TraceError::Truncated`],
/// [`TraceError::LineTooLong`]) end the stream: later calls return `None`.
pub struct SwfReader<R> {
    inner: R,
    path: PathBuf,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    failed: bool,
    lenient: bool,
    header: SwfHeader,
    lines: u64,
    jobs: u64,
    bad_lines_skipped: u64,
    skipped: Vec<TraceError>,
}

impl SwfReader<FileSource> {
    /// Opens a file, strict mode. Gzip is detected from the magic bytes (`1f 8b`), not the
    /// name; concatenated gzip members are read in full.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, ReadOptions::default())
    }

    /// Opens a file with options.
    pub fn open_with(path: impl AsRef<Path>, options: ReadOptions) -> Result<Self> {
        let path = path.as_ref();
        let io_err = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        let mut buffered = BufReader::with_capacity(CHUNK, file);
        let head = buffered.fill_buf().map_err(io_err)?;
        let source: FileSource = if head.starts_with(&[0x1f, 0x8b]) {
            Box::new(MultiGzDecoder::new(buffered))
        } else {
            Box::new(buffered)
        };
        Ok(SwfReader::with_options(path, source, options))
    }
}

impl<R: Read> SwfReader<R> {
    /// Reads plain SWF text from any reader (strict mode); `name` is used in error messages.
    ///
    /// The reader is read in large chunks, so it need not be buffered. Wrap a compressed
    /// stream in a decoder yourself (an [`io::ErrorKind::UnexpectedEof`] from it is reported
    /// as [`TraceError::Truncated`]).
    pub fn from_reader(name: impl Into<PathBuf>, reader: R) -> Self {
        Self::with_options(name, reader, ReadOptions::default())
    }

    /// Like [`SwfReader::from_reader`], with options.
    pub fn with_options(name: impl Into<PathBuf>, reader: R, options: ReadOptions) -> Self {
        SwfReader {
            inner: reader,
            path: name.into(),
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            failed: false,
            lenient: options.lenient,
            header: SwfHeader::default(),
            lines: 0,
            jobs: 0,
            bad_lines_skipped: 0,
            skipped: Vec::new(),
        }
    }

    /// The file name given at construction.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Header keys seen so far (complete once the stream is exhausted).
    pub fn header(&self) -> &SwfHeader {
        &self.header
    }

    /// Physical lines read so far (comments and blank lines included).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Job lines successfully parsed so far.
    pub fn jobs(&self) -> u64 {
        self.jobs
    }

    /// Malformed lines skipped so far (lenient mode only).
    pub fn bad_lines_skipped(&self) -> u64 {
        self.bad_lines_skipped
    }

    /// The first few skipped-line errors (lenient mode), to show the user what was skipped.
    pub fn skipped_examples(&self) -> &[TraceError] {
        &self.skipped
    }

    /// Whether malformed lines are skipped.
    pub fn is_lenient(&self) -> bool {
        self.lenient
    }

    /// Next job, `Ok(None)` at the end of the stream.
    pub fn next_job(&mut self) -> Result<Option<SwfJob>> {
        if self.failed {
            return Ok(None);
        }
        loop {
            let (start, end) = match self.next_line() {
                Ok(Some(range)) => range,
                Ok(None) => return Ok(None),
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            };
            self.lines += 1;
            let line = &self.buf[start..end];
            let Some(first) = line.iter().position(|&b| !is_ws(b)) else {
                continue; // blank
            };
            let line = &line[first..];
            if line[0] == b';' {
                self.header.absorb_comment(&line[1..]);
                continue;
            }
            match parse_job_line(line) {
                Ok(job) => {
                    self.jobs += 1;
                    return Ok(Some(job));
                }
                Err(e) => {
                    let err = self.line_error(e, line);
                    if !self.lenient {
                        return Err(err);
                    }
                    self.bad_lines_skipped += 1;
                    if self.skipped.len() < KEEP_SKIPPED {
                        self.skipped.push(err);
                    }
                }
            }
        }
    }

    #[cold]
    fn line_error(&self, e: LineError, line: &[u8]) -> TraceError {
        match e {
            LineError::Count(found) => TraceError::FieldCount {
                path: self.path.clone(),
                line: self.lines,
                found,
            },
            LineError::Field {
                index,
                start,
                end,
                reason,
            } => {
                let mut value = String::from_utf8_lossy(&line[start..end]).into_owned();
                if value.chars().count() > 80 {
                    value = value.chars().take(79).chain(['…']).collect();
                }
                TraceError::Parse {
                    path: self.path.clone(),
                    line: self.lines,
                    field: FIELD_NAMES[index],
                    index: index as u8 + 1,
                    value,
                    reason: reason.to_string(),
                }
            }
        }
    }

    /// Next line as a range of `buf` (without the `\n`), refilling as needed.
    #[inline]
    fn next_line(&mut self) -> Result<Option<(usize, usize)>> {
        loop {
            if let Some(p) = memchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                self.pos = start + p + 1;
                return Ok(Some((start, start + p)));
            }
            if self.eof {
                if self.pos < self.end {
                    let start = self.pos;
                    self.pos = self.end;
                    return Ok(Some((start, self.end)));
                }
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Moves the partial line to the front and reads one more chunk.
    #[cold]
    fn fill(&mut self) -> Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_LINE {
                return Err(TraceError::LineTooLong {
                    path: self.path.clone(),
                    line: self.lines + 1,
                    limit: MAX_LINE,
                });
            }
            let new_len = (self.buf.len() * 2).min(MAX_LINE);
            self.buf.resize(new_len, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Err(TraceError::Truncated {
                        path: self.path.clone(),
                        line: self.lines,
                    });
                }
                Err(source) => {
                    return Err(TraceError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
            }
            return Ok(());
        }
    }
}

impl<R: Read> Iterator for SwfReader<R> {
    type Item = Result<SwfJob>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_job().transpose()
    }
}

impl<R> std::fmt::Debug for SwfReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwfReader")
            .field("path", &self.path)
            .field("lines", &self.lines)
            .field("jobs", &self.jobs)
            .field("bad_lines_skipped", &self.bad_lines_skipped)
            .field("lenient", &self.lenient)
            .finish_non_exhaustive()
    }
}
