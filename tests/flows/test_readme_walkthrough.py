"""The README's walkthrough ("From a tutorial file to a sealed A/B"), run verbatim.

Its fenced blocks are the test's input: a block whose info string holds ``file=PATH`` is written
to PATH, each ``bash run`` block is run in order by bash, all in a folder of tmp_path, outside the
project, with the project's ``campaign`` first on PATH. Then the sealed root is read back: the
do_bench calls are the rows (the file's own parametrization), the candidate's PTX differs from the
baseline's and the control's equals it, and the kernel file is byte for byte the README's.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT
from readmewalk import walkthrough

from campaign.contract import canonical


def test_the_walkthrough_has_a_file_outside_the_project_a_manifest_and_commands():
    files, runs = walkthrough()
    assert set(files) == {"kernels/scaled_add.py", "scaled-add.yaml"}
    assert "benchmark: ./kernels/scaled_add.py" in files["scaled-add.yaml"]
    assert "triton.testing.do_bench(" in files["kernels/scaled_add.py"]
    assert "get_active_torch_device()" in files["kernels/scaled_add.py"]
    assert runs and all(line.startswith("campaign ") for run in runs for line in run.splitlines() if line.strip())


def test_the_readme_walkthrough_runs_verbatim_to_a_sealed_ab(tmp_path: Path):
    files, runs = walkthrough()
    work = tmp_path / "walk"
    assert not work.resolve().is_relative_to(PROJECT_ROOT.resolve())
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    outputs = []
    for block in runs:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                              capture_output=True, text=True, timeout=540)
        assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        outputs.append(done.stdout)
    said = "\n".join(outputs)
    assert "imports not digested" in said and "pytest, torch, triton" in said
    (root,) = (work / "runs").glob("scaled-add-cpu-*")
    assert (root / "receipt.json").is_file()

    prepare = canonical.read_json(root / "prepare.json")
    kernel = (work / "kernels" / "scaled_add.py").resolve()
    assert prepare["resolved_targets"]["scaled-add"]["rootdir"] == str(kernel.parent)
    assert str(kernel) in prepare["harness"]

    rows = canonical.read_json(root / "cells" / "scaled-add" / "r1" / "baseline" / "rows.json")["rows"]
    assert [(r["function"], r["shape"], r["status"]) for r in rows] == [
        ("test_bench_scaled_add[4096]", [4096], "compiled"), ("test_bench_scaled_add[1048576]", [1048576], "compiled")]

    verdict = canonical.read_json(root / "receipt.json")["verdicts"]["workloads"]["scaled-add"]
    assert verdict["screen"] == "IR_CHANGED", verdict["reason"]
    assert verdict["ir"]["stage"] == "ptx" and verdict["ir"]["changed"] and verdict["ir"]["control_matches"]
    assert verdict["class"] == "X" and verdict["reason"].startswith("compile-only: not timed")
    assert "IR_CHANGED" in said and "control IR equals baseline" in said
    assert kernel.read_text(encoding="utf-8") == files["kernels/scaled_add.py"]     # never edited
