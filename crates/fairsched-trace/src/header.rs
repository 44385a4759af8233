//! [`SwfHeader`]: the `; Key: value` metadata lines of an SWF log.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Metadata from `; Key: value` comment lines, wherever they appear in the file.
///
/// Well-known keys get typed fields; every other key (and any repeated well-known key after
/// its first occurrence, or one whose value is not valid for it: not a number, or a
/// `MaxProcs`/`MaxNodes` below 1) goes to [`SwfHeader::other`] in file order; a reader
/// reports the invalid ones ([`crate::SwfReader::header_warnings`]). Comment lines that are not `Key: value` (free text, continuation lines such as
/// `;     http://…`) are ignored. Numeric values are read from the value's first word, so
/// `MaxNodes: 338 (batch partition; 512 total)` gives `max_nodes = Some(338)`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwfHeader {
    /// `MaxProcs`: processors of the machine.
    pub max_procs: Option<u32>,
    /// `MaxNodes`: nodes of the machine.
    pub max_nodes: Option<u32>,
    /// `MaxJobs`: jobs in the original (uncleaned) log.
    pub max_jobs: Option<u64>,
    /// `MaxRecords`: records in this file.
    pub max_records: Option<u64>,
    /// `UnixStartTime`: epoch seconds of submit time 0.
    pub unix_start_time: Option<i64>,
    /// `TimeZone`: offset from UTC in seconds (deprecated in favour of the string).
    pub time_zone: Option<i64>,
    /// `TimeZoneString`, e.g. `Europe/Stockholm`.
    pub time_zone_string: Option<String>,
    /// `StartTime`, human readable.
    pub start_time: Option<String>,
    /// `EndTime`, human readable.
    pub end_time: Option<String>,
    /// `Installation`.
    pub installation: Option<String>,
    /// `Computer`.
    pub computer: Option<String>,
    /// Every other `Key: value` pair, in file order (`Version`, `Note`, `Queue`, …).
    pub other: Vec<(String, String)>,
}

/// A `; Key: value` line of a well-known numeric key whose value was not used (kept in
/// [`SwfHeader::other`]), e.g. `; MaxProcs: abc`. Displays as
/// ``log.swf:3: header `MaxProcs: abc` ignored: not a whole number of processors, 1 or more``.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderWarning {
    /// File (or stream name).
    pub path: PathBuf,
    /// 1-based physical line number.
    pub line: u64,
    /// The key as written.
    pub key: String,
    /// The value as written (truncated to 80 characters).
    pub value: String,
    /// Why it was not used.
    pub reason: String,
}

impl fmt::Display for HeaderWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: header `{}: {}` ignored: {}",
            self.path.display(),
            self.line,
            self.key,
            self.value,
            self.reason
        )
    }
}

impl HeaderWarning {
    /// True for a warning about `MaxProcs`.
    pub fn is_max_procs(&self) -> bool {
        self.key.eq_ignore_ascii_case("maxprocs")
    }
}

impl SwfHeader {
    /// True when no key has been seen.
    pub fn is_empty(&self) -> bool {
        *self == SwfHeader::default()
    }

    /// Number of `Key: value` pairs held (typed fields that are set plus `other`).
    pub fn len(&self) -> usize {
        self.pairs().len()
    }

