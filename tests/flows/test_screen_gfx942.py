"""An AMD target without AMD hardware: `campaign screen` on manifests/demo-cpu-gfx942.yaml (its canary
flag dropped, so that both workloads share a process a side), the cpu backend compiling for ``hip:gfx942`` (MI300, wavefront 64) through the compile-only driver,
as a real CLI subprocess. The stages are the hip family's, the switch's effect is what a real
compile measured (AMDGCN_USE_BUFFER_OPS moves every demo kernel), and the control, which names
the default, compiles to the baseline's IR."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli

from campaign.contract import canonical
from campaign.contract.platforms import stages_of
from campaign.judging import screening, screentable

MANIFEST = PROJECT_ROOT / "manifests" / "demo-cpu-gfx942.yaml"


def _index(cell: Path) -> list[dict[str, str]]:
    header, *lines = (cell / "ir" / "index.tsv").read_text(encoding="utf-8").splitlines()
    return [dict(zip(header.split("\t"), line.split("\t"))) for line in lines]


@pytest.mark.slow
def test_screen_for_mi300_captures_the_hip_stages_and_judges_the_switch(tmp_path: Path):
    # The manifest as shipped but for its canary: the two workloads then share one worker process a
    # side (a canary runs alone: 10 processes instead of 5); the target, switch and cells are its own.
    text = MANIFEST.read_text(encoding="utf-8")
    assert text.count(", canary: true") == 1
    manifest = tmp_path / MANIFEST.name
    manifest.write_text(text.replace(", canary: true", ""), encoding="utf-8")
    done = run_cli("screen", manifest, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, "--grace", "1")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1]).parent
    assert (root / "receipt.json").is_file()
    assert canonical.read_json(root / "matrix.json")["terms"]["device"]["target"] == "hip:gfx942"

    table = {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}
    assert {name: row["verdict"] for name, row in table.items()} == {
        "row_sum": screening.IR_CHANGED, "softmax": screening.IR_CHANGED}
    for row in table.values():
        assert row["device_target"] == "hip:gfx942"
        # judged on the IR pass's pair: round 1 (the control's only round) never runs offline
        assert row["fingerprint_control"] == "" and "" != row["fingerprint_baseline"] != row["fingerprint_candidate"]

    for cell in ("baseline", "candidate"):
        variants = _index(root / "cells" / "softmax" / "r0" / cell)
        assert variants and all(v["kernel"] == "softmax_kernel" for v in variants)
        assert {v["stages"] for v in variants} == {",".join(stages_of("hip:gfx942"))} == {"ttir,ttgir,llir,amdgcn"}
        amdgcn = next((root / "cells" / "softmax" / "r0" / cell / "ir").glob("*.amdgcn")).read_text()
        assert ".amdgcn_target" in amdgcn and "gfx942" in amdgcn
