//! The atomic-durability oracle, maintained incrementally over crash points.
//!
//! State for crash point k: the crashed image `cur` (initial media + persist
//! events `0..k`, applied in order as k grows), and per thread the *base*
//! prefix `lo(k)` the scheme must at least have preserved, with the expected
//! image `E = initial + write sets of each thread's first lo(k) transactions`
//! kept as a copy-on-write image over the initial one. `delta[t]` holds
//! exactly the words of thread t's region where `cur` differs from `E`; it
//! changes only where an event or an acknowledged write set lands, so
//! checking a point costs O(|delta| + recovery writes + candidate write
//! sets), never the size of the image.

use crate::engine::{History, TxRecord};
use crate::mem::Layout;
use crate::mem::{MemRead, MemWrite, PersistLog, SparseImage};
use crate::recovery::Durability;
use crate::types::{Addr, WORD_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};

/// Per-thread bounds on the prefix a recovered state may equal.
struct Guarantee {
    durability: Durability,
    /// Per thread: ack_persist_seq of each committed transaction.
    ack: Vec<Vec<u64>>,
    /// Per thread: own_persist_seq of each committed transaction (bounds
    /// the transactions that may have begun).
    own: Vec<Vec<u64>>,
    /// Per thread: (seq, tx_count) durability reports, in seq order, the
    /// count as a running maximum ([`running_max`]).
    marks: Vec<Vec<(u64, u64)>>,
}

/// Durability reports with each count raised to the largest so far, so
/// that `reported` is one search instead of a scan of every earlier
/// report (a cost per point that grew with the run, morlog-dp at 10,000
/// transactions); the first report above a count is unchanged.
fn running_max(mut marks: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut top = 0;
    for m in &mut marks {
        top = top.max(m.1);
        m.1 = top;
    }
    marks
}

impl Guarantee {
    fn acked(&self, t: usize, k: u64) -> u64 {
        self.ack[t].partition_point(|&s| s <= k) as u64
    }

    /// Transactions whose core's own writes up to their acknowledgement
    /// are all in point `k`: the next one may have begun. At least
    /// [`Self::acked`] (an acknowledgement can also wait for another
    /// core's write issued before it but accepted later).
    fn begun_after(&self, t: usize, k: u64) -> u64 {
        let own = self.own[t].partition_point(|&s| s <= k) as u64;
        own.max(self.acked(t, k))
    }

    fn reported(&self, t: usize, k: u64) -> u64 {
        let m = &self.marks[t];
        let i = m.partition_point(|&(s, _)| s <= k);
        m[..i].last().map_or(0, |&(_, c)| c)
    }

    /// Checkpoint schemes may only recover to a checkpoint: of `lo..=hi`
    /// only the two ends are allowed states.
    fn ends_only(&self) -> bool {
        self.durability == Durability::Checkpoint
    }

    /// Candidate prefixes `lo..=hi` for thread `t` at crash point `k`.
    fn bounds(&self, t: usize, k: u64) -> (u64, u64) {
        let committed = self.ack[t].len() as u64;
        match self.durability {
            // At most one transaction per thread is in flight: the next one
            // begins only after TxEnd of the previous returned.
            Durability::AtCommit | Durability::None => {
                let lo = self.acked(t, k);
                (lo, (self.begun_after(t, k) + 1).min(committed).max(lo))
            }
            // The last completed checkpoint, or the one in flight if its
            // commit persisted before the scheme reported it.
            Durability::Checkpoint => {
                let lo = self.reported(t, k);
                let m = &self.marks[t];
                let i = m.partition_point(|&(s, _)| s <= k);
                let next = m[i..].iter().map(|&(_, c)| c).find(|&c| c > lo);
                (lo, next.unwrap_or(lo).min(committed))
            }
            // Any prefix including what was reported persisted, up to the
            // transaction in flight.
            Durability::Delayed => {
                let lo = self.reported(t, k).min(committed);
                let hi = (self.begun_after(t, k) + 1).min(committed).max(lo);
                (lo, hi)
            }
        }
    }
}

/// How a recovered thread region compares to the committed history.
#[derive(Clone, Debug)]
pub struct Mismatch {
    pub thread: usize,
    /// The candidate prefix closest to the recovered state (fewest differing
    /// words; ties go to the shorter prefix) and the candidate range.
    pub prefix: u64,
    pub lo: u64,
    pub hi: u64,
    pub words_differing: usize,
    pub addr: Addr,
    pub expected: u64,
    pub found: u64,
}

