"""A full disk and an unwritable path under a real run: named (``RUN_FAILED check=disk|write``, exit 1,
the path and the OS error), never a traceback; the cells finished before it are kept and a resume completes.

How each fault is staged, for real where the machine allows it:
- disk full at the status row: status.tsv swapped for a symlink to /dev/full, whose writes the kernel
  fails with ENOSPC -- a real ENOSPC, no mock;
- disk full at a cell's task.json: a file created there must be new (O_EXCL), so /dev/full cannot stand
  in; the one write of it raises OSError(ENOSPC) from a patched `canonical.write_new` (a real full disk
  cannot be made in a test: it needs a mount);
- an unwritable folder: the folder a cell is created in replaced by a regular file (ENOTDIR);
- a file-size limit: RLIMIT_FSIZE lowered, in the runner's own process, to status.tsv's size just before
  one row's append -- a real EFBIG from the kernel;
- a read-only root or runs dir: a read-only bind mount in a mount namespace of the CLI's own where the
  tests run as root (a real EROFS; root ignores permission bits), the permission bits where they do not
  (a real EACCES).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from runroots import by_id, copy_root, fault, manifest, prepare, rows, run, start_run

from campaign.contract import canonical

# The cells around each fault compile nothing: what is proven is the runner's bookkeeping of its own
# writes, which is the same for any cell, and a cell that skips compiling and timing costs about half
ADD, SOFTMAX = fault("add", "test_bench_noop", canary=True), fault("softmax", "test_bench_noop")


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): canonical.sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _named(done, check: str, path: Path, error: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"RUN_FAILED check={check}: {path}: {error}" in done.stderr, done.stderr
    assert "the cells finished before it keep their status rows and folders" in done.stderr


def test_a_full_disk_at_the_status_row_is_named_and_nothing_finished_is_lost(tmp_path: Path):
    root = prepare(tmp_path, [ADD, fault("held", "test_bench_wait_release"), SOFTMAX])
    proc = start_run(root)
    try:
        deadline = time.monotonic() + 120
        while not (root / "cells" / "held" / "r1" / "candidate" / "task.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        status_file = root / "status.tsv"
        kept = status_file.read_bytes()
        finished = _digests(root / "cells" / "add")
        status_file.rename(tmp_path / "status.kept")
        status_file.symlink_to("/dev/full")
        (root.parent / "release").touch()   # the held cell ends; its row meets the full disk
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    _named(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "disk", status_file,
           "No space left on device (ENOSPC)")
    assert f"free space, then `campaign run {root}` resumes" in err
    assert not (root / "run.lock").exists() and not (root / "receipt.json").exists()

    status_file.unlink()
    (tmp_path / "status.kept").rename(status_file)
    assert status_file.read_bytes() == kept
    again = run(root)
    assert again.returncode == 0, again.stderr
    assert status_file.read_bytes().startswith(kept)
    assert _digests(root / "cells" / "add") == finished
    # The cell whose row was never written is no finish: kept aside, run again.
    assert (root / "cells" / "held" / "r1" / "candidate.interrupted-1" / "result.json").is_file()
    assert [row.task_id for row in rows(root)].count("held/r1/candidate") == 1
    assert by_id(root)["softmax/r1/candidate"].rc_name == "ok"


@pytest.fixture(scope="module")
def stopped_before_softmax(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A run stopped by a file where softmax's first cell folder must be made, after the canary add's two
    cells finished: the cell-folder test's own run, and the start the tests of a fault at softmax's first
    cell copy (`copy_root`) and unblock. Their fault meets the same first cell after the same finished
    ones; each paid the canary's two processes of its own before. The root is only read here."""
    root = prepare(tmp_path_factory.mktemp("stopped"), [ADD, SOFTMAX])
    (root / "cells").mkdir(exist_ok=True)
    (root / "cells" / "softmax").write_text("not a folder\n", encoding="utf-8")
    return root, run(root)


