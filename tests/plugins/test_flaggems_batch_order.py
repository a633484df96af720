"""A batch's earlier workload does not reach a later one's code: FlagGems' shared codegen config is put
back at each session's start (`campaign.plugins.flaggems_bench.fresh_codegen_configs`).

FlagGems 5.0.2 turns block pointers off for the rest of the process the first time a pointwise input
has more than 2**31-1 elements. In the suite screen on 16 lanes, clamp's baseline ran after add (its
complex64 2**30 shape) in one batch process and compiled ttgir 7e9965215661 where the card and the
candidate compiled 3c119880bd06 (`receipts/fidelity/cpu-suite-prints.json.gz`, `gpu-prints.json.gz`).
A real compile through the cpu backend, in its own process, flag_gems 5.0.2 from ``.venv/flaggems``
(as the canary: without it this fails, naming the install).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SCRIPT = HERE / "fixtures" / "flaggems_batch_order.py"
SITE = Path(sys.prefix) / "flaggems"
CARD_CLAMP = "3c119880bd06d91e43214ed63f16da68ff052ef90c206512450f5cab3940bf45"   # the H200's, float16 64x64
LEAKED_CLAMP = "7e99652156618849ec135d59fdf67ebd0e49fb4ff30303b17d23780b6397b219"  # the 16-lane baseline's


def _clamp_variants(tmp_path: Path, *flags: str) -> list[str]:
    assert (SITE / "flag_gems" / "__init__.py").is_file(), (
        f"flag_gems is not installed in {SITE}: `pip install --no-deps --target {SITE} flag_gems==5.0.2` (what .ci/run does)")
    out = tmp_path / "order.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(out), *flags], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_clamp_after_a_2_31_element_add_compiles_what_it_compiled_before(tmp_path):
    assert _clamp_variants(tmp_path) == [CARD_CLAMP], "the second clamp reuses the first one's code: the card's"


def test_without_the_reset_the_add_leaks_into_clamp_as_in_the_16_lane_screen(tmp_path):
    # the mechanism itself, so the test above cannot pass because the add stopped reaching the config
    assert sorted(_clamp_variants(tmp_path, "--no-reset")) == sorted([CARD_CLAMP, LEAKED_CLAMP])
