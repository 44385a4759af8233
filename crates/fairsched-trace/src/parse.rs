//! Hot path: one job line (a byte slice) to an [`SwfJob`], without allocating.
//!
//! The fast path handles what real logs contain (`-?digits` and, in float fields,
//! `-?digits.digits`); anything else (a `+` sign, `12.0` in an integer field, an exponent,
//! more than 18 digits, garbage) falls to a slow path that either accepts it with exact
//! semantics or explains why not.

use crate::record::{MAX_JOB_PROCS, MAX_SECONDS, SwfJob};

/// Field separators: space, tab, and the other ASCII whitespace (`\r` makes CRLF harmless).
#[inline(always)]
pub(crate) fn is_ws(b: u8) -> bool {
    b == b' ' || b.wrapping_sub(b'\t') < 5
}

/// Why a job line was rejected (positions are relative to the slice given to [`parse_job_line`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LineError {
    /// Not exactly 18 fields.
    Count(usize),
    /// Field `index` (0-based) at `start..end` is invalid.
    Field {
        index: usize,
        start: usize,
        end: usize,
        reason: &'static str,
    },
}

const POW10: [u64; 19] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    100_000_000_000,
    1_000_000_000_000,
    10_000_000_000_000,
    100_000_000_000_000,
    1_000_000_000_000_000,
    10_000_000_000_000_000,
    100_000_000_000_000_000,
    1_000_000_000_000_000_000,
];

/// Exact powers of ten as `f64` (10^0..=10^22 are all exactly representable).
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// Largest integer mantissa for which `m as f64 / 10^k` is correctly rounded (2^53).
const EXACT_MANTISSA: u64 = 1 << 53;

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
    field: usize,
}

impl<'a> Cursor<'a> {
    /// Skips separators; errors with the field count if the line ends first.
    #[inline(always)]
    fn start_token(&mut self) -> Result<usize, LineError> {
        let s = self.s;
        let mut i = self.i;
        while i < s.len() && is_ws(s[i]) {
            i += 1;
        }
        if i == s.len() {
            return Err(LineError::Count(self.field));
        }
        Ok(i)
    }

    #[inline(always)]
    fn token_end(&self, mut i: usize) -> usize {
        while i < self.s.len() && !is_ws(self.s[i]) {
            i += 1;
        }
        i
    }

