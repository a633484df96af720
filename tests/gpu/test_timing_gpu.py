"""The timing plugin on a real accelerator, through FlagGems 5.0.2's public dispatch.

Run on the GPU host (CUDA, flag_gems installed), from the project root::

    .venv/bin/python -m pytest tests/gpu/test_timing_gpu.py -m gpu -v

Each test runs one pytest session in-process over the project's own FlagGems benchmark
files with the timing plugin installed, exactly as a cell does, and reads rows.json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from conftest import PROJECT_ROOT
from timingsession import context

from campaign.backends.cuda import CudaBackend
from campaign.contract import timers
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.cellfiles import Rows
from campaign.planning import inventory, shapes
from campaign.plugins import timing
from campaign.worker.context import CellContext

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]

WORKLOADS = PROJECT_ROOT / "ops" / "workloads" / "flaggems"
FAST = {"warmup_ms": 10, "rep_ms": 20}


@pytest.fixture(scope="module", autouse=True)
def device():
    """flag_gems and CUDA come up before any test's environment snapshot is taken."""
    import flag_gems  # noqa: F401
    import torch

    assert torch.cuda.is_available(), "the gpu tests need a CUDA device"
    torch.zeros(1, device="cuda")
    return torch


def _context(tmp_path, backend, timer, op, shapes, dtypes=("float16",)) -> CellContext:
    return context(tmp_path, backend, timer=timer, op=op, shapes=shapes, dtypes=dtypes, project_root=PROJECT_ROOT)


def _session(pytester, ctx, target):
    result = pytester.runpytest_inprocess(str(target), "-p", "no:cacheprovider", plugins=[timing.make(ctx)])
    rows = Rows.model_validate(json.loads((ctx.cell_dir / ROWS_FILE).read_text())).rows
    return result, rows, (ctx.cell_dir / "run.log").read_text()


@pytest.mark.parametrize("kind", ["event", "graph"])
@pytest.mark.parametrize("op, file, shape", [("add", "bench_fg_pointwise.py", "4096x4096"),
                                             ("mm", "bench_fg_blas.py", "1024x1024x1024")])
def test_event_and_graph_both_time_add_and_mm(pytester, tmp_path, kind, op, file, shape):
    # fp16 only: FlagGems' fp32 mm sweep compiles for minutes on sm_90 (measured: >150 s)
    ctx = _context(tmp_path, CudaBackend(), {"kind": kind, **FAST}, op, (shape,), ("float16",))
    result, rows, _ = _session(pytester, ctx, WORKLOADS / f"{file}::test_bench_{op}")
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    assert len(rows) == 1
    for row in rows:
        assert (row.status, row.timer, row.markers, row.l2_flush) == ("ok", kind, (), kind == "event")
        # physically plausible for these shapes on any current GPU: 1 us .. 50 ms
        assert 1e-3 < row.latency_ms < 50, row
    assert sum(ctx.log.counts.values()) == 0


FLAGGEMS = sorted((e for e in inventory.load(PROJECT_ROOT / "ops").entries.values() if e.provider == "flaggems"),
                  key=lambda e: e.op)
CORE = shapes.load_shapes(shapes.shape_file(PROJECT_ROOT, "flaggems", "core"))
BLAS = {"mm", "bmm", "addmm"}


@pytest.mark.parametrize("entry", FLAGGEMS, ids=lambda e: e.op)
def test_every_flaggems_workload_gives_rows_under_event_and_graph(pytester, tmp_path, entry):
    """Every inventory workload, its own dtypes and core shapes, once per timer. A graph row
    either was captured (timer graph, unmarked) or fell back marked with its phase; none is lost.
    BLAS: the first core shape in fp16 only (their fp32 sweeps compile for minutes per shape)."""
    core = tuple(shapes.format_shape(s) for s in CORE[entry.op])
    shape_set, dtypes = (core[:1], ("float16",)) if entry.op in BLAS else (core, entry.dtypes)
    for kind in ("event", "graph"):
        (tmp_path / kind).mkdir()
        ctx = _context(tmp_path / kind, CudaBackend(), {"kind": kind, **FAST}, entry.op, shape_set, dtypes)
        result, rows, _ = _session(pytester, ctx, PROJECT_ROOT / entry.benchmark)
        assert result.ret == 0, "\n".join(result.outlines[-30:])
        assert len(rows) == len(shape_set) * len(dtypes), "no row lost"
        assert all(r.status == "ok" and 0 < r.latency_ms < 1000 for r in rows), rows
        fell_back = [r for r in rows if r.timer != kind]
        if kind == "event":
            assert not fell_back and all(r.markers == () for r in rows)
        else:
            assert all(r.markers == () for r in rows if r.timer == "graph")
            assert all((r.timer, r.markers) == ("direct", (timers.FALLBACK_MARKER,)) and r.fallback_phase
                       for r in fell_back), fell_back
        assert ctx.log.counts[timers.FALLBACK_MARKER] == len(fell_back)
        assert ctx.log.counts[timers.POISONED_MARKER] == 0


