"""Preflight checks as pure functions over gathered facts; device discovery is the only thing replaced."""
from __future__ import annotations

import dataclasses
import json

from taskplan import PROJECT_ROOT, write_plan

from campaign.backends import get_backend
from campaign.backends.base import DeviceInfo
from campaign.backends.cuda import CudaBackend
from campaign.backends.plan import plugin_plan
from campaign.contract.manifest import Device, Pin
from campaign.contract.plans import Targets
from campaign.worker import preflight
from campaign.worker.facts import Installed, triton_backend_for

H200 = DeviceInfo(index=0, name="NVIDIA H200", uuid="a1b2c3d4-0000-1111-2222-333344445555", target="cuda:90",
                  driver="570.86.15")
A100 = DeviceInfo(index=1, name="NVIDIA A100-SXM4-80GB", uuid="ffff0000-0000-1111-2222-333344445555",
                  target="cuda:80")
VISIBLE = "CUDA_VISIBLE_DEVICES=3"


def _devices(*devices):
    """What torch would enumerate: indices follow the visible order."""
    ordered = [dataclasses.replace(device, index=index) for index, device in enumerate(devices)]
    return CudaBackend(discover=lambda: ordered).enumerate_devices()


def test_check_order_is_the_documented_one():
    assert preflight.CHECKS == ("installed", "interpreter", "targets", "replay_file", "shape_file", "plugin_plan", "device",
                                "versions")


def test_interpreter_names_itself_and_the_broken_import():
    ok, detail = preflight.check_interpreter("/opt/py/bin/python", {"torch": None,
                                                                    "triton": "ModuleNotFoundError: No module named 'triton'"})
    assert not ok
    assert detail == "/opt/py/bin/python cannot import triton: ModuleNotFoundError: No module named 'triton'"
    assert preflight.check_interpreter("/opt/py/bin/python", {"torch": None, "triton": None}) == (
        True, "/opt/py/bin/python imports torch, triton")


def test_flag_gems_is_imported_only_for_flaggems_workloads():
    assert preflight.needed_modules("builtin") == ("torch", "triton")
    assert preflight.needed_modules("flaggems") == ("torch", "triton", "flag_gems")


def test_targets_are_resolved_by_reading():
    good = Targets(benchmark="ops/workloads/demo/bench_demo.py::test_bench_add",
                   correctness="ops/workloads/demo/test_demo.py", correctness_k="float16")
    assert preflight.check_targets(PROJECT_ROOT, good)[0]
    bad = Targets(benchmark="ops/workloads/demo/bench_demo.py::test_bench_nothing",
                  correctness="ops/workloads/demo/test_demo.py",
                  correctness_node_ids=("ops/workloads/demo/test_demo.py::test_add[1-dtype0]",
                                        "ops/workloads/demo/missing.py::test_x"))
    ok, detail = preflight.check_targets(PROJECT_ROOT, bad)
    assert not ok
    assert "no function test_bench_nothing" in detail and "missing.py: no such file" in detail


def test_replay_needs_a_recording(tmp_path):
    replay = {"autotune": {"mode": "replay", "policy": "first-config", "source": "add/r1/baseline"}}
    assert preflight.check_replay_file(write_plan(tmp_path / "a", task=replay)) == (
        False, "autotune mode is replay but the plan names no replay_file")
    missing = tmp_path / "nowhere" / "autotune.json"
    ok, detail = preflight.check_replay_file(write_plan(tmp_path / "b", task=replay, replay_file=str(missing)))
    assert not ok and detail == f"{missing}: no such file"
    injected = tmp_path / "autotune.json"
    injected.write_text(json.dumps({"schema_version": 1, "mode": "replay", "policy": "first-config",
                                    "entries": []}), encoding="utf-8")
    ok, detail = preflight.check_replay_file(write_plan(tmp_path / "c", task=replay, replay_file=str(injected)))
    assert not ok and "is a replay file, not a recording" in detail
    assert preflight.check_replay_file(write_plan(tmp_path / "d")) == (True, "records (nothing to replay)")


def test_shape_file_must_hold_the_op_and_every_narrowed_shape():
    ok, detail = preflight.check_shape_file(PROJECT_ROOT, "builtin", "core", "add", None)
    assert ok and detail.endswith("add: 2 of 2 shapes")
    ok, detail = preflight.check_shape_file(PROJECT_ROOT, "builtin", "core", "cumsum", None)
    assert not ok and detail.endswith("no shapes for op cumsum")
    ok, detail = preflight.check_shape_file(PROJECT_ROOT, "builtin", "core", "add", ("7x7",))
    assert not ok and "shape 7x7 is not in the op's set" in detail
    ok, detail = preflight.check_shape_file(PROJECT_ROOT, "builtin", "huge", "add", None)
    assert not ok and detail.endswith("huge.yaml: no such file")


def test_plugin_plan_must_be_the_derived_one_and_importable():
    derived = plugin_plan(get_backend("cpu"))
    assert preflight.check_plugin_plan((), derived, ()) == (False, "the plan names no plugins")
    ok, detail = preflight.check_plugin_plan(derived[1:], derived, ())
    assert not ok and "is not the backend's derived plan" in detail
    ok, detail = preflight.check_plugin_plan(derived, derived, ("campaign.plugins.timing",))
    assert not ok and detail == "no such module: campaign.plugins.timing"
    assert preflight.check_plugin_plan(derived, derived, ())[0]


