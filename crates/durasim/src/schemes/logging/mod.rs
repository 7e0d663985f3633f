//! Hardware logging schemes: MorLog and its FWB baselines (MorLog paper), REDU (EHOU paper).
pub mod fwb;
pub mod morlog;
pub mod redu;
pub mod txtable;
