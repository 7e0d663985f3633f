"""Paper experiments. ``durasim.experiments.hoop`` reproduces the HOOP
paper's evaluation (§IV, items a–j); ``durasim.experiments.dpc`` the dual-page checkpointing
paper's (§5.2–§5.6)."""

from . import dpc, hoop

#: ``durasim-lab reproduce <name>``: one line per paper.
PAPERS = {"hoop": hoop, "dpc": dpc}

__all__ = ["PAPERS", "dpc", "hoop"]
