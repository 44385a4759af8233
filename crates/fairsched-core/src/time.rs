//! Simulated and wall time as integral milliseconds.
//!
//! The spec (spec/README.md, "Time") asks for a fixed-point clock: SWF logs
//! count seconds, Diet-ethic needs tenths of a second. Every instant and
//! duration in the core is a [`Time`]: milliseconds since the start of the
//! run (or of the window being replayed).

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use serde::{Deserialize, Serialize};

/// Milliseconds per second.
pub const MS_PER_SEC: i64 = 1000;

/// An instant or a duration in milliseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Time(pub i64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(i64::MAX);
    pub const MIN: Time = Time(i64::MIN);

    pub const fn from_secs(s: i64) -> Time {
        Time(s.saturating_mul(MS_PER_SEC))
    }
    pub const fn from_millis(ms: i64) -> Time {
        Time(ms)
    }
    pub const fn millis(self) -> i64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MS_PER_SEC as f64
    }
    /// Whole seconds, rounded toward negative infinity.
    pub const fn whole_secs(self) -> i64 {
        self.0.div_euclid(MS_PER_SEC)
    }
    pub fn saturating_sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, o: Time) {
        *self = *self + o;
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
}

/// Seconds, with three decimals only when the value is not whole
/// (`12`, `0.5`, `-3.25`): stable text for CSV and JSON outputs.
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        if ms % MS_PER_SEC == 0 {
            write!(f, "{}", ms / MS_PER_SEC)
        } else {
            let sign = if ms < 0 { "-" } else { "" };
            let a = ms.unsigned_abs();
            // Milliseconds without trailing zeros: 500 → "5", 250 → "25", 1 → "001".
            let (mut frac, mut width) = (a % 1000, 3);
            while frac % 10 == 0 {
                frac /= 10;
                width -= 1;
            }
            write!(f, "{sign}{}.{frac:0width$}", a / 1000)
        }
    }
}
impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn display_is_seconds() {
        assert_eq!(Time::from_secs(12).to_string(), "12");
        assert_eq!(Time(500).to_string(), "0.5");
        assert_eq!(Time(-3250).to_string(), "-3.25");
        assert_eq!(Time(1).to_string(), "0.001");
    }
    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time::MAX + Time(5), Time::MAX);
        assert_eq!(Time::from_secs(3) - Time::from_secs(1), Time::from_secs(2));
    }
}
