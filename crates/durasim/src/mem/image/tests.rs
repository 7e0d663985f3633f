//! Images and overlays: round trips, isolation of clones and overlays,
//! dependent pages on either side, and proptests against a byte map.

use super::*;

#[test]
fn cross_page_roundtrip_and_overlay_isolation() {
    let mut img = SparseImage::new();
    let data: Vec<u8> = (0..200u8).collect();
    img.write_bytes(PAGE_BYTES - 100, &data);
    let mut back = vec![0u8; 200];
    img.read_bytes(PAGE_BYTES - 100, &mut back);
    assert_eq!(back, data);
    assert_eq!(img.touched_pages(), 2);

    let mut ov = Overlay::new(&img);
    ov.write_u64(PAGE_BYTES - 100, 0xdead_beef);
    assert_eq!(ov.read_u64(PAGE_BYTES - 100), 0xdead_beef);
    assert_eq!(
        img.read_u64(PAGE_BYTES - 100),
        u64::from_le_bytes(data[..8].try_into().unwrap())
    );
    assert_eq!(ov.read_u64(PAGE_BYTES - 92), img.read_u64(PAGE_BYTES - 92));
}

#[test]
fn overlay_words_read_what_the_bytes_say() {
    let mut img = SparseImage::new();
    let data: Vec<u8> = (0..=255u8).cycle().take(3 * PAGE_BYTES as usize).collect();
    img.write_bytes(0, &data);
    let mut ov = Overlay::new(&img);
    // Written lines, partly written lines, untouched lines and pages,
    // and words straddling a line or a page.
    ov.write_bytes(PAGE_BYTES + 60, &[0xaa; 72]);
    ov.write_u64(2 * PAGE_BYTES + 8, 7);
    for a in (0..4 * PAGE_BYTES - 8).step_by(4) {
        let mut b = [0u8; 8];
        ov.read_bytes(a, &mut b);
        assert_eq!(ov.read_u64(a), u64::from_le_bytes(b), "{a:#x}");
    }
    assert_eq!(ov.read_u64(2 * PAGE_BYTES + 8), 7);
}

#[test]
fn page_cache_never_serves_freed_pages_and_clones_are_independent() {
    let mut img = SparseImage::new();
    // Pages 3 and 3 + PAGE_CACHE_ENTRIES share a cache entry.
    let far = (PAGE_CACHE_ENTRIES as u64 + 3) * PAGE_BYTES;
    img.write_u64(3 * PAGE_BYTES, 7);
    assert_eq!(img.read_u64(3 * PAGE_BYTES), 7);
    img.write_u64(far, 9);
    assert_eq!((img.read_u64(3 * PAGE_BYTES), img.read_u64(far)), (7, 9));
    img.zero_range(far, PAGE_BYTES);
    assert!(img.page(PAGE_CACHE_ENTRIES as u64 + 3).is_none());
    assert_eq!(img.read_u64(far), 0);
    img.write_u64(far + 8, 1);
    assert_eq!((img.read_u64(far), img.read_u64(far + 8)), (0, 1));
    assert_eq!(img.page_numbers(), vec![3, PAGE_CACHE_ENTRIES as u64 + 3]);
    let mut c = img.clone();
    c.write_u64(3 * PAGE_BYTES, 10);
    img.write_u64(far + 8, 2);
    assert_eq!(
        (img.read_u64(3 * PAGE_BYTES), c.read_u64(3 * PAGE_BYTES)),
        (7, 10)
    );
    assert_eq!((img.read_u64(far + 8), c.read_u64(far + 8)), (2, 1));
}

