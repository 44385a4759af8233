//! The Diet-ethic experiment: clients, servers and metrics end to end.

use fairsched_core::Time;
use fairsched_core::event::EndRecord;
use fairsched_core::model::Outcome;
use fairsched_core::sink::{Observer, TaskMeta};
use fairsched_sim::experiments::diet::{self as exp, Setup, System, User};
use std::collections::BTreeMap;

#[derive(Default)]
struct Ends(Vec<EndRecord>);
impl Observer for Ends {
    fn on_task(&mut self, rec: &EndRecord, _m: &TaskMeta) {
        self.0.push(rec.clone());
    }
    fn wants_steps(&self) -> bool {
        false
    }
}

fn ends(setup: &Setup, system: System, seed: u64) -> (exp::RunResult, Vec<EndRecord>) {
    let mut e = Ends::default();
    let r = exp::run_observed(&fairsched_core::Registry::builtin(), setup, &system, seed, &mut e).unwrap();
    (r, e.0)
}

/// The dispatcher never has two optional requests of one user queued on
/// one server at once, and never submits more than n_max requests.
#[test]
fn the_dispatcher_keeps_one_optional_per_server_and_at_most_n_max() {
    for name in ["night-consecutive", "day-irregular-random"] {
        let mut setup = exp::scenario(name, 4).unwrap();
        // A small n_max for some users so that the cap binds.
        for (i, u) in setup.users.iter_mut().enumerate() {
            if i % 2 == 0 {
                u.n_max = 40;
            }
        }
        let (_, recs) = ends(&setup, System::DietEthic, 4);
        let mut per_user: BTreeMap<i64, u32> = BTreeMap::new();
        let mut spans: BTreeMap<(i64, u32), Vec<(i64, i64)>> = BTreeMap::new();
        for r in &recs {
            *per_user.entry(r.spec.user.0).or_default() += 1;
            if r.spec.optional {
                let m = r.spec.target.unwrap().0;
                spans
                    .entry((r.spec.user.0, m))
                    .or_default()
                    .push((r.submit.millis(), r.end.millis()));
            }
        }
        for (u, n) in &per_user {
            let cap = setup.users[*u as usize].n_max;
            assert!(*n <= cap, "{name}: user {u} submitted {n} > n_max {cap}");
        }
        for ((u, m), mut v) in spans {
            v.sort();
            for w in v.windows(2) {
                // The next optional request goes in when the previous ends.
                assert!(
                    w[1].0 >= w[0].1,
                    "{name}: user {u} has two optional requests on server {m}: {w:?}"
                );
            }
        }
    }
}

/// The paper's headline on the night-consecutive scenario with fixed
/// seeds: Diet-ethic leaves nobody unhappy and is fairer than the legacy
/// system at n_submit = 1000.
#[test]
fn diet_ethic_beats_the_legacy_system_on_night_consecutive() {
    let points = exp::sweep(
        &fairsched_core::Registry::builtin(),
        "night-consecutive",
        None,
        &[1000],
        5,
        11,
        &|| {},
    )
    .unwrap();
    let (diet, legacy) = (&points[0], &points[1]);
    assert_eq!(diet.unhappy, 0.0, "{diet:?}");
    assert!(diet.unfairness < legacy.unfairness, "{diet:?} vs {legacy:?}");
}

/// Kills: a mandatory request reaching a server that runs an optional one
/// kills it; the killed run's time counts as allocated. One server, user
/// 0 (t0 = 0, n_min = 1) and user 1 (t0 = 0.5 s, n_min = 1), requests of
/// 1 s. User 0 sends its mandatory (0–1) and an optional (1–2); user 1
/// arrives at 0.5 and queues a mandatory and an optional behind. At 1 s
/// the mandatory of user 1 goes first (mandatory before optional), and so
/// on; every mandatory completes by the deadline.
#[test]
fn every_run_counts_as_allocated_time() {
    let setup = Setup {
        servers: 1,
        users: vec![
            User {
                arrival: Time::ZERO,
                deadline: Time::from_secs(10),
                n_min: 1,
                n_max: 100,
                duration: Time::from_secs(1),
            },
            User {
                arrival: Time::from_millis(500),
                deadline: Time::from_secs(10),
                n_min: 1,
                n_max: 100,
                duration: Time::from_secs(1),
            },
        ],
    };
    let (r, recs) = ends(&setup, System::DietEthic, 0);
    assert_eq!(r.metrics.unhappy, 0);
    let mut allocated = [0i64; 2];
    for rec in &recs {
        for run in rec.requeued.iter().chain(rec.last.iter()) {
            allocated[rec.spec.user.0 as usize] += (run.stop - run.start).millis();
        }
    }
    // The single server is never idle from 0 to 10 s and both leave at 10.
    assert_eq!(allocated[0] + allocated[1], 10_000, "{recs:#?}");
    let completed = recs.iter().filter(|r| r.outcome == Outcome::Completed).count() as u64;
    assert_eq!(r.metrics.completed, completed);
}

