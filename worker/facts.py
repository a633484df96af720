"""What preflight looks at, gathered from the running interpreter: the IO edge of preflight.

Versions are read from the imported module (``__version__``), not from package
metadata: triton often comes from a PYTHONPATH pointing at a compiler build and
flag_gems from a source checkout, while a stale wheel's metadata may still sit in
site-packages. What runs is what is imported.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from campaign.contract import toolenv
from campaign.contract.platforms import triton_target


@dataclass(frozen=True)
class Installed:
    name: str
    version: Optional[str]
    commit: Optional[str]
    location: Optional[str]


def import_errors(modules: tuple[str, ...]) -> dict[str, Optional[str]]:
    """module -> None when it imports, else the error as one line."""
    out: dict[str, Optional[str]] = {}
    for name in modules:
        try:
            importlib.import_module(name)
            out[name] = None
        except Exception as exc:    # a broken import is the finding, whatever it raises
            out[name] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return out


def process_age_s(proc: Path = Path("/proc")) -> Optional[float]:
    """Seconds since this process started, or None where /proc does not say.

    ``starttime`` (field 22 of /proc/self/stat) counts clock ticks after boot, as
    /proc/uptime counts seconds after boot: both 10 ms coarse on the usual 100 Hz tick.
    The process name (field 2) may hold spaces and parentheses: split after its last ')'."""
    try:
        stat = (proc / "self" / "stat").read_text(encoding="utf-8")
        uptime = float((proc / "uptime").read_text(encoding="utf-8").split()[0])
        started = int(stat.rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime - started)


def installed(name: str) -> Installed:
    """Version and commit of ``name``: from the imported module when it is imported."""
    module = sys.modules.get(name)
    if module is not None:
        version = getattr(module, "__version__", None)
        location = str(Path(module.__file__).parent) if getattr(module, "__file__", None) else None
    else:
        version, location = _metadata_version(name), None
    return Installed(name=name, version=str(version) if version is not None else None,
                     commit=_commit(name, module, location), location=location)


def _metadata_version(name: str) -> Optional[str]:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _commit(name: str, module, location: Optional[str]) -> Optional[str]:
    # torch records the commit it was built from; a pip install from git records it in
    # direct_url.json; a source checkout on PYTHONPATH has it as its git HEAD.
    git_version = getattr(getattr(module, "version", None), "git_version", None) if name == "torch" else None
    if isinstance(git_version, str) and git_version not in ("", "Unknown"):
        return git_version
    try:
        direct = importlib.metadata.distribution(name).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        direct = None
    if direct:
        commit = json.loads(direct).get("vcs_info", {}).get("commit_id")
        if commit:
            return commit
    if location is None:
        return None
    # Only when the module's own file is tracked: a wheel inside a virtualenv inside
    # some other repository would otherwise report that repository's HEAD.
    tracked = _git(location, "ls-files", "--error-unmatch", "__init__.py")
    return _git(location, "rev-parse", "HEAD") if tracked is not None else None


def _git(where: str, *args: str) -> Optional[str]:
    # the tool environment, never the cell's: no HOME or GIT_CONFIG_* of anyone's runs code here
    try:
        with toolenv.clean(os.environ) as env:
            done = subprocess.run(toolenv.git_argv("-C", where, *args), capture_output=True, text=True,
                                  timeout=10, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def triton_backend_for(target: str) -> Optional[str]:
    """The installed Triton backend that compiles ``target`` ("cuda:90", "hip:gfx942"), or None."""
    from triton.backends import backends
    from triton.backends.compiler import GPUTarget

    try:
        gpu_target = GPUTarget(*triton_target(target))
    except ValueError:
        return None
    for name, backend in backends.items():
        if backend.compiler.supports_target(gpu_target):
            return name
    return None
