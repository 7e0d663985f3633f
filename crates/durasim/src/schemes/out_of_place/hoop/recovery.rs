//! Recovery (HOOP §III-F) from the NVM bytes alone, and its time model.
//!
//! Read every block header (the block index table), collect the commit
//! entries of the address slices of live blocks, sort the committed
//! transactions by TxID, replay them newest-wins into home, then mark the
//! live blocks UNUSED oldest first. Until a block is marked UNUSED its
//! transactions stay replayable, so a crash during recovery is repaired by
//! running recovery again (it is idempotent).

use super::layout::{
    self, BlockHeader, CommitEntry, DataSlice, ADDR_ENTRIES, KIND_ADDR, KIND_BYTE, SLICE_BYTES,
};
use super::Geometry;
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::{Layout, RecoveryReport};
use crate::types::Addr;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};

/// Parameters of the recovery-time model (issue part 8).
#[derive(Clone, Copy, Debug)]
pub struct RecoveryModel {
    pub threads: u64,
    /// NVM bandwidth available to recovery.
    pub bandwidth_gbps: f64,
    /// Parse/hash rate of one recovery thread.
    pub thread_gbps: f64,
    /// One thread's cost to merge one local hash entry into the global map.
    pub merge_ns: f64,
}

/// What a recovery has to do.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecoveryWork {
    /// Headers, address slices and data slices read from the OOP region.
    pub oop_bytes_read: u64,
    /// Home bytes written by the replay.
    pub home_bytes_written: u64,
    /// Entries of the threads' local hash maps (one per replayed word
    /// version kept after per-thread coalescing).
    pub hash_entries: u64,
}

impl RecoveryModel {
    pub fn from_params(p: &Params) -> Self {
        RecoveryModel {
            threads: p.u64("hoop.recovery_threads"),
            bandwidth_gbps: p.f64("hoop.recovery_bandwidth_gbps"),
            thread_gbps: p.f64("hoop.recovery_thread_gbps"),
            merge_ns: p.f64("hoop.recovery_merge_ns"),
        }
    }

    /// Modeled time: threads scan their share of the OOP region in
    /// parallel (bounded by NVM bandwidth and per-thread rate), merge the
    /// local maps in parallel, each thread owning a partition of the home
    /// addresses (the global map is split by address for the write phase
    /// anyway, §III-F), then write home in parallel.
    pub fn time_ns(&self, w: &RecoveryWork) -> f64 {
        let rate = self
            .bandwidth_gbps
            .min(self.threads as f64 * self.thread_gbps); // bytes/ns
        let scan = w.oop_bytes_read as f64 / rate;
        let merge = w.hash_entries as f64 * self.merge_ns / self.threads as f64;
        let write = w.home_bytes_written as f64 / rate;
        scan + merge + write
    }

    /// Experiment (g): recovery time of a full OOP region of
    /// `region_bytes` whose transactions' words coalesce by
    /// `reduction_ratio` (GC data reduction ratio measured by a run).
    pub fn region_time_ns(&self, region_bytes: u64, reduction_ratio: f64) -> f64 {
        // A data slice carries 8 words (64 B) of data per 128 B.
        let words = region_bytes / SLICE_BYTES * 8;
        let kept = (words as f64 * (1.0 - reduction_ratio.clamp(0.0, 1.0))).round() as u64;
        self.time_ns(&RecoveryWork {
            oop_bytes_read: region_bytes,
            home_bytes_written: kept * 8,
            hash_entries: kept,
        })
    }
}

/// Recovery time of an OOP region of `region_bytes` versus threads and NVM
/// bandwidth (paper experiment (g)); other model parameters from `p`.
pub fn recovery_time_ns(
    p: &Params,
    region_bytes: u64,
    reduction_ratio: f64,
    threads: u64,
    bandwidth_gbps: f64,
) -> f64 {
    let mut m = RecoveryModel::from_params(p);
    m.threads = threads.max(1);
    m.bandwidth_gbps = bandwidth_gbps;
    m.region_time_ns(region_bytes, reduction_ratio)
}

fn corrupt(what: String) -> Error {
    Error::Internal(format!("HOOP recovery: {what}"))
}

