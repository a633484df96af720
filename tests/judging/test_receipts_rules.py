"""Today's timing rule applied to the roots measured on the H200 and committed under receipts/.

The A/A roots hold nothing but noise (the candidate is byte-identical code in another
process); the rule must read no direction there. In every committed root, a workload whose
rounds do not reach two in each order carries no timing direction.
"""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from campaign.judging import direction
from campaign.judging.classify import classify_root

RECEIPTS = PROJECT_ROOT / "receipts"
SEALED = sorted(p.parent for p in RECEIPTS.glob("*/root.tar.gz"))
# the A/A campaigns (the same build on every cell); h200-aa-floor-mm-* measure the floor beside a real switch
AA = [p for p in SEALED if p.name.startswith(("h200-aa-event-", "h200-aa-graph-"))]
DIRECTIONS = (direction.FASTER, direction.SLOWER)


def unpack(folder: Path, into: Path) -> Path:
    with tarfile.open(folder / "root.tar.gz") as archive:
        archive.extractall(into, filter="data")
    return into / folder.name


def test_the_committed_aa_roots_are_there():
    assert {p.name.split("-2026")[0] for p in AA} == {"h200-aa-event", "h200-aa-graph"}


@pytest.mark.parametrize("folder", SEALED, ids=lambda p: p.name)
def test_no_committed_root_gives_a_direction_that_its_rounds_cannot_carry(folder, tmp_path):
    verdicts = classify_root(unpack(folder, tmp_path))
    timed = {n: w for n, w in verdicts["workloads"].items() if w["timing"] and w["timing"]["primary"]}
    for name, w in timed.items():
        primary = w["timing"]["primary"]
        per_order = primary["rounds_per_order"]
        if min(per_order.get(o, 0) for o in direction.ORDERS) < 2:
            assert primary["verdict"] not in DIRECTIONS, (name, primary["reason"])
            assert w["class"] not in ("G", "R") or "topology" in w["reason"], (name, w["reason"])


@pytest.mark.parametrize("folder", AA, ids=lambda p: p.name)
def test_aa_roots_read_no_direction(folder, tmp_path):
    verdicts = classify_root(unpack(folder, tmp_path))
    timed = [w for w in verdicts["workloads"].values() if w["timing"] and w["timing"]["primary"]]
    assert len(timed) == 3
    for w in timed:
        assert w["class"] == "B", w["reason"]                 # byte-identical code, correct: nothing measured
        assert w["timing"]["primary"]["verdict"] == direction.NEUTRAL
        assert set(w["timing"]["primary"]["order_verdicts"].values()) == {"noise floor"}
