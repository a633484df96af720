"""The worker as a real subprocess (``python -m campaign.worker task.json result.json``): every
preflight failure named with exit 3, the result written once; and its result readers."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from taskplan import manifest_data, run_worker, write_plan

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract.artifacts import INDEX_COLUMNS
from campaign.contract.canonical import read_json
from campaign.contract.cellfiles import CellResult, Outcomes
from campaign.contract.errors import WorkerExit
from campaign.worker import cell
from campaign.worker.runcell import Cell


def _require_planned_plugins(backend: str = "cpu") -> None:
    # These checks sit after plugin_plan in preflight, and the happy path runs every plugin:
    # without all planned modules the test cannot reach what it tests. Fail, never skip.
    missing = [name for name in plugin_plan(get_backend(backend)) if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"needs the planned plugin modules, missing: {', '.join(missing)}")


def _refused(plan, check: str) -> CellResult:
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == WorkerExit.PREFLIGHT_FAILED, proc.stderr
    assert f"PREFLIGHT_FAILED check={check}: " in proc.stderr
    cell_dir = Path(plan.cell_dir)
    assert f"PREFLIGHT_FAILED check={check}: " in (cell_dir / "run.log").read_text(encoding="utf-8")
    result = CellResult.model_validate(read_json(cell_dir / "result.json"))
    assert (result.rc, result.preflight.ok, result.preflight.failed_check) == (WorkerExit.PREFLIGHT_FAILED, False, check)
    assert result.preflight.checks[-1][:2] == (check, False)
    assert result.correctness.state == "not_run" and result.correctness.reason == f"preflight failed: check={check}"
    assert result.rows.ok == result.rows.failed == result.rows.compiled == 0
    assert proc.stdout == ""
    return result


@pytest.fixture(scope="module")
def demo_cell(tmp_path_factory):
    """The default plan through the worker once, a broken manifest.yaml in its root: checked end to
    end by one test, and by the task-file test for the manifest never read (each ran this same cell)."""
    _require_planned_plugins()
    base = tmp_path_factory.mktemp("demo-cell")
    plan = write_plan(base)
    (base / "manifest.yaml").write_text("campaign: [", encoding="utf-8")
    return plan, run_worker(plan, dict(os.environ))


@pytest.fixture(scope="module")
def no_plugins(tmp_path_factory):
    """A plan naming no plugins, refused by preflight: read by the empty-plan test, and run again by
    the finished-cell test, whose second run must neither re-run nor overwrite it."""
    plan = write_plan(tmp_path_factory.mktemp("no-plugins"), plugins=())
    return plan, _refused(plan, "plugin_plan")


def test_a_task_file_without_its_terms_is_refused_and_the_manifest_never_read(demo_cell, tmp_path):
    """The cell's terms come from task.json (the matrix's): a plan naming a manifest file instead
    is not a task file, and the root's manifest.yaml, even broken, changes nothing for a cell."""
    plan, ran = demo_cell
    manifest = Path(plan.root) / "manifest.yaml"
    assert manifest.read_text(encoding="utf-8") == "campaign: ["
    data = read_json(Path(plan.cell_dir) / "task.json")
    old = {key: value for key, value in data.items() if key != "terms"} | {"manifest_file": str(manifest)}
    (tmp_path / "old-task.json").write_text(json.dumps(old), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "campaign.worker", str(tmp_path / "old-task.json"),
                           str(tmp_path / "old-result.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == WorkerExit.USAGE and "not a readable task file" in proc.stderr and "terms" in proc.stderr
    assert not (tmp_path / "old-result.json").exists()
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_an_interpreter_without_flag_gems_is_refused_by_name(tmp_path):
    # a module of that name that cannot import, first on the path, stands for an interpreter without it,
    # whether or not a FlagGems is installed where the tests run
    hidden = tmp_path / "hidden"
    (hidden / "flag_gems").mkdir(parents=True)
    (hidden / "flag_gems" / "__init__.py").write_text('raise ImportError("No module named flag_gems")\n')
    plan = write_plan(tmp_path, task={"provider": "flaggems"})
    proc = run_worker(plan, {**os.environ, "PYTHONPATH": str(hidden)})
    assert proc.returncode == WorkerExit.PREFLIGHT_FAILED, proc.stderr
    result = CellResult.model_validate(read_json(Path(plan.cell_dir) / "result.json"))
    assert result.preflight.failed_check == "interpreter"
    assert result.preflight.interpreter == sys.executable
    assert f"{sys.executable} cannot import flag_gems" in dict((c[0], c[2]) for c in result.preflight.checks)["interpreter"]


def test_a_missing_benchmark_function_is_refused_by_name(tmp_path):
    plan = write_plan(tmp_path, task={"targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_gone",
                                                  "correctness": "ops/workloads/demo/test_demo.py"}})
    result = _refused(plan, "targets")
    assert result.preflight.checks[-1][2].startswith("ops/workloads/demo/bench_demo.py: no function test_bench_gone; "
                                                     "it collects test_bench_add, ")


def test_a_missing_replay_file_is_refused_by_name(tmp_path):
    missing = tmp_path / "elsewhere" / "autotune.json"
    plan = write_plan(tmp_path, replay_file=str(missing), task={
        "id": "add/r1/candidate", "cell": "candidate", "env": {"DISABLE_MMA_V3": "1"},
        "autotune": {"mode": "replay", "policy": "first-config", "source": "add/r1/baseline"}})
    assert _refused(plan, "replay_file").preflight.checks[-1][2] == f"{missing}: no such file"


def test_an_op_without_shapes_is_refused_by_name(tmp_path):
    plan = write_plan(tmp_path, task={"op": "cumsum"})
    assert _refused(plan, "shape_file").preflight.checks[-1][2].endswith("no shapes for op cumsum")


def test_an_empty_plugin_plan_is_refused_by_name(no_plugins):
    _, result = no_plugins
    assert result.preflight.checks[-1][2] == "the plan names no plugins"


def test_a_hand_copied_plugin_plan_is_refused_by_name(tmp_path):
    hand_copied = tuple(name for name in plugin_plan(get_backend("cpu")) if not name.endswith(".timing"))
    result = _refused(write_plan(tmp_path, plugins=hand_copied), "plugin_plan")
    assert "is not the backend's derived plan" in result.preflight.checks[-1][2]


def test_a_target_no_triton_backend_compiles_is_refused_by_name(tmp_path):
    _require_planned_plugins()
    plan = write_plan(tmp_path, manifest=manifest_data(device={"backend": "cpu", "target": "musa:31"}))
    assert _refused(plan, "device").preflight.checks[-1][2] == "no installed Triton backend compiles target musa:31"


def test_a_triton_version_pin_mismatch_is_refused_by_name(tmp_path):
    _require_planned_plugins()
    plan = write_plan(tmp_path, manifest=manifest_data(sources={"triton": {"version": "3.5.0"}}))
    import triton

    assert _refused(plan, "versions").preflight.checks[-1][2] == f"triton pinned 3.5.0, installed {triton.__version__}"


def test_a_finished_cell_is_never_rerun_or_overwritten(no_plugins):
    plan, _ = no_plugins
    result_file = Path(plan.cell_dir) / "result.json"
    before = result_file.read_bytes()
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == WorkerExit.REFUSED
    assert "exists; a finished cell is never re-run or overwritten" in proc.stderr
    assert result_file.read_bytes() == before


def test_bad_usage_exits_2(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "campaign.worker", str(tmp_path / "task.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == WorkerExit.USAGE and "usage: python -m campaign.worker TASK_JSON RESULT_JSON" in proc.stderr
    (tmp_path / "task.json").write_text("{}", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "campaign.worker", str(tmp_path / "task.json"),
                           str(tmp_path / "result.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == WorkerExit.USAGE and "not a readable task file" in proc.stderr
    assert not (tmp_path / "result.json").exists()


def test_one_demo_cell_on_cpu_end_to_end(demo_cell):
    """Depends on every planned plugin (compile_only, run_identity, ir_capture, autotune, timing)."""
    plan, proc = demo_cell
    cell_dir = Path(plan.cell_dir)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = CellResult.model_validate(read_json(cell_dir / "result.json"))
    assert result.rc == 0 and result.preflight.ok and result.preflight.failed_check is None
    assert [name for name, ok, _ in result.preflight.checks if ok] == list(
        ("installed", "interpreter", "targets", "replay_file", "shape_file", "plugin_plan", "device", "versions"))
    assert result.timed is False
    assert result.rows.compiled == 2 and result.rows.ok == 0 and result.rows.failed == 0   # 2 core shapes x float16
    assert result.ir_variants >= 1 and result.launches >= 2
    assert result.correctness.state == "not_run" and result.correctness.reason == cell.NOT_EXECUTED
    outcomes = Outcomes.model_validate(read_json(cell_dir / "outcomes.json"))
    assert (outcomes.state, outcomes.reason, outcomes.outcomes) == ("not_run", cell.NOT_EXECUTED, ())
    assert result.autotune is not None and result.autotune.mode == "record"
    assert result.markers == {"AUTOTUNE_REPLAY_FALLBACK": 0, "BENCHMARK_DIRECT_NO_CUDAGRAPH": 0,
                              "BENCHMARK_CAPTURE_POISONED": 0}
    assert result.note is None, result.note


@pytest.mark.gpu
def test_one_demo_cell_on_cuda_end_to_end(tmp_path):
    """On the GPU host: preflight against the real device, timed rows, a correctness session."""
    _require_planned_plugins("cuda")
    import torch

    props = torch.cuda.get_device_properties(0)
    device = {"backend": "cuda", "name": props.name, "uuid": str(props.uuid),
              "target": f"cuda:{props.major * 10 + props.minor}"}
    plan = write_plan(tmp_path, manifest=manifest_data(device=device, timer={"kind": "graph"}),
                      task={"autotune": {"mode": "record", "policy": "measured"}})
    proc = run_worker(plan, dict(os.environ))
    cell_dir = Path(plan.cell_dir)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = CellResult.model_validate(read_json(cell_dir / "result.json"))
    assert result.preflight.ok and result.timed is True
    assert result.rows.ok == 2 and result.rows.failed == 0 and result.rows.compiled == 0
    assert result.correctness.state == "run"
    assert result.correctness.passed == 6 and result.correctness.failed == result.correctness.errors == 0
    outcomes = Outcomes.model_validate(read_json(cell_dir / "outcomes.json"))
    assert all(o.node.startswith("ops/workloads/demo/test_demo.py::test_add[") for o in outcomes.outcomes)


# --- reading a cell's files back ------------------------------------------------------------

def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_missing_plugin_files_are_notes_not_crashes(tmp_path):
    rows, note = cell.read_rows(tmp_path)
    assert (rows.ok, rows.failed, rows.compiled, note) == (0, 0, 0, "rows.json missing: zero rows")
    assert cell.read_autotune(tmp_path) == (None, "autotune.json missing")
    assert cell.read_index(tmp_path) == (0, 0, "ir/index.tsv missing")
    correctness = cell.read_correctness(tmp_path, 4)
    assert correctness.state == "not_run"
    assert correctness.reason == "outcomes.json missing after the correctness session (pytest rc=4)"


def test_rows_are_counted_by_status(tmp_path):
    row = {"test": "b.py::test_x[0]", "function": "test_x", "op": "add", "shape": [4], "dtype": "float16"}
    _write(tmp_path / "rows.json", {"schema_version": 1, "rows": [
        {**row, "timer": "graph", "latency_ms": 0.01, "status": "ok"},
        {**row, "timer": "direct", "latency_ms": 0.02, "status": "ok", "markers": ["BENCHMARK_DIRECT_NO_CUDAGRAPH"]},
        {**row, "timer": "graph", "status": "failed", "error": "RuntimeError"}]})
    rows, note = cell.read_rows(tmp_path)
    assert (rows.ok, rows.failed, rows.compiled, note) == (2, 1, 0, None)


def test_a_failed_row_s_device_out_of_memory_is_named_and_the_host_s_is_not(tmp_path):
    """A measured call's out of memory becomes a failed row (the timing plugin), not a failed test: the worker
    still notes its line (`cell.rows_out_of_memory`), so the runner's rule reads it from the status row."""
    row = {"test": "b.py::test_x[0]", "function": "test_x", "op": "add", "shape": [4], "dtype": "float16", "timer": "none"}
    oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    _write(tmp_path / "rows.json", {"schema_version": 1, "rows": [
        {**row, "status": "failed", "error": "OutOfMemoryError: DefaultCPUAllocator: not enough memory"},
        {**row, "status": "compiled"}, {**row, "status": "failed", "error": f"{oom}\nRuntimeError: context"}]})
    assert cell.rows_out_of_memory(tmp_path) == oom
    _write(tmp_path / "rows.json", {"schema_version": 1, "rows": [{**row, "status": "failed", "error": "RuntimeError"}]})
    assert cell.rows_out_of_memory(tmp_path) is None
    assert cell.rows_out_of_memory(tmp_path / "absent") is None


def test_a_malformed_rows_file_is_a_note(tmp_path):
    _write(tmp_path / "rows.json", "{not json")
    rows, note = cell.read_rows(tmp_path)
    assert rows.ok == 0 and note.startswith("rows.json unreadable: ") and "not JSON" in note, note


def test_correctness_counts_and_an_empty_session_is_not_a_pass(tmp_path):
    _write(tmp_path / "outcomes.json", {"schema_version": 1, "state": "run", "outcomes": [
        {"node": "t.py::a", "outcome": "passed"}, {"node": "t.py::b", "outcome": "failed", "detail": "x"},
        {"node": "t.py::c", "outcome": "error"}, {"node": "t.py::d", "outcome": "skipped"},
        {"node": "t.py::e", "outcome": "passed"}]})
    c = cell.read_correctness(tmp_path, 1)
    assert (c.state, c.passed, c.failed, c.errors, c.skipped) == ("run", 2, 1, 1, 1)
    empty = tmp_path / "empty"
    _write(empty / "outcomes.json", {"schema_version": 1, "state": "run", "outcomes": []})
    assert cell.read_correctness(empty, 5).reason == "no correctness node ran (pytest rc=5)"


def test_autotune_summary_and_ir_index(tmp_path):
    entry = {"tuner": "triton", "kernel": "matmul_kernel", "key": "(1024, 1024, 1024, 'torch.float16')",
             "config": {"kwargs": {"BLOCK_M": 64}, "num_warps": 4, "num_stages": 3}}
    _write(tmp_path / "autotune.json", {"schema_version": 1, "mode": "replay", "policy": "measured",
                                        "source": "matmul/r1/baseline", "entries": [entry, entry], "tuning_runs": 0})
    summary, note = cell.read_autotune(tmp_path)
    assert (summary.mode, summary.recorded, summary.injected, summary.tuning_runs, note) == ("replay", 0, 2, 0, None)
    _write(tmp_path / "ir" / "index.tsv", "\t".join(INDEX_COLUMNS) + "\nabc\tadd_kernel\t1\tttir,ttgir\n"
                                                                     "def\tmatmul_kernel\t40\tttir,ttgir\n")
    assert cell.read_index(tmp_path) == (2, 41, None)


def test_pytest_arguments_of_both_sessions(tmp_path):
    plan = write_plan(tmp_path, task={"targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add",
                                                  "correctness": "ops/workloads/demo/test_demo.py",
                                                  "correctness_k": "float16"}})
    flags = ["-p", "no:cacheprovider", "--color=no", "-q", "-rs", f"--rootdir={plan.project_root}"]
    assert cell.benchmark_args(plan) == ["ops/workloads/demo/bench_demo.py::test_bench_add", *flags]
    assert cell.correctness_args(plan) == ["ops/workloads/demo/test_demo.py", "-k", "float16", *flags]
    nodes = ("ops/workloads/demo/test_demo.py::test_add[1-dtype0]",)
    narrowed = write_plan(tmp_path / "n", task={"targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_add",
                                                             "correctness": "ops/workloads/demo/test_demo.py",
                                                             "correctness_node_ids": nodes}})
    assert cell.correctness_args(narrowed) == [*nodes, *flags]


def test_a_crash_is_still_a_failure_result(tmp_path):
    plan = write_plan(tmp_path)
    result = Cell(plan, time.monotonic()).crashed(RuntimeError("plugin exploded\nsecond line"))
    assert result.rc == WorkerExit.CRASH == 70   # never pytest's 1, "tests failed"
    assert result.correctness.reason == "worker crashed: RuntimeError"
    assert result.note == "worker crashed: RuntimeError: plugin exploded"
    assert "worker crashed: RuntimeError: plugin exploded" in (Path(plan.cell_dir) / "run.log").read_text()


def test_correctness_is_not_run_after_a_poisoned_capture_on_any_backend():
    clean = {"AUTOTUNE_REPLAY_FALLBACK": 2, "BENCHMARK_DIRECT_NO_CUDAGRAPH": 3, "BENCHMARK_CAPTURE_POISONED": 0}
    assert cell.correctness_not_run(clean, executes=True) is None, "fallbacks are rows, not a dead context"
    assert cell.correctness_not_run(clean, executes=False) == cell.NOT_EXECUTED
    poisoned = clean | {"BENCHMARK_CAPTURE_POISONED": 1}
    for executes in (True, False):
        reason = cell.correctness_not_run(poisoned, executes)
        assert reason == cell.POISONED and "BENCHMARK_CAPTURE_POISONED" in reason
