"""The timing plugin on CPU: its pure policy, and whole pytest sessions run in-process
with the plugin installed.

Nothing here has a GPU. Where a session needs a device timer, `RecordedTimers` stands
in for the clock and for the device's reaction to a capture, with the exact wording
recorded on H200 (CUDA) and S5000 (MUSA) hosts; the wording is classified by the real
backends. The compile-only case runs for real: Triton compiles the demo kernels for
sm_90 through the cpu backend's driver.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaign.contract import timers
from campaign.contract.artifacts import ROWS_FILE, Autotune, CellPlan, Rows, Targets, Task
from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend
from campaign.backends.musa import MusaBackend
from campaign.contract.manifest import Manifest
from campaign.plugins import compile_only, timing
from campaign.plugins._device_timers import CaptureFailure, DeviceTimers
from campaign.worker.context import CellContext

pytest_plugins = ["pytester"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Recorded wording. CUDA: torch's assertNotCapturing for the RNG, the runtime's refusal
# of a synchronising call while capturing, and a device fault (each with the DSA line
# newer torch appends to every CUDA error). MUSA: as recorded on an S5000.
CUDA_DSA = "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
CUDA_RNG = ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture. If you need this call to be "
            "captured, please file an issue. Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive")
CUDA_SYNC = "CUDA error: operation not permitted when stream is capturing" + CUDA_DSA
CUDA_FAULT = "CUDA error: an illegal memory access was encountered" + CUDA_DSA
MUSA_RNG = "MUSAGeneratorImpl::current_seed is not callable during capture"
MUSA_SYNC = "operation not permitted when stream is capturing"
MUSA_POISON = "MUSA error: unknown error"


# -- pure policy -------------------------------------------------------------------------

def test_deny_key_is_the_function_name_minus_test_():
    assert timers.deny_key("test_bench_dropout") == "bench_dropout"
    assert timers.deny_key("test_unique2") == "unique2"
    assert timers.deny_key("bench_x") == "bench_x"


def test_median_of_repeats():
    assert timers.median_of_repeats([5.0, 1.0, 3.0]) == 3.0
    assert timers.median_of_repeats([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert timers.median_of_repeats([0.25]) == 0.25
    with pytest.raises(timers.TimerRefused):
        timers.median_of_repeats([])
    with pytest.raises(timers.TimerRefused, match="not one number"):
        timers.median_of_repeats([1.0, [0.5, 1.0, 2.0]])


@pytest.mark.parametrize("return_mode, quantiles", [("all", None), ("median", (0.5, 0.2, 0.8))])
def test_direct_refuses_sequences(return_mode, quantiles):
    calls = []
    device = DeviceTimers(do_bench=lambda fn, **kw: calls.append(kw) or 1.0)
    with pytest.raises(timers.TimerRefused, match="median over repeated calls"):
        device.direct(lambda: None, warmup_ms=1, rep_ms=1, return_mode=return_mode, repeat=3, quantiles=quantiles)
    assert calls == [], "refused before anything was timed"


def test_direct_is_the_median_over_separate_do_bench_calls():
    recorded = iter([0.31, 0.12, 0.2, 0.9, 0.19])
    seen = []

    def clock(fn, **kwargs):
        fn()
        seen.append(kwargs)
        return next(recorded)

    ran = []
    value = DeviceTimers(do_bench=clock).direct(lambda: ran.append(1), warmup_ms=7, rep_ms=40,
                                                return_mode="median", repeat=5)
    assert value == 0.2
    assert len(ran) == 5 and seen == [dict(warmup=7, rep=40, return_mode="median")] * 5


def test_summarize_and_call_counts():
    assert timers.summarize([3.0, 1.0, 2.0], "median") == 2.0
    assert timers.summarize([3.0, 1.0, 2.0], "min") == 1.0
    assert timers.summarize([3.0, 1.0, 2.0], "mean") == 2.0
    with pytest.raises(timers.TimerRefused):
        timers.summarize([1.0], "all")
    assert timers.calls_for(0.5, 100) == 200
    assert timers.calls_for(500.0, 100) == 1
    assert timers.calls_for(0.0, 100) == timers.CALLS_IF_UNMEASURABLE
    assert timers.graph_calls(1e-6, 100) == timers.MAX_GRAPH_CALLS


@pytest.mark.parametrize("verdict, marker, retime, stop, status", [
    ("fallback", timers.FALLBACK_MARKER, True, False, "ok"),
    ("poisoned", timers.POISONED_MARKER, False, True, "failed"),
    ("fatal", None, False, False, "failed"),
])
def test_decide(verdict, marker, retime, stop, status):
    decision = timers.decide(verdict)
    assert (decision.marker, decision.retime_direct, decision.stop_measuring, decision.status) == (marker, retime, stop, status)


def test_decide_refuses_an_unknown_verdict():
    with pytest.raises(ValueError, match="not fallback, poisoned or fatal"):
        timers.decide("retry")


@pytest.mark.parametrize("backend, wording, verdict", [
    (CudaBackend(), CUDA_RNG, "fallback"),
    (CudaBackend(), CUDA_SYNC, "fallback"),
    (CudaBackend(), CUDA_FAULT, "fatal"),
    (MusaBackend(), MUSA_RNG, "fallback"),
    (MusaBackend(), MUSA_SYNC, "fallback"),
    (MusaBackend(), MUSA_POISON, "poisoned"),
])
def test_recorded_wording_decides_the_row(backend, wording, verdict):
    # error_text is what the plugin hands the classifier: the whole chain, so a
    # wording carried by the context of capture_end's own error still counts.
    try:
        try:
            raise RuntimeError(wording)
        except RuntimeError:
            raise RuntimeError("capture_end failed")
    except RuntimeError as exc:
        text = timers.error_text(exc)
    assert wording.strip().splitlines()[0] in text
    assert timers.decide(backend.classify_capture_failure(text)).verdict == verdict


def test_check_timer_and_latency():
    timers.check_timer("graph", executes=True, graph_capture=True)
    timers.check_timer("graph", executes=False, graph_capture=False)     # compile-only: nothing timed
    with pytest.raises(timers.TimerRefused, match="cannot capture"):
        timers.check_timer("graph", executes=True, graph_capture=False)
    assert timers.check_latency(0.0125) == 0.0125
    for bad in (0.0, -1.0, float("nan"), float("inf"), None, [0.1]):
        with pytest.raises(timers.TimerRefused):
            timers.check_latency(bad)


# -- cases ---------------------------------------------------------------------------------

def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "ops" / "shapes" / "flaggems").mkdir(parents=True)
    (root / "ops" / "shapes" / "core.yaml").write_text("add: [[8], [4, 4]]\n")
    (root / "ops" / "shapes" / "flaggems" / "core.yaml").write_text(
        "add: [[16], [2, 8], [3, 5, 7]]\ndropout: [[64]]\nunique2: [[32]]\n")
    return root


def test_cases_come_from_the_providers_shape_file_dtype_major(tmp_path):
    root = _project(tmp_path)
    builtin = timing.plan_cases(root, "builtin", "core", "add", None, ("float16", "float32"))
    assert [(c.shape, c.dtype_name) for c in builtin] == [
        ((8,), "float16"), ((4, 4), "float16"), ((8,), "float32"), ((4, 4), "float32")]
    flaggems = timing.plan_cases(root, "flaggems", "core", "add", None, ("bfloat16",))
    assert [c.shape for c in flaggems] == [(16,), (2, 8), (3, 5, 7)]
    assert str(flaggems[0].dtype) == "torch.bfloat16"


def test_a_shape_subset_narrows_in_its_own_order(tmp_path):
    cases = timing.plan_cases(_project(tmp_path), "flaggems", "core", "add", ("3x5x7", "16"), ("float32",))
    assert [c.shape for c in cases] == [(3, 5, 7), (16,)]


@pytest.mark.parametrize("subset, message", [
    (("2x8", "4x4"), "shape 4x4 is not in the op's set"),
    (("2x8x",), "not of the form"),
    (("0x8",), "non-positive"),
])
def test_an_unknown_or_malformed_subset_entry_is_an_error(tmp_path, subset, message):
    with pytest.raises(ValueError, match=message):
        timing.plan_cases(_project(tmp_path), "flaggems", "core", "add", subset, ("float32",))


def test_unknown_op_or_dtype_is_an_error(tmp_path):
    root = _project(tmp_path)
    with pytest.raises(ValueError, match="no shapes for op 'softmax'"):
        timing.plan_cases(root, "flaggems", "core", "softmax", None, ("float32",))
    with pytest.raises(ValueError, match="not a torch dtype"):
        timing.plan_cases(root, "builtin", "core", "add", None, ("float17",))


# -- whole sessions ------------------------------------------------------------------------

def _manifest(backend: str, timer: dict) -> Manifest:
    device = {"backend": backend, "target": "cuda:90" if backend != "musa" else "musa:31"}
    if backend != "cpu":
        device["name"] = "NVIDIA H200" if backend == "cuda" else "MTT S5000"
    return Manifest.model_validate({
        "campaign": "timing-test", "description": "timing plugin test",
        "sources": {"triton": {"version": "3.6.0"}}, "device": device,
        "switch": {"name": "DISABLE_MMA_V3", "cells": {"baseline": {}, "candidate": {"DISABLE_MMA_V3": "1"}}},
        "timer": timer, "workloads": [{"name": "w", "op": "add"}],
    })


def _context(tmp_path, backend, *, timer=None, op="add", provider="flaggems", shapes=None,
             dtypes=("float16", "float32"), project_root=None) -> CellContext:
    manifest = _manifest(backend.name, timer or {"kind": "graph"})
    cell_dir = tmp_path / "cell"
    cell_dir.mkdir()
    task = Task(id="w/r1/baseline", order=0, round=1, cell="baseline", workload="w", op=op, provider=provider,
                canary=False, env={}, autotune=Autotune(mode="record", policy="measured"), timeout_s=60,
                targets=Targets(benchmark="bench.py::test_bench_add", correctness="test.py"),
                dtypes=dtypes, shapes=shapes)
    plan = CellPlan(task=task, project_root=str(project_root or _project(tmp_path)), root=str(tmp_path),
                    cell_dir=str(cell_dir), triton_cache_dir=str(tmp_path / "triton"),
                    tuner_cache_dir=str(tmp_path / "tuner"), tuner_cache="isolated", pinned_env={},
                    plugins=("campaign.plugins.timing",), manifest_file=str(tmp_path / "manifest.yaml"),
                    harness_digest="0" * 64)
    return CellContext.for_cell(plan, manifest, backend)


@dataclass(frozen=True)
class OfflineMusa(MusaBackend):
    """MUSA's real wording and deny list; no torch_musa to import on this machine."""

    def device_interface(self):
        return None

    def graph_class(self):
        return None


