//! Recovery (§III-D) from the durable bytes alone, as a scan that follows
//! the writes (recovery/scan.rs), and its audit.

use super::layout::{
    parse_record, tag, Geometry, LOG_ENTRY_BYTES, RECLAIM_COUNT_BITS, SLOT_BYTES, TXSEQ_BITS,
};

use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemWrite};
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::log::recovery_ns;
use crate::schemes::{Layout, RecoveryReport};
use crate::types::{Addr, LineData};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// Recovery (§III-D) from the durable bytes alone: [`EhouScan`] from
/// scratch (recovery/scan.rs), so crash verification's resumed scan runs
/// the same parsing code.
pub(super) fn recover(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// EHOU's recovery as a scan that follows the writes (recovery/scan.rs).
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    let g = Geometry::new(p, layout);
    let threads = layout.threads;
    Box::new(EhouScan {
        g,
        threads,
        started: false,
        stale: false,
        commits: vec![0; threads],
        dir: FxHashMap::default(),
        dir_reads: FxHashMap::default(),
        flagged: FxHashSet::default(),
        media: BTreeMap::new(),
        logs: (0..threads).map(|_| CoreLog::default()).collect(),
        slot_reads: FxHashMap::default(),
        slots: FxHashMap::default(),
        by_line: FxHashMap::default(),
        uncommitted: vec![FxHashSet::default(); threads],
        applied: 0,
        reclaims: (0..threads).map(|_| Reclaim::default()).collect(),
        map: FxHashMap::default(),
        owner: FxHashMap::default(),
        pending: Vec::new(),
        touched: Vec::new(),
        finish_sum: 0,
        dir_read_total: 0,
        slot_read_total: 0,
        mutant_any_tag: p.str("ehou.mutant") == "log-any-tag",
    })
}

/// A core's overflow log as recovery reads it: the entries of its last
/// committed transaction (a valid prefix), the last mapping of each line
/// among them, and the entries read (the first invalid one included).
#[derive(Default)]
struct CoreLog {
    entries: Vec<(Addr, u64)>,
    last: FxHashMap<Addr, u64>,
    reads: u64,
}

/// A core's reclaim list as the audit reads it: the device lines of an
/// uncommitted transaction (none if its transaction committed) and the
/// lines read.
#[derive(Default)]
struct Reclaim {
    lines: Vec<u64>,
    reads: u64,
}

/// Recovery's state for one crash image, kept up to date write by write.
///
/// Recovery's result is a function of small units of bytes: the commit
/// words, each AIT-directory word (and the AIT pages it flags), each AIT
/// entry of a flagged page, each core's overflow log (a prefix, read
/// whole), each 32 B AIT-cache image, each reclaim list and each pool
/// line a mapping names. The merged mapping of a line is a function of
/// its own entries (the last found wins: AIT < overflow logs in core
/// order < committed images by tag), so a write re-reads the unit it
/// touched and recomputes the lines whose entries changed; their home
/// writes (the copy of their pool line) are made, replaced or withdrawn
/// (`ScanIo::rehome`), each line written once with its final bytes. The
/// modelled read counts are kept per unit; the from-scratch scan counts
/// the bytes of each 4 KiB page of the directory and of the image area
/// from where the scan's zero probe lands, so they are re-probed per page.
struct EhouScan {
    g: Geometry,
    threads: usize,
    started: bool,
    stale: bool,
    commits: Vec<u64>,
    /// Nonzero AIT-directory words.
    dir: FxHashMap<Addr, u64>,
    /// Directory words read, per 4 KiB page of the directory.
    dir_reads: FxHashMap<u64, u64>,
    /// AIT pages whose directory bit is set.
    flagged: FxHashSet<u64>,
    /// Nonzero AIT entries of flagged pages (home lines only), by line.
    media: BTreeMap<Addr, u64>,
    logs: Vec<CoreLog>,
    /// Image slots read, per 4 KiB page of the image area.
    slot_reads: FxHashMap<u64, u64>,
    /// Images that parse: slot -> (line, mapping, tag).
    slots: FxHashMap<u64, (Addr, u64, u64)>,
    /// Images of home lines that parse, by line: (tag, mapping, slot).
    by_line: FxHashMap<Addr, Vec<(u64, u64, u64)>>,
    /// Per core: slots of its images not (yet) committed.
    uncommitted: Vec<FxHashSet<u64>>,
    /// Committed images of home lines.
    applied: u64,
    reclaims: Vec<Reclaim>,
    /// The merged nonzero mappings and the pool line bytes copied home.
    map: FxHashMap<Addr, (u64, LineData)>,
    /// Pool line -> the line mapping it.
    owner: FxHashMap<u64, Addr>,
    /// Reserved-area byte ranges written since the last resume.
    pending: Vec<(Addr, Addr)>,
    /// Lines whose entries changed in this resume.
    touched: Vec<Addr>,
    /// The wrapping sum of the finish writes' piece hashes.
    finish_sum: u64,
    /// Sums of `dir_reads` and `slot_reads`.
    dir_read_total: u64,
    slot_read_total: u64,
    /// Test-only planted bug (`ehou.mutant=log-any-tag`): an overflow-log
    /// entry of any of the core's transactions is taken as one of its
    /// last committed transaction.
    mutant_any_tag: bool,
}

