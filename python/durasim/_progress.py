"""Progress bars with an ETA for long calls (sweeps, crash tests, reports).

``progress=None`` (the default everywhere) shows a bar only where someone
can see it: a terminal on stderr or a Jupyter notebook. Piped or redirected
output, CI logs and ``progress=False`` stay quiet.
"""

from __future__ import annotations

import sys
from typing import Any


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:  # pragma: no cover - odd IPython versions
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def wanted(progress: bool | None) -> bool:
    """Resolve ``progress``: True/False as given, None = auto (a terminal or
    a notebook)."""
    if progress is not None:
        if not isinstance(progress, bool):
            raise ValueError(
                f"invalid value {progress!r} for 'progress': expected True, False or None (auto)"
            )
        return progress
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty or _in_notebook()


class Bar:
    """A tqdm bar (counts, rate, ETA) or nothing when not wanted."""

    def __init__(self, total: int, enabled: bool, desc: str, unit: str, delay_s: float = 0.0):
        self.bar: Any = None
        if enabled and total > 0:
            from tqdm.auto import tqdm

            # ``delay``: short calls never draw a bar at all.
            self.bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, delay=delay_s)

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def set(self, done: int, total: int) -> None:
        if self.bar is not None:
            if self.bar.total != total:
                self.bar.total = total
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
