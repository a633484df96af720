"""One cell through pytest in a fresh process, as the worker runs its benchmark session: a
CellPlan on disk (`taskplan.cell_plan`), ``make(ctx)`` of every planned plugin, ``pytest.main``
over a test body the test writes.

A fresh process per cell is the point, not a convenience: Triton's in-memory JIT
cache ignores environment changes, so a switch is only seen by a new process with
its own TRITON_CACHE_DIR. The child's environment is the runner's own
(`campaign.running.cellenv.cell_env`), and its plugins the plan's, derived from the
backend (`campaign.backends.plan`) unless a test names fewer.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import taskplan
from conftest import PROJECT_ROOT

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract.artifacts import TASK_FILE
from campaign.contract.plans import CellPlan
from campaign.running.cellenv import cell_env

DEMO_DIR = PROJECT_ROOT / "ops" / "workloads" / "demo"
CPU_PLUGINS = plugin_plan(get_backend("cpu"))
CUDA_PLUGINS = plugin_plan(get_backend("cuda"))

# The worker's benchmark session: every planned plugin but outcomes (`campaign.worker`).
DRIVER = textwrap.dedent("""\
    import importlib, sys
    from pathlib import Path
    import pytest
    from campaign.backends import get_backend
    from campaign.backends.plan import OUTCOMES
    from campaign.contract.canonical import read_json
    from campaign.contract.plans import CellPlan
    from campaign.worker.context import CellContext

    plan = CellPlan.model_validate(read_json(Path(sys.argv[1])))
    ctx = CellContext.for_cell(plan, get_backend(plan.terms.device.backend))
    plugins = [importlib.import_module(name).make(ctx) for name in plan.plugins if name != OUTCOMES]
    sys.exit(int(pytest.main([sys.argv[2], "-q", "-p", "no:cacheprovider"], plugins=plugins)))
""")


def manifest_data(backend: str = "cpu", target: str = "cuda:90", **device) -> dict:
    """`taskplan.MANIFEST` for the matmul workload on ``backend`` (graph-timed where it executes)."""
    return taskplan.manifest_data(
        campaign="plugin-test", description="capture plugins under test",
        device={"backend": backend, "target": target, **device},
        timer={"kind": "event" if backend == "cpu" else "graph"},
        workloads=[{"name": "matmul", "op": "matmul"}])


def kernel_test(body: str) -> str:
    """A test module calling the demo kernels; ``body`` is the test function's body."""
    return (f"import sys\nsys.path.insert(0, {str(DEMO_DIR)!r})\n"
            "import torch\nfrom demo_kernels import add, matmul, row_sum, softmax\n\n\n"
            "def test_cell():\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n")


def plan_cell(base: Path, name: str, *, env: Optional[dict] = None, mode: str = "record",
              policy: str = "first-config", replay_file: Optional[Path] = None,
              plugins: Optional[tuple[str, ...]] = None, manifest: Optional[dict] = None,
              cell: str = "baseline", shared_tuner_cache: Optional[Path] = None) -> CellPlan:
    """<base>/<name>/task.json of a matmul cell (`taskplan.cell_plan`); the plugins default to the plan."""
    task = {
        "id": f"matmul/r1/{cell}", "order": 0, "round": 1, "cell": cell, "workload": "matmul",
        "op": "matmul", "provider": "builtin", "canary": False, "env": dict(env or {}),
        "autotune": {"mode": mode, "policy": policy, "source": "matmul/r1/baseline" if mode == "replay" else None},
        "timeout_s": 600,
        "targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_matmul",
                    "correctness": "ops/workloads/demo/test_demo.py"},
        "dtypes": ("float16",),
    }
    return taskplan.cell_plan(base / name, root=base, task=task, manifest=manifest or manifest_data(),
                              plugins=plugins, replay_file=replay_file, shared_tuner_cache=shared_tuner_cache)


def environment(plan: CellPlan, work: Path, extra_env: Optional[dict] = None) -> dict[str, str]:
    """The runner's environment for the cell, from this process's; Triton's home in the cell's folder."""
    return {**cell_env(os.environ, plan), "HOME": str(work), "TRITON_HOME": str(work), **(extra_env or {})}


def run_cell(plan: CellPlan, test_source: str, extra_env: Optional[dict] = None,
             timeout: float = 300) -> subprocess.CompletedProcess:
    cell_dir = Path(plan.cell_dir)
    work = cell_dir / "work"
    work.mkdir()
    (work / "test_cell_body.py").write_text(test_source, encoding="utf-8")
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    argv = [sys.executable, str(work / "driver.py"), str(cell_dir / TASK_FILE), str(work / "test_cell_body.py")]
    proc = subprocess.run(argv, cwd=work, env=environment(plan, work, extra_env), capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"cell {plan.task.id} failed: argv {argv} rc {proc.returncode}\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def read_index(cell_dir: Path) -> list[dict]:
    lines = (Path(cell_dir) / "ir" / "index.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]