#[test]
fn dependent_pages_keep_their_bytes_on_either_side() {
    let mut a = SparseImage::new();
    a.write_u64(5 * PAGE_BYTES + 8, 11);
    a.write_u64(6 * PAGE_BYTES, 12);
    let mut b = SparseImage::new();
    // b's own page 5 and a's write cache entries exist before linking.
    b.write_u64(5 * PAGE_BYTES + 16, 99);
    // SAFETY: one thread.
    unsafe {
        assert!(b.link_page(5, &mut a) && b.link_page(6, &mut a));
        assert!(!b.link_page(7, &mut a));
    }
    assert_eq!(b.lines_shared_with(5, &a, 5), Some(64));
    assert_eq!(b.shared_pages(), 2);
    assert_eq!(b.stored(), (0.0, 0));
    // The linked page replaced b's own bytes.
    let rd = |i: &SparseImage, x| i.read_u64(x);
    assert_eq!(
        (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 16)),
        (11, 0)
    );
    // A write to the base (its write cache held page 5) saves the old
    // line into b first: one line stored, 63 still shared.
    a.write_u64(5 * PAGE_BYTES + 8, 21);
    assert_eq!(
        (rd(&a, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 8)),
        (21, 11)
    );
    assert_eq!(b.lines_shared_with(5, &a, 5), Some(63));
    // A second write to the same line takes the fast path (line no
    // longer shared) and b still reads the saved line.
    a.write_u64(5 * PAGE_BYTES + 16, 22);
    assert_eq!(rd(&b, 5 * PAGE_BYTES + 16), 0);
    // A write to b stores the line in b only.
    b.write_u64(6 * PAGE_BYTES + 64, 23);
    assert_eq!(
        (rd(&a, 6 * PAGE_BYTES + 64), rd(&b, 6 * PAGE_BYTES + 64)),
        (0, 23)
    );
    assert_eq!(b.stored(), (0.0, 2));
    // Equal lines are shared again, differing ones are kept.
    a.write_u64(6 * PAGE_BYTES + 64, 23);
    // SAFETY: one thread.
    assert_eq!(unsafe { b.link_equal_lines(6, &mut a, 6) }, 64);
    assert_eq!(unsafe { b.link_equal_lines(5, &mut a, 5) }, 63);
    // A page stored whole becomes a dependent keeping its differing
    // lines only.
    let mut c = SparseImage::new();
    c.write_u64(5 * PAGE_BYTES + 8, 11);
    c.write_u64(9 * PAGE_BYTES, 1);
    let mut d = SparseImage::new();
    d.write_u64(5 * PAGE_BYTES + 8, 12);
    d.write_u64(9 * PAGE_BYTES, 1);
    // SAFETY: one thread.
    unsafe {
        assert_eq!(d.link_equal_lines(5, &mut c, 5), 63);
        assert_eq!(d.link_equal_lines(9, &mut c, 9), 64);
    }
    assert_eq!(d.stored(), (0.0, 1));
    assert_eq!(rd(&d, 5 * PAGE_BYTES + 8), 12);
    // Zeroing the base's page (whole) detaches: b keeps its bytes.
    a.zero_range(6 * PAGE_BYTES, PAGE_BYTES);
    assert_eq!((rd(&a, 6 * PAGE_BYTES), rd(&b, 6 * PAGE_BYTES)), (0, 12));
    assert_eq!(b.lines_shared_with(6, &a, 6), None);
    // Clones copy dependent pages and bases: independent of the link.
    let bc = b.clone();
    let ac = a.clone();
    a.write_u64(5 * PAGE_BYTES + 24, 5);
    assert_eq!(
        (rd(&bc, 5 * PAGE_BYTES + 24), rd(&ac, 5 * PAGE_BYTES + 24)),
        (0, 0)
    );
    assert_eq!(rd(&b, 5 * PAGE_BYTES + 24), 0);
    // Dropping the base leaves the dependent intact, and vice versa.
    drop(a);
    assert_eq!(
        (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 6 * PAGE_BYTES)),
        (11, 12)
    );
    drop(d);
    c.write_u64(5 * PAGE_BYTES + 8, 3);
    assert_eq!(rd(&c, 5 * PAGE_BYTES + 8), 3);
}

