"""FlagGems 5.0.2's own benchmark items from a real checkout, on the H200, through the CLI.

Run on the GPU host from the project root, with the checkout in the ignored ``.flaggems``
(``git clone --depth 1 --branch v5.0.2 https://github.com/flagos-ai/FlagGems .flaggems``) and
the flag_gems 5.0.2 wheel installed::

    python3 -m pytest tests/gpu/test_flaggems_upstream_gpu.py -m gpu -v

One pointwise op (abs, test_unary_pointwise_perf.py) and one BLAS op (mm, from
test_blas_perf_parallel.py: test_blas_perf.py's item is dismissed) run as a one-round
campaign under DISABLE_MMA_V3 on a small shape trace: graph-timed rows, torch's side as
reference rows, FlagGems' shapes in every row, mm's TTGIR changed and abs's not, the
FlagGems-vs-torch section with numbers. Then ``campaign inventory .flaggems --collect``
verifies the items by collection, and the override list of the MThreads compat plugin is
checked against the pinned files' own text.
"""
from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import projectcopy
import pytest
from conftest import PROJECT_ROOT

from campaign.contract import canonical
from campaign.plugins import musa_compat

pytestmark = pytest.mark.gpu

CHECKOUT = PROJECT_ROOT / ".flaggems"
COMMIT = "30bfcc0735b8ebd48bd7339ef752ec64df69663f"      # tag v5.0.2
TRACE = """abs:
  shapes:
    - [64, 64]
    - [4096, 4096]
BlasBenchmark:
  shapes:
    - [2, 384, 384, 384]
"""
HEAD = """schema_version: 1
campaign: upstream-gpu
description: FlagGems 5.0.2's own abs and mm benchmark items under DISABLE_MMA_V3
sources:
  triton: {{version: "3.6.0"}}
  flag_gems: {{version: "5.0.2"}}
  flag_gems_checkout: {{path: "{checkout}", commit: {commit}, quick: true}}
device:
  backend: cuda
  name: "{name}"
  target: "cuda:90"
switch:
  name: DISABLE_MMA_V3
  cells:
    baseline: {{}}
    control: {{DISABLE_MMA_V3: "0"}}
    candidate: {{DISABLE_MMA_V3: "1"}}
timer:
  kind: graph
  warmup_ms: 10
  rep_ms: 20
rounds:
  count: 1
defaults:
  timeout_s: 1200
  bench_level: core
  shape_mode: upstream
  shape_file: trace.yaml
workloads:
  - {{name: abs, op: abs, provider: flaggems_upstream, dtypes: [float16]}}
  - {{name: mm, op: mm, provider: flaggems_upstream, dtypes: [float16], benchmark: benchmark/test_blas_perf_parallel.py}}
"""


def _checkout() -> Path:
    if not (CHECKOUT / "benchmark" / "performance_utils.py").is_file():
        pytest.fail(f"{CHECKOUT}: no FlagGems 5.0.2 checkout (see this module's docstring)", pytrace=False)
    head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert head == COMMIT, f"{CHECKOUT} is at {head}, not v5.0.2"
    return CHECKOUT


def test_abs_and_mm_from_the_checkout_are_timed_with_torch_as_reference(tmp_path: Path):
    import torch

    checkout = _checkout()
    project = projectcopy.make(tmp_path)
    (tmp_path / "trace.yaml").write_text(TRACE, encoding="utf-8")
    path = tmp_path / "upstream-gpu.yaml"
    path.write_text(HEAD.format(checkout=checkout, commit=COMMIT, name=torch.cuda.get_device_name(0)), encoding="utf-8")
    root = projectcopy.prepare(project, path)
    done = projectcopy.run(project, root, timeout=2400)
    assert done.returncode == 0, done.stderr
    expected = {"abs": [(64, 64), (4096, 4096)], "mm": [(2, 384, 384, 384)]}
    for workload, shapes in expected.items():
        for cell in ("baseline", "control", "candidate"):
            rows = canonical.read_json(root / "cells" / workload / "r1" / cell / "rows.json")["rows"]
            assert [(tuple(r["shape"]), r["dtype"], r["role"]) for r in rows] == [
                (shape, "float16", role) for shape in shapes for role in ("reference", "measured")]
            assert {(r["status"], r["timer"]) for r in rows} == {("ok", "graph")}
            assert all(r["latency_ms"] > 0 for r in rows)
    assert projectcopy.cli(project, "verify", root).returncode == 0
    report = projectcopy.cli(project, "report", root)
    assert report.returncode == 0, report.stderr
    assert "| mm | " in report.stdout and "IR_CHANGED" in report.stdout.split("| mm | ", 1)[1].splitlines()[0]
    assert "NO_IR_DIFF" in report.stdout.split("| abs | ", 1)[1].splitlines()[0]
    section = report.stdout.split("## FlagGems vs torch", 1)[1].split("## What this campaign", 1)[0]
    for workload in expected:
        line = next(line for line in section.splitlines() if line.startswith(f"| {workload} |"))
        # a number per cell side (mm's recording baseline is compared through the control)
        assert line.count("×") == 3, line


def test_inventory_of_the_checkout_is_verified_by_collection(tmp_path: Path):
    checkout = _checkout()
    out = tmp_path / "inventory.csv"
    done = subprocess.run([sys.executable, "-m", "campaign", "inventory", str(checkout),
                           "--out", str(out), "--collect"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=2400)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    committed = list(csv.DictReader(io.StringIO(
        (PROJECT_ROOT / "ops" / "upstream_inventory_flaggems_5.0.2.csv").read_text(encoding="utf-8"))))
    # the same items as the committed table (read from the files), now verified by pytest's own collection
    assert {(r["file"], r["function"], r["mark"]) for r in rows} == {(r["file"], r["function"], r["mark"]) for r in committed}
    by_item = {(r["file"], r["function"], r["mark"]): r["verified"] for r in rows}
    assert by_item[("benchmark/test_unary_pointwise_perf.py", "test_general_unary_pointwise", "abs")] == "yes"
    assert by_item[("benchmark/test_blas_perf_parallel.py", "test_blas_benchmark", "mm")] == "yes"
    assert "collection error" not in set(by_item.values())


def test_the_musa_override_list_matches_the_pinned_files():
    checkout = _checkout()
    for override in musa_compat.OVERRIDES:
        assert f'reason="{override.reason}"' in (checkout / override.path).read_text(encoding="utf-8"), override.path
    for path, reason, _ in musa_compat.KEPT:
        assert f'reason="{reason}"' in (checkout / path).read_text(encoding="utf-8"), path
