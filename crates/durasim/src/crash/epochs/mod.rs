//! Crash verification with checkpoint semantics: a crash at any persist point
//! must recover exactly the memory image *and* the CPU contexts of the last
//! checkpoint whose switch-pointer write persisted (the initial image and
//! contexts before the first one).
//!
//! A checkpoint may fall in the middle of an operation, so the expected
//! image is not a transaction prefix: for thread t it is the initial image
//! plus the first `S_t` stores of its program, where `S_t` comes from the
//! core's context recorded at the checkpoint (operations finished + stores
//! of the one in progress). The oracle keeps those images as per-epoch
//! diffs: the write history is applied to a word map over the initial
//! image epoch by epoch, never copied, and (as in [`super::oracle`]) only
//! the words where the crashed image differs from it, plus what recovery
//! wrote, are compared at each point.
//!
//! Workload invariant checkers are not run: an image taken in the middle of
//! an operation is not a consistent data structure (the resumed core
//! finishes it); exact equality with the program's store prefix is the
//! stronger check.
//!
//! Where things are: the driver (`driver.rs`), what its workers share and
//! count (`shared.rs`), a worker's point loop (`chunk.rs`), the check of one
//! image (`check.rs`), the oracle's images (`oracle.rs`), and the recovery
//! kept across points (`kept.rs`; per unit: `units.rs`).

mod check;
mod chunk;
mod driver;
mod kept;
mod oracle;
mod shared;
mod units;

pub use driver::crashtest_checkpoints;
