//! Points verified in parallel: contiguous chunks of the selected points,
//! one job each on a rayon pool, merged in point order (shared by the
//! transactional driver and the epoch oracle).

use crate::error::{Error, Result};
use crate::mem::persist::PersistEvent;
use crate::mem::SparseImage;
use rustc_hash::FxHashSet;

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

/// Host bytes one crash-point worker may hold beyond what the workers
/// share: its working image starts as a copy-on-write clone of the
/// initial media and copies each page a persist event writes as it
/// replays them, and the oracle's and recovery's images over it can copy
/// as much again (an upper bound; pages no event writes stay shared).
pub(crate) fn worker_bytes(events: &[PersistEvent]) -> u64 {
    let page = crate::mem::image::PAGE_BYTES;
    let mut pages = FxHashSet::default();
    for e in events {
        let last = e.addr + u64::from(e.len.max(1)) - 1;
        for p in e.addr / page..=last / page {
            pages.insert(p);
        }
    }
    (pages.len() as u64).saturating_mul(page).saturating_mul(2)
}

/// How many workers of `worker_bytes` each fit in `available` bytes of
/// host memory (the share a run may plan for), at least one.
pub(crate) fn memory_cap(worker_bytes: u64, available: Option<u64>) -> usize {
    match available {
        Some(avail) if worker_bytes > 0 => {
            let budget = (avail as f64 * crate::engine::footprint::HOST_MEMORY_SHARE) as u64;
            usize::try_from(budget / worker_bytes)
                .unwrap_or(usize::MAX)
                .max(1)
        }
        _ => usize::MAX,
    }
}

/// The host threads that verify crash points (`host_threads` 0 = every
/// core, rayon's global pool) and the chunk of consecutive points each job
/// takes: a few chunks per thread, at least 64 points each. Shared by the
/// transactional driver and the epoch oracle, whose chunks are merged in
/// point order.
///
/// Each thread's worker holds up to `worker_bytes` of host memory of its
/// own ([`worker_bytes`]): no more threads run than fit in the memory the
/// host has available, so a host with many cores does not run out of
/// memory on a large image (the verdicts do not depend on the count).
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
    worker_bytes: u64,
) -> Result<(Option<rayon::ThreadPool>, usize, usize)> {
    let wanted = match host_threads {
        0 => rayon::current_num_threads(),
        t => t,
    };
    let cap = memory_cap(
        worker_bytes,
        crate::engine::footprint::host_memory_available(),
    );
    let threads = wanted.min(cap).max(1);
    let pool = if host_threads == 0 && threads == wanted {
        None
    } else {
        Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| Error::Internal(format!("thread pool: {e}")))?,
        )
    };
    let chunk = if events / (points.max(1) as u64) >= SPARSE_GAP_EVENTS {
        points.div_ceil(threads).max(1)
    } else {
        points.div_ceil(threads * 3).max(64).min(points.max(1))
    };
    Ok((pool, threads, chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(addr: u64, len: u8) -> PersistEvent {
        PersistEvent {
            addr,
            len,
            data_off: 0,
            at: 0,
        }
    }

    /// A worker is charged twice the distinct pages the events write; a
    /// write across a page boundary touches both pages.
    #[test]
    fn worker_bytes_counts_distinct_written_pages() {
        let events = [
            ev(0, 64),
            ev(64, 64),
            ev(4096 * 3 - 8, 16),
            ev(0x10_0000, 8),
        ];
        assert_eq!(worker_bytes(&events), 4 * 4096 * 2);
        assert_eq!(worker_bytes(&[]), 0);
    }

    /// The memory cap: as many workers as fit in the run's share of what
    /// the host has available, at least one, and no cap where unknown.
    #[test]
    fn memory_cap_fits_workers_in_the_available_share() {
        let gib = 1u64 << 30;
        assert_eq!(memory_cap(gib, Some(10 * gib)), 8);
        assert_eq!(memory_cap(100 * gib, Some(10 * gib)), 1);
        assert_eq!(memory_cap(gib, None), usize::MAX);
        assert_eq!(memory_cap(0, Some(gib)), usize::MAX);
    }

    /// A plan never runs more threads than the memory cap allows, and the
    /// explicit thread count is kept when it fits.
    #[test]
    fn plan_keeps_a_fitting_thread_count() {
        let (pool, threads, chunk) = parallel_plan(2, 600, 600, 4096).unwrap();
        assert_eq!(threads, 2);
        assert_eq!(pool.map(|p| p.current_num_threads()), Some(2));
        assert_eq!(chunk, 100);
        if crate::engine::footprint::host_memory_available().is_some() {
            let (_, threads, _) = parallel_plan(3, 600, 600, u64::MAX / 2).unwrap();
            assert_eq!(threads, 1);
        }
    }
}
