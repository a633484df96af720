"""Shared fixtures. Tests never rely on hidden global state: the environment and
the working directory are checked unchanged after every test."""
from __future__ import annotations

import compileall
import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

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


def built_once(tmp_path_factory, worker_id: str, name: str, build: Callable[[Path], object], done: str) -> Path:
    """<shared>/``name``, built by ``build`` once for the whole session, ``done`` (a file in it)
    written last. Under xdist the first worker to ask builds it under a file lock in the folder the
    workers share, the others wait for it and read it."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    base = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not base.exists():
            base.mkdir()
            build(base)
        elif not (base / done).is_file():
            pytest.fail(f"the shared {name} in {base} failed where it was built (another worker's error)")
    return base


@pytest.fixture(scope="session")
def sealed_add(tmp_path_factory, worker_id) -> Path:
    """One real run of the demo add (the canary) on the CPU compile-only backend, sealed
    (`runroots.sealed_add`): the seal, verify, crash and exit-code tests each ran this same run.
    Built once for the whole session (`built_once`; its run.out is written once the run sealed).
    Sealed, it is read-only; a test that writes works on its own copy (`runroots.copy_root`)."""
    import runroots
    base = built_once(tmp_path_factory, worker_id, "sealed-add", runroots.sealed_add, "run.out")
    return next((base / "runs").iterdir())


@pytest.fixture(scope="session")
def screened_add_sass(tmp_path_factory, worker_id) -> dict:
    """One real screen of the demo add at sass (`runroots.screened_add_sass`: TRITON_DEFAULT_FP_FUSION,
    the canary, ``--format json``), sealed, and the JSON it printed: the SASS screen's own test and the
    JSON-form tests each ran a screen of add. Built once for the session (`built_once`), read-only."""
    import runroots
    base = built_once(tmp_path_factory, worker_id, "screened-add-sass", runroots.screened_add_sass, "run.out")
    return {"stdout": (base / "run.out").read_text(encoding="utf-8"), "stderr": (base / "run.err").read_text(encoding="utf-8")}


@pytest.fixture(scope="session")
def screened_demo_two(tmp_path_factory, worker_id) -> Path:
    """One real screen of the demo's add and matmul at sass with every round 1 run
    (`runroots.screened_demo_two`), sealed: the review page's real root and the ``--time-unchanged``
    test each ran a screen of these two. Built once for the session (`built_once`), read-only."""
    import runroots
    base = built_once(tmp_path_factory, worker_id, "screened-demo-two", runroots.screened_demo_two, "run.out")
    return next((base / "runs").iterdir())


@pytest.fixture(scope="session")
def committed_roots(tmp_path_factory, worker_id) -> Path:
    """Every sealed root committed under receipts/, unpacked once for the whole session
    (`committedroots.unpack`, `built_once`): its roots/ folder and the names each archive held.
    Read-only; a test that writes beside a root works on its own copy."""
    import committedroots
    return built_once(tmp_path_factory, worker_id, "committed-roots", committedroots.unpack, committedroots.NAMES)


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


@pytest.hookimpl(optionalhook=True)   # a cell's own pytest session (tests/fixtures) loads this file without xdist
def pytest_xdist_make_scheduler(config, log):
    """Under ``-n`` (xdist's default ``--dist load``, as CI runs), the tests of a module that has a
    module-scoped fixture (a real run or screen, built once for the module) go to one worker as one
    unit, and every other test on its own. Spread one at a time, each worker that got one of a
    module's tests built its fixture again: test_sass_cpu's four SASS cells twice in one CI-like run
    (51 s and 30 s of setup). xdist's own ``--dist loadgroup`` cannot do it here: its worker renames
    ``item._nodeid``, which pytest 9 no longer reads, so every group falls apart silently. The units
    go out largest first (xdist's loadscope order): the shared fixtures start early, not in the tail."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling
    shared = {path.relative_to(config.rootpath).as_posix() for path in (PROJECT_ROOT / "tests").rglob("test_*.py")
              if 'scope="module"' in path.read_text(encoding="utf-8")}

    class ModuleFixturesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in shared else nodeid

    return ModuleFixturesTogether(config, log)


def pytest_configure(config):
    """The project's packages compiled to bytecode once, before any test (in the controller, before
    xdist starts its workers). With PYTHONDONTWRITEBYTECODE set (as on this machine) no process ever
    writes them, so each of the suite's CLI subprocesses compiled the project from source again;
    `compileall` writes them whatever that variable says. Workers never read these: each run's own
    bytecode prefix starts empty (`campaign.running.workerlaunch`), so this touches the CLI's start only."""
    if hasattr(config, "workerinput"):
        return
    for folder in ("campaign", "worker", "plugins", "reaccount"):
        compileall.compile_dir(PROJECT_ROOT / folder, quiet=1)