#[test]
fn a_base_page_keeps_several_dependents() {
    let rd = |i: &SparseImage, x| i.read_u64(x);
    let mut a = SparseImage::new();
    a.write_u64(5 * PAGE_BYTES + 8, 11);
    a.write_u64(5 * PAGE_BYTES + 64, 12);
    // b: page 5 linked whole; c: its page 40 holds a's page 5 but line
    // 0 (a DRAM cache slot depending on another page number).
    let (mut b, mut c) = (SparseImage::new(), SparseImage::new());
    c.write_u64(40 * PAGE_BYTES + 64, 12);
    c.write_u64(40 * PAGE_BYTES + 8, 7);
    // SAFETY: one thread.
    unsafe {
        assert!(b.link_page(5, &mut a));
        assert_eq!(c.link_equal_lines(40, &mut a, 5), 63);
    }
    assert_eq!(b.lines_shared_with(5, &a, 5), Some(64));
    assert_eq!(c.lines_shared_with(40, &a, 5), Some(63));
    assert_eq!(c.lines_shared_with(40, &a, 40), None);
    // A write to the base saves the old line into both dependents.
    a.write_u64(5 * PAGE_BYTES + 72, 13);
    assert_eq!(
        (rd(&b, 5 * PAGE_BYTES + 72), rd(&c, 40 * PAGE_BYTES + 72)),
        (0, 0)
    );
    assert_eq!(
        (rd(&b, 5 * PAGE_BYTES + 64), rd(&c, 40 * PAGE_BYTES + 64)),
        (12, 12)
    );
    assert_eq!(c.lines_shared_with(40, &a, 5), Some(62));
    // c's page becomes a block again, then depends on another page.
    c.unlink_page(40);
    assert_eq!(c.lines_shared_with(40, &a, 5), None);
    assert_eq!(rd(&c, 40 * PAGE_BYTES + 8), 7);
    a.write_u64(9 * PAGE_BYTES + 8, 7);
    // SAFETY: one thread.
    assert_eq!(unsafe { c.link_equal_lines(40, &mut a, 9) }, 63);
    // Linked elsewhere: re-linking to page 5 stores the page whole
    // first (it still reads the same bytes).
    // SAFETY: one thread.
    assert_eq!(unsafe { c.link_equal_lines(40, &mut a, 5) }, 62);
    assert_eq!(c.lines_shared_with(40, &a, 9), None);
    assert_eq!(rd(&c, 40 * PAGE_BYTES + 8), 7);
    // One dependent leaves (the base drops it at its next write); the
    // other still gets the saved lines.
    drop(c);
    a.write_u64(5 * PAGE_BYTES + 128, 14);
    assert_eq!(rd(&b, 5 * PAGE_BYTES + 128), 0);
    assert_eq!(b.lines_shared_with(5, &a, 5), Some(62));
    // The base leaves: the dependent keeps its bytes.
    drop(a);
    assert_eq!(
        (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 128)),
        (11, 0)
    );
}

#[test]
fn written_pages_are_tracked_once_per_period() {
    let mut a = SparseImage::new();
    a.set_track_written(true);
    a.write_u64(0, 1);
    a.write_u64(8, 2);
    a.write_u64(3 * PAGE_BYTES, 3);
    let mut w = a.take_written();
    w.sort_unstable();
    assert_eq!(w, vec![0, 3]);
    // The write cache is cleared: the next write is seen again.
    a.write_u64(16, 4);
    assert_eq!(a.take_written(), vec![0]);
    let _ = a.read_u64(3 * PAGE_BYTES);
    assert!(a.take_written().is_empty());
}

/// Three images, each with its byte map, under writes, zeroing, links
/// of a page to another image's (forced, or of the equal lines, also to
/// a page of another number), block sharing and clones: a base page may
/// have several dependents, and no page sees another image's writes.
#[derive(Clone, Debug)]
enum Op2 {
    Write {
        img: usize,
        page: u64,
        off: u64,
        len: usize,
        seed: u8,
    },
    Zero {
        img: usize,
        page: u64,
        whole: bool,
    },
    Link {
        dep: usize,
        base: usize,
        page: u64,
    },
    LinkEqual {
        dep: usize,
        base: usize,
        page: u64,
        base_page: u64,
    },
    Unlink {
        img: usize,
        page: u64,
    },
    Share {
        dst: usize,
        src: usize,
        page: u64,
    },
    CloneSwap {
        img: usize,
    },
    CloneKeep {
        img: usize,
    },
}

const IMGS: usize = 3;

fn op2() -> impl proptest::strategy::Strategy<Value = Op2> {
    use proptest::prelude::*;
    // Few pages, two far-apart groups (page-cache aliases); writes
    // mostly to few lines, as a program's stores.
    let page = (0..2u64, 0..6u64).prop_map(|(g, p)| g * PAGE_CACHE_ENTRIES as u64 + p);
    let off = prop_oneof![
        0..PAGE_BYTES,
        (0..4u64, 0..64u64).prop_map(|(l, o)| l * 64 + o)
    ];
    // Two distinct images.
    let pair = (0..IMGS, 1..IMGS).prop_map(|(d, k)| (d, (d + k) % IMGS));
    prop_oneof![
        8 => (0..IMGS, page.clone(), off, prop_oneof![1..9usize, 1..200usize], any::<u8>())
            .prop_map(|(img, page, off, len, seed)| Op2::Write { img, page, off, len, seed }),
        1 => (0..IMGS, page.clone(), any::<bool>())
            .prop_map(|(img, page, whole)| Op2::Zero { img, page, whole }),
        2 => (pair.clone(), page.clone()).prop_map(|((dep, base), page)| Op2::Link { dep, base, page }),
        3 => (pair.clone(), page.clone(), page.clone(), any::<bool>()).prop_map(
            |((dep, base), page, other, same)| Op2::LinkEqual {
                dep,
                base,
                page,
                base_page: if same { page } else { other },
            }
        ),
        1 => (0..IMGS, page.clone()).prop_map(|(img, page)| Op2::Unlink { img, page }),
        1 => (pair, page).prop_map(|((dst, src), page)| Op2::Share { dst, src, page }),
        1 => (0..IMGS).prop_map(|img| Op2::CloneSwap { img }),
        1 => (0..IMGS).prop_map(|img| Op2::CloneKeep { img }),
    ]
}