#[test]
fn the_legacy_system_needs_the_right_n_submit() {
    // n_submit = 3 (only the mandatory) completes 30 requests; the servers
    // then idle, so the sweep's completions grow with n_submit.
    let points = exp::sweep(
        &fairsched_core::Registry::builtin(),
        "night-simultaneous",
        None,
        &[3, 100],
        3,
        2,
        &|| {},
    )
    .unwrap();
    assert_eq!(points[1].completed, 30.0);
    assert_eq!(points[1].unhappy, 0.0);
    assert!(points[2].completed > 500.0, "{:?}", points[2]);
}

/// The legacy system's right n_submit. The paper (seed 004), §5.1.2
/// (night-time consecutive submissions): "unless all users guess the
/// ideal solution (that of each user submitting exactly nideal = 100
/// requests), the legacy system either does not manage to optimize the
/// number of completed requests (if nsubmit < nideal) or makes users
/// unhappy (if nsubmit > nideal)"; §5.1.3 (day-time, regular arrivals):
/// "One can observe that the legacy system behaves best for nsubmit =
/// 190. No users are unhappy, unfairness is low and the number of
/// completed requests is the highest". spec/diet-ethic.md, "Experiments
/// to reproduce": "the legacy system needs exactly the right `n_submit`
/// (100 in the consecutive scenario, 190 in the regular day-time one,
/// where it completes 1890 requests vs Diet-ethic's 1842, ≈ −2.5 %)".
///
/// Neither gives a formula (the paper read 190 off its Figure 6):
/// [`exp::legacy_right_n_submit`] derives it from the scenario (the
/// largest n whose requests meet every deadline on FCFS servers busy
/// from the first arrival) and must give 100 and 190. The replay checks
/// the derivation against the simulator: at n every request submitted
/// completes (10·n) and no user is unhappy; at n + 1 they no longer all
/// do, and unfairness rises; n completes more than n − 10 and as many as
/// n + 10, and is fairer than n + 10 (n − 10 is about as fair, or
/// slightly fairer: every user gets the same, less). At 190 in
/// day-regular ours completes 1,900 requests, the paper 1,890. Past n
/// ours makes nobody unhappy until the last user's mandatory requests
/// queue past its deadline (from n = 111 in night-consecutive, one
/// user): the paper's "makes users unhappy (if nsubmit > nideal)" holds
/// only that far past n, and is not tested here.
///
/// Night-consecutive's deadlines: ours are the paper's ("keep d(i) =
/// 100 s"), shared; the spec now says `d_i = t0_i + 100 s` for every
/// user. Under the spec's the last user's bound is 10 · 100.9 / 10, so
/// the right n is 100 as well (checked below, without a replay).
#[test]
fn the_legacy_systems_right_n_submit_is_100_and_190() {
    for (name, want) in [("night-consecutive", 100), ("day-regular", 190)] {
        let setup = exp::scenario(name, 0).unwrap();
        let right = exp::legacy_right_n_submit(&setup).unwrap();
        assert_eq!(right, want, "{name}");
        let points = exp::sweep(
            &fairsched_core::Registry::builtin(),
            name,
            None,
            &[right - 10, right, right + 1, right + 10],
            1,
            0,
            &|| {},
        )
        .unwrap();
        // points[0] is Diet-ethic; then the legacy runs in n_submit order.
        let [below, at, past, above] = [&points[1], &points[2], &points[3], &points[4]];
        assert_eq!(at.n_submit, Some(right), "{points:?}");
        assert_eq!(past.n_submit, Some(right + 1), "{points:?}");
        eprintln!("{name}:\n  {below:?}\n  {at:?}\n  {past:?}\n  {above:?}");
        let users = setup.users.len() as f64;
        assert_eq!(at.unhappy, 0.0, "{name}: {at:?}");
        // n is the largest at which everything submitted completes.
        assert_eq!(at.completed, users * f64::from(right), "{name}: {at:?}");
        assert!(past.completed < users * f64::from(right + 1), "{name}: {past:?}");
        // The requests that then miss are the last users': less fair.
        assert!(at.unfairness < past.unfairness, "{name}: {at:?} {past:?}");
        // Fewer leave servers idle: fewer requests done.
        assert!(at.completed > below.completed, "{name}: {below:?} {at:?}");
        // More do no more, and the last users' optional requests queue
        // behind the others' past their deadlines: unfairness jumps.
        assert!(at.completed >= above.completed, "{name}: {at:?} {above:?}");
        assert!(
            at.unfairness < above.unfairness,
            "{name}: unfairness at n_submit {right} is not below {}'s:\n{at:?}\n{above:?}",
            right + 10
        );
    }
    // The spec's night-consecutive deadlines, 100 s after each arrival.
    let mut spec = exp::scenario("night-consecutive", 0).unwrap();
    for u in &mut spec.users {
        u.deadline = u.arrival + Time::from_secs(100);
    }
    assert_eq!(exp::legacy_right_n_submit(&spec), Some(100));
}

