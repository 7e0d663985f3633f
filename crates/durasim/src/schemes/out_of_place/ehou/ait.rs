//! The AIT-cache entries: lookup (Bloom filters and overflow logs on a
//! miss), install with the victim rule, the speculative remap of a
//! write-set line, AIT and ADR-image writes, the free pool, and the
//! end-of-run homing.

use super::layout::{record, tag, LOG_ENTRY_BYTES};
use super::Ehou;
use crate::mem::optane::EntryState;
use crate::schemes::MemCtx;
use crate::types::{Addr, Cycle, Purpose};

impl Ehou {
    /// `finish`'s work (see there).
    pub(super) fn finish_inner(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        for slot in 0..self.cache.capacity() {
            let e = *self.cache.entry(slot);
            if e.state == EntryState::Committed {
                t = t.max(self.write_ait(ctx, self.cache.tag(slot) * 64, e.dev, now));
                self.cache.entry_mut(slot).state = EntryState::Clean;
                self.set_image(ctx, slot, None, t);
            }
        }
        let mut away: Vec<(Addr, u64)> = self.committed.iter().map(|(&l, &e)| (l, e)).collect();
        away.sort_unstable();
        let mut buf = [0u8; 64];
        for (line, enc) in away {
            let r = ctx
                .nvm
                .read(self.g.dev_addr(line, enc), &mut buf, Purpose::Gc, now);
            t = t.max(ctx.nvm.write(line, &buf, Purpose::Gc, r));
            t = t.max(self.write_ait(ctx, line, 0, t));
            if let Some(s) = self.cache.find(line / 64) {
                self.cache.entry_mut(s).dev = 0;
            }
            self.free.push((0, enc));
        }
        self.committed.clear();
        t
    }

    pub(super) fn write_ait(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        enc: u64,
        now: Cycle,
    ) -> Cycle {
        let mut now = now;
        #[cfg(debug_assertions)]
        if enc == 0 {
            self.ait.remove(&line);
        } else {
            self.ait.insert(line, enc);
        }
        if enc != 0 {
            let (wa, bit) = self.g.dir_bit(line);
            let page = (wa - self.g.dir_base) / 8 * 64 + bit;
            // A page is in `dir_at` once its directory bit is set.
            let at = match self.dir_at.get(&page) {
                Some(&at) => at,
                None => {
                    let w = self.dir.entry(wa).or_insert(0);
                    *w |= 1 << bit;
                    let v = *w;
                    let at = self.overhead_write(ctx, wa, &v.to_le_bytes(), Purpose::Metadata, now);
                    self.dir_at.insert(page, at);
                    at
                }
            };
            // The directory bit persists before the entry it covers (also
            // when an entry handled later is written at an earlier time).
            now = now.max(at);
        }
        let a = self.g.ait_addr(line);
        self.overhead_write(ctx, a, &enc.to_le_bytes(), Purpose::Metadata, now)
    }

    /// Write way `slot`'s ADR image (`None`: clear it if set), no earlier
    /// than its previous image: the simulator hands a way to the writes in
    /// the order it handles them, which is not always their time order.
    /// Returns when the image changed.
    pub(super) fn set_image(
        &mut self,
        ctx: &mut MemCtx,
        slot: usize,
        rec: Option<[u8; 32]>,
        now: Cycle,
    ) -> Cycle {
        let a = self.g.slot_addr(slot);
        let t = now.max(self.img_at[slot]);
        match rec {
            Some(r) => {
                ctx.nvm.persist_adr_structure(a, &r, t);
                self.img[slot] = true;
            }
            None if self.img[slot] => {
                ctx.nvm.persist_adr_structure(a, &[0u8; 32], t);
                self.img[slot] = false;
            }
            None => return now,
        }
        self.img_at[slot] = t;
        t
    }

    /// Make room for and install `line -> enc` in the AIT cache; returns
    /// the slot and when the victim's write (if any) was accepted.
    pub(super) fn install(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        enc: u64,
        state: EntryState,
        core: usize,
        now: Cycle,
    ) -> (usize, Cycle) {
        let t = line / 64;
        let (slot, victim) = self.cache.victim(t);
        let mut done = now;
        if let Some(v) = victim {
            let vline = self.cache.tag(slot) * 64;
            match v.state {
                EntryState::Clean => {}
                EntryState::Committed => {
                    // Not before the flip that committed it: an AIT entry
                    // ahead of its flip is a speculative mapping.
                    self.s.flush_evict += 1;
                    let flip = self.cores[v.core as usize].flip_at;
                    done = self.write_ait(ctx, vline, v.dev, now.max(flip));
                }
                EntryState::Speculative => {
                    if self.mutant {
                        // Planted bug (Fig. 5): straight to the AIT.
                        done = self.write_ait(ctx, vline, v.dev, now);
                    } else {
                        done = self.log_append(ctx, v.core as usize, vline, v.dev, now);
                    }
                    // The entry's flip waits for its new record.
                    let c = &mut self.cores[v.core as usize];
                    c.records_at = c.records_at.max(done);
                }
            }
        }
        let c = &self.cores[core];
        let rec = (state == EntryState::Speculative).then(|| record(line, enc, tag(core, c.txseq)));
        self.cache.fill(slot, t, enc, state, core as u16);
        // The way's image is replaced once the victim's entry is safe in
        // the AIT or the overflow log.
        let at = self.set_image(ctx, slot, rec, done);
        if rec.is_some() {
            let c = &mut self.cores[core];
            c.records_at = c.records_at.max(at);
        }
        (slot, done)
    }

