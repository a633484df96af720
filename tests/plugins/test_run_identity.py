"""run_identity.json: every key present, read at run time, caliber fields complete."""
from __future__ import annotations

import json
import platform
from pathlib import Path
from types import SimpleNamespace

import torch
import triton
from cellrun import manifest_data, plan_cell, run_cell

from campaign.backends.base import DeviceInfo
from campaign.backends.cuda import CudaBackend
from campaign.contract.manifest import Manifest
from campaign.judging.caliber import CALIBER_FIELDS as GUARD_FIELDS
from campaign.judging.caliber import flatten
from campaign.planning.matrix import cell_terms
from campaign.plugins import run_identity
from campaign.running import cellenv

KEYS = {
    "schema_version", "task_id", "backend", "device_name", "device_uuid", "device_target", "driver", "runtime",
    "torch", "triton", "triton_env", "flag_gems", "python", "platform", "bench_level", "shape_mode",
    "tuner_cache", "tuner_cache_at_start", "tuner_store_at_start", "autotune_mode", "autotune_source", "autotune_policy", "autotune_from", "tuning", "env", "pinned_env", "offline_device",
    "harness_digest", "inherited_env", "timer", "direct_repeat",
}
TIMER_KEYS = {"kind", "warmup_ms", "rep_ms", "return_mode", "direct_repeat", "l2_flush", "max_noise_pct", "min_samples",
              "timeout_s"}
EMPTY_TEST = "def test_nothing():\n    pass\n"


def _identity(plan) -> dict:
    return json.loads((Path(plan.cell_dir) / "run_identity.json").read_text())


def test_cpu_cell_identity_is_complete_and_read_at_run_time(tmp_path):
    baseline = plan_cell(tmp_path, "baseline", plugins=("campaign.plugins.run_identity",))
    candidate = plan_cell(tmp_path, "candidate", env={"DISABLE_MMA_V3": "1"}, mode="replay",
                          replay_file=tmp_path / "unused.json", cell="candidate",
                          plugins=("campaign.plugins.run_identity",))
    run_cell(baseline, EMPTY_TEST)
    run_cell(candidate, EMPTY_TEST)
    base, cand = _identity(baseline), _identity(candidate)
    for identity in (base, cand):
        assert set(identity) == KEYS and set(identity["timer"]) == TIMER_KEYS
        assert set(run_identity.CALIBER_FIELDS) <= set(identity)
    assert base["timer"] == dict.fromkeys(TIMER_KEYS) | {"kind": "none"}, "cpu times nothing"
    assert (base["backend"], base["device_target"], base["device_uuid"], base["runtime"]) == ("cpu", "cuda:90", None, None)
    assert (base["torch"], base["triton"], base["python"]) == (torch.__version__, triton.__version__,
                                                              platform.python_version())
    assert base["flag_gems"] is None, "a builtin workload does not need flag_gems"
    assert base["tuner_cache"] == "isolated" and base["tuner_cache_at_start"] == {"files": 0, "bytes": 0}
    assert base["offline_device"] is None, "a builtin workload runs no FlagGems: no shim answered for the card"
    # cpu for cuda:90: FlagGems' vendor is that card's (`campaign.plugins.flaggems_offline`)
    assert base["pinned_env"] == {**cellenv.PINNED, "GEMS_VENDOR": "nvidia"} and base["harness_digest"] == "0" * 64
    # The switch reaches Triton's cache key in the candidate only, normalised as Triton does.
    assert base["triton_env"] == {"TRITON_DEFAULT_FP_FUSION": "true"}
    assert cand["triton_env"] == {"DISABLE_MMA_V3": "true", "TRITON_DEFAULT_FP_FUSION": "true"}
    assert (cand["env"], cand["autotune_mode"], cand["autotune_source"]) == (
        {"DISABLE_MMA_V3": "1"}, "replay", "matmul/r1/baseline")
    # Cells that differ only by design agree on the caliber.
    assert flatten(base) == flatten(cand)