/// A recovered image to check, with the sorted, deduplicated words its
/// recovery wrote. `on_view`: the image is the kept recovered image
/// ([`RecView`]) with those writes over it, else the crash image with them.
#[derive(Clone, Copy)]
pub struct Recovered<'a> {
    pub image: &'a dyn MemRead,
    pub written: &'a [Addr],
    pub on_view: bool,
}

pub struct Oracle<'h> {
    layout: Layout,
    /// Every transaction's write set (`History::writes`) and, per thread,
    /// its committed transactions (`History::per_thread`).
    writes: &'h [(Addr, u64)],
    per_thread: &'h [Vec<TxRecord>],
    /// The crashed image: initial + events applied so far.
    pub cur: SparseImage,
    applied: u64,
    /// The expected image `E` (initial + the base prefixes' write sets),
    /// a copy-on-write clone of the initial image: a word read goes
    /// through the image's page cache instead of a probe of a map holding
    /// every word the run wrote (a sampled long run's refreshes read it
    /// millions of times).
    expected: SparseImage,
    base: Vec<u64>,
    delta: Vec<FxHashSet<Addr>>,
    guarantee: Guarantee,
    /// A resumed recovery's image, kept across points (recovery/scan.rs).
    view: Option<RecView>,
    /// Thread-region words whose delta entries are stale: events applied
    /// by [`Oracle::advance`] or home writes of the kept recovered image
    /// since the last refresh. Refreshed after the whole batch, with one
    /// read of the expected word for both images, instead of per event
    /// word: a word's delta entry depends only on its final bytes.
    stale: Vec<Addr>,
}

/// Stale words gathered before they are refreshed (bounds the scratch
/// memory of a long advance; refreshing early is exact).
const STALE_FLUSH_WORDS: usize = 1 << 16;

/// The recovered image of a resumable recovery before its finish writes:
/// the crash image with recovery's home writes over it, maintained as
/// events persist (where no home write covers them), with its own delta
/// against the expected image, so a check costs what changed.
pub struct RecView {
    pub img: SparseImage,
    delta: Vec<FxHashSet<Addr>>,
    /// Bytes of each word some home write covers (bit i = byte i).
    cover: FxHashMap<Addr, u8>,
}

impl RecView {
    /// A recovered image starting as `img` (no home writes), whose words
    /// differing from the expected image are `delta` (per thread).
    pub(crate) fn new(img: SparseImage, delta: Vec<FxHashSet<Addr>>) -> Self {
        RecView {
            img,
            delta,
            cover: FxHashMap::default(),
        }
    }

    /// The words home writes covered, unsorted.
    pub fn covered_words(&self) -> impl Iterator<Item = Addr> + '_ {
        self.cover.keys().copied()
    }

    /// Thread `t`'s words where the image differs from the expected one.
    pub(crate) fn delta(&self, t: usize) -> &FxHashSet<Addr> {
        &self.delta[t]
    }

    /// Re-derive whether word `wa` of thread `t` differs from `want`.
    #[inline]
    pub(crate) fn refresh(&mut self, t: usize, wa: Addr, want: u64) {
        if self.img.read_u64(wa) != want {
            self.delta[t].insert(wa);
        } else {
            self.delta[t].remove(&wa);
        }
    }

    /// A home write of recovery: the image takes it and its bytes are
    /// covered (later events do not show through). The caller refreshes
    /// the words written.
    pub(crate) fn cover_write(&mut self, addr: Addr, data: &[u8]) {
        self.img.write_bytes(addr, data);
        let end = addr + data.len() as u64;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            let bits = ((1u16 << (wend - wa)) - (1u16 << (a - wa))) as u8;
            *self.cover.entry(wa).or_insert(0) |= bits;
            a = wend;
        }
    }

    /// Take recovery's write out of word `wa`: its covered bytes read as
    /// the crash image `cur` again. The caller refreshes `wa`.
    pub(crate) fn uncover(&mut self, wa: Addr, cur: &SparseImage) {
        match self.cover.remove(&wa).unwrap_or(0) {
            0 => {}
            0xff => self.img.write_u64(wa, cur.read_u64(wa)),
            cov => {
                for b in 0..WORD_BYTES {
                    if cov & (1 << b) != 0 {
                        let mut x = [0u8; 1];
                        cur.read_bytes(wa + b, &mut x);
                        self.img.write_bytes(wa + b, &x);
                    }
                }
            }
        }
    }

    /// An event's `data` at `addr` persisted to the crash image: the
    /// recovered image takes the bytes no home write covers. The caller
    /// refreshes the words.
    pub(crate) fn persist_event(&mut self, addr: Addr, data: &[u8]) {
        if self.cover.is_empty() {
            self.img.write_bytes(addr, data);
            return;
        }
        let end = addr + data.len() as u64;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            let off = (a - addr) as usize;
            self.persist(wa, a, &data[off..off + (wend - a) as usize]);
            a = wend;
        }
    }

    /// An event's `bytes` at `a` (inside word `wa`) persisted to the crash
    /// image: the recovered image takes them where no home write covers
    /// them (recovery wrote over them). The caller refreshes `wa`.
    pub(crate) fn persist(&mut self, wa: Addr, a: Addr, bytes: &[u8]) {
        let cov = self.cover.get(&wa).copied().unwrap_or(0);
        if cov == 0 {
            self.img.write_bytes(a, bytes);
        } else {
            for (i, &b) in bytes.iter().enumerate() {
                let at = a + i as u64;
                if cov & (1 << (at - wa)) == 0 {
                    self.img.write_bytes(at, &[b]);
                }
            }
        }
    }
}

