//! [`Window`]: a time window of a sorted job stream.

use super::JobItem;

/// Iterator adapter returned by [`super::JobIteratorExt::window`].
#[derive(Debug, Clone)]
pub struct Window<I> {
    inner: I,
    start: i64,
    end: i64,
    done: bool,
}

impl<I> Window<I> {
    pub(super) fn new(inner: I, start: i64, len: i64) -> Self {
        let end = start.saturating_add(len.max(0));
        Window {
            inner,
            start,
            end,
            done: len <= 0,
        }
    }
}

impl<I> Iterator for Window<I>
where
    I: Iterator,
    I::Item: JobItem,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if self.done {
            return None;
        }
        loop {
            let mut item = self.inner.next()?;
            let Some(job) = item.job_mut() else {
                return Some(item); // error: pass through
            };
            if job.submit >= self.end {
                // Sorted input: nothing later can fall inside the window.
                self.done = true;
                return None;
            }
            if job.submit < self.start {
                continue;
            }
            job.submit -= self.start;
            return Some(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::transform::{JobIteratorExt, test_job};
    use crate::{Job, TraceError};

    #[test]
    fn keeps_half_open_interval_and_rebases() {
        let jobs: Vec<Job> = [5, 10, 10, 15, 19, 20, 25]
            .iter()
            .map(|&s| test_job(s as u64, s, 1, 1))
            .collect();
        let out: Vec<(u64, i64)> = jobs
            .into_iter()
            .window(10, 10)
            .map(|j| (j.id, j.submit))
            .collect();
        assert_eq!(out, [(10, 0), (10, 0), (15, 5), (19, 9)]);
    }

    #[test]
    fn stops_reading_after_end() {
        let mut pulled = 0;
        let jobs = (0..1000).map(|s| {
            pulled += 1;
            test_job(s as u64, s, 1, 1)
        });
        assert_eq!(jobs.window(0, 3).count(), 3);
        assert_eq!(pulled, 4);
    }

    #[test]
    fn empty_and_errors() {
        assert_eq!([test_job(1, 0, 1, 1)].into_iter().window(0, 0).count(), 0);
        let items: Vec<Result<Job, TraceError>> = vec![
            Ok(test_job(1, 0, 1, 1)),
            Err(TraceError::Config("x".into())),
            Ok(test_job(2, 50, 1, 1)),
        ];
        let out: Vec<_> = items.into_iter().window(0, 10).collect();
        assert_eq!(out.len(), 2);
        assert!(out[1].is_err());
    }
}
