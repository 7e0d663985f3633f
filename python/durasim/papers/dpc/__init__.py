"""The dual-page checkpointing paper's evaluation (§5.2–§5.6 and Table 3)
as DataFrames.

Each experiment is a function ``f(scale="small", *, client=None,
scheduler=None, progress=None, preset=None) -> pandas.DataFrame`` (the
conventions of :mod:`durasim.papers.hoop`: ``attrs`` carry the title,
paper item, normalization, statistic keys read, notes and what this build
could not run); ``run_experiments`` runs several as one sweep. A run that
stops because a table or buffer is too small for its workload is a result,
listed under its figure, not a failure. What is run is in
:mod:`.experiments`, what is drawn in :mod:`.figures`.
"""

from .._base import Paper
from . import experiments, figures

PAPER = Paper(
    name="dpc",
    experiments=experiments.EXPERIMENTS,
    scales=experiments.SCALES,
    setup=experiments.setup,
    figures=figures.FIGURES,
    cite=experiments.cite,
    title="Dual-page checkpointing paper reproduction",
    intro=(
        "Measurements of the dual-page checkpointing paper's evaluation (§5.2–§5.6, "
        "the list of what was measured; the paper's results are withheld and nothing "
        "here is tuned toward them), run on durasim. Results are this simulator's. "
        "Durability differs between systems: the checkpointing schemes make work "
        "durable only at the checkpoint that holds it (a transaction may be "
        "acknowledged only after that checkpoint); PMDK and DudeTM per transaction "
        "(DudeTM per group commit)."
    ),
    no_runs=experiments.no_runs,
    sweep_kw={"errors": "include"},
    scale_doc=experiments.scale_doc,
)

run_experiments = PAPER.run_experiments
overall = PAPER.one("overall")
checkpoints = PAPER.one("checkpoints")
software = PAPER.one("software")
pool_size = PAPER.one("pool_size")
metadata = PAPER.one("metadata")
interval = PAPER.one("interval")
metadata_space = PAPER.one("metadata_space")
workloads = PAPER.one("workloads")
claim = PAPER.one("claim")
