"""Timing windows against real NVML samples, on the GPU host (CUDA, flag_gems, pynvml)::

    python3 -m pytest tests/gpu/test_throttle_gpu.py -m gpu -v

A FlagGems add is timed through the timing plugin, as a cell times it, under the H200
manifests' timer (warmup 25 ms, rep 100 ms), while the run's sampler reads NVML at its
default interval. Every timed row's window must be non-empty, ordered after the one
before, and hold samples; the clocks inside them must be the loaded clock, not the
idle one the cell's start reads (345 MHz on the H200).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from timingsession import context

from campaign.backends.cuda import CudaBackend
from campaign.contract import telemetryfile
from campaign.contract.artifacts import ROWS_FILE, TELEMETRY_FILE
from campaign.contract.cellfiles import Rows
from campaign.contract.runroot import RunRoot
from campaign.judging import throttle
from campaign.plugins import timing
from campaign.running import telemetry
from campaign.worker.context import CellContext

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]

BENCH_ADD = PROJECT_ROOT / "ops" / "workloads" / "flaggems" / "bench_fg_pointwise.py::test_bench_add"
SHAPES = ("1048576", "4096x4096")


@pytest.fixture(scope="module", autouse=True)
def device():
    import flag_gems  # noqa: F401
    import torch

    assert torch.cuda.is_available(), "the gpu tests need a CUDA device"
    torch.zeros(1, device="cuda")


def _context(root: Path, kind: str) -> CellContext:
    return context(root, CudaBackend(), timer={"kind": kind, "warmup_ms": 25, "rep_ms": 100, "return_mode": "median"},
                   op="add", shapes=SHAPES, dtypes=("float16",), project_root=PROJECT_ROOT)


@pytest.mark.parametrize("kind", ["event", "graph"])
def test_every_timed_window_is_ordered_and_holds_loaded_clock_samples(pytester, tmp_path, kind):
    devices = telemetry.visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"))
    sampler = telemetry.Sampler(RunRoot(tmp_path), lambda: telemetry.make_source("nvml", devices))
    assert sampler.start(), sampler.reason
    ctx = _context(tmp_path, kind)
    began = time.time()
    sampler.mark()
    try:
        result = pytester.runpytest_inprocess(str(BENCH_ADD), "-p", "no:cacheprovider", plugins=[timing.make(ctx)])
    finally:
        sampler.mark()
        ended = time.time()
        sampler.stop()
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    rows = Rows.model_validate(json.loads((ctx.cell_dir / ROWS_FILE).read_text())).rows
    assert [(r.status, r.timer) for r in rows] == [("ok", kind)] * len(SHAPES)
    previous_end = began
    for row in rows:
        assert previous_end <= row.window_start_unix < row.window_end_unix <= ended, row
        previous_end = row.window_end_unix

    judged = throttle.judge(telemetryfile.read_samples(tmp_path / TELEMETRY_FILE), {"cell": rows})["cell"]
    per_row = {key: (v.state, v.samples, v.reasons, v.sm_clock_min_mhz) for key, v in judged.rows.items()}
    # Measured on the H200 (receipts/h200-2026-11-30.md): an event window is at least
    # warmup + rep (125 ms) and always held a 0.1 s sample; a graph window covers only the
    # timed replays, which for a 1M-element add is shorter than the interval, so it may hold
    # none. Such a row is counted unsampled, never ok; a row with samples shows loaded clocks.
    if kind == "event":
        assert judged.count("unsampled") == 0, per_row
    assert judged.count("ok") >= 1, per_row
    for v in judged.rows.values():
        assert (v.state == "unsampled") == (v.samples == 0), per_row
        assert v.state == "unsampled" or v.sm_clock_min_mhz > 1000, per_row
    summary = sampler.window(began, ended, ctx.cell_dir)
    assert summary.sm_clock_min_mhz is not None and summary.sm_clock_min_mhz > 1000, (summary, per_row)
