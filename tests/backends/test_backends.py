"""Backends: the plan derived from capabilities, capture wording on recorded strings,
device discovery replaced only where a device would be needed."""
from __future__ import annotations

import dataclasses
import typing
from types import SimpleNamespace

import pytest

from campaign.backends import BACKENDS, get_backend, visibility_variables
from campaign.backends.base import Backend, Capabilities, DeviceInfo
from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend, torch_cuda_devices
from campaign.backends.musa import MusaBackend, torch_musa_devices
from campaign.backends.plan import COMMON, COMPILE_ONLY, OUTCOMES, plugin_plan
from campaign.contract.timers import deny_key

# What newer torch appends to every CUDA error (the trap: it mentions device-side assertions).
DSA_TAIL = ("\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_backend_answers_the_whole_protocol(name):
    backend = get_backend(name)
    for attribute in typing.get_type_hints(Backend):
        assert hasattr(backend, attribute), f"{name} lacks {attribute}"
    assert backend.name == name
    assert isinstance(backend.capabilities, Capabilities)


def test_unknown_backend_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown backend 'hip'; known: cpu, cuda, musa, rocm"):
        get_backend("hip")


def test_plan_puts_vendor_compat_first_and_only_on_its_backend():
    assert plugin_plan(get_backend("musa"))[0] == "campaign.plugins.musa_compat"
    for name in ("cuda", "cpu"):
        assert not any("musa" in plugin for plugin in plugin_plan(get_backend(name)))


def test_plan_runs_compile_only_exactly_where_nothing_executes():
    # the offline FlagGems shim first: it answers torch.cuda before any conftest imports flag_gems
    assert plugin_plan(get_backend("cpu")) == ("campaign.plugins.flaggems_offline", COMPILE_ONLY, *COMMON)
    assert "campaign.plugins.flaggems_offline" not in plugin_plan(get_backend("cuda"))
    assert COMPILE_ONLY not in plugin_plan(get_backend("cuda"))
    assert COMPILE_ONLY not in plugin_plan(get_backend("musa"))


def test_plan_follows_capabilities_not_the_backend_name():
    # a cuda backend declared compile-only with a compat plugin: the plan must follow the declaration
    odd = dataclasses.replace(CudaBackend(), compat_plugins=("campaign.plugins.vendor_x",),
                              capabilities=Capabilities(executes=False, graph_capture=False, telemetry=None,
                                                        disassembler=None))
    assert plugin_plan(odd) == ("campaign.plugins.vendor_x", COMPILE_ONLY, *COMMON)


def test_plan_order_of_the_common_plugins_is_pinned():
    assert COMMON == ("campaign.plugins.run_identity", "campaign.plugins.seeds", "campaign.plugins.ir_capture", "campaign.plugins.autotune",
                      "campaign.plugins.timing", "campaign.plugins.dobench", "campaign.plugins.flaggems_bench",
                      "campaign.plugins.outcomes")
    for name in BACKENDS:
        assert plugin_plan(get_backend(name))[-1] == OUTCOMES


def test_capabilities_per_backend():
    cuda, musa, cpu = get_backend("cuda"), get_backend("musa"), get_backend("cpu")
    assert (cuda.capabilities.executes, cuda.capabilities.graph_capture, cuda.capabilities.telemetry) == (True, True, "nvml")
    assert (musa.capabilities.executes, musa.capabilities.graph_capture, musa.capabilities.telemetry) == (
        True, True, "mthreads-gmi")
    assert (cpu.capabilities.executes, cpu.capabilities.graph_capture, cpu.capabilities.telemetry) == (False, False, None)
    assert (cuda.visibility_variable, musa.visibility_variable, cpu.visibility_variable) == (
        "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES", None)
    assert (cuda.torch_device, musa.torch_device, cpu.torch_device) == ("cuda", "musa", "cpu")
    assert visibility_variables() == ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES")


@pytest.mark.parametrize("text, verdict", [
    # capture refusals: ordinary, they fall back -- even with the DSA tail appended
    ("CUDA error: operation not permitted when stream is capturing" + DSA_TAIL, "fallback"),
    ("CUDA error: operation failed due to a previous error during capture" + DSA_TAIL, "fallback"),
    ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture. If you need this call to be "
     "captured, please file an issue. Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive", "fallback"),
    ("CUDA error: operation would make the legacy stream depend on a capturing blocking stream" + DSA_TAIL, "fallback"),
    # device faults: a fallback latency would report a broken kernel as a measurement
    ("CUDA error: an illegal memory access was encountered" + DSA_TAIL, "fatal"),
    ("CUDA error: misaligned address" + DSA_TAIL, "fatal"),
    ("CUDA error: device-side assert triggered" + DSA_TAIL, "fatal"),
    ("CUDA error: unspecified launch failure" + DSA_TAIL, "fatal"),
    ("RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered", "fatal"),
])
def test_cuda_capture_wording(text, verdict):
    assert get_backend("cuda").classify_capture_failure(text) == verdict


