"""Correctness honours the manifest's dtype narrowing: a workload narrowed to float16 runs its
correctness target over float16 only, unless the manifest names the nodes itself.

On the cpu backend the worker runs no correctness session (nothing executes), so the CPU tests
build the session exactly as the worker does (`cell.correctness_args`, `cell.correctness_plugins`)
and collect it with pytest over the real demo correctness file; the GPU test runs the worker."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from taskplan import PROJECT_ROOT, manifest_data, run_worker, write_plan

from campaign.contract import canonical
from campaign.contract.cellfiles import CellResult, Outcomes
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Targets
from campaign.planning import matrix
from campaign.worker import cell

DEMO_TESTS = "ops/workloads/demo/test_demo.py"
CASES = "tests/fixtures/narrowing/narrowing_cases.py"

# Collects each plan's correctness session as the worker builds it; prints node -> dtype parameter.
DRIVER = textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    import pytest
    from campaign.contract.plans import CellPlan
    from campaign.contract.canonical import read_json
    from campaign.worker import cell

    class Selected:
        deselected = 0

        def pytest_deselected(self, items):
            self.deselected += len(items)

        def pytest_collection_finish(self, session):
            self.nodes = {item.nodeid: cell.param_dtype(item) for item in session.items}

    out = {}
    for task_file in sys.argv[1:]:
        plan = CellPlan.model_validate(read_json(Path(task_file)))
        said = []
        selected = Selected()
        plugins = [*cell.correctness_plugins(plan, said.append), selected]
        rc = pytest.main([*cell.correctness_args(plan), "--collect-only"], plugins=plugins)
        out[task_file] = {"rc": int(rc), "nodes": selected.nodes, "deselected": selected.deselected, "said": said}
    print(json.dumps(out))
""")


def _plan(base: Path, name: str, workload: dict, targets: dict):
    """The task as the matrix plans it: its correctness dtypes from the manifest's workload."""
    manifest = manifest_data(workloads=[{"name": "add", "op": "add", **workload}])
    dtypes = matrix.correctness_dtypes(Manifest.model_validate(manifest).workloads[0], Targets.model_validate(targets))
    return write_plan(base / name, manifest=manifest, task={"targets": targets, "correctness_dtypes": dtypes})


