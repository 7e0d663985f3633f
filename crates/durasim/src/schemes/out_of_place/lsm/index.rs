//! The DRAM index: a skip list mapping each home line to the newest log
//! location of its words, where it appears to the CPU caches, and the
//! scheme's timed walks and updates of it.

use super::Lsm;
use crate::schemes::{Layout, MemCtx};
use crate::types::{Addr, CoreId, Cycle, Purpose};
use crate::workloads::Op;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;
pub(super) const MAX_LEVEL: usize = 32;
/// Address span of the DRAM index as the CPU caches see it.
pub(super) const INDEX_SPAN: u64 = 1 << 40;
/// Each core walks its own alias of the index: the cache hierarchy models
/// no sharing between cores (an LLC line has one owner whose private copies
/// it invalidates), so a line two cores cached would leave a stale link.
/// The aliases all read the same DRAM bytes; the LLC may hold one copy of a
/// node per core (an upper bound on the index's LLC footprint).
pub(super) const CORE_SPAN: u64 = INDEX_SPAN / crate::schemes::kit::log::MAX_CORES;

/// Where the DRAM index appears in the physical address space: above NVM
/// and below the ADR range (`Layout::adr_base`), so no NVM or ADR address
/// aliases it.
pub(super) fn index_base(layout: &Layout) -> Addr {
    layout
        .capacity_bytes
        .next_power_of_two()
        .max(layout.capacity_bytes)
}

/// Newest log location (byte address of the data word) of each word of a
/// line; `mask` says which words have one.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LineLoc {
    pub(super) mask: u8,
    pub(super) loc: [Addr; 8],
}

/// The DRAM index: a skip list keyed by home line address (Pugh 1990).
/// Nodes live in an arena; node `i` occupies DRAM at `i * node_bytes`.
pub(super) struct SkipList {
    pub(super) keys: Vec<Addr>,
    first: Vec<u32>,
    next: Vec<u32>,
    pub(super) locs: Vec<LineLoc>,
    level: usize,
    p: f64,
    seed: u64,
    rng: Xoshiro256PlusPlus,
    /// Host-side shortcut for untimed lookups (write-backs, checks); the
    /// timed path always walks the list.
    pub(super) map: FxHashMap<Addr, u32>,
    update: [u32; MAX_LEVEL],
    /// Nodes read by the last walk, in order (for the DRAM accesses).
    pub(super) visited: Vec<u32>,
}

impl SkipList {
    pub(super) fn new(p: f64, seed: u64) -> Self {
        let mut s = SkipList {
            keys: Vec::new(),
            first: Vec::new(),
            next: Vec::new(),
            locs: Vec::new(),
            level: 1,
            p,
            seed,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            map: FxHashMap::default(),
            update: [0; MAX_LEVEL],
            visited: Vec::with_capacity(256),
        };
        s.clear();
        s
    }

    /// Drop every node (after a migrate-home GC); the level generator
    /// continues its sequence.
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.first.clear();
        self.next.clear();
        self.locs.clear();
        self.map.clear();
        // Head node: every level.
        self.keys.push(0);
        self.first.push(0);
        self.next.extend(std::iter::repeat_n(NIL, MAX_LEVEL));
        self.locs.push(LineLoc::default());
        self.level = 1;
        let _ = self.seed;
    }

    pub(super) fn len(&self) -> usize {
        self.keys.len() - 1
    }

    #[inline]
    fn nxt(&self, node: u32, l: usize) -> u32 {
        self.next[self.first[node as usize] as usize + l]
    }

    /// Search for `key`, recording predecessors in `update` and the nodes
    /// read (head first) in `visited`. Returns the node holding `key`.
    pub(super) fn walk(&mut self, key: Addr) -> Option<u32> {
        self.visited.clear();
        self.visited.push(0);
        let mut x = 0u32;
        let mut last_read = 0u32;
        for l in (0..self.level).rev() {
            loop {
                let nx = self.nxt(x, l);
                if nx == NIL {
                    break;
                }
                // Reading a node's key costs one access unless it is the
                // node just read (moving down a level at the same place).
                if nx != last_read {
                    self.visited.push(nx);
                    last_read = nx;
                }
                if self.keys[nx as usize] < key {
                    x = nx;
                } else {
                    break;
                }
            }
            self.update[l] = x;
        }
        let c = self.nxt(x, 0);
        (c != NIL && self.keys[c as usize] == key).then_some(c)
    }

    /// Insert `key` after a `walk(key)` that did not find it. Returns the
    /// new node and the predecessors whose pointers changed (in `visited`
    /// is left the walk; `changed` receives the written nodes).
    pub(super) fn insert_after_walk(&mut self, key: Addr, changed: &mut Vec<u32>) -> u32 {
        let mut lvl = 1;
        while lvl < MAX_LEVEL && self.rng.gen::<f64>() < self.p {
            lvl += 1;
        }
        if lvl > self.level {
            for l in self.level..lvl {
                self.update[l] = 0;
            }
            self.level = lvl;
        }
        let id = self.keys.len() as u32;
        self.keys.push(key);
        self.first.push(self.next.len() as u32);
        self.locs.push(LineLoc::default());
        for l in 0..lvl {
            let pred = self.update[l];
            let after = self.nxt(pred, l);
            self.next.push(after);
            let pi = self.first[pred as usize] as usize + l;
            self.next[pi] = id;
        }
        changed.clear();
        changed.push(id);
        for l in 0..lvl {
            if !changed.contains(&self.update[l]) {
                changed.push(self.update[l]);
            }
        }
        self.map.insert(key, id);
        id
    }

    /// Nodes in key order (level 0).
    pub(super) fn in_order(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len());
        let mut x = self.nxt(0, 0);
        while x != NIL {
            v.push(x);
            x = self.nxt(x, 0);
        }
        v
    }
}

