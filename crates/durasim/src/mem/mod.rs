//! Memory: sparse images, the persistence domain, the memory controller and
//! device models (NVM and DRAM).

pub mod controller;
pub mod image;
pub mod layout;
pub mod lru_order;
pub mod persist;

pub use controller::{DeviceTiming, MemStats, MemoryController, RequestTap};
pub use image::{MemRead, MemWrite, Overlay, SparseImage};
pub use layout::Layout;
pub use persist::{
    DurableMark, PathWindow, PersistEvent, PersistLog, TimeOrder, BACKGROUND_STREAM, MEDIA_STREAM,
};
pub mod media;
pub mod optane;
