"""Correctness on the configs that were timed, through the real worker on a CUDA device: the
recording cell records the correctness shapes' winners, a replaying cell's correctness
session injects them and benchmarks nothing, and every tuned key's configs were warmed.

Run on the GPU host: ``python -m pytest tests/gpu/test_correctness_replay_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builders"))        # tests/: the taskplan helper
from taskplan import manifest_data, run_worker, write_plan  # noqa: E402

MATMUL = {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_matmul",
          "correctness": "ops/workloads/demo/test_demo.py::test_matmul"}


def cuda_manifest() -> dict:
    return manifest_data(device={"backend": "cuda", "target": "cuda:90", "name": torch.cuda.get_device_name(0)},
                         timer={"kind": "graph"}, workloads=[{"name": "matmul", "op": "matmul"}])


def read(plan, name: str) -> dict:
    return json.loads((Path(plan.cell_dir) / name).read_text())


def test_a_replaying_cells_correctness_session_runs_the_recorded_configs_untuned(tmp_path):
    task = {"id": "matmul/r1/baseline", "workload": "matmul", "op": "matmul", "canary": False, "targets": MATMUL}
    record = write_plan(tmp_path / "a", manifest=cuda_manifest(),
                        task={**task, "autotune": {"mode": "record", "policy": "measured"}})
    done = run_worker(record, dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = read(record, "autotune-correctness.json")
    assert (recorded["mode"], recorded["session"]) == ("record", "correctness") and recorded["entries"]
    assert all(w["warmed"] == w["configs"] for w in read(record, "autotune.json")["warmup"])

    replay_file = str(Path(record.cell_dir) / "autotune.json")
    replay = write_plan(tmp_path / "b", manifest=cuda_manifest(), replay_file=replay_file, task={
        **task, "id": "matmul/r1/candidate", "cell": "candidate", "env": {"DISABLE_MMA_V3": "1"},
        "autotune": {"mode": "replay", "policy": "measured", "source": "matmul/r1/baseline"}})
    done = run_worker(replay, dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = read(replay, "autotune-correctness.json")
    assert (replayed["mode"], replayed["fallbacks"], replayed["tuning_runs"]) == ("replay", [], 0)
    result = read(replay, "result.json")
    assert result["correctness"]["state"] == "run" and result["markers"]["AUTOTUNE_REPLAY_FALLBACK"] == 0