/// The recovery function registered for HOOP: [`HoopScan`] from scratch.
pub fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    Geometry::new(p, layout)?;
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// HOOP's recovery as a scan that follows the writes (recovery/scan.rs).
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(HoopScan {
        g: Geometry::new(p, layout).ok(),
        home_limit: layout.home_limit,
        skip_newest: p.str("hoop.mutant") == "recovery-skips-newest",
        started: false,
        stale: false,
        ambiguous: false,
        index: BTreeMap::new(),
        flagged: FxHashMap::default(),
        aslices: BTreeMap::new(),
        chain_slots: FxHashSet::default(),
        commits: 0,
        chain_slices: 0,
        words: FxHashMap::default(),
        pending: Vec::new(),
        to_add: Vec::new(),
        added: Vec::new(),
        removed: Vec::new(),
        tx: Vec::new(),
        tx_seen: FxHashSet::default(),
        chain: Vec::new(),
        chain_at: Vec::new(),
        touched: FxHashMap::default(),
    })
}

/// The versions of one home word in the live commits: the newest (what
/// recovery writes) and the older ones, ascending by TxID (what it writes
/// once the newer are retired).
struct Versions {
    txid: u32,
    value: u64,
    older: VecDeque<(u32, u64)>,
}

/// Recovery's state for one crash image, kept up to date write by write.
///
/// Recovery's result is a function of the set of live commits alone:
/// newest TxID wins per home word is a maximum, which does not depend on
/// the order commits are met; a transaction's own words are fixed by its
/// chain. So the state is that set, as the bytes say it (index words,
/// headers of flagged blocks, address slices of live blocks), with every
/// version of every word. A write re-reads the unit it touched (an index
/// word, a header, a slice) and the difference adds commits (their chains
/// read) or removes them (GC retired or freed them: their chains, still
/// intact, re-read to withdraw their versions). A write to a slice some
/// live chain read would change a committed transaction: the scan goes
/// stale and the driver starts over.
struct HoopScan {
    /// `None`: the parameters give no valid OOP region (`recover` reports it).
    g: Option<Geometry>,
    home_limit: Addr,
    /// Test-only mutant `recovery-skips-newest`: the planted bug is not a
    /// maximum (a new commit un-skips the previous newest), so its state is
    /// stale at any change of the commits.
    skip_newest: bool,
    started: bool,
    stale: bool,
    /// Two commits of one TxID wrote a word: the from-scratch order decides
    /// between them, so the state is stale at any change of the commits.
    ambiguous: bool,
    /// Nonzero words of the block index table: word number -> bits.
    index: BTreeMap<u64, u64>,
    /// Blocks whose index bit is set (their headers are read): the epoch
    /// if the header is live.
    flagged: FxHashMap<usize, Option<u32>>,
    /// Slots of live blocks whose kind byte says address slice, with the
    /// commit-entry words that count (zero: another epoch's, retired, empty).
    aslices: BTreeMap<u64, [u64; ADDR_ENTRIES]>,
    /// Slices the live commits' chains read.
    chain_slots: FxHashSet<u64>,
    commits: u64,
    chain_slices: u64,
    words: FxHashMap<Addr, Versions>,
    /// OOP-region byte ranges written since the last resume.
    pending: Vec<(Addr, Addr)>,
    // Scratch of one resume.
    to_add: Vec<(u32, usize)>,
    added: Vec<CommitEntry>,
    removed: Vec<CommitEntry>,
    /// One transaction's words, the version recovery keeps of each.
    tx: Vec<(Addr, u64)>,
    tx_seen: FxHashSet<Addr>,
    chain: Vec<DataSlice>,
    /// The slots of `chain`.
    chain_at: Vec<u64>,
    /// Words changed by this resume: the value written before it, if any.
    touched: FxHashMap<Addr, Option<u64>>,
}

impl HoopScan {
    /// Header of flagged block `b`: its epoch if live.
    fn read_header(io: &dyn ScanIo, g: &Geometry, b: usize) -> Option<u32> {
        let mut hb = [0u8; BlockHeader::BYTES];
        io.read_bytes(g.block_addr(b), &mut hb);
        let h = BlockHeader::decode(&hb);
        h.state.is_live().then_some(h.epoch)
    }

