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

use super::memo::ReadSet;
use super::options::{replay_line, CrashOptions};
use super::oracle::RecView;
use super::points;
use super::recorder::{first_difference, guarded, Recorder};
use super::report::{CrashReport, RecStats, Violation, ViolationKind};
use crate::engine::{Engine, RunSpec};
use crate::error::{Error, Result};
use crate::mem::Layout;
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::{Durability, NewUnitsFn, RangeSet, RecoveryReport, UnitCounts, UnitRecovery};
use crate::schemes::checkpoint::CoreContext;
use crate::schemes::SchemeInfo;
use crate::types::{Addr, LINE_BYTES, WORD_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

struct EpochOracle<'a> {
    layout: Layout,
    cur: SparseImage,
    applied: u64,
    /// Per thread: its program's stores in order.
    writes: &'a [Vec<(Addr, u64)>],
    /// Per thread: stores before each operation (`len` = operations + 1).
    op_start: &'a [Vec<u64>],
    /// Stores of each thread applied to `expected`.
    base: Vec<u64>,
    /// The last checkpoint's image: the initial one with those stores (a
    /// copy-on-write clone, so a word costs a page-cache read, not a hash
    /// lookup, and advancing costs a store each).
    expected: SparseImage,
    delta: Vec<FxHashSet<Addr>>,
    /// Per thread, where its stores whose `delta` entries a checkpoint
    /// advance left stale begin (they end at `base`). Outside `delta` and
    /// those stores' words the crash image equals the expected one. A check
    /// right after an advance (the chunk's last point: for a scheme whose
    /// only checkpoint is the run's last event, the one check that
    /// follows) compares those stores' lines instead of refreshing a delta
    /// entry per store; [`EpochOracle::settle`] refreshes them before
    /// anything else reads `delta`. Empty while a recovery is kept.
    pending: Vec<(usize, u64)>,
    /// A passing point's recovery, kept while no event touches what it
    /// read ([`Kept`]).
    kept: Option<Kept>,
}

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
struct Kept {
    source: Source,
    bytes_written: u64,
    modeled_ns: f64,
    view: RecView,
}

/// Where a kept recovery came from.
enum Source {
    /// A recovery from scratch: everything it read (sealed) and its
    /// writes in order (words sorted).
    Memo { reads: ReadSet, writes: Writes },
    /// A [`UnitRecovery`], kept per unit.
    Units(Box<Units>),
    /// A `Memo` whose reads an event touched: no longer the recovery of
    /// the crash image, but its image still follows the events, so the
    /// next recovery from scratch only swaps these writes for its own
    /// (the words either covers) instead of rebuilding the image.
    Stale { writes: Writes },
}

/// A [`UnitRecovery`] kept per unit: an event that touches the global
/// part's reads drops it; one that touches a unit's reads re-runs that
/// unit (its writes taken out of the kept image, the new ones put in);
/// one that touches the reads of the unit that ended the scan continues
/// the scan from there. Each is where a from-scratch recovery reading the
/// same bytes would be (units depend only on the global part and their own
/// reads, write disjoint bytes and read no byte any write covers: checked).
struct Units {
    scan: Box<dyn UnitRecovery>,
    global: RangeSet,
    /// Units taking part, in order.
    parts: Vec<Unit>,
    /// Units `begin` announced.
    n: u64,
    /// Reads of the unit that ended the scan (empty if all `n` ran).
    end_reads: RangeSet,
    /// Unit read ranges by (start, unit) -> end, and the longest one.
    index: std::collections::BTreeMap<(Addr, usize), Addr>,
    longest: u64,
    /// Every byte read / written while kept (only grow: a write that meets
    /// a read ever made gives up, conservatively).
    all_reads: Spans,
    homes: Spans,
    /// Write pieces and counts summed over `parts`.
    pieces: usize,
    counts: UnitCounts,
    /// Word -> the unit whose write covers it.
    owner: FxHashMap<Addr, usize>,
    /// Units whose reads an event touched; whether the end's were.
    dirty: Vec<usize>,
    end_dirty: bool,
}

#[derive(Default)]
struct Unit {
    reads: Vec<(Addr, Addr)>,
    writes: Writes,
    counts: UnitCounts,
}

