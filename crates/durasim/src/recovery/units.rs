//! Recovery as units: a checkpoint recovery split into a global part and
//! independent units, so that crash verification's epoch oracle
//! (`crash/epochs.rs`) can keep a passing point's recovery and re-run only
//! the units a later event touched.

use super::writes::Writes;
use super::RecoveryReport;
use crate::config::Params;
use crate::error::Result;
use crate::mem::{Layout, MemRead, MemWrite};
use crate::types::Addr;

/// Per-unit counts a [`UnitRecovery`] reports (summed over units).
pub type UnitCounts = [u64; 2];

/// A checkpoint recovery split into *units*: a global part (switch
/// pointer, contexts, headers) that says how many units may follow, then
/// units (a DPT entry, a log entry) that each read their own bytes and
/// write home. The scheme's recovery is [`recover_by_units`]
/// (one code for both paths), and the epoch oracle keeps each unit's reads
/// and writes so an event that touches one unit's reads re-runs that unit
/// only, and one that touches where the scan stopped continues it.
///
/// Contract: `unit(i)` is a function of what `begin` read and of its own
/// reads only; units write disjoint bytes, and no recovery write overlaps
/// a byte any part reads (the driver checks both and otherwise recovers
/// from scratch).
pub trait UnitRecovery: Send {
    /// Read the global part; the number of units that follow (the scan
    /// may end earlier, see [`UnitRecovery::unit`]).
    fn begin(&mut self, img: &dyn MemRead) -> Result<u64>;
    /// Unit `i`: its home writes through `home`, and its counts; `None`
    /// ends the scan here (it and later units do not take part).
    fn unit(
        &self,
        i: u64,
        img: &dyn MemRead,
        home: &mut dyn FnMut(Addr, &[u8]),
    ) -> Result<Option<UnitCounts>>;
    /// The recovery report, given the units' summed counts.
    fn report(&self, counts: UnitCounts) -> RecoveryReport;
}

/// A scheme's recovery as units, from nothing read.
pub type NewUnitsFn = fn(&Params, &Layout) -> Box<dyn UnitRecovery>;

/// Recovery from scratch: the global part, then every unit in order with
/// its home writes.
pub fn recover_by_units(
    mut scan: Box<dyn UnitRecovery>,
    img: &mut dyn MemWrite,
) -> Result<RecoveryReport> {
    let n = scan.begin(&*img)?;
    let mut counts = [0u64; 2];
    let mut out = Writes::default();
    for i in 0..n {
        out.clear();
        let Some(c) = scan.unit(i, &*img, &mut |a, d| out.push(a, d))? else {
            break;
        };
        out.replay_onto(out.len(), img);
        counts = [counts[0] + c[0], counts[1] + c[1]];
    }
    Ok(scan.report(counts))
}