/// Two distinct images of `imgs`, mutably.
fn two(imgs: &mut [SparseImage; IMGS], i: usize, j: usize) -> (&mut SparseImage, &mut SparseImage) {
    assert_ne!(i, j);
    let [a, b, c] = imgs;
    match (i, j) {
        (0, 1) => (a, b),
        (0, 2) => (a, c),
        (1, 0) => (b, a),
        (1, 2) => (b, c),
        (2, 0) => (c, a),
        _ => (c, b),
    }
}

proptest::proptest! {
    /// Images with dependent pages and clones read back exactly what
    /// plain byte maps say, whatever is shared; re-linking shares every
    /// equal line.
    #[test]
    fn linked_images_equal_byte_maps(ops in proptest::collection::vec(op2(), 1..150)) {
        let mut imgs: [SparseImage; IMGS] = Default::default();
        let mut models: [Vec<u8>; IMGS] = Default::default();
        let mut kept: Vec<(SparseImage, Vec<u8>)> = Vec::new();
        let span = 2 * PAGE_CACHE_ENTRIES as u64 * PAGE_BYTES;
        let idx = |a: u64| a as usize;
        for m in models.iter_mut() {
            m.resize(idx(span), 0);
        }
        let page_range = |p: u64| idx(p * PAGE_BYTES)..idx((p + 1) * PAGE_BYTES);
        let check = |img: &SparseImage, m: &[u8], p: u64| {
            let mut buf = vec![0u8; PAGE_BYTES as usize];
            img.read_bytes(p * PAGE_BYTES, &mut buf);
            assert!(buf[..] == m[page_range(p)], "page {p}");
        };
        for o in ops {
            let touched = match o {
                Op2::Write { img, page, off, len, seed } => {
                    let addr = page * PAGE_BYTES + off;
                    let len = len.min(idx(span - addr));
                    let data: Vec<u8> = (0..len).map(|k| seed.wrapping_add(k as u8)).collect();
                    if len == 8 {
                        imgs[img].write_u64(addr, u64::from_le_bytes(data[..].try_into().unwrap()));
                    } else {
                        imgs[img].write_bytes(addr, &data);
                    }
                    models[img][idx(addr)..idx(addr) + len].copy_from_slice(&data);
                    page
                }
                Op2::Zero { img, page, whole } => {
                    let (a, n) = if whole { (page * PAGE_BYTES, PAGE_BYTES) } else { (page * PAGE_BYTES + 100, 300) };
                    imgs[img].zero_range(a, n);
                    models[img][idx(a)..idx(a + n)].fill(0);
                    page
                }
                Op2::Link { dep, base, page } => {
                    let (d, b) = two(&mut imgs, dep, base);
                    // SAFETY: one thread.
                    if unsafe { d.link_page(page, b) } {
                        let src: Vec<u8> = models[base][page_range(page)].to_vec();
                        models[dep][page_range(page)].copy_from_slice(&src);
                        proptest::prop_assert_eq!(d.lines_shared_with(page, b, page), Some(64));
                    }
                    page
                }
                Op2::LinkEqual { dep, base, page, base_page } => {
                    let (d, b) = two(&mut imgs, dep, base);
                    let (md, mb) = (&models[dep][page_range(page)], &models[base][page_range(base_page)]);
                    let equal = md.chunks(LINE).zip(mb.chunks(LINE)).filter(|(l, r)| l == r).count() as u32;
                    // SAFETY: one thread.
                    let n = unsafe { d.link_equal_lines(page, b, base_page) };
                    // Linked: exactly the equal lines are shared.
                    if n > 0 {
                        proptest::prop_assert_eq!(n, equal);
                        proptest::prop_assert_eq!(d.lines_shared_with(page, b, base_page), Some(n));
                    }
                    check(b, &models[base], base_page);
                    page
                }
                Op2::Unlink { img, page } => {
                    imgs[img].unlink_page(page);
                    page
                }
                Op2::Share { dst, src, page } => {
                    let (d, b) = two(&mut imgs, dst, src);
                    if d.share_page(page, b, page) {
                        let bytes: Vec<u8> = models[src][page_range(page)].to_vec();
                        models[dst][page_range(page)].copy_from_slice(&bytes);
                    }
                    page
                }
                Op2::CloneSwap { img } => {
                    // The clone replaces the original, which is dropped.
                    imgs[img] = imgs[img].clone();
                    0
                }
                Op2::CloneKeep { img } => {
                    kept.push((imgs[img].clone(), models[img].clone()));
                    0
                }
            };
            for (img, m) in imgs.iter().zip(&models) {
                check(img, m, touched);
            }
        }
        for (img, m) in imgs.iter().zip(&models).chain(kept.iter().map(|(i, m)| (i, m))) {
            let mut buf = vec![0u8; idx(span)];
            img.read_bytes(0, &mut buf);
            proptest::prop_assert!(buf == *m);
        }
    }
}

