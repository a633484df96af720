"""Shared fixtures. Tests never rely on hidden global state: the environment and
the working directory are checked unchanged after every test."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
# tests/data holds stand-ins for other projects' trees (a FlagGems checkout, a user's do_bench
# file): their own conftest.py and test files are run by cells, never collected here
collect_ignore = ["data"]


@pytest.fixture(autouse=True)
def _no_global_state():
    env_before = dict(os.environ)
    cwd_before = os.getcwd()
    yield
    assert os.getcwd() == cwd_before, "a test changed the working directory"
    changed = {k for k in set(env_before) | set(os.environ)
               if env_before.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST"}
    assert not changed, f"a test changed os.environ: {sorted(changed)}"


def run_cli(*args: str, cwd: Path = PROJECT_ROOT, timeout: float = 300, env: dict | None = None):
    """The CLI as a real subprocess: ``sys.executable -m campaign ...``."""
    return subprocess.run([sys.executable, "-m", "campaign", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _gpu_tests_need_the_gpu_host(request):
    """gpu-marked tests run on the GPU host only (CI deselects them with -m "not gpu").
    Selected anywhere else they fail: a GPU claim is never left unchecked by a silent skip."""
    if request.node.get_closest_marker("gpu") is None:
        return
    import torch
    if not torch.cuda.is_available():
        pytest.fail("gpu-marked tests need a CUDA device: run them on the GPU host", pytrace=False)
    if torch.cuda.get_device_capability(0) != (9, 0):
        pytest.fail(f"gpu-marked tests are written for sm_90 (H100/H200); found "
                    f"{torch.cuda.get_device_name(0)} {torch.cuda.get_device_capability(0)}", pytrace=False)
    import flag_gems  # noqa: F401  -- the host must have it: the FlagGems tests are the point