class RecordedTimers(DeviceTimers):
    """The clock and the device's reaction to a capture, as recorded; ``fn`` really runs."""

    def __init__(self, capture_error=None, phase="capture", latency=0.0123):
        self.direct_calls = []
        self.graph_calls = 0
        self.capture_error = capture_error
        self.phase = phase
        self.latency = latency

        def clock(fn, **kwargs):
            fn()
            self.direct_calls.append(kwargs)
            return 0.5
        super().__init__(do_bench=clock)

    def graph(self, fn, interface, graph_class, **kwargs):
        fn()                                  # warm-up outside the capture
        self.graph_calls += 1
        if self.capture_error is not None:
            raise CaptureFailure(self.phase, RuntimeError(self.capture_error))
        return self.latency


# Inputs live on the CPU here: this machine has no device, and the device timers are
# recorded. bench.device is still the backend's, which the test checks.
BENCH_ADD = """
import torch

def test_bench_add(bench):
    assert bench.device in ("cuda", "musa")
    for case in bench.cases():
        x = torch.ones(case.shape, dtype=case.dtype, device="cpu")
        if case.dtype_name == "float32" and len(case.shape) == 2:
            bench.measure(case, lambda: (_ for _ in ()).throw(ValueError("kernel rejected 2-D float32")))
        else:
            bench.measure(case, lambda: x + x)
"""