/// Image-area and directory pages are probed 4 KiB at a time, as the
/// from-scratch scan reads them.
const PROBE_PAGE: u64 = 4096;

impl EhouScan {
    fn dir_end(&self) -> Addr {
        let g = &self.g;
        let ait_pages = (g.ait_addr(g.home_limit) - g.ait_base).div_ceil(4096);
        g.dir_base + ait_pages.div_ceil(64) * 8
    }

    fn slot_end(&self) -> Addr {
        self.g.slot_addr(self.g.slots as usize)
    }

    fn committed(&self, tag: u64) -> bool {
        let (c, s) = ((tag >> TXSEQ_BITS) as usize, tag & ((1 << TXSEQ_BITS) - 1));
        c < self.commits.len() && s != 0 && s <= self.commits[c]
    }

    /// Where the scan starts reading units of `unit` bytes in the part of
    /// 4 KiB page `page` within `[lo, hi)` (`hi` if it reads none): the
    /// zero probe, aligned down to a unit.
    fn probe(
        io: &dyn ScanIo,
        base: Addr,
        unit: u64,
        page: u64,
        lo: Addr,
        hi: Addr,
    ) -> (Addr, Addr) {
        let (s, e) = (
            (page * PROBE_PAGE).max(lo),
            ((page + 1) * PROBE_PAGE).min(hi),
        );
        let a = io.zeros_until(s, e);
        if a >= e {
            return (e, e);
        }
        (a - (a - base) % unit, e)
    }

    /// Directory page `page`: probe it (its word count) and read its
    /// words `which` (all that it reads when `None`).
    fn dir_page(&mut self, io: &dyn ScanIo, page: u64, which: Option<&[Addr]>) {
        let (lo, hi) = (self.g.dir_base, self.dir_end());
        let (a0, e) = Self::probe(io, lo, 8, page, lo, hi);
        let n = (e - a0) / 8;
        self.dir_read_total += n - self.dir_reads.insert(page, n).unwrap_or(0);
        let word = |this: &mut Self, a: Addr| {
            let w = io.read_u64(a);
            let old = this.dir.get(&a).copied().unwrap_or(0);
            if w == old {
                return;
            }
            if w == 0 {
                this.dir.remove(&a);
            } else {
                this.dir.insert(a, w);
            }
            let mut changed = w ^ old;
            while changed != 0 {
                let bit = changed.trailing_zeros() as u64;
                changed &= changed - 1;
                let pg = (a - this.g.dir_base) / 8 * 64 + bit;
                this.ait_page(io, pg, w >> bit & 1 == 1);
            }
        };
        match which {
            None => {
                let mut a = a0;
                while a < e {
                    word(self, a);
                    a += 8;
                }
            }
            Some(ws) => {
                for &a in ws {
                    word(self, a);
                }
            }
        }
    }

