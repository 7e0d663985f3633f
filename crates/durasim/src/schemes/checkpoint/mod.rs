//! Whole-system checkpointing schemes: the epoch machinery every
//! checkpointing scheme shares, and the schemes themselves (`dpc`,
//! `thynvm`, `page_overlay`, `ckpt_logging`, `ckpt_cow`).
//!
//! The engine ends each epoch (`checkpoint.epoch_cycles` after the previous
//! checkpoint ended, or at once when the scheme forces one) with a
//! checkpoint that stalls every core and runs the four steps of the
//! dual-page checkpointing paper §4.5.2: (1) flush dirty CPU cache lines
//! (to the DRAM cache), (2) write dirty DRAM pages back to NVM, (3) back up
//! every core's CPU state and the scheme's mapping metadata to the
//! *standby* recovery-context slot, (4) switch to it with one atomic 8-byte
//! write of the switch pointer (§3.4: the valid context is never
//! overwritten; a crash before the switch recovers the previous one).
//! Steps 1-2 are the engine's (`Engine::checkpoint`), 3-4 the scheme's
//! ([`Scheme::checkpoint`](crate::schemes::Scheme::checkpoint)) using the
//! helpers here.
//!
//! NVM layout at the scheme's reserved base: the switch pointer (its own
//! line), then two recovery-context slots, each a header line, one
//! [`CONTEXT_BYTES`] record per core, and the scheme's metadata.

pub mod ckpt_cow;
pub mod ckpt_logging;
pub mod dpc;
pub mod page_overlay;
pub mod thynvm;

use crate::config::{p, Check, ParamSpec};
use crate::mem::{Layout, MemRead, MemoryController};
use crate::types::{Addr, Cycle, Purpose};
use crate::workloads::Op;

/// A forced checkpoint starts within this many cycles of being requested:
/// the engine bounds each scheduling step of a checkpointing run by it
/// (modelling choice, docs/model/checkpointing.md).
pub const FORCED_CHECKPOINT_QUANTUM_CYCLES: Cycle = 1000;

/// Parameters every checkpointing scheme shares.
pub const EPOCH_CYCLES: ParamSpec = p!("checkpoint.epoch_cycles", int 30_000_000, "cycles", Check::Range(1000.0, 1e13),
    "dual-page checkpointing paper §5.1.3 (checkpoint every 30M cycles)",
    "fixed epoch length: execution time between the end of one checkpoint and the start of the next (the memory controller triggers it)");

/// Architectural registers in a core's context image.
pub const REGS: usize = 16;
/// Bytes of one core's context record (24 words: 8 header + 16 registers).
pub const CONTEXT_BYTES: u64 = 192;
const CONTEXT_MAGIC: u64 = 0x6370_7563_7478_0001; // "cpuctx" v1
const SLOT_MAGIC: u64 = 0x6370_736c_6f74_0001; // "cpslot" v1
/// Switch pointer value: `epoch << 8 | SWITCH_TAG | slot` (0 = none yet).
const SWITCH_TAG: u64 = 0x80;

/// One core's architectural context at a checkpoint: where it resumes
/// (the operation in progress and how far into its op stream) and a
/// register-file image. The registers hold the values of the last
/// [`REGS`] loads of the operation in progress (newest in register 0):
/// the state a resumed core needs besides memory (docs/model/checkpointing.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreContext {
    /// Index of the operation (transaction) in progress or next.
    pub tx: u64,
    /// Ops of that operation already executed (0 between operations).
    pub pos: u64,
    /// Stores among those ops.
    pub stores: u64,
    pub regs: [u64; REGS],
}

