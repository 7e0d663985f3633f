//! What several schemes share, in one visible place, so that no scheme
//! imports another scheme's module: the logging baselines' record encoding
//! and helpers ([`log`]), the undo-log format ([`undo_log`]: opt-undo, lad,
//! pmdk-undo), the redo log and its recovery scan ([`redo_log`]: opt-redo,
//! redu), the hardware undo+redo log ([`hw_log`]: fwb, morlog), and a page
//! fill through a line indirection ([`page_fill`]: thynvm, page-overlay),
//! and a transaction's write-set index ([`line_index`]).

pub mod hw_log;
pub mod line_index;
pub mod log;
pub mod page_fill;
pub mod redo_log;
pub mod undo_log;
