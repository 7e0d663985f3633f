//! Recovery from the log's bytes (MorLog §III-E) as a resumable scan
//! ([`MorScan`]).

use super::params::{Keys, DP, K};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::hw_log::{Record, Ring, RingCursor, TYPE_COMMIT, TYPE_DATA, TYPE_REDO};
use crate::schemes::{Layout, RecoveryReport};
use crate::types::Addr;
use rustc_hash::FxHashMap;

pub(super) fn recover(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}
pub(super) fn recover_dp(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan_dp(p, layout), img, p)
}

pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(MorScan::new(p, layout, &K, false))
}

pub(crate) fn new_scan_dp(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(MorScan::new(p, layout, &DP, true))
}

type TxKey = (u64, u32);

/// A transaction as the log shows it.
#[derive(Default)]
struct ScanTx {
    /// Its position in commit order (its first commit record).
    commit: Option<usize>,
    /// The ulog counter of that commit record (morlog-dp).
    counter: u64,
    /// Redo entries read after that commit record.
    redo_after: u64,
    /// Its data and redo entries (address, redo word) in log order, until
    /// their redo is emitted.
    recs: Vec<(Addr, u64)>,
    /// Its data entries whose undo is a home write (*spilled*, [`MorScan`]):
    /// (log position, address, undo word).
    spilled: Vec<(u64, Addr, u64)>,
    /// Its data entries read from now on are spilled.
    spill: bool,
}

/// A data entry of a transaction not sealed whose undo is in the finish.
#[derive(Clone, Copy, Debug)]
struct Undo {
    key: TxKey,
    /// Its log position.
    seq: u64,
    addr: Addr,
    undo: u64,
}

/// A word the scan writes home while sealing ([`MorScan`]).
#[derive(Default)]
struct Word {
    /// The values of the live home pieces at this word, in the io's order:
    /// a mirror of [`ScanIo::rehome`]'s rule (a replacement or withdrawal
    /// acts on the last live piece with the old bytes, after the record's
    /// new home writes).
    slots: Vec<u64>,
    /// The newest redo emitted and its transaction's commit position.
    redo: u64,
    writer: Option<usize>,
    /// Spilled undo words (log position, undo word), in log order.
    spilled: Vec<(u64, u64)>,
    /// The resume that last replaced or withdrew a piece here.
    rehomed_in: u64,
}

impl Word {
    /// What the word's home writes must leave: the oldest spilled undo,
    /// else the newest redo.
    fn last(&self) -> u64 {
        self.spilled.first().map_or(self.redo, |s| s.1)
    }
}