    /// AIT page `pg` became flagged (its entries are read) or unflagged.
    fn ait_page(&mut self, io: &dyn ScanIo, pg: u64, set: bool) {
        let first = pg * 512 * 64;
        let lines = first..(first + 512 * 64).min(self.g.home_limit.max(first));
        if !set {
            self.flagged.remove(&pg);
            let gone: Vec<Addr> = self.media.range(lines).map(|(&l, _)| l).collect();
            for l in gone {
                self.set_media(l, 0);
            }
            return;
        }
        self.flagged.insert(pg);
        let mut page = [0u8; 4096];
        io.read_bytes(self.g.ait_base + pg * 4096, &mut page);
        for (i, e) in page.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(e.try_into().unwrap());
            let line = (pg * 512 + i as u64) * 64;
            if v != 0 && line < self.g.home_limit {
                self.set_media(line, v);
            }
        }
    }

    /// `line`'s AIT entry (of a flagged page) reads `v` (0: none).
    fn set_media(&mut self, line: Addr, v: u64) {
        let old = if v == 0 {
            self.media.remove(&line)
        } else {
            self.media.insert(line, v)
        };
        if old == (v != 0).then_some(v) {
            return;
        }
        self.touch(line);
        // Its finish write (the reset) comes or goes.
        let h = crate::recovery::writes::piece_hash(self.g.ait_addr(line), &[0u8; 8]);
        match (old.is_some(), v != 0) {
            (false, true) => self.finish_sum = self.finish_sum.wrapping_add(h),
            (true, false) => self.finish_sum = self.finish_sum.wrapping_sub(h),
            _ => {}
        }
    }

    /// AIT entry word at `a` was written: re-read it if its page is read.
    fn ait_word(&mut self, io: &dyn ScanIo, a: Addr) {
        let g = &self.g;
        let line = (a - g.ait_base) / 8 * 64;
        if line >= g.home_limit || !self.flagged.contains(&((a - g.ait_base) / 4096)) {
            return;
        }
        let v = io.read_u64(a);
        self.set_media(line, v);
    }

    /// Image-area page `page`: probe it (its slot count) and parse its
    /// slots `which` (all that it reads when `None`).
    fn slot_page(&mut self, io: &dyn ScanIo, page: u64, which: Option<&[u64]>) {
        let (lo, hi) = (self.g.slot_base, self.slot_end());
        let (a0, e) = Self::probe(io, lo, SLOT_BYTES, page, lo, hi);
        let n = (e - a0) / SLOT_BYTES;
        self.slot_read_total += n - self.slot_reads.insert(page, n).unwrap_or(0);
        match which {
            None if a0 < e => {
                let mut buf = [0u8; 4096];
                let buf = &mut buf[..(e - a0) as usize];
                io.read_bytes(a0, buf);
                let s0 = (a0 - lo) / SLOT_BYTES;
                for (i, b) in buf.chunks_exact(SLOT_BYTES as usize).enumerate() {
                    self.set_slot(s0 + i as u64, parse_record(b.try_into().unwrap()));
                }
            }
            None => {}
            Some(ss) => {
                for &s in ss {
                    let mut b = [0u8; SLOT_BYTES as usize];
                    io.read_bytes(self.g.slot_addr(s as usize), &mut b);
                    self.set_slot(s, parse_record(&b));
                }
            }
        }
    }

    /// Image slot `s` now parses as `rec`.
    fn set_slot(&mut self, s: u64, rec: Option<(Addr, u64, u64)>) {
        if self.slots.get(&s) == rec.as_ref() {
            return;
        }
        if let Some((line, enc, t)) = self.slots.remove(&s) {
            let c = (t >> TXSEQ_BITS) as usize;
            if c < self.threads {
                self.uncommitted[c].remove(&s);
            }
            if line < self.g.home_limit {
                if self.committed(t) {
                    self.applied -= 1;
                }
                let v = self.by_line.get_mut(&line).expect("indexed");
                v.retain(|x| *x != (t, enc, s));
                if v.is_empty() {
                    self.by_line.remove(&line);
                }
                self.touch(line);
            }
        }
        if let Some((line, enc, t)) = rec {
            self.slots.insert(s, (line, enc, t));
            let c = (t >> TXSEQ_BITS) as usize;
            let committed = self.committed(t);
            if c < self.threads && !committed {
                self.uncommitted[c].insert(s);
            }
            if line < self.g.home_limit {
                self.applied += u64::from(committed);
                self.by_line.entry(line).or_default().push((t, enc, s));
                self.touch(line);
            }
        }
    }

    /// Core `c`'s overflow log, parsed again (its commit word or its
    /// entries changed).
    fn read_log(&mut self, io: &dyn ScanIo, c: usize) {
        let mut log = std::mem::take(&mut self.logs[c]);
        for &(line, _) in &log.entries {
            self.touch(line);
        }
        log.entries.clear();
        log.last.clear();
        log.reads = 0;
        let cs = self.commits[c];
        if cs != 0 {
            for i in 0..self.g.log_entries {
                let mut b = [0u8; 32];
                io.read_bytes(self.g.log_addr(c, i), &mut b);
                log.reads += 1;
                match parse_record(&b) {
                    Some((line, enc, t))
                        if (t == tag(c, cs)
                            || self.mutant_any_tag && (t >> TXSEQ_BITS) as usize == c)
                            && line < self.g.home_limit =>
                    {
                        log.entries.push((line, enc));
                        log.last.insert(line, enc);
                        self.touch(line);
                    }
                    _ => break,
                }
            }
        }
        self.logs[c] = log;
    }

    /// Core `c`'s reclaim list, read again.
    fn read_reclaim(&mut self, io: &dyn ScanIo, c: usize) {
        let (lines, reads) = reclaim_list(io, &self.g, c, self.commits[c]);
        self.reclaims[c] = Reclaim { lines, reads };
    }

    /// The merged mapping of `line` (0: home): the last entry found wins.
    fn winner(&self, line: Addr) -> u64 {
        if let Some(v) = self.by_line.get(&line) {
            if let Some(&(_, enc, _)) = v
                .iter()
                .filter(|x| self.committed(x.0))
                .max_by_key(|x| (x.0, x.1))
            {
                return enc;
            }
        }
        for log in self.logs.iter().rev() {
            if let Some(&enc) = log.last.get(&line) {
                return enc;
            }
        }
        self.media.get(&line).copied().unwrap_or(0)
    }

    /// `line`'s entries changed since the last resume.
    fn touch(&mut self, line: Addr) {
        if self.started {
            self.touched.push(line);
        }
    }

    /// Fold a written reserved-area range into the state (module docs).
    fn reread(&self, s: Addr, e: Addr, work: &mut Work) {
        let g = self.g;
        let clip = |lo: Addr, hi: Addr| (s.max(lo) < e.min(hi)).then(|| (s.max(lo), e.min(hi)));
        if clip(g.commit_base, g.commit_addr(self.threads)).is_some() {
            work.commits = true;
        }
        if let Some((a, b)) = clip(g.reclaim_base, g.reclaim_addr(self.threads)) {
            let stride = g.reclaim_addr(1) - g.reclaim_addr(0);
            for c in (a - g.reclaim_base) / stride..=(b - 1 - g.reclaim_base) / stride {
                work.reclaim[c as usize] = true;
            }
        }
        if let Some((a, b)) = clip(g.slot_base, self.slot_end()) {
            for sl in (a - g.slot_base) / SLOT_BYTES..=(b - 1 - g.slot_base) / SLOT_BYTES {
                work.slots.push(sl);
            }
        }
        if let Some((a, b)) = clip(g.dir_base, self.dir_end()) {
            let first = a - (a - g.dir_base) % 8;
            work.dir.extend((first..b).step_by(8));
        }
        if let Some((a, b)) = clip(g.ait_base, g.ait_addr(g.home_limit)) {
            let first = a - (a - g.ait_base) % 8;
            work.ait.extend((first..b).step_by(8));
        }
        if let Some((a, b)) = clip(g.log_addr(0, 0), g.log_addr(self.threads, 0)) {
            let span = g.log_entries * LOG_ENTRY_BYTES;
            for c in (a - g.log_base) / span..=(b - 1 - g.log_base) / span {
                work.logs[c as usize] = true;
            }
        }
        if let Some((a, b)) = clip(g.pool_base, g.pool_base + g.pool_lines * 64) {
            for l in (a - g.pool_base) / 64..=(b - 1 - g.pool_base) / 64 {
                work.pool.push(l + 1);
            }
        }
    }

    /// Make the home write of `line` match its merged mapping `enc`:
    /// written, replaced or withdrawn.
    fn rehome_line(&mut self, io: &mut dyn ScanIo, line: Addr, enc: u64) -> Result<()> {
        let old = self.map.get(&line).map(|x| x.0);
        if enc == 0 {
            if let Some((_, bytes)) = self.map.remove(&line) {
                io.rehome(line, &bytes, None);
            }
            return Ok(());
        }
        if enc > self.g.pool_lines {
            return Err(Error::Internal(format!(
                "ehou recovery audit: line {line:#x} maps to a device line outside the pool"
            )));
        }
        if old != Some(enc) {
            if let Some(o) = self.owner.insert(enc, line) {
                return Err(Error::Internal(format!(
                    "ehou recovery audit: pool line {} mapped by both {o:#x} and {line:#x}",
                    enc - 1
                )));
            }
        }
        let mut buf = [0u8; 64];
        io.read_bytes(self.g.dev_addr(line, enc), &mut buf);
        match self.map.insert(line, (enc, buf)) {
            None => io.home(line, &buf),
            Some((_, b)) if b != buf => io.rehome(line, &b, Some(&buf)),
            Some(_) => {}
        }
        Ok(())
    }

    /// The from-scratch scan (`recover`): every unit read once, the
    /// audit as the reference recovery makes it, the copies in line order.
    fn scan_all(&mut self, io: &mut dyn ScanIo) -> Result<()> {
        let g = self.g;
        for c in 0..self.threads {
            self.commits[c] = io.read_u64(g.commit_addr(c));
        }
        // 1. The AIT (the directory names the pages to read).
        let dir_end = self.dir_end();
        nonzero_pages(&*io, g.dir_base, dir_end, |page| {
            self.dir_page(&*io, page, None)
        });
        // 2. The overflow log of each core's last committed transaction.
        for c in 0..self.threads {
            self.read_log(&*io, c);
        }
        // 3. The AIT-cache images.
        let slot_end = self.slot_end();
        nonzero_pages(&*io, g.slot_base, slot_end, |page| {
            self.slot_page(&*io, page, None)
        });
        // The merged mappings, by line.
        let mut lines: Vec<Addr> = self.media.keys().copied().collect();
        for log in &self.logs {
            lines.extend(log.entries.iter().map(|e| e.0));
        }
        lines.extend(self.by_line.keys().copied());
        lines.sort_unstable();
        lines.dedup();
        let map: Vec<(Addr, u64)> = lines
            .into_iter()
            .map(|l| (l, self.winner(l)))
            .filter(|x| x.1 != 0)
            .collect();
        // 4. Audit (its errors in the reference recovery's order).
        let owner = audit_map(&g, map.iter().copied())?;
        for c in 0..self.threads {
            self.read_reclaim(&*io, c);
            reclaim_check(&owner, c, &self.reclaims[c].lines)?;
        }
        self.owner = owner;
        // 5. Materialise: copy every remapped line home.
        for (line, enc) in map {
            let mut buf = [0u8; 64];
            io.read_bytes(g.dev_addr(line, enc), &mut buf);
            io.home(line, &buf);
            self.map.insert(line, (enc, buf));
        }
        Ok(())
    }

    /// Resume step 1: the commit words changed. Returns `false` (the scan
    /// is stale) if one went back.
    fn reread_commits(&mut self, io: &dyn ScanIo, work: &mut Work) -> bool {
        for c in 0..self.threads {
            let v = io.read_u64(self.g.commit_addr(c));
            let old = self.commits[c];
            if v == old {
                continue;
            }
            if v < old {
                // Not a run's order: start over (never seen).
                self.stale = true;
                return false;
            }
            self.commits[c] = v;
            work.logs[c] = true;
            work.reclaim[c] = true;
            let now: Vec<u64> = self.uncommitted[c]
                .iter()
                .copied()
                .filter(|s| self.committed(self.slots[s].2))
                .collect();
            for s in now {
                self.uncommitted[c].remove(&s);
                let line = self.slots[&s].0;
                if line < self.g.home_limit {
                    self.applied += 1;
                    self.touch(line);
                }
            }
        }
        true
    }

    /// Resume step 2: re-read the directory words, AIT entries, image
    /// slots, overflow logs and reclaim lists the writes touched.
    fn reread_units(&mut self, io: &dyn ScanIo, work: &mut Work) {
        if !work.dir.is_empty() {
            work.dir.sort_unstable();
            work.dir.dedup();
            let dir = std::mem::take(&mut work.dir);
            for ws in dir.chunk_by(|a, b| a / PROBE_PAGE == b / PROBE_PAGE) {
                self.dir_page(io, ws[0] / PROBE_PAGE, Some(ws));
            }
        }
        for &a in &work.ait {
            self.ait_word(io, a);
        }
        if !work.slots.is_empty() {
            work.slots.sort_unstable();
            work.slots.dedup();
            let sb = self.g.slot_base;
            let slots = std::mem::take(&mut work.slots);
            for ss in slots.chunk_by(|a, b| {
                (sb + a * SLOT_BYTES) / PROBE_PAGE == (sb + b * SLOT_BYTES) / PROBE_PAGE
            }) {
                self.slot_page(io, (sb + ss[0] * SLOT_BYTES) / PROBE_PAGE, Some(ss));
            }
        }
        for c in 0..self.threads {
            if work.logs[c] {
                self.read_log(io, c);
            }
            if work.reclaim[c] {
                self.read_reclaim(io, c);
            }
        }
    }

    /// Resume step 3: recompute the touched lines and the lines of the
    /// written pool lines `pool`, rehome them, and audit.
    fn rehome_touched(&mut self, io: &mut dyn ScanIo, mut pool: Vec<u64>) -> Result<()> {
        // The lines whose entries changed, then those whose pool line did.
        // Pool lines change hands in any order: every changed mapping
        // gives its old one up before the new ones are claimed.
        let mut lines = std::mem::take(&mut self.touched);
        lines.sort_unstable();
        lines.dedup();
        let now: Vec<u64> = lines.iter().map(|&l| self.winner(l)).collect();
        for (&line, &enc) in lines.iter().zip(&now) {
            match self.map.get(&line) {
                Some(&(o, _)) if o != enc && self.owner.get(&o) == Some(&line) => {
                    self.owner.remove(&o);
                }
                _ => {}
            }
        }
        for (&line, &enc) in lines.iter().zip(&now) {
            self.rehome_line(io, line, enc)?;
        }
        pool.sort_unstable();
        pool.dedup();
        for enc in pool {
            if let Some(&line) = self.owner.get(&enc) {
                if lines.binary_search(&line).is_err() {
                    self.rehome_line(io, line, enc)?;
                }
            }
        }
        for c in 0..self.threads {
            reclaim_check(&self.owner, c, &self.reclaims[c].lines)?;
        }
        self.touched = lines;
        self.touched.clear();
        Ok(())
    }
}

