"""The cell environment: an explicit whitelist, the caliber pinned, fresh caches, the cell env on top."""
from __future__ import annotations

import pytest
from taskplan import manifest_data, write_plan

from campaign.contract.manifest import Manifest
from campaign.running.cellenv import PINNED, cell_env, pinned_env

PARENT = {
    "PATH": "/usr/bin:/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "PYTHONPATH": "/opt/triton/python",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "CUDA_HOME": "/usr/local/cuda", "TRITON_PTXAS_PATH": "/opt/ptxas",
    "CUDA_VISIBLE_DEVICES": "3", "MUSA_VISIBLE_DEVICES": "1",
    # none of these may reach a cell
    "API_TOKEN": "secret", "DISABLE_MMA_V3": "1", "FLAGTREE_RLC_ENHANCE": "1", "USE_FLAGTUNE": "1",
    "TRITON_CACHE_DIR": "/shared/triton", "FLAGGEMS_CACHE_DIR": "/shared/flaggems", "TRITON_INTERPRET": "1",
}


def test_pinned_env_sets_every_caliber_setting_explicitly():
    assert pinned_env(Manifest.model_validate(manifest_data())) == {
        "TRITON_DEFAULT_FP_FUSION": "1", "USE_FLAGTUNE": "0", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1",
        "GEMS_VENDOR": "nvidia"}    # the cpu backend compiling for cuda:90 configures FlagGems as that card


def test_flaggems_vendor_is_named_on_accelerators_never_probed():
    cuda = manifest_data(device={"backend": "cuda", "name": "NVIDIA H200", "target": "cuda:90"})
    musa = manifest_data(device={"backend": "musa", "name": "MTT S5000", "target": "musa:31"})
    assert pinned_env(Manifest.model_validate(cuda))["GEMS_VENDOR"] == "nvidia"
    assert pinned_env(Manifest.model_validate(musa))["GEMS_VENDOR"] == "mthreads"
    # cpu: FlagGems is configured as the card of the target's family (`campaign.plugins.flaggems_offline`)
    assert pinned_env(Manifest.model_validate(manifest_data()))["GEMS_VENDOR"] == "nvidia"
    gfx = manifest_data(device={"backend": "cpu", "target": "hip:gfx942"})
    assert "GEMS_VENDOR" not in pinned_env(Manifest.model_validate(gfx))      # no offline shim for hip yet


def test_flagtree_flavor_pins_nothing_invented():
    flagtree = manifest_data(sources={"triton": {"version": "3.6.0"}, "triton_flavor": "flagtree"})
    env = pinned_env(Manifest.model_validate(flagtree))
    assert env == {**PINNED, "GEMS_VENDOR": "nvidia"}
    assert not any(name.startswith("FLAGTREE_") for name in env)


def test_a_parent_variable_off_the_whitelist_does_not_leak(tmp_path):
    env = cell_env(PARENT, write_plan(tmp_path))
    for name in ("API_TOKEN", "DISABLE_MMA_V3", "FLAGTREE_RLC_ENHANCE", "TRITON_INTERPRET"):
        assert name not in env, name
    for name in ("PATH", "HOME", "LANG", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH",
                 "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES"):
        assert env[name] == PARENT[name], name


def test_fresh_cache_dirs_replace_inherited_ones(tmp_path):
    plan = write_plan(tmp_path)
    env = cell_env(PARENT, plan)
    assert env["TRITON_CACHE_DIR"] == plan.triton_cache_dir
    assert env["FLAGGEMS_CACHE_DIR"] == plan.tuner_cache_dir


def test_pinned_values_override_the_parent(tmp_path):
    env = cell_env(PARENT, write_plan(tmp_path))
    assert env["USE_FLAGTUNE"] == "0"
    assert {name: env[name] for name in PINNED} == PINNED


def test_the_cell_env_wins(tmp_path):
    plan = write_plan(tmp_path, task={"cell": "candidate", "id": "add/r1/candidate",
                                      "env": {"DISABLE_MMA_V3": "1", "TRITON_DEFAULT_FP_FUSION": "0"}})
    env = cell_env(PARENT, plan)
    assert env["DISABLE_MMA_V3"] == "1"
    assert env["TRITON_DEFAULT_FP_FUSION"] == "0"


def test_a_cell_env_naming_a_cache_is_refused(tmp_path):
    plan = write_plan(tmp_path, task={"env": {"TRITON_CACHE_DIR": "/shared"}})
    with pytest.raises(ValueError, match="TRITON_CACHE_DIR"):
        cell_env(PARENT, plan)


def test_cell_env_leaves_its_inputs_alone(tmp_path):
    parent = dict(PARENT)
    plan = write_plan(tmp_path, task={"env": {"DISABLE_MMA_V3": "1"}})
    cell_env(parent, plan)
    assert parent == PARENT
    assert plan.task.env == {"DISABLE_MMA_V3": "1"}
