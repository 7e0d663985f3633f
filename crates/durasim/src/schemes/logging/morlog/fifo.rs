//! The ring behind MorLog's undo+redo and redo buffers: entries in FIFO
//! order, with each entry's match keys (word address, owner) kept apart in
//! two compact arrays in the same ring order. Every store searches both
//! buffers by word, line and owner; the searches read 16 B per entry (two
//! cache lines for the 16-entry buffer) instead of the whole entries, and
//! are skipped when the owner has no entry buffered (a ring built with
//! `COUNTED` counts the entries of each owner: the redo buffer, which a
//! store searches for its own transaction's entries and which rarely holds
//! any; the undo+redo buffer nearly always does, so counting would only
//! add work there).

use crate::types::{Addr, CoreId};
use rustc_hash::FxHashMap;

/// The address key of an entry with no word (a commit record): it equals
/// no word address and, masked to a line, no line (addresses are below
/// 2^48).
pub(super) const NO_ADDR: u64 = u64::MAX;

/// The owner key of (`core`, `txid`): one per pair (cores are far fewer
/// than 2^32).
#[inline]
pub(super) fn owner_key(core: CoreId, txid: u32) -> u64 {
    debug_assert!(core < 1 << 32);
    core as u64 | u64::from(txid) << 32
}

pub(super) struct Fifo<T, const COUNTED: bool = false> {
    items: Vec<T>,
    addr: Vec<u64>,
    owner: Vec<u64>,
    head: usize,
    len: usize,
    mask: usize,
    /// Entries per owner key (an owner with none is absent); kept only
    /// when `COUNTED`.
    per_owner: FxHashMap<u64, u32>,
}

