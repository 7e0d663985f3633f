"""Dask clusters for :func:`durasim.sweep`.

* :func:`local` — this machine: one worker process per core, one thread each
  (a simulation is single-threaded and releases the GIL).
* :func:`connect` — a running scheduler (``dask scheduler`` + ``dask worker``
  processes started by hand, by SSH, or by a batch system).
* :func:`slurm` — a SLURM allocation through ``dask-jobqueue`` (the
  ``slurm`` extra: ``pip install '.[slurm]'`` from a checkout), imported
  only when used.

Every worker must be able to ``import durasim`` (same version): install the
package in the environment the workers start from.
"""

from __future__ import annotations

import os
from typing import Any


def local(n_workers: int | None = None, **kwargs: Any):
    """A ``LocalCluster`` of process workers, ``n_workers`` = cores by default."""
    from dask.distributed import LocalCluster

    n = n_workers or os.cpu_count() or 1
    opts: dict[str, Any] = {
        "n_workers": n,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }
    opts.update(kwargs)
    return LocalCluster(**opts)


def connect(address: str):
    """A ``Client`` on a running scheduler, e.g. ``tcp://10.0.0.5:8786``."""
    from dask.distributed import Client

    return Client(address)


def slurm(
    jobs: int = 4,
    *,
    cores: int = 8,
    memory: str = "16GB",
    walltime: str = "02:00:00",
    queue: str | None = None,
    account: str | None = None,
    python: str | None = None,
    **kwargs: Any,
):
    """A ``dask_jobqueue.SLURMCluster`` with ``jobs`` batch jobs of ``cores``
    single-threaded worker processes each, already scaled.

    Use it with ``durasim.sweep(runs, client=Client(cluster))``. Extra keyword
    arguments go to ``SLURMCluster`` (e.g. ``job_extra_directives``,
    ``local_directory``). Needs the ``slurm`` extra (``pip install '.[slurm]'``
    from a checkout; durasim is not on PyPI) or ``pip install dask-jobqueue``.
    """
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as e:
        raise ImportError(
            "durasim.cluster.slurm needs dask-jobqueue: pip install '.[slurm]' from a "
            "durasim checkout (durasim is not on PyPI), or pip install dask-jobqueue"
        ) from e
    opts: dict[str, Any] = {
        "cores": cores,
        "processes": cores,  # one single-threaded worker per core
        "memory": memory,
        "walltime": walltime,
        "queue": queue,
        "account": account,
    }
    if python is not None:
        opts["python"] = python
    opts.update(kwargs)
    cluster = SLURMCluster(**{k: v for k, v in opts.items() if v is not None})
    cluster.scale(jobs=jobs)
    return cluster
