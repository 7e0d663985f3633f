//! Recovery by resuming a scan ([`crate::recovery::scan`]): for a scheme
//! whose recovery is a resumable scan, each worker keeps the scan, its read
//! ranges and the recovered image (the oracle's view) across points and
//! resumes only the cursors whose frontier a new write touched, instead of
//! recovering every crash image from scratch (`verify_resume` checks it
//! against recovery from scratch).

use super::check::{check_recovered, rerun_violation, Rerun};
use super::oracle::{Oracle, Recovered};
use super::points;
use super::recorder::{first_difference, guarded, Recorder};
use super::worker::{Fast, Shared, Tally, Worker};
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::{self, Writes};
use crate::recovery::{ResumableScan, ScanIo};
use crate::types::{Addr, LINE_BYTES};

/// Whether a from-scratch recovery of the current crash image writes the
/// image the resumed recovery keeps (with its finish writes), with the
/// same number of writes and the same digest.
pub(super) fn same_as_resumed(sh: &Shared, w: &Worker) -> bool {
    let (Some(f), Some(view)) = (w.fast.as_ref(), w.oracle.view()) else {
        return false;
    };
    let mut rec = Recorder::new(Overlay::new(&w.oracle.cur));
    if (sh.info.recover)(&mut rec, sh.params, sh.layout).is_err() {
        return false;
    }
    let mut fin = Writes::default();
    f.scan.finish(&mut |a, d| fin.push(a, d));
    if f.scan
        .finish_summary()
        .is_some_and(|(n, sum)| n != fin.len() || sum.is_some_and(|x| x != pieces_sum(&fin)))
    {
        return false;
    }
    let mut img = Overlay::new(&view.img);
    fin.replay_onto(fin.len(), &mut img);
    let nw = f.home_pieces + fin.len();
    let digest = writes::digest_of(f.home_sum.wrapping_add(pieces_sum(&fin)), nw);
    if rec.writes() != nw || rec.writes.digest() != digest {
        return false;
    }
    let mut fast_words: Vec<Addr> = view.covered_words().collect();
    fast_words.extend_from_slice(fin.sort_words());
    fast_words.sort_unstable();
    fast_words.dedup();
    let words = rec.words_sorted().to_vec();
    first_difference(&img, &fast_words, &rec, &words, Addr::MAX).is_none()
}

/// The wrapping sum of the piece hashes of `w` (its digest's sum).
fn pieces_sum(w: &Writes) -> u64 {
    w.pieces(w.len()).fold(0u64, |acc, (a, d)| {
        acc.wrapping_add(writes::piece_hash(a, d))
    })
}

impl Fast {
    /// A scan just started at crash point `at`: every cursor to run.
    fn new(scan: Box<dyn ResumableScan>, at: u64) -> Fast {
        let n = scan.cursors();
        Fast {
            scan,
            at,
            stable: Default::default(),
            frontier: vec![Default::default(); n],
            dirty: vec![true; n],
            homes: Default::default(),
            home_pieces: 0,
            home_sum: 0,
            new_homes: Vec::new(),
        }
    }

    /// Follow the persist events before crash point `k` (from the scan's
    /// point): one that touches what a cursor read before its mark
    /// invalidates the scan (false); one on a frontier makes that cursor
    /// resume.
    pub(super) fn follow_events(&mut self, events: &[crate::mem::PersistEvent], k: u64) -> bool {
        let mut keep = true;
        let follows = self.scan.follows_writes();
        while self.at < k && keep {
            let e = &events[self.at as usize];
            let len = e.len as u64;
            if follows {
                // The scan re-reads what the write touched itself.
                self.scan.persisted(e.addr, len);
                self.dirty.fill(true);
                self.at += 1;
                continue;
            }
            if self.stable.overlaps(e.addr, len) {
                keep = false;
            }
            for (c, fr) in self.frontier.iter().enumerate() {
                if fr.overlaps(e.addr, len) {
                    self.dirty[c] = true;
                }
            }
            self.at += 1;
        }
        keep
    }
}

/// Bring the worker's scan up to crash point `k`: resume the cursors
/// whose frontier changed (all of them when new), keep their home writes
/// in the recovered image. `None`: dropped (see [`check_resumed`]).
fn resume_scan(sh: &Shared, w: &mut Worker, k: u64) -> Option<()> {
    let new_scan = sh.resume?;
    let Worker {
        oracle,
        fast,
        fast_off,
        ..
    } = w;
    let fail = |fast: &mut Option<Fast>, oracle: &mut Oracle| {
        *fast = None;
        oracle.view_drop();
        None
    };
    loop {
        let fresh = fast.is_none();
        if fresh {
            oracle.view_start();
            *fast = Some(Fast::new(new_scan(sh.params, sh.layout), k));
        }
        let f = fast.as_mut().expect("just set");
        debug_assert_eq!(f.at, k);
        for c in 0..f.frontier.len() {
            if !f.dirty[c] {
                continue;
            }
            f.dirty[c] = false;
            match resume_cursor(f, oracle, c) {
                Some(false) => {}
                Some(true) => {
                    // Home writes that may change bytes a scan read: the
                    // crashed re-runs inside the replay are no longer
                    // provably identical.
                    *fast_off = true;
                    return fail(fast, oracle);
                }
                None => return fail(fast, oracle),
            }
        }
        if !f.scan.stale() {
            oracle.refresh_stale();
            return Some(());
        }
        if fresh {
            return fail(fast, oracle);
        }
        // A write the state could not absorb: start over at this point.
        *fast = None;
        oracle.view_drop();
    }
}

