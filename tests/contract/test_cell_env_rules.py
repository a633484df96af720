"""What a switch cell may set (the switch and the variables declared beside it; never a variable
that loads code): refused at validate, located by file, line, column and key."""
from __future__ import annotations

from pathlib import Path

import pytest
import runroots
from conftest import FIXTURES

from campaign.backends import visibility_variables
from campaign.contract import canonical, cellenv_rules, knobtable, yamlio
from campaign.contract.artifacts import IDENTITY_FILE
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.running.cellenv import CACHE_VARIABLES, INHERITED, PINNED

BASE = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text()


def _manifest(tmp_path: Path, candidate: str, switch: str = "DISABLE_MMA_V3", control: str = "",
              also: str = "", baseline: str = "") -> Path:
    """``also``: the switch.also mapping's inside, on the line after the cells (12, or 13 with a control)."""
    text = BASE.replace("  name: DISABLE_MMA_V3", f"  name: {switch}").replace(
        '    candidate: {DISABLE_MMA_V3: "1"}', f"    candidate: {{{candidate}}}" + (f"\n    control: {{{control}}}" if control else "")
        + (f"\n  also: {{{also}}}" if also else "")).replace("    baseline: {}", f"    baseline: {{{baseline}}}")
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
    for name in ("DISABLE_MMA_V3", "FLAGTREE_RLC_ENHANCE", "TRITON_F32_DEFAULT", "MLIR_ENABLE_TIMING"):
        assert cellenv_rules.refusal(name, "DISABLE_MMA_V3") is None, name


def test_every_variable_the_worker_pins_or_isolates_is_refused_to_other_switches():
    # drift guard: a variable added to campaign/running/cellenv.py is covered without editing the rule
    for name in (*PINNED, "GEMS_VENDOR", *CACHE_VARIABLES, *visibility_variables()):
        assert cellenv_rules.refusal(name, "DISABLE_MMA_V3") is not None, name
    for name in PINNED:     # a pinned knob may be the switch; a pinned interpreter, pytest or pool variable never
        assert (cellenv_rules.refusal(name, name) is None) == (name in knobtable.KNOBS), name
    assert {"TRITON_DEFAULT_FP_FUSION", "USE_FLAGTUNE"} <= set(knobtable.KNOBS)