def _session(pytester, ctx, source, timers_=None, extra_plugins=(), target=None):
    plugin = timing.TimingPlugin(ctx, device_timers=timers_)
    path = target or pytester.makepyfile(bench_workload=source)
    result = pytester.runpytest_inprocess(str(path), "-p", "no:cacheprovider", plugins=[*extra_plugins, plugin])
    rows_path = ctx.cell_dir / ROWS_FILE
    rows = Rows.model_validate(json.loads(rows_path.read_text())).rows
    return result, rows, (ctx.cell_dir / "run.log").read_text()


def test_graph_rows_carry_the_graph_timer_and_a_failing_case_does_not_stop_the_rest(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend())
    result, rows, log = _session(pytester, ctx, BENCH_ADD, RecordedTimers())
    assert result.ret == 0
    assert [(r.shape, r.dtype, r.status, r.timer) for r in rows] == [
        ((16,), "float16", "ok", "graph"), ((2, 8), "float16", "ok", "graph"), ((3, 5, 7), "float16", "ok", "graph"),
        ((16,), "float32", "ok", "graph"), ((2, 8), "float32", "failed", "graph"), ((3, 5, 7), "float32", "ok", "graph")]
    ok = [r for r in rows if r.status == "ok"]
    assert all(r.latency_ms == 0.0123 and r.l2_flush is False and r.markers == () for r in ok)
    failed = rows[4]
    assert failed.latency_ms is None and "kernel rejected 2-D float32" in failed.error
    assert {r.function for r in rows} == {"test_bench_add"} and {r.op for r in rows} == {"add"}
    assert ctx.log.counts == {name: 0 for name in ctx.log.counts}
    assert (ctx.cell_dir / ROWS_FILE).read_text().endswith("}\n")


