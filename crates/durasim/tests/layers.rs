//! The layers of docs/ARCHITECTURE.md, checked against the source: a module
//! may name (`crate::x`, `super::..` staying inside itself) only modules on
//! a lower floor, so the crate has no import loop and nothing reaches up.
//! Test code (`#[cfg(test)]` modules, `tests.rs` files) is exempt: a unit
//! test may build an engine to drive the module it tests.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Floor of each top-level module (higher may import lower, never the
/// reverse; equal floors may not import each other).
const FLOORS: &[(&str, u32)] = &[
    ("types", 1),
    ("error", 1),
    ("alloc", 1),
    ("config", 2),
    ("mem", 3),
    ("cache", 3),
    ("recovery", 4),
    ("workloads", 4),
    ("stats", 4),
    ("trace", 4),
    ("schemes", 5),
    ("engine", 6),
    ("crash", 7),
    ("cli", 8),
];

fn floor(m: &str) -> Option<u32> {
    FLOORS.iter().find(|(n, _)| *n == m).map(|(_, f)| *f)
}

/// The crate's `src/` and every Rust file under it.
fn sources() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    (src, files)
}

/// The identifier `s` starts with (empty if none).
fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The production part of a source file: everything before its first
/// `#[cfg(test)]` module (test modules sit at the end by convention).
fn production(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim() == "#[cfg(test)]" {
            if let Some(next) = lines.peek() {
                let n = next.trim_start();
                if n.starts_with("mod ")
                    || n.starts_with("pub mod ")
                    || n.starts_with("pub(crate) mod ")
                {
                    break;
                }
            }
            // A single test-only item (function, impl): skip it up to the
            // next blank line.
            for l in lines.by_ref() {
                if l.trim().is_empty() {
                    break;
                }
            }
            continue;
        }
        // Comments may name any module.
        let code = l.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Top-level modules that `src` names through `crate::`.
fn named_modules(src: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in src.match_indices("crate::") {
        let name = ident(&src[i + 7..]);
        if !name.is_empty() {
            found.push(name);
        }
    }
    found
}

#[test]
fn no_module_imports_a_higher_or_equal_floor() {
    let (src, files) = sources();
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let Some(own) = floor(&module) else {
            // lib.rs and bin/ sit above everything.
            continue;
        };
        let text = production(&fs::read_to_string(f).unwrap());
        for m in named_modules(&text) {
            if m == module {
                continue;
            }
            let Some(theirs) = floor(&m) else {
                continue;
            };
            if theirs >= own {
                violations
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(format!("{module} (floor {own}) -> {m} (floor {theirs})"));
            }
        }
    }
    for v in violations.values_mut() {
        v.sort();
        v.dedup();
    }
    assert!(
        violations.is_empty(),
        "imports against the layers of docs/ARCHITECTURE.md:\n{violations:#?}"
    );
}

#[test]
fn every_top_level_module_has_a_floor() {
    let lib = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for l in lib.lines() {
        if let Some(m) = l.strip_prefix("pub mod ").and_then(|r| r.strip_suffix(';')) {
            assert!(
                floor(m).is_some(),
                "module `{m}` has no floor in tests/layers.rs (and docs/ARCHITECTURE.md)"
            );
        }
    }
}

#[test]
fn crash_and_config_name_no_scheme_or_workload() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let scheme_names = [
        "\"hoop\"",
        "\"opt-undo\"",
        "\"opt-redo\"",
        "\"lad\"",
        "\"osp\"",
        "\"lsm\"",
        "\"dpc\"",
        "\"fwb\"",
        "\"fwb-unsafe\"",
        "\"redu\"",
        "\"morlog\"",
        "\"morlog-dp\"",
        "\"ehou\"",
        "\"thynvm\"",
        "\"page-overlay\"",
        "\"ckpt-logging\"",
        "\"ckpt-cow\"",
        "\"dudetm\"",
        "\"pmdk-undo\"",
    ];
    let workload_names = [
        "\"tpcc\"",
        "\"ycsb\"",
        "\"array\"",
        "\"sps\"",
        "\"hashtable\"",
    ];
    let mut files = Vec::new();
    rust_files(&src.join("crash"), &mut files);
    files.push(src.join("config.rs"));
    for f in files {
        let text = production(&fs::read_to_string(&f).unwrap());
        for n in scheme_names.iter().chain(&workload_names) {
            assert!(
                !text.contains(n),
                "{} names {n}: capabilities belong in the registry entries",
                f.display()
            );
        }
    }
}