def test_validate_refuses_a_preloading_cell_through_the_cli(tmp_path: Path, cli):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", LD_PRELOAD: /tmp/evil.so')
    done = cli("validate", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (f"{path}:11:38: switch -> cells -> candidate -> LD_PRELOAD: a cell may not set "
                                   "LD_PRELOAD: a dynamic-loader variable loads code into the worker")


# Variables that load or select code: pytest's, the loader's, compilers', Triton's override and path
# knobs, the interpreter's, and other programs' that a worker's subprocess may start.
CODE_LOADING = ["PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "COV_CORE_SOURCE",
                "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GLIBC_TUNABLES",
                "CC", "CXX", "CPP", "LD", "CFLAGS", "LDFLAGS", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH",
                "NVCC_PREPEND_FLAGS", "GCC_EXEC_PREFIX", "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_MODULES",
                "TRITON_KERNEL_OVERRIDE", "TRITON_OVERRIDE_DIR", "TRITON_INTERPRET", "TRITON_CACHE_DIR",
                "TRITON_LIBDEVICE_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "TRITON_CACHE_MANAGER",
                "TRITON_OVERRIDE_ARCH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH",
                "PYTHONPYCACHEPREFIX", "PERL5OPT", "NODE_OPTIONS", "CUDA_HOME", "VIRTUAL_ENV", "LOCPATH"]


@pytest.mark.parametrize("name", CODE_LOADING)
def test_a_code_loading_variable_can_never_be_declared(tmp_path: Path, name: str):
    path = _manifest(tmp_path, f'DISABLE_MMA_V3: "1", {name}: x', also=f"{name}: needed by the candidate says the author")
    lines = _lines(path)
    assert lines[0].startswith(f"{path}:12:10: switch -> also -> {name}: {name} can never be declared: "), lines
    assert lines[1].startswith(f"{path}:11:38: switch -> cells -> candidate -> {name}: a cell may not set {name}: "), lines


def test_every_variable_the_harness_passes_down_can_never_be_declared():
    # drift guard: a variable added to the worker's inherited list is covered without editing the rule
    for name in INHERITED:
        assert cellenv_rules.refusal(name, "DISABLE_MMA_V3") is not None, name


def test_a_declared_variable_with_its_reason_is_allowed(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", MLIR_ENABLE_TIMING: "1"',
                     also="MLIR_ENABLE_TIMING: the pass timings show where the switch costs compile time")
    switch = yamlio.validate(Manifest, path).switch
    assert switch.also == {"MLIR_ENABLE_TIMING": "the pass timings show where the switch costs compile time"}
    assert switch.cells.candidate == {"DISABLE_MMA_V3": "1", "MLIR_ENABLE_TIMING": "1"}


def test_a_candidate_that_changes_an_undeclared_variable_is_refused(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", MLIR_ENABLE_TIMING: "1"')
    assert _lines(path) == [f"{path}:11:38: switch -> cells -> candidate -> MLIR_ENABLE_TIMING: a cell may not set "
                            "MLIR_ENABLE_TIMING: the candidate differs from the baseline in MLIR_ENABLE_TIMING, which is "
                            "not declared; declare it beside the switch with its reason: "
                            "`switch.also: {MLIR_ENABLE_TIMING: why the cells set it}`"]


def test_a_variable_set_only_in_the_baseline_is_refused_unless_declared(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1"', baseline='MLIR_ENABLE_TIMING: "1"')
    assert _lines(path) == [f"{path}:10:16: switch -> cells -> baseline -> MLIR_ENABLE_TIMING: a cell may not set "
                            "MLIR_ENABLE_TIMING: MLIR_ENABLE_TIMING is set only in the baseline and is not declared; "
                            "declare it beside the switch with its reason: "
                            "`switch.also: {MLIR_ENABLE_TIMING: why the cells set it}`"]
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1"', baseline='MLIR_ENABLE_TIMING: "1"',
                     also="MLIR_ENABLE_TIMING: the baseline is the timed build on purpose")
    assert yamlio.validate(Manifest, path).switch.cells.baseline == {"MLIR_ENABLE_TIMING": "1"}


def test_the_same_undeclared_variable_in_every_cell_is_refused(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", TRITON_ALWAYS_COMPILE: "1"', baseline='TRITON_ALWAYS_COMPILE: "1"')
    assert [line.split(": a cell may not set TRITON_ALWAYS_COMPILE: ")[1].split(";")[0] for line in _lines(path)] == [
        "TRITON_ALWAYS_COMPILE is neither the switch (DISABLE_MMA_V3) nor declared"] * 2


def test_a_switch_no_cell_sets_is_refused(tmp_path: Path):
    path = _manifest(tmp_path, 'MLIR_ENABLE_TIMING: "1"', also="MLIR_ENABLE_TIMING: what the author meant to switch")
    assert _lines(path) == [f"{path}:8:3: switch -> name: no cell sets the switch DISABLE_MMA_V3: set it in the "
                            "candidate (and control), or name the variable the cells set"]


def test_a_candidate_that_moves_only_a_declared_variable_is_refused(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", MLIR_ENABLE_TIMING: "1"', baseline='DISABLE_MMA_V3: "1"',
                     also="MLIR_ENABLE_TIMING: the pass timings show where the switch costs compile time")
    assert _lines(path) == [f"{path}:11:5: switch -> cells -> candidate: the candidate sets DISABLE_MMA_V3 as the "
                            "baseline does: the switch must be what the candidate changes"]


def test_a_declaration_must_be_used_be_another_variable_and_give_a_reason(tmp_path: Path):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1"', also="TRITON_DEBUG: declared but never set, DISABLE_MMA_V3: the switch")
    assert [line.split(": ", 1)[1] for line in _lines(path)] == [
        "switch -> also -> TRITON_DEBUG: switch.also declares TRITON_DEBUG but no cell sets it: remove it or set it",
        "switch -> also -> DISABLE_MMA_V3: DISABLE_MMA_V3 is the switch itself (switch.name): "
        "switch.also declares the others"]
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", TRITON_DEBUG: "1"', also='TRITON_DEBUG: "x"')
    assert _lines(path) == [f"{path}:12:10: switch -> also -> TRITON_DEBUG: String should have at least 8 characters"]


def test_validate_refuses_pytest_addopts_through_the_cli(tmp_path: Path, cli):
    path = _manifest(tmp_path, 'DISABLE_MMA_V3: "1", PYTEST_ADDOPTS: "-o pythonpath=/elsewhere -p plug"',
                     also="PYTEST_ADDOPTS: an outside plugin")
    done = cli("validate", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}:12:10: switch -> also -> PYTEST_ADDOPTS: PYTEST_ADDOPTS can never be declared: " \
           "a pytest variable adds plugins, options or paths to the cell's sessions" in done.stderr.splitlines()


def test_a_declared_variable_reaches_its_cell_and_every_set_variable_is_in_identity_and_report(tmp_path: Path, cli):
    # what reaches the cell's identity and the report is checked, not a kernel: the benchmark compiles
    # nothing, and fails where the cell's pytest loaded a plugin the environment installed (xdist here)
    # or its torch has more than one CPU thread (this machine has two cores)
    path = runroots.manifest(tmp_path, [runroots.fault("add", "test_bench_as_pinned")])
    text = path.read_text().replace('    candidate: {DISABLE_MMA_V3: "1"}',
                                    '    candidate: {DISABLE_MMA_V3: "1", MLIR_ENABLE_TIMING: "on"}\n'
                                    "  also: {MLIR_ENABLE_TIMING: a knob the candidate turns on beside the switch}")
    path.write_text(text)
    prepared = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert prepared.returncode == 0, prepared.stderr
    root = Path(prepared.stdout.strip().splitlines()[-1])
    done = runroots.run(root)
    assert done.returncode == 0, done.stderr
    identity = canonical.read_json(root / "cells" / "add" / "r1" / "candidate" / IDENTITY_FILE)
    assert identity["env"] == {"DISABLE_MMA_V3": "1", "MLIR_ENABLE_TIMING": "on"}
    assert identity["pinned_env"]["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == identity["pinned_env"]["OMP_NUM_THREADS"] == "1"
    results = sorted((root / "cells" / "add" / "r1").glob("*/result.json"))
    assert [path.parent.name for path in results] == ["baseline", "candidate"]
    for path in results:
        assert canonical.read_json(path)["rc"] == 0, path
    report = cli("report", root)
    assert report.returncode == 0, report.stderr
    assert ("Each cell set: baseline: nothing; candidate: `DISABLE_MMA_V3=1`, `MLIR_ENABLE_TIMING=on`.\n\n"
            "Declared beside the switch (`switch.also`): `MLIR_ENABLE_TIMING`: a knob the candidate turns on "
            "beside the switch.") in report.stdout
