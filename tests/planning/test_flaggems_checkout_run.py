"""FlagGems' own Benchmark run end to end through the CLI on the stand-in checkouts (cpu backend).

The stand-ins' Benchmark (tests/data/fake_flaggems_*, written here) times the torch op, then
the same op under ``flag_gems.use_gems`` or an explicit ``gems_op``, with
``triton.testing.do_bench``; the stand-in flag_gems (tests/data/fake_flaggems_pkg, on the
cells' PYTHONPATH as an installed package would be) dispatches to tiny Triton kernels that the
compile-only driver compiles for sm_90. What is checked: rows with role reference / measured
keyed by FlagGems' shape and dtype, IR captured, the reference rows never paired, the sealed root
verifying, the report's FlagGems-vs-torch section saying nothing was timed, and a campaign's own
``shape_file`` for FlagGems' items and for the project's builtin workloads (the shapes run, per row).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import projectcopy
import pytest
from test_flaggems_checkout import DATA, make_checkout, manifest

from campaign.contract import canonical
from campaign.contract.cellfiles import Row
from campaign.judging import stats

FAKE_FLAG_GEMS = DATA / "fake_flaggems_pkg"
TRACE = """# a user's trace: FlagGems' layout ({shapes: [...]}), the op name's key and a Benchmark class's
abs:
  shapes:
    - [3, 1000]
BlasBenchmark:
  shapes:
    - [1, 48, 80, 32]
