//! Word labels: which data structure, and which field of it, a word of a
//! thread's region belongs to ("btree node at 0x1a00, field keys[3]"), for
//! the crash test's violation messages.
//!
//! Derived after the fact from an image and the workload's layout: each
//! workload's [`DescribeFn`] (its `WorkloadInfo::describe`) walks its
//! structure from the root object, as its checker does, and names the
//! object holding the word. Nothing is recorded during a run, so labels
//! cost no host time and change no simulated byte, metric or timing; a
//! crash test asks only for its first violation's word. The region header,
//! the `workload.copies` header, the unused and the unallocated parts of a
//! region are named here, for every workload ([`describe_word`]).

use super::{COPIES_MAGIC, HDR_COPIES, HDR_COPY_BYTES, HDR_HEAP_CURSOR, HDR_MAGIC};
use super::{HEAP_OFFSET, MAX_COPIES, REGION_MAGIC, ROOT_OFFSET};
use crate::mem::MemRead;
use crate::types::Addr;

/// The object a word belongs to and the word's field in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// The structure: "btree node", "hashmap bucket array", "tpcc STOCK
    /// row 17".
    pub what: String,
    /// Address of the object's first byte.
    pub start: Addr,
    /// The word's field: "keys[3]", "payload word 2", "head".
    pub field: String,
}

impl Label {
    pub fn new(what: impl Into<String>, start: Addr, field: impl Into<String>) -> Self {
        Label {
            what: what.into(),
            start,
            field: field.into(),
        }
    }
}

/// Names the object of the workload's structure holding the word at
/// `addr` of the region at `region_base`, as the image `img` lays it out
/// (`item_bytes` as the checker gets it: 0 is the workload's default), or
/// `None` when the word is in none (an unused word of the root object, an
/// object no pointer reaches). Walks like the checker, with its bounds:
/// never panics or loops on any image.
pub type DescribeFn =
    fn(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label>;

/// The word at `addr` of the thread region at `thread_base` in `img`,
/// named for a message: the region or copies header, the workload's
/// object (offsets relative to `thread_base`), or what part of the region
/// the word lies in when no object holds it.
pub fn describe_word(
    describe: DescribeFn,
    img: &dyn MemRead,
    thread_base: Addr,
    item_bytes: u64,
    addr: Addr,
) -> String {
    let magic = img.read_u64(thread_base + HDR_MAGIC);
    if magic == COPIES_MAGIC {
        let n = img.read_u64(thread_base + HDR_COPIES);
        let cb = img.read_u64(thread_base + HDR_COPY_BYTES);
        let off = addr - thread_base;
        if off < HEAP_OFFSET {
            return match off {
                HDR_MAGIC => "copies header, magic".into(),
                HDR_COPIES => "copies header, copy count".into(),
                HDR_COPY_BYTES => "copies header, bytes per copy".into(),
                _ => format!("copies header, unused word {}", off / 8),
            };
        }
        let i = (off - HEAP_OFFSET).checked_div(cb).unwrap_or(u64::MAX);
        if !(2..=MAX_COPIES).contains(&n) || i >= n {
            return "multi-copy region, outside every copy".into();
        }
        let base = thread_base + HEAP_OFFSET + i * cb;
        return format!(
            "copy {i}: {}",
            in_region(describe, img, thread_base, base, item_bytes, addr)
        );
    }
    in_region(describe, img, thread_base, thread_base, item_bytes, addr)
}

/// [`describe_word`] for a crash violation: the word as the image of the
/// closest committed prefix lays it out; a word outside every object there
/// (an item or node a later transaction allocates) is named from
/// `later()` as well: the first later transaction of the thread that wrote
/// the word, and the image after it.
pub fn describe_violation_word<I: MemRead>(
    describe: DescribeFn,
    prefix_img: &dyn MemRead,
    later: impl FnOnce() -> Option<(usize, I)>,
    thread_base: Addr,
    item_bytes: u64,
    addr: Addr,
) -> String {
    let here = describe_word(describe, prefix_img, thread_base, item_bytes, addr);
    if !(here.contains("unallocated heap") || here.contains("allocated heap that")) {
        return here;
    }
    match later() {
        Some((j, img)) => format!(
            "{here} in the prefix's image; {} once its transaction {j} wrote it",
            describe_word(describe, &img, thread_base, item_bytes, addr)
        ),
        None => here,
    }
}

/// [`describe_word`] in one instance's region at `base` (the thread's
/// region, or one copy of it).
fn in_region(
    describe: DescribeFn,
    img: &dyn MemRead,
    thread_base: Addr,
    base: Addr,
    item_bytes: u64,
    addr: Addr,
) -> String {
    let off = addr - base;
    if off < ROOT_OFFSET {
        return match off {
            HDR_MAGIC => "region header, magic".into(),
            HDR_HEAP_CURSOR => "region header, heap cursor".into(),
            _ => format!("region header, unused word {}", off / 8),
        };
    }
    let heap_valid = img.read_u64(base + HDR_MAGIC) == REGION_MAGIC;
    let cursor = img.read_u64(base + HDR_HEAP_CURSOR);
    if off >= HEAP_OFFSET && heap_valid && addr >= cursor {
        return format!(
            "unallocated heap (the heap cursor is at {:#x})",
            cursor.wrapping_sub(thread_base)
        );
    }
    match describe(img, base, item_bytes, addr) {
        Some(l) => format!(
            "{} at {:#x}, field {}",
            l.what,
            l.start.wrapping_sub(thread_base),
            l.field
        ),
        None if off < HEAP_OFFSET => format!("root area, unused word {}", (off - ROOT_OFFSET) / 8),
        None if !heap_valid => "heap (the region header's magic is not valid here)".into(),
        None => "allocated heap that no pointer from the root reaches (an unlinked object)".into(),
    }
}

/// The workload's root object's word at `addr`: word `i` (at `ROOT_OFFSET
/// + 8 i`) is `names[i]`; `None` beyond them.
pub fn root_word(workload: &str, region_base: Addr, addr: Addr, names: &[&str]) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    let i = addr.checked_sub(root)? / 8;
    let name = names.get(i as usize)?;
    Some(Label::new(format!("{workload} root"), root, *name))
}

