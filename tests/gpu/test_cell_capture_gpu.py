"""The capture plugins on a real CUDA device: launches counted as they run, record then
replay with zero tuning, sass where the backend disassembles, and the compile-only
driver's TTGIR equal to the device's own for the same target.

Run on the GPU host: ``python -m pytest tests/gpu/test_cell_capture_gpu.py -m gpu -q``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builders"))        # tests/: the cellrun helper
from cellrun import CPU_PLUGINS, CUDA_PLUGINS, kernel_test, manifest_data, plan_cell, read_index, run_cell  # noqa: E402

from campaign.judging.irevidence import fingerprint  # noqa: E402

# The GPU host is an H200 (sm_90): the switch and the offline target are fixed to it, and
# tests/gpu/conftest.py fails the session on any other device rather than skipping.
ARCH = 90
TARGET = f"cuda:{ARCH}"
SWITCH = {"DISABLE_MMA_V3": "1"}

CALLS = """
    dev = {device!r}
    x, y = torch.randn(4096, device=dev), torch.randn(4096, device=dev)
    for _ in range(3):
        out = add(x, y)
    a = torch.randn(512, 512, dtype=torch.float16, device=dev)
    for _ in range(2):
        c = matmul(a, a)
    if {check}:
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
        torch.testing.assert_close(c.float(), a.float() @ a.float(), rtol=2e-2, atol=0.5)
"""


def cuda_manifest() -> dict:
    return manifest_data(backend="cuda", target=TARGET, name=torch.cuda.get_device_name(0))


def calls(device: str) -> str:
    return kernel_test(CALLS.format(device=device, check=device == "cuda"))


def launches(plan) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for row in read_index(plan.cell_dir):
        out.setdefault(row["kernel"], []).append(int(row["launches"]))
    return {kernel: sorted(counts) for kernel, counts in out.items()}


def autotune(plan) -> dict:
    return json.loads((Path(plan.cell_dir) / "autotune.json").read_text())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    plan = plan_cell(tmp_path_factory.mktemp("gpu"), "baseline", policy="measured", plugins=CUDA_PLUGINS,
                     manifest=cuda_manifest())
    run_cell(plan, calls("cuda"))
    return plan


def test_record_measures_every_config_and_counts_real_launches(recorded):
    data = autotune(recorded)
    assert (data["mode"], data["policy"], len(data["entries"]), data["fallbacks"]) == ("record", "measured", 1, [])
    assert data["tuning_runs"] == 3, "each of the matmul's three configs benchmarked once"
    counts = launches(recorded)
    assert counts["add_kernel"] == [3]
    assert len(counts["matmul_kernel"]) == 3 and max(counts["matmul_kernel"]) > 2, "benchmark launches counted"
    for row in read_index(recorded.cell_dir):
        assert row["stages"] == "ttir,ttgir,llir,ptx,sass"
        # nvdisasm names the kernel's code section .text.<name>
        assert f".text.{row['kernel']}" in (Path(recorded.cell_dir) / "ir" / f"{row['hash']}-{row['kernel']}.sass").read_text()
    identity = json.loads((Path(recorded.cell_dir) / "run_identity.json").read_text())
    assert (identity["device_target"], identity["device_name"]) == (TARGET, torch.cuda.get_device_name(0))
    assert identity["device_uuid"] and identity["runtime"] == torch.version.cuda
    assert identity["timer"]["kind"] == "graph" and identity["timer"]["l2_flush"] is False


@pytest.fixture(scope="module")
def replayed(recorded, tmp_path_factory):
    plan = plan_cell(tmp_path_factory.mktemp("gpu"), "candidate", mode="replay", policy="measured",
                     replay_file=Path(recorded.cell_dir) / "autotune.json", env=SWITCH, cell="candidate",
                     plugins=CUDA_PLUGINS, manifest=cuda_manifest())
    run_cell(plan, calls("cuda"))
    return plan


def test_replay_tunes_nothing_and_launches_only_the_calls(recorded, replayed):
    data = autotune(replayed)
    assert (data["tuning_runs"], data["fallbacks"]) == (0, [])
    assert data["entries"] == autotune(recorded)["entries"]
    assert "AUTOTUNE_REPLAY_FALLBACK" not in (Path(replayed.cell_dir) / "run.log").read_text()
    assert launches(replayed) == {"add_kernel": [3], "matmul_kernel": [2]}


def test_offline_compile_gives_the_devices_ttgir(recorded, replayed, tmp_path):
    offline = plan_cell(tmp_path, "offline", mode="replay", policy="first-config",
                        replay_file=Path(recorded.cell_dir) / "autotune.json", env=SWITCH, cell="candidate",
                        plugins=CPU_PLUGINS, manifest=manifest_data(backend="cpu", target=TARGET))
    run_cell(offline, calls("cpu"))
    assert autotune(offline)["tuning_runs"] == 0
    assert fingerprint(Path(offline.cell_dir) / "ir") == fingerprint(Path(replayed.cell_dir) / "ir")


MM_BODY = """
    import flag_gems
    a = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    with flag_gems.use_gems():
        c = torch.mm(a, a)
    torch.testing.assert_close(c.float(), a.float() @ a.float(), rtol=2e-2, atol=1.0)
