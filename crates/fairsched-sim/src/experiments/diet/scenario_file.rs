//! `--scenario-file FILE`: a user's own Diet-ethic set-up in TOML.
//!
//! ```toml
//! servers = 10
//!
//! [[user]]
//! arrival = 0        # s (absolute)
//! deadline = 100     # s (absolute, ≥ arrival)
//! n_min = 3
//! n_max = 1000
//! duration = 1.0     # s, every request of the user
//! count = 5          # optional: this many identical users (default 1)
//! ```
//!
//! A mistake is reported as ``FILE:LINE: key `user[1].n_min`: …``.

use super::{Setup, User};
use crate::errors::SimError;
use crate::platform_file::{Locator, Num};
use fairsched_core::Time;
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

/// Limits that keep a file from asking for more than a machine can hold.
const MAX_SERVERS: i64 = 100_000;
const MAX_USERS: i64 = 100_000;
const MAX_REQUESTS: i64 = 10_000_000;
/// Σ n_max over all users: what the legacy system may hold at once.
const MAX_TOTAL_REQUESTS: i64 = 2_000_000;
/// Times up to about 31 years, in seconds.
const MAX_SECONDS: f64 = 1e9;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    servers: Spanned<i64>,
    #[serde(default)]
    user: Option<Spanned<Vec<Spanned<RawUser>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUser {
    arrival: Spanned<Num>,
    deadline: Spanned<Num>,
    n_min: Spanned<i64>,
    n_max: Spanned<i64>,
    duration: Spanned<Num>,
    #[serde(default)]
    count: Option<Spanned<i64>>,
}

/// Reads and checks a scenario file.
pub fn load(path: &Path) -> Result<Setup, SimError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| SimError::Config(format!("{}: {e}", path.display())))?;
    parse(path, &text)
}

