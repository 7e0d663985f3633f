//! Hardware undo+redo logging designs of the MorLog paper and its baselines.
pub mod fwb;
