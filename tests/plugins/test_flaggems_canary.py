"""The offline FlagGems canary: FlagGems' abs and softmax compiled on this machine for sm_90 are the
variants an H200 compiled for the same items, at every stage.

The reference lines are cut from the card side of the fidelity pair (`manifests/h200-fidelity-screen.yaml`,
sealed on an H200: `receipts/fidelity/`), the abs and softmax items' baseline cells. A drift of the offline
shim (`campaign.plugins.flaggems_offline`) or of the committed device record makes FlagGems configure or
dispatch differently and compile other code: a line here that the card never compiled fails CI. flag_gems
5.0.2 is installed by `.ci/run` into ``.venv/flaggems``, a folder only this test's process puts on its path
(the other tests run a stand-in flag_gems); without it this test fails, naming the install, never skips.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CARD = HERE / "data" / "flaggems_h200_prints.json"
SCRIPT = HERE / "fixtures" / "flaggems_canary.py"
STAGES = {"ttir", "ttgir", "llir", "ptx", "sass"}
KERNELS = {"abs_func_kernel_rank_1", "softmax_kernel_inner"}


SITE = Path(sys.prefix) / "flaggems"


def test_flaggems_compiled_offline_is_what_the_h200_compiled(tmp_path):
    assert (SITE / "flag_gems" / "__init__.py").is_file(), (
        f"flag_gems is not installed in {SITE}: `pip install --no-deps --target {SITE} flag_gems==5.0.2` (what .ci/run does)")
    out = tmp_path / "canary.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    offline = json.loads(out.read_text())
    card = {(x["kernel"], x["stage"], x["signature"], x["digest"]) for x in json.loads(CARD.read_text())}
    strangers = [x for x in offline if (x["kernel"], x["stage"], x["signature"], x["digest"]) not in card]
    assert not strangers, f"compiled offline, never on the H200: {strangers[:4]}"
    # every stage of both kernels was compiled and held against the card's: the canary cannot pass empty
    assert {(x["kernel"], x["stage"]) for x in offline} == {(k, s) for k in KERNELS for s in STAGES}
    assert len(offline) == 15, "abs: one variant; softmax: two (64x64, 4096x4096), each at five stages"
