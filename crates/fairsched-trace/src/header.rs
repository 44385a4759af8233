//! [`SwfHeader`]: the `; Key: value` metadata lines of an SWF log.

use serde::{Deserialize, Serialize};

/// Metadata from `; Key: value` comment lines, wherever they appear in the file.
///
/// Well-known keys get typed fields; every other key (and any repeated well-known key after
/// its first occurrence, or one whose value does not parse) goes to [`SwfHeader::other`] in
/// file order. Comment lines that are not `Key: value` (free text, continuation lines such as
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
    pub fn absorb_comment(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        if let Some((key, value)) = split_key_value(&text) {
            self.set(key, value);
        }
    }

    /// Sets one pair: a well-known key fills its typed field the first time it appears;
    /// anything else is appended to `other`.
    pub fn set(&mut self, key: &str, value: &str) {
        let key = key.trim();
        let value = value.trim();
        let unused = match key.to_ascii_lowercase().as_str() {
            "maxprocs" => fill_num(&mut self.max_procs, value),
            "maxnodes" => fill_num(&mut self.max_nodes, value),
            "maxjobs" => fill_num(&mut self.max_jobs, value),
            "maxrecords" => fill_num(&mut self.max_records, value),
            "unixstarttime" => fill_num(&mut self.unix_start_time, value),
            "timezone" => fill_num(&mut self.time_zone, value),
            "timezonestring" => fill_str(&mut self.time_zone_string, value),
            "starttime" => fill_str(&mut self.start_time, value),
            "endtime" => fill_str(&mut self.end_time, value),
            "installation" => fill_str(&mut self.installation, value),
            "computer" => fill_str(&mut self.computer, value),
            _ => false,
        };
        if !unused {
            self.other.push((key.to_string(), value.to_string()));
        }
    }
}

/// Returns true if the value was taken.
fn fill_num<T: std::str::FromStr>(slot: &mut Option<T>, value: &str) -> bool {
    if slot.is_some() {
        return false;
    }
    match value.split_whitespace().next().map(str::parse) {
        Some(Ok(v)) => {
            *slot = Some(v);
            true
        }
        _ => false,
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
}
