//! A recovery kept across crash points ([`Kept`]) and where it came from
//! ([`Source`]): a recovery from scratch while no event touches what it
//! read, a unit recovery kept per unit, or a stale one whose writes the
//! next recovery swaps for its own.

use super::super::memo::ReadSet;
use super::super::oracle::RecView;
use super::units::Units;
use crate::recovery::writes::Writes;
use crate::types::Addr;

/// A recovery kept across crash points. Recovery is a deterministic function of
/// the bytes it reads: while no persisted event touches a byte it read, a
/// recovery from scratch would read the same bytes, make the same writes and
/// return the same report, so its recovered image is the crash image with those
/// writes over it. That image is kept ([`RecView`]: updated by each event where
/// no recovery write covers it, with its own per-thread words differing from
/// the expected image, updated as events land and checkpoints advance the
/// expected image), so such a point costs its event and a check of the words
/// that differ, not a recovery of the whole checkpoint. Kept only when no
/// recovery write overlaps a byte recovery read (crash/war.rs) or the scheme
/// copies home (`RecoveryForm::CopiesHome`): then no crashed re-run can
/// diverge (every one is proven, at every point the recovery holds).
pub(super) struct Kept {
    pub(super) source: Source,
    pub(super) bytes_written: u64,
    pub(super) modeled_ns: f64,
    pub(super) view: RecView,
}

/// Where a kept recovery came from.
pub(super) enum Source {
    /// A recovery from scratch: everything it read (sealed) and its
    /// writes in order (words sorted).
    Memo { reads: ReadSet, writes: Writes },
    /// A [`crate::recovery::UnitRecovery`], kept per unit.
    Units(Box<Units>),
    /// A `Memo` whose reads an event touched: no longer the recovery of
    /// the crash image, but its image still follows the events, so the
    /// next recovery from scratch only swaps these writes for its own
    /// (the words either covers) instead of rebuilding the image.
    Stale { writes: Writes },
}

impl Kept {
    /// Whether it is the recovery of the current crash image.
    pub(super) fn live(&self) -> bool {
        !matches!(self.source, Source::Stale { .. })
    }

    /// Writes of the recovery (pieces).
    pub(super) fn pieces(&self) -> usize {
        match &self.source {
            Source::Memo { writes, .. } | Source::Stale { writes } => writes.len(),
            Source::Units(u) => u.pieces,
        }
    }

    /// The recovery's writes in order, with their words sorted.
    pub(super) fn writes(&self) -> std::borrow::Cow<'_, Writes> {
        match &self.source {
            Source::Memo { writes, .. } | Source::Stale { writes } => {
                std::borrow::Cow::Borrowed(writes)
            }
            Source::Units(u) => {
                let mut w = Writes::default();
                for p in &u.parts {
                    w.extend_from(&p.writes);
                }
                w.sort_words();
                std::borrow::Cow::Owned(w)
            }
        }
    }

    /// An event at `[addr, addr + len)` persisted: whether the kept
    /// recovery still holds (units it touched are marked to re-run).
    pub(super) fn touch(&mut self, addr: Addr, len: u64) -> bool {
        match &mut self.source {
            Source::Memo { reads, writes } => {
                if reads.overlaps(addr, len) {
                    let writes = std::mem::take(writes);
                    self.source = Source::Stale { writes };
                }
                true
            }
            Source::Stale { .. } => true,
            Source::Units(u) => {
                if u.global.overlaps(addr, len) {
                    return false;
                }
                u.end_dirty |= u.end_reads.overlaps(addr, len);
                let from = (addr.saturating_sub(u.longest), 0);
                for (&(s, i), &e) in u.index.range(from..(addr + len, 0)) {
                    if s < addr + len && e > addr {
                        u.dirty.push(i);
                    }
                }
                true
            }
        }
    }
}
