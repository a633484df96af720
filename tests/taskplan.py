"""A cell's task.json and manifest written into a temporary folder, as the runner writes them,
for tests of the worker and its environment."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

from campaign.contract.artifacts import TASK_FILE, CellPlan
from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract.manifest import Manifest
from campaign.running.cellenv import cell_env, pinned_env

PROJECT_ROOT = Path(__file__).resolve().parent.parent

MANIFEST = {
    "schema_version": 1, "campaign": "worker-test", "description": "one cell through the worker",
    "sources": {"triton": {"version": "3.6.0"}},
    "device": {"backend": "cpu", "target": "cuda:90"},
    "switch": {"name": "DISABLE_MMA_V3",
               "cells": {"baseline": {}, "control": {"DISABLE_MMA_V3": "0"}, "candidate": {"DISABLE_MMA_V3": "1"}}},
    "timer": {"kind": "event"},
    "measured_launch_floor": 0,
    "workloads": [{"name": "add", "op": "add", "canary": True}],
}

TASK = {
    "id": "add/r1/baseline", "order": 0, "round": 1, "cell": "baseline", "workload": "add", "op": "add",
    "provider": "builtin", "canary": True, "env": {},
    "autotune": {"mode": "record", "policy": "first-config"}, "timeout_s": 600,
    "targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add",
                "correctness": "ops/workloads/demo/test_demo.py::test_add"},
    "dtypes": ["float16"],
}


def manifest_data(**changes) -> dict:
    data = copy.deepcopy(MANIFEST)
    data.update(changes)
    return data


def write_plan(base: Path, *, manifest: Optional[dict] = None, task: Optional[dict] = None,
               plugins: Optional[tuple[str, ...]] = None, replay_file: Optional[str] = None) -> CellPlan:
    """<base>/manifest.yaml and <base>/cells/<id>/task.json; the plugins default to the derived plan."""
    manifest = manifest or manifest_data()
    base.mkdir(parents=True, exist_ok=True)
    manifest_file = base / "manifest.yaml"
    manifest_file.write_text(json.dumps(manifest), encoding="utf-8")       # JSON is YAML
    task = {**copy.deepcopy(TASK), **(task or {})}
    cell_dir = base / "cells" / task["id"]
    cell_dir.mkdir(parents=True)
    if plugins is None:
        plugins = plugin_plan(get_backend(manifest["device"]["backend"]))
    plan = CellPlan.model_validate({
        "task": task, "project_root": str(PROJECT_ROOT), "root": str(base), "cell_dir": str(cell_dir),
        "replay_file": replay_file, "triton_cache_dir": str(cell_dir / "triton-cache"),
        "tuner_cache_dir": str(cell_dir / "tuner-cache"), "tuner_cache": "isolated",
        "pinned_env": pinned_env(Manifest.model_validate(manifest)), "plugins": plugins,
        "manifest_file": str(manifest_file), "harness_digest": "0" * 64,
    })
    (cell_dir / TASK_FILE).write_text(plan.model_dump_json(), encoding="utf-8")
    return plan


def run_worker(plan: CellPlan, parent_env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m campaign.worker task.json result.json`` with the runner's environment."""
    cell_dir = Path(plan.cell_dir)
    argv = [sys.executable, "-m", "campaign.worker", str(cell_dir / TASK_FILE), str(cell_dir / "result.json")]
    return subprocess.run(argv, cwd=plan.project_root, env=cell_env(parent_env, plan), capture_output=True,
                          text=True, timeout=timeout)
