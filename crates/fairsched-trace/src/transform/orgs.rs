//! [`UserOrgMap`]: users to organizations, seeded and independent of stream order; and
//! [`MapOrgsWith`]: any mapping of jobs to organizations that may refuse a job.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use super::JobItem;
use crate::errors::{Result, TraceError};
use crate::job::Job;

/// Maps each user id to an organization in `0..k`, uniformly at random.
///
/// The organization depends only on `(seed, user)`: a `Pcg64Mcg` is seeded from
/// `seed ^ splitmix64(user)` for each lookup, so the same user gets the same organization
/// in every window of a trace and whatever order jobs arrive in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserOrgMap {
    k: u32,
    seed: u64,
}

impl UserOrgMap {
    /// `k` organizations (≥ 1).
    pub fn new(k: u32, seed: u64) -> Result<Self> {
        if k == 0 {
            return Err(TraceError::Config(
                "user→organization map needs at least 1 organization".into(),
            ));
        }
        Ok(UserOrgMap { k, seed })
    }

    /// Number of organizations.
    pub fn orgs(&self) -> u32 {
        self.k
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Organization of `user`, in `0..k`.
    pub fn org_of(&self, user: i64) -> u32 {
        let mut rng = Pcg64Mcg::seed_from_u64(self.seed ^ splitmix64(user as u64));
        rng.random_range(0..self.k)
    }
}

/// SplitMix64 finalizer: spreads nearby user ids over the whole seed space.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Iterator adapter returned by [`super::JobIteratorExt::map_orgs`].
#[derive(Debug, Clone)]
pub struct MapOrgs<I> {
    inner: I,
    map: UserOrgMap,
}

impl<I> MapOrgs<I> {
    pub(super) fn new(inner: I, map: UserOrgMap) -> Self {
        MapOrgs { inner, map }
    }
}

impl<I> Iterator for MapOrgs<I>
where
    I: Iterator,
    I::Item: JobItem,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let mut item = self.inner.next()?;
        if let Some(job) = item.job_mut() {
            job.org = self.map.org_of(job.user);
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// Iterator adapter returned by [`super::JobIteratorExt::map_orgs_with`].
///
/// Sets each job's `org` with a fallible function. The first job the function refuses
/// becomes an error item, `TraceError::Config("job N: <the function's message>")`, and
/// the stream ends there (nothing is read after it). Errors already in the stream pass
/// through untouched.
#[derive(Debug, Clone)]
pub struct MapOrgsWith<I, F> {
    inner: I,
    f: F,
    done: bool,
}

impl<I, F> MapOrgsWith<I, F> {
    pub(super) fn new(inner: I, f: F) -> Self {
        MapOrgsWith {
            inner,
            f,
            done: false,
        }
    }
}

impl<I, F, E> Iterator for MapOrgsWith<I, F>
where
    I: Iterator<Item = std::result::Result<Job, E>>,
    E: From<TraceError>,
    F: FnMut(&Job) -> std::result::Result<u32, String>,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if self.done {
            return None;
        }
        let mut item = self.inner.next()?;
        if let Ok(job) = &mut item {
            match (self.f)(job) {
                Ok(org) => job.org = org,
                Err(msg) => {
                    self.done = true;
                    return Some(Err(TraceError::Config(format!("job {}: {msg}", job.id)).into()));
                }
            }
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            (0, self.inner.size_hint().1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Job;
    use crate::transform::{JobIteratorExt, test_job};

    #[test]
    fn deterministic_and_order_independent() {
        let map = UserOrgMap::new(5, 7).unwrap();
        let forward: Vec<u32> = (0..100).map(|u| map.org_of(u)).collect();
        let backward: Vec<u32> = (0..100).rev().map(|u| map.org_of(u)).collect();
        assert!(forward.iter().eq(backward.iter().rev()));
        assert!(forward.iter().all(|&o| o < 5));
        let other = UserOrgMap::new(5, 8).unwrap();
        assert_ne!(forward, (0..100).map(|u| other.org_of(u)).collect::<Vec<_>>());
    }

    #[test]
    fn roughly_uniform() {
        let map = UserOrgMap::new(4, 1).unwrap();
        let mut hist = [0u32; 4];
        for u in 0..40_000 {
            hist[map.org_of(u) as usize] += 1;
        }
        for h in hist {
            assert!((9_500..10_500).contains(&h), "{hist:?}");
        }
    }

    #[test]
    fn windows_agree() {
        let map = UserOrgMap::new(3, 99).unwrap();
        let jobs: Vec<Job> = (0..50)
            .map(|i| test_job(i, i as i64, 1, (i % 7) as i64))
            .collect();
        let all: Vec<Job> = jobs.clone().into_iter().map_orgs(map).collect();
        let late: Vec<Job> = jobs.into_iter().window(25, 100).map_orgs(map).collect();
        for j in &late {
            assert_eq!(all[j.id as usize].org, j.org);
        }
    }

    #[test]
    fn map_orgs_with_sets_orgs_and_stops_at_the_first_refusal() {
        let jobs: Vec<Result<Job>> = (0..6).map(|i| Ok(test_job(i, i as i64, 1, i as i64))).collect();
        let out: Vec<Result<Job>> = jobs
            .into_iter()
            .map_orgs_with(|j: &Job| match j.user {
                3 => Err(format!("user {} is in no organization", j.user)),
                u => Ok((u % 2) as u32),
            })
            .collect();
        assert_eq!(out.len(), 4, "the stream ends at the refused job");
        let orgs: Vec<u32> = out[..3].iter().map(|j| j.as_ref().unwrap().org).collect();
        assert_eq!(orgs, [0, 1, 0]);
        match &out[3] {
            Err(TraceError::Config(m)) => assert_eq!(m, "job 3: user 3 is in no organization"),
            other => panic!("{other:?}"),
        }
        // Errors already in the stream pass through, and do not stop it.
        let items: Vec<Result<Job>> = vec![
            Err(TraceError::Config("upstream".into())),
            Ok(test_job(1, 0, 1, 5)),
        ];
        let out: Vec<Result<Job>> = items.into_iter().map_orgs_with(|_: &Job| Ok(2)).collect();
        assert!(matches!(&out[0], Err(TraceError::Config(m)) if m == "upstream"));
        assert_eq!(out[1].as_ref().unwrap().org, 2);
    }

    #[test]
    fn zero_orgs_is_an_error() {
        assert!(matches!(UserOrgMap::new(0, 1), Err(TraceError::Config(_))));
    }
}
