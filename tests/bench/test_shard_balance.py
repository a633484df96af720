"""The shard balance bench: the manifest split as the screen splits it, each shard's load read from measured
status rows, a workload measured only as dtype parts counted by its parts, and one measured nowhere named."""
from pathlib import Path

from bench import shard_balance

from campaign.contract import status, yamlio
from campaign.contract.manifest import Manifest

MANIFEST = """schema_version: 1
campaign: balance
description: four workloads, two heavy
sources:
  triton: {version: "3.6.0"}
device: {backend: cpu, target: "cuda:90"}
switch:
  name: DISABLE_MMA_V3
  cells: {baseline: {}, candidate: {DISABLE_MMA_V3: "1"}}
timer: {kind: event}
defaults: {bench_level: core}
workloads:
  - {name: a, op: add, weight_s: 100}
  - {name: b, op: add, weight_s: 90}
  - {name: c, op: add, weight_s: 10}
  - {name: d, op: add, weight_s: 5}
"""


def _rows(path: Path, cells: dict[str, float]) -> Path:
    for task_id, seconds in cells.items():
        workload, round_, cell = task_id.split("/")
        status.append(path, status.StatusRow(task_id, int(round_[1:]), workload, cell, 0, "ok", elapsed_s=seconds))
    return path


def test_shards_are_split_by_weight_and_loaded_by_what_was_measured(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MANIFEST, encoding="utf-8")
    manifest = yamlio.validate(Manifest, tmp_path / "m.yaml")
    one = _rows(tmp_path / "one.tsv", {"a/r0/baseline": 50, "a/r0/candidate": 60, "a/r1/baseline": 999,
                                       "c/r0/baseline": 4, "c/r0/candidate": 5})
    two = _rows(tmp_path / "two.tsv", {"b-float16/r0/baseline": 70, "b-float32/r0/baseline": 80, "b-x/r0/baseline": 1})
    seconds = shard_balance.measured([one, two])
    assert seconds["a"] == 110 and "a/r1" not in str(seconds)          # round 1 is no IR-pass cell
    rows, missing = shard_balance.balance(manifest, 2, seconds)
    # LPT: a (100) to shard 1, b (90) to 2, c (10) to 2, d (5) to 1; predicted for the default 2 rounds
    assert [(r["workloads"], r["predicted_s"]) for r in rows] == [(2, 210.0), (2, 200.0)]
    assert [r["measured_s"] for r in rows] == [110.0, 159.0]              # b by its dtype parts, not b-x
    assert missing == ["d"]
    text = shard_balance.render(rows, missing)
    assert "heaviest / lightest measured: 1.445" in text and "not measured: 1 (d)" in text
