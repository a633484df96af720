"""Declarable code loaders: 0 of the list below (#39), however each is declared.

A variable that makes a program load or run code the manifest does not show, or redirects what
it reads or writes (a config, a cache, a home, a plugin, a tool), tried three ways: as the switch,
as a cell variable declared beside it with a reason, and declared and set in every cell. Before the
positive list (`campaign.contract.knobtable`) 26 of these 105 could be declared with a reason or
used as the switch (the tester's count: 23 of 61; GIT_CONFIG_GLOBAL made preflight's git run an
outside script).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from campaign.contract import knobtable
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest

# name -> what it loads or redirects
CODE_LOADERS = {
    "LD_PRELOAD": "a library into every process", "LD_LIBRARY_PATH": "which libraries load",
    "LD_AUDIT": "an audit library into every process", "DYLD_INSERT_LIBRARIES": "a library (macOS)",
    "GLIBC_TUNABLES": "the loader's behaviour", "GCONV_PATH": "iconv modules", "LOCPATH": "locale files",
    "PYTHONPATH": "modules ahead of the installed ones", "PYTHONSTARTUP": "a script (interactive)",
    "PYTHONHOME": "another standard library", "PYTHONUSERBASE": "user site-packages and their .pth",
    "PYTHONPYCACHEPREFIX": "where bytecode is read", "PYTHONBREAKPOINT": "a callable breakpoint() imports",
    "PYTHONWARNINGS": "warning categories it imports", "PYTHONEXECUTABLE": "sys.executable",
    "PYTHONPLATLIBDIR": "another lib folder", "PYTHONSAFEPATH": "the script folder on sys.path",
    "PYTEST_ADDOPTS": "options, plugins, paths", "PYTEST_PLUGINS": "plugins", "COV_CORE_SOURCE": "coverage",
    "COVERAGE_PROCESS_START": "coverage started in every python", "COVERAGE_RCFILE": "coverage's config",
    "GIT_CONFIG_GLOBAL": "a git config (core.fsmonitor runs a program)", "GIT_CONFIG_SYSTEM": "a git config",
    "GIT_CONFIG_COUNT": "git config entries from the env", "GIT_CONFIG_KEY_0": "a git config key",
    "GIT_CONFIG_VALUE_0": "a git config value", "GIT_CONFIG_PARAMETERS": "git -c entries",
    "GIT_EXEC_PATH": "git's own programs", "GIT_SSH_COMMAND": "a program git runs",
    "GIT_ASKPASS": "a program git runs", "GIT_EXTERNAL_DIFF": "a program git runs", "GIT_PAGER": "a program",
    "GIT_DIR": "another repository", "GIT_TEMPLATE_DIR": "hooks copied into a repository",
    "OMP_TOOL_LIBRARIES": "an OpenMP tool library", "OMP_TOOL": "OpenMP tools on",
    "NCCL_NET_PLUGIN": "a network plugin", "NCCL_TUNER_PLUGIN": "a tuner plugin",
    "NCCL_PROFILER_PLUGIN": "a profiler plugin", "CUDA_INJECTION64_PATH": "a library into the CUDA runtime",
    "NVTX_INJECTION64_PATH": "an NVTX tool library", "HSA_TOOLS_LIB": "a ROCm tool library",
    "MPLBACKEND": "module://x imports a module", "MPLCONFIGDIR": "matplotlib's config",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "torch backends from entry points", "TORCH_EXTENSIONS_DIR": "built extensions",
    "TORCHINDUCTOR_CACHE_DIR": "compiled kernels", "TORCH_HOME": "torch's hub and caches",
    "TRITON_LIBDEVICE_PATH": "another libdevice", "TRITON_PTXAS_PATH": "another ptxas (a compiler)",
    "TRITON_PTXAS_BLACKWELL_PATH": "another ptxas", "TRITON_CUOBJDUMP_PATH": "a program",
    "TRITON_NVDISASM_PATH": "a program", "TRITON_LIBCUDA_PATH": "another libcuda", "TRITON_LIBHIP_PATH": "libhip",
    "TRITON_CUDACRT_PATH": "headers the launcher builds with", "TRITON_CUDART_PATH": "the CUDA runtime",
    "TRITON_CUPTI_LIB_PATH": "CUPTI", "TRITON_KERNEL_OVERRIDE": "IR from a folder instead of the source",
    "TRITON_OVERRIDE_DIR": "that folder", "TRITON_CACHE_MANAGER": "a class it imports",
    "TRITON_REMOTE_CACHE_BACKEND": "a class it imports", "TRITON_PASS_PLUGIN_PATH": "an MLIR pass plugin",
    "LLVM_PASS_PLUGIN_PATH": "an LLVM pass plugin", "TRITON_INTERPRET": "the interpreter instead of the compiler",
    "TRITON_BACKENDS_IN_TREE": "backends from entry points", "TRITON_HOME": "Triton's caches",
    "TRITON_CACHE_DIR": "the compile cache", "TRITON_DUMP_DIR": "dumps", "MLIR_DUMP_PATH": "dumps",
    "TRITON_REPRODUCER_PATH": "a reproducer file", "HOME": "every per-user config (.gitconfig runs programs)",
    "XDG_CONFIG_HOME": "configs", "XDG_CACHE_HOME": "caches", "XDG_DATA_HOME": "data", "XDG_CONFIG_DIRS": "configs",
    "PATH": "which programs run", "BASH_ENV": "a script every bash sources", "ENV": "a script sh sources",
    "SHELL": "the shell", "CC": "the C compiler Triton builds its launcher with", "CXX": "a compiler",
    "CFLAGS": "compiler flags", "LDFLAGS": "linker flags", "CPATH": "headers", "LIBRARY_PATH": "libraries",
    "OPENSSL_CONF": "an OpenSSL config (engines)", "OPENSSL_MODULES": "OpenSSL providers",
    "NODE_OPTIONS": "node --require", "PERL5OPT": "perl -M", "VIRTUAL_ENV": "another environment",
    "CONDA_PREFIX": "another environment", "CUDA_HOME": "another toolkit", "CUDA_PATH": "another toolkit",
    "ROCM_PATH": "another ROCm", "HIP_PATH": "another HIP", "MUSA_HOME": "another MUSA toolkit",
    "FLAGGEMS_CACHE_DIR": "the tuner's store", "FLAGGEMS_DB_URL": "the tuner's database",
    "FLAGTREE_CACHE_DIR": "FlagTree's build cache", "CUDA_CACHE_PATH": "JIT-compiled kernels",
    "PIP_CONFIG_FILE": "a pip config", "SSL_CERT_FILE": "trusted certificates", "TMPDIR": "temporary files",
}
BASE = {
    "schema_version": 1, "campaign": "loaders", "description": "a code loader declared",
    "sources": {"triton": {"version": "3.6.0"}}, "device": {"backend": "cpu", "target": "cuda:90"},
    "timer": {"kind": "event"}, "workloads": [{"name": "matmul", "op": "matmul"}],
}
REASON = "the candidate needs it, says its author"


def _ways(name: str, value: str) -> list[dict]:
    """The switch; declared beside it in the candidate; declared and set in every cell."""
    declared = {"also": {name: REASON}}
    return [{"name": name, "cells": {"baseline": {}, "candidate": {name: value}}},
            {"name": "DISABLE_MMA_V3", "cells": {"baseline": {}, "candidate": {"DISABLE_MMA_V3": "1", name: value}}, **declared},
            {"name": "DISABLE_MMA_V3", **declared,
             "cells": {"baseline": {name: value}, "candidate": {"DISABLE_MMA_V3": "1", name: value}}}]


def declarable(name: str) -> bool:
    for value in ("1", "/tmp/elsewhere"):
        for switch in _ways(name, value):
            try:
                Manifest.model_validate({**BASE, "switch": switch})
            except ValueError:
                continue
            return True
    return False


def test_declarable_code_loaders_0_of_the_list():
    assert len(CODE_LOADERS) >= 60
    assert [name for name in CODE_LOADERS if declarable(name)] == []
    assert not set(CODE_LOADERS) & set(knobtable.KNOBS)


def test_the_ways_tried_admit_a_knob_of_the_list():
    """The three declarations are real ones: each admits a knob the list holds."""
    for switch in _ways("TRITON_ALWAYS_COMPILE", "1"):
        assert Manifest.model_validate({**BASE, "switch": switch}).switch.cells.candidate


def test_validate_names_a_git_config_declared_with_a_reason(tmp_path: Path, cli):
    from campaign.contract import yamlio, yamlwrite
    path = tmp_path / "m.yaml"
    path.write_text(yamlwrite.dump({**BASE, "switch": _ways("GIT_CONFIG_GLOBAL", "/tmp/evil.gitconfig")[1]}))
    done = cli("validate", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "switch -> also -> GIT_CONFIG_GLOBAL: GIT_CONFIG_GLOBAL can never be declared: GIT_CONFIG_GLOBAL is not " \
           "a knob the campaign knows" in done.stderr, done.stderr
    with pytest.raises(InputError) as refused:      # the declaration and the cell that sets it
        yamlio.validate(Manifest, path)
    assert [line.split(": ")[1] for line in refused.value.lines] == [
        "switch -> also -> GIT_CONFIG_GLOBAL", "switch -> cells -> candidate -> GIT_CONFIG_GLOBAL"]
