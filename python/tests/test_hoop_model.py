"""HOOP's recovery-time model as bound for experiment (g)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import durasim
from durasim import _native

pytestmark = pytest.mark.skipif("hoop" not in durasim.schemes(), reason="HOOP is not in this build")

GIB = 1 << 30


@settings(max_examples=40, deadline=None)
@given(
    ratio=st.floats(0.0, 1.0),
    threads=st.integers(1, 64),
    more_threads=st.integers(0, 64),
    bw=st.floats(1.0, 100.0),
    more_bw=st.floats(0.0, 100.0),
)
def test_more_threads_or_bandwidth_never_slow_recovery(ratio, threads, more_threads, bw, more_bw):
    t = _native.hoop_recovery_time_ns(GIB, ratio, threads, bw, [])
    assert t > 0
    slack = t * (1 + 1e-12)
    assert _native.hoop_recovery_time_ns(GIB, ratio, threads + more_threads, bw, []) <= slack
    assert _native.hoop_recovery_time_ns(GIB, ratio, threads, bw + more_bw, []) <= slack


def test_model_parameters_are_validated():
    with pytest.raises(ValueError, match=r"hoop\.recovery_merge_ns"):
        _native.hoop_recovery_time_ns(GIB, 0.5, 4, 10.0, [("hoop.recovery_merge_ns", "x")])


def test_recovery_experiment_uses_the_1gib_model():
    from durasim.papers import hoop
    from durasim.papers.hoop import experiments as hoop_exp

    df = hoop.recovery("tiny", scheduler="serial", progress=False)
    assert len(df) and (df["recovery_ms"] > 0).all()
    assert "1 GiB" in df.attrs["normalization"]
    for _, part in df.groupby(hoop_exp.P_REC_BW):
        ms = part.sort_values(hoop_exp.P_REC_THREADS)["recovery_ms"].tolist()
        assert ms == sorted(ms, reverse=True)