/// Parses `text`; messages name `path`.
pub fn parse(path: &Path, text: &str) -> Result<Setup, SimError> {
    let (loc, raw) = Locator::parse::<RawFile>(path, text)?;
    let servers = *raw.servers.get_ref();
    if !(1..=MAX_SERVERS).contains(&servers) {
        return Err(loc.error(
            raw.servers.span(),
            format!("expected 1 to {MAX_SERVERS} servers, found {servers}"),
        ));
    }
    let Some(list) = raw.user else {
        return Err(loc.error_at(
            1,
            Some("user"),
            "no user: declare at least one with a [[user]] table",
        ));
    };
    let secs = |n: &Spanned<Num>, what: &str, min: f64, strict: bool| -> Result<Time, SimError> {
        let v = n.get_ref().f();
        let ok = v.is_finite() && v <= MAX_SECONDS && if strict { v > min } else { v >= min };
        if !ok {
            let bound = if strict {
                format!("more than {min}")
            } else {
                format!("at least {min}")
            };
            return Err(loc.error(
                n.span(),
                format!("{what} must be {bound} s and at most {MAX_SECONDS} s, found {v}"),
            ));
        }
        let t = Time::from_millis((v * 1000.0).round() as i64);
        if strict && t <= Time::from_millis((min * 1000.0).round() as i64) {
            return Err(loc.error(
                n.span(),
                format!("{what} must be at least 0.001 s (times are kept in milliseconds), found {v}"),
            ));
        }
        Ok(t)
    };
    let mut total: i64 = 0;
    let mut users = Vec::new();
    for u in list.get_ref() {
        let u = u.get_ref();
        let arrival = secs(&u.arrival, "arrival", 0.0, false)?;
        let deadline = secs(&u.deadline, "deadline", 0.0, false)?;
        if deadline < arrival {
            return Err(loc.error(u.deadline.span(), "the deadline is before the arrival"));
        }
        let duration = secs(&u.duration, "duration", 0.0, true)?;
        let (n_min, n_max) = (*u.n_min.get_ref(), *u.n_max.get_ref());
        if !(1..=MAX_REQUESTS).contains(&n_min) {
            return Err(loc.error(
                u.n_min.span(),
                format!("expected 1 to {MAX_REQUESTS}, found {n_min}"),
            ));
        }
        if !(n_min..=MAX_REQUESTS).contains(&n_max) {
            return Err(loc.error(
                u.n_max.span(),
                format!("expected n_min ({n_min}) to {MAX_REQUESTS}, found {n_max}"),
            ));
        }
        let count = u.count.as_ref().map_or(1, |c| *c.get_ref());
        if !(1..=MAX_USERS).contains(&count) || users.len() as i64 + count > MAX_USERS {
            let span = u.count.as_ref().map_or(u.n_min.span(), |c| c.span());
            return Err(loc.error(span, format!("at most {MAX_USERS} users in all, each count ≥ 1")));
        }
        total = total.saturating_add(count.saturating_mul(n_max));
        if total > MAX_TOTAL_REQUESTS {
            let span = u.count.as_ref().map_or(u.n_max.span(), |c| c.span());
            return Err(loc.error(
                span,
                format!("the users may submit {total} requests in all (count × n_max summed); at most {MAX_TOTAL_REQUESTS}"),
            ));
        }
        for _ in 0..count {
            users.push(User {
                arrival,
                deadline,
                n_min: n_min as u32,
                n_max: n_max as u32,
                duration,
            });
        }
    }
    if users.is_empty() {
        return Err(loc.error(list.span(), "no user: declare at least one with a [[user]] table"));
    }
    Ok(Setup {
        servers: servers as u32,
        users,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gives_its_users() {
        let s = parse(
            Path::new("s.toml"),
            "servers = 2\n[[user]]\narrival = 0\ndeadline = 10.5\nn_min = 1\nn_max = 5\nduration = 0.75\ncount = 2\n\
             [[user]]\narrival = 3\ndeadline = 9\nn_min = 2\nn_max = 2\nduration = 1\n",
        )
        .unwrap();
        assert_eq!(s.servers, 2);
        assert_eq!(s.users.len(), 3);
        assert_eq!(s.users[0].deadline.millis(), 10_500);
        assert_eq!(s.users[1].duration.millis(), 750);
        assert_eq!((s.users[2].arrival.millis(), s.users[2].n_min), (3000, 2));
    }

    #[test]
    fn mistakes_name_the_line_and_key() {
        let cases = [
            (
                "servers = 0\n[[user]]\narrival=0\ndeadline=1\nn_min=1\nn_max=1\nduration=1\n",
                "s.toml:1: key `servers`",
            ),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1\nn_min=3\nn_max=2\nduration=1\n",
                "s.toml:6: key `user[0].n_max`",
            ),
            (
                "servers = 1\n[[user]]\narrival=5\ndeadline=1\nn_min=1\nn_max=2\nduration=1\n",
                "s.toml:4: key `user[0].deadline`",
            ),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1\nn_min=1\nn_max=2\nduration=0\n",
                "duration must be more than 0",
            ),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1\nn_min=1\nn_max=2\nduration=1\nspeed=2\n",
                "speed",
            ),
            ("servers = 1\n", "no user"),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1\nn_min=1\nn_max=2\nduration=0.0004\n",
                "s.toml:7: key `user[0].duration`: duration must be at least 0.001 s",
            ),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1\nn_min=1\nn_max=10000000\nduration=1\ncount=1000\n",
                "s.toml:8: key `user[0].count`: the users may submit",
            ),
            (
                "servers = 1\n[[user]]\narrival=\"zero\"\ndeadline=1\nn_min=1\nn_max=2\nduration=1\n",
                "a number",
            ),
            (
                "servers = 1\n[[user]]\narrival=0\ndeadline=1e12\nn_min=1\nn_max=2\nduration=1\n",
                "at most",
            ),
        ];
        for (text, want) in cases {
            let e = parse(Path::new("s.toml"), text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
