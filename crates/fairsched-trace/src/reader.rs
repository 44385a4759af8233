//! [`SwfReader`]: streamed SWF parsing from a file (plain or gzip) or any [`Read`].

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use flate2::bufread::MultiGzDecoder;
use memchr::memchr;

use crate::errors::{Result, TraceError};
use crate::header::{HeaderWarning, SwfHeader};
use crate::parse::{LineError, is_ws, parse_job_line};
use crate::record::{FIELD_NAMES, SwfJob};

/// Initial buffer size; a chunk this large is read at a time (the file's
/// buffer too). 64 KiB parses as fast as 256 KiB (a refill copies only the
/// partial line at the end) and keeps a run's reading buffers small.
const CHUNK: usize = 64 * 1024;
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
/// * a job line must have exactly 18 fields, each a number, the submit time (field 2) not
///   negative, no time field above [`crate::MAX_SECONDS`] and no processor count above
///   [`crate::MAX_JOB_PROCS`];
/// * a `; Key: value` line whose key is a well-known numeric one (`MaxProcs`, `MaxNodes`,
///   `MaxJobs`, `MaxRecords`, `UnixStartTime`, `TimeZone`) but whose value is not a valid
///   number for it is kept in [`SwfHeader::other`] and reported in
///   [`SwfReader::header_warnings`] (naming its line), not an error: archive logs are
///   real-world files, and the caller decides what to use instead.
///
/// Memory is one chunk buffer (64 KiB, more only for a longer line), whatever the
/// file size (plus, for a gzip file, the decoder's few chunks in flight: see
/// [`SwfReader::open`]). Lines are parsed straight from the buffer (no per-line
/// allocation, no UTF-8 validation except in comments and error messages).
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
    header_warnings: Vec<HeaderWarning>,
}

impl SwfReader<FileSource> {
    /// Opens a file, strict mode. Gzip is detected from the magic bytes (`1f 8b`), not the
    /// name; concatenated gzip members are read in full. A gzip file is decompressed on a
    /// thread of its own, `GZ_AHEAD` chunks ahead of the parser (the same bytes: on a
    /// machine with a core to spare, decompression costs no wall time), or inline if no
    /// thread can be started.
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
        let gzipped = head.starts_with(&[0x1f, 0x8b]);
        // Named .gz but not gzip: most often a download that saved an
        // error page; read as text it would fail as "expected 18 fields".
        if !gzipped && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")) {
            let shown: String = String::from_utf8_lossy(&head[..head.len().min(40)])
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            return Err(io_err(io::Error::other(format!(
                "named .gz but not gzip-compressed (it begins {:?}): an incomplete download, or a \
                 plain-text log to rename without .gz",
                shown.trim_end()
            ))));
        }
        let source: FileSource = if gzipped {
            Ahead::spawn(MultiGzDecoder::new(buffered))
        } else {
            Box::new(buffered)
        };
        Ok(SwfReader::with_options(path, source, options))
    }
}

/// Chunks a gzip file's decoder thread may hold decompressed ahead of the
/// parser (each [`GZ_CHUNK`] bytes).
pub const GZ_AHEAD: usize = 4;
/// Bytes a gzip file's decoder thread sends at a time: small, so that the
/// chunks in flight (a few hundred KiB in all) stay small beside a run.
const GZ_CHUNK: usize = 64 * 1024;