/// The units a resume re-reads (persisted writes, classified).
struct Work {
    commits: bool,
    reclaim: Vec<bool>,
    logs: Vec<bool>,
    slots: Vec<u64>,
    dir: Vec<Addr>,
    ait: Vec<Addr>,
    /// Pool lines (mappings, 1-based).
    pool: Vec<u64>,
}

impl ResumableScan for EhouScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        if !self.started {
            self.scan_all(io)?;
            self.started = true;
            io.mark();
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut work = Work {
            commits: false,
            reclaim: vec![false; self.threads],
            logs: vec![false; self.threads],
            slots: Vec::new(),
            dir: Vec::new(),
            ait: Vec::new(),
            pool: Vec::new(),
        };
        for &(s, e) in &pending {
            self.reread(s, e, &mut work);
        }
        if work.commits && !self.reread_commits(&*io, &mut work) {
            return Ok(());
        }
        self.reread_units(&*io, &mut work);
        self.rehome_touched(io, std::mem::take(&mut work.pool))?;
        self.pending = pending;
        self.pending.clear();
        io.mark();
        Ok(())
    }

    /// Reset the AIT entry of every line the AIT maps (after every copy:
    /// a crash here re-runs the same copies).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for &line in self.media.keys() {
            out(self.g.ait_addr(line), &[0u8; 8]);
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let map = self.map.len() as u64;
        let read = self.threads as u64
            + self.dir_read_total
            + 64 * self.flagged.len() as u64
            + self.logs.iter().map(|l| l.reads).sum::<u64>()
            + self.slot_read_total
            + self.reclaims.iter().map(|r| r.reads).sum::<u64>()
            + map;
        let written = map + self.media.len() as u64;
        RecoveryReport {
            bytes_read: read * 64,
            bytes_written: written * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![
                ("remapped_lines", map as f64),
                (
                    "overflow_log_replayed",
                    self.logs.iter().map(|l| l.entries.len()).sum::<usize>() as f64,
                ),
                ("committed_cache_entries", self.applied as f64),
                (
                    "speculative_cache_entries_dropped",
                    (self.slots.len() as u64 - self.applied) as f64,
                ),
                (
                    "reclaimed_lines",
                    self.reclaims.iter().map(|r| r.lines.len()).sum::<usize>() as f64,
                ),
            ],
        }
    }

    fn follows_writes(&self) -> bool {
        true
    }

    fn persisted(&mut self, addr: Addr, len: u64) {
        // Home lines are not read by recovery.
        if addr + len > self.g.home_limit {
            self.pending.push((addr.max(self.g.home_limit), addr + len));
        }
    }

    fn stale(&self) -> bool {
        self.stale
    }

    /// A re-run crashed after every copy and some AIT resets reads the
    /// same bytes but for those entries (now zero): each line whose
    /// mapping came from a reset entry alone is no longer mapped (its copy
    /// is already home), every other line maps and is copied as before
    /// (pool lines are not written by recovery), the audit of that subset
    /// passes as the full one did, and the remaining entries are reset:
    /// the same image.
    fn finish_reruns_repeat(&self) -> bool {
        true
    }

    /// The AIT resets lie in the reserved area.
    fn finish_summary(&self) -> Option<(usize, Option<u64>)> {
        Some((self.media.len(), Some(self.finish_sum)))
    }
}

