"""The positive list of knobs (`campaign.contract.knobtable`) held against the installed triton, and
each value checked as its reader parses it, at validate.

The table cannot drift silently: every env knob of ``triton.knobs`` and every name of the C++
cache-invalidating list is a row or refused with its reason, no Triton row names a variable triton
does not read, and Triton's own bool parser agrees with the table's on every value tried. The C++
list is pinned below for the installed version (3.6.0, pyproject's pin); reading it again from a new
libtriton takes tests/bench/triton_knobs.py (a scan of the library's strings, too slow for CI).
"""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import triton
import triton.knobs as triton_knobs
from conftest import FIXTURES
from triton._C import libtriton

from campaign.cli import main
from campaign.contract import cellenv_rules, knobtable

PROBED_VERSION = "3.6.0"
# triton._C.libtriton.get_cache_invalidating_env_vars() with every name of libtriton's .rodata set
# (tests/bench/triton_knobs.py): the C++ knobs of 3.6.0.
TRITON_CPP = (
    "ALLOW_LHS_TMEM_LAYOUT_CONVERSION", "AMDGCN_ENABLE_DUMP", "AMDGCN_USE_BUFFER_ATOMICS", "AMDGCN_USE_BUFFER_OPS",
    "DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "DISABLE_MMA_V5", "DISABLE_PTXAS_OPT", "LLVM_ENABLE_TIMING",
    "LLVM_EXTRACT_DI_LOCAL_VARIABLES", "LLVM_IR_ENABLE_DUMP", "LLVM_PASS_PLUGIN_PATH", "MLIR_DISABLE_MULTITHREADING",
    "MLIR_DUMP_PATH", "MLIR_ENABLE_DIAGNOSTICS", "MLIR_ENABLE_DUMP", "MLIR_ENABLE_TIMING", "NVPTX_ENABLE_DUMP",
    "TRITON_DEFAULT_FP_FUSION", "TRITON_DISABLE_LINE_INFO", "TRITON_DUMP_MIR", "TRITON_ENABLE_ASAN",
    "TRITON_ENABLE_EXPERIMENTAL_CONSAN", "TRITON_ENABLE_LLVM_DEBUG", "TRITON_F32_DEFAULT", "TRITON_HIP_USE_ASYNC_COPY",
    "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "TRITON_LLVM_DEBUG_ONLY",
    "TRITON_OVERRIDE_ARCH", "TRITON_PREFER_TMEM_16x256_LAYOUT", "USE_IR_LOC",
)
UNKNOWN = "is not a knob the campaign knows"
# descriptor class -> the grammar kinds a row of it may have
KINDS = {"env_bool": {"bool"}, "env_opt_bool": {"bool"}, "env_int": {"int"}, "env_str": {"word", "options"},
         "env_opt_str": {"word", "options"}, "env_str_callable_default": {"word", "options"}}


def python_knobs() -> dict[str, str]:
    """Every variable ``triton.knobs`` reads -> its descriptor class: the live descriptors (the tools' keys
    are built: TRITON_PTXAS_PATH) and, from the source, those read once at import (TRITON_DEBUG)."""
    found = {}
    for group in vars(triton_knobs).values():
        if isinstance(group, triton_knobs.base_knobs):
            found.update({d.key: type(d).__name__ for d in group.knob_descriptors.values()})
    for node in ast.walk(ast.parse(inspect.getsource(triton_knobs))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("env_")
                and node.args and isinstance(node.args[0], ast.Constant) and re.fullmatch(r"[A-Z][A-Za-z0-9_]+", node.args[0].value)):
            found.setdefault(node.args[0].value, node.func.id)
    return found


def _decided(name: str) -> bool:
    why = cellenv_rules.refusal(name, "DISABLE_MMA_V3")
    return name in knobtable.KNOBS if why is None else UNKNOWN not in why


def test_every_knob_of_the_installed_triton_is_a_row_of_its_kind_or_refused_by_name():
    knobs = python_knobs()
    assert len(knobs) >= 50 and "TRITON_PTXAS_PATH" in knobs and "TRITON_DEBUG" in knobs, sorted(knobs)
    assert [name for name in knobs if not _decided(name)] == []
    wrong = [(name, cls) for name, cls in knobs.items()
             if name in knobtable.KNOBS and knobtable.KNOBS[name].grammar.kind not in KINDS.get(cls, set())]
    assert wrong == []


def test_the_cpp_knobs_are_the_installed_list_and_each_is_decided(monkeypatch):
    assert triton.__version__ == PROBED_VERSION, "a new triton: read its C++ knobs with tests/bench/triton_knobs.py"
    tried = (set(TRITON_CPP) | set(knobtable.KNOBS) | set(knobtable.REFUSED) | set(cellenv_rules.NEVER)
             | set(python_knobs()))
    for name in tried:
        monkeypatch.setenv(name, "1")
    assert sorted(libtriton.get_cache_invalidating_env_vars()) == sorted(TRITON_CPP)
    assert [name for name in TRITON_CPP if not _decided(name)] == []


