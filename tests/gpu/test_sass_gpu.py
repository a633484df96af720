"""SASS on the device against SASS compiled offline: the cuda backend disassembles every
variant's cubin with nvdisasm, the compile-only backend does when the manifest fingerprints
at sass; the same calls, replaying the same configs, must give the same fingerprint, and an
A/A pair of device cells must too.

Run on the GPU host: ``python -m pytest tests/gpu/test_sass_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builders"))        # tests/: the cellrun helper
from cellrun import CPU_PLUGINS, CUDA_PLUGINS, kernel_test, manifest_data, plan_cell, read_index, run_cell  # noqa: E402

from campaign.judging.irevidence import fingerprint  # noqa: E402

TARGET = "cuda:90"
CALLS = """
    dev = {device!r}
    x, y = torch.randn(4096, device=dev).half(), torch.randn(4096, device=dev).half()
    add(x, y)
    a = torch.randn(512, 512, dtype=torch.float16, device=dev)
    matmul(a, a)
"""


def _manifest(backend: str) -> dict:
    device = {"name": torch.cuda.get_device_name(0)} if backend == "cuda" else {}
    data = manifest_data(backend=backend, target=TARGET, **device)
    data["switch"]["ir_stage"] = "sass"
    return data


def test_offline_sass_is_the_devices_and_device_cells_agree(tmp_path):
    recorded = plan_cell(tmp_path, "record", policy="measured", plugins=CUDA_PLUGINS, manifest=_manifest("cuda"))
    run_cell(recorded, kernel_test(CALLS.format(device="cuda")))
    replay_file = Path(recorded.cell_dir) / "autotune.json"
    irs = {}
    for name, device, plugins, backend in (("device-1", "cuda", CUDA_PLUGINS, "cuda"),
                                           ("device-2", "cuda", CUDA_PLUGINS, "cuda"),
                                           ("offline", "cpu", CPU_PLUGINS, "cpu")):
        plan = plan_cell(tmp_path, name, mode="replay", policy="measured" if backend == "cuda" else "first-config",
                         replay_file=replay_file, cell="control", plugins=plugins, manifest=_manifest(backend))
        run_cell(plan, kernel_test(CALLS.format(device=device)))
        assert {row["stages"] for row in read_index(plan.cell_dir)} == {"ttir,ttgir,llir,ptx,sass"}
        irs[name] = Path(plan.cell_dir) / "ir"
    prints = {name: fingerprint(ir, "sass") for name, ir in irs.items()}
    assert prints["device-1"] is not None
    assert prints["device-1"] == prints["device-2"], "an A/A pair on the device"
    assert prints["offline"] == prints["device-1"], "offline sass differs from the device's"
