//! Local-time Monday–Friday weeks of a log: [`LocalClock`] maps submit seconds to local
//! wall-clock time (from the header's `UnixStartTime` and `TimeZoneString`), and [`weeks`]
//! cuts the span between the first and the last submit into Monday 00:00 – Saturday 00:00
//! spans, as the PFFP paper prepares its instances.
//!
//! ```
//! use fairsched_trace::{LocalClock, SwfHeader, weeks};
//!
//! let mut h = SwfHeader::default();
//! h.unix_start_time = Some(835823160); // Wed 1996-06-26 17:06:00 EDT
//! h.time_zone_string = Some("US/Eastern".to_string());
//! let (clock, note) = LocalClock::from_header(&h);
//! assert!(note.is_none());
//! // Two complete weeks in the first 20 days; the first starts Mon 1996-07-01 00:00 EDT.
//! let w = weeks(&clock, 0, 20 * 86400);
//! assert_eq!(w.len(), 2);
//! assert_eq!((w[0].index, w[0].start, w[0].end - w[0].start), (0, 370440, 432000));
//! assert_eq!(w[1].start - w[0].start, 604800);
//! ```

use std::fmt;

use chrono::{DateTime, Datelike, Days, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::header::SwfHeader;

/// Earliest UTC instant handled: 0001-01-01T00:00:00Z. Instants outside years 1–9999 give
/// no weeks, which bounds both the arithmetic and the length of the result (≤ 522 000 weeks).
const MIN_INSTANT: i64 = -62_135_596_800;
/// Latest UTC instant handled: 9999-12-31T23:59:59Z.
const MAX_INSTANT: i64 = 253_402_300_799;

/// The local zone of a [`LocalClock`].
#[derive(Clone, Debug)]
enum Zone {
    /// A tz database zone, with its daylight-saving rules.
    Named(Tz),
    /// A constant offset from UTC (the header's deprecated numeric `TimeZone`).
    Fixed(FixedOffset),
    /// UTC.
    Utc,
}

impl Zone {
    /// Local wall-clock time of a UTC instant (epoch seconds).
    fn local(&self, instant: i64) -> Option<NaiveDateTime> {
        if !(MIN_INSTANT..=MAX_INSTANT).contains(&instant) {
            return None;
        }
        let utc = DateTime::<Utc>::from_timestamp(instant, 0)?;
        Some(match self {
            Zone::Named(tz) => utc.with_timezone(tz).naive_local(),
            Zone::Fixed(off) => utc.with_timezone(off).naive_local(),
            Zone::Utc => utc.naive_utc(),
        })
    }

    /// The earliest UTC instant (epoch seconds) whose local time is `local` (the earlier one
    /// when a DST fall-back repeats it), or, when a DST spring-forward skips it, the first
    /// instant after the gap.
    fn instant(&self, local: NaiveDateTime) -> Option<i64> {
        let earliest = match self {
            Zone::Named(tz) => tz.from_local_datetime(&local).earliest().map(|t| t.timestamp()),
            Zone::Fixed(off) => off.from_local_datetime(&local).earliest().map(|t| t.timestamp()),
            Zone::Utc => Some(local.and_utc().timestamp()),
        };
        let t = match earliest {
            Some(t) => t,
            None => self.first_instant_at_or_after(local)?,
        };
        (MIN_INSTANT..=MAX_INSTANT).contains(&t).then_some(t)
    }

    /// The first instant whose local time is ≥ `local`, found by bisection. Used only when
    /// `local` falls in a DST gap: local time then crosses `local` only by the jump at the
    /// gap's transition, so the predicate "local time ≥ `local`" switches once in the window
    /// (offsets are within ±26 h, so it is false at the low end and true at the high end).
    fn first_instant_at_or_after(&self, local: NaiveDateTime) -> Option<i64> {
        const WINDOW: i64 = 27 * 3600;
        let naive = local.and_utc().timestamp();
        let mut lo = naive.checked_sub(WINDOW)?.max(MIN_INSTANT); // predicate false
        let mut hi = naive.checked_add(WINDOW)?.min(MAX_INSTANT); // predicate true
        if self.local(hi)? < local {
            return None;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.local(mid)? >= local {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Zone::Named(tz) => f.write_str(tz.name()),
            Zone::Fixed(off) => write!(f, "fixed UTC{off} ({} s)", off.local_minus_utc()),
            Zone::Utc => f.write_str("UTC"),
        }
    }
}

/// How a log's submit seconds map to local wall-clock time.
///
/// Submit second `s` is the UTC instant `unix_start + s`, shown in the log's zone: a tz
/// database zone (with daylight saving), a fixed offset, or UTC.
#[derive(Clone, Debug)]
pub struct LocalClock {
    zone: Zone,
    /// Epoch seconds of submit time 0.
    unix_start: i64,
    /// Whether `unix_start` came from the header (`UnixStartTime`) or was assumed.
    start_from_header: bool,
}

impl LocalClock {
    /// From the header (`unix_start_time`, `time_zone` in seconds east of UTC,
    /// `time_zone_string`).
    ///
    /// Uses `TimeZoneString` when the tz database (chrono-tz, legacy names such as
    /// `US/Eastern` included) knows it; else the numeric `TimeZone` offset (fixed, no
    /// daylight saving); else UTC. Without `UnixStartTime`, submit 0 is taken as
    /// 1970-01-01 00:00 local time. Returns the clock and, when it had to fall back, a
    /// one-line note saying what it assumed and why.
    pub fn from_header(h: &SwfHeader) -> (LocalClock, Option<String>) {
        let mut notes = Vec::new();
        let named = h
            .time_zone_string
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let zone = match named.map(|s| (s, s.parse::<Tz>())) {
            Some((_, Ok(tz))) => Zone::Named(tz),
            other => {
                let why = match other {
                    Some((s, _)) => format!("unknown TimeZoneString {s:?}"),
                    None => "no TimeZoneString".to_string(),
                };
                match h.time_zone {
                    Some(secs) => match i32::try_from(secs).ok().and_then(FixedOffset::east_opt) {
                        Some(off) => {
                            notes.push(format!("{why}: fixed offset {secs} s from TimeZone"));
                            Zone::Fixed(off)
                        }
                        None => {
                            notes.push(format!("{why}, TimeZone {secs} s out of range: UTC"));
                            Zone::Utc
                        }
                    },
                    None => {
                        notes.push(format!("{why} and no TimeZone: UTC"));
                        Zone::Utc
                    }
                }
            }
        };
        let (unix_start, start_from_header) = match h.unix_start_time {
            Some(t) => (t, true),
            None => {
                let midnight = NaiveDate::from_ymd_opt(1970, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0));
                // 1970-01-01 00:00 exists once in every zone; 0 is only a formal fallback.
                let t = midnight.and_then(|m| zone.instant(m)).unwrap_or(0);
                notes.push(format!(
                    "no UnixStartTime: submit 0 taken as Thursday 1970-01-01 00:00 {zone}"
                ));
                (t, false)
            }
        };
        let clock = LocalClock {
            zone,
            unix_start,
            start_from_header,
        };
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        (clock, note)
    }

    /// UTC, with submit 0 at `unix_start` epoch seconds.
    pub fn utc(unix_start: i64) -> LocalClock {
        LocalClock {
            zone: Zone::Utc,
            unix_start,
            start_from_header: true,
        }
    }

    /// A short description, e.g. `US/Eastern from UnixStartTime 835823160`.
    pub fn describe(&self) -> String {
        if self.start_from_header {
            format!("{} from UnixStartTime {}", self.zone, self.unix_start)
        } else {
            format!(
                "{}, submit 0 at 1970-01-01 00:00 local (no UnixStartTime)",
                self.zone
            )
        }
    }

    /// Local wall-clock time of log second `t`.
    fn local(&self, t: i64) -> Option<NaiveDateTime> {
        self.zone.local(self.unix_start.checked_add(t)?)
    }

    /// Log second of the earliest instant at local midnight starting `day`.
    fn midnight(&self, day: NaiveDate) -> Option<i64> {
        let instant = self.zone.instant(day.and_hms_opt(0, 0, 0)?)?;
        instant.checked_sub(self.unix_start)
    }
}

/// One Monday 00:00 – Saturday 00:00 local-time span, in the log's submit seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Week {
    /// 0 for the first Monday at or after the first submit, counting calendar weeks
    /// (a week with no job still advances the index).
    pub index: u32,
    /// Monday 00:00 local, in log seconds (submit-time scale).
    pub start: i64,
    /// Saturday 00:00 local, in log seconds; end − start is 432000 except across a DST change.
    pub end: i64,
}