def test_caliber_fields_are_the_guards_and_leave_design_differences_out():
    assert run_identity.CALIBER_FIELDS is GUARD_FIELDS
    for differs_by_design in ("env", "triton_env", "autotune_mode", "autotune_source", "task_id"):
        assert differs_by_design not in run_identity.CALIBER_FIELDS


def test_timer_states_l2_flush_per_kind():
    def timer(kind, repeat=None):
        return Manifest.model_validate(manifest_data(backend="cuda", name="H200") | {
            "timer": {"kind": kind, "direct_repeat": repeat}}).timer

    assert run_identity.timer_section(timer("event"), executes=True)["l2_flush"] is True
    assert run_identity.timer_section(timer("graph"), executes=True)["l2_flush"] is False
    direct = run_identity.timer_section(timer("direct", 5), executes=True)
    assert direct == {"kind": "direct", "warmup_ms": 25.0, "rep_ms": 100.0, "return_mode": "median",
                      "direct_repeat": 5, "l2_flush": True, "max_noise_pct": None, "min_samples": None,
                      "timeout_s": None}
    assert run_identity.timer_section(timer("event"), executes=False)["kind"] == "none"


def test_executing_backend_reports_the_current_device_as_the_backend_enumerates_it(tmp_path):
    devices = [DeviceInfo(0, "NVIDIA H200", "GPU-aaaa", "cuda:90", "570.124.06"),
               DeviceInfo(1, "NVIDIA H200", "GPU-bbbb", "cuda:90", "570.124.06")]
    real = CudaBackend(discover=lambda: devices)
    backend = SimpleNamespace(name="cuda", capabilities=real.capabilities, enumerate_devices=real.enumerate_devices,
                              device_interface=lambda: SimpleNamespace(current_device=lambda: 1))
    manifest = Manifest.model_validate(manifest_data(backend="cuda", name="NVIDIA H200"))
    plan = plan_cell(tmp_path, "cell")
    identity = run_identity.identity(SimpleNamespace(plan=plan, terms=cell_terms(manifest), backend=backend))
    assert (identity["device_name"], identity["device_uuid"], identity["device_target"], identity["driver"]) == (
        "NVIDIA H200", "GPU-bbbb", "cuda:90", "570.124.06")
    assert identity["runtime"] == torch.version.cuda
    assert identity["timer"]["kind"] == "graph" and identity["timer"]["l2_flush"] is False


def test_a_shared_tuner_cache_is_named_and_its_warm_start_counted(tmp_path):
    shared = tmp_path / "tuner-shared"
    (shared / "sub").mkdir(parents=True)
    (shared / "TunedConfig.db").write_bytes(b"x" * 100)
    (shared / "sub" / "more.db").write_bytes(b"y" * 20)
    plan = plan_cell(tmp_path, "warm", plugins=("campaign.plugins.run_identity",), shared_tuner_cache=shared)
    run_cell(plan, EMPTY_TEST)
    identity = _identity(plan)
    assert (identity["tuner_cache"], identity["tuner_cache_at_start"]) == ("shared", {"files": 2, "bytes": 120})
    assert "tuner_cache_at_start" not in run_identity.CALIBER_FIELDS, "a warm start is news, not a caliber"


def test_an_inherited_pythonpath_is_recorded(tmp_path):
    plan = plan_cell(tmp_path, "baseline", plugins=("campaign.plugins.run_identity",))
    extra = tmp_path / "site-extra"
    extra.mkdir()
    import os
    inherited = os.pathsep.join(filter(None, [str(extra), os.environ.get("PYTHONPATH")]))
    run_cell(plan, EMPTY_TEST, extra_env={"PYTHONPATH": inherited})
    identity = _identity(plan)
    assert identity["inherited_env"]["PYTHONPATH"] == inherited
    assert "inherited_env" not in run_identity.CALIBER_FIELDS, "paths differ per machine: shown, not compared"
