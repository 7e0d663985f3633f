//! Recency order over the entries of a small cache, as a doubly linked
//! list through their indices: O(1) to make an entry the most recent, to
//! find the least recent, and to take an entry out.

/// No entry.
pub const NIL: u32 = u32::MAX;

/// Entries `0..len()`, each linked into the order or not; the head is the
/// most recently used.
#[derive(Clone, Debug)]
pub struct LruOrder {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
}

impl Default for LruOrder {
    fn default() -> Self {
        LruOrder::with_capacity(0)
    }
}

impl LruOrder {
    /// An empty order with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        LruOrder {
            prev: Vec::with_capacity(n),
            next: Vec::with_capacity(n),
            head: NIL,
            tail: NIL,
        }
    }

    /// Add entry `len()`, not yet linked.
    pub fn add_entry(&mut self) {
        self.prev.push(NIL);
        self.next.push(NIL);
    }

    /// The least recently used linked entry (`NIL` when none).
    #[inline]
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// Link entry `i` (not linked) as the most recently used.
    #[inline]
    pub fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }

    /// Take linked entry `i` out of the order.
    #[inline]
    pub fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    /// Make linked entry `i` the most recently used.
    #[inline]
    pub fn touch(&mut self, i: u32) {
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The order equals a vector kept most recent first, through
        /// touches, removals of the least recent and re-insertions.
        #[test]
        fn order_equals_a_recency_vector(
            ops in proptest::collection::vec((0u8..3, 0u32..8), 1..300),
        ) {
            let mut o = LruOrder::with_capacity(8);
            let mut r: Vec<u32> = Vec::new();
            for _ in 0..8 {
                o.add_entry();
            }
            for (op, i) in ops {
                match op {
                    // Use `i`: linked -> touch, else link.
                    0 | 1 => {
                        if let Some(k) = r.iter().position(|&x| x == i) {
                            o.touch(i);
                            r.remove(k);
                        } else {
                            o.push_front(i);
                        }
                        r.insert(0, i);
                    }
                    // Drop the least recent.
                    _ => {
                        if let Some(v) = r.pop() {
                            proptest::prop_assert_eq!(o.tail(), v);
                            o.unlink(v);
                        }
                    }
                }
                proptest::prop_assert_eq!(o.tail(), r.last().copied().unwrap_or(NIL));
                proptest::prop_assert_eq!(o.head, r.first().copied().unwrap_or(NIL));
            }
        }
    }
}
