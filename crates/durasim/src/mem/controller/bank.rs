//! The device's channels, ranks and banks: each bank's row buffer and
//! timing state, each rank's activates and each channel's data bursts
//! reserved in time, and the planner that finds the earliest commands of
//! one access under every timing constraint and commits them.

use super::reservations::{partition_point_from_end, Reservations};
use super::timing::{DeviceTiming, Loc};
use crate::types::Cycle;

/// State of one bank.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Bank {
    pub(super) open_row: Option<u64>,
    /// Earliest next activate (tRC from last activate).
    pub(super) next_act: Cycle,
    /// Earliest precharge (tRAS, tRTP, write recovery / programming).
    pub(super) next_pre: Cycle,
    /// Earliest next column command (burst spacing, programming).
    pub(super) next_col: Cycle,
    /// Refresh epoch (`DeviceTiming::refresh_epoch`) of the last command.
    epoch: u64,
}

/// Activate times of one rank, sorted; old entries are pruned.
#[derive(Clone, Default, Debug)]
struct Rank {
    acts: Reservations<Cycle>,
}

/// Data-bus occupancy: one burst, or back-to-back bursts of one direction.
#[derive(Clone, Copy, Debug)]
pub(super) struct Burst {
    pub(super) start: Cycle,
    pub(super) end: Cycle,
    pub(super) write: bool,
}

/// Data-bus reservations of one channel, sorted by start; old ones pruned.
/// Requests are scheduled lazily and not strictly in time order, so a burst
/// may go into an earlier idle gap: a single "bus free at" time would let one
/// far-future write (waiting for a bank that is busy programming) block every
/// other bank's traffic.
#[derive(Clone, Default, Debug)]
struct Channel {
    bursts: Reservations<Burst>,
}

/// Reservations that end this long before the latest request time are
/// dropped; requests arrive at most a few thousand cycles out of order.
pub(super) const RESERVATION_HORIZON_CYCLES: Cycle = 50_000;

impl Rank {
    /// Earliest activate at or after `t` keeping tRRD and tFAW with every
    /// reserved activate (before and after it).
    #[inline]
    fn slot(&self, t: Cycle, t_rrd: Cycle, t_faw: Cycle) -> Cycle {
        // Every reserved activate is out of reach of `t` (the search below
        // would find none within reach and return `t`): no search.
        match self.acts.items.last() {
            Some(&a) if a + t_faw.max(t_rrd) > t => self.slot_search(t, t_rrd, t_faw),
            _ => t,
        }
    }

    #[inline(never)]
    fn slot_search(&self, mut t: Cycle, t_rrd: Cycle, t_faw: Cycle) -> Cycle {
        let acts = self.acts.live();
        let reach = t_faw.max(t_rrd);
        let mut lo = partition_point_from_end::<false, _>(acts, |&a| a + reach <= t);
        'search: loop {
            // `t` only grows: skip activates that no longer constrain it
            // (instead of a new binary search).
            while lo < acts.len() && acts[lo] + reach <= t {
                lo += 1;
            }
            // Activates within reach of t; the first 16 of them are checked
            // for tFAW (copied only when there are at least four).
            let mut n = 0;
            for &a in &acts[lo..] {
                if a >= t + reach {
                    break;
                }
                if a + t_rrd > t && t + t_rrd > a {
                    t = a + t_rrd;
                    continue 'search;
                }
                n += 1;
            }
            // tFAW: no five activates (including t) within a window < tFAW.
            if n < 4 {
                return t; // fewer than five activates near t
            }
            let n = n.min(16);
            let mut all = [0; 17];
            all[..n].copy_from_slice(&acts[lo..lo + n]);
            all[n] = t;
            let all = &mut all[..=n];
            all.sort_unstable();
            for w in all.windows(5) {
                if w[4] < w[0] + t_faw && w.contains(&t) {
                    t += 1;
                    continue 'search;
                }
            }
            return t;
        }
    }

    /// Returns true if old activates were pruned.
    fn reserve(&mut self, t: Cycle, horizon: Cycle) -> bool {
        self.acts
            .prune_and_insert(|&a| a < horizon, t, |&a| a <= t, |_, _| false)
    }
}

impl Channel {
    /// Idle data-bus time between a burst of direction `from_write` and a
    /// following one of direction `to_write`: tWTR (write data end to the
    /// read command, which is tCL before its data), tRTW (bus turnaround
    /// from read to write), none within one direction.
    #[inline]
    fn gap(from_write: bool, to_write: bool, d: &DeviceTiming) -> Cycle {
        match (from_write, to_write) {
            (true, false) => d.t_wtr + d.t_cl,
            (false, true) => d.t_rtw,
            _ => 0,
        }
    }