/// Element `i` of the array of `n` elements of `elem_bytes` at `base`
/// holding `addr`, and `addr`'s byte offset in it.
#[inline]
pub fn array_slot(addr: Addr, base: Addr, elem_bytes: u64, n: u64) -> Option<(u64, u64)> {
    let off = addr.checked_sub(base)?;
    if elem_bytes == 0 {
        return None;
    }
    let i = off / elem_bytes;
    (i < n).then_some((i, off % elem_bytes))
}

/// Whether `addr` lies in the object of `bytes` at `start`.
#[inline]
pub fn within(addr: Addr, start: Addr, bytes: u64) -> bool {
    addr >= start && addr - start < bytes
}

/// The field at byte `off` of a self-validating item (key, seal, payload).
pub fn item_field(off: u64) -> String {
    match off / 8 {
        0 => "key".into(),
        1 => "seal (version, checksum)".into(),
        w => format!("payload word {}", w - 2),
    }
}

/// The field at byte `off` of a record whose word `i` is `names[i]`
/// ("word i" beyond them).
pub fn word_field(names: &[&str], off: u64) -> String {
    let i = off / 8;
    match names.get(i as usize) {
        Some(n) => (*n).into(),
        None => format!("word {i}"),
    }
}

/// Element `i` of an array of words at `base` (`n` of them) holding
/// `addr`, labelled `what` with the field `name[i]`.
pub fn word_array(what: &str, base: Addr, n: u64, addr: Addr, name: &str) -> Option<Label> {
    let (i, _) = array_slot(addr, base, 8, n)?;
    Some(Label::new(what, base, format!("{name}[{i}]")))
}

/// The allocated heap of a region as a walk bounds it: objects must lie in
/// `[lo, hi)`, and a walk visits at most as many objects as fit.
#[derive(Clone, Copy)]
pub struct Heap {
    pub lo: Addr,
    pub hi: Addr,
}

impl Heap {
    /// The heap of the region at `region_base`, if its header is valid.
    pub fn of(img: &dyn MemRead, region_base: Addr) -> Option<Heap> {
        super::heap_bounds(img, region_base)
            .ok()
            .map(|(lo, hi)| Heap { lo, hi })
    }