/// Recovery step 4, mappings: no pool line mapped twice or outside the
/// pool. Returns the owner of each mapped pool line.
fn audit_map(
    g: &Geometry,
    map: impl ExactSizeIterator<Item = (Addr, u64)>,
) -> Result<FxHashMap<u64, Addr>> {
    let mut owner: FxHashMap<u64, Addr> = FxHashMap::default();
    owner.reserve(map.len());
    for (line, enc) in map {
        if enc > g.pool_lines {
            return Err(Error::Internal(format!(
                "ehou recovery audit: line {line:#x} maps to device line {} outside the pool of {}",
                enc - 1,
                g.pool_lines
            )));
        }
        if let Some(o) = owner.insert(enc, line) {
            return Err(Error::Internal(format!(
                "ehou recovery audit: pool line {} mapped by both {o:#x} and {line:#x}",
                enc - 1
            )));
        }
    }
    Ok(owner)
}

/// Core `c`'s reclaim list: the device lines (nonzero entries) of its
/// uncommitted transaction, none if it committed (`cs` is its commit
/// word); and the lines read.
fn reclaim_list(img: &dyn MemRead, g: &Geometry, c: usize, cs: u64) -> (Vec<u64>, u64) {
    let ra = g.reclaim_addr(c);
    let h = img.read_u64(ra);
    let (txseq, n) = (h >> RECLAIM_COUNT_BITS, h & ((1 << RECLAIM_COUNT_BITS) - 1));
    if txseq <= cs || n > g.reclaim_cap {
        return (Vec::new(), 1);
    }
    let lines = (0..n)
        .map(|i| img.read_u64(ra + 64 + i * 8))
        .filter(|&e| e != 0)
        .collect();
    (lines, 1 + n.div_ceil(8))
}

