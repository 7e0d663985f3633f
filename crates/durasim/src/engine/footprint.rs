//! What a run implies, estimated before any work starts: the simulated
//! bytes of the workload's initial structure (as the workload declares
//! them, `WorkloadInfo::sizing`) against NVM capacity, and the host memory
//! of the caches, the images and the per-transaction records against this
//! host.

use crate::config::Params;
use crate::error::{Error, Result};
use crate::workloads::Sizing;

/// Host memory a run is allowed to plan for: this share of what the host
/// reports available (the estimate below is rough; the margin keeps the
/// host responsive).
pub const HOST_MEMORY_SHARE: f64 = 0.8;

/// Host memory available, from /proc/meminfo (`None` where unknown: the
/// host check is then skipped, the simulated-footprint checks still run).
pub fn host_memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// What a run implies, estimated before any work starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Footprint {
    /// Least simulated bytes one thread's initial structure needs.
    pub sim_bytes_per_thread: u64,
    /// Host bytes of the caches' state (tags, data, extensions).
    pub host_cache_bytes: u64,
    /// Host bytes of the simulated data (architectural image, NVM media,
    /// crash base image) including what the run's inserts add.
    pub host_data_bytes: u64,
    /// Host bytes of per-transaction records (latency samples; with
    /// history: committed write sets and the persist log).
    pub host_tx_bytes: u64,
}

impl Footprint {
    pub fn host_bytes(&self) -> u64 {
        self.host_cache_bytes
            .saturating_add(self.host_data_bytes)
            .saturating_add(self.host_tx_bytes)
    }
}

/// Estimate a run's footprint (saturating; lower bounds for the simulated
/// data, rough upper bounds for host state).
pub fn footprint(p: &Params, sizing: &Sizing, threads: usize, tx: u64, history: bool) -> Footprint {
    let line = crate::types::LINE_BYTES;
    let t = threads as u64;
    // Host bytes per cache slot: the LLC holds tags (16 B), data (64 B) and
    // the scheme extension (8 B); private caches link to it (16 B).
    let llc_lines = p.u64("cache.llc_size_bytes") / line;
    let private_lines = (p.u64("cache.l1_size_bytes") + p.u64("cache.l2_size_bytes")) / line;
    let host_cache_bytes = llc_lines
        .saturating_mul(88)
        .saturating_add(t.saturating_mul(private_lines).saturating_mul(16));
    let sim_bytes_per_thread = sizing.initial_bytes(p);
    let per_tx = sizing.tx_bytes(p);
    let grown = sim_bytes_per_thread
        .saturating_mul(t)
        .saturating_add(tx.saturating_mul(per_tx));
    // Architectural image + NVM media (+ the crash base image and one
    // crash worker's working image with history; how many workers run at
    // once is capped by the memory left after the recording,
    // `crash::parallel::parallel_plan`).
    let copies = if history { 4 } else { 2 };
    let host_data_bytes = grown.saturating_mul(copies);
    // A latency sample per transaction; with history, each transaction's
    // written words (16 B per 8 B word) and its persist events (data plus
    // a log copy and event headers): about 8 bytes per item byte.
    let host_tx_bytes = if history {
        tx.saturating_mul(per_tx.saturating_mul(8).saturating_add(256))
    } else {
        tx.saturating_mul(4)
    };
    Footprint {
        sim_bytes_per_thread,
        host_cache_bytes,
        host_data_bytes,
        host_tx_bytes,
    }
}

/// A host structure allocated whole when the run is built and sized by
/// parameters (sparse images and maps cost only what a run touches and
/// are charged as simulated data instead).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTable {
    pub what: &'static str,
    /// The parameters that size it.
    pub fields: &'static [&'static str],
    pub bytes: u64,
}

