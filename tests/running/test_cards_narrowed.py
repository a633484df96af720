"""A fresh root given fewer cards than its manifest names (``--devices``) is placed over those cards:
never over the manifest's count with the rest "moved on resume" (the two-card H200 manifest run with
``--devices 0`` printed a two-card partition with an empty card 1). The placement is what
`campaign.flows.cardrun.plan` writes before any cell runs, on a root prepared by the CLI, over the
compile-only backend's declared virtual cards; runs on two cards are `tests/running/test_cards.py`'s."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import runroots as rr

from campaign.backends import get_backend
from campaign.flows import cardrun

# add weighs the mean of the others (40, said "equal"): 50 + 40 + 30 = 120 s on the one card given
NOOP = [rr.fault("add", "test_bench_noop", canary=True),
        f'  - {{name: matmul, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 50}}\n',
        f'  - {{name: softmax, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 30}}\n']


def _two_card_root(tmp_path: Path) -> Path:
    path = rr.manifest(tmp_path, NOOP, rounds=1, campaign="narrowed")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('  target: "cuda:90"\n', '  target: "cuda:90"\n  count: 2\n'), encoding="utf-8")
    prepared = rr.run_cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert prepared.returncode == 0, prepared.stderr
    return Path(prepared.stdout.strip().splitlines()[-1])


def _plan(root: Path, devices):
    return cardrun.plan(rr.run_setup(root), get_backend("cpu"), devices, None, {}, threading.Lock())


def test_a_fresh_two_card_root_given_one_card_places_everything_there(tmp_path: Path):
    root = _two_card_root(tmp_path)
    groups, failed = _plan(root, [1])
    assert failed == [] and [(card.index, names) for card, names in groups] == [(1, ("matmul", "add", "softmax"))]
    placed = json.loads((root / "partition.json").read_text(encoding="utf-8"))
    assert placed["cards"] == [{"slot": 1, "index": 1, "uuid": "cpu-virtual-1",
                                "workloads": ["matmul", "add", "softmax"], "predicted_s": 120.0}]
    assert (placed["critical_path_s"], placed["floor_s"]) == (120.0, 120.0)
    assert not list(root.glob("partition.resume-*.json")), "nothing was moved: nothing was placed elsewhere"
    # the placement stands: a resume on both cards keeps every workload on the card that has it
    groups, _ = _plan(root, None)
    assert [(card.index, names) for card, names in groups] == [(0, ()), (1, ("matmul", "add", "softmax"))]