def _unblocked(stopped: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> Path:
    """A copy of the stopped run with softmax's folder free to be made: add's cells finished, softmax's next."""
    root = copy_root(stopped[0], tmp_path)
    (root / "cells" / "softmax").unlink()
    assert [row.task_id for row in rows(root)] == ["add/r1/baseline", "add/r1/candidate"]
    return root


def test_a_cell_folder_that_cannot_be_made_is_named(tmp_path: Path, stopped_before_softmax):
    root, done = stopped_before_softmax
    blocker = root / "cells" / "softmax"
    _named(done, "write", blocker / "r1" / "baseline", "Not a directory (ENOTDIR)")
    assert f"make it writable, then `campaign run {root}` resumes" in done.stderr
    assert blocker.is_file() and [row.task_id for row in rows(root)] == ["add/r1/baseline", "add/r1/candidate"]
    finished = _digests(root / "cells" / "add")

    root = _unblocked(stopped_before_softmax, tmp_path)
    again = run(root)
    assert again.returncode == 0, again.stderr
    assert _digests(root / "cells" / "add") == finished
    assert len(rows(root)) == 4 and (root / "receipt.json").is_file()


def _run_patched(script: str, root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """`campaign run ROOT` in a python that first runs ``script``'s patch of one write."""
    return subprocess.run([sys.executable, "-c", script, "run", str(root), "--grace", "1", "--scratch-dir",
                           str(tmp_path)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)


# `campaign run` in a process whose one write of softmax/r1/baseline's task.json fails as a full disk would.
FULL_AT_TASK_FILE = """
import errno, sys
from campaign.contract import canonical
from campaign.cli import main
write_new = canonical.write_new
def full(path, text):
    if str(path).endswith("softmax/r1/baseline/task.json"):
        raise OSError(errno.ENOSPC, "No space left on device")   # as a write() on a full disk: no path
    write_new(path, text)
canonical.write_new = full
sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_at_a_task_file_names_the_file(tmp_path: Path, stopped_before_softmax):
    root = _unblocked(stopped_before_softmax, tmp_path)
    done = _run_patched(FULL_AT_TASK_FILE, root, tmp_path)
    _named(done, "disk", root / "cells" / "softmax" / "r1" / "baseline" / "task.json",
           "No space left on device (ENOSPC)")
    assert [row.task_id for row in rows(root)] == ["add/r1/baseline", "add/r1/candidate"]
    again = run(root)
    assert again.returncode == 0, again.stderr
    assert (root / "cells" / "softmax" / "r1" / "baseline.interrupted-1").is_dir()


# `campaign run` in a process whose file-size limit is lowered, for real, to status.tsv's size just before
# softmax/r1/baseline's row is appended: the kernel answers that one write with EFBIG. Lowered at that
# moment rather than by `ulimit -f` before the run, which every worker would inherit from the start
# (the first one's caches are larger than any useful limit); SIGXFSZ ignored, as a shell's `ulimit -f`
# leaves a program to see the error instead of dying of it.
EFBIG_AT_STATUS_ROW = """
import resource, signal, sys
from campaign.contract import status
from campaign.cli import main
append = status.append
def limited(path, row):
    if row.task_id != "softmax/r1/baseline":
        return append(path, row)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size, hard))
    try:
        return append(path, row)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
status.append = limited
sys.exit(main(sys.argv[1:]))
"""


def test_a_file_size_limit_at_the_status_row_is_named_and_the_cell_runs_again(tmp_path: Path, stopped_before_softmax):
    root = _unblocked(stopped_before_softmax, tmp_path)
    done = _run_patched(EFBIG_AT_STATUS_ROW, root, tmp_path)
    _named(done, "write", root / "status.tsv", "File too large (EFBIG)")
    assert "raise the file-size limit (ulimit -f)" in done.stderr
    assert [row.task_id for row in rows(root)] == ["add/r1/baseline", "add/r1/candidate"]
    again = run(root)
    assert again.returncode == 0, again.stderr
    assert [row.task_id for row in rows(root)].count("softmax/r1/baseline") == 1
    assert (root / "cells" / "softmax" / "r1" / "baseline.interrupted-1" / "result.json").is_file()


def _read_only(folder: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` (the CLI) with ``folder`` read-only: as root, a read-only bind mount over it in a mount
    namespace of its own (a real EROFS; root ignores permission bits); as a user, its permission bits (EACCES)."""
    cli = [sys.executable, "-m", "campaign", *map(str, argv)]
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            return subprocess.run(cli, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
        finally:
            folder.chmod(0o755)
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", str(folder), *cli], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)


READ_ONLY = "Read-only file system (EROFS)" if os.geteuid() == 0 else "Permission denied (EACCES)"


def test_a_read_only_root_is_named_and_left_as_prepared(tmp_path: Path):
    root = prepare(tmp_path, [ADD])
    prepared = _digests(root)
    done = _read_only(root, ["run", root, "--grace", "1", "--scratch-dir", tmp_path])
    _named(done, "write", root / "run.lock", READ_ONLY)
    assert f"make it writable, then `campaign run {root}` resumes" in done.stderr
    assert _digests(root) == prepared      # nothing half-written: the run that follows starts as the first would


def test_a_read_only_runs_dir_is_named_by_prepare_and_no_root_is_made(tmp_path: Path):
    runs = tmp_path / "runs"
    runs.mkdir()
    done = _read_only(runs, ["prepare", manifest(tmp_path, [ADD]), "--runs-dir", runs])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"PREPARE_REFUSED check=write: {runs}/runner-test-"), done.stderr
    assert f"{READ_ONLY}; no root was made; make it writable" in done.stderr
    assert list(runs.iterdir()) == []
