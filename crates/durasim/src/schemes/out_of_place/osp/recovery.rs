//! OSP's recovery as a scan that follows the writes (recovery/scan.rs), and
//! why crash verification need not re-run it when it crashes among its
//! metadata rewrites.
//!
//! Recovery (module docs of `osp/mod.rs`) is a function of three kinds of
//! bytes: each core's journal (the valid records), the metadata line of
//! every slot a record names or the slot table reaches, and the committed
//! shadow lines of the pages it consolidates. The scan keeps that state
//! keyed by what the bytes say: the valid records of each core, per slot
//! its metadata line and the journal entries naming it, and the home
//! writes it made (per slot and line). A persisted write is folded in at
//! the next resume by re-reading what it touched: a core's journal is
//! parsed again and the records that appeared or vanished are added or
//! removed; a metadata line is read again; a committed shadow line is
//! read again. Each touched slot's *effective* line (its line after the
//! journal is applied: the newest entry newer than the line, else the
//! line) is recomputed, the table end (the first slot whose effective line
//! is all zero) follows, and the slots whose consolidation changed update
//! their home writes: lines that joined are written home, lines that left
//! are withdrawn, committed shadow lines that changed are rewritten
//! (`ScanIo::rehome`). Counters of the report and the finish (the
//! rebuilt metadata lines in journal order, then every consolidated
//! page's line with `max_version + 1`) are functions of this state.
//!
//! **Re-runs crashed among the finish writes are proven.** Let `H` be the
//! home writes and `F` the finish. A recovery crashed after all of `H`
//! and a prefix of `F`, then re-run, reads the same journals (`F` writes
//! metadata lines only) and the same shadow lines. Per slot: if `F`'s
//! prefix rewrote its line to `(home, 0, max + 1)`, no journal entry is
//! newer (every record's version is at most `max`), so the re-run copies
//! nothing home for it; if the prefix rewrote it to a rebuilt line of
//! version `v` (an element of its chain of applied entries), the re-run
//! applies the entries newer than `v`, i.e. the rest of the same chain,
//! and reaches the same effective line; otherwise it reads what the first
//! run read. Lines written by `F` are never all zero and were nonzero (or
//! pending) for the first run, so the table ends at the same slot. So the
//! re-run's home writes are a subset of `H` with the same bytes, applied
//! over an image that already holds all of `H`: when every consolidated
//! page is a distinct, page-aligned page of the home region, no two home
//! writes overlap and the home image is `cur + H`, the uninterrupted
//! recovery's. Crashes inside `H` are proven by write-after-read (`H`
//! writes only home lines, recovery reads none). The oracle compares home
//! words only, so every recovery crash point of such a recovery is proven
//! ([`ResumableScan::finish_reruns_repeat`]); a consolidation whose pages clash
//! makes the scan stale and the point is recovered from scratch, re-runs
//! included. `verify_resume` re-runs them all from scratch (tests).

use super::PAGE;
use super::{meta_line, parse_meta, parse_record, record_bytes, Geometry, JOURNAL_ENTRY_BYTES};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::MemRead;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::log::recovery_ns;
use crate::schemes::{Layout, RecoveryReport};
use crate::types::{Addr, LineData};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// A metadata line as recovery reads it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Meta {
    /// All zero: a slot never allocated (ends the table).
    #[default]
    Zero,
    /// Neither zero nor valid (a torn write).
    Torn,
    Valid {
        home: Addr,
        bitmap: u64,
        version: u64,
    },
}

impl Meta {
    fn of(l: &LineData) -> Meta {
        if l.iter().all(|&b| b == 0) {
            return Meta::Zero;
        }
        match parse_meta(l) {
            Some((home, bitmap, version)) => Meta::Valid {
                home,
                bitmap,
                version,
            },
            None => Meta::Torn,
        }
    }

    /// The version a journal entry must exceed to apply (0 if invalid).
    fn version(self) -> u64 {
        match self {
            Meta::Valid { version, .. } => version,
            _ => 0,
        }
    }
}

/// A journal entry naming a slot, ordered as recovery applies them: by
/// version, then core, then offset (the stable sort of records pushed core
/// by core in journal order), then position in its record.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Entry {
    version: u64,
    core: u32,
    off: u64,
    idx: u32,
    home: Addr,
    bitmap: u64,
}

