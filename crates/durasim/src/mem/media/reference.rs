//! The cell-by-cell definitions of placing, decoding and costing a line
//! (one byte per cell): the reference the packed write path is tested
//! against.

use super::*;

/// Write an encoded line's stream and tags into cells, one cell at a time.
pub fn place_cells(e: &Encoded, cells: &mut Cells) {
    let mut t = BitWriter::default();
    t.put(tag_of(e), 6);
    idm::expand(&t, 6, 2, &mut cells[DATA_CELLS..]);
    let mode = if e.kind == RAW { 0 } else { e.mode };
    idm::expand(&e.stream, e.stream.len, mode, &mut cells[..DATA_CELLS]);
}

/// Decode a line from per-cell states.
pub fn decode_cells(cells: &Cells) -> LineData {
    let tag = idm::contract(&cells[DATA_CELLS..], 2).get(0, 6);
    decode_stream(tag, |mode| idm::contract(&cells[..DATA_CELLS], mode))
}

/// Cost of changing `old` into `new`, cell by cell.
pub fn cost_cells(
    m: &Media,
    old: &Cells,
    new: &Cells,
    purpose: Purpose,
    st: &mut MediaStats,
) -> (f64, f64) {
    let pi = purpose.index();
    let (mut ns, mut pj) = (0.0f64, 0.0f64);
    for (&o, &n) in old.iter().zip(new.iter()) {
        if o == n {
            continue;
        }
        let flipped = (o ^ n).count_ones() as u64;
        st.bits_programmed[pi] += flipped;
        st.cells_programmed[pi] += 1;
        st.cells_by_state[n as usize] += 1;
        if m.tlc {
            ns = ns.max(m.write_ns[n as usize]);
            pj += m.write_pj[n as usize];
        } else {
            ns = m.slc_write_ns;
            pj += flipped as f64 * m.slc_pj_per_bit;
        }
    }
    st.write_energy_pj[pi] += pj;
    st.write_latency_ns[pi] += ns;
    (ns, pj)
}

/// `program` with per-cell storage: (cycles, energy) and the new cells.
pub fn program_cells(
    m: &Media,
    cells: &mut Cells,
    data: &LineData,
    purpose: Purpose,
    st: &mut MediaStats,
) -> (Cycle, f64) {
    let e = m.encode(data, purpose);
    let old = *cells;
    place_cells(&e, cells);
    let (ns, pj) = cost_cells(m, &old, cells, purpose, st);
    ((ns * m.freq_ghz).ceil() as Cycle, pj)
}

/// An encoded line's code word, one bit per code bit, read out of the
/// stream 64 bits at a time.
pub fn flat_stream(e: &Encoded) -> Flat {
    let mut f = [0u64; 9];
    f[0] = tag_of(e);
    for i in 0..e.stream.len.div_ceil(64) {
        let n = (e.stream.len - i * 64).min(64);
        let v = e.stream.get(i * 64, n);
        f[i] |= v << 6;
        if i + 1 < f.len() {
            f[i + 1] |= v >> 58;
        }
    }
    f
}

/// Log bits of writing `data` over per-cell `cells` whose last code word
/// is `prev` (`None`: the one the cells decode to, re-encoded as data):
/// (bits written, bits programmed); updates `prev`.
pub fn log_bits_cells(
    m: &Media,
    prev: &mut Option<Flat>,
    cells: &Cells,
    data: &LineData,
    purpose: Purpose,
) -> (u64, u64) {
    let e = m.encode(data, purpose);
    let new_len = 6 + e.stream.len;
    let before =
        prev.unwrap_or_else(|| flat_stream(&m.encode(&decode_cells(cells), Purpose::WriteBack)));
    let mut cur = flat_stream(&e);
    let (w, b) = (new_len / 64, new_len % 64);
    if w < cur.len() {
        let keep = !((1u64 << b) - 1);
        cur[w] = (cur[w] & !keep) | (before[w] & keep);
        cur[w + 1..].copy_from_slice(&before[w + 1..]);
    }
    let flipped: u32 = before
        .iter()
        .zip(cur.iter())
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    *prev = Some(cur);
    (new_len as u64, u64::from(flipped))
}

/// DLDC size of a log line, word by word (as `dldc_line_encode` writes it).
fn dldc_line_size(data: &LineData) -> usize {
    let mut prev = 0;
    let mut n = 0;
    for i in 0..8 {
        let w = word(data, i);
        n += dldc::size_bits(w, dldc::dirty_flags(prev, w));
        prev = w;
    }
    n
}

/// DLDC on a log line, each word encoded a field at a time (as
/// `dldc_line_encode` defines it); returns the words stored all clean.
fn dldc_line_encode_by_field(data: &LineData, out: &mut BitWriter) -> u64 {
    super::dldc_line_encode_with(data, out, dldc::encode_by_field)
}

/// The encoder's definition: size every candidate first, then encode the
/// smallest (FPC on a tie), raw when none fits the cells.
pub fn encode_sized_first(encoding: Encoding, data: &LineData, purpose: Purpose) -> Encoded {
    let mut e = Encoded::raw_empty();
    let raw = |e: &mut Encoded| {
        for i in 0..8 {
            e.stream.put(word(data, i), 64);
        }
        e.kind = RAW;
    };
    if encoding == Encoding::None {
        raw(&mut e);
        return e;
    }
    let log = encoding == Encoding::Slde && purpose == Purpose::Log;
    e.log_meta = encoding == Encoding::Slde && purpose == Purpose::Metadata;
    let f = fpc::size_bits(data);
    let d = if log {
        dldc_line_size(data)
    } else {
        usize::MAX
    };
    let n = f.min(d);
    if n > idm::CAPACITY_BITS[0] {
        raw(&mut e);
        return e;
    }
    if d < f {
        e.clean_words = dldc_line_encode_by_field(data, &mut e.stream);
        e.kind = DLDC;
        e.comp = Some((1, d as u64));
    } else {
        fpc::encode_by_field(data, &mut e.stream);
        e.kind = FPC;
        e.comp = Some((0, f as u64));
    }
    e.mode = if encoding == Encoding::Fpc {
        0
    } else {
        idm::sparsest_mode(n)
    };
    e
}
