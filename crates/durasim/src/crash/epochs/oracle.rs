//! The epoch oracle's state over a chunk's points: the crash image, the
//! last checkpoint's expected image (the initial one with each thread's
//! program stores up to its checkpointed position), the words where they
//! differ, and the recovery kept across points ([`Kept`]).

use super::super::memo::ReadSet;
use super::super::oracle::RecView;
use super::super::recorder::guarded;
use super::kept::{Kept, Source};
use super::units::{ReadLog, Spans, Units};
use crate::error::{Error, Result};
use crate::mem::{Layout, MemRead, MemWrite, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::{NewUnitsFn, RangeSet};
use crate::schemes::checkpoint::CoreContext;
use crate::types::{Addr, WORD_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};

pub(super) struct EpochOracle<'a> {
    pub(super) layout: Layout,
    pub(super) cur: SparseImage,
    pub(super) applied: u64,
    /// Per thread: its program's stores in order.
    pub(super) writes: &'a [Vec<(Addr, u64)>],
    /// Per thread: stores before each operation (`len` = operations + 1).
    pub(super) op_start: &'a [Vec<u64>],
    /// Stores of each thread applied to `expected`.
    pub(super) base: Vec<u64>,
    /// The last checkpoint's image: the initial one with those stores (a
    /// copy-on-write clone, so a word costs a page-cache read, not a hash
    /// lookup, and advancing costs a store each).
    pub(super) expected: SparseImage,
    pub(super) delta: Vec<FxHashSet<Addr>>,
    /// Per thread, where its stores whose `delta` entries a checkpoint
    /// advance left stale begin (they end at `base`). Outside `delta` and
    /// those stores' words the crash image equals the expected one. A check
    /// right after an advance (the chunk's last point: for a scheme whose
    /// only checkpoint is the run's last event, the one check that
    /// follows) compares those stores' lines instead of refreshing a delta
    /// entry per store; [`EpochOracle::settle`] refreshes them before
    /// anything else reads `delta`. Empty while a recovery is kept.
    pub(super) pending: Vec<(usize, u64)>,
    /// A passing point's recovery, kept while no event touches what it
    /// read ([`Kept`]).
    pub(super) kept: Option<Kept>,
}

impl<'a> EpochOracle<'a> {
    /// The oracle at point 0: the crash and expected images both `initial`,
    /// over the threads' program stores `writes` (operations starting at
    /// `op_start`).
    pub(super) fn new(
        layout: Layout,
        writes: &'a [Vec<(Addr, u64)>],
        op_start: &'a [Vec<u64>],
        initial: &SparseImage,
    ) -> Self {
        let threads = layout.threads;
        EpochOracle {
            layout,
            cur: initial.clone(),
            applied: 0,
            writes,
            op_start,
            base: vec![0; threads],
            expected: initial.clone(),
            delta: vec![FxHashSet::default(); threads],
            pending: Vec::new(),
            kept: None,
        }
    }
}

