"""The rocm backend and the hip target family, off an AMD host: the manifest's rules for them,
the compile-only driver's MI300, device discovery without a ROCm torch, amdsmi named absent
(never a crash) and its readings from a stand-in module."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from conftest import FIXTURES, PROJECT_ROOT

from campaign.backends import get_backend
from campaign.backends.rocm import target_of
from campaign.contract import yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.contract.runroot import RunRoot
from campaign.plugins import compile_only, run_identity
from campaign.running import telemetry

MINIMAL = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text()


def _validate(tmp_path: Path, device: str, stage: str = "ttgir", kind: str = "event") -> Manifest:
    text = (MINIMAL.replace('device: {backend: cpu, target: "cuda:90"}', f"device: {device}")
            .replace("timer: {kind: event}", f"timer: {{kind: {kind}}}")
            .replace("switch:\n", f"switch:\n  ir_stage: {stage}\n"))
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return yamlio.validate(Manifest, path)


def test_a_rocm_device_names_a_hip_target_and_a_cpu_one_may_compile_for_it(tmp_path: Path):
    rocm = _validate(tmp_path, '{backend: rocm, name: AMD Instinct MI300X, target: "hip:gfx942"}', kind="graph")
    assert (rocm.device.backend, rocm.device.target) == ("rocm", "hip:gfx942")
    assert _validate(tmp_path, '{backend: cpu, target: "hip:gfx942"}', stage="amdgcn").switch.ir_stage == "amdgcn"


@pytest.mark.parametrize("device, stage, message", [
    ('{backend: rocm, name: MI300X, target: "cuda:90"}', "ttgir", "device -> target: backend rocm runs hip targets, not cuda:90"),
    ('{backend: cuda, name: H200, target: "hip:gfx942"}', "ttgir", "device -> target: backend cuda runs cuda targets, not hip:gfx942"),
    ('{backend: cpu, target: "hip:gfx942"}', "sass", "switch -> ir_stage: target hip:gfx942 compiles to ttir, ttgir, llir, amdgcn: no sass"),
    ('{backend: cpu, target: "cuda:90"}', "amdgcn", "switch -> ir_stage: target cuda:90 compiles to ttir, ttgir, llir, ptx, sass: no amdgcn"),
    ('{backend: rocm, target: "hip:gfx942"}', "ttgir", "device -> name: a rocm device needs a name and/or uuid"),
])
def test_a_target_outside_the_backend_or_a_stage_outside_the_family_is_refused(tmp_path, device, stage, message):
    with pytest.raises(InputError) as caught:
        _validate(tmp_path, device, stage)
    assert any(message in line for line in caught.value.lines), caught.value.lines


def test_the_compile_only_driver_stands_in_for_an_mi300():
    driver = compile_only.build_driver("hip:gfx942")
    assert (driver.target.backend, driver.target.arch, driver.target.warp_size) == ("hip", "gfx942", 64)
    assert driver.get_device_capability() == (9, 4)
    assert driver.map_python_to_cpp_type("*fp16") == "hipDeviceptr_t"
    assert driver.utils.get_device_properties(0)["warpSize"] == 64


def test_rocm_without_a_rocm_torch_sees_no_device_and_reads_its_row():
    backend = get_backend("rocm")
    assert backend.enumerate_devices() == []        # this torch has no torch.version.hip
    assert (backend.capabilities.telemetry, backend.visibility_variable, backend.torch_device) == (
        "amdsmi", "HIP_VISIBLE_DEVICES", "cuda")
    assert target_of("gfx942:sramecc+:xnack-") == "hip:gfx942"
    assert backend.classify_capture_failure("HIP error: something new") == "fallback"


def test_the_runtime_version_is_the_backends_own():
    fake = types.SimpleNamespace(version=types.SimpleNamespace(cuda=None, hip="6.4.43482", musa=None))
    assert run_identity._runtime_version(fake, "rocm") == "6.4.43482"
    assert run_identity._runtime_version(fake, "cpu") is None


def test_a_root_sealed_with_the_cuda_key_reads_as_runtime():
    from campaign.contract.rootrecords import RunIdentity
    from campaign.judging import caliber

    receipt = PROJECT_ROOT / "receipts" / "h200-aa-event-20261129T084627Z" / "receipt.json"   # sealed before the rename
    sealed = json.loads(receipt.read_text(encoding="utf-8"))["run_identity"]
    assert "cuda" in sealed and "runtime" not in sealed, receipt
    RunIdentity.model_validate(sealed)
    renamed = {("runtime" if key == "cuda" else key): value for key, value in sealed.items()}
    RunIdentity.model_validate(renamed)
    assert caliber.flatten(sealed) == caliber.flatten(renamed) and caliber.flatten(sealed)["runtime"] == sealed["cuda"] is not None
    with pytest.raises(ValueError, match="names the runtime version once"):
        RunIdentity.model_validate(sealed | {"runtime": "13.0"})


def test_amdsmi_absent_is_named_not_raised(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)          # import amdsmi -> ImportError
    with pytest.raises(RuntimeError, match="amdsmi is not installed"):
        telemetry.make_source("amdsmi", None)
    sampler = telemetry.Sampler(RunRoot(tmp_path), lambda: telemetry.make_source("amdsmi", None))
    assert not sampler.start() and "amdsmi is not installed" in sampler.reason


def _fake_amdsmi(failing: frozenset[str] = frozenset()) -> types.SimpleNamespace:
    def answer(name, value):
        def call(handle, *args):
            if name in failing:
                raise OSError(f"{name}: not supported")
            return value
        return call
    clocks = {"GFX": {"clk": 2100}, "MEM": {"clk": 1300}}
    return types.SimpleNamespace(
        amdsmi_init=lambda: None, amdsmi_get_processor_handles=lambda: ["h0", "h1"],
        AmdSmiClkType=types.SimpleNamespace(GFX="GFX", MEM="MEM"),
        AmdSmiTemperatureType=types.SimpleNamespace(HOTSPOT="HOTSPOT"),
        AmdSmiTemperatureMetric=types.SimpleNamespace(CURRENT="CURRENT"),
        amdsmi_get_clock_info=lambda handle, kind: clocks[kind],
        amdsmi_get_temp_metric=answer("temp", 61),
        amdsmi_get_power_info=answer("power", {"current_socket_power": 512}),
        amdsmi_get_gpu_activity=answer("activity", {"gfx_activity": 99}))


def test_amdsmi_readings_become_samples_and_a_missing_metric_is_none():
    source = telemetry.AmdSmiSource(["1"], smi=_fake_amdsmi(frozenset({"power"})))
    sample, = source.read(5.0)
    assert (sample.device, sample.sm_clock_mhz, sample.mem_clock_mhz, sample.temp_c, sample.power_w, sample.util_pct) == (
        "1", 2100.0, 1300.0, 61.0, None, 99.0)
    assert sample.throttle_reasons == ""            # amdsmi gives no reasons here: unknown, never "none"
    with pytest.raises(RuntimeError, match="amdsmi sees 2 devices; cannot sample 7"):
        telemetry.AmdSmiSource(["7"], smi=_fake_amdsmi())