    /// Index word `w` now holds `bits`: flag or unflag its blocks.
    fn index_word(&mut self, io: &dyn ScanIo, g: &Geometry, w: u64, bits: u64) {
        let old = self.index.get(&w).copied().unwrap_or(0);
        if bits == 0 {
            self.index.remove(&w);
        } else {
            self.index.insert(w, bits);
        }
        let mut changed = old ^ bits;
        while changed != 0 {
            let bit = changed.trailing_zeros() as u64;
            changed &= changed - 1;
            let b = (w * 64 + bit) as usize;
            if b < g.first_block as usize || b >= g.blocks as usize {
                continue;
            }
            if bits & (1 << bit) != 0 {
                let live = Self::read_header(io, g, b);
                self.flagged.insert(b, live);
                if let Some(e) = live {
                    self.to_add.push((e, b));
                }
            } else if let Some(Some(_)) = self.flagged.remove(&b) {
                self.drop_block(g, b);
            }
        }
    }

    /// Block `b` is no longer live: its commits leave.
    fn drop_block(&mut self, g: &Geometry, b: usize) {
        let first = b as u64 * g.slots_per_block;
        let gone: Vec<u64> = self
            .aslices
            .range(first..first + g.slots_per_block)
            .map(|(&s, _)| s)
            .collect();
        for s in gone {
            let e = self.aslices.remove(&s).expect("listed");
            self.removed
                .extend(e.into_iter().filter_map(CommitEntry::decode));
        }
        self.to_add.retain(|&(_, x)| x != b);
    }

    /// Slot `slot` of a live block of epoch `epoch` holds `sl`: the commit
    /// entries that changed.
    fn slot_bytes(&mut self, slot: u64, sl: &[u8], epoch: u32) {
        let new = layout::address_slice_entries(sl, epoch);
        let old = match new {
            Some(n) => self.aslices.insert(slot, n),
            None => self.aslices.remove(&slot),
        };
        let zero = [0u64; ADDR_ENTRIES];
        let (o, n) = (old.unwrap_or(zero), new.unwrap_or(zero));
        for i in 0..ADDR_ENTRIES {
            if o[i] != n[i] {
                self.removed.extend(CommitEntry::decode(o[i]));
                self.added.extend(CommitEntry::decode(n[i]));
            }
        }
    }

    /// Address slices of a block that became live (probed a page at a
    /// time; pages that read as zero hold none).
    fn scan_block(&mut self, io: &dyn ScanIo, g: &Geometry, b: usize, epoch: u32) {
        let mut page = [0u8; 4096];
        let page = &mut page[..4096.min(g.block_bytes) as usize];
        let per_page = page.len() as u64 / SLICE_BYTES;
        let first = b as u64 * g.slots_per_block;
        let mut slot = first;
        let block_end = g.slot_addr(first) + g.block_bytes;
        while slot < first + g.slots_per_block {
            let a = g.slot_addr(slot);
            let skip = (io.zeros_until(a, block_end) - a) / page.len() as u64;
            if skip > 0 {
                slot += skip * per_page;
                continue;
            }
            io.read_bytes(a, page);
            for i in 0..per_page {
                let s = slot + i;
                let off = (i * SLICE_BYTES) as usize;
                let sl = &page[off..off + SLICE_BYTES as usize];
                // Slot 0 is the header.
                if s != first && sl[KIND_BYTE] == KIND_ADDR {
                    self.slot_bytes(s, sl, epoch);
                }
            }
            slot += per_page;
        }
    }

    /// Fold in the bytes of `[start, end)` (OOP region), written since the
    /// last resume.
    fn reread(&mut self, io: &dyn ScanIo, g: &Geometry, start: Addr, end: Addr) {
        let index_end = g.base + g.index_bytes();
        if start < index_end {
            for w in (start - g.base) / 8..=(end.min(index_end) - 1 - g.base) / 8 {
                let mut b = [0u8; 8];
                io.read_bytes(g.base + w * 8, &mut b);
                self.index_word(io, g, w, u64::from_le_bytes(b));
            }
        }
        let lo = start.max(g.block_addr(g.first_block as usize));
        if lo >= end {
            return;
        }
        for slot in (lo - g.base) / SLICE_BYTES..=(end - 1 - g.base) / SLICE_BYTES {
            let b = g.block_of(slot);
            if slot.is_multiple_of(g.slots_per_block) {
                if let Some(&old) = self.flagged.get(&b) {
                    let live = Self::read_header(io, g, b);
                    if live != old {
                        self.flagged.insert(b, live);
                        if old.is_some() {
                            self.drop_block(g, b);
                        }
                        if let Some(e) = live {
                            self.to_add.push((e, b));
                        }
                    }
                }
            } else if self.chain_slots.contains(&slot) {
                self.stale = true;
                return;
            } else if let Some(&Some(epoch)) = self.flagged.get(&b) {
                let mut sl = [0u8; SLICE_BYTES as usize];
                io.read_bytes(g.slot_addr(slot), &mut sl);
                self.slot_bytes(slot, &sl, epoch);
            }
        }
    }