/// Recovery from the log's bytes (§III-E) as a resumable scan
/// (recovery/scan.rs, one cursor: the ring). Its writes, as a multiset and
/// in their effect on every word, are those of the recovery it replaced:
/// the redo of every persisted transaction in commit order (each in log
/// order, with the entries read after its commit record), then the undo of
/// every data entry of the others in reverse log order, then the head
/// moved to the end. Persisted = committed (`morlog`); `morlog-dp`: the
/// committed ones before the first whose ulog counter differs from its redo
/// entries after its record.
///
/// Resumable because a transaction's redo is emitted (home writes) once it
/// is persisted (*sealed*), in commit order, and an entry that joins a
/// sealed transaction later is emitted when read. The undo of the others
/// is the finish, recomputed at each point, except for morlog-dp's
/// committed transactions behind the first one not persisted (a ULog line
/// that stays in an L1 keeps that one short of its counter for thousands
/// of records): their undo is *spilled*, emitted as home writes too, and
/// withdrawn ([`ScanIo::rehome`] with `None`) when the transaction is
/// sealed. Per word, the spilled entries are the newest of the undo
/// entries not sealed (an entry read after a spilled one at its word
/// spills; spilling one spills the newer ones at its word), so the finish,
/// written after every home write, still leaves the oldest undo. Where no
/// finish write lands, the home writes must leave the oldest spilled undo,
/// else the newest redo ([`Word::last`]): the scan mirrors the io's pieces
/// per word and, after each record, swaps values between two pieces (a
/// multiset of writes does not say which piece holds which value) so that
/// the last piece holds it, and rewrites it once more if the word was
/// replaced earlier in this resume (the driver applies a resume's home
/// writes before its replacements).
///
/// Two things the bytes allow would make an emitted redo wrong: a
/// morlog-dp redo entry after a sealed transaction's counter was met (it
/// and every later one are no longer persisted), and a joining entry of a
/// sealed transaction to a word that a later sealed one wrote (its redo
/// must come before that one); so would an entry at an address that is
/// not a word's (the mirror is per word). Then the scan restarts from the
/// head without sealing ([`ScanIo::restart`]): every write is in the
/// finish, in the replaced recovery's order.
pub(super) struct MorScan {
    cur: RingCursor,
    /// morlog-dp and not the `ignore-counter` mutant.
    check_counter: bool,
    /// Emit persisted transactions' redo (and spilled undo) as home writes
    /// (off after a restart).
    seal: bool,
    txs: FxHashMap<TxKey, ScanTx>,
    /// Transactions in commit order.
    commits: Vec<TxKey>,
    /// `commits[..persisted]` are persisted.
    persisted: usize,
    /// `commits[..sealed]` have their redo emitted (`persisted` when
    /// sealing, 0 otherwise).
    sealed: usize,
    /// Data entries of transactions not sealed that are not spilled, in
    /// log order.
    undo: Vec<Undo>,
    /// Words written home while sealing.
    words: FxHashMap<Addr, Word>,
    /// Spilled data entries.
    pub(super) spilled: u64,
    /// Redo words emitted.
    redone: u64,
    /// Resumes so far.
    resumes: u64,
    /// The record's home writes, withdrawals and words to settle, issued
    /// at its end in the order the io applies them.
    new_homes: Vec<(Addr, u64)>,
    withdrawn: Vec<(Addr, u64)>,
    touched: Vec<Addr>,
}

impl MorScan {
    fn new(p: &Params, layout: &Layout, k: &Keys, dp: bool) -> Self {
        let check_counter = dp && p.str(k.mutant) != "ignore-counter";
        let mut s = Self::fresh(Ring::new(layout, p.u64(k.log_bytes)), check_counter);
        s.cur.skip_head = p.str(k.mutant) == "scan-skips-head-entry";
        s
    }