/// A valid journal record: offset in its core's journal, version, body.
#[derive(PartialEq, Eq)]
struct Record {
    off: u64,
    version: u64,
    body: Vec<u8>,
}

impl Record {
    /// (slot, home page, bitmap) of each entry.
    fn entries(&self) -> impl Iterator<Item = (u64, Addr, u64)> + '_ {
        self.body.chunks(JOURNAL_ENTRY_BYTES as usize).map(|e| {
            let word = |i: usize| u64::from_le_bytes(e[i * 8..i * 8 + 8].try_into().unwrap());
            (word(0), word(1), word(2))
        })
    }

    /// Each entry's slot and its [`Entry`] (the record is core `core`'s).
    fn keyed(&self, core: usize) -> impl Iterator<Item = (u64, Entry)> + '_ {
        self.entries()
            .enumerate()
            .map(move |(idx, (slot, home, bitmap))| {
                let e = Entry {
                    version: self.version,
                    core: core as u32,
                    off: self.off,
                    idx: idx as u32,
                    home,
                    bitmap,
                };
                (slot, e)
            })
    }
}

#[derive(Default)]
struct Slot {
    /// Its metadata line in the crash image.
    img: Meta,
    /// Journal entries naming it, sorted.
    entries: Vec<Entry>,
    /// How many of them apply (each newer than the line and the previous).
    chain: u32,
    /// The line after the journal is applied.
    eff: Meta,
    /// What it adds to the totals and home writes: (home, bitmap,
    /// version) when in the table with a valid line.
    contrib: Option<(Addr, u64, u64)>,
}

/// Every valid record of core `c`'s journal, in journal order, and the
/// lines recovery reads to find them (the registered recovery's parse).
/// `stop_at_invalid` is a test-only planted bug
/// (`osp.mutant=journal-scan-stops-at-invalid`): the parse ends at the
/// first line that starts no valid record, as a sequential log's would.
fn parse_journal(
    io: &dyn MemRead,
    g: &Geometry,
    c: usize,
    stop_at_invalid: bool,
) -> (Vec<Record>, u64) {
    let base = g.journal_addr(c);
    let (mut records, mut read, mut off) = (Vec::new(), 0u64, 0u64);
    while off < g.journal_bytes {
        match parse_record(io, g, base + off, &mut read) {
            Some((version, body)) => {
                let at = off;
                off += record_bytes(body.len() / JOURNAL_ENTRY_BYTES as usize);
                records.push(Record {
                    off: at,
                    version,
                    body,
                });
            }
            None if stop_at_invalid => break,
            None => off += 64,
        }
    }
    (records, read)
}

pub(super) struct OspScan {
    g: Geometry,
    threads: usize,
    home_limit: Addr,
    started: bool,
    stale: bool,
    /// Per core: its valid records and the lines read to find them.
    journals: Vec<(Vec<Record>, u64)>,
    /// Known slots: read by the scan (named by a record or reached by the
    /// table); every other slot's line has not been read.
    slots: FxHashMap<u32, Slot>,
    /// Known slots whose effective line is all zero.
    zeros: BTreeSet<u32>,
    /// The table's end: the first slot whose effective line is all zero
    /// (`g.slots` if none); every slot below is known.
    end: u64,
    /// Record versions and in-table valid line versions (a multiset: the
    /// maximum is recovery's `max_version`).
    versions: BTreeMap<u64, u32>,
    records: u64,
    entries: u64,
    rebuilt: u64,
    consolidated: BTreeSet<u32>,
    lines: u64,
    /// Consolidated home pages: how many slots name each.
    homes: FxHashMap<Addr, u32>,
    /// Consolidated slots whose home page is unaligned, outside the home
    /// region, or also another's (the proof and the rehomes need none).
    clashes: u64,
    /// Entries naming a slot past the table (a recovery error).
    bad_slots: u64,
    /// Home writes made, by slot * 64 + line.
    emitted: FxHashMap<u64, LineData>,
    /// Persisted since the last resume: journals, metadata slots and
    /// shadow lines (per slot, a line bitmap).
    pend_journal: Vec<bool>,
    pend_meta: Vec<u32>,
    pend_shadow: FxHashMap<u32, u64>,
    /// Slots whose line or entries changed since the last resume.
    dirty: BTreeSet<u32>,
    /// Test-only planted bug (`osp.mutant=journal-scan-stops-at-invalid`).
    mutant_stop_at_invalid: bool,
}

