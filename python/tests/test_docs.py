"""The commands and snippets of the README and the user guide (docs/guide/),
run as a newcomer would, at small sizes (`make docs`).

- ```python blocks: the blocks of one page, joined, saved as a script and
  run (the README's also piped into an interpreter, as typed at the prompt).
  Transaction and crash-point counts are shrunk (``tx=``, ``"tx":``,
  ``points=`` literals become 200).
- ```sh blocks: each command (continuation lines joined, comments
  dropped) runs in bash in a scratch directory that links `configs/` and
  `scripts/`, with the release CLI and the venv's `durasim-lab` on PATH,
  after the page's earlier commands (so `trace replay` finds the trace a
  `run` wrote). `durasim run|compare|crashtest` get at most 300 (crashtest
  200) transactions; `durasim-lab reproduce` runs at `--scale tiny`, in
  this process's scheduler, one experiment unless `--only` names some.
  Build and test commands (`make`, `cargo`, `export`, ...) are not run
  here: `make test` runs them.
- A block preceded by ``<!-- docs-test: skip (why) -->`` is not run (a
  cluster, SLURM, a multi-minute build); ``<!-- docs-test: exit N -->``
  expects exit code N from each of its commands.

Links, anchors, quoted code and the generated reference are checked by
`scripts/docs.py check`, which this file also runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_dir import load_script

ROOT = Path(__file__).resolve().parents[2]
TX = re.compile(r'(\btx=|"tx":\s*|\bpoints=)\d[\d_]*')
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").rglob("*.md"))]
NOT_RUN = ("make", "cargo", "export", "pip", "git", "valgrind", "source", "dask")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
MARK = re.compile(r"<!-- docs-test: (skip|exit (\d+))[^>]*-->\s*$")


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """(language, code, marker) of every fenced block of a page."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        out.append((m[1].strip(), m[2], mark[1] if mark else None))
    return out


def bin_dir() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return (target if target.is_absolute() else ROOT / target) / "release"


def env() -> dict[str, str]:
    venv_bin = Path(sys.executable).parent
    path = f"{bin_dir()}{os.pathsep}{venv_bin}{os.pathsep}{os.environ['PATH']}"
    return dict(os.environ, PATH=path, COLUMNS="100")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    for name in ("configs", "scripts"):
        (d / name).symlink_to(ROOT / name)
    return d


def test_every_block_says_its_language():
    bare = [rel(p) for p in PAGES for lang, _, _ in blocks(p) if not lang]
    assert not bare, f"code blocks without a language (sh, python, text, ...): {bare}"


def test_readme_python_is_the_quick_start():
    src = "\n".join(code for lang, code, _ in blocks(ROOT / "README.md") if lang == "python")
    assert "durasim.sweep(" in src and "durasim.run(" in src and "durasim.crashtest(" in src


def python_of(page: Path) -> str:
    code = [c for lang, c, mark in blocks(page) if lang == "python" and mark != "skip"]
    return "\n".join(TX.sub(r"\g<1>200", c) for c in code)


PY_PAGES = [p for p in PAGES if python_of(p)]


@pytest.mark.parametrize("page", PY_PAGES, ids=rel)
def test_python_snippets_run(page, workdir):
    src = python_of(page)
    assert not re.search(r"\btx=(?!200\b)\d", src)
    script = workdir / (page.stem + "_example.py")
    script.write_text(src)
    hows = [([sys.executable, str(script)], None)]
    if page.name == "README.md" and page.parent == ROOT:
        hows.append(([sys.executable, "-"], src))
    for cmd, stdin in hows:
        res = subprocess.run(
            cmd,
            cwd=workdir,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env(),
        )
        assert res.returncode == 0, (
            f"{rel(page)} snippet failed ({cmd[-1]}):\n{res.stdout}\n{res.stderr}"
        )
        # Not a terminal: no progress bars in the log.
        assert "it/s" not in res.stderr and "run/s" not in res.stderr, res.stderr


