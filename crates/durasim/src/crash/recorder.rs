//! Recording a recovery: the write [`Recorder`] (each 64 B piece of a
//! recovery write is one of recovery's own persist points), its read-tracing
//! form [`Tracked`], a recovery run from scratch through them ([`Fresh`]),
//! and the comparison of two recovered images ([`first_difference`]).

use super::memo::ReadSet;
use super::options::CrashOptions;
use super::war;
use crate::mem::{Layout, MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::RecoveryReport;
use crate::schemes::SchemeInfo;
use crate::types::Addr;

/// A write-through wrapper around a recovery's image that records every
/// write (each 64 B piece is one of recovery's own persist points).
pub struct Recorder<W: MemWrite> {
    pub inner: W,
    pub writes: Writes,
}

impl<W: MemWrite> Recorder<W> {
    pub fn new(inner: W) -> Self {
        Recorder {
            inner,
            writes: Writes::default(),
        }
    }

    pub fn writes(&self) -> usize {
        self.writes.len()
    }

    pub fn words_sorted(&mut self) -> &[Addr] {
        self.writes.sort_words()
    }
}

impl<W: MemWrite> MemRead for Recorder<W> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.inner.read_bytes(addr, buf);
    }

    // The inner image's word fast path (oracle checks read word by word).
    fn read_u64(&self, addr: Addr) -> u64 {
        self.inner.read_u64(addr)
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.inner.zeros_until(addr, end)
    }
}

/// A [`Recorder`] that also records the byte ranges read (for [`super::memo`])
/// and what [`war::Trace`] needs to prove crashed re-runs identical.
/// Reads take `&self`, so the read sets sit in cells.
pub struct Tracked<W: MemWrite> {
    rec: Recorder<W>,
    /// The reads, timed (one record serves both the memo and [`war`]).
    trace: std::cell::RefCell<war::Trace>,
}

impl<W: MemWrite> Tracked<W> {
    pub(super) fn new(inner: W) -> Self {
        Tracked {
            rec: Recorder::new(inner),
            trace: Default::default(),
        }
    }

    pub(super) fn into_parts(self) -> (Recorder<W>, ReadSet, war::Trace) {
        let trace = self.trace.into_inner();
        let mut reads = ReadSet::default();
        trace.read_ranges(|s, e| reads.push(s, e));
        (self.rec, reads, trace)
    }

    #[inline]
    fn note_read(&self, start: Addr, end: Addr) {
        self.trace
            .borrow_mut()
            .read(start, end, self.rec.writes.len());
    }
}

impl<W: MemWrite> MemRead for Tracked<W> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.note_read(addr, addr + buf.len() as u64);
        self.rec.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.rec.zeros_until(addr, end);
        self.note_read(addr, z);
        z
    }
}

impl<W: MemWrite> MemWrite for Tracked<W> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        // Each 64 B piece is one write of the recorder; note the pieces
        // that change bytes (a write of the bytes already there is
        // invisible to any read).
        let mut done = 0usize;
        let mut idx = self.rec.writes.len();
        let mut old = [0u8; crate::types::LINE_BYTES as usize];
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((crate::types::LINE_BYTES - a % crate::types::LINE_BYTES) as usize)
                .min(data.len() - done);
            self.rec.inner.read_bytes(a, &mut old[..n]);
            if old[..n] != data[done..done + n] {
                self.trace.get_mut().change(idx, a, a + n as u64);
            }
            idx += 1;
            done += n;
        }
        self.rec.write_bytes(addr, data);
    }
}

impl<W: MemWrite> MemWrite for Recorder<W> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        self.writes.push(addr, data);
        self.inner.write_bytes(addr, data);
    }
}
/// A recovery run from scratch on a crash image, its reads recorded.
/// `first_conflict` consumes the read trace, so only its verdict is kept.
pub(crate) struct Fresh<W: MemWrite> {
    pub rec: Recorder<W>,
    pub reads: ReadSet,
    /// Re-runs crashed after at most this many writes provably repeat the
    /// uninterrupted recovery ([`war`]); exact, so off with the dedup.
    pub proven: usize,
    pub report: RecoveryReport,
}

/// Recover `cur` from scratch through `info`'s registered recovery.
pub(crate) fn recover_from_scratch<'a>(
    info: &SchemeInfo,
    params: &crate::config::Params,
    layout: &Layout,
    cur: &'a SparseImage,
    opts: &CrashOptions,
) -> std::result::Result<Fresh<Overlay<'a, SparseImage>>, String> {
    recover_on(info, params, layout, Overlay::new(cur), opts, true)
}

/// [`recover_from_scratch`] on `img`, a crash image recovery may write.
/// `track`: record the reads and prove re-runs ([`war`]); otherwise the
/// reads are left empty and no re-run is proven (the caller proves them
/// some other way, or runs them).
pub(crate) fn recover_on<W: MemWrite>(
    info: &SchemeInfo,
    params: &crate::config::Params,
    layout: &Layout,
    img: W,
    opts: &CrashOptions,
    track: bool,
) -> std::result::Result<Fresh<W>, String> {
    if !track {
        let mut rec = Recorder::new(img);
        let report = guarded(|| (info.recover)(&mut rec, params, layout))?;
        return Ok(Fresh {
            rec,
            reads: ReadSet::default(),
            proven: 0,
            report,
        });
    }
    let mut tracked = Tracked::new(img);
    let report = guarded(|| (info.recover)(&mut tracked, params, layout))?;
    let (rec, reads, trace) = tracked.into_parts();
    let proven = if opts.dedup_recoveries {
        trace.first_conflict()
    } else {
        0
    };
    Ok(Fresh {
        rec,
        reads,
        proven,
        report,
    })
}
/// Run scheme or workload code on crashed bytes; a panic (a bug in that
/// code, provoked by garbage) becomes an error so it is reported with a
/// replay line instead of aborting the test.
pub(super) fn guarded<T, E: std::fmt::Display>(
    f: impl FnOnce() -> std::result::Result<T, E>,
) -> std::result::Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    }
}
/// First word below `limit` where two recovered images differ; only words
/// either recovery wrote (sorted lists) can differ (both start from the
/// same crash image).
pub(super) fn first_difference(
    a: &dyn MemRead,
    a_words: &[Addr],
    b: &dyn MemRead,
    b_words: &[Addr],
    limit: Addr,
) -> Option<(Addr, u64, u64)> {
    // Merge the two sorted lists in address order.
    let (mut i, mut j) = (0, 0);
    loop {
        let w = match (a_words.get(i), b_words.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => return None,
        };
        if w >= limit {
            return None;
        }
        i += usize::from(a_words.get(i) == Some(&w));
        j += usize::from(b_words.get(j) == Some(&w));
        let (x, y) = (a.read_u64(w), b.read_u64(w));
        if x != y {
            return Some((w, x, y));
        }
    }
}