/// Recovery step 4, reclaim lists: no device line of core `c`'s
/// uncommitted transaction is mapped.
fn reclaim_check(owner: &FxHashMap<u64, Addr>, c: usize, lines: &[u64]) -> Result<()> {
    for enc in lines {
        if let Some(line) = owner.get(enc) {
            return Err(Error::Internal(format!(
                "ehou recovery audit: pool line {} of core {c}'s uncommitted transaction is mapped by {line:#x} (a speculative mapping reached the AIT)",
                enc - 1
            )));
        }
    }
    Ok(())
}

/// Recovery step 4 as one function (the reference recovery of the tests):
/// no pool line mapped twice, none both mapped and reclaimed by an
/// uncommitted transaction. Returns the reclaimed lines.
#[cfg(test)]
pub(super) fn audit(
    img: &dyn MemRead,
    g: &Geometry,
    commits: &[u64],
    map: impl ExactSizeIterator<Item = (Addr, u64)>,
    read: &mut u64,
) -> Result<u64> {
    let owner = audit_map(g, map)?;
    let mut reclaimed = 0u64;
    for (c, &cs) in commits.iter().enumerate() {
        let (lines, reads) = reclaim_list(img, g, c, cs);
        *read += reads;
        reclaim_check(&owner, c, &lines)?;
        reclaimed += lines.len() as u64;
    }
    Ok(reclaimed)
}

/// Each `PROBE_PAGE` page of `[base, end)` holding a nonzero byte, in
/// address order (the from-scratch scan skips all-zero pages).
fn nonzero_pages(io: &dyn ScanIo, base: Addr, end: Addr, mut each: impl FnMut(u64)) {
    let mut a = base;
    while a < end {
        a = io.zeros_until(a, end);
        if a >= end {
            break;
        }
        let page = a / PROBE_PAGE;
        each(page);
        a = (page + 1) * PROBE_PAGE;
    }
}
