"""Where nothing reached the compiler or no row ran, the cell's own last error line is shown.

The picker over real pytest output; a real screen on the CPU compile-only backend whose benchmark
raises before anything compiles (its screen.tsv note and its report name the error); a built root
whose cells left no IR, sealed and reported through the CLI.
"""
from __future__ import annotations

from pathlib import Path

import rootbuilder as rb
from conftest import run_cli
from runroots import fault, manifest

from campaign.contract import errorlines
from campaign.contract.errorlines import LogLine
from campaign.judging import screentable

NO_CUDA = "RuntimeError: Torch not compiled with CUDA enabled"
# a failing benchmark's stdout.log as pytest writes it (the worker runs it with -q --color=no)
PYTEST_OUT = """F                                                                        [100%]
=================================== FAILURES ===================================
______________________________ test_bench_no_cuda ______________________________

    def test_bench_no_cuda():
>       raise RuntimeError("Torch not compiled with CUDA enabled")
E       RuntimeError: Torch not compiled with CUDA enabled

tests/fixtures/workloads/bench_faults.py:54: RuntimeError
=========================== short test summary info ============================
FAILED tests/fixtures/workloads/bench_faults.py::test_bench_no_cuda - Runtime...
1 failed in 0.11s
"""


def test_the_last_error_looking_line_wins_and_the_last_line_stands_in():
    assert errorlines.last_error_line(PYTEST_OUT) == NO_CUDA
    # an exception named inside pytest's summary, a dotted one, a tool's diagnostic, pytest's ERROR line
    assert errorlines.last_error_line("ok\nFAILED a.py::t - ValueError: bad dtype\n1 failed\n") == "ValueError: bad dtype"
    assert errorlines.last_error_line("torch.OutOfMemoryError: CUDA out of memory\n") == ("torch.OutOfMemoryError: "
                                                                                          "CUDA out of memory")
    assert errorlines.last_error_line("ptxas fatal error: Unknown option\n\n") == "ptxas fatal error: Unknown option"
    assert errorlines.last_error_line("ERROR a.py - ImportError\n= 1 error =\n") == "ERROR a.py - ImportError"
    # nothing looks like an error: the last non-empty line; an empty log: None
    assert errorlines.last_error("benchmark: pytest exit 0\n\n") is None
    assert errorlines.last_error_line("benchmark: pytest exit 0\n\n") == "benchmark: pytest exit 0"
    assert errorlines.last_error_line("\n \n") is None
    long = errorlines.last_error_line("E   AssertionError: " + "x" * 500)
    assert len(long) == errorlines.LIMIT and long.startswith("AssertionError: xx") and long.endswith("…")


def test_cells_with_one_line_are_named_together():
    same = LogLine("stdout.log", NO_CUDA, True)
    assert errorlines.by_cells({"baseline": same, "control": None, "candidate": same}) == [
        f"last error line of baseline, candidate (stdout.log): {NO_CUDA}"]
    assert errorlines.by_cells({"candidate": LogLine("stderr.log", "benchmark: pytest exit 0", False)}) == [
        "last line of candidate (stderr.log; no line looks like an error): benchmark: pytest exit 0"]


def test_a_real_screen_names_the_cells_error_where_no_row_ran(tmp_path: Path):
    path = manifest(tmp_path, [fault("nocuda", "test_bench_no_cuda")], per_process=1)
    done = run_cli("screen", path, "--runs-dir", tmp_path / "screens", "--scratch-dir", tmp_path, "--grace", "1")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1]).parent
    row = screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))[0]
    assert row["verdict"] == "NO_ROWS"
    assert f"last error line of baseline, candidate (stdout.log): {NO_CUDA}" in row["note"]
    report = run_cli("report", root)
    assert report.returncode == 0, report.stderr
    section = report.stdout.split("### nocuda")[1].split("###")[0]
    assert "nothing reached the Triton compiler" in section
    assert f"- last error line of baseline, candidate (stdout.log): {NO_CUDA}" in section


def test_a_built_root_reports_the_error_of_the_cells_that_left_no_ir(tmp_path: Path):
    silent = rb.pointwise("silent", "silent")
    silent.kernels = {"baseline": ()}          # rows, but nothing reached Triton: every cell leaves ir/ empty
    root = rb.build(tmp_path, [rb.mm(), silent])
    for cell in ("baseline", "control", "candidate"):
        folder = root / "cells" / "silent" / "r1" / cell
        (folder / "stdout.log").write_text(PYTEST_OUT if cell == "candidate" else "3 passed in 0.40s\n", encoding="utf-8")
        (folder / "stderr.log").write_text("benchmark: pytest exit 0\n", encoding="utf-8")
    from campaign.flows import session
    session.seal_root(root)
    done = run_cli("report", root)
    assert done.returncode == 0, done.stderr
    section = done.stdout.split("### silent")[1]
    assert "nothing reached the Triton compiler" in section
    assert f"- last error line of candidate (stdout.log): {NO_CUDA}" in section
    assert ("- last line of baseline, control (stderr.log; no line looks like an error): benchmark: pytest exit 0"
            in section)
    # a workload whose cells compiled and ran shows no log line
    assert "last error line" not in done.stdout.split("### matmul")[1].split("### silent")[0]