    /// Earliest data start >= `t` for a burst that overlaps no reserved
    /// burst and keeps the turnaround gaps with every reservation, before
    /// and after it.
    #[inline]
    fn slot(&self, t: Cycle, write: bool, d: &DeviceTiming) -> Cycle {
        // Every reserved burst ends, with the widest gap, by `t` (the
        // search below would skip them all and return `t`): no search.
        match self.bursts.items.last() {
            Some(b) if b.end + (d.t_wtr + d.t_cl).max(d.t_rtw) > t => self.slot_search(t, write, d),
            _ => t,
        }
    }

    #[inline(never)]
    fn slot_search(&self, mut t: Cycle, write: bool, d: &DeviceTiming) -> Cycle {
        let bl = d.t_bl;
        let reach = (d.t_wtr + d.t_cl).max(d.t_rtw);
        // The gaps after and before a reserved burst, by its direction.
        let after = [Self::gap(false, write, d), Self::gap(true, write, d)];
        let before = [Self::gap(write, false, d), Self::gap(write, true, d)];
        let bursts = self.bursts.live();
        // Entries are disjoint, so ends are sorted like starts.
        let mut lo = partition_point_from_end::<false, _>(bursts, |b| b.end + reach <= t);
        'search: loop {
            while lo < bursts.len() && bursts[lo].end + reach <= t {
                lo += 1;
            }
            let mut i = lo;
            // Every entry of bursts[lo..i] ends (with its gap) by `t`, which
            // only grows: after a conflict the scan goes on from the next
            // entry unless an entry before it was passed by fitting before
            // it (the new `t` may not fit there any more).
            let mut fitted_before = false;
            while i < bursts.len() {
                let b = &bursts[i];
                if b.start >= t + bl + reach {
                    break;
                }
                let dir = usize::from(b.write);
                let after_b = b.end + after[dir];
                if after_b > t {
                    if t + bl + before[dir] > b.start {
                        t = after_b;
                        if fitted_before {
                            continue 'search;
                        }
                    } else {
                        fitted_before = true;
                    }
                }
                i += 1;
            }
            return t;
        }
    }

    /// Returns true if old bursts were pruned.
    fn reserve(&mut self, b: Burst, horizon: Cycle) -> bool {
        // Back-to-back bursts of one direction become one busy interval:
        // the same constraints for any later burst (see `slot`), and a
        // saturated bus is one entry to skip instead of thousands.
        self.bursts.prune_and_insert(
            |x| x.end < horizon,
            b,
            |x| x.start <= b.start,
            |a, next| {
                let adjacent = a.write == next.write && a.end == next.start;
                if adjacent {
                    a.end = next.end;
                }
                adjacent
            },
        )
    }
}

/// Device commands of one access, computed before it is committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// Start of the refresh window that closed the bank's row, if any.
    pub(super) refreshed: Option<Cycle>,
    pub(super) pre: Option<Cycle>,
    pub(super) act: Option<Cycle>,
    /// Column command time.
    pub(super) issued: Cycle,
    pub(super) data_start: Cycle,
    pub(super) hit: bool,
}

/// One issued device command, recorded when `trace` is on (tests) so the
/// timing constraints can be checked from outside. `rank` and `bank` are
/// indices within the channel and rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Activate {
        channel: u64,
        rank: u64,
        bank: u64,
        row: u64,
        at: Cycle,
    },
    Precharge {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
    },
    /// The bank's row was closed by the all-bank refresh starting `at`.
    Refresh {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
    },
    Read {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
        data_end: Cycle,
    },
    Write {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
        data_end: Cycle,
    },
}

impl Plan {
    /// The commands of this plan, committed at `l` (`ids`: its channel,
    /// rank and bank numbers), in time order, appended to `out`.
    #[inline(never)]
    pub(super) fn push_commands(
        &self,
        (channel, rank, bank): (u64, u64, u64),
        l: Loc,
        is_write: bool,
        data_end: Cycle,
        out: &mut Vec<Command>,
    ) {
        if let Some(at) = self.refreshed {
            out.push(Command::Refresh {
                channel,
                rank,
                bank,
                at,
            });
        }
        if let Some(at) = self.pre {
            out.push(Command::Precharge {
                channel,
                rank,
                bank,
                at,
            });
        }
        if let Some(at) = self.act {
            out.push(Command::Activate {
                channel,
                rank,
                bank,
                row: l.row,
                at,
            });
        }
        let at = self.issued;
        out.push(if is_write {
            Command::Write {
                channel,
                rank,
                bank,
                at,
                data_end,
            }
        } else {
            Command::Read {
                channel,
                rank,
                bank,
                at,
                data_end,
            }
        });
    }

