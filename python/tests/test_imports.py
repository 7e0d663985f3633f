"""The Python package has no import loop: no module imports, directly or
through others, a module that imports it back (lazy imports inside
functions included: they hide a loop rather than remove it)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "durasim"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


@cache
def bound_names(path: Path) -> set[str]:
    """Names a module binds at its top level (what `from it import x` can
    take from it rather than from a submodule)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that `path` (module `name`) imports."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            mod = ".".join(base + (node.module.split(".") if node.module else []))
            for a in node.names:
                # `from pkg import sub` imports the submodule `sub`; a name
                # the package does not bind is a compiled submodule
                # (`_native`), outside this graph.
                sub = f"{mod}.{a.name}"
                if sub in known:
                    out.add(sub)
                elif mod in known and a.name in bound_names(known[mod]):
                    out.add(mod)
    return {m for m in out if m in known and m != name}


def find_loop(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        if state.get(n) == 1:
            return [*path[path.index(n) :], n]
        if state.get(n) == 2:
            return None
        state[n] = 1
        path.append(n)
        for m in sorted(graph[n]):
            if loop := visit(m):
                return loop
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if loop := visit(n):
            return loop
    return None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {n: imports(n, p, known) for n, p in known.items()}


def test_no_import_loop():
    g = graph()
    assert len(g) > 20 and "durasim.papers.dpc.claim" in g
    loop = find_loop(g)
    assert loop is None, " -> ".join(loop)


def test_relative_imports_resolve_to_modules():
    g = graph()
    assert "durasim.papers._claims" in g["durasim.papers.dpc.claim"]
    assert "durasim.papers.dpc.spec" in g["durasim.papers.dpc.experiments"]
    assert "durasim._core" in g["durasim.papers.dpc.experiments"]


def test_a_loop_is_found():
    assert find_loop({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_loop({"a": {"b"}, "b": set()}) is None