@pytest.mark.parametrize("backend, wording", [(CudaBackend(), CUDA_RNG), (CudaBackend(), CUDA_SYNC),
                                              (OfflineMusa(), MUSA_RNG), (OfflineMusa(), MUSA_SYNC)])
def test_a_refused_capture_falls_back_to_direct_on_every_row(pytester, tmp_path, backend, wording):
    ctx = _context(tmp_path, backend, timer={"kind": "graph", "direct_repeat": 3}, dtypes=("float16",))
    recorded = RecordedTimers(capture_error=wording)
    result, rows, log = _session(pytester, ctx, BENCH_ADD, recorded)
    assert result.ret == 0 and len(rows) == 3, "no row lost"
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.repeat, row.l2_flush) == ("ok", "direct", 0.5, 3, True)
        assert row.markers == (timers.FALLBACK_MARKER,) and row.fallback_phase == "capture"
    assert len(recorded.direct_calls) == 9, "three do_bench calls per row"
    assert ctx.log.counts[timers.FALLBACK_MARKER] == 3 and ctx.log.counts[timers.POISONED_MARKER] == 0
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH op=add function=test_bench_add shape=16 dtype=float16 " \
           "phase=capture repeat=3" in log


def test_a_failed_replay_names_its_phase(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), dtypes=("float16",))
    _, rows, log = _session(pytester, ctx, BENCH_ADD, RecordedTimers(capture_error=CUDA_SYNC, phase="replay"))
    assert {(r.fallback_phase, r.repeat) for r in rows} == {("replay", 1)}
    assert "phase=replay repeat=1" in log


def test_a_device_fault_is_a_failed_row_never_a_latency(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), dtypes=("float16",))
    result, rows, _ = _session(pytester, ctx, BENCH_ADD, RecordedTimers(capture_error=CUDA_FAULT))
    assert result.ret == 0 and len(rows) == 3
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.markers) == ("failed", "graph", None, ())
        assert row.error.startswith("fatal during graph capture") and "illegal memory access" in row.error
    assert sum(ctx.log.counts.values()) == 0


POISONED_TWO_TESTS = BENCH_ADD + """

def test_bench_add_again(bench):
    for case in bench.cases():
        bench.measure(case, lambda: None)
"""


