"""Any paper's report (a :class:`durasim.papers.Paper`): every experiment's
figure (PNG + SVG), its data as CSV, the exact configuration and durasim
version, and the command that regenerates it, in one ``index.html``."""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import platform
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd

from . import _core
from ._figcheck import NOT_STEADY, readable
from .papers import _scale
from .papers._base import Paper
from .plotting import flags, save


def _git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if out.returncode == 0:
            return out.stdout.strip() + (
                " (with uncommitted changes)" if dirty.stdout.strip() else ""
            )
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def regenerate_command(
    paper: str,
    scale: str,
    out: str,
    scheduler: str | None = None,
    preset: str | None = None,
    only: list[str] | None = None,
    options: dict[str, Any] | None = None,
) -> str:
    cmd = ["durasim-lab", "reproduce", paper, "--scale", scale, "--out", out]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    if preset:
        cmd += ["--config", preset]
    if only:
        cmd += ["--only", ",".join(only)]
    o = options or {}
    if o.get("threads") is not None:
        cmd += ["--threads", str(o["threads"])]
    if o.get("tx_factor") is not None:
        cmd += ["--tx-factor", f"{o['tx_factor']:g}"]
    for k, v in (o.get("set") or {}).items():
        cmd += ["--set", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
    if o.get("scale_file"):
        cmd += ["--scale-file", str(o["scale_file"])]
    return shlex.join(cmd)


def _previous(out: Path) -> dict[str, Any] | None:
    """The config.json of a report already in ``out`` (None if there is none
    or it cannot be read: then nothing is merged, and nothing is deleted)."""
    try:
        cfg = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) and isinstance(cfg.get("experiments"), dict) else None