    /// Is this plan of a write at `w` unchanged by committing plan `p` of
    /// an access at `l` (before its reservations are pruned)? A plan is
    /// the earliest activate, then the earliest burst, meeting constraints
    /// that each reservation adds independently, so a new reservation
    /// that the planned commands already satisfy leaves it as it is.
    #[inline]
    pub(super) fn survives(
        &self,
        t: &DeviceTiming,
        w: Loc,
        l: Loc,
        is_write: bool,
        p: &Plan,
    ) -> bool {
        let wp = self;
        if w.ch != l.ch {
            return true;
        }
        if w.bank == l.bank {
            return false;
        }
        if let (Some(a), Some(na)) = (wp.act, p.act) {
            // `Rank::slot` looks only at activates within `reach` of its
            // candidate, and at no more than 16 of them: tRRD spacing keeps
            // fewer than that within reach unless 2 reach >= 15 tRRD, where
            // a new activate could displace one.
            let reach = t.t_faw.max(t.t_rrd);
            if w.rank == l.rank && ((na + reach > a && a + reach > na) || 2 * reach >= 15 * t.t_rrd)
            {
                return false;
            }
        }
        // `Channel::slot`'s test of one reservation, for the new burst.
        let (start, end) = (p.data_start, p.data_start + t.t_bl);
        end + Channel::gap(is_write, true, t) <= wp.data_start
            || wp.data_start + t.t_bl + Channel::gap(true, is_write, t) <= start
    }
}

/// What committing a plan did.
#[derive(Clone, Copy, Debug)]
pub(super) struct Committed {
    /// End of the access's data burst.
    pub(super) data_end: Cycle,
    /// The rank's old activates, or the channel's old bursts, were pruned.
    pub(super) acts_pruned: bool,
    pub(super) bursts_pruned: bool,
}

/// The state of every bank, rank and channel of one device.
#[derive(Clone, Debug)]
pub(super) struct DeviceState {
    pub(super) banks: Vec<Bank>,
    ranks: Vec<Rank>,
    channels: Vec<Channel>,
}

impl DeviceState {
    pub(super) fn new(t: &DeviceTiming) -> Self {
        let nranks = (t.channels * t.ranks) as usize;
        DeviceState {
            banks: vec![Bank::default(); nranks * t.banks as usize],
            ranks: vec![Rank::default(); nranks],
            channels: vec![Channel::default(); t.channels as usize],
        }
    }

    /// The commands of one 64 B access no earlier than `earliest`, without
    /// changing any state.
    #[inline]
    pub(super) fn plan(&self, t: &DeviceTiming, l: Loc, is_write: bool, earliest: Cycle) -> Plan {
        if t.t_refi == 0 {
            self.plan_no_refresh(t, l, is_write, earliest)
        } else {
            self.plan_refresh(t, l, is_write, earliest)
        }
    }

    /// [`Self::plan`] for a device without refresh (NVM): every
    /// `after_refresh` is the identity and the refresh epoch stays 0, so
    /// each slot search runs once (a slot search returns a time it
    /// accepts unchanged: the second search the general loops make returns
    /// the first's result).
    pub(super) fn plan_no_refresh(
        &self,
        t: &DeviceTiming,
        l: Loc,
        is_write: bool,
        earliest: Cycle,
    ) -> Plan {
        let bank = &self.banks[l.bank as usize];
        let hit = bank.open_row == Some(l.row);
        let (mut pre, mut act) = (None, None);
        let col = if hit {
            earliest.max(bank.next_col)
        } else {
            let mut act_ready = earliest;
            if bank.open_row.is_some() {
                let p = earliest.max(bank.next_pre);
                pre = Some(p);
                act_ready = p + t.t_rp;
            }
            let a =
                self.ranks[l.rank as usize].slot(act_ready.max(bank.next_act), t.t_rrd, t.t_faw);
            act = Some(a);
            // Activation senses the NVM array into the row buffer.
            a + t.act_to_col()
        };
        // Write latency (tCWL) is taken equal to tCL.
        let data_start = self.channels[l.ch as usize].slot(col + t.t_cl, is_write, t);
        Plan {
            refreshed: None,
            pre,
            act,
            issued: data_start - t.t_cl,
            data_start,
            hit,
        }
    }

