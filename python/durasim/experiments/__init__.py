"""Paper experiments. ``durasim.experiments.hoop`` reproduces the HOOP
paper's evaluation (§IV, items a–j)."""

from . import hoop

PAPERS = {"hoop": hoop}

__all__ = ["PAPERS", "hoop"]