    /// Reads `digits` starting at `i`: returns (value, end). Wrapping: callers bound the count.
    #[inline(always)]
    fn digits(&self, mut i: usize) -> (u64, usize) {
        let s = self.s;
        let mut v: u64 = 0;
        while i < s.len() {
            let d = s[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        (v, i)
    }

    #[inline(always)]
    fn at_separator(&self, i: usize) -> bool {
        i == self.s.len() || is_ws(self.s[i])
    }

    #[inline(always)]
    fn int(&mut self) -> Result<i64, LineError> {
        let start = self.start_token()?;
        let neg = self.s[start] == b'-';
        let ds = start + usize::from(neg);
        let (v, i) = self.digits(ds);
        let nd = i - ds;
        if nd == 0 || nd > 18 || !self.at_separator(i) {
            return self.slow(start, Kind::Int).map(|n| n.int);
        }
        self.i = i;
        self.field += 1;
        // nd <= 18 so v < 10^18 < i64::MAX
        let v = v as i64;
        Ok(if neg { -v } else { v })
    }

    #[inline(always)]
    fn float(&mut self) -> Result<f64, LineError> {
        let start = self.start_token()?;
        let neg = self.s[start] == b'-';
        let ds = start + usize::from(neg);
        let (mut v, mut i) = self.digits(ds);
        let mut nd = i - ds;
        let mut frac = 0;
        if i < self.s.len() && self.s[i] == b'.' {
            let (f, j) = self.digits(i + 1);
            frac = j - (i + 1);
            if frac <= 18 && nd <= 18 {
                v = v.wrapping_mul(POW10[frac]).wrapping_add(f);
            }
            nd += frac;
            i = j;
        }
        if nd == 0 || nd > 15 || !self.at_separator(i) {
            return self.slow(start, Kind::Float).map(|n| n.float);
        }
        debug_assert!(v < EXACT_MANTISSA && frac <= 22);
        self.i = i;
        self.field += 1;
        // Clinger's fast path: both operands exact, one correctly rounded division.
        let x = v as f64 / POW10_F64[frac];
        Ok(if neg { -x } else { x })
    }

    #[cold]
    #[inline(never)]
    fn slow(&mut self, start: usize, kind: Kind) -> Result<Num, LineError> {
        let end = self.token_end(start);
        let tok = &self.s[start..end];
        let parsed = match kind {
            Kind::Int => parse_int_slow(tok).map(|int| Num { int, float: 0.0 }),
            Kind::Float => parse_float_slow(tok).map(|float| Num { int: 0, float }),
        };
        match parsed {
            Ok(n) => {
                self.i = end;
                self.field += 1;
                Ok(n)
            }
            Err(reason) => Err(LineError::Field {
                index: self.field,
                start,
                end,
                reason,
            }),
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Float,
}

struct Num {
    int: i64,
    float: f64,
}

const NOT_A_NUMBER: &str = "is not a number";
const NOT_AN_INTEGER: &str = "is not an integer";
const OUT_OF_RANGE: &str = "is out of range";
/// Field 2 below -1. The Parallel Workloads Archive's definition of SWF
/// counts submit times in seconds from the log's start, "the earliest time
/// the log refers to is zero", and -1 means unknown in every field: a job
/// whose submit time is unknown is read (and dropped by the filters,
/// counted as `submit_unknown`); any other negative value breaks the format.
pub(crate) const NEGATIVE_SUBMIT: &str = "is negative: SWF submit times are seconds from the log's start (0 or \
                                          more, or -1 for unknown)";
/// A time field (2, 3, 4, 6, 9 or 18) above [`MAX_SECONDS`].
pub(crate) const TIME_TOO_LARGE: &str = "is more than 1000000000000 seconds (over 31,000 years): not a time an SWF \
                                         log holds";
/// A processor count (field 5 or 8) above [`MAX_JOB_PROCS`].
pub(crate) const PROCS_TOO_LARGE: &str = "is more than 4294967295 processors, the most a job can have";

/// Integer field, slow path: `[+-]digits[.zeros]`, or any finite integer-valued float
/// (`1e3`). Rejects fractions, overflow and non-numbers with a reason.
fn parse_int_slow(tok: &[u8]) -> Result<i64, &'static str> {
    let text = std::str::from_utf8(tok).map_err(|_| NOT_A_NUMBER)?;
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (int_part, frac_part) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let plain = all_digits(int_part)
        && frac_part.is_none_or(all_digits)
        && !(int_part.is_empty() && frac_part.is_none_or(str::is_empty));
    if plain {
        if frac_part.is_some_and(|f| f.bytes().any(|b| b != b'0')) {
            return Err(NOT_AN_INTEGER);
        }
        if int_part.is_empty() {
            return Ok(0);
        }
        // Accumulate negatively so that i64::MIN is representable.
        let mut v: i64 = 0;
        for b in int_part.bytes() {
            let d = i64::from(b - b'0');
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_sub(d))
                .ok_or(OUT_OF_RANGE)?;
        }
        return if neg {
            Ok(v)
        } else {
            v.checked_neg().ok_or(OUT_OF_RANGE)
        };
    }
    // Exponent notation and other float spellings.
    let x: f64 = text.parse().map_err(|_| NOT_A_NUMBER)?;
    if !x.is_finite() {
        return Err(NOT_A_NUMBER);
    }
    if x.fract() != 0.0 {
        return Err(NOT_AN_INTEGER);
    }
    // ±2^63 are exactly representable; every integer-valued f64 in [-2^63, 2^63) converts exactly.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO_63..TWO_63).contains(&x) {
        return Err(OUT_OF_RANGE);
    }
    Ok(x as i64)
}

/// Float field, slow path: anything Rust's `f64` parser accepts, if finite.
fn parse_float_slow(tok: &[u8]) -> Result<f64, &'static str> {
    let text = std::str::from_utf8(tok).map_err(|_| NOT_A_NUMBER)?;
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(NOT_A_NUMBER),
    }
}