    /// Nothing scanned yet.
    pub(super) fn fresh(ring: Ring, check_counter: bool) -> Self {
        MorScan {
            cur: RingCursor::new(ring),
            check_counter,
            seal: true,
            txs: FxHashMap::default(),
            commits: Vec::new(),
            persisted: 0,
            sealed: 0,
            undo: Vec::new(),
            words: FxHashMap::default(),
            spilled: 0,
            redone: 0,
            resumes: 0,
            new_homes: Vec::new(),
            withdrawn: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Whether a data entry of `key` in `undo` belongs to a persisted
    /// transaction (never while sealing keeps up: `undo` holds only
    /// transactions not sealed, so the lookup is skipped).
    fn is_persisted(&self, key: &TxKey) -> bool {
        self.sealed < self.persisted && self.txs[key].commit.is_some_and(|i| i < self.persisted)
    }

    fn counter_met(&self, i: usize) -> bool {
        let t = &self.txs[&self.commits[i]];
        !self.check_counter || t.counter == t.redo_after
    }

    /// Emit the redo `v` of `a` of the sealed transaction at commit
    /// position `i`.
    fn emit_redo(&mut self, i: usize, a: Addr, v: u64) {
        let w = self.words.entry(a).or_default();
        w.redo = v;
        w.writer = Some(i);
        self.new_homes.push((a, v));
        self.touched.push(a);
        self.redone += 1;
    }

    /// Emit the undo of data entry `u` (spill it).
    fn spill(&mut self, u: Undo) {
        let w = self.words.entry(u.addr).or_default();
        let at = w.spilled.partition_point(|s| s.0 < u.seq);
        w.spilled.insert(at, (u.seq, u.undo));
        let t = self.txs.get_mut(&u.key).expect("a read transaction");
        t.spilled.push((u.seq, u.addr, u.undo));
        self.new_homes.push((u.addr, u.undo));
        self.touched.push(u.addr);
        self.spilled += 1;
    }

    /// Spill every data entry of `key` in the finish, and the newer ones
    /// at the same words (log order: the first spilled at a word starts
    /// its suffix).
    fn spill_tx(&mut self, key: TxKey) {
        self.txs.get_mut(&key).expect("committed").spill = true;
        let mut cut: Vec<Addr> = Vec::new();
        let mut out = Vec::new();
        self.undo.retain(|u| {
            let go = u.key == key || cut.contains(&u.addr);
            if go {
                if !cut.contains(&u.addr) {
                    cut.push(u.addr);
                }
                out.push(*u);
            }
            !go
        });
        for u in out {
            self.spill(u);
        }
    }

    /// Issue the record's home writes, then its withdrawals, then settle
    /// the words they touched (see [`MorScan`]).
    fn flush(&mut self, io: &mut dyn ScanIo) {
        let resume = self.resumes;
        for (a, v) in self.new_homes.drain(..) {
            io.home(a, &v.to_le_bytes());
            self.words.get_mut(&a).expect("kept").slots.push(v);
        }
        for (a, u) in self.withdrawn.drain(..) {
            io.rehome(a, &u.to_le_bytes(), None);
            let w = self.words.get_mut(&a).expect("kept");
            let j = w.slots.iter().rposition(|&x| x == u).expect("a live piece");
            w.slots.remove(j);
            w.rehomed_in = resume;
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        for a in self.touched.drain(..) {
            let w = self.words.get_mut(&a).expect("kept");
            let Some(&l) = w.slots.last() else {
                continue;
            };
            let f = w.last();
            let n = w.slots.len() - 1;
            if l != f {
                let j = w.slots[..n]
                    .iter()
                    .rposition(|&x| x == f)
                    .expect("a live piece holds the final value");
                io.rehome(a, &f.to_le_bytes(), Some(&l.to_le_bytes()));
                w.slots[j] = l;
                io.rehome(a, &l.to_le_bytes(), Some(&f.to_le_bytes()));
                w.slots[n] = f;
                w.rehomed_in = resume;
            } else if w.rehomed_in == resume {
                io.rehome(a, &f.to_le_bytes(), Some(&f.to_le_bytes()));
            }
        }
    }

    /// Fold record `r` into the state; `false` (nothing changed) if it
    /// makes an emitted write wrong.
    fn apply(&mut self, r: &Record, io: &mut dyn ScanIo) -> bool {
        let key = (r.core, r.txid);
        if self.seal && r.kind != TYPE_COMMIT && !r.addr.is_multiple_of(8) {
            return false;
        }
        let t = self.txs.entry(key).or_default();
        if r.kind == TYPE_COMMIT {
            if t.commit.is_none() {
                t.commit = Some(self.commits.len());
                t.counter = r.redo;
                self.commits.push(key);
            }
        } else {
            // The counter covers the redo entries after the record.
            let counted = r.kind == TYPE_REDO && t.commit.is_some();
            match t.commit {
                Some(i) if i < self.sealed => {
                    let later = self.words.get(&r.addr).and_then(|w| w.writer);
                    if counted && self.check_counter || later.is_some_and(|j| j > i) {
                        return false;
                    }
                    t.redo_after += u64::from(counted);
                    self.emit_redo(i, r.addr, r.redo);
                    self.flush(io);
                    return true;
                }
                commit => {
                    t.redo_after += u64::from(counted);
                    t.recs.push((r.addr, r.redo));
                    if r.kind == TYPE_DATA {
                        let spill = self.seal
                            && (t.spill
                                || self
                                    .words
                                    .get(&r.addr)
                                    .is_some_and(|w| !w.spilled.is_empty()));
                        let u = Undo {
                            key,
                            seq: self.cur.seq,
                            addr: r.addr,
                            undo: r.undo,
                        };
                        if spill {
                            self.spill(u);
                        } else {
                            self.undo.push(u);
                        }
                    }
                    // (Without sealing) a persisted one whose counter is
                    // now exceeded ends the persisted prefix.
                    if let Some(i) = commit.filter(|&i| i < self.persisted) {
                        if !self.counter_met(i) {
                            self.persisted = i;
                        }
                    }
                }
            }
        }
        while self.persisted < self.commits.len() && self.counter_met(self.persisted) {
            self.persisted += 1;
        }
        if self.seal && self.sealed < self.persisted {
            for i in self.sealed..self.persisted {
                let t = self.txs.get_mut(&self.commits[i]).expect("committed");
                let recs = std::mem::take(&mut t.recs);
                let gone = std::mem::take(&mut t.spilled);
                for (a, v) in recs {
                    self.emit_redo(i, a, v);
                }
                for (seq, a, u) in gone {
                    let w = self.words.get_mut(&a).expect("spilled");
                    let j = w.spilled.iter().position(|s| s.0 == seq).expect("spilled");
                    w.spilled.remove(j);
                    self.withdrawn.push((a, u));
                    self.touched.push(a);
                    self.spilled -= 1;
                }
            }
            self.sealed = self.persisted;
            let txs = &self.txs;
            let sealed = self.sealed;
            self.undo
                .retain(|u| txs[&u.key].commit.is_none_or(|i| i >= sealed));
        }
        // morlog-dp: committed behind the first one not persisted.
        if self.seal && r.kind == TYPE_COMMIT {
            let t = &self.txs[&key];
            if !t.spill && t.commit.is_some_and(|i| i > self.persisted) {
                self.spill_tx(key);
            }
        }
        self.flush(io);
        true
    }
}

impl ResumableScan for MorScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        self.resumes += 1;
        while let Some(r) = self.cur.next(io) {
            if !self.apply(&r, io) {
                if !io.restart() {
                    return Err(Error::Internal(
                        "morlog scan: emitted writes cannot be taken back here".into(),
                    ));
                }
                let mut fresh = MorScan::fresh(self.cur.ring, self.check_counter);
                fresh.cur.skip_head = self.cur.skip_head;
                *self = MorScan {
                    seal: false,
                    ..fresh
                };
                continue;
            }
            self.cur.advance(io);
        }
        Ok(())
    }

    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for key in &self.commits[self.sealed..self.persisted] {
            for &(a, v) in &self.txs[key].recs {
                out(a, &v.to_le_bytes());
            }
        }
        for u in self.undo.iter().rev() {
            if !self.is_persisted(&u.key) {
                out(u.addr, &u.undo.to_le_bytes());
            }
        }
        self.cur.head_to_end(out);
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let redone = self.redone
            + self.commits[self.sealed..self.persisted]
                .iter()
                .map(|k| self.txs[k].recs.len() as u64)
                .sum::<u64>();
        let undone = self.spilled
            + self
                .undo
                .iter()
                .filter(|u| !self.is_persisted(&u.key))
                .count() as u64;
        let mismatches = u64::from(self.check_counter && self.persisted < self.commits.len());
        self.cur.report(
            p,
            redone + undone,
            &[
                ("words_redone", redone as f64),
                ("words_undone", undone as f64),
                ("committed_tx", self.commits.len() as f64),
                ("persisted_tx", self.persisted as f64),
                ("ulog_counter_mismatches", mismatches as f64),
            ],
        )
    }
}