    /// [`Self::plan`] for a device with refresh windows.
    pub(super) fn plan_refresh(
        &self,
        t: &DeviceTiming,
        l: Loc,
        is_write: bool,
        earliest: Cycle,
    ) -> Plan {
        let bank = &self.banks[l.bank as usize];
        let earliest = t.after_refresh(earliest);
        // An all-bank refresh since the bank's last command closed its row.
        let epoch = t.refresh_epoch(earliest);
        let refreshed = (t.t_refi > 0 && bank.open_row.is_some() && epoch > bank.epoch)
            .then(|| epoch * t.t_refi);
        let open = if refreshed.is_some() {
            None
        } else {
            bank.open_row
        };
        let hit = open == Some(l.row);
        let mut col = earliest.max(bank.next_col);
        let (mut pre, mut act) = (None, None);
        if !hit {
            let mut act_ready = earliest;
            if open.is_some() {
                let p = t.after_refresh(earliest.max(bank.next_pre));
                pre = Some(p);
                act_ready = p + t.t_rp;
            }
            let rank = &self.ranks[l.rank as usize];
            let mut a = act_ready.max(bank.next_act);
            loop {
                let r = t.after_refresh(a);
                a = rank.slot(r, t.t_rrd, t.t_faw);
                if a == r {
                    break;
                }
            }
            act = Some(a);
            // Activation senses the NVM array into the row buffer.
            col = a + t.act_to_col();
        }
        // Write latency (tCWL) is taken equal to tCL.
        let chan = &self.channels[l.ch as usize];
        let mut data_start = col + t.t_cl;
        loop {
            let s = chan.slot(data_start, is_write, t);
            let issued = t.after_refresh(s - t.t_cl);
            data_start = issued + t.t_cl;
            if data_start == s {
                break;
            }
        }
        Plan {
            refreshed,
            pre,
            act,
            issued: data_start - t.t_cl,
            data_start,
            hit,
        }
    }