impl CoreContext {
    /// A core's context: `done` operations finished, `in_op` whether one
    /// is in progress with `executed` its ops replayed so far.
    pub fn capture(done: u64, in_op: bool, executed: &[Op]) -> Self {
        let executed = if in_op { executed } else { &[] };
        let mut regs = [0u64; REGS];
        let mut n = 0;
        for op in executed.iter().rev() {
            if n == REGS {
                break;
            }
            if let Op::Load { value, .. } = *op {
                regs[n] = value;
                n += 1;
            }
        }
        CoreContext {
            tx: done,
            pos: executed.len() as u64,
            stores: executed
                .iter()
                .filter(|o| matches!(o, Op::Store { .. }))
                .count() as u64,
            regs,
        }
    }

    /// The context of a core that has not run (the initial image).
    pub fn initial() -> Self {
        CoreContext {
            tx: 0,
            pos: 0,
            stores: 0,
            regs: [0; REGS],
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = [0u64; (CONTEXT_BYTES / 8) as usize];
        w[0] = CONTEXT_MAGIC;
        w[1] = self.tx;
        w[2] = self.pos;
        w[3] = self.stores;
        w[8..].copy_from_slice(&self.regs);
        for v in w {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub fn decode(img: &dyn MemRead, addr: Addr) -> Option<Self> {
        if img.read_u64(addr) != CONTEXT_MAGIC {
            return None;
        }
        let mut regs = [0u64; REGS];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = img.read_u64(addr + 64 + i as u64 * 8);
        }
        Some(CoreContext {
            tx: img.read_u64(addr + 8),
            pos: img.read_u64(addr + 16),
            stores: img.read_u64(addr + 24),
            regs,
        })
    }
}

/// Every core's context, encoded back to back.
pub fn encode_contexts(cs: &[CoreContext]) -> Vec<u8> {
    let mut v = Vec::with_capacity(cs.len() * CONTEXT_BYTES as usize);
    for c in cs {
        c.encode(&mut v);
    }
    v
}

/// What the engine records per checkpoint for the crash oracle.
#[derive(Clone, Debug)]
pub struct CheckpointRecord {
    /// Persist events up to and including the switch-pointer write: a
    /// crash at point `k >= committed_seq` must recover this checkpoint.
    pub committed_seq: u64,
    pub contexts: Vec<CoreContext>,
}

/// The recovery-context area shared by checkpointing schemes.
#[derive(Clone, Copy, Debug)]
pub struct ContextArea {
    pub switch_addr: Addr,
    pub slot_base: Addr,
    pub slot_bytes: u64,
    pub cores: usize,
}

impl ContextArea {
    /// `meta_bytes`: the scheme's metadata per slot (after the contexts).
    pub fn new(base: Addr, cores: usize, meta_bytes: u64) -> Self {
        let slot_bytes = (64 + cores as u64 * CONTEXT_BYTES + meta_bytes).div_ceil(4096) * 4096;
        ContextArea {
            switch_addr: base,
            slot_base: base + 4096,
            slot_bytes,
            cores,
        }
    }

    /// Bytes the area occupies (pointer + two slots).
    pub fn bytes(&self) -> u64 {
        4096 + 2 * self.slot_bytes
    }

    pub fn slot(&self, s: usize) -> Addr {
        self.slot_base + s as u64 * self.slot_bytes
    }

    /// Where the scheme's metadata of slot `s` starts.
    pub fn meta(&self, s: usize) -> Addr {
        self.slot(s) + 64 + self.cores as u64 * CONTEXT_BYTES
    }

    /// Step 3 (CPU part): header and contexts into slot `s`.
    pub fn write_contexts(
        &self,
        nvm: &mut MemoryController,
        s: usize,
        epoch: u64,
        state: &[u8],
        now: Cycle,
    ) -> Cycle {
        let mut hdr = [0u8; 64];
        hdr[..8].copy_from_slice(&SLOT_MAGIC.to_le_bytes());
        hdr[8..16].copy_from_slice(&epoch.to_le_bytes());
        hdr[16..24].copy_from_slice(&(self.cores as u64).to_le_bytes());
        let t = nvm.write(self.slot(s), &hdr, Purpose::Checkpoint, now);
        t.max(nvm.write(self.slot(s) + 64, state, Purpose::Checkpoint, now))
    }

    /// Step 4: the one atomic 8-byte switch to slot `s`.
    pub fn switch(&self, nvm: &mut MemoryController, s: usize, epoch: u64, now: Cycle) -> Cycle {
        let v = epoch << 8 | SWITCH_TAG | s as u64;
        nvm.write(self.switch_addr, &v.to_le_bytes(), Purpose::Checkpoint, now)
    }

    /// The valid recovery context: (epoch, slot), or None before the first
    /// checkpoint. Errors on a garbled pointer or slot.
    pub fn read_switch(&self, img: &dyn MemRead) -> Result<Option<(u64, usize)>, String> {
        let v = img.read_u64(self.switch_addr);
        if v == 0 {
            return Ok(None);
        }
        if v & 0x7e != 0 || v & SWITCH_TAG == 0 {
            return Err(format!("switch pointer {v:#x} is garbled"));
        }
        let (epoch, s) = (v >> 8, (v & 1) as usize);
        let a = self.slot(s);
        if img.read_u64(a) != SLOT_MAGIC || img.read_u64(a + 8) != epoch {
            return Err(format!(
                "recovery context slot {s} does not hold epoch {epoch} (header {:#x}, epoch {})",
                img.read_u64(a),
                img.read_u64(a + 8)
            ));
        }
        Ok(Some((epoch, s)))
    }

    /// The CPU contexts the valid recovery context holds (initial contexts
    /// before the first checkpoint): every scheme's [`ReadContextsFn`]
    /// once it knows where its area lies.
    pub fn recovered_contexts(&self, img: &dyn MemRead) -> Result<Vec<CoreContext>, String> {
        let s = self.read_switch(img)?.map(|(_, s)| s);
        self.read_contexts(img, s)
    }

    /// The CPU contexts of slot `s` (initial contexts before any checkpoint).
    pub fn read_contexts(
        &self,
        img: &dyn MemRead,
        s: Option<usize>,
    ) -> Result<Vec<CoreContext>, String> {
        let Some(s) = s else {
            return Ok(vec![CoreContext::initial(); self.cores]);
        };
        (0..self.cores)
            .map(|c| {
                CoreContext::decode(img, self.slot(s) + 64 + c as u64 * CONTEXT_BYTES)
                    .ok_or_else(|| format!("core {c}'s context in slot {s} is garbled"))
            })
            .collect()
    }
}

/// Reads the CPU contexts a recovered image resumes from (NVM bytes only):
/// a checkpointing scheme's `SchemeInfo::contexts`.
pub type ReadContextsFn =
    fn(&dyn MemRead, &crate::config::Params, &Layout) -> Result<Vec<CoreContext>, String>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemWrite, SparseImage};

    #[test]
    fn context_captures_position_stores_and_registers() {
        let ops = [
            Op::Load {
                addr: 8,
                value: 11,
                dep: 0,
            },
            Op::Store { addr: 16, value: 5 },
            Op::Compute { n: 3 },
            Op::Load {
                addr: 24,
                value: 22,
                dep: 0,
            },
            Op::Store { addr: 32, value: 6 },
        ];
        let c = CoreContext::capture(7, true, &ops[..4]);
        assert_eq!((c.tx, c.pos, c.stores), (7, 4, 1));
        assert_eq!(&c.regs[..3], &[22, 11, 0]);
        let idle = CoreContext::capture(8, false, &ops);
        assert_eq!((idle.tx, idle.pos, idle.stores), (8, 0, 0));
        // Round trip through bytes.
        let mut img = SparseImage::new();
        img.write_bytes(4096, &encode_contexts(std::slice::from_ref(&c)));
        assert_eq!(CoreContext::decode(&img, 4096), Some(c));
        assert_eq!(CoreContext::decode(&img, 8192), None);
    }
}
