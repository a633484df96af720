"""Which variables a switch cell may set, and to what: one pure rule, called by the manifest's validator.

A cell's env is applied last (`campaign.running.cellenv.cell_env`), so it wins over
everything the harness controls. A cell may therefore set only the switch's own
variable (``switch.name``) and the variables the manifest declares beside it, each
with its reason (``switch.also: {NAME: reason}``), and each must be a knob of the positive
list (`campaign.contract.knobtable`: the knobs and the values each one's reader parses);
a variable the list lacks is refused, whatever the reason. The refusals below say why for
variables known to be dangerous, and win over the list: those that make the loader, a shell, a
compiler, pytest, Triton or the interpreter run or load code the manifest does not show (LD_PRELOAD,
PYTEST_ADDOPTS, CC, GCONV_PATH, TRITON_KERNEL_OVERRIDE, PYTHON*...), move files outside
the run root, share a cache the runner isolates, pick another device, or override a
pinned caliber setting. The one exception: a pinned variable may be the switch itself,
e.g. a campaign over TRITON_DEFAULT_FP_FUSION. What the harness pins (``PINNED``,
``GEMS_VENDOR``) is defined here, beside the rule that protects it;
`campaign.running.cellenv` sets it on every cell.
"""
from __future__ import annotations

from typing import Mapping

from campaign.contract import knobtable, suggest
from campaign.contract.fields import BASELINE, CANDIDATE
from campaign.contract.platforms import PLATFORMS, visibility_variables

# FlagGems picks its vendor from GEMS_VENDOR first; without it, it probes by running
# vendor tools in subprocesses with no timeout, which can hang an import (seeds) --
# and which vendor it dispatches to is part of what a number means.
GEMS_VENDOR = {p.name: p.gems_vendor for p in PLATFORMS if p.gems_vendor is not None}

PINNED = {
    # Triton 3.9 warns when unset and 3.10 flips its default: never leave it implicit.
    "TRITON_DEFAULT_FP_FUSION": "1",
    # FlagGems reads it at import; FlagTune's exhaustive search is a different caliber.
    "USE_FLAGTUNE": "0",
    # Logs are parsed and hashed: no ANSI, no buffering that reorders stdout and stderr.
    "NO_COLOR": "1",
    "PYTHONUNBUFFERED": "1",
    # Set iteration order can decide kernel order, and with it cache and log order.
    "PYTHONHASHSEED": "0",
    # A cell's pytest sessions load the campaign's plugins (given to pytest.main) and the target's
    # own conftest files, never whatever the host installed: a GPU host's image carries
    # pytest-benchmark, -cov, -mock, -timeout, -xdist and hypothesis, each loaded into every session
    # (reordering, rerunning or timing out tests the manifest does not show), at ~0.3 s CPU a process.
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    # torch's CPU thread pool, one thread: a cell's work is on its device, and cells run side by side
    # (one per card, the IR pass's lanes), each pool otherwise as wide as the machine. Its spinning
    # threads cost every cell process's `import torch` 1.5-2 CPU-s on the H200 host's 16 cores
    # (receipts/h200-2026-12-02.md).
    "OMP_NUM_THREADS": "1",
}

