"""A cell's task.json written into a temporary folder as the runner plans it, for tests of the
worker, its plugins and its environment: the one CellPlan writer and the one manifest template.

`cell_plan` builds the plan from the product's own parts -- the manifest's terms
(`campaign.planning.matrix.cell_terms`), its pinned env (`campaign.running.cellenv.pinned_env`)
and, unless a test names them, the plugin plan derived from the backend -- so a test cell
differs from a real one only where the test says so.
"""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Optional

from conftest import PROJECT_ROOT

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract.artifacts import RESULT_FILE, TASK_FILE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import CellPlan
from campaign.planning.matrix import cell_terms
from campaign.running.cellenv import cell_env, pinned_env

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
    """The manifest template with top-level keys replaced."""
    data = copy.deepcopy(MANIFEST)
    data.update(changes)
    return data


def cell_plan(cell_dir: Path, *, root: Path, task: dict, manifest: Optional[dict] = None,
              plugins: Optional[tuple[str, ...]] = None, replay_file: Optional[Path] = None,
              shared_tuner_cache: Optional[Path] = None, project_root: Path = PROJECT_ROOT) -> CellPlan:
    """Write <cell_dir>/task.json and return its plan.

    ``shared_tuner_cache``: the cell's FlagGems tuner cache is that folder, shared with the
    cells given the same one (mode "shared"), instead of a fresh one of its own."""
    parsed = Manifest.model_validate(manifest or manifest_data())
    cell_dir.mkdir(parents=True)
    plan = CellPlan.model_validate({
        "task": task, "project_root": str(project_root), "root": str(root), "cell_dir": str(cell_dir),
        "replay_file": str(replay_file) if replay_file else None,
        "triton_cache_dir": str(cell_dir / "triton-cache"),
        "tuner_cache_dir": str(shared_tuner_cache or cell_dir / "tuner-cache"),
        "tuner_cache": "isolated" if shared_tuner_cache is None else "shared",
        "pinned_env": pinned_env(parsed),
        "plugins": plugin_plan(get_backend(parsed.device.backend)) if plugins is None else plugins,
        "terms": cell_terms(parsed), "harness_digest": "0" * 64,
    })
    (cell_dir / TASK_FILE).write_text(plan.model_dump_json(), encoding="utf-8")
    return plan


def write_plan(base: Path, *, manifest: Optional[dict] = None, task: Optional[dict] = None,
               plugins: Optional[tuple[str, ...]] = None, replay_file: Optional[str] = None) -> CellPlan:
    """<base>/cells/<id>/task.json, laid out as in a run root, of `TASK` with ``task``'s keys replaced."""
    task = {**copy.deepcopy(TASK), **(task or {})}
    base.mkdir(parents=True, exist_ok=True)
    return cell_plan(base / "cells" / task["id"], root=base, task=task, manifest=manifest, plugins=plugins,
                     replay_file=Path(replay_file) if replay_file else None)


def run_worker(plan: CellPlan, parent_env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m campaign.worker task.json result.json`` with the runner's environment."""
    cell_dir = Path(plan.cell_dir)
    argv = [sys.executable, "-m", "campaign.worker", str(cell_dir / TASK_FILE), str(cell_dir / RESULT_FILE)]
    return subprocess.run(argv, cwd=plan.project_root, env=cell_env(parent_env, plan), capture_output=True,
                          text=True, timeout=timeout)