impl<T: Copy + Default, const COUNTED: bool> Fifo<T, COUNTED> {
    /// A ring of room for at least `cap` entries.
    pub(super) fn with_capacity(cap: usize) -> Self {
        let slots = cap.max(1).next_power_of_two();
        Fifo {
            items: vec![T::default(); slots],
            addr: vec![NO_ADDR; slots],
            owner: vec![0; slots],
            head: 0,
            len: 0,
            mask: slots - 1,
            per_owner: FxHashMap::default(),
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn phys(&self, i: usize) -> usize {
        (self.head + i) & self.mask
    }

    /// The occupied slots as two physical ranges, in FIFO order.
    #[inline]
    fn ranges(&self) -> [std::ops::Range<usize>; 2] {
        let slots = self.mask + 1;
        let end = self.head + self.len;
        if end <= slots {
            [self.head..end, 0..0]
        } else {
            [self.head..slots, 0..end - slots]
        }
    }

    /// Append an entry with its keys (the ring grows if full).
    pub(super) fn push_back(&mut self, item: T, addr: Addr, owner: u64) {
        if self.len > self.mask {
            self.grow();
        }
        let p = self.phys(self.len);
        self.items[p] = item;
        self.addr[p] = addr;
        self.owner[p] = owner;
        self.len += 1;
        if COUNTED {
            *self.per_owner.entry(owner).or_insert(0) += 1;
        }
    }

    /// Whether `owner` may have an entry buffered (always, uncounted).
    #[inline]
    fn has_owner(&self, owner: u64) -> bool {
        !COUNTED || self.per_owner.contains_key(&owner)
    }

    fn grow(&mut self) {
        let mut next = Self::with_capacity(2 * (self.mask + 1));
        for i in 0..self.len {
            let p = self.phys(i);
            next.push_back(self.items[p], self.addr[p], self.owner[p]);
        }
        *self = next;
    }

    pub(super) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let item = self.items[self.head];
        let owner = self.owner[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        if COUNTED {
            match self.per_owner.get_mut(&owner) {
                Some(n) if *n > 1 => *n -= 1,
                _ => {
                    self.per_owner.remove(&owner);
                }
            }
        }
        Some(item)
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.items[self.head])
    }

    /// The `i`-th entry from the front.
    #[inline]
    pub(super) fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len);
        let p = self.phys(i);
        &mut self.items[p]
    }

    /// The entries in FIFO order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        let [a, b] = self.ranges();
        self.items[a].iter().chain(self.items[b].iter())
    }

    /// Index (from the front) of the last entry `pick` selects.
    pub(super) fn rposition(&self, pick: impl Fn(&T) -> bool) -> Option<usize> {
        (0..self.len)
            .rev()
            .find(|&i| pick(&self.items[self.phys(i)]))
    }

    /// Index (from the front) of the newest entry of word `addr` and owner
    /// `owner`.
    #[inline]
    pub(super) fn newest(&self, addr: Addr, owner: u64) -> Option<usize> {
        if !self.has_owner(owner) {
            return None;
        }
        let [a, b] = self.ranges();
        let base_b = a.len();
        let hit = |r: std::ops::Range<usize>| {
            let (ad, ow) = (&self.addr[r.clone()], &self.owner[r]);
            let mut found = usize::MAX;
            for i in 0..ad.len() {
                if ad[i] == addr && ow[i] == owner {
                    found = i;
                }
            }
            found
        };
        match hit(b) {
            usize::MAX => match hit(a) {
                usize::MAX => None,
                i => Some(i),
            },
            i => Some(base_b + i),
        }
    }

    /// The words (bit per word of the line) of `line` with an entry of
    /// `owner`.
    #[inline]
    pub(super) fn words_of(&self, line: Addr, owner: u64) -> u8 {
        if !self.has_owner(owner) {
            return 0;
        }
        let mut m = 0u8;
        for r in self.ranges() {
            let (ad, ow) = (&self.addr[r.clone()], &self.owner[r]);
            for i in 0..ad.len() {
                let hit = ad[i] & !63 == line && ow[i] == owner;
                m |= u8::from(hit) << ((ad[i] & 63) / 8);
            }
        }
        m
    }

    /// Some entry of `line` (any owner).
    #[inline]
    pub(super) fn any_of_line(&self, line: Addr) -> bool {
        self.ranges()
            .into_iter()
            .any(|r| self.addr[r].iter().any(|&a| a & !63 == line))
    }

    /// Some entry of `line` and `owner`.
    #[inline]
    pub(super) fn any_of_line_owner(&self, line: Addr, owner: u64) -> bool {
        if !self.has_owner(owner) {
            return false;
        }
        self.ranges().into_iter().any(|r| {
            let (ad, ow) = (&self.addr[r.clone()], &self.owner[r]);
            // Whole range, no early exit: the loop stays branch-free.
            let mut hit = false;
            for i in 0..ad.len() {
                hit |= (ad[i] & !63 == line) & (ow[i] == owner);
            }
            hit
        })
    }

    /// The largest `f` over the entries of `line` (any owner).
    pub(super) fn max_of_line(&self, line: Addr, f: impl Fn(&T) -> u64) -> Option<u64> {
        let mut best = None;
        for r in self.ranges() {
            for p in r {
                if self.addr[p] & !63 == line {
                    let v = f(&self.items[p]);
                    best = Some(best.map_or(v, |b: u64| b.max(v)));
                }
            }
        }
        best
    }

    /// Entries of `owner`.
    pub(super) fn count_owner(&self, owner: u64) -> usize {
        if COUNTED {
            return self.per_owner.get(&owner).map_or(0, |&n| n as usize);
        }
        self.ranges()
            .into_iter()
            .map(|r| self.owner[r].iter().filter(|&&o| o == owner).count())
            .sum()
    }

    /// Keep the entries `keep` selects, in order (rare: a rebuild).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut next = Self::with_capacity(self.mask + 1);
        for i in 0..self.len {
            let p = self.phys(i);
            if keep(&self.items[p]) {
                next.push_back(self.items[p], self.addr[p], self.owner[p]);
            }
        }
        *self = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct E {
        addr: u64,
        owner: u64,
        t: u64,
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(u64, u64, bool),
        Pop,
        Retain(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few lines and owners, so that searches hit.
        prop_oneof![
            4 => (0u64..24, 0u64..3, any::<bool>()).prop_map(|(w, o, c)| Op::Push(w, o, c)),
            2 => Just(Op::Pop),
            1 => (0u64..3).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// Every search of the keyed ring equals the same search over the
        /// entries of a VecDeque holding the same operations, through
        /// wrap-around, growth and rebuilds.
        #[test]
        fn keyed_searches_equal_entry_scans(ops in prop::collection::vec(op(), 1..200), cap in 1usize..20) {
            check::<false>(&ops, cap)?;
            check::<true>(&ops, cap)?;
        }
    }

    /// The searches of a ring, counted or not, against a VecDeque.
    fn check<const COUNTED: bool>(ops: &[Op], cap: usize) -> Result<(), TestCaseError> {
        {
            let mut f: Fifo<E, COUNTED> = Fifo::with_capacity(cap);
            let mut d: std::collections::VecDeque<E> = Default::default();
            let mut t = 0;
            for o in ops.iter().cloned() {
                match o {
                    Op::Push(w, owner, commit) => {
                        t += 1;
                        let addr = if commit { NO_ADDR } else { 0x1000 + 8 * w };
                        let e = E { addr, owner, t };
                        f.push_back(e, addr, owner);
                        d.push_back(e);
                    }
                    Op::Pop => prop_assert_eq!(f.pop_front(), d.pop_front()),
                    Op::Retain(owner) => {
                        f.retain(|e| e.owner != owner);
                        d.retain(|e| e.owner != owner);
                    }
                }
                prop_assert_eq!(f.len(), d.len());
                prop_assert_eq!(f.front(), d.front());
                prop_assert!(f.iter().eq(d.iter()));
                for owner in 0..3 {
                    prop_assert_eq!(
                        f.count_owner(owner),
                        d.iter().filter(|e| e.owner == owner).count()
                    );
                    prop_assert_eq!(
                        f.rposition(|e| e.owner == owner),
                        d.iter().rposition(|e| e.owner == owner)
                    );
                    for w in 0..24 {
                        let a = 0x1000 + 8 * w;
                        let want = d.iter().rposition(|e| e.addr == a && e.owner == owner);
                        prop_assert_eq!(f.newest(a, owner), want);
                        if let Some(i) = want {
                            prop_assert_eq!(*f.get_mut(i), d[i]);
                        }
                    }
                    for line in [0x1000u64, 0x1040, 0x1080] {
                        let mut m = 0u8;
                        for e in d.iter().filter(|e| {
                            e.addr != NO_ADDR && e.addr & !63 == line && e.owner == owner
                        }) {
                            m |= 1 << ((e.addr & 63) / 8);
                        }
                        prop_assert_eq!(f.words_of(line, owner), m);
                        prop_assert_eq!(f.any_of_line_owner(line, owner), m != 0);
                    }
                }
                for line in [0x1000u64, 0x1040, 0x1080, 0] {
                    let of_line = |e: &&E| e.addr != NO_ADDR && e.addr & !63 == line;
                    prop_assert_eq!(f.any_of_line(line), d.iter().any(|e| of_line(&e)));
                    prop_assert_eq!(
                        f.max_of_line(line, |e| e.t),
                        d.iter().filter(of_line).map(|e| e.t).max()
                    );
                }
            }
        }
        Ok(())
    }
}