def write_report(
    paper: Paper,
    frames: dict[str, pd.DataFrame],
    out: Path | str,
    *,
    scale: str,
    command: str,
    options: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
) -> Path:
    """Write figures, CSVs, ``config.json`` and ``index.html`` into ``out``.

    A report already in ``out`` is merged, never dropped: experiments not in
    ``frames`` (e.g. after ``--only``) keep their files, their entry in
    ``config.json`` and their section of ``index.html``; each entry records
    the scale, preset and command that produced it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params = _core.params()
    prev = _previous(out)
    preset = next((df.attrs["preset"] for df in frames.values() if df.attrs.get("preset")), None)
    config = {
        "durasim_version": _core.version(),
        "git_commit": _git_commit(),
        "scale": scale,
        "scale_settings": next(
            (df.attrs["scale_settings"] for df in frames.values() if "scale_settings" in df.attrs),
            paper.scale_settings(scale),
        ),
        "run_options": options or {},
        "cost": cost or {},
        "available": {"schemes": _core.schemes(), "workloads": _core.workloads()},
        "parameter_defaults": {k: v["default"] for k, v in params.items()},
        "parameter_sources": {k: v["source"] for k, v in params.items()},
        "experiments": {},
        "command": command,
        "preset": preset,
    }
    sections: dict[str, str] = {}
    exps = paper.experiments
    doc = paper.scale_doc(scale, config["scale_settings"]) if paper.scale_doc is not None else None
    steady = _scale.steady_results(doc, frames) if doc is not None else []
    if doc is not None:
        config["scale_doc"] = {
            "purpose": doc.purpose,
            "shortens": doc.shortens,
            "keeps": [{**r.__dict__, "holds": r.ok(), "bound": r.bound()} for r in doc.keeps],
            "steady_state": steady,
        }
        # A figure whose runs miss a mechanism's steady state says so on its face.
        for st, res in zip(doc.steady, steady):
            if res["runs"] and not res["ok"]:
                for eid in st.experiments:
                    if eid in frames:
                        notes = frames[eid].attrs.setdefault("notes", [])
                        notes.extend(_scale.steady_text([res]))
                        stamp = frames[eid].attrs.setdefault("not_steady", [])
                        stamp.extend(_scale.steady_text([res]))
    header = _options_html(options or {}, cost or {})
    header += _scale.to_html(doc, steady) if doc is not None else ""
    for eid, df in frames.items():
        e = exps[eid]
        stem = f"{e.item}_{eid}"
        fig = paper.figures[eid](df)
        checks = [f.as_dict() for f in flags(fig)]
        pngs = save(fig, out / stem)
        csv = out / f"{stem}.csv"
        df.to_csv(csv, index=False)
        varied = sorted(c for c in df.columns if c in params)
        config["experiments"][eid] = _jsonable(
            {
                "paper_item": df.attrs.get("paper_item"),
                "runs": df.attrs.get("runs", len(df)),
                "normalization": df.attrs.get("normalization"),
                "parameters_set_per_run": varied,
                "stat_keys": df.attrs.get("stat_keys", {}),
                "skipped": df.attrs.get("skipped", []),
                "notes": df.attrs.get("notes", []),
                "figure_checks": checks,
                "scale": scale,
                "durasim_version": config["durasim_version"],
                "git_commit": config["git_commit"],
                "preset": preset,
                "command": command,
            }
        )
        # A freshly run experiment names its scale and command like a kept one.
        attrs = {**df.attrs, "scale": scale, "command": command, "figure_checks": checks}
        table = ""
        if e.table is not None:
            t = e.table(df)
            t.to_csv(out / f"{stem}_table.csv", index=False)
            table = _table_html(t, f"{stem}_table.csv")
        sections[eid] = _section(e, attrs, len(df), stem, pngs, csv, paper.cite(e), table)
    kept = []
    if prev is not None:
        for eid, entry in prev["experiments"].items():
            if eid in frames or eid not in exps or not isinstance(entry, dict):
                continue
            e = exps[eid]
            stem = f"{e.item}_{eid}"
            csv = out / f"{stem}.csv"
            kept_figs = [out / f"{stem}.png", out / f"{stem}.svg"]
            if not csv.exists() or not all(f.exists() for f in kept_figs):
                continue  # its files are gone: nothing left to link
            # Entries written before per-experiment provenance existed.
            for k in ("scale", "durasim_version", "git_commit", "preset", "command"):
                entry.setdefault(k, prev.get(k))
            config["experiments"][eid] = entry
            rows = sum(1 for _ in csv.open()) - 1
            sections[eid] = _section(e, entry, rows, stem, kept_figs, csv, paper.cite(e))
            kept.append(eid)
    order = [eid for eid in exps if eid in sections]
    config["experiments"] = {eid: config["experiments"][eid] for eid in order}
    scales = sorted({str(config["experiments"][eid].get("scale")) for eid in order})
    config["scale"] = scale if scales == [scale] else "mixed: " + ", ".join(scales)
    config["merged_from_previous_report"] = kept
    cfg_path = out / "config.json"
    cfg_path.write_text(json.dumps(_jsonable(config), indent=2, sort_keys=False) + "\n")
    index = out / "index.html"
    index.write_text(
        _page(config, [sections[eid] for eid in order], paper.title, paper.intro, header)
    )
    return index


def _options_html(options: dict[str, Any], cost: dict[str, Any]) -> str:
    """What the user changed for this report, and what it cost, as a table."""
    esc = html.escape
    rows = []
    if cost.get("runs") is not None:
        wall = cost.get("wall_s")
        rows.append(
            (
                "this report's runs",
                f"{cost['runs']} distinct simulation runs"
                + (
                    f", {wall / 60:.1f} min wall on {platform.node() or 'this host'}"
                    if wall is not None
                    else ""
                ),
            )
        )
    if cost.get("host_s") is not None:
        rows.append(
            (
                "its runs' host time",
                f"{cost['host_s'] / 60:.1f} min (run with the other papers' as one sweep)",
            )
        )
    if options.get("threads") is not None:
        rows.append(("--threads", str(options["threads"])))
    if options.get("tx_factor") is not None:
        rows.append(("--tx-factor", f"{options['tx_factor']:g} × every run's transactions"))
    for k, v in (options.get("set") or {}).items():
        rows.append(("--set", f"{k} = {v}"))
    if options.get("scale_file"):
        rows.append(("--scale-file", str(options["scale_file"])))
    if not rows:
        return ""
    body = "".join(f"<tr><th>{esc(a)}</th><td>{esc(b)}</td></tr>" for a, b in rows)
    return f"<table class='scale'>{body}</table>"


def _table_html(t: pd.DataFrame, csv_name: str) -> str:
    """A characterisation table for reading: numbers formatted, no index."""
    shown = t.copy()
    for c in shown.columns:
        if pd.api.types.is_numeric_dtype(shown[c]):
            shown[c] = [_scale.fmt(v) for v in shown[c]]
    body = shown.to_html(index=False, escape=True, na_rep="—", classes="char", border=0)
    return f'{body}<p>Table data: <a href="{html.escape(csv_name)}">{html.escape(csv_name)}</a></p>'


def _li(items: list[str]) -> str:
    return "".join(f"<li>{html.escape(readable(str(x)))}</li>" for x in items)


def _section(
    e: Any,
    attrs: dict[str, Any],
    rows: int,
    stem: str,
    figs: list[Path],
    csv: Path,
    cited: str,
    table: str = "",
) -> str:
    esc = html.escape
    png = next(p for p in figs if p.suffix == ".png").name
    svg = next(p for p in figs if p.suffix == ".svg").name
    skipped = attrs.get("skipped") or []
    notes = attrs.get("notes") or []
    stats = dict(attrs.get("stat_keys") or {})
    origin = ""
    if attrs.get("command"):
        origin = (
            f" Scale: {esc(str(attrs.get('scale')))}; produced by "
            f"<code>{esc(str(attrs['command']))}</code>."
        )
    parts = [
        f'<section id="{esc(e.id)}"><h2>({esc(e.item)}) {esc(e.title)}</h2>',
        f"<p>Paper: {esc(str(attrs.get('paper_item') or cited))}. Normalization: "
        f"{esc(readable(str(attrs.get('normalization') or 'none')))}. "
        f"Runs: {rows}.{origin}</p>",
        f'<p><img src="{esc(png)}" alt="{esc(e.title)}" style="max-width:100%"></p>',
        f'<p>Figure: <a href="{esc(png)}">PNG</a> · <a href="{esc(svg)}">SVG</a> · '
        f'data: <a href="{esc(csv.name)}">{esc(csv.name)}</a></p>',
    ]
    if table:
        parts.append(table)
    if stats:
        parts.append(
            "<p>Scheme statistics read: "
            + esc(", ".join(f"{k} ← {v}" for k, v in stats.items()))
            + "</p>"
        )
    checks = [c for c in attrs.get("figure_checks") or [] if c.get("text")]
    # The steady-state finding is a note already (shown in bold below).
    stamped = [c for c in checks if c.get("check") == NOT_STEADY]
    checks = [c for c in checks if c.get("check") != NOT_STEADY]
    if checks:
        parts.append(
            "<p>What the figure's checks of its own data found (and what it did):</p><ul>"
            + "".join(
                f"<li><b>{esc(c['check'])}</b> ({esc(c['form'])}): {esc(readable(c['text']))}</li>"
                for c in checks
            )
            + "</ul>"
        )
    if notes:
        items = "".join(
            f"<li><b>{esc(readable(str(n)))} (stamped on the figure)</b></li>"
            if any(str(n) in c["text"] for c in stamped)
            else f"<li>{esc(readable(str(n)))}</li>"
            for n in notes
        )
        parts.append(f"<p>Notes:</p><ul>{items}</ul>")
    if skipped:
        parts.append(
            "<details><summary>Not available in this build, skipped "
            f"({len(skipped)})</summary><ul>{_li(skipped)}</ul></details>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _page(
    config: dict[str, Any], sections: list[str], title: str, intro: str, header: str = ""
) -> str:
    esc = html.escape
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    pre = config.get("preset")
    preset = (
        f"<li>parameter preset: <code>{esc(str(pre['path']))}</code> "
        f"({len(pre['values'])} values, listed in config.json)</li>"
        if pre
        else "<li>parameter preset: none (every parameter at its documented default unless "
        "an experiment sets it)</li>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>durasim — {esc(title)} ({esc(config["scale"])} scale)</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}}
code,pre{{background:#f4f4f4;padding:2px 4px}} section{{margin-top:2.5em}}
table.scale,table.char{{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}}
table.scale td,table.scale th,table.char td,table.char th{{border:1px solid #ccc;
padding:2px 6px}} table.char td{{text-align:right}}</style>
</head><body>
<h1>{esc(title)} — {esc(config["scale"])} scale</h1>
<p>{esc(intro)}</p>
{header}
<ul>
<li>durasim version: <code>{esc(config["durasim_version"])}</code></li>
<li>git commit: <code>{esc(str(config["git_commit"]))}</code></li>
<li>generated: {esc(now)} on {esc(platform.node() or "unknown host")}</li>
<li>regenerate: <code>{esc(config["command"])}</code> (the latest update; each section
names the command and scale that produced it; a partial run with <code>--only</code> keeps
every other section)</li>
<li>schemes in this build: {esc(", ".join(config["available"]["schemes"]))};
workloads: {esc(", ".join(config["available"]["workloads"]))}</li>
{preset}
<li>exact configuration: <a href="config.json">config.json</a> (every parameter's default
and source, the scale's run sizes and what it keeps, per-experiment settings); per-run
parameter values are columns of each CSV.</li>
</ul>
{"".join(sections)}
</body></html>
"""