/// OSP's recovery as a scan that follows the writes (module docs).
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(OspScan {
        g: Geometry::new(p, layout),
        threads: layout.threads,
        home_limit: layout.home_limit,
        started: false,
        stale: false,
        journals: (0..layout.threads).map(|_| (Vec::new(), 0)).collect(),
        slots: FxHashMap::default(),
        zeros: BTreeSet::new(),
        end: 0,
        versions: BTreeMap::new(),
        records: 0,
        entries: 0,
        rebuilt: 0,
        consolidated: BTreeSet::new(),
        lines: 0,
        homes: FxHashMap::default(),
        clashes: 0,
        bad_slots: 0,
        emitted: FxHashMap::default(),
        pend_journal: vec![false; layout.threads],
        pend_meta: Vec::new(),
        pend_shadow: FxHashMap::default(),
        dirty: BTreeSet::new(),
        mutant_stop_at_invalid: p.str("osp.mutant") == "journal-scan-stops-at-invalid",
    })
}

fn bits(mut b: u64) -> impl Iterator<Item = u64> {
    std::iter::from_fn(move || {
        (b != 0).then(|| {
            let i = b.trailing_zeros() as u64;
            b &= b - 1;
            i
        })
    })
}

impl OspScan {
    fn version_add(&mut self, v: u64) {
        *self.versions.entry(v).or_default() += 1;
    }

    fn version_remove(&mut self, v: u64) {
        let n = self.versions.get_mut(&v).expect("counted");
        *n -= 1;
        if *n == 0 {
            self.versions.remove(&v);
        }
    }

    fn max_version(&self) -> u64 {
        self.versions.last_key_value().map_or(0, |(&v, _)| v)
    }

    /// Read slot `s`'s metadata line (it becomes known, or is updated).
    fn read_slot(&mut self, io: &dyn MemRead, s: u32) {
        let img = Meta::of(&io.read_line(self.g.meta_addr(s)));
        self.slots.entry(s).or_default().img = img;
        self.dirty.insert(s);
    }

    fn add_record(&mut self, io: &dyn MemRead, core: usize, r: &Record) {
        self.records += 1;
        self.version_add(r.version);
        for (slot, e) in r.keyed(core) {
            self.entries += 1;
            if slot >= self.g.slots {
                self.bad_slots += 1;
                continue;
            }
            let s = slot as u32;
            if !self.slots.contains_key(&s) {
                self.read_slot(io, s);
            }
            let v = &mut self.slots.get_mut(&s).expect("known").entries;
            let at = v.partition_point(|x| *x < e);
            v.insert(at, e);
            self.dirty.insert(s);
        }
    }

    fn remove_record(&mut self, core: usize, r: &Record) {
        self.records -= 1;
        self.version_remove(r.version);
        for (slot, e) in r.keyed(core) {
            self.entries -= 1;
            if slot >= self.g.slots {
                self.bad_slots -= 1;
                continue;
            }
            let s = slot as u32;
            let v = &mut self.slots.get_mut(&s).expect("named").entries;
            let at = v.binary_search(&e).expect("added before");
            v.remove(at);
            self.dirty.insert(s);
        }
    }