impl<'h> Oracle<'h> {
    pub fn new(
        layout: &Layout,
        history: &'h History,
        durability: Durability,
        marks: &[crate::mem::DurableMark],
    ) -> Self {
        Self::from_parts(
            layout,
            &history.writes,
            &history.per_thread,
            history.initial_media.clone(),
            durability,
            marks,
        )
    }

    /// As [`Oracle::new`], from the history's parts (`initial` is the
    /// initial media image, a copy per worker).
    pub fn from_parts(
        layout: &Layout,
        writes: &'h [(Addr, u64)],
        per_thread: &'h [Vec<TxRecord>],
        initial: SparseImage,
        durability: Durability,
        marks: &[crate::mem::DurableMark],
    ) -> Self {
        let threads = layout.threads;
        let mut mk = vec![Vec::new(); threads];
        for m in marks {
            if m.thread < threads {
                mk[m.thread].push((m.seq, m.tx_count));
            }
        }
        Oracle {
            layout: layout.clone(),
            writes,
            per_thread,
            cur: initial.clone(),
            applied: 0,
            // Owned: images are not `Sync`, and each crash-test worker
            // has its own oracle.
            expected: initial,
            base: vec![0; threads],
            delta: vec![FxHashSet::default(); threads],
            view: None,
            stale: Vec::new(),
            guarantee: Guarantee {
                durability,
                ack: per_thread
                    .iter()
                    .map(|v| v.iter().map(|r| r.ack_persist_seq).collect())
                    .collect(),
                own: per_thread
                    .iter()
                    .map(|v| v.iter().map(|r| r.own_persist_seq).collect())
                    .collect(),
                marks: mk.into_iter().map(running_max).collect(),
            },
        }
    }

    /// The thread owning the word at `a`, if it lies in a thread region.
    #[inline]
    pub fn thread_of(&self, a: Addr) -> Option<usize> {
        self.layout.thread_of(a)
    }

    #[inline]
    fn expected_word(&self, a: Addr) -> u64 {
        self.expected.read_u64(a)
    }

    #[inline]
    fn refresh(&mut self, wa: Addr) {
        if let Some(t) = self.thread_of(wa) {
            if self.cur.read_u64(wa) != self.expected_word(wa) {
                self.delta[t].insert(wa);
            } else {
                self.delta[t].remove(&wa);
            }
        }
    }

    #[inline]
    fn refresh_view(&mut self, wa: Addr) {
        if self.view.is_none() {
            return;
        }
        if let Some(t) = self.thread_of(wa) {
            let want = self.expected_word(wa);
            let v = self.view.as_mut().expect("checked");
            v.refresh(t, wa, want);
        }
    }

    /// Events applied to the crash image so far.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The resumed recovery's image, if one is kept.
    pub fn view(&self) -> Option<&RecView> {
        self.view.as_ref()
    }

    /// Start a recovered image at the current crash image (no home writes).
    pub fn view_start(&mut self) {
        debug_assert!(self.stale.is_empty());
        self.view = Some(RecView::new(self.cur.clone(), self.delta.clone()));
    }