/// Operations on a small address window that spans more pages than a
/// chunk and several page-cache aliases.
#[derive(Clone, Debug)]
enum Op {
    Write { addr: u64, len: usize, seed: u8 },
    Zero { addr: u64, len: u64 },
    Clone,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let window = 192 * PAGE_BYTES;
    // Addresses in two far-apart windows (page-cache aliases).
    let addr = (0..2u64, 0..window).prop_map(|(w, a)| w * (1 << 39) + a);
    prop_oneof![
        4 => (addr.clone(), 1..300usize, any::<u8>())
            .prop_map(|(addr, len, seed)| Op::Write { addr, len, seed }),
        // Mostly whole pages, so pages are freed and reused.
        2 => (addr, 0..3u64, 0..2u64).prop_map(|(a, pages, partial)| Op::Zero {
            addr: a / PAGE_BYTES * PAGE_BYTES + partial * 100,
            len: pages * PAGE_BYTES + partial * 50,
        }),
        1 => Just(Op::Clone),
    ]
}

proptest::proptest! {
    /// The chunked image (with page reuse and the page cache) reads
    /// back exactly what a byte map says, and a clone is an independent
    /// copy.
    #[test]
    fn equals_a_byte_map(ops in proptest::collection::vec(op(), 1..120)) {
        use std::collections::BTreeMap;
        let mut img = SparseImage::new();
        let mut model: BTreeMap<u64, u8> = BTreeMap::new();
        let mut clones: Vec<(SparseImage, BTreeMap<u64, u8>)> = Vec::new();
        let check = |img: &SparseImage, model: &BTreeMap<u64, u8>, addr: u64, len: usize| {
            let mut buf = vec![0xAAu8; len];
            img.read_bytes(addr, &mut buf);
            for (k, &b) in buf.iter().enumerate() {
                let want = model.get(&(addr + k as u64)).copied().unwrap_or(0);
                assert_eq!(b, want, "byte at {:#x}", addr + k as u64);
            }
        };
        for o in ops {
            match o {
                Op::Write { addr, len, seed } => {
                    let data: Vec<u8> =
                        (0..len).map(|k| seed.wrapping_add(k as u8) | 1).collect();
                    img.write_bytes(addr, &data);
                    for (k, &b) in data.iter().enumerate() {
                        model.insert(addr + k as u64, b);
                    }
                    check(&img, &model, addr.saturating_sub(64), len + 128);
                }
                Op::Zero { addr, len } => {
                    img.zero_range(addr, len);
                    for a in addr..addr + len {
                        model.remove(&a);
                    }
                    check(&img, &model, addr, len as usize + 64);
                }
                Op::Clone => clones.push((img.clone(), model.clone())),
            }
        }
        for (&a, _) in model.iter().step_by(7) {
            check(&img, &model, a, 1);
        }
        let live_pages: std::collections::BTreeSet<u64> =
            model.keys().map(|a| a / PAGE_BYTES).collect();
        for p in &live_pages {
            proptest::prop_assert!(img.page(*p).is_some());
        }
        for (c, m) in &clones {
            for (&a, _) in m.iter().step_by(5) {
                check(c, m, a, 1);
            }
            for (&a, _) in model.iter().step_by(11) {
                check(c, m, a, 1);
            }
        }
    }
}

proptest::proptest! {
    /// The word-at-a-time line compare is `==` on the bytes, a difference
    /// in any one byte (or none) included.
    #[test]
    fn lines_equal_is_byte_equality(
        a in proptest::array::uniform32(proptest::prelude::any::<u8>()),
        b in proptest::array::uniform32(proptest::prelude::any::<u8>()),
        at in 0..LINE + 1,
        flip in 1..=255u8,
    ) {
        let mut x = [0u8; LINE];
        x[..32].copy_from_slice(&a);
        x[32..].copy_from_slice(&b);
        let mut y = x;
        if at < LINE {
            y[at] ^= flip;
        }
        proptest::prop_assert_eq!(block::lines_equal(&x, &y), x == y);
        proptest::prop_assert_eq!(block::lines_equal(&x, &x), true);
    }
}
