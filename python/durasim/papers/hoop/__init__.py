"""The HOOP paper's evaluation (papers/hoop.md §IV, items a–j) as DataFrames.

Each experiment is a function ``f(scale="small", *, client=None,
scheduler=None, progress=None, preset=None) -> pandas.DataFrame``;
``run_experiments`` runs several as one sweep. The frame's ``attrs`` carry
the experiment's title, paper item, normalization, the runs' common
settings, the statistic keys it read and ``skipped``: every scheme,
workload or parameter the experiment wanted that this build of durasim does
not provide (``durasim.schemes()/workloads()/params()``); an experiment
with nothing to run returns an empty frame that says why. What is run is in
:mod:`.experiments`, what is drawn in :mod:`.figures`.
"""

from .._base import Paper
from .._grid import empty_runs
from . import experiments, figures

PAPER = Paper(
    name="hoop",
    experiments=experiments.EXPERIMENTS,
    scales=experiments.SCALES,
    setup=experiments.setup,
    figures=figures.FIGURES,
    cite=experiments.cite,
    title="HOOP paper reproduction",
    intro=(
        "Experiments of the HOOP paper's evaluation (§IV, items a–j), run on durasim. "
        "Results are this simulator's, not the paper's; each figure states its normalization."
    ),
    empty=empty_runs,
    scale_doc=experiments.scale_doc,
)

run_experiments = PAPER.run_experiments
throughput = PAPER.one("throughput")
latency = PAPER.one("latency")
traffic = PAPER.one("traffic")
energy = PAPER.one("energy")
gc_reduction = PAPER.one("gc_reduction")
gc_period = PAPER.one("gc_period")
recovery = PAPER.one("recovery")
ycsb_latency = PAPER.one("ycsb_latency")
mapping_table = PAPER.one("mapping_table")
profiling = PAPER.one("profiling")
workloads = PAPER.one("workloads")
claim = PAPER.one("claim")