    /// Parse core `c`'s journal again and fold in the records that
    /// appeared or vanished (both lists are in offset order).
    fn reparse(&mut self, io: &dyn MemRead, c: usize) {
        let (new, read) = parse_journal(io, &self.g, c, self.mutant_stop_at_invalid);
        let (old, _) = std::mem::take(&mut self.journals[c]);
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            match (old.get(i), new.get(j)) {
                (Some(a), Some(b)) if a == b => {
                    i += 1;
                    j += 1;
                }
                (Some(a), b) if b.is_none_or(|b| a.off <= b.off) => {
                    self.remove_record(c, a);
                    i += 1;
                }
                (_, Some(b)) => {
                    self.add_record(io, c, b);
                    j += 1;
                }
                _ => unreachable!("one list is not exhausted"),
            }
        }
        self.journals[c] = (new, read);
    }

    /// Apply the journal to slot `s` (recovery's first phase, per slot).
    fn recompute(&mut self, s: u32) {
        let sl = self.slots.get_mut(&s).expect("known");
        let mut cur = sl.img.version();
        let (mut chain, mut last) = (0u32, None);
        for e in &sl.entries {
            if e.version > cur {
                cur = e.version;
                chain += 1;
                last = Some(e);
            }
        }
        sl.eff = last.map_or(sl.img, |e| Meta::Valid {
            home: e.home,
            bitmap: e.bitmap,
            version: e.version,
        });
        self.rebuilt = self.rebuilt + u64::from(chain) - u64::from(sl.chain);
        sl.chain = chain;
        if sl.eff == Meta::Zero {
            self.zeros.insert(s);
        } else {
            self.zeros.remove(&s);
        }
    }

    /// Move the table's end to the first slot whose effective line is all
    /// zero, reading the slots it passes.
    fn fix_end(&mut self, io: &dyn MemRead) {
        if let Some(&z) = self.zeros.first() {
            if u64::from(z) <= self.end {
                // Every slot below the end is known: z is the first zero.
                self.end = u64::from(z);
                return;
            }
        }
        let mut s = self.end;
        while s < self.g.slots {
            let k = s as u32;
            if !self.slots.contains_key(&k) {
                self.read_slot(io, k);
                self.recompute(k);
            }
            if self.zeros.contains(&k) {
                break;
            }
            s += 1;
        }
        self.end = s;
    }

    /// A page-aligned page of the home region.
    fn home_page(&self, h: Addr) -> bool {
        h.is_multiple_of(PAGE) && h.saturating_add(PAGE) <= self.home_limit
    }

    fn home_add(&mut self, h: Addr) {
        if !self.home_page(h) {
            self.clashes += 1;
            return;
        }
        let n = self.homes.entry(h).or_default();
        *n += 1;
        if *n > 1 {
            self.clashes += 1;
        }
    }

    fn home_remove(&mut self, h: Addr) {
        if !self.home_page(h) {
            self.clashes -= 1;
            return;
        }
        let n = self.homes.get_mut(&h).expect("counted");
        if *n > 1 {
            self.clashes -= 1;
        }
        *n -= 1;
        if *n == 0 {
            self.homes.remove(&h);
        }
    }

    /// Bring slot `s`'s share of the totals and home writes up to date
    /// (recovery's consolidation, per slot). `false`: a clash makes the
    /// resumed scan stale (checked before any rehome).
    fn settle(&mut self, io: &mut dyn ScanIo, s: u32, fresh: bool) -> bool {
        let sl = &self.slots[&s];
        let want = match sl.eff {
            Meta::Valid {
                home,
                bitmap,
                version,
            } if u64::from(s) < self.end => Some((home, bitmap, version)),
            _ => None,
        };
        let have = sl.contrib;
        let changed_lines = self.pend_shadow.get(&s).copied().unwrap_or(0);
        let (oh, ob) = have.map_or((0, 0), |(h, b, _)| (h, b));
        let (nh, nb) = want.map_or((0, 0), |(h, b, _)| (h, b));
        if want == have && ob & changed_lines == 0 {
            return true;
        }
        if let Some((h, b, v)) = have {
            self.version_remove(v);
            if b != 0 {
                self.consolidated.remove(&s);
                self.lines -= u64::from(b.count_ones());
                self.home_remove(h);
            }
        }
        if let Some((h, b, v)) = want {
            self.version_add(v);
            if b != 0 {
                self.consolidated.insert(s);
                self.lines += u64::from(b.count_ones());
                self.home_add(h);
            }
        }
        self.slots.get_mut(&s).expect("known").contrib = want;
        if self.clashes > 0 && !fresh {
            return false;
        }
        let keep = if oh == nh { ob & nb } else { 0 };
        let key = |i: u64| u64::from(s) * 64 + i;
        for i in bits(ob & !keep) {
            let old = self.emitted.remove(&key(i)).expect("emitted");
            io.rehome(oh + i * 64, &old, None);
        }
        for i in bits(nb) {
            let is_new = keep >> i & 1 == 0;
            if !is_new && changed_lines >> i & 1 == 0 {
                continue;
            }
            let d = io.read_line(self.g.shadow_line(s, i));
            let a = nh + i * 64;
            match self.emitted.insert(key(i), d) {
                Some(old) if !is_new => {
                    if old != d {
                        io.rehome(a, &old, Some(&d));
                    }
                }
                _ => io.home(a, &d),
            }
        }
        true
    }

    /// The error of the first entry, in application order, naming a slot
    /// past the table (the registered recovery's message).
    fn slot_error(&self) -> Error {
        let mut first: Option<(u64, usize, u64, u64)> = None;
        for (c, (records, _)) in self.journals.iter().enumerate() {
            for r in records {
                if let Some((slot, _, _)) = r.entries().find(|e| e.0 >= self.g.slots) {
                    let key = (r.version, c, r.off, slot);
                    if first.is_none_or(|f| (key.0, key.1, key.2) < (f.0, f.1, f.2)) {
                        first = Some(key);
                    }
                }
            }
        }
        let (version, _, _, slot) = first.expect("a bad entry is counted");
        Error::Internal(format!(
            "osp recovery: a journal record (version {version}) names slot {slot}"
        ))
    }
}