/// Resume cursor `c` of the scan `f` on the oracle's crash image: its
/// reads join the scan's (before its mark stable, after it the cursor's
/// frontier) and its home writes (and replacements) go into the recovered
/// image. Whether a home write met a byte some read saw; `None`: the scan
/// failed or panicked.
fn resume_cursor(f: &mut Fast, oracle: &mut Oracle, c: usize) -> Option<bool> {
    let follows = f.scan.follows_writes();
    let mut io = FastIo {
        img: &oracle.cur,
        reads: Default::default(),
        homes: Writes::default(),
        rehomes: Vec::new(),
        mark: (0, 0, 0),
        can_restart: f.home_pieces == 0,
    };
    let scan = &mut f.scan;
    guarded(|| scan.resume(c, &mut io)).ok()?;
    let FastIo {
        reads,
        homes,
        rehomes,
        mark: (mr, mh, mx),
        ..
    } = io;
    let reads = reads.into_inner();
    f.frontier[c].clear();
    for &(s, e) in &reads[..mr] {
        f.stable.insert(s, e);
    }
    for &(s, e) in &reads[mr..] {
        f.frontier[c].insert(s, e);
    }
    let mut met = reads.iter().any(|&(s, e)| f.homes.overlaps(s, e - s));
    // A scan that follows the writes keeps the hull of each resume's
    // home writes (a superset: scattered words would make the range
    // set's inserts quadratic).
    let mut hull = (Addr::MAX, 0);
    // Inserted into `homes` together after the loop (nothing in it
    // reads `homes`).
    let mut new_homes = std::mem::take(&mut f.new_homes);
    let mut home = |f: &mut Fast, oracle: &mut Oracle, a: Addr, d: &[u8]| {
        let len = d.len() as u64;
        let met = f.stable.overlaps(a, len) || f.frontier.iter().any(|fr| fr.overlaps(a, len));
        if follows {
            hull = (hull.0.min(a), hull.1.max(a + len));
        } else {
            new_homes.push((a, a + len));
        }
        f.home_sum = f.home_sum.wrapping_add(writes::piece_hash(a, d));
        oracle.view_home(a, d);
        met
    };
    for (a, d) in homes.pieces(mh) {
        f.home_pieces += 1;
        met |= home(f, oracle, a, d);
    }
    for r in &rehomes[..mx] {
        f.home_sum = f.home_sum.wrapping_sub(r.old_hash);
        match &r.new {
            Some(d) => met |= home(f, oracle, r.addr, &d[..r.len as usize]),
            None => {
                f.home_pieces -= 1;
                oracle.view_unhome(r.addr, u64::from(r.len));
            }
        }
    }
    f.homes.insert_all(&mut new_homes);
    f.new_homes = new_homes;
    if hull.0 < hull.1 {
        f.homes.insert(hull.0, hull.1);
    }
    Some(met)
}

