//! The door's two limits: a per-client rate limit for the routes that
//! need no token ([`Limiter`]), and the memory request bodies may hold,
//! budgeted per principal ([`BodyBudget`]).
//!
//! **Rate limit** (the dashboard, `/metrics`, `/openapi.json`,
//! `/healthz`): one token bucket per client address, in a map of bounded
//! size.
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

/// Who a request body's bytes are charged to: the principal its token
/// names (bodies are read only once the token is known).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyOwner {
    Admin,
    /// A user, by id.
    User(i64),
    /// An organization's worker token (it registers workers).
    WorkerToken(u32),
    /// One registered worker's session.
    Session(u64),
}

impl BodyOwner {
    /// Workers (their token and their sessions) draw on a pool of their
    /// own: users cannot take what the broker keeps to hear its workers.
    pub fn is_worker(self) -> bool {
        matches!(self, BodyOwner::WorkerToken(_) | BodyOwner::Session(_))
    }
}

/// Why [`BodyBudget::take`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The principal's own budget is used up (by its own bodies).
    Own,
    /// Its class's shared pool is used up (and its own floor too).
    Pool,
}

/// The memory request bodies hold while they are read, budgeted per
/// principal. Each principal (the admin, a user, a worker session, an
/// organization's worker token) may hold up to `per_principal` bytes, and
/// the first `floor` of them are its own whatever the others do; beyond
/// its floor it draws on a pool shared by its class (users and the admin;
/// workers), so that one principal cannot exhaust another's floor, nor
/// users the workers' pool. The most held at once is the two pools plus
/// `floor` per principal holding bytes: principals are tokens the admin
/// made, not anyone who connects (an anonymous request reads no body).
#[derive(Debug)]
pub struct BodyBudget {
    floor: usize,
    per_principal: usize,
    /// Users' pool, workers' pool.
    pools: [usize; 2],
    state: Mutex<BudgetState>,
}

#[derive(Debug, Default)]
struct BudgetState {
    /// Bytes each principal holds (none: no entry).
    held: HashMap<BodyOwner, usize>,
    /// Bytes taken from each pool: the sum, over its principals, of what
    /// each holds beyond its floor.
    drawn: [usize; 2],
}

impl BodyBudget {
    /// `floor` bytes of `per_principal` are each principal's own; beyond,
    /// the users' or the workers' pool (`floor` is at most `per_principal`).
    pub fn new(floor: usize, per_principal: usize, users_pool: usize, workers_pool: usize) -> BodyBudget {
        BodyBudget {
            floor: floor.min(per_principal),
            per_principal,
            pools: [users_pool, workers_pool],
            state: Mutex::default(),
        }
    }

    /// Takes `n` more bytes for `who`, or says why not (nothing taken).
    pub fn take(&self, who: BodyOwner, n: usize) -> Result<(), Refused> {
        let class = usize::from(who.is_worker());
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = st.held.get(&who).copied().unwrap_or(0);
        let after = held.checked_add(n).ok_or(Refused::Own)?;
        if after > self.per_principal {
            return Err(Refused::Own);
        }
        let more = after.saturating_sub(self.floor) - held.saturating_sub(self.floor);
        if st.drawn[class] + more > self.pools[class] {
            return Err(Refused::Pool);
        }
        st.drawn[class] += more;
        if after > 0 {
            st.held.insert(who, after);
        }
        Ok(())
    }

    /// Gives back `n` bytes `who` took.
    pub fn give(&self, who: BodyOwner, n: usize) {
        let class = usize::from(who.is_worker());
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = st.held.get(&who).copied().unwrap_or(0);
        let after = held.saturating_sub(n);
        let less = held.saturating_sub(self.floor) - after.saturating_sub(self.floor);
        st.drawn[class] -= less;
        if after == 0 {
            st.held.remove(&who);
        } else {
            st.held.insert(who, after);
        }
    }

    /// Bytes `who` holds now.
    pub fn held(&self, who: BodyOwner) -> usize {
        let st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.held.get(&who).copied().unwrap_or(0)
    }

    /// Bytes held by all the principals at once.
    pub fn total(&self) -> usize {
        let st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.held.values().sum()
    }

    /// Principals holding bytes now.
    pub fn holders(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .held
            .len()
    }
}

/// Bytes of a [`BodyBudget`] one body holds; given back when dropped.
#[derive(Debug)]
pub struct Held<'a> {
    budget: &'a BodyBudget,
    who: BodyOwner,
    bytes: usize,
}