def test_a_poisoning_capture_stops_measuring_in_this_process(pytester, tmp_path):
    ctx = _context(tmp_path, OfflineMusa(), dtypes=("float16",))
    recorded = RecordedTimers(capture_error=MUSA_POISON)
    result, rows, log = _session(pytester, ctx, POISONED_TWO_TESTS, recorded)
    assert result.ret == 1
    result.assert_outcomes(failed=1, errors=1)
    assert recorded.graph_calls == 1 and recorded.direct_calls == [], "nothing measured after the poisoning"
    assert len(rows) == 6, "every planned case still has a row"
    first = rows[0]
    assert (first.status, first.timer, first.latency_ms) == ("failed", "graph", None)
    assert first.error.startswith("poisoned during graph capture") and "MUSA error: unknown error" in first.error
    assert all(r.status == "failed" and "BENCHMARK_CAPTURE_POISONED" in r.error for r in rows[1:])
    assert {r.function for r in rows[3:]} == {"test_bench_add_again"}
    assert ctx.log.counts[timers.POISONED_MARKER] == 1 and ctx.log.counts[timers.FALLBACK_MARKER] == 0
    assert "BENCHMARK_CAPTURE_POISONED op=add function=test_bench_add shape=16 dtype=float16 phase=capture" in log


BENCH_UNIQUE2 = """
def test_unique2(bench):
    for case in bench.cases():
        bench.measure(case, lambda: None)
"""


def test_the_deny_list_skips_the_attempt(pytester, tmp_path):
    ctx = _context(tmp_path, OfflineMusa(), op="unique2", dtypes=("float32",))
    recorded = RecordedTimers(capture_error=MUSA_POISON)      # would poison if it were attempted
    result, rows, log = _session(pytester, ctx, BENCH_UNIQUE2, recorded)
    assert result.ret == 0 and recorded.graph_calls == 0
    (row,) = rows
    assert (row.status, row.timer, row.fallback_phase, row.markers) == ("ok", "direct", "deny", (timers.FALLBACK_MARKER,))
    assert "phase=deny repeat=1" in log


BENCH_INPUTS_RAISE = """
import torch

def test_bench_add(bench):
    for case in bench.cases():
        if len(case.shape) == 2:
            raise MemoryError("could not build the inputs")
        bench.measure(case, lambda: None)
"""


def test_cases_after_a_raising_test_body_are_failed_rows(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), dtypes=("float16",))
    result, rows, _ = _session(pytester, ctx, BENCH_INPUTS_RAISE, RecordedTimers())
    assert result.ret == 1
    assert [r.status for r in rows] == ["ok", "failed", "failed"]
    assert all("could not build the inputs" in r.error and r.timer == "none" for r in rows[1:])


@pytest.mark.parametrize("kind, timer_name, repeat", [("event", "event", None), ("direct", "direct", 4)])
def test_event_and_direct_kinds(pytester, tmp_path, kind, timer_name, repeat):
    timer = {"kind": kind} if repeat is None else {"kind": kind, "direct_repeat": repeat}
    ctx = _context(tmp_path, CudaBackend(), timer=timer, dtypes=("float16",))
    recorded = RecordedTimers()
    result, rows, _ = _session(pytester, ctx, BENCH_ADD, recorded)
    assert result.ret == 0 and recorded.graph_calls == 0
    assert {(r.timer, r.repeat, r.l2_flush, r.latency_ms, r.markers) for r in rows} == {(timer_name, repeat, True, 0.5, ())}
    assert len(recorded.direct_calls) == 3 * (repeat or 1)
    assert recorded.direct_calls[0] == dict(warmup=25.0, rep=100.0, return_mode="median")


def test_refusals_at_construction(tmp_path):
    from campaign.backends.musa import MusaBackend
    import dataclasses
    no_graphs = dataclasses.replace(MusaBackend(), capabilities=dataclasses.replace(
        MusaBackend().capabilities, graph_capture=False))
    with pytest.raises(timers.TimerRefused, match="cannot capture graphs"):
        timing.make(_context(tmp_path, no_graphs, timer={"kind": "graph"}))


def test_direct_repeat_under_an_event_timer_is_refused_by_the_manifest():
    from pydantic import ValidationError
    from campaign.contract.manifest import Timer
    with pytest.raises(ValidationError, match="event rows are never direct-timed"):
        Timer(kind="event", direct_repeat=2)


