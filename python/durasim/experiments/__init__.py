"""Paper experiments: ``durasim.experiments.hoop`` reproduces the HOOP
paper's evaluation (§IV, items a–j), ``dpc`` the dual-page checkpointing
paper's (§5.2–§5.6), ``morlog`` the MorLog paper's (§VI), ``ehou`` the EHOU
paper's (§IV). ``PAPERS`` is the registry ``durasim-lab reproduce`` reads:
one line per paper."""

from . import dpc, ehou, hoop, morlog

PAPERS = {
    "hoop": hoop,
    "dpc": dpc,
    "morlog": morlog,
    "ehou": ehou,
}

__all__ = ["PAPERS", "dpc", "ehou", "hoop", "morlog"]
