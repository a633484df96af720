""""Did you mean": an unknown manifest key names its close ones among the keys the models allow
there, and an op not in the inventory names its close ones; through the real CLI."""
from __future__ import annotations

from pathlib import Path

import runroots

from campaign.contract.manifest import Manifest
from campaign.contract.suggest import did_you_mean, keys_at

TYPOS = {"    candidate: {DISABLE_MMA_V3: \"1\"}": "    candidat: {DISABLE_MMA_V3: \"1\"}",
         "  alternate_order: true": "  alternate_ordr: true",
         "  timeout_s: 120": "  timout_s: 120"}


def test_the_keys_at_a_place_come_from_the_models():
    assert {"baseline", "candidate", "control"} <= keys_at(Manifest, ("switch", "cells"))
    assert "timeout_s" in keys_at(Manifest, ("defaults",))
    assert {"name", "op", "dtypes"} <= keys_at(Manifest, ("workloads", 0))
    assert did_you_mean("dtyps", keys_at(Manifest, ("workloads", 0))) == "; did you mean dtypes?"
    assert did_you_mean("zzz", ("dtypes", "shapes")) == ""


def test_validate_names_the_close_key_cell_and_op(tmp_path: Path, cli):
    path = runroots.manifest(tmp_path, ["  - {name: add, op: ad, dtyps: [float16]}\n"])
    text = path.read_text(encoding="utf-8")
    for right, wrong in TYPOS.items():
        assert right in text, right
        text = text.replace(right, wrong)
    path.write_text(text, encoding="utf-8")
    done = cli("validate", path)
    assert done.returncode == 2, done.stderr
    unknown = "unknown key (not part of the manifest format); did you mean"
    assert f"switch -> cells -> candidat: {unknown} candidate?" in done.stderr
    assert f"rounds -> alternate_ordr: {unknown} alternate_order?" in done.stderr
    assert f"defaults -> timout_s: {unknown} timeout_s?" in done.stderr
    assert f"workloads -> 0 -> dtyps: {unknown} dtypes?" in done.stderr
    fixed = path.read_text(encoding="utf-8")
    for right, wrong in TYPOS.items():
        fixed = fixed.replace(wrong, right)
    path.write_text(fixed.replace("dtyps", "dtypes"), encoding="utf-8")
    done = cli("validate", path)
    assert done.returncode == 2, done.stderr
    assert "workloads -> 0 -> op: ad (builtin) is not in ops/inventory.csv; did you mean add?" in done.stderr