impl<'a> Held<'a> {
    pub fn new(budget: &'a BodyBudget, who: BodyOwner) -> Held<'a> {
        Held {
            budget,
            who,
            bytes: 0,
        }
    }

    /// Takes `n` more bytes.
    pub fn take(&mut self, n: usize) -> Result<(), Refused> {
        self.budget.take(self.who, n)?;
        self.bytes += n;
        Ok(())
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.give(self.who, self.bytes);
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
    const MIB: usize = 1 << 20;

    /// A principal fills its own budget: it is refused, another is not.
    #[test]
    fn a_principal_cannot_take_anothers_share() {
        let b = BodyBudget::new(4 * MIB, 16 * MIB, 256 * MIB, 64 * MIB);
        let mallory = BodyOwner::User(1);
        let alice = BodyOwner::User(2);
        for _ in 0..4 {
            assert_eq!(b.take(mallory, 4 * MIB), Ok(()));
        }
        assert_eq!(b.take(mallory, 1), Err(Refused::Own));
        assert_eq!(b.held(mallory), 16 * MIB);
        assert_eq!(b.take(alice, 4 * MIB), Ok(()));
        assert_eq!(b.held(alice), 4 * MIB);
        b.give(mallory, 16 * MIB);
        b.give(alice, 4 * MIB);
        assert_eq!((b.total(), b.holders()), (0, 0));
    }

    /// Many principals exhaust the users' pool: each still has its floor,
    /// and the workers' pool is untouched.
    #[test]
    fn the_floor_stays_when_the_pool_is_gone() {
        let b = BodyBudget::new(4 * MIB, 16 * MIB, 24 * MIB, 8 * MIB);
        // Two users hold 16 MiB each: 12 + 12 beyond their floors, the
        // pool's 24.
        for u in [1, 2] {
            assert_eq!(b.take(BodyOwner::User(u), 16 * MIB), Ok(()));
        }
        assert_eq!(b.take(BodyOwner::User(3), 4 * MIB + 1), Err(Refused::Pool));
        assert_eq!(b.take(BodyOwner::User(3), 4 * MIB), Ok(()));
        assert_eq!(b.take(BodyOwner::Admin, 4 * MIB), Ok(()));
        assert_eq!(b.take(BodyOwner::Admin, 1), Err(Refused::Pool));
        // The workers' pool is another one.
        assert_eq!(b.take(BodyOwner::Session(7), 12 * MIB), Ok(()));
        assert_eq!(b.take(BodyOwner::Session(8), 4 * MIB + 1), Err(Refused::Pool));
        assert_eq!(b.take(BodyOwner::Session(8), 4 * MIB), Ok(()));
        assert_eq!(b.take(BodyOwner::WorkerToken(1), 4 * MIB), Ok(()));
        // Giving back beyond the floor returns it to the pool.
        b.give(BodyOwner::User(1), 4 * MIB);
        assert_eq!(b.take(BodyOwner::User(3), 4 * MIB), Ok(()));
        assert_eq!(b.take(BodyOwner::User(3), 1), Err(Refused::Pool));
    }

    /// What a principal holds within its floor never counts against the
    /// pool, however the bytes come and go.
    #[test]
    fn the_accounting_adds_up() {
        let b = BodyBudget::new(10, 30, 15, 0);
        let u = BodyOwner::User(1);
        let v = BodyOwner::User(2);
        assert_eq!(b.take(u, 6), Ok(()));
        assert_eq!(b.take(u, 6), Ok(())); // 12: 2 drawn
        assert_eq!(b.take(v, 23), Ok(())); // 13 drawn: 15 in all
        assert_eq!(b.take(u, 1), Err(Refused::Pool));
        assert_eq!(b.take(v, 8), Err(Refused::Own));
        b.give(u, 3); // 9: within its floor, 0 drawn
        assert_eq!(b.take(v, 2), Ok(())); // 25: 15 drawn
        assert_eq!(b.take(v, 1), Err(Refused::Pool));
        b.give(v, 25);
        b.give(u, 9);
        assert_eq!((b.total(), b.holders()), (0, 0));
        // A worker's pool of 0: the floor alone.
        let w = BodyOwner::Session(1);
        assert_eq!(b.take(w, 10), Ok(()));
        assert_eq!(b.take(w, 1), Err(Refused::Pool));
        assert_eq!(b.take(w, usize::MAX), Err(Refused::Own));
    }

    /// A held share is given back when dropped, also part way.
    #[test]
    fn held_gives_back_on_drop() {
        let b = BodyBudget::new(4, 8, 100, 100);
        {
            let mut h = Held::new(&b, BodyOwner::Admin);
            assert_eq!(h.take(5), Ok(()));
            assert_eq!(h.take(4), Err(Refused::Own));
            assert_eq!(h.bytes(), 5);
            assert_eq!(b.held(BodyOwner::Admin), 5);
        }
        assert_eq!((b.total(), b.holders()), (0, 0));
    }
}