def test_compile_only_rows_are_compiled_and_untimed(pytester, tmp_path):
    ctx = _context(tmp_path, CpuBackend(), timer={"kind": "event"}, op="add", provider="builtin",
                   project_root=PROJECT_ROOT)
    driver_plugin = compile_only.make(ctx)
    target = PROJECT_ROOT / "ops" / "workloads" / "demo" / "bench_demo.py::test_bench_add"
    result, rows, log = _session(pytester, ctx, None, target=target, extra_plugins=(driver_plugin,))
    assert result.ret == 0
    assert [(r.shape, r.dtype) for r in rows] == [((1048576,), "float16"), ((4096, 4096), "float16"),
                                                  ((1048576,), "float32"), ((4096, 4096), "float32")]
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.l2_flush, row.repeat) == ("compiled", "none", None, None, None)
    assert "4 launches counted, none executed" in log, "each case's call ran exactly once"
    assert "timer=none (compile-only: nothing is timed)" in log


def test_rows_json_is_never_overwritten(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), dtypes=("float16",))
    (ctx.cell_dir / ROWS_FILE).write_text("{}\n")
    plugin = timing.TimingPlugin(ctx, device_timers=RecordedTimers())
    result = pytester.runpytest_inprocess(str(pytester.makepyfile(bench_workload=BENCH_ADD)), plugins=[plugin])
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    assert "FileExistsError" in "\n".join(result.outlines + result.errlines)
    assert (ctx.cell_dir / ROWS_FILE).read_text() == "{}\n"


# -- the FlagGems workloads, read statically (flag_gems needs a device to import) ---------

def _flaggems_entries():
    from campaign.planning import inventory
    entries = [e for e in inventory.load(PROJECT_ROOT / "ops").entries.values() if e.provider == "flaggems"]
    assert len(entries) >= 20
    return entries


def test_every_flaggems_target_exists_and_follows_the_protocol():
    import ast

    from campaign.planning import shapes as shape_sets
    from campaign.planning import targets

    tables = {level: shape_sets.load_shapes(shape_sets.shape_file(PROJECT_ROOT, "flaggems", level))
              for level in ("core", "comprehensive")}
    problems = []
    for entry in _flaggems_entries():
        for target in (entry.benchmark, entry.correctness):
            missing = targets.problem(PROJECT_ROOT, target)
            if missing:
                problems.append(f"{entry.op}: {missing}")
        bench_file, function = targets.split(entry.benchmark)
        if function != f"test_bench_{entry.op}":
            problems.append(f"{entry.op}: benchmark function {function} is not test_bench_{entry.op}")
        tree = ast.parse((PROJECT_ROOT / bench_file).read_text())
        body = next((node for node in tree.body if getattr(node, "name", None) == function), None)
        calls = {ast.unparse(node.func) for node in ast.walk(body)
                 if isinstance(node, ast.Call)} if body is not None else set()
        if not {"bench.cases", "bench.measure", "gems"} <= calls:
            problems.append(f"{entry.op}: {function} does not draw bench.cases, call bench.measure under gems()")
        for level, table in tables.items():
            if entry.op not in table:
                problems.append(f"{entry.op}: no shapes in ops/shapes/flaggems/{level}.yaml")
        if not set(tables["core"].get(entry.op, ())) <= set(tables["comprehensive"].get(entry.op, ())):
            problems.append(f"{entry.op}: comprehensive does not contain every core shape")
        for name in entry.dtypes:
            try:
                timing.torch_dtype(name)
            except ValueError as exc:
                problems.append(f"{entry.op}: {exc}")
    assert problems == []


def test_flaggems_families_cover_the_brief():
    families = {}
    for entry in _flaggems_entries():
        families.setdefault(entry.family, set()).add(entry.op)
    assert {"pointwise", "reduction", "norm", "softmax", "blas", "sort", "rng", "index"} <= set(families)
    assert {"mm", "bmm", "addmm"} <= families["blas"] and {"dropout", "rand"} <= families["rng"]


def test_the_h200_manifest_validates_against_the_tree(cli):
    result = cli("validate", "manifests/h200-disable-mma-v3.yaml")
    assert result.returncode == 0, result.stderr
    assert "ok (14 workloads" in result.stdout


# -- timing windows: the wall-clock span each timed row measured ----------------------------

