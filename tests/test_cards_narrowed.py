"""A fresh run given fewer cards than its manifest names (``--devices``) is a run on those cards:
the first placement is made over them, never over the manifest's count with the rest "moved on
resume" (the two-card H200 manifest run with ``--devices 0`` printed a two-card partition with an
empty card 1). Real CLI runs on the compile-only backend's declared virtual cards, over benchmarks
that compile nothing: this is about where workloads are placed, not what they compile."""
from __future__ import annotations

import json
from pathlib import Path

import runroots as rr

# add weighs the mean of the others (40, said "equal"): 50 + 40 + 30 = 120 s on the one card given
NOOP = [rr.fault("add", "test_bench_noop", canary=True),
        f'  - {{name: matmul, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 50}}\n',
        f'  - {{name: softmax, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 30}}\n']


def test_a_fresh_two_card_root_run_on_one_card_places_everything_there(tmp_path: Path):
    path = rr.manifest(tmp_path, NOOP, rounds=1, campaign="narrowed")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('  target: "cuda:90"\n', '  target: "cuda:90"\n  count: 2\n'), encoding="utf-8")
    prepared = rr.run_cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert prepared.returncode == 0, prepared.stderr
    root = Path(prepared.stdout.strip().splitlines()[-1])
    done = rr.run(root, "--devices", "1")
    assert done.returncode == 0, done.stderr
    placed = json.loads((root / "partition.json").read_text(encoding="utf-8"))
    assert placed["cards"] == [{"slot": 1, "index": 1, "uuid": "cpu-virtual-1",
                                "workloads": ["matmul", "add", "softmax"], "predicted_s": 120.0}]
    assert (placed["critical_path_s"], placed["floor_s"]) == (120.0, 120.0)
    assert not list(root.glob("partition.resume-*.json")), "nothing was moved: nothing was placed elsewhere"
    assert {row.device for row in rr.rows(root)} == {"cpu-virtual-1"}
    report = rr.run_cli("report", root)
    assert report.returncode == 0, report.stderr
    assert "| 1 | cpu-virtual-1 | matmul, add, softmax | 120.0 |" in report.stdout
    assert "moved on resume" not in report.stdout and "max(heaviest workload, total / 1)" in report.stdout