/// The whole-allocated tables of a run of `scheme`: the Optane DIMM's AIT
/// cache (EHOU keeps a second copy and a flag per slot), the hybrid DRAM
/// cache's tag arrays, DPC's and ThyNVM's translation tables.
pub fn host_tables(p: &Params, scheme: &str) -> Vec<HostTable> {
    let mut out = Vec::new();
    let slots = p
        .u64("dimm.ait_cache_sets")
        .saturating_mul(p.u64("dimm.ait_cache_ways"));
    let ait_entry = crate::mem::optane::AitCache::HOST_BYTES_PER_SLOT;
    let ait_copies = u64::from(p.str("dimm.model") == "optane") + u64::from(scheme == "ehou");
    if ait_copies > 0 {
        let per_slot = ait_copies * ait_entry + u64::from(scheme == "ehou");
        out.push(HostTable {
            what: "AIT cache",
            fields: &["dimm.ait_cache_sets", "dimm.ait_cache_ways"],
            bytes: slots.saturating_mul(per_slot),
        });
    }
    let dram_pages = p.u64("hybrid.dram_cache_bytes") / crate::mem::image::PAGE_BYTES;
    if dram_pages > 0 {
        // Tag, LRU stamp and dirty vector per page slot.
        out.push(HostTable {
            what: "DRAM cache tags",
            fields: &["hybrid.dram_cache_bytes"],
            bytes: dram_pages.saturating_mul(24),
        });
    }
    match scheme {
        "dpc" => out.push(HostTable {
            what: "DPT",
            fields: &["dpc.pool_bytes", "dpc.cached_entries"],
            bytes: crate::schemes::checkpoint::dpc::host_table_bytes(p),
        }),
        "thynvm" => out.push(HostTable {
            what: "BTT and PTT",
            fields: &["thynvm.btt_entries", "thynvm.ptt_entries"],
            bytes: crate::schemes::checkpoint::thynvm::host_table_bytes(p),
        }),
        _ => {}
    }
    out
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The workload's checks of a run, after `config::validate_run`: key
/// space, the simulated footprint against NVM capacity and the implied
/// host memory against this host (`host_available`; `None` skips that
/// check).
#[allow(clippy::too_many_arguments)]
pub fn check(
    p: &Params,
    sizing: &Sizing,
    scheme: &str,
    threads: usize,
    tx: u64,
    history: bool,
    host_available: Option<u64>,
) -> Result<()> {
    let items = p.u64("workload.initial_items");
    let keys = p.u64("workload.key_space");
    // Keys are drawn from [1, key_space): each initial item needs its own.
    if sizing.keyed() && keys <= items {
        return Err(Error::input(format!(
            "invalid value '{keys}' for 'workload.key_space': keys are drawn from [1, key_space) and each of the workload.initial_items={items} items needs a distinct key; expected more than {items}"
        )));
    }
    let f = footprint(p, sizing, threads, tx, history);
    let cap = p.u64("nvm.capacity_bytes");
    let region = cap / threads.max(1) as u64;
    if f.sim_bytes_per_thread > region {
        let key = sizing.initial_params();
        return Err(Error::input(format!(
            "the initial structure needs at least {} bytes per thread ({key}), more than nvm.capacity_bytes={cap} gives each of {threads} threads ({region} bytes); lower {key} or raise nvm.capacity_bytes",
            f.sim_bytes_per_thread
        )));
    }
    if let Some(avail) = host_available {
        let budget = (avail as f64 * HOST_MEMORY_SHARE) as u64;
        let tables = host_tables(p, scheme);
        let table_bytes = tables
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.bytes));
        let total = f.host_bytes().saturating_add(table_bytes);
        if total > budget {
            // Name the tables that matter first: they are what the user
            // just set (a table alone can exceed any host).
            let mut big: Vec<&HostTable> = tables.iter().filter(|t| t.bytes > total / 8).collect();
            big.sort_by_key(|t| std::cmp::Reverse(t.bytes));
            let mut lower: Vec<&str> = big.iter().flat_map(|t| t.fields.iter().copied()).collect();
            lower.extend(sizing.items_param.filter(|k| p.u64(k) > 0));
            lower.extend([
                "cache.llc_size_bytes",
                "workload.initial_items",
                "workload.item_bytes",
                "workload.footprint_bytes",
                "--tx or --threads",
            ]);
            let tables_text = tables
                .iter()
                .map(|t| format!(", {} {} ({})", t.what, gib(t.bytes), t.fields.join(", ")))
                .collect::<String>();
            return Err(Error::input(format!(
                "this configuration needs about {} of host memory (caches {}, simulated data {}, per-transaction records {}{tables_text}), more than the {} this host can give (80% of {} available); lower {}",
                gib(total),
                gib(f.host_cache_bytes),
                gib(f.host_data_bytes),
                gib(f.host_tx_bytes),
                gib(budget),
                gib(avail),
                lower.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads;

    /// Workloads that update in place are not charged an insert per
    /// transaction: the paper-scale dpc run (ycsb, 4 x 150k 1 KB records,
    /// 20M operations) fits; a growing workload at that count does not.
    #[test]
    fn footprint_charges_inserts_only_to_growing_workloads() {
        let mut p = Params::defaults(&[]);
        p.set_str("workload.item_bytes", "1024").unwrap();
        p.set_str("workload.initial_items", "150000").unwrap();
        let sizing = |w| workloads::find(w).unwrap().sizing;
        let ycsb = footprint(&p, &sizing("ycsb"), 4, 20_000_000, false);
        assert_eq!(ycsb.host_data_bytes, 2 * 4 * 150_000 * 1024);
        let btree = footprint(&p, &sizing("btree"), 4, 20_000_000, false);
        assert!(btree.host_data_bytes > 20 * ycsb.host_data_bytes);
    }

    /// Whole-allocated tables count: an AIT cache at its documented
    /// maximum (2^24 sets x 256 ways, 260 GiB of host entries with EHOU's
    /// copy) is refused naming its fields, not left to abort the
    /// allocation; the paper machines' tables are small.
    #[test]
    fn tables_sized_by_parameters_are_charged_and_named() {
        let host = Some(64u64 << 30);
        let sizing = workloads::find("btree").unwrap().sizing;
        let mut p = Params::defaults(&[]);
        p.set_str("dimm.model", "optane").unwrap();
        assert!(check(&p, &sizing, "ehou", 1, 20, false, host).is_ok());
        p.set_str("dimm.ait_cache_sets", "16777216").unwrap();
        p.set_str("dimm.ait_cache_ways", "256").unwrap();
        let e = check(&p, &sizing, "ehou", 1, 20, false, host)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("AIT cache") && e.contains("lower dimm.ait_cache_sets, dimm.ait_cache_ways"),
            "{e}"
        );
        let t = host_tables(&p, "ehou");
        assert_eq!(t[0].bytes, (1u64 << 32) * 65);
        let dpc = crate::schemes::checkpoint::dpc::PARAMS;
        let mut p = Params::defaults(&[dpc]);
        p.set_str("dpc.cached_entries", "1000000000").unwrap();
        let e = check(&p, &sizing, "dpc", 1, 20, false, Some(4 << 30))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("lower dpc.pool_bytes, dpc.cached_entries"),
            "{e}"
        );
        // Another scheme does not build the DPT.
        assert!(check(&p, &sizing, "ideal", 1, 20, false, Some(4 << 30)).is_ok());
        let mut p = Params::defaults(&[crate::schemes::checkpoint::thynvm::PARAMS]);
        p.set_str("thynvm.btt_entries", "1000000000").unwrap();
        let e = check(&p, &sizing, "thynvm", 1, 20, false, Some(4 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lower thynvm.btt_entries"), "{e}");
        let mut p = Params::defaults(&[]);
        p.set_str("hybrid.dram_cache_bytes", "1099511627776")
            .unwrap();
        assert_eq!(host_tables(&p, "ideal")[0].bytes, (1u64 << 28) * 24);
    }

    /// A workload's own count parameter replaces workload.initial_items in
    /// the estimate (1e9 YCSB records are 1 TB of simulated data).
    #[test]
    fn own_count_parameters_size_the_structure() {
        let mut p = Params::defaults(&[]);
        p.set_str("nvm.capacity_bytes", "1200000000000000").unwrap();
        p.set_str("workload.ycsb_records", "1000000000").unwrap();
        let ycsb = workloads::find("ycsb").unwrap().sizing;
        assert_eq!(
            footprint(&p, &ycsb, 1, 10, false).sim_bytes_per_thread,
            1024 * 1_000_000_000
        );
        let e = check(&p, &ycsb, "ideal", 1, 10, false, Some(64 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.ycsb_records"), "{e}");
        for (w, k) in [
            ("tatp", "workload.tatp_subscribers"),
            ("echo", "workload.echo_keys"),
            ("pagerank", "workload.graph_vertices"),
            ("cc", "workload.graph_vertices"),
            ("cd", "workload.graph_vertices"),
        ] {
            let mut p = Params::defaults(&[]);
            p.set_str(k, "1000000000").unwrap();
            let s = workloads::find(w).unwrap().sizing;
            assert!(
                footprint(&p, &s, 1, 10, false).sim_bytes_per_thread >= 32_000_000_000,
                "{w}"
            );
        }
    }

    /// The declared sizes give the numbers the check used when it named
    /// the workloads: ycsb's 1 KB default record, tpcc's fixed records and
    /// 1,984 B per order (the order record and 15 order lines, each its own
    /// 128 B-strided allocation), a program's `workload.footprint_bytes`.
    #[test]
    fn declared_sizes() {
        let mut p = Params::defaults(&[]);
        p.set_str("workload.initial_items", "1000").unwrap();
        let fp = |p: &Params, w| footprint(p, &workloads::find(w).unwrap().sizing, 1, 10, false);
        let f = |w| fp(&p, w);
        assert_eq!(f("ycsb").sim_bytes_per_thread, 1000 * 1024);
        assert_eq!(f("btree").sim_bytes_per_thread, 1000 * 64);
        let tpcc = f("tpcc");
        assert_eq!(
            tpcc.sim_bytes_per_thread,
            p.u64("workload.tpcc_items") * 128
                + p.u64("workload.tpcc_customers_per_district") * 640
        );
        assert_eq!(
            tpcc.host_data_bytes,
            2 * (tpcc.sim_bytes_per_thread + 10 * (64 + 15 * 128))
        );
        for w in workloads::PROGRAMS {
            let s = workloads::find(w).unwrap().sizing;
            let own = workloads::Sizing {
                items_param: s.items_param,
                ..workloads::Sizing::PROGRAM
            };
            assert_eq!(s, own, "{w}");
        }
        p.set_str("workload.footprint_bytes", "1MB").unwrap();
        assert_eq!(fp(&p, "pagerank").sim_bytes_per_thread, 1 << 20);
        assert_eq!(fp(&p, "pagerank").host_data_bytes, 2 << 20);
    }
}
