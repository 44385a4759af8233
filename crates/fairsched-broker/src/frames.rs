//! Published frames: what the routes that need no token serve (the
//! dashboard's snapshot, `/metrics`), built on the broker's thread at most
//! every [`MIN_GAP`] however many clients ask, and served to all of them
//! from memory.
//!
//! A request is answered with the latest frame if it is *fresh*: built
//! after every commit the broker had made when the request came (so a
//! client sees its own acknowledged writes), and less than [`REFRESH`] ago
//! (times in it move on). Otherwise it asks for a build: one build at a
//! time, the requests that come meanwhile wait for it and take its frame,
//! and a build starts no sooner than [`MIN_GAP`] after the previous one.
//! A build runs in a task of its own: a client that goes away does not
//! waste it.

use axum::body::Bytes;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Mutex, watch};
use tokio::time::Instant;

use crate::service::ServiceError;

/// Builds start at most this often…
pub const MIN_GAP: Duration = Duration::from_millis(250);
/// …and a frame older than this is built again even without a commit
/// (waits and satisfactions move with time).
pub const REFRESH: Duration = Duration::from_secs(2);

/// One frame: its bytes, and what it was built from.
#[derive(Debug)]
pub struct Frame {
    pub body: Bytes,
    /// The broker's group commits when it was built.
    pub commits: u64,
    /// When its build started.
    pub at: Instant,
}

/// The latest frame of one kind, and the one build in flight.
#[derive(Debug)]
pub struct Published {
    latest: watch::Sender<Option<Arc<Frame>>>,
    building: Arc<Mutex<()>>,
    builds: AtomicU64,
}

impl Default for Published {
    fn default() -> Published {
        Published {
            latest: watch::channel(None).0,
            building: Arc::default(),
            builds: AtomicU64::new(0),
        }
    }
}

impl Published {
    /// The latest frame, fresh or not.
    pub fn latest(&self) -> Option<Arc<Frame>> {
        self.latest.borrow().clone()
    }

    /// Every frame from now on (the dashboard's event streams).
    pub fn subscribe(&self) -> watch::Receiver<Option<Arc<Frame>>> {
        self.latest.subscribe()
    }

    /// Event streams listening.
    pub fn listeners(&self) -> usize {
        self.latest.receiver_count()
    }

    /// Frames built so far.
    pub fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }

    fn fresh(&self, commits: u64) -> Option<Arc<Frame>> {
        let f = self.latest()?;
        (f.commits >= commits && f.at.elapsed() < REFRESH).then_some(f)
    }

    /// A frame built after `commits` commits, less than [`REFRESH`] old:
    /// the latest, or a new one `build` makes (it gives the frame's bytes
    /// and the commits it saw).
    pub async fn get<F, Fut>(self: &Arc<Self>, commits: u64, build: F) -> Result<Arc<Frame>, ServiceError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(Bytes, u64), ServiceError>> + Send,
    {
        if let Some(f) = self.fresh(commits) {
            return Ok(f);
        }
        let turn = self.building.clone().lock_owned().await;
        // The build this request waited for may be the one it needs.
        if let Some(f) = self.fresh(commits) {
            return Ok(f);
        }
        let me = self.clone();
        let build = tokio::spawn(async move {
            // Held to the end of the build, even if every request
            // waiting for it has gone.
            let _turn = turn;
            if let Some(prev) = me.latest() {
                tokio::time::sleep_until(prev.at + MIN_GAP).await;
            }
            let at = Instant::now();
            let (body, commits) = build().await?;
            let f = Arc::new(Frame { body, commits, at });
            me.builds.fetch_add(1, Ordering::Relaxed);
            me.latest.send_replace(Some(f.clone()));
            Ok(f)
        });
        build
            .await
            .map_err(|e| ServiceError::Unavailable(format!("building a frame: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// A build that counts its calls and reports `commits`.
    fn counting(
        calls: &Arc<AtomicU64>,
        commits: u64,
    ) -> impl FnOnce() -> std::future::Ready<Result<(Bytes, u64), ServiceError>> + Send + 'static {
        let calls = calls.clone();
        move || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(Ok((Bytes::from(n.to_string()), commits)))
        }
    }

    /// Many requests at once, nothing committed: one build.
    #[tokio::test(start_paused = true)]
    async fn concurrent_requests_share_one_build() {
        let p = Arc::new(Published::default());
        let calls = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (p, calls) = (p.clone(), calls.clone());
            tasks.push(tokio::spawn(async move {
                p.get(0, counting(&calls, 0)).await.unwrap()
            }));
        }
        for t in tasks {
            assert_eq!(&t.await.unwrap().body[..], b"1");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(p.builds(), 1);
    }

    /// A commit makes the frame stale; the next build waits out the gap.
    #[tokio::test(start_paused = true)]
    async fn a_commit_makes_a_new_frame_after_the_gap() {
        let p = Arc::new(Published::default());
        let calls = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        let f = p.get(0, counting(&calls, 0)).await.unwrap();
        assert_eq!(&f.body[..], b"1");
        // Same commits: the same frame.
        let f = p.get(0, counting(&calls, 0)).await.unwrap();
        assert_eq!(&f.body[..], b"1");
        // One more commit: a new frame, not before the gap.
        let f = p.get(1, counting(&calls, 1)).await.unwrap();
        assert_eq!(&f.body[..], b"2");
        assert!(Instant::now() - t0 >= MIN_GAP);
        // Old enough: built again without a commit.
        tokio::time::advance(REFRESH).await;
        let f = p.get(1, counting(&calls, 1)).await.unwrap();
        assert_eq!(&f.body[..], b"3");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