    pub fn view_drop(&mut self) {
        self.view = None;
        // Outside `advance` only home writes leave words stale, and the
        // crash image's delta does not depend on them.
        self.stale.clear();
    }

    /// A home write of the resumed recovery (after every earlier one).
    pub fn view_home(&mut self, addr: Addr, data: &[u8]) {
        let Some(v) = self.view.as_mut() else {
            return;
        };
        v.cover_write(addr, data);
        self.mark_stale(addr, addr + data.len() as u64);
    }

    /// Note the thread-region words of `[addr, end)` as stale (refreshed
    /// by [`Oracle::refresh_stale`]).
    #[inline]
    fn mark_stale(&mut self, addr: Addr, end: Addr) {
        let mut a = addr & !(WORD_BYTES - 1);
        while a < end {
            if self.thread_of(a).is_some() {
                self.stale.push(a);
            }
            a += WORD_BYTES;
        }
        if self.stale.len() >= STALE_FLUSH_WORDS {
            self.refresh_stale();
        }
    }

    /// Bring the delta of the crash image, and of the kept recovered image
    /// if any, up to date at every stale word.
    pub fn refresh_stale(&mut self) {
        let mut stale = std::mem::take(&mut self.stale);
        for &wa in &stale {
            let Some(t) = self.thread_of(wa) else {
                continue;
            };
            // One lookup of the expected word for both images.
            let want = self.expected_word(wa);
            if self.cur.read_u64(wa) != want {
                self.delta[t].insert(wa);
            } else {
                self.delta[t].remove(&wa);
            }
            if let Some(v) = self.view.as_mut() {
                v.refresh(t, wa, want);
            }
        }
        stale.clear();
        self.stale = stale;
    }

