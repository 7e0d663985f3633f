//! Each scheme runs by default on the machine its paper defines, for as
//! long as its background mechanism needs; `--config default` is the bare
//! machine; a scheme without the hardware it needs is warned about.

use durasim::cli::compare::grid_setup;
use durasim::cli::{build_params, hardware_warning, spec_for, CommonArgs, MachineChoice};
use durasim::config::Params;
use durasim::schemes::{self, machines};

fn common(config: Option<&str>) -> CommonArgs {
    CommonArgs {
        config: config.map(str::to_string),
        set: vec![],
        threads: None,
        tx: None,
        seed: 1,
    }
}

#[test]
fn every_scheme_names_its_papers_machine_and_length() {
    for s in schemes::REGISTRY {
        let d = &s.defaults;
        assert!(d.tx >= 10_000, "{}: default run of {} tx", s.name, d.tx);
        assert!(!d.reaches.is_empty(), "{}", s.name);
        if s.name != "ideal" {
            assert!(d.machine.is_some(), "{} names no paper machine", s.name);
        }
    }
    let paper = |n: &str| schemes::find(n).unwrap().defaults.machine.map(|m| m.paper);
    assert_eq!(paper("hoop"), Some("hoop"));
    assert_eq!(paper("dpc"), Some("dpc"));
    assert_eq!(paper("thynvm"), Some("dpc"));
    assert_eq!(paper("morlog-slde"), Some("morlog"));
    assert_eq!(paper("ehou"), Some("ehou"));
    assert_eq!(paper("ideal"), None);
}

#[test]
fn the_embedded_presets_are_the_files_in_configs() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
    for m in machines::MACHINES {
        let on_disk = std::fs::read_to_string(format!("{root}{}", m.path)).unwrap();
        assert_eq!(on_disk, m.toml, "{}", m.path);
    }
}

#[test]
fn the_hoop_machine_is_the_bare_machine() {
    // So that the HOOP paper's schemes, `ideal`, and every run that gave no
    // --config before the machines were named, measure the same machine.
    let bare = Params::defaults(&schemes::all_params());
    let mut hoop = bare.clone();
    hoop.apply_toml(machines::HOOP.toml, machines::HOOP.path)
        .unwrap();
    assert!(hoop.overrides().is_empty(), "{:?}", hoop.overrides());
}

#[test]
fn no_config_is_the_papers_machine_and_default_is_the_bare_one() {
    let p = build_params("dpc", &common(None)).unwrap();
    assert_eq!(p.u64("hybrid.dram_cache_bytes"), 256 << 20);
    let p = build_params("ehou", &common(None)).unwrap();
    assert_eq!(p.str("dimm.model"), "optane");
    let p = build_params("dpc", &common(Some("default"))).unwrap();
    assert_eq!(p.u64("hybrid.dram_cache_bytes"), 0);
    // The dual-page checkpointing paper's software schemes run on its
    // machine without the DRAM cache (§5.1.2): with it they would not be
    // crash-consistent, and are warned about.
    let p = build_params("pmdk-undo", &common(None)).unwrap();
    assert_eq!(p.u64("hybrid.dram_cache_bytes"), 0);
    assert_eq!(p.u64("nvm.capacity_bytes"), 8 << 30);
    assert_eq!(hardware_warning("pmdk-undo", &p), None);
    let dpc_toml = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/dpc.toml");
    let p = build_params("dudetm", &common(Some(dpc_toml))).unwrap();
    assert!(hardware_warning("dudetm", &p)
        .unwrap()
        .contains("not crash-consistent"));

    let spec = spec_for("dpc", "btree", &common(None)).unwrap();
    assert_eq!((spec.threads, spec.tx), (4, 80_000));
    let spec = spec_for("dpc", "btree", &common(Some("default"))).unwrap();
    assert_eq!((spec.threads, spec.tx), (8, 80_000));
    let mut c = common(None);
    c.threads = Some(2);
    c.tx = Some(100);
    let spec = spec_for("hoop", "btree", &c).unwrap();
    assert_eq!((spec.threads, spec.tx), (2, 100));
}

#[test]
fn missing_hardware_is_named() {
    let bare = build_params("dpc", &common(Some("default"))).unwrap();
    let w = hardware_warning("dpc", &bare).unwrap();
    assert!(
        w.contains("DRAM cache") && w.contains("configs/dpc.toml"),
        "{w}"
    );
    let p = build_params("dpc", &common(None)).unwrap();
    assert_eq!(hardware_warning("dpc", &p), None);
    let bare = build_params("ehou", &common(Some("default"))).unwrap();
    let w = hardware_warning("ehou", &bare).unwrap();
    assert!(
        w.contains("Optane") && w.contains("configs/ehou.toml"),
        "{w}"
    );
    assert_eq!(hardware_warning("hoop", &bare), None);
}

#[test]
fn compare_puts_a_grid_on_one_machine_and_says_which() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let c = common(None);
    let g = grid_setup(&names(&["ideal", "dpc", "thynvm"]), "ideal", &c).unwrap();
    assert!(matches!(g.machine, MachineChoice::Paper(m) if m.paper == "dpc"));
    assert!(g.warnings.is_empty());
    assert_eq!(g.tx, 80_000);
    assert!(g.note.unwrap().contains("configs/dpc.toml"));

    let g = grid_setup(&names(&["hoop", "dpc"]), "dpc", &c).unwrap();
    assert!(matches!(g.machine, MachineChoice::Paper(m) if m.paper == "dpc"));
    let w = g.warnings.join("\n");
    assert!(
        w.contains("hoop (configs/hoop.toml): hoop")
            && w.contains("dpc (configs/dpc.toml): dpc")
            && w.contains("every run uses configs/dpc.toml"),
        "{w}"
    );
    assert_eq!(g.tx, 300_000);

    let c = common(Some("configs/hoop.toml"));
    let g = grid_setup(&names(&["hoop", "dpc"]), "hoop", &c).unwrap();
    assert!(matches!(
        g.machine,
        MachineChoice::File("configs/hoop.toml")
    ));
    assert!(g.warnings.is_empty() && g.note.is_none());
}
