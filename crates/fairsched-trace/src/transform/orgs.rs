//! [`UserOrgMap`]: users to organizations, seeded and independent of stream order.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use super::JobItem;
use crate::errors::{Result, TraceError};

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
    fn zero_orgs_is_an_error() {
        assert!(matches!(UserOrgMap::new(0, 1), Err(TraceError::Config(_))));
    }
}
