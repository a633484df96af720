"""Only digested code runs in a worker (`campaign.running.workerlaunch`).

After prepare, three pieces of code are planted in a copy of the project (`projectcopy`): a
``pluggy.py`` at the project root (pytest imports pluggy in the worker, the parent never does),
a ``__pycache__/demo_kernels.*.pyc`` compiled from edited source and stamped with the real
source's mtime and size, and the same ``.pyc`` in the run's bytecode store at the path a prefix
gives that source (`campaign.running.bytecode`: only installed packages' bytecode is ever seeded
from it). Into the store also go ``.pyc`` files of installed modules every worker imports, their
sources untouched: an unchecked hash-based one for ``triton/__init__.py`` and ``json/__init__.py``
and one stamped with its source's mtime and size for ``pluggy/__init__.py`` and ``argparse.py``,
each running edited code, and one cut short for ``_pytest/main.py`` and ``pprint.py`` (a full
disk: ``marshal data too short``). Each planted piece of
code writes a line to a marker file when it runs. `campaign run` through the workers' launch
runs none of them and seals; the store ends holding only checked files that verify. The same
cell started as workers were started before (``python -m campaign.worker`` from the project
folder, bytecode caches read) runs the project's two, so the check can fail.
"""
from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import projectcopy
import pytest
import runroots

from campaign.contract import canonical
from campaign.contract.artifacts import RESULT_FILE, TASK_FILE
from campaign.contract.plans import CellPlan
from campaign.running import bytecode, workerlaunch
from campaign.running.cellenv import cell_env

KERNELS = Path("ops") / "workloads" / "demo" / "demo_kernels.py"


def _plant(project: Path, marker: Path, store: Path) -> None:
    (project / "pluggy.py").write_text(f"open({str(marker)!r}, 'a').write('module\\n')\n"
                                       "raise ImportError('a planted pluggy')\n", encoding="utf-8")
    source = project / KERNELS
    stat = source.stat()
    edited = f"open({str(marker)!r}, 'a').write('pyc\\n')\n" + source.read_text(encoding="utf-8")
    code = compile(edited, str(source), "exec", dont_inherit=True)
    pyc = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir(exist_ok=True)
    # what the import system checks before it trusts a .pyc: the source's mtime and size
    pyc.write_bytes(bootstrap._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size))
    stored = store / source.parent.relative_to("/") / pyc.name      # where a prefix puts that source's .pyc
    stored.parent.mkdir(parents=True)
    stored.write_bytes(pyc.read_bytes())
    for module, kind in INSTALLED.items():
        _plant_installed(module, kind, marker, store)


# installed modules every worker imports, and what is planted in the store for each: triton's, pytest's
# and the standard library's (always under this python's installed folders, wherever the packages are)
INSTALLED = {"triton": "unchecked", "pluggy": "timestamp", "_pytest.main": "truncated",
             "json": "unchecked", "argparse": "timestamp", "pprint": "truncated"}


def _seedable() -> list[str]:
    """The planted modules whose sources the store may seed on this python (the standard library's
    always; triton's and pytest's where they are installed in this python's own folders)."""
    rule = bytecode.run_rule(Path("/nonexistent-project"), ())
    return [module for module in INSTALLED if rule(Path(importlib.util.find_spec(module).origin).resolve())]


def _stored_path(store: Path, source: Path) -> Path:
    return store / source.parent.relative_to("/") / f"{source.stem}.{sys.implementation.cache_tag}.pyc"


def _plant_installed(module: str, kind: str, marker: Path, store: Path) -> None:
    """A ``.pyc`` in the store for an installed module's untouched source: its code writes ``kind``
    to the marker after the real source ran (a verdict changed silently, as found)."""
    source = Path(importlib.util.find_spec(module).origin).resolve()
    real = source.read_bytes()
    edited = real + f"\nopen({str(marker)!r}, 'a').write({kind + chr(10)!r})\n".encode()
    code = compile(edited, str(source), "exec", dont_inherit=True)
    if kind == "unchecked":
        data = bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(real), False)
    elif kind == "timestamp":
        stat = source.stat()
        data = bootstrap._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size)
    else:     # the store's own form, cut short
        whole = bootstrap._code_to_hash_pyc(compile(real, str(source), "exec", dont_inherit=True),
                                            importlib.util.source_hash(real), True)
        data = whole[:len(whole) // 2]
    stored = _stored_path(store, source)
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, Path, Path, subprocess.CompletedProcess]:
    base = tmp_path_factory.mktemp("planted")
    project = projectcopy.make(base)
    manifest = base / "planted.yaml"
    # two workloads in one process: the batch's launch; the single cell's is started below by hand
    manifest.write_text(runroots.HEAD.format(campaign="planted", rounds=1, extra_sources="",
                                             per_process="  workloads_per_process: 2\n")
                        + runroots.demo("add") + runroots.demo("row_sum"), encoding="utf-8")
    root = projectcopy.prepare(project, manifest)
    marker = base / "ran.txt"
    cache = base / "cache"
    _plant(project, marker, cache / "campaign" / f"bytecode-{sys.implementation.cache_tag}")
    return project, root, marker, projectcopy.run(project, root, env={**os.environ, "XDG_CACHE_HOME": str(cache)})