def _generator_still_advances(torch):
    generator = torch.cuda.default_generators[torch.cuda.current_device()]
    before = generator.get_state()
    first, second = torch.rand(4096, device="cuda"), torch.rand(4096, device="cuda")
    assert not torch.equal(first, second) and not torch.equal(before, generator.get_state())


@pytest.mark.parametrize("op", ["dropout", "rand"])
def test_rng_ops_capture_under_torch_2_11_and_leave_the_generator_working(pytester, tmp_path, device, op):
    """Measured on the H200 (torch 2.11, FlagGems 5.0.2): FlagGems' philox kernels take
    their seed and offset through torch's graph-safe generator, so capture succeeds and
    the rows are graph-timed -- unlike the MUSA runtime of the seeds, where every row fell
    back. Pinned so a change of behaviour shows up as a failure, not as a silent relabel."""
    torch = device
    shapes, dtypes = ("1048576", "4096x4096"), ("float16", "float32")
    ctx = _context(tmp_path, CudaBackend(), {"kind": "graph", "direct_repeat": 3, **FAST}, op, shapes, dtypes)
    result, rows, _ = _session(pytester, ctx, WORKLOADS / f"bench_fg_rng.py::test_bench_{op}")
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    assert len(rows) == len(shapes) * len(dtypes), "no row lost"
    assert [(r.status, r.timer, r.markers) for r in rows] == [("ok", "graph", ())] * len(rows)
    _generator_still_advances(torch)


SYNC_IN_CAPTURE = """
import torch

def test_bench_add(bench):
    for case in bench.cases():
        x = torch.randn(case.shape, dtype=case.dtype, device=bench.device)
        bench.measure(case, lambda: (x + x).sum().item())   # .item() synchronises: illegal while capturing
"""


def test_capture_illegal_rows_fall_back_marked_and_none_is_lost(pytester, tmp_path, device):
    torch = device
    shapes, dtypes = ("1048576", "4096x4096"), ("float16", "float32")
    ctx = _context(tmp_path, CudaBackend(), {"kind": "graph", "direct_repeat": 3, **FAST}, "add", shapes, dtypes)
    result, rows, log = _session(pytester, ctx, pytester.makepyfile(bench_sync=SYNC_IN_CAPTURE))
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    assert len(rows) == len(shapes) * len(dtypes), "no row lost"
    for row in rows:
        assert (row.status, row.timer, row.markers, row.repeat) == ("ok", "direct", (timers.FALLBACK_MARKER,), 3)
        assert row.fallback_phase == "capture" and row.latency_ms > 0
    assert ctx.log.counts[timers.FALLBACK_MARKER] == len(rows) and ctx.log.counts[timers.POISONED_MARKER] == 0
    marked = [line for line in log.splitlines() if line.startswith(timers.FALLBACK_MARKER)]
    assert len(marked) == len(rows) and all("repeat=3" in line for line in marked)
    _generator_still_advances(torch)


def test_direct_rows_carry_their_repeat(pytester, tmp_path):
    ctx = _context(tmp_path, CudaBackend(), {"kind": "direct", "direct_repeat": 3, **FAST}, "add", ("4096x4096",))
    result, rows, _ = _session(pytester, ctx, WORKLOADS / "bench_fg_pointwise.py::test_bench_add")
    assert result.ret == 0
    assert [(r.status, r.timer, r.repeat, r.l2_flush) for r in rows] == [("ok", "direct", 3, True)]


@dataclass(frozen=True)
class PoisonedBySync(CudaBackend):
    """CUDA, except that a synchronising call during capture counts as poisoning: CUDA has
    no recorded poisoning wording, so the test names one to drive a real capture into it."""

    def classify_capture_failure(self, text: str):
        return "poisoned" if "operation not permitted when stream is capturing" in text.lower() else "fallback"




def test_a_poisoning_capture_raises_the_marker_and_stops(pytester, tmp_path):
    ctx = _context(tmp_path, PoisonedBySync(), {"kind": "graph", **FAST}, "add", ("1048576", "4096x4096"))
    result, rows, log = _session(pytester, ctx, pytester.makepyfile(bench_sync=SYNC_IN_CAPTURE))
    assert result.ret == 1
    assert ctx.log.counts[timers.POISONED_MARKER] == 1
    assert "BENCHMARK_CAPTURE_POISONED op=add function=test_bench_add shape=1048576" in log
    assert len(rows) == 2 and all(r.status == "failed" and r.latency_ms is None for r in rows)
    assert rows[0].error.startswith("poisoned during graph capture")
    assert "not measured" in rows[1].error