def test_device_matches_by_uuid_in_either_spelling():
    device = Device(backend="cuda", name="NVIDIA H200", uuid="GPU-A1B2C3D4-0000-1111-2222-333344445555",
                    target="cuda:90")
    ok, detail = preflight.check_device(device, _devices(H200, A100), VISIBLE)
    assert ok
    assert detail == ("device 0: NVIDIA H200 a1b2c3d4-0000-1111-2222-333344445555 cuda:90 driver 570.86.15 "
                      "(CUDA_VISIBLE_DEVICES=3)")


def test_device_matches_by_name_alone():
    assert preflight.check_device(Device(backend="cuda", name="NVIDIA H200", target="cuda:90"),
                                  _devices(H200), VISIBLE)[0]


def test_another_device_is_refused_naming_what_is_visible():
    device = Device(backend="cuda", name="NVIDIA H200", uuid="a1b2c3d4-0000-1111-2222-333344445555",
                    target="cuda:90")
    ok, detail = preflight.check_device(device, _devices(A100, H200), VISIBLE)
    assert not ok
    assert detail.startswith("device 0 is not the manifest's device: name 'NVIDIA A100-SXM4-80GB' != 'NVIDIA H200', "
                             "uuid 'ffff0000-0000-1111-2222-333344445555' != 'a1b2c3d4-0000-1111-2222-333344445555', "
                             "target cuda:80 != cuda:90")
    assert "1: NVIDIA H200" in detail and VISIBLE in detail


def test_no_visible_device_is_refused():
    ok, detail = preflight.check_device(Device(backend="cuda", name="NVIDIA H200", target="cuda:90"), _devices(),
                                        "CUDA_VISIBLE_DEVICES=(unset)")
    assert (ok, detail) == (False, "no cuda device visible (CUDA_VISIBLE_DEVICES=(unset))")


def test_cpu_target_must_be_compilable_by_an_installed_triton_backend():
    assert triton_backend_for("cuda:90") == "nvidia"
    assert triton_backend_for("musa:31") is None
    assert preflight.check_compile_target("cuda:90", "nvidia") == (
        True, "compile-only target cuda:90 via Triton's nvidia backend")
    assert preflight.check_compile_target("musa:31", None) == (
        False, "no installed Triton backend compiles target musa:31")


def _installed(version, commit=None, name="triton"):
    return Installed(name=name, version=version, commit=commit, location=None)


def test_versions_refuse_a_pin_mismatch():
    ok, detail = preflight.check_versions({"triton": Pin(version="3.5.1")}, {"triton": _installed("3.6.0")})
    assert (ok, detail) == (False, "triton pinned 3.5.1, installed 3.6.0")


def test_a_pin_without_a_local_label_matches_any_local_build():
    assert preflight.check_versions({"torch": Pin(version="2.13.0")}, {"torch": _installed("2.13.0+cpu")})[0]
    ok, detail = preflight.check_versions({"torch": Pin(version="2.11.0+cu130")}, {"torch": _installed("2.11.0+cpu")})
    assert not ok and detail == "torch pinned 2.11.0+cu130, installed 2.11.0+cpu"


def test_versions_check_commits_where_exposed_and_list_the_rest():
    installed = {"triton": _installed("3.6.0", "0123456789abcdef0123456789abcdef01234567"),
                 "torch": _installed("2.13.0+cpu", None, "torch"), "flag_gems": _installed(None, None, "flag_gems")}
    ok, detail = preflight.check_versions(
        {"triton": Pin(version="3.6.0", commit="0123456"), "torch": Pin(commit="abcdef0"), "flag_gems": None}, installed)
    assert ok
    assert detail == ("triton 3.6.0; triton commit 0123456789ab; torch commit abcdef0 not checked "
                      "(the package exposes none); flag_gems not pinned (have none)")
    ok, detail = preflight.check_versions({"triton": Pin(commit="fedcba9")}, installed)
    assert (ok, detail) == (False, "triton pinned commit fedcba9, installed 0123456789abcdef0123456789abcdef01234567")


def test_a_pinned_package_that_is_absent_is_refused():
    ok, detail = preflight.check_versions({"flag_gems": Pin(version="5.0.2")},
                                          {"flag_gems": _installed(None, None, "flag_gems")})
    assert (ok, detail) == (False, "flag_gems pinned 5.0.2, not installed")


def test_run_stops_at_the_first_failure_and_reports_every_check(tmp_path):
    plan = write_plan(tmp_path, task={"targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_gone",
                                                  "correctness": "ops/workloads/demo/test_demo.py"}})
    said = []
    result = preflight.run(plan, get_backend("cpu"), {}, said.append)
    assert not result.ok and result.failed_check == "targets"
    assert [name for name, _, _ in result.checks] == ["installed", "interpreter", "targets"]
    assert said[-1] == ("preflight targets FAILED: ops/workloads/demo/bench_demo.py: no function test_bench_gone; it "
                        "collects test_bench_add, test_bench_softmax, test_bench_row_sum, test_bench_matmul (4 nodes); "
                        "did you mean test_bench_add, test_bench_softmax, test_bench_row_sum?")
