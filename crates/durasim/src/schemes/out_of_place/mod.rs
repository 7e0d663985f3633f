//! Out-of-place update schemes: a store's new data go to a new location
//! and a mapping, not the home line, says where the newest copy lives:
//! HOOP, the HOOP paper's shadow-paging (osp) and log-structured (lsm)
//! baselines, and EHOU on the Optane-like DIMM's AIT.
pub mod ehou;
pub mod hoop;
pub mod lsm;
pub mod osp;
