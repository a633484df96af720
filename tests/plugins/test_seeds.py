"""Every test of a cell starts from one random state (`campaign.plugins.seeds`): a benchmark that draws
its inputs from Python's ``random``, numpy or torch draws the same numbers in every cell and process.

Found in the sealed 2-core whole-suite screen: pad, diag and count_nonzero read IR_CHANGED under
DISABLE_MMA_V3 (a switch that reroutes only tl.dot) because FlagGems' benchmarks draw pad widths, the
diagonal and the dim from Python's ``random``, seeded by the OS in each process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import runroots
from conftest import PROJECT_ROOT

DRAWS = PROJECT_ROOT / "tests" / "fixtures" / "workloads" / "bench_random_draw.py"
SESSION = """
import sys, pytest
from campaign.plugins import seeds
plugins = [seeds.make(None)] if sys.argv[1] == "seeded" else []
sys.exit(pytest.main([sys.argv[2], "-q", "-p", "no:cacheprovider", "-k", "draw_first or draw_second"], plugins=plugins))
"""


def _session(tmp_path: Path, name: str, mode: str) -> list[dict]:
    out = tmp_path / f"{name}.jsonl"
    env = {**os.environ, "DRAWS_OUT": str(out), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-c", SESSION, mode, str(DRAWS)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_every_test_of_every_process_draws_the_same_numbers(tmp_path):
    first, second = _session(tmp_path, "one", "seeded"), _session(tmp_path, "two", "seeded")
    assert len(first) == 2 and first[0] == first[1], "the second test draws what the first drew"
    assert first == second, "another process draws the same numbers"
    assert set(first[0]) == {"random", "numpy", "torch"}


def test_unseeded_processes_draw_apart(tmp_path):
    # the mechanism, so the test above cannot pass because the fixture stopped drawing at random
    first, second = _session(tmp_path, "one", "plain"), _session(tmp_path, "two", "plain")
    assert first[0] != first[1] and first[0]["random"] != second[0]["random"]


def test_a_benchmark_drawing_its_constexprs_reads_no_ir_diff_offline(tmp_path):
    """A real screen on the cpu backend: the benchmark's draws are constexprs of its kernel, so unseeded
    cells compile other TTGIR (IR_CHANGED); seeded, both cells drew alike and the switch changed nothing."""
    workload = f'  - {{name: draw, op: add, benchmark: "{DRAWS.relative_to(PROJECT_ROOT)}::test_bench_random_draw"}}\n'
    path = runroots.manifest(tmp_path, [workload], campaign="seeded-draws")
    done = runroots.run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path,
                            "--grace", "1", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(done.stdout)["rows"]
    assert row["verdict"] == "NO_IR_DIFF", row
    root = next((tmp_path / "runs").iterdir())
    drawn = {cell.name: (cell / "draws.jsonl").read_text(encoding="utf-8")
             for cell in (root / "cells").glob("draw*/**/") if (cell / "draws.jsonl").is_file()}
    assert len(drawn) == 2 and len(set(drawn.values())) == 1, drawn
    log = "".join(p.read_text(encoding="utf-8") for p in (root / "cells").rglob("run.log"))
    assert "seeds: random, numpy.random, torch seeded with 0 before each of 1 test(s)" in log