    /// Carry out a planned access: reserve its activate and burst, update
    /// its bank. `busy`: a write's bank time after its burst; reservations
    /// ending before `horizon` may be pruned.
    pub(super) fn commit(
        &mut self,
        t: &DeviceTiming,
        l: Loc,
        is_write: bool,
        p: &Plan,
        busy: Cycle,
        horizon: Cycle,
    ) -> Committed {
        let b = l.bank as usize;
        let mut bank = self.banks[b];
        if p.refreshed.is_some() {
            bank.open_row = None;
        }
        let mut acts_pruned = false;
        if let Some(act) = p.act {
            acts_pruned = self.ranks[l.rank as usize].reserve(act, horizon);
            bank.open_row = Some(l.row);
            bank.next_act = act + t.t_rc;
            bank.next_pre = act + t.t_ras;
        }
        let data_end = p.data_start + t.t_bl;
        let issued = p.issued;
        let bursts_pruned = self.channels[l.ch as usize].reserve(
            Burst {
                start: p.data_start,
                end: data_end,
                write: is_write,
            },
            horizon,
        );
        if is_write {
            // Cells are programmed after the burst; the bank is busy meanwhile.
            let done = data_end + busy;
            bank.next_col = done;
            bank.next_pre = bank.next_pre.max(done);
        } else {
            bank.next_col = issued + t.t_bl;
            bank.next_pre = bank.next_pre.max(issued + t.t_rtp);
        }
        bank.epoch = t.refresh_epoch(issued);
        self.banks[b] = bank;
        Committed {
            data_end,
            acts_pruned,
            bursts_pruned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::timing::tests::nvm_like;
    use super::super::MemoryController;
    use super::*;
    use crate::types::{Purpose, LINE_BYTES};
    use proptest::prelude::*;

    /// The earlier, plainer `Channel::slot` (rescans from the first live
    /// entry after every conflict), kept as the reference for the version
    /// that goes on from the conflicting entry.
    fn channel_slot_reference(ch: &Channel, mut t: Cycle, write: bool, d: &DeviceTiming) -> Cycle {
        let bl = d.t_bl;
        let reach = (d.t_wtr + d.t_cl).max(d.t_rtw);
        let bursts = ch.bursts.live();
        let mut lo = bursts.partition_point(|b| b.end + reach <= t);
        'search: loop {
            while lo < bursts.len() && bursts[lo].end + reach <= t {
                lo += 1;
            }
            for b in &bursts[lo..] {
                if b.start >= t + bl + reach {
                    break;
                }
                let after_b = b.end + Channel::gap(b.write, write, d) <= t;
                let before_b = t + bl + Channel::gap(write, b.write, d) <= b.start;
                if !(after_b || before_b) {
                    t = b.end + Channel::gap(b.write, write, d);
                    continue 'search;
                }
            }
            return t;
        }
    }

    /// `Rank::slot` as a plain statement: the activates within tFAW reach
    /// of `t`, the first conflicting one in time order (tRRD) moves `t`
    /// past it; then, if at least four are near, the first 16 of them and
    /// `t` must hold no five within a window shorter than tFAW, else `t`
    /// moves by one cycle.
    fn rank_slot_reference(r: &Rank, mut t: Cycle, t_rrd: Cycle, t_faw: Cycle) -> Cycle {
        let reach = t_faw.max(t_rrd);
        loop {
            let near: Vec<Cycle> = (r.acts.live().iter().copied())
                .filter(|&a| a + reach > t && a < t + reach)
                .collect();
            if let Some(a) = near.iter().find(|&&a| a + t_rrd > t && t + t_rrd > a) {
                t = a + t_rrd;
                continue;
            }
            let mut with_t: Vec<Cycle> = near.iter().copied().take(16).chain([t]).collect();
            with_t.sort_unstable();
            let faw = |w: &[Cycle]| w[4] < w[0] + t_faw && w.contains(&t);
            if near.len() >= 4 && with_t.windows(5).any(faw) {
                t += 1;
                continue;
            }
            return t;
        }
    }

    proptest! {
        /// The bus slot search equals the reference on arbitrary sorted,
        /// disjoint reservation lists (gaps of any size, both directions),
        /// whether or not the list keeps the turnaround gaps itself.
        #[test]
        fn channel_slot_equals_reference(
            spans in proptest::collection::vec((0u64..60, 1u64..50, any::<bool>()), 0..40),
            t in 0u64..3000,
            write in any::<bool>(),
        ) {
            let d = nvm_like();
            let mut ch = Channel::default();
            let mut at = 0;
            for (gap, len, w) in spans {
                at += gap;
                ch.bursts.items.push(Burst { start: at, end: at + len, write: w });
                at += len;
            }
            prop_assert_eq!(ch.slot(t, write, &d), channel_slot_reference(&ch, t, write, &d));
        }

        /// The activate slot search equals the reference on arbitrary
        /// sorted activate lists, dense ones included (more than 16 within
        /// tFAW reach).
        #[test]
        fn rank_slot_equals_reference(
            gaps in proptest::collection::vec(0u64..30, 0..60),
            t in 0u64..1500,
            t_rrd in 1u64..12,
            t_faw in 1u64..80,
        ) {
            let mut r = Rank::default();
            let mut at = 0;
            for g in gaps {
                at += g;
                r.acts.items.push(at);
            }
            prop_assert_eq!(r.slot(t, t_rrd, t_faw), rank_slot_reference(&r, t, t_rrd, t_faw));
        }

        /// Without refresh, the single-pass plan equals the general one
        /// (which loops until every `after_refresh` leaves its time
        /// unchanged) for every access, on states built by random traffic.
        #[test]
        fn plan_without_refresh_equals_general_plan(
            ops in proptest::collection::vec((0u64..4096, any::<bool>(), 0u64..400), 1..200),
        ) {
            let mut mc = MemoryController::new(nvm_like(), true, true, false, 16, 12, 4);
            let mut now = 0;
            for (line, write, dt) in ops {
                now += dt;
                let addr = line * LINE_BYTES;
                let l = mc.map.decode(addr);
                for (is_write, earliest) in [(false, now), (true, now.saturating_sub(300))] {
                    prop_assert_eq!(
                        mc.dev.plan_no_refresh(&mc.timing, l, is_write, earliest),
                        mc.dev.plan_refresh(&mc.timing, l, is_write, earliest)
                    );
                }
                if write {
                    mc.write(addr, &[1u8; 64], Purpose::Demand, now);
                } else {
                    let mut buf = [0u8; 64];
                    mc.read(addr, &mut buf, Purpose::Demand, now);
                }
            }
        }
    }
}
