//! A DRAM-cache page fill through a line-level indirection (ThyNVM's
//! BTT/PTT, page overlays' OMT): what the checkpointing schemes that remap
//! lines share for `Scheme::page_fill`.

use crate::schemes::MemCtx;
use crate::types::{Addr, Cycle, Purpose, LINE_BYTES};

/// Fill the page at `page_addr` into `out`, every line read from where
/// `src_of_line` maps it, line `first` first, all issued at `t` (after
/// the scheme's table lookup). Returns when line `first` arrives.
pub(crate) fn page_fill(
    ctx: &mut MemCtx,
    page_addr: Addr,
    first: usize,
    out: &mut [u8],
    t: Cycle,
    src_of_line: impl Fn(Addr) -> Addr,
) -> Cycle {
    let lines = out.len() / LINE_BYTES as usize;
    let mut first_at = t;
    for k in std::iter::once(first).chain((0..lines).filter(|&k| k != first)) {
        let src = src_of_line(page_addr + k as u64 * LINE_BYTES);
        let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
        let done = ctx.nvm.read(src, &mut out[r], Purpose::Demand, t);
        if k == first {
            first_at = done;
        }
    }
    first_at
}