    /// The AIT-cache slot of `line` (a miss consults the Bloom filters and
    /// overflow logs, then reads the AIT entry) and when it is available.
    pub(super) fn lookup(&mut self, ctx: &mut MemCtx, line: Addr, now: Cycle) -> (usize, Cycle) {
        let t = now + self.ait_cycles;
        if let Some(s) = self.cache.lookup(line / 64) {
            self.s.ait_hits += 1;
            return (s, t);
        }
        self.s.ait_misses += 1;
        let mut t = t;
        for c in 0..self.cores.len() {
            if !self.cores[c].bloom.may_contain(line) {
                continue;
            }
            self.s.bloom_hits += 1;
            // Read the log (newest entries last) from PM.
            let n = self.cores[c].log.len() as u64;
            let mut buf = std::mem::take(&mut self.scratch);
            buf.resize((n * LOG_ENTRY_BYTES) as usize, 0);
            t = ctx
                .nvm
                .read(self.g.log_addr(c, 0), &mut buf, Purpose::Log, t);
            self.scratch = buf;
            if let Some(&(_, enc)) = self.cores[c].log.iter().rev().find(|e| e.0 == line) {
                let (s, _) = self.install(ctx, line, enc, EntryState::Speculative, c, t);
                return (s, t);
            }
            self.s.bloom_false += 1;
        }
        let mut b = [0u8; 8];
        t = ctx
            .nvm
            .read(self.g.ait_addr(line), &mut b, Purpose::Metadata, t);
        let enc = u64::from_le_bytes(b);
        #[cfg(debug_assertions)]
        assert_eq!(enc, self.ait.get(&line).copied().unwrap_or(0));
        let (s, _) = self.install(ctx, line, enc, EntryState::Clean, 0, t);
        (s, t)
    }

    /// A free device line for a write arriving at `now`: the newest one
    /// released by a flip that arrived by then (the simulator handles a
    /// core's writes in an order that is not always their arrival order).
    pub(super) fn alloc(&mut self, ctx: &mut MemCtx, now: Cycle) -> u64 {
        if let Some(i) = self.free.iter().rposition(|&(at, _)| at <= now) {
            return self.free.remove(i).1;
        }
        if self.next_fresh >= self.g.pool_lines {
            ctx.input_error(format!(
                "ehou.pool_lines={} is too small: more lines were away from home at once; raise ehou.pool_lines",
                self.g.pool_lines
            ));
            return 1;
        }
        self.next_fresh += 1;
        self.next_fresh
    }

    /// Write write-set line `i` of `core` to its new device line (first
    /// write: allocate it, remap the entry speculatively).
    pub(super) fn write_tx_line(
        &mut self,
        ctx: &mut MemCtx,
        core: usize,
        i: usize,
        now: Cycle,
    ) -> Cycle {
        let line = self.cores[core].ws[i].line;
        let (slot, mut t) = self.lookup(ctx, line, now);
        let enc = match self.cores[core].ws[i].new {
            Some(e) => {
                let en = self.cache.entry(slot);
                // (The mutant put the entry in the AIT: it reloads clean.)
                debug_assert!(en.dev == e && (self.mutant || en.state == EntryState::Speculative));
                e
            }
            None => {
                let old = self.committed.get(&line).copied().unwrap_or(0);
                let new = if old == 0 { self.alloc(ctx, t) } else { 0 };
                self.reclaim_push(ctx, core, new, t);
                let w = &mut self.cores[core].ws[i];
                w.old = old;
                w.new = Some(new);
                // Lazy persisting: a committed entry about to be
                // overwritten is written to the AIT first.
                if self.cache.entry(slot).state == EntryState::Committed {
                    self.s.flush_overwrite += 1;
                    let en = *self.cache.entry(slot);
                    let flip = self.cores[en.core as usize].flip_at;
                    t = t.max(self.write_ait(ctx, line, en.dev, t.max(flip)));
                }
                let e = self.cache.entry_mut(slot);
                e.dev = new;
                e.state = EntryState::Speculative;
                e.core = core as u16;
                let txseq = self.cores[core].txseq;
                let at = self.set_image(ctx, slot, Some(record(line, new, tag(core, txseq))), t);
                let c = &mut self.cores[core];
                c.records_at = c.records_at.max(at);
                self.s.speculative += 1;
                new
            }
        };
        let data = self.cores[core].ws[i].data;
        let at = ctx
            .nvm
            .write(self.g.dev_addr(line, enc), &data, Purpose::WriteBack, t);
        let w = &mut self.cores[core].ws[i];
        w.flushed = true;
        w.written_at = at;
        at
    }

    /// The device address a read of `line` returns now.
    pub(super) fn logical_dev(&self, line: Addr) -> Addr {
        let owner = self
            .cores
            .iter()
            .find_map(|c| c.index.get(line).map(|i| &c.ws[i]));
        let enc = match owner {
            Some(w) if w.new.is_some() => w.new.unwrap(),
            _ => self.committed.get(&line).copied().unwrap_or(0),
        };
        self.g.dev_addr(line, enc)
    }
}
