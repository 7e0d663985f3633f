"""The claim sweep of every paper (where its headline comparison holds):
at tiny scale it runs, its frame has the expected columns and points, the
advantage is defined so that > 1 means the claim holds, the figure draws
one line per rival and the parameters it sweeps do not count as ones the
scale changes."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from durasim.papers import PAPERS, _claims
from durasim.papers._base import Avail
from durasim.plotting import series

COLUMNS = {
    "axis",
    "axis_label",
    "point",
    "point_order",
    "x",
    "scheme",
    "rival",
    "metric",
    "value",
    "rival_value",
    "advantage",
}


def _claim(paper):
    return PAPERS[paper].experiments["claim"]


@pytest.mark.parametrize("paper", list(PAPERS))
def test_claim_sweep_runs_at_tiny_scale(paper):
    p = PAPERS[paper]
    claim = _claim_obj(paper)
    df = p.run_experiments(["claim"], "tiny", scheduler="serial", progress=False)["claim"]
    assert set(df.columns) >= COLUMNS
    sc = p.scale_settings("tiny")
    want = sum(len(a.points(sc)) for a in claim.axes) * len(claim.rivals) * len(claim.metrics)
    assert len(df) == want
    assert set(df["rival"]) == set(claim.rivals) and set(df["scheme"]) == {claim.scheme}
    assert df["advantage"].notna().any()
    for m in claim.metrics:
        part = df[df["metric"] == m.col].dropna(subset=["advantage"])
        expect = (
            part["value"] / part["rival_value"]
            if m.higher_is_better
            else part["rival_value"] / part["value"]
        )
        assert all(math.isclose(a, b) for a, b in zip(part["advantage"], expect))
    notes = df.attrs["notes"]
    assert notes[0].startswith("claim tested: ") and any("holds" in n for n in notes)
    t = _claims.table(df)
    assert len(t) == sum(len(a.points(sc)) for a in claim.axes)
    fig = p.figures["claim"](df)
    labels = {claim.labels.get(r, r) for r in claim.rivals}
    assert set(series(fig)) == {f"vs {x}" for x in labels}
    assert "claim holds" in fig.get_suptitle()


def _claim_obj(paper):
    import importlib

    return importlib.import_module(f"durasim.papers.{paper}.claim").CLAIM


@pytest.mark.parametrize("paper", list(PAPERS))
def test_every_spec_sets_every_swept_parameter(paper):
    """A run is matched to its points by the swept parameters alone."""
    claim = _claim_obj(paper)
    for scale in PAPERS[paper].scales:
        sc = PAPERS[paper].scale_settings(scale)
        plan = _claim(paper).plan(sc, Avail())
        keys = claim.swept_keys(sc)
        assert plan.specs and not plan.skipped
        for spec in plan.specs:
            assert keys <= set(spec), (scale, keys - set(spec))
        # No two points of an axis run the same spec for the claimed scheme.
        for a in claim.axes:
            seen = [tuple(sorted(pt.for_scheme(claim.scheme).items())) for pt in a.points(sc)]
            assert len(seen) == len(set(seen)), (scale, a.key)


def test_advantage_and_readings_on_a_made_up_frame():
    """Higher-is-better metrics divide by the rival, cost metrics the other
    way; the readings say where the claim holds and where not."""
    claim = _claims.Claim(
        claim="made up",
        scheme="a",
        rivals=("b",),
        metrics=(_claims.Metric("tput", "throughput", True), _claims.Metric("w", "writes", False)),
        axes=(
            _claims.Axis(
                "k",
                "knob",
                lambda sc: [
                    _claims.Point("1", {"x.k": 1}, x=1),
                    _claims.Point("2", {"x.k": 2}, x=2),
                ],
            ),
        ),
        base=lambda sc, s: {"scheme": s, "workload": "w", "threads": 1, "tx": 10, "seed": 1},
        what="a made-up sweep",
    )
    raw = pd.DataFrame(
        [
            {"scheme": "a", "x.k": 1, "tput": 2.0, "w": 10.0},
            {"scheme": "b", "x.k": 1, "tput": 1.0, "w": 20.0},
            {"scheme": "a", "x.k": 2, "tput": 1.0, "w": 30.0},
            {"scheme": "b", "x.k": 2, "tput": 2.0, "w": 15.0},
        ]
    )
    raw.attrs["plan_meta"] = {
        "claim_keys": ["x.k"],
        "claim_ref": {"x.k": 1},
        "claim_points": {"k": claim.axes[0].points({})},
    }
    df = _claims.analyze(claim)(raw)
    adv = {(r.point, r.metric): r.advantage for r in df.itertuples()}
    assert adv == {("1", "tput"): 2.0, ("1", "w"): 2.0, ("2", "tput"): 0.5, ("2", "w"): 0.5}
    readings = [n for n in df.attrs["notes"] if "holds" in n]
    assert readings and all("holds at 1; not at 2" in n for n in readings)