impl EpochOracle<'_> {
    #[inline(always)]
    pub(super) fn expected_word(&self, a: Addr) -> u64 {
        self.expected.read_u64(a)
    }

    fn refresh(&mut self, wa: Addr) {
        if let Some(t) = self.layout.thread_of(wa) {
            let want = self.expected_word(wa);
            self.refresh_thread(t, wa, want);
        }
    }

    /// [`EpochOracle::refresh`] of thread `t`'s word `wa`, whose expected
    /// value is `want`.
    #[inline]
    fn refresh_thread(&mut self, t: usize, wa: Addr, want: u64) {
        if self.cur.read_u64(wa) != want {
            self.delta[t].insert(wa);
        } else {
            self.delta[t].remove(&wa);
        }
    }

    /// [`EpochOracle::refresh`] for the kept recovered image.
    #[inline(always)]
    pub(super) fn refresh_kept(&mut self, wa: Addr) {
        if self.kept.is_none() {
            return;
        }
        if let Some(t) = self.layout.thread_of(wa) {
            let want = self.expected_word(wa);
            if let Some(k) = self.kept.as_mut() {
                k.view.refresh(t, wa, want);
            }
        }
    }

    /// Persist `data` at `addr`, only the words whose bit is set in `mask`.
    /// `keep`: an event of the untorn crash image, which the kept recovery
    /// follows (dropped if the event touches what it read); torn images
    /// are recovered from scratch and leave it alone.
    pub(super) fn persist(
        &mut self,
        addr: Addr,
        data: &[u8],
        mask: u8,
        undo: &mut Vec<(Addr, u64)>,
        keep: bool,
    ) {
        if keep
            && self
                .kept
                .as_mut()
                .is_some_and(|k| !k.touch(addr, data.len() as u64))
        {
            self.kept = None;
        }
        let end = addr + data.len() as u64;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            if mask & (1 << ((wa % 64) / WORD_BYTES)) != 0 {
                undo.push((wa, self.cur.read_u64(wa)));
                let off = (a - addr) as usize;
                let bytes = &data[off..off + (wend - a) as usize];
                self.cur.write_bytes(a, bytes);
                self.refresh(wa);
                if keep {
                    if let Some(k) = self.kept.as_mut() {
                        k.view.persist(wa, a, bytes);
                        self.refresh_kept(wa);
                    }
                }
            }
            a = wend;
        }
    }

    /// Keep a passing point's recovery (it read `reads` and wrote
    /// `writes` over the current crash image), unless a write overlaps a
    /// byte it read and its crashed re-runs are not proven otherwise
    /// (`repeat`: `RecoveryForm::CopiesHome`).
    pub(super) fn keep(
        &mut self,
        mut reads: ReadSet,
        mut writes: Writes,
        bytes_written: u64,
        modeled_ns: f64,
        repeat: bool,
    ) {
        self.settle();
        reads.seal();
        if !repeat
            && writes
                .pieces(writes.len())
                .any(|(a, d)| reads.overlaps(a, d.len() as u64))
        {
            self.kept = None;
            return;
        }
        let mut words = Vec::new();
        let mut view = match self.kept.take() {
            Some(Kept {
                source: Source::Stale { writes: old },
                mut view,
                ..
            }) => {
                // Take the stale recovery's writes out (crash image there).
                for (a, d) in old.pieces(old.len()) {
                    let mut w = a & !(WORD_BYTES - 1);
                    while w < a + d.len() as u64 {
                        view.uncover(w, &self.cur);
                        words.push(w);
                        w += WORD_BYTES;
                    }
                }
                view
            }
            _ => RecView::new(self.cur.clone(), self.delta.clone()),
        };
        for (a, d) in writes.pieces(writes.len()) {
            view.cover_write(a, d);
        }
        words.extend_from_slice(writes.sort_words());
        self.kept = Some(Kept {
            source: Source::Memo { reads, writes },
            bytes_written,
            modeled_ns,
            view,
        });
        for a in words {
            self.refresh_kept(a);
        }
    }

    /// Recover the current crash image by units and keep it; false if
    /// recovery failed or broke the contract (the point then recovers
    /// from scratch, which reports any error).
    pub(super) fn keep_units(
        &mut self,
        new_units: NewUnitsFn,
        params: &crate::config::Params,
    ) -> bool {
        self.kept = None;
        self.settle();
        let mut scan = new_units(params, &self.layout);
        let rl = ReadLog::new(&self.cur);
        let Ok(Ok(n)) = guarded(|| Ok::<_, String>(scan.begin(&rl))) else {
            return false;
        };
        let mut global = RangeSet::default();
        for (s, e) in rl.reads.into_inner() {
            global.insert(s, e);
        }
        let mut all_reads = Spans::default();
        for (s, e) in global.iter() {
            all_reads.insert(s, e);
        }
        self.kept = Some(Kept {
            source: Source::Units(Box::new(Units {
                scan,
                global,
                parts: Vec::new(),
                n,
                end_reads: RangeSet::default(),
                index: Default::default(),
                longest: 0,
                all_reads,
                homes: Spans::default(),
                pieces: 0,
                counts: [0, 0],
                owner: FxHashMap::default(),
                dirty: Vec::new(),
                end_dirty: true,
            })),
            bytes_written: 0,
            modeled_ns: 0.0,
            view: RecView::new(self.cur.clone(), self.delta.clone()),
        });
        self.update_units()
    }

    /// Bring a kept [`crate::recovery::UnitRecovery`] up to date with the events since the
    /// last point: re-run the units they touched, continue the scan if they
    /// touched its end. False (and nothing kept) if a unit failed, ended
    /// the scan early or broke the contract.
    pub(super) fn update_units(&mut self) -> bool {
        let Some(k) = self.kept.as_mut() else {
            return true;
        };
        if !matches!(k.source, Source::Units(_)) {
            return true;
        }
        let Source::Units(mut u) = std::mem::replace(
            &mut k.source,
            Source::Memo {
                reads: ReadSet::default(),
                writes: Writes::default(),
            },
        ) else {
            unreachable!("checked")
        };
        let changed = {
            let view = &mut self.kept.as_mut().expect("kept").view;
            u.rerun_dirty(&self.cur, view)
        };
        let Some(changed) = changed else {
            self.kept = None;
            return false;
        };
        for a in changed {
            self.refresh_kept(a);
        }
        let rep = u.scan.report(u.counts);
        let k = self.kept.as_mut().expect("kept");
        k.bytes_written = rep.bytes_written;
        k.modeled_ns = rep.modeled_ns;
        k.source = Source::Units(u);
        true
    }
    pub(super) fn undo(&mut self, undo: &[(Addr, u64)]) {
        for &(wa, v) in undo.iter().rev() {
            self.cur.write_u64(wa, v);
            self.refresh(wa);
        }
    }

    /// Stores of thread `t` the context `c` has executed.
    fn stores_of(&self, t: usize, c: &CoreContext) -> Result<u64> {
        let starts = &self.op_start[t];
        let at = starts.get(c.tx as usize).copied().ok_or_else(|| {
            Error::Internal(format!(
                "checkpoint context of core {t} names operation {} of {}",
                c.tx,
                starts.len() - 1
            ))
        })?;
        Ok(at + c.stores)
    }

    /// Move the expected image forward to the checkpoint with contexts `cs`.
    /// `lazy`: leave the crash image's delta entries of the stores
    /// pending (when no recovery is kept), for the one check that follows.
    pub(super) fn advance_to(&mut self, cs: &[CoreContext], lazy: bool) -> Result<()> {
        for (t, c) in cs.iter().enumerate() {
            let s = self.stores_of(t, c)?;
            if s < self.base[t] {
                return Err(Error::Internal(format!(
                    "core {t}'s checkpointed position moved backwards"
                )));
            }
            let stores = &self.writes[t][self.base[t] as usize..s as usize];
            if lazy && self.kept.is_none() {
                // Only the crash image's delta to bring up to date: leave
                // it to the check or `settle`, which read the stores.
                for &(a, v) in stores {
                    self.expected.write_u64(a, v);
                }
                if s > self.base[t] && !self.pending.iter().any(|p| p.0 == t) {
                    self.pending.push((t, self.base[t]));
                }
            } else {
                for &(a, v) in stores {
                    self.expected.write_u64(a, v);
                    // The store's value is the expected word: both deltas
                    // take it without reading it back.
                    if let Some(rt) = self.layout.thread_of(a) {
                        self.refresh_thread(rt, a, v);
                        if let Some(k) = self.kept.as_mut() {
                            k.view.refresh(rt, a, v);
                        }
                    }
                }
            }
            self.base[t] = s;
        }
        Ok(())
    }

    /// The stores an advance left pending, per thread.
    pub(super) fn pending_stores(&self) -> impl Iterator<Item = &[(Addr, u64)]> + '_ {
        self.pending
            .iter()
            .map(|&(t, from)| &self.writes[t][from as usize..self.base[t] as usize])
    }

    /// Refresh the delta entries of the words an advance left pending.
    #[inline]
    fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        debug_assert!(self.kept.is_none());
        for (t, from) in std::mem::take(&mut self.pending) {
            let writes = self.writes;
            for &(a, _) in &writes[t][from as usize..self.base[t] as usize] {
                self.refresh(a);
            }
        }
    }
}
