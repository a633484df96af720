"""Flows out of commands, and what is defined once: the import rules between commands, flows and
the seal; the first-free-name rule the runner, prepare and rescore share; ending a process group."""
from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rootbuilder as rb
from conftest import PROJECT_ROOT

from campaign.contract.artifacts import MANIFEST_FILE, MATRIX_FILE, first_free, set_aside
from campaign.contract.errors import Refused
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.running.cellproc import end_group


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_command_imports_another_and_no_flow_imports_a_command():
    commands = sorted((PROJECT_ROOT / "campaign" / "commands").glob("*.py"))
    command_modules = {f"campaign.commands.{p.stem}" for p in commands if p.stem != "__init__"}
    assert {"campaign.commands.run", "campaign.commands.screen", "campaign.commands.prepare"} <= command_modules
    for path in commands:
        crossed = _imports(path) & (command_modules - {f"campaign.commands.{path.stem}"})
        assert not crossed, f"{path.name} imports {sorted(crossed)}"
    for path in sorted((PROJECT_ROOT / "campaign" / "flows").glob("*.py")):
        assert not {name for name in _imports(path) if name.startswith("campaign.commands")}, path.name


def test_the_seal_is_handed_its_verdicts_and_imports_no_classifier():
    imported = _imports(PROJECT_ROOT / "campaign" / "sealing" / "receipt.py")
    assert not {name for name in imported if name.startswith(("importlib", "campaign.judging.classify"))}
    assert "campaign.judging.classify" in _imports(PROJECT_ROOT / "campaign" / "flows" / "session.py")


def test_first_free_claims_the_first_name_not_taken(tmp_path: Path):
    (tmp_path / "x-1").mkdir()
    (tmp_path / "x-2").mkdir()
    assert first_free(lambda n: tmp_path / f"x-{n}", Path.mkdir) == tmp_path / "x-3"
    assert (tmp_path / "x-3").is_dir()


def test_set_aside_never_replaces_an_empty_folder_of_the_name_it_would_take(tmp_path: Path):
    """rename() silently replaces an empty folder: a taken name must be skipped, not reused."""
    cell = tmp_path / "candidate"
    cell.mkdir()
    (cell / "task.json").write_text("{}")
    (tmp_path / "candidate.interrupted-1").mkdir()    # empty, kept from an earlier stop
    moved = set_aside(cell)
    assert moved.name == "candidate.interrupted-2" and (moved / "task.json").is_file()
    assert (tmp_path / "candidate.interrupted-1").is_dir() and not cell.exists()


def _group(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], start_new_session=True)


def test_ending_our_own_worker_waits_for_it_not_its_unreaped_entry():
    """A child not yet reaped still counts in its group: the wait is for the leader itself, so a
    worker that TERM ends is named SIGTERM at once, not SIGKILL after the grace."""
    proc = _group("import time; time.sleep(60)")
    time.sleep(0.3)
    start = time.monotonic()
    assert end_group(proc.pid, 5.0, leader=proc) == "SIGTERM"
    assert time.monotonic() - start < 3.0 and proc.returncode is not None


def test_a_group_that_ignores_term_is_killed_stragglers_included():
    script = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              "subprocess.Popen([sys.executable, '-c', 'import signal, time; "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)']); time.sleep(60)")
    proc = _group(script)
    time.sleep(0.5)
    assert end_group(proc.pid, 0.3, leader=proc) == "SIGKILL"
    deadline = time.monotonic() + 5.0            # the orphaned straggler is reaped by init, not by us
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid)
    assert end_group(proc.pid, 0.3) is None     # nothing left to end


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_fifo_in_a_root_is_refused_before_anything_judges_it(tmp_path: Path):
    """The classifier opens a cell's files: a FIFO at one of them would block it forever, so the
    seal's refusals that need no verdicts come first."""
    root = rb.build(tmp_path, [rb.pointwise()])
    identity = root / "cells" / "add" / "r1" / "candidate" / "run_identity.json"   # the caliber check reads it
    identity.unlink()
    os.mkfifo(identity)

    class Hung(BaseException):     # not an Exception: the session's judge must not swallow it
        pass

    def hung(*_):
        raise Hung("the seal opened the FIFO")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(Refused) as refused:
            session.seal_root(root)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert refused.value.check == "files" and "run_identity.json" in refused.value.detail
    assert not (root / "receipt.json").exists()


def test_the_session_judges_the_run_root_it_holds(tmp_path: Path):
    """`session.judge` hands the classifier the session's `RunRoot`: its manifest and matrix, parsed when
    the run began, are not parsed again (moved away here after the first read, the verdicts stand)."""
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise()])
    expected = session.judge(RunRoot.of(root))
    held = RunRoot.of(root)
    assert held.matrix.tasks and held.manifest.workloads and held.prepare   # read, as `session.execute` reads them first
    for name in (MANIFEST_FILE, MATRIX_FILE):
        (root / name).rename(tmp_path / name)
    judged = session.judge(held)
    assert judged.note is None and judged.verdicts == expected.verdicts and expected.verdicts is not None