def test_no_triton_row_names_a_variable_triton_does_not_read():
    read = set(python_knobs()) | set(TRITON_CPP)
    assert [name for name, knob in knobtable.KNOBS.items() if knob.reader == knobtable.TRITON and name not in read] == []


BOOL_TRIES = ("1", "0", "true", "TRUE", "On", "off", "False", "oN", "yes", "Y", "no", "1✓", " 1", "1 ", "01", "tru",
              "enable", "١", "ＯＮ", "ı", "")


def test_a_bool_is_a_value_every_triton_reader_reads_as_the_same_bool(monkeypatch):
    """Python's getenv_bool (triton.knobs.env_bool: yes/y are on) and the C++ isEnvValueBool behind the
    cache key (it writes a value it reads as a bool as "true"/"false" and leaves any other as given;
    getBoolEnv reads that other as off): the table takes exactly the values both read alike."""
    for value in BOOL_TRIES:
        monkeypatch.setenv("TRITON_ALWAYS_COMPILE", value)
        monkeypatch.setenv("DISABLE_MMA_V3", value)
        python = libtriton.getenv_bool("TRITON_ALWAYS_COMPILE", None)
        cpp = libtriton.get_cache_invalidating_env_vars().get("DISABLE_MMA_V3")
        alike = cpp in ("true", "false") and python == (cpp == "true")
        assert knobtable.BOOL.parses(value) == alike, (value, python, cpp)


def test_the_f32_default_words_are_the_precisions_triton_takes():
    from triton.backends.amd.compiler import HIPOptions
    from triton.backends.nvidia.compiler import CUDAOptions
    taken = set(CUDAOptions.allowed_dot_input_precisions) | set(HIPOptions.allowed_dot_input_precisions)
    assert set(knobtable.KNOBS["TRITON_F32_DEFAULT"].grammar.words) == taken


def _validate(tmp_path: Path, capsys, candidate: str, also: str = "") -> tuple[int, str, Path]:
    text = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text()
    text = text.replace('    candidate: {DISABLE_MMA_V3: "1"}', f"    candidate: {{{candidate}}}" + (f"\n  also: {{{also}}}" if also else ""))
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    rc = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected error" not in err, err
    return rc, err, path


@pytest.mark.parametrize("candidate, message", [
    ('DISABLE_MMA_V3: "1✓"', "DISABLE_MMA_V3: '1✓' is not a bool Triton parses: use 0/1/true/false/on/off"),
    ('DISABLE_MMA_V3: "yes"', "DISABLE_MMA_V3: 'yes' is not a bool Triton parses: use 0/1/true/false/on/off"),
    ('DISABLE_MMA_V3: "1", TRITON_F32_DEFAULT: "tf64"',
     "TRITON_F32_DEFAULT: 'tf64' is not a value Triton takes: use ieee, tf32, tf32x3, bf16x3, bf16x6"),
    ('DISABLE_MMA_V3: "1", FLAGTREE_RLC_PHASE_MASK: "0x3"',
     "FLAGTREE_RLC_PHASE_MASK: '0x3' is not an integer FlagTree parses: use decimal digits 0-9 (at most 9), e.g. 15"),
])
def test_a_value_its_reader_does_not_parse_is_refused_at_validate_with_the_grammar(tmp_path, capsys, candidate, message):
    also = "" if "," not in candidate else f"{candidate.split(', ')[1].split(':')[0]}: set beside the switch on purpose"
    rc, err, path = _validate(tmp_path, capsys, candidate, also)
    name = message.split(":")[0]
    assert rc == 2 and err.splitlines() == [f"{path}:11:{17 + candidate.index(name)}: "
                                            f"switch -> cells -> candidate -> {name}: {message}"], err


def test_an_unknown_variable_is_refused_whatever_its_reason_and_a_near_miss_is_named(tmp_path, capsys):
    rc, err, path = _validate(tmp_path, capsys, 'DISABLE_MMA_V3: "1", DISABLE_MMA_V4: "1"',
                              also="DISABLE_MMA_V4: the author's own build reads it")
    assert rc == 2 and err.splitlines()[0] == (
        f"{path}:12:10: switch -> also -> DISABLE_MMA_V4: DISABLE_MMA_V4 can never be declared: DISABLE_MMA_V4 "
        f"{UNKNOWN}; did you mean DISABLE_MMA_V5, DISABLE_MMA_V3, DISABLE_PTXAS_OPT? (campaign/contract/knobtable.py lists each knob "
        "with the values it takes; add one there)"), err