impl Lsm {
    /// Walk the index for `line`. A transaction's walks were emitted as
    /// loads into its op stream (`instrument`): the core already paid them
    /// through its caches, so `charged` walks cost nothing here. Other walks
    /// (the cleaner's, auto-commits at write-back) have no core of ours:
    /// they are a chain of dependent DRAM reads, each issued when the
    /// previous one returned. Returns (node, time).
    pub(super) fn timed_walk(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        charged: bool,
        now: Cycle,
    ) -> (Option<u32>, Cycle) {
        let found = self.index.walk(line);
        if charged {
            return (found, now);
        }
        let mut done = now;
        let mut buf = [0u8; 64];
        let n = (self.node_bytes as usize).min(64);
        let sets = self.cleaner_tags.len();
        for &node in &self.index.visited {
            let set = node as usize % sets;
            if self.cleaner_tags[set] == node {
                done += self.cleaner_hit;
                continue;
            }
            self.cleaner_tags[set] = node;
            self.stats.dram_index_reads += 1;
            done = ctx.dram.read(
                u64::from(node) * self.node_bytes,
                &mut buf[..n],
                Purpose::Metadata,
                done,
            );
        }
        self.stats.gc_walk_nodes += self.index.visited.len() as u64;
        (found, done)
    }

    /// Find or insert the node of `line` (see `timed_walk` for `charged`).
    /// Returns the node and the time.
    pub(super) fn timed_upsert(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        charged: bool,
        now: Cycle,
    ) -> (u32, Cycle) {
        let (found, t) = self.timed_walk(ctx, line, charged, now);
        let node = match found {
            Some(n) => n,
            None => {
                let mut changed = std::mem::take(&mut self.changed);
                let id = self.index.insert_after_walk(line, &mut changed);
                // Node contents are not modelled (zeros): loads of index
                // lines read back what the walk found functionally.
                let buf = [0u8; 64];
                let n = (self.node_bytes as usize).min(64);
                for &c in &changed {
                    // Posted writes: they do not delay the walk's owner.
                    ctx.dram.write(
                        u64::from(c) * self.node_bytes,
                        &buf[..n],
                        Purpose::Metadata,
                        t,
                    );
                }
                self.stats.dram_index_writes += changed.len() as u64;
                self.changed = changed;
                self.stats.index_nodes_inserted += 1;
                self.stats.index_peak_nodes =
                    self.stats.index_peak_nodes.max(self.index.len() as u64);
                id
            }
        };
        (node, t)
    }

    /// Emit the last walk's node reads as loads (node contents are not
    /// modelled: they read as zero). Each node's address comes from the
    /// node before it (pointer chasing), so every load but the first (the
    /// head, whose address is known) depends on the previous one. Returns
    /// the number of loads emitted.
    pub(super) fn emit_walk(&mut self, core: CoreId, out: &mut Vec<Op>) -> u32 {
        let base = self.index_base + core as u64 * CORE_SPAN;
        for (i, &node) in self.index.visited.iter().enumerate() {
            out.push(Op::Load {
                addr: base + u64::from(node) * self.node_bytes % CORE_SPAN,
                value: 0,
                dep: u8::from(i > 0),
            });
        }
        self.stats.index_node_loads += self.index.visited.len() as u64;
        self.index.visited.len() as u32
    }

    /// Point word `w` of `node` at `log_addr`, keeping segment live counts.
    pub(super) fn set_loc(&mut self, node: u32, w: usize, log_addr: Addr) {
        let l = &mut self.index.locs[node as usize];
        if l.mask & (1 << w) != 0 {
            let old = self.g.seg_of(l.loc[w]);
            self.segs[old].live_words -= 1;
        }
        l.mask |= 1 << w;
        l.loc[w] = log_addr;
        let s = self.g.seg_of(log_addr);
        self.segs[s].live_words += 1;
        self.segs[s].words_written += 1;
    }
}