    /// All pairs in canonical order: typed fields first (SWF names), then `other`.
    ///
    /// This is what [`crate::SwfWriter::write_header`] writes.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push((k.to_string(), v));
            }
        };
        put("Computer", self.computer.clone());
        put("Installation", self.installation.clone());
        put("MaxJobs", self.max_jobs.map(|v| v.to_string()));
        put("MaxRecords", self.max_records.map(|v| v.to_string()));
        put("UnixStartTime", self.unix_start_time.map(|v| v.to_string()));
        put("TimeZone", self.time_zone.map(|v| v.to_string()));
        put("TimeZoneString", self.time_zone_string.clone());
        put("StartTime", self.start_time.clone());
        put("EndTime", self.end_time.clone());
        put("MaxNodes", self.max_nodes.map(|v| v.to_string()));
        put("MaxProcs", self.max_procs.map(|v| v.to_string()));
        out.extend(self.other.iter().cloned());
        out
    }

    /// Looks a key up (ASCII case-insensitive) among typed fields and `other`; first match.
    pub fn get(&self, key: &str) -> Option<String> {
        self.pairs()
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }

    /// Absorbs one comment line (the text after `;`). Not `Key: value` → ignored.
    ///
    /// Returns the key, the value and why, when a well-known numeric key (`MaxProcs`,
    /// `MaxNodes`, `MaxJobs`, `MaxRecords`, `UnixStartTime`, `TimeZone`) not yet set has a
    /// value that is not a valid number for it: the pair then goes to `other`, as it did
    /// before, and the caller may warn ([`crate::SwfReader::header_warnings`]).
    pub fn absorb_comment(&mut self, text: &[u8]) -> Option<(String, String, &'static str)> {
        let text = String::from_utf8_lossy(text);
        let (key, value) = split_key_value(&text)?;
        self.set_checked(key, value)
            .map(|reason| (key.to_string(), value.to_string(), reason))
    }

    /// Sets one pair: a well-known key fills its typed field the first time it appears
    /// with a valid value; anything else is appended to `other`.
    pub fn set(&mut self, key: &str, value: &str) {
        let _ = self.set_checked(key, value);
    }

    /// [`SwfHeader::set`], returning why a well-known numeric key not yet set was not
    /// taken (its value went to `other`).
    fn set_checked(&mut self, key: &str, value: &str) -> Option<&'static str> {
        let key = key.trim();
        let value = value.trim();
        let taken = match key.to_ascii_lowercase().as_str() {
            "maxprocs" => fill_num(&mut self.max_procs, value, COUNT_OF_PROCESSORS, |&n| n > 0),
            "maxnodes" => fill_num(&mut self.max_nodes, value, COUNT_OF_NODES, |&n| n > 0),
            "maxjobs" => fill_num(&mut self.max_jobs, value, COUNT, |_| true),
            "maxrecords" => fill_num(&mut self.max_records, value, COUNT, |_| true),
            "unixstarttime" => fill_num(&mut self.unix_start_time, value, SECONDS, |_| true),
            "timezone" => fill_num(&mut self.time_zone, value, SECONDS, |_| true),
            "timezonestring" => Ok(fill_str(&mut self.time_zone_string, value)),
            "starttime" => Ok(fill_str(&mut self.start_time, value)),
            "endtime" => Ok(fill_str(&mut self.end_time, value)),
            "installation" => Ok(fill_str(&mut self.installation, value)),
            "computer" => Ok(fill_str(&mut self.computer, value)),
            _ => Ok(false),
        };
        if taken != Ok(true) {
            self.other.push((key.to_string(), value.to_string()));
        }
        taken.err()
    }
}

const COUNT_OF_PROCESSORS: &str = "not a whole number of processors, 1 or more";
const COUNT_OF_NODES: &str = "not a whole number of nodes, 1 or more";
const COUNT: &str = "not a whole number, 0 or more";
const SECONDS: &str = "not a whole number of seconds";

/// `Ok(true)` if the value was taken, `Ok(false)` if the field was set already (the value
/// is not looked at), `Err(why)` if the value's first word is not a valid `T`.
fn fill_num<T: std::str::FromStr>(
    slot: &mut Option<T>,
    value: &str,
    why: &'static str,
    valid: impl Fn(&T) -> bool,
) -> Result<bool, &'static str> {
    if slot.is_some() {
        return Ok(false);
    }
    match value.split_whitespace().next().map(str::parse) {
        Some(Ok(v)) if valid(&v) => {
            *slot = Some(v);
            Ok(true)
        }
        _ => Err(why),
    }
}

fn fill_str(slot: &mut Option<String>, value: &str) -> bool {
    if slot.is_some() {
        return false;
    }
    *slot = Some(value.to_string());
    true
}