#: The readings script of the source tree (the README's per-paper bullets).
_READINGS = Path(__file__).resolve().parents[2] / "scripts" / "readings.py"


def paper_reading(paper: str, report_dir: Path, scale: str = "small") -> str:
    """The README's bullet for ``paper``, computed from the report just
    written (``scripts/readings.py PAPER --readme --from DIR``), as HTML; a
    sentence saying why when it cannot be read (e.g. a scale whose runs
    lack a figure the reading compares)."""
    if scale == "tiny":
        return (
            "<p><i>No reading at the tiny scale: its runs are a smoke test, too short for the "
            "mechanisms the claims depend on (the report's scale table says which). Run "
            "the small scale for a reading.</i></p>"
        )
    import contextlib
    import importlib.util
    import io
    import re
    import warnings

    try:
        spec = importlib.util.spec_from_file_location("durasim_readings", _READINGS)
        if spec is None or spec.loader is None:
            raise OSError(f"{_READINGS} not found")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = mod.readme_block(paper, report_dir)
    except (SystemExit, Exception) as e:  # the index still links the report
        why = e.code if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
        return f"<p><i>No reading computed from this report ({html.escape(str(why))}).</i></p>"
    text = " ".join(ln.strip() for ln in text.splitlines()).removeprefix("- ")
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", out)
    return f"<p>{out}</p>"