def test_a_planted_module_and_pyc_never_run_in_a_worker(planted):
    project, root, marker, done = planted
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), marker.read_text()
    assert (root / "receipt.json").is_file()
    assert {row.rc_name for row in runroots.rows(root)} == {"ok"}


def test_the_run_kept_installed_packages_bytecode_and_nothing_of_the_project(planted):
    project, root, _, _ = planted
    store = root.parent.parent / "cache" / "campaign" / f"bytecode-{sys.implementation.cache_tag}"
    kept = [bytecode.source_of(store, pyc) for pyc in store.rglob("*.pyc")]
    roots = bytecode.installed_roots()
    assert any(source.parts[-2:] == ("_pytest", "main.py") for source in kept)     # the workers' pytest
    planted_source = (project / KERNELS).resolve()
    assert [s for s in kept if not any(s.resolve().is_relative_to(r) for r in roots)] == [planted_source]


def test_the_store_ends_holding_checked_files_that_verify_the_planted_ones_replaced(planted):
    _, root, _, _ = planted
    store = root.parent.parent / "cache" / "campaign" / f"bytecode-{sys.implementation.cache_tag}"
    assert {"json", "argparse", "pprint"} <= set(_seedable())
    for module in _seedable():
        source = Path(importlib.util.find_spec(module).origin).resolve()
        assert bytecode.checked(_stored_path(store, source).read_bytes(), source.read_bytes()), module
    installed = [pyc for pyc in store.rglob("*.pyc") if bytecode.run_rule(Path("/nowhere"), ())(
        bytecode.source_of(store, pyc).resolve())]
    assert len(installed) > 100 and all(int.from_bytes(pyc.read_bytes()[4:8], "little") == bytecode.CHECKED
                                        for pyc in installed)


def _unprotected(project: Path, root: Path, folder: Path) -> None:
    """The add candidate's cell again, in a fresh folder, started as workers were before the launch
    protections: ``python -m`` in the project folder, nothing about bytecode."""
    plan = CellPlan.model_validate(canonical.read_json(root / "cells" / "add" / "r1" / "candidate" / TASK_FILE))
    folder.mkdir()
    (folder / "triton").mkdir()
    plan = plan.model_copy(update={"cell_dir": str(folder), "triton_cache_dir": str(folder / "triton"),
                                   "tuner_cache_dir": str(folder / "triton")})
    canonical.write_json_new(folder / TASK_FILE, plan.model_dump(mode="json"))
    subprocess.run([sys.executable, "-m", "campaign.worker", str(folder / TASK_FILE), str(folder / RESULT_FILE)],
                   cwd=project, env=cell_env(os.environ, plan), capture_output=True, timeout=300)


def test_without_the_protections_both_are_picked_up(planted, tmp_path):
    project, root, marker, _ = planted
    _unprotected(project, root, tmp_path / "with-module")
    assert marker.read_text() == "module\n"      # pytest's import of pluggy found the planted one first
    (project / "pluggy.py").unlink()
    _unprotected(project, root, tmp_path / "with-pyc")
    assert marker.read_text().splitlines() == ["module", "pyc"]       # the kernels' module ran the edited code
    marker.unlink()


def test_the_launch_is_python_safe_path_through_the_boot_with_a_fresh_bytecode_prefix(tmp_path):
    folders = workerlaunch.packages()
    argv = workerlaunch.argv("python", ["task.json", "result.json"], folders)
    assert argv[:5] == ["python", "-P", "--check-hash-based-pycs", "always", str(Path(folders["campaign.worker"]) / "boot.py")]
    assert argv[-3:] == ["--", "task.json", "result.json"]
    assert sorted(folders) == sorted(workerlaunch.PACKAGES) and all(Path(f, "__init__.py").is_file() for f in folders.values())
    assert workerlaunch.protections(tmp_path) == {"PYTHONSAFEPATH": "1", "PYTHONPYCACHEPREFIX": str(tmp_path)}


def test_the_runs_prefix_is_written_by_its_workers_even_under_an_inherited_dont_write(tmp_path):
    env = workerlaunch.launch_env({"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/h"}, tmp_path / "pycache")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["HOME"] == "/h"
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache") and env["PYTHONSAFEPATH"] == "1"
    (tmp_path / "pycache").mkdir()
    module = tmp_path / "src" / "probe_mod.py"
    module.parent.mkdir()
    module.write_text("VALUE = 1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "import probe_mod"], cwd=module.parent,
                          env={**env, "PYTHONPATH": str(module.parent)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "pycache").rglob("probe_mod.*.pyc"))       # the next worker of the run reads it
    assert not (module.parent / "__pycache__").exists()                 # nothing beside the source
