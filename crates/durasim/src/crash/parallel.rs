//! Points verified in parallel: contiguous chunks of the selected points,
//! one job each on a rayon pool, merged in point order (shared by the
//! transactional driver and the epoch oracle).

use crate::error::{Error, Result};
use crate::mem::SparseImage;

/// Mean persist events between sampled points from which
/// [`parallel_plan`] gives one chunk per host thread.
const SPARSE_GAP_EVENTS: u64 = 256;

/// Run `check` on contiguous chunks of `selected` on `pool` (rayon's global
/// pool if `None`), each chunk with its own copy of `initial` (images are
/// not `Sync`); results come back in point order, so they do not depend on
/// the thread count. Progress (points done, total) is reported on the
/// calling thread, so the callback need not be `Send`.
pub(crate) fn run_chunks<R: Send>(
    pool: Option<rayon::ThreadPool>,
    selected: &[u64],
    chunk: usize,
    initial: &SparseImage,
    progress: &mut dyn FnMut(u64, u64),
    check: impl Fn(&[u64], SparseImage, &mut std::sync::mpsc::Sender<u64>) -> R + Sync,
) -> Result<Vec<R>> {
    let jobs: Vec<(&[u64], SparseImage)> = selected
        .chunks(chunk)
        .map(|c| (c, initial.clone()))
        .collect();
    let total = selected.len() as u64;
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    std::thread::scope(|s| {
        let check = &check;
        let work = move || -> Vec<R> {
            use rayon::prelude::*;
            jobs.into_par_iter()
                .map_with(tx, |tx, (pts, initial)| check(pts, initial, tx))
                .collect()
        };
        let h = s.spawn(move || match &pool {
            Some(p) => p.install(work),
            None => work(),
        });
        let mut done = 0u64;
        for d in rx {
            done += d;
            progress(done, total);
        }
        h.join()
    })
    .map_err(|_| Error::Internal("a crash-test worker panicked".into()))
}

/// The host threads that verify crash points (`host_threads` 0 = rayon's
/// global pool) and the chunk of consecutive points each job takes: a few
/// chunks per thread, at least 64 points each. Shared by the transactional
/// driver and the epoch oracle, whose chunks are merged in point order.
///
/// Sampled points far apart (on average [`SPARSE_GAP_EVENTS`] or more of
/// the `events` persist events between two): one chunk per thread. Every
/// chunk's worker brings its images from point 0 to its first point, so
/// with sparse points the history pass, not the points, is the cost to
/// balance, and each further chunk would repeat part of it.
pub(crate) fn parallel_plan(
    host_threads: usize,
    points: usize,
    events: u64,
) -> Result<(Option<rayon::ThreadPool>, usize, usize)> {
    let pool = match host_threads {
        0 => None,
        t => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_err(|e| Error::Internal(format!("thread pool: {e}")))?,
        ),
    };
    let threads = pool
        .as_ref()
        .map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
    let chunk = if events / (points.max(1) as u64) >= SPARSE_GAP_EVENTS {
        points.div_ceil(threads.max(1)).max(1)
    } else {
        points
            .div_ceil(threads.max(1) * 3)
            .max(64)
            .min(points.max(1))
    };
    Ok((pool, threads, chunk))
}
