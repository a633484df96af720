"""Two FlagGems workloads in one batch process on a CUDA device: the second starts on an emptied
LibTuner store, tunes its own keys, and carries no warm-cache taint.

Run on the GPU host: ``python -m pytest tests/gpu/test_tunerstore_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

PROJECT = Path(__file__).resolve().parents[2]

MANIFEST = """schema_version: 1
campaign: tunerstore-gpu
description: two LibTuner-autotuned FlagGems ops in one batch process
sources:
  triton: {{version: "3.6.0"}}
  flag_gems: {{version: "5.0.2"}}
device: {{backend: cuda, name: "{name}", target: "cuda:90"}}
switch:
  name: DISABLE_MMA_V3
  cells: {{baseline: {{}}, candidate: {{DISABLE_MMA_V3: "1"}}}}
  ir_stage: ttgir
timer: {{kind: graph, warmup_ms: 25, rep_ms: 100, return_mode: median}}
rounds: {{count: 1, alternate_order: true, later_only_if_ir_changed: true}}
measured_launch_floor: 1
defaults: {{timeout_s: 420, bench_level: core, tuner_cache: isolated, workloads_per_process: 2}}
workloads:
  - {{name: mm, op: mm, provider: flaggems, dtypes: [float16], shapes: ["1024x1024x1024"],
      correctness: {{node_ids: ["ops/workloads/flaggems/test_fg_blas.py::test_mm[mnk1-dtype0]"]}},
      reason: one shape keeps the test short}}
  - {{name: addmm, op: addmm, provider: flaggems, dtypes: [float16], shapes: ["1024x1024x1024"],
      correctness: {{node_ids: ["ops/workloads/flaggems/test_fg_blas.py::test_addmm[mnk1-dtype0]"]}},
      reason: one shape keeps the test short}}
"""


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "campaign", *map(str, args)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=1800)


def test_the_second_flaggems_workload_of_a_batch_starts_on_an_emptied_tuner_store(tmp_path):
    from campaign.judging.classify import classify_root

    path = tmp_path / "tunerstore-gpu.yaml"
    path.write_text(MANIFEST.format(name=torch.cuda.get_device_name(0)), encoding="utf-8")
    done = _cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1])
    ran = _cli("run", root, "--scratch-dir", tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for cell in ("baseline", "candidate"):
        folder = root / "cells" / "addmm" / "r1" / cell
        identity = json.loads((folder / "run_identity.json").read_text())
        assert identity["tuner_cache_at_start"]["files"] > 0, "mm's sqlite is in the process's tuner folder"
        assert identity["tuner_store_at_start"]["rows"] == 0 and identity["tuner_store_at_start"]["tables"] > 0
        log = (folder / "run.log").read_text()
        emptied = [line for line in log.splitlines() if "FlagGems tuner store emptied before this workload" in line]
        assert emptied and " 0 row(s) deleted" not in emptied[0], "mm tuned into the store before addmm ran"
        # what mm's cells left in torch's caching allocator went back to the card before addmm started
        given = re.search(r"device memory: ([0-9.]+) MiB the earlier workloads cached given back", log)
        assert given and float(given.group(1)) > 0, log
        autotune = json.loads((folder / "autotune.json").read_text())
        assert [e for e in autotune["entries"] if e["tuner"] == "libtuner"], "addmm went through no LibTuner"
    recording = json.loads((root / "cells" / "addmm" / "r1" / "baseline" / "autotune.json").read_text())
    assert recording["tuning_runs"] > 0, "the recording cell tuned addmm itself, not from mm's rows"
    assert classify_root(root)["workloads"]["addmm"]["taints"] == []