/// The sibling files of one module that `src` (a file of that module, not
/// its `mod.rs`) names through `super::` (`super::log::Seg`,
/// `super::{log::Seg, layout::X}`); `super::Name` alone is the parent.
fn named_siblings(src: &str, siblings: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut note = |name: String, rest: &str| {
        if rest.starts_with("::") && siblings.contains(&name) {
            found.push(name);
        }
    };
    for (i, _) in src.match_indices("super::") {
        // `super::super::x` names the grandparent's `x`, not a sibling.
        if src[..i].ends_with("super::") {
            continue;
        }
        let rest = &src[i + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            for part in body.split(',') {
                let part = part.trim();
                let name = ident(part);
                note(name.clone(), &part[name.len()..]);
            }
        } else {
            let name = ident(rest);
            note(name.clone(), &rest[name.len()..]);
        }
    }
    found
}

/// Within a module, files name each other in one direction only: two
/// sibling files that import each other are an import loop the floors
/// above cannot see.
#[test]
fn no_two_files_of_a_module_import_each_other() {
    let (src, files) = sources();
    let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if name != "mod.rs" && name != "tests.rs" && name != "lib.rs" {
            by_dir
                .entry(f.parent().unwrap().to_path_buf())
                .or_default()
                .push(f);
        }
    }
    let mut loops = Vec::new();
    for (dir, files) in &by_dir {
        let stem = |f: &PathBuf| f.file_stem().unwrap().to_string_lossy().to_string();
        let names: Vec<String> = files.iter().map(stem).collect();
        let edges: BTreeMap<String, Vec<String>> = files
            .iter()
            .map(|f| {
                let text = production(&fs::read_to_string(f).unwrap());
                (stem(f), named_siblings(&text, &names))
            })
            .collect();
        // Depth-first search for a cycle (0 unvisited, 1 on the path, 2 done).
        fn visit(
            n: &str,
            edges: &BTreeMap<String, Vec<String>>,
            state: &mut BTreeMap<String, u8>,
            path: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            match state.get(n) {
                Some(1) => {
                    let at = path.iter().position(|p| p == n).unwrap();
                    let mut c = path[at..].to_vec();
                    c.push(n.to_string());
                    return Some(c);
                }
                Some(2) => return None,
                _ => {}
            }
            state.insert(n.to_string(), 1);
            path.push(n.to_string());
            for m in edges.get(n).into_iter().flatten() {
                if let Some(c) = visit(m, edges, state, path) {
                    return Some(c);
                }
            }
            path.pop();
            state.insert(n.to_string(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for n in &names {
            if let Some(c) = visit(n, &edges, &mut state, &mut Vec::new()) {
                let rel = dir.strip_prefix(&src).unwrap().display().to_string();
                loops.push(format!("{rel}: {}", c.join(" -> ")));
                break;
            }
        }
    }
    assert!(
        loops.is_empty(),
        "files that import each other:\n{loops:#?}"
    );
}

#[test]
fn named_siblings_reads_paths_and_groups() {
    let sib = [
        "log".to_string(),
        "layout".to_string(),
        "cleaning".to_string(),
    ];
    let src = "use super::log::{Seg, SegState};\nuse super::{GcKind, Lsm};\n\
               use super::{layout::decode, Lsm as L};\nlet x = super::cleaning::f();";
    assert_eq!(named_siblings(src, &sib), ["log", "layout", "cleaning"]);
    // The parent's items are not siblings, even when a sibling shares the
    // name, and neither are the grandparent's files.
    assert!(named_siblings("use super::log;", &sib).is_empty());
    assert!(named_siblings("use super::super::log::X;", &sib).is_empty());
}