/// Run unit `i` (its slot in `u.parts` empty) on the crash image `cur` and
/// put its writes into `view`. `Some(true)`: it takes part; `Some(false)`:
/// it ended the scan (its reads are the end's); `None`: it failed or broke
/// the contract.
fn run_unit(u: &mut Units, i: usize, cur: &SparseImage, view: &mut RecView) -> Option<bool> {
    let rl = ReadLog::new(cur);
    let mut w = Writes::default();
    let scan = &u.scan;
    let res = guarded(|| scan.unit(i as u64, &rl, &mut |a, d| w.push(a, d))).ok()?;
    let reads = rl.reads.into_inner();
    for &(s, e) in &reads {
        if u.homes.overlaps(s, e - s) {
            return None;
        }
        u.all_reads.insert(s, e);
    }
    let Some(counts) = res else {
        for &(s, e) in &reads {
            u.end_reads.insert(s, e);
        }
        return Some(false);
    };
    for (a, d) in w.pieces(w.len()) {
        let len = d.len() as u64;
        if u.all_reads.overlaps(a, len) {
            return None;
        }
        u.homes.insert(a, a + len);
        let end = a + len;
        let mut x = a & !(WORD_BYTES - 1);
        while x < end {
            if *u.owner.entry(x).or_insert(i) != i {
                return None;
            }
            x += WORD_BYTES;
        }
        view.cover_write(a, d);
    }
    for &(s, e) in &reads {
        let end = u.index.entry((s, i)).or_insert(e);
        *end = (*end).max(e);
        u.longest = u.longest.max(e - s);
    }
    u.pieces += w.len();
    u.counts = [u.counts[0] + counts[0], u.counts[1] + counts[1]];
    u.parts[i] = Unit {
        reads,
        writes: w,
        counts,
    };
    Some(true)
}

/// Disjoint half-open byte ranges in a B-tree (start -> end): inserts
/// anywhere cost a logarithm (recovery writes land all over home).
#[derive(Default)]
struct Spans(std::collections::BTreeMap<Addr, Addr>);

impl Spans {
    fn insert(&mut self, start: Addr, end: Addr) {
        if end <= start {
            return;
        }
        let (mut s, mut e) = (start, end);
        // Merge every range that overlaps or touches [s, e).
        while let Some((&ps, &pe)) = self.0.range(..=e).next_back() {
            if pe < s {
                break;
            }
            s = s.min(ps);
            e = e.max(pe);
            self.0.remove(&ps);
        }
        self.0.insert(s, e);
    }

    fn overlaps(&self, addr: Addr, len: u64) -> bool {
        self.0
            .range(..addr + len)
            .next_back()
            .is_some_and(|(_, &e)| e > addr)
    }
}

/// A reader over the crash image that records the byte ranges read.
struct ReadLog<'a> {
    img: &'a SparseImage,
    reads: std::cell::RefCell<Vec<(Addr, Addr)>>,
}

impl<'a> ReadLog<'a> {
    fn new(img: &'a SparseImage) -> Self {
        ReadLog {
            img,
            reads: Default::default(),
        }
    }
}

impl MemRead for ReadLog<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        if !buf.is_empty() {
            self.reads
                .borrow_mut()
                .push((addr, addr + buf.len() as u64));
        }
        self.img.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.img.zeros_until(addr, end);
        if z > addr {
            self.reads.borrow_mut().push((addr, z));
        }
        z
    }
}

impl Kept {
    /// Whether it is the recovery of the current crash image.
    fn live(&self) -> bool {
        !matches!(self.source, Source::Stale { .. })
    }

    /// Writes of the recovery (pieces).
    fn pieces(&self) -> usize {
        match &self.source {
            Source::Memo { writes, .. } | Source::Stale { writes } => writes.len(),
            Source::Units(u) => u.pieces,
        }
    }