def write_index(
    root: Path | str,
    entries: list[dict[str, Any]],
    *,
    scale: str,
    command: str,
    cost: dict[str, Any],
) -> Path:
    """``root/index.html``: one section per paper's report (``entries``:
    paper, title, dir, runs, host_s) with its reading, and what the whole
    sweep cost."""
    esc = html.escape
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = []
    for e in entries:
        rel = Path(e["dir"]).resolve().relative_to(root.resolve()).as_posix()
        host = f", {e['host_s'] / 60:.1f} min of host time" if e.get("host_s") is not None else ""
        sections.append(
            f"<section><h2><a href='{esc(rel)}/index.html'>{esc(e['title'])}</a></h2>"
            f"{paper_reading(e['paper'], Path(e['dir']), scale)}"
            f"<p class='meta'>{e['runs']} simulation runs{esc(host)}; figures, data and the "
            f"exact configuration: <a href='{esc(rel)}/index.html'>{esc(rel)}/index.html</a>"
            "</p></section>"
        )
    wall = cost.get("wall_s")
    shared = cost.get("shared") or 0
    runs = f"{cost.get('runs', 0)} simulation runs"
    if shared:
        runs += f", {shared} shared by two papers and run once"
    if wall is not None:
        runs += f": {wall / 60:.1f} min wall on {platform.node() or 'this host'}"
    if cost.get("pages_s") is not None:
        runs += f", then {cost['pages_s'] / 60:.1f} min for the figures and pages"
    commit = esc(str(_git_commit()))
    build = f"<code>{esc(_core.version())}</code>; git commit: <code>{commit}</code>"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>durasim — the four papers ({esc(scale)} scale)</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}}
code{{background:#f4f4f4;padding:2px 4px}} section{{margin-top:2em}}
p.meta{{color:#555;font-size:0.9em}}</style>
</head><body>
<h1>durasim — the four papers, {esc(scale)} scale</h1>
<p>Each report reproduces one paper's evaluation on durasim's engine and workloads; the
paragraph under each title is its reading, computed from the report's own data (how each
abstract claim comes out, and why where it does not).</p>
{"".join(sections)}
<ul>
<li>{esc(runs)}</li>
<li>durasim version: {build}</li>
<li>generated: {esc(now)}</li>
<li>regenerate: <code>{esc(command)}</code></li>
</ul>
</body></html>
"""
    index = root / "index.html"
    index.write_text(page)
    return index
