//! The device's parameters: timing and energy of one device kind (NVM or
//! DDR4 DRAM) derived from the configuration, its geometry, and the
//! address mapping that geometry gives (which channel, rank, bank and row
//! a line lives in).

use crate::config::Params;
use crate::types::{Addr, Cycle, LINE_BYTES};

/// How a line address is split into channel, rank, bank, row and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// row:rank:bank:column:channel: a row fills before the next bank.
    RowInterleaved,
    /// row:column:rank:bank:channel: consecutive lines go to different banks.
    LineInterleaved,
    /// Line-interleaved, with the rank:bank:channel index XORed with all
    /// higher (column and row) bits folded to its width: permutation-based
    /// interleaving (Zhang, Zhu, Zhang, MICRO 2000), generalised from "low row
    /// bits" to every higher bit so power-of-two strides never alias.
    Permutation,
}

impl Mapping {
    pub fn parse(s: &str) -> Self {
        match s {
            "row-interleaved" => Mapping::RowInterleaved,
            "line-interleaved" => Mapping::LineInterleaved,
            _ => Mapping::Permutation,
        }
    }
}

/// Timing (cycles) and energy (pJ/bit) of one device kind.
#[derive(Clone, Copy, Debug)]
pub struct DeviceTiming {
    pub t_rcd: Cycle,
    pub t_cl: Cycle,
    pub t_bl: Cycle,
    pub t_wr: Cycle,
    pub t_ras: Cycle,
    pub t_rp: Cycle,
    pub t_rc: Cycle,
    pub t_rrd: Cycle,
    pub t_rtp: Cycle,
    pub t_wtr: Cycle,
    pub t_faw: Cycle,
    /// Read-to-write bus turnaround: idle data-bus time between the end of
    /// a read burst and the start of a write burst.
    pub t_rtw: Cycle,
    /// Refresh interval and all-bank refresh time of every rank (`t_refi`
    /// 0: no refresh, as for PCM).
    pub t_refi: Cycle,
    pub t_rfc: Cycle,
    /// Sensing the array into the row buffer on activation.
    pub array_read: Cycle,
    /// Programming cells; the bank is busy for this long after a write burst.
    pub array_write: Cycle,
    pub row_read_pj_per_bit: f64,
    pub row_write_pj_per_bit: f64,
    pub array_read_pj_per_bit: f64,
    pub array_write_pj_per_bit: f64,
    /// Channels, ranks per channel, banks per rank, row size: powers of two.
    pub channels: u64,
    pub ranks: u64,
    pub banks: u64,
    pub row_bytes: u64,
    /// Data-comparison write: only flipped bits cost array write energy.
    pub dcw: bool,
    pub mapping: Mapping,
}

impl DeviceTiming {
    pub fn nvm(p: &Params) -> Self {
        DeviceTiming {
            t_rcd: p.ns_cycles("nvm.t_rcd_ns"),
            t_cl: p.ns_cycles("nvm.t_cl_ns"),
            t_bl: p.ns_cycles("nvm.t_bl_ns"),
            t_wr: p.ns_cycles("nvm.t_wr_ns"),
            t_ras: p.ns_cycles("nvm.t_ras_ns"),
            t_rp: p.ns_cycles("nvm.t_rp_ns"),
            t_rc: p.ns_cycles("nvm.t_rc_ns"),
            t_rrd: p.ns_cycles("nvm.t_rrd_ns"),
            t_rtp: p.ns_cycles("nvm.t_rtp_ns"),
            t_wtr: p.ns_cycles("nvm.t_wtr_ns"),
            t_faw: p.ns_cycles("nvm.t_faw_ns"),
            t_rtw: p.ns_cycles("nvm.t_rtw_ns"),
            // PCM cells keep their state without refresh.
            t_refi: 0,
            t_rfc: 0,
            array_read: p.ns_cycles("nvm.array_read_ns"),
            array_write: p.ns_cycles("nvm.array_write_ns"),
            row_read_pj_per_bit: p.f64("nvm.row_read_pj_per_bit"),
            row_write_pj_per_bit: p.f64("nvm.row_write_pj_per_bit"),
            array_read_pj_per_bit: p.f64("nvm.array_read_pj_per_bit"),
            array_write_pj_per_bit: p.f64("nvm.array_write_pj_per_bit"),
            channels: p.u64("nvm.channels"),
            ranks: p.u64("nvm.ranks"),
            banks: p.u64("nvm.banks"),
            row_bytes: p.u64("nvm.row_bytes"),
            dcw: p.str("nvm.write_model") == "dcw",
            mapping: Mapping::parse(p.str("nvm.address_mapping")),
        }
    }