    /// Withdraw the home write of `[addr, addr + len)` (which no other home
    /// write overlaps): the recovered image takes the crash image's bytes
    /// there again.
    pub fn view_unhome(&mut self, addr: Addr, len: u64) {
        let Some(v) = self.view.as_mut() else {
            return;
        };
        let end = addr + len;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            let bits = ((1u16 << (wend - wa)) - (1u16 << (a - wa))) as u8;
            if let Some(c) = v.cover.get_mut(&wa) {
                *c &= !bits;
                if *c == 0 {
                    v.cover.remove(&wa);
                }
            }
            let mut b = [0u8; WORD_BYTES as usize];
            let n = (wend - a) as usize;
            self.cur.read_bytes(a, &mut b[..n]);
            v.img.write_bytes(a, &b[..n]);
            a = wend;
        }
        self.mark_stale(addr, end);
    }

    /// Persist `data` at `addr`, only the words whose bit is set in `mask`
    /// (bit i = word i of the 64 B line). Returns the replaced words.
    /// The recovered image, if kept, is not touched (torn images are
    /// recovered from scratch).
    pub fn persist(&mut self, addr: Addr, data: &[u8], mask: u8, undo: &mut Vec<(Addr, u64)>) {
        debug_assert!(self.stale.is_empty());
        let end = addr + data.len() as u64;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            let bit = ((wa % 64) / WORD_BYTES) as u8;
            if mask & (1 << bit) != 0 {
                undo.push((wa, self.cur.read_u64(wa)));
                let off = (a - addr) as usize;
                self.cur
                    .write_bytes(a, &data[off..off + (wend - a) as usize]);
                self.refresh(wa);
            }
            a = wend;
        }
    }

    /// Put back words saved by [`Oracle::persist`] (after a torn crash).
    pub fn undo(&mut self, undo: &[(Addr, u64)]) {
        for &(wa, v) in undo.iter().rev() {
            self.cur.write_u64(wa, v);
            self.refresh(wa);
        }
    }

    /// Advance to crash point `k` (>= the current one): apply events and
    /// acknowledged write sets.
    pub fn advance(&mut self, k: u64, log: &PersistLog) {
        let events = log.events();
        debug_assert!(k >= self.applied);
        // One write per event to each image; the deltas follow once per
        // distinct word touched (`stale`).
        while self.applied < k {
            let ev = &events[self.applied as usize];
            let data = log.data(ev);
            let end = ev.addr + data.len() as u64;
            self.cur.write_bytes(ev.addr, data);
            if let Some(v) = self.view.as_mut() {
                v.persist_event(ev.addr, data);
            }
            self.mark_stale(ev.addr, end);
            self.applied += 1;
        }
        self.refresh_stale();
        for t in 0..self.layout.threads {
            let (lo, _) = self.guarantee.bounds(t, k);
            while self.base[t] < lo {
                let rec = &self.per_thread[t][self.base[t] as usize];
                for &(a, v) in &self.writes[rec.writes.clone()] {
                    if self.thread_of(a) == Some(t) {
                        self.expected.write_u64(a, v);
                        self.refresh(a);
                        self.refresh_view(a);
                    }
                }
                self.base[t] += 1;
            }
        }
    }

    /// Compare thread `t`'s region of the recovered image `rec` (whose
    /// recovery wrote the sorted, deduplicated words `written`) against its
    /// candidate prefixes at crash point `k`. Returns the matching prefix.
    /// `extra` is scratch space (values of candidates beyond the base).
    /// Without `detail` a mismatch stops at the first differing word (the
    /// verdict is the same; counts and the closest prefix are not exact).
    pub fn check_thread(
        &self,
        t: usize,
        k: u64,
        rec: &dyn MemRead,
        written: &[Addr],
        extra: &mut FxHashMap<Addr, u64>,
        detail: bool,
    ) -> Result<u64, Mismatch> {
        let rec = Recovered {
            image: rec,
            written,
            on_view: false,
        };
        self.check_thread_with(t, k, rec, extra, detail)
    }

    /// The image of thread `t`'s first `n` transactions (at least its base
    /// prefix; other threads' regions at theirs): a copy-on-write clone of
    /// the expected image, for a violation's message.
    pub fn prefix_image(&self, t: usize, n: u64) -> SparseImage {
        let mut img = self.expected.clone();
        let txs = &self.per_thread[t];
        let (lo, hi) = (self.base[t] as usize, (n as usize).min(txs.len()));
        for rec in txs.get(lo..hi).unwrap_or(&[]) {
            for &(a, v) in &self.writes[rec.writes.clone()] {
                if self.thread_of(a) == Some(t) {
                    img.write_u64(a, v);
                }
            }
        }
        img
    }

    /// [`Oracle::check_thread`] of a [`Recovered`] image: the crash image
    /// or the kept recovered image, with its recovery's writes over it.
    /// Which of thread `t`'s transactions a differing word belongs to, for
    /// a violation's message: the last of its first `prefix` transactions
    /// to write `addr` (whose value the oracle expected) and the last one
    /// whose write equals `found`; `place` (what the word is) follows its
    /// offset. Linear in the thread's writes: called for the first
    /// violation only.
    pub fn word_writers(
        &self,
        t: usize,
        addr: Addr,
        prefix: u64,
        found: u64,
        place: &str,
    ) -> String {
        let txs = &self.per_thread[t];
        let wrote = |i: usize, v: Option<u64>| {
            self.writes[txs[i].writes.clone()]
                .iter()
                .any(|&(a, w)| a == addr && v.is_none_or(|v| v == w))
        };
        let upto = (prefix as usize).min(txs.len());
        let offset = addr - self.layout.thread_base(t);
        let mut out = format!("word {offset:#x} of thread {t}'s region ({place}): ");
        match (0..upto).rev().find(|&i| wrote(i, None)) {
            Some(i) => out += &format!(
                "expected as its transaction {i} (of {}, counted from 0; acknowledged at cycle {}) wrote it",
                txs.len(),
                txs[i].ack_at
            ),
            None => out += "expected as the initial image holds it (no transaction of the prefix wrote it)",
        }
        match (0..txs.len()).rev().find(|&i| wrote(i, Some(found))) {
            Some(j) if j as u64 >= prefix => out += &format!(
                "; found holds the value its transaction {j} (acknowledged at cycle {}) wrote, beyond the prefix",
                txs[j].ack_at
            ),
            Some(j) => out += &format!(
                "; found holds the value its transaction {j} (acknowledged at cycle {}) wrote, an older version",
                txs[j].ack_at
            ),
            None => out += "; found is no value the thread's transactions wrote there (the word's value before them, a torn word, or another writer's data)",
        }
        out
    }

    pub fn check_thread_with(
        &self,
        t: usize,
        k: u64,
        rec: Recovered<'_>,
        extra: &mut FxHashMap<Addr, u64>,
        detail: bool,
    ) -> Result<u64, Mismatch> {
        let Recovered {
            image: rec,
            written,
            on_view: view,
        } = rec;
        let (lo, hi) = self.guarantee.bounds(t, k);
        debug_assert_eq!(lo, self.base[t]);
        debug_assert!(self.stale.is_empty(), "refresh_stale before a check");
        let region = self.layout.thread_base(t)
            ..self.layout.thread_base(t) + self.layout.thread_region_bytes;
        let w0 = written.partition_point(|&a| a < region.start);
        let w1 = written.partition_point(|&a| a < region.end);
        let written = &written[w0..w1];
        extra.clear();
        let mut best: Option<Mismatch> = None;
        let mut p = lo;
        loop {
            if p > lo {
                let r = &self.per_thread[t][p as usize - 1];
                for &(a, v) in &self.writes[r.writes.clone()] {
                    if region.contains(&a) {
                        extra.insert(a, v);
                    }
                }
            }
            if self.guarantee.ends_only() && p != lo && p != hi {
                p += 1;
                continue;
            }
            // Words that can differ from E_p: delta, recovery writes, and
            // the candidate transactions' write sets.
            let ex: &FxHashMap<Addr, u64> = extra;
            let delta = match (&self.view, view) {
                (Some(v), true) => &v.delta[t],
                _ => &self.delta[t],
            };
            let want_of = |a: Addr| match ex.get(&a) {
                Some(&v) => v,
                None => self.expected_word(a),
            };
            let words = delta
                .iter()
                .map(|&a| (a, want_of(a)))
                .chain(
                    written
                        .iter()
                        .filter(|a| !delta.contains(a))
                        .map(|&a| (a, want_of(a))),
                )
                .chain(
                    ex.iter()
                        .filter(|(a, _)| !delta.contains(a) && written.binary_search(a).is_err())
                        .map(|(&a, &v)| (a, v)),
                );
            let mut count = 0usize;
            let mut first: Option<(Addr, u64, u64)> = None;
            for (a, want) in words {
                let got = rec.read_u64(a);
                if got != want {
                    count += 1;
                    if first.is_none_or(|f| a < f.0) {
                        first = Some((a, want, got));
                    }
                    if !detail {
                        break;
                    }
                }
            }
            match first {
                None => return Ok(p),
                Some((addr, expected, found)) => {
                    if best.as_ref().is_none_or(|b| count < b.words_differing) {
                        best = Some(Mismatch {
                            thread: t,
                            prefix: p,
                            lo,
                            hi,
                            words_differing: count,
                            addr,
                            expected,
                            found,
                        });
                    }
                }
            }
            if p >= hi {
                break;
            }
            p += 1;
        }
        Err(best.expect("at least one candidate was compared"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::TxRecord;
    use crate::mem::{MemWrite, PersistLog};

    fn guarantee(d: Durability, ack: Vec<u64>, marks: Vec<(u64, u64)>) -> Guarantee {
        Guarantee {
            durability: d,
            own: vec![ack.clone()],
            ack: vec![ack],
            marks: vec![running_max(marks)],
        }
    }

    /// An acknowledgement that also waited for another core's write
    /// accepted later does not hide the core's next transaction: the upper
    /// bound follows the core's own writes.
    #[test]
    fn the_upper_bound_follows_the_cores_own_writes() {
        let mut g = guarantee(Durability::AtCommit, vec![10, 20], vec![]);
        g.own = vec![vec![4, 12]];
        assert_eq!(g.bounds(0, 3), (0, 1));
        assert_eq!(g.bounds(0, 5), (0, 2));
        assert_eq!(g.bounds(0, 10), (1, 2));
        assert_eq!(g.bounds(0, 12), (1, 2));
    }

    #[test]
    fn bounds_follow_each_durability_model() {
        let acks = vec![1, 2, 3, 6, 8, 10, 11, 12];
        let g = guarantee(Durability::AtCommit, acks.clone(), vec![]);
        assert_eq!(g.bounds(0, 0), (0, 1));
        assert_eq!(g.bounds(0, 3), (3, 4));
        assert_eq!(g.bounds(0, 12), (8, 8));
        // Checkpoints completed at seq 5 (3 tx) and 9 (6 tx).
        let g = guarantee(Durability::Checkpoint, acks.clone(), vec![(5, 3), (9, 6)]);
        assert_eq!(g.bounds(0, 4), (0, 3));
        assert_eq!(g.bounds(0, 5), (3, 6));
        assert_eq!(g.bounds(0, 9), (6, 6));
        // Delayed: 2 tx reported persisted at seq 5.
        let g = guarantee(Durability::Delayed, acks, vec![(5, 2)]);
        assert_eq!(g.bounds(0, 4), (0, 4));
        assert_eq!(g.bounds(0, 6), (2, 5));
    }

    /// One thread, one transaction writing two words, persisted one event
    /// per word: the middle crash point is a torn transaction.
    #[test]
    fn detects_a_half_persisted_transaction() {
        let layout = Layout::new(1 << 30, 0, 1).unwrap();
        let (a, b) = (4096u64, 8192u64);
        let mut history = History {
            writes: vec![(a, 1), (b, 2)],
            per_thread: vec![vec![TxRecord {
                writes: 0..2,
                ack_persist_seq: 2,
                own_persist_seq: 2,
                ack_at: 0,
            }]],
            initial_media: SparseImage::new(),
            background: Vec::new(),
            background_kinds: Vec::new(),
            paths: Vec::new(),
        };
        history.initial_media.write_u64(64, 7);
        let mut log = PersistLog::new(true);
        log.record(a, &1u64.to_le_bytes(), 0);
        log.record(b, &2u64.to_le_bytes(), 0);
        let mut o = Oracle::new(&layout, &history, Durability::AtCommit, &[]);
        let mut extra = FxHashMap::default();
        let check = |o: &Oracle, k, extra: &mut FxHashMap<Addr, u64>| {
            o.check_thread(0, k, &o.cur, &[], extra, true)
        };
        o.advance(0, &log);
        assert_eq!(check(&o, 0, &mut extra).unwrap(), 0);
        o.advance(1, &log);
        let m = check(&o, 1, &mut extra).unwrap_err();
        assert_eq!((m.lo, m.hi, m.words_differing), (0, 1, 1));
        assert_eq!((m.prefix, m.addr, m.expected, m.found), (0, a, 0, 1));
        // A torn second event that persisted nothing of word b changes
        // nothing; undo restores the state exactly.
        let mut undo = Vec::new();
        o.persist(b, &2u64.to_le_bytes(), 0, &mut undo);
        assert!(undo.is_empty());
        o.persist(b, &2u64.to_le_bytes(), 0xff, &mut undo);
        assert_eq!(check(&o, 1, &mut extra).unwrap(), 1);
        o.undo(&undo);
        assert!(check(&o, 1, &mut extra).is_err());
        o.advance(2, &log);
        assert_eq!(check(&o, 2, &mut extra).unwrap(), 1);
        // Recovery that rewrites a word differently is caught even when the
        // crash image itself matched.
        let mut ov = crate::mem::Overlay::new(&o.cur);
        ov.write_u64(64, 8);
        let m = o
            .check_thread(0, 2, &ov, &[64], &mut extra, true)
            .unwrap_err();
        assert_eq!((m.addr, m.expected, m.found), (64, 7, 8));
    }

    #[test]
    fn checkpoint_schemes_may_only_recover_to_a_checkpoint() {
        let layout = Layout::new(1 << 30, 0, 1).unwrap();
        let words = [4096u64, 8192, 12288];
        let history = History {
            writes: words.iter().map(|&a| (a, a)).collect(),
            per_thread: vec![(0..3)
                .map(|i| TxRecord {
                    writes: i..i + 1,
                    ack_persist_seq: i as u64 + 1,
                    own_persist_seq: i as u64 + 1,
                    ack_at: 0,
                })
                .collect()],
            initial_media: SparseImage::new(),
            background: Vec::new(),
            background_kinds: Vec::new(),
            paths: Vec::new(),
        };
        let mut log = PersistLog::new(true);
        for a in words {
            log.record(a, &a.to_le_bytes(), 0);
        }
        log.report_durable(0, 3);
        let mut o = Oracle::new(&layout, &history, Durability::Checkpoint, log.marks());
        let mut extra = FxHashMap::default();
        o.advance(0, &log);
        assert_eq!(
            o.check_thread(0, 0, &o.cur, &[], &mut extra, true).unwrap(),
            0
        );
        o.advance(2, &log);
        // Two of three transactions is no checkpoint.
        let m = o
            .check_thread(0, 2, &o.cur, &[], &mut extra, true)
            .unwrap_err();
        assert_eq!((m.lo, m.hi), (0, 3));
        o.advance(3, &log);
        assert_eq!(
            o.check_thread(0, 3, &o.cur, &[], &mut extra, true).unwrap(),
            3
        );
    }
}
