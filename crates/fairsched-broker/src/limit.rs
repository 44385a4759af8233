//! A per-client rate limit for the routes that need no token (the
//! dashboard, `/metrics`, `/openapi.json`, `/healthz`): one token bucket
//! per client address, in a map of bounded size.
//!
//! A client is its IP address; an IPv6 client is its /64 (one host
//! usually holds a whole /64, and would otherwise get 2⁶⁴ buckets). Behind
//! a proxy every client is the proxy: the proxy limits them.
//!
//! The map holds at most [`MAX_CLIENTS`] buckets. A bucket that has filled
//! up again is the same as none, so when the map is full those are
//! dropped (at most once a second: a sweep walks the whole map); a new
//! client that still finds it full shares one bucket with every other
//! such client until a sweep makes room.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Clients with a bucket of their own at once.
pub const MAX_CLIENTS: usize = 4096;

/// How often a full map is swept at most.
const SWEEP_GAP: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Refills at `rate` a second, up to `burst`, as of `now`.
    fn refill(&mut self, now: Instant, rate: f64, burst: f64) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * rate).min(burst);
        self.at = now;
    }
}

/// Per-client token buckets.
#[derive(Debug)]
pub struct Limiter {
    rate: f64,
    burst: f64,
    max_clients: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    buckets: HashMap<IpAddr, Bucket>,
    /// The clients that found the map full.
    overflow: Bucket,
    last_sweep: Option<Instant>,
}

impl Limiter {
    /// `rate` requests a second per client, `burst` at once; `rate` 0: no
    /// limit.
    pub fn new(rate: u32, burst: u32) -> Limiter {
        Limiter::with_capacity(rate, burst, MAX_CLIENTS)
    }

    fn with_capacity(rate: u32, burst: u32, max_clients: usize) -> Limiter {
        let burst = f64::from(burst.max(1));
        Limiter {
            rate: f64::from(rate),
            burst,
            max_clients,
            state: Mutex::new(State {
                buckets: HashMap::new(),
                overflow: Bucket {
                    tokens: burst,
                    at: Instant::now(),
                },
                last_sweep: None,
            }),
        }
    }

    /// Takes one request of `client` at `now`: `Ok`, or how long until it
    /// may send the next one.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        if self.rate <= 0.0 {
            return Ok(());
        }
        let key = client_key(client);
        let (rate, burst) = (self.rate, self.burst);
        let mut guard = self.state.lock().expect("not poisoned");
        let st = &mut *guard;
        if !st.buckets.contains_key(&key) && st.buckets.len() >= self.max_clients {
            let due = st
                .last_sweep
                .is_none_or(|t| now.saturating_duration_since(t) >= SWEEP_GAP);
            if due {
                st.last_sweep = Some(now);
                st.buckets.retain(|_, b| {
                    b.refill(now, rate, burst);
                    b.tokens < burst
                });
            }
        }
        let fresh = Bucket {
            tokens: burst,
            at: now,
        };
        let b = if st.buckets.contains_key(&key) || st.buckets.len() < self.max_clients {
            st.buckets.entry(key).or_insert(fresh)
        } else {
            &mut st.overflow
        };
        b.refill(now, rate, burst);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.tokens) / rate))
        }
    }

    /// Clients with a bucket of their own now.
    pub fn clients(&self) -> usize {
        self.state.lock().expect("not poisoned").buckets.len()
    }
}

/// The client an address stands for: an IPv4 address (also when mapped
/// into IPv6), or an IPv6 /64.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_burst_then_the_rate() {
        let l = Limiter::new(10, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(l.take(ip("10.0.0.1"), t0).is_ok());
        }
        let wait = l.take(ip("10.0.0.1"), t0).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        // Another client has its own bucket.
        assert!(l.take(ip("10.0.0.2"), t0).is_ok());
        // One token back after 1/rate.
        let t1 = t0 + Duration::from_millis(100);
        assert!(l.take(ip("10.0.0.1"), t1).is_ok());
        assert!(l.take(ip("10.0.0.1"), t1).is_err());
    }

    #[test]
    fn rate_zero_is_no_limit() {
        let l = Limiter::new(0, 1);
        let t0 = Instant::now();
        for _ in 0..1000 {
            assert!(l.take(ip("10.0.0.1"), t0).is_ok());
        }
        assert_eq!(l.clients(), 0);
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        let l = Limiter::new(1, 1);
        let t0 = Instant::now();
        assert!(l.take(ip("2001:db8::1"), t0).is_ok());
        assert!(l.take(ip("2001:db8::ffff:2"), t0).is_err());
        assert!(l.take(ip("2001:db8:0:1::1"), t0).is_ok());
        // IPv4 mapped into IPv6 is the IPv4 client.
        assert!(l.take(ip("192.0.2.1"), t0).is_ok());
        assert!(l.take(ip("::ffff:192.0.2.1"), t0).is_err());
    }

    /// Many clients never grow the map past its bound; idle ones make room
    /// again; while it is full, newcomers share one bucket.
    #[test]
    fn the_map_is_bounded() {
        let l = Limiter::with_capacity(1, 2, 8);
        let t0 = Instant::now();
        for i in 0..100u32 {
            let _ = l.take(IpAddr::V4(i.into()), t0);
            assert!(l.clients() <= 8);
        }
        assert_eq!(l.clients(), 8);
        // The newcomers shared the overflow bucket: it is empty.
        assert!(l.take(ip("10.9.9.9"), t0).is_err());
        // Two seconds on, every bucket has filled up: a sweep drops them.
        let t1 = t0 + Duration::from_secs(2);
        assert!(l.take(ip("10.9.9.9"), t1).is_ok());
        assert_eq!(l.clients(), 1);
    }
}
