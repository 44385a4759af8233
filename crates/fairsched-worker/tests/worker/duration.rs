//! `--grace` values.

use std::time::Duration;

use fairsched_worker::{ParseDurationError, parse_duration};

#[test]
fn reads_each_unit() {
    let table = [
        ("500ms", Duration::from_millis(500)),
        ("10s", Duration::from_secs(10)),
        ("2m", Duration::from_secs(120)),
        ("1h", Duration::from_secs(3600)),
        ("0s", Duration::ZERO),
        (" 7 s ", Duration::from_secs(7)),
    ];
    for (input, expected) in table {
        assert_eq!(parse_duration(input), Ok(expected), "{input:?}");
    }
}

#[test]
fn refuses_what_it_cannot_read() {
    assert_eq!(parse_duration(""), Err(ParseDurationError::Empty));
    assert!(matches!(
        parse_duration("10"),
        Err(ParseDurationError::NoUnit { .. })
    ));
    assert!(matches!(
        parse_duration("s"),
        Err(ParseDurationError::NoNumber { .. })
    ));
    assert!(matches!(
        parse_duration("-1s"),
        Err(ParseDurationError::NoNumber { .. })
    ));
    assert!(matches!(
        parse_duration("1.5s"),
        Err(ParseDurationError::BadUnit { .. })
    ));
    assert!(matches!(
        parse_duration("3w"),
        Err(ParseDurationError::BadUnit { .. })
    ));
    assert_eq!(
        parse_duration("7d"),
        Ok(std::time::Duration::from_secs(7 * 86_400))
    );
    assert!(matches!(
        parse_duration("99999999999999999999s"),
        Err(ParseDurationError::Overflow { .. })
    ));
    assert!(matches!(
        parse_duration("18446744073709551615h"),
        Err(ParseDurationError::Overflow { .. })
    ));
    let message = parse_duration("10").unwrap_err().to_string();
    assert!(message.contains("10ms"), "{message}");
}