#[test]
fn scenarios_are_as_the_spec_says() {
    let s = exp::scenario("day-regular", 0).unwrap();
    assert_eq!(s.servers, 10);
    let t: Vec<i64> = s.users.iter().map(|u| u.arrival.millis()).collect();
    assert_eq!(t, (0..10).map(|i| i * 10_000).collect::<Vec<_>>());
    let sc = exp::scenario("scalability", 0).unwrap();
    assert_eq!(
        (sc.servers, sc.users.len(), sc.users[0].n_max),
        (138, 100, 10_000)
    );
    // The daily cycle stays in 0.72–5.58 on the working day.
    for k in 0..=100 {
        let v = exp::daily_cycle(k as f64 / 100.0 - 0.5);
        assert!((0.7..=5.6).contains(&v), "{k}: {v}");
    }
    // About 40 clients arrive in the irregular scenario.
    let n: usize = (0..20)
        .map(|s| exp::scenario("day-irregular", s).unwrap().users.len())
        .sum();
    assert!((600..=1000).contains(&n), "{n} clients in 20 draws");
    let r = exp::scenario("day-irregular-random", 1).unwrap();
    assert!(
        r.users
            .iter()
            .all(|u| (750..=2000).contains(&u.duration.millis()))
    );
    assert!(exp::scenario("lunch", 0).is_err());
}

/// Day-time arrivals: each user has 100 s from its own arrival, and key 4
/// (least allocated on this server first) lets a newcomer catch up with the
/// server-time the earlier users already had there, so the last users to
/// arrive end with the most server-time. This is the mechanism behind
/// Diet-ethic's day-regular unfairness (docs/diet-ethic.md).
#[test]
fn day_regular_newcomers_catch_up_on_each_server() {
    let setup = exp::scenario("day-regular", 0).unwrap();
    for (i, u) in setup.users.iter().enumerate() {
        assert_eq!(u.deadline.millis() - u.arrival.millis(), 100_000, "user {i}");
    }
    let (r, recs) = ends(&setup, System::DietEthic, 0);
    assert_eq!(r.metrics.unhappy, 0);
    let mut alloc = [0i64; 10];
    for x in &recs {
        alloc[x.spec.user.0 as usize] += x.busy().millis();
    }
    // Users 1..9 each leave later and hold more than the one before.
    for w in alloc[1..].windows(2) {
        assert!(w[0] < w[1], "server-time per user {alloc:?}");
    }
    // The last one holds more than 3× the second (ideal timing: 100 + 100·H_9
    // ≈ 383 s against ≈ 111 s).
    assert!(alloc[9] > 3 * alloc[1], "{alloc:?}");
    // All 10 servers stay busy from 0 to 190 s: nothing is lost in kills.
    assert_eq!(alloc.iter().sum::<i64>(), 1_900_000);
}