from contextlib import contextmanager  # noqa: E402  (this section was appended)

class Wall:
    """A wall clock that the recorded calls advance: a first call compiles for 100 s, later calls take 1 s."""

    def __init__(self, t: float = 1000.0):
        self.t = t
        self.calls = 0

    def __call__(self) -> float:
        return self.t

    def call(self):
        self.t += 100.0 if self.calls == 0 else 1.0
        self.calls += 1

    def do_bench(self, fn, **kwargs):
        for _ in range(4):
            fn()
        self.t += 0.5                          # do_bench's own reduction after the last call
        return 0.25


def test_event_and_direct_windows_start_after_the_first_call_and_end_after_the_timing():
    wall = Wall()
    device = DeviceTimers(do_bench=wall.do_bench, wall=wall)
    assert device.event(wall.call, warmup_ms=1, rep_ms=1, return_mode="median") == 0.25
    assert device.window == (1100.0, 1103.5), "the compiling first call is outside the window"
    wall = Wall()
    device = DeviceTimers(do_bench=wall.do_bench, wall=wall)
    assert device.direct(wall.call, warmup_ms=1, rep_ms=1, return_mode="median", repeat=3) == 0.25
    assert device.window == (1100.0, 1112.5), "one window over every repeated do_bench call"


class FakeGraphDevice:
    """The device interface a graph timing uses, on the CPU: events report 2 ms, each replay takes 1 s."""

    def __init__(self, wall: Wall):
        self.wall = wall
        self.replays = 0
        test = self

        class Event:
            def __init__(self, enable_timing):
                pass

            def record(self):
                pass

            def elapsed_time(self, other):
                return 2.0

        class Graph:
            def replay(self):
                test.replays += 1
                test.wall.t += 1.0
        self.Event, self.graph_class = Event, Graph

    def Stream(self):
        return None

    @contextmanager
    def stream(self, stream):
        yield

    @contextmanager
    def graph(self, graph):
        yield

    def synchronize(self):
        pass


def test_a_graph_window_spans_the_timed_replays_only():
    wall = Wall()
    device = FakeGraphDevice(wall)
    timers_ = DeviceTimers(wall=wall)
    latency = timers_.graph(wall.call, device, device.graph_class, warmup_ms=1, rep_ms=10, return_mode="median")
    assert latency == 2.0 / timers.graph_calls(2.0 / timers.ESTIMATE_CALLS, 10)
    assert device.replays == 1 + timers.TIMED_REPLAYS
    start, end = timers_.window
    assert end - start == timers.TIMED_REPLAYS, "the upload replay, warm-up and capture are outside"
    assert end == wall.t


def test_every_timed_row_of_a_session_carries_its_window_and_failed_rows_none(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), timer={"kind": "event"})
    wall = Wall()
    result, rows, _ = _session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=wall.do_bench, wall=wall))
    assert result.ret == 0
    ok = [r for r in rows if r.status == "ok"]
    assert len(ok) == 5 and all(r.window_end_unix > r.window_start_unix for r in ok)
    assert all(a.window_end_unix <= b.window_start_unix for a, b in zip(ok, ok[1:])), "ordered, not overlapping"
    failed = [r for r in rows if r.status == "failed"]
    assert len(failed) == 1 and (failed[0].window_start_unix, failed[0].window_end_unix) == (None, None)


class FallsBackOnce(DeviceTimers):
    """The first capture is refused (re-timed direct, with a window); later graph timings report none."""

    def __init__(self, wall):
        super().__init__(do_bench=wall.do_bench, wall=wall)
        self.graphs = 0

    def graph(self, fn, interface, graph_class, **kwargs):
        self.graphs += 1
        if self.graphs == 1:
            raise CaptureFailure("capture", RuntimeError(CUDA_SYNC))
        fn()
        return 0.0123


def test_a_row_never_carries_the_window_of_an_earlier_timing(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), dtypes=("float16",))
    wall = Wall()
    result, rows, _ = _session(pytester, ctx, BENCH_ADD, FallsBackOnce(wall))
    assert result.ret == 0
    assert [(r.timer, r.window_start_unix is not None) for r in rows] == [
        ("direct", True), ("graph", False), ("graph", False)]
