"""What a switch cell may set: refused at validate, located by file, line, column and key."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from campaign.backends import visibility_variables
from campaign.contract import cellenv_rules, yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.running.cellenv import CACHE_VARIABLES, PINNED

BASE = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text()


def _manifest(tmp_path: Path, candidate: str, switch: str = "DISABLE_MMA_V3", control: str = "") -> Path:
    text = BASE.replace("  name: DISABLE_MMA_V3", f"  name: {switch}").replace(
        '    candidate: {DISABLE_MMA_V3: "1"}', f"    candidate: {{{candidate}}}" + (f"\n    control: {{{control}}}" if control else ""))
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def _lines(path: Path) -> list[str]:
    with pytest.raises(InputError) as caught:
        yamlio.validate(Manifest, path)
    return caught.value.lines


REFUSED = ["LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PATH", "BASH_ENV", "ENV",
           "TRITON_KERNEL_DUMP", "TRITON_DUMP_DIR", "MLIR_ENABLE_DUMP", "TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR",
           "TORCHINDUCTOR_CACHE_DIR", "TRITON_HOME", "HOME", "XDG_CACHE_HOME", "CUDA_VISIBLE_DEVICES",
           "CUDA_DEVICE_ORDER", "ld_preload"]


@pytest.mark.parametrize("name", REFUSED)
def test_loader_interpreter_dump_cache_and_device_variables_are_refused(tmp_path: Path, name: str):
    path = _manifest(tmp_path, f'DISABLE_MMA_V3: "1", {name}: x')
    lines = _lines(path)
    assert len(lines) == 1 and lines[0].startswith(f"{path}:11:38: switch -> cells -> candidate -> {name}: "
                                                   f"a cell may not set {name}: "), lines


def test_a_pinned_variable_is_refused_unless_it_is_the_switch(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", TRITON_DEFAULT_FP_FUSION: "0"')
    assert _lines(path) == [f"{path}:11:38: switch -> cells -> candidate -> TRITON_DEFAULT_FP_FUSION: a cell may not set "
                            "TRITON_DEFAULT_FP_FUSION: the harness pins it to '1' on every cell; "
                            "only the switch itself (switch.name) may set it"]


def test_the_pinned_fp_fusion_is_a_legitimate_switch(tmp_path: Path):
    path = _manifest(tmp_path, 'TRITON_DEFAULT_FP_FUSION: "0"', switch="TRITON_DEFAULT_FP_FUSION")
    assert yamlio.validate(Manifest, path).switch.cells.candidate == {"TRITON_DEFAULT_FP_FUSION": "0"}


def test_an_interpreter_variable_is_refused_even_as_the_switch(tmp_path: Path):
    path = _manifest(tmp_path, 'PYTHONHASHSEED: "1"', switch="PYTHONHASHSEED")
    assert _lines(path) == [f"{path}:11:17: switch -> cells -> candidate -> PYTHONHASHSEED: a cell may not set PYTHONHASHSEED: "
                            "an interpreter variable changes what code the worker imports or how it runs"]


def test_every_refusal_in_every_cell_is_reported(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", LD_PRELOAD: /x.so', control='DISABLE_MMA_V3: "0", PATH: /x')
    assert [line.split(": a cell")[0] for line in _lines(path)] == [
        f"{path}:12:36: switch -> cells -> control -> PATH",
        f"{path}:11:38: switch -> cells -> candidate -> LD_PRELOAD"]


def test_ordinary_compiler_switches_pass():
    for name in ("DISABLE_MMA_V3", "FLAGTREE_NVIDIA_RLC_ENHANCE", "TRITON_F32_DEFAULT", "MLIR_ENABLE_TIMING"):
        assert cellenv_rules.refusal(name, "DISABLE_MMA_V3") is None, name


def test_every_variable_the_worker_pins_or_isolates_is_refused_to_other_switches():
    # drift guard: a variable added to campaign/running/cellenv.py is covered without editing the rule
    for name in (*PINNED, "GEMS_VENDOR", *CACHE_VARIABLES, *visibility_variables()):
        assert cellenv_rules.refusal(name, "DISABLE_MMA_V3") is not None, name
    for name in PINNED:
        if not name.startswith("PYTHON"):
            assert cellenv_rules.refusal(name, name) is None, name


def test_validate_refuses_a_preloading_cell_through_the_cli(tmp_path: Path, cli):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", LD_PRELOAD: /tmp/evil.so')
    done = cli("validate", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (f"{path}:11:38: switch -> cells -> candidate -> LD_PRELOAD: a cell may not set "
                                   "LD_PRELOAD: a dynamic-loader variable loads code into the worker")
