"""Paper experiments. ``durasim.experiments.hoop`` reproduces the HOOP
paper's evaluation (§IV, items a–j); ``durasim.experiments.morlog`` the
MorLog paper's (§VI). ``PAPERS`` is the registry ``durasim-lab reproduce``
offers."""

from . import hoop, morlog

PAPERS = {"hoop": hoop, "morlog": morlog}

__all__ = ["PAPERS", "hoop", "morlog"]