    /// A DDR4 DRAM device for hybrid schemes (DRAM caches, tables). DRAM has
    /// no separate array latency: sensing is part of tRCD and restoring part
    /// of tWR/tRAS.
    pub fn dram(p: &Params) -> Self {
        DeviceTiming {
            t_rcd: p.ns_cycles("dram.t_rcd_ns"),
            t_cl: p.ns_cycles("dram.t_cl_ns"),
            t_bl: p.ns_cycles("dram.t_bl_ns"),
            t_wr: p.ns_cycles("dram.t_wr_ns"),
            t_ras: p.ns_cycles("dram.t_ras_ns"),
            t_rp: p.ns_cycles("dram.t_rp_ns"),
            t_rc: p.ns_cycles("dram.t_rc_ns"),
            t_rrd: p.ns_cycles("dram.t_rrd_ns"),
            t_rtp: p.ns_cycles("dram.t_rtp_ns"),
            t_wtr: p.ns_cycles("dram.t_wtr_ns"),
            t_faw: p.ns_cycles("dram.t_faw_ns"),
            t_rtw: p.ns_cycles("dram.t_rtw_ns"),
            t_refi: p.ns_cycles("dram.t_refi_ns"),
            t_rfc: p.ns_cycles("dram.t_rfc_ns"),
            array_read: 0,
            array_write: 0,
            row_read_pj_per_bit: p.f64("dram.row_read_pj_per_bit"),
            row_write_pj_per_bit: p.f64("dram.row_write_pj_per_bit"),
            array_read_pj_per_bit: p.f64("dram.array_read_pj_per_bit"),
            array_write_pj_per_bit: p.f64("dram.array_write_pj_per_bit"),
            channels: 1,
            ranks: 1,
            banks: p.u64("dram.banks"),
            row_bytes: p.u64("dram.row_bytes"),
            dcw: false,
            mapping: Mapping::RowInterleaved,
        }
    }

    /// Bank busy time after a write burst: write recovery, or cell
    /// programming when that is longer (NVM).
    #[inline]
    pub fn write_busy(&self) -> Cycle {
        self.t_wr.max(self.array_write)
    }

    /// Activate to first column command: tRCD, or the array sensing time
    /// when that is longer (NVM).
    #[inline]
    pub fn act_to_col(&self) -> Cycle {
        self.t_rcd.max(self.array_read)
    }

    /// Earliest time >= `t` outside every refresh window
    /// `[k * tREFI, k * tREFI + tRFC)` (no command issues during a refresh).
    #[inline]
    pub fn after_refresh(&self, t: Cycle) -> Cycle {
        if self.t_refi == 0 || t % self.t_refi >= self.t_rfc {
            t
        } else {
            t - t % self.t_refi + self.t_rfc
        }
    }

    /// Index of the last refresh window starting at or before `t`.
    #[inline]
    pub(super) fn refresh_epoch(&self, t: Cycle) -> u64 {
        t.checked_div(self.t_refi).unwrap_or(0)
    }
}

/// Where a line lives: channel, rank (global index), bank (global index),
/// row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Loc {
    pub(super) ch: u32,
    pub(super) rank: u32,
    pub(super) bank: u32,
    pub(super) row: u64,
}

/// The address mapping of one device: the positions of the channel, bank,
/// rank and row fields in a line number, set once from the geometry and
/// [`Mapping`] so that decoding does not branch on the mapping.
#[derive(Clone, Copy, Debug)]
pub(super) struct AddrMap {
    ch_bits: u32,
    bank_bits: u32,
    rank_bits: u32,
    bank_shift: u32,
    rank_shift: u32,
    row_shift: u32,
    /// Width of the channel:bank:rank index XOR-folded with all higher bits
    /// (permutation mapping; 0 = no folding).
    fold_bits: u32,
}

impl AddrMap {
    /// `channels`, `ranks`, `banks` and `row_bytes` must be powers of two.
    pub(super) fn new(timing: &DeviceTiming) -> Self {
        let ch_bits = timing.channels.trailing_zeros();
        let col_bits = (timing.row_bytes / LINE_BYTES).max(1).trailing_zeros();
        let bank_bits = timing.banks.trailing_zeros();
        let rank_bits = timing.ranks.trailing_zeros();
        // Line-interleaved (and permutation): row:column:rank:bank:channel;
        // row-interleaved: row:rank:bank:column:channel.
        let bank_shift = if timing.mapping == Mapping::RowInterleaved {
            ch_bits + col_bits
        } else {
            ch_bits
        };
        let fold_bits = if timing.mapping == Mapping::Permutation {
            ch_bits + bank_bits + rank_bits
        } else {
            0
        };
        AddrMap {
            ch_bits,
            bank_bits,
            rank_bits,
            bank_shift,
            rank_shift: bank_shift + bank_bits,
            row_shift: ch_bits + col_bits + bank_bits + rank_bits,
            fold_bits,
        }
    }

