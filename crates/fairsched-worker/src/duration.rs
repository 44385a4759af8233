//! Durations on the command line: `500ms`, `10s`, `2m`, `1h`, `7d`.

use std::time::Duration;

use crate::errors::ParseDurationError;

/// Reads a whole number followed by a unit: `ms`, `s`, `m`, `h` or `d`
/// (`0s` is allowed; a bare number is refused because its unit is a guess).
///
/// ```
/// use std::time::Duration;
/// use fairsched_worker::parse_duration;
///
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
/// assert!(parse_duration("10").is_err());
/// ```
pub fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(ParseDurationError::Empty);
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = s.split_at(digits);
    if number.is_empty() {
        return Err(ParseDurationError::NoNumber {
            input: input.to_owned(),
        });
    }
    let overflow = || ParseDurationError::Overflow {
        input: input.to_owned(),
    };
    let n: u64 = number.parse().map_err(|_| overflow())?;
    let millis_per_unit: u64 = match unit.trim_start() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "" => {
            return Err(ParseDurationError::NoUnit {
                input: input.to_owned(),
            });
        }
        other => {
            return Err(ParseDurationError::BadUnit {
                input: input.to_owned(),
                unit: other.to_owned(),
            });
        }
    };
    let millis = n.checked_mul(millis_per_unit).ok_or_else(overflow)?;
    Ok(Duration::from_millis(millis))
}