/// Recover crash point `k` (untorn) by resuming the worker's scan
/// ([`crate::recovery::scan`]) and check it. `None`: the scan could not be used (a
/// recovery error or panic, or home writes that meet the scan's reads);
/// the state is dropped and the caller recovers from scratch.
pub(super) fn check_resumed(
    sh: &Shared,
    w: &mut Worker,
    tally: &mut Tally,
    k: u64,
) -> Option<bool> {
    resume_scan(sh, w, k)?;
    let Worker {
        oracle,
        scratch,
        fast,
        ..
    } = w;
    let f = fast.as_mut().expect("kept by resume_scan");
    let oracle: &Oracle = oracle;
    let view = oracle.view().expect("kept with the scan");
    let (info, params, layout) = (sh.info, sh.params, sh.layout);
    // The finish writes over the kept image; the first one that changes a
    // byte some read saw bounds the proven re-runs (all reads come before
    // every write in the from-scratch recovery).
    // A finish the scan summarises is not built (`finish_summary`).
    let summary = f
        .scan
        .finish_summary()
        .filter(|_| f.scan.finish_reruns_repeat());
    let mut fin = Writes::default();
    if summary.is_none() {
        f.scan.finish(&mut |a, d| fin.push(a, d));
    }
    let report = f.scan.report(params);
    let mut img = Overlay::new(&view.img);
    let mut proven = usize::MAX;
    let mut old = [0u8; crate::types::LINE_BYTES as usize];
    for (i, (a, d)) in fin.pieces(fin.len()).enumerate() {
        let len = d.len() as u64;
        img.read_bytes(a, &mut old[..d.len()]);
        if proven == usize::MAX
            && old[..d.len()] != *d
            && (f.stable.overlaps(a, len) || f.frontier.iter().any(|fr| fr.overlaps(a, len)))
        {
            proven = f.home_pieces + i;
        }
        img.write_bytes(a, d);
    }
    let (fin_len, fin_sum) = match summary {
        Some((n, sum)) => (n, sum.unwrap_or(0)),
        None => (fin.len(), pieces_sum(&fin)),
    };
    let nw = f.home_pieces + fin_len;
    let digest = writes::digest_of(f.home_sum.wrapping_add(fin_sum), nw);
    fin.sort_words();
    tally.rec.add(report.bytes_written, report.modeled_ns);
    tally.resumed += 1;
    // Without finish writes the kept image is the recovered one (the
    // checker's reads then skip the empty overlay).
    let rec: &dyn MemRead = if fin.is_empty() { &view.img } else { &img };
    let recovered = Recovered {
        image: rec,
        written: &fin.words,
        on_view: true,
    };
    let mut ok = check_recovered(sh, oracle, scratch, tally, k, None, recovered);
    let key = digest.wrapping_mul(2);
    // A re-run crashed among the finish writes the scheme proves
    // repeats the uninterrupted recovery (`finish_reruns_repeat`).
    let repeats = f.scan.finish_reruns_repeat();
    for m in points::recovery_points(sh.spec.seed, key, nw, sh.opts.recovery_crashes) {
        tally.recovery_crashes += 1;
        if m <= proven || repeats {
            tally.reruns_elided += 1;
            continue;
        }
        // proven >= the home writes: the crash fell among the finish
        // writes, so the crashed image is the kept one plus some of them.
        let mut ov = Overlay::new(&view.img);
        fin.replay_onto(m - f.home_pieces, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        // Both images are the kept one with writes over it: they can only
        // differ where the finish writes or the re-run wrote.
        let rerun = Rerun {
            m,
            total: nw,
            res,
            rec: &mut rec2,
        };
        if let Some(v) = rerun_violation(sh, oracle, k, None, rerun, &img, &fin.words) {
            ok = false;
            tally.recovery_crash += 1;
            tally.add(v);
            break;
        }
    }
    Some(ok)
}

/// A [`ScanIo`] over the crash image that records the reads and
/// keeps home writes, with the position of the last mark.
struct FastIo<'a> {
    img: &'a SparseImage,
    reads: std::cell::RefCell<Vec<(Addr, Addr)>>,
    homes: Writes,
    rehomes: Vec<Rehome>,
    /// Reads, home writes and replacements before the last mark.
    mark: (usize, usize, usize),
    /// No home write of this scan was applied yet ([`ScanIo::restart`]).
    can_restart: bool,
}

/// A home write of an earlier resume replaced or withdrawn
/// ([`ScanIo::rehome`]).
struct Rehome {
    addr: Addr,
    /// [`writes::piece_hash`] of the replaced piece.
    old_hash: u64,
    len: u8,
    new: Option<[u8; LINE_BYTES as usize]>,
}

impl FastIo<'_> {
    fn note(&self, start: Addr, end: Addr) {
        if end <= start {
            return;
        }
        let mut r = self.reads.borrow_mut();
        // Extend the last range (never across the mark).
        if r.len() > self.mark.0 {
            if let Some(last) = r.last_mut() {
                if start >= last.0 && start <= last.1 {
                    last.1 = last.1.max(end);
                    return;
                }
            }
        }
        r.push((start, end));
    }
}

impl MemRead for FastIo<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.note(addr, addr + buf.len() as u64);
        self.img.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.img.zeros_until(addr, end);
        self.note(addr, z);
        z
    }
}

impl ScanIo for FastIo<'_> {
    fn home(&mut self, addr: Addr, data: &[u8]) {
        self.homes.push(addr, data);
    }

    fn mark(&mut self) {
        self.mark = (
            self.reads.get_mut().len(),
            self.homes.len(),
            self.rehomes.len(),
        );
    }

    fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
        assert!(
            old.len() <= LINE_BYTES as usize
                && (addr % LINE_BYTES) + old.len() as u64 <= LINE_BYTES,
            "a replaced home write is one piece (within a 64 B line)"
        );
        self.rehomes.push(Rehome {
            addr,
            old_hash: writes::piece_hash(addr, old),
            len: old.len() as u8,
            new: new.map(|d| {
                assert_eq!(d.len(), old.len(), "a replacement keeps the length");
                let mut b = [0u8; LINE_BYTES as usize];
                b[..d.len()].copy_from_slice(d);
                b
            }),
        });
    }

    fn restart(&mut self) -> bool {
        // The reads so far stay recorded: the new scan reads them again,
        // and keeping them stable only makes the state drop sooner.
        if self.can_restart {
            self.homes.clear();
            self.rehomes.clear();
            self.mark.1 = 0;
            self.mark.2 = 0;
        }
        self.can_restart
    }
}