"""


def _identity(plan) -> dict:
    return json.loads((Path(plan.cell_dir) / "run_identity.json").read_text())


def test_shared_tuner_cache_compiles_less_in_the_second_process_and_isolated_does_not(tmp_path):
    """The trap a shared FlagGems tuner cache sets: the second process finds LibTuner's
    keys in sqlite, benchmarks nothing and compiles only the chosen config, so its IR is not
    the first's. Two processes on one shared cache against two isolated ones, the same
    workload; the identities tell the modes (and the warm start) apart. A warm sqlite still
    records the call's own key, and a replay of the recording tunes nothing."""
    body, manifest = kernel_test(MM_BODY), cuda_manifest()
    shared = tmp_path / "tuner-shared"
    cells = {}
    for name, cache in (("shared-1", shared), ("shared-2", shared), ("isolated-1", None), ("isolated-2", None)):
        cells[name] = plan_cell(tmp_path, name, policy="measured", plugins=CUDA_PLUGINS, manifest=manifest,
                                shared_tuner_cache=cache)
        run_cell(cells[name], body)
    variants = {name: len(read_index(plan.cell_dir)) for name, plan in cells.items()}
    tuning = {name: autotune(plan)["tuning_runs"] for name, plan in cells.items()}
    print(f"variants compiled {variants}; tuning runs {tuning}")
    assert variants["shared-1"] == variants["isolated-1"] == variants["isolated-2"] > 2
    assert variants["shared-2"] < variants["shared-1"] and tuning["shared-2"] == 0
    assert tuning["shared-1"] == tuning["isolated-1"] == tuning["isolated-2"] > 0
    identities = {name: _identity(plan) for name, plan in cells.items()}
    assert [identities[n]["tuner_cache"] for n in cells] == ["shared", "shared", "isolated", "isolated"]
    at_start = {name: identity["tuner_cache_at_start"]["files"] for name, identity in identities.items()}
    assert at_start["shared-2"] > 0 and at_start["shared-1"] == at_start["isolated-1"] == at_start["isolated-2"] == 0
    libtuned = [e for e in autotune(cells["shared-1"])["entries"] if e["tuner"] == "libtuner"]
    assert libtuned, "flag_gems' mm went through no LibTuner"
    assert [e for e in autotune(cells["shared-2"])["entries"] if e["tuner"] == "libtuner"] == libtuned
    replay = plan_cell(tmp_path, "replay", mode="replay", policy="measured", plugins=CUDA_PLUGINS, manifest=manifest,
                       replay_file=Path(cells["isolated-2"].cell_dir) / "autotune.json", cell="candidate")
    run_cell(replay, body)
    assert (autotune(replay)["tuning_runs"], autotune(replay)["fallbacks"]) == (0, [])
    assert len(read_index(replay.cell_dir)) < variants["isolated-2"]