/// Parses one job line (no comment, not blank) into its 18 fields.
///
/// A line with the wrong number of fields is reported as such even if one of its fields is
/// also not a number (the structure is the bigger problem). Every field may be `-1`
/// (unknown); the submit time (field 2) may not be below that ([`NEGATIVE_SUBMIT`]). A
/// time field may not exceed [`MAX_SECONDS`] ([`TIME_TOO_LARGE`]) nor a processor count
/// [`MAX_JOB_PROCS`] ([`PROCS_TOO_LARGE`]): the first such field, in file order, is named.
#[inline]
pub(crate) fn parse_job_line(line: &[u8]) -> Result<SwfJob, LineError> {
    let job = parse_fields(line).map_err(|e| match e {
        LineError::Field { .. } => match count_fields(line) {
            18 => e,
            n => LineError::Count(n),
        },
        count => count,
    })?;
    // One test for every bound, without branches per field (`|`, not `||`): the hot
    // path pays a few comparisons a line; the cold one finds which field it was.
    let t = MAX_SECONDS;
    let p = MAX_JOB_PROCS;
    let out = (job.submit_time < -1)
        | (job.submit_time > t)
        | (job.wait_time > t)
        | (job.run_time > t)
        | (job.allocated_procs > p)
        | (job.avg_cpu_time > t as f64)
        | (job.requested_procs > p)
        | (job.requested_time > t)
        | (job.think_time > t);
    if out {
        return Err(out_of_bounds(line, &job));
    }
    Ok(job)
}