    /// Read the chain of commit `c` (checked as committed data must be)
    /// into `chain`/`chain_at`, and its words, the version recovery keeps
    /// of each, into `tx`.
    fn read_chain(&mut self, io: &dyn ScanIo, g: &Geometry, c: CommitEntry) -> Result<()> {
        self.chain.clear();
        self.chain_at.clear();
        let mut sb = [0u8; SLICE_BYTES as usize];
        let mut slot = c.start_slot;
        let mut first = true;
        loop {
            if slot >= g.slots() || slot.is_multiple_of(g.slots_per_block) {
                return Err(corrupt(format!(
                    "transaction {} links to invalid slice {slot}",
                    c.txid
                )));
            }
            io.read_bytes(g.slot_addr(slot), &mut sb);
            let s = DataSlice::decode(&sb).ok_or_else(|| {
                corrupt(format!(
                    "slice {slot} of transaction {} is not a data slice",
                    c.txid
                ))
            })?;
            if s.txid != c.txid || s.first != first {
                return Err(corrupt(format!(
                    "slice {slot} belongs to transaction {} (first={}), expected {} (first={first})",
                    s.txid, s.first, c.txid
                )));
            }
            self.chain.push(s);
            self.chain_at.push(slot);
            if self.chain.len() as u64 > g.slots() {
                return Err(corrupt(format!(
                    "transaction {} has a cyclic slice chain",
                    c.txid
                )));
            }
            first = false;
            if s.next == 0 {
                break;
            }
            slot = layout::follow_next(slot, s.next, g.slots());
        }
        // Within a transaction a later slice holds the later update.
        self.tx.clear();
        self.tx_seen.clear();
        for s in self.chain.iter().rev() {
            for i in 0..s.count as usize {
                if self.tx_seen.insert(s.homes[i]) {
                    self.tx.push((s.homes[i], s.values[i]));
                }
            }
        }
        Ok(())
    }

    fn add_version(&mut self, w: Addr, txid: u32, value: u64, fresh: bool) {
        use std::collections::hash_map::Entry;
        let prior = match self.words.entry(w) {
            Entry::Vacant(e) => {
                e.insert(Versions {
                    txid,
                    value,
                    older: VecDeque::new(),
                });
                None
            }
            Entry::Occupied(mut o) => {
                let x = o.get_mut();
                if txid > x.txid {
                    let prior = x.value;
                    x.older.push_back((x.txid, x.value));
                    (x.txid, x.value) = (txid, value);
                    Some(prior)
                } else {
                    let i = x.older.partition_point(|v| v.0 < txid);
                    if txid == x.txid || x.older.get(i).is_some_and(|v| v.0 == txid) {
                        // The first met wins, as from scratch (TxID order).
                        self.ambiguous = true;
                    } else {
                        x.older.insert(i, (txid, value));
                    }
                    return;
                }
            }
        };
        if !fresh {
            self.touched.entry(w).or_insert(prior);
        }
    }

    /// Withdraw a version added by `add_version`; false if it is not there.
    fn remove_version(&mut self, w: Addr, txid: u32, value: u64) -> bool {
        let Some(x) = self.words.get_mut(&w) else {
            return false;
        };
        if x.txid != txid {
            let i = x.older.partition_point(|v| v.0 < txid);
            if x.older.get(i) != Some(&(txid, value)) {
                return false;
            }
            x.older.remove(i);
            return true;
        }
        if x.value != value {
            return false;
        }
        self.touched.entry(w).or_insert(Some(value));
        match x.older.pop_back() {
            Some(v) => (x.txid, x.value) = v,
            None => {
                self.words.remove(&w);
            }
        }
        true
    }
}