def commands(code: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line and not line.startswith(NOT_RUN) and "-m pytest" not in line:
            out.append(line)
    return out


def cheapest(paper: str, ids: list[str] | None = None) -> str:
    """Of a paper's experiments (or of `ids`, which must all exist), the one
    with the fewest runs at tiny scale."""
    from durasim.papers import PAPERS
    from durasim.papers._base import Avail

    p = PAPERS[paper]
    ids = ids or list(p.experiments)
    unknown = [i for i in ids if i not in p.experiments]
    assert not unknown, f"{paper} has no experiment {unknown}: {list(p.experiments)}"
    sc = p.scale_settings("tiny")
    return min(ids, key=lambda i: len(p.experiments[i].plan(sc, Avail()).specs))


def shrink(cmd: str) -> str:
    """The same command at a size CI can afford."""
    args = shlex.split(cmd)
    if args[0] == "python3":
        args[0] = sys.executable
    if args[0] == "durasim" and len(args) > 1 and args[1] in ("run", "compare", "crashtest"):
        cap = 200 if args[1] == "crashtest" else 300
        if "--tx" in args:
            i = args.index("--tx") + 1
            args[i] = str(min(int(args[i]), cap))
        else:
            args += ["--tx", str(cap)]
    if args[:2] == ["durasim-lab", "reproduce"]:
        if "--scale" in args:
            args[args.index("--scale") + 1] = "tiny"
        else:
            args += ["--scale", "tiny"]
        # One experiment, the cheapest of those named (all of them checked).
        if "--only" in args:
            i = args.index("--only") + 1
            args[i] = cheapest(args[2], args[i].split(","))
        else:
            args += ["--only", cheapest(args[2])]
        if not {"--scheduler", "--workers", "--slurm-jobs"} & set(args):
            args += ["--scheduler", "serial"]
    return shlex.join(args)


def sh_of(page: Path) -> list[tuple[str, int]]:
    out = []
    for lang, code, mark in blocks(page):
        if lang != "sh" or mark == "skip":
            continue
        want = int(mark.split()[1]) if mark and mark.startswith("exit") else 0
        out += [(c, want) for c in commands(code)]
    return out


SH_PAGES = [p for p in PAGES if sh_of(p)]


@pytest.mark.parametrize("page", SH_PAGES, ids=rel)
def test_commands_run(page, workdir):
    for cmd, want in sh_of(page):
        run = shrink(cmd)
        res = subprocess.run(
            ["bash", "-c", run],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env(),
        )
        assert res.returncode == want, (
            f"{rel(page)}: `{cmd}`\n  ran as `{run}`: exit {res.returncode}, expected {want}\n"
            f"{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
        )


def test_reference_links_and_quotes_are_current():
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs.py"), "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env(),
    )
    assert res.returncode == 0, res.stdout + res.stderr


def _docs_module():
    return load_script("docs")


def test_tracker_numbers_and_outside_paths_are_flagged():
    docs = _docs_module()
    # Built from pieces so that this file itself passes the check.
    bad = "\n".join(
        [
            "A clean line about the write queue.",
            "Programs without transactions (" + "iss" + "ue 13 part 3).",
            "Measured with `" + "/wo" + "rk/golden/check.sh` against main.",
            "See " + "../sha" + "red/papers/hoop.md, Table III.",
            "Fixed in " + "Iss" + "ues #4 and 5.",
            "A network/" + "work/ path and main memory are fine.",
        ]
    )
    found = docs.leaks(bad)
    assert [n for n, _ in found] == [2, 3, 4, 5], found
    assert "issue number" in found[0][1]
    assert "development machine" in found[1][1]
    assert "outside the repository" in found[2][1]


def test_no_tracker_numbers_or_outside_paths_in_docs_and_sources():
    docs = _docs_module()
    files = {rel(f) for f in docs.leak_files()}
    # What is scanned: the README, every docs/ page (model, guide,
    # reference, design) and the sources; the history files are exempt.
    assert "README.md" in files
    assert {"docs/model/hoop.md", "docs/guide/schemes.md", "docs/reference/params.md"} <= files
    assert any(f.startswith("crates/") and f.endswith(".rs") for f in files)
    assert any(f.startswith("python/") and f.endswith(".py") for f in files)
    assert "CHANGELOG.md" not in files and "docs/PERFORMANCE.md" not in files
    assert docs.check_no_issue_numbers() == []


# ------------------------------------------------------------- readings


def _readings_module():
    return load_script("readings")


