//! durasim: an execution-driven simulator of persistent-memory systems that
//! checks the crash consistency of hardware schemes. See docs/ARCHITECTURE.md.

pub mod alloc;
pub mod cache;
pub mod cli;
pub mod config;
pub mod crash;
pub mod engine;
pub mod error;
pub mod mem;
pub mod recovery;
pub mod schemes;
pub mod stats;
pub mod trace;
pub mod types;
pub mod workloads;

pub use config::Params;
pub use engine::{Engine, RunSpec};
pub use error::{Error, Result};
