use super::*;
use proptest::prelude::*;

fn pattern_line() -> impl Strategy<Value = LineData> {
    let w = prop_oneof![
        any::<u64>(),
        Just(0u64),
        (-8i64..8).prop_map(|v| v as u64),
        any::<i8>().prop_map(|v| v as i64 as u64),
        any::<i16>().prop_map(|v| v as i64 as u64),
        any::<i32>().prop_map(|v| v as i64 as u64),
        any::<u8>().prop_map(|b| u64::from_le_bytes([b; 8])),
        (any::<i16>(), any::<i16>())
            .prop_map(|(a, b)| (a as i32 as u32 as u64) | (b as i32 as u32 as u64) << 32),
        any::<u32>().prop_map(|v| (v as u64) << 8),
    ];
    prop::array::uniform8(w).prop_map(|ws| {
        let mut l = [0u8; 64];
        for (i, w) in ws.iter().enumerate() {
            l[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        l
    })
}

fn random_line() -> impl Strategy<Value = LineData> {
    prop::array::uniform32(any::<u8>()).prop_flat_map(|a| {
        prop::array::uniform32(any::<u8>()).prop_map(move |b| {
            let mut l = [0u8; 64];
            l[..32].copy_from_slice(&a);
            l[32..].copy_from_slice(&b);
            l
        })
    })
}

const ENCODINGS: [Encoding; 4] = [
    Encoding::None,
    Encoding::Fpc,
    Encoding::Crade,
    Encoding::Slde,
];

proptest! {
    /// decode(encode(x)) == x for every encoder and purpose, whatever the
    /// line's previous cells held (cells past a stream keep old states).
    #[test]
    fn roundtrip_pattern_rich(old in pattern_line(), x in pattern_line(), p in 0usize..Purpose::COUNT) {
        for enc in ENCODINGS {
            let mut m = Media::new(enc, true, 3.0);
            let mut st = MediaStats::default();
            m.ensure(0, &old);
            prop_assert_eq!(m.stored(0).unwrap(), old);
            m.program(0, &x, Purpose::ALL[p], &mut st);
            prop_assert_eq!(m.stored(0).unwrap(), x, "{:?}", enc);
            prop_assert_eq!(m.roundtrip_decoded(&x, Purpose::ALL[p]), x);
        }
    }

    #[test]
    fn roundtrip_random(old in random_line(), x in random_line(), p in 0usize..Purpose::COUNT) {
        for enc in ENCODINGS {
            let mut m = Media::new(enc, true, 3.0);
            let mut st = MediaStats::default();
            m.ensure(0, &old);
            m.program(0, &x, Purpose::ALL[p], &mut st);
            prop_assert_eq!(m.stored(0).unwrap(), x, "{:?}", enc);
        }
    }

    /// The encoder (DLDC written once and kept when it wins) equals its
    /// size-first definition: stream, tags and counters, for every encoder
    /// and purpose, on log-like undo/redo pairs and on any line.
    #[test]
    fn encode_is_the_size_first_encode(x in pattern_line(), y in random_line(), p in 0usize..Purpose::COUNT, pair in any::<bool>()) {
        // An undo/redo pair per half line, redo = undo with a few bytes changed.
        let mut z = x;
        if pair {
            for h in [0, 16, 32, 48] {
                let (u, r) = (h, h + 8);
                let undo: [u8; 8] = y[u..u + 8].try_into().unwrap();
                z[u..u + 8].copy_from_slice(&undo);
                z[r..r + 8].copy_from_slice(&undo);
                z[r] ^= x[h];
            }
        }
        for data in [x, y, z, [0u8; 64]] {
            for enc in ENCODINGS {
                let purpose = Purpose::ALL[p];
                let got = encode(enc, &data, purpose);
                let want = reference::encode_sized_first(enc, &data, purpose);
                prop_assert_eq!(got.stream.words, want.stream.words, "{:?}", enc);
                prop_assert_eq!(got.stream.len, want.stream.len);
                prop_assert_eq!((got.kind, got.mode, got.log_meta), (want.kind, want.mode, want.log_meta));
                prop_assert_eq!((got.comp, got.clean_words), (want.comp, want.clean_words));
                let log = encode(enc, &data, Purpose::Log);
                let want = reference::encode_sized_first(enc, &data, Purpose::Log);
                prop_assert_eq!(log.stream.words, want.stream.words);
                prop_assert_eq!((log.stream.len, log.kind, log.mode, log.comp, log.clean_words),
                    (want.stream.len, want.kind, want.mode, want.comp, want.clean_words));
            }
        }
    }

    /// FPC alone: decode(encode(x)) == x and the size function agrees.
    #[test]
    fn fpc_roundtrip(x in pattern_line()) {
        let mut w = BitWriter::default();
        let n = fpc::encode(&x, &mut w);
        prop_assert_eq!(n, fpc::size_bits(&x));
        prop_assert_eq!(fpc::decode(&mut BitReader::new(&w)), x);
    }
}

/// Hand-computed TLC costs (MorLog Table III).
#[test]
fn tlc_cost_all_cells_to_111() {
    let m = Media::new(Encoding::None, true, 3.0);
    let mut st = MediaStats::default();
    let old = packed::pack(&[0u8; CELLS]);
    let new = packed::pack(&[7u8; CELLS]);
    let (ns, pj) = m.cost(&old, &new, Purpose::Log, &mut st);
    // Every one of the 174 cells goes to 111: 12.1 ns, 174 x 1.5 pJ.
    assert_eq!(CELLS, 174);
    assert_eq!(ns, 12.1);
    assert!((pj - 174.0 * 1.5).abs() < 1e-9);
    assert_eq!(st.cells_programmed[Purpose::Log.index()], 174);
    assert_eq!(st.bits_programmed[Purpose::Log.index()], 174 * 3);
    assert_eq!(st.cells_by_state[7], 174);
}

#[test]
fn tlc_cost_one_cell_flips() {
    let m = Media::new(Encoding::None, true, 3.0);
    let mut st = MediaStats::default();
    let old = [7u8; CELLS];
    let mut new = old;
    new[40] = 0b100;
    let (old, new) = (packed::pack(&old), packed::pack(&new));
    let (ns, pj) = m.cost(&old, &new, Purpose::WriteBack, &mut st);
    assert_eq!((ns, pj), (150.0, 35.6));
    assert_eq!(st.bits_programmed[Purpose::WriteBack.index()], 2);
    // Nothing changes: a silent write.
    let (ns, pj) = m.cost(&new, &new, Purpose::WriteBack, &mut st);
    assert_eq!((ns, pj), (0.0, 0.0));
}

/// A raw line: word 0 = 1 sets bit 0, i.e. cell 0 goes from 000 to 001
/// (46.8 ns, 6.7 pJ) and every other cell stays; the bank time is in cycles.
#[test]
fn raw_line_one_bit() {
    let mut m = Media::new(Encoding::None, true, 3.0);
    let mut st = MediaStats::default();
    m.ensure(64, &[0u8; 64]);
    let mut x = [0u8; 64];
    x[0] = 1;
    let (cycles, pj) = m.program(64, &x, Purpose::WriteBack, &mut st);
    assert_eq!(cycles, (46.8f64 * 3.0).ceil() as u64);
    assert_eq!(pj, 6.7);
    assert_eq!(st.cells_programmed.iter().sum::<u64>(), 1);
}

/// SLDE stores an undo/redo pair differing in one byte with DLDC, and its
/// metadata writes carry the metadata bit.
#[test]
fn slde_chooses_dldc_for_log_pairs() {
    let mut m = Media::new(Encoding::Slde, true, 3.0);
    let mut st = MediaStats::default();
    let mut x = [0u8; 64];
    for i in 0..4 {
        let undo = 0x1234_5678_9abc_def0u64 ^ (i as u64) << 40;
        let redo = undo ^ 0x55;
        x[i * 16..i * 16 + 8].copy_from_slice(&undo.to_le_bytes());
        x[i * 16 + 8..i * 16 + 16].copy_from_slice(&redo.to_le_bytes());
    }
    m.program(0, &x, Purpose::Log, &mut st);
    assert_eq!(st.lines_by_type[DLDC as usize], 1);
    assert_eq!(m.stored(0).unwrap(), x);
    // Not log data: FPC (here raw: incompressible words).
    m.program(64, &x, Purpose::WriteBack, &mut st);
    assert_eq!(st.lines_by_type[RAW as usize], 1);
    // Small metadata: FPC, sparsest expansion, metadata bit stored.
    let mut meta = [0u8; 64];
    meta[0] = 9;
    m.program(128, &meta, Purpose::Metadata, &mut st);
    assert_eq!(st.expansion_modes[3], 1);
    let c = &packed::unpack(m.cells_of(128).unwrap());
    let tag = idm::contract(&c[DATA_CELLS..], 2).get(0, 6);
    assert_eq!(tag >> 4 & 1, 1, "metadata bit");
    // Tags use only the four cheapest states (111, 000, 001, 110).
    assert!(c[DATA_CELLS..].iter().all(|s| [7, 0, 1, 6].contains(s)));
    assert_eq!(m.stored(128).unwrap(), meta);
}

/// Log bits (MorLog §VI-C, expansion disabled): counted only in the log
/// region; every write counts its code word, a rewrite with the same bytes
/// programs nothing; SLDE's DLDC code word is shorter than CRADE's FPC one
/// for an undo/redo pair that differs in one byte; the plain device's code
/// word is the raw line.
#[test]
fn log_bits_are_code_words_in_the_log_region() {
    let mut entry = [0u8; 64];
    let (w0, w1) = (0x8123_0000_0004_1040u64, 0x5eed_0000_0000_0007u64);
    let (undo, redo) = (0x1234_5678_9abc_def0u64, 0x1234_5678_9abc_de0fu64);
    for (i, w) in [w0, w1, undo, redo].iter().enumerate() {
        entry[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    let bits = |enc: Encoding| {
        let mut m = Media::new(enc, true, 3.0);
        m.set_log_region(4096, 4096);
        let mut st = MediaStats::default();
        m.ensure(0, &[0u8; 64]);
        m.program(0, &entry, Purpose::Log, &mut st);
        assert_eq!(st.log_line_writes, 0, "outside the region");
        m.ensure(4096, &[0u8; 64]);
        m.program(4096, &entry, Purpose::Log, &mut st);
        let (len, prog) = (st.log_bits_written, st.log_bits_programmed);
        assert_eq!(st.log_line_writes, 1);
        assert!(prog > 0 && prog <= len, "{enc:?}: {prog} of {len}");
        m.program(4096, &entry, Purpose::Log, &mut st);
        assert_eq!(st.log_bits_programmed, prog, "{enc:?}: same code word");
        assert_eq!(st.log_bits_written, 2 * len);
        len
    };
    let crade = bits(Encoding::Crade);
    let slde = bits(Encoding::Slde);
    assert_eq!(bits(Encoding::None), 6 + 512);
    assert!(slde < crade, "DLDC {slde} vs FPC {crade} bits");
}

/// Per-cell states, any of the 8 in every cell.
fn any_cells() -> impl Strategy<Value = Cells> {
    prop::collection::vec(0u8..8, CELLS).prop_map(|v| v.try_into().unwrap())
}

/// Mostly equal cell arrays: `old` with a few cells changed.
fn cells_pair() -> impl Strategy<Value = (Cells, Cells)> {
    (
        any_cells(),
        prop::collection::vec((0usize..CELLS, 0u8..8), 0..12),
        any::<bool>(),
    )
        .prop_map(|(old, edits, all_new)| {
            let mut new = old;
            for (j, s) in edits {
                new[j] = s;
            }
            if all_new {
                new = std::array::from_fn(|j| (old[j] + j as u8 % 3) & 7);
            }
            (old, new)
        })
}

/// Every counter of the cell-level stats, floats by their bits.
fn stats_key(st: &MediaStats) -> Vec<u64> {
    let mut k = Vec::new();
    k.extend(st.bits_programmed);
    k.extend(st.cells_programmed);
    k.extend(st.cells_by_state);
    k.extend(st.write_energy_pj.map(f64::to_bits));
    k.extend(st.write_latency_ns.map(f64::to_bits));
    k.extend(st.line_writes);
    k.extend(st.lines_by_type);
    k.extend(st.expansion_modes);
    k.push(st.silent_writes);
    k.push(st.silent_log_writes);
    k.push(st.clean_log_words);
    k
}

proptest! {
    /// Packing is a bijection on cell states.
    #[test]
    fn pack_unpack(c in any_cells()) {
        prop_assert_eq!(packed::unpack(&packed::pack(&c)), c);
    }

    /// The packed cost equals the cell-by-cell cost, for the TLC and the
    /// one-bit-per-cell devices: latency, energy to the bit, every counter.
    #[test]
    fn packed_cost_is_the_per_cell_cost((old, new) in cells_pair(), p in 0usize..Purpose::COUNT, tlc in any::<bool>()) {
        let m = Media::new(Encoding::Crade, tlc, 3.0);
        let purpose = Purpose::ALL[p];
        let (mut a, mut b) = (MediaStats::default(), MediaStats::default());
        let want = reference::cost_cells(&m, &old, &new, purpose, &mut a);
        let got = m.cost(&packed::pack(&old), &packed::pack(&new), purpose, &mut b);
        prop_assert_eq!((got.0.to_bits(), got.1.to_bits()), (want.0.to_bits(), want.1.to_bits()));
        prop_assert_eq!(stats_key(&b), stats_key(&a));
    }

    /// A raw line placed by its words (the path without an encoder) is
    /// the raw encoding placed through its stream, whatever the cells held
    /// and whatever the tag.
    #[test]
    fn place_raw_is_place(old in any_cells(), x in random_line(), log_meta in any::<bool>()) {
        let mut e = encode(Encoding::None, &x, Purpose::Log);
        e.log_meta = log_meta;
        let mut want = packed::pack(&old);
        place(&e, &mut want);
        let mut got = packed::pack(&old);
        packed::place_raw(std::array::from_fn(|w| word(&x, w)), tag_of(&e), &mut got);
        prop_assert_eq!(got, want);
    }

    /// Packed expansion and contraction equal idm's per-cell ones in every
    /// mode, whatever the cells held before (cells past the stream keep
    /// their state; contraction reads every data cell).
    #[test]
    fn packed_expand_contract(old in any_cells(), words in prop::array::uniform8(any::<u64>()), mode in 0usize..4, cut in 0usize..=513) {
        let len = cut.min(idm::CAPACITY_BITS[mode]);
        let mut s = BitWriter::default();
        for (i, &w) in words.iter().enumerate() {
            s.put(w, 64);
            if i == 7 { s.put(words[0] & 1, 1); }
        }
        // The stream's first `len` bits, zeros after (as an encoder leaves it).
        let mut t = BitWriter::default();
        for i in 0..len { t.put(s.bit(i), 1); }
        let mut want = old;
        idm::expand(&t, len, mode, &mut want[..DATA_CELLS]);
        let mut got = packed::pack(&old);
        packed::expand(&t, len, mode, &mut got);
        prop_assert_eq!(packed::unpack(&got), want);
        let (cw, cg) = (idm::contract(&old[..DATA_CELLS], mode), packed::contract(&packed::pack(&old), mode));
        prop_assert_eq!(cg.len, cw.len);
        prop_assert_eq!(cg.words, cw.words);
        prop_assert_eq!(packed::tag(&packed::pack(&old)), idm::contract(&old[DATA_CELLS..], 2).get(0, 6));
    }

    /// A line programmed three times through the packed write path ends in
    /// the cells, cycles, energy and counters (log bits included) of the
    /// per-cell path, and both decode to the data, for every encoder,
    /// device and purpose.
    #[test]
    fn packed_program_is_the_per_cell_program(
        init in pattern_line(), x in pattern_line(), y in random_line(),
        p in 0usize..Purpose::COUNT, q in 0usize..Purpose::COUNT, tlc in any::<bool>(),
    ) {
        for enc in ENCODINGS {
            let mut m = Media::new(enc, tlc, 3.0);
            m.set_log_region(0, 128);
            let (mut a, mut b) = (MediaStats::default(), MediaStats::default());
            let mut cells = [0u8; CELLS];
            reference::place_cells(&m.encode(&init, Purpose::WriteBack), &mut cells);
            m.ensure(64, &init);
            let (mut prev, mut written, mut programmed) = (None, 0, 0);
            for (data, purpose) in [(x, Purpose::ALL[p]), (y, Purpose::ALL[q]), (x, Purpose::ALL[q])] {
                let (w, f) = reference::log_bits_cells(&m, &mut prev, &cells, &data, purpose);
                written += w;
                programmed += f;
                let want = reference::program_cells(&m, &mut cells, &data, purpose, &mut a);
                let got = m.program(64, &data, purpose, &mut b);
                prop_assert_eq!((got.0, got.1.to_bits()), (want.0, want.1.to_bits()), "{:?}", enc);
                prop_assert_eq!(packed::unpack(m.cells_of(64).unwrap()), cells);
                prop_assert_eq!(reference::decode_cells(&cells), data);
                prop_assert_eq!(m.stored(64).unwrap(), data);
            }
            prop_assert_eq!((b.log_bits_written, b.log_bits_programmed), (written, programmed));
            // The per-cell path does not count line writes, types or modes.
            let (ka, kb) = (stats_key(&a), stats_key(&b));
            let cost_fields = 4 * Purpose::COUNT + 8;
            prop_assert_eq!(&kb[..cost_fields], &ka[..cost_fields]);
        }
    }

    /// A line's first store holds its setup content's cells, and its
    /// first log write compares against the code word
    /// its setup content re-encodes to, which is remembered from the line
    /// before when the stored cells are the same: lines with equal,
    /// different, then equal setup content again count the log bits of
    /// the per-cell path, for every encoder.
    #[test]
    fn first_log_writes_of_many_lines(
        init in pattern_line(), other in pattern_line(), x in pattern_line(),
        y in random_line(), tlc in any::<bool>(),
    ) {
        for enc in ENCODINGS {
            let mut m = Media::new(enc, tlc, 3.0);
            m.set_log_region(0, 64 * 8);
            let mut st = MediaStats::default();
            let (mut written, mut programmed) = (0, 0);
            for (i, (setup, data)) in [(init, x), (init, y), (other, x), (init, x), (other, y)]
                .into_iter()
                .enumerate()
            {
                let line = 64 * i as u64;
                let mut cells = [0u8; CELLS];
                reference::place_cells(&m.encode(&setup, Purpose::WriteBack), &mut cells);
                m.ensure(line, &setup);
                // The setup content's cells, remembered from the line
                // before when the content is the same.
                prop_assert_eq!(packed::unpack(m.cells_of(line).unwrap()), cells);
                let (w, f) = reference::log_bits_cells(&m, &mut None, &cells, &data, Purpose::Log);
                written += w;
                programmed += f;
                m.program(line, &data, Purpose::Log, &mut st);
            }
            prop_assert_eq!((st.log_bits_written, st.log_bits_programmed), (written, programmed), "{:?}", enc);
        }
    }
}

proptest! {
    /// The summed per-byte counts are the words' bits, up to every bit
    /// of all nine words set (byte sums and lanes must not overflow).
    #[test]
    fn ones_is_the_sum_of_count_ones(words in prop::array::uniform9(any::<u64>()), full in 0usize..=9, sparse in any::<u64>()) {
        for mut xs in [words, [sparse & 0x8000_0001_0000_0100; 9]] {
            for x in xs.iter_mut().take(full) {
                *x = u64::MAX;
            }
            let want: u64 = xs.iter().map(|x| u64::from(x.count_ones())).sum();
            prop_assert_eq!(packed::ones(&xs), want);
        }
        prop_assert_eq!(packed::ones(&[u64::MAX; 9]), 576);
    }
}