def _csv(path: Path, header: list[str], rows: list[list]) -> None:
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def _tiny_ehou_report(d: Path) -> Path:
    """A made-up EHOU report: three workloads whose ratios are round numbers."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(
        '{"git_commit": "abc1234def (with uncommitted changes)", "scale": "small"}'
    )
    (d / "index.html").write_text("<p>made 2026-01-02 03:04 UTC on a host</p>")
    thr = {"array": (100, 100, 150), "btree": (100, 50, 60), "tatp": (100, 40, 80)}
    _csv(
        d / "b_throughput.csv",
        ["scheme", "workload", "config_label", "threads", "throughput_tx_per_mcycle", "noise"],
        [
            [s, w, w, 4, v, 7]
            for w, vals in thr.items()
            for s, v in zip(("redu", "osp", "ehou"), vals)
        ],
    )
    ovh = {"array": (2, 0.5, 0.1), "btree": (3, 1.25, 0.2), "tatp": (4, 0.25, 0.05)}
    rows = []
    for w, (redu, ehou, ehou_b) in ovh.items():
        rows += [
            ["redu", w, w, redu, 3, 9, "", 100],
            ["osp", w, w, 1, 1, 2.5, "", 100],
            ["ehou", w, w, ehou, ehou_b, 3, 290, 100],
        ]
    _csv(
        d / "a_overhead.csv",
        [
            "scheme",
            "workload",
            "config_label",
            "norm_overhead",
            "norm_overhead_bytes",
            "steady_overhead_ops_per_tx",
            "stat.ait_flushes_lazy_overwrite",
            "measured_tx",
        ],
        rows,
    )
    persist = {"array": (110, 100), "btree": (120, 100), "tatp": (100, 125)}
    _csv(
        d / "c_persist.csv",
        ["scheme", "workload", "config_label", "ehou.persist", "throughput_tx_per_mcycle"],
        [
            ["ehou", w, w, mode, v]
            for w, vals in persist.items()
            for mode, v in zip(("lazy", "eager"), vals)
        ],
    )
    _csv(
        d / "f_claim.csv",
        ["axis", "point", "point_order", "x", "scheme", "rival", "metric", "advantage", "workload"],
        [
            [
                "write_set",
                "64 B items",
                0,
                1,
                "ehou",
                "osp",
                "throughput_tx_per_mcycle",
                3.0,
                "hashtable",
            ],
            [
                "write_set",
                "8 KB items",
                1,
                128,
                "ehou",
                "osp",
                "throughput_tx_per_mcycle",
                0.9,
                "hashtable",
            ],
        ],
    )
    return d


def test_readings_compute_known_values_from_a_report(tmp_path):
    readings = _readings_module()
    full = _tiny_ehou_report(tmp_path / "full")
    text = readings.guide_block("ehou", full)
    flat = " ".join(text.split())
    # EHOU / SSP per workload: 1.5, 1.2, 2.0; mean 1.5667, geometric 1.5326.
    assert "EHOU / SSP (`osp`) 1.20–2.00× per workload, mean 1.57× (geometric 1.53×)" in flat
    assert "REDU leads on btree (0.60×), TATP (0.80×)" in flat
    assert "EHOU is 0.25–0.50× SSP on 2 workloads, 1.25× on btree" in flat
    assert "REDU 2.00–4.00× SSP; in bytes EHOU writes 5–20 % of SSP's overhead" in flat
    assert "lazy 1.10–1.20× eager on array and btree; eager 1.25× lazy on TATP" in flat
    assert "| yes, except TATP |" in flat and "| yes, except btree |" in flat
    assert "3.00× at 64 B items (1 line per item), 0.90× at 8 KB items" in flat
    assert "EHOU 3.00, of them AIT entries flushed on a lazy overwrite" in flat
    assert "2.90; SSP 2.50" in flat
    assert "the small report of 2026-01-02, build abc1234, with uncommitted changes" in flat

    # The trimmed snapshot keeps only the columns read, and reads the same.
    snap = readings.snapshot("ehou", full, tmp_path / "snap")
    assert "noise" not in (snap / "b_throughput.csv").read_text()
    assert "2026-01-02" in (snap / "SOURCE.md").read_text()
    assert readings.guide_block("ehou", snap) == text
    assert "1.57× SSP's throughput on average" in readings.readme_block("ehou", snap)


def test_a_stale_readings_block_is_detected(tmp_path):
    docs = _docs_module()
    full = _tiny_ehou_report(tmp_path / "full")
    begin = f"<!-- generated by scripts/readings.py ehou --from {full}: begin -->\n"
    end = f"<!-- generated by scripts/readings.py ehou --from {full}: end -->\n"
    current = docs.with_readings(f"Before.\n\n{begin}{end}\nAfter.\n")
    assert (
        "mean 1.57×" in current and current.startswith("Before.") and current.endswith("After.\n")
    )
    assert docs.with_readings(current) == current
    stale = current.replace("mean 1.57×", "mean 1.58×")
    assert docs.with_readings(stale) == current
    # The pages that quote readings are the ones the check regenerates.
    files = {rel(p) for p in docs.readings_files()}
    assert {"README.md", "docs/guide/papers/hoop.md", "docs/guide/papers/ehou.md"} <= files
    for p in docs.readings_files():
        assert docs.with_readings(p.read_text()) == p.read_text(), f"{rel(p)} is stale"


def test_quickstart_and_times_readings_compute_from_their_snapshots(tmp_path):
    """The README's quick-start sentence and times table are computed from
    their snapshots: made-up values give exactly these numbers."""
    readings = _readings_module()
    rows = [
        ("btree", "opt-redo", 1000.0, 800.0, 0),
        ("btree", "hoop", 1500.0, 400.0, 3),
        ("btree", "lad", 1800.0, 300.0, 0),
        ("btree", "ideal", 2000.0, 200.0, 0),
        ("hashmap", "opt-redo", 1000.0, 800.0, 0),
        ("hashmap", "hoop", 1250.0, 400.0, 2),
        ("hashmap", "lad", 1800.0, 300.0, 0),
        ("hashmap", "ideal", 2000.0, 200.0, 0),
    ]
    csv = tmp_path / "compare.csv"
    csv.write_text(
        "workload,scheme,tx,threads,throughput_tx_per_mcycle,write_bytes_per_tx,"
        "stat.gc_runs_periodic\n"
        + "".join(f"{w},{s},100,8,{t},{b},{g}\n" for w, s, t, b, g in rows)
    )
    text = " ".join(readings.quickstart_block(csv).split())
    assert "HOOP writes 0.50× what redo logging writes (400 against 800 B" in text
    assert "at 1.50× its throughput (1.25× on hashmap)" in text
    assert "LAD, staging in the controller's ADR queues, writes least" in text
    assert "(`gc_runs_periodic`: 3 on btree" in text
    import json
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import times

    rec = {"wall_s": 125.0, "cpu_s": None, "load": "2.5", "date": "2026-01-02", "machine": "x"}
    data = {"docs": rec}
    table = times.table(data)
    assert "| the documentation check | `make docs` | 2 min 5 s | not recorded | 2.5 |" in table
    assert "| `make report` | not measured |" in table
    assert "measure STEP` on x. With" in table
    other = dict(rec, machine="y")
    table = times.table({"docs": rec, "test": other})
    assert "on x (`make docs`); y (`make test`). With" in " ".join(table.split())
    assert json.loads((ROOT / "docs" / "results" / "times.json").read_text())


# ------------------------------------------------------- measured numbers


def test_pasted_run_numbers_are_flagged():
    docs = _docs_module()
    arrow = "\u2192"
    page = "\n".join(
        [
            "# A model page",
            "The controller's queue holds 64 entries (USIMM default).",
            f"The fix moved opt-undo/vector from 1,344 {arrow} 5,665 on one channel.",
            "HOOP runs at 1.3 tx/Mcycle per core.",
            "Over a window with GC it is about 0.99–1.38× Opt-Redo.",
            "It ran 31 % slower that way.",
            f"The paper's read sweep, 250{arrow}50 ns. <!-- measured-ok: the paper's sweep -->",
            f"A code span `a {arrow} b` and `12 {arrow} 13` is not prose.",
            "```text",
            f"1 {arrow} 2 in a code block",
            "```",
            "<!-- generated by scripts/readings.py hoop --grid: begin -->",
            f"| HOOP | 0.96–1.46× | 1 {arrow} 2 |",
            "<!-- generated by scripts/readings.py hoop --grid: end -->",
            "Latency is tRCD + tCL = 68 ns on a closed bank.",
        ]
    )
    found = docs.measured_numbers(page)
    assert [n for n, _ in found] == [3, 4, 5, 6], found
    assert "before" in found[0][1] and "unit" in found[1][1] and "ratio" in found[2][1]
    # The model notes and the guide are what is scanned, and they are clean.
    files = {rel(f) for f in docs.measured_files()}
    assert {"docs/model/hoop-grid.md", "docs/model/workloads.md", "docs/guide/schemes.md"} <= files
    assert docs.check_measured_numbers() == []


def test_generated_blocks_stand_in_the_model_notes_too():
    docs = _docs_module()
    files = {rel(p) for p in docs.readings_files()}
    assert {"docs/model/hoop-grid.md", "docs/model/workloads.md"} <= files
    grid = docs.with_readings(
        "<!-- generated by scripts/readings.py hoop --grid: begin -->\n"
        "<!-- generated by scripts/readings.py hoop --grid: end -->\n"
    )
    assert "| HOOP |" in grid and "| LAD |" in grid and "scripts/readings.py hoop --grid" in grid
