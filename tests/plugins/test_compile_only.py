"""The compile-only driver: real sm_90 compilation of the demo kernels, nothing executed."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from cellrun import kernel_test, manifest_data, plan_cell, run_cell
from triton.backends.compiler import GPUTarget
from triton.runtime.driver import driver as active_driver

from campaign.contract.manifest import Manifest
from campaign.planning.matrix import cell_terms
from campaign.plugins import compile_only
from campaign.worker.context import CellLog


def test_target_parsed_from_manifest_spelling():
    assert compile_only.parse_target("cuda:90") == GPUTarget("cuda", 90, 32)
    with pytest.raises(ValueError, match="<family>:<arch>"):
        compile_only.parse_target("sm_90")


def test_unknown_arch_and_unknown_backend_are_refused():
    with pytest.raises(ValueError, match="no device properties known for cuda:75"):
        compile_only.build_driver("cuda:75")
    with pytest.raises(RuntimeError, match="compatible backends"):
        compile_only.build_driver("musa:31")          # no installed Triton backend compiles musa


def test_driver_reports_h200_and_refuses_to_time():
    driver = compile_only.build_driver("cuda:90")
    assert driver.get_current_target() == GPUTarget("cuda", 90, 32)
    props = driver.utils.get_device_properties(0)
    assert (props["max_shared_mem"], props["multiprocessor_count"], props["warpSize"]) == (232448, 132, 32)
    first = driver.utils.load_binary("k", b"", 0, 0)
    second = driver.utils.load_binary("k", b"", 0, 0)
    assert len({first[0], first[1], second[0], second[1]}) == 4, "handles must be unique to join launches"
    with pytest.raises(compile_only.NothingToTime):
        driver.get_benchmarker()(lambda: None, quantiles=(0.5,))


def test_plugin_installs_at_configure_and_restores_at_unconfigure(tmp_path):
    ctx = SimpleNamespace(terms=cell_terms(Manifest.model_validate(manifest_data())), log=CellLog(tmp_path / "run.log"))
    before = active_driver._active
    plugin = compile_only.make(ctx)
    plugin.pytest_configure(None)
    try:
        assert active_driver._active is plugin.driver
    finally:
        plugin.pytest_unconfigure(None)
    assert active_driver._active is before
    assert "compiles for cuda:90" in (tmp_path / "run.log").read_text()


def test_bad_target_is_a_usage_error(tmp_path):
    data = manifest_data(target="cuda:75")
    ctx = SimpleNamespace(terms=cell_terms(Manifest.model_validate(data)), log=CellLog(tmp_path / "run.log"))
    with pytest.raises(pytest.UsageError, match="compile-only driver: no device properties known for cuda:75"):
        compile_only.make(ctx).pytest_configure(None)


def test_launches_compile_sm90_code_and_execute_nothing(tmp_path):
    plan = plan_cell(tmp_path, "cell", plugins=("campaign.plugins.compile_only", "campaign.plugins.ir_capture"))
    run_cell(plan, kernel_test("""
        from triton.runtime import driver
        from triton.runtime.errors import OutOfResources
        import demo_kernels
        x, y = torch.randn(4096), torch.randn(4096)
        out = torch.full((4096,), 7.0)
        add(x, y, out=out)
        add(x, y, out=out)
        assert (out == 7.0).all(), "the compile-only driver ran a kernel"
        assert driver.active.launches == 2
        a = torch.randn(512, 512, dtype=torch.float16)
        # 4 stages of 256x128 + 128x256 fp16 tiles need 512 KiB: more than an H200 has.
        try:
            demo_kernels.matmul_kernel.fn[(1, 1)](a, a, a, 512, 512, 512, 512, 1, 512, 1, 512, 1,
                                                 BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_stages=4, num_warps=8)
        except OutOfResources as exc:
            assert "232448" in str(exc)
        else:
            raise AssertionError("an sm_90 shared-memory overflow was not refused")
    """))
    ir = Path(plan.cell_dir) / "ir"
    (ttgir,) = ir.glob("*-add_kernel.ttgir")
    assert 'ttg.target = "cuda:90"' in ttgir.read_text()
    (ptx,) = ir.glob("*-add_kernel.ptx")
    assert ".target sm_90a" in ptx.read_text()
    meta = json.loads(next(Path(plan.triton_cache_dir).rglob("add_kernel.json")).read_text())
    assert meta["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert meta["num_warps"] == 4 and meta["num_stages"] == 3, "defaults must be the GPU's defaults"
    assert "compile-only: 2 launches counted, none executed" in (Path(plan.cell_dir) / "run.log").read_text()
