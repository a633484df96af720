"""A seal stopped at any point is completed by `campaign run ROOT`, and `verify` then exits 0.

One real demo campaign is run and sealed (the session's, `conftest.sealed_add`); each test copies it and puts the copy in
the state a fault leaves: the runner killed by SIGKILL while its seal hashes, a
receipt write failing for real (a file size limit: EFBIG, as a full disk would),
a torn temporary receipt, an empty receipt.json (what an in-place seal left),
a whole receipt beside a stale lock with modes not yet applied. A stale lock is the
lock file of a process that has exited, as a killed runner leaves it.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import copy_root, run, start_run

from campaign.contract import canonical
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.sealing import receipt

RECEIPT_LIMIT = 16384    # above every file a resumed run writes, below the demo's receipt (~24 KB)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def sealed(sealed_add: Path) -> Path:
    """The session's sealed demo run (`conftest.sealed_add`): every test here copies it first."""
    assert (sealed_add / "receipt.json").stat().st_size > RECEIPT_LIMIT
    return sealed_add


def _writable_copy(root: Path, tmp_path: Path) -> Path:
    copy = copy_root(root, tmp_path)
    for folder, dirs, files in os.walk(copy):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    return copy


def _unsealed(root: Path, tmp_path: Path) -> Path:
    """A complete matrix, not sealed yet: what a runner holds just before its seal."""
    copy = _writable_copy(root, tmp_path)
    (copy / "receipt.json").unlink()
    return copy


def _stale_lock(root: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (root / "run.lock").write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(),
                                               "started_utc": "2026-11-30T00:00:00Z",
                                               "worker_pgid": None, "task_id": None}) + "\n")


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (RECEIPT_LIMIT, RECEIPT_LIMIT))


def test_a_receipt_write_that_fails_seals_nothing_and_run_seals_later(sealed, tmp_path, cli):
    root = _unsealed(sealed, tmp_path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}   # no .pyc write may meet the limit first
    full = subprocess.run([sys.executable, "-m", "campaign", "run", str(root), "--grace", "1",
                           "--scratch-dir", str(tmp_path)], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=_limit_file_size)
    assert full.returncode == 1, full.stderr
    assert "SEAL_REFUSED check=write:" in full.stderr and "File too large" in full.stderr
    assert "Traceback" not in full.stderr
    assert not (root / "receipt.json").exists() and not (root / "receipt.json.partial").exists()
    assert not (root / "run.lock").exists()
    assert cli("verify", root).returncode == 2          # not sealed (exit 2), and nothing pretends it is

    resumed = run(root)
    assert resumed.returncode == 0, resumed.stderr
    verified = cli("verify", root)
    assert verified.returncode == 0, verified.stderr


