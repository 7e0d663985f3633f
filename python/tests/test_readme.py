"""The README's Python snippets, run exactly as a newcomer would: saved as a
``.py`` script, and piped into an interpreter like lines typed at the
prompt. Transaction and crash-point counts are shrunk (``tx=``, ``"tx":``,
``points=`` literals become 200) so that
CI stays fast; everything else is the README's text."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TX = re.compile(r'(\btx=|"tx":\s*|\bpoints=)\d[\d_]*')


def readme_python() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert blocks, "README has no ```python blocks"
    return "\n".join(TX.sub(r"\g<1>200", b) for b in blocks)


def test_readme_snippets_shrink_only_tx():
    src = readme_python()
    assert "durasim.sweep(" in src and "durasim.run(" in src and "durasim.crashtest(" in src
    assert not re.search(r"\btx=(?!200\b)\d", src)


@pytest.mark.parametrize("how", ["script", "prompt"])
def test_readme_snippets_run(tmp_path, how):
    src = readme_python()
    if how == "script":
        script = tmp_path / "readme_example.py"
        script.write_text(src)
        cmd, stdin = [sys.executable, str(script)], None
    else:
        cmd, stdin = [sys.executable, "-"], src
    res = subprocess.run(
        cmd, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=600, check=False
    )
    assert res.returncode == 0, f"README snippet failed as {how}:\n{res.stdout}\n{res.stderr}"
    # Not a terminal: no progress bars in the log.
    assert "it/s" not in res.stderr and "run/s" not in res.stderr, res.stderr
