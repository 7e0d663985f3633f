//! What a violation's differing word is: the workload's data structure and
//! field holding it (`workloads::labels`), named from the image of the
//! closest committed prefix, for the first violation's message only.

use super::oracle::Oracle;
use super::worker::Shared;
use crate::types::Addr;
use crate::workloads::labels::describe_violation_word;

/// The structure holding word `addr` of thread `t`'s region, as the image
/// of its first `prefix` transactions lays it out; a word outside every
/// object there (a node the next transactions allocate) is named from the
/// image of the first later transaction that wrote it, and says so.
pub(super) fn word_label(
    sh: &Shared,
    oracle: &Oracle,
    t: usize,
    addr: Addr,
    prefix: u64,
) -> String {
    let Ok(info) = crate::workloads::find(&sh.spec.workload) else {
        return "structure unknown".into();
    };
    let later = || {
        let (j, _) = sh.per_thread[t]
            .iter()
            .enumerate()
            .skip(prefix as usize)
            .find(|(_, r)| {
                sh.tx_writes[r.writes.clone()]
                    .iter()
                    .any(|&(a, _)| a == addr)
            })?;
        Some((j, oracle.prefix_image(t, j as u64 + 1)))
    };
    describe_violation_word(
        info.describe,
        &oracle.prefix_image(t, prefix),
        later,
        sh.layout.thread_base(t),
        sh.item_bytes,
        addr,
    )
}
