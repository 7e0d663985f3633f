//! Hardware logging schemes: the HOOP paper's logging baselines (opt-undo,
//! opt-redo, lad), MorLog and its FWB baselines (MorLog paper), REDU (EHOU
//! paper), and MorLog's transaction-table log management.
#[cfg(feature = "example-scheme")]
pub mod example_redo;
pub mod fwb;
pub mod lad;
pub mod morlog;
pub mod opt_redo;
pub mod opt_undo;
pub mod redu;
pub mod txtable;