impl ResumableScan for OspScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let fresh = !self.started;
        self.started = true;
        // 1. Journals (records appear or vanish), metadata lines.
        for c in 0..self.threads {
            if fresh || self.pend_journal[c] {
                self.reparse(&*io, c);
            }
        }
        let pend_meta = std::mem::take(&mut self.pend_meta);
        for &s in &pend_meta {
            if u64::from(s) < self.end || self.slots.contains_key(&s) {
                self.read_slot(&*io, s);
            }
        }
        self.pend_meta = pend_meta;
        self.pend_meta.clear();
        self.pend_journal.fill(false);
        if self.bad_slots > 0 {
            self.pend_shadow.clear();
            self.dirty.clear();
            self.stale = true;
            return Err(self.slot_error());
        }
        // 2. The journal applied to the touched slots, the table's end.
        let dirty = std::mem::take(&mut self.dirty);
        for &s in &dirty {
            self.recompute(s);
        }
        let old_end = self.end;
        self.fix_end(&*io);
        // 3. Consolidation of every slot whose line, table membership or
        //    committed shadow lines changed, in slot order.
        let mut touched = dirty;
        touched.extend(std::mem::take(&mut self.dirty));
        let (lo, hi) = (old_end.min(self.end), old_end.max(self.end));
        touched.extend(
            (lo..hi)
                .map(|s| s as u32)
                .filter(|s| self.slots.contains_key(s)),
        );
        for (&s, &b) in &self.pend_shadow {
            if self
                .slots
                .get(&s)
                .is_some_and(|x| x.contrib.is_some_and(|c| c.1 & b != 0))
            {
                touched.insert(s);
            }
        }
        for &s in &touched {
            if !self.settle(io, s, fresh) {
                self.stale = true;
                break;
            }
        }
        self.pend_shadow.clear();
        if fresh {
            self.stale = self.clashes > 0;
        }
        // A fresh scan keeps its writes whatever the clashes (the
        // registered recovery makes them); a stale resumed one does not.
        if fresh || !self.stale {
            io.mark();
        }
        Ok(())
    }

    /// The rebuilt metadata lines in journal order, then every consolidated
    /// page's line (bitmap reset, newer than any record).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        let mut order: Vec<(u64, usize, u64, &Record)> = Vec::with_capacity(self.records as usize);
        for (c, (records, _)) in self.journals.iter().enumerate() {
            order.extend(records.iter().map(|r| (r.version, c, r.off, r)));
        }
        order.sort_unstable_by_key(|x| (x.0, x.1, x.2));
        let mut cur: FxHashMap<u32, u64> = FxHashMap::default();
        for &(version, _, _, r) in &order {
            for (slot, home, bitmap) in r.entries() {
                let s = slot as u32;
                let v = cur.entry(s).or_insert_with(|| self.slots[&s].img.version());
                if version > *v {
                    *v = version;
                    out(self.g.meta_addr(s), &meta_line(home, bitmap, version));
                }
            }
        }
        let v = self.max_version() + 1;
        for &s in &self.consolidated {
            let (home, _, _) = self.slots[&s].contrib.expect("consolidated");
            out(self.g.meta_addr(s), &meta_line(home, 0, v));
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let table = if self.end < self.g.slots {
            self.end + 1
        } else {
            self.g.slots
        };
        let journal_lines: u64 = self.journals.iter().map(|j| j.1).sum();
        let read = journal_lines + self.entries + table + self.lines;
        let written = self.rebuilt + self.lines + self.consolidated.len() as u64;
        RecoveryReport {
            bytes_read: read * 64,
            bytes_written: written * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![
                ("journal_records_applied", self.records as f64),
                ("lines_consolidated", self.lines as f64),
            ],
        }
    }

    fn follows_writes(&self) -> bool {
        true
    }

    fn persisted(&mut self, addr: Addr, len: u64) {
        let g = &self.g;
        let end = addr + len;
        let clip = |base: Addr, bytes: u64| {
            let (s, e) = (addr.max(base), end.min(base + bytes));
            (s < e).then(|| (s - base, e - base))
        };
        if let Some((s, e)) = clip(g.shadow_base, g.slots * PAGE) {
            let mut a = s & !63;
            while a < e {
                *self.pend_shadow.entry((a / PAGE) as u32).or_default() |= 1 << (a % PAGE / 64);
                a += 64;
            }
        }
        if let Some((s, e)) = clip(g.meta_base, g.slots * 64) {
            self.pend_meta
                .extend((s / 64..e.div_ceil(64)).map(|x| x as u32));
        }
        if let Some((s, e)) = clip(g.journal_base, self.threads as u64 * g.journal_bytes) {
            for c in s / g.journal_bytes..e.div_ceil(g.journal_bytes) {
                self.pend_journal[c as usize] = true;
            }
        }
    }

    fn stale(&self) -> bool {
        self.stale
    }

    fn finish_reruns_repeat(&self) -> bool {
        !self.stale
    }

    /// The count only: the finish's digest sum would cost as much as the
    /// finish (every re-run among it is proven, so it is not needed).
    fn finish_summary(&self) -> Option<(usize, Option<u64>)> {
        Some((
            (self.rebuilt + self.consolidated.len() as u64) as usize,
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{header_line, reserved_bytes, JOURNAL_MAGIC, PARAMS};
    use super::*;
    use crate::mem::{MemWrite, SparseImage};
    use crate::schemes::kit::log::csum;

    /// A journal record of `entries` (slot, home, bitmap) at `off`.
    fn record(img: &mut SparseImage, g: &Geometry, off: u64, v: u64, entries: &[(u64, Addr, u64)]) {
        let mut body = Vec::new();
        for &(s, h, b) in entries {
            for w in [s, h, b] {
                body.extend_from_slice(&w.to_le_bytes());
            }
        }
        let w = [JOURNAL_MAGIC, v, entries.len() as u64];
        let a = g.journal_addr(0) + off;
        img.write_bytes(a + 64, &body);
        img.write_bytes(a, &header_line(&[w[0], w[1], w[2], csum(&w, &body)]));
    }

    /// Rule: the newest entry newer than a slot's line wins, its committed
    /// shadow lines go home, the rebuilt lines and then reset lines
    /// (newer than every record) are written; an entry naming a slot past
    /// the table is the registered recovery's error.
    #[test]
    fn recovery_applies_the_newest_entry_and_reports_bad_slots() {
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("osp.shadow_pages", "64").unwrap();
        let layout = Layout::new(64 << 20, reserved_bytes(&p), 1).unwrap();
        let g = Geometry::new(&p, &layout);
        let (home0, home1) = (0x1000, 0x2000);
        let mut img = SparseImage::new();
        img.write_bytes(g.meta_addr(0), &meta_line(home0, 0, 0));
        img.write_bytes(g.meta_addr(1), &meta_line(home1, 0, 0));
        img.write_u64(g.shadow_line(0, 3), 0xabc);
        img.write_u64(g.shadow_line(0, 5), 0xdef);
        record(&mut img, &g, 0, 1, &[(0, home0, 1 << 5), (1, home1, 0)]);
        record(&mut img, &g, 128, 2, &[(0, home0, 1 << 3)]);
        let mut rec = crate::crash::Recorder::new(img.clone());
        let r = super::super::recover(&mut rec, &p, &layout).unwrap();
        // Line 3 home (version 2 wins), not line 5; rebuilt 0 (v1), 1 (v1),
        // 0 (v2); then slot 0 reset with version 3.
        assert_eq!(rec.inner.read_u64(home0 + 3 * 64), 0xabc);
        assert_eq!(rec.inner.read_u64(home0 + 5 * 64), 0);
        assert_eq!(rec.writes(), 1 + 3 + 1);
        assert_eq!(rec.inner.read_line(g.meta_addr(0)), meta_line(home0, 0, 3));
        assert_eq!(r.bytes_written, 5 * 64);
        record(&mut img, &g, 256, 4, &[(1, home1, 1), (99, home1, 1)]);
        let e = super::super::recover(&mut img, &p, &layout).unwrap_err();
        assert_eq!(
            e.to_string(),
            "osp recovery: a journal record (version 4) names slot 99"
        );
    }
}