_LOADS = "it makes a program load or run code the manifest does not show"
_COMPILER = "it changes which compiler runs or what it is given (Triton and torch build C code in the worker)"
_TRITON = "it makes Triton run other code than the kernel's source: an override, the interpreter or a plugin"
# Never declarable: the harness owns them, or they load code.
NEVER = {
    "PATH": "it selects which programs run",
    "BASH_ENV": "a shell sources the file it names, running code in every subprocess shell",
    "ENV": "a shell sources the file it names, running code in every subprocess shell",
    "IFS": "it changes how a shell splits words", "SHELLOPTS": _LOADS, "BASHOPTS": _LOADS,
    "PS4": _LOADS, "PROMPT_COMMAND": _LOADS,
    "HOME": "it moves every per-user config and cache under the worker",
    "TMPDIR": "the harness passes its own temporary folder",
    "USER": "the harness passes its own user", "LOGNAME": "the harness passes its own user",
    "SHELL": "it selects which shell a subprocess runs", "TZ": "the harness passes its own time zone",
    "LANG": "the harness passes its own locale",
    "TRITON_HOME": "it moves Triton's caches; the runner gives each cell fresh ones",
    "CUDA_DEVICE_ORDER": "it decides which device an index names; the device is the manifest's `device`",
    "VIRTUAL_ENV": "it selects which installed packages run",
    "GCONV_PATH": _LOADS, "OPENSSL_CONF": _LOADS, "OPENSSL_MODULES": _LOADS, "OPENSSL_ENGINES": _LOADS,
    "GLIBC_TUNABLES": _LOADS, "LOCPATH": _LOADS, "NLSPATH": _LOADS, "HOSTALIASES": _LOADS,
    "PERL5LIB": _LOADS, "PERL5OPT": _LOADS, "PERLLIB": _LOADS, "RUBYLIB": _LOADS, "RUBYOPT": _LOADS,
    "NODE_OPTIONS": _LOADS, "JAVA_TOOL_OPTIONS": _LOADS, "_JAVA_OPTIONS": _LOADS,
    "CC": _COMPILER, "CXX": _COMPILER, "CPP": _COMPILER, "LD": _COMPILER, "AS": _COMPILER, "AR": _COMPILER,
    "NVCC": _COMPILER, "HIPCC": _COMPILER, "CUDAHOSTCXX": _COMPILER, "CFLAGS": _COMPILER,
    "CXXFLAGS": _COMPILER, "CPPFLAGS": _COMPILER, "LDFLAGS": _COMPILER, "LIBS": _COMPILER, "CPATH": _COMPILER,
    "GCC_EXEC_PREFIX": _COMPILER, "NVCC_PREPEND_FLAGS": _COMPILER, "NVCC_APPEND_FLAGS": _COMPILER,
    "NVCC_CCBIN": _COMPILER,
    "TRITON_KERNEL_OVERRIDE": _TRITON, "TRITON_INTERPRET": _TRITON, "TRITON_CACHE_MANAGER": _TRITON,
    "TRITON_REMOTE_CACHE_BACKEND": _TRITON, "TRITON_PASS_PLUGIN_PATH": _TRITON,
    "TRITON_OVERRIDE_ARCH": "it compiles for another target; the target is the manifest's `device`",
    # Not even with its digest recorded: ptxas is the back end of the compiler the campaign holds fixed,
    # another one is another compiler (two installs, each digested, are two campaigns' identities)
    "TRITON_PTXAS_PATH": "it runs another ptxas: another compiler, not a switch of this one",
    "TRITON_PTXAS_BLACKWELL_PATH": "it runs another ptxas: another compiler, not a switch of this one",
}
PREFIXES = {
    "LD_": "a dynamic-loader variable loads code into the worker",
    "DYLD_": "a dynamic-loader variable loads code into the worker",
    "PYTHON": "an interpreter variable changes what code the worker imports or how it runs",
    "PYTEST": "a pytest variable adds plugins, options or paths to the cell's sessions",
    "COV_CORE_": "pytest-cov starts coverage (its code) in every subprocess it names",
    "XDG_": "a per-user config or cache location",
    "LC_": "the harness passes its own locale",
}
SUFFIXES = {
    "_CACHE_DIR": "a cache location; the runner gives each cell fresh caches",
    "_PATH": "a search path or a tool's location: it selects which code or binary runs",
    "_HOME": "a toolkit's or program's home: it selects which code or binary runs",
    "_DIR": "a folder a program reads or writes: a cell reads only digested code and writes only under the run root",
    "_DIRS": "folders a program reads or writes: a cell reads only digested code and writes only under the run root",
}
_FIX = "declare it beside the switch with its reason: `switch.also: {NAME: why the cells set it}`"


def _pinned() -> dict[str, str]:
    """Every variable the harness sets on every cell (caches aside), with why."""
    pinned = {name: f"the harness pins it to {value!r} on every cell" for name, value in PINNED.items()}
    pinned["GEMS_VENDOR"] = f"the harness pins it from device.backend ({', '.join(sorted(GEMS_VENDOR.values()))})"
    return pinned


