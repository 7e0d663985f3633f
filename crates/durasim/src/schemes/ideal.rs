//! The native system: no persistence support. Stores reach NVM only through
//! ordinary write-backs; TxBegin/TxEnd cost nothing. Upper bound on speed and
//! the crash oracle's negative control: it must fail crash verification.

use super::{
    no_reserve, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
};
use crate::config::Params;
use crate::error::Result;
use crate::mem::MemWrite;
use crate::types::{CoreId, Cycle};

pub static INFO: SchemeInfo = SchemeInfo {
    name: "ideal",
    description: "native system without persistence support (upper bound; not crash-consistent)",
    durability: Durability::None,
    params: &[],
    reserved_bytes: no_reserve,
    build,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: None,
        tx: 10_000,
        reaches: "no background mechanism (the native system)",
        needs: None,
    },
};

struct Ideal;

fn build(_: &Params, _: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Ideal))
}

/// Nothing to recover: whatever reached the media is the state.
fn recover(_: &mut dyn MemWrite, _: &Params, _: &Layout) -> Result<RecoveryReport> {
    Ok(RecoveryReport::default())
}

impl Scheme for Ideal {
    fn tx_end(&mut self, _ctx: &mut MemCtx, _core: CoreId, now: Cycle) -> Cycle {
        now
    }
}
