"""Each timed row's own clock on a real card (`campaign.plugins.rowclock`), through NVML.

Run on the GPU host (CUDA, nvidia-ml-py installed), from the project root::

    .venv/bin/python -m pytest tests/gpu/test_rowclock_gpu.py -m gpu -v

One graph-timed cell of torch fp16 matmuls runs in-process with the timing plugin as a cell
does (its NVML reader and its steady-clock load the real ones), and rows.json is read back.
"""
from __future__ import annotations

import json

import pytest
from conftest import PROJECT_ROOT
from timingsession import context

from campaign.backends.cuda import CudaBackend
from campaign.contract import timers
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.cellfiles import Rows
from campaign.plugins import timing

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]

BENCH_MM = """
import torch

def test_bench_mm(bench):
    for case in bench.cases():
        m, n, k = case.shape
        a = torch.randn((m, k), dtype=case.dtype, device=bench.device)
        b = torch.randn((k, n), dtype=case.dtype, device=bench.device)
        bench.measure(case, lambda: torch.mm(a, b))
"""


def test_every_ok_graph_row_of_a_matmul_cell_carries_a_clock_read_in_its_window(pytester, tmp_path):
    import pynvml  # noqa: F401 -- the gpu extra; absent on the gpu host, this fails rather than skips
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "graph", "warmup_ms": 10, "rep_ms": 20}, op="mm",
                  shapes=("1024x1024x1024", "2048x2048x2048"), dtypes=("float16",), project_root=PROJECT_ROOT)
    result = pytester.runpytest_inprocess(str(pytester.makepyfile(bench_mm=BENCH_MM)), "-p", "no:cacheprovider",
                                          plugins=[timing.make(ctx)])
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    rows = Rows.model_validate(json.loads((ctx.cell_dir / ROWS_FILE).read_text())).rows
    log = (ctx.cell_dir / "run.log").read_text()
    ok = [r for r in rows if r.status == "ok"]
    assert len(ok) == 2 and all(r.timer == "graph" for r in ok), rows
    for row in ok:
        assert row.clock is not None and row.clock.source == "nvml", (row, log)
        assert row.clock.samples >= 1 and row.clock.sm_mhz_median > 0, row.clock
        assert row.clock.sm_mhz_min <= row.clock.sm_mhz_median <= row.clock.sm_mhz_max
        assert len(row.clock.retimed) <= timers.RETIMES
    assert "row clocks: nvml cuda:0 = NVML uuid GPU-" in log, "found by torch's uuid"
    steady = [line for line in log.splitlines() if line.startswith("steady clock: ")]
    assert len(steady) == 1 and "fp16 matmuls" in steady[0] and steady[0].count(" MHz") == 2, steady