def _danger(upper: str) -> str | None:
    """Why a variable known to load code, redirect files or pick the device is refused, or None."""
    if upper in NEVER:
        return NEVER[upper]
    if upper in visibility_variables():
        return "it selects the device; the device is the manifest's `device`"
    for prefix, why in PREFIXES.items():
        if upper.startswith(prefix):
            return why
    for suffix, why in SUFFIXES.items():
        if upper.endswith(suffix):
            return why
    if upper in knobtable.REFUSED:
        return knobtable.REFUSED[upper]
    if "DUMP" in upper:
        return "it makes the compiler dump files outside the run root, unrecorded"
    return None


def refusal(name: str, switch_name: str) -> str | None:
    """Why ``name`` can never be set by a cell, declared or not, or None when it may be declared."""
    upper = name.upper()     # the loader ignores ld_preload, but nothing legitimate is spelled so
    if (why := _danger(upper)) is not None:
        return why
    pinned = _pinned()
    if upper in pinned and name != switch_name:
        return f"{pinned[upper]}; only the switch itself (switch.name) may set it"
    if name not in knobtable.KNOBS:    # the positive list: a reason admits no variable it lacks
        return (f"{name} is not a knob the campaign knows{suggest.did_you_mean(name, knobtable.KNOBS)} "
                "(campaign/contract/knobtable.py lists each knob with the values it takes; add one there)")
    return None


def _undeclared(name: str, cell: str, cells: Mapping[str, Mapping[str, str]], switch_name: str) -> str:
    baseline, candidate = cells.get(BASELINE, {}), cells.get(CANDIDATE, {})
    if cell == BASELINE and not any(name in env for other, env in cells.items() if other != BASELINE):
        what = f"{name} is set only in the baseline and is not declared"
    elif baseline.get(name) != candidate.get(name):
        what = f"the candidate differs from the baseline in {name}, which is not declared"
    else:
        what = f"{name} is neither the switch ({switch_name}) nor declared"
    return f"a cell may not set {name}: {what}; " + _FIX.replace("NAME", name)


def problems(switch_name: str, also: Mapping[str, str],
             cells: Mapping[str, Mapping[str, str]]) -> list[tuple[tuple[str, ...], str]]:
    """(key path below the switch, message) for every variable a cell may not set or the manifest
    may not declare."""
    found: list[tuple[tuple[str, ...], str]] = []
    for name in also:
        if name == switch_name:
            found.append((("also", name), f"{name} is the switch itself (switch.name): switch.also declares the others"))
        elif (why := refusal(name, switch_name)) is not None:
            found.append((("also", name), f"{name} can never be declared: {why}"))
        elif not any(name in env for env in cells.values()):
            found.append((("also", name), f"switch.also declares {name} but no cell sets it: remove it or set it"))
    for cell, env in cells.items():
        for name, value in env.items():
            if (why := refusal(name, switch_name)) is not None:
                found.append((("cells", cell, name), f"a cell may not set {name}: {why}"))
            elif name != switch_name and name not in also:
                found.append((("cells", cell, name), _undeclared(name, cell, cells, switch_name)))
            elif (why := knobtable.value_problem(name, value)) is not None:
                found.append((("cells", cell, name), why))
    return found


def switch_problems(switch_name: str, cells: Mapping[str, Mapping[str, str]]) -> list[tuple[tuple[str, ...], str]]:
    """The switch is what the candidate changes: some cell sets it, and the candidate's value
    differs from the baseline's (a candidate that moves only declared variables tests something else)."""
    if not any(switch_name in env for env in cells.values()):
        return [(("name",), f"no cell sets the switch {switch_name}: set it in the candidate (and control), "
                            "or name the variable the cells set")]
    if cells[BASELINE].get(switch_name) == cells[CANDIDATE].get(switch_name):
        return [(("cells", CANDIDATE), f"the candidate sets {switch_name} as the baseline does: "
                                         "the switch must be what the candidate changes")]
    return []
