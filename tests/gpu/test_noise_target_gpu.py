"""The noise target on a real accelerator: a small matmul timed by the timing plugin, exactly as a
cell does, with ``timer.max_noise_pct``; each row's recorded spread is at most the target, or the
row is marked capped.

Run on the GPU host (CUDA), from the project root::

    .venv/bin/python -m pytest tests/gpu/test_noise_target_gpu.py -m gpu -v
"""
from __future__ import annotations

import json

import pytest
from timingsession import context

from campaign.backends.cuda import CudaBackend
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
        a = torch.randn(m, k, dtype=case.dtype, device=bench.device)
        b = torch.randn(k, n, dtype=case.dtype, device=bench.device)
        bench.measure(case, lambda: torch.matmul(a, b))
"""
TIMEOUT_S = 3.0


@pytest.fixture(scope="module", autouse=True)
def device():
    """CUDA comes up before any test's environment snapshot is taken."""
    import torch

    assert torch.cuda.is_available(), "the gpu tests need a CUDA device"
    torch.zeros(1, device="cuda")
    return torch


def _project(tmp_path):
    root = tmp_path / "project"
    (root / "ops" / "shapes" / "flaggems").mkdir(parents=True)
    (root / "ops" / "shapes" / "flaggems" / "core.yaml").write_text("mm: [[256, 256, 256], [1024, 1024, 1024]]\n")
    return root


def _rows(pytester, tmp_path, timer: dict):
    ctx = context(tmp_path, CudaBackend(), timer=timer, op="mm", dtypes=("float16",), project_root=_project(tmp_path))
    path = pytester.makepyfile(bench_mm=BENCH_MM)
    result = pytester.runpytest_inprocess(str(path), "-p", "no:cacheprovider", plugins=[timing.make(ctx)])
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    return Rows.model_validate(json.loads((ctx.cell_dir / ROWS_FILE).read_text())).rows


@pytest.mark.parametrize("kind", ["graph", "event"])
def test_a_matmul_row_reaches_its_noise_target_or_is_marked_capped(pytester, tmp_path, kind):
    target = 0.5
    rows = _rows(pytester, tmp_path, {"kind": kind, "warmup_ms": 10, "rep_ms": 20, "max_noise_pct": target,
                                      "min_samples": 10, "timeout_s": TIMEOUT_S})
    assert len(rows) == 2
    for row in rows:
        assert row.status == "ok" and 1e-3 < row.latency_ms < 50, row
        assert row.samples is not None and row.noise_capped is not None, row
        if row.noise_capped:
            assert row.noise_pct is None or row.noise_pct > target, row
        else:
            assert row.samples >= 10 and row.noise_pct <= target, row
        # the cap bounds the sampling: one more sample past it at most (a do_bench call or a replay)
        assert row.window_end_unix - row.window_start_unix < TIMEOUT_S + 2.0, row


def test_a_loose_target_is_met_at_min_samples(pytester, tmp_path):
    rows = _rows(pytester, tmp_path, {"kind": "graph", "warmup_ms": 10, "rep_ms": 20, "max_noise_pct": 50.0,
                                      "min_samples": 10, "timeout_s": TIMEOUT_S})
    assert [(row.samples, row.noise_capped) for row in rows] == [(10, False), (10, False)]
    assert all(row.noise_pct <= 50.0 for row in rows)