/// The error of a line one of whose fields is out of its bounds: the first in file order.
#[cold]
#[inline(never)]
fn out_of_bounds(line: &[u8], job: &SwfJob) -> LineError {
    let t = MAX_SECONDS;
    let p = MAX_JOB_PROCS;
    let checks: [(usize, bool, &'static str); 9] = [
        (1, job.submit_time < -1, NEGATIVE_SUBMIT),
        (1, job.submit_time > t, TIME_TOO_LARGE),
        (2, job.wait_time > t, TIME_TOO_LARGE),
        (3, job.run_time > t, TIME_TOO_LARGE),
        (4, job.allocated_procs > p, PROCS_TOO_LARGE),
        (5, job.avg_cpu_time > t as f64, TIME_TOO_LARGE),
        (7, job.requested_procs > p, PROCS_TOO_LARGE),
        (8, job.requested_time > t, TIME_TOO_LARGE),
        (17, job.think_time > t, TIME_TOO_LARGE),
    ];
    let (index, reason) = checks
        .iter()
        .find(|c| c.1)
        .map_or((1, NEGATIVE_SUBMIT), |&(i, _, r)| (i, r));
    let mut tokens = line
        .split(|&b| is_ws(b))
        .scan(0usize, |at, t| {
            let start = *at;
            *at += t.len() + 1;
            Some((start, t))
        })
        .filter(|(_, t)| !t.is_empty());
    let (start, token) = tokens.nth(index).unwrap_or((0, &[][..]));
    LineError::Field {
        index,
        start,
        end: start + token.len(),
        reason,
    }
}

#[inline(always)]
fn parse_fields(line: &[u8]) -> Result<SwfJob, LineError> {
    let mut c = Cursor {
        s: line,
        i: 0,
        field: 0,
    };
    let job = SwfJob {
        job_number: c.int()?,
        submit_time: c.int()?,
        wait_time: c.int()?,
        run_time: c.int()?,
        allocated_procs: c.int()?,
        avg_cpu_time: c.float()?,
        used_memory: c.float()?,
        requested_procs: c.int()?,
        requested_time: c.int()?,
        requested_memory: c.float()?,
        status: c.int()?,
        user_id: c.int()?,
        group_id: c.int()?,
        executable: c.int()?,
        queue: c.int()?,
        partition: c.int()?,
        preceding_job: c.int()?,
        think_time: c.int()?,
    };
    if line[c.i..].iter().all(|&b| is_ws(b)) {
        Ok(job)
    } else {
        Err(LineError::Count(count_fields(line)))
    }
}

/// Number of whitespace-separated fields on a line.
pub(crate) fn count_fields(line: &[u8]) -> usize {
    line.split(|&b| is_ws(b)).filter(|t| !t.is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &[&str]) -> Vec<u8> {
        fields.join(" ").into_bytes()
    }

    fn base() -> Vec<&'static str> {
        vec![
            "1", "0", "5", "100", "4", "90.5", "-1", "4", "200", "-1", "1", "7", "2", "-1", "1", "-1", "-1",
            "-1",
        ]
    }

    #[test]
    fn parses_a_typical_line() {
        let j = parse_job_line(&line(&base())).unwrap();
        assert_eq!(j.job_number, 1);
        assert_eq!(j.run_time, 100);
        assert_eq!(j.avg_cpu_time, 90.5);
        assert_eq!(j.used_memory, -1.0);
        assert_eq!(j.user_id, 7);
        assert_eq!(j.think_time, -1);
    }

    #[test]
    fn decimals_are_exact() {
        for text in [
            "552.21",
            "0.1",
            "142.00",
            "969.56",
            "123456789.012345",
            "-0.5",
            "5.",
            ".25",
        ] {
            let mut f = base();
            f[5] = text;
            let j = parse_job_line(&line(&f)).unwrap();
            assert_eq!(j.avg_cpu_time, text.parse::<f64>().unwrap(), "{text}");
        }
        let mut f = base();
        f[6] = "1.2345678901234567890123";
        let j = parse_job_line(&line(&f)).unwrap();
        assert_eq!(j.used_memory, "1.2345678901234567890123".parse::<f64>().unwrap());
        f[9] = "2.5e3";
        assert_eq!(parse_job_line(&line(&f)).unwrap().requested_memory, 2500.0);
    }

    #[test]
    fn integer_valued_decimals_accepted_in_integer_fields() {
        for (text, want) in [
            ("12.0", 12),
            ("12.", 12),
            ("+7", 7),
            ("-3.000", -3),
            ("1e3", 1000),
        ] {
            let mut f = base();
            f[3] = text;
            assert_eq!(parse_job_line(&line(&f)).unwrap().run_time, want, "{text}");
        }
        let mut f = base();
        f[2] = "-9223372036854775808";
        assert_eq!(parse_job_line(&line(&f)).unwrap().wait_time, i64::MIN);
        f[1] = "1e12";
        assert_eq!(parse_job_line(&line(&f)).unwrap().submit_time, MAX_SECONDS);
    }

    /// Each time field up to 10^12 s and each processor count up to
    /// u32::MAX reads; one more is refused naming that field, whatever
    /// its spelling (digits, 19 digits for the slow path, exponent), and
    /// -1 (unknown) still reads in each of them.
    #[test]
    fn absurd_times_and_processor_counts_are_rejected() {
        let times = [1, 2, 3, 5, 8, 17];
        let procs = [4, 7];
        for &idx in times.iter().chain(&procs) {
            let (at_max, above, reason) = if times.contains(&idx) {
                (
                    "1000000000000",
                    ["1000000000001", "9223372036854775807", "1e13"],
                    TIME_TOO_LARGE,
                )
            } else {
                (
                    "4294967295",
                    ["4294967296", "999999999999", "9223372036854775807"],
                    PROCS_TOO_LARGE,
                )
            };
            for ok in [at_max, "-1", "0"] {
                let mut f = base();
                f[idx] = ok;
                assert!(parse_job_line(&line(&f)).is_ok(), "field {idx}: {ok}");
            }
            for text in above {
                let mut f = base();
                f[idx] = text;
                let l = format!("\t{}", f.join("  ")).into_bytes();
                match parse_job_line(&l) {
                    Err(LineError::Field {
                        index,
                        start,
                        end,
                        reason: r,
                    }) => {
                        assert_eq!((index, r), (idx, reason), "{text}");
                        assert_eq!(&l[start..end], text.as_bytes());
                    }
                    other => panic!("field {idx}: {text}: {other:?}"),
                }
            }
        }
        // The float time (average CPU time) too, and the first bad field is named.
        let mut f = base();
        f[5] = "1000000000000.5";
        assert!(matches!(
            parse_job_line(&line(&f)),
            Err(LineError::Field {
                index: 5,
                reason: TIME_TOO_LARGE,
                ..
            })
        ));
        f[3] = "9223372036854775807";
        assert!(matches!(
            parse_job_line(&line(&f)),
            Err(LineError::Field {
                index: 3,
                reason: TIME_TOO_LARGE,
                ..
            })
        ));
        // Fields that are not times or counts take any i64.
        for idx in [0, 10, 11, 12, 13, 14, 15, 16] {
            let mut f = base();
            f[idx] = "9223372036854775807";
            assert!(parse_job_line(&line(&f)).is_ok(), "field {idx}");
        }
    }

    /// Field 2 alone must not be below -1 (unknown), whatever its
    /// spelling; the error points at the token, past any run of
    /// separators.
    #[test]
    fn negative_submit_times_are_rejected() {
        for text in ["-1", "-1.0", "-1e0"] {
            let mut f = base();
            f[1] = text;
            assert_eq!(parse_job_line(&line(&f)).unwrap().submit_time, -1, "{text}");
        }
        for text in ["-10", "-2", "-2.0", "-9223372036854775808", "-1e3"] {
            let mut f = base();
            f[1] = text;
            let l = format!("  {}", f.join(" \t ")).into_bytes();
            match parse_job_line(&l) {
                Err(LineError::Field {
                    index: 1,
                    start,
                    end,
                    reason: NEGATIVE_SUBMIT,
                }) => assert_eq!(&l[start..end], text.as_bytes()),
                other => panic!("{text}: {other:?}"),
            }
        }
        let mut f = base();
        f[1] = "0";
        f[2] = "-1";
        assert_eq!(parse_job_line(&line(&f)).unwrap().submit_time, 0);
        // The field count still comes first.
        f[1] = "-5";
        f.pop();
        assert_eq!(parse_job_line(&line(&f)), Err(LineError::Count(17)));
    }

    #[test]
    fn rejects_with_reasons() {
        let cases = [
            (3, "abc", NOT_A_NUMBER),
            (3, "12.5", NOT_AN_INTEGER),
            (3, "1x", NOT_A_NUMBER),
            (3, "-", NOT_A_NUMBER),
            (3, ".", NOT_A_NUMBER),
            (1, "9223372036854775808", OUT_OF_RANGE),
            (5, "nan", NOT_A_NUMBER),
            (5, "inf", NOT_A_NUMBER),
            (9, "1.2.3", NOT_A_NUMBER),
            (10, "1e400", OUT_OF_RANGE),
        ];
        for (idx, text, reason) in cases {
            let mut f = base();
            f[idx] = text;
            let l = line(&f);
            match parse_job_line(&l) {
                Err(LineError::Field {
                    index,
                    start,
                    end,
                    reason: r,
                }) => {
                    assert_eq!(index, idx, "{text}");
                    assert_eq!(&l[start..end], text.as_bytes());
                    if text == "1e400" {
                        // 1e400 overflows f64 and parses as infinity
                        assert_eq!(r, NOT_A_NUMBER);
                    } else {
                        assert_eq!(r, reason, "{text}");
                    }
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn field_counts() {
        let mut f = base();
        f.pop();
        assert_eq!(parse_job_line(&line(&f)), Err(LineError::Count(17)));
        f[3] = "abc";
        assert_eq!(parse_job_line(&line(&f)), Err(LineError::Count(17)));
        let mut f = base();
        f.push("9");
        f.push("9");
        assert_eq!(parse_job_line(&line(&f)), Err(LineError::Count(20)));
        assert_eq!(parse_job_line(b"1 2 3\t\t"), Err(LineError::Count(3)));
    }

    #[test]
    fn tabs_and_cr() {
        let text = base().join("\t  ") + " \r";
        assert!(parse_job_line(text.as_bytes()).is_ok());
    }
}
