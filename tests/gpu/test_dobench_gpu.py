"""A user's do_bench test file as a workload on a real GPU, graph-timed (``provider: pytest``).

Run on the GPU host from the project root::

    python3 -m pytest tests/gpu/test_dobench_gpu.py -m gpu -v

The same file the CPU tests compile (tests/data/dobench/dobench_my_kernel.py) runs through the CLI
in a copy of the project, on CUDA with the graph timer: every do_bench call is a graph-timed row
keyed by node id and call order, and the test itself still passes on the values it got back.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import projectcopy
import pytest
from conftest import PROJECT_ROOT

from campaign.contract import canonical

pytestmark = pytest.mark.gpu

DATA = "tests/data/dobench"
KERNEL = f"{DATA}/dobench_my_kernel.py"

HEAD = """schema_version: 1
campaign: dobench-gpu
description: a do_bench test file graph-timed on the GPU
sources:
  triton: {{version: "3.6.0"}}
device:
  backend: cuda
  name: "{name}"
  target: "cuda:90"
switch:
  name: DISABLE_MMA_V3
  cells:
    baseline: {{}}
    candidate: {{DISABLE_MMA_V3: "1"}}
timer:
  kind: graph
  warmup_ms: 10
  rep_ms: 20
rounds:
  count: 1
defaults:
  timeout_s: 600
workloads:
  - {{name: my-kernel, provider: pytest, benchmark: "{kernel}"}}
"""


def test_a_do_bench_file_is_graph_timed_row_by_row(tmp_path: Path):
    import torch

    project = projectcopy.make(tmp_path)
    shutil.copytree(PROJECT_ROOT / DATA, project / DATA, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "dobench-gpu.yaml"
    path.write_text(HEAD.format(name=torch.cuda.get_device_name(0), kernel=KERNEL), encoding="utf-8")
    root = projectcopy.prepare(project, path)
    done = projectcopy.run(project, root, timeout=1200)
    assert done.returncode == 0, done.stderr
    for cell in ("baseline", "candidate"):
        folder = root / "cells" / "my-kernel" / "r1" / cell
        rows = canonical.read_json(folder / "rows.json")["rows"]
        assert [(r["function"], r["role"]) for r in rows] == [
            ("test_scale_add[dtype0-4096]", "measured"), ("test_scale_add[dtype0-4096]", "measured"),
            ("test_scale_add[dtype0-65536]", "measured"), ("test_scale_add[dtype0-65536]", "measured"),
            ("test_dot", "measured")]
        assert {(r["status"], r["timer"], r["l2_flush"]) for r in rows} == {("ok", "graph", False)}
        assert all(r["latency_ms"] > 0 and r["window_start_unix"] < r["window_end_unix"] for r in rows)
        assert "3 passed" in (folder / "stdout.log").read_text(encoding="utf-8")   # its own assertions held
