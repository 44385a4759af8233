//! The KTH-SP2 log cut into local-time Monday–Friday weeks, checked against GNU `date`.
//! Skipped (not failed) if the data is absent.

use std::path::Path;

use chrono::{DateTime, Datelike, Timelike, Weekday};
use chrono_tz::Tz;
use fairsched_trace::{LocalClock, scan, weeks};

const SWF_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/traces/swf");

#[test]
fn kth_sp2_has_46_stockholm_weeks() {
    let path = Path::new(SWF_DIR).join("KTH-SP2-1996-2.1-cln.swf.gz");
    if !path.is_file() {
        // Straight to the stderr handle: libtest captures eprintln! of
        // passing tests, and this reason must show in every run.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipping {}: ../shared/data not found\n", module_path!()).as_bytes(),
        );
        return;
    }
    let s = scan(&path, false).unwrap();
    assert_eq!(s.header.unix_start_time, Some(843_480_031));
    assert_eq!(s.header.time_zone_string.as_deref(), Some("Europe/Stockholm"));
    let (clock, note) = LocalClock::from_header(&s.header);
    assert_eq!(note, None);
    assert_eq!(clock.describe(), "Europe/Stockholm from UnixStartTime 843480031");

    // Independent computation (awk over the job lines, GNU date for the calendar):
    //   zcat KTH-SP2-1996-2.1-cln.swf.gz | awk '!/^;/ && $4>0 && ($5>0||$8>0) {…min/max $2…}'
    //     → first kept submit 599850, last 29363618 (the same over all job lines);
    //   TZ=Europe/Stockholm date -d @$((843480031+599850))   → Mon Sep 30 12:38:01 CEST 1996
    //   TZ=Europe/Stockholm date -d @$((843480031+29363618)) → Fri Aug 29 10:34:09 CEST 1997
    // so the first week is Mon 1996-10-07 and the last complete one Mon 1997-08-18
    // (its Saturday 08-23 is before Aug 29; the next one ends Sat 08-30, after the log):
    //   TZ=Europe/Stockholm date -d '1996-10-07 00:00' +%s → 844639200 (log second 1159169)
    //   TZ=Europe/Stockholm date -d '1997-08-18 00:00' +%s → 871855200 (log second 28375169)
    //   TZ=Europe/Stockholm date -d '1997-08-23 00:00' +%s → 872287200 (log second 28807169)
    // (871855200 − 844639200) / 604800 = 45 (the fall and spring hours cancel), so 46 weeks.
    let (first, last) = (s.first_submit.unwrap(), s.last_submit.unwrap());
    assert_eq!((first, last), (599_850, 29_363_618));
    let w = weeks(&clock, first, last);
    assert_eq!(w.len(), 46);
    assert_eq!(w[0].start, 844_639_200 - 843_480_031);
    let end = w.last().unwrap();
    assert_eq!((end.index, end.start, end.end), (45, 28_375_169, 28_807_169));

    let stockholm: Tz = "Europe/Stockholm".parse().unwrap();
    let local = |t: i64| {
        DateTime::from_timestamp(843_480_031 + t, 0)
            .unwrap()
            .with_timezone(&stockholm)
    };
    let monday = local(w[0].start);
    assert_eq!(
        (monday.weekday(), monday.hour(), monday.minute(), monday.second()),
        (Weekday::Mon, 0, 0, 0)
    );
    assert_eq!(monday.date_naive().to_string(), "1996-10-07");
    for (i, x) in w.iter().enumerate() {
        assert_eq!(x.index as usize, i);
        // Stockholm changes clocks on Sundays, so every Mon–Sat span is exactly 5 days.
        assert_eq!(x.end - x.start, 432_000);
        let (a, b) = (local(x.start), local(x.end));
        assert_eq!(
            (a.weekday(), a.time().num_seconds_from_midnight()),
            (Weekday::Mon, 0)
        );
        assert_eq!(
            (b.weekday(), b.time().num_seconds_from_midnight()),
            (Weekday::Sat, 0)
        );
    }
    assert!(
        w.windows(2)
            .all(|p| [604_800 - 3600, 604_800, 604_800 + 3600].contains(&(p[1].start - p[0].start)))
    );
}