def test_the_dsa_tail_alone_is_not_a_device_fault():
    assert get_backend("cuda").classify_capture_failure(DSA_TAIL) == "fallback"


@pytest.mark.parametrize("text, verdict", [
    # recorded on an S5000: perf_sort, dropout/rand, unique2 before it was denied
    ("MUSA error: operation not permitted when stream is capturing", "fallback"),
    ("RuntimeError: MUSAGeneratorImpl::current_seed is not callable during capture", "fallback"),
    ("RuntimeError: MUSA error: unknown error", "poisoned"),
])
def test_musa_capture_wording(text, verdict):
    assert get_backend("musa").classify_capture_failure(text) == verdict


def test_musa_poisoning_wording_is_musas_own():
    assert get_backend("cuda").classify_capture_failure("CUDA error: unknown error" + DSA_TAIL) == "fallback"


def test_cpu_has_no_capture_to_classify():
    with pytest.raises(RuntimeError, match="captures nothing"):
        get_backend("cpu").classify_capture_failure("anything")


def test_capture_deny_is_keyed_by_function_name_minus_test():
    deny = get_backend("musa").capture_deny
    assert deny == frozenset({"unique2"})
    assert deny_key("test_unique2") in deny
    assert deny_key("test_perf_sort") == "perf_sort"
    # the file-name key ("unique", from test_unique.py) is the trap that failed open
    assert deny_key("test_unique") not in deny
    assert get_backend("cuda").capture_deny == frozenset()


def test_cuda_discovery_finds_nothing_without_a_gpu():
    import torch

    assert not torch.cuda.is_available(), "this test describes a machine without a GPU"
    assert torch_cuda_devices() == []


def test_cuda_and_rocm_discovery_read_each_device_through_torch_cuda(monkeypatch):
    # device discovery mocked (torch.cuda's enumeration), as on a two-card host of each vendor
    import torch

    from campaign.backends import rocm

    cards = [SimpleNamespace(name="NVIDIA H200", uuid="b179ba2c", major=9, minor=0, gcnArchName="gfx942:sramecc+:xnack-"),
             SimpleNamespace(name="NVIDIA H200", uuid=None, major=9, minor=0, gcnArchName="gfx942")]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(cards))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: cards[i])
    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    monkeypatch.setattr(rocm, "amdsmi_driver_version", lambda: "6.8.5")
    cuda_found, rocm_found = torch_cuda_devices(), rocm.torch_rocm_devices()
    assert [(d.index, d.uuid, d.target) for d in cuda_found] == [(0, "b179ba2c", "cuda:90"), (1, None, "cuda:90")]
    assert [(d.index, d.uuid, d.target, d.driver) for d in rocm_found] == [
        (0, "b179ba2c", "hip:gfx942", "6.8.5"), (1, None, "hip:gfx942", "6.8.5")]


def test_musa_discovery_finds_nothing_without_torch_musa():
    import importlib.util

    assert importlib.util.find_spec("torch_musa") is None, "this test describes a machine without torch_musa"
    assert torch_musa_devices() == []


def test_enumeration_goes_through_the_replaceable_discovery():
    h200 = DeviceInfo(index=0, name="NVIDIA H200", uuid="GPU-1234", target="cuda:90", driver="570.86.15")
    assert CudaBackend(discover=lambda: [h200]).enumerate_devices() == [h200]
    s5000 = DeviceInfo(index=0, name="MTT S5000", uuid=None, target="musa:31")
    assert MusaBackend(discover=lambda: [s5000]).enumerate_devices() == [s5000]
    assert CpuBackend().enumerate_devices() == []
    assert CpuBackend().device_interface() is None and CpuBackend().graph_class() is None
