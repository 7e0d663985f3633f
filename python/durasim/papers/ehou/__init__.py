"""The EHOU paper's evaluation (papers/ehou.md §IV) as DataFrames.

Same shape as :mod:`durasim.papers.hoop`: each experiment is a function
``f(scale="small", *, client=None, scheduler=None, progress=None,
preset=None) -> pandas.DataFrame`` whose ``attrs`` carry the title, paper
item, normalization, what was skipped and notes; ``run_experiments`` runs
several as one sweep (shared runs once). Every run uses
``configs/ehou.toml`` (the paper's Table I) unless another preset is given.
What is run is in :mod:`.experiments`, what is drawn in :mod:`.figures`.
"""

from .._base import Paper
from . import experiments, figures

PAPER = Paper(
    name="ehou",
    experiments=experiments.EXPERIMENTS,
    scales=experiments.SCALES,
    setup=experiments.setup,
    figures=figures.FIGURES,
    cite=experiments.cite,
    title="EHOU paper reproduction",
    intro=(
        "Experiments of the EHOU paper's evaluation (§IV: PM write overhead, throughput of SSP "
        "and EHOU relative to REDU, eager vs lazy persisting, AIT-cache size), run on durasim "
        "with configs/ehou.toml (Table I). Results are this simulator's, not the paper's; each "
        "figure states its normalization."
    ),
    empty=experiments.empty_runs,
    scale_doc=experiments.scale_doc,
)

run_experiments = PAPER.run_experiments
overhead = PAPER.one("overhead")
throughput = PAPER.one("throughput")
persist = PAPER.one("persist")
ait_cache = PAPER.one("ait_cache")
workloads = PAPER.one("workloads")
claim = PAPER.one("claim")