    /// Address mapping: row-interleaved row:rank:bank:column:channel
    /// (consecutive lines alternate channels, then fill a row; rows
    /// interleave over banks), line-interleaved row:column:rank:bank:channel
    /// (consecutive lines spread over channels, banks and ranks), or
    /// permutation: line-interleaved with the rank:bank:channel index XORed
    /// with every higher bit folded to its width (a bijection: the higher
    /// bits are kept as they are).
    #[inline]
    pub(super) fn decode(&self, addr: Addr) -> Loc {
        let mut line = addr / LINE_BYTES;
        if self.fold_bits > 0 {
            let mask = (1u64 << self.fold_bits) - 1;
            let mut hi = line >> self.fold_bits;
            let mut fold = 0;
            while hi != 0 {
                fold ^= hi & mask;
                hi >>= self.fold_bits;
            }
            line ^= fold;
        }
        let ch = line & ((1 << self.ch_bits) - 1);
        let bank = (line >> self.bank_shift) & ((1 << self.bank_bits) - 1);
        let rank = (line >> self.rank_shift) & ((1 << self.rank_bits) - 1);
        let row = line >> self.row_shift;
        let rank_idx = (ch << self.rank_bits) | rank;
        let bank_idx = (rank_idx << self.bank_bits) | bank;
        Loc {
            ch: ch as u32,
            rank: rank_idx as u32,
            bank: bank_idx as u32,
            row,
        }
    }

    /// (channel, rank within channel, bank within rank) of a location.
    #[inline]
    pub(super) fn ids(&self, l: Loc) -> (u64, u64, u64) {
        (
            l.ch as u64,
            l.rank as u64 & ((1 << self.rank_bits) - 1),
            l.bank as u64 & ((1 << self.bank_bits) - 1),
        )
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A device of unit timings with the given geometry.
    pub(in crate::mem::controller) fn device(
        channels: u64,
        ranks: u64,
        banks: u64,
        line_interleave: bool,
    ) -> DeviceTiming {
        DeviceTiming {
            t_rcd: 1,
            t_cl: 1,
            t_bl: 1,
            t_wr: 1,
            t_ras: 1,
            t_rp: 1,
            t_rc: 1,
            t_rrd: 1,
            t_rtp: 1,
            t_wtr: 1,
            t_faw: 1,
            t_rtw: 1,
            t_refi: 0,
            t_rfc: 0,
            array_read: 0,
            array_write: 0,
            row_read_pj_per_bit: 0.0,
            row_write_pj_per_bit: 0.0,
            array_read_pj_per_bit: 0.0,
            array_write_pj_per_bit: 0.0,
            channels,
            ranks,
            banks,
            row_bytes: 1024,
            dcw: false,
            mapping: if line_interleave {
                Mapping::LineInterleaved
            } else {
                Mapping::RowInterleaved
            },
        }
    }

    /// HOOP-preset-like timings in cycles (tBL 20, tWTR + tCL 37, tRTW 6,
    /// tRRD 10, tFAW 50).
    pub(in crate::mem::controller) fn nvm_like() -> DeviceTiming {
        let mut d = device(1, 1, 8, true);
        (d.t_bl, d.t_wtr, d.t_cl, d.t_rtw, d.t_rrd, d.t_faw) = (20, 12, 25, 6, 10, 50);
        d
    }

    proptest! {
        /// `decode` follows the documented field order: line-interleaved
        /// row:column:rank:bank:channel, else row:rank:bank:column:channel
        /// (global rank and bank indices count within channel and rank).
        #[test]
        fn decode_follows_the_mapping(
            addr in 0u64..(1 << 40),
            ch_log in 0u32..3, rank_log in 0u32..3, bank_log in 0u32..4,
            line_interleave in any::<bool>(),
        ) {
            let (channels, ranks, banks) = (1 << ch_log, 1 << rank_log, 1 << bank_log);
            let t = device(channels, ranks, banks, line_interleave);
            let map = AddrMap::new(&t);
            let cols = t.row_bytes / LINE_BYTES;
            let mut line = addr / LINE_BYTES;
            let mut take = |n: u64| {
                let v = line % n;
                line /= n;
                v
            };
            let ch = take(channels);
            let (bank, rank, row);
            if line_interleave {
                bank = take(banks);
                rank = take(ranks);
                take(cols);
                row = line;
            } else {
                take(cols);
                bank = take(banks);
                rank = take(ranks);
                row = line;
            }
            let l = map.decode(addr);
            prop_assert_eq!(l.ch as u64, ch);
            prop_assert_eq!(l.rank as u64, ch * ranks + rank);
            prop_assert_eq!(l.bank as u64, (ch * ranks + rank) * banks + bank);
            prop_assert_eq!(l.row, row);
            prop_assert_eq!(map.ids(l), (ch, rank, bank));
        }
    }
}
