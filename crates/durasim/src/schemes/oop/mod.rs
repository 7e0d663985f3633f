//! Hardware out-of-place update schemes on the Optane-like DIMM's AIT.
pub mod ehou;
