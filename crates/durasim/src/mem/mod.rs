//! Memory: sparse images, the persistence domain, the memory controller and
//! device models (NVM and DRAM).

pub mod controller;
pub mod image;
pub mod persist;

/// The hybrid memory's page: the DRAM cache (engine/dram_cache.rs) caches
/// NVM in pages of this size and the checkpointing schemes track them, one
/// 64-bit dirty-line vector per page. It is the image page: a DRAM cache
/// slot is one page of the DRAM device's media.
pub mod hybrid {
    pub const PAGE_BYTES: u64 = super::image::PAGE_BYTES;
    pub const LINES_PER_PAGE: usize = (PAGE_BYTES / crate::types::LINE_BYTES) as usize;
}

pub use controller::{DeviceTiming, MemStats, MemoryController, RequestTap};
pub use image::{MemRead, MemWrite, Overlay, SparseImage};
pub use persist::{DurableMark, PersistEvent, PersistLog};
pub mod media;
pub mod optane;
