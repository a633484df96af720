"""Today's timing rule applied to the roots measured on the H200 and committed under receipts/.

The A/A roots hold nothing but noise (the candidate is byte-identical code in another
process); the rule must read no direction there. In every committed root, a workload whose
rounds do not reach two in each order carries no timing direction.
"""
from __future__ import annotations

from pathlib import Path

import committedroots
import pytest
from conftest import PROJECT_ROOT

from campaign.judging import direction
from campaign.judging.classify import classify_root

RECEIPTS = PROJECT_ROOT / "receipts"
SEALED = sorted(p.parent for p in RECEIPTS.glob("*/root.tar.gz"))
# the A/A campaigns (the same build on every cell); h200-aa-floor-mm-* measure the floor beside a real switch
AA = [p for p in SEALED if p.name.startswith(("h200-aa-event-", "h200-aa-graph-"))]
DIRECTIONS = (direction.FASTER, direction.SLOWER)


def unpacked(folder: Path, committed_roots: Path) -> Path:
    """The committed root, from the session's one unpacking of every archive (`conftest.committed_roots`):
    classifying reads a root and writes nothing beside it."""
    return committed_roots / committedroots.ROOTS / folder.name


def test_the_committed_aa_roots_are_there():
    assert {p.name.split("-2026")[0] for p in AA} == {"h200-aa-event", "h200-aa-graph"}


@pytest.mark.parametrize("folder", SEALED, ids=lambda p: p.name)
def test_no_committed_root_gives_a_direction_that_its_rounds_cannot_carry(folder, committed_roots):
    verdicts = classify_root(unpacked(folder, committed_roots))
    timed = {n: w for n, w in verdicts["workloads"].items() if w["timing"] and w["timing"]["primary"]}
    for name, w in timed.items():
        primary = w["timing"]["primary"]
        per_order = primary["rounds_per_order"]
        if min(per_order.get(o, 0) for o in direction.ORDERS) < 2:
            assert primary["verdict"] not in DIRECTIONS, (name, primary["reason"])
            assert w["class"] not in ("G", "R") or "topology" in w["reason"], (name, w["reason"])


@pytest.mark.parametrize("folder", AA, ids=lambda p: p.name)
def test_aa_roots_read_no_direction(folder, committed_roots):
    verdicts = classify_root(unpacked(folder, committed_roots))
    timed = [w for w in verdicts["workloads"].values() if w["timing"] and w["timing"]["primary"]]
    assert len(timed) == 3
    for w in timed:
        assert w["class"] == "B", w["reason"]                 # byte-identical code, correct: nothing measured
        assert w["timing"]["primary"]["verdict"] == direction.NEUTRAL
        assert set(w["timing"]["primary"]["order_verdicts"].values()) == {"noise floor"}
