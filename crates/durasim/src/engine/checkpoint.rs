//! Whole-system checkpoints (schemes/checkpoint/): the engine's steps of
//! a checkpoint (drain the CPU caches, flush the DRAM cache, let the scheme
//! back up and switch) and the host-memory sharing between the images after
//! one.

use super::dram_cache::Below;
use super::Engine;
use crate::types::Cycle;

impl Engine {
    /// Host memory only (no simulated effect): after a
    /// checkpoint, every line of an NVM home page or of a DRAM cache slot
    /// that holds the same bytes as the architectural page there is stored
    /// once (the page depends on the architectural page,
    /// `SparseImage::link_equal_lines`) until either side writes it again.
    /// Only pages written on either side since the last checkpoint are
    /// compared (an unwritten pair was compared then).
    fn share_equal_pages(&mut self) {
        let arch_pages = self.arch.take_written();
        let mut pages = arch_pages.clone();
        pages.extend(self.ctx.nvm.media_mut().take_written());
        pages.sort_unstable();
        pages.dedup();
        let media = self.ctx.nvm.media_mut();
        for p in pages {
            // SAFETY: both images belong to this engine and are used from
            // its thread only.
            unsafe { media.link_equal_lines(p, &mut self.arch, p) };
        }
        let Some(dc) = self.dram_cache.as_deref() else {
            return;
        };
        if !dc.link_fills {
            return;
        }
        let dram = self.ctx.dram.media_mut();
        let mut slots = dram.take_written();
        slots.retain(|&s| s < dc.pages() as u64);
        slots.extend(
            arch_pages
                .iter()
                .filter_map(|&p| dc.find(p).map(|s| s as u64)),
        );
        slots.sort_unstable();
        slots.dedup();
        for s in slots {
            if let Some(p) = dc.tag(s as usize) {
                // SAFETY: as above.
                unsafe { dram.link_equal_lines(s, &mut self.arch, p) };
            }
        }
    }

    /// Host memory only (no simulated effect): DRAM cache slots filled
    /// since the last call are stored as dependents of the architectural
    /// page they cache (the lines that differ are those newer in the CPU
    /// caches). Called between scheduling steps, where no image is borrowed.
    pub(super) fn link_dram_fills(&mut self) {
        let Some(dc) = self.dram_cache.as_deref_mut() else {
            return;
        };
        if dc.filled.is_empty() {
            return;
        }
        let mut filled = std::mem::take(&mut dc.filled);
        let dram = self.ctx.dram.media_mut();
        for &s in &filled {
            if let Some(p) = dc.tag(s) {
                // SAFETY: both images belong to this engine and are used
                // from its thread only.
                unsafe { dram.link_equal_lines(s as u64, &mut self.arch, p) };
            }
        }
        filled.clear();
        dc.filled = filled;
    }

    /// A whole-system checkpoint starting at `t` (every core stalls): the
    /// four steps of the dual-page checkpointing paper §4.5.2. Returns when
    /// the cores resume.
    pub(super) fn checkpoint(&mut self, t: Cycle) -> Cycle {
        use crate::schemes::checkpoint::{encode_contexts, CheckpointRecord, CoreContext};
        let before = self.ctx.nvm.persist_log.count();
        let contexts: Vec<CoreContext> = self
            .cores
            .iter()
            .map(|c| CoreContext::capture(c.done_tx, c.in_tx, &c.ops[..c.pos]))
            .collect();
        let state = encode_contexts(&contexts);
        // 1. Dirty CPU cache lines to the DRAM cache (or the scheme).
        let mut below = Below::new(
            &mut *self.scheme,
            &mut self.ctx,
            &mut self.dram_cache,
            &mut self.llc_write_backs,
        );
        let t1 = self.hier.drain(t, &mut below);
        // 2. Dirty DRAM pages to NVM.
        let t2 = below.flush_dram_cache(t1);
        // 3. + 4. Back up CPU state and metadata, switch atomically. Forced
        // as the scheme counts it: the flush may have found a table full.
        let forced = self.scheme.checkpoint_forced();
        let (end, committed_seq) = self.scheme.checkpoint(&mut self.ctx, &state, t, t2);
        self.share_equal_pages();
        use crate::schemes::path::{CHECKPOINT, FORCED_CHECKPOINT};
        self.note_background_as(
            before,
            if forced {
                FORCED_CHECKPOINT
            } else {
                CHECKPOINT
            },
        );
        // An overlapped scheme may have completed the previous checkpoint
        // first; this one may still be pending (`u64::MAX`).
        self.note_overlapped_commits();
        self.checkpoints.push(CheckpointRecord {
            committed_seq,
            contexts,
        });
        // Overlapped: the cores resume after step 1, or when the scheme
        // says (it returns `t` unless an earlier checkpoint held it up);
        // its writes of steps 2-4 queue in the controllers behind them.
        let end = if self.overlapped { t1.max(end) } else { end };
        for core in &mut self.cores {
            core.time = core.time.max(end);
        }
        end
    }

    /// Record the commit positions of overlapped checkpoints that the
    /// scheme completed in the background (oldest pending record first).
    pub(super) fn note_overlapped_commits(&mut self) {
        while let Some(seq) = self.scheme.take_committed_checkpoint() {
            if let Some(r) = self
                .checkpoints
                .iter_mut()
                .find(|r| r.committed_seq == u64::MAX)
            {
                r.committed_seq = seq;
            }
        }
    }
}
