"""The README's walkthrough on a GPU: the same kernel file, the same commands, its GPU lines.

The README says: "On a GPU, the same file and the same commands: only the device line, the timer
and the rounds change". This test takes the walkthrough's blocks exactly as
`tests/flows/test_readme_walkthrough.py` does, replaces the manifest's ``device``, ``timer`` and
``rounds`` with the README's GPU block (nothing else), runs every ``bash run`` block in order in a
folder outside the project, and reads the sealed root: every cell ran the correctness test the
manifest names as one parametrized function (``test_scaled_add`` names ``[4096]`` and
``[1048576]``), every row of the benchmark is timed, and the class is a timing class (G, R, B or C):
never X, which is what the pre-#37 matcher made of a function name on a GPU, and never F.

With ``CAMPAIGN_GPU_OUT=DIR`` the commands' output and a tar of the sealed root are left in DIR
(the README quotes that output; receipts/ keeps the root).

Run on the GPU host: ``python -m pytest tests/gpu/test_readme_walkthrough_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from readmewalk import walkthrough
from ruamel.yaml import YAML

from campaign.contract import canonical

pytestmark = pytest.mark.gpu

GPU_BLOCK = re.compile(r"On a GPU, the same file.*?```yaml\n(.*?)```", re.DOTALL)
TIMING_CLASSES = {"G", "R", "B", "C"}


def gpu_lines() -> dict:
    """The README's GPU block (device, timer, rounds), parsed."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    found = GPU_BLOCK.search(readme)
    assert found, "README: no GPU block after 'On a GPU, the same file'"
    lines = YAML(typ="safe").load(found.group(1))
    assert set(lines) == {"device", "timer", "rounds"}, f"the README's GPU block changes {sorted(lines)}"
    return lines


def card_lines() -> dict:
    """The README's GPU block on this card: its device line names the card the test runs on (the README
    asks for the card's own name, as torch reports it; an H200's block on an H100 is refused by design)."""
    import torch

    lines = gpu_lines()
    lines["device"]["name"] = torch.cuda.get_device_name(0)
    return lines


def gpu_manifest(text: str) -> str:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    data = yaml.load(text)
    for key, value in card_lines().items():
        data[key] = value
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _keep(out: Path, root: Path, said: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "walkthrough-gpu.txt").write_text(said, encoding="utf-8")
    with tarfile.open(out / f"{root.name}.tar.gz", "w:gz") as tar:
        tar.add(root, arcname=root.name)


def test_the_readme_walkthrough_on_a_gpu_reads_a_timing_class(tmp_path: Path):
    files, runs = walkthrough()
    work = tmp_path / "walk"
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(gpu_manifest(text) if name.endswith(".yaml") else text, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    said = []
    for block in runs:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)
        said.append(f"$ {block}\n{done.stdout}{done.stderr}")
        assert done.returncode == 0, "\n".join(said)
    (root,) = (work / "runs").glob("scaled-add-cpu-*")
    if os.environ.get("CAMPAIGN_GPU_OUT"):
        _keep(Path(os.environ["CAMPAIGN_GPU_OUT"]), root, "\n".join(said))

    matrix = canonical.read_json(root / "matrix.json")
    assert matrix["backend"] == "cuda"
    cells = sorted((root / "cells" / "scaled-add").glob("r*/*"))
    timed = [c for c in cells if (c / "rows.json").is_file() and c.parent.name != "r0"]
    assert timed, f"{root}: no timed cell"
    for cell in timed:
        rows = canonical.read_json(cell / "rows.json")["rows"]
        assert sorted(r["function"] for r in rows) == ["test_bench_scaled_add[1048576]", "test_bench_scaled_add[4096]"]
        assert all(r["status"] == "ok" and r["latency_ms"] > 0 for r in rows), f"{cell}: {rows}"
        outcomes = canonical.read_json(cell / "outcomes.json")
        passed = {o["node"].split("::")[-1] for o in outcomes["outcomes"] if o["outcome"] == "passed"}
        assert {"test_scaled_add[4096]", "test_scaled_add[1048576]"} <= passed, f"{cell}: {outcomes}"

    verdict = canonical.read_json(root / "receipt.json")["verdicts"]["workloads"]["scaled-add"]
    assert verdict["class"] in TIMING_CLASSES, verdict
    assert "no correctness evidence" not in verdict["reason"]
    assert verdict["ir"]["stage"] == "ptx" and verdict["ir"]["changed"], verdict
    assert verdict["reason"].split(";")[0] in "\n".join(said), "the report printed another reason than the receipt's"
