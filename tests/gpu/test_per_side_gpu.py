"""A tiny ``tuning: per_side`` campaign on a CUDA device: FlagGems addmm (LibTuner) under
DISABLE_MMA_V3, two rounds. Every timed cell tunes for itself on a tuner store of its own and
replays nothing, the caliber holds per_side on every cell with no finding, and the verdict names
exactly the keys whose winners the two sides chose differently.

Run on the GPU host: ``python -m pytest tests/gpu/test_per_side_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

PROJECT = Path(__file__).resolve().parents[2]

MANIFEST = """schema_version: 1
campaign: per-side-gpu
description: each side tunes FlagGems addmm for itself
sources:
  triton: {{version: "3.6.0"}}
  flag_gems: {{version: "5.0.2"}}
device: {{backend: cuda, name: "{name}", target: "cuda:90"}}
switch:
  name: DISABLE_MMA_V3
  cells: {{baseline: {{}}, candidate: {{DISABLE_MMA_V3: "1"}}}}
  ir_stage: ttgir
timer: {{kind: graph, warmup_ms: 25, rep_ms: 100, return_mode: median}}
rounds: {{count: 2, alternate_order: true, later_only_if_ir_changed: false}}
measured_launch_floor: 1
defaults: {{timeout_s: 600, bench_level: core, tuner_cache: isolated, tuning: per_side}}
workloads:
  - {{name: addmm, op: addmm, provider: flaggems, dtypes: [float16], shapes: ["4096x4096x4096"],
      correctness: {{node_ids: ["ops/workloads/flaggems/test_fg_blas.py::test_addmm[mnk3-dtype0]"]}},
      reason: one shape keeps the test short}}
"""


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "campaign", *map(str, args)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=1800)


def _read(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def test_each_side_records_its_own_winners_in_its_own_store(tmp_path):
    from campaign.contract.cellfiles import TunedConfig
    from campaign.judging.choices import config_text
    from campaign.judging.classify import classify_root

    path = tmp_path / "per-side-gpu.yaml"
    path.write_text(MANIFEST.format(name=torch.cuda.get_device_name(0)), encoding="utf-8")
    done = _cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1])
    assert _read(root, "matrix.json")["terms"]["tuning"] == "per_side"
    ran = _cli("run", root, "--scratch-dir", tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    winners, stores = {}, set()
    for r in (1, 2):
        for cell in ("baseline", "candidate"):
            folder = root / "cells" / "addmm" / f"r{r}" / cell
            identity, autotune = _read(folder, "run_identity.json"), _read(folder, "autotune.json")
            assert (identity["tuning"], identity["autotune_mode"], identity["autotune_source"]) == \
                ("per_side", "record", None)
            store = identity["tuner_store_at_start"]
            assert store is None or store["rows"] == 0, f"{folder}: started on winners already in its store"
            assert (autotune["mode"], autotune["policy"], autotune["fallbacks"]) == ("record", "measured", [])
            assert autotune["tuning_runs"] > 0, f"{folder}: this side did not tune for itself"
            assert [e for e in autotune["entries"] if e["tuner"] == "libtuner"], "addmm went through no LibTuner"
            stores.add(_read(folder, "task.json")["tuner_cache_dir"])
            for e in autotune["entries"]:
                config = config_text(TunedConfig.model_validate(e["config"]))
                winners.setdefault((e["kernel"], e["key"]), {}).setdefault(cell, set()).add(config)
    assert len(stores) == 4, "every cell tunes into a tuner store of its own"
    verdicts = classify_root(root)
    assert verdicts["caliber"]["findings"] == [] and verdicts["caliber"]["fields"]["tuning"] == "per_side"
    w = verdicts["workloads"]["addmm"]
    differing = {ident for ident, by_cell in winners.items() if by_cell.get("baseline") != by_cell.get("candidate")}
    assert {(c["kernel"], c["key"]) for c in w.get("chosen", [])} == differing
    assert w["ir"]["reference"] == "baseline" and not (w["timing"] or {}).get("references")
    print(f"addmm per_side: {w['class']} {w['reason']}")
    report = _cli("report", root)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "| tuning | per_side |" in report.stdout

