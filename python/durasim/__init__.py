"""durasim: crash-verified simulation of persistent-memory crash-consistency
schemes. Python front: single runs, Dask sweeps, paper experiments, reports.

>>> import durasim
>>> r = durasim.run("ideal", "vector", threads=2, tx=200)
>>> r["metrics"]["committed_tx"]
200
"""

from . import cluster  # durasim.cluster.slurm(...) after a plain `import durasim`
from ._core import (
    crashtest,
    describe,
    param_key,
    params,
    run,
    run_spec,
    schemes,
    version,
    workloads,
)
from .sweep import SweepError, expand, sweep, to_frame

__version__ = version()

__all__ = [
    "SweepError",
    "__version__",
    "cluster",
    "crashtest",
    "describe",
    "expand",
    "param_key",
    "params",
    "run",
    "run_spec",
    "schemes",
    "sweep",
    "to_frame",
    "version",
    "workloads",
]