/// `  Key: value` → (`Key`, `value`). The key is one word (letters, digits, `_`, `-`,
/// starting with a letter) followed directly by `:` and then whitespace or the end, so
/// `http://…` continuation lines are not mistaken for keys.
pub(crate) fn split_key_value(text: &str) -> Option<(&str, &str)> {
    let t = text.trim_start();
    let colon = t.find(':')?;
    let key = &t[..colon];
    let mut chars = key.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return None;
    }
    let rest = &t[colon + 1..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some((key, rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> SwfHeader {
        let mut h = SwfHeader::default();
        for l in lines {
            h.absorb_comment(l.as_bytes());
        }
        h
    }

    #[test]
    fn typed_and_other_keys() {
        let h = parse(&[
            " Version: 2.2",
            " Computer: IBM SP2",
            "              http://www.cs.huji.ac.il/labs/parallel/workload/",
            " MaxNodes: 338 (batch partition; 512 total)",
            " MaxProcs: 338",
            "        TimeZone: 3600\t # DEPRECATED; use TimeZoneString + tzset()",
            "  TimeZoneString: Europe/Paris",
            " EndTime:   Sat May 31 23:11:26 EDT 1997",
            " Note: THIS IS A CLEANED VERSION OF THE LOG!",
            " Note: uses: colons",
            " just a remark",
            " MaxProcs: 1000",
            " Installation: A",
            " Installation: B",
            " Queue:",
        ]);
        assert_eq!(h.max_procs, Some(338));
        assert_eq!(h.max_nodes, Some(338));
        assert_eq!(h.time_zone, Some(3600));
        assert_eq!(h.time_zone_string.as_deref(), Some("Europe/Paris"));
        assert_eq!(h.end_time.as_deref(), Some("Sat May 31 23:11:26 EDT 1997"));
        assert_eq!(h.computer.as_deref(), Some("IBM SP2"));
        assert_eq!(h.installation.as_deref(), Some("A"));
        let other: Vec<(&str, &str)> = h.other.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            other,
            [
                ("Version", "2.2"),
                ("Note", "THIS IS A CLEANED VERSION OF THE LOG!"),
                ("Note", "uses: colons"),
                ("MaxProcs", "1000"),
                ("Installation", "B"),
                ("Queue", ""),
            ]
        );
        assert_eq!(h.get("maxprocs").as_deref(), Some("338"));
    }

    #[test]
    fn unparsable_numbers_go_to_other() {
        let h = parse(&[" MaxProcs: unknown"]);
        assert_eq!(h.max_procs, None);
        assert_eq!(h.other, [("MaxProcs".to_string(), "unknown".to_string())]);
    }

    /// Each bad value of a numeric key not yet set says why; a later valid
    /// value still fills the field; text keys, unknown keys and repeats of
    /// a set key say nothing.
    #[test]
    fn bad_numeric_values_say_why() {
        let mut h = SwfHeader::default();
        let mut said = |line: &str| {
            h.absorb_comment(line.as_bytes())
                .map(|(k, v, why)| format!("{k}={v}: {why}"))
        };
        assert_eq!(
            said(" MaxProcs: abc").unwrap(),
            format!("MaxProcs=abc: {COUNT_OF_PROCESSORS}")
        );
        assert_eq!(
            said(" MaxProcs: -5").unwrap(),
            format!("MaxProcs=-5: {COUNT_OF_PROCESSORS}")
        );
        assert_eq!(
            said(" MaxProcs: 0").unwrap(),
            format!("MaxProcs=0: {COUNT_OF_PROCESSORS}")
        );
        assert_eq!(
            said(" MaxProcs: 4294967296").unwrap(),
            format!("MaxProcs=4294967296: {COUNT_OF_PROCESSORS}")
        );
        assert_eq!(
            said(" MaxProcs:").unwrap(),
            format!("MaxProcs=: {COUNT_OF_PROCESSORS}")
        );
        assert_eq!(
            said(" MaxNodes: 1,024").unwrap(),
            format!("MaxNodes=1,024: {COUNT_OF_NODES}")
        );
        assert_eq!(said(" MaxJobs: -1").unwrap(), format!("MaxJobs=-1: {COUNT}"));
        assert_eq!(
            said(" UnixStartTime: yesterday").unwrap(),
            format!("UnixStartTime=yesterday: {SECONDS}")
        );
        assert_eq!(said(" MaxProcs: 64 (two partitions)"), None);
        assert_eq!(said(" MaxProcs: oops"), None); // set already
        assert_eq!(said(" Installation: x"), None);
        assert_eq!(said(" Queue: 3"), None);
        assert_eq!(said(" MaxRecords: 0"), None);
        assert_eq!(said(" TimeZone: -3600"), None);
        assert_eq!(h.max_procs, Some(64));
        assert_eq!((h.max_nodes, h.max_jobs, h.max_records), (None, None, Some(0)));
        assert_eq!(h.time_zone, Some(-3600));
        let other: Vec<&str> = h.other.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            other,
            [
                "MaxProcs",
                "MaxProcs",
                "MaxProcs",
                "MaxProcs",
                "MaxProcs",
                "MaxNodes",
                "MaxJobs",
                "UnixStartTime",
                "MaxProcs",
                "Queue"
            ]
        );
    }
}
