//! Software persistence libraries on the simulated cores: the scheme
//! rewrites each transaction's op stream ([`Scheme::instrument`]) with the
//! library's extra instructions (`Compute`), log loads and stores, cache-line
//! flushes (`Flush`, clwb) and fences (`Fence`, sfence), so their cost is what
//! the core model, the caches and the controllers make of those ops
//! (docs/model/software.md).
//!
//! - [`pmdk_undo`]: libpmemobj-style undo logging (NVM only).
//! - [`dudetm`]: DudeTM: volatile DRAM shadow, persistent redo log with
//!   group commit, background reproduce.
//!
//! [`mutants`] are deliberately broken variants for the crash tests (not in
//! the registry).
//!
//! [`Scheme::instrument`]: super::Scheme::instrument

pub mod dudetm;
pub mod pmdk_undo;
mod tinystm;

use crate::types::Addr;
use crate::workloads::Op;

/// Test-only broken variants: the crash oracle must reject each of them.
/// Reachable only from code (tests), never from the CLI.
#[doc(hidden)]
pub mod mutants {
    pub use super::dudetm::MUTANT_ACK_BEFORE_PERSIST as DUDETM_ACK_BEFORE_PERSIST;
    pub use super::pmdk_undo::MUTANT_INVALIDATE_BEFORE_FLUSH as PMDK_INVALIDATE_BEFORE_FLUSH;
    pub use super::pmdk_undo::MUTANT_LOG_NOT_FLUSHED as PMDK_LOG_NOT_FLUSHED;
    pub use super::pmdk_undo::MUTANT_SCAN_PAST_ENTRIES as PMDK_SCAN_PAST_ENTRIES;
}

/// `n` library instructions (nothing for 0).
#[inline]
pub(crate) fn emit_compute(out: &mut Vec<Op>, n: u64) {
    if n > 0 {
        out.push(Op::Compute {
            n: u32::try_from(n).unwrap_or(u32::MAX),
        });
    }
}

/// Word stores writing `bytes` (a multiple of 8) at `addr`: how a library
/// copies a log entry into place.
#[inline]
pub(crate) fn emit_stores(out: &mut Vec<Op>, addr: Addr, bytes: &[u8]) {
    for (i, w) in bytes.chunks_exact(8).enumerate() {
        out.push(Op::Store {
            addr: addr + 8 * i as u64,
            value: u64::from_le_bytes(w.try_into().unwrap()),
        });
    }
}

/// Per-call instruction counts of a library, emitted as `Compute` ops;
/// the total is reported as `library_instructions`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Instructions {
    pub total: u64,
}

impl Instructions {
    #[inline]
    pub fn emit(&mut self, out: &mut Vec<Op>, n: u64) {
        self.total += n;
        emit_compute(out, n);
    }
}