    /// Whether `[p, p + bytes)` is an allocated object (64 B aligned, as
    /// the allocator places them).
    #[inline]
    pub fn holds(&self, p: Addr, bytes: u64) -> bool {
        super::check_ptr(p, bytes, (self.lo, self.hi), "").is_ok()
    }

    /// The bucket array of a chained hash table whose root holds its
    /// bucket count at `count_at` and its address at `array_at`: (array,
    /// buckets), if the array lies in the heap.
    pub fn bucket_array(
        &self,
        img: &dyn MemRead,
        count_at: Addr,
        array_at: Addr,
    ) -> Option<(Addr, u64)> {
        let nb = img.read_u64(count_at);
        let buckets = img.read_u64(array_at);
        self.holds(buckets, nb.saturating_mul(8))
            .then_some((buckets, nb))
    }

    /// Most objects of at least `bytes` the heap can hold (a walk's budget
    /// against cycles).
    pub fn max_objects(&self, bytes: u64) -> u64 {
        (self.hi - self.lo) / bytes.max(8) + 1
    }
}

/// Follow the singly linked list from `first` (`next` at byte offset
/// `next_off` of each node of `node_bytes`), bounded by the heap: the node
/// holding `addr`, with its position in the list.
pub fn find_in_list(
    img: &dyn MemRead,
    heap: Heap,
    first: Addr,
    node_bytes: u64,
    next_off: u64,
    addr: Addr,
) -> Option<(Addr, u64)> {
    let mut n = first;
    let mut budget = heap.max_objects(node_bytes);
    let mut pos = 0;
    while n != 0 && budget > 0 && heap.holds(n, node_bytes) {
        if within(addr, n, node_bytes) {
            return Some((n, pos));
        }
        n = img.read_u64(n + next_off);
        budget -= 1;
        pos += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemWrite, SparseImage};
    use crate::workloads::testutil::{args, run_direct, with_ctx, BASE};
    use crate::workloads::{find, Op, WorkloadInfo, REGISTRY};

    fn name(info: &WorkloadInfo, img: &SparseImage, item_bytes: u64, addr: Addr) -> String {
        describe_word(info.describe, img, BASE, item_bytes, addr)
    }

    /// What a word outside every object of the structure is named.
    const UNNAMED: [&str; 4] = [
        "unused word",
        "unallocated heap",
        "allocated heap that",
        "not valid",
    ];

    /// The distinct words `ops` stores to.
    fn stored(ops: &[Op]) -> Vec<Addr> {
        let mut w: Vec<Addr> = ops
            .iter()
            .filter_map(|o| match o {
                Op::Store { addr, .. } => Some(*addr),
                _ => None,
            })
            .collect();
        w.sort_unstable();
        w.dedup();
        w
    }

    fn assert_named(info: &WorkloadInfo, img: &SparseImage, ops: &[Op], when: &str) {
        for a in stored(ops) {
            let n = name(info, img, 64, a);
            assert!(
                !UNNAMED.iter().any(|u| n.contains(u)),
                "{} {when}: word {:#x} is named '{n}'",
                info.name,
                a - BASE
            );
        }
    }

    /// Every word a workload stores, in its setup and in each transaction,
    /// is named as a field of its structure in the image right after.
    #[test]
    fn every_stored_word_is_named() {
        for info in REGISTRY {
            let a = args(64, 64, 60, 0.5);
            let mut img = SparseImage::new();
            let mut wl = (info.build)(&a);
            let (_, ops) = with_ctx(&mut img, true, |ctx| wl.setup(ctx));
            assert_named(info, &img, &ops, "setup");
            for k in 0..60 {
                let (_, ops) = with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
                assert_named(info, &img, &ops, &format!("transaction {k}"));
            }
        }
    }

    /// Crash images hold torn or stale words: naming a word of a corrupted
    /// image never panics or loops.
    #[test]
    fn naming_never_panics_on_corrupted_images() {
        use rand::Rng;
        for info in REGISTRY {
            let (img, _) = run_direct(info, &args(64, 64, 50, 0.5), 50);
            let hi = img.read_u64(BASE + HDR_HEAP_CURSOR);
            let mut r = crate::workloads::rng(3);
            for k in 0..100u64 {
                let mut bad = img.clone();
                let at = BASE + r.gen_range(0..(hi - BASE) / 8) * 8;
                bad.write_u64(at, if k % 2 == 0 { r.gen() } else { 0 });
                let probe = BASE + r.gen_range(0..(hi - BASE) / 8 + 64) * 8;
                name(info, &bad, 64, probe);
            }
        }
    }

    #[test]
    fn region_header_and_unallocated_heap() {
        let info = find("vector").unwrap();
        let (img, _) = run_direct(info, &args(64, 20, 10, 0.5), 10);
        assert_eq!(name(info, &img, 64, BASE), "region header, magic");
        assert_eq!(name(info, &img, 64, BASE + 8), "region header, heap cursor");
        assert_eq!(
            name(info, &img, 64, BASE + 16),
            "region header, unused word 2"
        );
        let cursor = img.read_u64(BASE + 8);
        assert_eq!(
            name(info, &img, 64, cursor + 64),
            format!(
                "unallocated heap (the heap cursor is at {:#x})",
                cursor - BASE
            )
        );
        // Root = { len, capacity, items_ptr }; items contiguous, 64 B each.
        assert_eq!(
            name(info, &img, 64, BASE + 0x40),
            "vector root at 0x40, field length"
        );
        assert_eq!(
            name(info, &img, 64, BASE + 0x58),
            "root area, unused word 3"
        );
        let items = img.read_u64(BASE + 0x50);
        assert_eq!(
            name(info, &img, 64, items + 5 * 64 + 24),
            format!(
                "vector element 5 at {:#x}, field payload word 1",
                items + 5 * 64 - BASE
            )
        );
    }

    /// B+-tree layout (btree.rs): root = { tree_root, count, height };
    /// node (256 B) = { meta = nkeys | leaf << 32, keys[15], ptrs[16] }.
    #[test]
    fn btree_labels() {
        let info = find("btree").unwrap();
        let (img, _) = run_direct(info, &args(64, 300, 50, 0.5), 50);
        let rd = |a| img.read_u64(a);
        let n = |a| name(info, &img, 64, a);
        let root = BASE + 0x40;
        assert_eq!(n(root), "btree root at 0x40, field root node pointer");
        assert_eq!(n(root + 16), "btree root at 0x40, field height");
        let top = rd(root);
        assert!(rd(root + 16) > 1, "300 keys need internal nodes");
        let at = top - BASE;
        assert_eq!(
            n(top),
            format!("btree internal node at {at:#x}, field meta (key count, leaf flag)")
        );
        assert_eq!(
            n(top + 8 + 3 * 8),
            format!("btree internal node at {at:#x}, field keys[3]")
        );
        assert_eq!(
            n(top + 128 + 8),
            format!("btree internal node at {at:#x}, field children[1]")
        );
        // Leftmost leaf: follow children[0].
        let mut leaf = top;
        while rd(leaf) >> 32 == 0 {
            leaf = rd(leaf + 128);
        }
        let at = leaf - BASE;
        assert_eq!(
            n(leaf + 15 * 8 + 128),
            format!("btree leaf node at {at:#x}, field next leaf")
        );
        assert_eq!(
            n(leaf + 128 + 16),
            format!("btree leaf node at {at:#x}, field items[2] (item pointer)")
        );
        let (key, item) = (rd(leaf + 8 + 16), rd(leaf + 128 + 16));
        assert_eq!(rd(item), key, "the item holds its leaf entry's key");
        assert_eq!(
            n(item + 8),
            format!(
                "btree item (key {key}) at {:#x}, field seal (version, checksum)",
                item - BASE
            )
        );
        assert_eq!(
            n(item + 40),
            format!(
                "btree item (key {key}) at {:#x}, field payload word 3",
                item - BASE
            )
        );
    }

    /// Hashmap layout: root = { nbuckets, buckets_ptr, count }; node =
    /// { item | next }.
    #[test]
    fn hashmap_labels() {
        let info = find("hashmap").unwrap();
        let (img, _) = run_direct(info, &args(64, 100, 50, 0.5), 50);
        let rd = |a| img.read_u64(a);
        let n = |a| name(info, &img, 64, a);
        assert_eq!(n(BASE + 0x50), "hashmap root at 0x40, field count");
        let buckets = rd(BASE + 0x48);
        let b = (0..rd(BASE + 0x40))
            .find(|&b| rd(buckets + b * 8) != 0)
            .unwrap();
        assert_eq!(
            n(buckets + b * 8),
            format!(
                "hashmap bucket array at {:#x}, field head[{b}]",
                buckets - BASE
            )
        );
        let e = rd(buckets + b * 8);
        let what = format!(
            "hashmap entry (bucket {b}, chain position 0) at {:#x}",
            e - BASE
        );
        assert_eq!(n(e), format!("{what}, field key"));
        assert_eq!(n(e + 64), format!("{what}, field next"));
        if let Some(e2) = Some(rd(e + 64)).filter(|&x| x != 0) {
            let what = format!(
                "hashmap entry (bucket {b}, chain position 1) at {:#x}",
                e2 - BASE
            );
            assert_eq!(n(e2 + 16), format!("{what}, field payload word 0"));
        }
    }

    /// Queue layout: root = { capacity, slots_ptr, head, tail }; ring of
    /// items.
    #[test]
    fn queue_labels() {
        let info = find("queue").unwrap();
        let (img, _) = run_direct(info, &args(64, 20, 30, 0.5), 30);
        let n = |a| name(info, &img, 64, a);
        assert_eq!(n(BASE + 0x50), "queue root at 0x40, field head");
        assert_eq!(n(BASE + 0x58), "queue root at 0x40, field tail");
        let slots = img.read_u64(BASE + 0x48);
        assert_eq!(
            n(slots + 3 * 64 + 16),
            format!(
                "queue ring slot 3 at {:#x}, field payload word 0",
                slots + 3 * 64 - BASE
            )
        );
    }

    /// YCSB layout: root = { n_records, n_slots, index_ptr }; index slot =
    /// { key, record_ptr }; records are items.
    #[test]
    fn ycsb_labels() {
        let info = find("ycsb").unwrap();
        let (img, _) = run_direct(info, &args(128, 50, 20, 0.5), 20);
        let rd = |a| img.read_u64(a);
        let n = |a| name(info, &img, 128, a);
        assert_eq!(n(BASE + 0x50), "ycsb root at 0x40, field index pointer");
        let index = rd(BASE + 0x50);
        let s = (0..rd(BASE + 0x48))
            .find(|&s| rd(index + s * 16) != 0)
            .unwrap();
        let slot = index + s * 16;
        assert_eq!(
            n(slot + 8),
            format!(
                "ycsb index slot {s} at {:#x}, field record pointer",
                slot - BASE
            )
        );
        let (key, rec) = (rd(slot), rd(slot + 8));
        assert_eq!(rd(rec), key);
        assert_eq!(
            n(rec + 120),
            format!(
                "ycsb record (key {key}, index slot {s}) at {:#x}, field payload word 13",
                rec - BASE
            )
        );
    }

    /// TPC-C: fixed 64 B rows behind the root's table pointers; orders
    /// through the order index, ORDER-LINE rows 128 B apart after the
    /// ORDER row.
    #[test]
    fn tpcc_labels() {
        let info = find("tpcc").unwrap();
        let (img, _) = run_direct(info, &args(0, 0, 40, 0.5), 40);
        let rd = |a| img.read_u64(a);
        let n = |a| name(info, &img, 0, a);
        let root = BASE + 0x40;
        assert_eq!(n(root + 72), "tpcc root at 0x40, field STOCK table pointer");
        let stock = rd(root + 72);
        assert_eq!(rd(stock + 5 * 64), 6, "STOCK row 5 holds s_i_id 6");
        assert_eq!(
            n(stock + 5 * 64 + 16),
            format!(
                "tpcc STOCK row 5 at {:#x}, field s_quantity",
                stock + 5 * 64 - BASE
            )
        );
        let districts = rd(root + 48);
        assert_eq!(
            n(districts + 2 * 64 + 32),
            format!(
                "tpcc DISTRICT row 2 at {:#x}, field d_next_o_id",
                districts + 128 - BASE
            )
        );
        // The first order of some district, its second line.
        let (index, mo) = (rd(root + 80), rd(root + 32));
        let d = (0..10).find(|&d| rd(index + d * mo * 8) != 0).unwrap();
        let oa = rd(index + d * mo * 8);
        let (dn, ol) = (d + 1, oa + 64 + 128);
        assert_eq!((rd(oa), rd(oa + 8)), (1, dn), "o_id 1 of district {dn}");
        assert_eq!(
            n(oa + 48),
            format!(
                "tpcc ORDER row (district {dn}, o_id 1) at {:#x}, field o_ol_cnt",
                oa - BASE
            )
        );
        assert_eq!(rd(ol + 24), 2, "ol_number");
        assert_eq!(
            n(ol + 32),
            format!(
                "tpcc ORDER-LINE row (district {dn}, o_id 1, ol_number 2) at {:#x}, field ol_i_id",
                ol - BASE
            )
        );
    }

    /// TATP: root = { P, then per table { nbuckets, buckets_ptr, count } };
    /// rows are items chained per bucket, `next` after the row.
    #[test]
    fn tatp_labels() {
        let info = find("tatp").unwrap();
        let (img, _) = run_direct(info, &args(0, 50, 30, 0.5), 30);
        let rd = |a| img.read_u64(a);
        let n = |a| name(info, &img, 0, a);
        let root = BASE + 0x40;
        assert_eq!(n(root), "tatp root at 0x40, field P (subscribers)");
        assert_eq!(
            n(root + 8 + 4 * 24 + 16),
            "tatp root at 0x40, field call_forwarding table's row count"
        );
        let (nb, buckets) = (rd(root + 8), rd(root + 16));
        let b = (0..nb).find(|&b| rd(buckets + b * 8) != 0).unwrap();
        let row = rd(buckets + b * 8);
        let s_id = rd(row);
        assert!((1..=50).contains(&s_id));
        let what = format!("tatp subscriber row (key {s_id:#x}) at {:#x}", row - BASE);
        assert_eq!(n(row + 64), format!("{what}, field vlr_location"));
        assert_eq!(
            n(row + 72),
            format!("{what}, field next"),
            "72 B rows, then the link"
        );
    }

    /// A word of an item the next transaction allocates lies beyond the
    /// prefix's heap cursor: named from the image after that transaction.
    #[test]
    fn a_word_beyond_the_prefix_is_named_from_a_later_image() {
        let info = find("btree").unwrap();
        let a = args(64, 10, 5, 0.0);
        let mut img = SparseImage::new();
        let mut wl = (info.build)(&a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let prefix = img.clone();
        let cursor = prefix.read_u64(BASE + HDR_HEAP_CURSOR);
        with_ctx(&mut img, false, |ctx| wl.run_tx(ctx));
        // update_ratio 0: an insert, whose item is the first allocation.
        assert_eq!(img.read_u64(BASE + HDR_HEAP_CURSOR), cursor + 64);
        let key = img.read_u64(cursor);
        let got = describe_violation_word(
            info.describe,
            &prefix,
            || Some((7, img.clone())),
            BASE,
            64,
            cursor + 16,
        );
        assert_eq!(
            got,
            format!(
                "unallocated heap (the heap cursor is at {0:#x}) in the prefix's image; btree item (key {key}) at {0:#x}, field payload word 0 once its transaction 7 wrote it",
                cursor - BASE
            )
        );
        // A word the prefix's structure holds is named from it alone.
        let never = || -> Option<(usize, SparseImage)> { panic!("not asked") };
        assert_eq!(
            describe_violation_word(info.describe, &prefix, never, BASE, 64, BASE + 0x48),
            "btree root at 0x40, field count"
        );
    }

    /// `workload.copies`: the copies header, then each copy's own region.
    #[test]
    fn copies_are_named() {
        let info = find("btree").unwrap();
        let a = args(64, 40, 0, 0.5);
        let mut img = SparseImage::new();
        let mut wl = crate::workloads::build(info, &a, 2);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        assert_eq!(name(info, &img, 64, BASE + 16), "copies header, copy count");
        let cb = img.read_u64(BASE + 24);
        let copy1 = BASE + HEAP_OFFSET + cb;
        assert_eq!(
            name(info, &img, 64, copy1 + 8),
            "copy 1: region header, heap cursor"
        );
        assert_eq!(
            name(info, &img, 64, copy1 + 0x48),
            format!(
                "copy 1: btree root at {:#x}, field count",
                copy1 + 0x40 - BASE
            )
        );
    }
}