impl HoopScan {
    /// 1. (Fresh scan.) Block index table (one bit per possibly live
    ///    block), then the headers of the flagged blocks. Host time follows
    ///    the set bits, not the region's block count: the index is read a
    ///    4 KiB piece at a time, pieces that read as zero are skipped
    ///    (zeros_until), and only nonzero words are examined (4 KiB blocks
    ///    made this loop the cost).
    fn read_index_table(&mut self, io: &dyn ScanIo, g: &Geometry) {
        let index_bytes = g.index_bytes();
        let mut piece = [0u8; 4096];
        let mut off = 0u64;
        while off < index_bytes {
            let nz = io.zeros_until(g.base + off, g.base + index_bytes) - g.base;
            off = nz & !7;
            if off >= index_bytes {
                break;
            }
            let n = (piece.len() as u64).min(index_bytes - off) as usize;
            io.read_bytes(g.base + off, &mut piece[..n]);
            for (i, w) in piece[..n].chunks(8).enumerate() {
                let mut b = [0u8; 8];
                b[..w.len()].copy_from_slice(w);
                let bits = u64::from_le_bytes(b);
                if bits != 0 {
                    self.index_word(io, g, off / 8 + i as u64, bits);
                }
            }
            off += n as u64;
        }
    }

    /// 1'. (Kept scan.) Re-read the OOP-region ranges written since the
    ///     last resume; stops at the first that makes the scan stale.
    fn reread_pending(&mut self, io: &dyn ScanIo, g: &Geometry) {
        let mut pending = std::mem::take(&mut self.pending);
        for &(s, e) in &pending {
            self.reread(io, g, s, e);
            if self.stale {
                break;
            }
        }
        pending.clear();
        self.pending = pending;
    }

    /// 2. Address slices of the blocks that became live, oldest first.
    fn scan_new_blocks(&mut self, io: &dyn ScanIo, g: &Geometry) {
        let mut to_add = std::mem::take(&mut self.to_add);
        to_add.sort_unstable();
        for &(epoch, b) in &to_add {
            self.scan_block(io, g, b, epoch);
        }
        self.to_add = to_add;
    }

    /// 3a. Retired commits leave: their chains are intact (a write to one
    ///     makes the scan stale), re-read to withdraw their versions.
    fn withdraw_removed(&mut self, io: &dyn ScanIo, g: &Geometry) {
        let removed = std::mem::take(&mut self.removed);
        for &c in &removed {
            if self.read_chain(io, g, c).is_err() {
                self.stale = true;
                break;
            }
            for i in 0..self.tx.len() {
                let (w, v) = self.tx[i];
                if !self.remove_version(w, c.txid, v) {
                    self.stale = true;
                    break;
                }
            }
            if self.stale {
                break;
            }
            for s in &self.chain_at {
                self.chain_slots.remove(s);
            }
            self.commits -= 1;
            self.chain_slices -= self.chain.len() as u64;
        }
        self.removed = removed;
    }

    /// 3b. New commits join, newest first: the first version of a word
    ///     met is the newest.
    fn join_added(&mut self, io: &dyn ScanIo, g: &Geometry, fresh: bool) -> Result<()> {
        let mut added = std::mem::take(&mut self.added);
        added.sort_unstable_by_key(|c| std::cmp::Reverse(c.txid));
        self.commits += added.len() as u64;
        let skip = usize::from(self.skip_newest && !added.is_empty());
        let mut res = Ok(());
        for &c in &added[skip..] {
            res = self.read_chain(io, g, c);
            if res.is_err() {
                break;
            }
            self.chain_slices += self.chain.len() as u64;
            self.chain_slots.extend(self.chain_at.iter().copied());
            for i in 0..self.tx.len() {
                let (w, v) = self.tx[i];
                self.add_version(w, c.txid, v, fresh);
            }
        }
        self.added = added;
        res
    }

