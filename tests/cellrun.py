"""One cell through pytest in a fresh process, as the worker runs it: a CellPlan and a
manifest on disk, ``make(ctx)`` of every planned plugin module, ``pytest.main``.

A fresh process per cell is the point, not a convenience: Triton's in-memory JIT
cache ignores environment changes, so a switch is only seen by a new process with
its own TRITON_CACHE_DIR. The child gets an explicit environment (no inheritance
of the caller's), the cell's variables added on top.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

from campaign.contract.artifacts import TASK_FILE, CellPlan

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = PROJECT_ROOT / "ops" / "workloads" / "demo"
CPU_PLUGINS = ("campaign.plugins.compile_only", "campaign.plugins.run_identity",
               "campaign.plugins.ir_capture", "campaign.plugins.autotune")
CUDA_PLUGINS = CPU_PLUGINS[1:]
# What a GPU host may need to find its driver; read from this process, never changed.
# PYTHONPATH: the GPU host installs the project's dependencies into a side folder named there
PASSTHROUGH = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "TRITON_LIBCUDA_PATH", "CUDA_HOME", "PYTHONPATH")

DRIVER = textwrap.dedent("""\
    import importlib, sys
    from pathlib import Path
    import pytest
    from campaign.contract import yamlio
    from campaign.contract.artifacts import CellPlan
    from campaign.backends import get_backend
    from campaign.contract.canonical import read_json
    from campaign.contract.manifest import Manifest
    from campaign.worker.context import CellContext

    plan = CellPlan.model_validate(read_json(Path(sys.argv[1])))
    manifest = yamlio.validate(Manifest, Path(plan.manifest_file))
    ctx = CellContext.for_cell(plan, manifest, get_backend(manifest.device.backend))
    plugins = [importlib.import_module(name).make(ctx) for name in plan.plugins]
    sys.exit(int(pytest.main([sys.argv[2], "-q", "-p", "no:cacheprovider"], plugins=plugins)))
""")


def manifest_data(backend: str = "cpu", target: str = "cuda:90", **device) -> dict:
    return {
        "schema_version": 1, "campaign": "plugin-test", "description": "capture plugins under test",
        "sources": {"triton": {"version": "3.6.0"}},
        "device": {"backend": backend, "target": target, **device},
        "switch": {"name": "DISABLE_MMA_V3",
                   "cells": {"baseline": {}, "control": {"DISABLE_MMA_V3": "0"},
                             "candidate": {"DISABLE_MMA_V3": "1"}}},
        "timer": {"kind": "event" if backend == "cpu" else "graph"},
        "workloads": [{"name": "matmul", "op": "matmul"}],
    }


def kernel_test(body: str) -> str:
    """A test module calling the demo kernels; ``body`` is the test function's body."""
    return (f"import sys\nsys.path.insert(0, {str(DEMO_DIR)!r})\n"
            "import torch\nfrom demo_kernels import add, matmul, row_sum, softmax\n\n\n"
            "def test_cell():\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n")


def plan_cell(base: Path, name: str, *, env: Optional[dict] = None, mode: str = "record",
              policy: str = "first-config", replay_file: Optional[Path] = None,
              plugins: tuple[str, ...] = CPU_PLUGINS, manifest: Optional[dict] = None,
              cell: str = "baseline", shared_tuner_cache: Optional[Path] = None) -> CellPlan:
    """Write <base>/<name>/{task.json, manifest.yaml} and return the plan.

    ``shared_tuner_cache``: the cell's FlagGems tuner cache is that folder, shared with
    the cells given the same one (mode "shared"), instead of a fresh one of its own."""
    cell_dir = base / name
    cell_dir.mkdir(parents=True)
    manifest_file = cell_dir / "manifest.yaml"
    manifest_file.write_text(json.dumps(manifest or manifest_data()), encoding="utf-8")   # JSON is YAML
    task = {
        "id": f"matmul/r1/{cell}", "order": 0, "round": 1, "cell": cell, "workload": "matmul",
        "op": "matmul", "provider": "builtin", "canary": False, "env": dict(env or {}),
        "autotune": {"mode": mode, "policy": policy, "source": "matmul/r1/baseline" if mode == "replay" else None},
        "timeout_s": 600,
        "targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_matmul",
                    "correctness": "ops/workloads/demo/test_demo.py"},
        "dtypes": ("float16",),
    }
    plan = CellPlan.model_validate({
        "task": task, "project_root": str(PROJECT_ROOT), "root": str(base), "cell_dir": str(cell_dir),
        "replay_file": str(replay_file) if replay_file else None,
        "triton_cache_dir": str(cell_dir / "triton-cache"),
        "tuner_cache_dir": str(shared_tuner_cache or cell_dir / "tuner-cache"),
        "tuner_cache": "isolated" if shared_tuner_cache is None else "shared", "pinned_env": {"TRITON_DEFAULT_FP_FUSION": "1"},
        "plugins": plugins, "manifest_file": str(manifest_file), "harness_digest": "0" * 64,
    })
    (cell_dir / TASK_FILE).write_text(plan.model_dump_json(), encoding="utf-8")
    return plan


def run_cell(plan: CellPlan, test_source: str, extra_env: Optional[dict] = None,
             timeout: float = 300) -> subprocess.CompletedProcess:
    cell_dir = Path(plan.cell_dir)
    work = cell_dir / "work"
    work.mkdir()
    (work / "test_cell_body.py").write_text(test_source, encoding="utf-8")
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    env = {name: os.environ[name] for name in PASSTHROUGH if name in os.environ}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(work), "TRITON_HOME": str(work),
           "TRITON_CACHE_DIR": plan.triton_cache_dir, "FLAGGEMS_CACHE_DIR": plan.tuner_cache_dir,
           **plan.pinned_env, **plan.task.env, **(extra_env or {})}
    argv = [sys.executable, str(work / "driver.py"), str(cell_dir / TASK_FILE), str(work / "test_cell_body.py")]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"cell {plan.task.id} failed: argv {argv} rc {proc.returncode}\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def read_index(cell_dir: Path) -> list[dict]:
    lines = (Path(cell_dir) / "ir" / "index.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]
