"""The papers durasim reproduces, each a package built from one
:class:`~durasim.papers._base.Paper`: ``hoop`` (the HOOP paper's §IV, items
a–j), ``dpc`` (dual-page checkpointing §5.2–§5.6), ``morlog`` (MorLog §VI),
``ehou`` (EHOU §IV). ``PAPERS`` is the registry ``durasim-lab reproduce``
reads: one line per paper."""

from . import dpc, ehou, hoop, morlog
from ._base import Paper

PAPERS: dict[str, Paper] = {
    "hoop": hoop.PAPER,
    "dpc": dpc.PAPER,
    "morlog": morlog.PAPER,
    "ehou": ehou.PAPER,
}

__all__ = ["PAPERS", "Paper", "dpc", "ehou", "hoop", "morlog"]