/// A reader whose source is read on another thread: chunks come through
/// a bounded channel and their buffers go back for reuse. The thread ends
/// at the end of the source, at its first error (passed on, then the
/// end), or when this side is dropped.
struct Ahead {
    chunks: Receiver<io::Result<Vec<u8>>>,
    recycle: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Ahead {
    /// `source` read on a thread of its own; read here directly if the
    /// thread cannot be started.
    fn spawn<R: Read + Send + 'static>(source: R) -> FileSource {
        let (send, chunks) = sync_channel::<io::Result<Vec<u8>>>(GZ_AHEAD);
        let (recycle, returned) = sync_channel::<Vec<u8>>(GZ_AHEAD + 2);
        let source = std::sync::Arc::new(std::sync::Mutex::new(Some(source)));
        let theirs = std::sync::Arc::clone(&source);
        let started = std::thread::Builder::new()
            .name("swf-gunzip".into())
            .spawn(move || {
                let Some(mut source) = theirs.lock().ok().and_then(|mut s| s.take()) else {
                    return;
                };
                loop {
                    let mut buf = returned.try_recv().unwrap_or_default();
                    buf.resize(GZ_CHUNK, 0);
                    let mut filled = 0;
                    let result = loop {
                        match source.read(&mut buf[filled..]) {
                            Ok(0) => break Ok(()),
                            Ok(n) => {
                                filled += n;
                                if filled == buf.len() {
                                    break Ok(());
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => break Err(e),
                        }
                    };
                    buf.truncate(filled);
                    let last = filled < GZ_CHUNK || result.is_err();
                    if filled > 0 && send.send(Ok(buf)).is_err() {
                        return; // the reader is gone
                    }
                    if let Err(e) = result {
                        let _ = send.send(Err(e));
                        return;
                    }
                    if last {
                        return;
                    }
                }
            });
        match started {
            Ok(_) => Box::new(Ahead {
                chunks,
                recycle,
                current: Vec::new(),
                pos: 0,
                done: false,
            }),
            // No thread: the source is still here, read it inline.
            Err(_) => match source.lock().ok().and_then(|mut s| s.take()) {
                Some(source) => Box::new(source),
                None => Box::new(io::empty()),
            },
        }
    }
}

impl Read for Ahead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.current.len() {
            if self.done {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Ok(chunk)) => {
                    let used = std::mem::replace(&mut self.current, chunk);
                    let _ = self.recycle.try_send(used);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // The thread ended: the source is exhausted.
                Err(_) => self.done = true,
            }
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
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
            header_warnings: Vec::new(),
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

    /// Header lines read so far whose value was not used (see [`HeaderWarning`]): the
    /// first of each key, in file order (so at most one per well-known numeric key).
    pub fn header_warnings(&self) -> &[HeaderWarning] {
        &self.header_warnings
    }

    /// Absorbs the comment `text` of line [`SwfReader::lines`] into the header.
    fn comment(&mut self, text_at: (usize, usize)) {
        let Some((key, value, reason)) = self.header.absorb_comment(&self.buf[text_at.0..text_at.1]) else {
            return;
        };
        if self
            .header_warnings
            .iter()
            .any(|w| w.key.eq_ignore_ascii_case(&key))
        {
            return;
        }
        let mut value = value;
        if value.chars().count() > 80 {
            value = value.chars().take(79).chain(['…']).collect();
        }
        self.header_warnings.push(HeaderWarning {
            path: self.path.clone(),
            line: self.lines,
            key,
            value,
            reason: reason.to_string(),
        });
    }

    /// Whether malformed lines are skipped.
    pub fn is_lenient(&self) -> bool {
        self.lenient
    }

    /// Reads the comment and blank lines before the next job line (at the
    /// start: the header, as logs write it), leaving that line to
    /// [`SwfReader::next_job`].
    pub fn read_header(&mut self) -> Result<()> {
        if self.failed {
            return Ok(());
        }
        loop {
            let (start, end) = match self.next_line() {
                Ok(Some(range)) => range,
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            };
            let line = &self.buf[start..end];
            match line.iter().position(|&b| !is_ws(b)) {
                None => self.lines += 1,
                Some(first) if line[first] == b';' => {
                    self.lines += 1;
                    self.comment((start + first + 1, end));
                }
                Some(_) => {
                    // A job line: read again by `next_job`.
                    self.pos = start;
                    return Ok(());
                }
            }
        }
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
            if line[first] == b';' {
                self.comment((start + first + 1, end));
                continue;
            }
            let line = &line[first..];
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` bytes of a counter, in reads of odd sizes, then an error of
    /// kind `fail` (if any) instead of the end.
    struct Odd {
        at: usize,
        len: usize,
        fail: Option<io::ErrorKind>,
    }

    impl Read for Odd {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.at == self.len {
                return match self.fail {
                    Some(kind) => Err(io::Error::new(kind, "broken")),
                    None => Ok(0),
                };
            }
            let n = out.len().min(self.len - self.at).min(1 + self.at % 7919);
            for (i, b) in out[..n].iter_mut().enumerate() {
                *b = ((self.at + i) % 251) as u8;
            }
            self.at += n;
            Ok(n)
        }
    }

    fn read_all(r: &mut FileSource, step: usize) -> (Vec<u8>, Option<io::ErrorKind>) {
        let (mut got, mut buf) = (Vec::new(), vec![0; step]);
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return (got, Some(e.kind())),
            }
        }
    }

    /// The bytes come through the decoder thread unchanged, in order,
    /// whatever the sizes (empty, one chunk exactly, several and a bit),
    /// and an error comes after every byte read before it.
    #[test]
    fn read_ahead_passes_every_byte_then_the_error() {
        for len in [0, 1, GZ_CHUNK, GZ_CHUNK + 1, 3 * CHUNK + 12_345] {
            for fail in [None, Some(io::ErrorKind::UnexpectedEof)] {
                let mut r = Ahead::spawn(Odd { at: 0, len, fail });
                let (got, err) = read_all(&mut r, 100_000);
                assert_eq!(got.len(), len);
                assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
                assert_eq!(err, fail, "{len}");
                // After the end or the error: the end, for good.
                assert_eq!(r.read(&mut [0; 8]).unwrap(), 0);
            }
        }
    }

    /// A reader dropped half-way lets the thread end (its next send fails);
    /// a gzip file reads the same through the thread as decoded inline.
    #[test]
    fn a_gzip_file_reads_as_decoded_inline() {
        let mut text = Vec::new();
        for i in 0..40_000 {
            text.extend_from_slice(
                format!("{i} {} 0 10 1 -1 -1 1 10 -1 1 3 1 -1 -1 -1 -1 -1\n", i * 3).as_bytes(),
            );
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &text).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.swf.gz");
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let jobs: Vec<SwfJob> = SwfReader::open(&path).unwrap().collect::<Result<_>>().unwrap();
        let inline: Vec<SwfJob> = SwfReader::from_reader("log", &text[..])
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(jobs, inline);
        assert_eq!(jobs.len(), 40_000);
        let mut half = SwfReader::open(&path).unwrap();
        assert!(half.next_job().unwrap().is_some());
        drop(half);
    }
}
