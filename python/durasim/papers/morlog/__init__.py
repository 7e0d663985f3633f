"""The MorLog paper's evaluation (papers/morlog.md §VI) as DataFrames.

Each experiment is a function ``f(scale="small", *, client=None,
scheduler=None, progress=None, preset=None) -> pandas.DataFrame``;
``run_experiments`` runs several as one sweep. The frame's ``attrs`` carry
the title, the paper section, the normalization, the statistic keys read
and ``skipped``: every design, workload or parameter the experiment wanted
that this build does not provide (as in :mod:`durasim.papers.hoop`), so a
design that is not merged yet is named in the report, never silently left
out. What is run is in :mod:`.experiments` (its six designs in
``DESIGNS``), what is drawn in :mod:`.figures`.
"""

from .._base import Paper
from .._grid import empty_runs
from . import experiments, figures

PAPER = Paper(
    name="morlog",
    experiments=experiments.EXPERIMENTS,
    scales=experiments.SCALES,
    setup=experiments.setup,
    figures=figures.FIGURES,
    cite=experiments.cite,
    title="MorLog paper reproduction",
    intro=(
        "Experiments of the MorLog paper's evaluation (§VI-B to §VI-E: throughput, NVM write "
        "traffic and energy, log bits written, macro-benchmarks, sensitivity), run on durasim "
        "with the system of its Table III (configs/morlog.toml). Results are this simulator's, "
        "not the paper's; each figure states its normalization."
    ),
    empty=empty_runs,
    run_spec=experiments.run_spec,
    scale_doc=experiments.scale_doc,
    thread_keys=("micro_threads", "macro_threads"),
)

run_experiments = PAPER.run_experiments
throughput = PAPER.one("throughput")
traffic = PAPER.one("traffic")
energy = PAPER.one("energy")
log_bits = PAPER.one("log_bits")
macro = PAPER.one("macro")
undo_redo_buffer = PAPER.one("undo_redo_buffer")
redo_buffer = PAPER.one("redo_buffer")
threads = PAPER.one("threads")
write_latency = PAPER.one("write_latency")
log_management = PAPER.one("log_management")
workloads = PAPER.one("workloads")
claim = PAPER.one("claim")