"""


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(FAKE_FLAG_GEMS)}


def _run(cli, tmp_path: Path, layout: str, workloads: str, extra: str = "") -> Path:
    root, head = make_checkout(tmp_path, layout)
    path = manifest(tmp_path, root, f'commit: "{head}"', workloads)
    path.write_text(path.read_text().replace("defaults: {bench_level: core, shape_mode: upstream}",
                                             "rounds: {count: 1}\n"
                                             f"defaults: {{bench_level: core, shape_mode: upstream{extra}}}"))
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    run_root = Path(done.stdout.strip().splitlines()[-1])
    ran = cli("run", run_root, "--grace", "1", "--scratch-dir", tmp_path, env=_env(), timeout=600)
    assert ran.returncode == 0, ran.stderr
    return run_root


def _rows(root: Path, task: str) -> list[Row]:
    return [Row.model_validate(r) for r in canonical.read_json(root / "cells" / task / "rows.json")["rows"]]


@pytest.fixture(scope="module")
def category_root(tmp_path_factory):
    from conftest import run_cli
    base = tmp_path_factory.mktemp("upstream-502")
    return _run(run_cli, base, "502", "  - {name: abs, op: abs, provider: flaggems_upstream}\n"
                                      "  - {name: mm, op: mm, provider: flaggems_upstream}\n")


def test_rows_are_keyed_by_flaggems_shape_and_dtype_with_their_role(category_root):
    for task in ("abs/r1/baseline", "abs/r1/candidate"):
        rows = _rows(category_root, task)
        # per dtype, per shape of core_shapes.yaml's UnaryPointwiseBenchmark: torch, then FlagGems
        assert [(r.shape, r.dtype, r.role) for r in rows] == [
            (shape, dtype, role) for dtype in ("float16", "float32") for shape in ((1024, 1024), (64, 512))
            for role in ("reference", "measured")]
        assert {(r.status, r.timer, r.op) for r in rows} == {("compiled", "none", "abs")}
        assert {r.function for r in rows} == {"test_general_unary_pointwise[abs-abs-dtypes0]"}
        # the reference rows never reach pairing: only the FlagGems side is keyed
        keyed = stats.keyed(rows)
        assert [row.role for _, row in keyed] == ["measured"] * 4
        assert sorted(key for key, _ in keyed) == sorted(
            ("test_general_unary_pointwise[abs-abs-dtypes0]", shape, dtype, 0)
            for dtype in ("float16", "float32") for shape in ((1024, 1024), (64, 512)))
        cell = category_root / "cells" / task
        log = (cell / "run.log").read_text(encoding="utf-8")
        assert "flaggems_bench: benchmark.performance_utils.Benchmark keyed by FlagGems' shape and dtype" in log
        assert "dobench: 8 rows written from 1 test(s) (ok 0, failed 0, compiled 8; 4 reference)" in log
        assert "abs_kernel" in (cell / "ir" / "index.tsv").read_text(encoding="utf-8")
    mm = _rows(category_root, "mm/r1/candidate")
    assert [(r.shape, r.role) for r in mm[:4]] == [((1, 64, 64, 64), "reference"), ((1, 64, 64, 64), "measured"),
                                                   ((1, 128, 64, 32), "reference"), ((1, 128, 64, 32), "measured")]


def test_the_sealed_root_verifies_and_reports_ir_and_an_untimed_speedup(category_root, cli):
    assert cli("verify", category_root).returncode == 0
    done = cli("report", category_root)
    assert done.returncode == 0, done.stderr
    # the tl.dot kernel's TTGIR moves under DISABLE_MMA_V3, abs's does not
    assert "| abs | X | NO_IR_DIFF |" in done.stdout and "| mm | X | IR_CHANGED |" in done.stdout
    section = done.stdout.split("## FlagGems vs torch", 1)[1].split("## What this campaign", 1)[0]
    assert "torch latency / FlagGems latency" in section
    assert "Not timed: this backend executes nothing (compile-only)" in section and "abs, mm" in section
    assert "×" not in section


def test_a_campaign_shape_file_replaces_core_shapes_for_both_roles_and_gems_op(tmp_path, cli):
    trace = tmp_path / "trace.yaml"
    trace.write_text(TRACE, encoding="utf-8")
    root = _run(cli, tmp_path, "53", "  - {name: abs, op: abs, provider: flaggems_upstream, dtypes: [float32]}\n"
                                     "  - {name: mm, op: mm, provider: flaggems_upstream, dtypes: [float16]}\n",
                extra=", shape_file: trace.yaml")
    tasks = {t["workload"]: t for t in json.loads((root / "matrix.json").read_text())["tasks"]}
    assert tasks["abs"]["targets"]["shape_file"] == str(trace)
    assert tasks["abs"]["targets"]["benchmark_options"][-6:] == ["--shape_file", str(trace), "-o", "pythonpath=", "-p", "no:logging"]
    assert str(trace) in json.loads((root / "prepare.json").read_text())["harness"]
    assert [(r.shape, r.dtype, r.role) for r in _rows(root, "abs/r1/baseline")] == [
        ((3, 1000), "float32", "reference"), ((3, 1000), "float32", "measured")]
    # test_mm passes gems_op=flag_gems.mm: measured because its op is the Benchmark's gems_op
    mm = _rows(root, "mm/r1/candidate")
    assert [(r.shape, r.dtype, r.role) for r in mm] == [((1, 48, 80, 32), "float16", "reference"),
                                                        ((1, 48, 80, 32), "float16", "measured")]
    assert "mm_kernel" in (root / "cells" / "mm" / "r1" / "candidate" / "ir" / "index.tsv").read_text(encoding="utf-8")
    assert cli("verify", root).returncode == 0


def test_a_shape_file_without_a_key_for_an_item_is_refused(tmp_path, cli):
    root, head = make_checkout(tmp_path, "53")
    (tmp_path / "trace.yaml").write_text("abs:\n  shapes: [[8]]\n", encoding="utf-8")
    path = manifest(tmp_path, root, f'commit: "{head}"', "  - {name: mm, op: mm, provider: flaggems_upstream}\n")
    path.write_text(path.read_text().replace("shape_mode: upstream", "shape_mode: upstream, shape_file: trace.yaml"))
    done = cli("validate", path)
    assert done.returncode == 2
    assert "check=shape_file" in done.stderr and "benchmark/test_mm.py::test_mm" in done.stderr
    assert "DEFAULT_SHAPES" in done.stderr and "BlasBenchmark -> Benchmark" in done.stderr


def test_an_edited_shape_file_is_refused_by_run(tmp_path, cli):
    root, head = make_checkout(tmp_path, "53")
    trace = tmp_path / "trace.yaml"
    trace.write_text(TRACE, encoding="utf-8")
    path = manifest(tmp_path, root, f'commit: "{head}"', "  - {name: abs, op: abs, provider: flaggems_upstream}\n")
    path.write_text(path.read_text().replace("shape_mode: upstream", "shape_mode: upstream, shape_file: trace.yaml"))
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    trace.write_text(TRACE.replace("[3, 1000]", "[3, 1001]"), encoding="utf-8")
    refused = cli("run", done.stdout.strip().splitlines()[-1])
    assert refused.returncode == 1
    assert "check=harness" in refused.stderr and "trace.yaml" in refused.stderr


def test_a_campaign_shape_file_gives_builtin_workloads_their_shapes(tmp_path):
    project = projectcopy.make(tmp_path)
    trace = tmp_path / "trace.yaml"
    trace.write_text("add:\n  shapes: [[333], [64, 48]]\nsoftmax: [[8, 128]]\n", encoding="utf-8")
    path = projectcopy.manifest(tmp_path, "  - {name: add, op: add}\n", campaign="trace-builtin")
    path.write_text(path.read_text().replace("defaults:\n  timeout_s: 120\n", "defaults:\n  timeout_s: 120\n  shape_file: trace.yaml\n"))
    root = projectcopy.prepare(project, path)
    done = projectcopy.run(project, root)
    assert done.returncode == 0, done.stderr
    rows = [Row.model_validate(r) for r in canonical.read_json(root / "cells" / "add" / "r1" / "baseline" / "rows.json")["rows"]]
    assert sorted({r.shape for r in rows}) == [(64, 48), (333,)]
    missing = projectcopy.manifest(tmp_path, "  - {name: row_sum, op: row_sum}\n", campaign="trace-missing")
    missing.write_text(missing.read_text().replace("defaults:\n  timeout_s: 120\n",
                                                   "defaults:\n  timeout_s: 120\n  shape_file: trace.yaml\n"))
    refused = projectcopy.cli(project, "validate", missing)
    assert refused.returncode == 2
    assert "check=shape_file" in refused.stderr and f"{trace} has no shapes for row_sum" in refused.stderr
