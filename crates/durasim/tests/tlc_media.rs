//! The data-aware TLC device with encoders (README "Data-aware NVM"): every
//! shipped scheme passes its crash test on it with SLDE (the crash image
//! holds what the read path decodes from the programmed cells), and after a
//! run the decoded cells equal the controller's functional image.

use durasim::config::Params;
use durasim::crash::{self, CrashOptions};
use durasim::mem::MemRead;
use durasim::schemes::Durability;
use durasim::{Engine, RunSpec};

fn tlc_spec(scheme: &str, workload: &str, encoding: &str) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/morlog.toml");
    s.params
        .apply_toml(&std::fs::read_to_string(preset).unwrap(), preset)
        .unwrap();
    s.params.set_str("nvm.encoding", encoding).unwrap();
    s.params.set_str("workload.initial_items", "64").unwrap();
    s.threads = 2;
    s.tx = 100;
    s.seed = 7;
    s
}

/// CI: every shipped scheme, TLC + SLDE, every crash point (clean and torn)
/// of a small btree run.
#[test]
fn every_scheme_survives_crashes_on_tlc_with_slde() {
    for info in durasim::schemes::REGISTRY {
        if info.durability == Durability::None {
            continue;
        }
        let s = tlc_spec(info.name, "btree", "slde");
        let opts = CrashOptions {
            torn: true,
            ..CrashOptions::default()
        };
        let r = crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
        assert!(r.persist_events > 50, "{}", info.name);
        assert_eq!(
            r.violations,
            0,
            "{}: {}",
            info.name,
            r.first_violation
                .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                .unwrap_or_default()
        );
    }
}

/// Without ADR a persist event is a programmed line: its bytes come from
/// the decoded cells.
#[test]
fn crashes_without_adr_read_decoded_cells() {
    for enc in ["fpc", "crade", "slde"] {
        let mut s = tlc_spec("opt-redo", "hashmap", enc);
        s.params.set_str("mc.adr", "false").unwrap();
        let r = crash::crashtest(s, &CrashOptions::default(), &mut |_, _| {}).unwrap();
        assert_eq!(
            r.violations,
            0,
            "{enc}: {:?}",
            r.first_violation.map(|v| v.message)
        );
    }
}

/// After a run every programmed line decodes to the functional content, and
/// the report carries the media block.
#[test]
fn decoded_cells_equal_the_image() {
    for enc in ["none", "fpc", "crade", "slde"] {
        let mut e = Engine::new(tlc_spec("opt-undo", "rbtree", enc)).unwrap();
        e.run(&mut |_| {}).unwrap();
        e.finish();
        let m = e.ctx.nvm.cells.as_ref().expect("tlc media");
        let lines = m.lines();
        assert!(lines.len() > 100, "{enc}: {} lines", lines.len());
        for l in lines {
            assert_eq!(
                m.stored(l).unwrap(),
                e.ctx.nvm.media().read_line(l),
                "{enc} line {l:#x}"
            );
        }
        let j = e.report_json();
        let media = &j["nvm_media"];
        assert!(
            media["bits_programmed_total"].as_u64().unwrap() > 0,
            "{enc}"
        );
        assert!(
            media["write_energy_pj"]["log"].as_f64().unwrap() > 0.0,
            "{enc}"
        );
    }
}

/// The default device builds no media and reports no media block.
#[test]
fn default_device_has_no_media() {
    let mut s = RunSpec::new("opt-redo", "vector").unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.tx = 50;
    s.threads = 1;
    let mut e = Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    assert!(e.ctx.nvm.cells.is_none());
    assert!(e.report_json().get("nvm_media").is_none());
}
