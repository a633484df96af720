"""The classes are symmetric in timing: swapping baseline and candidate turns G into R (timing),
C into R (topology, timing neutral) and keeps B and X (`campaign.judging.classrules.timing_class`).

Evidence is built as the classifier reads it: per-round samples of baseline, candidate and
control, paired by `campaign.judging.stats.timing`. The mirror swaps the two sides and keeps
each round's A/A ratio (control' = control x candidate / baseline), so the floors are the
same and every per-round ratio r becomes 1/r. Cases that sit on a threshold (a perturbation of
one part in 10^9 moves the class) are set aside: there either class is honest.
"""
from __future__ import annotations

import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from campaign.contract.records import Interval
from campaign.judging import direction, stats
from campaign.judging.classrules import timing_class
from campaign.judging.stats import Sample

MIRROR = {"G": "R", "R": "G", "C": "R", "B": "B", "X": "X"}


def _timing(base, cand, ctrl, candidate_scale=1.0, control_scale=1.0) -> stats.Timing:
    per_round, orders = {}, {}
    for r in range(len(base)):
        per_round[r + 1] = {
            "baseline": {k: Sample(v, "graph") for k, v in base[r].items()},
            "candidate": {k: Sample(v * candidate_scale, "graph") for k, v in cand[r].items()},
            "control": {k: Sample(v * control_scale, "graph") for k, v in ctrl[r].items()}}
        orders[r + 1] = direction.ORDERS[r % 2]
    return stats.timing(per_round, orders, True)


def _class(base, cand, ctrl, scoped, **scale) -> tuple[str, bool]:
    klass, _, on_timing = timing_class(_timing(base, cand, ctrl, **scale), scoped, "topology")
    return klass, on_timing


@st.composite
def evidence(draw):
    rounds = draw(st.integers(min_value=2, max_value=12))     # past 4 the floor is a quantile, not the max
    shapes = draw(st.integers(min_value=1, max_value=3))
    noise = draw(st.sampled_from([0.0005, 0.003, 0.02]))
    # one round's control off by a few per cent sets the A/A floor; an effect drawn near that floor
    # probes the band where a plain ±floor test was not symmetric (+5 % cleared a 5 % floor, -4.76 % did not)
    spike = draw(st.sampled_from([0.0, 0.03, 0.05])) * draw(st.sampled_from([1, -1]))
    effect = draw(st.one_of(st.sampled_from([0.0, 0.004, -0.004, 0.02, -0.02, 0.3, -0.3]),
                            st.floats(min_value=0.9, max_value=1.1).map(lambda u: u * math.log1p(abs(spike))),
                            st.floats(min_value=0.9, max_value=1.1).map(lambda u: -u * math.log1p(abs(spike)))))
    jitter = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
    base, cand, ctrl = [], [], []
    for r in range(rounds):
        b, c, a = {}, {}, {}
        for s in range(shapes):
            key = ("test_bench_mm", (s + 1, 64), "float16", 0)
            b[key] = 0.1 * (s + 1) * math.exp(noise * draw(jitter))
            c[key] = b[key] * math.exp(effect + noise * draw(jitter))
            a[key] = b[key] * math.exp(noise * draw(jitter)) * ((1 + spike) if r == 0 else 1.0)
        base.append(b), cand.append(c), ctrl.append(a)
    scoped = draw(st.sampled_from([(4, 4), (12, 4), (4, 9), (0, 0)]))
    return base, cand, ctrl, scoped


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evidence())
def test_swapping_baseline_and_candidate_mirrors_the_class(case):
    base, cand, ctrl, scoped = case
    klass, on_timing = _class(base, cand, ctrl, scoped)
    for scale in ({"candidate_scale": 1 + 1e-9}, {"candidate_scale": 1 - 1e-9},
                  {"control_scale": 1 + 1e-9}, {"control_scale": 1 - 1e-9}):
        assume(_class(base, cand, ctrl, scoped, **scale) == (klass, on_timing))
    mirrored_ctrl = [{k: ctrl[r][k] * cand[r][k] / base[r][k] for k in ctrl[r]} for r in range(len(base))]
    mirror, mirror_on_timing = _class(cand, base, mirrored_ctrl, scoped[::-1])
    if klass == "R" and not on_timing:          # R from the topology alone mirrors to C
        assert mirror == "C", (klass, mirror)
    else:
        assert mirror == MIRROR[klass], (klass, mirror)
    assert mirror_on_timing == on_timing


def test_the_mirror_test_reaches_every_class_it_maps():
    """The generator reaches G, R (both kinds), C and B: the property is not vacuous."""
    seen = set()
    for effect in (-0.3, 0.3, 0.0):
        for scoped in ((12, 4), (4, 9), (4, 4)):
            base = [{("f", (1,), "float16", 0): 1.0} for _ in range(4)]
            cand = [{k: v * math.exp(effect + 1e-4 * r) for k, v in b.items()} for r, b in enumerate(base)]
            ctrl = [{k: v * (1 + 1e-4 * (-1) ** r) for k, v in b.items()} for r, b in enumerate(base)]
            seen.add(_class(base, cand, ctrl, scoped))
    assert {("G", True), ("R", True), ("C", False), ("R", False), ("B", False)} <= seen


def test_the_band_edges_are_mirrors_in_log_ratio():
    """A +5 % floor's faster edge is 1/1.05 - 1 (-4.76 %), not -5 %: an interval just inside the mirror of
    one that clears +5 % clears it too. Drawn rounds rarely land in that 0.24 % window, so it is pinned here."""
    floor = 0.05
    slower = Interval(low=floor + 1e-4, high=0.08, method="range of 4 rounds")
    mirrored = Interval(low=1 / (1 + 0.08) - 1, high=1 / (1 + floor + 1e-4) - 1, method="range of 4 rounds")
    assert -floor < mirrored.high < 1 / (1 + floor) - 1                     # inside the window a -floor band misses
    assert direction.judge(slower, floor, True)[0] == direction.SLOWER
    assert direction.judge(mirrored, floor, True)[0] == direction.FASTER
