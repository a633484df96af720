"""No fault bricks a root: each one leaves a root that `campaign run` resumes, seals and verify accepts.

A copy of the session's sealed demo run (`conftest.sealed_add`) made unsealed again (writable, its
receipt deleted, which the journal allows: nothing in it changed) meets each fault: a mode the
seal cannot set (EPERM, EROFS) leaves run.lock beside the receipt -- a seal interrupted, which the
next run completes -- instead of a root verify fails forever and run refuses as sealed; a journal
line torn by a full disk is dropped on resume and its cell, rowless, runs again. A read error names
its file in verify and in every command (`campaign.contract.faults.read_failed`).
"""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from runroots import copy_root, run

from campaign.cli import main
from campaign.contract import journal
from campaign.contract.runroot import RunRoot
from campaign.sealing import receipt, verification

ROWS = "cells/add/r1/candidate/rows.json"

# `campaign run` in a python whose chmod of one cell file fails as a read-only remount or a file of another
# owner makes it fail: the seal's mode pass meets it after receipt.json is written.
CHMOD_FAULT = """
import errno, os, sys
from campaign.cli import main
chmod = os.chmod
def refused(path, mode, *args, **kwargs):
    if str(path).endswith("{rows}"):
        raise OSError(errno.{code}, os.strerror(errno.{code}), str(path))
    return chmod(path, mode, *args, **kwargs)
os.chmod = refused
sys.exit(main(sys.argv[1:]))
"""


def _unsealed(sealed_add: Path, tmp_path: Path) -> Path:
    root = copy_root(sealed_add, tmp_path)
    for folder, _, names in os.walk(root):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)
    (root / "receipt.json").unlink()
    return root


@pytest.mark.parametrize("code", ["EPERM", "EROFS"])
def test_a_mode_the_seal_cannot_set_leaves_a_seal_that_the_next_run_completes(code: str, sealed_add: Path,
                                                                                 tmp_path: Path, cli):
    root = _unsealed(sealed_add, tmp_path)
    done = subprocess.run([sys.executable, "-c", CHMOD_FAULT.format(rows=ROWS, code=code), "run", str(root),
                           "--grace", "1", "--scratch-dir", str(tmp_path)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (f"SEAL_REFUSED check=modes: {root / ROWS}: {os.strerror(getattr(errno, code))} ({code}): receipt.json "
            f"is written but the root could not be made read-only; run.lock is kept, so the seal reads as "
            f"interrupted: `campaign run {root}` finishes it once the cause is fixed") in done.stderr
    assert (root / "receipt.json").is_file() and (root / "run.lock").is_file()
    interrupted = cli("verify", root)
    assert interrupted.returncode == 5
    assert "the seal was interrupted; `campaign run ROOT` completes it" in interrupted.stderr
    again = run(root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"sealed {root}: completed an interrupted seal" in again.stdout
    assert cli("verify", root).returncode == 0


def test_a_journal_line_torn_by_a_full_disk_is_dropped_and_its_cell_runs_again(sealed_add: Path, tmp_path: Path,
                                                                                 cli):
    root = _unsealed(sealed_add, tmp_path)
    # the state a full disk leaves in the journal's write of the last cell: half its line, no status row
    status_lines = (root / "status.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    last_task = status_lines[-1].split("\t")[0]
    (root / "status.tsv").write_text("".join(status_lines[:-1]), encoding="utf-8")
    lines = (root / journal.JOURNAL_FILE).read_bytes().splitlines(keepends=True)
    (root / journal.JOURNAL_FILE).write_bytes(b"".join(lines[:-1]) + lines[-1][:len(lines[-1]) // 2])
    done = run(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"RUN_REPAIR {journal.JOURNAL_FILE}: a torn last line dropped (its write never finished)" in done.stderr
    assert (root / "cells" / f"{last_task}.interrupted-1").is_dir(), "the rowless cell was set aside and run again"
    assert cli("verify", root).returncode == 0


def _failing_reads(monkeypatch, path: Path) -> None:
    """Every read of ``path`` fails as a failing disk's does: EIO, no path given by the OS."""
    fdopen = os.fdopen

    class Failing:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def fileno(self):
            return self.handle.fileno()

        def read(self, *args):
            raise OSError(errno.EIO, "Input/output error")

    def failing(fd, *args, **kwargs):
        handle = fdopen(fd, *args, **kwargs)
        return Failing(handle) if os.readlink(f"/proc/self/fd/{fd}") == str(path) else handle

    monkeypatch.setattr(os, "fdopen", failing)


@pytest.mark.parametrize("rel", [ROWS, "receipt.json"])
def test_a_read_error_is_named_by_verify_and_by_the_gate(rel: str, sealed_add: Path, monkeypatch, capsys):
    _failing_reads(monkeypatch, sealed_add / rel)
    named = (f"refused: {ROWS} (cannot be read: Input/output error)" if rel == ROWS else
             "receipt: receipt.json (cannot be read: Input/output error)")
    assert [d.line() for d in verification.check(RunRoot(sealed_add)).differences] == [named]
    for command in ("verify", "report", "attest"):
        assert main([command, str(sealed_add)]) == 5, command
        assert named in capsys.readouterr().err


def test_a_read_error_past_the_gate_is_named_never_a_crash_log(sealed_add: Path, monkeypatch, capsys):
    monkeypatch.setattr(receipt, "require_verified", lambda *args: None)     # the gate passed, as when it read
    _failing_reads(monkeypatch, sealed_add / ROWS)
    assert main(["report", str(sealed_add)]) == 0     # the evidence reader names it in the workload's X
    assert f"unreadable artifact in add/r1/candidate: rows.json: unreadable ([Errno 5] Input/output error: " \
           f"'{sealed_add / ROWS}')" in capsys.readouterr().out
    # a reader with no handling of its own: the read names its file (`faults.naming`) and the CLI says it
    from campaign.contract import canonical
    from campaign.flows import report
    telemetry = sealed_add / "telemetry.err"
    _failing_reads(monkeypatch, telemetry)
    monkeypatch.setattr(report, "check_caliber", lambda root, allow: canonical.read_json(telemetry))
    assert main(["report", str(sealed_add)]) == 1
    assert capsys.readouterr().err == (f"REPORT_FAILED check=read: {telemetry}: Input/output error (EIO): the file "
                                       "cannot be read; nothing was derived from it\n")