    /// The recovery's writes in order, with their words sorted.
    fn writes(&self) -> std::borrow::Cow<'_, Writes> {
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
    fn touch(&mut self, addr: Addr, len: u64) -> bool {
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

impl EpochOracle<'_> {
    #[inline(always)]
    fn expected_word(&self, a: Addr) -> u64 {
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
    fn refresh_kept(&mut self, wa: Addr) {
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
    fn persist(
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
    fn keep(
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
    fn keep_units(&mut self, new_units: NewUnitsFn, params: &crate::config::Params) -> bool {
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

    /// Bring a kept [`UnitRecovery`] up to date with the events since the
    /// last point: re-run the units they touched, continue the scan if they
    /// touched its end. False (and nothing kept) if a unit failed, ended
    /// the scan early or broke the contract.
    fn update_units(&mut self) -> bool {
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
        let ok = self.run_units(&mut u);
        if !ok {
            self.kept = None;
            return false;
        }
        let rep = u.scan.report(u.counts);
        let k = self.kept.as_mut().expect("kept");
        k.bytes_written = rep.bytes_written;
        k.modeled_ns = rep.modeled_ns;
        k.source = Source::Units(u);
        true
    }

    fn run_units(&mut self, u: &mut Units) -> bool {
        let mut dirty = std::mem::take(&mut u.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        let mut changed: Vec<Addr> = Vec::new();
        let view = &mut self.kept.as_mut().expect("kept").view;
        for i in dirty {
            // Take the unit's writes out of the image.
            let old = std::mem::take(&mut u.parts[i]);
            u.pieces -= old.writes.len();
            u.counts = [u.counts[0] - old.counts[0], u.counts[1] - old.counts[1]];
            for &(s, _) in &old.reads {
                u.index.remove(&(s, i));
            }
            for (a, d) in old.writes.pieces(old.writes.len()) {
                let end = a + d.len() as u64;
                let mut w = a & !(WORD_BYTES - 1);
                while w < end {
                    u.owner.remove(&w);
                    view.uncover(w, &self.cur);
                    changed.push(w);
                    w += WORD_BYTES;
                }
            }
            match run_unit(u, i, &self.cur, view) {
                Some(true) => {}
                _ => return false,
            }
            changed.extend(u.parts[i].writes.sort_words().iter().copied());
        }
        if u.end_dirty {
            u.end_dirty = false;
            u.end_reads.clear();
            while (u.parts.len() as u64) < u.n {
                let i = u.parts.len();
                u.parts.push(Unit::default());
                match run_unit(u, i, &self.cur, view) {
                    Some(true) => {
                        changed.extend(u.parts[i].writes.sort_words().iter().copied());
                    }
                    Some(false) => {
                        u.parts.pop();
                        break;
                    }
                    None => return false,
                }
            }
        }
        for a in changed {
            self.refresh_kept(a);
        }
        true
    }

    fn undo(&mut self, undo: &[(Addr, u64)]) {
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
    fn advance_to(&mut self, cs: &[CoreContext], lazy: bool) -> Result<()> {
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
    fn pending_stores(&self) -> impl Iterator<Item = &[(Addr, u64)]> + '_ {
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

/// Whether every crashed re-run of a recovery that wrote `writes` is proven by
/// `RecoveryForm::CopiesHome`: the scheme copies home and every write lies
/// below the home limit (so none changes a byte of the reserved area).
fn reruns_repeat(sh: &EpochShared, writes: &Writes) -> bool {
    sh.copies_home
        && writes
            .pieces(writes.len())
            .all(|(a, d)| a + d.len() as u64 <= sh.layout.home_limit)
}

/// Crash-test a checkpointing scheme (or a scheme run on the hybrid memory
/// as a negative control) against checkpoint semantics.
pub fn crashtest_checkpoints(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    spec.record_history = true;
    let sim_start = Instant::now();
    let mut engine = Engine::with_scheme(spec.clone(), info)?;
    engine.run(&mut |_| {})?;
    engine.finish();
    let sim_host_seconds = sim_start.elapsed().as_secs_f64();
    let history = engine
        .history
        .take()
        .ok_or_else(|| Error::Internal("history recording was not enabled".into()))?;
    let layout = engine.ctx.layout.clone();
    let params = engine.params.clone();
    let reader = info.contexts;
    let records = std::mem::take(&mut engine.checkpoints);
    let log = &engine.ctx.nvm.persist_log;
    let events = log.events();
    let n = events.len() as u64;
    let selected = points::select(&opts.points, n, spec.seed)?;
    let threads = layout.threads;
    let mut writes = vec![Vec::new(); threads];
    let mut op_start = vec![vec![0u64]; threads];
    for t in 0..threads {
        for r in &history.per_thread[t] {
            writes[t].extend_from_slice(&history.writes[r.writes.clone()]);
            op_start[t].push(writes[t].len() as u64);
        }
    }
    let sh = EpochShared {
        info,
        spec: &spec,
        opts,
        layout: &layout,
        params: &params,
        reader,
        records: &records,
        log,
        events,
        n,
        writes: &writes,
        op_start: &op_start,
        units: info.recovery.units(),
        copies_home: info.recovery.copies_home(),
    };
    // Contiguous chunks merged in point order, as in the transactional
    // driver: each starts cold (oracle advanced from point 0), which never
    // changes a verdict, so results do not depend on the thread count.
    let (pool, host_threads, chunk) =
        super::parallel::parallel_plan(opts.host_threads, selected.len(), n)?;
    let total = selected.len() as u64;
    let start = Instant::now();
    let parts: Vec<Result<EpochTally>> = super::parallel::run_chunks(
        pool,
        &selected,
        chunk,
        &history.initial_media,
        progress,
        |pts, initial, tx| epoch_chunk(&sh, pts, &initial, tx),
    )?;
    let mut t = EpochTally::default();
    for p in parts {
        let p = p?;
        t.clean += p.clean;
        t.torn_v += p.torn_v;
        t.rec_crash_v += p.rec_crash_v;
        t.rec_crashes += p.rec_crashes;
        t.tested += p.tested;
        t.torn_tested += p.torn_tested;
        if t.first.is_none() {
            t.first = p.first;
        }
        t.verdicts.extend(p.verdicts);
        t.rec.merge(&p.rec);
        t.counts.elided += p.counts.elided;
        t.counts.mismatches += p.counts.mismatches;
        t.deduplicated += p.deduplicated;
        t.resumed += p.resumed;
        t.history_s += p.history_s;
        t.point_s += p.point_s;
    }
    let EpochTally {
        clean,
        torn_v,
        rec_crash_v,
        rec_crashes,
        tested,
        torn_tested,
        first,
        verdicts,
        rec,
        counts,
        deduplicated,
        resumed,
        history_s,
        point_s,
    } = t;
    progress(total, total);
    let check_host_seconds = start.elapsed().as_secs_f64();
    let background = &history.background;
    Ok(CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: Durability::Checkpoint,
        threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: n,
        crash_points_tested: tested,
        torn_points_tested: torn_tested,
        recovery_crashes_tested: rec_crashes,
        background_persist_events: background.iter().map(|r| r.end - r.start).sum(),
        background_points_tested: selected
            .iter()
            .filter(|&&k| super::history::background_range_of(background, k, false).is_some())
            .count() as u64,
        // Per-kind counts and deduplication are the transactional driver's.
        background_by_kind: Vec::new(),
        deduplicated_points: deduplicated,
        dedup_mismatches: counts.mismatches,
        resumed_points: resumed,
        resume_mismatches: 0,
        recovery_reruns_elided: counts.elided,
        host_threads,
        violations: clean + torn_v,
        clean_violations: clean,
        torn_violations: torn_v,
        recovery_crash_violations: rec_crash_v,
        first_violation: first,
        points_per_second: tested as f64 / check_host_seconds.max(1e-9),
        check_host_seconds,
        history_pass_host_seconds: history_s,
        point_host_seconds: point_s,
        sim_host_seconds,
        recovery_bytes_written_mean: rec.bytes_mean(),
        recovery_modeled_ns_max: rec.ns_max,
        verdicts,
        torn: opts.torn,
    })
}

/// What every epoch worker reads.
struct EpochShared<'a> {
    info: &'static SchemeInfo,
    spec: &'a RunSpec,
    opts: &'a CrashOptions,
    layout: &'a Layout,
    params: &'a crate::config::Params,
    reader: Option<crate::schemes::checkpoint::ReadContextsFn>,
    records: &'a [crate::schemes::checkpoint::CheckpointRecord],
    log: &'a crate::mem::PersistLog,
    events: &'a [crate::mem::PersistEvent],
    n: u64,
    writes: &'a [Vec<(Addr, u64)>],
    op_start: &'a [Vec<u64>],
    /// The scheme's recovery as units, when used ([`UnitRecovery`]).
    units: Option<NewUnitsFn>,
    /// The scheme's recovery copies home (`RecoveryForm::CopiesHome`).
    copies_home: bool,
}

/// One chunk's results, merged in point order.
#[derive(Default)]
struct EpochTally {
    clean: u64,
    torn_v: u64,
    rec_crash_v: u64,
    rec_crashes: u64,
    tested: u64,
    torn_tested: u64,
    first: Option<Violation>,
    verdicts: Vec<(u64, Option<u8>, bool)>,
    rec: RecStats,
    counts: ElideCounts,
    /// Untorn points checked on a kept recovery ([`Kept`]): from scratch,
    /// or per unit.
    deduplicated: u64,
    resumed: u64,
    /// Host seconds in the history pass and in the points' checks.
    history_s: f64,
    point_s: f64,
}

/// Check the crash points `pts` (ascending) in order.
fn epoch_chunk(
    sh: &EpochShared,
    pts: &[u64],
    initial: &SparseImage,
    done: &mut std::sync::mpsc::Sender<u64>,
) -> Result<EpochTally> {
    let threads = sh.layout.threads;
    let mut o = EpochOracle {
        layout: sh.layout.clone(),
        cur: initial.clone(),
        applied: 0,
        writes: sh.writes,
        op_start: sh.op_start,
        base: vec![0; threads],
        expected: initial.clone(),
        delta: vec![FxHashSet::default(); threads],
        pending: Vec::new(),
        kept: None,
    };
    let initial_ctx = vec![CoreContext::initial(); threads];
    let mut epoch = 0usize;
    let mut undo = Vec::new();
    let mut t = EpochTally::default();
    // Whether to recover and keep before checking (the last recovery from
    // scratch could be kept).
    let mut try_keep = true;
    let (records, events, log) = (sh.records, sh.events, sh.log);
    let last = pts.last();
    for &k in pts {
        let pass_start = Instant::now();
        while o.applied < k {
            let ev = &events[o.applied as usize];
            undo.clear();
            o.persist(ev.addr, log.data(ev), 0xff, &mut undo, true);
            o.applied += 1;
        }
        while epoch < records.len() && records[epoch].committed_seq <= k {
            // A stale kept image would follow every store of the epoch only
            // to have its writes swapped at the next recovery from scratch,
            // which can as well start a new one (the same image).
            if o.kept.as_ref().is_some_and(|kp| !kp.live()) {
                o.kept = None;
            }
            // The chunk's last point is checked once (no recovery kept
            // for later): its delta can be left pending.
            o.advance_to(&records[epoch].contexts, last == Some(&k))?;
            epoch += 1;
        }
        let point_start = Instant::now();
        t.history_s += (point_start - pass_start).as_secs_f64();
        let want_ctx = if epoch == 0 {
            &initial_ctx
        } else {
            &records[epoch - 1].contexts
        };
        let mask = if k < sh.n && sh.opts.torn {
            points::tear_mask(sh.spec.seed, k, points::covered_words(&events[k as usize]))
        } else {
            None
        };
        for m in std::iter::once(None).chain(mask.map(Some)) {
            undo.clear();
            if let Some(m) = m {
                let ev = &events[k as usize];
                o.persist(ev.addr, log.data(ev), m, &mut undo, false);
                t.torn_tested += 1;
            }
            t.tested += 1;
            let pt = Point {
                want_ctx,
                epoch,
                k,
                mask: m,
            };
            if m.is_none() && sh.opts.dedup_recoveries {
                if let Some(new_units) = sh.units {
                    // Bring the kept units up to date, or recover by units.
                    if !o.update_units() || o.kept.is_none() {
                        o.keep_units(new_units, sh.params);
                    }
                }
            }
            let stale = o.kept.as_ref().is_some_and(|k| !k.live());
            let offer = m.is_none()
                && sh.units.is_none()
                && sh.opts.dedup_recoveries
                && (stale || (o.kept.is_none() && try_keep));
            if offer && last == Some(&k) {
                // No later point of the chunk would use a recovery kept
                // here: check this one from scratch (one recovery, and no
                // image built to be checked once).
                o.kept = None;
            } else if offer {
                // Recover from scratch and keep it before checking: a stale
                // image only swaps writes, a new one copies the crash
                // image's delta; either check then costs the words that
                // differ, not a comparison over the whole delta. A recovery
                // that cannot be kept is checked from scratch (and not
                // tried again until one could be kept).
                match recover_offer(sh, &o) {
                    Some((reads, writes, bw, ns)) => {
                        let repeat = reruns_repeat(sh, &writes);
                        o.keep(reads, writes, bw, ns, repeat)
                    }
                    None => o.kept = None,
                }
                try_keep = o.kept.is_some();
            }
            let v = if m.is_none() && o.kept.is_some() {
                if sh.units.is_some() {
                    t.resumed += 1;
                } else {
                    t.deduplicated += 1;
                }
                let v = check_point(sh, &o, &pt, &mut t, true).0;
                if sh.opts.verify_dedup {
                    // Differential: the same point from scratch must give
                    // the same verdict and report (fresh counters).
                    let (mut a, mut b) = (EpochTally::default(), EpochTally::default());
                    check_point(sh, &o, &pt, &mut a, true);
                    let vb = check_point(sh, &o, &pt, &mut b, false).0;
                    let same = vb == v
                        && a.rec_crashes == b.rec_crashes
                        && a.counts.elided == b.counts.elided
                        && a.rec.same_output(&b.rec)
                        && b.counts.mismatches == 0
                        && kept_matches_scratch(sh, &o);
                    t.counts.mismatches += u64::from(!same);
                }
                v
            } else {
                let (v, keep) = check_point(sh, &o, &pt, &mut t, false);
                match keep.filter(|_| sh.units.is_none() && last != Some(&k)) {
                    Some((reads, writes, bw, ns)) => {
                        let repeat = reruns_repeat(sh, &writes);
                        o.keep(reads, writes, bw, ns, repeat);
                        try_keep = true;
                    }
                    None if m.is_none() => o.kept = None,
                    None => {}
                }
                v
            };
            let ok = v.is_none();
            if let Some(v) = v {
                if v.kind == ViolationKind::RecoveryCrash {
                    t.rec_crash_v += 1;
                }
                if m.is_some() {
                    t.torn_v += 1;
                } else {
                    t.clean += 1;
                }
                t.first.get_or_insert(v);
            }
            t.verdicts.push((k, m, ok));
            if m.is_some() {
                o.undo(&undo);
            }
        }
        t.point_s += point_start.elapsed().as_secs_f64();
        let _ = done.send(1);
    }
    Ok(t)
}

/// Recover the current (untorn) crash image from scratch: what
/// [`EpochOracle::keep`] takes, if it succeeded (errors are left to
/// [`check_point`]).
fn recover_offer(sh: &EpochShared, o: &EpochOracle) -> Option<KeepOffer> {
    let mut tracked = super::recorder::Tracked::new(Overlay::new(&o.cur));
    let report = guarded(|| (sh.info.recover)(&mut tracked, sh.params, sh.layout)).ok()?;
    let (rec, reads, _) = tracked.into_parts();
    Some((reads, rec.writes, report.bytes_written, report.modeled_ns))
}

/// Whether recovering the current crash image from scratch writes what
/// the kept recovery holds: the same number of writes, digest and bytes,
/// and the same image wherever either wrote (verify_dedup).
fn kept_matches_scratch(sh: &EpochShared, o: &EpochOracle) -> bool {
    let Some(kp) = o.kept.as_ref() else {
        return false;
    };
    let mut rec = Recorder::new(Overlay::new(&o.cur));
    let Ok(rep) = guarded(|| (sh.info.recover)(&mut rec, sh.params, sh.layout)) else {
        return false;
    };
    let kw = kp.writes();
    let words = rec.words_sorted().to_vec();
    rec.writes() == kp.pieces()
        && rec.writes.digest() == kw.digest()
        && rep.bytes_written == kp.bytes_written
        && rep.modeled_ns == kp.modeled_ns
        && first_difference(&kp.view.img, &kw.words, &rec, &words, Addr::MAX).is_none()
}

/// A recovery from scratch of a checked point: its counts added to `t`,
/// its writes' words sorted, it stored in `slot`; the recovered image, the
/// words written (sorted), the writes, their number and the re-runs
/// proven identical.
fn fresh_parts<'s, W: MemWrite + 's>(
    sh: &EpochShared,
    t: &mut EpochTally,
    fresh: super::recorder::Fresh<W>,
    slot: &'s mut Option<(Recorder<W>, ReadSet, RecoveryReport)>,
) -> (&'s dyn MemRead, &'s [Addr], &'s Writes, usize, usize) {
    let super::recorder::Fresh {
        mut rec,
        reads,
        proven,
        report,
    } = fresh;
    t.rec.add(report.bytes_written, report.modeled_ns);
    let proven = if sh.opts.dedup_recoveries && reruns_repeat(sh, &rec.writes) {
        usize::MAX
    } else {
        proven
    };
    rec.words_sorted();
    let rec = &slot.insert((rec, reads, report)).0;
    (rec, &rec.writes.words, &rec.writes, rec.writes(), proven)
}

/// Call `f` with (address, expected, found) for each word of the line at
/// `line` where `img` differs from `expected`, in address order.
#[inline]
fn for_each_line_difference(
    expected: &SparseImage,
    img: &dyn MemRead,
    line: Addr,
    mut f: impl FnMut((Addr, u64, u64)),
) {
    let (mut want, mut got) = ([0u8; LINE_BYTES as usize], [0u8; LINE_BYTES as usize]);
    expected.read_bytes(line, &mut want);
    img.read_bytes(line, &mut got);
    if want == got {
        return;
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("a word"));
    for (k, (e, g)) in want.chunks(8).zip(got.chunks(8)).enumerate() {
        if e != g {
            f((line + k as u64 * WORD_BYTES, word(e), word(g)));
        }
    }
}

/// The lowest word of `region` where `img` differs from `expected` in
/// the lines of the sorted words `written`: (address, expected, found).
fn first_line_difference(
    expected: &SparseImage,
    img: &dyn MemRead,
    written: &[Addr],
    region: &std::ops::Range<Addr>,
) -> Option<(Addr, u64, u64)> {
    let mut prev = Addr::MAX;
    for &a in written {
        let line = a & !(LINE_BYTES - 1);
        if line == prev {
            continue;
        }
        prev = line;
        let mut first = None;
        for_each_line_difference(expected, img, line, |d| {
            if first.is_none() && region.contains(&d.0) {
                first = Some(d);
            }
        });
        if first.is_some() {
            return first;
        }
    }
    None
}

/// Recovery re-runs proven identical (crash/war.rs) and, with
/// `verify_dedup`, how many of them (or of the points whose kept recovery
/// was reused) differed when run anyway (a bug; 0).
#[derive(Default)]
struct ElideCounts {
    elided: u64,
    mismatches: u64,
}

/// One crash image to check: point `k` (with the write in flight torn by
/// `mask`), to be recovered to checkpoint `epoch` with contexts `want_ctx`.
struct Point<'a> {
    want_ctx: &'a [CoreContext],
    epoch: usize,
    k: u64,
    mask: Option<u8>,
}

/// What a passing untorn point recovered from scratch offers to keep:
/// its reads, writes, bytes written and modelled time.
type KeepOffer = (ReadSet, Writes, u64, f64);

/// Recover one crash image and compare it (memory and contexts) with
/// checkpoint `epoch`; the violation if any. `kept`: use the oracle's kept
/// recovery instead of recovering (untorn points only).
fn check_point(
    sh: &EpochShared,
    o: &EpochOracle,
    pt: &Point,
    t: &mut EpochTally,
    kept: bool,
) -> (Option<Violation>, Option<KeepOffer>) {
    let (info, spec, opts, params, layout) = (sh.info, sh.spec, sh.opts, sh.params, sh.layout);
    let Point {
        want_ctx,
        epoch,
        k,
        mask,
    } = *pt;
    let replay = || replay_line(spec, opts, k, mask);
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
    let violation = |kind, thread, at: Option<(Addr, u64, u64)>, message: String| Violation {
        kind,
        point: k,
        tear_mask: mask,
        recovery_writes_persisted: None,
        thread,
        addr: at.map(|x| x.0),
        expected: at.map(|x| x.1),
        found: at.map(|x| x.2),
        message,
        replay: replay(),
    };
    // The recovered image, the words recovery wrote (sorted), its writes,
    // and the re-runs proven identical (crash/war.rs).
    let mut scratch = None;
    let mut whole = None;
    let kept_writes;
    let (img, written, writes, n_writes, proven, kv): (
        &dyn MemRead,
        &[Addr],
        &Writes,
        usize,
        usize,
        _,
    ) = match o.kept.as_ref().filter(|_| kept) {
        Some(kp) => {
            t.rec.add(kp.bytes_written, kp.modeled_ns);
            // The writes themselves are needed only to run re-runs
            // that are proven (verify_dedup).
            kept_writes = if opts.verify_dedup {
                kp.writes()
            } else {
                std::borrow::Cow::Owned(Writes::default())
            };
            // Every re-run proven (recovery wrote no byte it read, or it
            // copies home).
            (
                &kp.view.img,
                &kept_writes.words,
                &*kept_writes,
                kp.pieces(),
                usize::MAX,
                Some(&kp.view),
            )
        }
        None => {
            let failed = |e: String| {
                let msg = format!("crash point {k}{torn_note}: recovery failed: {e}");
                (
                    Some(violation(ViolationKind::RecoveryError, None, None, msg)),
                    None,
                )
            };
            let (img, words, writes, n, proven) = if o.pending.is_empty() {
                let fresh =
                    match super::recorder::recover_from_scratch(info, params, layout, &o.cur, opts)
                    {
                        Ok(f) => f,
                        Err(e) => return failed(e),
                    };
                fresh_parts(sh, t, fresh, &mut scratch)
            } else {
                // A checkpoint just advanced: recovery restores all of it
                // (ckpt-cow copies its whole footprint home). On a
                // copy-on-write clone of the crash image its reads and
                // writes cost a page-cache access, not an overlay's two
                // hash lookups per line; nothing is kept at this point
                // (the chunk's last), so its reads are not offered. A
                // scheme that copies home proves its re-runs without the
                // read trace ([`reruns_repeat`]; if not, all of them run).
                let img = o.cur.clone();
                let track = !sh.copies_home;
                let fresh =
                    match super::recorder::recover_on(info, params, layout, img, opts, track) {
                        Ok(f) => f,
                        Err(e) => return failed(e),
                    };
                fresh_parts(sh, t, fresh, &mut whole)
            };
            (img, words, writes, n, proven, None)
        }
    };
    if let Some(read) = sh.reader {
        match read(img, params, layout) {
            Ok(got) if got == want_ctx => {}
            Ok(got) => {
                let c = (0..got.len().min(want_ctx.len()))
                    .find(|&c| got[c] != want_ctx[c])
                    .unwrap_or(0);
                let v = violation(
                    ViolationKind::Oracle,
                    Some(c),
                    None,
                    format!(
                        "crash point {k}{torn_note}: recovered CPU context of core {c} is not that of checkpoint {epoch}: expected {:?}, found {:?}",
                        want_ctx.get(c),
                        got.get(c)
                    ),
                );
                return (Some(v), None);
            }
            Err(e) => {
                let v = violation(
                    ViolationKind::RecoveryError,
                    None,
                    None,
                    format!("crash point {k}{torn_note}: recovered CPU contexts unreadable: {e}"),
                );
                return (Some(v), None);
            }
        }
    }
    // The lowest difference per thread in the lines of the stores an
    // advance left pending (in store order: a line is compared again only
    // if another line's stores came between).
    let mut pending_min: Vec<Option<(Addr, u64, u64)>> = Vec::new();
    if kv.is_none() && !o.pending.is_empty() {
        pending_min.resize(layout.threads, None);
        // Lines compared once: recovery's (compared below) and each
        // pending one (a set lookup costs less than a line comparison).
        let mut seen = FxHashSet::default();
        let mut prev = Addr::MAX;
        for &a in written {
            let line = a & !(LINE_BYTES - 1);
            if line != prev {
                prev = line;
                seen.insert(line);
            }
        }
        for stores in o.pending_stores() {
            let mut prev = Addr::MAX;
            for &(a, _) in stores {
                let line = a & !(LINE_BYTES - 1);
                if line != prev {
                    prev = line;
                    if !seen.insert(line) {
                        continue;
                    }
                    for_each_line_difference(&o.expected, img, line, |d| {
                        if let Some(rt) = layout.thread_of(d.0) {
                            let m = &mut pending_min[rt];
                            if m.is_none_or(|x| d.0 < x.0) {
                                *m = Some(d);
                            }
                        }
                    });
                }
            }
        }
    }
    for th in 0..layout.threads {
        let region = layout.thread_base(th)..layout.thread_base(th) + layout.thread_region_bytes;
        // Words that can differ: the crash image's delta and recovery's
        // writes (and the stores an advance left pending), or the kept
        // image's delta (which covers its writes).
        let (delta, w): (&FxHashSet<Addr>, &[Addr]) = match kv {
            Some(view) => (view.delta(th), &[]),
            None => {
                let w0 = written.partition_point(|&a| a < region.start);
                let w1 = written.partition_point(|&a| a < region.end);
                (&o.delta[th], &written[w0..w1])
            }
        };
        // The lowest differing word (what sorting the candidates and
        // taking the first would report), without sorting them: the delta
        // holds the whole epoch's dirty words at every point.
        let in_delta = delta
            .iter()
            .filter_map(|&a| {
                let (want, got) = (o.expected_word(a), img.read_u64(a));
                (want != got).then_some((a, want, got))
            })
            .min_by_key(|d| d.0);
        // Recovery's writes, whole lines in address order: the first
        // difference is their lowest. Words of those lines outside the
        // candidates are equal in both images (neither written nor in the
        // delta), so comparing them changes nothing but costs two line
        // reads instead of two per word.
        let in_lines = first_line_difference(&o.expected, img, w, &region)
            .into_iter()
            .chain(pending_min.get(th).copied().flatten())
            .min_by_key(|d| d.0);
        if let Some((a, want, got)) = match (in_delta, in_lines) {
            (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
            (x, y) => x.or(y),
        } {
            let v = violation(
                ViolationKind::Oracle,
                Some(th),
                Some((a, want, got)),
                format!(
                    "crash point {k}{torn_note}: thread {th}'s recovered memory is not the image of checkpoint {epoch} ({} of its stores): at {a:#x} expected {want:#018x}, found {got:#018x}",
                    o.base[th]
                ),
            );
            return (Some(v), None);
        }
    }
    let key = k.wrapping_mul(2) + u64::from(mask.is_some());
    for m in points::recovery_points(spec.seed, key, n_writes, opts.recovery_crashes) {
        t.rec_crashes += 1;
        if m <= proven {
            t.counts.elided += 1;
            if !opts.verify_dedup {
                continue;
            }
        }
        let mut ov = Overlay::new(&o.cur);
        writes.replay_onto(m, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        if m <= proven {
            // verify_dedup: the elided re-run must give the same image.
            let same = res.is_ok() && {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(img, written, &rec2, &w2, Addr::MAX).is_none()
            };
            t.counts.mismatches += u64::from(!same);
            continue;
        }
        let diff = match res {
            Err(e) => Some((None, format!("the second recovery failed: {e}"))),
            Ok(_) => {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(img, written, &rec2, &w2, layout.home_limit)
            }
            .map(|d| {
                (
                    Some(d),
                    format!(
                        "home image differs from the uninterrupted recovery at {:#x}: expected {:#018x}, found {:#018x}",
                        d.0, d.1, d.2
                    ),
                )
            }),
        };
        if let Some((at, msg)) = diff {
            let mut v = violation(
                ViolationKind::RecoveryCrash,
                at.and_then(|d| layout.thread_of(d.0)),
                at,
                format!(
                    "crash point {k}{torn_note}, then a crash after {m} of recovery's {n_writes} writes: {msg}"
                ),
            );
            v.recovery_writes_persisted = Some(m);
            return (Some(v), None);
        }
    }
    // A passing untorn point: its recovery can be kept.
    let offer = scratch
        .filter(|_| mask.is_none() && opts.dedup_recoveries)
        .map(|(rec, reads, report)| (reads, rec.writes, report.bytes_written, report.modeled_ns));
    (None, offer)
}
