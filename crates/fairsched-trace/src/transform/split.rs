//! [`SplitParallel`]: one job per processor.

use super::JobItem;
use crate::job::Job;

/// Iterator adapter returned by [`super::JobIteratorExt::split_parallel`].
#[derive(Debug, Clone)]
pub struct SplitParallel<I> {
    inner: I,
    current: Option<Job>,
    next_part: u32,
}

impl<I> SplitParallel<I> {
    pub(super) fn new(inner: I) -> Self {
        SplitParallel {
            inner,
            current: None,
            next_part: 0,
        }
    }
}

impl<I> Iterator for SplitParallel<I>
where
    I: Iterator,
    I::Item: JobItem,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if let Some(job) = self.current {
            let part = self.next_part;
            self.next_part += 1;
            if self.next_part >= job.procs {
                self.current = None;
            }
            return Some(I::Item::from_job(Job {
                procs: 1,
                part,
                ..job
            }));
        }
        let mut item = self.inner.next()?;
        if let Some(job) = item.job_mut()
            && job.procs > 1
        {
            self.current = Some(*job);
            self.next_part = 1;
            job.procs = 1;
            job.part = 0;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let pending = self.current.map_or(0, |j| (j.procs - self.next_part) as usize);
        (self.inner.size_hint().0.saturating_add(pending), None)
    }
}

#[cfg(test)]
mod tests {
    use crate::transform::{JobIteratorExt, test_job};

    #[test]
    fn splits_into_parts() {
        let jobs = vec![test_job(1, 0, 3, 1), test_job(2, 4, 1, 1), test_job(3, 5, 2, 1)];
        let out: Vec<(u64, u32, u32, i64)> = jobs
            .into_iter()
            .split_parallel()
            .map(|j| (j.id, j.part, j.procs, j.submit))
            .collect();
        assert_eq!(
            out,
            [
                (1, 0, 1, 0),
                (1, 1, 1, 0),
                (1, 2, 1, 0),
                (2, 0, 1, 4),
                (3, 0, 1, 5),
                (3, 1, 1, 5)
            ]
        );
    }
}
