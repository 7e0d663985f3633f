//! The op-stream producer (`--gen-thread`, workloads/feed.rs): whether a
//! run generates its op streams on a second host thread, and starting and
//! joining that thread.

use super::{Engine, GenThread};
use crate::error::{Error, Result};
use crate::mem::SparseImage;
use crate::workloads::feed::Feed;
use crate::workloads::Workload;

/// Stops a feed's producer when dropped.
pub(super) struct StopFeed(pub(super) std::sync::Arc<Feed>);

impl Drop for StopFeed {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// `Engine::run`s in progress in this process (`GenThread::Auto`).
static RUNNING_ENGINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one run in `RUNNING_ENGINES` while alive.
pub(super) struct Running;

impl Running {
    pub(super) fn enter() -> Self {
        RUNNING_ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING_ENGINES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The op-stream producer thread; it returns the architectural image and
/// the workloads it took.
pub(super) type FeedThread = std::thread::JoinHandle<(SparseImage, Vec<Box<dyn Workload>>)>;

impl Engine {
    /// Does this run generate its op streams on a second host thread?
    /// `auto`: when a host CPU is spare for it. A run on a rayon pool's
    /// thread (`compare`'s grid) or beside other runs of this process
    /// (a Python sweep's threads) has every CPU busy already: there the
    /// producer only adds hand-offs (measured: the golden grid's five
    /// `compare`s took 5-10 % longer with it).
    fn wants_feed(&self) -> bool {
        match self.spec.gen_thread {
            GenThread::Off => false,
            GenThread::On => true,
            GenThread::Auto => {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                let running = RUNNING_ENGINES.load(std::sync::atomic::Ordering::Relaxed);
                rayon::current_thread_index().is_none() && 2 * running <= cpus
            }
        }
    }

    /// Start the op-stream producer (workloads/feed.rs) if this run uses
    /// one: it takes the architectural image and the workloads until
    /// [`Self::join_feed`] returns them. A checkpointing scheme's media
    /// pages depend on the engine's image (non-atomically), so there the
    /// producer generates on a copy and the engine applies each taken
    /// transaction's stores to its own image (`begin_tx`): the image goes
    /// through the same states as when generating inline.
    pub(super) fn start_feed(&mut self) -> Result<Option<FeedThread>> {
        if !self.wants_feed() {
            return Ok(None);
        }
        let remaining: Vec<u64> = self
            .cores
            .iter()
            .map(|c| c.target_tx - c.done_tx - u64::from(c.in_tx))
            .collect();
        let feed = std::sync::Arc::new(Feed::new(remaining));
        let mut arch = if self.epoch.is_some() {
            // A clone holds no dependent page: it may live on another thread.
            self.arch.clone()
        } else {
            std::mem::take(&mut self.arch)
        };
        let mut workloads = std::mem::take(&mut self.workloads);
        let layout = self.ctx.layout.clone();
        let producer = std::sync::Arc::clone(&feed);
        let handle = std::thread::Builder::new()
            .name("durasim-gen".into())
            .spawn(move || {
                producer.produce(
                    &mut arch,
                    &mut workloads,
                    |c| layout.thread_base(c),
                    layout.thread_region_bytes,
                );
                (arch, workloads)
            });
        // Without a thread the moved state went down with the closure:
        // the run cannot go on inline.
        let handle = handle.map_err(|e| {
            Error::Internal(format!(
                "could not start the workload generator thread ({e}); run with --gen-thread off"
            ))
        })?;
        self.feed = Some(feed);
        self.fed = true;
        Ok(Some(handle))
    }

    /// Stop the producer (if the run ended early) and take back the
    /// architectural image and the workloads.
    pub(super) fn join_feed(&mut self, producer: Option<FeedThread>) -> Result<()> {
        let Some(handle) = producer else {
            return Ok(());
        };
        if let Some(feed) = self.feed.take() {
            feed.stop();
        }
        match handle.join() {
            Ok((arch, workloads)) => {
                // A checkpointing scheme's engine kept its own image up to
                // date (the producer's copy is dropped).
                if self.epoch.is_none() {
                    self.arch = arch;
                }
                self.workloads = workloads;
                Ok(())
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}
