//! Basic units shared by every module. Time is counted in core cycles; byte
//! addresses are physical NVM addresses.

/// Simulated time in core cycles.
pub type Cycle = u64;
/// A physical byte address.
pub type Addr = u64;
/// Index of a simulated core (== workload thread).
pub type CoreId = usize;

pub const LINE_BYTES: u64 = 64;
pub const WORD_BYTES: u64 = 8;
pub const WORDS_PER_LINE: usize = 8;
pub type LineData = [u8; LINE_BYTES as usize];

#[inline]
pub fn line_of(addr: Addr) -> Addr {
    addr & !(LINE_BYTES - 1)
}

#[inline]
pub fn word_index(addr: Addr) -> usize {
    ((addr & (LINE_BYTES - 1)) / WORD_BYTES) as usize
}

#[inline]
pub fn read_word(line: &LineData, idx: usize) -> u64 {
    u64::from_le_bytes(line[idx * 8..idx * 8 + 8].try_into().unwrap())
}

#[inline]
pub fn write_word(line: &mut LineData, idx: usize, value: u64) {
    line[idx * 8..idx * 8 + 8].copy_from_slice(&value.to_le_bytes());
}

/// Why an NVM (or DRAM) access happened; every byte of traffic is counted
/// under exactly one purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Purpose {
    /// LLC miss fill of program data.
    Demand,
    /// Dirty line written back from the LLC to its home location.
    WriteBack,
    /// Undo/redo log records, HOOP memory slices, LSM log appends.
    Log,
    /// Scheme metadata: block headers, commit records, mapping/journal entries.
    Metadata,
    /// Garbage collection / log truncation / consolidation traffic.
    Gc,
    /// Checkpoint traffic of epoch-based schemes.
    Checkpoint,
    /// Traffic issued by recovery.
    Recovery,
}

impl Purpose {
    pub const ALL: [Purpose; 7] = [
        Purpose::Demand,
        Purpose::WriteBack,
        Purpose::Log,
        Purpose::Metadata,
        Purpose::Gc,
        Purpose::Checkpoint,
        Purpose::Recovery,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            Purpose::Demand => "demand",
            Purpose::WriteBack => "writeback",
            Purpose::Log => "log",
            Purpose::Metadata => "metadata",
            Purpose::Gc => "gc",
            Purpose::Checkpoint => "checkpoint",
            Purpose::Recovery => "recovery",
        }
    }

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Hint the host CPU to fetch the cache line holding `*p` (host speed
/// only; a no-op off x86_64).
#[inline(always)]
pub fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, reads nothing
    // architecturally and `p` is a valid reference anyway; SSE is part of
    // the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