def _collect(tmp_path: Path, plans) -> list[dict]:
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    task_files = [str(Path(plan.cell_dir) / "task.json") for plan in plans]
    proc = subprocess.run([sys.executable, str(tmp_path / "driver.py"), *task_files], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return [out[task_file] for task_file in task_files]


def test_only_a_workload_that_narrows_dtypes_without_node_ids_is_narrowed(tmp_path):
    target = {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add", "correctness": f"{DEMO_TESTS}::test_add"}
    cases = {
        "narrowed": ({"dtypes": ["float16"]}, target, ("float16",)),
        "own set": ({}, target, None),
        "node ids": ({"dtypes": ["float16"], "correctness": {"node_ids": [f"{DEMO_TESTS}::test_add"]},
                      "reason": "the author's own nodes"},
                     {**target, "correctness_node_ids": [f"{DEMO_TESTS}::test_add"]}, None),
    }
    for name, (workload, targets, expected) in cases.items():
        plan = _plan(tmp_path, name, workload, targets)
        assert plan.task.correctness_dtypes == expected, name
        assert len(cell.correctness_plugins(plan, print)) == (expected is not None), name


def test_the_demo_correctness_session_of_a_float16_workload_selects_float16_only(tmp_path):
    add = {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add", "correctness": f"{DEMO_TESTS}::test_add"}
    plans = [
        _plan(tmp_path, "narrowed", {"dtypes": ["float16"]}, add),
        _plan(tmp_path, "own set", {}, add),
        _plan(tmp_path, "node ids", {"dtypes": ["float16"], "correctness": {"node_ids": [f"{DEMO_TESTS}::test_add"]},
                                     "reason": "the author's own nodes"},
              {**add, "correctness_node_ids": [f"{DEMO_TESTS}::test_add"]}),
        _plan(tmp_path, "k", {"dtypes": ["float32"], "correctness": {"k": "softmax"}, "reason": "softmax nodes only"},
              {**add, "correctness": DEMO_TESTS, "correctness_k": "softmax"}),
    ]
    narrowed, own, node_ids, k = _collect(tmp_path, plans)
    assert narrowed["rc"] == 0 and len(narrowed["nodes"]) == 3
    assert narrowed["deselected"] == 3, "pytest is told, so its summary counts them"
    assert set(narrowed["nodes"].values()) == {"float16"}
    assert all(node.startswith(f"{DEMO_TESTS}::test_add[") for node in narrowed["nodes"])
    assert narrowed["said"] == ["correctness: the workload narrows dtypes to float16: "
                                "3 node(s) of other dtypes deselected, 3 kept"]
    assert sorted(set(own["nodes"].values())) == ["float16", "float32"] and len(own["nodes"]) == 6
    assert own["said"] == []
    assert len(node_ids["nodes"]) == 6, "explicit node ids are the manifest author's choice: kept whole"
    assert len(k["nodes"]) == 3 and set(k["nodes"].values()) == {"float32"}
    assert all("::test_softmax[" in node for node in k["nodes"]), "-k still selects within the file"


def test_a_narrowing_that_leaves_no_node_says_so_and_the_session_fails(tmp_path):
    # FlagGems' --quick runs mm's tests in float32 only: a float16 workload then checks nothing
    add = {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add", "correctness": f"{DEMO_TESTS}::test_add"}
    [out] = _collect(tmp_path, [_plan(tmp_path, "none", {"dtypes": ["bfloat16"]}, add)])
    assert out["rc"] == 5 and out["nodes"] == {} and out["deselected"] == 6
    [said] = out["said"]
    assert said.startswith("correctness: the workload narrows dtypes to bfloat16: 6 node(s) of other dtypes "
                           "deselected, 0 kept -- none left: nothing checks the measured dtypes")


def test_nodes_without_a_readable_dtype_are_never_narrowed_away(tmp_path):
    targets = {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add", "correctness": CASES}
    [out] = _collect(tmp_path, [_plan(tmp_path, "cases", {"dtypes": ["float16"]}, targets)])
    assert sorted(out["nodes"]) == [f"{CASES}::test_named_dtype[float16]", f"{CASES}::test_not_a_dtype_name[half-ish]",
                                    f"{CASES}::test_without_dtype[1]", f"{CASES}::test_without_dtype[2]"]


@pytest.mark.gpu
def test_the_worker_runs_a_float16_workloads_correctness_over_float16_only(tmp_path):
    """On the GPU host: the demo add narrowed to float16 passes its 3 float16 nodes, not 6."""
    import torch

    props = torch.cuda.get_device_properties(0)
    device = {"backend": "cuda", "name": props.name, "uuid": str(props.uuid),
              "target": f"cuda:{props.major * 10 + props.minor}"}
    manifest = manifest_data(device=device, timer={"kind": "graph"},
                             workloads=[{"name": "add", "op": "add", "canary": True, "dtypes": ["float16"]}])
    plan = write_plan(tmp_path, manifest=manifest, task={"autotune": {"mode": "record", "policy": "measured"},
                                                         "correctness_dtypes": ["float16"]})
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    cell_dir = Path(plan.cell_dir)
    result = CellResult.model_validate(canonical.read_json(cell_dir / "result.json"))
    assert result.correctness.state == "run" and result.correctness.passed == 3 and result.correctness.failed == 0
    outcomes = Outcomes.model_validate(canonical.read_json(cell_dir / "outcomes.json"))
    assert len(outcomes.outcomes) == 3
    assert "3 node(s) of other dtypes deselected, 3 kept" in (cell_dir / "run.log").read_text(encoding="utf-8")