def _holds_open(pid: int, path: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except OSError:
        return False


def test_a_runner_killed_by_sigkill_during_its_seal_is_completed_by_run(sealed, tmp_path, cli):
    root = _unsealed(sealed, tmp_path)
    pad = root / "cells" / "pad.bin"
    with open(pad, "wb") as handle:       # sparse: hashing it takes long enough to be caught at it
        handle.truncate(512 << 20)
    proc = start_run(root)
    deadline = time.monotonic() + 120
    while not _holds_open(proc.pid, pad):
        assert proc.poll() is None and time.monotonic() < deadline, "the seal was never seen hashing"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert (root / "run.lock").exists() and not (root / "receipt.json").exists()

    resumed = run(root)
    assert resumed.returncode == 0, resumed.stderr
    assert "RUN_LOCK stale lock taken over" in resumed.stderr and f"sealed {root}" in resumed.stdout
    assert not (root / "run.lock").exists()
    verified = cli("verify", root)
    assert verified.returncode == 0, verified.stderr


def test_an_empty_receipt_beside_a_stale_lock_is_sealed_again(sealed, tmp_path, cli):
    root = _unsealed(sealed, tmp_path)
    (root / "receipt.json").write_bytes(b"")     # an in-place seal killed at its first write
    _stale_lock(root)
    before = cli("verify", root)
    assert before.returncode == 5
    assert "VERIFY_FAILED receipt: receipt.json (not JSON:" in before.stderr
    assert "the seal was interrupted; `campaign run ROOT` completes it" in before.stderr

    resumed = run(root)
    assert resumed.returncode == 0, resumed.stderr
    assert "unfinished receipt.json of an interrupted seal was removed" in resumed.stderr
    assert not (root / "run.lock").exists()
    assert canonical.read_json(root / "receipt.json")["schema_version"] == 2
    verified = cli("verify", root)
    assert verified.returncode == 0, verified.stderr


def test_a_whole_receipt_beside_a_stale_lock_is_finished_not_resealed(sealed, tmp_path, cli):
    root = _writable_copy(sealed, tmp_path)       # modes not applied yet: the state right after the rename
    _stale_lock(root)
    written = (root / "receipt.json").read_bytes()
    before = cli("verify", root)
    assert before.returncode == 5
    assert "VERIFY_FAILED extra: run.lock (not in the receipt; run.lock left beside receipt.json" in before.stderr
    assert "VERIFY_FAILED mode: cells/add/r1/baseline/result.json (0644, receipt 0444)" in before.stderr

    resumed = run(root)
    assert resumed.returncode == 0, resumed.stderr
    assert f"sealed {root}: completed an interrupted seal" in resumed.stdout
    assert (root / "receipt.json").read_bytes() == written
    assert not (root / "run.lock").exists()
    assert _mode(root) == 0o555 and _mode(root / "cells" / "add") == 0o555
    assert _mode(root / "cells/add/r1/baseline/result.json") == 0o444
    verified = cli("verify", root)
    assert verified.returncode == 0, verified.stderr
    again = run(root)
    assert again.returncode == 1 and "RUN_REFUSED check=sealed:" in again.stderr


def test_finishing_refuses_a_root_changed_since_its_receipt(sealed, tmp_path):
    root = _writable_copy(sealed, tmp_path)
    _stale_lock(root)
    (root / "cells/add/r1/candidate/run.log").write_text("rewritten after the receipt\n")
    done = run(root)
    assert done.returncode == 5
    assert "RUN_REFUSED check=seal_interrupted:" in done.stderr
    assert "changed: cells/add/r1/candidate/run.log" in done.stderr


def test_an_interrupted_seal_whose_lock_is_live_is_not_taken_over(sealed, tmp_path):
    root = _writable_copy(sealed, tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (root / "run.lock").write_text(json.dumps({"pid": holder.pid, "host": socket.gethostname(),
                                                   "started_utc": "2026-11-30T00:00:00Z"}) + "\n")
        done = run(root)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1 and "RUN_REFUSED check=lock: another run holds this root" in done.stderr
    assert (root / "run.lock").exists() and _mode(root) == 0o755


def test_a_finished_cell_folder_missing_refuses_the_seal_by_name(sealed, tmp_path, cli):
    root = _unsealed(sealed, tmp_path)
    shutil.rmtree(root / "cells/add/r1/candidate")
    done = run(root)
    assert done.returncode == 1
    assert "SEAL_REFUSED check=cell_folder:" in done.stderr and "cells/add/r1/candidate" in done.stderr
    assert not (root / "receipt.json").exists() and not (root / "receipt.json.partial").exists()
    assert not (root / "run.lock").exists() and _mode(root) == 0o755
    assert cli("verify", root).returncode == 2     # not sealed


def test_the_lock_goes_only_after_the_modes_and_before_the_root(sealed, tmp_path):
    root = _unsealed(sealed, tmp_path)
    seen = []

    def release() -> None:   # what a crash right here would leave for `run` to finish
        seen.append((_mode(root / "cells/add/r1/baseline/result.json"), _mode(root / "cells"), _mode(root),
                     (root / "receipt.json").is_file()))

    session.seal_root(root, release=release)
    assert seen == [(0o444, 0o555, 0o755, True)]
    assert _mode(root) == 0o555 and _mode(root / "receipt.json") == 0o444
    assert receipt.verify_root(RunRoot(root)) == []


def test_a_torn_temporary_receipt_beside_a_stale_lock_is_sealed(sealed, tmp_path):
    root = _unsealed(sealed, tmp_path)
    (root / "receipt.json.partial").write_bytes((sealed / "receipt.json").read_bytes()[:4096])
    _stale_lock(root)
    done = run_cli("run", root, "--grace", "1", "--scratch-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (root / "receipt.json.partial").exists() and not (root / "run.lock").exists()
    assert receipt.verify_root(RunRoot(root)) == []


def test_a_screen_roots_interrupted_seal_is_finished_by_run(tmp_path, cli):
    import rootbuilder as rb
    built = rb.screen_root(tmp_path / "built", [rb.pointwise()])
    root = _writable_copy(built, tmp_path)
    _stale_lock(root)
    done = run(root)
    assert done.returncode == 0, done.stderr
    assert "completed an interrupted seal" in done.stdout
    assert cli("verify", root).returncode == 0
    again = run(root)
    assert again.returncode == 1 and "RUN_REFUSED check=mode:" in again.stderr
