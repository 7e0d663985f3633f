"""Paper experiments. ``durasim.experiments.hoop`` reproduces the HOOP
paper's evaluation (§IV, items a–j); ``durasim.experiments.ehou`` the EHOU
paper's (§IV). ``PAPERS`` is the registry ``durasim-lab reproduce`` reads:
one line per paper."""

from . import ehou, hoop

PAPERS = {
    "hoop": hoop,
    "ehou": ehou,
}

__all__ = ["PAPERS", "ehou", "hoop"]