    /// 4. Home writes (sorted: deterministic write order), each word once
    ///    with its newest version: every word on a fresh scan, else the
    ///    words changed since the last resume.
    fn write_home(&mut self, io: &mut dyn ScanIo, fresh: bool) -> Result<()> {
        let mut changed: Vec<(Addr, Option<u64>)> = if fresh {
            self.words.keys().map(|&a| (a, None)).collect()
        } else {
            self.touched.iter().map(|(&a, &v)| (a, v)).collect()
        };
        changed.sort_unstable_by_key(|c| c.0);
        for (a, before) in changed {
            let now = self.words.get(&a).map(|x| x.value);
            if now.is_some() && a + 8 > self.home_limit {
                return Err(corrupt(format!(
                    "home address {a:#x} outside the home region"
                )));
            }
            match (before, now) {
                (None, Some(v)) => io.home(a, &v.to_le_bytes()),
                (Some(o), Some(v)) if o != v => {
                    io.rehome(a, &o.to_le_bytes(), Some(&v.to_le_bytes()))
                }
                (Some(o), None) => io.rehome(a, &o.to_le_bytes(), None),
                _ => {}
            }
        }
        Ok(())
    }
}

impl ResumableScan for HoopScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let g = self
            .g
            .ok_or_else(|| corrupt("no valid OOP region geometry".into()))?;
        let fresh = !self.started;
        self.to_add.clear();
        self.added.clear();
        self.removed.clear();
        self.touched.clear();
        if fresh {
            self.started = true;
            self.read_index_table(&*io, &g);
        } else {
            self.reread_pending(&*io, &g);
            if self.stale {
                return Ok(());
            }
        }
        self.scan_new_blocks(&*io, &g);
        if !fresh
            && (self.skip_newest || self.ambiguous)
            && !(self.added.is_empty() && self.removed.is_empty())
        {
            self.stale = true;
            return Ok(());
        }
        self.withdraw_removed(&*io, &g);
        if self.stale {
            return Ok(());
        }
        self.join_added(&*io, &g, fresh)?;
        self.write_home(io, fresh)?;
        io.mark();
        Ok(())
    }

    /// 5. Clear the OOP region, oldest block first (keeps the epoch so a
    ///    restarted controller never reuses it), then the index bits
    ///    (after the headers: the index stays a superset of the live
    ///    blocks).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        let Some(g) = self.g else {
            return;
        };
        for (epoch, b) in self.live() {
            let hdr = BlockHeader {
                index: (b & 0xff) as u8,
                next: 0,
                state: layout::BlockState::Unused,
                epoch,
            };
            out(g.block_addr(b), &hdr.encode());
        }
        for &w in self.index.keys() {
            out(g.base + w * 8, &[0u8; 8]);
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let Some(g) = self.g else {
            return RecoveryReport::default();
        };
        let words = self.words.len() as u64;
        let live = self.live().len() as u64;
        let bytes_read = g.index_bytes()
            + self.flagged.len() as u64 * 64
            + (self.aslices.len() as u64 + self.chain_slices) * SLICE_BYTES;
        let replayed = self.commits - u64::from(self.skip_newest && self.commits > 0);
        let work = RecoveryWork {
            oop_bytes_read: bytes_read,
            home_bytes_written: words * 8,
            hash_entries: words,
        };
        RecoveryReport {
            bytes_read,
            bytes_written: words * 8 + live * 64 + self.index.len() as u64 * 8,
            modeled_ns: RecoveryModel::from_params(p).time_ns(&work),
            details: vec![
                ("live_blocks", live as f64),
                ("committed_tx_replayed", replayed as f64),
                ("words_replayed", words as f64),
            ],
        }
    }

    fn follows_writes(&self) -> bool {
        true
    }

    fn persisted(&mut self, addr: Addr, len: u64) {
        if let Some(g) = self.g {
            let end = g.base + g.blocks * g.block_bytes;
            let (s, e) = (addr.max(g.base), (addr + len).min(end));
            if s < e {
                self.pending.push((s, e));
            }
        }
    }

    fn stale(&self) -> bool {
        self.stale
    }
}

impl HoopScan {
    /// Live blocks, oldest first: (epoch, block).
    fn live(&self) -> Vec<(u32, usize)> {
        let mut v: Vec<(u32, usize)> = self
            .flagged
            .iter()
            .filter_map(|(&b, &e)| e.map(|e| (e, b)))
            .collect();
        v.sort_unstable();
        v
    }
}