/// Every complete Monday–Friday week between the first and the last submit: starts at the
/// first Monday 00:00 local at or after `first_submit`, and keeps a week only if its end is
/// ≤ `last_submit` (a week the log stops in the middle of is dropped).
///
/// A local midnight that daylight saving repeats is taken at its earlier instant; one that
/// it skips, at the first instant after the gap. Never panics: `last_submit < first_submit`,
/// or submits whose instants fall outside years 1–9999, give an empty Vec.
pub fn weeks(clock: &LocalClock, first_submit: i64, last_submit: i64) -> Vec<Week> {
    let mut out = Vec::new();
    if last_submit < first_submit || clock.local(last_submit).is_none() {
        return out;
    }
    let Some(first_local) = clock.local(first_submit) else {
        return out;
    };
    // The Monday of the week holding `first_local`, or the next one; then one week later
    // if that midnight is before the first submit.
    let date = first_local.date();
    let to_monday = (7 - date.weekday().num_days_from_monday()) % 7;
    let Some(mut monday) = date.checked_add_days(Days::new(u64::from(to_monday))) else {
        return out;
    };
    match clock.midnight(monday) {
        Some(start) if start >= first_submit => {}
        _ => match monday.checked_add_days(Days::new(7)) {
            Some(next) => monday = next,
            None => return out,
        },
    }
    // Each week from the calendar (not by adding 604800 s), so DST changes cannot drift
    // the starts away from midnight.
    for index in 0u32.. {
        let Some(saturday) = monday.checked_add_days(Days::new(5)) else {
            break;
        };
        let (Some(start), Some(end)) = (clock.midnight(monday), clock.midnight(saturday)) else {
            break;
        };
        if end > last_submit {
            break;
        }
        out.push(Week { index, start, end });
        match monday.checked_add_days(Days::new(7)) {
            Some(next) => monday = next,
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveTime, Weekday};

    const WEEK: i64 = 604_800;
    const WORK_WEEK: i64 = 432_000;

    fn header(unix_start: Option<i64>, tz: Option<i64>, tz_string: Option<&str>) -> SwfHeader {
        SwfHeader {
            unix_start_time: unix_start,
            time_zone: tz,
            time_zone_string: tz_string.map(str::to_string),
            ..SwfHeader::default()
        }
    }

    /// Local time of a week boundary, as (weekday, time of day).
    fn local_of(clock: &LocalClock, t: i64) -> (Weekday, NaiveTime) {
        let l = clock.local(t).unwrap();
        (l.weekday(), l.time())
    }

    fn midnight() -> NaiveTime {
        NaiveTime::from_hms_opt(0, 0, 0).unwrap()
    }

    #[test]
    fn us_eastern_first_week_matches_hand_computation() {
        // CTC-SP2's header: UnixStartTime 835823160 = Wed 1996-06-26 17:06:00 EDT.
        // The first Monday is 1996-07-01; `TZ=US/Eastern date -d '1996-07-01 00:00' +%s`
        // gives 836193600, so start = 836193600 − 835823160 = 370440 log seconds, and
        // `TZ=US/Eastern date -d '1996-07-06 00:00' +%s` = 836625600 → end = 802440.
        let (clock, note) =
            LocalClock::from_header(&header(Some(835_823_160), Some(-18000), Some("US/Eastern")));
        assert_eq!(note, None);
        assert_eq!(clock.describe(), "US/Eastern from UnixStartTime 835823160");
        let w = weeks(&clock, 0, 30 * 86400);
        assert_eq!(
            w[0],
            Week {
                index: 0,
                start: 370_440,
                end: 802_440
            }
        );
        assert_eq!(w[0].end - w[0].start, WORK_WEEK);
        // Mon 1996-07-01 + 4 weeks = Mon 07-29; its Saturday (08-03, log second 3222360)
        // is past day 30 (2592000), so three complete weeks.
        assert_eq!(w.len(), 3);
        for (i, x) in w.iter().enumerate() {
            assert_eq!(x.index as usize, i);
            assert_eq!(x.start, 370_440 + i as i64 * WEEK);
            assert_eq!(local_of(&clock, x.start), (Weekday::Mon, midnight()));
            assert_eq!(local_of(&clock, x.end), (Weekday::Sat, midnight()));
        }
    }

    #[test]
    fn first_submit_exactly_at_monday_midnight_starts_that_week() {
        let (clock, _) = LocalClock::from_header(&header(Some(835_823_160), None, Some("US/Eastern")));
        let w = weeks(&clock, 370_440, 370_440 + WORK_WEEK);
        assert_eq!(
            w,
            [Week {
                index: 0,
                start: 370_440,
                end: 370_440 + WORK_WEEK
            }]
        );
        // One second later, that Monday is missed and the next one is week 0.
        let w = weeks(&clock, 370_441, 370_440 + WEEK + WORK_WEEK);
        assert_eq!(
            w,
            [Week {
                index: 0,
                start: 370_440 + WEEK,
                end: 370_440 + WEEK + WORK_WEEK
            }]
        );
        // A log that stops one second before Saturday 00:00 has no complete week.
        assert!(weeks(&clock, 370_440, 370_440 + WORK_WEEK - 1).is_empty());
    }

    #[test]
    fn stockholm_dst_changes_fall_on_weekends() {
        // Epoch 0 as submit 0. Europe/Stockholm changes on the last Sundays of March and
        // October (02:00/03:00 local), so each Mon–Sat span is 432000 s, while week starts
        // across a change differ by 604800 ∓ 3600.
        // `TZ=Europe/Stockholm date -d '1996-03-25 00:00' +%s` = 827708400 (CET, +1);
        // `TZ=Europe/Stockholm date -d '1996-04-01 00:00' +%s` = 828309600 (CEST, +2).
        let (clock, _) = LocalClock::from_header(&header(Some(0), Some(3600), Some("Europe/Stockholm")));
        let w = weeks(&clock, 827_708_400 - 86400, 828_309_600 + 8 * 86400);
        assert_eq!(w[0].start, 827_708_400);
        assert_eq!(w[1].start, 828_309_600);
        assert_eq!(w[1].start - w[0].start, WEEK - 3600);
        let year = weeks(&clock, 820_450_800, 852_073_200); // 1996-01-01 .. 1997-01-01 local
        assert_eq!(year.len(), 52);
        let mut shorter = 0;
        let mut longer = 0;
        for pair in year.windows(2) {
            match pair[1].start - pair[0].start {
                WEEK => {}
                d if d == WEEK - 3600 => shorter += 1,
                d if d == WEEK + 3600 => longer += 1,
                d => panic!("week starts {d} s apart"),
            }
        }
        assert_eq!((shorter, longer), (1, 1));
        for x in &year {
            assert_eq!(x.end - x.start, WORK_WEEK);
            assert_eq!(local_of(&clock, x.start), (Weekday::Mon, midnight()));
        }
    }

    #[test]
    fn mid_week_dst_change_shortens_the_span() {
        // Asia/Jerusalem changed on Friday 2014-03-28 02:00 → 03:00 (`zdump -v -c 2014,2015
        // Asia/Jerusalem`), so the week Mon 03-24 .. Sat 03-29 is one hour short:
        // `TZ=Asia/Jerusalem date -d '2014-03-24 00:00' +%s` = 1395612000,
        // `TZ=Asia/Jerusalem date -d '2014-03-29 00:00' +%s` = 1396040400.
        let (clock, _) = LocalClock::from_header(&header(Some(0), None, Some("Asia/Jerusalem")));
        let w = weeks(&clock, 1_395_612_000, 1_396_040_400);
        assert_eq!(
            w,
            [Week {
                index: 0,
                start: 1_395_612_000,
                end: 1_396_040_400
            }]
        );
        assert_eq!(w[0].end - w[0].start, WORK_WEEK - 3600);
    }

    #[test]
    fn skipped_monday_midnight_takes_the_first_instant_after_the_gap() {
        // Asia/Tehran jumped from Sun 2021-03-21 23:59:59 +0330 to Mon 2021-03-22 01:00 +0430
        // (`zdump -v -c 2021,2022 Asia/Tehran`): Monday 00:00 does not exist. The week starts
        // at the first instant after the gap, `TZ=Asia/Tehran date -d '2021-03-22 01:00' +%s`
        // = 1616358600, which is exactly 604800 s after the previous Monday 00:00
        // (`TZ=Asia/Tehran date -d '2021-03-15 00:00' +%s` = 1615753800); it ends on
        // `TZ=Asia/Tehran date -d '2021-03-27 00:00' +%s` = 1616787000, 3600 s short.
        let (clock, _) = LocalClock::from_header(&header(Some(0), None, Some("Asia/Tehran")));
        let w = weeks(&clock, 1_615_753_800, 1_616_787_000);
        assert_eq!(
            w,
            [
                Week {
                    index: 0,
                    start: 1_615_753_800,
                    end: 1_615_753_800 + WORK_WEEK
                },
                Week {
                    index: 1,
                    start: 1_616_358_600,
                    end: 1_616_787_000
                },
            ]
        );
        assert_eq!(w[1].end - w[1].start, WORK_WEEK - 3600);
        // A first submit inside the gap's hour still belongs to that week.
        assert_eq!(
            weeks(&clock, 1_616_358_600, 1_616_787_000)[0].start,
            1_616_358_600
        );

        // Inside a gap, not at its start: America/Sao_Paulo jumped from Sat 2018-11-03
        // 23:59:59 -03 to Sun 01:00 -02; 00:30 resolves to the end of the gap,
        // `TZ=America/Sao_Paulo date -d '2018-11-04 01:00' +%s` = 1541300400.
        let zone = Zone::Named("America/Sao_Paulo".parse().unwrap());
        let day = NaiveDate::from_ymd_opt(2018, 11, 4).unwrap();
        assert_eq!(
            zone.instant(day.and_hms_opt(0, 0, 0).unwrap()),
            Some(1_541_300_400)
        );
        assert_eq!(
            zone.instant(day.and_hms_opt(0, 30, 0).unwrap()),
            Some(1_541_300_400)
        );
    }

    #[test]
    fn repeated_midnight_takes_the_earlier_instant() {
        // America/Havana fell back from Sun 2019-11-03 00:59:59 CDT to 00:00 CST, so
        // 00:00 happened twice: `date -d '2019-11-03 00:00 -0400' +%s` = 1572753600 and
        // `date -d '2019-11-03 00:00 -0500' +%s` = 1572757200.
        let zone = Zone::Named("America/Havana".parse().unwrap());
        let midnight = NaiveDate::from_ymd_opt(2019, 11, 3)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        assert_eq!(zone.instant(midnight), Some(1_572_753_600));
    }

    #[test]
    fn falls_back_to_the_numeric_offset_with_a_note() {
        let (clock, note) = LocalClock::from_header(&header(Some(835_823_160), Some(-18000), None));
        assert_eq!(
            note.as_deref(),
            Some("no TimeZoneString: fixed offset -18000 s from TimeZone")
        );
        assert_eq!(
            clock.describe(),
            "fixed UTC-05:00 (-18000 s) from UnixStartTime 835823160"
        );
        // EST all year: Monday 1996-07-01 00:00 −05:00 is one hour after 00:00 EDT.
        let w = weeks(&clock, 0, 30 * 86400);
        assert_eq!(
            w[0],
            Week {
                index: 0,
                start: 370_440 + 3600,
                end: 802_440 + 3600
            }
        );

        let (_, note) = LocalClock::from_header(&header(Some(0), Some(3600), Some("Mars/Olympus")));
        assert_eq!(
            note.as_deref(),
            Some("unknown TimeZoneString \"Mars/Olympus\": fixed offset 3600 s from TimeZone")
        );
    }

    #[test]
    fn falls_back_to_utc_with_a_note() {
        let (clock, note) = LocalClock::from_header(&header(Some(0), None, None));
        assert_eq!(note.as_deref(), Some("no TimeZoneString and no TimeZone: UTC"));
        assert_eq!(clock.describe(), "UTC from UnixStartTime 0");
        // 1970-01-01 was a Thursday: the first Monday is 01-05 = day 4.
        let w = weeks(&clock, 0, 4 * 86400 + WORK_WEEK);
        assert_eq!(
            w,
            [Week {
                index: 0,
                start: 4 * 86400,
                end: 4 * 86400 + WORK_WEEK
            }]
        );

        let (_, note) = LocalClock::from_header(&header(Some(0), Some(100_000), None));
        assert_eq!(
            note.as_deref(),
            Some("no TimeZoneString, TimeZone 100000 s out of range: UTC")
        );
        let (_, note) = LocalClock::from_header(&header(Some(0), Some(i64::MAX), Some("  ")));
        assert_eq!(
            note.as_deref(),
            Some("no TimeZoneString, TimeZone 9223372036854775807 s out of range: UTC")
        );
    }

    #[test]
    fn without_unix_start_time_submit_0_is_local_epoch_midnight() {
        let (clock, note) = LocalClock::from_header(&header(None, None, None));
        assert_eq!(
            note.as_deref(),
            Some(
                "no TimeZoneString and no TimeZone: UTC; no UnixStartTime: submit 0 taken as Thursday 1970-01-01 00:00 UTC"
            )
        );
        assert_eq!(
            clock.describe(),
            "UTC, submit 0 at 1970-01-01 00:00 local (no UnixStartTime)"
        );
        assert_eq!(weeks(&clock, 0, 2 * WEEK)[0].start, 4 * 86400);

        let (clock, note) = LocalClock::from_header(&header(None, None, Some("US/Pacific")));
        assert_eq!(
            note.as_deref(),
            Some("no UnixStartTime: submit 0 taken as Thursday 1970-01-01 00:00 US/Pacific")
        );
        assert_eq!(clock.unix_start, 8 * 3600);
        assert_eq!(weeks(&clock, 0, 2 * WEEK)[0].start, 4 * 86400);
    }

    #[test]
    fn utc_constructor() {
        let clock = LocalClock::utc(86400 * 3); // submit 0 = Sunday 1970-01-04 00:00 UTC
        let w = weeks(&clock, 0, 3 * WEEK);
        assert_eq!(w.len(), 3);
        assert_eq!(
            w[0],
            Week {
                index: 0,
                start: 86400,
                end: 86400 + WORK_WEEK
            }
        );
        assert_eq!(w[2].start, 86400 + 2 * WEEK);
    }

    #[test]
    fn extreme_inputs_give_no_weeks_and_never_panic() {
        let named = LocalClock::from_header(&header(Some(0), None, Some("US/Eastern"))).0;
        let huge = LocalClock::utc(i64::MAX);
        let tiny = LocalClock::utc(i64::MIN);
        for clock in [&named, &huge, &tiny, &LocalClock::utc(0)] {
            for (a, b) in [
                (i64::MIN, i64::MAX),
                (i64::MAX, i64::MAX),
                (i64::MIN, i64::MIN),
                (0, i64::MAX),
                (i64::MIN, 0),
                (10, 5),
                (MAX_INSTANT - WEEK, MAX_INSTANT),
                (MIN_INSTANT, MIN_INSTANT + 3 * WEEK),
            ] {
                let w = weeks(clock, a, b);
                assert!(w.windows(2).all(|p| p[0].end < p[1].start));
                assert!(w.iter().all(|x| a <= x.start && x.end <= b));
            }
        }
        assert!(weeks(&huge, 0, WEEK * 10).is_empty());
        assert!(weeks(&tiny, 0, WEEK * 10).is_empty());
        // Near the end of the supported range, weeks still come out (and stop cleanly).
        let w = weeks(&LocalClock::utc(0), MAX_INSTANT - 3 * WEEK, MAX_INSTANT);
        assert!((2..=3).contains(&w.len()));
        let w = weeks(&named, MIN_INSTANT + 86400, MIN_INSTANT + 3 * WEEK);
        assert!((1..=3).contains(&w.len()));
    }

    #[test]
    fn legacy_zone_names_are_known() {
        for name in [
            "US/Eastern",
            "US/Pacific",
            "US/Mountain",
            "US/Central",
            "Europe/Stockholm",
            "Europe/Paris",
        ] {
            let (_, note) = LocalClock::from_header(&header(Some(0), None, Some(name)));
            assert_eq!(note, None, "{name}");
        }
    }
}
